//! Kerchunk reference sets against expectations worked out by hand: keys, URLs, offsets and
//! sizes from the known layout of small arrays (C-order buffered shards, fill chunks not
//! stored), the unsharded metadata, the errors for what cannot be referenced, and the Parquet
//! rows. fsspec + zarr-python read the sets in tests/refs/check_refs.py.

mod common;

use serde_json::{json, Value};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use zarrshard::array::refs::{MetadataFormat, References};
use zarrshard::storage::store::Store;
use zarrshard::{Array, FsStore};

const V2: MetadataFormat = MetadataFormat::V2 { separator: '.' };

fn sharding(chunk_shape: &[u64], codecs: Value) -> Value {
    json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": chunk_shape, "codecs": codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end"}})
}

fn meta(shape: &[u64], shard: &[u64], dtype: &str, fill: Value, codecs: Value) -> Value {
    json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill, "codecs": codecs})
}

fn bytes_le() -> Value {
    json!([{"name": "bytes", "configuration": {"endian": "little"}}])
}

/// 4×6 uint16, shards 4×4 of 2×2 inner chunks: element (r, c) = 6r + c + 1, except the inner
/// chunk at rows 0–1, columns 2–3, which is all fill (0). Shard c/0/1 covers columns 4–7 of
/// which 6–7 are padding.
fn small_array(dir: &Path) -> Vec<u8> {
    let m = meta(
        &[4, 6],
        &[4, 4],
        "uint16",
        json!(0),
        json!([sharding(&[2, 2], bytes_le())]),
    );
    let mut data = Vec::new();
    for r in 0..4u16 {
        for c in 0..6u16 {
            let v = if r < 2 && (2..4).contains(&c) {
                0
            } else {
                6 * r + c + 1
            };
            data.extend_from_slice(&v.to_ne_bytes());
        }
    }
    common::write_array(dir, &m, &data);
    data
}

fn refs(dir: &Path, format: MetadataFormat) -> zarrshard::Result<References> {
    References::from_array(&Array::open(FsStore::new(dir))?, format)
}

/// The little-endian bytes of elements (r, c) for r in rows, c in cols.
fn elements(rows: std::ops::Range<u16>, cols: std::ops::Range<u16>) -> Vec<u8> {
    let mut out = Vec::new();
    for r in rows {
        for c in cols.clone() {
            out.extend_from_slice(&(6 * r + c + 1).to_le_bytes());
        }
    }
    out
}

#[test]
fn json_v0_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    small_array(dir.path());
    let set = refs(dir.path(), MetadataFormat::V3)
        .unwrap()
        .to_json_v0("http://h/a/", None);
    let o = set.as_object().unwrap();
    let keys: Vec<&str> = o.keys().map(String::as_str).collect();
    // Metadata first, then C order of the 2×3 unsharded grid; c/0/1 is empty (fill) and
    // not listed.
    assert_eq!(
        keys,
        ["zarr.json", "c/0/0", "c/0/2", "c/1/0", "c/1/1", "c/1/2"]
    );
    assert_eq!(o["c/0/0"], json!(["http://h/a/c/0/0", 0, 8]));
    assert_eq!(o["c/0/2"], json!(["http://h/a/c/0/1", 0, 8]));
    assert_eq!(o["c/1/0"], json!(["http://h/a/c/0/0", 8, 8]));
    assert_eq!(o["c/1/1"], json!(["http://h/a/c/0/0", 16, 8]));
    assert_eq!(o["c/1/2"], json!(["http://h/a/c/0/1", 8, 8]));
    // The metadata is stored as text, and describes the same array unsharded.
    let zarr_json: Value = serde_json::from_str(o["zarr.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        zarr_json["chunk_grid"],
        json!({"name": "regular", "configuration": {"chunk_shape": [2, 2]}})
    );
    assert_eq!(zarr_json["codecs"], bytes_le());
    assert_eq!(zarr_json["shape"], json!([4, 6]));
    assert_eq!(zarr_json["data_type"], json!("uint16"));
    assert_eq!(zarr_json["fill_value"], json!(0));
    assert_eq!(
        zarr_json["chunk_key_encoding"],
        json!({"name": "default", "configuration": {"separator": "/"}})
    );
    // Each reference points at exactly its chunk's bytes.
    let shard00 = std::fs::read(dir.path().join("c/0/0")).unwrap();
    let shard01 = std::fs::read(dir.path().join("c/0/1")).unwrap();
    assert_eq!(&shard00[0..8], elements(0..2, 0..2));
    assert_eq!(&shard00[8..16], elements(2..4, 0..2));
    assert_eq!(&shard00[16..24], elements(2..4, 2..4));
    assert_eq!(&shard01[0..8], elements(0..2, 4..6));
    assert_eq!(&shard01[8..16], elements(2..4, 4..6));
}

#[test]
fn json_v1_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    small_array(dir.path());
    let set = refs(dir.path(), V2)
        .unwrap()
        .to_json_v1("file:///data/a", Some("img"));
    assert_eq!(set["version"], json!(1));
    assert_eq!(set["templates"], json!({"u": "file:///data/a"}));
    assert!(set.get("gen").is_none());
    let r = set["refs"].as_object().unwrap();
    let keys: Vec<&str> = r.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "img/.zarray",
            "img/0.0",
            "img/0.2",
            "img/1.0",
            "img/1.1",
            "img/1.2"
        ]
    );
    assert_eq!(r["img/1.1"], json!(["{{u}}/c/0/0", 16, 8]));
    assert_eq!(r["img/0.2"], json!(["{{u}}/c/0/1", 0, 8]));
    let zarray: Value = serde_json::from_str(r["img/.zarray"].as_str().unwrap()).unwrap();
    assert_eq!(
        zarray,
        json!({"chunks": [2, 2], "compressor": null, "dimension_separator": ".",
            "dtype": "<u2", "fill_value": 0, "filters": null, "order": "C",
            "shape": [4, 6], "zarr_format": 2})
    );
}

#[test]
fn stored_padding_chunks_are_not_referenced() {
    let dir = tempfile::tempdir().unwrap();
    let data = small_array(dir.path());
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let options = zarrshard::WriteOptions {
        store_fill_chunks: true,
        ..Default::default()
    };
    let mut raw = data.clone();
    if cfg!(target_endian = "big") {
        raw.chunks_mut(2).for_each(|e| e.swap(0, 1));
    }
    array
        .import(&mut &raw[..], zarrshard::WriteStrategy::Buffered, options)
        .unwrap();
    let set = refs(dir.path(), MetadataFormat::V3).unwrap();
    let keys: Vec<Vec<u64>> = set.chunks().iter().map(|c| c.coords.clone()).collect();
    // 8 stored inner chunks; the two in columns 6–7 lie outside the array.
    assert_eq!(
        keys,
        [
            vec![0, 0],
            vec![0, 1],
            vec![0, 2],
            vec![1, 0],
            vec![1, 1],
            vec![1, 2]
        ]
    );
}

#[test]
fn transpose_before_sharding() {
    // 2×4 uint8 with transpose [1, 0] before sharding: the codec sees a 4×2 shard of 2×1
    // inner chunks, which are 1×2 chunks of the array.
    let dir = tempfile::tempdir().unwrap();
    let m = meta(
        &[2, 4],
        &[2, 4],
        "uint8",
        json!(0),
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}},
               sharding(&[2, 1], json!([{"name": "bytes"}]))]),
    );
    let data: Vec<u8> = (0..2u8)
        .flat_map(|r| (0..4u8).map(move |c| 10 * r + c + 1))
        .collect();
    common::write_array(dir.path(), &m, &data);
    let set = refs(dir.path(), MetadataFormat::V3).unwrap();
    // Codec chunk (a, b) holds array row b, columns 2a..2a+2: unsharded chunk (b, a).
    let got: Vec<(Vec<u64>, u64)> = set
        .chunks()
        .iter()
        .map(|c| (c.coords.clone(), c.offset))
        .collect();
    assert_eq!(
        got,
        [
            (vec![0, 0], 0),
            (vec![0, 1], 4),
            (vec![1, 0], 2),
            (vec![1, 1], 6)
        ]
    );
    let shard = std::fs::read(dir.path().join("c/0/0")).unwrap();
    assert_eq!(&shard[2..4], [11, 12]); // row 1, columns 0–1
    let doc = &set.unsharded().documents()[0].1;
    assert_eq!(
        doc["chunk_grid"]["configuration"]["chunk_shape"],
        json!([1, 2])
    );
    assert_eq!(
        doc["codecs"],
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, {"name": "bytes"}])
    );
    let v2 = refs(dir.path(), V2).unwrap();
    let zarray = &v2.unsharded().documents()[0].1;
    assert_eq!(zarray["order"], json!("F"));
    assert_eq!(zarray["chunks"], json!([1, 2]));
    assert_eq!(zarray["dtype"], json!("|u1"));
}

#[test]
fn v2_codecs_and_fill_values() {
    let dir = tempfile::tempdir().unwrap();
    let inner = json!([{"name": "bytes", "configuration": {"endian": "big"}}, {"name": "crc32c"},
        {"name": "zstd", "configuration": {"level": 3, "checksum": false}}]);
    let mut m = meta(
        &[4],
        &[4],
        "float64",
        json!("-Infinity"),
        json!([sharding(&[2], inner)]),
    );
    m["attributes"] = json!({"units": "m"});
    m["dimension_names"] = json!(["x"]);
    common::write_array(dir.path(), &m, &[0; 32]);
    let docs = refs(dir.path(), V2)
        .unwrap()
        .unsharded()
        .documents()
        .to_vec();
    assert_eq!(docs[0].1["dtype"], json!(">f8"));
    assert_eq!(docs[0].1["fill_value"], json!("-Infinity"));
    assert_eq!(
        docs[0].1["filters"],
        json!([{"id": "crc32c", "location": "end"}])
    );
    assert_eq!(
        docs[0].1["compressor"],
        json!({"id": "zstd", "level": 3, "checksum": false})
    );
    assert_eq!(
        docs[1],
        (
            ".zattrs".to_string(),
            json!({"units": "m", "_ARRAY_DIMENSIONS": ["x"]})
        )
    );
    let blosc = json!([{"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "bitshuffle",
         "typesize": 4, "blocksize": 0}}]);
    let dir = tempfile::tempdir().unwrap();
    let m = meta(
        &[4],
        &[4],
        "float32",
        json!("NaN"),
        json!([sharding(&[2], blosc)]),
    );
    common::write_array(dir.path(), &m, &[0; 16]);
    let zarray = refs(dir.path(), V2).unwrap().unsharded().documents()[0]
        .1
        .clone();
    assert_eq!(zarray["fill_value"], json!("NaN"));
    assert_eq!(
        zarray["compressor"],
        json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 2, "blocksize": 0})
    );
}

fn error_of(m: Value, format: MetadataFormat) -> String {
    let dir = tempfile::tempdir().unwrap();
    let m2 = zarrshard::ArrayMetadata::from_json(&m).unwrap();
    let n = m2.shape.iter().product::<u64>() as usize * m2.data_type.size();
    common::write_array(dir.path(), &m, &vec![1; n]);
    refs(dir.path(), format).unwrap_err().to_string()
}

#[test]
fn what_cannot_be_referenced() {
    let after = json!([sharding(&[2], bytes_le()), {"name": "crc32c"}]);
    assert_eq!(
        error_of(meta(&[4], &[4], "uint8", json!(0), after), MetadataFormat::V3),
        "invalid argument: codec `crc32c` follows sharding_indexed: it covers whole shards, so inner chunks are not byte ranges of the stored objects"
    );
    assert_eq!(
        error_of(
            meta(&[4], &[4], "uint8", json!(0), bytes_le()),
            MetadataFormat::V3
        ),
        "invalid argument: the array is not sharded: there are no inner chunks to reference"
    );
    let nested = json!([sharding(&[4], json!([sharding(&[2], bytes_le())]))]);
    let m = meta(&[8], &[8], "uint8", json!(0), nested);
    assert_eq!(
        error_of(m.clone(), V2),
        "unsupported codec `sharding_indexed (nested sharding: Zarr v2 has no sharding; use Zarr v3 metadata)`"
    );
    // Zarr v3 keeps the inner sharding codec: the referenced chunk is itself a shard.
    let dir = tempfile::tempdir().unwrap();
    common::write_array(dir.path(), &m, &[1; 8]);
    let set = refs(dir.path(), MetadataFormat::V3).unwrap();
    assert_eq!(set.chunks().len(), 2);
    let doc = &set.unsharded().documents()[0].1;
    assert_eq!(doc["codecs"][0]["name"], json!("sharding_indexed"));
    let t3 = json!([{"name": "transpose", "configuration": {"order": [1, 2, 0]}},
        sharding(&[2, 2, 2], bytes_le())]);
    assert_eq!(
        error_of(meta(&[2, 2, 2], &[2, 2, 2], "uint8", json!(0), t3), V2),
        "unsupported codec `transpose (to stored order [1, 2, 0]; Zarr v2 has only C and F order)`"
    );
    let raw = json!([sharding(&[2], json!([{"name": "bytes"}]))]);
    assert_eq!(
        error_of(meta(&[4], &[4], "r24", json!([0, 0, 0]), raw), V2),
        "invalid argument: data type r24 has no Zarr v2 dtype that readers agree on"
    );
}

#[cfg(feature = "cli")]
fn zarrshard(args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args(args)
        .output()
        .unwrap()
}

#[cfg(feature = "cli")]
#[test]
fn cli_contract() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    small_array(&a);
    let out = dir.path().join("refs.json");
    let (a_s, out_s) = (a.to_str().unwrap(), out.to_str().unwrap());
    let ok = zarrshard(&[
        "refs",
        a_s,
        "--format",
        "json-v0",
        "--url-prefix",
        "http://h/a",
        "-o",
        out_s,
    ]);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let set: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(set["c/1/1"], json!(["http://h/a/c/0/0", 16, 8]));
    let bad = zarrshard(&[
        "refs",
        a_s,
        "--format",
        "parquet",
        "--zarr-format",
        "3",
        "--url-prefix",
        "x",
        "-o",
        out_s,
    ]);
    assert_eq!(bad.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&bad.stderr),
        "zarrshard: invalid argument: --format parquet needs --zarr-format 2: fsspec reads the Parquet layout only with Zarr v2 metadata\n"
    );
    let missing = zarrshard(&[
        "refs",
        "/nonexistent",
        "--format",
        "json-v1",
        "--url-prefix",
        "x",
        "-o",
        out_s,
    ]);
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr).to_string();
    assert!(
        err.starts_with("zarrshard: ") && err.lines().count() == 1,
        "{err}"
    );
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_rows_by_hand() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    small_array(&a);
    let out = dir.path().join("refs.parq");
    let set = refs(&a, V2).unwrap();
    zarrshard::array::refs::write_parquet(&set, "http://h/a", "img", 4, &out).unwrap();
    let zmeta: Value =
        serde_json::from_slice(&std::fs::read(out.join(".zmetadata")).unwrap()).unwrap();
    assert_eq!(zmeta["record_size"], json!(4));
    assert_eq!(zmeta["metadata"][".zgroup"], json!({"zarr_format": 2}));
    assert_eq!(zmeta["metadata"]["img/.zarray"]["chunks"], json!([2, 2]));
    let rows = |n: usize| -> Vec<Vec<Field>> {
        let file = std::fs::File::open(out.join(format!("img/refs.{n}.parq"))).unwrap();
        let reader = SerializedFileReader::new(file).unwrap();
        reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| {
                r.unwrap()
                    .get_column_iter()
                    .map(|(_, f)| f.clone())
                    .collect()
            })
            .collect()
    };
    let url = |s: &str| Field::Str(s.to_string());
    let fill = Field::Bytes(vec![0u8; 8].into());
    // Records 0..4 are keys 0.0 0.1 0.2 1.0; 0.1 is empty: its row carries the encoded fill
    // chunk (eight zero bytes through the `bytes` codec).
    assert_eq!(
        rows(0),
        [
            vec![
                url("http://h/a/c/0/0"),
                Field::Long(0),
                Field::Long(8),
                Field::Null
            ],
            vec![Field::Null, Field::Long(0), Field::Long(0), fill],
            vec![
                url("http://h/a/c/0/1"),
                Field::Long(0),
                Field::Long(8),
                Field::Null
            ],
            vec![
                url("http://h/a/c/0/0"),
                Field::Long(8),
                Field::Long(8),
                Field::Null
            ],
        ]
    );
    assert_eq!(
        rows(1),
        [
            vec![
                url("http://h/a/c/0/0"),
                Field::Long(16),
                Field::Long(8),
                Field::Null
            ],
            vec![
                url("http://h/a/c/0/1"),
                Field::Long(8),
                Field::Long(8),
                Field::Null
            ],
        ]
    );
    assert!(!out.join("img/refs.2.parq").exists());
    // A non-empty output directory is refused; Zarr v3 metadata is refused.
    let again = zarrshard::array::refs::write_parquet(&set, "http://h/a", "img", 4, &out);
    assert!(again
        .unwrap_err()
        .to_string()
        .contains("is not an empty directory"));
    let v3 = refs(&a, MetadataFormat::V3).unwrap();
    let fresh = dir.path().join("v3.parq");
    assert!(
        zarrshard::array::refs::write_parquet(&v3, "u", "img", 4, &fresh)
            .unwrap_err()
            .to_string()
            .contains("needs Zarr v2 metadata")
    );
}

#[test]
fn v2_prototype_arrays_reference_their_shard_keys() {
    // A Zarr v2 sharding-prototype array: 2×1 chunks of 2×2 per shard, shard keys `0.0`, `0.1`.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".zarray"),
        r#"{"zarr_format": 2, "shape": [4, 4], "chunks": [2, 2], "shards": [2, 1],
            "shard_format": "indexed", "dtype": "<u2", "compressor": {"id": "zlib", "level": 1},
            "fill_value": 0,
            "order": "C", "filters": null, "dimension_separator": "."}"#,
    )
    .unwrap();
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let raw: Vec<u8> = (1..=16u16).flat_map(|v| v.to_le_bytes()).collect();
    array
        .import(
            &mut &raw[..],
            zarrshard::WriteStrategy::Buffered,
            Default::default(),
        )
        .unwrap();
    let set = References::from_array(&array, V2).unwrap();
    // Unsharded chunk (r, c) is inner chunk (r, 0) of shard 0.c, in C order.
    let got: Vec<(Vec<u64>, String)> = set
        .chunks()
        .iter()
        .map(|c| (c.coords.clone(), c.shard_key.clone()))
        .collect();
    let want = [
        ([0, 0], "0.0"),
        ([0, 1], "0.1"),
        ([1, 0], "0.0"),
        ([1, 1], "0.1"),
    ];
    assert_eq!(got, want.map(|(c, k)| (c.to_vec(), k.to_string())).to_vec());
    // (1, 0) follows (0, 0) in shard 0.0.
    assert_eq!(set.chunks()[0].offset, 0);
    assert_eq!(set.chunks()[2].offset, set.chunks()[0].nbytes);
    let zarray = &set.unsharded().documents()[0].1;
    assert_eq!(zarray["compressor"], json!({"id": "zlib", "level": 1}));
    // In Zarr v3 metadata zlib is written by the name zarr-python reads.
    let v3 = References::from_array(&array, MetadataFormat::V3).unwrap();
    assert_eq!(
        v3.unsharded().documents()[0].1["codecs"][1],
        json!({"name": "numcodecs.zlib", "configuration": {"level": 1}})
    );
}

/// A uint64 array of 4 elements, shard of 4, inner chunks of 2, little-endian `bytes`, whose
/// fill value's bytes spell `base64:A`; elements 1, 2, fill, fill (so inner chunk 1 is empty).
#[cfg(feature = "parquet")]
fn base64_fill_array(dir: &Path) -> u64 {
    let fill = u64::from_le_bytes(*b"base64:A");
    let m = meta(
        &[4],
        &[4],
        "uint64",
        json!(fill),
        json!([sharding(&[2], bytes_le())]),
    );
    let data: Vec<u8> = [1u64, 2, fill, fill]
        .iter()
        .flat_map(|v| v.to_ne_bytes())
        .collect();
    common::write_array(dir, &m, &data);
    fill
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_fill_chunks_that_start_with_base64_are_written_as_base64() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    base64_fill_array(&a);
    let out = dir.path().join("pq");
    zarrshard::array::refs::write_parquet(&refs(&a, V2).unwrap(), "file:///x", "b", 10, &out)
        .unwrap();
    let file = std::fs::File::open(out.join("b/refs.0.parq")).unwrap();
    let rows: Vec<Vec<Field>> = SerializedFileReader::new(file)
        .unwrap()
        .get_row_iter(None)
        .unwrap()
        .map(|r| {
            r.unwrap()
                .get_column_iter()
                .map(|(_, f)| f.clone())
                .collect()
        })
        .collect();
    // fsspec base64-decodes an inline value that starts with `base64:`: the encoded fill chunk
    // (b"base64:Abase64:A") is written as `base64:` + its base64 (Python:
    // base64.b64encode(b"base64:Abase64:A") == b"YmFzZTY0OkFiYXNlNjQ6QQ==").
    assert_eq!(
        rows,
        [
            vec![
                Field::Str("file:///x/c/0".into()),
                Field::Long(0),
                Field::Long(16),
                Field::Null
            ],
            vec![
                Field::Null,
                Field::Long(0),
                Field::Long(0),
                Field::Bytes(b"base64:YmFzZTY0OkFiYXNlNjQ6QQ==".to_vec().into())
            ],
        ]
    );
}

/// A v3-draft hierarchy at `root` with one 4-element `<u2` array at hierarchy path `path`
/// (chunks of 2, two per shard: one shard `c0`), values 1, 2, 3, 4 imported.
fn draft_with_data(root: &Path, path: &str) -> Array<FsStore> {
    std::fs::create_dir_all(root.join("meta/root").join(path).parent().unwrap()).unwrap();
    std::fs::write(
        root.join("zarr.json"),
        json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        root.join(format!("meta/root/{path}.array.json")),
        json!({"shape": [4],
        "data_type": "<u2", "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": null, "fill_value": 7, "extensions": [],
        "attributes": {}, "storage_transformers": [{"extension":
            "https://purl.org/zarr/spec/storage_transformers/sharding/1.0", "type": "indexed",
            "configuration": {"chunks_per_shard": [2]}}]})
        .to_string(),
    )
    .unwrap();
    let array = Array::open_v3_draft(FsStore::new(root), path).unwrap();
    let data: Vec<u8> = [1u16, 2, 3, 4]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    array
        .import(
            &mut &data[..],
            zarrshard::WriteStrategy::Buffered,
            Default::default(),
        )
        .unwrap();
    array
}

#[test]
fn json_v1_shard_keys_with_braces_survive_fsspec_templates() {
    // fsspec (simple_templates, its default) turns `{{`/`}}` into `{`/`}` and then calls
    // Python's str.format(u=PREFIX): a brace in the shard key must not reach str.format
    // unescaped. What it does with each reference, in Rust:
    fn fsspec(url: &str, u: &str) -> String {
        if !url.contains("{{") {
            return url.to_string(); // taken as it is
        }
        let s = url.replace("{{", "{").replace("}}", "}");
        // str.format with one field `u`; `{{`/`}}` are literal braces, any other brace an error.
        let (mut out, mut chars) = (String::new(), s.chars().peekable());
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    out.push(c);
                    chars.next();
                }
                ('{', _) => {
                    let field: String = chars.by_ref().take_while(|&c| c != '}').collect();
                    assert_eq!(field, "u", "str.format raises KeyError on {url:?}");
                    out.push_str(u);
                }
                ('}', _) => panic!("str.format raises ValueError on {url:?}"),
                _ => out.push(c),
            }
        }
        out
    }
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        // key, what the reference is written as
        ("plain/a", "{{u}}/data/root/plain/a/c0"),
        // A brace but no `{{` in the whole URL: the URL itself, which fsspec leaves alone.
        ("g{x}/a", "file:///r/data/root/g{x}/a/c0"),
        ("g}/a", "file:///r/data/root/g}/a/c0"),
        // `{{` in the key: escaped for str.format.
        ("g{{x}}/a", "{{u}}/data/root/g{{{{{{{{x}}}}}}}}/a/c0"),
    ];
    for (n, (path, want)) in cases.iter().enumerate() {
        let root = tmp.path().join(format!("h{n}"));
        let array = draft_with_data(&root, path);
        let set = References::from_array(&array, MetadataFormat::V3)
            .unwrap()
            .to_json_v1("file:///r", None);
        let url = set["refs"]["c/0"][0].as_str().unwrap();
        assert_eq!(url, *want, "{path}");
        assert_eq!(
            fsspec(url, "file:///r"),
            format!("file:///r/data/root/{path}/c0"),
            "{path}"
        );
        assert_eq!(set["refs"]["c/1"][0], set["refs"]["c/0"][0]);
    }
}

#[test]
fn url_prefixes_lose_one_trailing_slash_only() {
    let dir = tempfile::tempdir().unwrap();
    small_array(dir.path());
    let set = refs(dir.path(), MetadataFormat::V3).unwrap();
    // `file:///` + `c/0/0` is the absolute path /c/0/0, not `file:/c/0/0`.
    for (prefix, want) in [
        ("file:///", "file:///c/0/0"),
        ("http://h/a/", "http://h/a/c/0/0"),
        ("http://h/a", "http://h/a/c/0/0"),
    ] {
        assert_eq!(set.to_json_v0(prefix, None)["c/0/0"][0], json!(want));
        let v1 = set.to_json_v1(prefix, None);
        let u = v1["templates"]["u"].as_str().unwrap();
        let reference = v1["refs"]["c/0/0"][0].as_str().unwrap();
        assert_eq!(reference.replace("{{u}}", u), want);
    }
}

#[test]
fn from_parts_refuses_duplicates_and_chunks_outside_the_grid() {
    use zarrshard::array::refs::{ChunkRef, Unsharded};
    let dir = tempfile::tempdir().unwrap();
    small_array(dir.path());
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let unsharded = || Unsharded::new(array.metadata(), MetadataFormat::V3).unwrap();
    let at = |coords: &[u64], offset: u64| ChunkRef {
        coords: coords.to_vec(),
        shard_key: "c/0/0".into(),
        offset,
        nbytes: 8,
    };
    // The unsharded grid is 2×3.
    let ok = References::from_parts(unsharded(), vec![at(&[1, 2], 8), at(&[0, 0], 0)]).unwrap();
    let coords: Vec<&[u64]> = ok.chunks().iter().map(|c| &c.coords[..]).collect();
    assert_eq!(coords, [&[0, 0][..], &[1, 2][..]]);
    for (chunks, want) in [
        (
            vec![at(&[0, 1], 0), at(&[0, 1], 8)],
            "invalid argument: two references to chunk [0, 1]",
        ),
        (
            vec![at(&[0, 3], 0)],
            "invalid argument: chunk reference [0, 3] is outside the chunk grid [2, 3]",
        ),
        (
            vec![at(&[2, 0], 0)],
            "invalid argument: chunk reference [2, 0] is outside the chunk grid [2, 3]",
        ),
        (
            vec![at(&[0], 0)],
            "invalid argument: chunk reference [0] is outside the chunk grid [2, 3]",
        ),
    ] {
        let e = References::from_parts(unsharded(), chunks).unwrap_err();
        assert_eq!(e.to_string(), want);
    }
}

/// A store over `inner` that records the threads its shard objects are opened on, can ask for
/// its I/O on the calling thread, and fails for the keys in `fail`.
struct Recording {
    inner: zarrshard::MemoryStore,
    caller_only: bool,
    fail: Vec<&'static str>,
    threads: Arc<Mutex<HashSet<ThreadId>>>,
}

impl Store for Recording {
    fn shard_io(&self, key: &str) -> zarrshard::Result<Box<dyn zarrshard::storage::io::ShardIo>> {
        if key.starts_with("c/") {
            self.threads
                .lock()
                .unwrap()
                .insert(std::thread::current().id());
        }
        if self.fail.contains(&key) {
            return Err(zarrshard::Error::Io {
                code: 5,
                message: format!("no {key}"),
            });
        }
        self.inner.shard_io(key)
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrshard::Result<()> {
        self.inner.set(key, value)
    }
    fn io_on_caller_thread(&self) -> bool {
        self.caller_only
    }
}

/// The reference set of `store`'s array through a [`Recording`] store, with 2 threads; and the
/// threads that opened shard objects.
fn recorded_refs(
    store: &zarrshard::MemoryStore,
    caller_only: bool,
    fail: Vec<&'static str>,
) -> (zarrshard::Result<References>, HashSet<ThreadId>) {
    let threads = Arc::new(Mutex::new(HashSet::new()));
    let s = Recording {
        inner: store.clone(),
        caller_only,
        fail,
        threads: threads.clone(),
    };
    zarrshard::set_threads(2).unwrap();
    let refs = References::from_array(&Array::open(s).unwrap(), V2);
    zarrshard::set_threads(0).unwrap();
    let seen = threads.lock().unwrap().clone();
    (refs, seen)
}

/// The index reads of a reference set run on the pool (one read per shard: with a remote
/// store, one wait per shard when they ran one after another), on the calling thread when the
/// store asks; the set is the same either way, and so is the error: the first failing shard's
/// in C order, though a later one fails too.
#[test]
fn index_reads_run_on_the_pool_unless_the_store_asks_otherwise() {
    // 8x8 shards of 2x2 elements, 1x1 inner chunks; shards s with s % 3 == 0 (row-major
    // number) stay all fill, so they are not stored.
    let m = meta(
        &[16, 16],
        &[2, 2],
        "uint8",
        json!(0),
        json!([sharding(&[1, 1], json!([{"name": "bytes"}]))]),
    );
    let store = zarrshard::MemoryStore::new();
    let meta = zarrshard::ArrayMetadata::from_json(&m).unwrap();
    let array = Array::create(store.clone(), meta).unwrap();
    let data: Vec<u8> = (0..256u32)
        .map(|i| {
            let (r, c) = (i / 16, i % 16);
            match ((r / 2) * 8 + c / 2) % 3 {
                0 => 0,
                _ => (i % 250 + 1) as u8,
            }
        })
        .collect();
    array.write_region(&[0, 0], &[16, 16], &data).unwrap();
    let stored = (0..64).filter(|s| s % 3 != 0).count();
    let shard_keys = store
        .keys()
        .into_iter()
        .filter(|k| k.starts_with("c/"))
        .count();
    assert_eq!(shard_keys, stored);

    let me = std::thread::current().id();
    let (pooled, pool_threads) = recorded_refs(&store, false, vec![]);
    let (here, here_threads) = recorded_refs(&store, true, vec![]);
    let listed = |r: &References| -> Vec<(Vec<u64>, String, u64, u64)> {
        r.chunks()
            .iter()
            .map(|c| (c.coords.clone(), c.shard_key.clone(), c.offset, c.nbytes))
            .collect()
    };
    let (pooled, here) = (listed(&pooled.unwrap()), listed(&here.unwrap()));
    // Every stored chunk once, in C order of the chunk grid, the same from both.
    assert_eq!(pooled.len(), stored * 4);
    let mut sorted = pooled.clone();
    sorted.sort_by_key(|c| c.0[0] * 16 + c.0[1]);
    assert_eq!(pooled, sorted);
    assert_eq!(pooled, here);
    assert_eq!(here_threads, HashSet::from([me]));
    assert!(!pool_threads.contains(&me), "{pool_threads:?}");

    // Two shards fail (c/0/4, and c/6/2 later in C order): the first one's error, every time.
    for caller_only in [false, true, false, false, false] {
        let (refs, _) = recorded_refs(&store, caller_only, vec!["c/6/2", "c/0/4"]);
        assert_eq!(
            refs.unwrap_err().to_string(),
            "I/O error (code 5): no c/0/4"
        );
    }
}

/// 3-D uint8 6×8×6 with a transpose [2, 1, 0] (F order) before sharding, shards 2×4×3 (a
/// 3×2×2 grid) of inner chunks that are 1×1×2 to the codec, 2×1×1 in the array (a 3×8×6
/// unsharded grid): a row of chunks (i, j, 0..6) spans two shards of one slab (same first
/// grid coordinate), so C order interleaves their chunks. Elements are 1 + their index mod
/// 250, except the first 2×8×6 block, all fill (0): the first slab of shards is empty.
fn slab_array(dir: &Path) {
    let m = meta(
        &[6, 8, 6],
        &[2, 4, 3],
        "uint8",
        json!(0),
        json!([{"name": "transpose", "configuration": {"order": [2, 1, 0]}},
               sharding(&[1, 1, 2], json!([{"name": "bytes"}]))]),
    );
    let data: Vec<u8> = (0..6 * 8 * 6)
        .map(|i| if i < 96 { 0 } else { (i % 250 + 1) as u8 })
        .collect();
    common::write_array(dir, &m, &data);
}

/// Every key of a JSON set's references after the metadata, in the text's order.
fn chunk_keys_in_order(text: &[u8], v1: bool) -> Vec<String> {
    let set: serde_json::Map<String, Value> = serde_json::from_slice(text).unwrap();
    let refs = if v1 {
        set["refs"].as_object().unwrap().clone()
    } else {
        set
    };
    refs.iter()
        .filter(|(_, v)| v.is_array())
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn json_streamed_from_the_array_is_the_whole_sets_text() {
    use zarrshard::array::refs::{write_json_from_array, JsonVersion};
    let dir = tempfile::tempdir().unwrap();
    slab_array(dir.path());
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let v2_slash = MetadataFormat::V2 { separator: '/' };
    for format in [MetadataFormat::V3, V2, v2_slash] {
        let whole = References::from_array(&array, format).unwrap();
        // The last 2 of 3 slabs stored: 2×8×6 chunks.
        assert_eq!(whole.chunks().len(), 96);
        for version in [JsonVersion::V0, JsonVersion::V1] {
            for name in [None, Some("img")] {
                let mut streamed = Vec::new();
                write_json_from_array(&array, format, version, "s3://b/a/", name, &mut streamed)
                    .unwrap();
                let mut text = Vec::new();
                whole
                    .write_json(&mut text, version, "s3://b/a/", name)
                    .unwrap();
                assert!(streamed == text, "{format:?} {version:?} {name:?}");
                // The chunks in C order of the unsharded 3×8×6 grid, whatever the shards.
                let keys = chunk_keys_in_order(&streamed, version == JsonVersion::V1);
                let sep = if format == v2_slash { "/" } else { "." };
                let mut want = Vec::new();
                for i in 1..3 {
                    for j in 0..8 {
                        for k in 0..6 {
                            let key = match format {
                                MetadataFormat::V3 => format!("c/{i}/{j}/{k}"),
                                _ => format!("{i}{sep}{j}{sep}{k}"),
                            };
                            want.push(name.map_or(key.clone(), |n| format!("{n}/{key}")));
                        }
                    }
                }
                assert_eq!(keys, want);
            }
        }
    }
}

/// A 384×640 uint8 array of 3×5 shards of 128×128 one-element inner chunks, a few stored per
/// shard (shard [1, 2] none, so not stored). Such shards (16384 inner chunks) are read 4 at a
/// time (65 536 references a batch), so every batch but the first ends inside a slab of 5.
/// Returns the stored chunks' coordinates, in C order.
fn slab_straddling_array(dir: &Path) -> Vec<(u64, u64)> {
    let (rows, cols) = (3 * 128, 5 * 128);
    let m = meta(
        &[rows, cols],
        &[128, 128],
        "uint8",
        json!(0),
        json!([sharding(&[1, 1], bytes_le())]),
    );
    let stored = |r: u64, c: u64| (r + 3 * c) % 101 == 0 && !(r / 128 == 1 && c / 128 == 2);
    let mut data = vec![0u8; (rows * cols) as usize];
    let mut coords = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            if stored(r, c) {
                data[(r * cols + c) as usize] = 1 + (r % 200) as u8;
                coords.push((r, c));
            }
        }
    }
    common::write_array(dir, &m, &data);
    assert!(!dir.join("c/1/2").exists());
    coords
}

/// The text must hold each slab's chunks in C order even when a batch of index reads ends
/// inside a slab (the slab goes on in the next batch).
#[test]
fn json_streamed_in_batches_that_end_inside_slabs_is_the_whole_sets_text() {
    use zarrshard::array::refs::{write_json_from_array, JsonVersion};
    let dir = tempfile::tempdir().unwrap();
    let want: Vec<String> = (slab_straddling_array(dir.path()).iter())
        .map(|(r, c)| format!("c/{r}/{c}"))
        .collect();
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let whole = References::from_array(&array, MetadataFormat::V3).unwrap();
    assert_eq!(whole.chunks().len(), want.len());
    for version in [JsonVersion::V0, JsonVersion::V1] {
        let mut streamed = Vec::new();
        write_json_from_array(
            &array,
            MetadataFormat::V3,
            version,
            "u",
            None,
            &mut streamed,
        )
        .unwrap();
        let mut text = Vec::new();
        whole.write_json(&mut text, version, "u", None).unwrap();
        assert!(streamed == text, "{version:?}");
        assert_eq!(
            chunk_keys_in_order(&streamed, version == JsonVersion::V1),
            want
        );
    }
}

/// The files of a directory, by path below it, with their bytes.
#[cfg(feature = "parquet")]
fn files_below(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    (common::files_below(dir).into_iter())
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap();
            (p.strip_prefix(dir).unwrap().to_path_buf(), bytes)
        })
        .collect()
}

/// Parquet written as the shards are read is the whole set's, file for file and byte for
/// byte: files cut inside slabs and inside batches, files of empty rows only, and a last
/// short file; through a directory and through a store.
#[cfg(feature = "parquet")]
#[test]
fn parquet_streamed_from_the_array_is_the_whole_sets_files() {
    use zarrshard::array::refs::{
        write_parquet, write_parquet_from_array, write_parquet_from_array_to,
    };
    let dir = tempfile::tempdir().unwrap();
    let (straddling, slabs) = (dir.path().join("straddling"), dir.path().join("slabs"));
    slab_straddling_array(&straddling);
    slab_array(&slabs);
    // 245 760 and 144 chunks: files of 9973 rows (the last of 6 433), 7 (the last of 4) and
    // one file for the whole grid.
    let cases = [
        (&straddling, 245_760, [9973, 300_000]),
        (&slabs, 144, [7, 144]),
    ];
    for (array_dir, chunks, record_sizes) in cases {
        let array = Array::open(FsStore::new(array_dir)).unwrap();
        let whole = References::from_array(&array, V2).unwrap();
        for record_size in record_sizes {
            let (a, b) = (dir.path().join("a"), dir.path().join("b"));
            write_parquet(&whole, "s3://b/x", "img", record_size, &a).unwrap();
            write_parquet_from_array(&array, "s3://b/x", "img", record_size, &b).unwrap();
            let (a_files, b_files) = (files_below(&a), files_below(&b));
            assert_eq!(a_files.len() as u64, 1 + u64::div_ceil(chunks, record_size));
            assert!(a_files == b_files, "{array_dir:?} {record_size}");
            let c = tempfile::tempdir().unwrap();
            write_parquet_from_array_to(
                &array,
                "s3://b/x",
                "img",
                record_size,
                &FsStore::new(c.path()),
            )
            .unwrap();
            assert!(
                files_below(c.path()) == a_files,
                "{array_dir:?} {record_size}"
            );
            std::fs::remove_dir_all(&a).unwrap();
            std::fs::remove_dir_all(&b).unwrap();
        }
    }
}

/// A shard failing part way: the whole set's error, the files before it written, no
/// `.zmetadata`; a bad name or record size, or a directory in use, before any file.
#[cfg(feature = "parquet")]
#[test]
fn parquet_streamed_from_the_array_fails_as_the_whole_set_does() {
    use zarrshard::array::refs::write_parquet_from_array;
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a");
    slab_straddling_array(&a);
    // The last shard torn (its index gone): it is in the last batch (shards [2, 2] to
    // [2, 4]), so the two slabs before it (rows 0..256: chunks 0..163 840) are written first.
    std::fs::write(a.join("c/2/4"), [1, 2, 3]).unwrap();
    let array = Array::open(FsStore::new(&a)).unwrap();
    let whole = References::from_array(&array, V2).unwrap_err();
    let out = dir.path().join("out");
    let err = write_parquet_from_array(&array, "u", "img", 10_000, &out).unwrap_err();
    assert_eq!(err.to_string(), whole.to_string());
    assert_eq!(
        err.to_string(),
        "c/2/4: corrupt shard: object is 3 bytes, index needs 262144: torn write? try `zarrshard repair`"
    );
    // Files 0..=15 hold chunks 0..160 000; file 16 would need chunks of the last slab.
    let mut written: Vec<String> = (0..16).map(|n| format!("img/refs.{n}.parq")).collect();
    written.sort();
    let mut found: Vec<String> = files_below(&out)
        .keys()
        .map(|p| p.to_str().unwrap().to_string())
        .collect();
    found.sort();
    assert_eq!(found, written);

    // A failure before the first file is complete leaves no directory.
    let b = dir.path().join("b");
    slab_array(&b);
    std::fs::write(b.join("c/2/1/1"), [1, 2, 3]).unwrap();
    let torn_early = Array::open(FsStore::new(&b)).unwrap();
    let fresh = dir.path().join("fresh");
    let err = write_parquet_from_array(&torn_early, "u", "img", 10, &fresh).unwrap_err();
    assert_eq!(
        err.to_string(),
        "c/2/1/1: corrupt shard: object is 3 bytes, index needs 192: torn write? try `zarrshard repair`"
    );
    assert!(!fresh.exists());

    let bad_name = write_parquet_from_array(&array, "u", ".zarray", 10, &fresh).unwrap_err();
    assert_eq!(
        bad_name.to_string(),
        "invalid argument: invalid array name `.zarray`"
    );
    let bad_size = write_parquet_from_array(&array, "u", "img", 0, &fresh).unwrap_err();
    assert_eq!(
        bad_size.to_string(),
        "invalid argument: record size must be at least 1"
    );
    let in_use = write_parquet_from_array(&array, "u", "img", 10, &out).unwrap_err();
    assert!(
        in_use
            .to_string()
            .ends_with("exists and is not an empty directory"),
        "{in_use}"
    );
    assert!(!fresh.exists());
}

#[test]
fn json_streamed_from_the_array_fails_as_the_whole_set_does() {
    use zarrshard::array::refs::{write_json_from_array, JsonVersion};
    let dir = tempfile::tempdir().unwrap();
    slab_array(dir.path());
    // A torn shard in the last slab: its index is gone.
    std::fs::write(dir.path().join("c/2/1/1"), [1, 2, 3]).unwrap();
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let whole = References::from_array(&array, MetadataFormat::V3).unwrap_err();
    let mut streamed = Vec::new();
    let err = write_json_from_array(
        &array,
        MetadataFormat::V3,
        JsonVersion::V0,
        "u",
        None,
        &mut streamed,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), whole.to_string());
    assert_eq!(
        err.to_string(),
        "c/2/1/1: corrupt shard: object is 3 bytes, index needs 192: torn write? try `zarrshard repair`"
    );

    // A failing writer: its error, with its OS error number.
    struct Full;
    impl std::io::Write for Full {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::Error::from_raw_os_error(28))
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    std::fs::remove_file(dir.path().join("c/2/1/1")).unwrap();
    let err = write_json_from_array(
        &array,
        MetadataFormat::V3,
        JsonVersion::V1,
        "u",
        None,
        &mut Full,
    )
    .unwrap_err();
    assert!(
        matches!(&err, zarrshard::Error::Io { code: 28, message }
            if message.starts_with("writing the reference set: No space left on device")),
        "{err}"
    );
}

/// Run `zarrshard ARGS`, killed after `secs` seconds: `None` when it had to be killed.
#[cfg(feature = "cli")]
fn zarrshard_within(args: &[&str], secs: u64) -> Option<std::process::Output> {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed().as_secs() >= secs {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[cfg(feature = "cli")]
#[test]
fn parquet_refuses_a_grid_past_its_row_limit_before_writing_anything() {
    // Shape [2^64-1, 16] in inner chunks of [1, 16]: 2^64-1 rows, one per inner chunk, with
    // nothing stored. Writing them would fill the disk; the set is refused up front.
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("huge.zarr");
    let m = meta(
        &[u64::MAX, 16],
        &[4, 16],
        "uint8",
        json!(0),
        json!([sharding(&[1, 16], bytes_le())]),
    );
    std::fs::create_dir_all(&array).unwrap();
    std::fs::write(array.join("zarr.json"), m.to_string()).unwrap();
    let out = dir.path().join("refs");
    let a = array.to_str().unwrap();
    let o = out.to_str().unwrap();
    let args = [
        "refs",
        a,
        "--format",
        "parquet",
        "--url-prefix",
        "file:///x",
        "-o",
        o,
    ];
    let done = zarrshard_within(&args, 20);
    let listing = || std::fs::read_dir(&out).map(|d| d.count()).ok();
    let done = done.unwrap_or_else(|| panic!("still writing after 20 s: {:?}", listing()));
    assert_eq!(done.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&done.stderr),
        format!(
            "zarrshard: invalid argument: the Parquet layout has one row per inner chunk, stored or not: the chunk grid [{}, 1] has more than 100000000 (the limit); a JSON reference set lists only the stored chunks\n",
            u64::MAX
        )
    );
    assert!(!out.exists(), "nothing is created");
    assert_eq!(zarrshard::array::refs::MAX_PARQUET_ROWS, 100_000_000);
    // The JSON formats list only stored chunks: the same grid is a set of metadata alone.
    let json_out = dir.path().join("refs.json");
    let j = json_out.to_str().unwrap();
    let args = [
        "refs",
        a,
        "--format",
        "json-v1",
        "--url-prefix",
        "file:///x",
        "-o",
        j,
    ];
    let done = zarrshard_within(&args, 60).expect("JSON of an empty grid is quick");
    assert_eq!(done.status.code(), Some(0), "{:?}", done);
    let set: Value = serde_json::from_slice(&std::fs::read(&json_out).unwrap()).unwrap();
    assert_eq!(set["refs"].as_object().unwrap().len(), 1, "zarr.json only");
}

#[test]
fn json_v1_url_prefixes_with_template_braces_are_written_without_templates() {
    // fsspec renders a template value holding `{{` with jinja (the value becomes a function,
    // the reference its repr), and otherwise fills `{{u}}` with str.format, which leaves the
    // value as it is. `fsspec` below is that second step, for a prefix without `{{`.
    fn fsspec(url: &str, u: &str) -> String {
        match url.strip_prefix("{{u}}") {
            Some(rest) if !rest.contains(['{', '}']) => format!("{u}{rest}"),
            _ => url.to_string(),
        }
    }
    let dir = tempfile::tempdir().unwrap();
    small_array(dir.path());
    let set = refs(dir.path(), MetadataFormat::V3).unwrap();
    for prefix in [
        "file:///d/p{{x}}",
        "file:///d/ünï{{cödé}} 漢",
        "file:///d/p}}y",
        "file:///d/p{u}",
        "file:///d/\"q\" 'r'",
        "file:///d/with  spaces",
    ] {
        let v1 = set.to_json_v1(prefix, None);
        let url = v1["refs"]["c/1/1"][0].as_str().unwrap();
        if prefix.contains("{{") {
            assert_eq!(v1["templates"], json!({}), "{prefix}");
            assert_eq!(url, format!("{prefix}/c/0/0"), "verbatim: {prefix}");
        } else {
            assert_eq!(v1["templates"], json!({"u": prefix}), "{prefix}");
            assert_eq!(url, "{{u}}/c/0/0");
            assert_eq!(fsspec(url, prefix), format!("{prefix}/c/0/0"));
        }
        // The same references as version 0, which has no templates.
        let v0 = set.to_json_v0(prefix, None);
        assert_eq!(v0["c/1/1"][0], json!(format!("{prefix}/c/0/0")));
    }
}
