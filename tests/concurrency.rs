//! Many threads reading one `ShardReader` (one by one, many at once, raw) while other threads
//! write other shards of the same array with every writer, one thread reads shard (0, 0) as a
//! region on the pool and frees the library's retained memory (`release_memory`) over and
//! over.
//! Every read must return exactly the bytes written; run under ThreadSanitizer by
//! scripts/test.sh (its tsan stage; docs/testing.md). The Rust API refuses two threads
//! writing one `ShardWriter` at compile time (`&mut self`); the C ABI's `SHARD_ERR_BUSY` for
//! that case is tested in tests/ffi.rs and tests/c/test_threads.c.

use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use zarrshard::*;

const READERS: usize = 8;

fn chunk(v: u64, i: u64) -> Vec<u8> {
    (0..16u64)
        .flat_map(|k| ((v * 7919 + i * 31 + k) as u16).to_ne_bytes())
        .collect()
}

#[test]
fn many_readers_on_one_handle_while_other_shards_are_written() {
    let iters: usize = std::env::var("ZS_THREAD_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [16, 64], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}]});
    let array = Array::create(
        FsStore::new(dir.path()),
        ArrayMetadata::from_json(&meta).unwrap(),
    )
    .unwrap();
    let layout = Arc::new(array.metadata().shard_layout().unwrap());
    let n = layout.num_chunks() as u64;
    let coords = |i: u64| zarrshard::nd::unravel(i, layout.chunks_per_shard());
    // Shard (0, 0): written once, then only read.
    {
        let io = array.store().shard_io("c/0/0").unwrap();
        let mut w = ShardWriter::new(
            layout.clone(),
            io,
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )
        .unwrap();
        for i in 0..n {
            w.write_chunk(&coords(i), &chunk(0, i)).unwrap();
        }
        w.finalize().unwrap();
    }
    let reader = array.shard_reader(&[0, 0]).unwrap();
    let stop = AtomicBool::new(false);
    let reads = AtomicUsize::new(0);
    let writes = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..READERS {
            let (reader, stop, reads, coords) = (&reader, &stop, &reads, &coords);
            s.spawn(move || {
                let all: Vec<Vec<u64>> = (0..n).map(coords).collect();
                let refs: Vec<&[u64]> = all.iter().map(|c| c.as_slice()).collect();
                let mut many = vec![0u8; refs.len() * 32];
                let want: Vec<u8> = (0..n).flat_map(|i| chunk(0, i)).collect();
                while !stop.load(Ordering::Relaxed)
                    || reads.load(Ordering::Relaxed) < READERS * n as usize
                {
                    for i in 0..n {
                        let i = (i + t as u64) % n;
                        assert_eq!(reader.read_chunk(&coords(i)).unwrap(), chunk(0, i));
                        reads.fetch_add(1, Ordering::Relaxed);
                    }
                    reader.read_chunks_into(&refs, &mut many).unwrap();
                    assert_eq!(many, want);
                    if t % 2 == 1 {
                        reader.set_coalesce_gap((t as u64) << 10);
                    }
                }
            });
        }
        // Region reads on the pool, and the contexts and segments every thread keeps freed
        // between them (and during the other threads' calls).
        let releases = {
            let (array, stop, layout) = (&array, &stop, &layout);
            s.spawn(move || {
                let mut want = vec![0u8; 16 * 16 * 2];
                for i in 0..n {
                    layout.place_chunk(i as usize, &chunk(0, i), &mut want);
                }
                // At least once, however soon the writers finish.
                loop {
                    assert_eq!(array.read_region_vec(&[0, 0], &[16, 16]).unwrap(), want);
                    release_memory();
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                }
            })
        };
        // Writers: shards (0, 1), (0, 2), (0, 3), each with its own strategy, over and over.
        let strategies = [
            WriteStrategy::Streaming,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteStrategy::Update(UpdateMode::InPlace),
        ];
        let mut handles = Vec::new();
        for (k, strategy) in strategies.into_iter().enumerate() {
            let (array, layout, writes, coords) = (&array, &layout, &writes, &coords);
            handles.push(s.spawn(move || {
                let key = format!("c/0/{}", k + 1);
                for v in 1..=iters as u64 {
                    let io = array.store().shard_io(&key).unwrap();
                    let mut w =
                        ShardWriter::new(layout.clone(), io, strategy, WriteOptions::default())
                            .unwrap();
                    for i in 0..n {
                        w.write_chunk(&coords(i), &chunk(v, i)).unwrap();
                    }
                    w.finalize().unwrap();
                    // The shard just written reads back exactly.
                    let r = array.shard_reader(&[0, k as u64 + 1]).unwrap();
                    for i in 0..n {
                        assert_eq!(r.read_chunk(&coords(i)).unwrap(), chunk(v, i));
                    }
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        stop.store(true, Ordering::Relaxed);
        releases.join().unwrap();
    });
    // Afterwards each shard holds its last version.
    for k in 0..4u64 {
        let v = if k == 0 { 0 } else { iters as u64 };
        let mut want = vec![0u8; 16 * 16 * 2];
        for i in 0..n {
            layout.place_chunk(i as usize, &chunk(v, i), &mut want);
        }
        assert_eq!(
            array.read_shard(&[0, k]).unwrap().unwrap(),
            want,
            "shard {k}"
        );
    }
    println!(
        "concurrency: {READERS} reader threads, {} chunk reads of one handle, while 3 threads wrote {} shards",
        reads.load(Ordering::Relaxed),
        writes.load(Ordering::Relaxed)
    );
}

/// A data race on purpose, for scripts/tsan.sh: ThreadSanitizer must flag it, or its silence
/// on the tests above would mean nothing. Ignored in ordinary runs.
#[test]
#[ignore]
fn tsan_negative_control_races_on_purpose() {
    struct Shared(*mut u64);
    unsafe impl Send for Shared {}
    unsafe impl Sync for Shared {}
    let mut x = 0u64;
    let p = Shared(&mut x);
    // Each thread keeps racing until the other has raced too (relaxed counters: no
    // happens-before), so both are alive and unordered while they race, however scheduled.
    // TSan keeps a bounded history per address, so one round can slip through: ten rounds.
    for _round in 0..10 {
        let done = [AtomicUsize::new(0), AtomicUsize::new(0)];
        std::thread::scope(|s| {
            for me in 0..2 {
                let (p, done) = (&p, &done);
                s.spawn(move || loop {
                    // SAFETY: none — two threads write without synchronisation (the point).
                    unsafe { p.0.write_volatile(p.0.read_volatile() + 1) };
                    let mine = done[me].fetch_add(1, Ordering::Relaxed) + 1;
                    if mine >= 1000 && done[1 - me].load(Ordering::Relaxed) >= 1000 {
                        break;
                    }
                });
            }
        });
    }
    assert!(x > 0);
}
