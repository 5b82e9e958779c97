//! Stores that list their keys (`Store::list_prefix`): the walks over an array's stored shards
//! (verify, repair, compact, reference sets, `stored_shards`) open only the listed shards, and
//! come to what asking every position of the chunk grid comes to.

use serde_json::json;
use std::sync::{Arc, Mutex};
use zarrshard::array::refs::{MetadataFormat, References};
use zarrshard::*;

/// A store over `inner` that records the shard keys (`c/…`) it opens or fetches, and lists
/// (adding `junk` to what `inner` lists) only when `lists`.
#[derive(Clone)]
struct Counted {
    inner: MemoryStore,
    lists: bool,
    junk: Vec<&'static str>,
    opened: Arc<Mutex<Vec<String>>>,
}

impl Counted {
    fn new(inner: &MemoryStore, lists: bool) -> Self {
        Counted {
            inner: inner.clone(),
            lists,
            junk: Vec::new(),
            opened: Arc::default(),
        }
    }

    fn record(&self, key: &str) {
        if key.starts_with("c/") {
            self.opened.lock().unwrap().push(key.to_string());
        }
    }

    /// The keys opened so far, sorted, and forget them.
    fn take_opened(&self) -> Vec<String> {
        let mut opened = std::mem::take(&mut *self.opened.lock().unwrap());
        opened.sort();
        opened
    }
}

impl Store for Counted {
    fn shard_io(&self, key: &str) -> zarrshard::Result<Box<dyn ShardIo>> {
        self.record(key);
        self.inner.shard_io(key)
    }
    fn get(&self, key: &str) -> zarrshard::Result<Option<Vec<u8>>> {
        self.record(key);
        self.inner.get(key)
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrshard::Result<()> {
        self.inner.set(key, value)
    }
    fn list_prefix(&self, prefix: &str) -> zarrshard::Result<Option<Vec<String>>> {
        if !self.lists {
            return Ok(None);
        }
        let mut keys = self.inner.list_prefix(prefix)?.unwrap();
        keys.extend(self.junk.iter().map(|k| k.to_string()));
        Ok(Some(keys))
    }
}

/// 128×128 uint8 in 2×2 shards (a 64×64 grid) of 1×1 inner chunks, crc32c on the chunks and
/// the index; only the shards at grid (0, 5), (17, 3) and (63, 63) are stored.
fn sparse() -> (MemoryStore, ArrayMetadata) {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [128, 128],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 1],
            "codecs": [bytes, {"name": "crc32c"}],
            "index_codecs": [bytes, {"name": "crc32c"}], "index_location": "end"}}]});
    let meta = ArrayMetadata::from_json(&m).unwrap();
    let store = MemoryStore::new();
    let array = Array::create(store.clone(), meta.clone()).unwrap();
    for (n, (row, col)) in [(0u64, 5u64), (17, 3), (63, 63)].into_iter().enumerate() {
        array
            .write_region(&[row * 2, col * 2], &[2, 2], &[n as u8 * 4 + 1, 2, 3, 4])
            .unwrap();
    }
    (store, meta)
}

const STORED: [&str; 3] = ["c/0/5", "c/17/3", "c/63/63"];

/// Every key of the 64×64 grid, sorted as strings.
fn every_position() -> Vec<String> {
    let mut all: Vec<String> = (0..64)
        .flat_map(|i| (0..64).map(move |j| format!("c/{i}/{j}")))
        .collect();
    all.sort();
    all
}

/// Flip the data byte of inner chunk 2 (C order: chunk [1, 0]) of the shard at `key`; its
/// crc32c then fails. The index is at the end: 4 entries of 16 bytes and a crc32c.
fn damage(store: &MemoryStore, key: &str) {
    let mut object = store.get(key).unwrap().unwrap();
    let entry = object.len() - (4 * 16 + 4) + 2 * 16;
    let offset = u64::from_le_bytes(object[entry..entry + 8].try_into().unwrap()) as usize;
    object[offset] ^= 0x40;
    store.set(key, &object).unwrap();
}

fn problems(array: &Array<Counted>) -> Vec<String> {
    let listed = array.verify().unwrap();
    listed.iter().map(ToString::to_string).collect()
}

#[test]
fn verify_opens_only_the_listed_shards_and_finds_what_a_grid_walk_finds() {
    let (store, meta) = sparse();
    damage(&store, "c/17/3");
    let listing = Array::from_metadata(Counted::new(&store, true), meta.clone()).unwrap();
    let asking = Array::from_metadata(Counted::new(&store, false), meta).unwrap();

    let found = problems(&listing);
    assert_eq!(listing.store().take_opened(), STORED);
    assert_eq!(problems(&asking), found);
    assert_eq!(asking.store().take_opened(), every_position());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("c/17/3: ") && found[0].contains("chunk [1, 0]"),
        "{found:?}"
    );

    // Progress still counts every position of the grid, in steps of at least one.
    let counted = Mutex::new(Vec::new());
    listing
        .verify_with_progress(&|n| counted.lock().unwrap().push(n))
        .unwrap();
    let counted = counted.into_inner().unwrap();
    assert_eq!(counted.iter().sum::<u64>(), 64 * 64);
    assert!(counted.iter().all(|&n| n > 0), "{counted:?}");
}

#[test]
fn repair_compact_and_reference_sets_open_only_the_listed_shards() {
    let (store, meta) = sparse();
    let listing = Array::from_metadata(Counted::new(&store, true), meta.clone()).unwrap();
    let asking = Array::from_metadata(Counted::new(&store, false), meta).unwrap();

    let v2 = MetadataFormat::V2 { separator: '.' };
    let refs = References::from_array(&listing, v2).unwrap();
    assert_eq!(listing.store().take_opened(), STORED);
    let asked = References::from_array(&asking, v2).unwrap();
    assert_eq!(asking.store().take_opened(), every_position());
    assert_eq!(refs.to_json_v1("s", None), asked.to_json_v1("s", None));
    // 3 shards of 4 inner chunks, none of them the fill value.
    assert_eq!(refs.chunks().len(), 12);

    assert!(listing.repair(true).unwrap().is_empty());
    assert_eq!(listing.store().take_opened(), STORED);
    assert!(listing.compact(ChunkOrder::Morton).unwrap().is_empty());
    assert_eq!(listing.store().take_opened(), STORED);

    let stored = listing.stored_shards().unwrap();
    assert_eq!(stored, [[0, 5], [17, 3], [63, 63]]);
    assert!(
        listing.store().take_opened().is_empty(),
        "a listing reads nothing"
    );
    assert_eq!(asking.stored_shards().unwrap(), stored);
}

#[test]
fn keys_that_are_not_the_arrays_shard_keys_are_ignored() {
    let (store, meta) = sparse();
    // An object at a spelling no implementation writes or reads for shard (1, 0).
    store.set("c/01/0", b"not a shard").unwrap();
    let mut counted = Counted::new(&store, true);
    counted.junk = vec![
        "zarr.json",
        "c/0",
        "c/0/5/0",
        "c/99/0",
        "c/0/64",
        "c/+1/3",
        "c/1/1.tmp",
        "c/0/5",
        "c//5",
        "c/-1/0",
        "d/0/5",
    ];
    let array = Array::from_metadata(counted, meta).unwrap();
    assert!(array.verify().unwrap().is_empty());
    assert_eq!(array.store().take_opened(), STORED);
    assert_eq!(array.stored_shards().unwrap(), [[0, 5], [17, 3], [63, 63]]);
}

#[test]
fn shard_keys_map_back_to_grid_coordinates_in_every_key_encoding() {
    let meta = |encoding: serde_json::Value, shape: serde_json::Value| {
        let m = json!({"zarr_format": 3, "node_type": "array", "shape": shape,
            "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
            "chunk_key_encoding": encoding, "fill_value": 0,
            "codecs": [{"name": "bytes"}]});
        let m = if m["shape"].as_array().unwrap().is_empty() {
            let mut m = m;
            m["chunk_grid"]["configuration"]["chunk_shape"] = json!([]);
            m
        } else {
            m
        };
        Array::from_metadata(MemoryStore::new(), ArrayMetadata::from_json(&m).unwrap()).unwrap()
    };
    // A 64×8 grid.
    let shape = json!([128, 16]);
    type Expected<'a> = &'a [(&'a str, Option<[u64; 2]>)];
    let cases: [(serde_json::Value, Expected); 4] = [
        (
            json!({"name": "default"}),
            &[
                ("c/3/7", Some([3, 7])),
                ("c/63/0", Some([63, 0])),
                ("c/64/0", None),
                ("c/3/8", None),
                ("c/3/07", None),
                ("c/3", None),
                ("c/3/7/0", None),
                ("c.3.7", None),
                ("3/7", None),
                ("zarr.json", None),
            ],
        ),
        (
            json!({"name": "default", "configuration": {"separator": "."}}),
            &[("c.3.7", Some([3, 7])), ("c/3/7", None), ("c.3", None)],
        ),
        (
            json!({"name": "v2"}),
            &[
                ("3.7", Some([3, 7])),
                ("0.0", Some([0, 0])),
                ("3/7", None),
                (".zarray", None),
                ("zarr.json", None),
                ("3.7.tmp", None),
            ],
        ),
        (
            json!({"name": "v2", "configuration": {"separator": "/"}}),
            &[("3/7", Some([3, 7])), ("3.7", None), ("c/3/7", None)],
        ),
    ];
    for (encoding, keys) in cases {
        let array = meta(encoding.clone(), shape.clone());
        for (key, want) in keys {
            assert_eq!(
                array.shard_coords(key),
                want.map(|c| c.to_vec()),
                "{key} in {encoding}"
            );
        }
    }
    let scalar = meta(json!({"name": "default"}), json!([]));
    assert_eq!(scalar.shard_coords("c"), Some(vec![]));
    assert_eq!(scalar.shard_coords("c/0"), None);
    let scalar = meta(json!({"name": "v2"}), json!([]));
    assert_eq!(scalar.shard_coords("0"), Some(vec![]));
    assert_eq!(scalar.shard_coords("1"), None);
    assert_eq!(scalar.shard_coords("zarr.json"), None);
}

/// A grid of 2^60 positions with one stored shard: verify, a reference set and the stored
/// shards come back at once, since only the listing is walked (asking every position would
/// never end).
#[test]
fn a_huge_sparse_grid_is_walked_through_its_listing() {
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [1u64 << 40, 1u64 << 40],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1024, 1024]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [256, 256],
            "codecs": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 1}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                {"name": "crc32c"}]}}]});
    let meta = ArrayMetadata::from_json(&m).unwrap();
    let store = MemoryStore::new();
    let array = Array::create(Counted::new(&store, true), meta).unwrap();
    let far = (1u64 << 40) - 1024;
    array.write_region(&[far, 7], &[1, 1], &[9]).unwrap();
    array.store().take_opened();

    let counted = Mutex::new(0u64);
    assert!(array
        .verify_with_progress(&|n| *counted.lock().unwrap() += n)
        .unwrap()
        .is_empty());
    assert_eq!(counted.into_inner().unwrap(), 1 << 60);
    let last = (1u64 << 30) - 1;
    assert_eq!(array.store().take_opened(), [format!("c/{last}/0")]);
    assert_eq!(array.stored_shards().unwrap(), [[last, 0]]);
    let refs = References::from_array(&array, MetadataFormat::V2 { separator: '.' }).unwrap();
    // The one stored inner chunk: inner grid row (2^40 - 1024) / 256, column 0.
    let json = refs.to_json_v0("s", None);
    let row = far / 256;
    assert_eq!(
        json[format!("{row}.0")][0],
        format!("s/c/{last}/0"),
        "{json}"
    );
}

#[cfg(unix)]
#[test]
fn a_directory_store_lists_files_and_directories_below_the_prefix_following_links_but_not_loops() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    for file in ["zarr.json", "c/0/1", "c/0/2", "c/1/0", "c/x/y", "cx"] {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"x").unwrap();
    }
    symlink(root.join("c/0"), root.join("c/5")).unwrap(); // another name for c/0
    symlink(root.join("c"), root.join("c/0/up")).unwrap(); // a loop
    symlink(root.join("c/1/0"), root.join("c/1/1")).unwrap(); // a file link
    symlink(root.join("nowhere"), root.join("c/9")).unwrap(); // dangling
    symlink(root.join("c/8"), root.join("c/8")).unwrap(); // never reaches a file (ELOOP)
    let fs = FsStore::new(root);
    let listed = |prefix: &str| {
        let mut keys = fs.list_prefix(prefix).unwrap().unwrap();
        keys.sort();
        keys
    };
    // Directories and the link loop are listed as well: no object can be read there, and a
    // walk over shards must see one where a shard would be.
    assert_eq!(
        listed("c/"),
        [
            "c/0", "c/0/1", "c/0/2", "c/0/up", "c/1", "c/1/0", "c/1/1", "c/5", "c/5/1", "c/5/2",
            "c/5/up", "c/8", "c/x", "c/x/y"
        ]
    );
    // The loop is walked once from below it, until it comes back to a directory it is in.
    assert_eq!(
        listed("c/0/"),
        [
            "c/0/1",
            "c/0/2",
            "c/0/up",
            "c/0/up/0",
            "c/0/up/1",
            "c/0/up/1/0",
            "c/0/up/1/1",
            "c/0/up/5",
            "c/0/up/8",
            "c/0/up/x",
            "c/0/up/x/y"
        ]
    );
    assert_eq!(listed("c/1/1"), ["c/1/1"]);
    assert_eq!(
        listed("c"),
        ["c".to_string()]
            .into_iter()
            .chain(listed("c/"))
            .chain(["cx".into()])
            .collect::<Vec<_>>()
    );
    assert_eq!(listed("").len(), 17, "{:?}", listed(""));
    assert!(listed("d/").is_empty(), "a missing directory lists nothing");
    assert!(listed("c/7/").is_empty());
    assert!(listed("cx/").is_empty(), "below a file: nothing");
    assert!(listed("c/8/").is_empty(), "below a link loop: nothing");
    // A directory that cannot be read is an error, not an empty listing (root reads any).
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let locked = root.join("c/1");
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
        let e = fs.list_prefix("c/").unwrap_err();
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(
            matches!(
                e,
                Error::Io {
                    code: libc::EACCES,
                    ..
                }
            ),
            "{e}"
        );
    }
}

/// A repack of the sparse array into 4×4 shards (a 32×32 grid): with listing stores only the
/// 3 stored source shards are read and only the 3 target shards they fall in are written (each
/// 2×2 source shard lies in one target: (0, 5) in (0, 2), (17, 3) in (8, 1), (63, 63) in
/// (31, 31)); a stale object the target store holds is still replaced; the objects are those a
/// walk over every position writes. Both the copying and the re-encoding path.
#[test]
fn repack_reads_and_writes_only_what_the_listings_name() {
    let (store, meta) = sparse();
    for inner in [None, Some(vec![2, 2])] {
        let options = RepackOptions {
            shard_shape: Some(vec![4, 4]),
            inner_chunk_shape: inner.clone(),
            ..Default::default()
        };
        let target = repacked_metadata(&meta, &options).unwrap();
        let stale = || {
            let dst = MemoryStore::new();
            dst.set("c/5/5", b"an object of an earlier array").unwrap();
            dst
        };
        let run = |lists_src: bool, lists_dst: bool| {
            let src = Array::from_metadata(Counted::new(&store, lists_src), meta.clone()).unwrap();
            let dst = Counted::new(&stale(), lists_dst);
            let progress = std::sync::atomic::AtomicU64::new(0);
            let (out, _) = repack(&src, dst, target.clone(), ChunkOrder::C, &|n| {
                progress.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            })
            .unwrap();
            assert_eq!(progress.into_inner(), 32 * 32, "{inner:?}");
            let objects: Vec<(String, Vec<u8>)> = out
                .store()
                .inner
                .keys()
                .into_iter()
                .map(|k| (k.clone(), out.store().inner.get(&k).unwrap().unwrap()))
                .collect();
            (
                src.store().take_opened(),
                out.store().take_opened(),
                objects,
            )
        };
        let (read, written, listed) = run(true, true);
        assert_eq!(read, STORED, "{inner:?}");
        assert_eq!(written, ["c/0/2", "c/31/31", "c/5/5", "c/8/1"], "{inner:?}");
        let (read, written, walked) = run(false, false);
        assert_eq!((read.len(), written.len()), (64 * 64, 32 * 32), "{inner:?}");
        assert_eq!(listed, walked, "{inner:?}");
        let keys: Vec<&str> = listed.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            ["c/0/2", "c/31/31", "c/8/1", "zarr.json"],
            "{inner:?}"
        );
        // A source that lists into a target that cannot: every target position, 3 reads.
        let (read, written, objects) = run(true, false);
        assert_eq!(
            (read, written.len()),
            (STORED.map(String::from).to_vec(), 32 * 32)
        );
        assert_eq!(objects, walked, "{inner:?}");
    }
}
