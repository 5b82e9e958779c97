//! Peak memory of the streaming writer, measured with a counting global allocator (no timers):
//! a shard of 4096 inner chunks streams in the index plus a few chunks; the buffered writer,
//! for contrast, holds the encoded shard (which shows the measurement can fail).

use serde_json::json;
use std::sync::{Arc, Mutex};
use zarrshard::*;

#[path = "common/alloc.rs"]
mod alloc;
use alloc::{peak_during, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// The two measurements must not overlap with each other (tests run on threads).
static SERIAL: Mutex<()> = Mutex::new(());

const CHUNK: usize = 32 * 32 * 2; // 2 KiB inner chunks of uint16

fn run(strategy: WriteStrategy) -> (usize, usize, u64) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let config = json!({"chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]});
    // 64 x 64 = 4096 inner chunks: an 8 MiB shard decoded.
    let layout = Arc::new(
        ShardLayout::from_config_json(
            &config,
            DataType::UInt16,
            vec![2048, 2048],
            FillValue::zero(&DataType::UInt16),
        )
        .unwrap(),
    );
    let index_size = layout.index_size() as usize;
    let dir = tempfile::tempdir().unwrap();
    let io = FileIo::new(dir.path().join("shard"));
    // Noise that zstd cannot shrink much, so encoded chunks are about CHUNK bytes each.
    let mut x = 0x9E37_79B9u32;
    let mut chunk = vec![0u8; CHUNK];
    let ((), peak) = peak_during(|| {
        let mut w =
            ShardWriter::new(layout.clone(), &io, strategy, WriteOptions::default()).unwrap();
        for i in 0..4096u64 {
            for b in chunk.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *b = x as u8;
            }
            w.write_chunk(&nd::unravel(i, layout.chunks_per_shard()), &chunk)
                .unwrap();
        }
        w.finalize().unwrap();
    });
    let size = io.size().unwrap().unwrap();
    (peak, index_size, size)
}

#[test]
fn streaming_holds_the_index_and_a_few_chunks() {
    let (peak, index_size, size) = run(WriteStrategy::Streaming);
    assert_eq!(index_size, 4096 * 16 + 4);
    assert!(
        size > 4096 * CHUNK as u64 * 9 / 10,
        "the data should be nearly incompressible"
    );
    // Index (as entries and encoded) + compressor context and a few chunk buffers.
    let bound = 2 * index_size + 8 * CHUNK + 512 * 1024;
    assert!(peak <= bound, "streaming peak {peak} bytes exceeds {bound}");
}

#[test]
fn buffered_holds_the_shard() {
    let (peak, _, size) = run(WriteStrategy::Buffered);
    assert!(
        peak as u64 >= size,
        "buffered peak {peak} should hold the {size}-byte shard"
    );
}
