//! Memory follows the work, not the chunk grid: `export`, `import` and region reads and
//! writes of arrays with very many shards (a grid of 1-element shards) hold a bounded block or
//! pass, measured with the counting allocator of `tests/common/alloc.rs`; bookkeeping a single
//! shard needs beyond the memory limit is `Error::MemoryLimit`, never an abort. The expected
//! bytes are computed here from the few values written, not taken from a run.

use serde_json::json;
use std::io::{Read, Write};
use std::sync::Mutex;
use zarrshard::*;

#[path = "common/alloc.rs"]
mod alloc;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

/// The measurements and the memory limit are process-wide: one test at a time.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

const MIB: usize = 1 << 20;

/// uint8 of `shape`, shards and inner chunks of `shard` / `inner`, uncompressed, fill `fill`.
fn meta(shape: &[u64], shard: &[u64], inner: &[u64], fill: u8) -> ArrayMetadata {
    ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": shape, "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shard}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": inner, "codecs": [{"name": "bytes"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
    }))
    .unwrap()
}

/// A writer that checks every byte against `want(position)` as it comes, holding nothing.
struct Expect<F: Fn(u64) -> u8> {
    at: u64,
    want: F,
}

impl<F: Fn(u64) -> u8> Write for Expect<F> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for (k, &b) in buf.iter().enumerate() {
            let i = self.at + k as u64;
            assert_eq!(b, (self.want)(i), "byte {i}");
        }
        self.at += buf.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A reader of `len` bytes, `value(position)` each, made as they are read.
struct Made<F: Fn(u64) -> u8> {
    at: u64,
    len: u64,
    value: F,
}

impl<F: Fn(u64) -> u8> Read for Made<F> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min((self.len - self.at) as usize);
        for (k, b) in buf[..n].iter_mut().enumerate() {
            *b = (self.value)(self.at + k as u64);
        }
        self.at += n as u64;
        Ok(n)
    }
}

/// A store that cannot list: every grid position is asked.
struct Unlisted(FsStore);

impl Store for Unlisted {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        self.0.shard_io(key)
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.0.set(key, value)
    }
}

/// The values written into the wide arrays below: (column, value); fill 7 elsewhere.
const STORED: [(u64, u8); 3] = [(5, 42), (1 << 19, 9), ((1 << 22) - 1, 200)];

fn wide_value(i: u64) -> u8 {
    STORED.iter().find(|(c, _)| *c == i).map_or(7, |(_, v)| *v)
}

/// `[1, 2^22]` of 1-element shards, three stored (a listing store): the whole grid's
/// bookkeeping was a record per shard of the row (about 1 GB); now a block of 4 MiB, or of
/// the memory limit's 1 MiB when that is lower, and blocks without a stored shard are fill
/// bytes written without reading.
#[test]
fn export_of_a_nearly_empty_wide_grid_holds_a_block() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let width = 1u64 << 22;
    let array = Array::create(
        FsStore::new(dir.path()),
        meta(&[1, width], &[1, 1], &[1, 1], 7),
    )
    .unwrap();
    for (c, v) in STORED {
        array.write_region(&[0, c], &[1, 1], &[v]).unwrap();
    }
    assert_eq!(array.stored_shards().unwrap().len(), 3);
    for (limit, bound) in [(0, 5 * MIB), (1 << 20, 3 * MIB / 2)] {
        set_memory_limit(limit);
        let mut out = Expect {
            at: 0,
            want: wide_value,
        };
        let (r, peak) = alloc::peak_during(|| array.export(&mut out));
        set_memory_limit(0);
        r.unwrap();
        assert_eq!(out.at, width);
        assert!(peak < bound, "export peak {peak} (limit {limit})");
    }
}

/// The same grid in a store that cannot list (every position asked), narrower to keep it
/// quick: memory is still one block and a pass of shards.
#[test]
fn export_through_a_store_that_cannot_list_holds_a_block() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let width = 1u64 << 18;
    let array = Array::create(
        Unlisted(FsStore::new(dir.path())),
        meta(&[1, width], &[1, 1], &[1, 1], 7),
    )
    .unwrap();
    let value = |i: u64| if i == 5 || i == width - 1 { 3 } else { 7 };
    array.write_region(&[0, 5], &[1, 1], &[3]).unwrap();
    array.write_region(&[0, width - 1], &[1, 1], &[3]).unwrap();
    let mut out = Expect { at: 0, want: value };
    let (r, peak) = alloc::peak_during(|| array.export(&mut out));
    r.unwrap();
    assert_eq!(out.at, width);
    assert!(peak < 2 * MIB, "export peak {peak}");
}

/// `import` of `[2^18]` in 1-element shards made every slab's record up front (a hundred
/// bytes and more per element); now it streams: two blocks and a pass of shards. (File stores:
/// the memory store keeps an entry for every key it is asked for.)
#[test]
fn import_of_a_long_grid_of_one_element_shards_streams() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let len = 1u64 << 18;
    let array = Array::create(FsStore::new(dir.path()), meta(&[len], &[1], &[1], 0)).unwrap();
    let value = |i: u64| {
        if i % 16384 == 3 {
            (i / 16384) as u8 + 1
        } else {
            0
        }
    };
    let mut input = Made { at: 0, len, value };
    let (r, peak) = alloc::peak_during(|| {
        array.import(&mut input, WriteStrategy::Buffered, WriteOptions::default())
    });
    r.unwrap();
    assert!(peak < 4 * MIB, "import peak {peak}");
    assert_eq!(array.stored_shards().unwrap().len(), 16);
    let back = array.read_region_vec(&[0], &[len]).unwrap();
    assert!(back.iter().enumerate().all(|(i, &b)| b == value(i as u64)));
}

/// Region reads and writes over 2^18 one-element shards: the bookkeeping was hundreds of
/// bytes per byte of region (a record per shard and per chunk, all at once); now a pass.
#[test]
fn region_reads_and_writes_over_one_element_shards_hold_a_pass() {
    let _s = serial();
    let dir = tempfile::tempdir().unwrap();
    let width = 1u64 << 18;
    let array = Array::create(
        FsStore::new(dir.path()),
        meta(&[2, width], &[1, 1], &[1, 1], 0),
    )
    .unwrap();
    let value = |i: u64| {
        if i % 1024 == 17 {
            (i / 1024) as u8 | 1
        } else {
            0
        }
    };
    let data: Vec<u8> = (0..width).map(value).collect();
    let (r, peak) = alloc::peak_during(|| array.write_region(&[1, 0], &[1, width], &data));
    r.unwrap();
    assert!(peak < 2 * MIB, "write_region peak {peak}");
    assert_eq!(array.stored_shards().unwrap().len(), 256);
    let mut out = vec![1u8; 2 * width as usize];
    let (r, peak) = alloc::peak_during(|| array.read_region(&[0, 0], &[2, width], &mut out));
    r.unwrap();
    assert!(peak < 2 * MIB, "read_region peak {peak}");
    assert!(out[..width as usize].iter().all(|&b| b == 0));
    assert_eq!(&out[width as usize..], &data[..]);
}

/// One shard of 2^17 one-element inner chunks read whole needs 6 MiB of bookkeeping (48 bytes
/// a chunk): under a 1 MiB limit that is `Error::MemoryLimit`, before anything is read.
#[test]
fn bookkeeping_past_the_memory_limit_is_a_memory_limit_error() {
    let _s = serial();
    let n = 1u64 << 17;
    let array = Array::create(MemoryStore::new(), meta(&[n], &[n], &[1], 0)).unwrap();
    let mut out = vec![0u8; n as usize];
    set_memory_limit(1 << 20);
    let e = array.read_region(&[0], &[n], &mut out).unwrap_err();
    set_memory_limit(0);
    assert_eq!(
        e.to_string(),
        "memory limit: the bookkeeping of the 131072 inner chunks the region touches in shard [0] needs 6291456 bytes, more than the limit of 1048576 (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)"
    );
    assert!(matches!(
        e,
        Error::MemoryLimit {
            needed: 6291456,
            limit: 1048576,
            ..
        }
    ));
    // Within the default limit the same read is the fill value.
    array.read_region(&[0], &[n], &mut out).unwrap();
    assert!(out.iter().all(|&b| b == 0));
}
