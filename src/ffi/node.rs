//! Arrays and groups at paths of a store, from C: create (from `zarr.json` text or a
//! `shard_array_spec`), open by path, shape, resize, append frames, attributes, compaction,
//! groups. Thin wrappers over the core's [`Array`], [`Group`] and [`ArraySpec`].

use super::array::{shard_array, shard_store_callbacks, ArrayHandle, StoreArg};
use super::codec::copy_string_out;
use super::error::{guard, Failure, FfiResult};
use super::handle::{bytes, bytes_mut, optional_out, out, text, Handle};
use super::shard::SHARD_FLAG_MORTON_ORDER;
use super::status::shard_status;
use super::store::node_path;
use crate::array::Array;
use crate::error::Error;
use crate::metadata::spec::{ArraySpec, Compressor};
use crate::metadata::{ArrayMetadata, Attributes};
use crate::shard::writer::ChunkOrder;
use crate::Group;
use std::ffi::{c_char, CStr};

/// `shard_array_create`, `shard_array_create_spec`, `shard_group_create` flag: replace a node
/// already at the path (an array's stored shards and metadata are deleted first; a group's
/// whole subtree, which needs a store that lists).
pub const SHARD_CREATE_OVERWRITE: u32 = 1;

fn check_create_flags(flags: u32) -> FfiResult<bool> {
    if flags & !SHARD_CREATE_OVERWRITE != 0 {
        return Err(Error::InvalidArgument(format!("unknown flags {flags:#x}")).into());
    }
    Ok(flags & SHARD_CREATE_OVERWRITE != 0)
}

/// Create the array `meta` at `path` of `store` and hand out its handle.
///
/// # Safety
/// As the exported functions' contract.
unsafe fn create(
    store: *const shard_store_callbacks,
    path: *const c_char,
    meta: impl FnOnce() -> FfiResult<ArrayMetadata>,
    flags: u32,
    array_out: *mut *mut shard_array,
) -> FfiResult {
    // SAFETY: per the documented contract.
    let store = unsafe { StoreArg::from_table(store) }?;
    let path = unsafe { node_path(path) }?;
    let array_out = unsafe { out(array_out, "array_out") }?;
    let overwrite = check_create_flags(flags)?;
    let array = Array::create_at(store.shared(), path, meta()?, overwrite)?;
    store.adopt();
    *array_out = shard_array::into_ptr(ArrayHandle::new(array));
    Ok(())
}

/// Create a Zarr v3 array at `path` of `store` from its `zarr.json` text (`json_len` bytes of
/// UTF-8): the metadata is validated (errors name the field; nothing is written then), and
/// `PATH/zarr.json` is written as a new object. `path` is NULL or `""` for the store's root,
/// or `/`-separated names (`"image/0"`: keys `image/0/zarr.json`, `image/0/c/0/1`); `..`,
/// `.`, empty names, a leading `/`, `\` are refused. A node already at `path` is refused
/// (`SHARD_ERR_INVALID_STATE`) unless `flags` has `SHARD_CREATE_OVERWRITE`.
///
/// `store` is a table from `shard_store_directory` / `shard_store_memory` (shared: the host
/// keeps and later releases its copy) or the host's own table (its `userdata` then belongs to
/// the new handle, as with `shard_array_open`). On success `*array_out` owns a new handle;
/// close it with `shard_array_close`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (the path, text
/// not UTF-8, unknown flags, a bad store table), `SHARD_ERR_INVALID_METADATA`,
/// `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_INVALID_STATE` (a node exists),
/// `SHARD_ERR_UNSUPPORTED` (overwriting a group in a store that cannot list), `SHARD_ERR_IO`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_create(
    store: *const shard_store_callbacks,
    path: *const c_char,
    metadata_json: *const c_char,
    json_len: usize,
    flags: u32,
    array_out: *mut *mut shard_array,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let json = unsafe { text(metadata_json, json_len, "metadata_json") }?;
        unsafe {
            create(
                store,
                path,
                || Ok(ArrayMetadata::parse(json)?),
                flags,
                array_out,
            )
        }
    })
}

/// Open the array at `path` of `store` (NULL or `""`: the root): `PATH/zarr.json` (Zarr v3)
/// or `PATH/.zarray` (Zarr v2, the sharding prototype). `store` as for `shard_array_create`.
/// On success `*array_out` owns a new handle. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (the path, a bad
/// store table), `SHARD_ERR_INVALID_METADATA` (no array at the path, naming it, or invalid
/// metadata), `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_IO`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_open_path(
    store: *const shard_store_callbacks,
    path: *const c_char,
    array_out: *mut *mut shard_array,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let store = unsafe { StoreArg::from_table(store) }?;
        let path = unsafe { node_path(path) }?;
        let array_out = unsafe { out(array_out, "array_out") }?;
        let array = Array::open_at(store.shared(), path)?;
        store.adopt();
        *array_out = shard_array::into_ptr(ArrayHandle::new(array));
        Ok(())
    })
}

/// Store the array's rank in `*rank_out`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_rank(
    array: *const shard_array,
    rank_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        *unsafe { out(rank_out, "rank_out") }? = h.array().shape().len();
        Ok(())
    })
}

/// Copy the array's shape into `shape_out` (`rank` values, which must be the array's rank):
/// frames appended and not yet written included. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (another rank),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_shape(
    array: *const shard_array,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let a = h.array();
        check_rank(a.shape().len(), rank)?;
        let dst = unsafe { bytes_mut(shape_out.cast::<u8>(), rank * 8, "shape_out") }?;
        for (d, v) in dst.chunks_exact_mut(8).zip(a.shape()) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        Ok(())
    })
}

fn check_rank(rank: usize, given: usize) -> FfiResult {
    if rank != given {
        return Err(Error::InvalidArgument(format!(
            "the array has rank {rank}, the call passed {given}"
        ))
        .into());
    }
    Ok(())
}

/// Set the array's shape to `shape` (`rank` values; any dimension may grow or shrink), after
/// writing the frames pending from `shard_array_append`. When a dimension shrinks,
/// `zarr.json` is first written with the shape old and new share; the shards and inner chunks
/// wholly outside are deleted and the part of an edge chunk past a shrunken edge is reset to
/// the fill value (so growing again shows fill, never stale data); then `zarr.json` takes the
/// new shape (a new object each time). One writer per handle (`SHARD_ERR_BUSY`); waits for
/// reads in flight on other threads.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (rank, a grid
/// past 2^64 shards), `SHARD_ERR_UNSUPPORTED` (not a Zarr v3 array), `SHARD_ERR_BUSY`,
/// `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM` (an edge shard read back),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_resize(
    array: *mut shard_array,
    shape: *const u64,
    rank: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let shape = unsafe { bytes(shape, rank, "shape") }?;
        let _exclusive = h.writer()?;
        Ok(h.array_mut().resize(shape)?)
    })
}

/// Append `data` (`len` bytes, C order, native byte order), a block of extent `block_shape`
/// (`rank` values), at the end of `axis`, growing the shape by `block_shape[axis]`: one frame
/// of a `(t, y, x)` series is `axis` 0 with `block_shape` `{1, Y, X}`. Along every other axis
/// the block spans the array.
///
/// Frames are gathered per shard layer along `axis` in memory, and each shard is written once,
/// whole, when its layer is complete (no dead bytes), then `zarr.json` with a shape covering
/// the written layers only: a crash leaves every completed layer readable. Memory: one layer
/// of shards. `shard_array_read_region` sees appended frames at once. `shard_array_flush`
/// writes a partial layer (rewritten whole when later frames complete it);
/// `shard_array_close` flushes too, but cannot report an error: call `shard_array_flush`
/// before it. One writer per handle (`SHARD_ERR_BUSY`: exclusive use among writers, from
/// any thread); waits for reads in flight on other threads.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (rank, axis, a
/// block that does not span the other axes or is empty, a layer over the memory limit),
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_UNSUPPORTED` (not a Zarr v3 array), `SHARD_ERR_BUSY`,
/// `SHARD_ERR_IO` (writing a completed layer failed: the block was taken if
/// `shard_array_shape` grew, and its rows stay pending, written again by the next append or
/// `shard_array_flush`; not taken if the shape did not grow), `SHARD_ERR_CORRUPT`,
/// `SHARD_ERR_CHECKSUM` (a partly stored last layer read back: not taken), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_append(
    array: *mut shard_array,
    axis: usize,
    block_shape: *const u64,
    rank: usize,
    data: *const u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let block_shape = unsafe { bytes(block_shape, rank, "block_shape") }?;
        let data = unsafe { bytes(data, len, "data") }?;
        let _exclusive = h.writer()?;
        Ok(h.array_mut().append(axis, block_shape, data)?)
    })
}

/// Write the frames appended and not yet stored (the partial shard layer, each shard whole,
/// as a new object) and then `zarr.json` with the shape covering them. Nothing to do when
/// nothing is pending. One writer per handle (`SHARD_ERR_BUSY`: exclusive use among writers,
/// from any thread); reads on other threads go on meanwhile.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUSY`, `SHARD_ERR_IO` (the frames
/// stay pending), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_flush(array: *mut shard_array) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let _exclusive = h.writer()?;
        Ok(h.array().flush()?)
    })
}

/// Replace the array's attributes with the JSON object `json` (`json_len` bytes of UTF-8) and
/// write `zarr.json` (a new object), after the frames pending. One writer per handle
/// (`SHARD_ERR_BUSY`: exclusive use among writers, from any thread); waits for reads in
/// flight on other threads.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (not UTF-8),
/// `SHARD_ERR_INVALID_METADATA` (not a JSON object, or past the metadata limits),
/// `SHARD_ERR_UNSUPPORTED` (not a Zarr v3 array), `SHARD_ERR_BUSY`, `SHARD_ERR_IO`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_set_attributes(
    array: *mut shard_array,
    json: *const c_char,
    json_len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let json = unsafe { text(json, json_len, "json") }?;
        let attributes = Attributes::from_text(json, "attributes")?;
        let _exclusive = h.writer()?;
        Ok(h.array_mut().set_attributes(attributes)?)
    })
}

/// Copy the array's attributes, a JSON object's text, into `buf` as a NUL-terminated string;
/// `*written_out` (may be NULL) receives its length without the NUL. With `(NULL, 0)` only
/// the length is stored (a size query); a non-empty buffer too small gives
/// `SHARD_ERR_BUFFER_SIZE`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_attributes(
    array: *const shard_array,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        // SAFETY: per the documented contract.
        unsafe {
            copy_string_out(
                h.array().metadata().attributes.as_text(),
                buf,
                len,
                written_out,
            )
        }
    })
}

/// Copy the array's metadata, its current `zarr.json` text (after any resize or new
/// attributes through this handle; for an array of an older format, the Zarr v3 document
/// equivalent to it), into `buf` as a NUL-terminated string; `*written_out` (may be NULL)
/// receives its length without the NUL. With `(NULL, 0)` only the length is stored (a size
/// query); a non-empty buffer too small gives `SHARD_ERR_BUFFER_SIZE`. For bindings that show
/// the chunk grid, data type and fill value without parsing the store's files themselves.
/// Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_metadata(
    array: *const shard_array,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        let json = h.array().metadata().to_json_bytes();
        // SAFETY: per the documented contract.
        unsafe {
            copy_string_out(
                std::str::from_utf8(&json).expect("JSON is UTF-8"),
                buf,
                len,
                written_out,
            )
        }
    })
}

/// Rewrite every shard that holds dead bytes (left by region updates) without them, as
/// `zarrshard compact` does: each as a new object, inner chunks in C order, or Morton order
/// with `SHARD_FLAG_MORTON_ORDER` in `flags`. `*shards_rewritten_out` and `*bytes_freed_out`
/// (each may be NULL) receive the number of shards rewritten and the bytes they shrank by.
/// One writer per handle (`SHARD_ERR_BUSY`); readers on other threads see each shard old or new.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (unknown flags),
/// `SHARD_ERR_BUSY`, `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_compact(
    array: *mut shard_array,
    flags: u32,
    shards_rewritten_out: *mut u64,
    bytes_freed_out: *mut u64,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let h = unsafe { shard_array::borrow(array, "array") }?;
        if flags & !SHARD_FLAG_MORTON_ORDER != 0 {
            return Err(Error::InvalidArgument(format!("unknown flags {flags:#x}")).into());
        }
        let order = match flags & SHARD_FLAG_MORTON_ORDER {
            0 => ChunkOrder::C,
            _ => ChunkOrder::Morton,
        };
        let _exclusive = h.writer()?;
        let done = h.array().compact(order)?;
        let freed = done
            .iter()
            .map(|(_, before, after)| before.saturating_sub(*after))
            .sum();
        // SAFETY: NULL or valid for one write each.
        if let Some(n) = unsafe { optional_out(shards_rewritten_out) } {
            *n = done.len() as u64;
        }
        if let Some(b) = unsafe { optional_out(bytes_freed_out) } {
            *b = freed;
        }
        Ok(())
    })
}

/// Create a Zarr v3 group at `path` of `store` (as for `shard_array_create`) with the
/// attributes `attributes_json` (`json_len` bytes of UTF-8, a JSON object; NULL and 0 for
/// none): `PATH/zarr.json`, a new object. An OME-Zarr image is such a group, with its
/// `multiscales` in the attributes and its levels as arrays below it. A node already there is
/// refused unless `flags` has `SHARD_CREATE_OVERWRITE`. The store table is never taken over:
/// a host's table stays the host's. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (the path, not
/// UTF-8, unknown flags, a bad store table), `SHARD_ERR_INVALID_METADATA` (the attributes are
/// not a JSON object), `SHARD_ERR_INVALID_STATE` (a node exists), `SHARD_ERR_UNSUPPORTED`,
/// `SHARD_ERR_IO`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_group_create(
    store: *const shard_store_callbacks,
    path: *const c_char,
    attributes_json: *const c_char,
    json_len: usize,
    flags: u32,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let store = unsafe { StoreArg::from_table(store) }?;
        let path = unsafe { node_path(path) }?;
        let json = unsafe { text(attributes_json, json_len, "attributes_json") }?;
        let overwrite = check_create_flags(flags)?;
        let attributes = match json {
            "" => Attributes::new(),
            json => Attributes::from_text(json, "attributes")?,
        };
        Group::create(store.shared(), path, attributes, overwrite)?;
        Ok(())
    })
}

/// Copy the attributes of the group at `path` of `store` (NULL or `""`: the root), a JSON
/// object's text, into `buf` as a NUL-terminated string; `*written_out` (may be NULL)
/// receives its length without the NUL. With `(NULL, 0)` only the length is stored (a size
/// query); a non-empty buffer too small gives `SHARD_ERR_BUFFER_SIZE`. Each call reads
/// `PATH/zarr.json` anew. The store table is never taken over. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (the path, a bad
/// store table), `SHARD_ERR_INVALID_METADATA` (no group at `path`, naming it, or its
/// `zarr.json` is not valid), `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_group_attributes(
    store: *const shard_store_callbacks,
    path: *const c_char,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let store = unsafe { StoreArg::from_table(store) }?;
        let path = unsafe { node_path(path) }?;
        let group = Group::open(store.shared(), path)?;
        // SAFETY: per the documented contract.
        unsafe { copy_string_out(group.attributes().as_text(), buf, len, written_out) }
    })
}

/// Replace the attributes of the group at `path` of `store` with the JSON object
/// `attributes_json` (`json_len` bytes of UTF-8) and write its `zarr.json` (a new object);
/// its members are untouched. The store table is never taken over. Thread-safe (two writers
/// of one group's attributes: the last one wins whole).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (the path, not
/// UTF-8, a bad store table), `SHARD_ERR_INVALID_METADATA` (no group at `path`; the
/// attributes are not a JSON object), `SHARD_ERR_UNSUPPORTED` (a store that cannot write),
/// `SHARD_ERR_IO`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_group_set_attributes(
    store: *const shard_store_callbacks,
    path: *const c_char,
    attributes_json: *const c_char,
    json_len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let store = unsafe { StoreArg::from_table(store) }?;
        let path = unsafe { node_path(path) }?;
        let json = unsafe { text(attributes_json, json_len, "attributes_json") }?;
        let attributes = Attributes::from_text(json, "attributes")?;
        let mut group = Group::open(store.shared(), path)?;
        group.set_attributes(attributes)?;
        Ok(())
    })
}

/// The `shard_array_spec` version this header defines.
pub const SHARD_ARRAY_SPEC_VERSION: u32 = 1;
/// `shard_array_spec.index_location`: the shard index after the chunks (the default).
pub const SHARD_INDEX_AT_END: u32 = 0;
/// `shard_array_spec.index_location`: the shard index before the chunks.
pub const SHARD_INDEX_AT_START: u32 = 1;
/// `shard_array_spec.checksums`: a crc32c checksum after the shard index (on by default).
pub const SHARD_CHECKSUM_INDEX: u32 = 1;
/// `shard_array_spec.checksums`: a crc32c checksum after each inner chunk (off by default:
/// see `shard_array_spec_init`).
pub const SHARD_CHECKSUM_CHUNKS: u32 = 2;

/// An array described by the choices people make, for `shard_array_create_spec`: no
/// `zarr.json` written by hand. Fill it with `shard_array_spec_init` first (later versions
/// only append fields), then set what differs. The library reads the pointed-to values during
/// the call only.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct shard_array_spec {
    /// `SHARD_ARRAY_SPEC_VERSION` (set by `shard_array_spec_init`).
    pub version: u32,
    /// The number of dimensions.
    pub rank: usize,
    /// Required: the array's shape, `rank` values.
    pub shape: *const u64,
    /// The shard shape, `rank` values, each a multiple of the chunk shape's; NULL for an
    /// unsharded array (each chunk its own object).
    pub shard_shape: *const u64,
    /// Required: the inner chunk shape (the unit read and compressed), `rank` values.
    pub chunk_shape: *const u64,
    /// Required: the data type, NUL-terminated: a name (`"uint16"`, `"float32"`, `"bool"`, …)
    /// or the JSON text of an extension type's object form.
    pub data_type: *const c_char,
    /// The fill value as NUL-terminated JSON text (`"0"`, `"65535"`, `"\"NaN\""`); NULL for zero
    /// (`false` for bool).
    pub fill_value: *const c_char,
    /// The compressor, NUL-terminated: `"zstd"` (NULL is zstd), `"gzip"`, `"blosc"` (its zstd,
    /// with byte shuffle) or `"none"`.
    pub compressor: *const c_char,
    /// The compression level (zstd 1–22, gzip 0–9, blosc 0–9); `shard_array_spec_init` sets 3.
    pub compression_level: i32,
    /// `SHARD_INDEX_AT_END` (the default) or `SHARD_INDEX_AT_START`.
    pub index_location: u32,
    /// A bitwise OR of `SHARD_CHECKSUM_*`; `shard_array_spec_init` sets `SHARD_CHECKSUM_INDEX`.
    pub checksums: u32,
    /// NULL, or `rank` NUL-terminated names (an entry may be NULL: unnamed), written as
    /// `dimension_names` (`"t"`, `"z"`, `"y"`, `"x"` for OME-Zarr).
    pub dimension_names: *const *const c_char,
}

/// Fill `*spec` with the defaults and NULL pointers: version `SHARD_ARRAY_SPEC_VERSION`, rank 0,
/// zstd at level 3 (zstd's own default, and zarr-python's), the index at the end with a crc32c
/// checksum (a torn or misplaced index is caught before any offset in it is used), no checksum
/// per inner chunk (as zarr-python and tensorstore write by default: a damaged compressed chunk
/// nearly always fails to decode; set `SHARD_CHECKSUM_CHUNKS` to catch every flipped bit, at
/// a small cost per byte). Set `rank`, `shape`, `chunk_shape`, `data_type`
/// (and usually `shard_shape`) afterwards. Thread-safe (the spec is the caller's).
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_spec_init(spec: *mut shard_array_spec) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        *unsafe { out(spec, "spec") }? = shard_array_spec {
            version: SHARD_ARRAY_SPEC_VERSION,
            rank: 0,
            shape: std::ptr::null(),
            shard_shape: std::ptr::null(),
            chunk_shape: std::ptr::null(),
            data_type: std::ptr::null(),
            fill_value: std::ptr::null(),
            compressor: std::ptr::null(),
            compression_level: 3,
            index_location: SHARD_INDEX_AT_END,
            checksums: SHARD_CHECKSUM_INDEX,
            dimension_names: std::ptr::null(),
        };
        Ok(())
    })
}

/// A NUL-terminated UTF-8 string field of a spec, `None` for NULL.
///
/// # Safety
/// `p` is NULL or NUL-terminated.
unsafe fn c_text<'a>(p: *const c_char, field: &str) -> FfiResult<Option<&'a str>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: per the contract.
    let s = unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| Error::InvalidArgument(format!("shard_array_spec.{field} is not UTF-8")))?;
    Ok(Some(s))
}

/// The core's description of a C spec.
///
/// # Safety
/// `spec` is NULL or valid, and its pointers hold what its documentation says.
unsafe fn read_spec(spec: *const shard_array_spec) -> FfiResult<ArraySpec> {
    // SAFETY: per the contract.
    let spec = unsafe { spec.as_ref() }.ok_or(Failure::Null("spec"))?;
    if spec.version != SHARD_ARRAY_SPEC_VERSION {
        return Err(Error::InvalidArgument(format!(
            "shard_array_spec.version is {}, expected {SHARD_ARRAY_SPEC_VERSION} (call shard_array_spec_init)",
            spec.version
        ))
        .into());
    }
    let rank = spec.rank;
    let shape = unsafe { bytes(spec.shape, rank, "shard_array_spec.shape") }?;
    if spec.shape.is_null() || spec.chunk_shape.is_null() {
        return Err(Failure::Null(if spec.shape.is_null() {
            "shard_array_spec.shape"
        } else {
            "shard_array_spec.chunk_shape"
        }));
    }
    let chunk_shape = unsafe { bytes(spec.chunk_shape, rank, "shard_array_spec.chunk_shape") }?;
    let data_type = unsafe { c_text(spec.data_type, "data_type") }?
        .ok_or(Failure::Null("shard_array_spec.data_type"))?;
    let mut core = ArraySpec::new(shape, chunk_shape, data_type);
    if !spec.shard_shape.is_null() {
        core.shard_shape = Some(
            unsafe { bytes(spec.shard_shape, rank, "shard_array_spec.shard_shape") }?.to_vec(),
        );
    }
    if let Some(fill) = unsafe { c_text(spec.fill_value, "fill_value") }? {
        core.fill_value = Some(serde_json::from_str(fill).map_err(|e| {
            Error::InvalidArgument(format!("shard_array_spec.fill_value is not JSON: {e}"))
        })?);
    }
    let compressor = unsafe { c_text(spec.compressor, "compressor") }?.unwrap_or("zstd");
    core.compressor = Compressor::named(compressor, spec.compression_level)?;
    core.index_at_start = match spec.index_location {
        SHARD_INDEX_AT_END => false,
        SHARD_INDEX_AT_START => true,
        other => {
            return Err(Error::InvalidArgument(format!(
                "shard_array_spec.index_location is {other}: SHARD_INDEX_AT_END or SHARD_INDEX_AT_START"
            ))
            .into())
        }
    };
    if spec.checksums & !(SHARD_CHECKSUM_INDEX | SHARD_CHECKSUM_CHUNKS) != 0 {
        return Err(Error::InvalidArgument(format!(
            "shard_array_spec.checksums has unknown bits {:#x}",
            spec.checksums
        ))
        .into());
    }
    core.index_checksum = spec.checksums & SHARD_CHECKSUM_INDEX != 0;
    core.chunk_checksum = spec.checksums & SHARD_CHECKSUM_CHUNKS != 0;
    if !spec.dimension_names.is_null() {
        let names = unsafe {
            bytes(
                spec.dimension_names,
                rank,
                "shard_array_spec.dimension_names",
            )
        }?;
        core.dimension_names = Some(
            names
                .iter()
                .map(|&n| unsafe { c_text(n, "dimension_names") }.map(|n| n.map(str::to_string)))
                .collect::<FfiResult<_>>()?,
        );
    }
    Ok(core)
}

/// Copy the `zarr.json` that `spec` describes (compact JSON, validated) into `buf` as a
/// NUL-terminated string; `*written_out` (may be NULL) receives its length without the NUL.
/// With `(NULL, 0)` only the length is stored (a size query); a non-empty buffer too small
/// gives `SHARD_ERR_BUFFER_SIZE`. For a host that wants to see or adjust the metadata before
/// `shard_array_create`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER` (the spec or a required field),
/// `SHARD_ERR_INVALID_ARGUMENT` (version, unknown compressor, index location or checksum
/// bits, text not UTF-8 or not JSON), `SHARD_ERR_INVALID_METADATA` (naming the field: a shard
/// shape not a multiple of the chunk shape, a zero extent, a fill value the type cannot hold,
/// a level out of range), `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_BUFFER_SIZE`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_array_spec_json(
    spec: *const shard_array_spec,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let spec = unsafe { read_spec(spec) }?;
        spec.to_metadata()?;
        let text = spec.to_json()?.to_string();
        // SAFETY: per the documented contract.
        unsafe { copy_string_out(&text, buf, len, written_out) }
    })
}

/// `shard_array_create` of the array `spec` describes: no JSON written by hand. `store`,
/// `path`, `flags` and `array_out` as there. Thread-safe.
/// Returns what `shard_array_spec_json` and `shard_array_create` return.
#[no_mangle]
pub unsafe extern "C" fn shard_array_create_spec(
    store: *const shard_store_callbacks,
    path: *const c_char,
    spec: *const shard_array_spec,
    flags: u32,
    array_out: *mut *mut shard_array,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let spec = unsafe { read_spec(spec) }?;
        unsafe { create(store, path, || Ok(spec.to_metadata()?), flags, array_out) }
    })
}
