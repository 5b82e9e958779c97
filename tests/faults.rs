//! Fault injection (SQLite-style): a back end that fails at its N-th call — with an error code,
//! a short read, or a partial write then an error — for every N over whole writes (each
//! strategy, new object and over an existing shard, index at either end) and whole reads.
//! Every fault must surface as an error (the back end's code kept), fire exactly once, leave
//! the writer refusing further calls, and never let a read return wrong data; the previous
//! shard must stay readable and intact when written through `FileIo::put` (temporary + rename)
//! or the temporary-then-commit pattern for positional writers.

use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use zarrshard::*;

const CODE: i32 = 5; // EIO

#[derive(Clone, Copy, Debug, PartialEq)]
enum Fault {
    /// The call returns `Error::Io { code: CODE }` and does nothing.
    Code,
    /// A read returns only half the bytes (a short read: "the object ends here").
    ShortRead,
    /// A write stores the first half of its bytes, then fails with CODE.
    PartialWrite,
}

/// Wraps a back end and injects `fault` at call number `at` (1-based; 0 = never).
struct Failing<T> {
    inner: T,
    calls: AtomicUsize,
    fired: AtomicUsize,
    at: usize,
    fault: Fault,
}

impl<T> Failing<T> {
    fn new(inner: T, at: usize, fault: Fault) -> Self {
        Failing {
            inner,
            calls: AtomicUsize::new(0),
            fired: AtomicUsize::new(0),
            at,
            fault,
        }
    }
    /// True when this call is the one to fail.
    fn hit(&self) -> bool {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let hit = n == self.at;
        if hit {
            self.fired.fetch_add(1, Ordering::SeqCst);
        }
        hit
    }
    fn err() -> Error {
        Error::Io {
            code: CODE,
            message: "injected fault".into(),
        }
    }
}

impl<T: ShardIo> ShardIo for Failing<T> {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        if !self.hit() {
            return self.inner.read(range);
        }
        match self.fault {
            Fault::ShortRead => Ok(self.inner.read(range)?.map(|mut o| {
                o.data.truncate(o.data.len() / 2);
                o
            })),
            _ => Err(Self::err()),
        }
    }
    fn size(&self) -> Result<Option<u64>> {
        if self.hit() {
            return Err(Self::err());
        }
        self.inner.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        if !self.hit() {
            return self.inner.write_at(offset, data);
        }
        if self.fault == Fault::PartialWrite {
            self.inner.write_at(offset, &data[..data.len() / 2])?;
        }
        Err(Self::err())
    }
    fn put(&self, data: &[u8]) -> Result<()> {
        if self.hit() {
            // `FileIo::put` fails before its rename: the object is untouched.
            return Err(Self::err());
        }
        self.inner.put(data)
    }
    fn truncate(&self, len: u64) -> Result<()> {
        if self.hit() {
            return Err(Self::err());
        }
        self.inner.truncate(len)
    }
    fn delete(&self) -> Result<()> {
        if self.hit() {
            return Err(Self::err());
        }
        self.inner.delete()
    }
}

fn layout(location: &str) -> Arc<ShardLayout> {
    let config = json!({"chunk_shape": [2, 2],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": location});
    Arc::new(
        ShardLayout::from_config_json(&config, DataType::UInt16, vec![8, 8], FillValue(vec![0, 0]))
            .unwrap(),
    )
}

/// The 16 inner chunks of version `v` of the shard (chunk 5 is the fill value).
fn chunk(v: u16, i: usize) -> Vec<u8> {
    (0..4u16)
        .flat_map(|k| {
            if i == 5 {
                0u16
            } else {
                v * 1000 + i as u16 * 10 + k
            }
            .to_ne_bytes()
        })
        .collect()
}

fn coords(l: &ShardLayout, i: usize) -> Vec<u64> {
    zarrshard::nd::unravel(i as u64, l.chunks_per_shard())
}

/// Write version `v` of every chunk through `io` with `strategy`.
fn write_version<I: ShardIo>(
    l: &Arc<ShardLayout>,
    io: I,
    strategy: WriteStrategy,
    v: u16,
) -> Result<()> {
    let mut w = ShardWriter::new(l.clone(), io, strategy, WriteOptions::default())?;
    let mut result = Ok(());
    for i in 0..l.num_chunks() {
        result = w.write_chunk(&coords(l, i), &chunk(v, i));
        if result.is_err() {
            break;
        }
    }
    let result = result.and_then(|_| w.finalize().map(|_| ()));
    if result.is_err() {
        // A writer that failed refuses to go on (it would hide an incomplete object).
        let again = w.finalize().unwrap_err();
        assert!(matches!(again, Error::InvalidState(_)), "{again}");
    }
    result
}

/// Read every chunk every way; `Ok(version)` when the whole shard is version `v` of the
/// data; an error otherwise. Wrong data is a test failure.
fn read_all<I: ShardIo>(l: &Arc<ShardLayout>, io: I, v: u16) -> Result<()> {
    let r = ShardReader::open(l.clone(), io)?;
    let mut all: Vec<Vec<u64>> = Vec::new();
    for i in 0..l.num_chunks() {
        assert_eq!(
            r.read_chunk(&coords(l, i))?,
            chunk(v, i),
            "chunk {i} read as other data"
        );
        all.push(coords(l, i));
    }
    let refs: Vec<&[u64]> = all.iter().map(|c| c.as_slice()).collect();
    let mut many = vec![0u8; refs.len() * 8];
    r.read_chunks_into(&refs, &mut many)?;
    let want: Vec<u8> = (0..l.num_chunks()).flat_map(|i| chunk(v, i)).collect();
    assert_eq!(many, want, "read_chunks_into read other data");
    Ok(())
}

const STRATEGIES: [WriteStrategy; 4] = [
    WriteStrategy::Buffered,
    WriteStrategy::Streaming,
    WriteStrategy::Update(UpdateMode::AppendOnly),
    WriteStrategy::Update(UpdateMode::InPlace),
];

#[test]
fn every_write_call_fails_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let mut faults = 0;
    for location in ["end", "start"] {
        let l = layout(location);
        for strategy in STRATEGIES {
            for over_existing in [false, true] {
                for fault in [Fault::Code, Fault::PartialWrite, Fault::ShortRead] {
                    let path = dir.path().join("shard");
                    let reset = || {
                        let _ = std::fs::remove_file(&path);
                        if over_existing {
                            write_version(&l, FileIo::new(&path), WriteStrategy::Buffered, 1)
                                .unwrap();
                        }
                        std::fs::read(&path).ok()
                    };
                    // A clean run counts the calls.
                    reset();
                    let probe = Failing::new(FileIo::new(&path), 0, fault);
                    write_version(&l, &probe, strategy, 2).unwrap();
                    read_all(&l, FileIo::new(&path), 2).unwrap();
                    let total = probe.calls.load(Ordering::SeqCst);
                    for at in 1..=total {
                        let before = reset();
                        let io = Failing::new(FileIo::new(&path), at, fault);
                        let result = write_version(&l, &io, strategy, 2);
                        assert_eq!(io.fired.load(Ordering::SeqCst), 1);
                        let what = format!("{location} {strategy:?} existing={over_existing} {fault:?} call {at} of {total}");
                        match (fault, result) {
                            // A short read while an update loads the old index: corrupt.
                            (Fault::ShortRead, Err(Error::Corrupt { .. })) => {}
                            // A short read elsewhere is not a read the writer makes.
                            (Fault::ShortRead, Ok(())) => {
                                read_all(&l, FileIo::new(&path), 2).unwrap();
                                continue;
                            }
                            (_, Err(Error::Io { code, .. })) => assert_eq!(code, CODE, "{what}"),
                            (_, other) => panic!("{what}: {other:?}"),
                        }
                        faults += 1;
                        // One `put` (temporary + rename) leaves the previous shard as it was.
                        if strategy == WriteStrategy::Buffered {
                            assert_eq!(
                                std::fs::read(&path).ok(),
                                before,
                                "{what}: old shard changed"
                            );
                        }
                        // Whatever is left reads as the old version, the new one, or an error (a
                        // missing object only where there was none).
                        if !path.exists() {
                            assert!(before.is_none(), "{what}: the old shard was deleted");
                        } else if let Ok(r) = ShardReader::open(l.clone(), FileIo::new(&path)) {
                            for i in 0..l.num_chunks() {
                                if let Ok(c) = r.read_chunk(&coords(&l, i)) {
                                    assert!(
                                        c == chunk(2, i) || (over_existing && c == chunk(1, i)),
                                        "{what}: chunk {i} holds other data"
                                    );
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    println!("faults: writes: {faults} injected faults, each an error with the back end's code or corrupt (short read)");
}

/// The temporary-then-commit pattern for positional writers: work on a copy, rename it over
/// the shard only after `finalize` succeeded. Any fault leaves the previous shard intact.
#[test]
fn temporary_then_commit_keeps_the_previous_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (path, tmp) = (dir.path().join("shard"), dir.path().join("shard.tmp"));
    let mut n = 0;
    for location in ["end", "start"] {
        let l = layout(location);
        for strategy in STRATEGIES {
            let mut at = 1;
            loop {
                write_version(&l, FileIo::new(&path), WriteStrategy::Buffered, 1).unwrap();
                let before = std::fs::read(&path).unwrap();
                // Updates start from a copy of the shard; the others from nothing.
                if matches!(strategy, WriteStrategy::Update(_)) {
                    std::fs::copy(&path, &tmp).unwrap();
                }
                let io = Failing::new(FileIo::new(&tmp), at, Fault::PartialWrite);
                let result = write_version(&l, &io, strategy, 2);
                if io.fired.load(Ordering::SeqCst) == 0 {
                    // Past the last call: the commit.
                    result.unwrap();
                    std::fs::rename(&tmp, &path).unwrap();
                    read_all(&l, FileIo::new(&path), 2).unwrap();
                    break;
                }
                assert!(result.is_err());
                let _ = std::fs::remove_file(&tmp);
                assert_eq!(std::fs::read(&path).unwrap(), before);
                read_all(&l, FileIo::new(&path), 1).unwrap();
                at += 1;
                n += 1;
            }
        }
    }
    println!(
        "faults: temporary-then-commit: {n} faults, previous shard intact and readable after each"
    );
}

#[test]
fn every_read_call_fails_in_turn() {
    let mut n = 0;
    for location in ["end", "start"] {
        let l = layout(location);
        let src = MemoryIo::new();
        write_version(&l, &src, WriteStrategy::Buffered, 1).unwrap();
        let bytes = src.bytes().unwrap();
        for fault in [Fault::Code, Fault::ShortRead] {
            let probe = Failing::new(MemoryIo::from_bytes(bytes.clone()), 0, fault);
            read_all(&l, &probe, 1).unwrap();
            let total = probe.calls.load(Ordering::SeqCst);
            for at in 1..=total {
                let io = Failing::new(MemoryIo::from_bytes(bytes.clone()), at, fault);
                let e = read_all(&l, &io, 1).unwrap_err();
                match fault {
                    Fault::Code => assert!(matches!(e, Error::Io { code: CODE, .. }), "{e}"),
                    _ => assert!(matches!(e, Error::Corrupt { .. }), "{e}"),
                }
                assert_eq!(io.fired.load(Ordering::SeqCst), 1);
                n += 1;
            }
        }
    }
    println!(
        "faults: reads: {n} injected faults, each an error (I/O code kept; short read = corrupt)"
    );
}

/// A back end without `truncate` (everything else forwarded).
struct NoTruncate<T>(T);

impl<T: ShardIo> ShardIo for NoTruncate<T> {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        self.0.read(range)
    }
    fn size(&self) -> Result<Option<u64>> {
        self.0.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.0.write_at(offset, data)
    }
    fn delete(&self) -> Result<()> {
        self.0.delete()
    }
}

/// Without a temporary, an append-only update (index at the end, crc32c) that fails at any
/// call: on a back end that can truncate, the writer cuts the object back to the previous
/// shard itself, byte for byte; without `truncate` it leaves an object `repair` cuts back to
/// the previous shard. Either way, when only the last step failed, the complete new shard.
#[test]
fn a_failed_append_only_update_is_repaired_to_the_previous_shard() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shard");
    let l = layout("end");
    let strategy = WriteStrategy::Update(UpdateMode::AppendOnly);
    let (mut rolled_back, mut repaired, mut complete, mut untouched) = (0, 0, 0, 0);
    for truncates in [true, false] {
        for fault in [Fault::Code, Fault::PartialWrite] {
            for at in 1.. {
                let _ = std::fs::remove_file(&path);
                write_version(&l, FileIo::new(&path), WriteStrategy::Buffered, 1).unwrap();
                let v1 = std::fs::read(&path).unwrap();
                let io = Failing::new(FileIo::new(&path), at, fault);
                let result = if truncates {
                    write_version(&l, &io, strategy, 2)
                } else {
                    write_version(&l, NoTruncate(&io), strategy, 2)
                };
                if io.fired.load(Ordering::SeqCst) == 0 {
                    result.unwrap();
                    break;
                }
                assert!(result.is_err());
                let torn = std::fs::read(&path).unwrap();
                assert_eq!(
                    &torn[..v1.len()],
                    &v1[..],
                    "append-only overwrote the previous shard"
                );
                let mut whole = vec![0u8; 128];
                if torn != v1 && l.decode_shard_into(&torn, &mut whole).is_ok() {
                    // Only the final truncate failed: the new shard is complete.
                    let mut v2 = vec![0u8; 128];
                    for i in 0..l.num_chunks() {
                        l.place_chunk(i, &chunk(2, i), &mut v2);
                    }
                    assert_eq!(whole, v2);
                    complete += 1;
                    continue;
                }
                if truncates {
                    // Whatever write failed, the appended bytes were cut off again (unless
                    // it failed before writing anything).
                    assert_eq!(torn, v1, "{fault:?} at call {at}: not rolled back");
                    if io.calls.load(Ordering::SeqCst) > at {
                        rolled_back += 1;
                    } else {
                        untouched += 1;
                    }
                    continue;
                }
                if torn == v1 {
                    untouched += 1; // failed before writing anything
                    continue;
                }
                let plan = zarrshard::shard::repair::plan(&l, &torn, true);
                assert_eq!(
                    plan,
                    ShardRepair::Recovered {
                        before: torn.len() as u64,
                        size: v1.len() as u64,
                        chunks: 15
                    },
                    "{fault:?} at call {at}"
                );
                std::fs::write(&path, &torn[..v1.len()]).unwrap();
                read_all(&l, FileIo::new(&path), 1).unwrap();
                repaired += 1;
            }
        }
    }
    assert!(rolled_back > 0);
    assert!(repaired > 0);
    println!("faults: append-only update without a temporary: {rolled_back} failures cut back to the previous shard by the writer, {repaired} (no truncate) repaired to it, {complete} left the new shard complete, {untouched} failed before writing");
}
