//! Whole-array writes reuse the memory their encoded chunks took (`src/encoded.rs`): after the
//! first write, later writes of the same size take every segment from the free list, which
//! keeps at most `KEPT_PER_THREAD` segments per thread, and `release_free_segments` empties
//! it. One test, in a process of its own: the free list and the counts are process-wide.

use serde_json::json;
use zarrshard::encoded::{KEPT_PER_THREAD, SEGMENT};
use zarrshard::*;

/// A 512² uint16 array of 256² shards of 32² inner chunks with `inner` codecs, written whole
/// from `data`, read back; returns the segments made by the write.
fn write_and_check(inner: serde_json::Value, data: &[u8]) -> u64 {
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [512, 512], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256, 256]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [32, 32], "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap();
    let array = Array::create(MemoryStore::new(), meta).unwrap();
    let before = segment_counts().made;
    array.write_region(&[0, 0], &[512, 512], data).unwrap();
    let made = segment_counts().made - before;
    assert_eq!(array.read_region_vec(&[0, 0], &[512, 512]).unwrap(), data);
    made
}

#[test]
fn later_writes_take_their_segments_from_the_free_list() {
    // Smooth plus noise, as the benchmark's image: compresses to about half.
    let data: Vec<u8> = (0..512 * 512u32)
        .flat_map(|i| {
            ((i % 512 * 3 + i / 512 * 2) as u16 ^ (i.wrapping_mul(2654435761) >> 29) as u16)
                .to_ne_bytes()
        })
        .collect();
    let zstd = json!([{"name": "bytes", "configuration": {"endian": "little"}},
                      {"name": "zstd", "configuration": {"level": 1}}, {"name": "crc32c"}]);
    let raw = json!([{"name": "bytes", "configuration": {"endian": "little"}}]);
    for threads in [2, 1] {
        set_threads(threads).unwrap();
        for codecs in [&zstd, &raw] {
            // The first write may make segments; the next ones find them free.
            write_and_check(codecs.clone(), &data);
            for _ in 0..3 {
                assert_eq!(
                    write_and_check(codecs.clone(), &data),
                    0,
                    "{threads} threads, {codecs}"
                );
            }
            let free = segment_counts().free;
            assert!(free > 0, "nothing kept for the next write");
            assert!(free <= KEPT_PER_THREAD * threads, "{free} segments kept");
        }
    }
    // Released, the list is empty and the next write makes its segments again.
    release_free_segments();
    assert_eq!(segment_counts().free, 0);
    assert!(write_and_check(zstd.clone(), &data) > 0);
    assert!(segment_counts().free > 0);
    // The uncompressed array (512 KiB: two segments' worth) needed several segments; more
    // than the free list keeps for two threads would mean chunks were not packed into them.
    let made = segment_counts().made as usize;
    assert!(
        (2..=2 * KEPT_PER_THREAD).contains(&made),
        "{made} segments made"
    );
    assert_eq!(data.len(), 2 * SEGMENT);
}
