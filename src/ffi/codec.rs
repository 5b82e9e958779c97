//! `shard_codec`: a sharding configuration bound to a shard shape, data type and fill value
//! (from a whole `zarr.json`, or from a bare `sharding_indexed` configuration), and its getters.
//! Shard handles need it to know the layout, and its getters (sizes, shapes, keys) let a host
//! size its buffers and name its objects without parsing the metadata itself.

use super::error::{guard, Failure};
use super::handle::{bytes, bytes_mut, copy_cstr, optional_out, out, text, Handle};
use super::status::shard_status;
use crate::codec::sharding::ShardLayout;
use crate::error::{shown, Error};
use crate::metadata::dtype::{DataType, FillValue};
use crate::metadata::ArrayMetadata;
use std::ffi::c_char;
use std::sync::Arc;

/// A shard layout: the sharding codec bound to one shard shape, data type and fill value.
/// Immutable once built, so it may be shared by any number of threads and shard handles.
pub struct shard_codec {
    _private: [u8; 0],
}

pub(crate) struct CodecHandle {
    pub(crate) layout: Arc<ShardLayout>,
    /// Present when built from a whole `zarr.json`.
    pub(crate) array: Option<ArrayMetadata>,
}

impl Handle for shard_codec {
    type Rust = CodecHandle;
}

/// Build a codec from a Zarr v3 array `zarr.json` (`json`, `json_len` bytes of UTF-8, no NUL
/// needed), within the limits `shard_array_open` states (64 MiB, 1 MiB outside `attributes`,
/// sharding nested at most 32 levels). The array's `codecs` must contain `sharding_indexed`
/// as the array→bytes codec and no bytes→bytes codec after it (inner chunks could not be read
/// one by one). With array→array codecs (e.g. `transpose`) before it, inner chunk coordinates
/// and contents are those the sharding codec sees.
///
/// On success `*codec_out` owns a new codec; free it with `shard_codec_free`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (not UTF-8),
/// `SHARD_ERR_INVALID_METADATA` (bad JSON, spec violation, not sharded),
/// `SHARD_ERR_UNSUPPORTED_CODEC` (an unknown codec, or a bytes→bytes codec after sharding),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_from_zarr_json(
    json: *const c_char,
    json_len: usize,
    codec_out: *mut *mut shard_codec,
) -> shard_status {
    guard(|| {
        // SAFETY: the caller passes valid pointers per the documented contract.
        let json = unsafe { text(json, json_len, "json") }?;
        let codec_out = unsafe { out(codec_out, "codec_out") }?;
        let meta = ArrayMetadata::parse(json)?;
        if meta.sharding().is_none() {
            return Err(
                Error::metadata("the array is not sharded (no sharding_indexed codec)").into(),
            );
        }
        refuse_whole_shard_codecs(&meta)?;
        let layout = Arc::new(meta.shard_layout().expect("validated"));
        *codec_out = shard_codec::into_ptr(CodecHandle {
            layout,
            array: Some(meta),
        });
        Ok(())
    })
}

/// Build a codec from a bare `sharding_indexed` configuration object (`config_json`: the value
/// of `"configuration"`), a data type name (`"uint16"`, `"float32"`, `"r24"`, …), the shard
/// shape (`rank` values) and the fill value as JSON (`"0"`, `"\"NaN\""`, `"[1.0, 0.0]"`).
/// String arguments are pointer + length, UTF-8, no NUL needed. The JSON texts may have at
/// most 1 MiB each, and `sharding_indexed` nest at most 32 levels (this one counts as 1).
///
/// On success `*codec_out` owns a new codec; free it with `shard_codec_free`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (a string
/// argument is not UTF-8), `SHARD_ERR_INVALID_METADATA` (malformed JSON, unknown data type,
/// a fill value the type cannot hold, `rank` or shape not matching `chunk_shape`, past the
/// limits),
/// `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_from_config(
    config_json: *const c_char,
    config_len: usize,
    data_type: *const c_char,
    data_type_len: usize,
    shard_shape: *const u64,
    rank: usize,
    fill_value_json: *const c_char,
    fill_value_len: usize,
    codec_out: *mut *mut shard_codec,
) -> shard_status {
    guard(|| {
        // SAFETY: the caller passes valid pointers per the documented contract.
        let (config, dtype, shape, fill, codec_out) = unsafe {
            (
                text(config_json, config_len, "config_json")?,
                text(data_type, data_type_len, "data_type")?,
                bytes(shard_shape, rank, "shard_shape")?,
                text(fill_value_json, fill_value_len, "fill_value_json")?,
                out(codec_out, "codec_out")?,
            )
        };
        let parse = |s: &str, what: &str| {
            let limit = crate::runtime::limits::MAX_METADATA_STRUCTURE_BYTES;
            if s.len() as u64 > limit {
                return Err(Error::metadata(format!(
                    "{what} has {} bytes, more than the {limit} bytes it may have (zarrshard::runtime::limits::MAX_METADATA_STRUCTURE_BYTES)",
                    s.len()
                )));
            }
            serde_json::from_str::<serde_json::Value>(s)
                .map_err(|e| crate::metadata::json_error(what, &e))
        };
        let dtype = DataType::parse(dtype)?;
        let fill = FillValue::parse(&parse(fill, "fill_value_json")?, &dtype)?;
        let layout = ShardLayout::from_config_json(
            &parse(config, "config_json")?,
            dtype,
            shape.to_vec(),
            fill,
        )?;
        *codec_out = shard_codec::into_ptr(CodecHandle {
            layout: Arc::new(layout),
            array: None,
        });
        Ok(())
    })
}

/// Store in `*codec_out` a new reference to the same codec (no copy: codecs are immutable and
/// shared). Free each reference with `shard_codec_free`. Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_clone(
    codec: *const shard_codec,
    codec_out: *mut *mut shard_codec,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        let codec_out = unsafe { out(codec_out, "codec_out") }?;
        *codec_out = shard_codec::into_ptr(CodecHandle {
            layout: c.layout.clone(),
            array: c.array.clone(),
        });
        Ok(())
    })
}

/// Free a codec. NULL is a no-op. Shard handles opened with it stay valid (they hold their
/// own reference). Not thread-safe with other calls on the same codec.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_free(codec: *mut shard_codec) {
    // SAFETY: the caller passes a pointer from a shard_codec_from_* call, once.
    let _ = std::panic::catch_unwind(|| unsafe { shard_codec::free(codec) });
}

/// Refuse an array whose shards could only be decoded whole (a bytes→bytes codec after
/// `sharding_indexed`): a shard codec handle reads and writes shards without that codec, so
/// shards written with it would not be shards of the array.
pub(crate) fn refuse_whole_shard_codecs(meta: &ArrayMetadata) -> Result<(), Error> {
    if meta.supports_partial_reads() {
        return Ok(());
    }
    let after: Vec<&str> = meta
        .codecs
        .bytes_to_bytes
        .iter()
        .map(|c| c.name())
        .collect();
    Err(Error::UnsupportedCodec(format!(
        "{} after sharding_indexed (shards could only be decoded whole)",
        after.join(", ")
    )))
}

/// Borrow the codec, run `f`, store its result in `*value_out` on success.
unsafe fn get<T>(
    codec: *const shard_codec,
    value_out: *mut T,
    f: impl FnOnce(&CodecHandle) -> Result<T, Failure>,
) -> shard_status {
    guard(|| {
        // SAFETY: per the getters' contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        let o = unsafe { out(value_out, "value_out") }?;
        *o = f(c)?;
        Ok(())
    })
}

/// Copy a shape into a caller array of exactly its rank.
unsafe fn get_shape(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
    f: impl FnOnce(&CodecHandle) -> Result<Vec<u64>, Failure>,
) -> shard_status {
    guard(|| {
        // SAFETY: per the getters' contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        // `(NULL, 0)` is the empty buffer: a rank-0 shape.
        if shape_out.is_null() && rank != 0 {
            return Err(Failure::Null("shape_out"));
        }
        let shape = f(c)?;
        if rank != shape.len() {
            return Err(Error::BufferSize {
                expected: shape.len() as u64,
                actual: rank as u64,
            }
            .into());
        }
        let dst = unsafe { super::handle::bytes_mut(shape_out.cast(), rank * 8, "shape_out") }?;
        for (d, v) in dst.chunks_exact_mut(8).zip(shape) {
            d.copy_from_slice(&v.to_ne_bytes());
        }
        Ok(())
    })
}

/// A string result: its length for a size query (empty buffer), else copied whole with its
/// NUL, or `SHARD_ERR_BUFFER_SIZE`.
pub(crate) fn copy_string(s: &str, buf: &mut [u8]) -> Result<usize, Failure> {
    if buf.is_empty() {
        return Ok(s.len());
    }
    if buf.len() <= s.len() {
        return Err(Error::BufferSize {
            expected: s.len() as u64 + 1,
            actual: buf.len() as u64,
        }
        .into());
    }
    Ok(copy_cstr(s, buf))
}

/// [`copy_string`] into the caller's `buf` (`len` bytes, NULL with 0 for a size query), the
/// length without the NUL stored in `*written_out` when it is not NULL.
///
/// # Safety
/// `buf` valid for `len` bytes and `written_out` NULL or valid for one write, per the calling
/// function's documented contract.
pub(crate) unsafe fn copy_string_out(
    s: &str,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> Result<(), Failure> {
    // SAFETY: per this function's contract.
    let buf = unsafe { bytes_mut(buf.cast(), len, "buf") }?;
    let written = copy_string(s, buf)?;
    // SAFETY: NULL or valid for one write.
    if let Some(w) = unsafe { optional_out(written_out) } {
        *w = written;
    }
    Ok(())
}

fn not_array() -> Failure {
    Failure::Core(Error::InvalidState(
        "the codec was not built from a zarr.json".into(),
    ))
}

/// Store the rank (number of dimensions) of shards in `*rank_out`. Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_rank(
    codec: *const shard_codec,
    rank_out: *mut usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe { get(codec, rank_out, |c| Ok(c.layout.chunks_per_shard().len())) }
}

/// Copy the shard shape (elements per dimension) into `shape_out`, which holds `rank` values
/// (`rank` must equal `shard_codec_rank`; for rank 0, `(NULL, 0)` is the empty array, as for
/// every shape getter). Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE` (wrong rank), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_shard_shape(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get_shape(codec, shape_out, rank, |c| {
            Ok(c.layout.shard_repr().shape.clone())
        })
    }
}

/// Copy the inner chunk shape into `shape_out` (`rank` values). Thread-safe. Returns
/// `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_inner_chunk_shape(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get_shape(codec, shape_out, rank, |c| {
            Ok(c.layout.inner_repr().shape.clone())
        })
    }
}

/// Copy the number of inner chunks per shard along each dimension into `shape_out` (`rank`
/// values). Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_chunks_per_shard(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get_shape(codec, shape_out, rank, |c| {
            Ok(c.layout.chunks_per_shard().to_vec())
        })
    }
}

/// Store the number of inner chunks per shard in `*count_out`. Thread-safe. Returns
/// `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_num_chunks(
    codec: *const shard_codec,
    count_out: *mut u64,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe { get(codec, count_out, |c| Ok(c.layout.num_chunks() as u64)) }
}

/// Store the decoded size in bytes of one inner chunk (the buffer size `shard_read_chunk`
/// and `shard_write_chunk` take) in `*nbytes_out`. Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_inner_chunk_nbytes(
    codec: *const shard_codec,
    nbytes_out: *mut usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe { get(codec, nbytes_out, |c| Ok(c.layout.inner_byte_size())) }
}

/// Store the encoded size in bytes of the shard index in `*nbytes_out`. Thread-safe. Returns
/// `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_index_nbytes(
    codec: *const shard_codec,
    nbytes_out: *mut u64,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe { get(codec, nbytes_out, |c| Ok(c.layout.index_size())) }
}

/// Store the size in bytes of one element in `*nbytes_out`. Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_element_nbytes(
    codec: *const shard_codec,
    nbytes_out: *mut usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get(codec, nbytes_out, |c| {
            Ok(c.layout.shard_repr().dtype.size())
        })
    }
}

/// Copy the fill value, one element in native byte order, into `buf`, whose `len` must equal
/// `shard_codec_element_nbytes`. Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_fill_value(
    codec: *const shard_codec,
    buf: *mut u8,
    len: usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        let buf = unsafe { bytes_mut(buf, len, "buf") }?;
        let fill = &c.layout.shard_repr().fill_value.0;
        crate::codec::check_len(buf.len(), fill.len() as u64)?;
        buf.copy_from_slice(fill);
        Ok(())
    })
}

/// Copy the Zarr v3 data type name (`"uint16"`; for an extension type such as `raw_bytes` its
/// `zarr.json` object as compact JSON text) into `buf` as a NUL-terminated string;
/// `*written_out` (may be NULL) receives its length without the NUL. With `(NULL, 0)` only the
/// length is stored (a size query); a non-empty buffer too small for name and NUL gives
/// `SHARD_ERR_BUFFER_SIZE`. Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_data_type(
    codec: *const shard_codec,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        let buf = unsafe { bytes_mut(buf.cast(), len, "buf") }?;
        let written = copy_string(&c.layout.shard_repr().dtype.name(), buf)?;
        // SAFETY: NULL or valid for one write.
        if let Some(w) = unsafe { optional_out(written_out) } {
            *w = written;
        }
        Ok(())
    })
}

/// Copy the array shape (from `zarr.json`) into `shape_out` (`rank` values). Thread-safe.
/// Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_BUFFER_SIZE`,
/// `SHARD_ERR_INVALID_STATE` (codec not built from a `zarr.json`), `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_array_shape(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get_shape(codec, shape_out, rank, |c| {
            Ok(c.array.as_ref().ok_or_else(not_array)?.shape.clone())
        })
    }
}

/// Copy the number of shards along each dimension (from `zarr.json`) into `shape_out`
/// (`rank` values). Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`,
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_INVALID_STATE`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_grid_shape(
    codec: *const shard_codec,
    shape_out: *mut u64,
    rank: usize,
) -> shard_status {
    // SAFETY: forwarded contract.
    unsafe {
        get_shape(codec, shape_out, rank, |c| {
            Ok(c.array.as_ref().ok_or_else(not_array)?.grid_shape())
        })
    }
}

/// Copy the storage key of the shard at grid coordinates `coords` (`rank` values), e.g.
/// `"c/0/1"`, into `buf` as a NUL-terminated string; `*written_out` (may be NULL) receives its
/// length without the NUL. With `(NULL, 0)` only the length is stored; a non-empty buffer too small
/// for the key gives `SHARD_ERR_BUFFER_SIZE`. Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_INVALID_ARGUMENT` (coordinates outside the grid),
/// `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_INVALID_STATE` (codec not from a `zarr.json`),
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_codec_shard_key(
    codec: *const shard_codec,
    coords: *const u64,
    rank: usize,
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    guard(|| {
        // SAFETY: per the documented contract.
        let c = unsafe { shard_codec::borrow(codec, "codec") }?;
        let coords = unsafe { bytes(coords, rank, "coords") }?;
        let buf = unsafe { bytes_mut(buf.cast(), len, "buf") }?;
        let meta = c.array.as_ref().ok_or_else(not_array)?;
        let grid = meta.grid_shape();
        if coords.len() != grid.len() || coords.iter().zip(&grid).any(|(c, g)| c >= g) {
            return Err(Error::InvalidArgument(format!(
                "shard {} is outside the grid {}",
                shown(coords),
                shown(&grid)
            ))
            .into());
        }
        let written = copy_string(&meta.chunk_key(coords), buf)?;
        // SAFETY: NULL or valid for one write.
        if let Some(w) = unsafe { optional_out(written_out) } {
            *w = written;
        }
        Ok(())
    })
}
