//! The older formats through the library: v3 draft listing (`list_prefix`) and key layout,
//! v2 prototype keys. (Interop with an independent writer/reader is in tests/legacy/.)

use serde_json::json;
use zarrshard::array::legacy;
use zarrshard::*;

#[test]
fn v3_draft_keys_and_listing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("zarr.json"), json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0",
        "metadata_encoding": "https://purl.org/zarr/spec/protocol/core/3.0", "metadata_key_suffix": ".json", "extensions": []}).to_string()).unwrap();
    std::fs::create_dir_all(root.join("meta/root/foo")).unwrap();
    std::fs::write(root.join("meta/root/foo/baz.array.json"), json!({
        "shape": [4, 6], "data_type": "<u2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2, 2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": {"codec": "https://purl.org/zarr/spec/codec/zlib/1.0", "configuration": {"level": 1}},
        "fill_value": 0, "extensions": [], "attributes": {},
        "storage_transformers": [{"extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
            "type": "indexed", "configuration": {"chunks_per_shard": [2, 1]}}]}).to_string()).unwrap();
    let array = Array::open_v3_draft(FsStore::new(root), "foo/baz").unwrap();
    // Chunk grid 2x3, shards of 2x1 chunks: shard grid 1x3. Chunk (1, 2) (rows 2..4, cols
    // 4..6) stays fill, so it is not stored; shard c0/2 then holds only chunk (0, 2).
    let mut data = Vec::new();
    for r in 0..4u16 {
        for c in 0..6u16 {
            let v: u16 = if r >= 2 && c >= 4 { 0 } else { 1 + r * 6 + c };
            data.extend_from_slice(&v.to_le_bytes());
        }
    }
    array
        .import(
            &mut data.as_slice(),
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )
        .unwrap();
    for key in [
        "data/root/foo/baz/c0/0",
        "data/root/foo/baz/c0/1",
        "data/root/foo/baz/c0/2",
    ] {
        assert!(root.join(key).is_file(), "{key}");
    }
    assert_eq!(
        array.list_chunk_keys("data/root/foo/baz/").unwrap(),
        ["c0/0", "c0/1", "c0/2", "c1/0", "c1/1"].map(|k| format!("data/root/foo/baz/{k}"))
    );
    assert_eq!(
        array.list_chunk_keys("data/root/foo/baz/c1").unwrap().len(),
        2
    );
    // The shard c0/2 holds 2 chunk slots: index 32 bytes, no checksum, at the end.
    let shard = std::fs::read(root.join("data/root/foo/baz/c0/2")).unwrap();
    let tail: Vec<u64> = shard[shard.len() - 32..]
        .chunks(8)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(tail[0], 0);
    assert_eq!(&tail[2..], &[u64::MAX, u64::MAX]);
    assert_eq!(tail[1] as usize, shard.len() - 32);
    let mut out = Vec::new();
    array.export(&mut out).unwrap();
    assert_eq!(out, data);
}

#[test]
fn v2_prototype_raw_dtypes_open_up_to_128_kib_per_element() {
    let tmp = tempfile::tempdir().unwrap();
    let zarray = |dtype: &str| {
        let doc = json!({"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": dtype,
            "compressor": null, "fill_value": null, "order": "C", "filters": null,
            "shards": [2], "shard_format": "indexed"});
        std::fs::write(tmp.path().join(".zarray"), doc.to_string()).unwrap();
        Array::open(FsStore::new(tmp.path()))
    };
    let array = zarray("|V16").unwrap();
    assert_eq!(array.metadata().data_type.name(), "r128");
    // Nothing stored: the 4 elements read as the all-zero fill value, 16 bytes each.
    assert_eq!(array.read_region_vec(&[0], &[4]).unwrap(), vec![0u8; 64]);
    // The widest: its fill value goes through JSON as 131072 numbers, minutes under Miri (where
    // the unit test `raw_typestrings_are_bounded_like_v3_raw_bits` covers the same edge).
    if !cfg!(miri) {
        assert_eq!(
            zarray("|V131072").unwrap().metadata().data_type.size(),
            131072
        );
    }
    // The fuzz finding: 3.2 EB per element, whose fill value was allocated on open.
    for dtype in ["|V131073", "<V3246680448946580131"] {
        assert_eq!(
            zarray(dtype).err().unwrap().to_string(),
            format!("invalid metadata: data_type `{dtype}`: raw elements wider than 131072 bytes are not supported")
        );
    }
}

#[test]
fn v2_prototype_shard_keys_and_fortran_order() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join(".zarray"),
        json!({"zarr_format": 2, "shape": [20, 3], "chunks": [3, 3],
        "dtype": ">i4", "compressor": null, "fill_value": null, "order": "F", "filters": null,
        "dimension_separator": ".", "shards": [2, 1], "shard_format": "indexed"})
        .to_string(),
    )
    .unwrap();
    let array = Array::open(FsStore::new(tmp.path())).unwrap();
    assert_eq!(array.format(), &Format::V2Prototype);
    assert_eq!(array.shard_key(&[2, 0]), "2.0");
    let data: Vec<u8> = (1..=60i32).flat_map(i32::to_le_bytes).collect();
    array
        .import(
            &mut data.as_slice(),
            WriteStrategy::Streaming,
            WriteOptions::default(),
        )
        .unwrap();
    // 20 rows / (3 * 2) = 4 shards along dim 0.
    let keys: Vec<bool> = (0..5)
        .map(|i| tmp.path().join(format!("{i}.0")).exists())
        .collect();
    assert_eq!(keys, [true, true, true, true, false]);
    // Shard 0.0, chunk (0, 0) is rows 0..3 in Fortran order, big-endian: 1, 4, 7, 2, …
    let shard = std::fs::read(tmp.path().join("0.0")).unwrap();
    let first: Vec<i32> = shard[..16]
        .chunks(4)
        .map(|b| i32::from_be_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(first, [1, 4, 7, 2]);
    let mut out = Vec::new();
    array.export(&mut out).unwrap();
    assert_eq!(out, data);
}

#[test]
fn v2_raw_dtype_fill_values_are_base64() {
    // Zarr v2 spec: the fill value of a `V` type is the base64 of its bytes. What zarr-python
    // 3.1.6 writes for create_array(dtype='V4', zarr_format=2, fill_value=b'\x01\x02\x03\x04'),
    // plus the PR 876 prototype's `shards`.
    let tmp = tempfile::tempdir().unwrap();
    let zarray = |fill: &str| {
        std::fs::write(
            tmp.path().join(".zarray"),
            format!(
                r#"{{"shape": [4], "chunks": [2], "dtype": "|V4", "fill_value": {fill},
                "order": "C", "filters": null, "dimension_separator": ".", "compressor": null,
                "zarr_format": 2, "shards": [2], "shard_format": "indexed"}}"#
            ),
        )
        .unwrap();
        Array::open(FsStore::new(tmp.path()))
    };
    let array = zarray(r#""AQIDBA==""#).unwrap();
    assert_eq!(array.metadata().fill_value.0, [1, 2, 3, 4]);
    // Nothing stored: four elements of the fill value.
    assert_eq!(
        array.read_region_vec(&[0], &[4]).unwrap(),
        [1, 2, 3, 4].repeat(4)
    );
    // Without padding too; 16 bytes of a `|V16` ("AAECAwQFBgcICQoLDA0ODw==" is 0..=15).
    assert_eq!(
        zarray(r#""AQIDBA""#).unwrap().metadata().fill_value.0,
        [1, 2, 3, 4]
    );
    // Not base64, or not 4 bytes.
    for fill in ["AQID", "AQIDBAU=", "AQ*DBA==", "A"] {
        assert_eq!(
            zarray(&format!("\"{fill}\"")).err().unwrap().to_string(),
            format!("invalid metadata: fill_value \"{fill}\" is not the base64 of 4 bytes (data type |V4)"),
            "{fill}"
        );
    }
    std::fs::write(
        tmp.path().join(".zarray"),
        r#"{"shape": [2], "chunks": [1], "dtype": "|V16", "fill_value": "AAECAwQFBgcICQoLDA0ODw==",
            "order": "C", "filters": null, "compressor": null, "zarr_format": 2}"#,
    )
    .unwrap();
    let array = Array::open(FsStore::new(tmp.path())).unwrap();
    assert_eq!(array.metadata().fill_value.0, (0..16).collect::<Vec<u8>>());
}

#[test]
fn v3_draft_storage_transformers_must_be_a_list() {
    let draft = |transformers: serde_json::Value| {
        let mut doc = json!({"shape": [4], "data_type": "<u2",
            "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
            "chunk_memory_layout": "C", "compressor": null, "fill_value": 0, "extensions": [],
            "attributes": {}});
        if !transformers.is_null() {
            doc["storage_transformers"] = transformers;
        }
        legacy::parse_v3_draft(&doc)
    };
    // Absent, or an empty list: unsharded.
    assert!(draft(json!(null)).unwrap().0.sharding().is_none());
    assert!(draft(json!([])).unwrap().0.sharding().is_none());
    let sharding = json!({"extension":
        "https://purl.org/zarr/spec/storage_transformers/sharding/1.0", "type": "indexed",
        "configuration": {"chunks_per_shard": [2]}});
    assert!(draft(json!([sharding])).unwrap().0.sharding().is_some());
    // The transformer not in a list was read as "no transformers": an unsharded array over
    // sharded data.
    for bad in [sharding.clone(), json!("sharding"), json!(7)] {
        assert_eq!(
            draft(bad.clone()).err().unwrap().to_string(),
            format!("invalid metadata: `storage_transformers` must be a list, got {bad}")
        );
    }
}

/// The v3-draft metadata of a `<u2` array of shape [4, 6] in chunks of 2×2, with `transformers`.
fn draft_doc(transformers: serde_json::Value) -> serde_json::Value {
    json!({"shape": [4, 6], "data_type": "<u2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2, 2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": null, "fill_value": 0, "extensions": [],
        "attributes": {}, "storage_transformers": transformers})
}

fn draft_sharding(uri: &str, per_shard: &[u64]) -> serde_json::Value {
    json!({"extension": uri, "type": "indexed", "configuration": {"chunks_per_shard": per_shard}})
}

#[test]
fn v3_draft_array_at_the_hierarchy_root() {
    // The draft's root array: metadata `meta/root.array.json`, chunks `data/root/c<i>/<j>`.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::create_dir_all(root.join("meta")).unwrap();
    let doc = draft_doc(json!([draft_sharding(
        legacy::SHARDING_TRANSFORMER,
        &[1, 3]
    )]));
    std::fs::write(root.join("meta/root.array.json"), doc.to_string()).unwrap();
    let array = Array::open_v3_draft(FsStore::new(root), "").unwrap();
    assert_eq!(
        array.format(),
        &Format::V3Draft {
            metadata_key: "meta/root.array.json".into(),
            data_prefix: "data/root/".into(),
            separator: '/'
        }
    );
    let data: Vec<u8> = (1..=24u16).flat_map(|v| v.to_ne_bytes()).collect();
    array
        .import(
            &mut data.as_slice(),
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )
        .unwrap();
    // Shard grid 2×1 (chunk grid 2×3, 1×3 chunks per shard).
    let mut stored: Vec<String> = walk(&root.join("data"));
    stored.sort();
    assert_eq!(stored, ["data/root/c0/0", "data/root/c1/0"]);
    assert_eq!(
        array.list_chunk_keys("data/root/").unwrap(),
        ["c0/0", "c0/1", "c0/2", "c1/0", "c1/1", "c1/2"].map(|k| format!("data/root/{k}"))
    );
    // "/" is the root path too, and the same array reads back.
    let again = Array::open_v3_draft(FsStore::new(root), "/").unwrap();
    let mut out = Vec::new();
    again.export(&mut out).unwrap();
    let exported: Vec<u8> = (1..=24u16).flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(out, exported);
}

/// Every file under `dir`, as a path relative to `dir`'s parent with `/` separators.
fn walk(dir: &std::path::Path) -> Vec<String> {
    let base = dir.parent().unwrap();
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let rel = p.strip_prefix(base).unwrap();
                out.push(
                    rel.to_str()
                        .unwrap()
                        .replace(std::path::MAIN_SEPARATOR, "/"),
                );
            }
        }
    }
    out
}

#[test]
fn v3_draft_transformer_uri_in_both_spellings_and_no_stacks() {
    let per_shard = [2, 1];
    for uri in [
        "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
        "http://purl.org/zarr/spec/storage-transformers/sharding/1.0",
    ] {
        let (meta, _) =
            legacy::parse_v3_draft(&draft_doc(json!([draft_sharding(uri, &per_shard)]))).unwrap();
        assert_eq!(
            meta.shard_layout().unwrap().chunks_per_shard(),
            &per_shard,
            "{uri}"
        );
    }
    // Another URI is still refused.
    let other = draft_sharding(
        "https://purl.org/zarr/spec/storage_transformers/other/1.0",
        &[2, 1],
    );
    assert_eq!(
        legacy::parse_v3_draft(&draft_doc(json!([other.clone()])))
            .err()
            .unwrap()
            .to_string(),
        format!("invalid metadata: unsupported storage transformer {other}")
    );
    // Two sharding transformers were read as the last one alone: a stack is refused.
    let stack = json!([
        draft_sharding(legacy::SHARDING_TRANSFORMER, &[2, 1]),
        draft_sharding(legacy::SHARDING_TRANSFORMER_HEADER, &[1, 3])
    ]);
    assert_eq!(
        legacy::parse_v3_draft(&draft_doc(stack))
            .err()
            .unwrap()
            .to_string(),
        "invalid metadata: a stack of 2 storage transformers is not supported (one sharding transformer at most)"
    );
}
