//! `zarrshard refs` of an array with a million stored inner chunks writes JSON v0, v1 and
//! Parquet as it reads the shards, so its memory is bounded by a batch of index reads and one
//! slab of shards, not by the set: holding the set's references alone takes some 150 bytes a
//! chunk (150 MiB here; the JSON tree that preceded them, 560 MB and more). Alone in its test
//! binary, so the peak resident size of its children is these commands'.

#![cfg(feature = "parquet")]

use serde_json::json;
use std::process::Command;
use zarrshard::{Array, ArrayMetadata, FsStore};

#[test]
fn refs_of_a_million_chunks_need_memory_of_a_batch_and_a_slab() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    // 1024×1024 uint8 in 8×8 shards of 128×128 one-element inner chunks, every one stored:
    // 1 048 576 references, slabs of 8 shards (131 072), index reads 4 shards at a time.
    let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [1024, 1024],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [128, 128]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1, 1], "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "end"}}]});
    let array = Array::create(FsStore::new(&a), ArrayMetadata::from_json(&meta).unwrap()).unwrap();
    let data: Vec<u8> = (0..1024 * 1024).map(|i| (i % 255 + 1) as u8).collect();
    array.write_region(&[0, 0], &[1024, 1024], &data).unwrap();
    drop(array);

    let refs = |format: &str, out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .args(["-q", "refs", a.to_str().unwrap(), "--format", format])
            .args(["--url-prefix", "x", "-o"])
            .arg(tmp.path().join(out))
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    };
    refs("json-v0", "v0.json");
    refs("json-v1", "v1.json");
    refs("parquet", "pq");
    // Every chunk is in the sets: the last one last (the last of its shard's 16 384 one-byte
    // chunks, written in C order; the tool ends the text with a newline), and Parquet's 105
    // files of 10 000 rows.
    let v0 = std::fs::read_to_string(tmp.path().join("v0.json")).unwrap();
    let end = &v0[v0.len() - 40..];
    assert!(
        end.ends_with("\"c/1023/1023\":[\"x/c/7/7\",16383,1]}\n"),
        "{end:?}"
    );
    let files = std::fs::read_dir(tmp.path().join("pq/a")).unwrap().count();
    assert_eq!(files, 105);

    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    // A batch (65 536 references) and a slab (131 072) at ~150 bytes, the write buffers and
    // the pool: ~50 MiB measured; the set alone would be 150 MiB.
    let max_rss_mib = ru.ru_maxrss / 1024; // KiB on Linux
    assert!(
        max_rss_mib < 96,
        "peak resident size {max_rss_mib} MiB for a set of 1 048 576 references"
    );
    eprintln!("peak resident size: {max_rss_mib} MiB");
}
