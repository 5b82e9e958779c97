//! The C API against its documented contract where hosts lie or are limited: sizes that
//! contradict the index, huge sizes and counts, tables without `size` or `truncate`, rank 0,
//! codecs after sharding, calls during thread teardown. Each test pins a finding fixed (see
//! docs/reliability.md, *Findings fixed*). Tests run one at a time (one changes the process-wide
//! memory limit).

use std::ffi::{c_char, c_void, CStr};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use zarrshard::ffi::array::*;
use zarrshard::ffi::codec::*;
use zarrshard::ffi::io::*;
use zarrshard::ffi::shard::shard_mode::*;
use zarrshard::ffi::shard::*;
use zarrshard::ffi::status::shard_status::*;
use zarrshard::ffi::*;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// An in-memory host object whose `size` / `read_suffix` can lie or keep quiet.
#[derive(Default)]
struct Mem {
    data: Mutex<Option<Vec<u8>>>,
    /// When set, `size` reports this instead of the real size.
    size_lie: Mutex<Option<u64>>,
    /// When true, `read_suffix` leaves `*object_size_out` untouched (allowed by the contract).
    suffix_hides_size: bool,
    writes: AtomicUsize,
}

unsafe fn mem<'a>(ud: *mut c_void) -> &'a Mem {
    unsafe { &*(ud as *const Mem) }
}

unsafe extern "C" fn cb_read(
    ud: *mut c_void,
    off: u64,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
) -> i32 {
    let m = unsafe { mem(ud) };
    let d = m.data.lock().unwrap();
    let Some(d) = d.as_ref() else {
        return SHARD_IO_NOT_FOUND;
    };
    let start = (off as usize).min(d.len());
    let n = len.min(d.len() - start);
    unsafe { std::ptr::copy_nonoverlapping(d[start..].as_ptr(), buf, n) };
    unsafe { *got = n };
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
    let d = m.data.lock().unwrap();
    let Some(d) = d.as_ref() else {
        return SHARD_IO_NOT_FOUND;
    };
    let n = len.min(d.len());
    unsafe { std::ptr::copy_nonoverlapping(d[d.len() - n..].as_ptr(), buf, n) };
    unsafe { *got = n };
    if !m.suffix_hides_size {
        unsafe { *size = d.len() as u64 };
    }
    0
}

unsafe extern "C" fn cb_size(ud: *mut c_void, size: *mut u64) -> i32 {
    let m = unsafe { mem(ud) };
    if let Some(s) = *m.size_lie.lock().unwrap() {
        unsafe { *size = s };
        return 0;
    }
    match m.data.lock().unwrap().as_ref() {
        Some(d) => {
            unsafe { *size = d.len() as u64 };
            0
        }
        None => SHARD_IO_NOT_FOUND,
    }
}

unsafe extern "C" fn cb_write(ud: *mut c_void, off: u64, buf: *const u8, len: usize) -> i32 {
    let m = unsafe { mem(ud) };
    m.writes.fetch_add(1, Ordering::SeqCst);
    if off > (1 << 30) {
        return 55;
    }
    let mut d = m.data.lock().unwrap();
    let d = d.get_or_insert_with(Vec::new);
    let end = off as usize + len;
    if d.len() < end {
        d.resize(end, 0);
    }
    d[off as usize..end].copy_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    0
}

unsafe extern "C" fn cb_truncate(ud: *mut c_void, len: u64) -> i32 {
    let m = unsafe { mem(ud) };
    m.data
        .lock()
        .unwrap()
        .get_or_insert_with(Vec::new)
        .resize(len as usize, 0);
    0
}

unsafe extern "C" fn cb_remove(ud: *mut c_void) -> i32 {
    *unsafe { mem(ud) }.data.lock().unwrap() = None;
    0
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
        destroy: None,
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
    let mut w = 0usize;
    unsafe { shard_last_error(buf.as_mut_ptr(), buf.len(), &mut w) };
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// uint16 shards of 4x6, inner chunks 2x2 stored uncompressed (8 bytes each), index
/// (6 entries + crc32c = 100 bytes) at `loc`.
/// A store's `open_object` callback.
type OpenObject = unsafe extern "C" fn(*mut c_void, *const c_char, *mut shard_io_callbacks) -> i32;

/// `shard_array_open` of `json` over a store whose objects `open` makes (given `userdata`);
/// panics unless it opens. The store table is copied by the library.
fn open_array(json: &str, userdata: *mut c_void, open: OpenObject) -> *mut shard_array {
    let store = shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags: 0,
        userdata,
        open_object: Some(open),
        destroy: None,
        list: None,
    };
    let mut a = null_mut();
    let st = unsafe { shard_array_open(json.as_ptr().cast(), json.len(), &store, &mut a) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    a
}

fn codec(loc: &str) -> *mut shard_codec {
    let config = format!(
        r#"{{"chunk_shape": [2, 2], "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
            "index_codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {{"name": "crc32c"}}],
            "index_location": "{loc}"}}"#
    );
    let (dt, fill) = ("uint16", "0");
    let mut c = null_mut();
    let st = unsafe {
        shard_codec_from_config(
            config.as_ptr().cast(),
            config.len(),
            dt.as_ptr().cast(),
            dt.len(),
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

/// After editing entries of the index at `at` in a [`codec`] shard (6 entries, 96 bytes), store
/// their crc32c after them again, so the index opens.
fn reseal_index(shard: &mut [u8], at: usize) {
    let crc = crc32c::crc32c(&shard[at..at + 96]);
    shard[at + 96..at + 100].copy_from_slice(&crc.to_le_bytes());
}

/// Inner chunk (i, j) of version `tag`: 4 distinct non-zero uint16 values.
fn chunk(i: u64, j: u64, tag: u16) -> Vec<u8> {
    (0..4u16)
        .flat_map(|k| (tag * 100 + (i * 3 + j) as u16 * 10 + k + 1).to_ne_bytes())
        .collect()
}

/// Write every chunk of a fresh shard (buffered, honest host): 6 * 8 + 100 = 148 bytes.
fn write_shard(c: *const shard_codec, m: &Mem) {
    let cb = callbacks(m);
    let mut h = null_mut();
    let mut size = 0u64;
    unsafe {
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_BUFFERED as u32, &mut h),
            SHARD_OK
        );
        for i in 0..2 {
            for j in 0..3 {
                let d = chunk(i, j, 1);
                assert_eq!(
                    shard_write_chunk(h, [i, j].as_ptr(), 2, d.as_ptr(), 8),
                    SHARD_OK
                );
            }
        }
        assert_eq!(shard_finalize(h, &mut size), SHARD_OK);
        shard_close(h);
    }
    assert_eq!(size, 148);
}

/// Every chunk of the shard in `m`, read through an honest table.
fn read_chunks(c: *const shard_codec, m: &Mem) -> Vec<Vec<u8>> {
    let honest = Mem {
        data: Mutex::new(m.data.lock().unwrap().clone()),
        ..Default::default()
    };
    let cb = callbacks(&honest);
    let mut h = null_mut();
    let mut out = Vec::new();
    unsafe {
        assert_eq!(shard_open(c, &cb, 0, &mut h), SHARD_OK, "{}", last_error());
        for i in 0..2 {
            for j in 0..3 {
                let mut buf = vec![0u8; 8];
                assert_eq!(
                    shard_read_chunk(h, [i, j].as_ptr(), 2, buf.as_mut_ptr(), 8),
                    SHARD_OK
                );
                out.push(buf);
            }
        }
        shard_close(h);
    }
    out
}

/// Open a write handle in `mode`, write inner chunk (0, 0) as `data`, finalize, close; each
/// step must succeed.
fn write_one(c: *const shard_codec, cb: &shard_io_callbacks, mode: shard_mode, data: &[u8]) {
    let mut h = null_mut();
    unsafe {
        assert_eq!(shard_open(c, cb, mode as u32, &mut h), SHARD_OK);
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, data.as_ptr(), 8),
            SHARD_OK
        );
        assert_eq!(shard_finalize(h, null_mut()), SHARD_OK);
        shard_close(h);
    }
}

fn version_1() -> Vec<Vec<u8>> {
    (0..2)
        .flat_map(|i| (0..3).map(move |j| chunk(i, j, 1)))
        .collect()
}

/// F1: an update whose host reports a size contradicting the index it just read (a stale
/// 100 bytes of the 148-byte object; index at the start, so the size comes from `size`) is
/// refused at open with SHARD_ERR_CORRUPT, nothing written. It used to append the new chunk
/// at byte 100, over chunk (0, 0), and return SHARD_OK.
#[test]
fn an_update_refuses_a_size_that_contradicts_the_index() {
    let _s = serial();
    for (loc, hides) in [("start", false), ("end", true)] {
        let c = codec(loc);
        let m = Mem {
            suffix_hides_size: hides,
            ..Default::default()
        };
        write_shard(c, &m);
        let before = m.data.lock().unwrap().clone();
        *m.size_lie.lock().unwrap() = Some(100);
        for mode in [
            SHARD_MODE_UPDATE_APPEND as u32,
            SHARD_MODE_UPDATE_IN_PLACE as u32,
        ] {
            let cb = callbacks(&m);
            let mut h = null_mut();
            let st = unsafe { shard_open(c, &cb, mode, &mut h) };
            assert_eq!(st, SHARD_ERR_CORRUPT, "{loc} {mode}: {}", last_error());
            assert!(h.is_null());
        }
        assert_eq!(
            m.writes.load(Ordering::SeqCst),
            1,
            "only the buffered write"
        );
        assert_eq!(*m.data.lock().unwrap(), before);
        assert_eq!(read_chunks(c, &m), version_1());
        unsafe { shard_codec_free(c) };
    }
}

/// F2: a size below the index size (in place, index at the end: size - index size) and a
/// size near 2^64 (the new index would end past 2^64) are errors, not overflow panics
/// (SHARD_ERR_PANIC in debug builds, wrapped offsets in release), and nothing is written.
#[test]
fn absurd_sizes_are_errors_not_overflows() {
    let _s = serial();
    let c = codec("end");
    let m = Mem {
        suffix_hides_size: true,
        ..Default::default()
    };
    write_shard(c, &m);
    let before = m.data.lock().unwrap().clone();
    *m.size_lie.lock().unwrap() = Some(0);
    let cb = callbacks(&m);
    let mut h = null_mut();
    let st = unsafe { shard_open(c, &cb, SHARD_MODE_UPDATE_IN_PLACE as u32, &mut h) };
    assert_eq!(st, SHARD_ERR_CORRUPT, "{}", last_error());

    *m.size_lie.lock().unwrap() = Some(u64::MAX - 10);
    let st = unsafe { shard_open(c, &cb, SHARD_MODE_UPDATE_APPEND as u32, &mut h) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    let mut size = 7u64;
    let st = unsafe { shard_finalize(h, &mut size) };
    let msg = last_error();
    unsafe { shard_close(h) };
    assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{msg}");
    assert!(msg.contains("2^64"), "{msg}");
    assert_eq!(size, 7, "size_out is written only on success");
    assert_eq!(*m.data.lock().unwrap(), before);
    unsafe { shard_codec_free(c) };
}

/// An object that never ends: every read is a full block of 7s.
struct Endless {
    requested: AtomicU64,
}

unsafe extern "C" fn endless_read(
    ud: *mut c_void,
    _off: u64,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
) -> i32 {
    let e = unsafe { &*(ud as *const Endless) };
    let total = e.requested.fetch_add(len as u64, Ordering::SeqCst) + len as u64;
    if total > (64 << 20) {
        return 99; // stop a broken library at 64 MiB instead of running out of memory
    }
    unsafe { std::ptr::write_bytes(buf, 7, len) };
    unsafe { *got = len };
    0
}

unsafe extern "C" fn endless_open(
    ud: *mut c_void,
    _key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    unsafe {
        (*io).version = SHARD_IO_VERSION;
        (*io).userdata = ud;
        (*io).read = Some(endless_read);
    }
    0
}

/// F3: a whole-object read through a table without `size` (an unsharded array, or a codec
/// after sharding) is held to the memory limit: refused with SHARD_ERR_INVALID_ARGUMENT after
/// asking for exactly limit + 1 bytes (the byte that shows the object is longer). It used to
/// append 1 MiB blocks until memory ran out.
#[test]
fn a_whole_object_read_without_size_is_held_to_the_memory_limit() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [16], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}]}"#;
    let e = Endless {
        requested: AtomicU64::new(0),
    };
    let a = open_array(json, &e as *const Endless as *mut c_void, endless_open);
    let limit = 3u64 << 19; // 1.5 MiB: one full block, then half a block, then one byte
    assert_eq!(shard_set_memory_limit(limit), SHARD_OK);
    let mut out = [0u8; 16];
    let st = unsafe {
        shard_array_read_region(
            a,
            [0u64].as_ptr(),
            [16u64].as_ptr(),
            1,
            out.as_mut_ptr(),
            16,
        )
    };
    let msg = last_error();
    assert_eq!(shard_set_memory_limit(0), SHARD_OK);
    unsafe { shard_array_close(a) };
    assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{msg}");
    assert!(msg.contains("memory limit"), "{msg}");
    assert_eq!(e.requested.load(Ordering::SeqCst), limit + 1);
}

unsafe extern "C" fn mem_open_no_truncate(
    ud: *mut c_void,
    _key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    let m = unsafe { mem(ud) };
    let mut t = callbacks(m);
    t.truncate = None;
    unsafe { *io = t };
    0
}

/// F4: a buffered finalize over a longer object through a table without `truncate` (but
/// with `size`) refuses with SHARD_ERR_UNSUPPORTED before writing: the old shard is intact.
/// Likewise a whole-shard write of `shard_array_write_region`. Both used to overwrite the old
/// shard first and refuse afterwards.
#[test]
fn a_shorter_rewrite_without_truncate_refuses_before_writing() {
    let _s = serial();
    let c = codec("end");
    let m = Mem::default();
    write_shard(c, &m);
    let before = m.data.lock().unwrap().clone();
    let mut cb = callbacks(&m);
    cb.truncate = None;
    let mut h = null_mut();
    let writes = m.writes.load(Ordering::SeqCst);
    let st = unsafe {
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_BUFFERED as u32, &mut h),
            SHARD_OK
        );
        let d = chunk(0, 0, 3);
        assert_eq!(
            shard_write_chunk(h, [0u64, 0].as_ptr(), 2, d.as_ptr(), 8),
            SHARD_OK
        );
        let st = shard_finalize(h, null_mut());
        shard_close(h);
        st
    };
    assert_eq!(st, SHARD_ERR_UNSUPPORTED, "{}", last_error());
    assert_eq!(m.writes.load(Ordering::SeqCst), writes, "a write was made");
    assert_eq!(*m.data.lock().unwrap(), before);
    unsafe { shard_codec_free(c) };

    // The same shard as the one shard of an array, written whole by write_region with only
    // chunk (0, 0) non-zero: 8 + 100 bytes over 148.
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}"#;
    let a = open_array(json, &m as *const Mem as *mut c_void, mem_open_no_truncate);
    let mut data = [0u8; 48];
    data[0] = 1;
    unsafe {
        let st = shard_array_write_region(
            a,
            [0u64, 0].as_ptr(),
            [4u64, 6].as_ptr(),
            2,
            data.as_ptr(),
            48,
        );
        assert_eq!(st, SHARD_ERR_UNSUPPORTED, "{}", last_error());
        shard_array_close(a);
    }
    assert_eq!(m.writes.load(Ordering::SeqCst), writes, "a write was made");
    assert_eq!(*m.data.lock().unwrap(), before);
}

unsafe extern "C" fn nothing_open(
    _ud: *mut c_void,
    _key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    unsafe {
        (*io).version = SHARD_IO_VERSION;
        (*io).read = Some(missing_read);
    }
    0
}

unsafe extern "C" fn missing_read(
    _: *mut c_void,
    _: u64,
    _: usize,
    _: *mut u8,
    _: *mut usize,
) -> i32 {
    SHARD_IO_NOT_FOUND
}

/// F5: a region whose byte size overflows 64 bits is SHARD_ERR_INVALID_ARGUMENT, as
/// documented (it was SHARD_ERR_INVALID_METADATA).
#[test]
fn a_region_whose_size_overflows_is_an_invalid_argument() {
    let _s = serial();
    let big = 1u64 << 33;
    let json = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{big}, {big}], "data_type": "uint8",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [1048576, 1048576]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "sharding_indexed", "configuration": {{"chunk_shape": [1024, 1024],
            "codecs": [{{"name": "bytes"}}], "index_codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}]}}}}]}}"#
    );
    let a = open_array(&json, null_mut(), nothing_open);
    unsafe {
        let st =
            shard_array_read_region(a, [0u64, 0].as_ptr(), [big, big].as_ptr(), 2, null_mut(), 0);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{}", last_error());
        let st = shard_array_write_region(a, [0u64, 0].as_ptr(), [big, big].as_ptr(), 2, null(), 0);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{}", last_error());
        shard_array_close(a);
    }
}

static OPENS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

unsafe extern "C" fn counted_open(
    ud: *mut c_void,
    key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    OPENS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    unsafe { nothing_open(ud, key, io) }
}

/// The documented order (bindings rely on it to check a region before allocating its
/// buffer): rank and bounds, then the buffer length, all before any callback runs; so
/// `(NULL, 0)` for a valid non-empty region is `SHARD_ERR_BUFFER_SIZE` without a host call.
#[test]
fn region_arguments_are_checked_before_any_host_call() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [10, 12], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 7,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "start"}}]}"#;
    let opens = || OPENS.load(std::sync::atomic::Ordering::SeqCst);
    let a = open_array(json, null_mut(), counted_open);
    unsafe {
        let before = opens();
        let read = |start: [u64; 2], shape: [u64; 2], buf: &mut [u8]| {
            let ptr = if buf.is_empty() {
                null_mut()
            } else {
                buf.as_mut_ptr()
            };
            shard_array_read_region(a, start.as_ptr(), shape.as_ptr(), 2, ptr, buf.len())
        };
        assert_eq!(read([2, 3], [5, 6], &mut []), SHARD_ERR_BUFFER_SIZE);
        assert_eq!(read([8, 0], [3, 1], &mut []), SHARD_ERR_INVALID_ARGUMENT); // past row 10
        assert_eq!(
            read([8, 0], [3, 1], &mut [0; 6]),
            SHARD_ERR_INVALID_ARGUMENT
        );
        let st = shard_array_read_region(a, [0u64].as_ptr(), [1u64].as_ptr(), 1, null_mut(), 0);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT); // rank 1 of a rank-2 array
        let st = shard_array_write_region(a, [2u64, 3].as_ptr(), [5u64, 6].as_ptr(), 2, null(), 0);
        assert_eq!(st, SHARD_ERR_BUFFER_SIZE);
        assert_eq!(opens(), before, "a refused call reached the store");
        // The right buffer reads (the counter sees the store): fill value 7 everywhere.
        let mut buf = [0u8; 60];
        assert_eq!(read([2, 3], [5, 6], &mut buf), SHARD_OK, "{}", last_error());
        assert!(opens() > before);
        assert!(buf.chunks(2).all(|v| u16::from_ne_bytes([v[0], v[1]]) == 7));
        shard_array_close(a);
    }
}

/// F6: rank 0. `(NULL, 0)` is an empty buffer: `shard_read_chunks` reads the one chunk with
/// no coordinates (as `shard_read_chunk` does), and the shape getters take `(NULL, 0)`.
#[test]
fn rank_0_takes_null_coordinates_and_shapes() {
    let _s = serial();
    let config = r#"{"chunk_shape": [], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}"#;
    let (dt, fill) = ("uint16", "5");
    let mut c = null_mut();
    unsafe {
        assert_eq!(
            shard_codec_from_config(
                config.as_ptr().cast(),
                config.len(),
                dt.as_ptr().cast(),
                dt.len(),
                null(),
                0,
                fill.as_ptr().cast(),
                fill.len(),
                &mut c
            ),
            SHARD_OK,
            "{}",
            last_error()
        );
        let m = Mem::default();
        let cb = callbacks(&m);
        // Write the one chunk (value 9), then read it every way.
        let mut h = null_mut();
        assert_eq!(
            shard_open(c, &cb, SHARD_MODE_WRITE_BUFFERED as u32, &mut h),
            SHARD_OK
        );
        assert_eq!(
            shard_write_chunk(h, null(), 0, 9u16.to_ne_bytes().as_ptr(), 2),
            SHARD_OK
        );
        assert_eq!(shard_finalize(h, null_mut()), SHARD_OK);
        shard_close(h);
        assert_eq!(shard_open(c, &cb, 0, &mut h), SHARD_OK);
        let mut one = [0u8; 2];
        assert_eq!(
            shard_read_chunk(h, null(), 0, one.as_mut_ptr(), 2),
            SHARD_OK
        );
        assert_eq!(u16::from_ne_bytes(one), 9);
        let mut many = [0u8; 6];
        assert_eq!(
            shard_read_chunks(h, null(), 3, 0, many.as_mut_ptr(), 6),
            SHARD_OK,
            "{}",
            last_error()
        );
        assert_eq!(many, [9u16, 9, 9].map(u16::to_ne_bytes).concat()[..]);
        assert_eq!(shard_read_chunks(h, null(), 0, 0, null_mut(), 0), SHARD_OK);
        assert_eq!(
            shard_read_chunks(h, null(), 2, 0, many.as_mut_ptr(), 6),
            SHARD_ERR_BUFFER_SIZE
        );
        shard_close(h);
        assert_eq!(shard_codec_shard_shape(c, null_mut(), 0), SHARD_OK);
        assert_eq!(shard_codec_inner_chunk_shape(c, null_mut(), 0), SHARD_OK);
        assert_eq!(shard_codec_chunks_per_shard(c, null_mut(), 0), SHARD_OK);
        // NULL with a length is still an error; a wrong rank still a size error.
        assert_eq!(
            shard_codec_shard_shape(c, null_mut(), 1),
            SHARD_ERR_NULL_POINTER
        );
        let mut one_dim = [0u64; 1];
        assert_eq!(
            shard_codec_shard_shape(c, one_dim.as_mut_ptr(), 1),
            SHARD_ERR_BUFFER_SIZE
        );
        shard_codec_free(c);
    }
}

unsafe extern "C" fn mem_open(
    ud: *mut c_void,
    _key: *const c_char,
    io: *mut shard_io_callbacks,
) -> i32 {
    unsafe { *io = callbacks(mem(ud)) };
    0
}

/// F7: `shard_array_codec` refuses an array with a bytes→bytes codec after sharding with
/// SHARD_ERR_UNSUPPORTED_CODEC, as `shard_codec_from_zarr_json` does (it handed out a codec
/// whose shards lacked the outer crc32c, unreadable as part of the array).
#[test]
fn array_codec_refuses_codecs_after_sharding() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}},
            {"name": "crc32c"}]}"#;
    let mut direct = null_mut();
    let st = unsafe { shard_codec_from_zarr_json(json.as_ptr().cast(), json.len(), &mut direct) };
    assert_eq!(st, SHARD_ERR_UNSUPPORTED_CODEC);
    let m = Mem::default();
    let a = open_array(json, &m as *const Mem as *mut c_void, mem_open);
    let mut c = null_mut();
    unsafe {
        assert_eq!(shard_array_codec(a, &mut c), SHARD_ERR_UNSUPPORTED_CODEC);
        assert!(c.is_null());
        assert!(last_error().contains("crc32c after sharding_indexed"));
        // The array itself still reads and writes (whole shards).
        let data: Vec<u8> = (0..24u16).flat_map(|v| (v + 1).to_ne_bytes()).collect();
        let (start, shape) = ([0u64, 0], [4u64, 6]);
        assert_eq!(
            shard_array_write_region(a, start.as_ptr(), shape.as_ptr(), 2, data.as_ptr(), 48),
            SHARD_OK
        );
        let mut back = vec![0u8; 48];
        assert_eq!(
            shard_array_read_region(a, start.as_ptr(), shape.as_ptr(), 2, back.as_mut_ptr(), 48),
            SHARD_OK
        );
        assert_eq!(back, data);
        shard_array_close(a);
    }
}

static mut KEY: libc::pthread_key_t = 0;

unsafe extern "C" fn key_destructor(_v: *mut c_void) {
    let bad = "{";
    let mut c = null_mut();
    let st = unsafe { shard_codec_from_zarr_json(bad.as_ptr().cast(), bad.len(), &mut c) };
    eprintln!("from a TLS destructor: {st:?}");
}

/// F8: a failing call made during thread teardown (from a pthread key destructor, after the
/// thread's Rust thread-locals were destroyed) returns its status; recording the message used
/// to panic outside `catch_unwind` and abort the process.
#[test]
fn a_failing_call_during_thread_teardown_returns_its_status() {
    if std::env::var("ZARRSHARD_TEARDOWN_CHILD").is_ok() {
        unsafe {
            assert_eq!(
                libc::pthread_key_create(&raw mut KEY, Some(key_destructor)),
                0
            );
        }
        std::thread::spawn(|| {
            // A failure first, so the thread's last-error slot exists (and is destroyed).
            let bad = "{";
            let mut c = null_mut();
            assert_eq!(
                unsafe { shard_codec_from_zarr_json(bad.as_ptr().cast(), bad.len(), &mut c) },
                SHARD_ERR_INVALID_METADATA
            );
            unsafe { libc::pthread_setspecific(KEY, std::ptr::dangling::<c_void>()) };
        })
        .join()
        .unwrap();
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_failing_call_during_thread_teardown_returns_its_status",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ZARRSHARD_TEARDOWN_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the process died: {:?}\n{stderr}",
        out.status
    );
    assert!(
        stderr.contains("from a TLS destructor: SHARD_ERR_INVALID_METADATA"),
        "{stderr}"
    );
}

/// F9: an in-place update does not rewrite a slot another index entry shares (validation
/// accepts overlapping entries): chunk (0, 1), which pointed at chunk (0, 0)'s bytes, keeps
/// them after (0, 0) is rewritten.
#[test]
fn in_place_update_never_rewrites_a_shared_slot() {
    let _s = serial();
    let c = codec("end");
    let m = Mem::default();
    write_shard(c, &m);
    {
        let mut d = m.data.lock().unwrap();
        let d = d.as_mut().unwrap();
        let idx = d.len() - 100; // the index at the end
        let e0: Vec<u8> = d[idx..idx + 16].to_vec();
        d[idx + 16..idx + 32].copy_from_slice(&e0);
        reseal_index(d, idx);
    }
    let mut expected = version_1();
    expected[1] = chunk(0, 0, 1);
    assert_eq!(read_chunks(c, &m), expected);
    write_one(
        c,
        &callbacks(&m),
        SHARD_MODE_UPDATE_IN_PLACE,
        &chunk(0, 0, 3),
    );
    expected[0] = chunk(0, 0, 3);
    assert_eq!(read_chunks(c, &m), expected);
    unsafe { shard_codec_free(c) };
}

/// F10: counts whose byte size passes `isize::MAX` are SHARD_ERR_INVALID_ARGUMENT before any
/// slice is made (`count * rank * 8` used to reach `slice::from_raw_parts` unchecked: an
/// abort in debug builds, undefined behaviour in release).
#[test]
fn counts_past_the_address_space_are_invalid_arguments() {
    let _s = serial();
    let c = codec("end");
    let m = Mem::default();
    write_shard(c, &m);
    let cb = callbacks(&m);
    let mut h = null_mut();
    let coords = [0u64; 4];
    let mut buf = [0u8; 8];
    unsafe {
        assert_eq!(shard_open(c, &cb, 0, &mut h), SHARD_OK);
        // 2^62 values: 2^65 bytes (the multiplication by 8 overflows).
        let st = shard_read_chunks(h, coords.as_ptr(), 1usize << 61, 2, buf.as_mut_ptr(), 8);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{}", last_error());
        // 2^60 values: 2^63 bytes, one past isize::MAX.
        let st = shard_read_chunks(h, coords.as_ptr(), 1usize << 59, 2, buf.as_mut_ptr(), 8);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{}", last_error());
        assert!(last_error().contains("address space"));
        // An output buffer longer than isize::MAX.
        let st = shard_read_chunk(h, coords.as_ptr(), 2, buf.as_mut_ptr(), usize::MAX);
        assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT, "{}", last_error());
        // Sane arguments still work.
        assert_eq!(
            shard_read_chunks(h, coords.as_ptr(), 2, 2, [0u8; 16].as_mut_ptr(), 16),
            SHARD_OK
        );
        shard_close(h);
        shard_codec_free(c);
    }
}

/// An append-only update given up before its new index is written is cut back to the
/// previous shard (the host has `truncate`), so the shard reads exactly as before, byte for
/// byte: when a `write` fails part way (half the bytes written, then an error; the status is
/// the write's), and when the host closes the handle without `shard_finalize`.
#[test]
fn a_failed_or_abandoned_append_is_cut_back_to_the_previous_shard() {
    let _s = serial();
    /// Writes half of the second write's bytes, then fails with 77.
    unsafe extern "C" fn torn_write(ud: *mut c_void, off: u64, buf: *const u8, len: usize) -> i32 {
        if unsafe { mem(ud) }.writes.load(Ordering::SeqCst) == 2 {
            unsafe { cb_write(ud, off, buf, len / 2) };
            return 77;
        }
        unsafe { cb_write(ud, off, buf, len) }
    }
    for (loc, torn) in [
        ("end", true),
        ("start", true),
        ("end", false),
        ("start", false),
    ] {
        let c = codec(loc);
        let m = Mem::default();
        write_shard(c, &m); // write 1
        let before = m.data.lock().unwrap().clone();
        let mut cb = callbacks(&m);
        if torn {
            cb.write = Some(torn_write);
        }
        let mut h = null_mut();
        unsafe {
            assert_eq!(
                shard_open(c, &cb, SHARD_MODE_UPDATE_APPEND as u32, &mut h),
                SHARD_OK
            );
            let d = chunk(1, 1, 4);
            // Write 2: appended.
            assert_eq!(
                shard_write_chunk(h, [1u64, 1].as_ptr(), 2, d.as_ptr(), 8),
                SHARD_OK
            );
            assert_ne!(*m.data.lock().unwrap(), before, "{loc}: appended");
            if torn {
                // Write 3: torn.
                let st = shard_write_chunk(h, [0u64, 2].as_ptr(), 2, d.as_ptr(), 8);
                assert_eq!(st, SHARD_ERR_IO);
                assert_eq!(shard_last_io_code(), 77);
                assert_eq!(shard_finalize(h, null_mut()), SHARD_ERR_INVALID_STATE);
            }
            // Otherwise the host gives up: no finalize.
            shard_close(h);
        }
        assert_eq!(*m.data.lock().unwrap(), before, "{loc}, torn: {torn}");
        assert_eq!(read_chunks(c, &m), version_1());
        unsafe { shard_codec_free(c) };
    }
}

#[test]
fn a_buffered_write_with_truncate_never_asks_for_the_size() {
    // A host that can truncate needs no size check before a whole-object write: a store
    // whose reads (size included) fail must still take a whole shard (the C++ and Java
    // bindings test the same through a region write).
    let _s = serial();
    unsafe extern "C" fn failing_size(_: *mut c_void, _: *mut u64) -> i32 {
        66
    }
    let c = codec("end");
    let m = Mem::default();
    write_shard(c, &m); // a longer object than the one written below
    let mut cb = callbacks(&m);
    cb.size = Some(failing_size);
    write_one(c, &cb, SHARD_MODE_WRITE_BUFFERED, &chunk(0, 0, 9));
    // One chunk of 8 bytes and the index (6 entries × 16 bytes + crc32c).
    assert_eq!(
        m.data.lock().unwrap().as_ref().unwrap().len(),
        8 + 6 * 16 + 4
    );
    // The other five chunks are empty now: the fill value, 0.
    let mut want = vec![vec![0u8; 8]; 6];
    want[0] = chunk(0, 0, 9);
    assert_eq!(read_chunks(c, &m), want);
    unsafe { shard_codec_free(c) };
}

/// `shard_read_chunk_raw`'s size query is held to the memory limit, as its read is: with the
/// index at the start and no `size` callback nothing bounds an index entry, and one that names
/// 2^62 bytes used to be reported as the size for the host to allocate.
#[test]
fn the_raw_size_query_is_held_to_the_memory_limit() {
    let _s = serial();
    let c = codec("start");
    let m = Mem::default();
    write_shard(c, &m);
    // Entry 1 (chunk [0, 1]) names 2^62 bytes; the index's crc32c recomputed so it opens.
    {
        let mut d = m.data.lock().unwrap();
        let d = d.as_mut().unwrap();
        d[16 + 8..16 + 16].copy_from_slice(&(1u64 << 62).to_le_bytes());
        reseal_index(d, 0);
    }
    let cb = shard_io_callbacks {
        size: None,
        read_suffix: None,
        ..callbacks(&m)
    };
    let mut h = null_mut();
    assert_eq!(
        unsafe { shard_open(c, &cb, 0, &mut h) },
        SHARD_OK,
        "{}",
        last_error()
    );
    let raw = |coords: [u64; 2], buf: &mut [u8], n: &mut usize| unsafe {
        let p = if buf.is_empty() {
            null_mut()
        } else {
            buf.as_mut_ptr()
        };
        shard_read_chunk_raw(h, coords.as_ptr(), 2, p, buf.len(), n)
    };
    let mut n = usize::MAX;
    assert_eq!(raw([0, 1], &mut [], &mut n), SHARD_ERR_INVALID_ARGUMENT);
    assert_eq!(n, usize::MAX, "nothing stored on failure");
    assert_eq!(
        last_error(),
        format!(
            "memory limit: the encoded bytes of inner chunk [0, 1] needs {} bytes, more than the limit of {} (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)",
            1u64 << 62,
            4u64 << 30
        )
    );
    // The read itself: the same refusal, not a buffer-size error that invites a bigger buffer.
    assert_eq!(raw([0, 1], &mut [0; 8], &mut n), SHARD_ERR_INVALID_ARGUMENT);
    // A sound entry: 8 bytes, held to the limit like any other.
    assert_eq!(raw([0, 0], &mut [], &mut n), SHARD_OK);
    assert_eq!(n, 8);
    let mut buf = [0u8; 8];
    assert_eq!(raw([0, 0], &mut buf, &mut n), SHARD_OK);
    assert_eq!((n, buf.to_vec()), (8, chunk(0, 0, 1)));
    assert_eq!(shard_set_memory_limit(7), SHARD_OK);
    let refused = (raw([0, 0], &mut [], &mut n), raw([0, 0], &mut buf, &mut n));
    assert_eq!(shard_set_memory_limit(0), SHARD_OK);
    assert_eq!(
        refused,
        (SHARD_ERR_INVALID_ARGUMENT, SHARD_ERR_INVALID_ARGUMENT)
    );
    unsafe {
        shard_close(h);
        shard_codec_free(c);
    }
}

/// `shard_array_refs_parquet` checks its name and record size before building the reference
/// set, which reads every shard's index through the array's store: a bad argument is refused
/// without a store call (it used to cost those reads, and a failing store hid the argument
/// error behind `SHARD_ERR_IO`).
#[test]
fn parquet_refs_arguments_are_checked_before_any_shard_is_read() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
            "codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]}"#;
    let opens = || OPENS.load(std::sync::atomic::Ordering::SeqCst);
    let a = open_array(json, null_mut(), counted_open);
    // Output objects would go to the same counted store; nothing may be opened at all.
    let out = shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags: 0,
        userdata: null_mut(),
        open_object: Some(counted_open),
        destroy: None,
        list: None,
    };
    let refs = |name: &str, record_size: u64| unsafe {
        shard_array_refs_parquet(
            a,
            "u".as_ptr().cast(),
            1,
            name.as_ptr().cast(),
            name.len(),
            record_size,
            &out,
        )
    };
    let before = opens();
    for (name, record_size, message) in [
        ("a", 0, "invalid argument: record size must be at least 1"),
        ("", 10, "invalid argument: invalid array name ``"),
        (
            ".zgroup",
            10,
            "invalid argument: invalid array name `.zgroup`",
        ),
        (
            "a/../b",
            10,
            "invalid argument: invalid array name `a/../b`",
        ),
    ] {
        assert_eq!(refs(name, record_size), SHARD_ERR_INVALID_ARGUMENT);
        assert_eq!(last_error(), message);
    }
    assert_eq!(opens(), before, "a refused call reached a store");
    unsafe { shard_array_close(a) };
}

/// `shard_array_stored_shards` tells an array whose store holds no shard (mistyped path,
/// never written: it reads as all fill value) from one that holds some.
#[test]
fn stored_shards_tells_an_empty_store_from_a_written_array() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}"#;
    let m = Mem::default();
    let a = open_array(json, &m as *const Mem as *mut c_void, mem_open);
    unsafe {
        let mut n = 99u64;
        assert_eq!(
            shard_array_stored_shards(a, &mut n),
            SHARD_OK,
            "{}",
            last_error()
        );
        assert_eq!(n, 0);
        let data: Vec<u8> = (0..24u16).flat_map(|v| (v + 1).to_ne_bytes()).collect();
        let (start, shape) = ([0u64, 0], [4u64, 6]);
        assert_eq!(
            shard_array_write_region(a, start.as_ptr(), shape.as_ptr(), 2, data.as_ptr(), 48),
            SHARD_OK
        );
        assert_eq!(shard_array_stored_shards(a, &mut n), SHARD_OK);
        assert_eq!(n, 1);
        let mut k = 7u64;
        assert_eq!(
            shard_array_stored_shards(null(), &mut k),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(
            shard_array_stored_shards(a, null_mut()),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(k, 7, "written only on success");
        shard_array_close(a);
        // Objects without `size` (and a store without `list`) cannot be counted.
        let a = open_array(json, null_mut(), nothing_open);
        assert_eq!(shard_array_stored_shards(a, &mut k), SHARD_ERR_UNSUPPORTED);
        assert_eq!(k, 7);
        shard_array_close(a);
    }
}

/// An error about a shard's bytes names the shard's key in `shard_last_error`, and an object
/// shorter than its index is reported as truncated, with the sizes.
#[test]
fn shard_errors_name_the_key_and_truncation_is_said() {
    let _s = serial();
    // One shard of 2×3 inner chunks: an index of 6 entries of 16 bytes and a crc32c, 100 bytes.
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 6]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}"#;
    let m = Mem::default();
    *m.data.lock().unwrap() = Some(vec![1, 2, 3]);
    let a = open_array(json, &m as *const Mem as *mut c_void, mem_open);
    unsafe {
        let mut back = vec![0u8; 48];
        let (start, shape) = ([0u64, 0], [4u64, 6]);
        assert_eq!(
            shard_array_read_region(a, start.as_ptr(), shape.as_ptr(), 2, back.as_mut_ptr(), 48),
            SHARD_ERR_CORRUPT
        );
        assert_eq!(
            last_error(),
            "c/0/0: corrupt shard: object is 3 bytes, index needs 100: torn write? try `zarrshard repair`"
        );
        // A region covering the shard partly reads it back to merge: the same error, the same
        // key, and the object is left as it was.
        let one = 7u16.to_ne_bytes();
        assert_eq!(
            shard_array_write_region(a, start.as_ptr(), [1u64, 1].as_ptr(), 2, one.as_ptr(), 2),
            SHARD_ERR_CORRUPT
        );
        assert_eq!(
            last_error(),
            "c/0/0: corrupt shard: object is 3 bytes, index needs 100: torn write? try `zarrshard repair`"
        );
        assert_eq!(*m.data.lock().unwrap(), Some(vec![1, 2, 3]));
        shard_array_close(a);
    }
}

/// `shard_array_verify_summary` tells what it checked: shards stored, inner chunks decoded,
/// how many of those no checksum covers, and the problems. One shard of 2×3 inner chunks of
/// 2×2 uint16 (8 bytes each).
#[test]
fn verify_summary_counts_what_was_checked() {
    let _s = serial();
    let json = |inner: &str| {
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4, 6]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
        "codecs": [{{"name": "sharding_indexed", "configuration": {{"chunk_shape": [2, 2],
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}{inner}],
            "index_codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {{"name": "crc32c"}}]}}}}]}}"#
        )
    };
    let summary = |a: *mut shard_array| {
        let mut s = shard_verify_summary {
            stored_shards: 9,
            chunks_decoded: 9,
            chunks_unverifiable: 9,
            problems: 9,
        };
        let st = unsafe { shard_array_verify_summary(a, None, null_mut(), &mut s) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        (
            s.stored_shards,
            s.chunks_decoded,
            s.chunks_unverifiable,
            s.problems,
        )
    };
    let data: Vec<u8> = (0..24u16).flat_map(|v| (v + 1).to_ne_bytes()).collect();
    let (start, all) = ([0u64, 0], [4u64, 6]);
    unsafe {
        // Nothing stored: nothing checked, which is not "clean".
        let m = Mem::default();
        let a = open_array(&json(""), &m as *const Mem as *mut c_void, mem_open);
        assert_eq!(summary(a), (0, 0, 0, 0));
        // All 6 chunks written, none with a checksum: decoded, none verified.
        let st = shard_array_write_region(a, start.as_ptr(), all.as_ptr(), 2, data.as_ptr(), 48);
        assert_eq!(st, SHARD_OK, "{}", last_error());
        assert_eq!(summary(a), (1, 6, 6, 0));
        let mut s = shard_verify_summary {
            stored_shards: 7,
            chunks_decoded: 7,
            chunks_unverifiable: 7,
            problems: 7,
        };
        assert_eq!(
            shard_array_verify_summary(null(), None, null_mut(), &mut s),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(
            shard_array_verify_summary(a, None, null_mut(), null_mut()),
            SHARD_ERR_NULL_POINTER
        );
        assert_eq!(s.problems, 7, "written only on success");
        shard_array_close(a);
        // With crc32c, only chunk [0, 0] written (the others are fill and not stored): one
        // chunk decoded and verified. Its 8 bytes and checksum come first (index at the end).
        let m = Mem::default();
        let a = open_array(
            &json(r#", {"name": "crc32c"}"#),
            &m as *const Mem as *mut c_void,
            mem_open,
        );
        let two = [2u64, 2];
        let st = shard_array_write_region(a, start.as_ptr(), two.as_ptr(), 2, data.as_ptr(), 8);
        assert_eq!(st, SHARD_OK, "{}", last_error());
        assert_eq!(
            m.data.lock().unwrap().as_ref().map(Vec::len),
            Some(8 + 4 + 100)
        );
        assert_eq!(summary(a), (1, 1, 0, 0));
        // A flipped data byte: the chunk no longer decodes, one problem.
        m.data.lock().unwrap().as_mut().unwrap()[0] ^= 1;
        assert_eq!(summary(a), (1, 0, 0, 1));
        shard_array_close(a);
    }
}

/// A region read whose bookkeeping for one shard (2^17 one-element inner chunks, 48 bytes each)
/// passes the memory limit is refused with `SHARD_ERR_INVALID_ARGUMENT` and the memory-limit
/// message before any object is opened — not an abort; within the limit it reads fill.
#[test]
fn region_bookkeeping_past_the_memory_limit_is_a_status() {
    let _s = serial();
    let json = r#"{"zarr_format": 3, "node_type": "array", "shape": [131072], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [131072]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 3,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "start"}}]}"#;
    let a = open_array(json, null_mut(), counted_open);
    let mut buf = vec![0u8; 131072];
    let read = |buf: &mut [u8]| unsafe {
        shard_array_read_region(
            a,
            [0u64].as_ptr(),
            [131072u64].as_ptr(),
            1,
            buf.as_mut_ptr(),
            buf.len(),
        )
    };
    let before = OPENS.load(Ordering::SeqCst);
    assert_eq!(zarrshard::ffi::shard_set_memory_limit(1 << 20), SHARD_OK);
    let st = read(&mut buf);
    let message = last_error();
    assert_eq!(zarrshard::ffi::shard_set_memory_limit(0), SHARD_OK);
    assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT);
    assert!(message.contains("memory limit: the bookkeeping of the 131072 inner chunks the region touches in shard [0] needs 6291456 bytes, more than the limit of 1048576"), "{message}");
    assert_eq!(OPENS.load(Ordering::SeqCst), before, "the store was asked");
    assert_eq!(read(&mut buf), SHARD_OK, "{}", last_error());
    assert!(buf.iter().all(|&b| b == 3));
    unsafe { shard_array_close(a) };
}
