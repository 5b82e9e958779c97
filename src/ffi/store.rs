//! The library's own stores and object I/O as C callback tables, as SQLite ships a default VFS:
//! a directory (the core's [`FsStore`]) and memory ([`MemoryStore`]) as
//! `shard_store_callbacks`, one file as `shard_io_callbacks`. A host that needs nothing else
//! never writes a callback; one with its own storage still passes its own tables. When one of
//! these store tables comes back to the library it is recognised and used directly, without
//! going through its callbacks.

use super::array::{
    shard_key_fn, shard_store_callbacks, SHARD_STORE_THREAD_SAFE, SHARD_STORE_VERSION,
};
use super::error::{guard, Failure, FfiResult};
use super::handle::{out, path};
use super::io::{shard_io_callbacks, NO_CALLBACKS, SHARD_IO_NOT_FOUND, SHARD_IO_VERSION};
use super::status::shard_status;
use crate::error::{Error, Result};
use crate::storage::io::{ByteRange, FileIo, ObjectSink, ShardIo};
use crate::storage::store::{FsStore, MemoryStore, Store};
use std::ffi::{c_char, c_void, CStr};
use std::sync::Arc;

/// `shard_store_directory` flag: create the directory (and its parents) when it is missing.
pub const SHARD_STORE_CREATE: u32 = 2;

/// A store the library made: `userdata` of its tables is a `Box<SharedStore>`.
pub(crate) type SharedStore = Arc<dyn Store>;

/// Fill a store table over `store`; its userdata holds one reference.
fn library_table(store: SharedStore) -> shard_store_callbacks {
    shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags: SHARD_STORE_THREAD_SAFE,
        userdata: Box::into_raw(Box::new(store)).cast(),
        open_object: Some(library_open_object),
        destroy: Some(library_store_destroy),
        list: Some(library_list),
    }
}

/// The library's store behind `cb`, when `cb` is a table this module made (its callbacks are
/// this module's functions); `None` for a host's table.
///
/// # Safety
/// A table with this module's callbacks has the `userdata` `library_table` gave it, not yet
/// released.
#[allow(unpredictable_function_pointer_comparisons)]
pub(crate) unsafe fn library_store(cb: &shard_store_callbacks) -> Option<SharedStore> {
    let ours = cb.open_object == Some(library_open_object as _)
        && cb.destroy == Some(library_store_destroy as _);
    if !ours || cb.userdata.is_null() {
        return None;
    }
    // SAFETY: per the contract, `userdata` is a live `Box<SharedStore>`.
    Some(unsafe { &*cb.userdata.cast::<SharedStore>() }.clone())
}

/// A local path from a NUL-terminated string.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
unsafe fn c_path(p: *const c_char, name: &'static str) -> FfiResult<std::path::PathBuf> {
    if p.is_null() {
        return Err(Failure::Null(name));
    }
    // SAFETY: per the contract.
    let raw = unsafe { CStr::from_ptr(p) }.to_bytes();
    // SAFETY: `raw` is valid for its length.
    unsafe { path(raw.as_ptr().cast(), raw.len(), name) }
}

/// Fill `*store_out` with a store over the directory `path` (a NUL-terminated local path):
/// key `a/b` is the file `PATH/a/b`. Objects are written whole as a temporary file beside them
/// renamed over them (readers see the old or the new object, never a mix; a replaced file's
/// mode is kept), updates of a shard in place, parent directories made as needed; a shard
/// left with no chunk is deleted. The directory must exist unless `flags` has
/// `SHARD_STORE_CREATE` (then it and its parents are made now).
///
/// The table is the host's copy of the store: pass it to any number of `shard_array_*` and
/// `shard_group_*` calls and opens, from any thread (`SHARD_STORE_THREAD_SAFE` is set); each
/// array opened on it keeps the store alive until `shard_array_close`, so the host may release
/// its copy, once, with `shard_store_release` as soon as it has opened what it needs. Do not
/// call the table's callbacks after that, nor `destroy` yourself.
///
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (an empty path,
/// unknown flags, a path that is not a directory), `SHARD_ERR_IO` (it does not exist without
/// `SHARD_STORE_CREATE`, or cannot be made; `shard_last_io_code` gives the errno),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_store_directory(
    path: *const c_char,
    flags: u32,
    store_out: *mut shard_store_callbacks,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let root = unsafe { c_path(path, "path") }?;
        let store_out = unsafe { out(store_out, "store_out") }?;
        if flags & !SHARD_STORE_CREATE != 0 {
            return Err(Error::InvalidArgument(format!("unknown flags {flags:#x}")).into());
        }
        let not_a_directory =
            || Error::InvalidArgument(format!("`{}` is not a directory", root.display()));
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(not_a_directory().into()),
            Err(e)
                if flags & SHARD_STORE_CREATE != 0 && e.kind() == std::io::ErrorKind::NotFound =>
            {
                std::fs::create_dir_all(&root).map_err(|e| Error::io_at(&root, e))?;
            }
            Err(e) => return Err(Error::io_at(&root, e).into()),
        }
        *store_out = library_table(Arc::new(FsStore::new(root)));
        Ok(())
    })
}

/// Fill `*store_out` with a new, empty store in memory (for tests, or data that need not
/// outlive the process). Shared and released as `shard_store_directory`'s tables are; its
/// objects live until the last array on it is closed and the host's copy is released.
/// Thread-safe, as its callbacks are.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_store_memory(store_out: *mut shard_store_callbacks) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let store_out = unsafe { out(store_out, "store_out") }?;
        *store_out = library_table(Arc::new(MemoryStore::new()));
        Ok(())
    })
}

/// Give back the host's copy of a store table from `shard_store_directory` or
/// `shard_store_memory` and zero the table, so that releasing it twice is harmless. Arrays
/// still open on the store keep it alive. NULL, a zeroed table and a host's own table (which
/// the library never owns) are left alone. Thread-safe for distinct tables.
#[no_mangle]
pub unsafe extern "C" fn shard_store_release(store: *mut shard_store_callbacks) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: per the documented contract.
        let Some(table) = (unsafe { store.as_mut() }) else {
            return;
        };
        // SAFETY: a table with the library's callbacks holds a live reference until now.
        if unsafe { library_store(table) }.is_some() {
            // SAFETY: as above; this drops the table's own reference.
            unsafe { library_store_destroy(table.userdata) };
            *table = shard_store_callbacks {
                version: 0,
                flags: 0,
                userdata: std::ptr::null_mut(),
                open_object: None,
                destroy: None,
                list: None,
            };
        }
    });
}

unsafe extern "C" fn library_store_destroy(userdata: *mut c_void) {
    if !userdata.is_null() {
        // SAFETY: `userdata` is the `Box<SharedStore>` of `library_table`, dropped once.
        drop(unsafe { Box::from_raw(userdata.cast::<SharedStore>()) });
    }
}

/// The error code a callback returns for `e`: the back end's own code for I/O errors (an errno
/// for files), else `EIO`. Its message is kept for [`library_io_message`], so that an error
/// of the library's own table still names the file and the cause.
fn code_of(e: &Error) -> i32 {
    let (code, message) = match e {
        Error::Io { code, message } => (*code, message.clone()),
        e => (5, e.to_string()), // EIO
    };
    LIBRARY_IO_ERROR.with(|m| *m.borrow_mut() = Some(message));
    code
}

thread_local! {
    /// The message of the last failure of a library-made object table's callback on this
    /// thread (callbacks run on the thread of the call that made them).
    static LIBRARY_IO_ERROR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The message of the failure just reported by `cb`'s callback, when `cb` is a table the
/// library made (`shard_io_file`, a library store's objects); `None` for a host's table.
#[allow(unpredictable_function_pointer_comparisons)]
pub(crate) fn library_io_message(cb: &shard_io_callbacks) -> Option<String> {
    if cb.destroy != Some(io_destroy as _) {
        return None;
    }
    LIBRARY_IO_ERROR.with(|m| m.borrow_mut().take())
}

unsafe extern "C" fn library_open_object(
    userdata: *mut c_void,
    key: *const c_char,
    io_out: *mut shard_io_callbacks,
) -> i32 {
    let run = || -> Result<()> {
        // SAFETY: the library's own table; `key` is NUL-terminated, `io_out` writable.
        let store = unsafe { &*userdata.cast::<SharedStore>() };
        let key = unsafe { CStr::from_ptr(key) }
            .to_str()
            .map_err(|_| Error::InvalidArgument("key is not UTF-8".into()))?;
        let io = store.shard_io(key)?;
        unsafe { *io_out = io_table(io) };
        Ok(())
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => code_of(&e),
        Err(_) => 5,
    }
}

unsafe extern "C" fn library_list(
    userdata: *mut c_void,
    prefix: *const c_char,
    on_key: shard_key_fn,
    list_state: *mut c_void,
) -> i32 {
    let run = || -> Result<i32> {
        // SAFETY: the library's own table; `prefix` is NUL-terminated.
        let store = unsafe { &*userdata.cast::<SharedStore>() };
        let prefix = unsafe { CStr::from_ptr(prefix) }.to_str().unwrap_or("");
        let Some(keys) = store.list_prefix(prefix)? else {
            return Ok(super::array::SHARD_STORE_CANNOT_LIST);
        };
        if let Some(on_key) = on_key {
            for k in keys {
                // SAFETY: the receiver's contract: a key's bytes during the call.
                unsafe { on_key(list_state, k.as_ptr().cast(), k.len()) };
            }
        }
        Ok(0)
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) => code_of(&e),
        Err(_) => 5,
    }
}

/// One object's I/O behind a library-made `shard_io_callbacks` table.
struct LibraryIo {
    io: Box<dyn ShardIo>,
}

/// A table over `io`, with every callback (new objects included) but `read_vectored`.
fn io_table(io: Box<dyn ShardIo>) -> shard_io_callbacks {
    shard_io_callbacks {
        version: SHARD_IO_VERSION,
        userdata: Box::into_raw(Box::new(LibraryIo { io })).cast(),
        read: Some(io_read),
        read_suffix: Some(io_read_suffix),
        size: Some(io_size),
        write: Some(io_write),
        truncate: Some(io_truncate),
        remove: Some(io_remove),
        destroy: Some(io_destroy),
        read_vectored: None,
        create_new: Some(io_create_new),
        write_new: Some(io_write_new),
        commit_new: Some(io_commit_new),
        discard_new: Some(io_discard_new),
    }
}

/// Run a callback's body on the object behind `userdata`: 0, `SHARD_IO_NOT_FOUND`, or the
/// error's code; a panic is `EIO`, never an unwind into C.
fn with_io(userdata: *mut c_void, body: impl FnOnce(&dyn ShardIo) -> Result<bool>) -> i32 {
    let run = || {
        // SAFETY: `userdata` is the live `LibraryIo` of `io_table`.
        let io = unsafe { &*userdata.cast::<LibraryIo>() };
        body(io.io.as_ref())
    };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
        Ok(Ok(true)) => 0,
        Ok(Ok(false)) => SHARD_IO_NOT_FOUND,
        Ok(Err(e)) => code_of(&e),
        Err(_) => 5,
    }
}

unsafe extern "C" fn io_read(
    userdata: *mut c_void,
    offset: u64,
    len: usize,
    buf: *mut u8,
    read_out: *mut usize,
) -> i32 {
    with_io(userdata, |io| {
        let Some(r) = io.read(ByteRange::FromStart(offset, Some(len as u64)))? else {
            return Ok(false);
        };
        let n = r.data.len().min(len);
        // SAFETY: the library passes `len` writable bytes and one `usize`.
        unsafe {
            std::ptr::copy_nonoverlapping(r.data.as_ptr(), buf, n);
            *read_out = n;
        }
        Ok(true)
    })
}

unsafe extern "C" fn io_read_suffix(
    userdata: *mut c_void,
    len: usize,
    buf: *mut u8,
    read_out: *mut usize,
    object_size_out: *mut u64,
) -> i32 {
    with_io(userdata, |io| {
        let Some(r) = io.read(ByteRange::Suffix(len as u64))? else {
            return Ok(false);
        };
        let n = r.data.len().min(len);
        // SAFETY: as for `io_read`; `object_size_out` is writable.
        unsafe {
            std::ptr::copy_nonoverlapping(r.data.as_ptr(), buf, n);
            *read_out = n;
            if let Some(size) = r.object_size {
                *object_size_out = size;
            }
        }
        Ok(true)
    })
}

unsafe extern "C" fn io_size(userdata: *mut c_void, size_out: *mut u64) -> i32 {
    with_io(userdata, |io| match io.size()? {
        None => Ok(false),
        Some(size) => {
            // SAFETY: one writable `u64`.
            unsafe { *size_out = size };
            Ok(true)
        }
    })
}

unsafe extern "C" fn io_write(
    userdata: *mut c_void,
    offset: u64,
    buf: *const u8,
    len: usize,
) -> i32 {
    with_io(userdata, |io| {
        // SAFETY: `len` readable bytes.
        io.write_at(offset, unsafe { std::slice::from_raw_parts(buf, len) })?;
        Ok(true)
    })
}

unsafe extern "C" fn io_truncate(userdata: *mut c_void, len: u64) -> i32 {
    with_io(userdata, |io| io.truncate(len).map(|()| true))
}

unsafe extern "C" fn io_remove(userdata: *mut c_void) -> i32 {
    with_io(userdata, |io| io.delete().map(|()| true))
}

unsafe extern "C" fn io_destroy(userdata: *mut c_void) {
    if !userdata.is_null() {
        // SAFETY: the `LibraryIo` of `io_table`, dropped once.
        let _ = std::panic::catch_unwind(|| {
            drop(unsafe { Box::from_raw(userdata.cast::<LibraryIo>()) })
        });
    }
}

/// A new object being written: the sink borrows the `LibraryIo`, which the library keeps
/// alive until the sink is committed or discarded (the table's contract).
type NewObject = Box<dyn ObjectSink + 'static>;

unsafe extern "C" fn io_create_new(userdata: *mut c_void, new_out: *mut *mut c_void) -> i32 {
    with_io(userdata, |io| {
        let sink = io
            .object_sink()
            .ok_or_else(|| Error::Unsupported("new objects".into()))?;
        // SAFETY: the lifetime is the `LibraryIo`'s, which outlives the new object (above).
        let sink: NewObject =
            unsafe { std::mem::transmute::<Box<dyn ObjectSink + '_>, NewObject>(sink) };
        // SAFETY: one writable pointer.
        unsafe { *new_out = Box::into_raw(Box::new(sink)).cast() };
        Ok(true)
    })
}

unsafe extern "C" fn io_write_new(
    userdata: *mut c_void,
    new_object: *mut c_void,
    offset: u64,
    buf: *const u8,
    len: usize,
) -> i32 {
    with_io(userdata, |_| {
        // SAFETY: `new_object` is from `io_create_new`, used by one thread at a time.
        let sink = unsafe { &mut *new_object.cast::<NewObject>() };
        sink.write_parts_at(offset, &[unsafe { std::slice::from_raw_parts(buf, len) }])?;
        Ok(true)
    })
}

unsafe extern "C" fn io_commit_new(
    userdata: *mut c_void,
    new_object: *mut c_void,
    len: u64,
) -> i32 {
    with_io(userdata, |_| {
        // SAFETY: from `io_create_new`; released here, once.
        let sink = unsafe { Box::from_raw(new_object.cast::<NewObject>()) };
        (*sink).commit(len)?;
        Ok(true)
    })
}

unsafe extern "C" fn io_discard_new(userdata: *mut c_void, new_object: *mut c_void) {
    with_io(userdata, |_| {
        // SAFETY: from `io_create_new`; dropped unused, once (leaves nothing behind).
        drop(unsafe { Box::from_raw(new_object.cast::<NewObject>()) });
        Ok(true)
    });
}

/// Fill `*io_out` with the library's I/O for one file, `path` (a NUL-terminated local path),
/// for `shard_open` / `shard_open_ex`: reads with `pread`; whole objects (a buffered
/// `shard_finalize`) written as a temporary file renamed over the old one (the version-3
/// new-object callbacks), so the old shard stays intact until the new one is complete;
/// appends and updates in place; `remove` deletes the file; parent directories made as
/// needed. A missing file reads as not found (all fill). `flags` must be 0.
///
/// Ownership: the table's `userdata` is the library's. Passing the table to `shard_open` or
/// `shard_open_ex` hands it over on success (the handle calls `destroy` at `shard_close`);
/// otherwise give it back with `shard_io_release`. Its callbacks are thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (an empty path,
/// flags other than 0), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_io_file(
    path: *const c_char,
    flags: u32,
    io_out: *mut shard_io_callbacks,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let file = unsafe { c_path(path, "path") }?;
        let io_out = unsafe { out(io_out, "io_out") }?;
        if flags != 0 {
            return Err(Error::InvalidArgument(format!("unknown flags {flags:#x}")).into());
        }
        *io_out = io_table(Box::new(FileIo::new(file)));
        Ok(())
    })
}

/// Give back a table from `shard_io_file` that was not handed to a shard handle: call its
/// `destroy` and zero it, so that releasing it twice is harmless. NULL and a zeroed table are
/// left alone; so is a host's own table (its `destroy` is the host's to call). Thread-safe
/// for distinct tables.
#[no_mangle]
pub unsafe extern "C" fn shard_io_release(io: *mut shard_io_callbacks) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: per the documented contract.
        let Some(table) = (unsafe { io.as_mut() }) else {
            return;
        };
        #[allow(unpredictable_function_pointer_comparisons)]
        let ours = table.destroy == Some(io_destroy as _);
        if ours {
            // SAFETY: the library's own table, released once.
            unsafe { io_destroy(table.userdata) };
            *table = NO_CALLBACKS;
        }
    });
}

/// The node path of a C argument: NULL or `""` is the store's root; otherwise a
/// NUL-terminated UTF-8 path checked by [`crate::storage::store::node_path`].
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub(crate) unsafe fn node_path<'a>(p: *const c_char) -> FfiResult<&'a str> {
    if p.is_null() {
        return Ok("");
    }
    // SAFETY: per the contract.
    let s = unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::InvalidArgument("`path` is not UTF-8".into()))?;
    Ok(crate::storage::store::node_path(s)?)
}
