//! One shard written from the host's thread with two threads is written while its chunks
//! still encode (`src/shard/streamed.rs`). Its object must be byte for byte what the buffered writer
//! makes of the same data (one thread writes that way), in both chunk orders, with the index at
//! either end, with chunks equal to the fill value left out or stored; the pieces written
//! during the encode must follow one another and end on multiples of `streamed::PIECE`; and a
//! write that fails part way must leave the old object as it was, with no temporary file.

mod common;

use serde_json::json;
use std::sync::{Arc, Mutex};
use zarrshard::shard::streamed::PIECE;
use zarrshard::*;

/// The thread setting is process-wide: tests that switch it take turns.
static THREADS: Mutex<()> = Mutex::new(());

/// A 700×600 uint16 array in 512² shards of 32² inner chunks (the edge shards are partial),
/// inner chunks `codecs`, index at `location`.
fn meta(codecs: serde_json::Value, location: &str) -> ArrayMetadata {
    ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [700, 600], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [512, 512]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [32, 32], "codecs": codecs, "index_location": location,
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}],
    }))
    .unwrap()
}

fn raw() -> serde_json::Value {
    json!([{"name": "bytes", "configuration": {"endian": "little"}}])
}

fn zstd() -> serde_json::Value {
    json!([{"name": "bytes", "configuration": {"endian": "little"}},
           {"name": "zstd", "configuration": {"level": 1, "checksum": false}}])
}

/// The whole array: noise (so zstd leaves it about as large as it is), with a band of rows
/// and a block of columns at the fill value, so some inner chunks are left out.
fn image() -> Vec<u8> {
    let mut image = common::noise(700 * 600 * 2, 0x243F_6A88_85A3_08D3);
    for (i, v) in image.chunks_exact_mut(2).enumerate() {
        let (y, x) = (i / 600, i % 600);
        if (100..164).contains(&y) || (x >= 480 && y < 300) {
            v.fill(0);
        }
    }
    image
}

/// Every write an object sink took: (offset, bytes).
type Writes = Arc<Mutex<Vec<(u64, u64)>>>;

/// Each shard's object (`None`: deleted) and the writes its sink took.
type Written = (Vec<Option<Vec<u8>>>, Vec<Vec<(u64, u64)>>);

/// A store over `inner` whose object sinks record their writes and fail at write number
/// `fail_at` (1-based; 0 = never).
struct Recording<S> {
    inner: S,
    writes: Writes,
    fail_at: usize,
}

struct RecordingIo {
    inner: Box<dyn ShardIo>,
    writes: Writes,
    fail_at: usize,
}

struct RecordingSink<'a> {
    inner: Box<dyn ObjectSink + 'a>,
    writes: Writes,
    fail_at: usize,
}

impl<S: Store> Store for Recording<S> {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(RecordingIo {
            inner: self.inner.shard_io(key)?,
            writes: self.writes.clone(),
            fail_at: self.fail_at,
        }))
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.set(key, value)
    }
}

impl ShardIo for RecordingIo {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.inner.read(range)
    }
    fn size(&self) -> Result<Option<u64>> {
        self.inner.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.inner.write_at(offset, data)
    }
    fn put_parts(&self, parts: &[&[u8]]) -> Result<()> {
        self.inner.put_parts(parts)
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        self.inner.put(data)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        self.inner.truncate(len)
    }
    fn can_truncate(&self) -> bool {
        self.inner.can_truncate()
    }
    fn delete(&self) -> Result<()> {
        self.inner.delete()
    }
    fn object_sink(&self) -> Option<Box<dyn ObjectSink + '_>> {
        Some(Box::new(RecordingSink {
            inner: self.inner.object_sink()?,
            writes: self.writes.clone(),
            fail_at: self.fail_at,
        }))
    }
}

impl ObjectSink for RecordingSink<'_> {
    fn write_parts_at(&mut self, offset: u64, parts: &[&[u8]]) -> Result<()> {
        let mut writes = self.writes.lock().unwrap();
        if writes.len() + 1 == self.fail_at {
            return Err(Error::Io {
                code: 28, // ENOSPC
                message: "no space left (injected)".into(),
            });
        }
        writes.push((offset, parts.iter().map(|p| p.len() as u64).sum()));
        drop(writes);
        self.inner.write_parts_at(offset, parts)
    }
    fn commit(self: Box<Self>, len: u64) -> Result<()> {
        self.inner.commit(len)
    }
}

/// Each of the array's four shards written alone (`write_region` of its extent) with
/// `threads` threads into `store`; returns the objects and the sinks' writes per shard.
fn write_shards<S: Store>(
    store: Recording<S>,
    m: &ArrayMetadata,
    options: WriteOptions,
    threads: usize,
) -> Written {
    set_threads(threads).unwrap();
    let writes = store.writes.clone();
    let array = Array::create(store, m.clone()).unwrap();
    let image = image();
    let mut all = Vec::new();
    for (y, x) in [(0u64, 0u64), (0, 1), (1, 0), (1, 1)] {
        let (y0, x0) = (y * 512, x * 512);
        let (h, w) = ((700 - y0).min(512), (600 - x0).min(512));
        let region: Vec<u8> = (y0..y0 + h)
            .flat_map(|r| &image[((r * 600 + x0) * 2) as usize..((r * 600 + x0 + w) * 2) as usize])
            .copied()
            .collect();
        let region_of = |a: &Array<Recording<S>>| a.read_region_vec(&[y0, x0], &[h, w]).unwrap();
        array
            .write_region_with(&[y0, x0], &[h, w], &region, UpdateMode::AppendOnly, options)
            .unwrap();
        assert_eq!(region_of(&array), region, "shard {y},{x} reads back");
        all.push(std::mem::take(&mut *writes.lock().unwrap()));
    }
    let objects = (0..4)
        .map(|k| array.read_shard_object(&[k / 2, k % 2]))
        .collect();
    (objects, all)
}

/// The object of shard `coords` as stored.
trait ReadObject {
    fn read_shard_object(&self, coords: &[u64]) -> Option<Vec<u8>>;
}

impl<S: Store> ReadObject for Array<S> {
    fn read_shard_object(&self, coords: &[u64]) -> Option<Vec<u8>> {
        self.store().get(&self.shard_key(coords)).unwrap()
    }
}

fn recording<S>(inner: S, fail_at: usize) -> Recording<S> {
    Recording {
        inner,
        writes: Writes::default(),
        fail_at,
    }
}

#[test]
fn written_while_encoding_the_bytes_are_the_buffered_writers() {
    let _turn = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    for codecs in [raw(), zstd()] {
        for location in ["end", "start"] {
            for order in [ChunkOrder::C, ChunkOrder::Morton] {
                for store_fill_chunks in [false, true] {
                    let what = format!("{codecs} {location} {order:?} fill {store_fill_chunks}");
                    let m = meta(codecs.clone(), location);
                    let options = WriteOptions {
                        order,
                        store_fill_chunks,
                    };
                    let (buffered, none) =
                        write_shards(recording(MemoryStore::new(), 0), &m, options, 1);
                    assert!(none.iter().all(Vec::is_empty), "one thread: {what}");
                    let (streamed, writes) =
                        write_shards(recording(MemoryStore::new(), 0), &m, options, 2);
                    assert_eq!(streamed, buffered, "{what}");
                    let index_size = 256 * 16 + 4;
                    for (shard, (object, writes)) in streamed.iter().zip(&writes).enumerate() {
                        let len = object.as_ref().unwrap().len() as u64;
                        check_pieces(writes, len, index_size, location == "start", &what);
                        if shard == 0 {
                            // The full shard (512 KiB decoded) is written in pieces.
                            assert!(writes.len() >= 2, "{what}: {writes:?}");
                        }
                    }
                }
            }
        }
    }
}

/// `writes` cover the object's `len` bytes once each: the chunks from 0 (index at the end) or
/// from `index_size` (index at the start) in consecutive pieces, each but the last ending on a
/// multiple of `PIECE`; the index after the last piece, in the same write, or alone at 0.
fn check_pieces(writes: &[(u64, u64)], len: u64, index_size: u64, at_start: bool, what: &str) {
    let chunks = match at_start {
        true => {
            let (index, chunks) = writes.split_last().expect("written");
            assert_eq!(*index, (0, index_size), "{what}: {writes:?}");
            chunks
        }
        false => writes,
    };
    let mut at = if at_start { index_size } else { 0 };
    for (k, &(offset, n)) in chunks.iter().enumerate() {
        assert_eq!(offset, at, "{what}: {writes:?}");
        at += n;
        if k + 1 < chunks.len() {
            assert_eq!(at % PIECE, 0, "{what}: {writes:?}");
        }
    }
    assert_eq!(at, len, "{what}: {writes:?}");
}

#[test]
fn a_shard_of_fill_values_deletes_the_object_and_writes_nothing() {
    let _turn = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    set_threads(2).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = recording(FsStore::new(dir.path()), 0);
    let writes = store.writes.clone();
    let array = Array::create(store, meta(zstd(), "end")).unwrap();
    let data: Vec<u8> = (0..512 * 512 * 2).map(|i| (i % 251) as u8 | 1).collect();
    array.write_region(&[0, 0], &[512, 512], &data).unwrap();
    assert!(dir.path().join("c/0/0").exists());
    writes.lock().unwrap().clear();
    array
        .write_region(&[0, 0], &[512, 512], &vec![0u8; 512 * 512 * 2])
        .unwrap();
    assert!(writes.lock().unwrap().is_empty());
    assert!(!dir.path().join("c/0/0").exists());
    assert_eq!(
        std::fs::read_dir(dir.path().join("c/0")).unwrap().count(),
        0,
        "nothing left beside it"
    );
}

#[test]
fn a_write_failing_part_way_leaves_the_old_object() {
    let _turn = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    set_threads(2).unwrap();
    let m = meta(raw(), "end");
    // No element at the fill value: every chunk is stored.
    let first: Vec<u8> = (0..512 * 512u32)
        .flat_map(|i| ((i * 7) as u16 | 1).to_le_bytes())
        .collect();
    let second: Vec<u8> = first.iter().map(|b| b.wrapping_add(1)).collect();
    // Without a fault: 256 chunks of 2 KiB stored as they are, in two pieces, and the index.
    let dir = tempfile::tempdir().unwrap();
    let store = recording(FsStore::new(dir.path()), 0);
    let writes = store.writes.clone();
    let array = Array::create(store, m.clone()).unwrap();
    array.write_region(&[0, 0], &[512, 512], &first).unwrap();
    // The second piece is written during the encode, or with the index when the encode has
    // ended before a thread took it.
    let writes = writes.lock().unwrap().clone();
    let index = 256 * 16 + 4;
    assert!(
        writes == [(0, PIECE), (PIECE, PIECE), (2 * PIECE, index)]
            || writes == [(0, PIECE), (PIECE, PIECE + index)],
        "{writes:?}"
    );
    // A fault at the first write (during the encode) or the second (during the encode, or
    // the last one).
    for fail_at in 1..=2 {
        let dir = tempfile::tempdir().unwrap();
        // The old object, written without faults.
        Array::create(FsStore::new(dir.path()), m.clone())
            .unwrap()
            .write_region(&[0, 0], &[512, 512], &first)
            .unwrap();
        let path = dir.path().join("c/0/0");
        let old = std::fs::read(&path).unwrap();
        let array = Array::open(recording(FsStore::new(dir.path()), fail_at)).unwrap();
        let err = array
            .write_region(&[0, 0], &[512, 512], &second)
            .unwrap_err();
        match &err {
            Error::Io { code: 28, message } => assert!(message.contains("injected"), "{err}"),
            other => panic!("write {fail_at} failed: {other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), old, "write {fail_at} failed");
        let names: Vec<_> = std::fs::read_dir(dir.path().join("c/0"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["0"], "write {fail_at} failed");
        assert_eq!(array.read_region_vec(&[0, 0], &[512, 512]).unwrap(), first);
    }
}

#[test]
fn a_whole_shard_given_decoded_is_written_while_it_encodes_too() {
    let _turn = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let image = image();
    let shard: Vec<u8> = (0..512)
        .flat_map(|r| &image[r * 1200..r * 1200 + 1024])
        .copied()
        .collect();
    for codecs in [raw(), zstd()] {
        for location in ["end", "start"] {
            let what = format!("{codecs} {location}");
            let m = meta(codecs.clone(), location);
            // What the codec chain makes of the shard (the sharding codec's buffered encode).
            let expected = m.codecs.encode(&shard, &m.chunk_repr()).unwrap();
            for threads in [1, 2] {
                set_threads(threads).unwrap();
                let store = recording(MemoryStore::new(), 0);
                let writes = store.writes.clone();
                let array = Array::create(store, m.clone()).unwrap();
                let done = array.write_shard(&[0, 0], &shard).unwrap();
                let object = array.read_shard_object(&[0, 0]).unwrap();
                assert_eq!(object, expected, "{what}, {threads} threads");
                let len = object.len() as u64;
                assert_eq!(done, Finalized::Written { size: len });
                let writes = writes.lock().unwrap().clone();
                match threads {
                    1 => assert!(writes.is_empty(), "{what}"),
                    _ => check_pieces(&writes, len, 256 * 16 + 4, location == "start", &what),
                }
            }
        }
    }
}

#[test]
fn a_shard_less_compressible_than_the_one_before_is_written_exactly() {
    let _turn = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    // The room reserved for a shard's encoded chunks follows the last shard's ratio: after a
    // shard that compresses to almost nothing, a shard of noise overflows it (its chunks get
    // buffers of their own), and must still come out as the buffered writer writes it.
    let m = meta(zstd(), "end");
    let flat = vec![7u8; 512 * 512 * 2];
    let noise = common::noise(512 * 512 * 2, 0x9E37_79B9_7F4A_7C15);
    let mut objects = Vec::new();
    for threads in [1, 2] {
        set_threads(threads).unwrap();
        let array = Array::create(MemoryStore::new(), m.clone()).unwrap();
        array.write_shard(&[0, 0], &flat).unwrap();
        array.write_shard(&[0, 0], &noise).unwrap();
        assert_eq!(array.read_shard(&[0, 0]).unwrap().unwrap(), noise);
        objects.push(array.read_shard_object(&[0, 0]).unwrap());
    }
    assert_eq!(objects[0], objects[1]);
    // Noise does not compress: the chunks alone take more than the shard's decoded size.
    assert!(objects[1].len() > noise.len());
}
