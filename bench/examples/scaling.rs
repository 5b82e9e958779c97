//! The benchmark's scaling mode: zarrshard, zarrs and tensorstore at 1, 2, 4, 8 and 16 threads
//! on whole-array writes and reads (2-D and 3-D) and on many concurrent small reads, in one
//! run, every result checked against the source data.
//!
//! Not part of the test suite. Built as a standalone binary (`cargo build --release
//! --manifest-path bench/Cargo.toml --example scaling`) so it can be carried to a many-core
//! machine without a toolchain or network (`bench/device.sh`, `bench/README.md`);
//! `scripts/bench.sh scaling` builds and runs it here. Progress goes to stderr; one Markdown
//! table per workload goes to stdout and to `target/bench/scaling.md`
//! (`ZARRSHARD_SCALING_OUT`), rewritten after every thread count so a run cut short still
//! leaves what it measured.
//!
//! Method
//! * Source data from `image.rs` (deterministic, compressible): 8192×8192 uint16 in 1024²
//!   shards of 64² inner chunks, and 256×1024×1024 uint16 in 64×256² shards of 16×64² inner
//!   chunks; `bytes` little-endian + zstd level 1, index `bytes` + `crc32c` at the end. Every
//!   implementation uses the same `zarr.json`. `ZARRSHARD_SCALING_QUICK=1`: 2048² and 64×512²
//!   (a smoke test, not numbers to quote).
//! * Thread setting n, per implementation: zarrshard `set_threads(n)`; zarrs every call inside
//!   a rayon `ThreadPool` of n threads (`install`) with `CodecOptions` concurrent target and
//!   chunk-concurrent minimum n; tensorstore (`peers.py --serve`) a fresh context per sample
//!   with `data_copy_concurrency` and `file_io_concurrency` limited to n.
//! * Whole-array write: zarrshard `Array::write_region` of the whole array from memory, zarrs
//!   `store_chunks_opt` over every shard (no-fsync store), tensorstore `write(data)`
//!   (`file_io_sync: false`); before each sample (untimed) the previous shards are removed and
//!   dirty pages flushed. The written array is read back by another implementation (zarrs for
//!   zarrshard's, zarrshard for the others) and compared with the source.
//! * Whole-array read (warm page cache) into a new buffer per call: zarrshard
//!   `Array::read_region`, zarrs `retrieve_array_subset_opt`, tensorstore `read()`; the result
//!   equals the source.
//! * Small reads: the 3-D array opened anew for each sample (no shard index loaded), then n
//!   host threads together read distinct random inner chunks (16×64×64, seed 42; 2000, or
//!   every chunk when the array has fewer), thread t taking reads t, t+n, …: zarrshard
//!   `Array::read_region` from n `std::thread`s sharing one `Array`; zarrs
//!   `retrieve_array_subset_sharded_opt` with one shared `ArrayShardedReadableExtCache`, the n
//!   host threads being the threads of its n-thread pool (`broadcast`); tensorstore n Python
//!   threads, each `arr[box].read().result()`, a 256 MiB cache pool (the index stays cached;
//!   every chunk is read once, so decoded chunks never serve a read). Every read equals the
//!   source's box.
//! * Per thread count and workload: one untimed warm-up per implementation (the checks above),
//!   then `ZARRSHARD_SCALING_REPS` rounds (default 5, 2 with QUICK), each running the
//!   implementations back to back. Reported: the median, the cores busy (process CPU time over
//!   wall time), the ratios zarrshard/peer taken round by round (the machine's speed drifts
//!   between rounds), the speed-up over the smallest thread count, and the CPU that other
//!   processes used meanwhile.
//!
//! Environment: `ZARRSHARD_SCALING_THREADS=1,2,4` (default 1,2,4,8,16),
//! `ZARRSHARD_SCALING_REPS`, `ZARRSHARD_SCALING_QUICK=1`, `ZARRSHARD_SCALING_ONLY=TEXT` (only
//! workloads whose title contains TEXT), `ZARRSHARD_SCALING_SMALL_READS` (default 2000),
//! `ZARRSHARD_SCALING_DEADLINE=SECONDS` (start no measurement after that many seconds; the
//! rest is marked skipped), `ZARRSHARD_SCALING_OUT=FILE`, and the harness's
//! `ZARRSHARD_BENCH_NO_PEERS`, `ZARRSHARD_BENCH_PYTHON` (default `.venv/bin/python`, then the
//! build tree's), `ZARRSHARD_BENCH_DIR` (work directory on a local disk),
//! `ZARRSHARD_BENCH_KEEP`.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};
use zarrs::array::{
    Array as ZArray, ArrayBytes, ArrayShardedReadableExt, ArrayShardedReadableExtCache,
    ArraySubset, CodecOptions,
};
use zarrs::filesystem::FilesystemStore;

#[path = "../image.rs"]
mod image;
#[path = "../peer.rs"]
mod peer;
#[path = "../zarrs_plain_store.rs"]
mod plain_store;
#[path = "../process_cpu.rs"]
mod process_cpu;

use image::Rng;
use peer::Peer;
use plain_store::PlainFsStore;
use process_cpu::{cpu_now, machine_busy, process_cpu};

type R<T> = Result<T, String>;

fn es<E: Display>(e: E) -> String {
    e.to_string()
}

fn env_num(name: &str) -> Option<f64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

// ---------------------------------------------------------------------------------------------
// Arrays.

/// One array's shape, shard shape and inner chunk shape.
struct Geometry {
    key: &'static str,
    shape: Vec<u64>,
    shard: Vec<u64>,
    inner: Vec<u64>,
}

/// `8192²`, `256×1024²`, or `a×b×c`.
fn dims(v: &[u64]) -> String {
    match v {
        [a, b] if a == b => format!("{a}²"),
        [a, b, c] if b == c => format!("{a}×{b}²"),
        _ => v.iter().map(u64::to_string).collect::<Vec<_>>().join("×"),
    }
}

impl Geometry {
    fn bytes(&self) -> usize {
        self.shape.iter().product::<u64>() as usize * 2
    }
    fn label(&self) -> String {
        format!(
            "{} uint16, {} shards, {} inner chunks, zstd 1",
            dims(&self.shape),
            dims(&self.shard),
            dims(&self.inner)
        )
    }
    fn whole(&self) -> Vec<Range<u64>> {
        self.shape.iter().map(|&n| 0..n).collect()
    }
    fn zeros(&self) -> Vec<u64> {
        vec![0; self.shape.len()]
    }
    fn zarr_json(&self) -> Value {
        json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape,
            "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.shard}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": self.inner,
                "codecs": [
                    {"name": "bytes", "configuration": {"endian": "little"}},
                    {"name": "zstd", "configuration": {"level": 1, "checksum": false}},
                ],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
                "index_location": "end",
            }}],
            "attributes": {},
        })
    }
}

/// An array's source data and its directories: the one every implementation reads (written
/// once by zarrshard) and one per implementation to write into.
struct ArrayData {
    geo: Geometry,
    data: Vec<u16>,
    raw: PathBuf,
    read_dir: PathBuf,
    write_dirs: HashMap<&'static str, PathBuf>,
}

impl ArrayData {
    fn src(&self) -> &[u8] {
        as_bytes(&self.data)
    }
    /// The C-order bytes of the box at `origin` of extent `size` (rank 3).
    fn extract(&self, origin: &[u64], size: &[u64]) -> Vec<u8> {
        let s = &self.geo.shape;
        let mut out = Vec::with_capacity(size.iter().product::<u64>() as usize * 2);
        for z in origin[0]..origin[0] + size[0] {
            for y in origin[1]..origin[1] + size[1] {
                let at = ((z * s[1] + y) * s[2] + origin[2]) as usize;
                out.extend_from_slice(as_bytes(&self.data[at..at + size[2] as usize]));
            }
        }
        out
    }
}

fn as_bytes(v: &[u16]) -> &[u8] {
    const {
        assert!(
            cfg!(target_endian = "little"),
            "the harness assumes a little-endian host"
        )
    };
    // SAFETY: u16 has no padding; the slice covers exactly the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 2) }
}

fn same(got: &[u8], want: &[u8], what: &str) -> R<()> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: data differs from the source"))
    }
}

fn make_array_dir(dir: &Path, geo: &Geometry) -> R<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(es)?;
    std::fs::write(
        dir.join("zarr.json"),
        serde_json::to_vec_pretty(&geo.zarr_json()).unwrap(),
    )
    .map_err(es)
}

/// Remove the shards an earlier sample wrote and flush dirty pages (untimed, before a write).
fn fresh_output(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join("c"));
    // SAFETY: no arguments, no failure mode.
    unsafe { libc::sync() };
}

type ZsArray = zarrshard::Array<zarrshard::FsStore>;

fn zs_open(dir: &Path) -> R<ZsArray> {
    zarrshard::Array::open(zarrshard::FsStore::new(dir)).map_err(es)
}

#[cfg(zs_threads)]
fn zs_set_threads(n: usize) -> R<()> {
    zarrshard::set_threads(n).map_err(es)
}
#[cfg(not(zs_threads))]
fn zs_set_threads(n: usize) -> R<()> {
    if n == 1 {
        Ok(())
    } else {
        Err("this zarrshard has no thread setting".into())
    }
}

fn zopts(n: usize) -> CodecOptions {
    // zarrs keeps at least `chunk_concurrent_minimum` (default 4) chunks in flight whatever the
    // target, so n threads need both.
    CodecOptions::default()
        .with_concurrent_target(n)
        .with_chunk_concurrent_minimum(n)
}

fn zarrs_read_all<S: zarrs::storage::ReadableStorageTraits + ?Sized + 'static>(
    arr: &ZArray<S>,
    geo: &Geometry,
    opts: &CodecOptions,
) -> R<Vec<u8>> {
    let out = arr
        .retrieve_array_subset_opt::<ArrayBytes<'static>>(
            &ArraySubset::new_with_ranges(&geo.whole()),
            opts,
        )
        .map_err(es)?;
    Ok(out.into_fixed().map_err(es)?.into_owned())
}

/// A written array read back by an implementation other than its writer equals the source.
fn verify_written(writer: &str, a: &ArrayData) -> R<()> {
    let dir = &a.write_dirs[writer];
    let got = if writer == "zarrshard" {
        let arr =
            ZArray::open(Arc::new(FilesystemStore::new(dir).map_err(es)?), "/").map_err(es)?;
        zarrs_read_all(&arr, &a.geo, &CodecOptions::default())?
    } else {
        let mut out = vec![0u8; a.geo.bytes()];
        zs_open(dir)?
            .read_region(&a.geo.zeros(), &a.geo.shape, &mut out)
            .map_err(es)?;
        out
    };
    same(&got, a.src(), &format!("{writer}'s array read back"))
}

// ---------------------------------------------------------------------------------------------
// Measurement.

const IMPS: [&str; 3] = ["zarrshard", "zarrs", "tensorstore"];

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Write,
    Read,
    Small,
}

struct Workload {
    title: String,
    op: Op,
    /// Index into the run's arrays.
    array: usize,
}

/// One measurement: wall seconds and the CPU seconds of the process that did the work.
#[derive(Clone, Copy)]
struct Sample {
    t: f64,
    cpu: Option<f64>,
}

/// The results of one workload at one thread count.
#[derive(Default)]
struct Cell {
    /// Per implementation: its samples, or why it has none.
    samples: [Vec<Sample>; 3],
    errors: [Option<String>; 3],
    /// Each round's seconds per implementation, for the ratios taken round by round.
    rounds: Vec<[Option<f64>; 3]>,
    /// Cores other processes used over the measurement.
    other: Option<f64>,
    skipped: Option<String>,
}

struct Ctx {
    arrays: Vec<ArrayData>,
    /// Origins of the small reads (in the 3-D array) and their extent.
    small: Vec<Vec<u64>>,
    small_array: usize,
    peer: Option<RefCell<Peer>>,
    zs_write: Vec<ZsArray>,
    zs_read: Vec<ZsArray>,
    zarrs_write: Vec<ZArray<PlainFsStore>>,
    zarrs_read: Vec<ZArray<FilesystemStore>>,
    pools: HashMap<usize, rayon::ThreadPool>,
}

impl Ctx {
    fn run(&self, imp: usize, w: &Workload, n: usize, check: bool) -> R<Sample> {
        let a = &self.arrays[w.array];
        match (IMPS[imp], w.op) {
            ("tensorstore", op) => {
                let peer = self.peer.as_ref().ok_or("no peer")?;
                if op == Op::Write {
                    fresh_output(&a.write_dirs["tensorstore"]);
                }
                let workload = match op {
                    Op::Write => "scale_write",
                    Op::Read => "scale_read",
                    Op::Small => "scale_small",
                };
                let v = peer.borrow_mut().call(&json!({
                    "op": "run", "impl": "tensorstore", "workload": workload, "variant": a.geo.key,
                    "threads": n, "check": check,
                }))?;
                let s = Sample {
                    t: v["seconds"].as_f64().ok_or("no seconds in reply")?,
                    cpu: v["cpu_seconds"].as_f64(),
                };
                if op == Op::Write && check {
                    verify_written("tensorstore", a)?;
                }
                Ok(s)
            }
            ("zarrshard", Op::Write) => {
                let arr = &self.zs_write[w.array];
                write_sample("zarrshard", a, check, || {
                    arr.write_region(&a.geo.zeros(), &a.geo.shape, a.src())
                        .map_err(es)
                })
            }
            ("zarrshard", Op::Read) => {
                let arr = &self.zs_read[w.array];
                let (out, s) = timed(|| {
                    let mut out = vec![0u8; a.geo.bytes()];
                    arr.read_region(&a.geo.zeros(), &a.geo.shape, &mut out)
                        .map_err(es)?;
                    Ok(out)
                })?;
                if check {
                    same(&out, a.src(), "zarrshard")?;
                }
                Ok(s)
            }
            ("zarrshard", Op::Small) => {
                let arr = zs_open(&a.read_dir)?;
                let (size, small) = (&a.geo.inner, &self.small);
                let (outs, s) = timed(|| {
                    std::thread::scope(|sc| {
                        let handles: Vec<_> = (0..n)
                            .map(|t| {
                                let arr = &arr;
                                sc.spawn(move || -> R<Vec<Vec<u8>>> {
                                    let mut buf =
                                        vec![0u8; size.iter().product::<u64>() as usize * 2];
                                    let mut outs = Vec::new();
                                    for o in small.iter().skip(t).step_by(n) {
                                        arr.read_region(o, size, &mut buf).map_err(es)?;
                                        if check {
                                            outs.push(buf.clone());
                                        }
                                    }
                                    Ok(outs)
                                })
                            })
                            .collect();
                        handles
                            .into_iter()
                            .map(|h| {
                                h.join()
                                    .map_err(|_| "a reading thread panicked".to_string())?
                            })
                            .collect::<R<Vec<_>>>()
                    })
                })?;
                if check {
                    self.check_small(&outs, n, "zarrshard")?;
                }
                Ok(s)
            }
            ("zarrs", Op::Write) => {
                let arr = &self.zarrs_write[w.array];
                let grid: Vec<Range<u64>> = a
                    .geo
                    .shape
                    .iter()
                    .zip(&a.geo.shard)
                    .map(|(&n, &s)| 0..n / s)
                    .collect();
                let opts = zopts(n);
                let pool = &self.pools[&n];
                write_sample("zarrs", a, check, || {
                    pool.install(|| {
                        arr.store_chunks_opt(
                            &ArraySubset::new_with_ranges(&grid),
                            &a.data[..],
                            &opts,
                        )
                    })
                    .map_err(es)
                })
            }
            ("zarrs", Op::Read) => {
                let arr = &self.zarrs_read[w.array];
                let opts = zopts(n);
                let pool = &self.pools[&n];
                let (out, s) = timed(|| pool.install(|| zarrs_read_all(arr, &a.geo, &opts)))?;
                if check {
                    same(&out, a.src(), "zarrs")?;
                }
                Ok(s)
            }
            ("zarrs", Op::Small) => {
                let arr = &self.zarrs_read[w.array];
                let cache = ArrayShardedReadableExtCache::new(arr);
                let opts = zopts(n);
                let pool = &self.pools[&n];
                let (size, small) = (&a.geo.inner, &self.small);
                let (outs, s) = timed(|| {
                    // Every thread of the pool runs this once: the pool's n threads are the
                    // n host threads.
                    pool.broadcast(|b| -> R<Vec<Vec<u8>>> {
                        let mut outs = Vec::new();
                        for o in small.iter().skip(b.index()).step_by(n) {
                            let ranges: Vec<Range<u64>> =
                                o.iter().zip(size).map(|(&o, &s)| o..o + s).collect();
                            let out = arr
                                .retrieve_array_subset_sharded_opt::<ArrayBytes<'static>>(
                                    &cache,
                                    &ArraySubset::new_with_ranges(&ranges),
                                    &opts,
                                )
                                .map_err(es)?;
                            if check {
                                outs.push(out.into_fixed().map_err(es)?.into_owned());
                            }
                        }
                        Ok(outs)
                    })
                    .into_iter()
                    .collect::<R<Vec<_>>>()
                })?;
                if check {
                    self.check_small(&outs, n, "zarrs")?;
                }
                Ok(s)
            }
            (imp, _) => Err(format!("no such implementation: {imp}")),
        }
    }

    /// `outs[t]` holds thread t's reads (t, t+n, …), each equal to the source's box.
    fn check_small(&self, outs: &[Vec<Vec<u8>>], n: usize, what: &str) -> R<()> {
        let a = &self.arrays[self.small_array];
        let count: usize = outs.iter().map(Vec::len).sum();
        if outs.len() != n || count != self.small.len() {
            return Err(format!(
                "{what}: {count} reads on {} threads, expected {} on {n}",
                outs.len(),
                self.small.len()
            ));
        }
        for (t, outs) in outs.iter().enumerate() {
            for (o, got) in self.small.iter().skip(t).step_by(n).zip(outs) {
                same(
                    got,
                    &a.extract(o, &a.geo.inner),
                    &format!("{what}: read at {o:?}"),
                )?;
            }
        }
        Ok(())
    }

    fn peer_pid(&self) -> Option<u32> {
        self.peer.as_ref().map(|p| p.borrow().child.id())
    }
}

/// One whole-array write sample by `imp`: its previous shards removed and dirty pages flushed
/// (untimed), `write` timed, the written array checked when `check`.
fn write_sample(imp: &str, a: &ArrayData, check: bool, write: impl FnOnce() -> R<()>) -> R<Sample> {
    fresh_output(&a.write_dirs[imp]);
    let s = timed(write)?.1;
    if check {
        verify_written(imp, a)?;
    }
    Ok(s)
}

/// `f`'s result and its wall and process CPU time.
fn timed<T>(f: impl FnOnce() -> R<T>) -> R<(T, Sample)> {
    let (cpu, t0) = (cpu_now(), Instant::now());
    let out = f()?;
    Ok((
        out,
        Sample {
            t: t0.elapsed().as_secs_f64(),
            cpu: Some(cpu_now() - cpu),
        },
    ))
}

/// Measure workload `w` at `n` threads: a checked warm-up per implementation, then `reps`
/// rounds of every implementation back to back.
fn measure(ctx: &Ctx, w: &Workload, n: usize, reps: usize, available: &[bool; 3]) -> Cell {
    let mut cell = Cell::default();
    for i in 0..3 {
        if !available[i] {
            continue;
        }
        if let Err(e) = ctx.run(i, w, n, true) {
            eprintln!("[scaling] {}: {} at {n} threads: {e}", w.title, IMPS[i]);
            cell.errors[i] = Some(e);
        }
    }
    let pid = ctx.peer_pid();
    let busy = || machine_busy().map(|b| b - cpu_now() - pid.and_then(process_cpu).unwrap_or(0.0));
    let (b0, t0) = (busy(), Instant::now());
    for _ in 0..reps {
        let mut round = [None; 3];
        for i in 0..3 {
            if !available[i] || cell.errors[i].is_some() {
                continue;
            }
            match ctx.run(i, w, n, false) {
                Ok(s) => {
                    round[i] = Some(s.t);
                    cell.samples[i].push(s);
                }
                Err(e) => cell.errors[i] = Some(e),
            }
        }
        cell.rounds.push(round);
    }
    if let (Some(b0), Some(b1)) = (b0, busy()) {
        cell.other = Some(((b1 - b0) / t0.elapsed().as_secs_f64()).max(0.0));
    }
    cell
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        "–".into()
    } else if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

// ---------------------------------------------------------------------------------------------
// Tables.

/// Work per sample: bytes (MB/s) or reads (reads/s).
fn work(ctx: &Ctx, w: &Workload) -> f64 {
    match w.op {
        Op::Small => ctx.small.len() as f64,
        _ => ctx.arrays[w.array].geo.bytes() as f64 / 1e6,
    }
}

fn tables(
    ctx: &Ctx,
    workloads: &[Workload],
    threads: &[usize],
    cells: &HashMap<(usize, usize), Cell>,
    header: &str,
) -> String {
    let mut out = String::from(header);
    let base = threads.iter().copied().min().unwrap_or(1);
    for (wi, w) in workloads.iter().enumerate() {
        let unit = if w.op == Op::Small { "reads/s" } else { "MB/s" };
        out.push_str(&format!("\n### {}\n\n", w.title));
        out.push_str(&format!(
            "| threads | zarrshard {unit} (cores busy) | zarrs | tensorstore | zarrshard/zarrs | zarrshard/tensorstore | ×{base} thread: zarrshard | zarrs | tensorstore | other processes (cores) |\n"
        ));
        out.push_str("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
        let rate = |c: &Cell, i: usize| -> Option<f64> {
            let ts: Vec<f64> = c.samples[i].iter().map(|s| s.t).collect();
            (!ts.is_empty()).then(|| work(ctx, w) / median(&ts))
        };
        let base_cell = cells.get(&(wi, base));
        for &n in threads {
            let Some(c) = cells.get(&(wi, n)) else {
                continue;
            };
            if let Some(why) = &c.skipped {
                out.push_str(&format!("| {n} | {why} | | | | | | | | |\n"));
                continue;
            }
            let mut row = vec![n.to_string()];
            for i in 0..3 {
                row.push(match (&c.errors[i], rate(c, i)) {
                    (Some(e), _) => format!(
                        "error: {}",
                        e.chars().take(120).collect::<String>().replace('|', "/")
                    ),
                    (None, Some(r)) => {
                        let busy: Vec<f64> = c.samples[i]
                            .iter()
                            .filter_map(|s| s.cpu.map(|cpu| cpu / s.t))
                            .collect();
                        if busy.is_empty() {
                            fmt_num(r)
                        } else {
                            format!("{} ({:.1})", fmt_num(r), median(&busy))
                        }
                    }
                    (None, None) => "–".into(),
                });
            }
            for i in 1..3 {
                // Throughput ratio zarrshard/peer = peer's time / zarrshard's, round by round.
                let v: Vec<f64> = c
                    .rounds
                    .iter()
                    .filter_map(|r| Some(r[i]? / r[0]?))
                    .collect();
                row.push(if v.is_empty() {
                    "–".into()
                } else {
                    format!("{:.2}×", median(&v))
                });
            }
            for i in 0..3 {
                let f = base_cell.and_then(|b| Some(rate(c, i)? / rate(b, i)?));
                row.push(f.map_or("–".into(), |f| format!("{f:.2}×")));
            }
            row.push(c.other.map_or("?".into(), |o| format!("{o:.2}")));
            out.push_str(&format!("| {} |\n", row.join(" | ")));
        }
    }
    out
}

fn write_out(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = std::fs::write(path, text) {
        eprintln!("[scaling] cannot write {}: {e}", path.display());
    }
}

// ---------------------------------------------------------------------------------------------
// The run.

/// The Python peer: `ZARRSHARD_BENCH_PYTHON`, else `.venv/bin/python` under the current
/// directory, else the build tree's; `peers.py` under `bench/` of the current directory, else
/// the build tree's. Why not, when there is none.
fn python_and_script() -> R<(PathBuf, PathBuf)> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let first = |c: [PathBuf; 2]| c.into_iter().find(|p| p.exists());
    let python = match std::env::var_os("ZARRSHARD_BENCH_PYTHON") {
        Some(p) => Some(PathBuf::from(p)).filter(|p| p.exists()),
        None => first([
            PathBuf::from(".venv/bin/python"),
            here.join("../.venv/bin/python"),
        ]),
    };
    let python = python.ok_or("no Python with tensorstore (ZARRSHARD_BENCH_PYTHON, .venv/bin/python: run scripts/venv.sh)")?;
    let script = first([PathBuf::from("bench/peers.py"), here.join("peers.py")])
        .ok_or("bench/peers.py not found")?;
    Ok((python, script))
}

fn main() {
    // As `benches/compare.rs`: a fixed glibc mmap threshold and no trimming, so the run's
    // allocation history does not decide which buffers are mapped anew.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
    }
    let started = Instant::now();
    let quick = std::env::var_os("ZARRSHARD_SCALING_QUICK").is_some();
    let mut threads: Vec<usize> = std::env::var("ZARRSHARD_SCALING_THREADS")
        .ok()
        .map(|v| {
            v.split(',')
                .filter_map(|x| x.trim().parse().ok())
                .filter(|&n| n > 0)
                .collect()
        })
        .unwrap_or_else(|| vec![1, 2, 4, 8, 16]);
    threads.sort_unstable();
    threads.dedup();
    assert!(
        !threads.is_empty(),
        "ZARRSHARD_SCALING_THREADS names no thread count"
    );
    let reps = env_num("ZARRSHARD_SCALING_REPS")
        .map_or(if quick { 2 } else { 5 }, |r| r.max(1.0) as usize);
    let deadline = env_num("ZARRSHARD_SCALING_DEADLINE");
    let only = std::env::var("ZARRSHARD_SCALING_ONLY").ok();
    let out_path = PathBuf::from(
        std::env::var_os("ZARRSHARD_SCALING_OUT")
            .unwrap_or_else(|| "target/bench/scaling.md".into()),
    );

    // Only the shapes differ between QUICK and the full run; shards and inner chunks stay.
    let (shape_2d, shape_3d) = if quick {
        (vec![2048, 2048], vec![64, 512, 512])
    } else {
        (vec![8192, 8192], vec![256, 1024, 1024])
    };
    let geos = [
        Geometry {
            key: "2d",
            shape: shape_2d,
            shard: vec![1024, 1024],
            inner: vec![64, 64],
        },
        Geometry {
            key: "3d",
            shape: shape_3d,
            shard: vec![64, 256, 256],
            inner: vec![16, 64, 64],
        },
    ];
    let small_reads = env_num("ZARRSHARD_SCALING_SMALL_READS").map_or(2000, |v| v as usize);
    // Distinct random inner chunks of the 3-D array (seed 42), at most one per chunk.
    let small: Vec<Vec<u64>> = {
        let g = &geos[1];
        let grid: Vec<u64> = g.shape.iter().zip(&g.inner).map(|(&n, &c)| n / c).collect();
        let total = grid.iter().product::<u64>() as usize;
        let mut all: Vec<usize> = (0..total).collect();
        let mut rng = Rng(42);
        let k = small_reads.min(total);
        for i in 0..k {
            let j = i + (rng.next() % (total - i) as u64) as usize;
            all.swap(i, j);
        }
        all[..k]
            .iter()
            .map(|&c| {
                let c = c as u64;
                vec![
                    c / (grid[1] * grid[2]) * g.inner[0],
                    c / grid[2] % grid[1] * g.inner[1],
                    c % grid[2] * g.inner[2],
                ]
            })
            .collect()
    };
    let all_workloads = vec![
        Workload {
            title: format!("2-D whole-array write: {}", geos[0].label()),
            op: Op::Write,
            array: 0,
        },
        Workload {
            title: format!("2-D whole-array read: {}", geos[0].label()),
            op: Op::Read,
            array: 0,
        },
        Workload {
            title: format!("3-D whole-array write: {}", geos[1].label()),
            op: Op::Write,
            array: 1,
        },
        Workload {
            title: format!("3-D whole-array read: {}", geos[1].label()),
            op: Op::Read,
            array: 1,
        },
        Workload {
            title: format!(
                "{} concurrent reads of one {} inner chunk each (3-D array), n host threads",
                small.len(),
                dims(&geos[1].inner)
            ),
            op: Op::Small,
            array: 1,
        },
    ];
    let workloads: Vec<Workload> = all_workloads
        .into_iter()
        .filter(|w| only.as_deref().is_none_or(|o| w.title.contains(o)))
        .collect();

    let work = std::env::var_os("ZARRSHARD_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("zarrshard-scaling-{}", std::process::id()))
        });
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work directory");
    eprintln!("[scaling] work directory {}", work.display());

    // Source data, the read arrays (written by zarrshard, checked by zarrs) and the write
    // directories.
    let want_peers = std::env::var_os("ZARRSHARD_BENCH_NO_PEERS").is_none();
    zs_set_threads(0)
        .or_else(|_| zs_set_threads(1))
        .expect("zarrshard thread setting");
    let mut arrays = Vec::new();
    for geo in geos {
        let t = Instant::now();
        let needed = workloads.iter().any(|w| w.array == arrays.len());
        let data = if needed {
            image::generate(
                geo.shape[..geo.shape.len() - 2].iter().product::<u64>() as usize,
                geo.shape[geo.shape.len() - 2] as usize,
                geo.shape[geo.shape.len() - 1] as usize,
            )
        } else {
            Vec::new()
        };
        let dir = work.join(geo.key);
        let a = ArrayData {
            raw: dir.join("data.u16le"),
            read_dir: dir.join("read"),
            write_dirs: IMPS
                .iter()
                .map(|&i| (i, dir.join("write").join(i)))
                .collect(),
            geo,
            data,
        };
        make_array_dir(&a.read_dir, &a.geo).unwrap();
        for d in a.write_dirs.values() {
            make_array_dir(d, &a.geo).unwrap();
        }
        if needed {
            zs_open(&a.read_dir)
                .unwrap()
                .write_region(&a.geo.zeros(), &a.geo.shape, a.src())
                .expect("write the read array");
            let arr =
                ZArray::open(Arc::new(FilesystemStore::new(&a.read_dir).unwrap()), "/").unwrap();
            same(
                &zarrs_read_all(&arr, &a.geo, &CodecOptions::default()).unwrap(),
                a.src(),
                "the read array, read by zarrs",
            )
            .unwrap();
            if want_peers {
                std::fs::write(&a.raw, a.src()).expect("write the raw data");
            }
            eprintln!(
                "[scaling] {}: generated, written and checked in {:.1} s",
                a.geo.label(),
                t.elapsed().as_secs_f64()
            );
        }
        arrays.push(a);
    }

    // tensorstore through peers.py.
    let manifest = json!({
        "scaling": arrays.iter().map(|a| (a.geo.key.to_string(), json!({
            "shape": a.geo.shape, "data": a.raw, "read_dir": a.read_dir, "write_dir": a.write_dirs["tensorstore"],
        }))).collect::<serde_json::Map<_, _>>(),
        "small": {"variant": "3d", "origins": small, "shape": arrays[1].geo.inner},
    });
    let (peer, peer_note) = if !want_peers {
        (
            None,
            "tensorstore skipped (ZARRSHARD_BENCH_NO_PEERS)".to_string(),
        )
    } else {
        let started = python_and_script().and_then(|(py, script)| {
            Peer::start("peers.py", &py, &[&script], &manifest).map_err(|e| {
                format!(
                    "{e} (peers.py under {} needs numpy and tensorstore)",
                    py.display()
                )
            })
        });
        match started {
            Ok(mut p) => {
                let info = p
                    .call(&json!({"op": "info"}))
                    .map(|v| v["info"].clone())
                    .unwrap_or_default();
                let v = info["versions"]["tensorstore"]
                    .as_str()
                    .unwrap_or("?")
                    .to_string();
                if v.starts_with("unavailable") {
                    (None, format!("tensorstore skipped: {v}"))
                } else {
                    (Some(RefCell::new(p)), format!("tensorstore {v}"))
                }
            }
            Err(e) => (None, format!("tensorstore skipped: {e}")),
        }
    };
    eprintln!("[scaling] {peer_note}");
    let available = [true, true, peer.is_some()];

    let pools = threads
        .iter()
        .map(|&n| {
            (
                n,
                rayon::ThreadPoolBuilder::new()
                    .num_threads(n)
                    .thread_name(|i| format!("zarrs-{i}"))
                    .build()
                    .expect("rayon pool"),
            )
        })
        .collect();
    let ctx = Ctx {
        zs_write: arrays
            .iter()
            .map(|a| zs_open(&a.write_dirs["zarrshard"]).unwrap())
            .collect(),
        zs_read: arrays
            .iter()
            .map(|a| zs_open(&a.read_dir).unwrap())
            .collect(),
        zarrs_write: arrays
            .iter()
            .map(|a| {
                ZArray::open(Arc::new(PlainFsStore::new(&a.write_dirs["zarrs"])), "/").unwrap()
            })
            .collect(),
        zarrs_read: arrays
            .iter()
            .map(|a| {
                ZArray::open(Arc::new(FilesystemStore::new(&a.read_dir).unwrap()), "/").unwrap()
            })
            .collect(),
        arrays,
        small,
        small_array: 1,
        peer,
        pools,
    };

    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let header = format!(
        "## Scaling: zarrshard {} vs zarrs {} vs {peer_note}\n\n\
         {cores} cores available ({cpu_model}); {reps} rounds per cell after a checked warm-up{}. \
         Cells: median {} (cores busy: the process's CPU time over wall time); ratios are \
         zarrshard's throughput over the peer's, median of the per-round ratios; ×N: the \
         median throughput over that at the smallest thread count; other processes: the cores \
         the rest of the machine used meanwhile. Method: `bench/examples/scaling.rs`.\n",
        env!("ZARRSHARD_COMMIT"),
        env!("ZARRS_VERSION"),
        if quick {
            "; QUICK sizes (a smoke test)"
        } else {
            ""
        },
        "MB/s (10⁶ bytes of the array per second) or reads/s",
    );

    // The smallest thread count first (the base of the speed-ups), then the largest down, so
    // a deadline drops the middle ones first.
    let base = threads[0];
    let order: Vec<usize> = std::iter::once(base)
        .chain(threads.iter().rev().copied().filter(|&n| n != base))
        .collect();
    let mut cells: HashMap<(usize, usize), Cell> = HashMap::new();
    for &n in &order {
        if let Err(e) = zs_set_threads(n) {
            eprintln!("[scaling] zarrshard at {n} threads: {e}");
        }
        for (wi, w) in workloads.iter().enumerate() {
            let elapsed = started.elapsed().as_secs_f64();
            if deadline.is_some_and(|d| elapsed > d) {
                cells.insert(
                    (wi, n),
                    Cell {
                        skipped: Some(format!(
                            "skipped: past the {:.0} s deadline",
                            deadline.unwrap()
                        )),
                        ..Cell::default()
                    },
                );
                continue;
            }
            eprint!("[scaling] {n} threads: {} ...", w.title);
            let t = Instant::now();
            let cell = measure(&ctx, w, n, reps, &available);
            eprintln!(" {:.1} s", t.elapsed().as_secs_f64());
            cells.insert((wi, n), cell);
        }
        write_out(
            &out_path,
            &tables(&ctx, &workloads, &threads, &cells, &header),
        );
    }
    let text = tables(&ctx, &workloads, &threads, &cells, &header);
    write_out(&out_path, &text);
    print!("{text}");
    drop(ctx);
    if std::env::var_os("ZARRSHARD_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    }
    eprintln!(
        "[scaling] done in {:.0} s; tables in {}",
        started.elapsed().as_secs_f64(),
        out_path.display()
    );
}
