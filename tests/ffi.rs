//! The C ABI called from Rust as a C host would: NULL arguments, bad JSON, wrong buffer sizes,
//! failing callbacks at every call, finalize misuse, userdata ownership, exact read counts.

use std::ffi::{c_char, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use zarrshard::ffi::codec::*;
use zarrshard::ffi::io::*;
use zarrshard::ffi::shard::shard_mode::*;
use zarrshard::ffi::shard::*;
use zarrshard::ffi::status::shard_status::{self, *};
use zarrshard::ffi::*;

/// An in-memory object behind the callbacks, with call counters and fault injection.
#[derive(Default)]
struct Mem {
    data: Mutex<Option<Vec<u8>>>,
    calls: AtomicUsize,
    reads: AtomicUsize,
    read_bytes: AtomicUsize,
    /// Fail the call with this 1-based number (0: never).
    fail_at: usize,
    destroyed: AtomicUsize,
}

unsafe fn mem<'a>(ud: *mut c_void) -> &'a Mem {
    unsafe { &*(ud as *const Mem) }
}

/// Count a call; true when it must fail.
fn tick(m: &Mem) -> bool {
    let n = m.calls.fetch_add(1, Ordering::SeqCst) + 1;
    m.fail_at == n
}

const FAIL: i32 = 77;

unsafe extern "C" fn cb_read(
    ud: *mut c_void,
    offset: u64,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    let d = m.data.lock().unwrap();
    let Some(d) = d.as_ref() else {
        return SHARD_IO_NOT_FOUND;
    };
    let start = (offset as usize).min(d.len());
    let n = len.min(d.len() - start);
    unsafe { std::ptr::copy_nonoverlapping(d[start..].as_ptr(), buf, n) };
    unsafe { *got = n };
    m.reads.fetch_add(1, Ordering::SeqCst);
    m.read_bytes.fetch_add(n, Ordering::SeqCst);
    0
}

unsafe extern "C" fn cb_read_suffix(
    ud: *mut c_void,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
    size: *mut u64,
) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    let d = m.data.lock().unwrap();
    let Some(d) = d.as_ref() else {
        return SHARD_IO_NOT_FOUND;
    };
    let n = len.min(d.len());
    unsafe { std::ptr::copy_nonoverlapping(d[d.len() - n..].as_ptr(), buf, n) };
    unsafe { *got = n };
    unsafe { *size = d.len() as u64 };
    m.reads.fetch_add(1, Ordering::SeqCst);
    m.read_bytes.fetch_add(n, Ordering::SeqCst);
    0
}

unsafe extern "C" fn cb_size(ud: *mut c_void, size: *mut u64) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    match m.data.lock().unwrap().as_ref() {
        Some(d) => {
            unsafe { *size = d.len() as u64 };
            0
        }
        None => SHARD_IO_NOT_FOUND,
    }
}

unsafe extern "C" fn cb_write(ud: *mut c_void, offset: u64, buf: *const u8, len: usize) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    let mut d = m.data.lock().unwrap();
    let d = d.get_or_insert_with(Vec::new);
    let end = offset as usize + len;
    if d.len() < end {
        d.resize(end, 0);
    }
    d[offset as usize..end].copy_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    0
}

unsafe extern "C" fn cb_truncate(ud: *mut c_void, len: u64) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    m.data
        .lock()
        .unwrap()
        .get_or_insert_with(Vec::new)
        .resize(len as usize, 0);
    0
}

unsafe extern "C" fn cb_remove(ud: *mut c_void) -> i32 {
    let m = unsafe { mem(ud) };
    if tick(m) {
        return FAIL;
    }
    *m.data.lock().unwrap() = None;
    0
}

unsafe extern "C" fn cb_destroy(ud: *mut c_void) {
    unsafe { mem(ud) }.destroyed.fetch_add(1, Ordering::SeqCst);
}

fn callbacks(m: &Mem) -> shard_io_callbacks {
    shard_io_callbacks {
        version: SHARD_IO_VERSION,
        userdata: m as *const Mem as *mut c_void,
        read: Some(cb_read),
        read_suffix: Some(cb_read_suffix),
        size: Some(cb_size),
        write: Some(cb_write),
        truncate: Some(cb_truncate),
        remove: Some(cb_remove),
        destroy: Some(cb_destroy),
        read_vectored: None,
        create_new: None,
        write_new: None,
        commit_new: None,
        discard_new: None,
    }
}

fn last_error() -> String {
    let mut n = 0usize;
    assert_eq!(unsafe { shard_last_error(null_mut(), 0, &mut n) }, SHARD_OK);
    let mut buf = vec![0 as c_char; n + 1];
    let mut written = 0usize;
    assert_eq!(
        unsafe { shard_last_error(buf.as_mut_ptr(), buf.len(), &mut written) },
        SHARD_OK
    );
    assert_eq!(written, n);
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_str()
        .unwrap()
        .to_string()
}

#[cfg(not(miri))]
const CONFIG: &str = r#"{"chunk_shape": [2, 2],
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}"#;
// zstd (and libdeflate, gzip's encoder) are C, which Miri cannot run: under Miri the inner
// chunks are stored uncompressed.
#[cfg(miri)]
const CONFIG: &str = r#"{"chunk_shape": [2, 2],
    "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}"#;

fn codec() -> *mut shard_codec {
    let mut c = null_mut();
    let dtype = "uint16";
    let fill = "0";
    let st = unsafe {
        shard_codec_from_config(
            CONFIG.as_ptr().cast(),
            CONFIG.len(),
            dtype.as_ptr().cast(),
            dtype.len(),
            [4u64, 6].as_ptr(),
            2,
            fill.as_ptr().cast(),
            fill.len(),
            &mut c,
        )
    };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    c
}

/// Chunk (i, j) of a 2x3 grid holds 4 uint16 values; chunk (1, 2) is the fill value.
fn chunk_data(i: u64, j: u64) -> Vec<u8> {
    if (i, j) == (1, 2) {
        return vec![0; 8];
    }
    (0..4u16)
        .flat_map(|k| (k + 10 * (i as u16 * 3 + j as u16) + 1).to_ne_bytes())
        .collect()
}

/// Write all chunks through the callbacks in `mode`; the status of the first failing call.
fn write_all(c: *const shard_codec, m: &Mem, mode: u32) -> shard_status {
    write_all_opened(c, m, mode).0
}

/// Also says whether the open succeeded (so the handle owned, and destroyed, userdata).
fn write_all_opened(c: *const shard_codec, m: &Mem, mode: u32) -> (shard_status, bool) {
    let cb = callbacks(m);
    let mut h = null_mut();
    let st = unsafe { shard_open(c, &cb, mode, &mut h) };
    if st != SHARD_OK {
        assert!(h.is_null());
        return (st, false);
    }
    let mut result = SHARD_OK;
    'outer: for i in 0..2u64 {
        for j in 0..3u64 {
            let d = chunk_data(i, j);
            let st = unsafe { shard_write_chunk(h, [i, j].as_ptr(), 2, d.as_ptr(), d.len()) };
            if st != SHARD_OK {
                result = st;
                break 'outer;
            }
        }
    }
    if result == SHARD_OK {
        result = unsafe { shard_finalize(h, null_mut()) };
    }
    unsafe { shard_close(h) };
    (result, true)
}

/// Read all chunks back; the status of the first failing call.
fn read_all(c: *const shard_codec, m: &Mem) -> shard_status {
    let cb = callbacks(m);
    let mut h = null_mut();
    let st = unsafe { shard_open(c, &cb, SHARD_MODE_READ as u32, &mut h) };
    if st != SHARD_OK {
        return st;
    }
    let mut result = SHARD_OK;
    for i in 0..2u64 {
        for j in 0..3u64 {
            let mut buf = vec![0u8; 8];
            let st =
                unsafe { shard_read_chunk(h, [i, j].as_ptr(), 2, buf.as_mut_ptr(), buf.len()) };
            if st != SHARD_OK {
                result = st;
                break;
            }
            assert_eq!(buf, chunk_data(i, j));
        }
        if result != SHARD_OK {
            break;
        }
    }
    unsafe { shard_close(h) };
    result
}

#[test]
fn null_arguments_and_no_op_frees() {
    let c = codec();
    let m = Mem::default();
    let cb = callbacks(&m);
    let mut h = null_mut();
    let mut n = 0usize;
    let mut buf = [0u8; 8];
    unsafe {
        shard_close(null_mut());
        shard_codec_free(null_mut());
        assert_eq!(
            shard_codec_from_zarr_json(null(), 5, &mut null_mut()),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(last_error(), "`json` must not be NULL");
        assert_eq!(
            shard_codec_from_zarr_json(c"{}".as_ptr(), 2, null_mut()),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(shard_codec_rank(null(), &mut n), SHARD_ERR_NULL_POINTER);
        assert_eq!(shard_codec_rank(c, null_mut()), SHARD_ERR_NULL_POINTER);
        assert_eq!(shard_open(null(), &cb, 0, &mut h), SHARD_ERR_NULL_POINTER);
        assert_eq!(shard_open(c, null(), 0, &mut h), SHARD_ERR_NULL_POINTER);
        assert_eq!(shard_open(c, &cb, 0, null_mut()), SHARD_ERR_NULL_POINTER);
        assert_eq!(
            shard_read_chunk(null(), [0u64, 0].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(
            shard_last_error(null_mut(), 3, &mut n),
            SHARD_ERR_NULL_POINTER
        );
        // `written_out` only reports a length: NULL is accepted, the message still copied.
        assert_eq!(shard_finalize(null(), null_mut()), SHARD_ERR_NULL_POINTER);
        let mut msg = [0 as c_char; 64];
        assert_eq!(
            shard_last_error(msg.as_mut_ptr(), msg.len(), null_mut()),
            SHARD_OK
        );
        assert_eq!(
            CStr::from_ptr(msg.as_ptr()).to_str().unwrap(),
            "`shard` must not be NULL"
        );
        assert_eq!(shard_last_error(null_mut(), 0, null_mut()), SHARD_OK);
        assert_eq!(
            m.destroyed.load(Ordering::SeqCst),
            0,
            "a failed open must not destroy userdata"
        );

        // (NULL, 0) is an empty buffer: a valid empty chunk argument, so the error is the size.
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_BUFFERED as u32, &mut h),
            SHARD_OK
        );
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, null(), 0),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(last_error(), "wrong buffer size: expected 8 bytes, got 0");
        assert_eq!(
            shard_write_chunk(h, null(), 2, buf.as_ptr(), 8),
            SHARD_ERR_NULL_POINTER
        );
        shard_close(h);
        assert_eq!(
            m.destroyed.load(Ordering::SeqCst),
            1,
            "close destroys userdata exactly once"
        );
        shard_codec_free(c);
    }
}

#[test]
fn bad_json_bad_arguments_and_statuses() {
    let mut c = null_mut();
    let bad = "{\"zarr_format\": 3,";
    assert_eq!(
        unsafe { shard_codec_from_zarr_json(bad.as_ptr().cast(), bad.len(), &mut c) },
        SHARD_ERR_INVALID_METADATA
    );
    assert!(last_error().starts_with("invalid metadata: zarr.json is not valid JSON"));
    assert!(c.is_null(), "out-params are written only on success");
    let not_utf8 = [0xffu8, 0xfe];
    assert_eq!(
        unsafe { shard_codec_from_zarr_json(not_utf8.as_ptr().cast(), 2, &mut c) },
        SHARD_ERR_INVALID_ARGUMENT
    );
    let unsharded = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
    assert_eq!(
        unsafe { shard_codec_from_zarr_json(unsharded.as_ptr().cast(), unsharded.len(), &mut c) },
        SHARD_ERR_INVALID_METADATA
    );
    let lzma = CONFIG.replace("zstd", "lzma");
    let (dt, fill) = ("uint16", "0");
    let st = unsafe {
        shard_codec_from_config(
            lzma.as_ptr().cast(),
            lzma.len(),
            dt.as_ptr().cast(),
            6,
            [4u64, 6].as_ptr(),
            2,
            fill.as_ptr().cast(),
            1,
            &mut c,
        )
    };
    assert_eq!(st, SHARD_ERR_UNSUPPORTED_CODEC);
    assert_eq!(last_error(), "unsupported codec `lzma`");

    let c = codec();
    let m = Mem::default();
    let cb = callbacks(&m);
    let mut h = null_mut();
    unsafe {
        assert_eq!(shard_open(c, &cb, 9, &mut h), SHARD_ERR_INVALID_ARGUMENT);
        assert_eq!(
            shard_open_ex(c, &cb, 1, 0x100, &mut h),
            SHARD_ERR_INVALID_ARGUMENT
        );
        let mut v0 = cb;
        v0.version = 0;
        assert_eq!(shard_open(c, &v0, 0, &mut h), SHARD_ERR_INVALID_ARGUMENT);
        let mut shape = [0u64; 3];
        assert_eq!(
            shard_codec_shard_shape(c, shape.as_mut_ptr(), 3),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(shard_codec_shard_shape(c, shape.as_mut_ptr(), 2), SHARD_OK);
        assert_eq!(&shape[..2], &[4, 6]);
        let mut key = [0 as c_char; 16];
        let mut n = 0;
        assert_eq!(
            shard_codec_shard_key(c, [0u64, 0].as_ptr(), 2, key.as_mut_ptr(), 16, &mut n),
            SHARD_ERR_INVALID_STATE
        );
        let mut nbytes = 0usize;
        assert_eq!(shard_codec_inner_chunk_nbytes(c, &mut nbytes), SHARD_OK);
        assert_eq!(nbytes, 8);
        assert_eq!(
            CStr::from_ptr(shard_status_str(SHARD_ERR_CHECKSUM as u32))
                .to_str()
                .unwrap(),
            "checksum mismatch"
        );
        assert_eq!(
            CStr::from_ptr(shard_status_str(999)).to_str().unwrap(),
            "unknown status"
        );
        assert_eq!(
            CStr::from_ptr(shard_version()).to_str().unwrap(),
            env!("CARGO_PKG_VERSION")
        );
        shard_codec_free(c);
    }
}

#[test]
fn zarr_json_codec_and_shard_keys() {
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [10, 7], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "."}}, "fill_value": "NaN",
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 3],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}"#;
    let mut c = null_mut();
    unsafe {
        assert_eq!(
            shard_codec_from_zarr_json(json.as_ptr().cast(), json.len(), &mut c),
            SHARD_OK
        );
        let mut grid = [0u64; 2];
        assert_eq!(shard_codec_grid_shape(c, grid.as_mut_ptr(), 2), SHARD_OK);
        assert_eq!(grid, [3, 2]);
        let mut n = 0usize;
        assert_eq!(
            shard_codec_shard_key(c, [2u64, 1].as_ptr(), 2, null_mut(), 0, &mut n),
            SHARD_OK
        );
        assert_eq!(n, 5);
        let mut key = [0 as c_char; 5];
        assert_eq!(
            shard_codec_shard_key(c, [2u64, 1].as_ptr(), 2, key.as_mut_ptr(), 5, &mut n),
            SHARD_ERR_BUFFER_SIZE
        );
        let mut key = [0 as c_char; 6];
        assert_eq!(
            shard_codec_shard_key(c, [2u64, 1].as_ptr(), 2, key.as_mut_ptr(), 6, &mut n),
            SHARD_OK
        );
        assert_eq!(CStr::from_ptr(key.as_ptr()).to_str().unwrap(), "c.2.1");
        assert_eq!(
            shard_codec_shard_key(c, [3u64, 0].as_ptr(), 2, key.as_mut_ptr(), 6, &mut n),
            SHARD_ERR_INVALID_ARGUMENT
        );
        let mut dt = [0 as c_char; 8];
        assert_eq!(
            shard_codec_data_type(c, dt.as_mut_ptr(), 7, &mut n),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(
            shard_codec_data_type(c, dt.as_mut_ptr(), 8, &mut n),
            SHARD_OK
        );
        assert_eq!(
            (CStr::from_ptr(dt.as_ptr()).to_str().unwrap(), n),
            ("float32", 7)
        );
        // An out-param that only reports a length may be NULL: the copy is made all the same.
        let mut dt = [0 as c_char; 8];
        assert_eq!(
            shard_codec_data_type(c, dt.as_mut_ptr(), 8, null_mut()),
            SHARD_OK
        );
        assert_eq!(CStr::from_ptr(dt.as_ptr()).to_str().unwrap(), "float32");
        let mut key = [0 as c_char; 6];
        assert_eq!(
            shard_codec_shard_key(c, [1u64, 1].as_ptr(), 2, key.as_mut_ptr(), 6, null_mut()),
            SHARD_OK
        );
        assert_eq!(CStr::from_ptr(key.as_ptr()).to_str().unwrap(), "c.1.1");
        let mut fill = [0u8; 4];
        assert_eq!(
            shard_codec_fill_value(c, fill.as_mut_ptr(), 3),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(shard_codec_fill_value(c, fill.as_mut_ptr(), 4), SHARD_OK);
        assert!(f32::from_ne_bytes(fill).is_nan());
        shard_codec_free(c);
    }
}

#[test]
fn round_trip_every_mode_and_exact_read_counts() {
    let c = codec();
    for mode in 1..=4u32 {
        let m = Mem::default();
        assert_eq!(
            write_all(c, &m, mode),
            SHARD_OK,
            "mode {mode}: {}",
            last_error()
        );
        assert_eq!(m.destroyed.load(Ordering::SeqCst), 1);
        assert_eq!(read_all(c, &m), SHARD_OK, "mode {mode}: {}", last_error());
    }
    // Cold: 2 reads (index suffix + chunk) of exactly index + chunk bytes; warm: 1.
    let m = Mem::default();
    assert_eq!(write_all(c, &m, 1), SHARD_OK);
    let cb = callbacks(&m);
    let mut h = null_mut();
    let mut info = shard_chunk_location {
        offset: 0,
        nbytes: 0,
        empty: true,
    };
    let mut buf = [0u8; 8];
    unsafe {
        assert_eq!(shard_open(c, &cb, 0, &mut h), SHARD_OK);
        assert_eq!(
            shard_chunk_info(h, [0u64, 1].as_ptr(), 2, &mut info),
            SHARD_OK
        );
        assert!(!info.empty);
        assert_eq!(
            shard_read_chunk(h, [0u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(m.reads.load(Ordering::SeqCst), 2);
        assert_eq!(
            m.read_bytes.load(Ordering::SeqCst) as u64,
            6 * 16 + 4 + info.nbytes
        );
        assert_eq!(
            shard_read_chunk(h, [1u64, 0].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(m.reads.load(Ordering::SeqCst), 3);
        // The fill chunk (1, 2) is empty: no read.
        assert_eq!(
            shard_chunk_info(h, [1u64, 2].as_ptr(), 2, &mut info),
            SHARD_OK
        );
        assert!(info.empty);
        assert_eq!(
            shard_read_chunk(h, [1u64, 2].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(m.reads.load(Ordering::SeqCst), 3);
        // Wrong sizes and coordinates.
        assert_eq!(
            shard_read_chunk(h, [0u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 7),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(
            shard_read_chunk(h, [0u64, 3].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_ERR_INVALID_ARGUMENT
        );
        assert_eq!(
            shard_read_chunk(h, [0u64].as_ptr(), 1, buf.as_mut_ptr(), 8),
            SHARD_ERR_INVALID_ARGUMENT
        );
        // Many chunks in one call.
        let coords = [0u64, 0, 1, 1, 1, 2];
        let mut many = [0u8; 24];
        assert_eq!(
            shard_read_chunks(h, coords.as_ptr(), 3, 2, many.as_mut_ptr(), 24),
            SHARD_OK
        );
        assert_eq!(&many[..8], &chunk_data(0, 0)[..]);
        assert_eq!(&many[8..16], &chunk_data(1, 1)[..]);
        assert_eq!(&many[16..], &chunk_data(1, 2)[..]);
        assert_eq!(
            shard_read_chunks(h, coords.as_ptr(), 3, 2, many.as_mut_ptr(), 23),
            SHARD_ERR_BUFFER_SIZE
        );
        // Raw copy into another shard, without recompressing.
        let mut n = 0usize;
        assert_eq!(
            shard_read_chunk_raw(h, [0u64, 2].as_ptr(), 2, null_mut(), 0, &mut n),
            SHARD_OK
        );
        let mut raw = vec![0u8; n];
        let mut small = vec![0u8; n - 1];
        assert_eq!(
            shard_read_chunk_raw(h, [0u64, 2].as_ptr(), 2, small.as_mut_ptr(), n - 1, &mut n),
            SHARD_ERR_BUFFER_SIZE
        );
        assert_eq!(
            shard_read_chunk_raw(
                h,
                [0u64, 2].as_ptr(),
                2,
                raw.as_mut_ptr(),
                raw.len(),
                &mut n
            ),
            SHARD_OK
        );
        assert_eq!(n, raw.len());
        // `nbytes_out` may be NULL: the same bytes are copied.
        let mut again = vec![0u8; raw.len()];
        assert_eq!(
            shard_read_chunk_raw(
                h,
                [0u64, 2].as_ptr(),
                2,
                again.as_mut_ptr(),
                again.len(),
                null_mut()
            ),
            SHARD_OK
        );
        assert_eq!(again, raw);
        // Writes on a read handle are refused.
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, buf.as_ptr(), 8),
            SHARD_ERR_INVALID_STATE
        );
        shard_close(h);

        let m2 = Mem::default();
        let cb2 = callbacks(&m2);
        assert_eq!(
            shard_open(c, &cb2, SHARD_MODE_WRITE_STREAMING as u32, &mut h),
            SHARD_OK
        );
        assert_eq!(
            shard_write_chunk_raw(h, [1u64, 1].as_ptr(), 2, raw.as_ptr(), raw.len()),
            SHARD_OK
        );
        assert_eq!(
            shard_read_chunk(h, [1u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_ERR_INVALID_STATE
        );
        let mut size = 0u64;
        assert_eq!(shard_finalize(h, &mut size), SHARD_OK);
        assert_eq!(size as usize, raw.len() + 100);
        assert_eq!(shard_finalize(h, &mut size), SHARD_ERR_INVALID_STATE);
        assert_eq!(
            last_error(),
            "invalid state: the shard writer was already finalized"
        );
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, buf.as_ptr(), 8),
            SHARD_ERR_INVALID_STATE
        );
        assert_eq!(
            shard_erase_chunk(h, [0u64, 0].as_ptr(), 2),
            SHARD_ERR_INVALID_STATE
        );
        shard_close(h);
        assert_eq!(shard_open(c, &cb2, 0, &mut h), SHARD_OK);
        assert_eq!(
            shard_read_chunk(h, [1u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(&buf[..], &chunk_data(0, 2)[..]);
        shard_close(h);
        shard_codec_free(c);
    }
}

#[test]
fn failing_callbacks_at_every_call() {
    let c = codec();
    for mode in 1..=4u32 {
        // Count the calls of a clean run, then fail each one in turn.
        let clean = Mem::default();
        if mode >= 3 {
            assert_eq!(write_all(c, &clean, 1), SHARD_OK);
            clean.calls.store(0, Ordering::SeqCst);
        }
        assert_eq!(write_all(c, &clean, mode), SHARD_OK);
        let total = clean.calls.load(Ordering::SeqCst);
        assert!(total >= 2, "mode {mode}: {total} calls");
        for n in 1..=total {
            let m = Mem {
                fail_at: n,
                ..Default::default()
            };
            if mode >= 3 {
                // Updates start from an existing shard.
                *m.data.lock().unwrap() = clean.data.lock().unwrap().clone();
            }
            let (st, opened) = write_all_opened(c, &m, mode);
            assert_eq!(st, SHARD_ERR_IO, "mode {mode}, failing call {n} of {total}");
            assert_eq!(shard_last_io_code(), FAIL);
            assert!(last_error().starts_with(&format!("I/O error (code {FAIL}): the host's ")));
            // A failed open leaves userdata with the host; a handle destroys it exactly once.
            assert_eq!(m.destroyed.load(Ordering::SeqCst), opened as usize);
            // Only the update modes read (the index) at open.
            assert_eq!(opened, mode < 3 || n > 1, "mode {mode}, call {n}");
        }
    }
    // Reads: fail each call of a full read.
    let data = Mem::default();
    assert_eq!(write_all(c, &data, 1), SHARD_OK);
    let clean = Mem {
        data: Mutex::new(data.data.lock().unwrap().clone()),
        ..Default::default()
    };
    assert_eq!(read_all(c, &clean), SHARD_OK);
    let total = clean.calls.load(Ordering::SeqCst);
    assert_eq!(total, 1 + 5, "index + 5 stored chunks");
    for n in 1..=total {
        let m = Mem {
            data: Mutex::new(data.data.lock().unwrap().clone()),
            fail_at: n,
            ..Default::default()
        };
        assert_eq!(read_all(c, &m), SHARD_ERR_IO, "failing read call {n}");
        assert_eq!(shard_last_io_code(), FAIL);
        // The object is untouched by a failed read.
        assert_eq!(*m.data.lock().unwrap(), *data.data.lock().unwrap());
    }
    unsafe { shard_codec_free(c) };
}

#[test]
fn corrupt_object_and_missing_callbacks() {
    let c = codec();
    let m = Mem::default();
    assert_eq!(write_all(c, &m, 1), SHARD_OK);
    let good = m.data.lock().unwrap().clone().unwrap();
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 5] ^= 1; // inside the index: its checksum fails
    *m.data.lock().unwrap() = Some(bad);
    assert_eq!(read_all(c, &m), SHARD_ERR_CHECKSUM);
    assert!(last_error().starts_with("checksum mismatch: shard index"));
    *m.data.lock().unwrap() = Some(good[..10].to_vec());
    assert_eq!(read_all(c, &m), SHARD_ERR_CORRUPT);

    // Without read_suffix and size an index at the end cannot be found: a clear status.
    let mut cb = callbacks(&m);
    cb.read_suffix = None;
    cb.size = None;
    let mut h = null_mut();
    assert_eq!(
        unsafe { shard_open(c, &cb, 0, &mut h) },
        SHARD_ERR_UNSUPPORTED
    );
    // Without write, a write handle opens but writing says why it cannot.
    let m2 = Mem::default();
    let mut cb = callbacks(&m2);
    cb.write = None;
    unsafe {
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_STREAMING as u32, &mut h),
            SHARD_OK
        );
        let d = chunk_data(0, 0);
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, d.as_ptr(), 8),
            SHARD_ERR_UNSUPPORTED
        );
        shard_close(h);
        shard_codec_free(c);
    }
}

/// A handle pointer handed to other threads, wrapped rather than cast through `usize` so that
/// Miri keeps its provenance (and can catch a use after `shard_close`).
#[derive(Clone, Copy)]
struct SharedHandle(*mut shard_handle);

// SAFETY: the tests that share a handle make only the calls whose thread-safety the C API
// documents (concurrent reads; writes that report `SHARD_ERR_BUSY`).
unsafe impl Send for SharedHandle {}
unsafe impl Sync for SharedHandle {}

impl SharedHandle {
    /// The pointer (a method, so that a closure captures the whole wrapper, not its field).
    fn get(self) -> *mut shard_handle {
        self.0
    }
}

#[test]
fn concurrent_reads_share_one_handle_and_concurrent_writes_are_refused() {
    let c = codec();
    let m = Mem::default();
    assert_eq!(write_all(c, &m, 1), SHARD_OK);
    let cb = callbacks(&m);
    let mut h = null_mut();
    assert_eq!(unsafe { shard_open(c, &cb, 0, &mut h) }, SHARD_OK);
    let shared = SharedHandle(h);
    std::thread::scope(|s| {
        for t in 0..8u64 {
            s.spawn(move || {
                for k in 0..200u64 {
                    let (i, j) = ((t + k) % 2, (t + 2 * k) % 3);
                    let mut buf = [0u8; 8];
                    let st = unsafe {
                        shard_read_chunk(shared.get(), [i, j].as_ptr(), 2, buf.as_mut_ptr(), 8)
                    };
                    assert_eq!(st, SHARD_OK);
                    assert_eq!(&buf[..], &chunk_data(i, j)[..]);
                }
            });
        }
    });
    unsafe { shard_close(h) };

    let m2 = Mem::default();
    let cb2 = callbacks(&m2);
    assert_eq!(
        unsafe { shard_open(c, &cb2, SHARD_MODE_WRITE_STREAMING as u32, &mut h) },
        SHARD_OK
    );
    let shared = SharedHandle(h);
    let busy = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                for k in 0..500u64 {
                    let d = chunk_data(k % 2, k % 3);
                    let st = unsafe {
                        shard_write_chunk(shared.get(), [k % 2, k % 3].as_ptr(), 2, d.as_ptr(), 8)
                    };
                    match st {
                        SHARD_OK => {}
                        SHARD_ERR_BUSY => {
                            busy.fetch_add(1, Ordering::SeqCst);
                        }
                        other => panic!("unexpected status {other:?}"),
                    }
                }
            });
        }
    });
    assert_eq!(unsafe { shard_finalize(h, null_mut()) }, SHARD_OK);
    unsafe { shard_close(h) };
    assert_eq!(
        read_all(c, &m2),
        SHARD_OK,
        "the shard is consistent whatever was refused"
    );
    unsafe { shard_codec_free(c) };
}

/// Counts vectored calls and the ranges they carried.
static VEC_CALLS: AtomicUsize = AtomicUsize::new(0);
static VEC_RANGES: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn cb_read_vectored(
    ud: *mut c_void,
    count: usize,
    offsets: *const u64,
    lens: *const usize,
    bufs: *const *mut u8,
    outs: *mut usize,
) -> i32 {
    VEC_CALLS.fetch_add(1, Ordering::SeqCst);
    VEC_RANGES.fetch_add(count, Ordering::SeqCst);
    for k in 0..count {
        let rc = unsafe { cb_read(ud, *offsets.add(k), *lens.add(k), *bufs.add(k), outs.add(k)) };
        if rc != 0 {
            return rc;
        }
    }
    0
}

#[test]
fn version_1_tables_vectored_reads_threads_clone_and_gap() {
    let c = codec();
    let m = Mem::default();
    assert_eq!(write_all(c, &m, 1), SHARD_OK);
    unsafe {
        // A table from a version-1 header: exactly the first nine fields, nothing after them.
        let full = callbacks(&m);
        let v1_size = std::mem::offset_of!(shard_io_callbacks, read_vectored);
        // Words, not bytes: a host's table is aligned like the struct (Miri found the test
        // passing a 1-aligned buffer).
        let mut words = vec![0u64; v1_size.div_ceil(8)];
        std::ptr::copy_nonoverlapping(
            &full as *const _ as *const u8,
            words.as_mut_ptr().cast::<u8>(),
            v1_size,
        );
        let mut v1 = words.into_boxed_slice();
        (v1.as_mut_ptr() as *mut u32).write(1);
        let mut h = null_mut();
        assert_eq!(
            shard_open(c, v1.as_ptr() as *const shard_io_callbacks, 0, &mut h),
            SHARD_OK
        );
        let mut buf = [0u8; 8];
        assert_eq!(
            shard_read_chunk(h, [0u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(&buf[..], &chunk_data(0, 1)[..]);
        shard_close(h);

        // Version 2 with read_vectored: a multi-run read_chunks is one host call.
        let mut cb = callbacks(&m);
        cb.read_vectored = Some(cb_read_vectored);
        assert_eq!(shard_open(c, &cb, 0, &mut h), SHARD_OK);
        assert_eq!(shard_set_coalesce_gap(h, 0), SHARD_OK);
        let coords = [0u64, 0, 1, 1];
        let mut two = [0u8; 16];
        let (calls, ranges) = (
            VEC_CALLS.load(Ordering::SeqCst),
            VEC_RANGES.load(Ordering::SeqCst),
        );
        assert_eq!(
            shard_read_chunks(h, coords.as_ptr(), 2, 2, two.as_mut_ptr(), 16),
            SHARD_OK
        );
        assert_eq!(&two[..8], &chunk_data(0, 0)[..]);
        assert_eq!(&two[8..], &chunk_data(1, 1)[..]);
        assert_eq!(VEC_CALLS.load(Ordering::SeqCst) - calls, 1);
        // Chunks (0,0) and (1,1) are not adjacent in C order: two ranges with no gap allowed.
        assert_eq!(VEC_RANGES.load(Ordering::SeqCst) - ranges, 2);
        shard_close(h);
        let mut w = null_mut();
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_BUFFERED as u32, &mut w),
            SHARD_OK
        );
        assert_eq!(shard_set_coalesce_gap(w, 0), SHARD_ERR_INVALID_STATE);
        shard_close(w);

        // Threads: settable, readable, and 1 still decodes.
        let mut n = 0usize;
        assert_eq!(shard_set_threads(1), SHARD_OK);
        assert_eq!(shard_get_threads(&mut n), SHARD_OK);
        assert_eq!(n, 1);
        assert_eq!(read_all(c, &m), SHARD_OK);
        assert_eq!(shard_set_threads(0), SHARD_OK);
        assert_eq!(shard_get_threads(null_mut()), SHARD_ERR_NULL_POINTER);
        // The memory limit: the core's setting, read and set (raised here, which cannot fail
        // the tests running alongside; its effect on a read: tests/ffi_contract.rs), and 0
        // restores the default (4 GiB unless the environment says otherwise).
        let mut limit = 0u64;
        let raised = (8 << 30) + 1;
        assert_eq!(shard_set_memory_limit(raised), SHARD_OK);
        assert_eq!(shard_get_memory_limit(&mut limit), SHARD_OK);
        assert_eq!((limit, zarrshard::memory_limit()), (raised, raised));
        assert_eq!(shard_set_memory_limit(0), SHARD_OK);
        assert_eq!(shard_get_memory_limit(&mut limit), SHARD_OK);
        if std::env::var_os("ZARRSHARD_MEMORY_LIMIT").is_none() {
            assert_eq!(limit, 4 << 30);
        }
        assert_eq!(shard_get_memory_limit(null_mut()), SHARD_ERR_NULL_POINTER);
        // Freeing the memory kept between calls: both outputs written, both may be NULL (what
        // it frees, counted exactly: tests/encode_memory.rs, tests/c/test_capi.c).
        let (mut bytes, mut contexts) = (u64::MAX, usize::MAX);
        assert_eq!(shard_release_memory(&mut bytes, &mut contexts), SHARD_OK);
        assert!(bytes < u64::MAX && contexts < usize::MAX);
        assert_eq!(shard_release_memory(null_mut(), null_mut()), SHARD_OK);
        // A count past the documented 1024 is refused before any thread starts, and the
        // setting stays as it was (1: no pool, which Miri could not run).
        assert_eq!(shard_set_threads(1), SHARD_OK);
        for too_many in [1025, usize::MAX] {
            assert_eq!(shard_set_threads(too_many), SHARD_ERR_INVALID_ARGUMENT);
            assert!(last_error().contains("at most 1024"), "{}", last_error());
            assert_eq!(shard_get_threads(&mut n), SHARD_OK);
            assert_eq!(n, 1);
        }
        assert_eq!(shard_set_threads(0), SHARD_OK);

        // A clone outlives the original.
        let mut c2 = null_mut();
        assert_eq!(shard_codec_clone(c, &mut c2), SHARD_OK);
        shard_codec_free(c);
        assert_eq!(read_all(c2, &m), SHARD_OK);
        shard_codec_free(c2);
    }
}
