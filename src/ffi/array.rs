//! `shard_array`: a whole array over a host-supplied store (key → one object's
//! `shard_io_callbacks`), for reading and writing regions across shards and inner chunks. The
//! host keeps its storage and the library does the rest (keys, which shards and inner chunks
//! a region touches, decoding in parallel), so a host with any storage gets the same engine
//! as the Rust API.

use super::codec::{copy_string, shard_codec, CodecHandle};
use super::error::{guard, Failure, FfiResult};
use super::handle::{bytes, bytes_mut, optional_out, out, path, text, Handle};
use super::io::{shard_io_callbacks, CallbackIo, UserdataOwner};
use super::status::shard_status;
use super::store::SharedStore;
use crate::array::refs::{JsonVersion, MetadataFormat};
use crate::array::Array;
use crate::error::{Error, Result};
use crate::metadata::ArrayMetadata;
use crate::storage::io::ShardIo;
use crate::storage::store::{Prefixed, Store};
use std::ffi::{c_char, c_void, CString};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

/// The store callback table version this header defines. Version 1: `version` … `destroy`;
/// version 2 appends `list`.
pub const SHARD_STORE_VERSION: u32 = 2;

/// Return this from `shard_store_callbacks.list` when the store cannot list after all (a
/// server without listing, say): the library then asks every position of the chunk grid, as
/// when `list` is NULL.
pub const SHARD_STORE_CANNOT_LIST: i32 = 2147483645;

/// The library's receiver of listed keys, passed to the host's `shard_store_callbacks.list`:
/// the host calls it once per key, on the thread running `list` and before `list` returns,
/// with the `list_state` it was given and the key's `key_len` bytes (UTF-8, no NUL needed;
/// read during the call only). Keys that are not UTF-8, or not the array's shard keys, are
/// ignored.
#[allow(non_camel_case_types)]
pub type shard_key_fn =
    Option<unsafe extern "C" fn(list_state: *mut c_void, key: *const c_char, key_len: usize)>;

/// `shard_store_callbacks.flags`: the store's callbacks, and those of every object table it
/// hands out, are thread-safe, so the library may call them from its worker threads to read
/// and write several shards at once (and to write one shard's finished inner chunks while the
/// rest still encode, through the object tables' version-3 new-object callbacks). Without it
/// every callback runs on the thread that called `shard_array_*` (decoding is still parallel).
pub const SHARD_STORE_THREAD_SAFE: u32 = 1;

/// The host's storage for a whole array: it maps a key (`c/0/1`, per the array's
/// `chunk_key_encoding`) to the callback table of that object, as a file system or an object
/// store maps a path to an open file.
///
/// **Contract.**
/// * `version` is the table's version (`SHARD_STORE_VERSION`, or 1 for a table from an older
///   header, which then ends after `destroy`); the library reads only the fields that version
///   has. Later versions only append fields.
/// * `userdata` is passed to `open_object`. It stays the host's until `shard_array_open` (or
///   `shard_array_create`, `shard_array_create_spec`, `shard_array_open_path`) succeeds; from
///   then on the array handle owns it and calls `destroy(userdata)` once, from
///   `shard_array_close` (not at all when the open fails). A table from
///   `shard_store_directory` or `shard_store_memory` is shared instead: any number of arrays
///   may be opened on it, each keeping the store alive, and the host releases its own copy
///   with `shard_store_release`.
/// * `open_object(userdata, key, io_out)`: fill `*io_out` (a zeroed table the library passes)
///   with the callbacks of the object at `key`, a NUL-terminated UTF-8 string; the object need
///   not exist (its `read` then returns `SHARD_IO_NOT_FOUND`). Return 0, or a non-zero error
///   code the library keeps (`shard_last_io_code`) and reports as `SHARD_ERR_IO`. When it
///   returns 0 the library owns `io_out->userdata` and calls `io_out->destroy` on it once, when
///   done with the object (at the latest before the `shard_array_*` call returns). Object tables
///   follow the rules of `shard_io_callbacks`.
/// * `list` (version 2, optional) makes walks over the stored shards (`shard_array_verify`,
///   `shard_array_refs*`) visit only the shards it lists: on a sparse grid over a remote store
///   that is one listing instead of a request per grid position.
/// * Threads: without `SHARD_STORE_THREAD_SAFE` in `flags`, every callback runs on the thread
///   of the `shard_array_*` call that needs it, one at a time per call (concurrent
///   `shard_array_read_region` calls on several threads still call back concurrently). `list`
///   always runs on the thread of the call.
#[repr(C)]
#[derive(Clone, Copy)]
#[allow(non_camel_case_types)]
pub struct shard_store_callbacks {
    /// `SHARD_STORE_VERSION`.
    pub version: u32,
    /// A bitwise OR of `SHARD_STORE_*` flags.
    pub flags: u32,
    /// Host context passed to `open_object` and `destroy`.
    pub userdata: *mut c_void,
    /// Required. Fill `*io_out` with the callback table of the object at `key`.
    pub open_object: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            key: *const c_char,
            io_out: *mut shard_io_callbacks,
        ) -> i32,
    >,
    /// Optional. Release `userdata`; called once, from `shard_array_close`.
    pub destroy: Option<unsafe extern "C" fn(userdata: *mut c_void)>,
    /// Version 2, optional. List the stored objects whose keys start with `prefix` (a
    /// NUL-terminated UTF-8 string, e.g. `c/`; it may be empty): call `on_key(list_state, key,
    /// key_len)` once per object, in any order, before returning. Listing more keys is
    /// harmless (they are ignored); listing fewer is not: a stored shard left out is treated
    /// as missing (not checked by `shard_array_verify`, not referenced by `shard_array_refs*`).
    /// Return 0 (also when nothing is stored under `prefix`, e.g. its directory does not exist
    /// yet), `SHARD_STORE_CANNOT_LIST` (the library then asks every grid position, as without
    /// `list`; the keys passed so far are ignored), or an error code the library keeps
    /// (`shard_last_io_code`) and reports as `SHARD_ERR_IO`. Any other code is an error,
    /// `SHARD_IO_NOT_FOUND` included: a listing that failed must not pass for an empty one,
    /// or `shard_array_verify` would call a store it could not see clean.
    pub list: Option<
        unsafe extern "C" fn(
            userdata: *mut c_void,
            prefix: *const c_char,
            on_key: shard_key_fn,
            list_state: *mut c_void,
        ) -> i32,
    >,
}

/// The fields of a version-1 store table, as laid out at the start of every later version.
#[repr(C)]
#[derive(Clone, Copy)]
struct StoreCallbacksV1 {
    version: u32,
    flags: u32,
    userdata: *mut c_void,
    open_object:
        Option<unsafe extern "C" fn(*mut c_void, *const c_char, *mut shard_io_callbacks) -> i32>,
    destroy: Option<unsafe extern "C" fn(*mut c_void)>,
}

/// Copy a host's store table, reading only the fields its version has; `None` for NULL.
///
/// # Safety
/// `p` is NULL or points at a table of at least the size its `version` field implies.
unsafe fn read_store_table(p: *const shard_store_callbacks) -> Option<shard_store_callbacks> {
    if p.is_null() {
        return None;
    }
    // SAFETY: every version starts with the version-1 fields.
    let v1 = unsafe { std::ptr::read(p.cast::<StoreCallbacksV1>()) };
    if v1.version >= 2 {
        // SAFETY: a version-2 (or later) table holds at least the version-2 fields.
        return Some(unsafe { std::ptr::read(p) });
    }
    Some(shard_store_callbacks {
        version: v1.version,
        flags: v1.flags,
        userdata: v1.userdata,
        open_object: v1.open_object,
        destroy: v1.destroy,
        list: None,
    })
}

/// The host's store as a [`Store`]. It calls `destroy(userdata)` when dropped once an array
/// handle has taken the userdata over ([`StoreArg::adopt`]), never when an open failed.
pub(crate) struct CallbackStore {
    cb: shard_store_callbacks,
    owns_userdata: AtomicBool,
}

impl Drop for CallbackStore {
    fn drop(&mut self) {
        if self.owns_userdata.load(Ordering::Acquire) {
            drop(UserdataOwner::of_store(self.cb.destroy, self.cb.userdata));
        }
    }
}

impl CallbackStore {
    /// A host's store table, checked: a known version, `open_object` set, no unknown flags.
    fn new(cb: shard_store_callbacks) -> Result<Self, Error> {
        if cb.version < 1 {
            return Err(Error::InvalidArgument(format!(
                "shard_store_callbacks.version is {}, expected {SHARD_STORE_VERSION}",
                cb.version
            )));
        }
        if cb.open_object.is_none() {
            return Err(Error::InvalidArgument(
                "shard_store_callbacks.open_object is required".into(),
            ));
        }
        if cb.flags & !SHARD_STORE_THREAD_SAFE != 0 {
            return Err(Error::InvalidArgument(format!(
                "unknown flags {:#x}",
                cb.flags
            )));
        }
        Ok(CallbackStore {
            cb,
            owns_userdata: AtomicBool::new(false),
        })
    }
}

/// A store argument of a C call: one of the library's own stores (shared: the host keeps its
/// copy), or a host's table, whose `userdata` an array handle takes over once it is open.
pub(crate) enum StoreArg {
    Library(SharedStore),
    Host(Arc<CallbackStore>),
}

impl StoreArg {
    /// Read and check the table at `p`.
    ///
    /// # Safety
    /// `p` is NULL or a valid table (see `read_store_table`).
    pub(crate) unsafe fn from_table(p: *const shard_store_callbacks) -> FfiResult<Self> {
        // SAFETY: per the contract.
        let table = unsafe { read_store_table(p) }.ok_or(Failure::Null("store"))?;
        // SAFETY: a table with the library's callbacks is one the library made, unreleased.
        if let Some(store) = unsafe { super::store::library_store(&table) } {
            return Ok(StoreArg::Library(store));
        }
        Ok(StoreArg::Host(Arc::new(CallbackStore::new(table)?)))
    }

    /// The store to open arrays and groups on.
    pub(crate) fn shared(&self) -> SharedStore {
        match self {
            StoreArg::Library(s) => s.clone(),
            StoreArg::Host(h) => h.clone(),
        }
    }

    /// An array handle opened on it: a host's `userdata` is now the handle's, destroyed when
    /// the last reference (the array's) goes.
    pub(crate) fn adopt(&self) {
        if let StoreArg::Host(h) = self {
            h.owns_userdata.store(true, Ordering::Release);
        }
    }
}

// SAFETY: the library calls the host's callbacks from worker threads only when the host set
// `SHARD_STORE_THREAD_SAFE`; otherwise `io_on_caller_thread` keeps them on the calling thread.
unsafe impl Send for CallbackStore {}
unsafe impl Sync for CallbackStore {}

impl Store for CallbackStore {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        let open = self.cb.open_object.expect("checked at open");
        let c_key = CString::new(key)
            .map_err(|_| Error::InvalidArgument(format!("key `{key}` contains NUL")))?;
        let mut table = super::io::NO_CALLBACKS;
        // SAFETY: `c_key` and `table` are valid for the call.
        match unsafe { open(self.cb.userdata, c_key.as_ptr(), &mut table) } {
            0 => Ok(Box::new(CallbackIo::owning(&table)?.named(key))),
            code => Err(Error::Io {
                code,
                message: format!("the host's open_object callback failed for `{key}`"),
            }),
        }
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.shard_io(key)?.put(value)
    }

    fn io_on_caller_thread(&self) -> bool {
        self.cb.flags & SHARD_STORE_THREAD_SAFE == 0
    }

    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let Some(list) = self.cb.list else {
            return Ok(None);
        };
        let c_prefix = CString::new(prefix)
            .map_err(|_| Error::InvalidArgument(format!("prefix `{prefix}` contains NUL")))?;
        let mut keys: Vec<String> = Vec::new();
        let state: *mut Vec<String> = &mut keys;
        // SAFETY: `c_prefix` and `keys` outlive the call; the host calls `receive_key` only
        // during it, with `state`.
        let code = unsafe {
            list(
                self.cb.userdata,
                c_prefix.as_ptr(),
                Some(receive_key),
                state.cast(),
            )
        };
        match code {
            0 => Ok(Some(keys)),
            SHARD_STORE_CANNOT_LIST => Ok(None),
            code => Err(Error::Io {
                code,
                message: format!("the host's list callback failed for prefix `{prefix}`"),
            }),
        }
    }
}

/// The `shard_key_fn` the library passes to the host's `list`: keeps each UTF-8 key.
unsafe extern "C" fn receive_key(state: *mut c_void, key: *const c_char, key_len: usize) {
    if state.is_null() || key.is_null() {
        return;
    }
    // SAFETY: `state` is the `Vec<String>` `list_prefix` passed, alive during `list`; the host
    // passes `key_len` readable bytes.
    let (keys, key) = unsafe {
        (
            &mut *state.cast::<Vec<String>>(),
            std::slice::from_raw_parts(key.cast::<u8>(), key_len),
        )
    };
    if let Ok(key) = std::str::from_utf8(key) {
        keys.push(key.to_string());
    }
}

/// An array open over a host store.
pub struct shard_array {
    _private: [u8; 0],
}

/// The store an array handle's array lives in: a shared store seen from the array's path.
pub(crate) type HandleStore = Prefixed<SharedStore>;

/// The array behind a `shard_array` handle. Calls that change its shape or attributes take
/// the lock for writing (waiting for reads in flight); every other call takes it for reading.
/// The store, and a host store's `userdata`, go with the array's last reference.
pub(crate) struct ArrayHandle {
    array: RwLock<Array<HandleStore>>,
    layout: Option<Arc<crate::codec::sharding::ShardLayout>>,
    writing: Mutex<()>,
}

impl ArrayHandle {
    pub(crate) fn new(array: Array<HandleStore>) -> Self {
        ArrayHandle {
            layout: array.metadata().shard_layout().map(Arc::new),
            array: RwLock::new(array),
            writing: Mutex::new(()),
        }
    }

    /// The array, for calls that read it or write regions.
    pub(crate) fn array(&self) -> RwLockReadGuard<'_, Array<HandleStore>> {
        self.array.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Exclusive use as a writer: `SHARD_ERR_BUSY` while another thread writes.
    pub(crate) fn writer(&self) -> FfiResult<MutexGuard<'_, ()>> {
        match self.writing.try_lock() {
            Ok(g) => Ok(g),
            Err(TryLockError::WouldBlock) => Err(Failure::Busy),
            Err(TryLockError::Poisoned(p)) => Ok(p.into_inner()),
        }
    }

    /// The array, to change its shape or metadata (after the reads in flight).
    pub(crate) fn array_mut(&self) -> RwLockWriteGuard<'_, Array<HandleStore>> {
        self.array.write().unwrap_or_else(|e| e.into_inner())
    }
}

impl Handle for shard_array {
    type Rust = ArrayHandle;
}

/// Open the array described by the Zarr v3 `zarr.json` text `json` (`json_len` bytes of UTF-8,
/// no NUL needed) over the host's `store`. Nothing is read yet. The array may be sharded or
/// not, with any supported codecs (see `shard_array_read_region` for which are read partially).
/// The text is held to the same limits as a file (`SHARD_ERR_INVALID_METADATA` past them): at
/// most 64 MiB, of which at most 1 MiB outside `attributes` (kept as text, so memory stays about
/// the text's size), and `sharding_indexed` nested at most 32 levels.
///
/// The store table is copied; see `shard_store_callbacks` for who owns `userdata`. On success
/// `*array_out` owns a new handle; close it with `shard_array_close`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (not UTF-8, store
/// version 0, missing `open_object`, unknown flags), `SHARD_ERR_INVALID_METADATA`,
/// `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_open(
    json: *const c_char,
    json_len: usize,
    store: *const shard_store_callbacks,
    array_out: *mut *mut shard_array,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let json = unsafe { text(json, json_len, "json") }?;
        let store = unsafe { StoreArg::from_table(store) }?;
        let array_out = unsafe { out(array_out, "array_out") }?;
        let meta = ArrayMetadata::parse(json)?;
        let array = Array::from_metadata(Prefixed::new(store.shared(), "")?, meta)?;
        store.adopt();
        *array_out = shard_array::into_ptr(ArrayHandle::new(array));
        Ok(())
    })
}

/// Close an array handle and call the store's `destroy(userdata)`. NULL is a no-op. The handle
/// must not be in use by another thread.
#[no_mangle]
pub unsafe extern "C" fn shard_array_close(array: *mut shard_array) {
    // SAFETY: the caller passes a pointer from shard_array_open, once.
    let _ = std::panic::catch_unwind(|| unsafe { shard_array::free(array) });
}

/// Set the gap (bytes) below which the byte ranges of inner chunks that one
/// `shard_array_read_region` call wants from a shard are fetched with one range; 0 merges only
/// touching ranges, a large value reads the whole span (fewer requests to a high-latency store,
/// at the cost of bytes not wanted). The default is 65536. Thread-safe: calls that start
/// afterwards use it. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_set_coalesce_gap(
    array: *const shard_array,
    gap: u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        h.array().set_coalesce_gap(gap);
        Ok(())
    })
}

/// The index cache bound of a new array handle: 8388608 bytes, 8 MiB
/// (`shard_array_set_index_cache`).
pub const SHARD_DEFAULT_INDEX_CACHE_BYTES: u64 = 8388608;
const _: () = assert!(
    SHARD_DEFAULT_INDEX_CACHE_BYTES == crate::array::index_cache::DEFAULT_INDEX_CACHE_BYTES
);

/// Set the bound, in bytes, of the array handle's cache of shard indexes; 0 turns the cache off
/// and empties it. The default is 8388608 (8 MiB) per handle; there is no cache shared between
/// handles.
///
/// `shard_array_read_region` keeps the index of each shard it reads, so that reading that shard
/// again through this handle costs only the reads of its inner chunks: over an object store a
/// repeated single-chunk read is one request (a `read`) instead of two (`read_suffix` for the
/// index, then `read`). Each entry counts its decoded index (16 bytes per inner chunk) and about
/// 200 bytes besides; the least recently used entries are dropped to keep within the bound, so
/// memory never grows past it whatever the grid's size. A shard with no stored object is never
/// cached as missing.
///
/// The cache is a snapshot of the shards as this handle read them. Every write through this
/// handle (`shard_array_write_region` and the other calls that write or delete shards on it)
/// drops the entries of the shards it writes, whether it succeeds or not, so a read never uses
/// an index older than a write this handle made. Writes by other handles or processes are seen
/// after `shard_array_forget_cached_indexes`, or on a new handle. Until then a read that fails
/// on a shard whose index came from the cache (the object shorter than an entry or gone, a
/// checksum mismatch, a chunk that does not decode, any error of the store's callbacks) empties
/// the cache and is done once more with indexes read afresh, so a shard another writer replaced
/// is read correctly in the common case; a replaced shard whose old entries still decode (no
/// checksum codec) reads the bytes at the old entries until then.
///
/// Thread-safe, also while other threads read the array. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_set_index_cache(
    array: *const shard_array,
    bytes: u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        h.array().set_index_cache(bytes);
        Ok(())
    })
}

/// Drop every shard index the array handle has cached (see `shard_array_set_index_cache`): the
/// next read of each shard reads its index again, seeing what other handles or processes wrote
/// since. Call it when another writer may have changed the array. The bound stays as it was.
/// Thread-safe, also while other threads read the array. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_forget_cached_indexes(
    array: *const shard_array,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        h.array().forget_cached_indexes();
        Ok(())
    })
}

/// A new codec handle for the array's sharding layout and metadata, for the `shard_codec_*`
/// getters (shape, data type, fill value, key of a shard) and for opening single shards with
/// `shard_open`. Free it with `shard_codec_free`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_UNSUPPORTED` (the array is not
/// sharded), `SHARD_ERR_UNSUPPORTED_CODEC` (a bytes→bytes codec such as `crc32c` or `gzip`
/// follows `sharding_indexed`: shards can only be decoded whole, and a shard handle would
/// write them without it; as `shard_codec_from_zarr_json`), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_codec(
    array: *const shard_array,
    codec_out: *mut *mut shard_codec,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let codec_out = unsafe { out(codec_out, "codec_out") }?;
        let layout = h
            .layout
            .clone()
            .ok_or_else(|| Error::Unsupported("the array is not sharded".into()))?;
        super::codec::refuse_whole_shard_codecs(h.array().metadata())?;
        *codec_out = shard_codec::into_ptr(CodecHandle {
            layout,
            array: Some(h.array().metadata().clone()),
        });
        Ok(())
    })
}

/// The handle and region of a call.
unsafe fn region_args<'a>(
    array: *const shard_array,
    start: *const u64,
    shape: *const u64,
    rank: usize,
) -> FfiResult<(&'a ArrayHandle, &'a [u64], &'a [u64])> {
    // SAFETY: per the callers' contract.
    let h = unsafe { shard_array::borrow(array, "array") }?;
    let start = unsafe { bytes(start, rank, "start") }?;
    let shape = unsafe { bytes(shape, rank, "shape") }?;
    Ok((h, start, shape))
}

/// Read the region of extent `shape` at `start` (each `rank` values, array coordinates) into
/// `buf` (`len` bytes, which must be the region's element count × the element size): C order,
/// native byte order; the fill value where nothing is stored. Per shard touched: one read of
/// its index unless the handle's cache holds it (`shard_array_set_index_cache`: a shard read
/// before through this handle costs no index read), then the byte ranges of the inner chunks
/// the region needs, merged into runs (one `read_vectored` call when the object table has
/// it). Arrays with a bytes→bytes codec
/// after sharding, or with `transpose` before it, are read a whole shard at a time.
///
/// The arguments are checked before any callback runs: rank and bounds, then the buffer's
/// length; so `(NULL, 0)` for a non-empty region checks it without reading anything
/// (`SHARD_ERR_BUFFER_SIZE` when it is valid), e.g. before allocating its buffer.
///
/// Memory besides `buf`: a pass of at most 1024 shards and 65 536 inner chunks at a time
/// (their fetched bytes and a few hundred bytes each), however many shards the region touches.
///
/// Thread-safe: many threads may read one handle at once (not while another writes the same
/// shards: the result is then unspecified, though memory-safe).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (rank, a region
/// past the array or whose byte size overflows 64 bits, a buffer over the memory limit: e.g.
/// a whole object read from a table without `size` that passes it, or one shard's touched
/// inner chunks needing more bookkeeping, 48 bytes each, than the limit),
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`,
/// `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED` (the object tables lack `size`/`read_suffix`
/// an index at the end needs), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_read_region(
    array: *const shard_array,
    start: *const u64,
    shape: *const u64,
    rank: usize,
    buf: *mut u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, start, shape) = unsafe { region_args(array, start, shape, rank) }?;
        let buf = unsafe { bytes_mut(buf, len, "buf") }?;
        Ok(h.array().read_region(start, shape, buf)?)
    })
}

/// Write `data` (`len` bytes: the region's element count × the element size, C order, native
/// byte order) to the region of extent `shape` at `start`. The minimum read-modify-write: a
/// shard the region covers entirely is written whole without being read; in others only the
/// index and the inner chunks the region covers partly are read, and the touched chunks plus
/// a new index are appended (`SHARD_MODE_UPDATE_APPEND`; `zarrshard compact` reclaims the dead
/// bytes). Over an object store (object tables with the new-object callbacks and no `write`,
/// see `shard_io_callbacks`) such a shard is instead read whole, updated in memory and written
/// whole as a new object (one `create_new` … `commit_new`; the old object stays until then).
/// Inner chunks equal to the fill value are not stored; a shard left empty is removed. The
/// handle's cached indexes of the shards written are dropped (`shard_array_set_index_cache`).
/// Not atomic across shards: after an error some shards may hold new values. Within a shard,
/// the partly covered inner chunks are read and decoded before anything is written, so a read
/// error or a corrupt chunk leaves that shard as it was; a failed `write` while appending is
/// undone with `truncate` when the table has it. A shard written whole over a longer object
/// on a table without `truncate` (but with `size`) is refused before any byte is written.
///
/// One writer per handle: a second thread writing at the same time gets `SHARD_ERR_BUSY`.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (as for
/// `shard_array_read_region`), `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_BUSY`, `SHARD_ERR_IO`,
/// `SHARD_ERR_CORRUPT` (also a shard whose object size, from `read_suffix` or `size`,
/// contradicts its index),
/// `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED` (an object table without `write`, `truncate`
/// or `remove` where one was needed), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_write_region(
    array: *const shard_array,
    start: *const u64,
    shape: *const u64,
    rank: usize,
    data: *const u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let (h, start, shape) = unsafe { region_args(array, start, shape, rank) }?;
        let data = unsafe { bytes(data, len, "data") }?;
        let _exclusive = h.writer()?;
        Ok(h.array().write_region(start, shape, data)?)
    })
}

/// `shard_array_refs` format: kerchunk reference set version 0 JSON.
pub const SHARD_REFS_JSON_V0: u32 = 0;
/// `shard_array_refs` format: kerchunk reference set version 1 JSON (`templates`, `refs`).
pub const SHARD_REFS_JSON_V1: u32 = 1;

/// Write the array's kerchunk reference set (as `zarrshard refs` does) into `buf` as a
/// NUL-terminated JSON string; `*written_out` (may be NULL) receives its length without the
/// NUL. With
/// `(NULL, 0)` only the length is stored (a size query); a non-empty buffer too small for the
/// set and its NUL gives `SHARD_ERR_BUFFER_SIZE`. Every call reads each shard's index, so a
/// size query and the copy cost two reads of every index: `shard_array_refs_write` hands the
/// set to a callback after one.
///
/// `format` is `SHARD_REFS_JSON_V0` or `SHARD_REFS_JSON_V1`; `zarr_format` 3 describes the
/// array unsharded with a `zarr.json`, 2 with a `.zarray` (chunk keys `i.j`). Each stored inner
/// chunk is `[URL_PREFIX/SHARD_KEY, offset, nbytes]`; empty ones are left out (they read as the
/// fill value). `url_prefix` (`url_prefix_len` bytes of UTF-8) is where readers find the
/// array; `name` (`name_len` bytes, or `(NULL, 0)` for the root) puts the keys under `NAME/`.
/// The indexes are read several at once on worker threads when the store is
/// `SHARD_STORE_THREAD_SAFE`, one after another on the calling thread otherwise. A store with
/// `list` is listed once (on each call) and only the listed shards are opened; otherwise every
/// position of the chunk grid is. The other `shard_array_refs*` calls walk the same way.
///
/// Thread-safe (not while another thread writes the array: the set may then differ between
/// the size query and the copy, which `SHARD_ERR_BUFFER_SIZE` reports).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (format,
/// zarr_format, not UTF-8, the array not sharded, a bytes→bytes codec after sharding, a data
/// type v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (a codec the chosen metadata cannot
/// express: nested sharding or a transpose other than C/F order in v2), `SHARD_ERR_BUFFER_SIZE`,
/// `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED` (object
/// tables lacking `size`/`read_suffix` an index at the end needs), `SHARD_ERR_PANIC`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shard_array_refs(
    array: *const shard_array,
    format: u32,
    zarr_format: u32,
    url_prefix: *const c_char,
    url_prefix_len: usize,
    name: *const c_char,
    name_len: usize,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let request = unsafe {
            RefsRequest::new(
                format,
                zarr_format,
                url_prefix,
                url_prefix_len,
                name,
                name_len,
            )
        }?;
        let buf = unsafe { bytes_mut(buf.cast::<u8>(), len, "buf") }?;
        let text = String::from_utf8(request.text(&h.array())?).expect("JSON text is UTF-8");
        let written = copy_string(&text, buf)?;
        // SAFETY: NULL or valid for one write.
        if let Some(w) = unsafe { optional_out(written_out) } {
            *w = written;
        }
        Ok(())
    })
}

/// The host's receiver of a text the library produces in pieces (`shard_array_refs_write`,
/// `shard_array_refs_stream`):
/// called with `len` bytes at `data` (owned by the library, valid only during the call), in
/// order; the pieces concatenated are the whole text, without a NUL. Return 0 to go on, or a
/// non-zero error code the library keeps (`shard_last_io_code`) and reports as `SHARD_ERR_IO`,
/// which stops the call.
#[allow(non_camel_case_types)]
pub type shard_sink_fn =
    Option<unsafe extern "C" fn(userdata: *mut c_void, data: *const u8, len: usize) -> i32>;

/// The size of the pieces `shard_array_refs_write` hands to its sink (the last may be
/// shorter; `shard_array_refs_stream`'s are at most this): large enough that the call
/// overhead vanishes, small enough to stay in cache.
const SINK_PIECE: usize = 64 * 1024;

/// Build the array's kerchunk reference set, with the arguments and meaning of
/// `shard_array_refs`, and hand its JSON text to `sink(userdata, data, len)` in pieces of up
/// to 64 KiB, on the calling thread, in order (no NUL). Each shard's index is read once, and the
/// whole text is written (into memory, as the shards are read: the text, some 40–60 bytes a
/// chunk, is held, not the references) before the first piece, so a failing read never leaves
/// the host with part of a set; a failing `sink` does (the host discards what it received).
/// `shard_array_refs_stream` hands the text over as the shards are read, holding far less,
/// when the host can drop a partial set. `userdata` is the host's, passed through untouched.
///
/// Thread-safe (not while another thread writes the array).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER` (also: `sink` NULL), the statuses of
/// `shard_array_refs` except `SHARD_ERR_BUFFER_SIZE`, and `SHARD_ERR_IO` with the sink's code in
/// `shard_last_io_code` when it returns non-zero.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shard_array_refs_write(
    array: *const shard_array,
    format: u32,
    zarr_format: u32,
    url_prefix: *const c_char,
    url_prefix_len: usize,
    name: *const c_char,
    name_len: usize,
    sink: shard_sink_fn,
    userdata: *mut c_void,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        unsafe {
            refs_to_sink(
                array,
                format,
                zarr_format,
                (url_prefix, url_prefix_len),
                (name, name_len),
                (sink, userdata),
                Delivery::Whole,
            )
        }
    })
}

/// Build the array's kerchunk reference set, with the arguments and meaning of
/// `shard_array_refs`, and hand its JSON text to `sink(userdata, data, len)` as the shards are
/// read: in pieces of up to 64 KiB, on the calling thread, in order (no NUL), the same text as
/// `shard_array_refs_write`'s. What is held is never the set: a batch of shards' indexes (up
/// to 1024 shards or 65 536 inner chunks), one slab of shards (those sharing their first grid
/// coordinate; its indexes and the order of its stored chunks, some 40 bytes a chunk) and one
/// piece. So a failure part way (a read, a corrupt index, the sink
/// itself) leaves the host with the first part of the text (the pieces completed before it;
/// the sink is not called after a failure), not a whole set: the host discards it (or writes
/// to a temporary and renames it on `SHARD_OK`, as `zarrshard refs` does). The arguments,
/// and whether the chosen metadata can describe the array, are checked before the first
/// piece. `userdata` is the host's, passed through untouched.
///
/// Use it where the set is too large to hold (some 40–60 bytes a chunk, which
/// `shard_array_refs_write` holds) and the host can drop a partial one.
///
/// Thread-safe (not while another thread writes the array).
/// Returns the statuses of `shard_array_refs_write`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shard_array_refs_stream(
    array: *const shard_array,
    format: u32,
    zarr_format: u32,
    url_prefix: *const c_char,
    url_prefix_len: usize,
    name: *const c_char,
    name_len: usize,
    sink: shard_sink_fn,
    userdata: *mut c_void,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        unsafe {
            refs_to_sink(
                array,
                format,
                zarr_format,
                (url_prefix, url_prefix_len),
                (name, name_len),
                (sink, userdata),
                Delivery::AsRead,
            )
        }
    })
}

/// When the sink calls hand the text over.
enum Delivery {
    /// All of it, written into memory first, so a failing read never reaches the sink
    /// (`shard_array_refs_write`).
    Whole,
    /// As the shards are read (`shard_array_refs_stream`).
    AsRead,
}

/// The body of the sink calls: the arguments checked, then the set's text handed to the
/// host's sink as `delivery` says; a sink's failure reported with its code.
///
/// # Safety
/// The pointers as the sink calls' contracts require.
unsafe fn refs_to_sink(
    array: *const shard_array,
    format: u32,
    zarr_format: u32,
    (url_prefix, url_prefix_len): (*const c_char, usize),
    (name, name_len): (*const c_char, usize),
    (sink, userdata): (shard_sink_fn, *mut c_void),
    delivery: Delivery,
) -> std::result::Result<(), Failure> {
    // SAFETY: per the caller's contract.
    let h = unsafe { shard_array::borrow(array, "array") }?;
    let request = unsafe {
        RefsRequest::new(
            format,
            zarr_format,
            url_prefix,
            url_prefix_len,
            name,
            name_len,
        )
    }?;
    let mut host = SinkWriter {
        sink: sink.ok_or(Failure::Null("sink"))?,
        userdata,
        failed: None,
    };
    let written = match delivery {
        // The text, some 40–60 bytes a chunk, rather than the references, some 150. Writing
        // it fails only when the sink does, which `host.failed` tells.
        Delivery::Whole => request.text(&h.array()).map(|text| {
            let _ = host.write_all(&text);
        }),
        Delivery::AsRead => request.write(&h.array(), &mut host),
    };
    match (written, host.failed) {
        // The sink's failure is reported with its code, not as the writer's error.
        (_, Some(code)) => Err(sink_failed(code).into()),
        (Ok(()), None) => Ok(()),
        (Err(e), None) => Err(e.into()),
    }
}

/// The error of a sink that returned `code` (non-zero).
fn sink_failed(code: i32) -> Error {
    Error::Io {
        code,
        message: "the host's sink callback failed".into(),
    }
}

/// `std::io::Write` over the host's sink: pieces of at most `SINK_PIECE` bytes; the first
/// non-zero code is kept and ends the writing.
struct SinkWriter {
    sink: unsafe extern "C" fn(userdata: *mut c_void, data: *const u8, len: usize) -> i32,
    userdata: *mut c_void,
    failed: Option<i32>,
}

impl std::io::Write for SinkWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The buffered writer flushes again when dropped after a failure: the sink is not
        // called after it refused a piece.
        if self.failed.is_some() {
            return Err(std::io::Error::other("the host's sink callback failed"));
        }
        let piece = &buf[..buf.len().min(SINK_PIECE)];
        // SAFETY: the host's callback, called as `shard_sink_fn`'s contract says.
        let code = unsafe { (self.sink)(self.userdata, piece.as_ptr(), piece.len()) };
        if code != 0 {
            self.failed = Some(code);
            return Err(std::io::Error::other("the host's sink callback failed"));
        }
        Ok(piece.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Write the array's kerchunk reference set in the Parquet layout of fsspec's
/// `LazyReferenceMapper`, as `shard_array_refs_parquet` does, into the local directory `dir`
/// (`dir_len` bytes of a path: any bytes but NUL on Unix, UTF-8 elsewhere), which must not exist
/// (it is created, with missing parents, when the first file is written) or be empty:
/// `dir/NAME/refs.<n>.parq` and, last, `dir/.zmetadata`, the files
/// `zarrshard refs --format parquet -o DIR` writes. The files are written as the shards are
/// read (the set is never held: a batch of shards' indexes, one slab of shards and one
/// file's rows are). Each file is written to a temporary sibling and renamed, so a reader never
/// sees a partial file; a failure part way leaves the files written so far but no
/// `.zmetadata`. `name`, `record_size` and `dir` are checked before any shard is read, and so
/// is the grid: the layout has one row per inner chunk, stored or not, so a grid of more than
/// 100 000 000 inner chunks is refused (`SHARD_ERR_INVALID_ARGUMENT`, nothing written; the
/// JSON sets list only stored chunks).
///
/// Thread-safe (not while another thread writes the array, or another call writes `dir`).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (not UTF-8, an
/// empty or invalid name, `record_size` 0, `dir` empty, containing NUL, or naming something
/// other than an empty directory; a grid of more than 100 000 000 inner chunks; the array not sharded, a bytes→bytes codec after sharding,
/// a data type v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (a codec v2 metadata cannot
/// express), `SHARD_ERR_IO` (reading the array; creating or writing `dir`, with the OS error
/// number in `shard_last_io_code`), `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`,
/// `SHARD_ERR_UNSUPPORTED` (a library built without the `parquet` feature), `SHARD_ERR_PANIC`.
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn shard_array_refs_parquet_dir(
    array: *const shard_array,
    url_prefix: *const c_char,
    url_prefix_len: usize,
    name: *const c_char,
    name_len: usize,
    record_size: u64,
    dir: *const c_char,
    dir_len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let url_prefix = unsafe { text(url_prefix, url_prefix_len, "url_prefix") }?;
        let name = unsafe { text(name, name_len, "name") }?;
        let dir = unsafe { path(dir, dir_len, "dir") }?;
        crate::array::refs::write_parquet_from_array(
            &*h.array(),
            url_prefix,
            name,
            record_size,
            &dir,
        )?;
        Ok(())
    })
}

/// The host's receiver of the problems `shard_array_verify` finds, one call per problem:
/// `key` (NUL-terminated) is the shard object's key; `chunk` holds the `chunk_rank`
/// coordinates of the inner chunk within that shard when the problem concerns one (else NULL
/// and 0); `status` is the status reading it would fail with (`SHARD_ERR_CHECKSUM`,
/// `SHARD_ERR_CORRUPT`, …) and `message` (NUL-terminated) the error text, as `zarrshard
/// verify` prints it. Everything is owned by the library and valid only during the call.
/// Return 0 to go on, or a non-zero error code the library keeps (`shard_last_io_code`) and
/// reports as `SHARD_ERR_IO`, which stops the check.
#[allow(non_camel_case_types)]
pub type shard_problem_fn = Option<
    unsafe extern "C" fn(
        userdata: *mut c_void,
        key: *const c_char,
        chunk: *const u64,
        chunk_rank: usize,
        status: shard_status,
        message: *const c_char,
    ) -> i32,
>;

/// Check every stored shard of the array, as `zarrshard verify` does: the index (checksum,
/// every entry within the object) and that every inner chunk decodes. Each problem goes to
/// `on_problem(userdata, …)` (see `shard_problem_fn`; NULL to count only), on the calling
/// thread, in C order of the chunk grid and of each shard's chunks, as each batch of shards
/// is done; `*problems_out` receives how many there were (0: the array is clean). A damaged
/// shard is a problem, not an error: the call still returns `SHARD_OK`.
///
/// Shards are fetched and checked several at once on worker threads when the store is
/// `SHARD_STORE_THREAD_SAFE`, one after another on the calling thread otherwise; their
/// chunks decode in parallel either way. Each whole shard object is read once. A store with
/// `list` is listed once and only the listed shards are opened; otherwise every position of
/// the chunk grid is.
///
/// Thread-safe (not while another thread writes the array). Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER` (`array`, `problems_out`), `SHARD_ERR_IO` (the store's `list`
/// failed; or the store failed on a shard: the first such shard in grid order; or
/// `on_problem` returned non-zero, its code in `shard_last_io_code`), `SHARD_ERR_INVALID_ARGUMENT` (a shard object larger than the memory
/// limit), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_verify(
    array: *const shard_array,
    on_problem: shard_problem_fn,
    userdata: *mut c_void,
    problems_out: *mut u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let problems_out = unsafe { out(problems_out, "problems_out") }?;
        // SAFETY: `on_problem` and `userdata` per the documented contract.
        *problems_out = unsafe { verify(h, on_problem, userdata) }?.problems;
        Ok(())
    })
}

/// What `shard_array_verify_summary` checked. A plain struct the host allocates; its layout
/// never changes (more counts would come with a new function).
#[repr(C)]
#[allow(non_camel_case_types)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct shard_verify_summary {
    /// Shard objects the store holds, each fetched and checked (0: the array reads as all
    /// fill value, as one never written or at a mistyped path does).
    pub stored_shards: u64,
    /// Inner chunks that decoded without error.
    pub chunks_decoded: u64,
    /// Of those, the ones no checksum covers (no `crc32c` codec, zstd without its checksum):
    /// they decoded, but whether they hold the bytes written cannot be told.
    pub chunks_unverifiable: u64,
    /// Problems found, as `shard_array_verify`'s `*problems_out`.
    pub problems: u64,
}

/// `shard_array_verify`, telling besides the problems what was checked: `*summary_out`
/// (allocated by the host, written only on success) receives how many shards are stored, how
/// many inner chunks decoded and how many of those no checksum covers, and the problem count.
/// An array is proven clean only when `problems` and `chunks_unverifiable` are 0 and
/// `stored_shards` is what the host expects. Problems go to `on_problem(userdata, …)` as
/// `shard_array_verify` says (NULL to count only).
///
/// Thread-safe (not while another thread writes the array). Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER` (`array`, `summary_out`), `SHARD_ERR_IO` (the store's `list`
/// failed; or the store failed on a shard: the first such shard in grid order; or
/// `on_problem` returned non-zero, its code in `shard_last_io_code`),
/// `SHARD_ERR_INVALID_ARGUMENT` (a shard object larger than the memory limit),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_verify_summary(
    array: *const shard_array,
    on_problem: shard_problem_fn,
    userdata: *mut c_void,
    summary_out: *mut shard_verify_summary,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let summary_out = unsafe { out(summary_out, "summary_out") }?;
        // SAFETY: `on_problem` and `userdata` per the documented contract.
        *summary_out = unsafe { verify(h, on_problem, userdata) }?;
        Ok(())
    })
}

/// The walk of `shard_array_verify` and `shard_array_verify_summary`: each problem to the
/// host's `on_problem`, and the counts.
///
/// # Safety
/// `on_problem` and `userdata` as `shard_problem_fn` says.
unsafe fn verify(
    h: &ArrayHandle,
    on_problem: shard_problem_fn,
    userdata: *mut c_void,
) -> crate::Result<shard_verify_summary> {
    let mut problems = 0u64;
    let s = h.array().verify_counted(&|_| {}, |problem| {
        problems += 1;
        let Some(report) = on_problem else {
            return Ok(());
        };
        let chunk = match &problem.error {
            Error::Corrupt { chunk, .. } | Error::ChecksumMismatch { chunk, .. } => {
                chunk.as_ref().map(|c| c.0.as_slice())
            }
            _ => None,
        };
        let (chunk, rank) = chunk.map_or((std::ptr::null(), 0), |c| (c.as_ptr(), c.len()));
        // Keys are ASCII digits and separators; a NUL in the message (a host's text inside
        // it) would cut it short, so it is dropped.
        let key = CString::new(problem.key.replace('\0', "")).unwrap_or_default();
        let message =
            CString::new(problem.error.text_without_shard().replace('\0', "")).unwrap_or_default();
        let status = shard_status::from(&problem.error);
        // SAFETY: the host's callback, called as `shard_problem_fn`'s contract says.
        let code = unsafe {
            report(
                userdata,
                key.as_ptr(),
                chunk,
                rank,
                status,
                message.as_ptr(),
            )
        };
        if code != 0 {
            return Err(Error::Io {
                code,
                message: "the host's problem callback failed".into(),
            });
        }
        Ok(())
    })?;
    Ok(shard_verify_summary {
        stored_shards: s.stored_shards,
        chunks_decoded: s.chunks_decoded,
        chunks_unverifiable: s.chunks_unverifiable,
        problems,
    })
}

/// Store in `*count_out` how many shards of the array are stored: 0 when the store holds
/// none, which an array whose path was mistyped (or that was never written) shows, and which
/// reads as all fill value exactly as a written all-fill array does. A store with `list` is
/// listed once; otherwise every position of the chunk grid is opened and asked its `size`
/// (one call each). Nothing is read. `*count_out` is written only on success.
///
/// Thread-safe (not while another thread writes the array). Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER` (`array`, `count_out`), `SHARD_ERR_IO` (the store's `list`,
/// `open_object` or `size` failed), `SHARD_ERR_UNSUPPORTED` (no `list`, and an object table
/// without `size`), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_stored_shards(
    array: *const shard_array,
    count_out: *mut u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let count_out = unsafe { out(count_out, "count_out") }?;
        *count_out = h.array().stored_shard_count()?;
        Ok(())
    })
}

/// The arguments the JSON `shard_array_refs*` calls share, checked before any shard is read.
struct RefsRequest<'a> {
    json_v1: bool,
    metadata: MetadataFormat,
    url_prefix: &'a str,
    name: Option<&'a str>,
}

impl<'a> RefsRequest<'a> {
    /// # Safety
    /// `url_prefix` and `name` as `text` requires.
    unsafe fn new(
        format: u32,
        zarr_format: u32,
        url_prefix: *const c_char,
        url_prefix_len: usize,
        name: *const c_char,
        name_len: usize,
    ) -> std::result::Result<Self, Failure> {
        // SAFETY: per the caller's contract.
        let url_prefix = unsafe { text(url_prefix, url_prefix_len, "url_prefix") }?;
        let name = unsafe { text(name, name_len, "name") }?;
        let metadata = match zarr_format {
            3 => MetadataFormat::V3,
            2 => MetadataFormat::V2 { separator: '.' },
            other => {
                return Err(Error::InvalidArgument(format!(
                    "zarr_format must be 2 or 3, got {other}"
                ))
                .into())
            }
        };
        if format != SHARD_REFS_JSON_V0 && format != SHARD_REFS_JSON_V1 {
            return Err(
                Error::InvalidArgument(format!("unknown reference format {format}")).into(),
            );
        }
        Ok(RefsRequest {
            json_v1: format == SHARD_REFS_JSON_V1,
            metadata,
            url_prefix,
            name: (!name.is_empty()).then_some(name),
        })
    }

    /// The set's whole JSON text, in the version asked for, written as the shards are read
    /// (the references are never all held; the text is). Errors as `References::from_array`.
    fn text(&self, array: &Array<HandleStore>) -> Result<Vec<u8>> {
        let mut text = Vec::new();
        self.write(array, &mut text)?;
        Ok(text)
    }

    /// Write the set's JSON text to `out` as the shards are read. Errors as
    /// `References::from_array`, and `out`'s as `Error::Io`.
    fn write(&self, array: &Array<HandleStore>, out: &mut dyn std::io::Write) -> Result<()> {
        let version = match self.json_v1 {
            false => JsonVersion::V0,
            true => JsonVersion::V1,
        };
        let (url, name) = (self.url_prefix, self.name);
        crate::array::refs::write_json_from_array(array, self.metadata, version, url, name, out)
    }
}

/// Write the array's kerchunk reference set in the Parquet layout of fsspec's
/// `LazyReferenceMapper` (as `zarrshard refs --format parquet` does) as objects of the host's
/// store `out`: `NAME/refs.<n>.parq` (file `n` holds the chunks numbered `n × record_size ..`
/// in C order of the unsharded chunk grid, one row each; an empty chunk's row carries the
/// encoded fill chunk in `raw`, which fsspec reads as the fill value) and, last, `.zmetadata`
/// (Zarr v2 metadata: the only kind fsspec reads in this layout). Each object is written with
/// one `write` (plus `truncate`) through the table `out`'s `open_object` returns. `name`
/// (`name_len` bytes of UTF-8) must not be empty; `record_size` ≥ 1 (fsspec's default is
/// 10000). `out` is borrowed for the call: its `destroy` is not called; its `flags` say
/// whether its callbacks may run on worker threads (they are called on this thread here).
/// `name`, `record_size` and the grid (at most 100 000 000 inner chunks, as
/// `shard_array_refs_parquet_dir`) are checked before any shard is read. The objects are written as
/// the shards are read, never holding the set (as `shard_array_refs_parquet_dir`); a failure
/// part way leaves the objects written so far but no `.zmetadata`.
///
/// Thread-safe (not while another thread writes the array).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (not UTF-8, an
/// empty or invalid name, `record_size` 0, `out` version 0, no `open_object` or unknown flags, a
/// grid of more than 100 000 000 inner chunks, the array not sharded, a bytes→bytes codec after sharding, a data type v2 cannot name),
/// `SHARD_ERR_UNSUPPORTED_CODEC` (a codec v2 metadata cannot express), `SHARD_ERR_IO` (reading
/// the array or writing `out`), `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`,
/// `SHARD_ERR_UNSUPPORTED` (an object table of `out` without `write`, or without `truncate`
/// over a longer object; a library built without the `parquet` feature), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_refs_parquet(
    array: *const shard_array,
    url_prefix: *const c_char,
    url_prefix_len: usize,
    name: *const c_char,
    name_len: usize,
    record_size: u64,
    out: *const shard_store_callbacks,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let url_prefix = unsafe { text(url_prefix, url_prefix_len, "url_prefix") }?;
        let name = unsafe { text(name, name_len, "name") }?;
        let out =
            CallbackStore::new(unsafe { read_store_table(out) }.ok_or(Failure::Null("out"))?)?;
        crate::array::refs::write_parquet_from_array_to(
            &*h.array(),
            url_prefix,
            name,
            record_size,
            &out,
        )?;
        Ok(())
    })
}
