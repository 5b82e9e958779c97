//! `Array::verify` and `Array::repair` fetch and check shards several at once and decode each
//! shard's chunks in parallel, yet do what one thread does: the same problems in C order of
//! the chunk grid and of each shard's chunks, progress counting every grid position, repairs
//! written in grid order up to the first shard the store fails on.

use serde_json::json;
use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;
use zarrshard::*;

/// 32×32 uint16 in 2×2 shards of 16×16, 2×2 inner chunks (64 per shard) with a crc32c each,
/// index at the end with a crc32c: every chunk 8 bytes + 4, the index 64 × 16 + 4 bytes.
fn array() -> (MemoryStore, ArrayMetadata) {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [32, 32],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [bytes, {"name": "crc32c"}],
            "index_codecs": [bytes, {"name": "crc32c"}], "index_location": "end"}}]});
    let meta = ArrayMetadata::from_json(&m).unwrap();
    let store = MemoryStore::new();
    let array = Array::create(store.clone(), meta.clone()).unwrap();
    let data: Vec<u8> = (0..1024u16).flat_map(|i| (i + 1).to_le_bytes()).collect();
    array.write_region(&[0, 0], &[32, 32], &data).unwrap();
    (store, meta)
}

const INDEX_LEN: usize = 64 * 16 + 4;

/// The thread setting is process-wide and the tests of this file change it: they run one at a
/// time, or a test expecting two fetches at once could find one thread set by another.
static THREAD_SETTING: Mutex<()> = Mutex::new(());

fn threads_to_myself() -> std::sync::MutexGuard<'static, ()> {
    THREAD_SETTING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Flip one byte of inner chunk `i` of the shard object at `key` (its crc32c then fails).
fn damage_chunk(store: &MemoryStore, key: &str, i: usize) {
    let mut object = store.get(key).unwrap().unwrap();
    let entry = object.len() - INDEX_LEN + i * 16;
    let offset = u64::from_le_bytes(object[entry..entry + 8].try_into().unwrap()) as usize;
    object[offset] ^= 0x55;
    store.set(key, &object).unwrap();
}

/// The damaged array: c/0/0 clean; c/0/1's index checksum broken; c/1/0 with chunks 5, 40
/// and 63 broken (in different parallel items of 16 chunks); c/1/1 missing.
fn damaged() -> (MemoryStore, ArrayMetadata) {
    let (store, meta) = array();
    let mut object = store.get("c/0/1").unwrap().unwrap();
    *object.last_mut().unwrap() ^= 1;
    store.set("c/0/1", &object).unwrap();
    for i in [63, 5, 40] {
        damage_chunk(&store, "c/1/0", i);
    }
    store.delete("c/1/1").unwrap();
    (store, meta)
}

/// A store over `inner` that records which threads fetched objects and how many fetches ran
/// at once. With `wait`, a fetch waits (up to 3 s) until a second one has started, so one that
/// never overlaps with another shows as a maximum of 1 rather than as a hang.
#[derive(Clone)]
struct Watched {
    inner: MemoryStore,
    caller_only: bool,
    wait: bool,
    /// A key whose fetch fails (I/O error code 5).
    fail: Option<&'static str>,
    seen: Arc<Seen>,
}

#[derive(Default)]
struct Seen {
    /// Fetches running now, and the most at once.
    running: Mutex<(usize, usize)>,
    started: Condvar,
    threads: Mutex<HashSet<ThreadId>>,
}

impl Watched {
    fn new(inner: MemoryStore, caller_only: bool, wait: bool) -> Self {
        Watched {
            inner,
            caller_only,
            wait,
            fail: None,
            seen: Arc::default(),
        }
    }

    fn most_at_once(&self) -> usize {
        self.seen.running.lock().unwrap().1
    }
}

impl Store for Watched {
    fn shard_io(&self, key: &str) -> zarrshard::Result<Box<dyn ShardIo>> {
        self.inner.shard_io(key)
    }
    fn get(&self, key: &str) -> zarrshard::Result<Option<Vec<u8>>> {
        let seen = &self.seen;
        seen.threads
            .lock()
            .unwrap()
            .insert(std::thread::current().id());
        let mut running = seen.running.lock().unwrap();
        running.0 += 1;
        running.1 = running.1.max(running.0);
        seen.started.notify_all();
        if self.wait {
            running = seen
                .started
                .wait_timeout_while(running, Duration::from_secs(3), |r| r.1 < 2)
                .unwrap()
                .0;
        }
        running.0 -= 1;
        drop(running);
        if self.fail == Some(key) {
            return Err(Error::Io {
                code: 5,
                message: format!("no {key}"),
            });
        }
        self.inner.get(key)
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrshard::Result<()> {
        self.inner.set(key, value)
    }
    fn io_on_caller_thread(&self) -> bool {
        self.caller_only
    }
}

/// Each problem as (key, message), and the grid positions the progress calls counted.
fn verified(store: Watched, meta: &ArrayMetadata) -> (Vec<(String, String)>, u64) {
    let array = Array::from_metadata(store, meta.clone()).unwrap();
    let calls = Mutex::new(0);
    let problems = array
        .verify_with_progress(&|n| *calls.lock().unwrap() += n)
        .unwrap();
    let listed = problems
        .into_iter()
        .map(|p| (p.key, p.error.to_string()))
        .collect();
    (listed, calls.into_inner().unwrap())
}

#[test]
fn problems_are_those_of_one_thread_in_grid_and_chunk_order() {
    let _setting = threads_to_myself();
    let (store, meta) = damaged();
    set_threads(2).unwrap();
    let (pooled, calls) = verified(Watched::new(store.clone(), false, false), &meta);
    let (here, here_calls) = verified(Watched::new(store.clone(), true, false), &meta);
    set_threads(1).unwrap();
    let (one, _) = verified(Watched::new(store.clone(), false, false), &meta);
    set_threads(2).unwrap();

    assert_eq!(
        (calls, here_calls),
        (4, 4),
        "progress counts every grid position"
    );
    let keys: Vec<&str> = pooled.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["c/0/1", "c/1/0", "c/1/0", "c/1/0"], "{pooled:#?}");
    assert!(pooled[0].1.contains("checksum"), "{}", pooled[0].1);
    for (problem, chunk) in pooled[1..]
        .iter()
        .zip(["chunk [0, 5]", "chunk [5, 0]", "chunk [7, 7]"])
    {
        // Chunks 5, 40, 63 of a 8×8 grid of chunks in C order.
        assert!(problem.1.contains(chunk), "{} lacks {chunk}", problem.1);
    }
    assert_eq!(pooled, here);
    assert_eq!(pooled, one);
}

#[test]
fn shards_are_fetched_several_at_once_unless_the_store_asks_otherwise() {
    let _setting = threads_to_myself();
    let (store, meta) = array();
    set_threads(2).unwrap();
    let me = std::thread::current().id();

    let pooled = Watched::new(store.clone(), false, true);
    let (problems, _) = verified(pooled.clone(), &meta);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(pooled.most_at_once(), 2, "two fetches at once");

    let here = Watched::new(store, true, false);
    let (problems, _) = verified(here.clone(), &meta);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(here.most_at_once(), 1);
    assert_eq!(*here.seen.threads.lock().unwrap(), HashSet::from([me]));
}

/// Repairs, as (key, outcome), with the given threads and store.
fn repaired(store: Watched, meta: &ArrayMetadata) -> zarrshard::Result<Vec<(String, ShardRepair)>> {
    Array::from_metadata(store, meta.clone())
        .unwrap()
        .repair(false)
}

/// Repair over the same walk: the same outcomes in grid order on one thread, on the pool and
/// on the calling thread; a torn shard before a shard the store fails on is written back
/// before the error is returned, as a loop over the grid would.
#[test]
fn repair_does_what_one_thread_does_up_to_the_first_failing_shard() {
    let _setting = threads_to_myself();
    let (store, meta) = damaged();
    // c/0/0 torn: an append-only update of it, cut one byte short (its index's crc32c fails;
    // the previous shard, complete, is its prefix).
    let array = Array::from_metadata(store.clone(), meta.clone()).unwrap();
    let v1 = store.get("c/0/0").unwrap().unwrap();
    let data: Vec<u8> = (0..256u16).flat_map(|i| (i + 7).to_le_bytes()).collect();
    array
        .write_shard_with(
            &[0, 0],
            &data,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteOptions::default(),
        )
        .unwrap();
    let v2 = store.get("c/0/0").unwrap().unwrap();
    assert_eq!(v2[..v1.len()], v1[..]);
    let torn = &v2[..v2.len() - 1];
    let unrecoverable = |why: &str| ShardRepair::Unrecoverable(why.into());
    let want = vec![
        (
            "c/0/0".to_string(),
            ShardRepair::Recovered {
                before: torn.len() as u64,
                size: v1.len() as u64,
                chunks: 64,
            },
        ),
        (
            "c/0/1".to_string(),
            unrecoverable("no earlier index with a valid crc32c in the object"),
        ),
        (
            "c/1/0".to_string(),
            unrecoverable(zarrshard::shard::repair::CORRUPT_CHUNK_UNDER_VALID_INDEX),
        ),
    ];

    for (threads, caller_only) in [(1, false), (2, false), (2, true)] {
        set_threads(threads).unwrap();
        store.set("c/0/0", torn).unwrap();
        let done = repaired(Watched::new(store.clone(), caller_only, false), &meta);
        assert_eq!(
            done.unwrap(),
            want,
            "{threads} threads, caller only: {caller_only}"
        );
        assert_eq!(store.get("c/0/0").unwrap().unwrap(), v1);

        // The store fails on c/1/0: c/0/0, before it, is repaired all the same.
        store.set("c/0/0", torn).unwrap();
        let mut failing = Watched::new(store.clone(), caller_only, false);
        failing.fail = Some("c/1/0");
        let err = repaired(failing, &meta).unwrap_err();
        assert_eq!(err.to_string(), "I/O error (code 5): no c/1/0");
        assert_eq!(store.get("c/0/0").unwrap().unwrap(), v1);
    }
    set_threads(2).unwrap();
}

/// The 32×32 array of `array()` with `inner` as its inner codecs, in `store`.
fn with_inner<S: Store>(store: S, inner: serde_json::Value, write: bool) -> Array<S> {
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [32, 32],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"}], "index_location": "end"}}]});
    let array = Array::create(store, ArrayMetadata::from_json(&m).unwrap()).unwrap();
    if write {
        let data: Vec<u8> = (0..1024u16).flat_map(|i| (i + 1).to_le_bytes()).collect();
        array.write_region(&[0, 0], &[32, 32], &data).unwrap();
    }
    array
}

#[test]
fn verify_counts_stored_shards_and_the_chunks_no_checksum_covers() {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let summary = |a: &Array<MemoryStore>| a.verify_counted(&|_| {}, |_| Ok(())).unwrap();
    let counts = |stored_shards, chunks_decoded, chunks_unverifiable| VerifySummary {
        stored_shards,
        chunks_decoded,
        chunks_unverifiable,
    };
    // 4 shards of 64 inner chunks, every value non-zero: 256 chunks stored.
    let (store, _) = array();
    assert_eq!(summary(&Array::open(store).unwrap()), counts(4, 256, 0));
    // c/0/1's index broken (none of its chunks decoded), 3 chunks of c/1/0 broken, c/1/1 gone.
    let (store, _) = damaged();
    assert_eq!(summary(&Array::open(store).unwrap()), counts(3, 64 + 61, 0));
    // Nothing to check the bytes against: decoded, not verified.
    for (inner, unverifiable) in [
        (json!([bytes]), 256),
        (
            json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
            256,
        ),
        (
            json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": true}}]),
            0,
        ),
        (
            json!([bytes, {"name": "gzip", "configuration": {"level": 1}}]),
            0,
        ),
    ] {
        let a = with_inner(MemoryStore::new(), inner.clone(), true);
        assert_eq!(summary(&a), counts(4, 256, unverifiable), "{inner}");
    }
    // No shard stored: nothing decoded, and the count says so.
    let a = with_inner(MemoryStore::new(), json!([bytes]), false);
    assert_eq!(summary(&a), counts(0, 0, 0));
    assert_eq!(a.stored_shard_count().unwrap(), 0);
}

#[cfg(feature = "cli")]
#[test]
fn cli_verify_says_what_it_stored_decoded_and_could_not_verify() {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let tmp = tempfile::tempdir().unwrap();
    let run = |dir: &std::path::Path, json: bool| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"));
        c.arg("verify").arg(dir);
        if json {
            c.arg("--json");
        }
        let o = c.output().unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (o.status.code(), text(&o.stdout), text(&o.stderr))
    };
    let plain = tmp.path().join("plain");
    with_inner(FsStore::new(&plain), json!([bytes]), true);
    let (code, out, err) = run(&plain, false);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert_eq!(
        err,
        "zarrshard: 4 of 4 shard(s) stored, 256 inner chunk(s) decoded, 256 of them not verifiable (no checksum)\n"
    );
    let (_, out, _) = run(&plain, true);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v,
        json!({"shards_checked": 4, "problems": [], "shards_stored": 4,
            "chunks_decoded": 256, "chunks_unverifiable": 256})
    );
    let checked = tmp.path().join("checked");
    with_inner(
        FsStore::new(&checked),
        json!([bytes, {"name": "crc32c"}]),
        true,
    );
    let (_, _, err) = run(&checked, false);
    assert_eq!(
        err,
        "zarrshard: 4 of 4 shard(s) stored, 256 inner chunk(s) decoded, 0 of them not verifiable (no checksum)\n"
    );
    // zarr.json and nothing else (never written, or shards under another path).
    let empty = tmp.path().join("empty");
    with_inner(FsStore::new(&empty), json!([bytes]), false);
    let (code, out, err) = run(&empty, false);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert_eq!(
        err,
        "zarrshard: 0 of 4 shard(s) stored: the array reads as all fill value (nothing written yet, or a mistyped path?)\n"
    );
}

#[cfg(feature = "cli")]
#[test]
fn cli_errors_about_a_torn_shard_name_its_key_and_say_it_is_truncated() {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    with_inner(FsStore::new(&dir), json!([bytes, {"name": "crc32c"}]), true);
    // 64 inner chunks: the index is 64 × 16 bytes and a crc32c, 1028 bytes.
    std::fs::write(dir.join("c/0/1"), [1, 2, 3]).unwrap();
    let run = |args: &[&std::ffi::OsStr]| {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .args(args)
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (o.status.code(), text(&o.stdout), text(&o.stderr))
    };
    let truncated = "object is 3 bytes, index needs 1028: torn write? try `zarrshard repair`";
    let raw = tmp.path().join("a.raw");
    let (code, _, err) = run(&["export".as_ref(), dir.as_os_str(), raw.as_os_str()]);
    assert_eq!(code, Some(1));
    assert_eq!(
        err,
        format!("zarrshard: c/0/1: corrupt shard: {truncated}\n")
    );
    let (code, out, _) = run(&["verify".as_ref(), dir.as_os_str()]);
    assert_eq!(code, Some(1));
    assert_eq!(out, format!("c/0/1: corrupt shard: {truncated}\n"));
}

/// Errors about a shard start with its key and keep their kind, wherever they come from: a
/// whole-shard decode (a bytes→bytes codec after sharding) on a read and on a region write
/// that merges into the shard; a problem line shows the key once.
#[test]
fn shard_errors_start_with_the_key_and_keep_their_kind() {
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [4, 4],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}},
            {"name": "crc32c"}]});
    let array = Array::create(MemoryStore::new(), ArrayMetadata::from_json(&m).unwrap()).unwrap();
    array.write_region(&[0, 0], &[4, 4], &[1; 16]).unwrap();
    // Too short for the crc32c codec that wraps the whole shard.
    array.store().set("c/1/0", &[1, 2, 3]).unwrap();
    let want = "c/1/0: corrupt shard: crc32c codec: 3 bytes, too short to hold a checksum";
    let e = array.read_region_vec(&[2, 0], &[2, 4]).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    assert_eq!(e.to_string(), want);
    assert_eq!(e.shard(), Some("c/1/0"));
    let e = array.write_region(&[3, 3], &[1, 1], &[9]).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    assert_eq!(e.to_string(), want);
    assert_eq!(array.store().get("c/1/0").unwrap(), Some(vec![1, 2, 3]));
    // Named twice, the first key stays; a checksum error keeps its words after the key.
    let e = Error::corrupt("bad").in_shard("c/0/0").in_shard("c/9/9");
    assert_eq!(e.to_string(), "c/0/0: corrupt shard: bad");
    let e = Error::ChecksumMismatch {
        shard: None,
        chunk: None,
        what: "crc32c codec".into(),
        stored: 1,
        computed: 2,
    }
    .at_chunk(&[0, 1])
    .in_shard("c/0/1");
    assert_eq!(
        e.to_string(),
        "c/0/1: checksum mismatch: inner chunk [0, 1]: crc32c codec: stored 0x00000001, computed 0x00000002"
    );
    let p = Problem {
        key: "c/0/1".into(),
        error: e,
    };
    assert_eq!(
        p.to_string(),
        "c/0/1: checksum mismatch: inner chunk [0, 1]: crc32c codec: stored 0x00000001, computed 0x00000002"
    );
}
