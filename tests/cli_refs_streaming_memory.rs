//! `zarrshard refs` of an array with a million stored inner chunks writes JSON v0, v1 and
//! Parquet as it reads the shards, so its memory is bounded by a batch of index reads and one
//! slab of shards, held as their indexes (16 bytes an inner chunk) and the order of their
//! stored chunks (24 bytes each), not by the set: the set's references alone take some 150
//! bytes a chunk (150 MiB here; the JSON tree that preceded them, 560 MB and more). Alone in
//! its test binary, so the peak resident size of its children is these commands'.

#![cfg(feature = "parquet")]

use serde_json::json;
use std::path::Path;
use std::process::Command;
use zarrshard::{Array, ArrayMetadata, FsStore};

/// A 1024×1024 uint8 array of one-element inner chunks, every one stored (1 048 576
/// references), in shards of `shard` elements, at `dir`.
fn million_chunks(dir: &Path, shard: [u64; 2]) {
    let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [1024, 1024],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [1, 1], "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_location": "end"}}]});
    let array = Array::create(FsStore::new(dir), ArrayMetadata::from_json(&meta).unwrap()).unwrap();
    let data: Vec<u8> = (0..1024 * 1024).map(|i| (i % 255 + 1) as u8).collect();
    array.write_region(&[0, 0], &[1024, 1024], &data).unwrap();
}

#[test]
fn refs_of_a_million_chunks_need_memory_of_a_batch_and_a_slab() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    // 8×8 shards of 128×128: slabs of 8 shards (131 072 chunks), index reads 4 at a time.
    million_chunks(&a, [128, 128]);
    // 1×8 shards of 1024×128: one slab, the whole grid (a shard spanning the first axis, as a
    // time series' often does).
    million_chunks(&b, [1024, 128]);

    let refs = |array: &Path, format: &str, out: &str| {
        let o = Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .args(["-q", "refs", array.to_str().unwrap(), "--format", format])
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
    refs(&a, "json-v0", "v0.json");
    refs(&a, "json-v1", "v1.json");
    refs(&a, "parquet", "pq");
    refs(&b, "json-v0", "b.json");
    refs(&b, "parquet", "bpq");
    // Every chunk is in the sets: the last one last (the last of its shard's one-byte chunks,
    // written in C order; the tool ends the text with a newline), and Parquet's 105 files of
    // 10 000 rows.
    let v0 = std::fs::read_to_string(tmp.path().join("v0.json")).unwrap();
    let end = &v0[v0.len() - 40..];
    assert!(
        end.ends_with("\"c/1023/1023\":[\"x/c/7/7\",16383,1]}\n"),
        "{end:?}"
    );
    let b0 = std::fs::read_to_string(tmp.path().join("b.json")).unwrap();
    let end = &b0[b0.len() - 42..];
    assert!(
        end.ends_with("\"c/1023/1023\":[\"x/c/0/7\",131071,1]}\n"),
        "{end:?}"
    );
    for (dir, array) in [("pq", "a"), ("bpq", "b")] {
        let files = std::fs::read_dir(tmp.path().join(dir).join(array))
            .unwrap()
            .count();
        assert_eq!(files, 105, "{dir}");
    }

    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    // The largest of the five: the one-slab array's, its indexes (16 MiB) and the order of its
    // chunks (24 MiB) besides the buffers and the pool, ~54 MiB measured; as references (the
    // first streaming code) it took 180 MiB, and the first array 50 MiB then, 17–21 MiB now.
    let max_rss_mib = ru.ru_maxrss / 1024; // KiB on Linux
    assert!(
        max_rss_mib < 96,
        "peak resident size {max_rss_mib} MiB for a set of 1 048 576 references"
    );
    eprintln!("peak resident size: {max_rss_mib} MiB");
}
