//! Host-supplied I/O: the `shard_io_callbacks` table (modelled on SQLite's
//! `sqlite3_io_methods`: a version first, fields only ever appended, optional methods checked
//! for NULL with a fallback) and its [`ShardIo`] implementation.

use crate::error::{Error, Result};
use crate::storage::io::{ByteRange, ObjectSink, ReadOutput, ShardIo};
use std::ffi::c_void;

/// The callback table version this header defines. Version 1: `read` … `destroy`; version 2
/// appends `read_vectored`; version 3 appends `create_new`, `write_new`, `commit_new` and
/// `discard_new`.
pub const SHARD_IO_VERSION: u32 = 3;

/// Return this from `read`, `read_suffix` or `size` when the object does not exist: it then
/// reads as all fill value. Any other non-zero return is an error code that zarrshard keeps
/// (`shard_last_io_code`) and reports as `SHARD_ERR_IO`.
pub const SHARD_IO_NOT_FOUND: i32 = 2147483647;

/// `shard_last_io_code` returns this when a callback broke the contract (reported more bytes
/// than it was asked for); the call fails with `SHARD_ERR_IO`.
pub const SHARD_IO_CONTRACT_VIOLATION: i32 = 2147483646;

/// The host's storage for one shard object.
///
/// **Contract.**
/// * `version` is the table's version (`SHARD_IO_VERSION`, or 1 or 2 for a table from an
///   older header, which then ends after `destroy` or `read_vectored`). The library reads only
///   the fields the given version has, so old tables keep working; a table from a newer header
///   works too (fields the library does not know are ignored). Later versions only append
///   fields: zero the table first (`memset`, `= {0}`) or fill it with designated initializers,
///   so that a field a newer header appends is NULL (a positional initializer then misses it,
///   which `-Wmissing-field-initializers` reports).
/// * `userdata` is passed to every callback. It is owned by the host until `shard_open`
///   succeeds; from then on the handle owns it and calls `destroy(userdata)` exactly once, from
///   `shard_close`. When `shard_open` fails, `destroy` is not called.
/// * Every callback returns 0 on success; `SHARD_IO_NOT_FOUND` (read, read_suffix, size,
///   remove) when the object does not exist; any other value (including `SHARD_IO_NOT_FOUND`
///   from write or truncate) is an error code the library keeps.
/// * Buffers passed to callbacks are owned by the library and valid only during the call.
/// * A short read (`*read_out < len`) means the object ends there; a callback must loop over
///   its own partial transfers and never return short for any other reason.
/// * Threads: every callback runs on the thread whose `shard_*` call needs it (the library's
///   own worker threads, which decode in parallel, never call back). `read`, `read_suffix` and
///   `size` may therefore run concurrently when several threads call `shard_read_*` on one read
///   handle, so they must be thread-safe. `write`,
///   `truncate` and `remove` are called only from the thread calling a write function on a
///   write handle, never concurrently.
/// * Error mid-write: a failing `write` leaves the object partly written; the write handle
///   reports `SHARD_ERR_IO` and should be closed. To keep the previous shard intact, write to a
///   temporary object and commit it (rename, S3 multipart complete) only after `shard_finalize`
///   returns `SHARD_OK`; discard it otherwise (examples-c/posix_io.c does this). Or give the
///   table the version-3 *new object* callbacks (below): whole objects are then written through
///   them and replace the old one only when complete.
/// * New objects (version 3, optional: `create_new`, `write_new`, `commit_new` and
///   `discard_new`, all four or none — a table with some but not all is refused with
///   `SHARD_ERR_INVALID_ARGUMENT`). The library writes a whole object — a buffered
///   `shard_finalize`, a shard that `shard_array_write_region` covers entirely — as a new object
///   beside the old one: `create_new`, then `write_new` calls at increasing offsets without gaps
///   (or the index last, at 0, when it is at the start), then `commit_new` with its size, which
///   must put it in place of the old object as one step (a rename, an S3 multipart upload
///   completed). On any error before that it calls `discard_new` instead, and the old object is
///   untouched. Exactly one of `commit_new` and `discard_new` follows each successful
///   `create_new`, and nothing after it for that new object. Without them such writes go
///   through `write` in place (and `truncate`). Shard handles (`shard_open`) that stream or
///   update always use `write`.
/// * Object stores (S3 and the like, which cannot write at an offset): a table with the
///   new-object callbacks and `remove` but no `write` (and no `truncate`) is a valid table for
///   the array calls that write. Every write then replaces whole objects through the new-object
///   callbacks (one `create_new` … `commit_new` per object written): shards a region write
///   covers entirely, shards it covers partly (the old object is read whole with `read`, the
///   update applied to a copy in memory, which is then compacted so that no dead bytes pile
///   up, and the result written as a new object; memory: the shard's object),
///   `shard_array_append`/`shard_array_flush`, `shard_array_resize` (shards cut
///   back are rewritten, shards outside removed with `remove`), `shard_array_compact`, and
///   `zarr.json` (`shard_array_set_attributes`, `shard_array_create`, resize). A shard left
///   with no stored chunk is removed with `remove`. Without `write` a shard handle
///   (`shard_open`) can only read or write buffered shards. Give such a table `read_suffix`
///   reporting the object's size (a ranged GET's `Content-Range` total), so that an index read
///   needs one request.
/// * Threads for new objects: calls for one new object never overlap, and come from one thread
///   at a time. Through a store with `SHARD_STORE_THREAD_SAFE` and two threads or more, any of
///   them may run on the library's worker threads (several shards are written at once, and one
///   shard's finished inner chunks are written while the rest still encode); otherwise every
///   call runs on the thread of the `shard_*` call.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct shard_io_callbacks {
    /// `SHARD_IO_VERSION`.
    pub version: u32,
    /// Host context passed to every callback.
    pub userdata: *mut c_void,
    /// Required. Read up to `len` bytes at `offset` into `buf`; store the count in `*read_out`.
    pub read: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            offset: u64,
            len: usize,
            buf: *mut u8,
            read_out: *mut usize,
        ) -> i32,
    >,
    /// Optional. Read the last `len` bytes (the whole object if shorter) into the start of
    /// `buf`; store the
    /// count in `*read_out` and, if known, the object's size in `*object_size_out` (leave it
    /// untouched otherwise). Without it, a suffix read costs a `size` call plus a `read`.
    pub read_suffix: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            len: usize,
            buf: *mut u8,
            read_out: *mut usize,
            object_size_out: *mut u64,
        ) -> i32,
    >,
    /// Optional. Store the object's size in `*size_out`. A read handle on a shard whose index
    /// is at the end needs `read_suffix` or `size` (`SHARD_ERR_UNSUPPORTED` without both).
    pub size: Option<unsafe extern "C" fn(userdata: *mut c_void, size_out: *mut u64) -> i32>,
    /// Required for shard handles that stream or update (`shard_open`), and for array writes
    /// through a table without the new-object callbacks. Write `len` bytes from `buf` at
    /// `offset`, creating or extending the object. NULL for an object store (see the
    /// contract above).
    pub write: Option<
        unsafe extern "C" fn(userdata: *mut c_void, offset: u64, buf: *const u8, len: usize) -> i32,
    >,
    /// Optional. Set the object's size to `len` (a rewrite shorter than the old object needs it
    /// unless the host always starts from a new, empty object).
    pub truncate: Option<unsafe extern "C" fn(userdata: *mut c_void, len: u64) -> i32>,
    /// Optional. Remove the object (a shard left with no stored chunk is removed at finalize).
    /// Removing a missing object must succeed: return 0 or `SHARD_IO_NOT_FOUND`.
    pub remove: Option<unsafe extern "C" fn(userdata: *mut c_void) -> i32>,
    /// Optional. Release `userdata`; called once, at `shard_close`.
    pub destroy: Option<unsafe extern "C" fn(userdata: *mut c_void)>,
    /// Version 2, optional. Read `count` ranges in one call, e.g. as concurrent HTTP range
    /// requests or one io_uring submission: range `k` is `lens[k]` bytes at `offsets[k]`, into
    /// `bufs[k]`; store its byte count in `read_outs[k]` (short = end of object). Return as
    /// `read` does. Used when several inner chunks are read at once (`shard_read_chunks`);
    /// without it, the ranges are read one `read` call at a time.
    pub read_vectored: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            count: usize,
            offsets: *const u64,
            lens: *const usize,
            bufs: *const *mut u8,
            read_outs: *mut usize,
        ) -> i32,
    >,
    /// Version 3, optional (with the three below). Begin a new, empty object that will replace
    /// this one at `commit_new` (a temporary file beside it, say); store the host's handle for
    /// it in `*new_out`. Readers see the old object until then. Return 0 or an error code.
    pub create_new:
        Option<unsafe extern "C" fn(userdata: *mut c_void, new_out: *mut *mut c_void) -> i32>,
    /// Version 3. Write `len` bytes from `buf` at `offset` of the new object `new_object`.
    pub write_new: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            new_object: *mut c_void,
            offset: u64,
            buf: *const u8,
            len: usize,
        ) -> i32,
    >,
    /// Version 3. Put `new_object`, whose writes end at `len`, in place of this object as one
    /// step (a rename), and release it. On failure return an error code, leave the old object
    /// as it was and release `new_object` all the same: the library calls nothing more for it.
    pub commit_new: Option<
        unsafe extern "C" fn(userdata: *mut c_void, new_object: *mut c_void, len: u64) -> i32,
    >,
    /// Version 3. Release `new_object` unused (delete the temporary); the old object stays.
    pub discard_new: Option<unsafe extern "C" fn(userdata: *mut c_void, new_object: *mut c_void)>,
}

/// The fields of a version-1 table, as laid out at the start of every later version.
#[repr(C)]
#[derive(Clone, Copy)]
struct CallbacksV1 {
    version: u32,
    userdata: *mut c_void,
    read: Option<unsafe extern "C" fn(*mut c_void, u64, usize, *mut u8, *mut usize) -> i32>,
    read_suffix:
        Option<unsafe extern "C" fn(*mut c_void, usize, *mut u8, *mut usize, *mut u64) -> i32>,
    size: Option<unsafe extern "C" fn(*mut c_void, *mut u64) -> i32>,
    write: Option<unsafe extern "C" fn(*mut c_void, u64, *const u8, usize) -> i32>,
    truncate: Option<unsafe extern "C" fn(*mut c_void, u64) -> i32>,
    remove: Option<unsafe extern "C" fn(*mut c_void) -> i32>,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// The fields of a version-2 table: version 1's, then `read_vectored`.
#[repr(C)]
#[derive(Clone, Copy)]
struct CallbacksV2 {
    v1: CallbacksV1,
    read_vectored: Option<
        unsafe extern "C" fn(
            *mut c_void,
            usize,
            *const u64,
            *const usize,
            *const *mut u8,
            *mut usize,
        ) -> i32,
    >,
}

/// Copy a host's table, reading only the fields its version has.
///
/// # Safety
/// `p` points at a table of at least the size its `version` field implies.
pub(crate) unsafe fn read_table(p: *const shard_io_callbacks) -> shard_io_callbacks {
    // SAFETY: every version starts with the version-1 fields.
    let v1 = unsafe { std::ptr::read(p.cast::<CallbacksV1>()) };
    if v1.version >= 3 {
        // SAFETY: a version-3 (or later) table holds at least the version-3 fields.
        return unsafe { std::ptr::read(p) };
    }
    let read_vectored = match v1.version {
        // SAFETY: a version-2 table holds the version-2 fields.
        2 => unsafe { std::ptr::read(p.cast::<CallbacksV2>()) }.read_vectored,
        _ => None,
    };
    shard_io_callbacks {
        version: v1.version,
        userdata: v1.userdata,
        read: v1.read,
        read_suffix: v1.read_suffix,
        size: v1.size,
        write: v1.write,
        truncate: v1.truncate,
        remove: v1.remove,
        destroy: v1.destroy,
        read_vectored,
        ..NO_CALLBACKS
    }
}

/// `cb` with the fields its version does not have cleared: they are not the host's (a store's
/// `open_object` fills the library's zeroed table of this header's size, whatever version it
/// says). [`read_table`] reads only those fields in the first place.
fn up_to_version(cb: shard_io_callbacks) -> shard_io_callbacks {
    let v3 = shard_io_callbacks {
        create_new: None,
        write_new: None,
        commit_new: None,
        discard_new: None,
        ..cb
    };
    match cb.version {
        0 | 1 => shard_io_callbacks {
            read_vectored: None,
            ..v3
        },
        2 => v3,
        _ => cb,
    }
}

/// A table with no callbacks (version 0): what fields a version lacks are set to.
pub(crate) const NO_CALLBACKS: shard_io_callbacks = shard_io_callbacks {
    version: 0,
    userdata: std::ptr::null_mut(),
    read: None,
    read_suffix: None,
    size: None,
    write: None,
    truncate: None,
    remove: None,
    destroy: None,
    read_vectored: None,
    create_new: None,
    write_new: None,
    commit_new: None,
    discard_new: None,
};

/// The callback table as a [`ShardIo`]. It does not own `userdata`: a successful `shard_open`
/// wraps the table's `destroy` in a [`UserdataOwner`] that outlives every use.
pub(crate) struct CallbackIo {
    cb: shard_io_callbacks,
    /// Set when this value owns `userdata` itself (objects a store opens); shard handles own
    /// it beside the reader or writer instead.
    _owner: Option<UserdataOwner>,
    /// The store key the object was opened for, named in the errors of its callbacks.
    key: Option<String>,
}

// SAFETY: the contract above makes the host responsible for the thread-safety of `read`,
// `read_suffix` and `size`; the library never calls write-side callbacks concurrently (the write
// handle holds a mutex while it writes; one new object is written by one thread at a time, and
// from worker threads only for stores that declared their callbacks thread-safe).
unsafe impl Send for CallbackIo {}
unsafe impl Sync for CallbackIo {}

impl CallbackIo {
    /// Copy a host's table, checking version and the required `read`.
    pub(crate) fn new(cb: &shard_io_callbacks) -> Result<Self> {
        if cb.version < 1 {
            return Err(Error::InvalidArgument(format!(
                "shard_io_callbacks.version is {}, expected {SHARD_IO_VERSION}",
                cb.version
            )));
        }
        if cb.read.is_none() {
            return Err(Error::InvalidArgument(
                "shard_io_callbacks.read is required".into(),
            ));
        }
        let cb = up_to_version(*cb);
        let new_object = [
            cb.create_new.is_some(),
            cb.write_new.is_some(),
            cb.commit_new.is_some(),
            cb.discard_new.is_some(),
        ];
        if new_object.contains(&true) && new_object.contains(&false) {
            return Err(Error::InvalidArgument(
                "shard_io_callbacks: create_new, write_new, commit_new and discard_new go \
                 together (set all four or none)"
                    .into(),
            ));
        }
        Ok(CallbackIo {
            cb,
            _owner: None,
            key: None,
        })
    }

    /// Like [`CallbackIo::new`], taking ownership of `userdata` at once: `destroy` runs when
    /// the value is dropped, or now if the table is refused.
    pub(crate) fn owning(cb: &shard_io_callbacks) -> Result<Self> {
        let owner = UserdataOwner::of(cb);
        let mut io = CallbackIo::new(cb)?;
        io._owner = Some(owner);
        Ok(io)
    }

    /// This object as the store's `key`: its callbacks' errors name it (a host store's
    /// objects have no path of the library's to show).
    pub(crate) fn named(mut self, key: &str) -> Self {
        self.key = Some(key.to_owned());
        self
    }

    fn fail(&self, what: &str, code: i32) -> Error {
        // The library's own tables (`shard_io_file`) say what failed themselves.
        let message =
            super::store::library_io_message(&self.cb).unwrap_or_else(|| match &self.key {
                Some(key) => format!("the host's {what} callback failed for `{key}`"),
                None => format!("the host's {what} callback failed"),
            });
        Error::Io { code, message }
    }

    /// Read `len` bytes at `offset` into `spare`'s allocation when it is large enough.
    fn read_at(&self, offset: u64, len: usize, spare: Option<Vec<u8>>) -> Result<Option<Vec<u8>>> {
        let read = self.cb.read.expect("checked in new");
        let mut buf = crate::storage::io::read_buffer(spare, len);
        let mut got = 0usize;
        // SAFETY: `buf` is valid for `len` bytes and `got` for one usize during the call.
        let rc = unsafe { read(self.cb.userdata, offset, len, buf.as_mut_ptr(), &mut got) };
        match rc {
            0 if got <= len => {
                buf.truncate(got);
                Ok(Some(buf))
            }
            0 => Err(Error::Io {
                code: SHARD_IO_CONTRACT_VIOLATION,
                message: format!(
                    "the host's read callback reported {got} bytes for a {len}-byte read"
                ),
            }),
            SHARD_IO_NOT_FOUND => Ok(None),
            code => Err(self.fail("read", code)),
        }
    }

    /// Read the object from `offset` to the end without knowing the size, after the `out`
    /// bytes already read from there: 1 MiB blocks to a short read,
    /// held to the memory limit (an object that never ends, or a huge one, is refused with
    /// [`Error::MemoryLimit`] once it passes the limit, not buffered until memory runs out).
    fn read_to_end(&self, offset: u64, mut out: Vec<u8>) -> Result<Option<Vec<u8>>> {
        const BLOCK: u64 = 1 << 20;
        let limit = crate::runtime::limits::memory_limit();
        loop {
            let done = out.len() as u64;
            // Up to one byte past the limit, which tells an object ending exactly at the
            // limit from a longer one.
            let want = limit.saturating_sub(done).saturating_add(1).min(BLOCK) as usize;
            let at = offset.checked_add(done).ok_or_else(|| {
                Error::InvalidArgument(format!("a read at {offset} + {done} overflows"))
            })?;
            let Some(block) = self.read_at(at, want, None)? else {
                return Ok(if out.is_empty() { None } else { Some(out) });
            };
            let short = block.len() < want;
            out.extend_from_slice(&block);
            if out.len() as u64 > limit {
                return Err(Error::MemoryLimit {
                    what: "a whole object read from a host without a size callback".into(),
                    needed: out.len() as u64,
                    limit,
                });
            }
            if short {
                return Ok(Some(out));
            }
        }
    }
}

/// A read's buffer length. The range may come from a hostile index entry of an object whose
/// size the host does not report, so it is held to the memory limit before allocating.
fn len_usize(n: u64) -> Result<usize> {
    crate::runtime::limits::buffer_len(n, "a read from the host's object")
}

/// The first read of a whole object whose size is not known (an unsharded array's chunk, a shard
/// read whole): an object this small comes in one request.
const WHOLE_FIRST_BLOCK: usize = 64 << 10;

impl CallbackIo {
    /// [`ShardIo::read`]; a bounded read goes into `spare`'s allocation when it is large
    /// enough.
    fn read_into(&self, range: ByteRange, spare: Option<Vec<u8>>) -> Result<Option<ReadOutput>> {
        let with =
            |data: Option<Vec<u8>>, object_size| data.map(|data| ReadOutput { data, object_size });
        match range {
            ByteRange::FromStart(offset, Some(len)) => {
                Ok(with(self.read_at(offset, len_usize(len)?, spare)?, None))
            }
            ByteRange::FromStart(offset, None) => {
                // A first block read at once: a small object (`zarr.json`) comes whole in one
                // request; a larger one costs a `size` call and one read of the rest.
                let Some(mut data) = self.read_at(offset, WHOLE_FIRST_BLOCK, None)? else {
                    return Ok(None);
                };
                if data.len() < WHOLE_FIRST_BLOCK {
                    let size = offset.checked_add(data.len() as u64);
                    return Ok(with(Some(data), size));
                }
                match self.cb.size {
                    Some(_) => {
                        let rest = offset.saturating_add(WHOLE_FIRST_BLOCK as u64);
                        let Some(size) = self.size()? else {
                            return Ok(None);
                        };
                        let len = len_usize(size.saturating_sub(rest))?;
                        if len > 0 {
                            if let Some(more) = self.read_at(rest, len, None)? {
                                data.extend_from_slice(&more);
                            }
                        }
                        Ok(with(Some(data), Some(size)))
                    }
                    None => Ok(with(self.read_to_end(offset, data)?, None)),
                }
            }
            ByteRange::Suffix(len) => {
                if let Some(read_suffix) = self.cb.read_suffix {
                    let len = len_usize(len)?;
                    let mut buf = vec![0u8; len];
                    let (mut got, mut size) = (0usize, u64::MAX);
                    // SAFETY: `buf` is valid for `len` bytes, `got` and `size` for one value each.
                    let rc = unsafe {
                        read_suffix(self.cb.userdata, len, buf.as_mut_ptr(), &mut got, &mut size)
                    };
                    return match rc {
                        0 if got <= len => {
                            buf.truncate(got);
                            Ok(with(Some(buf), (size != u64::MAX).then_some(size)))
                        }
                        0 => Err(Error::Io {
                            code: SHARD_IO_CONTRACT_VIOLATION,
                            message: format!(
                                "the host's read_suffix callback reported {got} bytes for {len}"
                            ),
                        }),
                        SHARD_IO_NOT_FOUND => Ok(None),
                        code => Err(self.fail("read_suffix", code)),
                    };
                }
                let Some(size) = self.size().map_err(|e| match e {
                    Error::Unsupported(_) => Error::Unsupported(
                        "a suffix read (index at the end) needs read_suffix or size".into(),
                    ),
                    other => other,
                })?
                else {
                    return Ok(None);
                };
                let start = size.saturating_sub(len);
                Ok(with(
                    self.read_at(start, len_usize(size - start)?, None)?,
                    Some(size),
                ))
            }
        }
    }
}

impl ShardIo for CallbackIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.read_into(range, None)
    }

    fn read_many(&self, ranges: &[ByteRange]) -> Result<Vec<Option<ReadOutput>>> {
        self.read_many_reusing(ranges, &mut Vec::new())
    }

    fn read_many_reusing(
        &self,
        ranges: &[ByteRange],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<Vec<Option<ReadOutput>>> {
        let bounded: Option<Vec<(u64, usize)>> = ranges
            .iter()
            .map(|r| match *r {
                ByteRange::FromStart(o, Some(n)) => usize::try_from(n).ok().map(|n| (o, n)),
                _ => None,
            })
            .collect();
        let (Some(read_vectored), Some(bounded), true) =
            (self.cb.read_vectored, bounded, ranges.len() > 1)
        else {
            return ranges
                .iter()
                .map(|r| self.read_into(*r, spare.pop()))
                .collect();
        };
        let offsets: Vec<u64> = bounded.iter().map(|b| b.0).collect();
        let lens: Vec<usize> = bounded.iter().map(|b| b.1).collect();
        let mut bufs = Vec::with_capacity(lens.len());
        for &n in &lens {
            bufs.push(crate::storage::io::read_buffer(
                spare.pop(),
                len_usize(n as u64)?,
            ));
        }
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let mut got = vec![0usize; ranges.len()];
        // SAFETY: every array has `ranges.len()` entries and each buffer `lens[k]` bytes, all
        // valid during the call.
        let rc = unsafe {
            read_vectored(
                self.cb.userdata,
                ranges.len(),
                offsets.as_ptr(),
                lens.as_ptr(),
                ptrs.as_ptr(),
                got.as_mut_ptr(),
            )
        };
        match rc {
            0 => bufs
                .into_iter()
                .zip(got)
                .zip(lens)
                .map(|((mut b, n), len)| {
                    if n > len {
                        return Err(Error::Io {
                            code: SHARD_IO_CONTRACT_VIOLATION,
                            message: format!(
                                "the host's read_vectored callback reported {n} bytes for {len}"
                            ),
                        });
                    }
                    b.truncate(n);
                    Ok(Some(ReadOutput {
                        data: b,
                        object_size: None,
                    }))
                })
                .collect(),
            SHARD_IO_NOT_FOUND => Ok(vec![None; ranges.len()]),
            code => Err(self.fail("read_vectored", code)),
        }
    }

    fn size(&self) -> Result<Option<u64>> {
        let size = self
            .cb
            .size
            .ok_or_else(|| Error::Unsupported("size".into()))?;
        let mut out = 0u64;
        // SAFETY: `out` is valid for one u64 during the call.
        match unsafe { size(self.cb.userdata, &mut out) } {
            0 => Ok(Some(out)),
            SHARD_IO_NOT_FOUND => Ok(None),
            code => Err(self.fail("size", code)),
        }
    }

    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        let write = self
            .cb
            .write
            .ok_or_else(|| Error::Unsupported("write (no write callback)".into()))?;
        // SAFETY: `data` is valid for `data.len()` bytes during the call.
        match unsafe { write(self.cb.userdata, offset, data.as_ptr(), data.len()) } {
            0 => Ok(()),
            code => Err(self.fail("write", code)),
        }
    }

    fn can_truncate(&self) -> bool {
        self.cb.truncate.is_some()
    }

    /// Without a `write` callback (an object store) objects are only ever written whole,
    /// through the new-object callbacks.
    fn writes_in_place(&self) -> bool {
        self.cb.write.is_some()
    }

    fn truncate(&self, len: u64) -> Result<()> {
        let truncate = self
            .cb
            .truncate
            .ok_or_else(|| Error::Unsupported("truncate".into()))?;
        // SAFETY: plain values.
        match unsafe { truncate(self.cb.userdata, len) } {
            0 => Ok(()),
            code => Err(self.fail("truncate", code)),
        }
    }

    /// Through the new-object callbacks when the table has them (the old object stays until
    /// the new one is complete); otherwise in place, as [`ShardIo::put`] does by default.
    fn put(&self, data: &[u8]) -> Result<()> {
        match self.object_sink() {
            Some(sink) => crate::storage::io::put_whole(sink, &[data]),
            None => crate::storage::io::put_in_place(self, data),
        }
    }

    /// As [`ShardIo::put`] of the concatenation of `parts` (joined once, by the new object or
    /// here).
    fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
        match self.object_sink() {
            Some(sink) => crate::storage::io::put_whole(sink, parts),
            None => crate::storage::io::put_in_place(self, &parts.concat()),
        }
    }

    /// The version-3 new object, when the table has those callbacks.
    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        self.cb.create_new?;
        Some(Box::new(NewObject {
            io: self,
            handle: None,
            end: 0,
            joined: Vec::new(),
        }))
    }

    fn delete(&self) -> Result<()> {
        let remove = self.cb.remove.ok_or_else(|| {
            Error::Unsupported("remove (a shard with no stored chunk must be removed)".into())
        })?;
        // SAFETY: plain values.
        match unsafe { remove(self.cb.userdata) } {
            0 | SHARD_IO_NOT_FOUND => Ok(()),
            code => Err(self.fail("remove", code)),
        }
    }
}

/// A new object made by the host's version-3 callbacks: created at the first write (or at
/// commit when nothing was written), committed once, discarded when dropped before.
struct NewObject<'a> {
    io: &'a CallbackIo,
    /// The host's handle, once `create_new` succeeded.
    handle: Option<*mut c_void>,
    /// The end of the last byte written.
    end: u64,
    /// Where several parts are joined for one `write_new` call (kept for the next piece).
    joined: Vec<u8>,
}

// SAFETY: the handle is the host's; the contract lets the library use it from worker threads
// (stores declaring thread-safe callbacks), one call at a time, which `&mut self` ensures.
unsafe impl Send for NewObject<'_> {}

impl NewObject<'_> {
    /// The host's handle, created now if this is the first use.
    fn handle(&mut self) -> Result<*mut c_void> {
        if let Some(h) = self.handle {
            return Ok(h);
        }
        let create = self.io.cb.create_new.expect("all four (CallbackIo::new)");
        let mut h: *mut c_void = std::ptr::null_mut();
        // SAFETY: `h` is valid for one pointer during the call.
        match unsafe { create(self.io.cb.userdata, &mut h) } {
            0 => Ok(*self.handle.insert(h)),
            code => Err(self.io.fail("create_new", code)),
        }
    }
}

impl ObjectSink for NewObject<'_> {
    /// One `write_new` call per piece: its parts are joined first (one host call costs a system
    /// call or a request, a copy of the piece much less).
    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        let handle = self.handle()?;
        let data: &[u8] = match parts {
            [one] => one,
            _ => {
                self.joined.clear();
                for p in parts {
                    self.joined.extend_from_slice(p);
                }
                &self.joined
            }
        };
        if data.is_empty() {
            return Ok(());
        }
        let write = self.io.cb.write_new.expect("all four (CallbackIo::new)");
        let (ud, ptr, len) = (self.io.cb.userdata, data.as_ptr(), data.len());
        // SAFETY: `data` is valid for `len` bytes during the call; `handle` came from
        // `create_new` and is neither committed nor discarded yet.
        match unsafe { write(ud, handle, offset, ptr, len) } {
            0 => {
                self.end = self.end.max(offset + data.len() as u64);
                Ok(())
            }
            code => Err(self.io.fail("write_new", code)),
        }
    }

    fn commit(mut self: Box<Self>, len: u64) -> Result<()> {
        crate::storage::io::check_written(len, self.end)?;
        let handle = self.handle()?;
        // From here the host owns the handle's fate: Drop must not discard it.
        self.handle = None;
        let commit = self.io.cb.commit_new.expect("all four (CallbackIo::new)");
        // SAFETY: `handle` came from `create_new`; it is handed back exactly once.
        match unsafe { commit(self.io.cb.userdata, handle, len) } {
            0 => Ok(()),
            code => Err(self.io.fail("commit_new", code)),
        }
    }
}

impl Drop for NewObject<'_> {
    /// Not committed: the host discards the new object; the old one stays.
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            let discard = self.io.cb.discard_new.expect("all four (CallbackIo::new)");
            // SAFETY: `handle` came from `create_new` and was not committed.
            unsafe { discard(self.io.cb.userdata, handle) }
        }
    }
}

/// Runs the host's `destroy(userdata)` once, when dropped.
pub(crate) struct UserdataOwner {
    destroy: Option<unsafe extern "C" fn(userdata: *mut c_void)>,
    userdata: *mut c_void,
}

impl UserdataOwner {
    /// Take ownership of a table's `userdata`: call this only once the handle exists, so a
    /// failed `shard_open` leaves it with the host.
    pub(crate) fn of(cb: &shard_io_callbacks) -> Self {
        Self::of_store(cb.destroy, cb.userdata)
    }

    /// Take ownership of a store table's `userdata` (see [`UserdataOwner::of`]).
    pub(crate) fn of_store(
        destroy: Option<unsafe extern "C" fn(userdata: *mut c_void)>,
        userdata: *mut c_void,
    ) -> Self {
        UserdataOwner { destroy, userdata }
    }
}

// SAFETY: `destroy` runs once, from whichever thread closes the handle, as documented.
unsafe impl Send for UserdataOwner {}
unsafe impl Sync for UserdataOwner {}

impl Drop for UserdataOwner {
    fn drop(&mut self) {
        if let Some(destroy) = self.destroy {
            // SAFETY: the handle owned `userdata`; this runs once, after the last callback.
            unsafe { destroy(self.userdata) }
        }
    }
}
