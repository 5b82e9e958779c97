//! Arrays and groups at paths of a store: create, open, append frames, flush, resize,
//! attributes, groups, array specs (issue 35's Rust API, under the C layer).

use serde_json::json;
use zarrshard::*;

/// 2 bytes per element; frames of 6×5 uint16, shards 4×4×4 of 2×2×2 inner chunks.
fn spec(frames: u64) -> ArraySpec {
    ArraySpec::new(&[frames, 6, 5], &[2, 2, 2], "uint16").sharded(&[4, 4, 4])
}

/// Element `(t, y, x)` of the test series, computed from its coordinates.
fn value(t: u64, y: u64, x: u64) -> u16 {
    (t * 100 + y * 10 + x + 1) as u16
}

fn frame(t: u64) -> Vec<u8> {
    let mut out = Vec::new();
    for y in 0..6 {
        for x in 0..5 {
            out.extend_from_slice(&value(t, y, x).to_ne_bytes());
        }
    }
    out
}

fn frames(n: u64) -> Vec<u16> {
    let mut out = Vec::new();
    for t in 0..n {
        for y in 0..6 {
            for x in 0..5 {
                out.push(value(t, y, x));
            }
        }
    }
    out
}

fn u16s(bytes: &[u8]) -> Vec<u16> {
    bytes
        .chunks_exact(2)
        .map(|b| u16::from_ne_bytes([b[0], b[1]]))
        .collect()
}

fn stored_shape(store: &MemoryStore, path: &str) -> Vec<u64> {
    let key = match path {
        "" => "zarr.json".to_string(),
        p => format!("{p}/zarr.json"),
    };
    let doc: serde_json::Value =
        serde_json::from_slice(&store.get(&key).unwrap().unwrap()).unwrap();
    serde_json::from_value(doc["shape"].clone()).unwrap()
}

#[test]
fn appended_frames_are_written_a_whole_layer_at_a_time_and_read_back() {
    let store = MemoryStore::new();
    let mut a = Array::create_at(
        store.clone(),
        "acq/raw",
        spec(0).to_metadata().unwrap(),
        false,
    )
    .unwrap();
    for t in 0..3 {
        a.append(0, &[1, 6, 5], &frame(t)).unwrap();
    }
    // Layer 0 (rows 0..4) is incomplete: nothing but zarr.json stored, shape 0 there.
    assert_eq!(store.keys(), vec!["acq/raw/zarr.json".to_string()]);
    assert_eq!(stored_shape(&store, "acq/raw"), vec![0, 6, 5]);
    // Reads see the pending frames.
    assert_eq!(a.shape(), &[3, 6, 5]);
    assert_eq!(
        u16s(&a.read_region_vec(&[0, 0, 0], &[3, 6, 5]).unwrap()),
        frames(3)
    );
    a.append(0, &[1, 6, 5], &frame(3)).unwrap();
    // The layer is complete: its 2×2 shards written once each, then the shape.
    assert_eq!(stored_shape(&store, "acq/raw"), vec![4, 6, 5]);
    let shards: Vec<String> = store
        .keys()
        .into_iter()
        .filter(|k| k.contains("/c/"))
        .collect();
    assert_eq!(
        shards,
        vec![
            "acq/raw/c/0/0/0",
            "acq/raw/c/0/0/1",
            "acq/raw/c/0/1/0",
            "acq/raw/c/0/1/1"
        ]
    );
    // Two more frames, flushed: the partial layer is stored and the shape covers it.
    a.append(0, &[2, 6, 5], &[frame(4), frame(5)].concat())
        .unwrap();
    a.flush().unwrap();
    assert_eq!(stored_shape(&store, "acq/raw"), vec![6, 6, 5]);
    drop(a);
    let b = Array::open_at(store.clone(), "acq/raw").unwrap();
    assert_eq!(
        u16s(&b.read_region_vec(&[0, 0, 0], &[6, 6, 5]).unwrap()),
        frames(6)
    );
    // No dead bytes: every shard's chunks fill it exactly (compact finds nothing to do).
    assert!(b.compact(ChunkOrder::C).unwrap().is_empty());
}

#[test]
fn a_partial_layer_flushed_then_completed_is_rewritten_whole() {
    let store = MemoryStore::new();
    let mut a = Array::create_at(store.clone(), "", spec(0).to_metadata().unwrap(), false).unwrap();
    a.append(0, &[1, 6, 5], &frame(0)).unwrap();
    a.flush().unwrap();
    drop(a);
    // Reopened (a new process, say): appending reads the partial layer back.
    let mut a = Array::open_at(store.clone(), "").unwrap();
    for t in 1..4 {
        a.append(0, &[1, 6, 5], &frame(t)).unwrap();
    }
    let rewritten = store.get("c/0/0/0").unwrap().unwrap();
    // The same shard written in one go by an array that never flushed.
    let fresh = MemoryStore::new();
    let mut f = Array::create_at(fresh.clone(), "", spec(0).to_metadata().unwrap(), false).unwrap();
    f.append(
        0,
        &[4, 6, 5],
        &[frame(0), frame(1), frame(2), frame(3)].concat(),
    )
    .unwrap();
    assert_eq!(rewritten, fresh.get("c/0/0/0").unwrap().unwrap());
    assert_eq!(
        u16s(&a.read_region_vec(&[0, 0, 0], &[4, 6, 5]).unwrap()),
        frames(4)
    );
}

#[test]
fn dropping_an_array_flushes_its_frames() {
    let store = MemoryStore::new();
    let mut a =
        Array::create_at(store.clone(), "x", spec(0).to_metadata().unwrap(), false).unwrap();
    a.append(0, &[1, 6, 5], &frame(0)).unwrap();
    drop(a);
    assert_eq!(stored_shape(&store, "x"), vec![1, 6, 5]);
    let b = Array::open_at(store, "x").unwrap();
    assert_eq!(
        u16s(&b.read_region_vec(&[0, 0, 0], &[1, 6, 5]).unwrap()),
        frames(1)
    );
}

#[test]
fn append_refuses_blocks_that_do_not_span_the_other_axes() {
    let store = MemoryStore::new();
    let mut a = Array::create_at(store, "", spec(0).to_metadata().unwrap(), false).unwrap();
    let e = a.append(0, &[1, 6, 4], &[0; 48]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid argument: append along axis 0: the block's extent along axis 2 is 4, the array's is 5"
    );
    let e = a.append(3, &[1, 6, 5], &frame(0)).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
    let e = a.append(0, &[1, 6, 5], &[0; 10]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BufferSize {
                expected: 60,
                actual: 10
            }
        ),
        "{e}"
    );
    assert_eq!(a.shape(), &[0, 6, 5]);
}

#[test]
fn a_region_write_over_pending_frames_is_kept_when_the_layer_completes() {
    let store = MemoryStore::new();
    let mut a = Array::create_at(store.clone(), "", spec(0).to_metadata().unwrap(), false).unwrap();
    a.append(0, &[2, 6, 5], &[frame(0), frame(1)].concat())
        .unwrap();
    a.write_region(&[1, 2, 2], &[1, 1, 1], &7u16.to_ne_bytes())
        .unwrap();
    a.append(0, &[2, 6, 5], &[frame(2), frame(3)].concat())
        .unwrap();
    let mut expected = frames(4);
    expected[30 + 2 * 5 + 2] = 7;
    let b = Array::open_at(store, "").unwrap();
    assert_eq!(
        u16s(&b.read_region_vec(&[0, 0, 0], &[4, 6, 5]).unwrap()),
        expected
    );
}

#[test]
fn shrinking_then_growing_shows_fill_never_stale_data() {
    let store = MemoryStore::new();
    let mut m = spec(8).to_metadata().unwrap();
    m.fill_value = FillValue::parse(&json!(9), &m.data_type).unwrap();
    let mut a = Array::create_at(store.clone(), "", m, false).unwrap();
    a.write_region(
        &[0, 0, 0],
        &[8, 6, 5],
        &frames(8)
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    a.resize(&[3, 6, 3]).unwrap();
    assert_eq!(stored_shape(&store, ""), vec![3, 6, 3]);
    // Shards wholly past the new shape are gone: t layer [4, 8) and the x shards [4, 8).
    let shards: Vec<String> = store
        .keys()
        .into_iter()
        .filter(|k| k.starts_with("c/"))
        .collect();
    assert_eq!(shards, vec!["c/0/0/0", "c/0/1/0"]);
    a.resize(&[8, 6, 5]).unwrap();
    let got = u16s(&a.read_region_vec(&[0, 0, 0], &[8, 6, 5]).unwrap());
    for t in 0..8 {
        for y in 0..6 {
            for x in 0..5 {
                let want = if t < 3 && x < 3 { value(t, y, x) } else { 9 };
                assert_eq!(got[((t * 6 + y) * 5 + x) as usize], want, "({t}, {y}, {x})");
            }
        }
    }
}

#[test]
fn create_refuses_an_existing_node_unless_overwriting() {
    let store = MemoryStore::new();
    let a = Array::create_at(store.clone(), "a", spec(4).to_metadata().unwrap(), false).unwrap();
    a.write_region(
        &[0, 0, 0],
        &[4, 6, 5],
        &frames(4)
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    drop(a);
    let e = Array::create_at(store.clone(), "a", spec(4).to_metadata().unwrap(), false)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid state: `a` already holds an array (zarr.json); overwrite to replace it"
    );
    Array::create_at(store.clone(), "a", spec(2).to_metadata().unwrap(), true).unwrap();
    assert!(
        !store.keys().iter().any(|k| k.starts_with("a/c/")),
        "{:?}",
        store.keys()
    );
    Array::create_at(store.clone(), "", spec(1).to_metadata().unwrap(), false).unwrap();
    let e = Group::create(store.clone(), "", Attributes::new(), false)
        .err()
        .unwrap();
    assert_eq!(e.to_string(), "invalid state: the store's root already holds an array (zarr.json); overwrite to replace it");
    Group::create(store.clone(), "g", Attributes::new(), false).unwrap();
    let e = Group::create(store.clone(), "g", Attributes::new(), false)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "invalid state: `g` already holds a group (zarr.json); overwrite to replace it"
    );
}

#[test]
fn paths_that_leave_the_node_are_refused() {
    for bad in ["..", "a/../b", "/abs", "a//b", "a/", ".", "a\\b", "a\0b"] {
        let e = Array::create_at(
            MemoryStore::new(),
            bad,
            spec(1).to_metadata().unwrap(),
            false,
        )
        .err()
        .unwrap();
        assert!(
            matches!(e, Error::InvalidArgument(ref m) if m.starts_with("invalid node path")),
            "{bad:?}: {e}"
        );
    }
    let e = Array::open_at(MemoryStore::new(), "img/0").err().unwrap();
    assert_eq!(
        e.to_string(),
        "invalid metadata: no zarr.json or .zarray at `img/0`"
    );
}

#[test]
fn groups_and_attributes_round_trip() {
    let store = MemoryStore::new();
    let attrs = Attributes::from_text(r#"{"ome": {"version": "0.5"}}"#, "attributes").unwrap();
    Group::create(store.clone(), "img", attrs.clone(), false).unwrap();
    let g = Group::open(store.clone(), "img").unwrap();
    assert_eq!(g.attributes(), &attrs);
    let doc: serde_json::Value =
        serde_json::from_slice(&store.get("img/zarr.json").unwrap().unwrap()).unwrap();
    assert_eq!(
        doc,
        json!({"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5"}}})
    );
    let mut a = Array::create_at(
        store.clone(),
        "img/0",
        spec(1).to_metadata().unwrap(),
        false,
    )
    .unwrap();
    a.set_attributes(Attributes::from_text(r#"{"k": [1, 2]}"#, "attributes").unwrap())
        .unwrap();
    let b = Array::open_at(store, "img/0").unwrap();
    assert_eq!(b.metadata().attributes.to_map()["k"], json!([1, 2]));
}

#[test]
fn a_spec_with_defaults_is_the_metadata_a_careful_user_would_write() {
    let mut s = spec(10);
    s.dimension_names = Some(vec![Some("t".into()), Some("y".into()), None]);
    assert_eq!(
        s.to_json().unwrap(),
        json!({
            "zarr_format": 3, "node_type": "array", "shape": [10, 6, 5], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4, 4]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [2, 2, 2],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 3, "checksum": false}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "end"}}],
            "attributes": {},
            "dimension_names": ["t", "y", null],
        })
    );
    let e = ArraySpec::new(&[4], &[3], "uint8")
        .sharded(&[4])
        .to_metadata()
        .unwrap_err();
    assert!(matches!(e, Error::InvalidMetadata(_)), "{e}");
}

#[test]
fn open_at_finds_a_v3_draft_array_by_its_hierarchy_path() {
    let store = MemoryStore::new();
    let doc = json!({"shape": [4, 6], "data_type": "<u2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2, 2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": null, "fill_value": 3, "extensions": [],
        "attributes": {}, "storage_transformers": [{"extension":
            "https://purl.org/zarr/spec/storage_transformers/sharding/1.0", "type": "indexed",
            "configuration": {"chunks_per_shard": [1, 3]}}]});
    store
        .set("meta/root/foo/baz.array.json", doc.to_string().as_bytes())
        .unwrap();
    store
        .set("meta/root.array.json", doc.to_string().as_bytes())
        .unwrap();
    store
        .set(
            "zarr.json",
            json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
        "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0",
        "metadata_key_suffix": ".json", "extensions": []})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
    for path in ["foo/baz", ""] {
        let a = Array::open_at(store.clone(), path).unwrap();
        assert!(matches!(a.format(), Format::V3Draft { .. }), "{path}");
        assert_eq!(a.shape(), &[4, 6]);
        assert_eq!(
            a.read_region_vec(&[0, 0], &[1, 1]).unwrap(),
            3u16.to_ne_bytes()
        );
    }
    let e = Array::open_at(store, "foo").err().unwrap();
    assert_eq!(
        e.to_string(),
        "invalid metadata: no zarr.json or .zarray at `foo`"
    );
}

#[test]
fn appending_along_another_axis_writes_the_pending_frames_first() {
    let store = MemoryStore::new();
    let mut a = Array::create_at(store.clone(), "", spec(0).to_metadata().unwrap(), false).unwrap();
    a.append(0, &[2, 6, 5], &[frame(0), frame(1)].concat())
        .unwrap();
    // A column of x = 5 along axis 2: 2 x 6 x 1 elements of 7.
    a.append(2, &[2, 6, 1], &[7u16.to_ne_bytes(); 12].concat())
        .unwrap();
    a.flush().unwrap();
    assert_eq!(stored_shape(&store, ""), vec![2, 6, 6]);
    let b = Array::open(store).unwrap();
    let got = u16s(&b.read_region_vec(&[0, 0, 0], &[2, 6, 6]).unwrap());
    for t in 0..2 {
        for y in 0..6 {
            for x in 0..6 {
                let want = if x == 5 { 7 } else { value(t, y, x) };
                assert_eq!(got[((t * 6 + y) * 6 + x) as usize], want, "({t}, {y}, {x})");
            }
        }
    }
}

#[test]
fn overwriting_a_group_in_a_directory_removes_its_subtree_empty_directories_included() {
    let dir = tempfile::tempdir().unwrap();
    let store = FsStore::new(dir.path());
    Group::create(&store, "img", Attributes::new(), false).unwrap();
    let a = Array::create_at(&store, "img/0", spec(4).to_metadata().unwrap(), false).unwrap();
    a.write_region(
        &[0, 0, 0],
        &[4, 6, 5],
        &frames(4)
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    drop(a);
    std::fs::create_dir_all(dir.path().join("img/empty/deeper")).unwrap();
    Group::create(&store, "img", Attributes::new(), true).unwrap();
    let left: Vec<String> = std::fs::read_dir(dir.path().join("img"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, vec!["zarr.json".to_string()]);
}
