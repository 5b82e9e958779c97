//! `shard_handle`: one open shard object, for reading (many threads at once) or writing (one
//! thread at a time, checked). It is the level below `shard_array` for hosts that place and
//! name shard objects themselves (an acquisition writing one shard as frames arrive, a reader
//! given one object), so they need neither a store nor `zarr.json`, only a `shard_codec`.

use super::codec::shard_codec;
use super::error::{guard, Failure, FfiResult};
use super::handle::{bytes, bytes_mut, optional_out, out, Handle};
use super::io::{shard_io_callbacks, CallbackIo, UserdataOwner};
use super::status::shard_status;
use crate::error::Error;
use crate::shard::reader::ShardReader;
use crate::shard::writer::{
    ChunkOrder, Finalized, ShardWriter, UpdateMode, WriteOptions, WriteStrategy,
};
use std::sync::{Mutex, MutexGuard, TryLockError};

/// How `shard_open` opens the shard. Passed as a `uint32_t`.
#[repr(C)]
#[allow(non_camel_case_types)]
pub enum shard_mode {
    /// Read: the index is read at open (one read); `shard_read_*` and `shard_chunk_info`.
    SHARD_MODE_READ = 0,
    /// Write, buffered: chunks are kept encoded in memory; `shard_finalize` writes the whole
    /// shard with one `write` (plus `truncate`). Without `truncate`, when `size` reports an
    /// object longer than the new shard, finalize refuses (`SHARD_ERR_UNSUPPORTED`) before
    /// writing any byte, so the old shard stays as it was. A table with the version-3
    /// new-object callbacks gets the shard as a new object instead (`create_new`, one
    /// `write_new`, `commit_new`; `discard_new` on a failure), which replaces the old one only
    /// when complete.
    SHARD_MODE_WRITE_BUFFERED = 1,
    /// Write, streaming: each chunk is written as it is given; the index at finalize. The
    /// final size is known only then: without `truncate`, an existing object longer than the
    /// new shard is found at finalize (`SHARD_ERR_UNSUPPORTED`), after the chunks overwrote
    /// its start, so give a host without `truncate` a new object to stream into.
    SHARD_MODE_WRITE_STREAMING = 2,
    /// Update an existing shard (its index is read at open), appending new chunks and the new
    /// index after the old object. With the index at the end no old byte is overwritten (an
    /// earlier index stays in the object, which `zarrshard repair` can use), but a torn update
    /// still leaves an object whose last bytes are not a valid index; with the index at the
    /// start the index is rewritten in place. Crash safety comes from writing to a temporary
    /// object and committing it after finalize. The object's size (from `read_suffix` or
    /// `size`) must agree with the index read at open (every entry inside the object, none
    /// over the index), or open fails with `SHARD_ERR_CORRUPT`: a stale size would put new
    /// chunks over stored ones. When a `write` fails before the new index is written, the
    /// object is cut back to its old size (`truncate`; `remove` for an object the update
    /// created), leaving the previous shard as it was, when the host has those callbacks.
    SHARD_MODE_UPDATE_APPEND = 3,
    /// Update an existing shard, rewriting chunks in place where the new encoding fits (and
    /// no other index entry shares the old bytes; appending otherwise). The size is checked
    /// at open as for `SHARD_MODE_UPDATE_APPEND`; a failed `write` is not undone (old bytes
    /// were overwritten).
    SHARD_MODE_UPDATE_IN_PLACE = 4,
}

/// `shard_open_ex` flag: lay out buffered shards in Morton order instead of C order.
pub const SHARD_FLAG_MORTON_ORDER: u32 = 1;
/// `shard_open_ex` flag: store inner chunks equal to the fill value instead of leaving them
/// empty.
pub const SHARD_FLAG_STORE_FILL_CHUNKS: u32 = 2;

/// Where an inner chunk is stored.
#[repr(C)]
#[allow(non_camel_case_types)]
pub struct shard_chunk_location {
    /// Byte offset in the shard object: `UINT64_MAX` when `empty`; 0 for chunks a buffered
    /// writer holds until finalize.
    pub offset: u64,
    /// Encoded size in bytes (0 when `empty`).
    pub nbytes: u64,
    /// True when the chunk is not stored (it reads as the fill value).
    pub empty: bool,
}

/// An open shard object.
pub struct shard_handle {
    _private: [u8; 0],
}

/// The open shard. Field order matters: the reader or writer (which may call back into the
/// host) is dropped before `userdata` is destroyed.
pub(crate) struct ShardHandle {
    state: State,
    _userdata: UserdataOwner,
}

enum State {
    Read(ShardReader<CallbackIo>),
    Write(Mutex<ShardWriter<CallbackIo>>),
}

impl Handle for shard_handle {
    type Rust = ShardHandle;
}

impl ShardHandle {
    fn reader(&self) -> FfiResult<&ShardReader<CallbackIo>> {
        match &self.state {
            State::Read(r) => Ok(r),
            State::Write(_) => {
                Err(Error::InvalidState("the shard was opened for writing".into()).into())
            }
        }
    }

    /// Exclusive use of the writer; a second thread is refused, not blocked.
    fn writer(&self) -> FfiResult<MutexGuard<'_, ShardWriter<CallbackIo>>> {
        match &self.state {
            State::Read(_) => {
                Err(Error::InvalidState("the shard was opened for reading".into()).into())
            }
            State::Write(w) => match w.try_lock() {
                Ok(g) => Ok(g),
                Err(TryLockError::WouldBlock) => Err(Failure::Busy),
                // A panic mid-write was already reported; the writer's own state decides.
                Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            },
        }
    }
}

/// Open the shard object behind `io` with `codec`'s layout. `mode` is a `shard_mode`.
/// Same as `shard_open_ex` with no flags.
///
/// The callback table is copied; see `shard_io_callbacks` for who owns `userdata`. On success
/// `*shard_out` owns a new handle; close it with `shard_close`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (mode, callback
/// version, missing `read`), `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM` (read
/// and update modes read the index), `SHARD_ERR_UNSUPPORTED`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_open(
    codec: *const shard_codec,
    io: *const shard_io_callbacks,
    mode: u32,
    shard_out: *mut *mut shard_handle,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe { shard_open_ex(codec, io, mode, 0, shard_out) }
}

/// `shard_open` with `flags`: a bitwise OR of `SHARD_FLAG_*` (0 for none). The flags concern
/// writing and are ignored by `SHARD_MODE_READ`; unknown flag bits give
/// `SHARD_ERR_INVALID_ARGUMENT`. Ownership as `shard_open`. Thread-safe. Returns what
/// `shard_open` returns.
#[no_mangle]
pub unsafe extern "C" fn shard_open_ex(
    codec: *const shard_codec,
    io: *const shard_io_callbacks,
    mode: u32,
    flags: u32,
    shard_out: *mut *mut shard_handle,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let codec = unsafe { shard_codec::borrow(codec, "codec") }?;
        if io.is_null() {
            return Err(Failure::Null("io"));
        }
        // Not borrowed as a whole: a version-1 table is shorter than this header's struct.
        let io = &unsafe { super::io::read_table(io) };
        let shard_out = unsafe { out(shard_out, "shard_out") }?;
        if flags & !(SHARD_FLAG_MORTON_ORDER | SHARD_FLAG_STORE_FILL_CHUNKS) != 0 {
            return Err(Error::InvalidArgument(format!("unknown flags {flags:#x}")).into());
        }
        let options = WriteOptions {
            order: if flags & SHARD_FLAG_MORTON_ORDER != 0 {
                ChunkOrder::Morton
            } else {
                ChunkOrder::C
            },
            store_fill_chunks: flags & SHARD_FLAG_STORE_FILL_CHUNKS != 0,
        };
        let cb = CallbackIo::new(io)?;
        let layout = codec.layout.clone();
        let state = match mode {
            0 => State::Read(ShardReader::open(layout, cb)?),
            1..=4 => {
                let strategy = match mode {
                    1 => WriteStrategy::Buffered,
                    2 => WriteStrategy::Streaming,
                    3 => WriteStrategy::Update(UpdateMode::AppendOnly),
                    _ => WriteStrategy::Update(UpdateMode::InPlace),
                };
                State::Write(Mutex::new(ShardWriter::new(layout, cb, strategy, options)?))
            }
            m => return Err(Error::InvalidArgument(format!("unknown mode {m}")).into()),
        };
        // Only now does the handle own `userdata`: a failed open leaves it with the host.
        let owner = UserdataOwner::of(io);
        *shard_out = shard_handle::into_ptr(ShardHandle {
            state,
            _userdata: owner,
        });
        Ok(())
    })
}

/// Close a shard handle: release its resources and call the callbacks' `destroy(userdata)`.
/// A write handle that was not finalized is discarded: a `SHARD_MODE_UPDATE_APPEND` update
/// cuts the object back to the previous shard (`truncate`; `remove` for an object the update
/// created) when the host has that callback, so giving up an update costs nothing; in the other
/// modes what was already written stays in the object and nothing more is written. NULL is a
/// no-op. The handle must not be in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn shard_close(shard: *mut shard_handle) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: the caller passes a pointer from shard_open, once.
        if let Ok(h) = unsafe { shard_handle::borrow(shard, "shard") } {
            if let State::Write(writer) = &h.state {
                // Best effort: close reports nothing, and a finalized writer refuses.
                let _ = writer.lock().unwrap_or_else(|e| e.into_inner()).discard();
            }
        }
        // SAFETY: as above; the borrow has ended.
        unsafe { shard_handle::free(shard) }
    });
}

/// The handle and inner chunk coordinates of a call.
unsafe fn chunk_args<'a>(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
) -> FfiResult<(&'a ShardHandle, &'a [u64])> {
    // SAFETY: per the callers' contract.
    let h = unsafe { shard_handle::borrow(shard, "shard") }?;
    let c = unsafe { bytes(coords, rank, "coords") }?;
    Ok((h, c))
}

/// Decode inner chunk `coords` (`rank` values) into `buf` (`len` bytes, which must equal
/// `shard_codec_inner_chunk_nbytes`): C order, native byte order; the fill value when the chunk
/// is empty. One `read` callback for a stored chunk, none for an empty one.
///
/// Read handles only. Thread-safe: many threads may read one handle at once.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (coordinates),
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`,
/// `SHARD_ERR_INVALID_STATE` (write handle), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_read_chunk(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
    buf: *mut u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        let buf = unsafe { bytes_mut(buf, len, "buf") }?;
        h.reader()?.read_chunk_into(coords, buf)?;
        Ok(())
    })
}

/// The coalescing gap of a new read handle: 65536 bytes (`shard_set_coalesce_gap`).
pub const SHARD_DEFAULT_COALESCE_GAP: u64 = 65536;
// A literal for cbindgen, which does not follow paths; held equal to the core's.
const _: () = assert!(SHARD_DEFAULT_COALESCE_GAP == crate::shard::reader::DEFAULT_COALESCE_GAP);

/// Set the gap (bytes) below which the byte ranges of chunks wanted by one
/// `shard_read_chunks` call are fetched with one read; 0 merges only touching ranges, a large
/// value reads the whole span. The default is `SHARD_DEFAULT_COALESCE_GAP` (65536). Read
/// handles only; thread-safe (takes effect for calls that start afterwards). Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_INVALID_STATE` (write handle), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_set_coalesce_gap(
    shard: *const shard_handle,
    gap: u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_handle::borrow(shard, "shard") }?;
        h.reader()?.set_coalesce_gap(gap);
        Ok(())
    })
}

/// Decode `count` inner chunks in one call: `coords` holds `count * rank` values (chunk after
/// chunk), `buf` receives the decoded chunks one after another (`len` must be `count *
/// shard_codec_inner_chunk_nbytes`). Byte ranges of the wanted chunks closer than the
/// coalescing gap (`shard_set_coalesce_gap`, 64 KiB by default) are fetched as one range (the
/// whole span once when most of it is wanted); all ranges go to one `read_vectored` call when
/// the table has it, else one `read` each. Chunks are decoded in parallel on the library's
/// threads (`shard_set_threads`), which never call back into the host. A rank-0 shard has one
/// chunk and no coordinates: `coords` may then be NULL, and each of the `count` chunks is
/// that chunk.
///
/// Read handles only. Thread-safe. Returns what `shard_read_chunk` returns
/// (`SHARD_ERR_INVALID_ARGUMENT` also for `count * rank` values whose byte size exceeds the
/// address space); on error the contents of `buf` are unspecified.
#[no_mangle]
pub unsafe extern "C" fn shard_read_chunks(
    shard: *const shard_handle,
    coords: *const u64,
    count: usize,
    rank: usize,
    buf: *mut u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_handle::borrow(shard, "shard") }?;
        let n = count
            .checked_mul(rank)
            .ok_or_else(|| Error::InvalidArgument("count * rank overflows".into()))?;
        let coords = unsafe { bytes(coords, n, "coords") }?;
        let buf = unsafe { bytes_mut(buf, len, "buf") }?;
        let reader = h.reader()?;
        let each = reader.layout().inner_byte_size();
        crate::codec::check_len(len, (count as u64).saturating_mul(each as u64))?;
        // Rank 0: each of the `count` chunks is the shard's one chunk, with no coordinates.
        let list: Vec<&[u64]> = if rank == 0 {
            vec![&[][..]; count]
        } else {
            coords.chunks(rank).collect()
        };
        reader.read_chunks_into(&list, buf)?;
        Ok(())
    })
}

/// Copy the encoded bytes of inner chunk `coords` into `buf` (`len` bytes); `*nbytes_out` (may
/// be NULL) receives their number (0 for an empty chunk). With `(NULL, 0)` only the size is stored, from
/// the index, without reading (a size query); otherwise `len` must be at least that size. Both
/// hold the size to the memory limit (`shard_set_memory_limit`): where the object's size is
/// unknown (no `size` callback, index at the start) nothing else bounds an index entry, and a
/// damaged one may name 2^62 bytes, so a size past the limit is refused with
/// `SHARD_ERR_INVALID_ARGUMENT` rather than reported for the host to allocate.
///
/// Read handles only. Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_INVALID_ARGUMENT` (also: past the memory limit), `SHARD_ERR_BUFFER_SIZE`,
/// `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_INVALID_STATE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_read_chunk_raw(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
    buf: *mut u8,
    len: usize,
    nbytes_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        let size_query = buf.is_null() && len == 0;
        let buf = unsafe { bytes_mut(buf, len, "buf") }?;
        // SAFETY: NULL or valid for one write.
        let nbytes_out = unsafe { optional_out(nbytes_out) };
        let reader = h.reader()?;
        let nbytes = reader.chunk_raw_len(coords)?;
        if size_query {
            if let Some(o) = nbytes_out {
                *o = nbytes;
            }
            return Ok(());
        }
        if buf.len() < nbytes {
            return Err(Error::BufferSize {
                expected: nbytes as u64,
                actual: buf.len() as u64,
            }
            .into());
        }
        let data = reader.read_chunk_raw(coords)?.unwrap_or_default();
        buf[..data.len()].copy_from_slice(&data);
        if let Some(o) = nbytes_out {
            *o = data.len();
        }
        Ok(())
    })
}

/// Store where inner chunk `coords` is in `*info_out`. Read handles: from the index read at
/// open. Write handles: the chunks written so far (buffered offsets are assigned at finalize).
/// Thread-safe for read handles. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_BUSY`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_chunk_info(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
    info_out: *mut shard_chunk_location,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        let info_out = unsafe { out(info_out, "info_out") }?;
        let loc = match &h.state {
            State::Read(r) => r.chunk_location(coords)?,
            State::Write(_) => {
                let w = h.writer()?;
                let i = w.layout().linear_index(coords)?;
                w.index().get(i)
            }
        };
        *info_out = match loc {
            Some(l) => shard_chunk_location {
                offset: l.offset,
                nbytes: l.nbytes,
                empty: false,
            },
            None => shard_chunk_location {
                offset: u64::MAX,
                nbytes: 0,
                empty: true,
            },
        };
        Ok(())
    })
}

/// Encode inner chunk `coords` from `data` (`len` bytes = `shard_codec_inner_chunk_nbytes`,
/// C order, native byte order) and write it per the handle's mode. A chunk equal to the fill
/// value is left empty unless `SHARD_FLAG_STORE_FILL_CHUNKS` was given. When the `write`
/// callback fails the object is incomplete (in `SHARD_MODE_UPDATE_APPEND` it is cut back to
/// the previous shard when the host has `truncate`): every later write or finalize on the
/// handle returns `SHARD_ERR_INVALID_STATE` (close it and discard the object).
///
/// Write handles only; exclusive use (a concurrent call on the same handle gets
/// `SHARD_ERR_BUSY`). Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT`,
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`, `SHARD_ERR_INVALID_STATE` (read handle, or after
/// finalize), `SHARD_ERR_BUSY`, `SHARD_ERR_UNSUPPORTED` (no `write` callback), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_write_chunk(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
    data: *const u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        let data = unsafe { bytes(data, len, "data") }?;
        h.writer()?.write_chunk(coords, data)?;
        Ok(())
    })
}

/// Write inner chunk `coords` from already-encoded bytes (`data`, `len` bytes), e.g. copied
/// with `shard_read_chunk_raw` from a shard with the same inner codecs, without recompressing.
/// The bytes are stored as given. Write handles only; exclusive use. Returns what
/// `shard_write_chunk` returns.
#[no_mangle]
pub unsafe extern "C" fn shard_write_chunk_raw(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
    data: *const u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        let data = unsafe { bytes(data, len, "data") }?;
        h.writer()?.write_chunk_raw(coords, data)?;
        Ok(())
    })
}

/// Mark inner chunk `coords` empty (it then reads as the fill value). Write handles only;
/// exclusive use. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT`,
/// `SHARD_ERR_INVALID_STATE`, `SHARD_ERR_BUSY`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_erase_chunk(
    shard: *const shard_handle,
    coords: *const u64,
    rank: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, coords) = unsafe { chunk_args(shard, coords, rank) }?;
        h.writer()?.erase_chunk(coords)?;
        Ok(())
    })
}

/// Write the index (and, buffered, the chunks): the shard is complete when this returns
/// `SHARD_OK`. When no inner chunk is stored the object is removed instead (`remove`
/// callback) and `*size_out` is 0; otherwise `*size_out` is the object's size. `size_out` may be
/// NULL. Afterwards every write call returns `SHARD_ERR_INVALID_STATE`; close the handle.
///
/// Write handles only; exclusive use. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_INVALID_ARGUMENT` (the shard would end past byte 2^64, e.g. after a host
/// reported an absurd size; nothing is written), `SHARD_ERR_IO`, `SHARD_ERR_INVALID_STATE`
/// (read handle, or finalized before), `SHARD_ERR_BUSY`, `SHARD_ERR_UNSUPPORTED` (no `write`;
/// no `remove` when the shard must be removed; no `truncate` while `size` reports a longer
/// object than the shard written: buffered refuses before writing, see `shard_mode`),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_finalize(
    shard: *const shard_handle,
    size_out: *mut u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract; `size_out` is optional.
        let h = unsafe { shard_handle::borrow(shard, "shard") }?;
        let size = match h.writer()?.finalize()? {
            Finalized::Written { size } => size,
            Finalized::Deleted => 0,
        };
        // SAFETY: NULL or valid for one u64.
        if let Some(o) = unsafe { size_out.as_mut() } {
            *o = size;
        }
        Ok(())
    })
}
