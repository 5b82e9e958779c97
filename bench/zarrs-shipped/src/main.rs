//! zarrs as a user gets it, for the benchmark harness (`bench/benches/compare.rs`).
//!
//! In the harness's own process zarrs links the same `flate2` as zarrshard, and cargo unifies
//! its features: zarrshard selects the zlib-rs backend, so zarrs there encodes gzip with
//! zlib-rs, whose level 1 is its *quick* strategy (ratio 1.02 on the benchmark image). zarrs
//! built alone, with its `gzip` feature and nothing else, keeps flate2's default backend,
//! miniz_oxide. This program is that build, in a process of its own, driven by the harness
//! one sample at a time like `peers.py`.
//!
//!   zarrs-shipped-peer --serve   one JSON request per line on stdin, one reply per line
//!
//! Requests: `{"op": "init", "manifest": {...}}` (the harness's manifest), `{"op": "info"}`,
//! `{"op": "run", "workload": W, "variant": V, "check": bool}`, `{"op": "quit"}`.
//! Workloads: `encode` (the whole array by `store_chunks_opt` over every shard, default
//! `CodecOptions`, into `enc_dirs["zarrs-shipped"][V]` through the harness's no-fsync store;
//! the harness clears the directory before and checks what was written after) and
//! `gzip1_compress_chunks` (flate2 level 1 on every 64×64 inner chunk of the array once, a
//! reused `Compress` and a CRC-32, on one thread: this backend's compress ceiling).
//! A run replies `{"ok": true, "seconds": S, "cpu_seconds": P}`, else `{"ok": false, "error": E}`.

#[path = "../../zarrs_plain_store.rs"]
mod plain_store;

#[path = "../../chunks.rs"]
mod chunks;

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Map, Value};
use zarrs::array::{Array, ArraySubset, CodecOptions};

use plain_store::PlainFsStore;

type R<T> = Result<T, String>;

#[path = "../../process_cpu.rs"]
mod process_cpu;
use process_cpu::cpu_now;

/// What the manifest says about the array, and the source image.
struct Setup {
    manifest: Value,
    data: Vec<u16>,
    /// Every inner chunk cut out (little-endian), in the harness's ceilings' order.
    chunks: Vec<u8>,
    shape: [u64; 2],
    shard: [u64; 2],
    inner: [u64; 2],
}

fn dims(v: &Value) -> R<[u64; 2]> {
    match v.as_array().map(|a| a.iter().filter_map(Value::as_u64).collect::<Vec<_>>()).as_deref() {
        Some(&[a, b]) => Ok([a, b]),
        _ => Err(format!("not two dimensions: {v}")),
    }
}

impl Setup {
    fn new(manifest: Value) -> R<Setup> {
        let path = manifest["data"].as_str().ok_or("manifest without data")?;
        let bytes = std::fs::read(path).map_err(|e| format!("{path}: {e}"))?;
        let data = bytes.chunks_exact(2).map(|b| u16::from_le_bytes([b[0], b[1]])).collect();
        let (shape, shard, inner) = (dims(&manifest["shape"])?, dims(&manifest["shard"])?, dims(&manifest["inner"])?);
        let chunks = chunks::array_chunks(&bytes, shape, shard, inner, 2);
        Ok(Setup { manifest, data, chunks, shape, shard, inner })
    }

    fn run(&self, workload: &str, variant: &str) -> R<(f64, f64)> {
        match workload {
            "encode" => {
                let dir = self.manifest["enc_dirs"]["zarrs-shipped"][variant]
                    .as_str()
                    .ok_or_else(|| format!("no zarrs-shipped directory for {variant}"))?;
                let arr = Array::open(Arc::new(PlainFsStore::new(dir)), "/").map_err(|e| e.to_string())?;
                let grid = ArraySubset::new_with_ranges(&[0..self.shape[0] / self.shard[0], 0..self.shape[1] / self.shard[1]]);
                let options = CodecOptions::default();
                timed(|| arr.store_chunks_opt(&grid, &self.data[..], &options).map_err(|e| e.to_string()))
            }
            "gzip1_compress_chunks" => {
                let chunk = (self.inner[0] * self.inner[1] * 2) as usize;
                timed(|| chunks::flate2_gzip1_each(&self.chunks, chunk))
            }
            _ => Err(format!("unknown workload {workload:?}")),
        }
    }
}

/// Wall and process CPU seconds of `f`.
fn timed(f: impl FnOnce() -> R<()>) -> R<(f64, f64)> {
    let (cpu, t) = (cpu_now(), Instant::now());
    f()?;
    Ok((t.elapsed().as_secs_f64(), cpu_now() - cpu))
}

/// The reply's fields other than `ok`.
fn reply(setup: &mut Option<Setup>, req: &Value) -> R<Map<String, Value>> {
    match req["op"].as_str() {
        Some("init") => {
            *setup = Some(Setup::new(req["manifest"].clone())?);
            Ok(Map::new())
        }
        Some("info") => {
            let info = json!({
                "zarrs": env!("ZARRS_VERSION"),
                // What flate2's default features select; `scripts/bench.sh` checks that
                // nothing in this build selects zlib-rs instead.
                "flate2_backend": "miniz_oxide",
                "concurrent_target": CodecOptions::default().concurrent_target(),
            });
            Ok(Map::from_iter([("info".to_string(), info)]))
        }
        Some("run") => {
            let setup = setup.as_ref().ok_or("run before init")?;
            let (s, cpu) = setup.run(req["workload"].as_str().unwrap_or(""), req["variant"].as_str().unwrap_or(""))?;
            Ok(Map::from_iter([("seconds".to_string(), json!(s)), ("cpu_seconds".to_string(), json!(cpu))]))
        }
        op => Err(format!("unknown op {op:?}")),
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() != Some("--serve") {
        eprintln!("usage: zarrs-shipped-peer --serve   (driven by bench/benches/compare.rs)");
        std::process::exit(2);
    }
    let mut setup = None;
    let mut out = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Ok(req) if req["op"] == "quit" => {
                let _ = writeln!(out, "{}", json!({"ok": true}));
                break;
            }
            Ok(req) => reply(&mut setup, &req),
            Err(e) => Err(format!("bad request: {e}")),
        };
        let answer = match answer {
            Ok(mut m) => {
                m.insert("ok".into(), json!(true));
                Value::Object(m)
            }
            Err(e) => json!({"ok": false, "error": e}),
        };
        if writeln!(out, "{answer}").and_then(|()| out.flush()).is_err() {
            break;
        }
    }
}
