//! zarrshard against its peers, in one run, on the same data and the same metadata.
//!
//! Not part of the test suite: `cargo bench --manifest-path bench/Cargo.toml` (or
//! `scripts/bench.sh`, which also sets up the Python peers and keeps the table). Progress goes
//! to stderr, the table (Markdown) to stdout.
//!
//! Method
//! * One source image, generated once: 4096×4096 uint16, a smooth gradient plus deterministic
//!   noise (xorshift). Written once as raw little-endian bytes for the Python peers.
//! * Every array has the same `zarr.json` bytes (written here): 1024×1024 shards of 64×64 inner
//!   chunks, `bytes` little-endian + zstd level 1 (or none, or gzip level 1), index
//!   `bytes` + `crc32c` at the end (or at the start). The read workloads all read the same
//!   files (written once by zarrshard); each implementation writes its own copy for the
//!   write workloads, and every copy is read back and compared with the source once.
//! * Files live under a temporary directory on the local disk and are read with a warm page
//!   cache (every measurement is preceded by an untimed warm-up run that also checks the
//!   result).
//! * Each measurement is repeated and the implementations alternate (A B C A B C …): the
//!   Python peers run in a child process (`peers.py --serve`) that the harness drives one
//!   sample at a time. Reported: median and min–max.
//! * Ceilings (same machine, same run, one thread): memcpy and crc32c of the array, raw zstd-1
//!   and gzip-1 compress/decompress of the same 64×64 inner chunks with reused contexts. The
//!   whole-array and one-shard encodes and decodes also run their codec in their own rounds,
//!   and ratios are taken round by round: this VM's speed drifts between rounds.
//! * zarrs built alone (`zarrs-shipped/`, flate2 on its default backend) is a child process
//!   like the Python peers, for the gzip encode.
//! * Peak heap comes from the counting global allocator below (all threads).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::Display;
use std::num::NonZeroU64;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Counting allocator: current and peak heap bytes over all threads.

#[path = "../../tests/common/alloc.rs"]
mod alloc;
use alloc::peak_during as peak_heap;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

// ---------------------------------------------------------------------------------------------
// Small helpers.

type R<T> = Result<T, String>;

trait OrStr<T> {
    fn s(self) -> R<T>;
}
impl<T, E: Display> OrStr<T> for Result<T, E> {
    fn s(self) -> R<T> {
        self.map_err(|e| e.to_string())
    }
}

const N: u64 = 4096; // array side
const S: u64 = 1024; // shard side
const C: u64 = 64; // inner chunk side
const EL: usize = 2; // bytes per element
const CHUNK_BYTES: usize = (C * C) as usize * EL;
const SHARD_BYTES: usize = (S * S) as usize * EL;
const ARRAY_BYTES: usize = (N * N) as usize * EL;
/// The shard the single-shard and single-chunk workloads use.
const SHARD: [u64; 2] = [1, 1];
/// Rows 1000..1500, columns 900..1700: crosses 4 shards and 9×13 inner chunks.
const REGION: [[u64; 2]; 2] = [[1000, 1500], [900, 1700]];

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

/// One measurement: wall seconds, and the process's CPU seconds (user + system, all
/// threads) over the same interval when known; `cpu / t` is the number of cores busy.
#[derive(Clone, Copy)]
struct Sample {
    t: f64,
    cpu: Option<f64>,
}

impl Sample {
    fn per(self, k: f64) -> Sample {
        Sample { t: self.t / k, cpu: self.cpu.map(|c| c / k) }
    }
    /// A value that is not a time (peak heap bytes).
    fn value(v: f64) -> Sample {
        Sample { t: v, cpu: None }
    }
}

#[path = "../process_cpu.rs"]
mod process_cpu;
use process_cpu::{cpu_now, machine_busy, process_cpu};

struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    fn start() -> Clock {
        Clock { cpu: cpu_now(), wall: Instant::now() }
    }
    fn stop(&self) -> Sample {
        let t = secs(self.wall);
        Sample { t, cpu: Some(cpu_now() - self.cpu) }
    }
}

/// Seconds still allowed for waiting on other processes and redoing disturbed rounds over the
/// whole run (`ZARRSHARD_BENCH_QUIET_BUDGET`, default 240), so a machine that never goes
/// quiet cannot stretch the run without bound.
fn quiet_budget() -> &'static std::sync::Mutex<f64> {
    static B: std::sync::OnceLock<std::sync::Mutex<f64>> = std::sync::OnceLock::new();
    B.get_or_init(|| {
        std::sync::Mutex::new(
            std::env::var("ZARRSHARD_BENCH_QUIET_BUDGET").ok().and_then(|v| v.parse().ok()).unwrap_or(240.0),
        )
    })
}

fn budget_left() -> f64 {
    *quiet_budget().lock().unwrap()
}

fn spend_budget(s: f64) {
    *quiet_budget().lock().unwrap() -= s;
}

/// CPU seconds of the peer processes so far.
fn peers_cpu(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|&p| process_cpu(p)).sum()
}

/// CPU load (cores) of other processes: the machine's busy time less ours and the peers'.
struct OtherLoad {
    busy: Option<f64>,
    own: f64,
    peer: f64,
    wall: Instant,
}

impl OtherLoad {
    fn start(peer_pids: &[u32]) -> OtherLoad {
        OtherLoad { busy: machine_busy(), own: cpu_now(), peer: peers_cpu(peer_pids), wall: Instant::now() }
    }
    /// (other processes' CPU seconds, wall seconds) since `start`.
    fn stop(&self, peer_pids: &[u32]) -> Option<(f64, f64)> {
        let b = machine_busy()? - self.busy?;
        let peer = peers_cpu(peer_pids) - self.peer;
        Some(((b - (cpu_now() - self.own) - peer).max(0.0), secs(self.wall)))
    }
}

/// Wait (within the run's budget) until other processes use less than 0.15 cores over half a
/// second, so measurements do not share the machine with, say, a compiler.
fn wait_quiet(peer_pids: &[u32]) {
    let t0 = Instant::now();
    let mut said = false;
    loop {
        let probe = OtherLoad::start(peer_pids);
        std::thread::sleep(std::time::Duration::from_millis(500));
        let Some((other, wall)) = probe.stop(peer_pids) else { return };
        let load = other / wall;
        if load < 0.15 || secs(t0) >= budget_left() {
            spend_budget(secs(t0));
            if said {
                eprint!(" waited {:.0} s;", secs(t0));
            }
            return;
        }
        if !said {
            eprint!(" [other processes busy ({load:.1} cores): waiting]");
            said = true;
        }
    }
}

/// Flush dirty pages (untimed), so no write measurement pays for an earlier one's writeback.
fn sync() {
    // SAFETY: no arguments, no failure mode.
    unsafe { libc::sync() };
}

/// Remove the shards an earlier sample wrote (every implementation then creates new files)
/// and flush, before a write measurement.
fn fresh_output(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join("c"));
    sync();
}

fn as_bytes(v: &[u16]) -> &[u8] {
    assert!(cfg!(target_endian = "little"), "the harness assumes a little-endian host");
    // SAFETY: u16 has no padding; the slice covers exactly the same memory.
    unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 2) }
}

/// Copy the `h`×`w` box at (`r0`, `c0`) of the source into `out` (C order, native bytes).
fn extract(src: &[u8], r0: u64, c0: u64, h: u64, w: u64, out: &mut [u8]) {
    let row = (w as usize) * EL;
    for r in 0..h as usize {
        let s = ((r0 as usize + r) * N as usize + c0 as usize) * EL;
        out[r * row..(r + 1) * row].copy_from_slice(&src[s..s + row]);
    }
}

fn extract_vec(src: &[u8], r0: u64, c0: u64, h: u64, w: u64) -> Vec<u8> {
    let mut v = vec![0u8; (h * w) as usize * EL];
    extract(src, r0, c0, h, w, &mut v);
    v
}

fn same(got: &[u8], want: &[u8], what: &str) -> R<()> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: decoded data differs from the source"))
    }
}

#[path = "../image.rs"]
mod image;
use image::Rng;

/// The image (`image.rs`): one 4096×4096 plane.
fn generate() -> Vec<u16> {
    image::generate(1, N as usize, N as usize)
}

// ---------------------------------------------------------------------------------------------
// Array configurations: the same metadata for every implementation.

#[derive(Clone, Copy)]
struct Variant {
    key: &'static str,
    label: &'static str,
}

const ZSTD_END: Variant = Variant { key: "zstd1-end", label: "zstd 1, index at end" };
const ZSTD_START: Variant = Variant { key: "zstd1-start", label: "zstd 1, index at start" };
const RAW_END: Variant = Variant { key: "raw-end", label: "uncompressed, index at end" };
const GZIP_END: Variant = Variant { key: "gzip1-end", label: "gzip 1, index at end" };
const ENCODE_VARIANTS: [Variant; 4] = [ZSTD_END, RAW_END, GZIP_END, ZSTD_START];
const READ_VARIANTS: [Variant; 2] = [ZSTD_END, ZSTD_START];

fn sharding_config(v: Variant) -> Value {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let codecs = match v.key {
        "raw-end" => json!([bytes]),
        "gzip1-end" => json!([bytes, {"name": "gzip", "configuration": {"level": 1}}]),
        _ => json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
    };
    json!({
        "chunk_shape": [C, C],
        "codecs": codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": if v.key.ends_with("start") { "start" } else { "end" },
    })
}

fn zarr_json(v: Variant) -> Value {
    json!({
        "zarr_format": 3,
        "node_type": "array",
        "shape": [N, N],
        "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [S, S]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": sharding_config(v)}],
        "attributes": {},
    })
}

/// A fresh array directory holding only `zarr.json`.
fn make_array_dir(dir: &Path, v: Variant) -> R<()> {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).s()?;
    std::fs::write(dir.join("zarr.json"), serde_json::to_vec_pretty(&zarr_json(v)).unwrap()).s()
}

// ---------------------------------------------------------------------------------------------
// zarrshard: thread setting (when the crate has one) and helpers.

#[cfg(zs_threads)]
fn zs_set_threads(n: usize) {
    zarrshard::set_threads(n).expect("zarrshard::set_threads");
}
#[cfg(not(zs_threads))]
fn zs_set_threads(_n: usize) {}
/// Switch zarrshard's pool to `n` threads (0 = one per core). True when the setting changed:
/// the new pool's threads (and their per-thread codec contexts) start cold, so the caller runs
/// its operation once untimed before measuring the steady state.
fn zs_use_threads(n: usize) -> bool {
    static NOW: AtomicUsize = AtomicUsize::new(usize::MAX);
    if NOW.swap(n, Ordering::SeqCst) != n {
        zs_set_threads(n);
        true
    } else {
        false
    }
}
#[cfg(zs_threads)]
fn zs_default_threads() -> Option<usize> {
    zarrshard::set_threads(0).ok()?;
    Some(zarrshard::threads())
}
#[cfg(not(zs_threads))]
fn zs_default_threads() -> Option<usize> {
    None
}

type ZsArray = zarrshard::Array<zarrshard::FsStore>;

fn zs_open(dir: &Path) -> R<ZsArray> {
    zarrshard::Array::open(zarrshard::FsStore::new(dir)).s()
}

/// Every chunk of `timed` equals the source's.
fn check_timed(ctx: &Ctx, outs: &[Vec<u8>], timed: &[[u64; 2]], what: &str) -> R<()> {
    for (out, &o) in outs.iter().zip(timed) {
        same(out, &ctx.chunk(o), what)?;
    }
    Ok(())
}

/// Inner chunk `o` (array element coordinates of its origin) within shard [1, 1].
fn in_shard(o: [u64; 2]) -> [u64; 2] {
    [(o[0] % S) / C, (o[1] % S) / C]
}

/// Warm single-chunk reads with zarrshard: one `ShardReader` (index loaded, warmed on chunk 0),
/// then `read_chunk_into` of each timed chunk into one buffer; time per chunk.
fn zs_warm_chunks<'a>(arr: ZsArray, ctx: &'a Ctx, timed: &'a [[u64; 2]], name: String) -> Runner<'a> {
    let first = in_shard(ctx.single[0]);
    Runner::zs(name, 1, move |check| {
        zs_use_threads(0);
        let reader = arr.shard_reader(&SHARD).s()?;
        let mut buf = vec![0u8; CHUNK_BYTES];
        reader.read_chunk_into(&first, &mut buf).s()?;
        let mut outs = Vec::new();
        let clk = Clock::start();
        for &o in timed {
            reader.read_chunk_into(&in_shard(o), &mut buf).s()?;
            if check {
                outs.push(buf.clone());
            }
        }
        let s = clk.stop().per(timed.len() as f64);
        if check {
            check_timed(ctx, &outs, timed, "zarrshard")?;
        }
        Ok(s)
    })
}

/// The same with zarrs: `ArrayShardedReadableExt::retrieve_subchunk_opt` with an
/// `ArrayShardedReadableExtCache` (the cached shard index), warmed on chunk 0.
fn zarrs_warm_chunks<'a>(arr: ZArray<FilesystemStore>, ctx: &'a Ctx, timed: &'a [[u64; 2]], name: String) -> Runner<'a> {
    let first = ctx.single[0];
    Runner::peer(name, move |check| {
        let cache = ArrayShardedReadableExtCache::new(&arr);
        let opts = CodecOptions::default();
        arr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[first[0] / C, first[1] / C], &opts).s()?;
        let mut outs = Vec::new();
        let clk = Clock::start();
        for &o in timed {
            let out = arr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[o[0] / C, o[1] / C], &opts).s()?;
            if check {
                outs.push(zbytes(out)?);
            }
        }
        let s = clk.stop().per(timed.len() as f64);
        if check {
            check_timed(ctx, &outs, timed, "zarrs")?;
        }
        Ok(s)
    })
}

/// Decode the whole array with zarrshard: `Array::read_region` over the whole array (per row
/// of shards: indexes and coalesced chunk bytes fetched shard by shard in parallel, then the
/// inner chunks decoded in parallel, each task owning a band of output rows).
fn zs_read_array(arr: &ZsArray) -> R<Vec<u8>> {
    let mut out = vec![0u8; ARRAY_BYTES];
    arr.read_region(&[0, 0], &[N, N], &mut out).s()?;
    Ok(out)
}

/// Total size of the files under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_bytes(&e.path()),
                    _ => e.metadata().map_or(0, |m| m.len()),
                })
                .sum()
        })
        .unwrap_or(0)
}

/// Check an array written by anyone: every shard read back by zarrshard equals the source.
fn verify_written(dir: &Path, src: &[u8]) -> R<()> {
    let arr = zs_open(dir)?;
    let got = zs_read_array(&arr)?;
    same(&got, src, &format!("array written to {}", dir.display()))
}

// ---------------------------------------------------------------------------------------------
// zarrs: stores.

#[path = "../zarrs_plain_store.rs"]
mod plain_store;

#[path = "../chunks.rs"]
mod chunks;
#[path = "../two_threads.rs"]
mod two_threads;

mod zstores {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use zarrs::storage::byte_range::ByteRangeIterator;
    use zarrs::storage::{Bytes, MaybeBytesIterator, ReadableStorageTraits, StorageError, StoreKey};

    /// Counts what zarrs asks of its storage: calls (`get` / `get_partial_many`, each one
    /// open of the file by `FilesystemStore` without a handle cache), byte ranges, bytes,
    /// `size_key` calls.
    pub struct CountingStore<T: ?Sized> {
        pub inner: Arc<T>,
        pub calls: AtomicUsize,
        pub ranges: AtomicUsize,
        pub bytes: AtomicUsize,
        pub sizes: AtomicUsize,
    }

    impl<T: ?Sized> CountingStore<T> {
        pub fn new(inner: Arc<T>) -> Self {
            CountingStore {
                inner,
                calls: AtomicUsize::new(0),
                ranges: AtomicUsize::new(0),
                bytes: AtomicUsize::new(0),
                sizes: AtomicUsize::new(0),
            }
        }
        pub fn reset(&self) {
            for a in [&self.calls, &self.ranges, &self.bytes, &self.sizes] {
                a.store(0, Ordering::SeqCst);
            }
        }
        pub fn get(&self) -> (usize, usize, usize, usize) {
            (
                self.calls.load(Ordering::SeqCst),
                self.ranges.load(Ordering::SeqCst),
                self.bytes.load(Ordering::SeqCst),
                self.sizes.load(Ordering::SeqCst),
            )
        }
    }

    impl<T: ?Sized + ReadableStorageTraits> ReadableStorageTraits for CountingStore<T> {
        fn get(&self, key: &StoreKey) -> Result<Option<Bytes>, StorageError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.ranges.fetch_add(1, Ordering::SeqCst);
            let v = self.inner.get(key)?;
            self.bytes.fetch_add(v.as_ref().map_or(0, |b| b.len()), Ordering::SeqCst);
            Ok(v)
        }
        fn get_partial_many<'a>(
            &'a self,
            key: &StoreKey,
            byte_ranges: ByteRangeIterator<'a>,
        ) -> Result<MaybeBytesIterator<'a>, StorageError> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            let Some(values) = self.inner.get_partial_many(key, byte_ranges)? else {
                return Ok(None);
            };
            let values: Vec<_> = values.collect();
            self.ranges.fetch_add(values.len(), Ordering::SeqCst);
            let n: usize = values.iter().map(|b| b.as_ref().map_or(0, Bytes::len)).sum();
            self.bytes.fetch_add(n, Ordering::SeqCst);
            Ok(Some(Box::new(values.into_iter())))
        }
        fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
            self.sizes.fetch_add(1, Ordering::SeqCst);
            self.inner.size_key(key)
        }
        fn supports_get_partial(&self) -> bool {
            self.inner.supports_get_partial()
        }
    }
}

use zarrs::array::{
    Array as ZArray, ArrayBytes, ArrayShardedReadableExt, ArrayShardedReadableExtCache,
    ArraySubset, CodecOptions,
};
use zarrs::filesystem::{FilesystemStore, FilesystemStoreOptions};
use plain_store::PlainFsStore;
use zstores::CountingStore;

fn zopts(threads: Option<usize>) -> CodecOptions {
    match threads {
        None => CodecOptions::default(),
        // zarrs keeps at least `chunk_concurrent_minimum` (default 4) chunks in flight
        // whatever the target, so one thread needs both.
        Some(n) => CodecOptions::default().with_concurrent_target(n).with_chunk_concurrent_minimum(n),
    }
}

fn zbytes(b: ArrayBytes<'static>) -> R<Vec<u8>> {
    Ok(b.into_fixed().s()?.into_owned())
}

fn subset(r: std::ops::Range<u64>, c: std::ops::Range<u64>) -> ArraySubset {
    ArraySubset::new_with_ranges(&[r, c])
}

// ---------------------------------------------------------------------------------------------
// Peers in child processes (the Python peers, `peers.py --serve`, and zarrs built alone,
// `zarrs-shipped/`), driven one sample at a time over the same line protocol.

#[path = "../peer.rs"]
mod peer;
use peer::Peer;

impl Peer {
    fn run(&mut self, imp: &str, workload: &str, variant: Variant, check: bool) -> R<Sample> {
        let v = self.call(&json!({
            "op": "run", "impl": imp, "workload": workload, "variant": variant.key, "check": check,
        }))?;
        Ok(Sample {
            t: v["seconds"].as_f64().ok_or_else(|| "no seconds in reply".to_string())?,
            cpu: v["cpu_seconds"].as_f64(),
        })
    }
}

// Measurement and the table.

#[derive(Clone, Copy)]
enum Unit {
    /// Throughput of this many decoded bytes per sample.
    Rate(f64),
    /// Time per inner chunk (the sample is already divided).
    PerChunk,
    /// Total time of the sample.
    Total,
    /// Peak heap bytes.
    Heap,
}

/// The zarrshard rows of a workload are compared with this ceiling: `bytes` processed at
/// `per_core` bytes/s on each core zarrshard uses.
#[derive(Clone, Copy)]
struct Ceiling {
    name: &'static str,
    per_core: f64,
    bytes: f64,
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// A zarrshard row: % of ceiling, no ratio.
    Zarrshard,
    /// A peer: ratio against the workload's first (zarrshard) row.
    Peer,
    /// A raw ceiling: neither.
    Ceiling,
    /// The raw codec on two plain threads (`two_threads.rs`): % of the ceiling, as a
    /// zarrshard row, for reference; no ratio.
    RawTwo,
}

struct Runner<'a> {
    name: String,
    kind: Kind,
    /// Cores zarrshard uses on this workload (for the % of ceiling).
    cores: usize,
    /// For the raw codec run in the workload's own rounds: the bytes one sample processes
    /// (on one core), so each round gives the ceiling its zarrshard rows are held to.
    same_round_bytes: Option<f64>,
    f: Box<dyn FnMut(bool) -> R<Sample> + 'a>,
}

impl<'a> Runner<'a> {
    fn new(name: impl Into<String>, kind: Kind, cores: usize, f: impl FnMut(bool) -> R<Sample> + 'a) -> Self {
        Runner { name: name.into(), kind, cores, same_round_bytes: None, f: Box::new(f) }
    }
    fn peer(name: impl Into<String>, f: impl FnMut(bool) -> R<Sample> + 'a) -> Self {
        Runner::new(name, Kind::Peer, 1, f)
    }
    fn zs(name: impl Into<String>, cores: usize, f: impl FnMut(bool) -> R<Sample> + 'a) -> Self {
        Runner::new(name, Kind::Zarrshard, cores, f)
    }
    fn ceiling(name: impl Into<String>, f: impl FnMut(bool) -> R<Sample> + 'a) -> Self {
        Runner::new(name, Kind::Ceiling, 1, f)
    }
    /// The raw codec over `bytes` per sample on one thread, run in the workload's rounds.
    fn same_round_ceiling(name: impl Into<String>, bytes: f64, f: impl FnMut(bool) -> R<Sample> + 'a) -> Self {
        Runner { same_round_bytes: Some(bytes), ..Runner::ceiling(name, f) }
    }
}

struct Row {
    workload: String,
    imp: String,
    median: String,
    range: String,
    ratio: String,
    pct: String,
}

struct Table {
    /// The peers' processes (Python, zarrs built alone), whose CPU time is ours, not "other".
    peer_pids: Vec<u32>,
    /// Largest CPU load (cores) of other processes seen during a measurement.
    max_other: f64,
    rows: Vec<Row>,
    /// Median seconds (or bytes) per "workload|implementation".
    medians: HashMap<String, f64>,
}

/// Smallest and largest of `v`.
fn lo_hi(v: &[f64]) -> (f64, f64) {
    (v.iter().cloned().fold(f64::MAX, f64::min), v.iter().cloned().fold(0.0, f64::max))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn fmt_num(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn fmt_time(s: f64) -> String {
    if s < 1e-3 {
        format!("{} µs", fmt_num(s * 1e6))
    } else if s < 1.0 {
        format!("{} ms", fmt_num(s * 1e3))
    } else {
        format!("{} s", fmt_num(s))
    }
}

fn fmt_bytes(b: f64) -> String {
    if b >= (1u64 << 20) as f64 {
        format!("{} MiB", fmt_num(b / (1u64 << 20) as f64))
    } else if b >= 1024.0 {
        format!("{} KiB", fmt_num(b / 1024.0))
    } else {
        format!("{b:.0} B")
    }
}

fn quick() -> bool {
    std::env::var_os("ZARRSHARD_BENCH_QUICK").is_some()
}

impl Table {
    /// [`Table::measure`] with the raw codec of `ceiling` run as the second runner of every
    /// round, so the zarrshard rows' % of ceiling is taken round by round.
    fn measure_against<'a>(
        &mut self,
        workload: &str,
        unit: Unit,
        reps: usize,
        ceiling: Option<Ceiling>,
        codec: &'a CodecData,
        mut runners: Vec<Runner<'a>>,
    ) {
        if let Some(c) = ceiling {
            runners.insert(1.min(runners.len()), codec.same_round(c.name, c.bytes as usize));
            let two_cores = runners.iter().any(|r| r.kind == Kind::Zarrshard && r.cores == 2);
            if let Some(raw) = codec.two_threads(c.name).filter(|_| two_cores) {
                runners.insert(2.min(runners.len()), raw);
            }
        }
        self.measure(workload, unit, reps, ceiling, runners);
    }

    fn measure(
        &mut self,
        workload: &str,
        unit: Unit,
        reps: usize,
        ceiling: Option<Ceiling>,
        mut runners: Vec<Runner<'_>>,
    ) {
        let reps = if quick() { reps.min(2) } else { reps };
        // ZARRSHARD_BENCH_ONLY=TEXT: only the workloads whose title contains TEXT (and the
        // ceilings), for development.
        if let Some(only) = std::env::var_os("ZARRSHARD_BENCH_ONLY") {
            if !workload.contains(only.to_str().unwrap_or("")) && !workload.starts_with("0.") {
                return;
            }
        }
        sync();
        let t0 = Instant::now();
        eprint!("[bench] {workload} ...");
        let n = runners.len();
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); n];
        let mut errors: Vec<Option<String>> = vec![None; n];
        wait_quiet(&self.peer_pids);
        // Untimed warm-up, with the result checked.
        for (i, r) in runners.iter_mut().enumerate() {
            if let Err(e) = (r.f)(true) {
                errors[i] = Some(e);
            }
        }
        // Alternate: A B C … A B C …. A round during which other processes used more than
        // 0.25 cores is redone (at most 3 times, within the run's budget) after waiting for
        // quiet; the load of the rounds kept is reported.
        let (mut other_cpu, mut other_wall, mut redone) = (0.0, 0.0, 0);
        // Each kept round's seconds per runner, for the ratios and ceilings taken round by round.
        let mut rounds: Vec<Vec<Option<f64>>> = Vec::new();
        for _ in 0..reps {
            for attempt in 0..4 {
                let round_start = Instant::now();
                let probe = OtherLoad::start(&self.peer_pids);
                let mut round: Vec<Option<Sample>> = vec![None; n];
                for (i, r) in runners.iter_mut().enumerate() {
                    if errors[i].is_some() {
                        continue;
                    }
                    match (r.f)(false) {
                        Ok(x) => round[i] = Some(x),
                        Err(e) => errors[i] = Some(e),
                    }
                }
                let load = probe.stop(&self.peer_pids);
                let disturbed = load.is_some_and(|(o, w)| w > 0.05 && o / w > 0.25);
                if disturbed && attempt < 3 && budget_left() > 0.0 {
                    redone += 1;
                    spend_budget(secs(round_start));
                    wait_quiet(&self.peer_pids);
                    continue;
                }
                if let Some((o, w)) = load {
                    other_cpu += o;
                    other_wall += w;
                }
                rounds.push(round.iter().map(|x| x.map(|x| x.t)).collect());
                for (i, x) in round.into_iter().enumerate() {
                    if let Some(x) = x {
                        samples[i].push(x);
                    }
                }
                break;
            }
        }
        let elapsed = secs(t0);
        let other = (other_wall > 0.0).then(|| other_cpu / other_wall);
        eprintln!(
            " {elapsed:.1} s (other processes: {:.2} cores{})",
            other.unwrap_or(f64::NAN),
            if redone > 0 { format!("; {redone} disturbed rounds redone") } else { String::new() }
        );
        let workload = &match other {
            Some(o) if other_wall > 0.5 && o > 0.25 => {
                self.max_other = self.max_other.max(o);
                format!("{workload} ⚠ other processes used {o:.1} cores meanwhile")
            }
            Some(o) => {
                // Too short to judge from /proc/stat's 10 ms ticks otherwise.
                if other_wall > 0.5 {
                    self.max_other = self.max_other.max(o);
                }
                workload.to_string()
            }
            None => workload.to_string(),
        };
        // Peers' ratios are against the first row, zarrshard's default.
        let has_reference = errors[0].is_none() && runners[0].kind == Kind::Zarrshard;
        for (i, r) in runners.iter().enumerate() {
            if let Some(e) = &errors[i] {
                let e: String = e.chars().take(200).collect();
                self.push(workload, &r.name, format!("error: {e}"), "", "", "");
                continue;
            }
            let ts: Vec<f64> = samples[i].iter().map(|s| s.t).collect();
            let ((lo, hi), m) = (lo_hi(&ts), median(&ts));
            self.medians.insert(format!("{}|{}", workload.split(" ⚠").next().unwrap(), r.name), m);
            let busy: Vec<f64> = samples[i].iter().filter_map(|s| s.cpu.map(|c| c / s.t)).collect();
            let cores = if busy.is_empty() { String::new() } else { format!(", {:.1} cores busy", median(&busy)) };
            let (med, range) = match unit {
                Unit::Rate(bytes) => (
                    format!("{} MB/s ({}{cores})", fmt_num(bytes / m / 1e6), fmt_time(m)),
                    format!("{}–{} MB/s", fmt_num(bytes / hi / 1e6), fmt_num(bytes / lo / 1e6)),
                ),
                Unit::PerChunk => (
                    format!("{} per chunk ({}{cores})", fmt_time(m), fmt_num(CHUNK_BYTES as f64 / m / 1e6) + " MB/s"),
                    format!("{}–{}", fmt_time(lo), fmt_time(hi)),
                ),
                Unit::Total => (
                    format!("{}{}", fmt_time(m), if cores.is_empty() { String::new() } else { format!(" ({})", &cores[2..]) }),
                    format!("{}–{}", fmt_time(lo), fmt_time(hi)),
                ),
                Unit::Heap => (fmt_bytes(m), format!("{}–{}", fmt_bytes(lo), fmt_bytes(hi))),
            };
            // This runner's time over another's, round by round (the machine's speed drifts
            // between rounds; two runners of one round ran seconds apart at most).
            let per_round = |other: usize, f: &dyn Fn(f64, f64) -> f64| -> Vec<f64> {
                rounds.iter().filter_map(|rd| Some(f(rd[i]?, rd[other]?))).collect()
            };
            let ratio = match (r.kind, has_reference) {
                (Kind::Peer, true) => {
                    let v = per_round(0, &|t, t0| t / t0);
                    let (lo, hi) = lo_hi(&v);
                    format!("{:.2}× ({lo:.2}–{hi:.2})", median(&v))
                }
                (Kind::Peer, false) => "n/a".to_string(),
                _ => "—".to_string(),
            };
            let same_round = runners.iter().position(|r| r.same_round_bytes.is_some()).filter(|&k| errors[k].is_none());
            let raw_two = runners.iter().position(|r| r.kind == Kind::RawTwo).filter(|&k| errors[k].is_none());
            let pct = match (ceiling, r.kind, same_round) {
                (Some(c), Kind::Zarrshard | Kind::RawTwo, Some(k)) => {
                    // The raw codec ran `bytes_k` on one core in t_k: at that speed the
                    // workload's bytes on `cores` cores take c.bytes · t_k / (bytes_k · cores).
                    let bytes_k = runners[k].same_round_bytes.unwrap_or(f64::NAN);
                    let cores = r.cores as f64;
                    let pct = per_round(k, &|t, tk| c.bytes * tk / (bytes_k * cores) / t);
                    let (lo, hi) = lo_hi(&pct);
                    // Two-core zarrshard rows also against the raw codec on two plain threads
                    // (time over time, round by round).
                    let against_raw = match raw_two {
                        Some(j) if r.kind == Kind::Zarrshard && r.cores == 2 => {
                            let v = per_round(j, &|t, tj| tj / t);
                            let (lo, hi) = lo_hi(&v);
                            format!("; {:.0}% ({:.0}–{:.0}%) of the raw codec on 2 plain threads", 100.0 * median(&v), 100.0 * lo, 100.0 * hi)
                        }
                        _ => String::new(),
                    };
                    format!(
                        "{:.0}% ({:.0}–{:.0}%) of {} × {} core{}, same rounds{against_raw}",
                        100.0 * median(&pct),
                        100.0 * lo,
                        100.0 * hi,
                        c.name,
                        r.cores,
                        if r.cores == 1 { "" } else { "s" }
                    )
                }
                (Some(c), Kind::Zarrshard, None) => {
                    let ceil_time = c.bytes / (c.per_core * r.cores as f64);
                    format!("{:.0}% of {} × {} core{}", 100.0 * ceil_time / m, c.name, r.cores, if r.cores == 1 { "" } else { "s" })
                }
                _ => String::new(),
            };
            self.push(workload, &r.name, med, &range, &ratio, &pct);
        }
    }

    fn push(&mut self, w: &str, imp: &str, median: String, range: &str, ratio: &str, pct: &str) {
        self.rows.push(Row {
            workload: w.to_string(),
            imp: imp.to_string(),
            median,
            range: range.to_string(),
            ratio: ratio.to_string(),
            pct: pct.to_string(),
        });
    }

    fn print(&self, out: &mut String) {
        out.push_str("| workload | implementation | median | min–max | ratio zarrshard/peer | % of ceiling |\n");
        out.push_str("| --- | --- | --- | --- | --- | --- |\n");
        let mut last = String::new();
        for r in &self.rows {
            let w = if r.workload == last { String::new() } else { r.workload.clone() };
            last = r.workload.clone();
            out.push_str(&format!(
                "| {w} | {} | {} | {} | {} | {} |\n",
                r.imp, r.median, r.range, r.ratio, r.pct
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The run.

struct Ctx {
    work: PathBuf,
    data: Vec<u16>,
    /// Element origins of the 256 inner chunks of shard [1, 1], C order (the first is the
    /// untimed warm-up of the warm reads).
    single: Vec<[u64; 2]>,
    /// Element origins of 1000 distinct random inner chunks (seed 42).
    random: Vec<[u64; 2]>,
    peer: Option<RefCell<Peer>>,
    peer_note: String,
    /// zarrs built alone (`zarrs-shipped/`): flate2 on its default backend.
    shipped: Option<RefCell<Peer>>,
    shipped_note: String,
}

impl Ctx {
    fn src(&self) -> &[u8] {
        as_bytes(&self.data)
    }
    fn chunk(&self, o: [u64; 2]) -> Vec<u8> {
        extract_vec(self.src(), o[0], o[1], C, C)
    }
    fn read_dir(&self, v: Variant) -> PathBuf {
        self.work.join("read").join(v.key)
    }
    fn enc_dir(&self, imp: &str, v: Variant) -> PathBuf {
        self.work.join("enc").join(imp).join(v.key)
    }
    fn peer_runner<'a>(&'a self, imp: &'static str, label: &str, workload: &'static str, v: Variant) -> Option<Runner<'a>> {
        let peer = if imp == "zarrs-shipped" { self.shipped.as_ref()? } else { self.peer.as_ref()? };
        let encode = workload == "encode";
        let dir = self.enc_dir(imp, v);
        Some(Runner::peer(label, move |check| {
            if encode {
                fresh_output(&dir);
            }
            let s = peer.borrow_mut().run(imp, workload, v, check)?;
            if encode && check {
                verify_written(&dir, self.src())?;
            }
            Ok(s)
        }))
    }
    /// tensorstore and zarr-python runners for `workload`, where the peers are available.
    fn peers<'a>(&'a self, workload: &'static str, v: Variant) -> Vec<Runner<'a>> {
        [("tensorstore", "tensorstore (default context)"), ("zarr-python", "zarr-python (default config)")]
            .into_iter()
            .filter_map(|(imp, label)| self.peer_runner(imp, label, workload, v))
            .collect()
    }
}

/// Time `op` (run once untimed first when zarrshard's thread setting just changed).
fn zs_timed<T>(threads: usize, mut op: impl FnMut() -> R<T>, before: impl Fn()) -> R<(T, Sample)> {
    if zs_use_threads(threads) {
        op()?;
    }
    before();
    let clk = Clock::start();
    let out = op()?;
    Ok((out, clk.stop()))
}

fn main() {
    let started = Instant::now();
    // glibc malloc: a fixed mmap threshold (32 MiB, its maximum) and no trimming, so buffers
    // below 32 MiB are recycled from the heap instead of being mapped (and page-faulted) anew
    // on every sample, whatever the allocation history; 32 MiB outputs are still mapped, for
    // every implementation alike.
    // ZARRSHARD_BENCH_GLIBC_DEFAULTS=1 leaves glibc as a host process finds it.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if !glibc_defaults() {
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let zs_threads = zs_default_threads();
    let zarrs_threads = CodecOptions::default().concurrent_target();

    // Work directory on the local disk.
    let work = std::env::var_os("ZARRSHARD_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("zarrshard-bench-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    eprintln!("[bench] work directory {}", work.display());

    let t = Instant::now();
    let data = generate();
    std::fs::write(work.join("data.u16le"), as_bytes(&data)).expect("write data");
    eprintln!("[bench] generated the 4096×4096 uint16 image in {:.1} s", secs(t));

    let single: Vec<[u64; 2]> = (0..S / C)
        .flat_map(|i| (0..S / C).map(move |j| [SHARD[0] * S + i * C, SHARD[1] * S + j * C]))
        .collect();
    let random: Vec<[u64; 2]> = {
        let g = N / C;
        let mut all: Vec<u64> = (0..g * g).collect();
        let mut rng = Rng(42);
        for i in 0..1000 {
            let j = i + (rng.next() % (all.len() - i) as u64) as usize;
            all.swap(i, j);
        }
        all[..1000].iter().map(|&k| [(k / g) * C, (k % g) * C]).collect()
    };

    // The arrays every implementation reads, written once by zarrshard (buffered, C order),
    // and the directories each implementation writes into (zarr.json only).
    let src = as_bytes(&data);
    for v in READ_VARIANTS.into_iter().chain([RAW_END]) {
        let dir = work.join("read").join(v.key);
        make_array_dir(&dir, v).unwrap();
        zs_open(&dir)
            .unwrap()
            .import(&mut &src[..], zarrshard::WriteStrategy::Buffered, Default::default())
            .expect("write the read arrays");
        verify_written(&dir, src).unwrap();
    }
    let impls = ["zarrshard", "zarrs", "zarrs-fsync", "zarrs-shipped", "tensorstore", "tensorstore-fsync", "zarr-python"];
    let mut enc_dirs = serde_json::Map::new();
    for imp in impls {
        let mut m = serde_json::Map::new();
        for v in ENCODE_VARIANTS {
            if imp.ends_with("-fsync") && v.key != ZSTD_END.key || imp == "zarrs-shipped" && v.key != GZIP_END.key {
                continue;
            }
            let dir = work.join("enc").join(imp).join(v.key);
            make_array_dir(&dir, v).unwrap();
            m.insert(v.key.into(), json!(dir));
        }
        enc_dirs.insert(imp.into(), Value::Object(m));
    }
    // The Python peers' one-shard writes (6a): made here, so that the manifest names no missing
    // directory whichever workloads run (`peers.py --workdir` runs them all).
    for (imp, _) in SHARD_WRITE_PEERS {
        make_array_dir(&shard_write_dir(&work, imp), ZSTD_END).unwrap();
    }
    let manifest = json!({
        "shape": [N, N], "shard": [S, S], "inner": [C, C],
        "data": work.join("data.u16le"),
        "read_dirs": READ_VARIANTS.iter().map(|v| (v.key.to_string(), json!(work.join("read").join(v.key)))).collect::<serde_json::Map<_, _>>(),
        "enc_dirs": enc_dirs,
        "single_chunks": single,
        "random_chunks": random,
        "region": REGION,
        "shard_region": [[SHARD[0] * S, SHARD[0] * S + S], [SHARD[1] * S, SHARD[1] * S + S]],
        "shard_write_dirs": SHARD_WRITE_PEERS.iter().map(|(imp, _)| (imp.to_string(), json!(shard_write_dir(&work, imp)))).collect::<serde_json::Map<_, _>>(),
    });
    std::fs::write(work.join("manifest.json"), serde_json::to_vec_pretty(&manifest).unwrap()).unwrap();

    // Python peers.
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = std::env::var_os("ZARRSHARD_BENCH_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join("../.venv/bin/python"));
    let (peer, peer_note) = if std::env::var_os("ZARRSHARD_BENCH_NO_PEERS").is_some() {
        (None, "Python peers skipped (ZARRSHARD_BENCH_NO_PEERS)".to_string())
    } else if !python.exists() {
        (None, format!("Python peers skipped: {} not found (run scripts/venv.sh)", python.display()))
    } else {
        match Peer::start("peers.py", &python, &[&here.join("peers.py")], &manifest) {
            Ok(mut p) => {
                let info = p.call(&json!({"op": "info"})).map(|v| v["info"].clone()).unwrap_or_default();
                let note = format!(
                    "tensorstore {}, zarr-python {} (numpy {}, numcodecs {}; config async.concurrency={}, threading.max_workers={})",
                    info["versions"]["tensorstore"].as_str().unwrap_or("?"),
                    info["versions"]["zarr"].as_str().unwrap_or("?"),
                    info["versions"]["numpy"].as_str().unwrap_or("?"),
                    info["versions"]["numcodecs"].as_str().unwrap_or("?"),
                    info["zarr_config"]["async.concurrency"],
                    info["zarr_config"]["threading.max_workers"],
                );
                (Some(RefCell::new(p)), note)
            }
            Err(e) => (None, format!("Python peers unavailable: {e}")),
        }
    };

    // zarrs built alone (scripts/bench.sh builds it; ZARRSHARD_BENCH_ZARRS_SHIPPED names the
    // binary).
    let shipped_bin = std::env::var_os("ZARRSHARD_BENCH_ZARRS_SHIPPED")
        .map(PathBuf::from)
        .unwrap_or_else(|| here.join("zarrs-shipped/target/release/zarrs-shipped-peer"));
    let (shipped, shipped_note) = if !shipped_bin.exists() {
        (None, format!("zarrs built alone skipped: {} not found (scripts/bench.sh builds it)", shipped_bin.display()))
    } else {
        match Peer::start("zarrs-shipped-peer", &shipped_bin, &[], &manifest) {
            Ok(mut p) => {
                let info = p.call(&json!({"op": "info"})).map(|v| v["info"].clone()).unwrap_or_default();
                let note = format!(
                    "zarrs {} built alone (`bench/zarrs-shipped`, its own process; flate2 on {}, {} threads)",
                    info["zarrs"].as_str().unwrap_or("?"),
                    info["flate2_backend"].as_str().unwrap_or("?"),
                    info["concurrent_target"],
                );
                (Some(RefCell::new(p)), note)
            }
            Err(e) => (None, format!("zarrs built alone unavailable: {e}")),
        }
    };

    let ctx = Ctx { work: work.clone(), data, single, random, peer, peer_note, shipped, shipped_note };
    let peer_pids = [&ctx.peer, &ctx.shipped].into_iter().flatten().map(|p| p.borrow().child.id()).collect();
    let mut table = Table { peer_pids, max_other: 0.0, rows: Vec::new(), medians: HashMap::new() };

    // zarrshard runs with its default pool and with one thread; `zs_cores` is what the
    // default uses (1 when the crate has no thread setting).
    let zs_cores = zs_threads.unwrap_or(1);
    let zs_default = match zs_threads {
        Some(n) => format!("zarrshard ({n} threads, default)"),
        None => "zarrshard (1 thread, no thread setting)".to_string(),
    };
    let zs_variants: Vec<(String, usize, usize)> = match zs_threads {
        Some(n) if n > 1 => vec![(zs_default.clone(), 0, n), ("zarrshard (1 thread)".to_string(), 1, 1)],
        _ => vec![(zs_default.clone(), 0, 1)],
    };
    let zarrs_default = format!("zarrs ({zarrs_threads} threads, default)");
    let zarrs_variants: Vec<(String, Option<usize>)> =
        vec![(zarrs_default.clone(), None), ("zarrs (1 thread)".to_string(), Some(1))];

    let codec = CodecData::new(&ctx);
    let ceilings = measure_ceilings(&ctx, &codec, &mut table);
    // Rows on one shard or single chunks: the codec ceiling over shard [1, 1]'s chunks (hot).
    let c = |name: &'static str, bytes: f64| -> Option<Ceiling> {
        ceilings.get(name).map(|&per_core| Ceiling { name, per_core, bytes })
    };
    // Whole-array rows: the codec over the array's own inner chunks (what the workload
    // compresses).
    let ca = |name: &'static str, bytes: f64| -> Option<Ceiling> {
        let all = ARRAY_CEILINGS.iter().find(|(n, _)| *n == name)?.1;
        Some(Ceiling { name: all, per_core: *ceilings.get(all)?, bytes })
    };

    // 1. Encode the whole array. Before each sample (untimed): the previous sample's shards
    //    are removed and dirty pages flushed.
    for v in ENCODE_VARIANTS {
        let ceiling = match v.key {
            "raw-end" => c("memcpy", ARRAY_BYTES as f64),
            "gzip1-end" => ca("gzip-1 compress", ARRAY_BYTES as f64),
            _ => ca("zstd-1 compress", ARRAY_BYTES as f64),
        };
        let mut runners = Vec::new();
        for (name, threads, cores) in &zs_variants {
            let dir = ctx.enc_dir("zarrshard", v);
            let arr = zs_open(&dir).unwrap();
            let threads = *threads;
            let ctx = &ctx;
            // `Array::write_region` over the whole array from memory (as zarrs'
            // `store_chunks_opt`): all shards in parallel, each shard's inner chunks cut
            // straight out of the caller's array and encoded on the pool, written with one
            // `writev`.
            runners.push(Runner::zs(name.clone(), *cores, move |check| {
                let write = || arr.write_region(&[0, 0], &[N, N], ctx.src()).s();
                let ((), s) = zs_timed(threads, write, || fresh_output(&dir))?;
                if check {
                    verify_written(&dir, ctx.src())?;
                }
                Ok(s)
            }));
        }
        {
            let dir = ctx.enc_dir("zarrshard", v);
            let arr = zs_open(&dir).unwrap();
            let ctx = &ctx;
            // `Array::import` from a reader (the CLI's `zarrshard import`): one row of shards
            // read while the previous row is encoded.
            runners.push(Runner::zs(format!("{zs_default}: Array::import from a reader"), zs_cores, move |check| {
                let import = || arr.import(&mut &ctx.src()[..], zarrshard::WriteStrategy::Buffered, Default::default()).s();
                let ((), s) = zs_timed(0, import, || fresh_output(&dir))?;
                if check {
                    verify_written(&dir, ctx.src())?;
                }
                Ok(s)
            }));
        }
        for (name, threads) in &zarrs_variants {
            let dir = ctx.enc_dir("zarrs", v);
            let arr = ZArray::open(Arc::new(PlainFsStore::new(&dir)), "/").unwrap();
            let opts = zopts(*threads);
            let ctx = &ctx;
            // `store_chunks_opt` over all 4×4 shards from the whole array (no-fsync store).
            runners.push(Runner::peer(name.clone(), move |check| {
                fresh_output(&dir);
                let clk = Clock::start();
                arr.store_chunks_opt(&subset(0..N / S, 0..N / S), &ctx.data[..], &opts).s()?;
                let s = clk.stop();
                if check {
                    verify_written(&dir, ctx.src())?;
                }
                Ok(s)
            }));
        }
        if v.key == ZSTD_END.key {
            let dir = ctx.enc_dir("zarrs-fsync", v);
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let ctx = &ctx;
            runners.push(Runner::peer(
                format!("zarrs ({zarrs_threads} threads, default; FilesystemStore as shipped: fsync per shard)"),
                move |check| {
                    fresh_output(&dir);
                    let clk = Clock::start();
                    arr.store_chunks_opt(&subset(0..N / S, 0..N / S), &ctx.data[..], &CodecOptions::default()).s()?;
                    let s = clk.stop();
                    if check {
                        verify_written(&dir, ctx.src())?;
                    }
                    Ok(s)
                },
            ));
        }
        if v.key == GZIP_END.key {
            // zarrs as a user who enables its `gzip` feature gets it: flate2 on miniz_oxide.
            runners.extend(ctx.peer_runner(
                "zarrs-shipped",
                &format!("zarrs ({zarrs_threads} threads, default; built alone: flate2 on miniz_oxide, its default; own process)"),
                "encode",
                v,
            ));
        }
        runners.extend(ctx.peer_runner("tensorstore", "tensorstore (default context, file_io_sync false)", "encode", v));
        if v.key == ZSTD_END.key {
            runners.extend(ctx.peer_runner("tensorstore-fsync", "tensorstore (default context as shipped: file_io_sync)", "encode", v));
        }
        runners.extend(ctx.peer_runner("zarr-python", "zarr-python (default config)", "encode", v));
        let title = format!("1. encode whole array ({})", v.label);
        table.measure_against(&title, Unit::Rate(ARRAY_BYTES as f64), 9, ceiling, &codec, runners);
        // What each implementation left on disk (its last sample's shards).
        for row in table.rows.iter_mut().filter(|r| r.workload.starts_with(&title) && !r.imp.starts_with("ceiling")) {
            let imp = match row.imp.as_str() {
                i if i.starts_with("zarrshard") => "zarrshard",
                i if i.starts_with("zarrs") && i.contains("fsync") => "zarrs-fsync",
                i if i.starts_with("zarrs") && i.contains("built alone") => "zarrs-shipped",
                i if i.starts_with("zarrs") => "zarrs",
                i if i.starts_with("tensorstore") && i.contains("as shipped") => "tensorstore-fsync",
                i if i.starts_with("tensorstore") => "tensorstore",
                _ => "zarr-python",
            };
            let bytes = dir_bytes(&ctx.enc_dir(imp, v).join("c"));
            if bytes > 0 {
                row.imp = format!("{} → {} MB", row.imp, fmt_num(bytes as f64 / 1e6));
            }
        }
    }

    // 2. Decode the whole array; decode one whole shard.
    {
        let v = ZSTD_END;
        let dir = ctx.read_dir(v);
        let mut runners = Vec::new();
        for (name, threads, cores) in &zs_variants {
            let arr = zs_open(&dir).unwrap();
            let threads = *threads;
            let ctx = &ctx;
            runners.push(Runner::zs(name.clone(), *cores, move |check| {
                let (out, s) = zs_timed(threads, || zs_read_array(&arr), || ())?;
                if check {
                    same(&out, ctx.src(), "zarrshard")?;
                }
                Ok(s)
            }));
        }
        for (name, threads) in &zarrs_variants {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let opts = zopts(*threads);
            let ctx = &ctx;
            // `retrieve_array_subset_opt` of the whole array into `ArrayBytes` (no element
            // conversion).
            runners.push(Runner::peer(name.clone(), move |check| {
                let clk = Clock::start();
                let out = arr.retrieve_array_subset_opt::<ArrayBytes<'static>>(&subset(0..N, 0..N), &opts).s()?;
                let s = clk.stop();
                if check {
                    same(&zbytes(out)?, ctx.src(), "zarrs")?;
                }
                Ok(s)
            }));
        }
        {
            // The same read into one caller buffer kept across calls (no 32 MiB of fresh pages
            // to fault in per call), as a host decoding into its own image buffer does.
            let arr = zs_open(&dir).unwrap();
            let ctx = &ctx;
            let out = RefCell::new(vec![0u8; ARRAY_BYTES]);
            runners.push(Runner::zs(format!("{zs_default}: into a reused caller buffer"), zs_cores, move |check| {
                let mut out = out.borrow_mut();
                let ((), s) = zs_timed(0, || arr.read_region(&[0, 0], &[N, N], &mut out).s(), || ())?;
                if check {
                    same(&out, ctx.src(), "zarrshard")?;
                }
                Ok(s)
            }));
        }
        runners.extend(ctx.peers("decode_array", v));
        table.measure_against(
            "2a. decode whole array (zstd 1)",
            Unit::Rate(ARRAY_BYTES as f64),
            7,
            ca("zstd-1 decompress", ARRAY_BYTES as f64),
            &codec,
            runners,
        );

        let want = extract_vec(ctx.src(), SHARD[0] * S, SHARD[1] * S, S, S);
        let mut runners = Vec::new();
        for (name, threads, cores) in &zs_variants {
            let arr = zs_open(&dir).unwrap();
            let threads = *threads;
            let want = &want;
            // `Array::read_shard`: one read of the object, inner chunks decoded on the pool.
            runners.push(Runner::zs(name.clone(), *cores, move |check| {
                let (out, s) = zs_timed(threads, || arr.read_shard(&SHARD).s()?.ok_or("missing shard".to_string()), || ())?;
                if check {
                    same(&out, want, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        for (name, threads) in &zarrs_variants {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let opts = zopts(*threads);
            let want = &want;
            // `retrieve_chunk_opt` of the shard (the chunk of the array's grid).
            runners.push(Runner::peer(name.clone(), move |check| {
                let clk = Clock::start();
                let out = arr.retrieve_chunk_opt::<ArrayBytes<'static>>(&SHARD, &opts).s()?;
                let s = clk.stop();
                if check {
                    same(&zbytes(out)?, want, "zarrs")?;
                }
                Ok(s)
            }));
        }
        runners.extend(ctx.peers("decode_shard", v));
        table.measure_against(
            "2b. decode one whole shard (zstd 1)",
            Unit::Rate(SHARD_BYTES as f64),
            9,
            c("zstd-1 decompress", SHARD_BYTES as f64),
            &codec,
            runners,
        );
    }

    // 2c. One whole uncompressed shard decoded into a caller buffer that is reused (the
    //     target: at least half of memcpy bandwidth).
    {
        let dir = ctx.read_dir(RAW_END);
        let want = extract_vec(ctx.src(), SHARD[0] * S, SHARD[1] * S, S, S);
        let mut runners = Vec::new();
        {
            let arr = zs_open(&dir).unwrap();
            let want = &want;
            let mut out = vec![0u8; SHARD_BYTES];
            // `Array::read_region` of the shard's box into the same buffer every time: one
            // index read, one read of the chunk bytes, chunks copied (no decode step).
            runners.push(Runner::zs(zs_default.clone(), 2, move |check| {
                zs_use_threads(0);
                let clk = Clock::start();
                arr.read_region(&[SHARD[0] * S, SHARD[1] * S], &[S, S], &mut out).s()?;
                let s = clk.stop();
                if check {
                    same(&out, want, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        {
            // The decode alone: `ShardLayout::decode_shard_into` from the object in memory.
            let arr = zs_open(&dir).unwrap();
            let layout = arr.metadata().shard_layout().ok_or("not sharded").unwrap();
            let object = std::fs::read(dir.join(arr.shard_key(&SHARD))).unwrap();
            let want = &want;
            let mut out = vec![0u8; SHARD_BYTES];
            runners.push(Runner::zs("zarrshard: ShardLayout::decode_shard_into (object in memory)", 2, move |check| {
                zs_use_threads(0);
                let clk = Clock::start();
                layout.decode_shard_into(&object, &mut out).s()?;
                let s = clk.stop();
                if check {
                    same(&out, want, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let want = &want;
            let opts = zopts(None);
            // `retrieve_chunk_opt` (its decode-into-a-buffer API is private in 0.23).
            runners.push(Runner::peer(format!("{zarrs_default}: retrieve_chunk_opt"), move |check| {
                let clk = Clock::start();
                let out = arr.retrieve_chunk_opt::<ArrayBytes<'static>>(&SHARD, &opts).s()?;
                let s = clk.stop();
                if check {
                    same(&zbytes(out)?, want, "zarrs")?;
                }
                Ok(s)
            }));
        }
        table.measure_against(
            "2c. decode one whole shard into a caller buffer (uncompressed)",
            Unit::Rate(SHARD_BYTES as f64),
            9,
            c("memcpy", SHARD_BYTES as f64),
            &codec,
            runners,
        );
    }

    // 3. One inner chunk, cold (open the shard = read its index, then the chunk) and warm
    //    (index loaded), index at the end and at the start. Each sample reads the 255 inner
    //    chunks 1..256 of shard [1, 1] once (a different chunk each time) and reports the time
    //    per chunk.
    let timed_chunks: Vec<[u64; 2]> = ctx.single[1..].to_vec();
    let k = timed_chunks.len() as f64;
    let check_chunks = |ctx: &Ctx, outs: Vec<Vec<u8>>, what: &str| check_timed(ctx, &outs, &timed_chunks, what);
    for v in READ_VARIANTS {
        let dir = ctx.read_dir(v);
        // Cold.
        let mut runners = Vec::new();
        {
            let arr = zs_open(&dir).unwrap();
            let (ctx, timed, check_chunks) = (&ctx, &timed_chunks, &check_chunks);
            // `Array::shard_reader` (one read: the index) + `ShardReader::read_chunk_into`
            // (one read: the chunk), a new reader for every chunk.
            runners.push(Runner::zs(zs_default.clone(), 1, move |check| {
                zs_use_threads(0);
                let mut buf = vec![0u8; CHUNK_BYTES];
                let mut outs = Vec::new();
                let clk = Clock::start();
                for &o in timed {
                    let reader = arr.shard_reader(&SHARD).s()?;
                    reader.read_chunk_into(&in_shard(o), &mut buf).s()?;
                    if check {
                        outs.push(buf.clone());
                    }
                }
                let s = clk.stop().per(k);
                if check {
                    check_chunks(ctx, outs, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let (ctx, timed, check_chunks) = (&ctx, &timed_chunks, &check_chunks);
            // `retrieve_chunk_subset_opt` of one inner chunk: a new sharding partial decoder
            // per call (reads the index, then the chunk).
            runners.push(Runner::peer(format!("{zarrs_default}: retrieve_chunk_subset_opt"), move |check| {
                let opts = CodecOptions::default();
                let mut outs = Vec::new();
                let clk = Clock::start();
                for &o in timed {
                    let out = arr
                        .retrieve_chunk_subset_opt::<ArrayBytes<'static>>(
                            &SHARD,
                            &subset(o[0] % S..o[0] % S + C, o[1] % S..o[1] % S + C),
                            &opts,
                        )
                        .s()?;
                    if check {
                        outs.push(zbytes(out)?);
                    }
                }
                let s = clk.stop().per(k);
                if check {
                    check_chunks(ctx, outs, "zarrs")?;
                }
                Ok(s)
            }));
        }
        runners.extend(ctx.peers("chunk_cold", v));
        table.measure(
            &format!("3a. one inner chunk, cold ({})", v.label),
            Unit::PerChunk,
            9,
            c("zstd-1 decompress", CHUNK_BYTES as f64),
            runners,
        );

        // Warm.
        let mut runners = Vec::new();
        runners.push(zs_warm_chunks(zs_open(&dir).unwrap(), &ctx, &timed_chunks, zs_default.clone()));
        let stores: [(&str, usize); 2] = [("", 0), (", FilesystemStore file handle cache", 16)];
        for (suffix, handles) in stores {
            let mut o = FilesystemStoreOptions::default();
            o.file_handle_cache_size(handles);
            let arr = ZArray::open(Arc::new(FilesystemStore::new_with_options(&dir, o).unwrap()), "/").unwrap();
            let name = format!("{zarrs_default}: retrieve_subchunk_opt + index cache{suffix}");
            runners.push(zarrs_warm_chunks(arr, &ctx, &timed_chunks, name));
        }
        runners.extend(ctx.peers("chunk_warm", v));
        table.measure(
            &format!("3b. one inner chunk, warm ({})", v.label),
            Unit::PerChunk,
            9,
            c("zstd-1 decompress", CHUNK_BYTES as f64),
            runners,
        );
    }
    // Warm, encoded bytes only (no decompression): the I/O and index path alone.
    {
        let dir = ctx.read_dir(ZSTD_END);
        let mut runners = Vec::new();
        {
            let arr = zs_open(&dir).unwrap();
            let timed = &timed_chunks;
            let first = in_shard(ctx.single[0]);
            // `ShardReader::read_chunk_raw`.
            runners.push(Runner::zs(zs_default.clone(), 1, move |_| {
                zs_use_threads(0);
                let reader = arr.shard_reader(&SHARD).s()?;
                reader.read_chunk_raw(&first).s()?;
                let clk = Clock::start();
                for &o in timed {
                    std::hint::black_box(reader.read_chunk_raw(&in_shard(o)).s()?.ok_or("empty")?);
                }
                Ok(clk.stop().per(k))
            }));
        }
        let stores: [(&str, usize); 2] = [("", 0), (", FilesystemStore file handle cache", 16)];
        for (suffix, handles) in stores {
            let mut o = FilesystemStoreOptions::default();
            o.file_handle_cache_size(handles);
            let arr = ZArray::open(Arc::new(FilesystemStore::new_with_options(&dir, o).unwrap()), "/").unwrap();
            let timed = &timed_chunks;
            let first = ctx.single[0];
            // `ArrayShardedReadableExt::retrieve_encoded_subchunk` with the index cache.
            runners.push(Runner::peer(format!("zarrs: retrieve_encoded_subchunk + index cache{suffix}"), move |_| {
                let cache = ArrayShardedReadableExtCache::new(&arr);
                arr.retrieve_encoded_subchunk(&cache, &[first[0] / C, first[1] / C]).s()?;
                let clk = Clock::start();
                for &o in timed {
                    std::hint::black_box(arr.retrieve_encoded_subchunk(&cache, &[o[0] / C, o[1] / C]).s()?.ok_or("empty")?);
                }
                Ok(clk.stop().per(k))
            }));
        }
        table.measure("3c. one inner chunk, warm, encoded bytes only (zstd 1, index at end)", Unit::PerChunk, 7, None, runners);
    }
    // Warm, decoded, uncompressed inner chunks: the fixed per-chunk overhead (index lookup,
    // one read, the `bytes` codec into the caller's buffer).
    {
        let dir = ctx.read_dir(RAW_END);
        let mut runners = Vec::new();
        // `ShardReader::read_chunk_into` (uncompressed: copied, no decode step).
        runners.push(zs_warm_chunks(zs_open(&dir).unwrap(), &ctx, &timed_chunks, zs_default.clone()));
        let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
        runners.push(zarrs_warm_chunks(arr, &ctx, &timed_chunks, format!("{zarrs_default}: retrieve_subchunk_opt + index cache")));
        table.measure("3d. one inner chunk, warm, decoded, uncompressed (index at end)", Unit::PerChunk, 9, None, runners);
    }

    // 4a. 1000 random inner chunks (distinct, seed 42), one at a time, from an opened array
    //     with no index loaded (each implementation loads and keeps each shard's index).
    {
        let dir = ctx.read_dir(ZSTD_END);
        let check_random = |ctx: &Ctx, outs: Vec<Vec<u8>>, what: &str| -> R<()> {
            for (out, &o) in outs.iter().zip(&ctx.random) {
                same(out, &ctx.chunk(o), what)?;
            }
            Ok(())
        };
        let mut runners = Vec::new();
        {
            let arr = zs_open(&dir).unwrap();
            let (ctx, check_random) = (&ctx, &check_random);
            // A `ShardReader` per shard, opened on first use and kept; `read_chunk_into`.
            runners.push(Runner::zs(zs_default.clone(), 1, move |check| {
                zs_use_threads(0);
                let mut buf = vec![0u8; CHUNK_BYTES];
                let mut outs = Vec::new();
                let clk = Clock::start();
                let mut readers = HashMap::new();
                for &o in &ctx.random {
                    let key = (o[0] / S, o[1] / S);
                    if !readers.contains_key(&key) {
                        readers.insert(key, arr.shard_reader(&[key.0, key.1]).s()?);
                    }
                    readers[&key].read_chunk_into(&in_shard(o), &mut buf).s()?;
                    if check {
                        outs.push(buf.clone());
                    }
                }
                let s = clk.stop();
                if check {
                    check_random(ctx, outs, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        let stores: [(&str, usize); 2] = [("", 0), (", FilesystemStore file handle cache", 16)];
        for (suffix, handles) in stores {
            let mut o = FilesystemStoreOptions::default();
            o.file_handle_cache_size(handles);
            let arr = ZArray::open(Arc::new(FilesystemStore::new_with_options(&dir, o).unwrap()), "/").unwrap();
            let (ctx, check_random) = (&ctx, &check_random);
            runners.push(Runner::peer(
                format!("{zarrs_default}: retrieve_subchunk_opt + index cache{suffix}"),
                move |check| {
                    let opts = CodecOptions::default();
                    let mut outs = Vec::new();
                    let clk = Clock::start();
                    let cache = ArrayShardedReadableExtCache::new(&arr);
                    for &o in &ctx.random {
                        let out = arr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[o[0] / C, o[1] / C], &opts).s()?;
                        if check {
                            outs.push(zbytes(out)?);
                        }
                    }
                    let s = clk.stop();
                    if check {
                        check_random(ctx, outs, "zarrs")?;
                    }
                    Ok(s)
                },
            ));
        }
        {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let ctx = &ctx;
            runners.push(Runner::peer(format!("{zarrs_default}: retrieve_chunk_subset_opt (no index cache)"), move |_| {
                let opts = CodecOptions::default();
                let clk = Clock::start();
                for &o in &ctx.random {
                    let s = [o[0] / S, o[1] / S];
                    std::hint::black_box(
                        arr.retrieve_chunk_subset_opt::<ArrayBytes<'static>>(
                            &s,
                            &subset(o[0] % S..o[0] % S + C, o[1] % S..o[1] % S + C),
                            &opts,
                        )
                        .s()?,
                    );
                }
                Ok(clk.stop())
            }));
        }
        runners.extend(ctx.peers("random1000", ZSTD_END));
        table.measure(
            "4a. 1000 random inner chunks, one at a time (zstd 1, index at end)",
            Unit::Total,
            7,
            c("zstd-1 decompress", 1000.0 * CHUNK_BYTES as f64),
            runners,
        );
    }

    // 4b. A region crossing shards and inner chunks, cold (no index loaded).
    {
        let dir = ctx.read_dir(ZSTD_END);
        let [[r0, r1], [c0, c1]] = REGION;
        let (h, w) = (r1 - r0, c1 - c0);
        let want = extract_vec(ctx.src(), r0, c0, h, w);
        let covering = ((r1 - 1) / C - r0 / C + 1) * ((c1 - 1) / C - c0 / C + 1);
        let mut runners = Vec::new();
        {
            let arr = zs_open(&dir).unwrap();
            let want = &want;
            // `Array::read_region`: per shard touched, the index and then the covering inner
            // chunks' bytes as coalesced runs; decoded in parallel bands of output rows.
            runners.push(Runner::zs(zs_default.clone(), zs_default_threads().unwrap_or(1), move |check| {
                zs_use_threads(0);
                let clk = Clock::start();
                let mut out = vec![0u8; (h * w) as usize * EL];
                arr.read_region(&[r0, c0], &[h, w], &mut out).s()?;
                let s = clk.stop();
                if check {
                    same(&out, want, "zarrshard")?;
                }
                Ok(s)
            }));
        }
        for (name, threads) in &zarrs_variants {
            let arr = ZArray::open(Arc::new(FilesystemStore::new(&dir).unwrap()), "/").unwrap();
            let opts = zopts(*threads);
            let want = &want;
            // `retrieve_array_subset_opt` (a partial decoder per shard: its index is read on
            // every call).
            runners.push(Runner::peer(format!("{name}: retrieve_array_subset_opt"), move |check| {
                let clk = Clock::start();
                let out = arr.retrieve_array_subset_opt::<ArrayBytes<'static>>(&subset(r0..r1, c0..c1), &opts).s()?;
                let s = clk.stop();
                if check {
                    same(&zbytes(out)?, want, "zarrs")?;
                }
                Ok(s)
            }));
        }
        runners.extend(ctx.peers("region", ZSTD_END));
        table.measure(
            &format!("4b. region rows {r0}..{r1}, cols {c0}..{c1} (4 shards, {covering} inner chunks), cold"),
            Unit::Rate((h * w) as f64 * EL as f64),
            9,
            c("zstd-1 decompress", covering as f64 * CHUNK_BYTES as f64),
            runners,
        );
    }

    // 5. Parse a 1,048,576-entry shard index (1024×1024 inner chunks of 1×1) with crc32c.
    {
        let cfg = json!({
            "chunk_shape": [1, 1],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end",
        });
        let layout = zarrshard::ShardLayout::from_config_json(
            &cfg,
            zarrshard::DataType::UInt16,
            vec![S, S],
            zarrshard::FillValue::zero(&zarrshard::DataType::UInt16),
        )
        .unwrap();
        let n = layout.num_chunks();
        let mut index = zarrshard::ShardIndex::new_empty(n);
        for i in 0..n {
            index.set(i, Some(zarrshard::ChunkLocation { offset: 2 * i as u64, nbytes: 2 }));
        }
        let bytes = index.encode(&layout).unwrap();
        let object_size = 2 * n as u64 + bytes.len() as u64;
        let zcodec = zarrs::array::codec::ShardingCodec::new_with_configuration(
            &serde_json::from_value::<zarrs::array::codec::ShardingCodecConfiguration>(cfg).unwrap(),
        )
        .unwrap();
        let cps = [NonZeroU64::new(S).unwrap(); 2];
        let mut dst = vec![0u8; bytes.len() - 4];
        let ceiling_name = "ceiling: crc32c + memcpy of the same bytes (1 thread)";
        let mut runners = Vec::new();
        {
            let (bytes, layout, index) = (&bytes, &layout, &index);
            // `ShardIndex::decode` (checksum + every entry validated against the object size).
            runners.push(Runner::zs(zs_default.clone(), 1, move |check| {
                zs_use_threads(0);
                let clk = Clock::start();
                let got = zarrshard::ShardIndex::decode(bytes, layout, Some(object_size)).s()?;
                let s = clk.stop();
                if check && &got != index {
                    return Err("index differs".into());
                }
                Ok(s)
            }));
        }
        {
            let (bytes, layout, index) = (&bytes, &layout, &index);
            // `ShardIndex::decode_owned`: what the reader does with the buffer its index read
            // returned (checksum + validation in place, no copy). The buffer is made outside
            // the clock, as the I/O makes it.
            runners.push(Runner::zs("zarrshard: ShardIndex::decode_owned (the reader's path, on the read buffer)", 1, move |check| {
                zs_use_threads(0);
                let owned = bytes.to_vec();
                let clk = Clock::start();
                let got = zarrshard::ShardIndex::decode_owned(owned, layout, Some(object_size)).s()?;
                let s = clk.stop();
                if check && &got != index {
                    return Err("index differs".into());
                }
                Ok(s)
            }));
        }
        {
            let (bytes, layout, index) = (&bytes, &layout, &index);
            // `ShardIndex::decode_unchecked`: the same without validating the entries (what
            // zarrs does), to show what validation costs.
            runners.push(Runner::zs("zarrshard: ShardIndex::decode_unchecked (checksum only, no entry validation)", 1, move |check| {
                zs_use_threads(0);
                let clk = Clock::start();
                let got = zarrshard::ShardIndex::decode_unchecked(bytes, layout).s()?;
                let s = clk.stop();
                if check && &got != index {
                    return Err("index differs".into());
                }
                Ok(s)
            }));
        }
        {
            let bytes = &bytes;
            let zcodec = &zcodec;
            // `ShardingCodec::decode_index` (checksum; entries are not validated).
            runners.push(Runner::peer("zarrs: ShardingCodec::decode_index", move |check| {
                let clk = Clock::start();
                let got = zcodec.decode_index(bytes, &cps, &CodecOptions::default()).s()?;
                let s = clk.stop();
                if check && (got.len() != 2 * n || got[2] != 2 || got[3] != 2) {
                    return Err("index differs".into());
                }
                Ok(s)
            }));
        }
        {
            let bytes = &bytes;
            let dst = &mut dst;
            runners.push(Runner::ceiling(ceiling_name, move |_| {
                let clk = Clock::start();
                let body = &bytes[..bytes.len() - 4];
                let crc = crc32c::crc32c(body);
                dst.copy_from_slice(body);
                std::hint::black_box((crc, &dst));
                Ok(clk.stop())
            }));
        }
        let w = "5. parse a 1,048,576-entry shard index (16 MiB + crc32c)";
        table.measure(w, Unit::Rate(bytes.len() as f64), 9, None, runners);
        // % of ceiling for the zarrshard row: ceiling time / zarrshard time.
        let zs_t = table.medians.get(&format!("{w}|{zs_default}")).copied();
        let ceil_t = table.medians.get(&format!("{w}|{ceiling_name}")).copied();
        if let (Some(z), Some(cl)) = (zs_t, ceil_t) {
            if let Some(row) = table.rows.iter_mut().find(|r| r.workload.starts_with(w) && r.imp == zs_default) {
                row.pct = format!("{:.0}% of crc32c + memcpy × 1 core", 100.0 * cl / z);
            }
        }
    }

    // 6. Write one shard chunk by chunk (time, then peak heap).
    shard_writes(&ctx, &codec, &mut table, &zs_default, &zarrs_default, c("zstd-1 compress", SHARD_BYTES as f64));

    // Host I/O per access.
    io_counts(&ctx, &mut table, &zs_default);

    // Output.
    let mut out = String::new();
    out.push_str("# zarrshard benchmark\n\n");
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string()))
        .unwrap_or_default();
    out.push_str(&format!(
        "Machine: {cores} cores ({} {cpu_model}). Files under `{}` (local disk; warm page cache: every measurement follows an untimed warm-up run). \
         zarrshard: {} thread(s) by default ({}). zarrs {}: default {zarrs_threads} threads (its rayon pool); 1-thread rows use `CodecOptions::with_concurrent_target(1).with_chunk_concurrent_minimum(1)`. {}.\n\n",
        std::env::consts::ARCH,
        work.display(),
        zs_cores,
        if zs_threads.is_some() { "`zarrshard::set_threads(1)` for the 1-thread rows" } else { "the crate has no thread setting" },
        env!("ZARRS_VERSION"),
        ctx.peer_note,
    ));
    out.push_str(&format!("{}.\n\n", ctx.shipped_note));
    out.push_str(&format!(
        "Other processes on the machine used at most {:.2} cores during any measurement that lasted over 0.5 s (workloads where they used more than 0.25 are marked ⚠).\n\n",
        table.max_other
    ));
    table.print(&mut out);
    out.push_str(&notes(zs_threads.is_some()));
    out.push_str(&format!("\nTotal harness time: {:.0} s.\n", secs(started)));
    print!("{out}");
    drop(ctx);
    if std::env::var_os("ZARRSHARD_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_dir_all(&work);
    } else {
        eprintln!("[bench] kept {}", work.display());
    }
}

/// Raw deflate of `c` at level 1 by libdeflate (zarrshard's gzip encoder): the streams the
/// gzip decompress ceilings inflate.
fn deflate1(c: &[u8]) -> Vec<u8> {
    let mut e = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(1).unwrap());
    let mut out = vec![0u8; e.deflate_compress_bound(c.len())];
    let n = e.deflate_compress(c, &mut out).unwrap();
    out.truncate(n);
    out
}

/// zstd level 1 of each 8 KiB chunk of `chunks`, `passes` times, one reused context.
fn zstd_compress_each(chunks: &[u8], passes: usize) -> R<Sample> {
    let mut c = zstd::bulk::Compressor::new(1).s()?;
    let mut out = vec![0u8; zstd::zstd_safe::compress_bound(CHUNK_BYTES)];
    let clk = Clock::start();
    for _ in 0..passes {
        for ch in chunks.chunks(CHUNK_BYTES) {
            std::hint::black_box(c.compress_to_buffer(ch, &mut out[..]).s()?);
        }
    }
    Ok(clk.stop())
}

/// zstd decompression of each frame, `passes` times, one reused context.
fn zstd_decompress_each(frames: &[Vec<u8>], passes: usize) -> R<Sample> {
    let mut d = zstd::bulk::Decompressor::new().s()?;
    let mut out = vec![0u8; CHUNK_BYTES];
    warm(frames);
    let clk = Clock::start();
    for _ in 0..passes {
        for f in frames {
            std::hint::black_box(d.decompress_to_buffer(f, &mut out[..]).s()?);
        }
    }
    Ok(clk.stop())
}

/// libdeflate gzip level 1 (zarrshard's gzip encoder) of each 8 KiB chunk, `passes` times.
fn gzip_compress_each(chunks: &[u8], passes: usize) -> R<Sample> {
    let mut e = libdeflater::Compressor::new(libdeflater::CompressionLvl::new(1).unwrap());
    let mut out = vec![0u8; e.gzip_compress_bound(CHUNK_BYTES)];
    let clk = Clock::start();
    for _ in 0..passes {
        for ch in chunks.chunks(CHUNK_BYTES) {
            std::hint::black_box(e.gzip_compress(ch, &mut out).s()?);
        }
    }
    Ok(clk.stop())
}

/// Read every cache line of `frames` (untimed, before a decode ceiling's clock starts).
/// zarrshard's decode rows decode bytes their own read has just copied from the page cache,
/// so the raw decoder they are held to starts with its input in cache too: read cold, a
/// one-shard pass took a quarter longer, and one shard decoded read above 100 % of its
/// ceiling (`docs/performance.md`, *Method*).
fn warm(frames: &[Vec<u8>]) {
    let sum = frames.iter().flat_map(|f| f.iter().step_by(64)).fold(0u8, |a, &b| a.wrapping_add(b));
    std::hint::black_box(sum);
}

/// flate2 inflate + CRC-32 (what a gzip decode does) of each raw deflate stream, `passes` times.
fn inflate_each(streams: &[Vec<u8>], passes: usize) -> R<Sample> {
    use flate2::{Crc, Decompress, FlushDecompress};
    let mut d = Decompress::new(false);
    let mut out = Vec::with_capacity(CHUNK_BYTES);
    warm(streams);
    let clk = Clock::start();
    for _ in 0..passes {
        for f in streams {
            d.reset(false);
            out.clear();
            d.decompress_vec(f, &mut out, FlushDecompress::Finish).s()?;
            let mut crc = Crc::new();
            crc.update(&out);
            std::hint::black_box(crc.sum());
        }
    }
    Ok(clk.stop())
}

/// The whole-array codec ceilings: (the one-shard ceiling's name, this one's name).
const ARRAY_CEILINGS: [(&str, &str); 4] = [
    ("zstd-1 compress", "zstd-1 compress of the array's chunks"),
    ("zstd-1 decompress", "zstd-1 decompress of the array's chunks"),
    ("gzip-1 compress", "gzip-1 compress of the array's chunks"),
    ("gzip-1 decompress", "gzip-1 decompress of the array's chunks"),
];

/// The raw codecs' inputs: inner chunks cut out of the image beforehand, and their frames.
struct CodecData {
    /// Shard [1, 1]'s 256 inner chunks, 8 KiB each, C order (hot in cache when run 16 times).
    hot: Vec<u8>,
    hot_zstd: Vec<Vec<u8>>,
    hot_gzip: Vec<Vec<u8>>,
    /// Every inner chunk of the array, 8 KiB each, shard by shard in C order.
    all: Vec<u8>,
    all_zstd: Vec<Vec<u8>>,
    all_gzip: Vec<Vec<u8>>,
}

impl CodecData {
    fn new(ctx: &Ctx) -> CodecData {
        let hot: Vec<u8> = ctx.single.iter().flat_map(|&o| ctx.chunk(o)).collect();
        let all = chunks::array_chunks(ctx.src(), [N, N], [S, S], [C, C], EL);
        let zstd = |b: &[u8]| b.chunks(CHUNK_BYTES).map(|c| zstd::bulk::compress(c, 1).unwrap()).collect();
        let gzip = |b: &[u8]| b.chunks(CHUNK_BYTES).map(deflate1).collect();
        CodecData { hot_zstd: zstd(&hot), hot_gzip: gzip(&hot), all_zstd: zstd(&all), all_gzip: gzip(&all), hot, all }
    }

    /// The raw codec a workload's zarrshard rows are held to, run in the workload's own
    /// rounds (one thread): `what` is a whole-array ceiling's name, or a one-shard one's
    /// (one pass over shard [1, 1]'s chunks), or "memcpy" (of `bytes`).
    fn same_round<'a>(&'a self, what: &'static str, bytes: usize) -> Runner<'a> {
        let label = format!("ceiling in the same rounds: {what} (1 thread)");
        let (all, hot) = (&self.all[..], &self.hot[..]);
        match what {
            "zstd-1 compress of the array's chunks" => Runner::same_round_ceiling(label, all.len() as f64, move |_| zstd_compress_each(all, 1)),
            "gzip-1 compress of the array's chunks" => Runner::same_round_ceiling(label, all.len() as f64, move |_| gzip_compress_each(all, 1)),
            "zstd-1 decompress of the array's chunks" => {
                Runner::same_round_ceiling(label, all.len() as f64, move |_| zstd_decompress_each(&self.all_zstd, 1))
            }
            "zstd-1 compress" => Runner::same_round_ceiling(label, hot.len() as f64, move |_| zstd_compress_each(hot, 1)),
            "zstd-1 decompress" => Runner::same_round_ceiling(label, hot.len() as f64, move |_| zstd_decompress_each(&self.hot_zstd, 1)),
            "memcpy" => {
                let dst = RefCell::new(vec![0u8; bytes]);
                Runner::same_round_ceiling(label, bytes as f64, move |_| {
                    let mut d = dst.borrow_mut();
                    let clk = Clock::start();
                    d.copy_from_slice(&all[..bytes]);
                    std::hint::black_box(&d);
                    Ok(clk.stop())
                })
            }
            _ => unreachable!("no same-round ceiling named {what}"),
        }
    }

    /// The one-shard raw codec `what` (one pass over shard [1, 1]'s chunks) on two plain
    /// threads (`two_threads.rs`), for the workloads held to it with two threads; `None` for
    /// other ceilings.
    fn two_threads<'a>(&self, what: &'static str) -> Option<Runner<'a>> {
        use std::sync::atomic::AtomicUsize;
        use two_threads::{TwoThreads, Work};
        thread_local! {
            static COMPRESSOR: RefCell<Option<zstd::bulk::Compressor<'static>>> = const { RefCell::new(None) };
            static DECOMPRESSOR: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
            static OUT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
        }
        let label = format!("raw {what} on 2 plain threads, placed (no zarrshard code; reference)");
        let (work, frames): (Work, Option<Arc<Vec<Vec<u8>>>>) = match what {
            "zstd-1 compress" => {
                let hot = Arc::new(self.hot.clone());
                let work: Work = Arc::new(move |next: &AtomicUsize| {
                    COMPRESSOR.with_borrow_mut(|c| {
                        let c = c.get_or_insert_with(|| zstd::bulk::Compressor::new(1).unwrap());
                        OUT.with_borrow_mut(|out| {
                            out.resize(zstd::zstd_safe::compress_bound(CHUNK_BYTES), 0);
                            let n = hot.len() / CHUNK_BYTES;
                            loop {
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                if i >= n {
                                    break;
                                }
                                let ch = &hot[i * CHUNK_BYTES..(i + 1) * CHUNK_BYTES];
                                std::hint::black_box(c.compress_to_buffer(ch, &mut out[..]).unwrap());
                            }
                        })
                    })
                });
                (work, None)
            }
            "zstd-1 decompress" => {
                let frames = Arc::new(self.hot_zstd.clone());
                let f = frames.clone();
                let work: Work = Arc::new(move |next: &AtomicUsize| {
                    DECOMPRESSOR.with_borrow_mut(|d| {
                        let d = d.get_or_insert_with(|| zstd::bulk::Decompressor::new().unwrap());
                        OUT.with_borrow_mut(|out| {
                            out.resize(CHUNK_BYTES, 0);
                            loop {
                                let i = next.fetch_add(1, Ordering::Relaxed);
                                let Some(frame) = f.get(i) else { break };
                                std::hint::black_box(d.decompress_to_buffer(frame, &mut out[..]).unwrap());
                            }
                        })
                    })
                });
                (work, Some(frames))
            }
            _ => return None,
        };
        let two = TwoThreads::new(work);
        Some(Runner::new(label, Kind::RawTwo, 2, move |_| {
            if let Some(frames) = &frames {
                // As the one-thread decode ceiling: input read once, untimed.
                warm(frames);
            }
            let clk = Clock::start();
            two.run();
            Ok(clk.stop())
        }))
    }
}

/// Ceilings on this machine, one thread: returns bytes/s per core by name. Two sets of codec
/// ceilings: over the 256 inner chunks of shard [1, 1] 16 times (32 MiB, hot cache: the
/// most favourable case, an upper bound; for rows on one shard or single chunks), and over
/// all 4096 inner chunks of the array once each, cut out beforehand (the same chunks a
/// whole-array workload compresses, not in cache: for whole-array rows); memcpy and crc32c
/// over the whole array once.
fn measure_ceilings(ctx: &Ctx, codec: &CodecData, table: &mut Table) -> HashMap<&'static str, f64> {
    let src = ctx.src();
    let passes = 16;
    let ratio = |raw: &[u8], frames: &[Vec<u8>]| raw.len() as f64 / frames.iter().map(Vec::len).sum::<usize>() as f64;
    let zstd_ratio = ratio(&codec.hot, &codec.hot_zstd);
    let gzip_ratio = ratio(&codec.hot, &codec.hot_gzip);

    let mut dst = vec![0u8; ARRAY_BYTES];
    let dst = RefCell::new(&mut dst);
    let hot = &codec.hot;
    let (zf, gf) = (&codec.hot_zstd, &codec.hot_gzip);
    let named: Vec<(&'static str, Runner)> = vec![
        ("memcpy", Runner::ceiling("memcpy of the array (1 thread)", |_| {
            let mut d = dst.borrow_mut();
            let clk = Clock::start();
            d.copy_from_slice(src);
            std::hint::black_box(&d);
            Ok(clk.stop())
        })),
        ("crc32c", Runner::ceiling("crc32c of the array (1 thread)", |_| {
            let clk = Clock::start();
            std::hint::black_box(crc32c::crc32c(src));
            Ok(clk.stop())
        })),
        ("zstd-1 compress", Runner::ceiling(format!("zstd-1 compress, reused context (1 thread; ratio {zstd_ratio:.2})"), move |_| {
            zstd_compress_each(hot, passes)
        })),
        ("zstd-1 decompress", Runner::ceiling("zstd-1 decompress, reused context (1 thread)", move |_| zstd_decompress_each(zf, passes))),
        ("gzip-1 compress", Runner::ceiling(format!("gzip-1 compress: libdeflate gzip (zarrshard's encoder), reused compressor (1 thread; ratio {gzip_ratio:.2})"), move |_| {
            gzip_compress_each(hot, passes)
        })),
        ("gzip-1 decompress", Runner::ceiling("gzip-1 decompress: flate2 inflate + crc32 of libdeflate's streams, reused context (1 thread)", move |_| {
            inflate_each(gf, passes)
        })),
    ];
    // The same codecs over the array's 4096 chunks, once each.
    let (all, az, ag) = (&codec.all, &codec.all_zstd, &codec.all_gzip);
    // zarrs' gzip encoder (flate2 with zlib-rs; level 1 is its quick strategy), for reference.
    let gzip_zlib_rs = move || -> R<Sample> {
        let clk = Clock::start();
        chunks::flate2_gzip1_each(all, CHUNK_BYTES)?;
        Ok(clk.stop())
    };
    let mut named = named;
    let label = |n: &str| format!("{n}: all 4096 inner chunks once, reused context (1 thread)");
    named.push((ARRAY_CEILINGS[0].1, Runner::ceiling(label(ARRAY_CEILINGS[0].1), move |_| zstd_compress_each(all, 1))));
    named.push((ARRAY_CEILINGS[1].1, Runner::ceiling(label(ARRAY_CEILINGS[1].1), move |_| zstd_decompress_each(az, 1))));
    named.push((ARRAY_CEILINGS[2].1, Runner::ceiling(label(ARRAY_CEILINGS[2].1), move |_| gzip_compress_each(all, 1))));
    named.push((ARRAY_CEILINGS[3].1, Runner::ceiling(label(ARRAY_CEILINGS[3].1), move |_| inflate_each(ag, 1))));
    named.push((
        "gzip-1 compress zlib-rs",
        Runner::ceiling("gzip-1 compress of the array's chunks by flate2 + zlib-rs (zarrs' encoder; ratio 1.02), reused context (1 thread)", move |_| gzip_zlib_rs()),
    ));
    if let Some(peer) = &ctx.shipped {
        named.push((
            "gzip-1 compress miniz_oxide",
            Runner::ceiling(
                "gzip-1 compress of the array's chunks by flate2 + miniz_oxide (zarrs' encoder built alone, in its process), reused context (1 thread)",
                move |_| peer.borrow_mut().run("zarrs-shipped", "gzip1_compress_chunks", GZIP_END, false),
            ),
        ));
    }
    let (names, runners): (Vec<_>, Vec<_>) = named.into_iter().unzip();
    let labels: Vec<String> = runners.iter().map(|r| r.name.clone()).collect();
    let w = "0. ceilings, 1 thread (32 MiB: the array; codecs: shard [1, 1]'s 256 inner chunks × 16, and the array's 4096 inner chunks once)";
    table.measure(w, Unit::Rate(ARRAY_BYTES as f64), 7, None, runners);
    names
        .iter()
        .zip(labels)
        .filter_map(|(n, l)| table.medians.get(&format!("{w}|{l}")).map(|t| (*n, ARRAY_BYTES as f64 / t)))
        .collect()
}

/// Shard [1, 1] decoded, as the `u16` elements zarrs' `store_chunk_opt` takes.
fn decoded_shard_u16(ctx: &Ctx) -> Vec<u16> {
    let mut shard = vec![0u16; (S * S) as usize];
    for r in 0..S as usize {
        let s = (SHARD[0] as usize * S as usize + r) * N as usize + SHARD[1] as usize * S as usize;
        shard[r * S as usize..(r + 1) * S as usize].copy_from_slice(&ctx.data[s..s + S as usize]);
    }
    shard
}

/// The Python peers that write one shard (6a), with their rows' labels.
const SHARD_WRITE_PEERS: [(&str, &str); 2] = [
    ("tensorstore", "tensorstore (default context, file_io_sync false): the shard's region written"),
    ("zarr-python", "zarr-python (default config): the shard's region assigned"),
];

/// Where an implementation writes its one shard (6a).
fn shard_write_dir(work: &Path, imp: &str) -> PathBuf {
    work.join("write-one-shard").join(imp)
}

/// 6. Writing one shard (the 256 inner chunks of shard [1, 1]), timed and with peak heap.
///
/// The timed rows (6a) are held to `Array::write_region` of the shard, the row given first:
/// like zarrs' `store_chunk_opt` and a region write in tensorstore or zarr-python, it takes
/// the whole decoded shard at once. Their decoded shard is made untimed (cut from the image
/// once; the Python peers make theirs contiguous before their clock starts), so the rows time
/// the encode and the write, what the ceiling is set against. The peak-heap rows (6b) are held
/// to the streaming `ShardWriter` (the issue's bound is on it), and there the decoded shard
/// the whole-shard APIs take is made inside the measurement, so it counts as their heap.
fn shard_writes(ctx: &Ctx, codec: &CodecData, table: &mut Table, zs_default: &str, zarrs_default: &str, ceiling: Option<Ceiling>) {
    use zarrshard::{FileIo, ShardWriter, WriteOptions, WriteStrategy};
    let v = ZSTD_END;
    let base = ctx.work.join("write-one-shard");
    let zs_dir = base.join("zarrshard");
    let zarrs_dir = base.join("zarrs");
    let zarrs_partial_dir = base.join("zarrs-partial");
    for d in [&zs_dir, &zarrs_dir, &zarrs_partial_dir] {
        make_array_dir(d, v).unwrap();
    }
    // The Python peers' directories were made with the manifest.
    let peer_dirs: Vec<PathBuf> = SHARD_WRITE_PEERS.iter().map(|(imp, _)| shard_write_dir(&ctx.work, imp)).collect();
    let layout = Arc::new(zs_open(&zs_dir).unwrap().metadata().shard_layout().unwrap());
    let want = extract_vec(ctx.src(), SHARD[0] * S, SHARD[1] * S, S, S);
    let want16 = decoded_shard_u16(ctx);
    let per = S / C;
    let key = |d: &Path| d.join("c").join(SHARD[0].to_string()).join(SHARD[1].to_string());
    let check_shard = |d: &Path, what: &str| -> R<()> {
        let arr = zs_open(d)?;
        same(&arr.read_shard(&SHARD).s()?.ok_or("missing shard")?, &want, what)
    };
    let shard_size = std::fs::metadata(key(&ctx.read_dir(v))).map(|m| m.len()).unwrap_or(0);
    let index_size = layout.index_size();

    for heap in [false, true] {
        let mut runners = Vec::new();
        for (label, strategy) in [("streaming", WriteStrategy::Streaming), ("buffered", WriteStrategy::Buffered)] {
            let (layout, zs_dir, check_shard) = (layout.clone(), &zs_dir, &check_shard);
            // `ShardWriter` on a `FileIo`, one `write_chunk` per inner chunk (each extracted
            // from the source into an 8 KiB buffer), then `finalize`.
            runners.push(Runner::zs(format!("{zs_default}: ShardWriter {label}"), 1, move |check| {
                zs_use_threads(0);
                let path = key(zs_dir);
                let _ = std::fs::remove_file(&path);
                sync();
                release_before_heap(heap);
                let clk = Clock::start();
                let (res, peak) = peak_heap(|| -> R<()> {
                    let mut w = ShardWriter::new(layout.clone(), FileIo::new(&path), strategy, WriteOptions::default()).s()?;
                    let mut chunk = vec![0u8; CHUNK_BYTES];
                    for i in 0..per {
                        for j in 0..per {
                            extract(ctx.src(), SHARD[0] * S + i * C, SHARD[1] * S + j * C, C, C, &mut chunk);
                            w.write_chunk(&[i, j], &chunk).s()?;
                        }
                    }
                    w.finalize().s()?;
                    Ok(())
                });
                let s = clk.stop();
                res?;
                if check {
                    check_shard(zs_dir, "zarrshard")?;
                }
                Ok(if heap { Sample::value(peak as f64) } else { s })
            }));
        }
        {
            let arr = zs_open(&zs_dir).unwrap();
            let (zs_dir, check_shard, want) = (&zs_dir, &check_shard, &want);
            let cores = zs_default_threads().unwrap_or(1);
            // `Array::write_region` of the shard's extent from the decoded shard: inner chunks
            // cut out and encoded by the calling thread and the pool, written with one `writev`.
            let write_region = Runner::zs(format!("{zs_default}: Array::write_region (whole shard)"), cores, move |check| {
                zs_use_threads(0);
                let _ = std::fs::remove_file(key(zs_dir));
                sync();
                release_before_heap(heap);
                let clk = Clock::start();
                let (res, peak) = peak_heap(|| -> R<()> {
                    let made;
                    let shard: &[u8] = match heap {
                        true => {
                            made = extract_vec(ctx.src(), SHARD[0] * S, SHARD[1] * S, S, S);
                            &made
                        }
                        false => want,
                    };
                    arr.write_region(&[SHARD[0] * S, SHARD[1] * S], &[S, S], shard).s()
                });
                let s = clk.stop();
                res?;
                if check {
                    check_shard(zs_dir, "zarrshard")?;
                }
                Ok(if heap { Sample::value(peak as f64) } else { s })
            });
            match heap {
                true => runners.push(write_region),
                false => runners.insert(0, write_region),
            }
        }
        {
            let arr = ZArray::open(Arc::new(PlainFsStore::new(&zarrs_dir)), "/").unwrap();
            let (zarrs_dir, check_shard, want) = (&zarrs_dir, &check_shard, &want16);
            // `store_chunk_opt` of the whole shard: zarrs' API takes the decoded shard (2 MiB)
            // and encodes it in memory.
            runners.push(Runner::peer(format!("{zarrs_default}: store_chunk_opt (whole shard)"), move |check| {
                let _ = std::fs::remove_file(key(zarrs_dir));
                sync();
                let clk = Clock::start();
                let (res, peak) = peak_heap(|| -> R<()> {
                    let made;
                    let shard: &[u16] = match heap {
                        true => {
                            made = decoded_shard_u16(ctx);
                            &made
                        }
                        false => want,
                    };
                    arr.store_chunk_opt(&SHARD, shard, &CodecOptions::default()).s()
                });
                let s = clk.stop();
                res?;
                if check {
                    check_shard(zarrs_dir, "zarrs")?;
                }
                Ok(if heap { Sample::value(peak as f64) } else { s })
            }));
        }
        {
            let arr = ZArray::open(Arc::new(PlainFsStore::new(&zarrs_partial_dir)), "/").unwrap();
            let (dir, check_shard) = (&zarrs_partial_dir, &check_shard);
            // `store_chunk_subset_opt` per inner chunk with `experimental_partial_encoding`:
            // zarrs' incremental shard write (each call reads the index, writes the chunk
            // after the last one and rewrites the index).
            runners.push(Runner::peer(format!("{zarrs_default}: store_chunk_subset_opt per inner chunk, experimental_partial_encoding"), move |check| {
                let path = key(dir);
                let _ = std::fs::remove_file(&path);
                sync();
                let opts = CodecOptions::default().with_experimental_partial_encoding(true);
                let clk = Clock::start();
                let (res, peak) = peak_heap(|| -> R<()> {
                    let mut chunk = vec![0u16; (C * C) as usize];
                    for i in 0..per {
                        for j in 0..per {
                            for r in 0..C as usize {
                                let s = ((SHARD[0] * S + i * C) as usize + r) * N as usize + (SHARD[1] * S + j * C) as usize;
                                chunk[r * C as usize..(r + 1) * C as usize].copy_from_slice(&ctx.data[s..s + C as usize]);
                            }
                            arr.store_chunk_subset_opt(&SHARD, &subset(i * C..i * C + C, j * C..j * C + C), &chunk[..], &opts).s()?;
                        }
                    }
                    Ok(())
                });
                let s = clk.stop();
                res?;
                if check {
                    check_shard(dir, "zarrs partial encoding")?;
                }
                Ok(if heap { Sample::value(peak as f64) } else { s })
            }));
        }
        if !heap {
            for ((imp, label), dir) in SHARD_WRITE_PEERS.into_iter().zip(&peer_dirs) {
                let Some(peer) = ctx.peer.as_ref() else { break };
                let check_shard = &check_shard;
                runners.push(Runner::peer(label, move |check| {
                    let _ = std::fs::remove_file(key(dir));
                    sync();
                    let s = peer.borrow_mut().run(imp, "write_shard", v, check)?;
                    if check {
                        check_shard(dir, imp)?;
                    }
                    Ok(s)
                }));
            }
        }
        if heap {
            table.measure(
                &format!(
                    "6b. write one shard: peak Rust heap above baseline (index {}, encoded shard {})",
                    fmt_bytes(index_size as f64),
                    fmt_bytes((shard_size - index_size.min(shard_size)) as f64)
                ),
                Unit::Heap,
                5,
                None,
                runners,
            );
        } else {
            let w = "6a. write one shard (256 inner chunks, zstd 1, index at end)";
            table.measure_against(w, Unit::Rate(SHARD_BYTES as f64), 9, ceiling, codec, runners);
        }
    }
}

/// Host I/O per access: read calls and bytes (zarrshard: `CountingIo`; zarrs: a counting
/// wrapper around its `FilesystemStore`).
fn io_counts(ctx: &Ctx, table: &mut Table, zs_default: &str) {
    use zarrshard::{CountingIo, FileIo, ShardReader};
    let zs = |(n, b): (u64, u64)| format!("{n} read{} / {b} B", if n == 1 { "" } else { "s" });
    let z = |(calls, ranges, bytes, sizes): (usize, usize, usize, usize)| {
        format!("{calls} call{} ({ranges} range{}) / {bytes} B, {sizes} size requests", if calls == 1 { "" } else { "s" }, if ranges == 1 { "" } else { "s" })
    };
    for v in READ_VARIANTS {
        let dir = ctx.read_dir(v);
        let arr = zs_open(&dir).unwrap();
        let layout = Arc::new(arr.metadata().shard_layout().unwrap());
        let path = |s: [u64; 2]| dir.join("c").join(s[0].to_string()).join(s[1].to_string());
        let o = ctx.single[1];
        let c = [(o[0] % S) / C, (o[1] % S) / C];
        let mut buf = vec![0u8; CHUNK_BYTES];
        // zarrshard cold: open (index) + chunk; warm: the next chunk.
        let r = ShardReader::open(layout.clone(), CountingIo::new(FileIo::new(path(SHARD)))).unwrap();
        r.read_chunk_into(&c, &mut buf).unwrap();
        let cold = (r.io().reads(), r.io().bytes_read());
        r.io().reset();
        r.read_chunk_into(&[c[0], c[1] + 1], &mut buf).unwrap();
        let warm = (r.io().reads(), r.io().bytes_read());

        let store = Arc::new(CountingStore::new(Arc::new(FilesystemStore::new(&dir).unwrap())));
        let zarr = ZArray::open(store.clone(), "/").unwrap();
        store.reset();
        zarr.retrieve_chunk_subset_opt::<ArrayBytes<'static>>(
            &SHARD,
            &subset(o[0] % S..o[0] % S + C, o[1] % S..o[1] % S + C),
            &CodecOptions::default(),
        )
        .unwrap();
        let zcold = store.get();
        let cache = ArrayShardedReadableExtCache::new(&zarr);
        zarr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[o[0] / C, o[1] / C], &CodecOptions::default()).unwrap();
        store.reset();
        zarr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[o[0] / C, o[1] / C + 1], &CodecOptions::default()).unwrap();
        let zwarm = store.get();

        let w = format!("I/O: one inner chunk ({}): read calls / bytes", v.label);
        table.push(&w, &format!("{zs_default}: cold (open + read)"), zs(cold), "", "", "");
        table.push(&w, &format!("{zs_default}: warm"), zs(warm), "", "", "");
        table.push(&w, "zarrs: cold (retrieve_chunk_subset_opt)", z(zcold), "", "", "");
        table.push(&w, "zarrs: warm (retrieve_subchunk_opt + index cache)", z(zwarm), "", "", "");
    }
    // 1000 random chunks.
    let dir = ctx.read_dir(ZSTD_END);
    let arr = zs_open(&dir).unwrap();
    let layout = Arc::new(arr.metadata().shard_layout().unwrap());
    let mut readers: HashMap<(u64, u64), ShardReader<CountingIo<FileIo>>> = HashMap::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    for &o in &ctx.random {
        let key = (o[0] / S, o[1] / S);
        let r = readers.entry(key).or_insert_with(|| {
            let p = dir.join("c").join(key.0.to_string()).join(key.1.to_string());
            ShardReader::open(layout.clone(), CountingIo::new(FileIo::new(p))).unwrap()
        });
        r.read_chunk_into(&[(o[0] % S) / C, (o[1] % S) / C], &mut buf).unwrap();
    }
    let counts = readers.values().fold((0, 0), |(n, b), r| (n + r.io().reads(), b + r.io().bytes_read()));
    let store = Arc::new(CountingStore::new(Arc::new(FilesystemStore::new(&dir).unwrap())));
    let zarr = ZArray::open(store.clone(), "/").unwrap();
    store.reset();
    let cache = ArrayShardedReadableExtCache::new(&zarr);
    for &o in &ctx.random {
        zarr.retrieve_subchunk_opt::<ArrayBytes<'static>>(&cache, &[o[0] / C, o[1] / C], &CodecOptions::default()).unwrap();
    }
    let zc = store.get();
    let w = "I/O: 1000 random inner chunks (zstd 1, index at end): read calls / bytes";
    table.push(w, zs_default, zs(counts), "", "", "");
    table.push(w, "zarrs: retrieve_subchunk_opt + index cache", z(zc), "", "", "");
}

/// Before a peak-heap sample: zarrshard keeps the segments that held encoded chunks and each
/// thread's scratch chunk for the next encode (`src/runtime/memory.rs`); freed first, the sample
/// counts those it takes as new heap.
fn release_before_heap(heap: bool) {
    if heap {
        zarrshard::release_memory();
    }
}

/// `ZARRSHARD_BENCH_GLIBC_DEFAULTS` is set: no `mallopt` (see the *Allocator* note).
fn glibc_defaults() -> bool {
    std::env::var_os("ZARRSHARD_BENCH_GLIBC_DEFAULTS").is_some()
}

fn notes(zs_has_threads: bool) -> String {
    let mut s = String::from("\n## Notes\n\n");
    let items = [
        "**Columns.** Throughput is MB/s (10^6 bytes) of decoded bytes; single-chunk rows are time per inner chunk (8 KiB decoded). *cores busy*: process CPU time (user + system, all threads; `getrusage`, or `time.process_time()` in the Python peers) over wall time for the same interval. Encode rows end with the bytes the implementation wrote (→ MB). *ratio zarrshard/peer*: round by round, the peer's time divided by zarrshard's (its default-threads row, the first of each workload) in the same round; the median over rounds, and in parentheses the smallest and largest — above 1 zarrshard is faster (for peak heap: uses less). Pairing rounds matters on this VM: its speed drifts by up to 1.5× over seconds to minutes, which shifts every implementation's median but hardly the ratio of two samples taken a fraction of a second apart. *% of ceiling* (zarrshard rows): the time the raw codec needs for the same bytes on the cores zarrshard uses, divided by zarrshard's time: zstd-1 / gzip-1 compress for writes, zstd-1 decompress for reads (for the region: of the covering inner chunks), memcpy for uncompressed writes, crc32c + memcpy of the same bytes for the index. Whole-array rows use the codec over the array's own 4096 inner chunks (each once, cut out beforehand: the same chunks the workload compresses); rows on one shard or single chunks use the codec over shard [1, 1]'s 256 chunks. Workloads with a *ceiling in the same rounds* row (whole-array encodes and decode, one shard decoded or written) run that codec, one thread, as the second runner of every round and take the percentage round by round (median, smallest–largest); decode ceilings read their compressed input once, untimed, before their clock starts (zarrshard's reads copy what they decode, which leaves it in cache: `docs/performance.md`, *Method*); the others use section 0's figure (hot in cache for the one-shard codecs: an upper bound; a row slightly above 100% is within its noise). The one-shard workloads (2b, 6a) also run the same raw codec on *2 plain threads* (no zarrshard code, `bench/two_threads.rs`: the calling thread and a helper that sleeps between samples take chunks from one counter, the helper moved off the caller's CPU if woken there, as zarrshard's pool task is): a reference for what the machine's two vCPUs give the codec itself in those rounds, held to the same ceiling; zarrshard's two-thread row adds its time as a percentage of that reference's, round by round. The issue's ceiling stays one thread's speed × cores.",
        "**Data.** 4096×4096 uint16, smooth gradient + 6 bits of noise (compression ratios in section 0); shards 1024×1024, inner chunks 64×64; `bytes` LE + zstd level 1 (no checksum) unless stated; index `bytes` + `crc32c`. Every implementation reads the same files (written once by zarrshard) and writes under the same `zarr.json` bytes; on the untimed warm-up run every written array was read back and compared with the source, and every read result was compared.",
        "**Repetitions.** Implementations alternate within each repetition (A B C … A B C …), the Python peers included: the harness drives `peers.py --serve` one sample at a time. 7 repetitions for whole-array decodes, the 1000-chunk reads, encoded-only reads and ceilings; 5 for peak heap; 9 otherwise (whole-array encodes included: writes through the page cache of this VM's ext4 show sporadic stalls of tens of ms, which the median absorbs). Median and min–max. Before every write sample (untimed) the previous sample's shards are deleted and `sync()` flushes dirty pages, so no sample pays for another's writeback.",
        "**Threads.** zarrshard's default is one thread per core: a shard's inner chunks (encode, decode) and a region's fetches and bands of rows are shared between the calling thread and the pool's other threads; whole-array writes give whole shards to the pool; chunk, index and shard-writer calls run on the caller's thread. When a row switches zarrshard's thread setting, the operation runs once untimed first (a new pool starts with cold threads and per-thread codec contexts). Every zarrshard row labelled with the default sets it before its clock starts. zarrs: default `CodecOptions` (concurrent target = its rayon pool = cores); its 1-thread rows also set `chunk_concurrent_minimum(1)`, because zarrs keeps at least 4 chunks in flight whatever the target. tensorstore: default context (own thread pools sized to the cores). zarr-python 3.1.6: default config.",
        "**zarrshard APIs used.** Encode: `Array::write_region` over the whole array from memory (each shard's inner chunks cut out of the caller's array and encoded on the pool, shards in parallel, each written with one `writev`); one row per encode shows `Array::import` from a reader (the CLI's path: a row of shards read while the previous one is encoded). Decode array: `Array::read_region` over the whole array (into a fresh buffer, and in one row into a buffer reused across calls). Decode shard: `Array::read_shard`. Chunks: `Array::shard_reader` + `ShardReader::read_chunk_into` (cold = a new reader per chunk: index read + chunk read); `read_chunk_raw` for encoded bytes. Region: `Array::read_region`. Index: `ShardIndex::decode` (crc32c + every entry validated). One shard: `Array::write_region` of the shard's extent from its decoded bytes (chunks encoded by the calling thread and the pool, finished ones written to the temporary file in 256 KiB pieces while the rest encode; the row 6a's ratios are taken against, its decoded shard made untimed as for every whole-shard row), and `ShardWriter` (streaming / buffered) over `FileIo`, fed chunk by chunk (6b's reference is the streaming writer).",
        "**zarrs APIs used** (sync API). Encode: `store_chunks_opt` over all shards, on a store that reads through zarrs' `FilesystemStore` and writes without fsync (`FilesystemStore` fsyncs every write; one row shows it as shipped). Decode: `retrieve_array_subset_opt` / `retrieve_chunk_opt` into `ArrayBytes` (no element conversion). Cold chunk: `retrieve_chunk_subset_opt` (a new sharding partial decoder per call). Warm chunk and 1000 chunks: `ArrayShardedReadableExt::retrieve_subchunk_opt` with an `ArrayShardedReadableExtCache` (its cached-index API), also over a `FilesystemStore` with `file_handle_cache_size(16)`; encoded bytes: `retrieve_encoded_subchunk`. Region: `retrieve_array_subset_opt`. Index: `ShardingCodec::decode_index` (checksum only; entries not validated). One shard: `store_chunk_opt` (needs the whole decoded shard: made untimed in 6a, inside the measurement in 6b), and `store_chunk_subset_opt` per inner chunk with `experimental_partial_encoding`.",
        "**Python peers.** tensorstore: `zarr3` driver, `file` kvstore; cold, region and whole-array/shard reads with a 0-byte cache pool (the index is re-read on every access); warm and 1000-chunk reads with a fresh 256 MiB pool per sample (index cached; every timed chunk is a different chunk, so no decoded-chunk cache hit); writes with `file_io_sync: false` except the row marked as shipped. zarr-python: `zarr.open_array(LocalStore)`, slicing and slice assignment; it keeps no shard index between calls, so its warm rows equal its cold ones. Timed inside Python (`perf_counter`) around the read/write call only; opening is outside. One shard (6a): the shard's region written into an array with nothing stored, from a contiguous copy made untimed. Not run for them: index parsing, chunk-by-chunk shard writes and peak heap (no comparable public API), I/O counts.",
        "**Peak heap** counts Rust allocations of every thread (the counting global allocator of this harness); libzstd's own contexts (allocated with C `malloc`) are not counted, for zarrshard and zarrs alike. The zarrs whole-shard row includes the 2 MiB decoded shard its API takes as input; the chunk-by-chunk rows hold one 8 KiB chunk of input. zarrshard keeps the 256 KiB segments that held a shard's encoded chunks for the next encode; the harness frees them, with each thread's scratch chunk (`release_memory`), before every zarrshard sample, so the segments a write takes count as its heap.",
        "**Compressors.** zarrshard and zarrs link the same `zstd` crate (libzstd). gzip: zarrshard encodes with libdeflate (ratio 1.40 at level 1, like C zlib) and decodes with flate2; zarrs encodes and decodes with `flate2`, in this binary on zlib-rs (cargo unifies the feature), whose level 1 is its quick strategy (ratio 1.02, hence zarrs' larger gzip output). zarrs built alone with its `gzip` feature keeps flate2's default backend, miniz_oxide (ratio 1.40 at level 1, like zarrshard's): the gzip encode has a row for that build too (`bench/zarrs-shipped`, the same zarrs version, no-fsync store and `store_chunks_opt` call, in a process of its own driven like the Python peers). The gzip compress ceilings are libdeflate's (zarrshard's encoder); two extra rows show zlib-rs' and miniz_oxide's for reference. zarrs creates a zstd context per chunk (`bulk::Compressor::new`, `bulk::decompress`).",
        "**I/O counts** are per call of the API: zarrshard counts `ShardIo::read` calls through `CountingIo`; zarrs counts `ReadableStorageTraits` calls through a wrapper around `FilesystemStore` (without a handle cache, each call opens, `fstat`s and closes the file; zarrshard's `FileIo` keeps the descriptor but `fstat`s on every read).",
        match glibc_defaults() {
            false => "**Allocator.** The harness fixes glibc's mmap threshold at 32 MiB and disables trimming (`mallopt`), so buffers under 32 MiB are recycled instead of page-faulted anew on every sample (glibc's adaptive threshold otherwise makes that depend on allocation history); 32 MiB outputs are mapped fresh for every implementation alike. `ZARRSHARD_BENCH_GLIBC_DEFAULTS=1` runs without that. The Python peers run with their own allocator.",
            true => "**Allocator.** This run left glibc's malloc at its defaults (`ZARRSHARD_BENCH_GLIBC_DEFAULTS=1`), as a host process finds it: the adaptive mmap threshold and trimming apply to every Rust implementation, so buffers freed between samples may be page-faulted anew, depending on allocation history. The Python peers run with their own allocator.",
        },
        "**Other load.** The harness waits for other processes to go quiet before each measurement, records the CPU time they use during every round of samples (`/proc/stat` less this process and the peers), and redoes a round in which they used more than 0.25 cores (up to 3 times, within a 240 s budget per run). A workload whose kept rounds still saw more than 0.25 cores is marked ⚠; rerun before quoting it.",
        "**Page cache.** Reads hit files that were just written or read (warm page cache); nothing here measures a cold disk or an object store. Numbers are for this machine only.",
    ];
    for it in items {
        s.push_str("* ");
        s.push_str(it);
        s.push('\n');
    }
    if !zs_has_threads {
        s.push_str("* zarrshard exposes no thread setting in this build: its rows are single-threaded.\n");
    }
    s
}
