//! A region read holds at most one pass of fetched bytes besides the caller's buffer
//! ([`PASS_BYTES`] of inner chunks, decoded size, plus bookkeeping), however large the region,
//! and keeps nothing once it returns but the shard indexes the handle's cache holds (within
//! its bound): its fetch buffers are recycled from pass to pass within the call and freed at
//! its end. Measured with the counting allocator of
//! `tests/common/alloc.rs`, in a process of its own (the counts are process-wide).

use serde_json::json;
use zarrshard::array::region::PASS_BYTES;
use zarrshard::*;

#[path = "common/alloc.rs"]
mod alloc;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

#[test]
fn a_region_read_holds_one_pass_and_keeps_nothing() {
    // 6144×8192 uint16 (96 MiB) in 1024² shards of 64² chunks, uncompressed, so a shard's
    // fetched bytes are its decoded size: a whole read needs two passes.
    let (rows, cols) = (6144u64, 8192u64);
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [rows, cols], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1024, 1024]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [64, 64], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap();
    let data: Vec<u8> = (0..rows * cols)
        .flat_map(|i| ((i * 7 + i / cols) as u16 | 1).to_ne_bytes())
        .collect();
    assert!(
        data.len() as u64 > PASS_BYTES,
        "the region needs more than one pass"
    );
    let array = Array::create(MemoryStore::new(), meta).unwrap();
    array.write_region(&[0, 0], &[rows, cols], &data).unwrap();
    let shard_bytes = 1024 * 1024 * 2;
    let mut out = vec![0u8; data.len()];
    for threads in [1, 4] {
        set_threads(threads).unwrap();
        // A first read, so that per-thread state (the pool's threads) exists before counting.
        array
            .read_region(&[0, 0], &[64, 64], &mut out[..8192])
            .unwrap();
        out.fill(0);
        let before = alloc::live();
        let (read, peak) =
            alloc::peak_during(|| array.read_region(&[0, 0], &[rows, cols], &mut out));
        read.unwrap();
        assert!(out == data, "the values read ({threads} threads)");
        // One pass: at most PASS_BYTES of chunks; one shard's worth of slack for the buffers
        // a pass takes over from the one before, and bookkeeping; and the shard indexes the
        // handle's cache keeps (`Array::set_index_cache`), never more than its bound.
        let cached = array.cached_index_bytes() as usize;
        assert!(cached as u64 <= array.index_cache_limit());
        let bound = PASS_BYTES as usize + shard_bytes + (1 << 20) + cached;
        assert!(
            peak <= bound,
            "{peak} bytes at the peak ({threads} threads)"
        );
        assert!(peak >= shard_bytes, "{peak} bytes: the shards were fetched");
        // What stays is the handle's cache of shard indexes (the 48 shards' indexes, read
        // once), nothing of the read itself.
        let kept = alloc::live().saturating_sub(before);
        assert!(
            kept < (64 << 10) + cached,
            "{kept} bytes kept after the read ({threads} threads)"
        );
    }
    set_threads(0).unwrap();
}
