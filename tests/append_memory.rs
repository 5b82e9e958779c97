//! Appending frames holds one shard layer in memory, not the array (measured with a counting
//! allocator), and a crash at any write leaves every completed layer readable under a
//! `zarr.json` whose shape covers only written data.

#[path = "common/alloc.rs"]
mod alloc;

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use zarrshard::*;

#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

const Y: u64 = 256;
const X: u64 = 512;

fn frame(t: u64) -> Vec<u8> {
    (0..Y * X)
        .flat_map(|i| ((t * 7 + i % 1021 + i / 4093) as u16).to_ne_bytes())
        .collect()
}

#[test]
fn appending_holds_one_shard_layer_not_the_array() {
    let dir = tempfile::tempdir().unwrap();
    let spec = ArraySpec::new(&[0, Y, X], &[4, 64, 64], "uint16").sharded(&[8, 128, 256]);
    let mut a = Array::create_at(
        FsStore::new(dir.path()),
        "a",
        spec.to_metadata().unwrap(),
        false,
    )
    .unwrap();
    let frames = 96u64;
    let layer = 8 * Y * X * 2; // 2 MiB: 8 frames of 256 x 512 uint16
    let total = frames * Y * X * 2; // 24 MiB
    let one = frame(0);
    // Warm-up: the codec contexts and buffers the library keeps between calls, once.
    let mut warm = Array::create_at(
        FsStore::new(dir.path()),
        "warm",
        spec.to_metadata().unwrap(),
        false,
    )
    .unwrap();
    for _ in 0..8 {
        warm.append(0, &[1, Y, X], &one).unwrap();
    }
    drop(warm);
    let ((), peak) = alloc::peak_during(|| {
        for t in 0..frames {
            // The frame's own buffer is the caller's: made outside the measurement's growth.
            let f = if t == 0 { one.clone() } else { frame(t) };
            a.append(0, &[1, Y, X], &f).unwrap();
        }
        a.flush().unwrap();
    });
    // The layer, one frame being made, and the encoded shards of a layer in flight.
    assert!(
        peak < (3 * layer) as usize + (Y * X * 2) as usize,
        "peak {peak} bytes for a layer of {layer} bytes (the array is {total})"
    );
    let b = Array::open_at(FsStore::new(dir.path()), "a").unwrap();
    assert_eq!(b.shape(), &[frames, Y, X]);
    assert_eq!(
        b.read_region_vec(&[95, 0, 0], &[1, Y, X]).unwrap(),
        frame(95)
    );
}

/// A memory store whose writes fail once `budget` object writes have been made (a crash
/// there: nothing after it happens).
struct Failing {
    inner: MemoryStore,
    budget: Arc<AtomicI64>,
}

struct FailingIo {
    inner: Box<dyn ShardIo>,
    budget: Arc<AtomicI64>,
}

impl FailingIo {
    fn spend(&self) -> Result<()> {
        if self.budget.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(Error::Io {
                code: 28,
                message: "crashed".into(),
            });
        }
        Ok(())
    }
}

impl ShardIo for FailingIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.inner.read(range)
    }
    fn size(&self) -> Result<Option<u64>> {
        self.inner.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.spend()?;
        self.inner.write_at(offset, data)
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        self.spend()?;
        self.inner.put(data)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        self.spend()?;
        self.inner.truncate(len)
    }
    fn can_truncate(&self) -> bool {
        true
    }
    fn delete(&self) -> Result<()> {
        self.spend()?;
        self.inner.delete()
    }
}

impl Store for Failing {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(FailingIo {
            inner: self.inner.shard_io(key)?,
            budget: self.budget.clone(),
        }))
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.shard_io(key)?.put(value)
    }
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        self.inner.list_prefix(prefix)
    }
}

fn small_frame(t: u64) -> Vec<u8> {
    (0..6u64 * 5)
        .flat_map(|i| ((t * 100 + i + 1) as u16).to_ne_bytes())
        .collect()
}

#[test]
fn a_crash_at_any_write_leaves_completed_layers_readable_under_a_shape_that_covers_them() {
    let spec = ArraySpec::new(&[0, 6, 5], &[2, 2, 2], "uint16").sharded(&[4, 4, 4]);
    for budget in 0..40 {
        let mem = MemoryStore::new();
        let store = Failing {
            inner: mem.clone(),
            budget: Arc::new(AtomicI64::new(i64::MAX)),
        };
        let counter = store.budget.clone();
        let mut a = Array::create_at(store, "", spec.to_metadata().unwrap(), false).unwrap();
        counter.store(budget, Ordering::SeqCst);
        // Frames whose append returned Ok, and those the caller was told are stored (a
        // completed layer, or a flush that returned Ok).
        let (mut appended, mut durable) = (0, 0);
        for t in 0..13 {
            if a.append(0, &[1, 6, 5], &small_frame(t)).is_err() {
                break;
            }
            appended = t + 1;
            if appended % 4 == 0 {
                durable = appended;
            }
            if t % 5 == 4 {
                if a.flush().is_err() {
                    break;
                }
                durable = appended;
            }
        }
        std::mem::forget(a); // a crash: no flush on drop
        let b = Array::open(mem.clone()).unwrap();
        let stored = b.shape()[0];
        assert!(
            (durable..=appended).contains(&stored),
            "budget {budget}: shape {stored}, {durable} frames stored, {appended} appended"
        );
        let got = b.read_region_vec(&[0, 0, 0], &[stored, 6, 5]).unwrap();
        let want: Vec<u8> = (0..stored).flat_map(small_frame).collect();
        assert_eq!(got, want, "budget {budget}: stored frames differ");
    }
}

#[test]
fn after_a_failed_layer_write_a_flush_writes_it_and_appending_goes_on() {
    let spec = ArraySpec::new(&[0, 6, 5], &[2, 2, 2], "uint16").sharded(&[4, 4, 4]);
    // Layer 0 is 4 shard writes and zarr.json: a budget of 0 to 4 fails one of them.
    for budget in 0..5 {
        let mem = MemoryStore::new();
        let store = Failing {
            inner: mem.clone(),
            budget: Arc::new(AtomicI64::new(i64::MAX)),
        };
        let counter = store.budget.clone();
        let mut a = Array::create_at(store, "", spec.to_metadata().unwrap(), false).unwrap();
        for t in 0..3 {
            a.append(0, &[1, 6, 5], &small_frame(t)).unwrap();
        }
        counter.store(budget, Ordering::SeqCst);
        // Frame 3 completes layer 0, whose write fails part way; the frame was taken.
        assert!(
            a.append(0, &[1, 6, 5], &small_frame(3)).is_err(),
            "budget {budget}"
        );
        assert_eq!(a.shape(), &[4, 6, 5]);
        counter.store(i64::MAX, Ordering::SeqCst);
        for t in 4..9 {
            a.append(0, &[1, 6, 5], &small_frame(t)).unwrap();
        }
        a.flush().unwrap();
        drop(a);
        let b = Array::open(mem).unwrap();
        assert_eq!(b.shape(), &[9, 6, 5]);
        let want: Vec<u8> = (0..9).flat_map(small_frame).collect();
        assert_eq!(
            b.read_region_vec(&[0, 0, 0], &[9, 6, 5]).unwrap(),
            want,
            "budget {budget}"
        );
    }
}
