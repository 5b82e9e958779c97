//! Whole-array writes reuse the memory their encoded chunks took (`src/shard/encoded.rs`): after the
//! first write, later writes of the same size take every segment from the free list, which
//! keeps at most `KEPT_PER_THREAD` segments per thread, and `release_memory` empties it and
//! frees the codec contexts of every thread that worked. One test, in a process of its own:
//! the free list, the pool and the counts are process-wide, and the exact counts below hold
//! only while no other test encodes.

use serde_json::json;
use zarrshard::shard::encoded::{KEPT_PER_THREAD, SEGMENT};
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
        // From a clean start: the pool's threads keep their contexts while the setting is 1.
        release_memory();
        for codecs in [&zstd, &raw] {
            // The first write may make segments; the next ones find them free.
            let first = write_and_check(codecs.clone(), &data);
            let later: Vec<u64> = (0..3)
                .map(|_| write_and_check(codecs.clone(), &data))
                .collect();
            if threads == 1 {
                assert_eq!(later, [0, 0, 0], "{codecs}");
            } else {
                // Which pool thread encodes which chunks varies from run to run, and with it
                // how many segments are in flight at once, so a later write may need one more
                // than the writes before it kept. But a thread holds at most one segment per
                // shard (a shard encodes to less than one), so the four writes together make at
                // most 4 shards × 2 threads: without reuse each write alone makes at least 4.
                let made: u64 = first + later.iter().sum::<u64>();
                assert!(made <= 8, "{made} segments made by four writes: {codecs}");
            }
            let free = segment_counts().free;
            assert!(free > 0, "nothing kept for the next write");
            assert!(free <= KEPT_PER_THREAD * threads, "{free} segments kept");
        }
    }
    // Released, the list is empty and the next write makes its segments again.
    let free = segment_counts().free as u64;
    // The read-backs keep their fetch buffers too (`tests/read_memory.rs`).
    let reads = kept_reads().bytes;
    let released = release_memory();
    assert_eq!(segment_counts().free, 0);
    // One thread did everything since the last release: its 2 KiB scratch chunk (32² uint16),
    // its zstd compressor and decompressor (the uncompressed array came last: it needs no
    // context).
    assert_eq!(
        released,
        Released {
            bytes: free * SEGMENT as u64 + reads + 2048,
            contexts: 2
        }
    );
    assert_eq!(
        release_memory(),
        Released::default(),
        "a second call frees nothing"
    );
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

    // With two threads the whole-array write and read run on the pool while the calling
    // thread waits: the contexts freed are the pool threads'.
    set_threads(2).unwrap();
    release_memory();
    write_and_check(zstd.clone(), &data);
    let free = segment_counts().free as u64;
    let reads = kept_reads().bytes;
    let released = release_memory();
    let scratch = released.bytes - free * SEGMENT as u64 - reads;
    // A scratch chunk and a compressor for each thread that encoded (one or two of the pool's,
    // maybe the caller's too), a decompressor for each that decoded.
    assert!(
        scratch % 2048 == 0 && (2048..=3 * 2048).contains(&scratch),
        "{released:?}"
    );
    assert!((2..=6).contains(&released.contexts), "{released:?}");
    assert_eq!(
        release_memory(),
        Released::default(),
        "a second call frees nothing"
    );
    assert_eq!(segment_counts().free, 0);
    // Everything is rebuilt on demand.
    write_and_check(zstd.clone(), &data);
    assert!(release_memory().contexts >= 2);

    // With the setting at 1 the pool's threads only sleep: released, they are ended (their
    // contexts counted first), and a later setting of 2 starts new ones.
    assert_eq!(pool_threads(), 2);
    write_and_check(zstd.clone(), &data);
    set_threads(1).unwrap();
    assert!(release_memory().contexts >= 2);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pool_threads() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(pool_threads(), 0, "the sleeping pool's threads did not end");
    write_and_check(zstd.clone(), &data);
    set_threads(2).unwrap();
    write_and_check(zstd.clone(), &data);
    assert_eq!(pool_threads(), 2);
}

/// This process's threads named as the pool names its threads (`zarrshard-<i>`), from
/// `/proc/self/task`.
fn pool_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|name| name.starts_with("zarrshard-"))
        })
        .count()
}
