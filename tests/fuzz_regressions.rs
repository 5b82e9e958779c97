//! The fuzz targets' own code (`fuzz/src/lib.rs`) run by the normal test suite on the stable
//! toolchain: every input a fuzzing run found failing (`fuzz/regressions/<target>/`, each fixed
//! in `src/`), the committed corpus (`fuzz/corpus/<target>/`), and the seeds, which must
//! decode to the data they were written from.

#[allow(dead_code)]
#[path = "../fuzz/src/lib.rs"]
mod fuzz;

use std::path::{Path, PathBuf};

fn dir(kind: &str, target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz")
        .join(kind)
        .join(target)
}

/// Files of `fuzz/<kind>/<target>/`, sorted.
fn inputs(kind: &str, target: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir(kind, target)) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Targets whose codecs are all Rust (zstd and blosc are C, which Miri cannot run).
fn runs_here(target: &str) -> bool {
    !cfg!(miri)
        || matches!(
            target,
            "index_parse" | "shard_decode_raw" | "capi_sequence" | "store_listing"
        )
}

/// Run every input of `kind`.
fn replay(kind: &str) -> usize {
    let mut n = 0;
    for (target, run) in fuzz::TARGETS {
        if !runs_here(target) {
            continue;
        }
        for file in inputs(kind, target) {
            eprintln!("{target}: {}", file.display());
            run(&std::fs::read(file).unwrap());
            n += 1;
        }
    }
    n
}

#[test]
fn fuzz_findings_stay_fixed() {
    // Findings so far: index_parse and shard_decode_raw (an overflow in dead_bytes),
    // index_parse (half-empty entries), capi_sequence (a longer object kept its tail),
    // metadata_parse (a v2 `|V<n>` dtype of 3.2 EB per element allocated for its fill value),
    // store_listing (the draft's chunk-key translation took `c01/01` for chunk [1, 1]).
    for target in [
        "index_parse",
        "shard_decode_raw",
        "capi_sequence",
        "metadata_parse",
        "store_listing",
    ] {
        assert!(
            !inputs("regressions", target).is_empty(),
            "{target} findings missing"
        );
    }
    assert!(replay("regressions") >= 6);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "minutes under Miri; capi_seeds_replay covers the C ABI"
)]
fn fuzz_corpus_replays() {
    for (target, _) in fuzz::TARGETS {
        assert!(
            inputs("corpus", target).len() >= 4,
            "{target}: corpus missing"
        );
    }
    assert!(replay("corpus") >= 20);
}

/// Under Miri: the C ABI sessions (write, update, read back, a failing callback; buffered
/// writes as new objects, one failing at create, write or commit) on the layouts without C
/// codecs.
#[test]
fn capi_seeds_replay() {
    let seeds = fuzz::capi_seeds();
    assert_eq!(seeds.len(), 18);
    for (_, _, bytes) in seeds {
        fuzz::capi_sequence(&bytes);
    }
}

#[test]
#[cfg_attr(miri, ignore = "the codec layouts call zstd and blosc, which are C")]
fn fuzz_seeds_decode_to_their_data() {
    let mut checked = 0;
    for (target, name, bytes) in fuzz::seeds() {
        if !runs_here(target) {
            continue;
        }
        let layouts = match target {
            "shard_decode_raw" => fuzz::raw_layouts(),
            "shard_decode_codecs" if bytes[1] == 0 => fuzz::codec_layouts(),
            _ => Vec::new(),
        };
        if let Some(layout) = layouts.get((bytes[0] & 0x7f) as usize) {
            let object = &bytes[if target == "shard_decode_raw" { 1 } else { 2 }..];
            let size = layout.shard_repr().byte_size().unwrap() as usize;
            let mut shard = vec![0u8; size];
            layout.decode_shard_into(object, &mut shard).unwrap();
            assert_eq!(shard, fuzz::seed_data(size), "{target} {name}");
            checked += 1;
        }
        let run = fuzz::TARGETS.iter().find(|(t, _)| *t == target).unwrap().1;
        run(&bytes);
    }
    assert!(checked >= if cfg!(miri) { 10 } else { 20 });
}

/// Write the seeds into `fuzz/corpus/` (by hand: `cargo test --release --test fuzz_regressions
/// -- --ignored write_fuzz_seeds`; then `cargo fuzz cmin` keeps the corpus small).
#[test]
#[ignore]
fn write_fuzz_seeds() {
    for (target, name, bytes) in fuzz::seeds() {
        std::fs::create_dir_all(dir("corpus", target)).unwrap();
        std::fs::write(dir("corpus", target).join(format!("seed-{name}")), bytes).unwrap();
    }
}

/// A one-dimensional uint8 layout of `n` single-element inner chunks, plain `bytes` index at
/// the end (16 bytes per entry, no checksum), and the index bytes of `entries`.
fn plain_index(entries: &[(u64, u64)]) -> (zarrshard::ShardLayout, Vec<u8>) {
    let config = serde_json::json!({
        "chunk_shape": [1], "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end"});
    let layout = zarrshard::ShardLayout::from_config_json(
        &config,
        zarrshard::DataType::UInt8,
        vec![entries.len() as u64],
        zarrshard::FillValue(vec![0]),
    )
    .unwrap();
    let bytes = entries
        .iter()
        .flat_map(|(o, n)| [o.to_le_bytes(), n.to_le_bytes()])
        .flatten()
        .collect();
    (layout, bytes)
}

#[test]
fn half_empty_entry_is_refused_without_the_object_size() {
    // Found by index_parse: with the object size unknown, (0, 2^64-1) and (2^64-1, 0) passed
    // the fast validation pass although `entry_errors` (and the spec) refuse them.
    for entry in [(0, u64::MAX), (u64::MAX, 0)] {
        let (layout, bytes) = plain_index(&[entry, (u64::MAX, u64::MAX)]);
        let err = zarrshard::ShardIndex::decode(&bytes, &layout, None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "corrupt shard: inner chunk [0]: index entry (offset {}, nbytes {}) has only one field set to the empty marker",
                entry.0, entry.1
            )
        );
    }
}

#[test]
fn dead_bytes_ignores_entries_that_overflow() {
    // Found by index_parse and shard_decode_raw: `dead_bytes` on an unchecked index added
    // offset + nbytes of an entry that overflows 64 bits (a panic in debug builds). Entries
    // that fail validation now cover nothing: a 100-byte object with a 32-byte index and one
    // valid 10-byte chunk has 58 dead bytes.
    let (layout, bytes) = plain_index(&[(u64::MAX - 1, 10), (0, 10)]);
    let index = zarrshard::ShardIndex::decode_unchecked(&bytes, &layout).unwrap();
    assert_eq!(index.dead_bytes(&layout, 100), 58);
}

/// A back end that can write and tell its size (or fail to, when `.1`) but not truncate.
struct NoTruncate(zarrshard::MemoryIo, bool);

impl zarrshard::ShardIo for NoTruncate {
    fn read(&self, r: zarrshard::ByteRange) -> zarrshard::Result<Option<zarrshard::ReadOutput>> {
        self.0.read(r)
    }
    fn size(&self) -> zarrshard::Result<Option<u64>> {
        if self.1 {
            return Err(zarrshard::Error::Io {
                code: 5,
                message: "size failed".into(),
            });
        }
        self.0.size()
    }
    fn write_at(&self, offset: u64, data: &[u8]) -> zarrshard::Result<()> {
        self.0.write_at(offset, data)
    }
}

/// Write inner chunk 0 of a two-chunk shard (1 byte, then a 32-byte index) over `io`, and
/// finalize.
fn finalize_one_chunk(
    strategy: zarrshard::WriteStrategy,
    io: NoTruncate,
) -> zarrshard::Result<zarrshard::Finalized> {
    let (layout, _) = plain_index(&[(0, 0); 2]);
    let options = zarrshard::WriteOptions::default();
    let mut w = zarrshard::ShardWriter::new(std::sync::Arc::new(layout), io, strategy, options)?;
    w.write_chunk(&[0], &[5])?;
    w.finalize()
}

#[test]
fn streaming_over_a_longer_object_without_truncate_is_refused() {
    // Found by capi_sequence: a streaming (or update) finalize ignored a missing `truncate`,
    // reported success, and left the older object's tail after the new index, so the shard's
    // last bytes were not its index. Now, when `size` shows a longer object, finalize refuses.
    let streaming = zarrshard::WriteStrategy::Streaming;
    let old = NoTruncate(zarrshard::MemoryIo::from_bytes(vec![7; 200]), false);
    // One 1-byte chunk, then the 32-byte index: 33 bytes of a 200-byte object.
    assert_eq!(
        finalize_one_chunk(streaming, old).unwrap_err().to_string(),
        "operation not supported by the I/O back end: truncate (the object is 200 bytes, longer than the 33 written)"
    );
    // A new object needs no truncate.
    let new = NoTruncate(zarrshard::MemoryIo::new(), false);
    assert_eq!(
        finalize_one_chunk(streaming, new).unwrap(),
        zarrshard::Finalized::Written { size: 33 }
    );
}

#[test]
fn a_failing_size_check_fails_the_finalize() {
    // Found by capi_sequence: without `truncate`, a `size` callback that failed was taken as
    // "not longer", and a buffered finalize over a 198-byte object reported an 86-byte shard.
    use zarrshard::WriteStrategy::{Buffered, Streaming};
    for strategy in [Buffered, Streaming] {
        let io = NoTruncate(zarrshard::MemoryIo::from_bytes(vec![7; 200]), true);
        let err = finalize_one_chunk(strategy, io).unwrap_err();
        assert!(
            matches!(&err, zarrshard::Error::Io { code: 5, .. }),
            "{strategy:?}: {err}"
        );
    }
}
