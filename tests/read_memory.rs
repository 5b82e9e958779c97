//! Region reads keep the large buffers they fetched shards into (`src/runtime/read_buffers.rs`): a
//! second read of the same array makes no allocation of 64 KiB or more (counted by the
//! allocator of `tests/common/alloc.rs`), the list stays within its limit, and
//! `release_memory` frees it. One test, in a process of its own: the list, the pool and the
//! counts are process-wide.

use serde_json::json;
use zarrshard::runtime::read_buffers::{KEPT_BYTES_PER_THREAD, MIN_KEPT};
use zarrshard::*;

#[path = "common/alloc.rs"]
mod alloc;

const _: () = assert!(
    alloc::LARGE == MIN_KEPT,
    "the test counts what the list would keep"
);

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

#[test]
fn a_second_region_read_allocates_no_fetch_buffer() {
    // 1024² uint16 in 256² shards of 32² chunks, uncompressed: 16 shards of 128 KiB (+ index)
    // in 4 rows, each fetched whole into a buffer of its own; in memory and in files.
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [1024, 1024], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256, 256]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [32, 32], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap();
    let data: Vec<u8> = (0..1024 * 1024u32)
        .flat_map(|i| ((i * 7 + i / 1024) as u16 | 1).to_ne_bytes())
        .collect();
    let dir = std::env::temp_dir().join(format!("zarrshard-read-memory-{}", std::process::id()));
    let in_memory = Array::create(MemoryStore::new(), meta.clone()).unwrap();
    let on_disk = Array::create(FsStore::new(&dir), meta).unwrap();
    in_memory
        .write_region(&[0, 0], &[1024, 1024], &data)
        .unwrap();
    on_disk.write_region(&[0, 0], &[1024, 1024], &data).unwrap();
    for threads in [1, 2] {
        check_reads(&in_memory, &data, threads);
        check_reads(&on_disk, &data, threads);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Read `array` (all of `data`) with `threads` threads from an empty list, then again.
fn check_reads<S: Store>(array: &Array<S>, data: &[u8], threads: usize) {
    set_threads(threads).unwrap();
    release_memory();
    assert_eq!(kept_reads(), KeptReads::default());
    let mut out = vec![0u8; data.len()];
    let shard_bytes: u64 = 256 * 256 * 2;
    // The first read makes its buffers and keeps them: one per shard of a row (4), each with
    // room for a shard.
    let whole = |out: &mut [u8]| array.read_region(&[0, 0], &[1024, 1024], out).unwrap();
    let ((), first) = alloc::large_during(|| whole(&mut out));
    assert_eq!(out, data);
    assert!(
        first >= 4,
        "{first} large allocations by the first read ({threads} threads)"
    );
    let kept = kept_reads();
    assert!(kept.buffers >= 4, "{kept:?}");
    assert!(kept.bytes >= 4 * shard_bytes, "{kept:?}");
    assert!(
        kept.bytes <= (KEPT_BYTES_PER_THREAD * threads) as u64,
        "{kept:?}"
    );
    // The next reads find them: no allocation of that size at all (the output is the
    // caller's), and the list keeps what it had.
    for _ in 0..3 {
        out.fill(0);
        let ((), later) = alloc::large_during(|| whole(&mut out));
        assert_eq!(later, 0, "a later read allocated ({threads} threads)");
        assert_eq!(out, data);
        assert_eq!(kept_reads(), kept);
    }
    // A band of rows inside one row of shards reads through the same buffers.
    let mut part = vec![0u8; 100 * 1024 * 2];
    let ((), band) = alloc::large_during(|| {
        array
            .read_region(&[300, 0], &[100, 1024], &mut part)
            .unwrap()
    });
    assert_eq!(band, 0, "a band of rows allocated ({threads} threads)");
    assert_eq!(part, data[300 * 2048..400 * 2048]);
    // Released, the bytes are counted and the list is empty.
    let released = release_memory();
    assert!(released.bytes >= kept.bytes, "{released:?} {kept:?}");
    assert_eq!(kept_reads(), KeptReads::default());
}
