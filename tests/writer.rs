//! Writer strategies: round trips, fill handling, update sequences, compaction, misuse.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;
use zarrshard::*;

fn layout(
    codecs: Value,
    location: &str,
    inner: &[u64],
    per_shard: &[u64],
    dtype: DataType,
) -> Arc<ShardLayout> {
    let config = json!({"chunk_shape": inner, "codecs": codecs,
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": location});
    let shard: Vec<u64> = inner.iter().zip(per_shard).map(|(a, b)| a * b).collect();
    Arc::new(
        ShardLayout::from_config_json(&config, dtype.clone(), shard, FillValue::zero(&dtype))
            .unwrap(),
    )
}

fn raw() -> Value {
    json!([{"name": "bytes", "configuration": {"endian": "little"}}])
}
fn zstd() -> Value {
    json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}])
}

fn chunk(l: &ShardLayout, seed: u8) -> Vec<u8> {
    (0..l.inner_byte_size())
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) | 1)
        .collect()
}

fn read_all(l: &Arc<ShardLayout>, io: &MemoryIo) -> Vec<Vec<u8>> {
    let r = ShardReader::open(l.clone(), io).unwrap();
    (0..l.num_chunks())
        .map(|i| {
            r.read_chunk(&nd::unravel(i as u64, l.chunks_per_shard()))
                .unwrap()
        })
        .collect()
}

#[test]
fn every_strategy_gives_the_same_content_and_no_dead_bytes() {
    for location in ["end", "start"] {
        for codecs in [raw(), zstd()] {
            let l = layout(codecs, location, &[4, 4], &[3, 2], DataType::UInt16);
            let mut expected = vec![vec![0u8; l.inner_byte_size()]; 6];
            for i in [4, 0, 5, 2] {
                expected[i] = chunk(&l, i as u8);
            }
            let mut results = vec![];
            for (strategy, order) in [
                (WriteStrategy::Buffered, ChunkOrder::C),
                (WriteStrategy::Buffered, ChunkOrder::Morton),
                (WriteStrategy::Streaming, ChunkOrder::C),
                (WriteStrategy::Update(UpdateMode::AppendOnly), ChunkOrder::C),
            ] {
                let io = MemoryIo::new();
                let mut w = ShardWriter::new(
                    l.clone(),
                    &io,
                    strategy,
                    WriteOptions {
                        order,
                        store_fill_chunks: false,
                    },
                )
                .unwrap();
                for i in [4, 0, 5, 2, 1] {
                    // chunk 1 is all fill: not stored.
                    w.write_chunk(&nd::unravel(i, l.chunks_per_shard()), &expected[i as usize])
                        .unwrap();
                }
                let fin = w.finalize().unwrap();
                let obj = io.bytes().unwrap();
                assert_eq!(
                    fin,
                    Finalized::Written {
                        size: obj.len() as u64
                    }
                );
                let index = l.decode_index(&obj).unwrap();
                assert_eq!(index.stored().count(), 4);
                assert_eq!(
                    index.dead_bytes(&l, obj.len() as u64),
                    0,
                    "{strategy:?} {order:?}"
                );
                assert_eq!(read_all(&l, &io), expected);
                results.push(obj);
            }
            // Buffered C order writes chunks in index order: the same object as the codec.
            let whole: Vec<u8> = {
                let mut shard = vec![0u8; l.shard_repr().byte_size().unwrap() as usize];
                for (i, c) in expected.iter().enumerate() {
                    l.place_chunk(i, c, &mut shard);
                }
                l.encode_shard(&shard).unwrap()
            };
            assert_eq!(results[0], whole);
        }
    }
}

#[test]
fn morton_layout_is_morton() {
    let l = layout(raw(), "end", &[1, 1], &[2, 2], DataType::UInt8);
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions {
            order: ChunkOrder::Morton,
            store_fill_chunks: false,
        },
    )
    .unwrap();
    for (i, v) in [10u8, 20, 30, 40].iter().enumerate() {
        w.write_chunk(&nd::unravel(i as u64, &[2, 2]), &[*v])
            .unwrap();
    }
    w.finalize().unwrap();
    // Morton over [2, 2]: (0,0) (1,0) (0,1) (1,1), i.e. values 10, 30, 20, 40.
    assert_eq!(&io.bytes().unwrap()[..4], &[10, 30, 20, 40]);
}

#[test]
fn empty_shard_is_deleted_not_written() {
    let l = layout(raw(), "end", &[2], &[2], DataType::UInt8);
    for strategy in [
        WriteStrategy::Buffered,
        WriteStrategy::Streaming,
        WriteStrategy::Update(UpdateMode::InPlace),
    ] {
        let io = MemoryIo::from_bytes(vec![1, 2, 3]); // an old object to be replaced
        let mut w = ShardWriter::new(l.clone(), &io, strategy, WriteOptions::default());
        if strategy == WriteStrategy::Update(UpdateMode::InPlace) {
            // The old object is not a valid shard: update refuses it instead of guessing.
            assert!(matches!(w, Err(Error::Corrupt { .. })));
            let io = MemoryIo::new();
            w = ShardWriter::new(l.clone(), &io, strategy, WriteOptions::default());
            let mut w = w.unwrap();
            w.write_chunk(&[0], &[0, 0]).unwrap();
            assert_eq!(w.finalize().unwrap(), Finalized::Deleted);
            continue;
        }
        let mut w = w.unwrap();
        w.write_chunk(&[0], &[0, 0]).unwrap();
        w.write_chunk(&[1], &[5, 5]).unwrap();
        w.erase_chunk(&[1]).unwrap();
        assert_eq!(w.finalize().unwrap(), Finalized::Deleted);
        assert_eq!(io.bytes(), None, "{strategy:?}");
    }
    // store_fill_chunks keeps them.
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions {
            store_fill_chunks: true,
            ..Default::default()
        },
    )
    .unwrap();
    w.write_chunk(&[0], &[0, 0]).unwrap();
    w.finalize().unwrap();
    assert_eq!(
        l.decode_index(&io.bytes().unwrap())
            .unwrap()
            .stored()
            .count(),
        1
    );
}

#[test]
fn misuse_is_an_error_not_a_panic() {
    let l = layout(raw(), "end", &[2], &[2], DataType::UInt8);
    let io = MemoryIo::new();
    let mut w =
        ShardWriter::new(l, &io, WriteStrategy::Streaming, WriteOptions::default()).unwrap();
    assert!(matches!(
        w.write_chunk(&[2], &[1, 1]),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        w.write_chunk(&[0], &[1, 1, 1]),
        Err(Error::BufferSize {
            expected: 2,
            actual: 3
        })
    ));
    w.write_chunk(&[0], &[1, 1]).unwrap();
    w.finalize().unwrap();
    for r in [
        w.write_chunk(&[0], &[1, 1]),
        w.erase_chunk(&[0]),
        w.finalize().map(|_| ()),
    ] {
        assert_eq!(
            r.unwrap_err().to_string(),
            "invalid state: the shard writer was already finalized"
        );
    }
}

#[test]
fn append_only_update_never_overwrites_and_in_place_reuses_slots() {
    let l = layout(raw(), "end", &[4], &[4], DataType::UInt8);
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    for i in 0..4u8 {
        w.write_chunk(&[i as u64], &[i + 1; 4]).unwrap();
    }
    w.finalize().unwrap();
    let original = io.bytes().unwrap();
    assert_eq!(original.len(), 16 + 68);

    // Append-only: the old object is a prefix of the new one.
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Update(UpdateMode::AppendOnly),
        WriteOptions::default(),
    )
    .unwrap();
    w.write_chunk(&[2], &[9; 4]).unwrap();
    w.finalize().unwrap();
    let appended = io.bytes().unwrap();
    assert_eq!(&appended[..original.len()], &original[..]);
    assert_eq!(appended.len(), original.len() + 4 + 68);
    let index = l.decode_index(&appended).unwrap();
    assert_eq!(index.dead_bytes(&l, appended.len() as u64), 4 + 68);
    assert_eq!(read_all(&l, &io)[2], vec![9; 4]);

    // In place: an uncompressed chunk fits its old slot, so the object does not grow.
    let io2 = MemoryIo::from_bytes(original.clone());
    let mut w = ShardWriter::new(
        l.clone(),
        &io2,
        WriteStrategy::Update(UpdateMode::InPlace),
        WriteOptions::default(),
    )
    .unwrap();
    w.write_chunk(&[1], &[7; 4]).unwrap();
    w.finalize().unwrap();
    let rewritten = io2.bytes().unwrap();
    assert_eq!(rewritten.len(), original.len());
    assert_eq!(&rewritten[4..8], &[7; 4]);
    assert_eq!(
        l.decode_index(&rewritten)
            .unwrap()
            .dead_bytes(&l, rewritten.len() as u64),
        0
    );

    // Compaction removes what append-only left behind, without re-encoding.
    let (before, after) = compact(&l, &io, ChunkOrder::C).unwrap().unwrap();
    assert_eq!(
        (before, after),
        (appended.len() as u64, original.len() as u64)
    );
    let compacted = io.bytes().unwrap();
    assert_eq!(
        l.decode_index(&compacted)
            .unwrap()
            .dead_bytes(&l, compacted.len() as u64),
        0
    );
    assert_eq!(
        read_all(&l, &io),
        vec![vec![1; 4], vec![2; 4], vec![9; 4], vec![4; 4]]
    );
}

#[derive(Debug, Clone)]
enum Op {
    Write(usize, u8),
    Erase(usize),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 120, .. ProptestConfig::default() })]

    /// Any sequence of update sessions, then compaction: same content as a model, no dead bytes.
    #[test]
    fn update_sequences_then_compaction(
        sessions in prop::collection::vec(
            (any::<bool>(), prop::collection::vec(prop_oneof![
                (0usize..6, 1u8..255).prop_map(|(i, v)| Op::Write(i, v)),
                (0usize..6).prop_map(Op::Erase),
            ], 1..6)),
            1..5),
        at_start in any::<bool>(),
        compressed in any::<bool>(),
    ) {
        let l = layout(if compressed { zstd() } else { raw() }, if at_start { "start" } else { "end" }, &[3], &[6], DataType::UInt16);
        let io = MemoryIo::new();
        let mut model: Vec<Option<u8>> = vec![None; 6];
        for (in_place, ops) in &sessions {
            let mode = if *in_place { UpdateMode::InPlace } else { UpdateMode::AppendOnly };
            let mut w = ShardWriter::new(l.clone(), &io, WriteStrategy::Update(mode), WriteOptions::default()).unwrap();
            for op in ops {
                match *op {
                    Op::Write(i, v) => { w.write_chunk(&[i as u64], &[v; 6]).unwrap(); model[i] = Some(v); }
                    Op::Erase(i) => { w.erase_chunk(&[i as u64]).unwrap(); model[i] = None; }
                }
            }
            w.finalize().unwrap();
            let expected: Vec<Vec<u8>> = model.iter().map(|m| vec![m.unwrap_or(0); 6]).collect();
            if model.iter().any(Option::is_some) {
                prop_assert_eq!(read_all(&l, &io), expected);
            } else {
                prop_assert_eq!(io.bytes(), None);
            }
        }
        if io.bytes().is_some() {
            compact(&l, &io, ChunkOrder::C).unwrap();
            let obj = io.bytes().unwrap();
            prop_assert_eq!(l.decode_index(&obj).unwrap().dead_bytes(&l, obj.len() as u64), 0);
            let expected: Vec<Vec<u8>> = model.iter().map(|m| vec![m.unwrap_or(0); 6]).collect();
            prop_assert_eq!(read_all(&l, &io), expected);
        }
    }
}

#[test]
fn a_failed_write_blocks_the_writer() {
    /// Memory whose second write fails.
    struct FailSecond(MemoryIo, std::sync::atomic::AtomicUsize);
    impl ShardIo for FailSecond {
        fn read(&self, r: ByteRange) -> Result<Option<ReadOutput>> {
            self.0.read(r)
        }
        fn write_at(&self, o: u64, d: &[u8]) -> Result<()> {
            if self.1.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 1 {
                return Err(Error::Io {
                    code: 5,
                    message: "disk full".into(),
                });
            }
            self.0.write_at(o, d)
        }
    }
    let l = layout(raw(), "end", &[2], &[3], DataType::UInt8);
    let io = FailSecond(MemoryIo::new(), Default::default());
    let mut w =
        ShardWriter::new(l, &io, WriteStrategy::Streaming, WriteOptions::default()).unwrap();
    w.write_chunk(&[0], &[1, 1]).unwrap();
    assert!(matches!(
        w.write_chunk(&[1], &[2, 2]),
        Err(Error::Io { code: 5, .. })
    ));
    // Nothing may finish a shard that silently lacks chunk 1.
    for r in [w.write_chunk(&[2], &[3, 3]), w.finalize().map(|_| ())] {
        assert_eq!(
            r.unwrap_err().to_string(),
            "invalid state: a previous write failed; the object is incomplete (close the writer and discard it)"
        );
    }
}

/// A memory object whose reads do not report the size (as a host without it) and whose
/// `size` can be made to lie; optionally without `truncate`.
struct Lying {
    mem: MemoryIo,
    size: std::sync::Mutex<Option<u64>>,
    truncates: bool,
}

impl Lying {
    fn new(bytes: Vec<u8>, size: Option<u64>) -> Self {
        Lying {
            mem: MemoryIo::from_bytes(bytes),
            size: std::sync::Mutex::new(size),
            truncates: true,
        }
    }
}

impl ShardIo for Lying {
    fn read(&self, r: ByteRange) -> Result<Option<ReadOutput>> {
        Ok(self.mem.read(r)?.map(|o| ReadOutput {
            data: o.data,
            object_size: None,
        }))
    }
    fn size(&self) -> Result<Option<u64>> {
        match *self.size.lock().unwrap() {
            Some(s) => Ok(Some(s)),
            None => self.mem.size(),
        }
    }
    fn write_at(&self, o: u64, d: &[u8]) -> Result<()> {
        self.mem.write_at(o, d)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        if !self.truncates {
            return Err(Error::Unsupported("truncate".into()));
        }
        self.mem.truncate(len)
    }
    fn delete(&self) -> Result<()> {
        self.mem.delete()
    }
}

/// Six 4-byte uint16 chunks (2 elements each), buffered, C order: 24 bytes of chunks and a
/// 6 * 16 + 4 = 100-byte index (bytes + crc32c).
fn six_chunks(location: &str) -> (Arc<ShardLayout>, Vec<u8>) {
    let l = layout(raw(), location, &[2], &[6], DataType::UInt16);
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    for i in 0..6u64 {
        w.write_chunk(&[i], &chunk(&l, i as u8)).unwrap();
    }
    assert_eq!(w.finalize().unwrap(), Finalized::Written { size: 124 });
    (l, io.bytes().unwrap())
}

/// F1: an update whose back end reports a size that contradicts the index just read (stale:
/// 100 bytes of a 124-byte object) is refused as corrupt at open, before anything is written.
/// It used to take the size as the append point and write the new chunk over chunk 0.
#[test]
fn an_update_refuses_a_size_that_contradicts_the_index() {
    for location in ["start", "end"] {
        let (l, object) = six_chunks(location);
        for mode in [UpdateMode::AppendOnly, UpdateMode::InPlace] {
            for lie in [100, 123, 0, 50] {
                let io = Lying::new(object.clone(), Some(lie));
                let r = ShardWriter::new(
                    l.clone(),
                    &io,
                    WriteStrategy::Update(mode),
                    WriteOptions::default(),
                );
                assert!(
                    matches!(r, Err(Error::Corrupt { .. })),
                    "{location} {mode:?} size {lie}: {:?}",
                    r.err()
                );
                assert_eq!(io.mem.bytes().unwrap(), object);
            }
            // The true size (or a larger one: dead bytes after the last chunk) is accepted.
            for size in [124, 200] {
                let io = Lying::new(object.clone(), Some(size));
                ShardWriter::new(
                    l.clone(),
                    &io,
                    WriteStrategy::Update(mode),
                    WriteOptions::default(),
                )
                .unwrap();
            }
        }
    }
}

/// F2: sizes near 2^64 from the back end give errors, not overflow panics, and nothing is
/// written.
#[test]
fn absurd_sizes_are_errors_not_overflows() {
    let (l, object) = six_chunks("end");
    // In place with the index at the end starts at size - index size: size 0 is refused.
    let io = Lying::new(object.clone(), Some(0));
    let r = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Update(UpdateMode::InPlace),
        WriteOptions::default(),
    );
    assert!(matches!(r, Err(Error::Corrupt { .. })), "{:?}", r.err());
    // Append-only at u64::MAX - 10: the new index would end past 2^64.
    let io = Lying::new(object.clone(), Some(u64::MAX - 10));
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Update(UpdateMode::AppendOnly),
        WriteOptions::default(),
    )
    .unwrap();
    let e = w.finalize().unwrap_err();
    assert!(
        matches!(e, Error::InvalidArgument(ref m) if m.contains("2^64")),
        "{e}"
    );
    assert_eq!(io.mem.bytes().unwrap(), object);
}

/// F9: an in-place update does not rewrite a slot that another entry shares (validation
/// accepts overlapping entries); it appends instead, and the other chunk keeps its bytes.
#[test]
fn in_place_update_never_rewrites_a_shared_slot() {
    let (l, mut object) = six_chunks("end");
    // Point entry 1 at the bytes of entry 0 and fix the index checksum.
    let at = object.len() - 100;
    let e0 = object[at..at + 16].to_vec();
    object[at + 16..at + 32].copy_from_slice(&e0);
    let n = object.len();
    let crc = crc32c::crc32c(&object[at..n - 4]);
    object[n - 4..].copy_from_slice(&crc.to_le_bytes());
    let io = MemoryIo::from_bytes(object);
    assert_eq!(read_all(&l, &io)[1], chunk(&l, 0));
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Update(UpdateMode::InPlace),
        WriteOptions::default(),
    )
    .unwrap();
    w.write_chunk(&[0], &chunk(&l, 9)).unwrap();
    // Chunk 2 shares nothing: rewritten in place (offset 8, as buffered C order put it).
    w.write_chunk(&[2], &chunk(&l, 8)).unwrap();
    assert_eq!(w.index().get(2).unwrap().offset, 8);
    w.finalize().unwrap();
    let all = read_all(&l, &io);
    assert_eq!(all[0], chunk(&l, 9));
    assert_eq!(all[1], chunk(&l, 0), "chunk 1 was not written but changed");
    assert_eq!(all[2], chunk(&l, 8));
    for (i, c) in all.iter().enumerate().skip(3) {
        assert_eq!(*c, chunk(&l, i as u8));
    }
}

/// W1: `discard` of an append-only update cuts the object back to the previous shard (or
/// removes an object the update created); other strategies report they cannot.
#[test]
fn discard_restores_an_append_only_update() {
    for location in ["start", "end"] {
        let (l, object) = six_chunks(location);
        let io = MemoryIo::from_bytes(object.clone());
        let mut w = ShardWriter::new(
            l.clone(),
            &io,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteOptions::default(),
        )
        .unwrap();
        w.write_chunk(&[1], &chunk(&l, 40)).unwrap();
        w.write_chunk(&[4], &chunk(&l, 41)).unwrap();
        assert_ne!(io.bytes().unwrap(), object);
        assert!(w.discard().unwrap());
        assert_eq!(io.bytes().unwrap(), object);
        assert!(matches!(
            w.write_chunk(&[1], &chunk(&l, 1)),
            Err(Error::InvalidState(_))
        ));
        // A missing object the update created is removed again.
        let io = MemoryIo::new();
        let mut w = ShardWriter::new(
            l.clone(),
            &io,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteOptions::default(),
        )
        .unwrap();
        w.write_chunk(&[1], &chunk(&l, 40)).unwrap();
        assert!(w.discard().unwrap());
        assert_eq!(io.bytes(), None);
        // In place overwrote old bytes: not restorable.
        let io = MemoryIo::from_bytes(object.clone());
        let mut w = ShardWriter::new(
            l.clone(),
            &io,
            WriteStrategy::Update(UpdateMode::InPlace),
            WriteOptions::default(),
        )
        .unwrap();
        w.write_chunk(&[1], &chunk(&l, 40)).unwrap();
        assert!(!w.discard().unwrap());
        // Without truncate the append stays (and discard says so).
        let mut io = Lying::new(object.clone(), None);
        io.truncates = false;
        let mut w = ShardWriter::new(
            l.clone(),
            &io,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteOptions::default(),
        )
        .unwrap();
        w.write_chunk(&[1], &chunk(&l, 40)).unwrap();
        assert!(!w.discard().unwrap());
        // A finalized writer is not discarded.
        let io = MemoryIo::from_bytes(object.clone());
        let mut w = ShardWriter::new(
            l.clone(),
            &io,
            WriteStrategy::Update(UpdateMode::AppendOnly),
            WriteOptions::default(),
        )
        .unwrap();
        w.finalize().unwrap();
        assert!(matches!(w.discard(), Err(Error::InvalidState(_))));
    }
}

/// F4: a buffered finalize over a longer object on a back end without `truncate` (but with
/// `size`) refuses before writing any byte: the old shard is intact. It used to overwrite it
/// and then refuse.
#[test]
fn buffered_finalize_without_truncate_refuses_before_writing() {
    let (l, object) = six_chunks("end");
    let mut io = Lying::new(object.clone(), None);
    io.truncates = false;
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    w.write_chunk(&[0], &chunk(&l, 50)).unwrap();
    let e = w.finalize().unwrap_err();
    assert!(
        matches!(e, Error::Unsupported(ref m) if m.contains("nothing was written")),
        "{e}"
    );
    assert_eq!(io.mem.bytes().unwrap(), object);
    // A new shard at least as long as the old one needs no truncate.
    let mut w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    for i in 0..6u64 {
        w.write_chunk(&[i], &chunk(&l, 60 + i as u8)).unwrap();
    }
    assert_eq!(w.finalize().unwrap(), Finalized::Written { size: 124 });
    let all = read_all(&l, &io.mem);
    for (i, c) in all.iter().enumerate() {
        assert_eq!(*c, chunk(&l, 60 + i as u8));
    }
}

/// `finish_with` takes a shard's chunks as `encode_chunks` holds them (in shared segments):
/// every strategy stores the same shard, which decodes to the input; the buffered one gives
/// the same bytes as writing the chunks one by one. A list of the wrong length is refused
/// before anything is written.
#[test]
fn finish_with_encoded_chunks_in_every_strategy() {
    // zstd is C, which Miri cannot run; uncompressed chunks take the other path (cut straight
    // into the segments).
    let codecs = match cfg!(miri) {
        true => vec![raw()],
        false => vec![raw(), zstd()],
    };
    for c in codecs {
        finish_with_encoded_chunks(layout(c, "end", &[8, 8], &[4, 4], DataType::UInt16));
    }
}

fn finish_with_encoded_chunks(l: Arc<ShardLayout>) {
    let size = l.shard_repr().byte_size().unwrap() as usize;
    // The top-left quarter stays zero (fill value): those four chunks are not stored.
    let shard: Vec<u8> = (0..size / 2)
        .flat_map(|k| {
            let (y, x) = (k / 32, k % 32);
            let v = if y < 16 && x < 16 {
                0
            } else {
                (k * 37 % 1000) as u16 + 1
            };
            v.to_ne_bytes()
        })
        .collect();
    let one_by_one = MemoryIo::new();
    let mut w = ShardWriter::new(
        l.clone(),
        &one_by_one,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    let mut chunk_bytes = vec![0u8; l.inner_byte_size()];
    for i in 0..l.num_chunks() {
        l.extract_chunk(i, &shard, &mut chunk_bytes);
        w.write_chunk(&nd::unravel(i as u64, l.chunks_per_shard()), &chunk_bytes)
            .unwrap();
    }
    w.finalize().unwrap();
    for strategy in [
        WriteStrategy::Buffered,
        WriteStrategy::Streaming,
        WriteStrategy::Update(UpdateMode::AppendOnly),
        WriteStrategy::Update(UpdateMode::InPlace),
    ] {
        let encoded = l.encode_chunks(&shard, false).unwrap();
        assert_eq!(encoded.stored().count(), 12);
        let io = MemoryIo::new();
        let w = ShardWriter::new(l.clone(), &io, strategy, WriteOptions::default()).unwrap();
        w.finish_with(encoded).unwrap();
        assert_eq!(
            read_whole_shard(&l, &io).unwrap().unwrap(),
            shard,
            "{strategy:?}"
        );
        if strategy == WriteStrategy::Buffered {
            assert_eq!(io.bytes(), one_by_one.bytes());
        }
    }
    let io = MemoryIo::new();
    let w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    let e = w.finish_with(vec![Some(vec![1u8]); 15]).unwrap_err();
    assert_eq!(
        e.to_string(),
        Error::InvalidArgument("15 encoded chunk positions for a shard of 16 inner chunks".into())
            .to_string()
    );
    assert!(io.bytes().is_none());
}

/// An update's read of a partly covered chunk from an object torn after its index was read
/// (another process cut it to 110 bytes) says so as the reader does. Index first (100
/// bytes), chunk 2 at bytes 108..112: 2 of its 4 bytes are left.
#[test]
fn an_update_reading_a_chunk_of_a_torn_object_says_it_is_truncated() {
    let (l, object) = six_chunks("start");
    let io = MemoryIo::from_bytes(object);
    let w = ShardWriter::new(
        l.clone(),
        &io,
        WriteStrategy::Update(UpdateMode::AppendOnly),
        WriteOptions::default(),
    )
    .unwrap();
    io.truncate(110).unwrap();
    let mut out = vec![0u8; 4];
    let e = w.read_chunk_into(&[2], &mut out).unwrap_err();
    assert!(matches!(e, Error::Corrupt { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "corrupt shard: inner chunk [2]: index entry (offset 108, nbytes 4) points past the end: \
         object is 110 bytes, index needs 112: torn write? try `zarrshard repair`"
    );
}
