//! Run one workload of the benchmark in a loop, for a profiler (`perf record`, callgrind):
//!
//! ```sh
//! cargo build --release --manifest-path bench/Cargo.toml --example profile
//! perf record -F 5000 -g bench/target/release/examples/profile encode 20
//! ```
//!
//! Arguments: `WORKLOAD ITERATIONS [zstd|raw|gzip] [LEVEL]`; `ZARRSHARD_THREADS` sizes the
//! pool. zarrshard workloads: `encode` (`Array::write_region` of the whole array), `import`
//! (`Array::import` from memory), `decode` (`Array::read_region` of the whole array into one
//! reused buffer), `region` (`Array::read_region` of the harness's 4b box, rows 1000..1500 and
//! columns 900..1700: 4 shards, 117 inner chunks, into a reused buffer), `decode-fresh`
//! (`Array::read_region_vec`: a new buffer per call), `shard` (`Array::read_shard` of shard
//! [1, 1]), `dshard` (`ShardLayout::decode_shard_into` of that shard's object, in memory),
//! `sread` / `szero` / `sfile` (parts of `shard`: the object's read from its file, the 2 MiB
//! zeroed output, and the read plus `decode_shard_into` into a reused output),
//! `wshard` (`write_region` of that shard), `wbuf` (a buffered `ShardWriter`, chunk by chunk). Before each write the
//! previous shards are removed and dirty pages flushed (untimed), as in the benchmark. Raw
//! codec loops, no zarrshard code: `ceiling` / `dceiling` (zstd-1 over the array's 4096
//! chunks), `ceiling-hot` (section 0's one-shard ceiling), `dplace` (zstd decompression into
//! each chunk's place in a 32 MiB buffer, on `ZARRSHARD_THREADS` plain threads),
//! `gz-flate2` / `gz-libdeflate` (gzip compress at LEVEL), `gzd-flate2` / `gzd-libdeflate`
//! (gzip decompress), `rshare` / `rinstall` (zstd-1 over one shard's chunks on a plain rayon
//! pool, shared with the calling thread or handed over; prints the vCPUs that ran them). The
//! same image and metadata as the benchmark (4096² uint16, 1024² shards, 64² inner chunks,
//! index at end); prints each iteration's time, cores busy and page faults. `SPIN=MS` keeps
//! the calling thread busy for MS ms before each iteration; `TOGGLE=1` switches zarrshard to one
//! thread and back before each; `SLEEP=MS` idles MS ms right before each (all untimed), as a
//! host does between calls; `THRASH=1`
//! writes through 64 MiB first, so that the call starts with cold caches.

use serde_json::json;
use std::time::Instant;

const N: u64 = 4096;
const S: u64 = 1024;

#[path = "../image.rs"]
mod image;

/// The benchmark's image (`image.rs`, as `benches/compare.rs` uses it), little-endian bytes.
fn generate() -> Vec<u8> {
    image::generate(1, N as usize, N as usize).iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let what = args.get(1).map_or("encode", String::as_str).to_string();
    let iters: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20);
    let codec = args.get(3).map_or("zstd", String::as_str).to_string();
    let level: u32 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(1);
    let dir = std::env::temp_dir().join(format!("zarrshard-profile-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let inner = match codec.as_str() {
        "raw" => json!([{"name": "bytes", "configuration": {"endian": "little"}}]),
        "gzip" => json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}]),
        _ => json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
    };
    let meta = json!({
        "zarr_format": 3, "node_type": "array", "shape": [N, N], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [S, S]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [64, 64], "codecs": inner,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
    });
    std::fs::write(dir.join("zarr.json"), serde_json::to_vec(&meta).unwrap()).unwrap();
    let data = generate();
    let arr = zarrshard::Array::open(zarrshard::FsStore::new(&dir)).unwrap();
    arr.write_region(&[0, 0], &[N, N], &data).unwrap();
    let mut out = vec![0u8; data.len()];
    let frames: Vec<Vec<u8>> = Vec::new();
    let shard: Vec<u8> = (0..S as usize)
        .flat_map(|y| data[((S as usize + y) * N as usize + S as usize) * 2..][..S as usize * 2].to_vec())
        .collect();
    // Every inner chunk, in shard order then chunk order (C), each 8 KiB contiguous.
    let mut chunks = Vec::with_capacity(data.len());
    for shard in 0..16u64 {
        for c in 0..256u64 {
            let (y0, x0) = ((shard / 4) * S + (c / 16) * 64, (shard % 4) * S + (c % 16) * 64);
            for y in y0..y0 + 64 {
                let at = ((y * N + x0) * 2) as usize;
                chunks.extend_from_slice(&data[at..at + 128]);
            }
        }
    }
    let layout = arr.metadata().shard_layout().unwrap();
    let object = std::fs::read(dir.join(arr.shard_key(&[1, 1]))).unwrap();
    let mut shard_out = vec![0u8; (S * S * 2) as usize];
    let frames: Vec<Vec<u8>> = if what == "dceiling" || what == "dplace" {
        chunks.chunks(8192).map(|c| zstd::bulk::compress(c, 1).unwrap()).collect()
    } else {
        frames
    };
    for _ in 0..iters {
        if ["encode", "import", "wshard", "wbuf"].contains(&what.as_str()) {
            // As in the benchmark: the previous shards removed and dirty pages flushed, untimed.
            let _ = std::fs::remove_dir_all(dir.join("c"));
            unsafe { libc::sync() };
        }
        // SPIN=MS: this thread compresses for MS ms first (a host busy just before the call);
        // TOGGLE: switch to one thread and back first (as the harness's one-thread rows do).
        if let Some(spin_ms) = std::env::var("SPIN").ok().and_then(|v| v.parse::<f64>().ok()) {
            let busy = Instant::now();
            let mut zstd1 = zstd::bulk::Compressor::new(1).unwrap();
            let mut scratch = vec![0u8; 16384];
            while busy.elapsed().as_secs_f64() * 1e3 < spin_ms {
                for ch in shard.chunks(8192).take(16) {
                    std::hint::black_box(zstd1.compress_to_buffer(ch, &mut scratch[..]).unwrap());
                }
            }
        }
        if std::env::var_os("TOGGLE").is_some() {
            zarrshard::set_threads(1).unwrap();
            drop(arr.read_shard(&[1, 1]).unwrap());
            zarrshard::set_threads(0).unwrap();
            drop(arr.read_shard(&[1, 1]).unwrap());
        }
        // SLEEP=MS: idle first (the pool's threads fall asleep, as between a host's calls).
        if let Some(ms) = std::env::var("SLEEP").ok().and_then(|v| v.parse::<u64>().ok()) {
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        // THRASH: write a line of every 64 bytes of 64 MiB first, so that the call starts with
        // cold caches, as it does between other implementations' calls in the benchmark.
        if std::env::var_os("THRASH").is_some() {
            THRASH_BUF.with_borrow_mut(|t| {
                for i in (0..t.len()).step_by(64) {
                    t[i] = t[i].wrapping_add(1);
                }
                std::hint::black_box(&t);
            });
        }
        let c0 = cpu_now();
        let f0 = faults_now();
        let t = Instant::now();
        match what.as_str() {
            "encode" => arr.write_region(&[0, 0], &[N, N], &data).unwrap(),
            "import" => arr
                .import(&mut &data[..], zarrshard::WriteStrategy::Buffered, Default::default())
                .unwrap(),
            "decode" => arr.read_region(&[0, 0], &[N, N], &mut out).unwrap(),
            "decode-fresh" => drop(arr.read_region_vec(&[0, 0], &[N, N]).unwrap()),
            "shard" => drop(arr.read_shard(&[1, 1]).unwrap()),
            "region" => arr.read_region(&[1000, 900], &[500, 800], &mut out[..500 * 800 * 2]).unwrap(),
            "dshard" => layout.decode_shard_into(&object, &mut shard_out).unwrap(),
            // The parts of `shard`: the object's read, the zeroed output, and the two without it.
            "sread" => drop(std::hint::black_box(std::fs::read(dir.join(arr.shard_key(&[1, 1]))).unwrap())),
            "szero" => drop(std::hint::black_box(vec![0u8; (S * S * 2) as usize])),
            "sfile" => {
                let o = std::fs::read(dir.join(arr.shard_key(&[1, 1]))).unwrap();
                layout.decode_shard_into(&o, &mut shard_out).unwrap()
            }
            "wshard" => arr.write_region(&[S, S], &[S, S], &shard).unwrap(),
            "rshare" | "rinstall" => {
                // No zarrshard code: zstd-1 over shard [1, 1]'s 256 chunks on a plain rayon pool
                // of 2, either handed over (`install`, the calling thread sleeps) or shared (the
                // calling thread and one pool task take chunks from one counter). Prints which
                // vCPUs ran how many chunks: with SPIN, `install` often runs all on one.
                use rayon::prelude::*;
                use std::sync::atomic::{AtomicUsize, Ordering};
                static POOL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
                thread_local!(static ZSTD: std::cell::RefCell<zstd::bulk::Compressor<'static>> =
                    std::cell::RefCell::new(zstd::bulk::Compressor::new(1).unwrap()));
                let pool = POOL.get_or_init(|| rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap());
                // The shard's inner chunks, as `ceiling-hot` (until 2026-11 this took 8 KiB
                // runs of the shard's rows instead: other data, 40 % faster to compress).
                let hot = &chunks[(256 * 4 + 256) * 8192..][..256 * 8192];
                let compress = |i: usize| {
                    let mut buf = vec![0u8; 16384];
                    ZSTD.with(|c| c.borrow_mut().compress_to_buffer(&hot[i * 8192..][..8192], &mut buf[..]).unwrap());
                    // SAFETY: sched_getcpu has no preconditions.
                    unsafe { libc::sched_getcpu() }
                };
                let cpus: Vec<i32> = if what == "rinstall" {
                    pool.install(|| (0..256usize).into_par_iter().map(compress).collect())
                } else {
                    let next = AtomicUsize::new(0);
                    let cpus: Vec<std::sync::Mutex<i32>> = (0..256).map(|_| std::sync::Mutex::new(-1)).collect();
                    let take = || loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= 256 {
                            break;
                        }
                        *cpus[i].lock().unwrap() = compress(i);
                    };
                    pool.in_place_scope(|s| {
                        s.spawn(|_| take());
                        take();
                    });
                    cpus.into_iter().map(|m| m.into_inner().unwrap()).collect()
                };
                let mut per_cpu = std::collections::BTreeMap::new();
                for c in cpus {
                    *per_cpu.entry(c).or_insert(0) += 1;
                }
                eprintln!("chunks per vCPU {per_cpu:?}");
            }
            "wbuf" => {
                let layout = std::sync::Arc::new(arr.metadata().shard_layout().unwrap());
                let io = zarrshard::FileIo::new(dir.join("c/1/1"));
                let mut w = zarrshard::ShardWriter::new(layout, io, zarrshard::WriteStrategy::Buffered, Default::default()).unwrap();
                let mut chunk = vec![0u8; 8192];
                for i in 0..16u64 {
                    for j in 0..16u64 {
                        for r in 0..64usize {
                            let at = ((i as usize * 64 + r) * S as usize + j as usize * 64) * 2;
                            chunk[r * 128..][..128].copy_from_slice(&shard[at..at + 128]);
                        }
                        w.write_chunk(&[i, j], &chunk).unwrap();
                    }
                }
                w.finalize().unwrap();
            }
            "ceiling" => {
                // zstd-1 over every inner chunk of the array, cut out beforehand, one context.
                let mut c = zstd::bulk::Compressor::new(1).unwrap();
                let mut buf = vec![0u8; zstd::zstd_safe::compress_bound(8192)];
                for ch in chunks.chunks(8192) {
                    std::hint::black_box(c.compress_to_buffer(ch, &mut buf[..]).unwrap());
                }
            }
            "ceiling-fresh" => {
                // zstd-1 over every inner chunk with a new context per chunk (zarrs' way:
                // `bulk::Compressor::new` per chunk).
                let mut buf = vec![0u8; zstd::zstd_safe::compress_bound(8192)];
                for ch in chunks.chunks(8192) {
                    let mut c = zstd::bulk::Compressor::new(1).unwrap();
                    std::hint::black_box(c.compress_to_buffer(ch, &mut buf[..]).unwrap());
                }
            }
            "dceiling" => {
                // zstd-1 decompression of every inner chunk, one context.
                let mut d = zstd::bulk::Decompressor::new().unwrap();
                let mut buf = vec![0u8; 8192];
                for f in &frames {
                    std::hint::black_box(d.decompress_to_buffer(f, &mut buf[..]).unwrap());
                }
            }
            "gz-flate2" => {
                use flate2::{Compress, Compression, Crc, FlushCompress};
                let mut e = Compress::new(Compression::new(level), false);
                let mut o = Vec::with_capacity(2 * 8192);
                let mut tot = 0;
                for ch in chunks.chunks(8192) {
                    e.reset();
                    o.clear();
                    let mut crc = Crc::new();
                    crc.update(ch);
                    e.compress_vec(ch, &mut o, FlushCompress::Finish).unwrap();
                    tot += o.len() + 18;
                    std::hint::black_box(crc.sum());
                }
                eprintln!("ratio {:.3}", chunks.len() as f64 / tot as f64);
            }
            "gz-libdeflate" => {
                let mut e = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level as i32).unwrap());
                let mut o = vec![0u8; e.gzip_compress_bound(8192)];
                let mut tot = 0;
                for ch in chunks.chunks(8192) {
                    tot += e.gzip_compress(ch, &mut o).unwrap();
                }
                eprintln!("ratio {:.3}", chunks.len() as f64 / tot as f64);
            }
            "gzd-flate2" | "gzd-libdeflate" => {
                let mut e = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(level as i32).unwrap());
                let gz: Vec<Vec<u8>> = chunks.chunks(8192).map(|ch| { let mut o = vec![0u8; e.gzip_compress_bound(8192)]; let n = e.gzip_compress(ch, &mut o).unwrap(); o.truncate(n); o }).collect();
                let t = Instant::now();
                let mut buf = vec![0u8; 8192];
                if what == "gzd-flate2" {
                    let mut d = flate2::Decompress::new(false);
                    for f in &gz {
                        d.reset(false);
                        // skip the 10-byte header, inflate raw
                        d.decompress(&f[10..f.len() - 8], &mut buf, flate2::FlushDecompress::Finish).unwrap();
                        let mut crc = flate2::Crc::new();
                        crc.update(&buf);
                        std::hint::black_box(crc.sum());
                    }
                } else {
                    let mut d = libdeflater::Decompressor::new();
                    for f in &gz {
                        std::hint::black_box(d.gzip_decompress(f, &mut buf).unwrap());
                    }
                }
                eprintln!("decode only {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
            }
            "dplace" => {
                // zstd-1 decompression of every inner chunk into its own place in a 32 MiB
                // output (no zarrshard code), on ZARRSHARD_THREADS plain threads: what the
                // machine allows when the decoded bytes go to memory rather than a hot buffer.
                let threads: usize = std::env::var("ZARRSHARD_THREADS").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
                let per = frames.len().div_ceil(threads);
                std::thread::scope(|sc| {
                    for (part, outp) in frames.chunks(per).zip(out.chunks_mut(per * 8192)) {
                        sc.spawn(move || {
                            let mut d = zstd::bulk::Decompressor::new().unwrap();
                            for (f, o) in part.iter().zip(outp.chunks_mut(8192)) {
                                d.decompress_to_buffer(f, o).unwrap();
                            }
                        });
                    }
                });
            }
            "ceiling-hot" => {
                // The benchmark's section 0: shard [1, 1]'s 256 chunks, 16 times.
                let mut c = zstd::bulk::Compressor::new(1).unwrap();
                let mut buf = vec![0u8; zstd::zstd_safe::compress_bound(8192)];
                let hot = &chunks[(256 * 4 + 256) * 8192..][..256 * 8192];
                for _ in 0..16 {
                    for ch in hot.chunks(8192) {
                        std::hint::black_box(c.compress_to_buffer(ch, &mut buf[..]).unwrap());
                    }
                }
            }
            other => panic!("unknown workload {other}"),
        }
        let el = t.elapsed().as_secs_f64();
        println!("{what} {:.2} ms {:.2} cores {} faults", el * 1e3, (cpu_now() - c0) / el, faults_now() - f0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

thread_local!(static THRASH_BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![1u8; 64 << 20]));

fn usage() -> libc::rusage {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    u
}

/// CPU seconds of the process (all threads).
fn cpu_now() -> f64 {
    let u = usage();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Minor page faults of the process so far.
fn faults_now() -> i64 {
    usage().ru_minflt as i64
}
