//! The version-3 new-object callbacks of `shard_io_callbacks` (`create_new`, `write_new`,
//! `commit_new`, `discard_new`), called from Rust as a C host would: a whole shard goes to a
//! new object that replaces the old one only at commit, byte for byte what the in-place path
//! (`write` + `truncate`) writes; every failure before the commit leaves the old object as it
//! was and discards the new one; through a thread-safe store, one shard is written in pieces
//! while it encodes. Tests run one at a time (one sets the process-wide thread count).

use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use zarrshard::ffi::array::*;
use zarrshard::ffi::codec::*;
use zarrshard::ffi::io::*;
use zarrshard::ffi::shard::shard_mode::*;
use zarrshard::ffi::shard::*;
use zarrshard::ffi::status::shard_status::{self, *};
use zarrshard::ffi::*;

fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// One object of the host: what readers see (`committed`), the new objects being written
/// (by handle), counters, the writes' ranges, and faults to inject.
#[derive(Default)]
struct Obj {
    committed: Mutex<Option<Vec<u8>>>,
    pending: Mutex<HashMap<usize, Vec<u8>>>,
    next_handle: AtomicUsize,
    creates: AtomicUsize,
    commits: AtomicUsize,
    discards: AtomicUsize,
    in_place_writes: AtomicUsize,
    /// `(offset, len)` of every `write_new`, in call order.
    new_writes: Mutex<Vec<(u64, usize)>>,
    /// Set during a new-object call, to catch two at once.
    busy: AtomicBool,
    overlaps: AtomicUsize,
    /// A `commit_new` whose length was not the end of the writes.
    bad_commits: AtomicUsize,
    fail_create: i32,
    /// Fail this `write_new` call (1-based; 0: never).
    fail_write_new_at: usize,
    fail_commit: i32,
}

impl Obj {
    fn holding(bytes: Option<Vec<u8>>) -> Obj {
        Obj {
            committed: Mutex::new(bytes),
            ..Obj::default()
        }
    }

    fn committed(&self) -> Option<Vec<u8>> {
        self.committed.lock().unwrap().clone()
    }

    fn count(&self, c: &AtomicUsize) -> usize {
        c.load(Ordering::SeqCst)
    }

    /// A new-object call begins: note an overlap with another.
    fn enter(&self) {
        if self.busy.swap(true, Ordering::SeqCst) {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self) {
        self.busy.store(false, Ordering::SeqCst);
    }
}

unsafe fn obj<'a>(ud: *mut c_void) -> &'a Obj {
    unsafe { &*(ud as *const Obj) }
}

const CREATE_FAILED: i32 = 91;
const WRITE_NEW_FAILED: i32 = 92;
const COMMIT_FAILED: i32 = 93;

unsafe extern "C" fn cb_read(
    ud: *mut c_void,
    off: u64,
    len: usize,
    buf: *mut u8,
    got: *mut usize,
) -> i32 {
    let d = unsafe { obj(ud) }.committed.lock().unwrap();
    let Some(d) = d.as_ref() else {
        return SHARD_IO_NOT_FOUND;
    };
    let start = (off as usize).min(d.len());
    let n = len.min(d.len() - start);
    unsafe { std::ptr::copy_nonoverlapping(d[start..].as_ptr(), buf, n) };
    unsafe { *got = n };
    0
}

unsafe extern "C" fn cb_size(ud: *mut c_void, size: *mut u64) -> i32 {
    match unsafe { obj(ud) }.committed.lock().unwrap().as_ref() {
        Some(d) => {
            unsafe { *size = d.len() as u64 };
            0
        }
        None => SHARD_IO_NOT_FOUND,
    }
}

unsafe extern "C" fn cb_write(ud: *mut c_void, off: u64, buf: *const u8, len: usize) -> i32 {
    let o = unsafe { obj(ud) };
    o.in_place_writes.fetch_add(1, Ordering::SeqCst);
    let mut d = o.committed.lock().unwrap();
    let d = d.get_or_insert_with(Vec::new);
    let end = off as usize + len;
    if d.len() < end {
        d.resize(end, 0);
    }
    d[off as usize..end].copy_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
    0
}

unsafe extern "C" fn cb_truncate(ud: *mut c_void, len: u64) -> i32 {
    let o = unsafe { obj(ud) };
    o.committed
        .lock()
        .unwrap()
        .get_or_insert_with(Vec::new)
        .resize(len as usize, 0);
    0
}

unsafe extern "C" fn cb_remove(ud: *mut c_void) -> i32 {
    *unsafe { obj(ud) }.committed.lock().unwrap() = None;
    0
}

unsafe extern "C" fn cb_create_new(ud: *mut c_void, new_out: *mut *mut c_void) -> i32 {
    let o = unsafe { obj(ud) };
    o.enter();
    o.creates.fetch_add(1, Ordering::SeqCst);
    let rc = if o.fail_create != 0 {
        o.fail_create
    } else {
        let h = o.next_handle.fetch_add(1, Ordering::SeqCst) + 1;
        o.pending.lock().unwrap().insert(h, Vec::new());
        unsafe { *new_out = h as *mut c_void };
        0
    };
    o.leave();
    rc
}

unsafe extern "C" fn cb_write_new(
    ud: *mut c_void,
    new_object: *mut c_void,
    off: u64,
    buf: *const u8,
    len: usize,
) -> i32 {
    let o = unsafe { obj(ud) };
    o.enter();
    let n = {
        let mut w = o.new_writes.lock().unwrap();
        w.push((off, len));
        w.len()
    };
    let rc = if n == o.fail_write_new_at {
        WRITE_NEW_FAILED
    } else {
        let mut p = o.pending.lock().unwrap();
        let d = p
            .get_mut(&(new_object as usize))
            .expect("a live new object");
        let end = off as usize + len;
        if d.len() < end {
            d.resize(end, 0);
        }
        d[off as usize..end].copy_from_slice(unsafe { std::slice::from_raw_parts(buf, len) });
        0
    };
    o.leave();
    rc
}

unsafe extern "C" fn cb_commit_new(ud: *mut c_void, new_object: *mut c_void, len: u64) -> i32 {
    let o = unsafe { obj(ud) };
    o.enter();
    o.commits.fetch_add(1, Ordering::SeqCst);
    // Released either way, as the contract says.
    let data = o
        .pending
        .lock()
        .unwrap()
        .remove(&(new_object as usize))
        .expect("a live new object");
    let rc = if o.fail_commit != 0 {
        o.fail_commit
    } else if data.len() as u64 != len {
        o.bad_commits.fetch_add(1, Ordering::SeqCst);
        99
    } else {
        *o.committed.lock().unwrap() = Some(data);
        0
    };
    o.leave();
    rc
}

unsafe extern "C" fn cb_discard_new(ud: *mut c_void, new_object: *mut c_void) {
    let o = unsafe { obj(ud) };
    o.enter();
    o.discards.fetch_add(1, Ordering::SeqCst);
    let gone = o.pending.lock().unwrap().remove(&(new_object as usize));
    assert!(gone.is_some(), "discard_new of an object that is not live");
    o.leave();
}

/// The table of `o`: with the new-object callbacks when `new_objects`, at `version`.
fn table(o: &Obj, new_objects: bool, version: u32) -> shard_io_callbacks {
    shard_io_callbacks {
        version,
        userdata: o as *const Obj as *mut c_void,
        read: Some(cb_read),
        read_suffix: None,
        size: Some(cb_size),
        write: Some(cb_write),
        truncate: Some(cb_truncate),
        remove: Some(cb_remove),
        destroy: None,
        read_vectored: None,
        create_new: new_objects.then_some(cb_create_new as _),
        write_new: new_objects.then_some(cb_write_new as _),
        commit_new: new_objects.then_some(cb_commit_new as _),
        discard_new: new_objects.then_some(cb_discard_new as _),
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

/// uint16 shards of 4x6 in inner chunks of 2x2 (6 chunks), zstd 1, index `loc`.
fn codec(loc: &str) -> *mut shard_codec {
    let config = format!(
        r#"{{"chunk_shape": [2, 2],
            "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}, {{"name": "zstd", "configuration": {{"level": 1}}}}],
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

/// Inner chunk `i`'s 8 bytes in version `v` of the shard.
fn chunk(i: u64, v: u8) -> Vec<u8> {
    (0..8)
        .map(|k| v.wrapping_mul(31) ^ (i as u8 * 8 + k))
        .collect()
}

/// Write version `v` of every chunk with a buffered handle over `table`; finalize's status.
fn write_shard(c: *mut shard_codec, table: &shard_io_callbacks, v: u8) -> shard_status {
    let mut h = null_mut();
    let st = unsafe { shard_open(c, table, SHARD_MODE_WRITE_BUFFERED as u32, &mut h) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    for i in 0..6u64 {
        let data = chunk(i, v);
        let coords = [i / 3, i % 3];
        let st = unsafe { shard_write_chunk(h, coords.as_ptr(), 2, data.as_ptr(), data.len()) };
        assert_eq!(st, SHARD_OK, "{}", last_error());
    }
    let mut size = 0u64;
    let st = unsafe { shard_finalize(h, &mut size) };
    unsafe { shard_close(h) };
    st
}

#[test]
fn a_buffered_shard_is_a_new_object_committed_with_the_in_place_bytes() {
    let _s = serial();
    for loc in ["end", "start"] {
        let c = codec(loc);
        let (new, in_place) = (Obj::default(), Obj::default());
        assert_eq!(
            write_shard(c, &table(&new, true, SHARD_IO_VERSION), 1),
            SHARD_OK
        );
        assert_eq!(write_shard(c, &table(&in_place, false, 2), 1), SHARD_OK);
        // The same bytes as the in-place path (write + truncate).
        assert!(in_place.count(&in_place.in_place_writes) > 0);
        assert_eq!(new.committed(), in_place.committed(), "index at {loc}");
        assert_eq!(new.count(&new.creates), 1);
        assert_eq!(new.count(&new.commits), 1);
        assert_eq!(new.count(&new.discards), 0);
        assert_eq!(
            new.count(&new.in_place_writes),
            0,
            "nothing written in place"
        );
        // One piece: the whole object, at 0.
        let len = new.committed().unwrap().len();
        assert_eq!(*new.new_writes.lock().unwrap(), vec![(0, len)]);
        assert_eq!(new.count(&new.bad_commits), 0);
        assert!(new.pending.lock().unwrap().is_empty());

        // And it reads back chunk by chunk.
        let t = table(&new, true, SHARD_IO_VERSION);
        let mut h = null_mut();
        assert_eq!(
            unsafe { shard_open(c, &t, SHARD_MODE_READ as u32, &mut h) },
            SHARD_OK
        );
        for i in 0..6u64 {
            let mut buf = [0u8; 8];
            let coords = [i / 3, i % 3];
            let st = unsafe { shard_read_chunk(h, coords.as_ptr(), 2, buf.as_mut_ptr(), 8) };
            assert_eq!(st, SHARD_OK);
            assert_eq!(buf.to_vec(), chunk(i, 1));
        }
        unsafe { shard_close(h) };
        unsafe { shard_codec_free(c) };
    }
}

#[test]
fn every_failure_before_the_commit_keeps_the_old_object() {
    let _s = serial();
    let c = codec("end");
    let before = Obj::default();
    assert_eq!(write_shard(c, &table(&before, false, 2), 1), SHARD_OK);
    let old = before.committed().unwrap();
    // (fault, host code, creates, commits, discards)
    let faults: [(&str, Obj, i32, usize, usize, usize); 3] = [
        (
            "create_new",
            Obj {
                fail_create: CREATE_FAILED,
                ..Obj::holding(Some(old.clone()))
            },
            CREATE_FAILED,
            1,
            0,
            0,
        ),
        (
            "write_new",
            Obj {
                fail_write_new_at: 1,
                ..Obj::holding(Some(old.clone()))
            },
            WRITE_NEW_FAILED,
            1,
            0,
            1,
        ),
        (
            "commit_new",
            Obj {
                fail_commit: COMMIT_FAILED,
                ..Obj::holding(Some(old.clone()))
            },
            COMMIT_FAILED,
            1,
            1,
            0,
        ),
    ];
    for (what, o, code, creates, commits, discards) in faults {
        let st = write_shard(c, &table(&o, true, SHARD_IO_VERSION), 2);
        assert_eq!(st, SHARD_ERR_IO, "{what}");
        assert_eq!(shard_last_io_code(), code, "{what}");
        assert!(last_error().contains(what), "{what}: {}", last_error());
        assert_eq!(o.committed().as_ref(), Some(&old), "{what}: the old object");
        assert_eq!(o.count(&o.creates), creates, "{what}");
        assert_eq!(o.count(&o.commits), commits, "{what}");
        assert_eq!(o.count(&o.discards), discards, "{what}");
        assert_eq!(o.count(&o.in_place_writes), 0, "{what}");
        assert!(
            o.pending.lock().unwrap().is_empty(),
            "{what}: a new object left live"
        );
    }
    unsafe { shard_codec_free(c) };
}

#[test]
fn some_but_not_all_new_object_callbacks_are_refused() {
    let _s = serial();
    let c = codec("end");
    let o = Obj::default();
    let mut t = table(&o, true, SHARD_IO_VERSION);
    t.discard_new = None;
    let mut h = null_mut();
    let st = unsafe { shard_open(c, &t, SHARD_MODE_WRITE_BUFFERED as u32, &mut h) };
    assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT);
    assert!(h.is_null());
    assert!(
        last_error().contains("create_new, write_new, commit_new and discard_new go together"),
        "{}",
        last_error()
    );
    unsafe { shard_codec_free(c) };
}

#[test]
fn a_version_2_table_keeps_writing_in_place() {
    let _s = serial();
    let c = codec("end");
    // The fields are set, but a version-2 table does not have them: they are not the host's.
    let o = Obj::default();
    assert_eq!(write_shard(c, &table(&o, true, 2), 1), SHARD_OK);
    assert_eq!(o.count(&o.creates), 0);
    assert!(o.count(&o.in_place_writes) > 0);
    unsafe { shard_codec_free(c) };
}

// ---- through an array over a store --------------------------------------------------------

/// A store of [`Obj`]s by key, handing out tables with or without the new-object callbacks.
struct Store {
    objects: Mutex<HashMap<String, Arc<Obj>>>,
    new_objects: bool,
    /// The version the object tables say they are.
    version: u32,
    /// Faults for objects the store creates (`fail_write_new_at`).
    fail_write_new_at: usize,
}

impl Store {
    fn new(new_objects: bool) -> Store {
        Store {
            objects: Mutex::new(HashMap::new()),
            new_objects,
            version: SHARD_IO_VERSION,
            fail_write_new_at: 0,
        }
    }

    fn object(&self, key: &str) -> Arc<Obj> {
        let mut objects = self.objects.lock().unwrap();
        objects
            .entry(key.to_string())
            .or_insert_with(|| {
                Arc::new(Obj {
                    fail_write_new_at: self.fail_write_new_at,
                    ..Obj::default()
                })
            })
            .clone()
    }
}

unsafe extern "C" fn store_open(
    ud: *mut c_void,
    key: *const c_char,
    io_out: *mut shard_io_callbacks,
) -> i32 {
    let store = unsafe { &*(ud as *const Store) };
    let key = unsafe { CStr::from_ptr(key) }.to_str().unwrap();
    // The Arc stays in the store's map, so the object outlives the table.
    let o = store.object(key);
    unsafe { *io_out = table(&o, store.new_objects, store.version) };
    0
}

/// A 1024x1024 uint16 array in one shard of 64x64 inner chunks, stored uncompressed: a shard
/// of 2 MiB, written in several 256 KiB pieces.
const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [1024, 1024],
    "data_type": "uint16", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1024, 1024]}},
    "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
    "fill_value": 0,
    "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [64, 64],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}]}"#;

fn open_array(store: &Store, flags: u32) -> *mut shard_array {
    let t = shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags,
        userdata: store as *const Store as *mut c_void,
        open_object: Some(store_open),
        destroy: None,
        list: None,
    };
    let mut a = null_mut();
    let st = unsafe { shard_array_open(ARRAY.as_ptr().cast(), ARRAY.len(), &t, &mut a) };
    assert_eq!(st, SHARD_OK, "{}", last_error());
    a
}

/// The whole array, every element distinct per `v`.
fn image(v: u16) -> Vec<u8> {
    (0..1024u32 * 1024)
        .flat_map(|k| ((k.wrapping_mul(2654435761) >> 16) as u16 ^ v).to_le_bytes())
        .collect()
}

fn write_array(store: &Store, flags: u32, data: &[u8]) -> shard_status {
    let a = open_array(store, flags);
    let st = unsafe {
        shard_array_write_region(
            a,
            [0u64, 0].as_ptr(),
            [1024u64, 1024].as_ptr(),
            2,
            data.as_ptr(),
            data.len(),
        )
    };
    unsafe { shard_array_close(a) };
    st
}

#[test]
fn a_thread_safe_store_gets_one_shard_in_pieces_while_it_encodes() {
    let _s = serial();
    assert_eq!(shard_set_threads(2), SHARD_OK);
    let data = image(1);
    let (pieces, in_place) = (Store::new(true), Store::new(false));
    assert_eq!(
        write_array(&pieces, SHARD_STORE_THREAD_SAFE, &data),
        SHARD_OK,
        "{}",
        last_error()
    );
    assert_eq!(
        write_array(&in_place, SHARD_STORE_THREAD_SAFE, &data),
        SHARD_OK
    );
    let (o, reference) = (pieces.object("c/0/0"), in_place.object("c/0/0"));
    assert_eq!(
        o.committed(),
        reference.committed(),
        "the in-place path's bytes"
    );
    assert_eq!(o.count(&o.creates), 1);
    assert_eq!(o.count(&o.commits), 1);
    assert_eq!(o.count(&o.discards), 0);
    assert_eq!(o.count(&o.in_place_writes), 0);
    assert_eq!(o.count(&o.overlaps), 0, "new-object calls overlapped");
    assert_eq!(o.count(&o.bad_commits), 0);
    // Several writes, each starting where the last ended, together the whole object.
    let writes = o.new_writes.lock().unwrap().clone();
    // How many depends on the threads' timing (a thread writing while the other encodes the
    // rest leaves more for the end), but never one: that is the whole object at the end.
    assert!(writes.len() >= 2, "written in one piece: {writes:?}");
    let mut end = 0u64;
    for (off, len) in &writes {
        assert_eq!(*off, end, "{writes:?}");
        end += *len as u64;
    }
    assert_eq!(end as usize, o.committed().unwrap().len());

    // Read back through the array.
    let a = open_array(&pieces, SHARD_STORE_THREAD_SAFE);
    let mut back = vec![0u8; data.len()];
    let st = unsafe {
        shard_array_read_region(
            a,
            [0u64, 0].as_ptr(),
            [1024u64, 1024].as_ptr(),
            2,
            back.as_mut_ptr(),
            back.len(),
        )
    };
    assert_eq!(st, SHARD_OK);
    assert!(back == data);
    unsafe { shard_array_close(a) };
    assert_eq!(shard_set_threads(0), SHARD_OK);
}

#[test]
fn a_store_without_thread_safety_gets_the_shard_in_one_piece() {
    let _s = serial();
    assert_eq!(shard_set_threads(2), SHARD_OK);
    let store = Store::new(true);
    assert_eq!(write_array(&store, 0, &image(1)), SHARD_OK);
    let o = store.object("c/0/0");
    assert_eq!((o.count(&o.creates), o.count(&o.commits)), (1, 1));
    let len = o.committed().unwrap().len();
    assert_eq!(*o.new_writes.lock().unwrap(), vec![(0, len)]);
    assert_eq!(shard_set_threads(0), SHARD_OK);
}

#[test]
fn a_store_table_of_version_2_keeps_writing_in_place() {
    let _s = serial();
    // A store fills the library's table of this header's size: fields past the version it
    // says are not the host's, even when set.
    let store = Store {
        version: 2,
        ..Store::new(true)
    };
    assert_eq!(
        write_array(&store, SHARD_STORE_THREAD_SAFE, &image(1)),
        SHARD_OK
    );
    let o = store.object("c/0/0");
    assert_eq!(o.count(&o.creates), 0);
    assert!(o.count(&o.in_place_writes) > 0);
}

#[test]
fn a_failed_piece_keeps_the_old_shard() {
    let _s = serial();
    assert_eq!(shard_set_threads(2), SHARD_OK);
    let old = image(1);
    let mut store = Store::new(true);
    assert_eq!(write_array(&store, SHARD_STORE_THREAD_SAFE, &old), SHARD_OK);
    let old_bytes = store.object("c/0/0").committed().unwrap();
    // The first write is a piece written while the rest encode; the second may be another or
    // the last (there are at least two).
    for fail_at in [1, 2] {
        // A fresh object holding the old shard, failing its `fail_at`-th write.
        store.fail_write_new_at = fail_at;
        store.objects.lock().unwrap().clear();
        let o = store.object("c/0/0");
        *o.committed.lock().unwrap() = Some(old_bytes.clone());
        let st = write_array(&store, SHARD_STORE_THREAD_SAFE, &image(2));
        assert_eq!(st, SHARD_ERR_IO, "write {fail_at}");
        assert_eq!(shard_last_io_code(), WRITE_NEW_FAILED);
        // A host store's object: the message names its key (the host has no path of ours).
        assert_eq!(
            last_error(),
            format!(
                "I/O error (code {WRITE_NEW_FAILED}): the host's write_new callback failed for `c/0/0`"
            )
        );
        assert!(
            o.committed() == Some(old_bytes.clone()),
            "write {fail_at}: the old shard"
        );
        assert_eq!(o.count(&o.commits), 0);
        assert_eq!(o.count(&o.discards), 1, "write {fail_at}");
        assert!(o.pending.lock().unwrap().is_empty());
    }
    assert_eq!(shard_set_threads(0), SHARD_OK);
}
