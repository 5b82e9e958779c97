//! Byte I/O for one shard object.
//!
//! [`ShardIo`] is the one seam between the codec core and storage: positional reads of a byte
//! range (from the start, or a suffix so an index at the end needs no size call), optional
//! size, positional writes, optional delete. Memory and file back ends live here; the C
//! callback table is one more implementation in the FFI layer.

use crate::error::{Error, Result};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

/// What a temporary file's name has after the name of the object it replaces, before
/// `PID-N` ([`FileIo`]'s new objects).
pub const TEMPORARY_MARK: &str = ".tmp-";

/// The most symbolic links followed before giving up, as Linux's `ELOOP` does.
const MAX_LINKS: usize = 40;

#[cfg(unix)]
const ELOOP: i32 = libc::ELOOP;
#[cfg(not(unix))]
const ELOOP: i32 = 1921; // ERROR_CANT_RESOLVE_FILENAME

/// A byte range of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ByteRange {
    /// `len` bytes from `offset`; `None` means to the end of the object.
    FromStart(u64, Option<u64>),
    /// The last `len` bytes.
    Suffix(u64),
}

/// The bytes a read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOutput {
    /// The bytes. Fewer than asked for means the object ends there (a short read); a suffix
    /// longer than the object returns the whole object.
    pub data: Vec<u8>,
    /// Size of the whole object, when the back end learns it for free (files, memory, HTTP
    /// `Content-Range`). Lets the reader bounds-check the index at open.
    pub object_size: Option<u64>,
}

/// Storage for one shard object.
///
/// Implementations must be safe to call from several threads at once for reads; the writer
/// serialises its own writes.
pub trait ShardIo: Send + Sync {
    /// Read `range`. `Ok(None)` means the object does not exist (reads as all fill value).
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>>;

    /// Read several ranges at once. Back ends with batched or asynchronous I/O (HTTP/2,
    /// io_uring, S3) override this to fetch them concurrently; the default reads one by one.
    fn read_many(&self, ranges: &[ByteRange]) -> Result<Vec<Option<ReadOutput>>> {
        ranges.iter().map(|r| self.read(*r)).collect()
    }

    /// [`ShardIo::read_many`], with `spare` buffers (from earlier reads; any length, contents
    /// replaced) to read into: a caller reading shard after shard hands back the previous
    /// shard's buffers, so the bytes land in memory that is already mapped instead of a fresh
    /// allocation per read (which glibc may trim and the kernel fault in again, page by page).
    /// Buffers are taken from
    /// the end of `spare`; unused ones stay there. The default ignores `spare` and calls
    /// `read_many`; [`FileIo`], [`MemoryIo`] and the C callback table read into the buffers.
    fn read_many_reusing(
        &self,
        ranges: &[ByteRange],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        let _ = spare;
        self.read_many(ranges)
    }

    /// Size of the object, `Ok(None)` when it does not exist. Optional.
    fn size(&self) -> Result<Option<u64>> {
        Err(Error::Unsupported("size".into()))
    }

    /// Write `data` at `offset`, creating the object if needed. Optional for read-only stores.
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let _ = (offset, data);
        Err(Error::Unsupported("write".into()))
    }

    /// Replace the whole object with `data` (a buffered shard is written with one call).
    ///
    /// The default writes at offset 0 and truncates to `data.len()`; a back end without
    /// `truncate` must then start from a missing or shorter object: when `size` reports a
    /// longer one, the put is refused with [`Error::Unsupported`] before any byte is written
    /// ([`check_can_end_at`]), so the old object stays as it was. [`FileIo`] writes a
    /// temporary sibling and renames it over the file, so the old shard stays intact until
    /// the new one is complete.
    fn put(&self, data: &[u8]) -> Result<()> {
        put_in_place(self, data)
    }

    /// [`ShardIo::put`] of the concatenation of `parts`: a buffered shard hands over its
    /// encoded chunks and its index without first copying them into one buffer. The default
    /// concatenates and calls `put` (one host write); [`FileIo`] writes the parts with
    /// vectored writes (`writev`), so the shard is never assembled in memory.
    fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.put(&parts.concat())
    }

    /// True when [`ShardIo::write_at`] can change an existing object in place (the default).
    /// False for object stores, which replace objects whole (S3 has no write at an offset):
    /// with an [`ShardIo::object_sink`], updates of part of a shard (`Array::write_region`
    /// over a shard it covers partly) are then applied to a copy of the old object in memory
    /// and written whole as a new object, which replaces the old one only when complete. The
    /// C callback table says false when it has no `write` callback.
    fn writes_in_place(&self) -> bool {
        true
    }

    /// Shrink or grow the object to `len` bytes (after a rewrite shorter than the old object).
    /// Optional.
    fn truncate(&self, len: u64) -> Result<()> {
        let _ = len;
        Err(Error::Unsupported("truncate".into()))
    }

    /// True when [`ShardIo::truncate`] works. Only a hint: a whole-object write then skips
    /// asking for the size first ([`check_can_end_at`]); `false` (the default) costs a `size`
    /// call, and a truncate probe when the object is longer, before such a write.
    fn can_truncate(&self) -> bool {
        false
    }

    /// Remove the object; removing a missing object is not an error. Optional.
    fn delete(&self) -> Result<()> {
        Err(Error::Unsupported("delete".into()))
    }

    /// A new object to be written in pieces and then put in place of this one at
    /// [`ObjectSink::commit`], or `None` when the back end writes whole objects only (the
    /// default). A buffered shard written from a caller's array (`Array::write_region`) then
    /// writes the chunks already encoded while the rest are still being encoded, instead of
    /// everything at the end (see `docs/performance.md`, *Where the speed comes from*).
    /// Until `commit` the old object (or its absence) is what readers see; a sink dropped
    /// without `commit` leaves nothing behind. [`FileIo`] and [`MemoryIo`] have one; a C
    /// callback table has one when it carries the version-3 new-object callbacks
    /// (`create_new` … `discard_new`).
    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        None
    }
}

/// A new object written in pieces ([`ShardIo::object_sink`]). Used by one thread at a time.
pub trait ObjectSink: Send {
    /// Write the concatenation of `parts` at `offset`. The shard writer writes its chunks in
    /// increasing order of offset, without gaps, then the index: after them, or at 0 when it
    /// is at the start (the chunks then begin at the index's size).
    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()>;

    /// Put the object, `len` bytes (every one of them written), in place of the old one.
    /// [`FileIo`]'s and [`MemoryIo`]'s sinks refuse a `len` other than the end of the last
    /// byte written ([`Error::InvalidArgument`]), leaving the old object.
    fn commit(self: Box<Self>, len: u64) -> Result<()>;
}

/// A whole object through a back end's `sink`: `parts` written from 0 in one piece, then
/// committed (what [`FileIo`]'s and the C tables' `put_parts` are).
pub(crate) fn put_whole(mut sink: Box<dyn ObjectSink + '_>, parts: &[&[u8]]) -> Result<()> {
    sink.write_parts_at(0, parts)?;
    sink.commit(parts.iter().map(|p| p.len() as u64).sum())
}

/// The default [`ShardIo::put`]: `data` written at 0 over the old object, which is then cut
/// to its length ([`check_can_end_at`] first, so a back end that could not cut it is refused
/// before anything is written).
pub fn put_in_place<T: ShardIo + ?Sized>(io: &T, data: &[u8]) -> Result<()> {
    check_can_end_at(io, data.len() as u64)?;
    io.write_at(0, data)?;
    end_object_at(io, data.len() as u64)
}

/// Make `len` the end of an object just written up to `len`: truncate it, or, when the back
/// end cannot truncate, make sure (with `size`, when available) that it is no longer — an
/// older, longer object would otherwise keep its tail, and the index would not be at the end.
/// Without `truncate` and `size` the host must start from a new object (the C contract).
pub fn end_object_at<T: ShardIo + ?Sized>(io: &T, len: u64) -> Result<()> {
    match io.truncate(len) {
        Err(Error::Unsupported(_)) => match io.size() {
            Ok(Some(s)) if s > len => Err(Error::Unsupported(format!(
                "truncate (the object is {s} bytes, longer than the {len} written)"
            ))),
            Ok(_) | Err(Error::Unsupported(_)) => Ok(()),
            // Unchecked is not done (capi_sequence found this failure ignored).
            Err(e) => Err(e),
        },
        other => other,
    }
}

/// Before replacing an object with `len` bytes: refuse ([`Error::Unsupported`]) when the
/// back end reports a longer object (`size`) and cannot truncate, so nothing is written that
/// [`end_object_at`] would refuse afterwards. Whether it can truncate is asked by truncating
/// the object to the size it has (no change). Without `size` nothing can be checked (the
/// host must start from a new object, as the C contract says).
pub fn check_can_end_at<T: ShardIo + ?Sized>(io: &T, len: u64) -> Result<()> {
    if io.can_truncate() {
        return Ok(());
    }
    match io.size() {
        Ok(Some(s)) if s > len => match io.truncate(s) {
            Err(Error::Unsupported(_)) => Err(Error::Unsupported(format!(
                "truncate (the object is {s} bytes, longer than the {len} to be written; nothing was written)"
            ))),
            other => other,
        },
        Ok(_) | Err(Error::Unsupported(_)) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Objects from this size up are allocated on disk before they are written
/// ([`preallocate`]); below it the extra system call costs more than it saves.
#[cfg(all(target_os = "linux", not(miri)))]
const PREALLOCATE_FROM: u64 = 64 << 10;

/// Allocate the `len` bytes at `offset` of a new file on disk before they are written (Linux
/// `fallocate`, mode 0), when `len` is at least [`PREALLOCATE_FROM`]. On ext4 the write then
/// fills blocks allocated in one extent instead of reserving each 4 KiB block for delayed
/// allocation, which makes creating and writing a shard-sized file cheaper, also when it is
/// synced (the saving is not work moved to writeback). Best effort: an error (a file system without
/// `fallocate`, no space left) is ignored and the write that follows reports what matters.
/// Never `posix_fallocate`, which glibc emulates by writing zeros where the file system
/// cannot allocate. Elsewhere (and under Miri) nothing.
#[cfg(all(target_os = "linux", not(miri)))]
fn preallocate(f: &File, offset: u64, len: u64) {
    use nix::fcntl::{fallocate, FallocateFlags};
    if len >= PREALLOCATE_FROM {
        if let (Ok(offset), Ok(len)) = (libc::off_t::try_from(offset), libc::off_t::try_from(len)) {
            let _ = fallocate(f, FallocateFlags::empty(), offset, len);
        }
    }
}

#[cfg(not(all(target_os = "linux", not(miri))))]
fn preallocate(_: &File, _: u64, _: u64) {}

/// Write every byte of `parts`, in order, with as few `writev` calls as the kernel allows.
fn write_all_parts(f: &mut File, parts: &[&[u8]]) -> std::io::Result<()> {
    use std::io::{ErrorKind, IoSlice, Write};
    let mut slices: Vec<IoSlice> = parts
        .iter()
        .filter(|p| !p.is_empty())
        .map(|p| IoSlice::new(p))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match f.write_vectored(rest) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// References and boxes of a back end are back ends (`Box<dyn ShardIo>` is what stores hand out).
macro_rules! forward_shard_io {
    ($($ty:ty),*) => {$(
        impl<T: ShardIo + ?Sized> ShardIo for $ty {
            fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
                (**self).read(range)
            }
            fn read_many(&self, ranges: &[ByteRange]) -> Result<Vec<Option<ReadOutput>>> {
                (**self).read_many(ranges)
            }
            fn read_many_reusing(
                &self,
                ranges: &[ByteRange],
                spare: &mut Vec<Vec<u8>>,
            ) -> Result<Vec<Option<ReadOutput>>> {
                (**self).read_many_reusing(ranges, spare)
            }
            fn size(&self) -> Result<Option<u64>> {
                (**self).size()
            }
            fn can_truncate(&self) -> bool {
                (**self).can_truncate()
            }
            fn writes_in_place(&self) -> bool {
                (**self).writes_in_place()
            }
            fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
                (**self).write_at(offset, data)
            }
            fn put(&self, data: &[u8]) -> Result<()> {
                (**self).put(data)
            }
            fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
                (**self).put_parts(parts)
            }
            fn truncate(&self, len: u64) -> Result<()> {
                (**self).truncate(len)
            }
            fn delete(&self) -> Result<()> {
                (**self).delete()
            }
            fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
                (**self).object_sink()
            }
        }
    )*};
}
forward_shard_io!(&T, Box<T>, std::sync::Arc<T>);

/// Slice `range` out of a whole object held in memory (shared by the memory and file back
/// ends' semantics).
pub fn slice_range(object: &[u8], range: ByteRange) -> &[u8] {
    let len = object.len() as u64;
    let (start, end) = match range {
        ByteRange::FromStart(o, n) => {
            let s = o.min(len);
            (s, n.map_or(len, |n| s.saturating_add(n).min(len)))
        }
        ByteRange::Suffix(n) => (len.saturating_sub(n), len),
    };
    &object[start as usize..end as usize]
}

/// A shard object in memory.
#[derive(Debug, Default)]
pub struct MemoryIo {
    data: RwLock<Option<Vec<u8>>>,
}

impl MemoryIo {
    /// A missing object.
    pub fn new() -> Self {
        Self::default()
    }

    /// An object holding `bytes`.
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        MemoryIo {
            data: RwLock::new(Some(bytes)),
        }
    }

    /// The object's bytes, `None` when missing.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        self.data.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl ShardIo for MemoryIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        let guard = self.data.read().unwrap_or_else(|e| e.into_inner());
        Ok(guard.as_ref().map(|d| ReadOutput {
            data: slice_range(d, range).to_vec(),
            object_size: Some(d.len() as u64),
        }))
    }
    /// Copies into `spare`'s buffers where they are large enough, as [`FileIo`] reads into them.
    fn read_many_reusing(
        &self,
        ranges: &[ByteRange],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        let guard = self.data.read().unwrap_or_else(|e| e.into_inner());
        let read = |range: &ByteRange| {
            guard.as_ref().map(|d| {
                let from = slice_range(d, *range);
                let mut data = read_buffer(spare.pop(), from.len());
                data.copy_from_slice(from);
                ReadOutput {
                    data,
                    object_size: Some(d.len() as u64),
                }
            })
        };
        Ok(ranges.iter().map(read).collect())
    }
    fn size(&self) -> Result<Option<u64>> {
        let guard = self.data.read().unwrap_or_else(|e| e.into_inner());
        Ok(guard.as_ref().map(|d| d.len() as u64))
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let mut guard = self.data.write().unwrap_or_else(|e| e.into_inner());
        let obj = guard.get_or_insert_with(Vec::new);
        let end = offset
            .checked_add(data.len() as u64)
            .and_then(|e| usize::try_from(e).ok())
            .ok_or_else(|| Error::InvalidArgument(format!("write at {offset} overflows")))?;
        if obj.len() < end {
            obj.resize(end, 0);
        }
        obj[offset as usize..end].copy_from_slice(data);
        Ok(())
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        *self.data.write().unwrap_or_else(|e| e.into_inner()) = Some(data.to_vec());
        Ok(())
    }
    fn truncate(&self, len: u64) -> Result<()> {
        let mut guard = self.data.write().unwrap_or_else(|e| e.into_inner());
        guard.get_or_insert_with(Vec::new).resize(len as usize, 0);
        Ok(())
    }
    fn can_truncate(&self) -> bool {
        true
    }
    fn delete(&self) -> Result<()> {
        *self.data.write().unwrap_or_else(|e| e.into_inner()) = None;
        Ok(())
    }
    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        Some(Box::new(MemorySink {
            io: self,
            bytes: Vec::new(),
        }))
    }
}

/// [`MemoryIo`]'s new object: built aside, swapped in at commit.
struct MemorySink<'a> {
    io: &'a MemoryIo,
    bytes: Vec<u8>,
}

impl ObjectSink for MemorySink<'_> {
    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let end = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_add(len))
            .ok_or_else(|| Error::InvalidArgument(format!("write at {offset} overflows")))?;
        if self.bytes.len() < end {
            self.bytes.resize(end, 0);
        }
        let mut at = end - len;
        for p in parts {
            self.bytes[at..at + p.len()].copy_from_slice(p);
            at += p.len();
        }
        Ok(())
    }

    fn commit(self: Box<Self>, len: u64) -> Result<()> {
        check_written(len, self.bytes.len() as u64)?;
        *self.io.data.write().unwrap_or_else(|e| e.into_inner()) = Some(self.bytes);
        Ok(())
    }
}

/// A sink's commit of `len` bytes when its writes ended at `end`: a caller that lost count
/// would otherwise publish a cut or padded object.
pub(crate) fn check_written(len: u64, end: u64) -> Result<()> {
    match len == end {
        true => Ok(()),
        false => Err(Error::InvalidArgument(format!(
            "a new object committed as {len} bytes, but its writes end at {end}"
        ))),
    }
}

/// A shard object in a file, read with positional reads (`pread`), so concurrent readers
/// share one descriptor without seeking. A whole object (`put`, `put_parts`) is written to a
/// temporary file beside it with `writev` and renamed over it; on Linux an object of 64 KiB or
/// more is first allocated on disk (`fallocate`, best effort: see the private `preallocate`),
/// which makes writing a shard on ext4 cheaper.
#[derive(Debug)]
pub struct FileIo {
    path: PathBuf,
    /// The open file, and whether it was opened for writing.
    file: RwLock<Option<(Arc<File>, bool)>>,
}

impl FileIo {
    /// The file at `path`; it need not exist (it then reads as missing).
    pub fn new(path: impl AsRef<Path>) -> Self {
        FileIo {
            path: path.as_ref().to_path_buf(),
            file: RwLock::new(None),
        }
    }

    /// The file this back end reads and writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The open file, opening it on first use; `None` when it does not exist. `write` opens
    /// (and creates) it for writing, replacing a descriptor opened only for reading.
    fn handle(&self, write: bool) -> Result<Option<Arc<File>>> {
        if let Some((f, writable)) = self.file.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if *writable || !write {
                return Ok(Some(f.clone()));
            }
        }
        let open = |w: bool| {
            let mut opts = std::fs::OpenOptions::new();
            opts.read(true).write(w).create(write);
            opts.open(&self.path)
        };
        let opened = if write {
            self.with_parent(&self.path, || open(true))?
                .map(|f| (f, true))
        } else if std::fs::metadata(&self.path).is_ok_and(|m| !m.permissions().readonly()) {
            // Open for writing too when the mode allows it, so one handle serves both; a file
            // this process may only read (another user's, or on a read-only mount) opens for
            // reading: a reader must not need write access.
            match open(true) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    open(false).map(|f| (f, false))
                }
                other => other.map(|f| (f, true)),
            }
        } else {
            open(false).map(|f| (f, false))
        };
        match opened {
            Ok((f, writable)) => {
                let f = Arc::new(f);
                *self.file.write().unwrap_or_else(|e| e.into_inner()) = Some((f.clone(), writable));
                Ok(Some(f))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io_at(&self.path, e)),
        }
    }
}

#[cfg(unix)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(f, buf, offset)
}
#[cfg(windows)]
fn read_at(f: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(f, buf, offset)
}
#[cfg(unix)]
fn write_all_at(f: &File, buf: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(f, buf, offset)
}
#[cfg(windows)]
fn write_all_at(f: &File, mut buf: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(f, buf, offset)?;
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

/// A `len`-byte buffer to read into: `spare`'s allocation when it is large enough (only the
/// part past its old length is zeroed; the caller overwrites the rest and cuts the buffer to
/// what was read), otherwise fresh zeroed memory (no memset for large buffers). When a spare
/// was offered but is too small (the caller recycles its buffers between the shards of a
/// region read), a fresh one of 64 KiB or more gets 1/16 more room, so that it still holds the
/// next shard when that one is slightly larger; a read offered no spare gets exactly `len`.
pub(crate) fn read_buffer(spare: Option<Vec<u8>>, len: usize) -> Vec<u8> {
    match spare {
        Some(mut buf) if buf.capacity() >= len => {
            buf.resize(len, 0);
            buf
        }
        Some(_) if len >= 64 << 10 => {
            let mut buf = vec![0u8; len.saturating_add(len / 16)];
            buf.truncate(len);
            buf
        }
        _ => vec![0u8; len],
    }
}

impl FileIo {
    /// `create()`, and when it finds the parent directory missing, the directory made and
    /// `create()` again: one system call per object written in the usual case (a
    /// `create_dir_all` first would cost a failing `mkdir` and a `stat` every time). The error
    /// of making the directory is returned as an `Err`, `create`'s own inside the `Ok`.
    fn with_parent<T>(
        &self,
        path: &Path,
        create: impl Fn() -> std::io::Result<T>,
    ) -> Result<std::io::Result<T>> {
        match create() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent).map_err(|e| Error::io_at(parent, e))?;
                }
                Ok(create())
            }
            other => Ok(other),
        }
    }

    /// The temporary sibling of `target` a whole object is written to before it is renamed
    /// over it: named for this process and this write (`NAME.tmp-PID-N`), so that two writes of
    /// one object at once (two threads, two sinks, two processes) never write into one
    /// temporary; the last renamed wins whole. A temporary left by a killed writer is found by
    /// [`crate::Array::leftover_temporaries`] (`zarrshard verify` reports it, `repair`
    /// removes it).
    fn temporary(target: &Path) -> PathBuf {
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let n = WRITES.fetch_add(1, Ordering::Relaxed);
        let mut tmp_name = target.file_name().unwrap_or_default().to_os_string();
        tmp_name.push(format!("{TEMPORARY_MARK}{}-{n}", std::process::id()));
        target.with_file_name(tmp_name)
    }

    /// The file a whole-object write replaces: the path, or, when it is a symbolic link (a
    /// chain of them), the file the last one names, which need not exist yet. Every write
    /// path of this back end (in-place writes, which open through the link, and new objects,
    /// renamed over this file) so writes the file the link names and keeps the link, as
    /// `zarrshard export` treats its output; [`ShardIo::delete`] removes the link itself. A
    /// relative target is relative to the link's directory; a loop is `ELOOP`.
    pub fn target(&self) -> Result<PathBuf> {
        let mut path = self.path.clone();
        for _ in 0..MAX_LINKS {
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    let to = std::fs::read_link(&path).map_err(|e| Error::io_at(&path, e))?;
                    path = match path.parent() {
                        Some(dir) if to.is_relative() => dir.join(to),
                        _ => to,
                    };
                }
                _ => return Ok(path),
            }
        }
        Err(Error::io_at(
            &self.path,
            std::io::Error::from_raw_os_error(ELOOP),
        ))
    }

    /// A new object for this file, written to a temporary of its own (see [`FileSink`]).
    fn sink(&self) -> FileSink<'_> {
        FileSink {
            io: self,
            paths: None,
            file: None,
            end: 0,
        }
    }

    /// After a rename over the file: the cached descriptor (if any) is the replaced file's.
    fn replaced(&self) {
        *self.file.write().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// [`ShardIo::read`] into `spare`'s allocation when it is large enough.
    fn read_into(&self, range: ByteRange, spare: Option<Vec<u8>>) -> Result<Option<ReadOutput>> {
        let Some(f) = self.handle(false)? else {
            return Ok(None);
        };
        // A small bounded read needs no size: pread stops at the end of the file by itself. A
        // large one is clamped to the file first, so a length taken from a hostile index never
        // becomes a huge allocation.
        let (start, len, size) = match range {
            ByteRange::FromStart(o, Some(n)) if n <= 1 << 20 => (o, n, None),
            ByteRange::FromStart(o, Some(n)) => {
                let size = f.metadata().map_err(|e| Error::io_at(&self.path, e))?.len();
                (o, n.min(size.saturating_sub(o)), Some(size))
            }
            _ => {
                let size = f.metadata().map_err(|e| Error::io_at(&self.path, e))?.len();
                match range {
                    ByteRange::FromStart(o, _) => (o.min(size), size - o.min(size), Some(size)),
                    ByteRange::Suffix(n) => (size.saturating_sub(n), n.min(size), Some(size)),
                }
            }
        };
        let mut data = read_buffer(spare, len as usize);
        let mut done = 0;
        while done < data.len() {
            match read_at(&f, &mut data[done..], start + done as u64) {
                Ok(0) => break, // the file shrank under us: a short read
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io_at(&self.path, e)),
            }
        }
        data.truncate(done);
        Ok(Some(ReadOutput {
            data,
            object_size: size,
        }))
    }
}

impl ShardIo for FileIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.read_into(range, None)
    }

    fn read_many_reusing(
        &self,
        ranges: &[ByteRange],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        ranges
            .iter()
            .map(|r| self.read_into(*r, spare.pop()))
            .collect()
    }

    fn size(&self) -> Result<Option<u64>> {
        match std::fs::metadata(&self.path) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io_at(&self.path, e)),
        }
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let f = self.handle(true)?.ok_or_else(|| Error::Io {
            code: -1,
            message: format!("{}: cannot create", self.path.display()),
        })?;
        write_all_at(&f, data, offset).map_err(|e| Error::io_at(&self.path, e))
    }

    fn put(&self, data: &[u8]) -> Result<()> {
        self.put_parts(&[data])
    }

    fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
        put_whole(Box::new(self.sink()), parts)
    }

    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        Some(Box::new(self.sink()))
    }

    fn truncate(&self, len: u64) -> Result<()> {
        let f = self.handle(true)?.ok_or_else(|| Error::Io {
            code: -1,
            message: format!("{}: cannot create", self.path.display()),
        })?;
        f.set_len(len).map_err(|e| Error::io_at(&self.path, e))
    }
    fn can_truncate(&self) -> bool {
        true
    }

    fn delete(&self) -> Result<()> {
        *self.file.write().unwrap_or_else(|e| e.into_inner()) = None;
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io_at(&self.path, e)),
            _ => Ok(()),
        }
    }
}

/// [`FileIo`]'s new object: a temporary sibling of the file it replaces ([`FileIo::target`]:
/// the file a symbolic link names), created at the first write, written at a cursor (each
/// piece of 64 KiB or more allocated on disk first), given the replaced file's mode, owner and
/// group ([`keep_attributes`]) and renamed over it at commit; removed when dropped before.
/// [`ShardIo::put_parts`] is this, written in one piece.
struct FileSink<'a> {
    io: &'a FileIo,
    /// The file replaced at commit and the temporary, once the first write resolved them.
    paths: Option<(PathBuf, PathBuf)>,
    /// The temporary file and the offset its cursor is at.
    file: Option<(File, u64)>,
    /// The end of the last byte written.
    end: u64,
}

impl FileSink<'_> {
    fn write(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        use std::io::{Seek, SeekFrom};
        let path = &self.io.path;
        let (f, at) = match &mut self.file {
            Some((f, at)) => (f, at),
            None => {
                let target = self.io.target()?;
                let tmp = FileIo::temporary(&target);
                let f = self
                    .io
                    .with_parent(&target, || File::create(&tmp))?
                    .map_err(|e| Error::io_at(path, e))?;
                self.paths = Some((target, tmp));
                let (f, at) = self.file.insert((f, 0));
                (f, at)
            }
        };
        let len: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let written = (if *at == offset {
            Ok(offset)
        } else {
            f.seek(SeekFrom::Start(offset))
        })
        .and_then(|_| {
            preallocate(f, offset, len);
            write_all_parts(f, parts)
        });
        // After an error the cursor is unknown: the next write seeks.
        *at = if written.is_ok() {
            offset + len
        } else {
            u64::MAX
        };
        written.map_err(|e| Error::io_at(path, e))?;
        self.end = self.end.max(offset + len);
        Ok(())
    }
}

impl ObjectSink for FileSink<'_> {
    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        self.write(offset, parts)
    }

    fn commit(mut self: Box<Self>, len: u64) -> Result<()> {
        check_written(len, self.end)?;
        if self.file.is_none() {
            self.write(0, &[])?;
        }
        // The file was created empty and grew only by the writes: its size is `len`.
        let (file, _) = self.file.take().expect("written above");
        let (target, tmp) = self.paths.take().expect("set with the file");
        let done = keep_attributes(&file, &target).and_then(|()| {
            drop(file);
            std::fs::rename(&tmp, &target)
        });
        match done {
            Ok(()) => {
                self.io.replaced();
                Ok(())
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                Err(Error::io_at(&self.io.path, e))
            }
        }
    }
}

impl Drop for FileSink<'_> {
    /// Not committed: the temporary file goes; the object stays as it was.
    fn drop(&mut self) {
        if let (Some(_), Some((_, tmp))) = (self.file.take(), self.paths.take()) {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

/// Give a new object `f` the mode (permission bits, set-id and sticky bits) of the file
/// `target` it replaces, and its owner and group where this process may (root: both; the
/// owner of a file: a group it belongs to; otherwise they stay this process's), so a
/// rewrite never widens who can read a shard: a 0600 shard stays 0600. A new shard (no
/// `target`, or not a regular file) keeps the mode the umask gives. Errors: `fchmod`'s,
/// except on a file system without permissions (`EPERM`, `ENOTSUP`).
#[cfg(unix)]
fn keep_attributes(f: &File, target: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{fchown, MetadataExt, PermissionsExt};
    let Ok(old) = std::fs::metadata(target) else {
        return Ok(());
    };
    if !old.is_file() {
        return Ok(());
    }
    let mine = f.metadata()?;
    let mode = old.mode() & 0o7777;
    // Owner and group first: `fchown` clears set-id bits, which the mode then restores.
    if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
        if fchown(f, Some(old.uid()), Some(old.gid())).is_err() {
            let _ = fchown(f, None, Some(old.gid()));
        }
    } else if mine.mode() & 0o7777 == mode {
        return Ok(()); // the usual case: nothing to change
    }
    match f.set_permissions(std::fs::Permissions::from_mode(mode)) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

#[cfg(not(unix))]
fn keep_attributes(f: &File, target: &Path) -> std::io::Result<()> {
    match std::fs::metadata(target) {
        Ok(old) if old.is_file() => f.set_permissions(old.permissions()),
        _ => Ok(()),
    }
}

/// Positional writes ([`ShardIo::write_at`]) into a new object ([`ShardIo::object_sink`]), for
/// the streaming writer: the shard it writes replaces the old one at [`SinkIo::commit`], so
/// until then readers see the old shard, a failure or a killed process leaves it as it was,
/// and two writers of one shard end with one writer's complete shard. It reads as a missing
/// object (a streaming writer never reads) and cuts nothing: `truncate` accepts only the end
/// of what was written.
pub(crate) struct SinkIo<'a> {
    sink: Mutex<Box<dyn ObjectSink + 'a>>,
    end: AtomicU64,
}

impl<'a> SinkIo<'a> {
    pub(crate) fn new(sink: Box<dyn ObjectSink + 'a>) -> Self {
        SinkIo {
            sink: Mutex::new(sink),
            end: AtomicU64::new(0),
        }
    }

    /// Put the object written in place of the old one.
    pub(crate) fn commit(self) -> Result<()> {
        let end = self.end.into_inner();
        self.sink
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .commit(end)
    }
}

impl ShardIo for SinkIo<'_> {
    fn read(&self, _: ByteRange) -> Result<Option<ReadOutput>> {
        Ok(None)
    }
    fn size(&self) -> Result<Option<u64>> {
        Ok(None)
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or_else(|| Error::InvalidArgument(format!("write at {offset} overflows")))?;
        let mut sink = self.sink.lock().unwrap_or_else(|e| e.into_inner());
        sink.write_parts_at(offset, &[data])?;
        self.end.fetch_max(end, Ordering::Relaxed);
        Ok(())
    }
    fn truncate(&self, len: u64) -> Result<()> {
        match len == self.end.load(Ordering::Relaxed) {
            true => Ok(()),
            false => Err(Error::Unsupported(
                "truncate (a new object being written)".into(),
            )),
        }
    }
    /// Nothing to delete in a new object; the caller deletes the old one.
    fn delete(&self) -> Result<()> {
        Ok(())
    }
}

/// Wraps a back end and counts read calls and bytes read: what tests and benchmarks assert
/// ("a cold single-chunk read is 2 reads of index + chunk bytes").
#[derive(Debug, Default)]
pub struct CountingIo<T> {
    /// The wrapped back end.
    pub inner: T,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl<T> CountingIo<T> {
    /// Count the reads of `inner`, starting at zero.
    pub fn new(inner: T) -> Self {
        CountingIo {
            inner,
            reads: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        }
    }
    /// Read calls so far.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }
    /// Bytes returned by reads so far.
    pub fn bytes_read(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }
    /// Reset both counters to zero.
    pub fn reset(&self) {
        self.reads.store(0, Ordering::Relaxed);
        self.bytes.store(0, Ordering::Relaxed);
    }

    fn count_many(
        &self,
        ranges: &[ByteRange],
        out: Vec<Option<ReadOutput>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        let n: usize = out.iter().flatten().map(|o| o.data.len()).sum();
        self.reads.fetch_add(ranges.len() as u64, Ordering::Relaxed);
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(out)
    }
}

impl<T: ShardIo> ShardIo for CountingIo<T> {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let out = self.inner.read(range)?;
        if let Some(o) = &out {
            self.bytes.fetch_add(o.data.len() as u64, Ordering::Relaxed);
        }
        Ok(out)
    }
    // Several ranges count as one read each, whether the back end fetches them one by one
    // or at once.
    fn read_many(&self, ranges: &[ByteRange]) -> Result<Vec<Option<ReadOutput>>> {
        self.count_many(ranges, self.inner.read_many(ranges)?)
    }
    fn read_many_reusing(
        &self,
        ranges: &[ByteRange],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        self.count_many(ranges, self.inner.read_many_reusing(ranges, spare)?)
    }
    fn size(&self) -> Result<Option<u64>> {
        self.inner.size()
    }
    fn can_truncate(&self) -> bool {
        self.inner.can_truncate()
    }
    fn writes_in_place(&self) -> bool {
        self.inner.writes_in_place()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.inner.write_at(offset, data)
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        self.inner.put(data)
    }
    fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.inner.put_parts(parts)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        self.inner.truncate(len)
    }
    fn delete(&self) -> Result<()> {
        self.inner.delete()
    }
    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        self.inner.object_sink()
    }
}

#[cfg(test)]
mod sink_tests {
    use super::*;

    fn listing(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_sink_replaces_the_object_at_commit_and_only_then() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c").join("0");
        let io = FileIo::new(&path);
        io.put(b"old object").unwrap();
        let whole = || {
            io.read(ByteRange::FromStart(0, None))
                .unwrap()
                .unwrap()
                .data
        };
        assert_eq!(whole(), b"old object");
        let mut sink = io.object_sink().unwrap();
        // Chunks from 4 on in two pieces, then what goes first (an index at the start).
        sink.write_parts_at(4, &[b"ab", b"", b"cd"]).unwrap();
        sink.write_parts_at(8, &[b"ef"]).unwrap();
        assert_eq!(whole(), b"old object", "not committed yet");
        sink.write_parts_at(0, &[b"0123"]).unwrap();
        // Another sink of the same object at the same time has a temporary of its own; one
        // committed with a length other than where its writes end is refused.
        let mut short = io.object_sink().unwrap();
        short.write_parts_at(0, &[b"0123456789"]).unwrap();
        assert_eq!(listing(path.parent().unwrap()).len(), 3);
        let err = short.commit(9).unwrap_err();
        assert_eq!(
            err.to_string(),
            Error::InvalidArgument(
                "a new object committed as 9 bytes, but its writes end at 10".into()
            )
            .to_string()
        );
        assert_eq!(whole(), b"old object");
        assert_eq!(listing(path.parent().unwrap()).len(), 2);
        sink.commit(10).unwrap();
        // Read through the same `FileIo`, whose descriptor was the old file's.
        assert_eq!(whole(), b"0123abcdef");
        assert_eq!(listing(path.parent().unwrap()), ["0"]);

        // Dropped without a commit: the temporary goes, the object stays.
        let mut sink = io.object_sink().unwrap();
        sink.write_parts_at(0, &[b"xyz"]).unwrap();
        assert_eq!(listing(path.parent().unwrap()).len(), 2);
        drop(sink);
        assert_eq!(whole(), b"0123abcdef");
        assert_eq!(listing(path.parent().unwrap()), ["0"]);

        // A sink that writes nothing makes nothing, not even the directory.
        let elsewhere = FileIo::new(dir.path().join("d").join("0"));
        drop(elsewhere.object_sink().unwrap());
        assert_eq!(listing(dir.path()), ["c"]);
    }

    #[test]
    fn a_memory_sink_replaces_the_object_at_commit_and_only_then() {
        let io = MemoryIo::from_bytes(b"old".to_vec());
        let mut sink = io.object_sink().unwrap();
        sink.write_parts_at(2, &[b"cd", b"e"]).unwrap();
        sink.write_parts_at(0, &[b"ab"]).unwrap();
        assert_eq!(io.bytes().unwrap(), b"old");
        let mut padded = io.object_sink().unwrap();
        padded.write_parts_at(0, &[b"ab"]).unwrap();
        assert!(padded.commit(3).is_err());
        assert_eq!(io.bytes().unwrap(), b"old");
        sink.commit(5).unwrap();
        assert_eq!(io.bytes().unwrap(), b"abcde");
        let mut sink = io.object_sink().unwrap();
        sink.write_parts_at(0, &[b"zz"]).unwrap();
        drop(sink);
        assert_eq!(io.bytes().unwrap(), b"abcde");
        assert!(io
            .object_sink()
            .unwrap()
            .write_parts_at(u64::MAX, &[b"a"])
            .is_err());
    }
}

#[cfg(all(test, target_os = "linux", not(miri)))]
mod tests {
    use super::*;

    /// `preallocate` gives a new file its length (what `fallocate` mode 0 does) from
    /// [`PREALLOCATE_FROM`] up, and leaves smaller files alone. Skips, saying so, where the
    /// temporary directory's file system cannot allocate.
    #[test]
    fn preallocates_large_objects_only() {
        let dir = tempfile::tempdir().unwrap();
        let probe = File::create(dir.path().join("probe")).unwrap();
        let flags = nix::fcntl::FallocateFlags::empty();
        if let Err(e) = nix::fcntl::fallocate(&probe, flags, 0, 4096) {
            eprintln!("skipped: no fallocate under {} ({e})", dir.path().display());
            return;
        }
        let len_after = |len: u64| {
            let f = File::create(dir.path().join(format!("f{len}"))).unwrap();
            preallocate(&f, 0, len);
            f.metadata().unwrap().len()
        };
        assert_eq!(len_after(PREALLOCATE_FROM - 1), 0);
        assert_eq!(len_after(PREALLOCATE_FROM), PREALLOCATE_FROM);
        assert_eq!(len_after(3 << 20), 3 << 20);
    }
}
