//! Helpers for the command-line tests: run the binary, build the test image and its metadata.
#![allow(dead_code)]

use super::noise;
use serde_json::{json, Value};
use std::process::Output;

/// Run the binary (built only with the `cli` feature).
#[cfg(feature = "cli")]
pub fn zarrshard(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args(args)
        .output()
        .unwrap()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn meta(
    shape: &[u64],
    shard: &[u64],
    inner: &[u64],
    inner_codecs: Value,
    outer_extra: Value,
    location: &str,
) -> Value {
    let sharding = json!({"name": "sharding_indexed", "configuration": {
        "chunk_shape": inner, "codecs": inner_codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": location}});
    let mut codecs = vec![];
    let (before, after) = (outer_extra["before"].clone(), outer_extra["after"].clone());
    if let Some(b) = before.as_array() {
        codecs.extend(b.iter().cloned());
    }
    codecs.push(sharding);
    if let Some(a) = after.as_array() {
        codecs.extend(a.iter().cloned());
    }
    json!({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 3, "codecs": codecs, "attributes": {}})
}

/// A 50x70 uint16 image: shard 32x32, inner 8x16; the top-left shard is entirely the fill
/// value (so not written) and so is one inner chunk of another shard.
pub fn image() -> Vec<u8> {
    let (h, w) = (50usize, 70usize);
    let n = noise(h * w, 7);
    let mut v = Vec::with_capacity(h * w * 2);
    for r in 0..h {
        for c in 0..w {
            let fill = (r < 32 && c < 32) || ((32..40).contains(&r) && (32..48).contains(&c));
            let x: u16 = if fill {
                3
            } else {
                (r * 100 + c) as u16 ^ (n[r * w + c] as u16 & 7)
            };
            v.extend_from_slice(&x.to_ne_bytes());
        }
    }
    v
}

pub fn le(native: &[u8]) -> Vec<u8> {
    native
        .chunks(2)
        .flat_map(|c| u16::from_ne_bytes([c[0], c[1]]).to_le_bytes())
        .collect()
}

#[cfg(feature = "cli")]
pub fn export(dir: &std::path::Path) -> Vec<u8> {
    let out = dir.with_extension("raw");
    let o = zarrshard(&["export", dir.to_str().unwrap(), out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    std::fs::read(out).unwrap()
}
