//! The Rust API: write a sharded Zarr v3 array (2048x2048 uint16, 1024x1024 shards of 64x64 inner
//! chunks, zstd level 1, crc32c index), then read inner chunks back the way a viewer would,
//! counting the storage reads.
//!
//! Usage: cargo run --release --example rust_api -- OUT_DIR

use serde_json::json;
use std::sync::Arc;
use zarrshard::{Array, ArrayMetadata, CountingIo, FileIo, FsStore, ShardReader};

fn main() -> zarrshard::Result<()> {
    let out = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "demo-out/image.zarr".into());
    let (size, shard) = (2048u64, 1024u64);
    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [size, size], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard, shard]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [64, 64],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                       {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
        "attributes": {"description": "zarrshard demo image"}
    }))?;
    let array = Array::create(FsStore::new(&out), meta)?;
    // Smooth gradient plus a little noise, like a microscope tile; shard (1, 1) stays empty.
    let mut x = 12345u32;
    for coords in [[0, 0], [0, 1], [1, 0]] {
        let mut data = Vec::with_capacity((shard * shard * 2) as usize);
        for r in 0..shard {
            for c in 0..shard {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let v =
                    ((coords[0] * shard + r) + (coords[1] * shard + c)) as u16 + (x % 16) as u16;
                data.extend_from_slice(&v.to_ne_bytes());
            }
        }
        array.write_shard(&coords, &data)?;
    }
    println!("wrote {out}: 3 of 4 shards (shard [1, 1] is all fill value, so not stored)");

    let layout = Arc::new(array.metadata().shard_layout().expect("sharded"));
    let io = CountingIo::new(FileIo::new(format!("{out}/c/0/1")));
    let reader = ShardReader::open(layout, &io)?;
    let chunk = reader.read_chunk(&[3, 5])?;
    println!(
        "cold read of inner chunk [3, 5] of shard c/0/1: {} reads, {} bytes; first value {}",
        io.reads(),
        io.bytes_read(),
        u16::from_ne_bytes([chunk[0], chunk[1]])
    );
    io.reset();
    reader.read_chunk(&[3, 6])?;
    println!(
        "warm read of inner chunk [3, 6]: {} read, {} bytes",
        io.reads(),
        io.bytes_read()
    );
    Ok(())
}
