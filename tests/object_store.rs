//! A host store shaped like an object store (S3): its object tables have `read`, `read_suffix`
//! (reporting the object's size, as a ranged GET's `Content-Range` does), `remove` and the
//! version-3 new-object callbacks, but no `write`, `truncate` or `size`; the store lists.
//! Every array call that writes (regions covering shards partly, appends, resizes, attributes,
//! compaction, which finds nothing left dead by partial updates) works over it, each object
//! written whole by one `create_new` … `commit_new`, and the values read back equal a model
//! kept in the test. A failed `commit_new` leaves the old
//! object byte for byte. The array handle's cache of shard indexes is driven through the C
//! calls (`shard_array_set_index_cache`, `shard_array_forget_cached_indexes`) and counted in
//! the host's read calls (GETs).

use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use zarrshard::ffi::array::*;
use zarrshard::ffi::io::*;
use zarrshard::ffi::node::*;
use zarrshard::ffi::status::shard_status::{self, *};
use zarrshard::ffi::*;

/// The host's objects, the new objects being written, and what it was asked.
#[derive(Default)]
struct Host {
    objects: Mutex<BTreeMap<String, Vec<u8>>>,
    pending: Mutex<HashMap<usize, (String, Vec<u8>)>>,
    next: AtomicUsize,
    /// `read` and `read_suffix` calls (GETs).
    gets: AtomicUsize,
    /// Commits per key.
    commits: Mutex<BTreeMap<String, usize>>,
    discards: AtomicUsize,
    removes: AtomicUsize,
    /// Fail every `commit_new` (releasing the new object, as the contract says).
    fail_commit: AtomicBool,
}

const COMMIT_FAILED: i32 = 77;

impl Host {
    fn commits(&self) -> BTreeMap<String, usize> {
        self.commits.lock().unwrap().clone()
    }

    fn object(&self, key: &str) -> Option<Vec<u8>> {
        self.objects.lock().unwrap().get(key).cloned()
    }

    fn gets(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }
}

/// One object table's `userdata`: the host and the key.
struct Obj {
    host: *const Host,
    key: String,
}

unsafe fn obj<'a>(ud: *mut c_void) -> (&'a Host, &'a str) {
    let o = unsafe { &*(ud as *const Obj) };
    (unsafe { &*o.host }, &o.key)
}

unsafe extern "C" fn cb_read(
    ud: *mut c_void,
    off: u64,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
) -> i32 {
    let (host, key) = unsafe { obj(ud) };
    host.gets.fetch_add(1, Ordering::SeqCst);
    let objects = host.objects.lock().unwrap();
    let Some(d) = objects.get(key) else {
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
    let (host, key) = unsafe { obj(ud) };
    host.gets.fetch_add(1, Ordering::SeqCst);
    let objects = host.objects.lock().unwrap();
    let Some(d) = objects.get(key) else {
        return SHARD_IO_NOT_FOUND;
    };
    let n = len.min(d.len());
    unsafe { std::ptr::copy_nonoverlapping(d[d.len() - n..].as_ptr(), buf, n) };
    unsafe { *got = n };
    unsafe { *size = d.len() as u64 };
    0
}

unsafe extern "C" fn cb_remove(ud: *mut c_void) -> i32 {
    let (host, key) = unsafe { obj(ud) };
    host.removes.fetch_add(1, Ordering::SeqCst);
    match host.objects.lock().unwrap().remove(key) {
        Some(_) => 0,
        None => SHARD_IO_NOT_FOUND,
    }
}

unsafe extern "C" fn cb_create_new(ud: *mut c_void, new_out: *mut *mut c_void) -> i32 {
    let (host, key) = unsafe { obj(ud) };
    let h = host.next.fetch_add(1, Ordering::SeqCst) + 1;
    let entry = (key.to_string(), Vec::new());
    host.pending.lock().unwrap().insert(h, entry);
    unsafe { *new_out = h as *mut c_void };
    0
}

unsafe extern "C" fn cb_write_new(
    ud: *mut c_void,
    new_object: *mut c_void,
    off: u64,
    buf: *const u8,
    len: usize,
) -> i32 {
    let (host, _) = unsafe { obj(ud) };
    let mut pending = host.pending.lock().unwrap();
    let d = &mut pending.get_mut(&(new_object as usize)).unwrap().1;
    let end = off as usize + len;
    if d.len() < end {
        d.resize(end, 0);
    }
    d[off as usize..end].copy_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    0
}

unsafe extern "C" fn cb_commit_new(ud: *mut c_void, new_object: *mut c_void, len: u64) -> i32 {
    let (host, key) = unsafe { obj(ud) };
    let (for_key, mut data) = host
        .pending
        .lock()
        .unwrap()
        .remove(&(new_object as usize))
        .expect("a live new object");
    assert_eq!(for_key, key);
    if host.fail_commit.load(Ordering::SeqCst) {
        return COMMIT_FAILED;
    }
    data.resize(len as usize, 0);
    host.objects.lock().unwrap().insert(key.to_string(), data);
    *host
        .commits
        .lock()
        .unwrap()
        .entry(key.to_string())
        .or_default() += 1;
    0
}

unsafe extern "C" fn cb_discard_new(ud: *mut c_void, new_object: *mut c_void) {
    let (host, _) = unsafe { obj(ud) };
    host.discards.fetch_add(1, Ordering::SeqCst);
    host.pending.lock().unwrap().remove(&(new_object as usize));
}

unsafe extern "C" fn cb_destroy(ud: *mut c_void) {
    drop(unsafe { Box::from_raw(ud as *mut Obj) });
}

unsafe extern "C" fn store_open(
    ud: *mut c_void,
    key: *const c_char,
    io_out: *mut shard_io_callbacks,
) -> i32 {
    let key = unsafe { CStr::from_ptr(key) }.to_str().unwrap().to_string();
    let o = Box::new(Obj {
        host: ud as *const Host,
        key,
    });
    // The library's zeroed table: only what an object store has is set.
    let t = unsafe { &mut *io_out };
    t.version = SHARD_IO_VERSION;
    t.userdata = Box::into_raw(o).cast();
    t.read = Some(cb_read);
    t.read_suffix = Some(cb_read_suffix);
    t.remove = Some(cb_remove);
    t.destroy = Some(cb_destroy);
    t.create_new = Some(cb_create_new);
    t.write_new = Some(cb_write_new);
    t.commit_new = Some(cb_commit_new);
    t.discard_new = Some(cb_discard_new);
    0
}

unsafe extern "C" fn store_list(
    ud: *mut c_void,
    prefix: *const c_char,
    on_key: shard_key_fn,
    state: *mut c_void,
) -> i32 {
    let host = unsafe { &*(ud as *const Host) };
    let prefix = unsafe { CStr::from_ptr(prefix) }.to_str().unwrap();
    let keys: Vec<String> = host.objects.lock().unwrap().keys().cloned().collect();
    for k in keys.iter().filter(|k| k.starts_with(prefix)) {
        unsafe { on_key.unwrap()(state, k.as_ptr().cast(), k.len()) };
    }
    0
}

fn table(host: &Host, flags: u32) -> shard_store_callbacks {
    shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags,
        userdata: host as *const Host as *mut c_void,
        open_object: Some(store_open),
        destroy: None,
        list: Some(store_list),
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

/// 20×24 uint16 in 8×8 shards of 4×4 chunks, zstd, index with crc32c.
const META: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [20, 24],
    "data_type": "uint16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                   {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]}"#;

fn create(host: &Host, flags: u32) -> *mut shard_array {
    let t = table(host, flags);
    let mut a = null_mut();
    let st =
        unsafe { shard_array_create(&t, null_mut(), META.as_ptr().cast(), META.len(), 0, &mut a) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    a
}

/// The array's values as the test expects them: a row-major grid of u16.
struct Model {
    shape: [usize; 2],
    v: Vec<u16>,
}

impl Model {
    fn new(rows: usize, cols: usize) -> Model {
        Model {
            shape: [rows, cols],
            v: vec![0; rows * cols],
        }
    }

    fn write(&mut self, start: [usize; 2], shape: [usize; 2], f: impl Fn(usize, usize) -> u16) {
        for r in 0..shape[0] {
            for c in 0..shape[1] {
                self.v[(start[0] + r) * self.shape[1] + start[1] + c] =
                    f(start[0] + r, start[1] + c);
            }
        }
    }

    /// Resize as Zarr does: values inside both shapes kept, the rest fill (0).
    fn resize(&mut self, rows: usize, cols: usize) {
        let mut next = Model::new(rows, cols);
        for r in 0..rows.min(self.shape[0]) {
            for c in 0..cols.min(self.shape[1]) {
                next.v[r * cols + c] = self.v[r * self.shape[1] + c];
            }
        }
        *self = next;
    }
}

/// The region's values as native bytes.
fn region(start: [usize; 2], shape: [usize; 2], f: impl Fn(usize, usize) -> u16) -> Vec<u8> {
    let mut out = Vec::new();
    for r in 0..shape[0] {
        for c in 0..shape[1] {
            out.extend_from_slice(&f(start[0] + r, start[1] + c).to_ne_bytes());
        }
    }
    out
}

fn write_region(
    a: *mut shard_array,
    start: [usize; 2],
    shape: [usize; 2],
    f: impl Fn(usize, usize) -> u16,
) -> shard_status {
    let data = region(start, shape, f);
    let (s, n) = (start.map(|x| x as u64), shape.map(|x| x as u64));
    unsafe { shard_array_write_region(a, s.as_ptr(), n.as_ptr(), 2, data.as_ptr(), data.len()) }
}

fn read_all(a: *mut shard_array, shape: [usize; 2]) -> Vec<u16> {
    let mut out = vec![0u8; shape[0] * shape[1] * 2];
    let n = shape.map(|x| x as u64);
    let st = unsafe {
        shard_array_read_region(
            a,
            [0u64, 0].as_ptr(),
            n.as_ptr(),
            2,
            out.as_mut_ptr(),
            out.len(),
        )
    };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    out.chunks(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

/// Commits per key since `before`.
fn delta(host: &Host, before: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    host.commits()
        .into_iter()
        .filter_map(|(k, n)| {
            let d = n - before.get(&k).copied().unwrap_or(0);
            (d > 0).then_some((k, d))
        })
        .collect()
}

fn one_each(keys: &[&str]) -> BTreeMap<String, usize> {
    keys.iter().map(|k| (k.to_string(), 1)).collect()
}

#[test]
fn every_array_write_works_over_an_object_store_without_write() {
    for flags in [0, SHARD_STORE_THREAD_SAFE] {
        let host = Host::default();
        let a = create(&host, flags);
        let mut model = Model::new(20, 24);
        assert_eq!(host.commits(), one_each(&["zarr.json"]));

        // A region inside shard 0/0, covering it partly: one whole new object.
        let f1 = |r: usize, c: usize| (r * 100 + c) as u16 + 1;
        let before = host.commits();
        assert_eq!(
            write_region(a, [2, 3], [4, 5], f1),
            SHARD_OK,
            "{}",
            last_error()
        );
        model.write([2, 3], [4, 5], f1);
        assert_eq!(delta(&host, &before), one_each(&["c/0/0"]));
        // Another, over shard 0/0 again (partly covering chunks already stored) and 1/0.
        let f2 = |r: usize, c: usize| (r * 7 + c * 13) as u16 + 1000;
        let before = host.commits();
        assert_eq!(
            write_region(a, [5, 1], [6, 6], f2),
            SHARD_OK,
            "{}",
            last_error()
        );
        model.write([5, 1], [6, 6], f2);
        assert_eq!(delta(&host, &before), one_each(&["c/0/0", "c/1/0"]));
        assert_eq!(read_all(a, [20, 24]), model.v);

        // Three rows appended (20 → 23): the last shard row is rewritten whole.
        let f3 = |r: usize, c: usize| (r * 31 + c) as u16 + 7;
        let rows = region([20, 0], [3, 24], f3);
        let block = [3u64, 24];
        let st = unsafe { shard_array_append(a, 0, block.as_ptr(), 2, rows.as_ptr(), rows.len()) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        assert_eq!(
            unsafe { shard_array_flush(a) },
            SHARD_OK,
            "{}",
            last_error()
        );
        model.resize(23, 24);
        model.write([20, 0], [3, 24], f3);
        assert_eq!(read_all(a, [23, 24]), model.v);

        // Smaller, then larger: shards cut back are rewritten whole, those outside removed.
        let before = host.commits();
        let removes = host.removes.load(Ordering::SeqCst);
        let st = unsafe { shard_array_resize(a, [10u64, 13].as_ptr(), 2) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        model.resize(10, 13);
        assert!(
            delta(&host, &before).values().all(|&n| n == 1),
            "{:?}",
            delta(&host, &before)
        );
        assert!(
            host.removes.load(Ordering::SeqCst) > removes,
            "shard row 2 removed"
        );
        assert!(host.object("c/2/0").is_none());
        let st = unsafe { shard_array_resize(a, [18u64, 30].as_ptr(), 2) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        model.resize(18, 30);
        assert_eq!(read_all(a, [18, 30]), model.v);

        // A region write over a shard cut back earlier. Each partial update is compacted
        // before it is written whole, so compaction then finds no dead bytes anywhere.
        let f4 = |r: usize, c: usize| (r + c) as u16 + 3;
        assert_eq!(
            write_region(a, [9, 9], [5, 6], f4),
            SHARD_OK,
            "{}",
            last_error()
        );
        model.write([9, 9], [5, 6], f4);
        let (mut shards, mut freed) = (0u64, 0u64);
        let st = unsafe { shard_array_compact(a, 0, &mut shards, &mut freed) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        assert_eq!(
            (shards, freed),
            (0, 0),
            "dead bytes left by partial updates"
        );
        assert_eq!(read_all(a, [18, 30]), model.v);

        // Attributes: zarr.json replaced whole.
        let attrs = r#"{"units": "m"}"#;
        let st = unsafe { shard_array_set_attributes(a, attrs.as_ptr().cast(), attrs.len()) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        let text = String::from_utf8(host.object("zarr.json").unwrap()).unwrap();
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(doc["attributes"]["units"], "m");
        assert_eq!(doc["shape"], serde_json::json!([18, 30]));
        unsafe { shard_array_close(a) };

        // A fresh handle reads the same values; nothing was left half written.
        let t = table(&host, flags);
        let mut b = null_mut();
        let st = unsafe { shard_array_open_path(&t, null_mut(), &mut b) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
        assert_eq!(read_all(b, [18, 30]), model.v);
        unsafe { shard_array_close(b) };
        assert!(host.pending.lock().unwrap().is_empty());
        assert_eq!(host.discards.load(Ordering::SeqCst), 0);
    }
}

#[test]
fn a_failed_commit_leaves_the_old_object_byte_for_byte() {
    let host = Host::default();
    let a = create(&host, 0);
    let f1 = |r: usize, c: usize| (r * 100 + c) as u16 + 1;
    assert_eq!(
        write_region(a, [0, 0], [8, 8], f1),
        SHARD_OK,
        "{}",
        last_error()
    );
    let old = host.object("c/0/0").unwrap();
    let meta = host.object("zarr.json").unwrap();
    host.fail_commit.store(true, Ordering::SeqCst);
    // A partial update, a whole shard, and the metadata: each fails at commit.
    let f2 = |_: usize, _: usize| 9u16;
    assert_eq!(write_region(a, [1, 1], [3, 3], f2), SHARD_ERR_IO);
    assert_eq!(shard_last_io_code(), COMMIT_FAILED);
    assert_eq!(host.object("c/0/0").unwrap(), old);
    assert_eq!(write_region(a, [0, 0], [8, 8], f2), SHARD_ERR_IO);
    assert_eq!(host.object("c/0/0").unwrap(), old);
    let attrs = r#"{"a": 1}"#;
    let st = unsafe { shard_array_set_attributes(a, attrs.as_ptr().cast(), attrs.len()) };
    assert_eq!(st, SHARD_ERR_IO);
    assert_eq!(host.object("zarr.json").unwrap(), meta);
    assert!(
        host.pending.lock().unwrap().is_empty(),
        "released at commit"
    );
    host.fail_commit.store(false, Ordering::SeqCst);
    // The handle reads the old values (its cached index was dropped by the failed writes).
    let mut want = Model::new(20, 24);
    want.write([0, 0], [8, 8], f1);
    assert_eq!(read_all(a, [20, 24]), want.v);
    unsafe { shard_array_close(a) };
}

/// Read the 4×4 inner chunk at (4, 4) and count the host's GETs.
fn read_chunk(host: &Host, a: *mut shard_array) -> (Vec<u8>, usize) {
    let before = host.gets();
    let mut out = vec![0u8; 32];
    let st = unsafe {
        shard_array_read_region(
            a,
            [4u64, 4].as_ptr(),
            [4u64, 4].as_ptr(),
            2,
            out.as_mut_ptr(),
            32,
        )
    };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    (out, host.gets() - before)
}

#[test]
fn the_index_cache_through_the_c_api() {
    let host = Host::default();
    let a = create(&host, 0);
    let f1 = |r: usize, c: usize| (r * 100 + c) as u16 + 1;
    assert_eq!(
        write_region(a, [0, 0], [20, 24], f1),
        SHARD_OK,
        "{}",
        last_error()
    );
    let want = region([4, 4], [4, 4], f1);
    assert_eq!(
        read_chunk(&host, a),
        (want.clone(), 2),
        "cold: index and chunk"
    );
    assert_eq!(read_chunk(&host, a), (want.clone(), 1), "warm");
    // Off: every read reads the index again.
    assert_eq!(unsafe { shard_array_set_index_cache(a, 0) }, SHARD_OK);
    assert_eq!(read_chunk(&host, a), (want.clone(), 2));
    assert_eq!(read_chunk(&host, a), (want.clone(), 2));
    assert_eq!(unsafe { shard_array_set_index_cache(a, 1 << 20) }, SHARD_OK);
    assert_eq!(read_chunk(&host, a), (want.clone(), 2));
    assert_eq!(read_chunk(&host, a), (want.clone(), 1));
    // Another handle replaces shard 0/0; after forget this one reads the new values.
    let b = create_open(&host);
    let f2 = |r: usize, c: usize| (r * 3 + c * 5) as u16 + 500;
    assert_eq!(
        write_region(b, [0, 0], [8, 8], f2),
        SHARD_OK,
        "{}",
        last_error()
    );
    assert_eq!(unsafe { shard_array_forget_cached_indexes(a) }, SHARD_OK);
    let want = region([4, 4], [4, 4], f2);
    assert_eq!(read_chunk(&host, a), (want.clone(), 2));
    assert_eq!(read_chunk(&host, a), (want, 1));
    assert_eq!(
        unsafe { shard_array_set_index_cache(null_mut(), 0) },
        SHARD_ERR_NULL_POINTER
    );
    assert_eq!(
        unsafe { shard_array_forget_cached_indexes(null_mut()) },
        SHARD_ERR_NULL_POINTER
    );
    unsafe { shard_array_close(a) };
    unsafe { shard_array_close(b) };
}

fn create_open(host: &Host) -> *mut shard_array {
    let t = table(host, 0);
    let mut b = null_mut();
    let st = unsafe { shard_array_open_path(&t, null_mut(), &mut b) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    b
}
