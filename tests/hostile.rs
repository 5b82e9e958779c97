//! Hostile input: a corruption matrix built from valid shards of every codec (flipped bytes,
//! every truncation, forged index entries re-checksummed so they reach validation, index size
//! mismatches, decompression bombs) and adversarial metadata. Every case must end in `Ok` or
//! the documented error kind — never a panic (a panic fails the test), a hang, or an
//! allocation sized by what the input claims (a counting allocator measures the bombs).
//!
//! The figures printed (`hostile: …`) are the ones quoted in docs/reliability.md.

use serde_json::{json, Value};
use std::io::Write;
use std::sync::{Arc, Mutex};
use zarrshard::*;

#[path = "common/alloc.rs"]
mod alloc;
use alloc::{peak_during, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Measurements and limit changes must not overlap (tests run on threads).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

// `peak_during` (other tests may allocate meanwhile, which only makes the figure larger: the
// bounds below are still upper bounds).

const BYTES_LE: &str = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;

fn bytes_le() -> Value {
    serde_json::from_str(BYTES_LE).unwrap()
}

/// The inner codec chains of the matrix: (name, codecs, inner chunks carry their own checksum).
fn inner_chains() -> Vec<(&'static str, Value, bool)> {
    vec![
        ("bytes", json!([bytes_le()]), false),
        (
            "bytes-be",
            json!([{"name": "bytes", "configuration": {"endian": "big"}}]),
            false,
        ),
        (
            "transpose",
            json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, bytes_le()]),
            false,
        ),
        (
            "gzip",
            json!([bytes_le(), {"name": "gzip", "configuration": {"level": 5}}]),
            false,
        ),
        (
            "zstd",
            json!([bytes_le(), {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]),
            false,
        ),
        (
            "blosc",
            json!([bytes_le(), {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}]),
            false,
        ),
        ("crc32c", json!([bytes_le(), {"name": "crc32c"}]), true),
        (
            "nested-sharding",
            json!([{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [1, 2], "codecs": [bytes_le()],
                "index_codecs": [bytes_le(), {"name": "crc32c"}], "index_location": "start"}}]),
            false,
        ),
    ]
}

fn config(codecs: &Value, location: &str, crc: bool) -> Value {
    let index_codecs = if crc {
        json!([bytes_le(), {"name": "crc32c"}])
    } else {
        json!([bytes_le()])
    };
    json!({"chunk_shape": [2, 2], "codecs": codecs, "index_codecs": index_codecs, "index_location": location})
}

fn layout_of(config: &Value) -> Arc<ShardLayout> {
    Arc::new(
        ShardLayout::from_config_json(config, DataType::UInt16, vec![4, 4], FillValue(vec![0, 0]))
            .unwrap(),
    )
}

/// A 4×4 uint16 shard of 2×2 inner chunks: three stored (values 1..), one left as fill value.
fn original() -> Vec<u8> {
    let mut v = vec![0u8; 32];
    for (i, e) in v.chunks_exact_mut(2).enumerate() {
        let (r, c) = (i / 4, i % 4);
        let x: u16 = if r >= 2 && c >= 2 {
            0
        } else {
            1 + i as u16 * 37
        };
        e.copy_from_slice(&x.to_ne_bytes());
    }
    v
}

fn written(layout: &Arc<ShardLayout>) -> Vec<u8> {
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        layout.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    let data = original();
    let mut chunk = vec![0u8; layout.inner_byte_size()];
    for i in 0..layout.num_chunks() {
        layout.extract_chunk(i, &data, &mut chunk);
        w.write_chunk(
            &zarrshard::nd::unravel(i as u64, layout.chunks_per_shard()),
            &chunk,
        )
        .unwrap();
    }
    w.finalize().unwrap();
    io.bytes().unwrap()
}

/// Tally of one matrix: how each read path ended.
#[derive(Default, Debug)]
struct Tally {
    inputs: usize,
    ok_equal: usize,
    ok_different: usize,
    corrupt: usize,
    checksum: usize,
    /// Of the `Ok`s: reads through the back end that does not report the object's size.
    ok_without_size: usize,
}

/// Read `object` every way there is (open + each chunk, many chunks at once, the whole shard
/// in memory) and tally; any other error kind than corrupt/checksum fails the test.
fn read_every_way(layout: &Arc<ShardLayout>, object: &[u8], expected: &[u8], t: &mut Tally) {
    t.inputs += 1;
    let mut results: Vec<(bool, Result<Vec<u8>>)> = Vec::new();
    // Partial reads, object size known (memory) and unknown (size hidden).
    for hide_size in [false, true] {
        let io = MemoryIo::from_bytes(object.to_vec());
        let io: Box<dyn ShardIo> = if hide_size {
            Box::new(NoSize(io))
        } else {
            Box::new(io)
        };
        let one_by_one = ShardReader::open(layout.clone(), io).and_then(|r| {
            let mut shard = vec![0u8; 32];
            let mut chunk = vec![0u8; layout.inner_byte_size()];
            let coords: Vec<Vec<u64>> = (0..layout.num_chunks())
                .map(|i| zarrshard::nd::unravel(i as u64, layout.chunks_per_shard()))
                .collect();
            for (i, c) in coords.iter().enumerate() {
                r.read_chunk_into(c, &mut chunk)?;
                layout.place_chunk(i, &chunk, &mut shard);
            }
            // All at once (coalesced) must agree with one by one.
            let refs: Vec<&[u64]> = coords.iter().map(|c| c.as_slice()).collect();
            let mut many = vec![0u8; refs.len() * chunk.len()];
            r.read_chunks_into(&refs, &mut many)?;
            let mut shard2 = vec![0u8; 32];
            for (i, piece) in many.chunks_exact(chunk.len()).enumerate() {
                layout.place_chunk(i, piece, &mut shard2);
            }
            assert_eq!(
                shard, shard2,
                "read_chunks_into disagrees with read_chunk_into"
            );
            Ok(shard)
        });
        results.push((hide_size, one_by_one));
    }
    let mut whole = vec![0u8; 32];
    results.push((
        false,
        layout.decode_shard_into(object, &mut whole).map(|_| whole),
    ));
    for (without_size, r) in results {
        match r {
            Ok(v) => {
                *(if v == expected {
                    &mut t.ok_equal
                } else {
                    &mut t.ok_different
                }) += 1;
                t.ok_without_size += without_size as usize;
            }
            Err(Error::Corrupt { .. }) => t.corrupt += 1,
            Err(Error::ChecksumMismatch { .. }) => t.checksum += 1,
            Err(e) => panic!("unexpected error kind: {e}"),
        }
    }
}

/// A back end that never reports the object's size (as an HTTP host without Content-Range).
struct NoSize(MemoryIo);
impl ShardIo for NoSize {
    fn read(&self, range: ByteRange) -> Result<Option<ReadOutput>> {
        Ok(self.0.read(range)?.map(|o| ReadOutput {
            data: o.data,
            object_size: None,
        }))
    }
}

/// Every configuration of the matrix: (label, layout, fully checksummed).
fn matrix() -> Vec<(String, Arc<ShardLayout>, bool)> {
    let mut out = Vec::new();
    for (name, codecs, inner_crc) in inner_chains() {
        for location in ["start", "end"] {
            for crc in [false, true] {
                let label = format!("{name}/{location}/{}", if crc { "crc" } else { "nocrc" });
                out.push((
                    label,
                    layout_of(&config(&codecs, location, crc)),
                    inner_crc && crc,
                ));
            }
        }
    }
    out
}

#[test]
fn flipped_bytes_every_position_every_codec() {
    let expected = original();
    let (mut total, mut silent_checked) = (Tally::default(), 0);
    for (label, layout, checked) in matrix() {
        let object = written(&layout);
        let mut t = Tally::default();
        read_every_way(&layout, &object, &expected, &mut t);
        assert_eq!(
            t.ok_equal, 3,
            "{label}: the unmodified shard must read back"
        );
        for pos in 0..object.len() {
            for mask in [0x01u8, 0x80, 0xff] {
                let mut bad = object.clone();
                bad[pos] ^= mask;
                read_every_way(&layout, &bad, &expected, &mut t);
            }
        }
        if checked {
            // Index and every chunk carry a crc32c: a flip is caught or harmless, never silent.
            assert_eq!(
                t.ok_different, 0,
                "{label}: a flipped byte read as different data"
            );
        }
        silent_checked += if checked { t.ok_different } else { 0 };
        total.inputs += t.inputs;
        total.ok_equal += t.ok_equal;
        total.ok_different += t.ok_different;
        total.corrupt += t.corrupt;
        total.checksum += t.checksum;
    }
    assert_eq!(silent_checked, 0);
    println!(
        "hostile: flipped bytes: {} objects x 3 read paths: {} equal, {} different data (configurations without checksums), {} corrupt, {} checksum mismatch",
        total.inputs, total.ok_equal, total.ok_different, total.corrupt, total.checksum
    );
}

#[test]
fn every_truncation_every_codec() {
    let expected = original();
    let mut total = 0;
    for (label, layout, _) in matrix() {
        let object = written(&layout);
        let mut t = Tally::default();
        for len in 0..object.len() {
            read_every_way(&layout, &object[..len], &expected, &mut t);
        }
        // A truncated shard never reads as data it does not hold: with the index at the end
        // every cut loses the index; at the start every cut loses the last chunk's bytes.
        assert_eq!(
            t.ok_equal + t.ok_different,
            0,
            "{label}: a truncated object read without error ({t:?})"
        );
        total += t.inputs;
    }
    println!(
        "hostile: truncations: {total} objects (every length from 0 to full - 1), all refused"
    );
}

/// Entries that must be refused, whatever chunk they are put on (object of `size` bytes with
/// an index of `ix` bytes at `location`).
fn forged_entries(size: u64, ix: u64, at_start: bool) -> Vec<(u64, u64)> {
    let data_start = if at_start { ix } else { 0 };
    let mut v = vec![
        (size, 1),             // starts at the end
        (size - 1, 2),         // runs past the end
        (u64::MAX - 1, 2),     // overflows
        (2, u64::MAX - 1),     // overflows
        (u64::MAX, 4),         // one empty marker
        (4, u64::MAX),         // the other
        (1 << 62, 1 << 62),    // far past the end, no overflow
        (data_start, size),    // longer than the object
        (data_start, 1 << 40), // claims a terabyte
    ];
    if at_start {
        v.push((0, 8)); // inside the index
        v.push((ix - 1, 2)); // straddles the index's end
    } else {
        v.push((size - ix, 4)); // inside the index
        v.push((size - ix - 1, 2)); // straddles into the index
    }
    v
}

#[test]
fn forged_index_entries_are_refused_after_the_checksum_passes() {
    let expected = original();
    let (mut n, mut unsized_ok) = (0, 0);
    for (label, layout, _) in matrix() {
        let object = written(&layout);
        let at_start = layout.codec().index_location == IndexLocation::Start;
        let ix = layout.index_size();
        let size = object.len() as u64;
        let index_range = if at_start {
            0..ix as usize
        } else {
            (size - ix) as usize..size as usize
        };
        let index = ShardIndex::decode_unchecked(&object[index_range.clone()], &layout).unwrap();
        for i in 0..layout.num_chunks() {
            for (offset, nbytes) in forged_entries(size, ix, at_start) {
                let mut forged = index.clone();
                forged.set(i, Some(ChunkLocation { offset, nbytes }));
                let mut bad = object.clone();
                bad[index_range.clone()].copy_from_slice(&forged.encode(&layout).unwrap());
                let mut t = Tally::default();
                read_every_way(&layout, &bad, &expected, &mut t);
                // Read through every path; the size-known paths must name the entry.
                // Without the object's size, an entry that reaches past its chunk into the index
                // at the end cannot be told from a longer chunk: a nested shard (index at its
                // start, trailing bytes ignored) then decodes whatever its first bytes hold.
                // Every reader that knows the size refuses it.
                assert_eq!(
                    t.ok_equal + t.ok_different,
                    t.ok_without_size,
                    "{label}: chunk {i} ({offset}, {nbytes}) read without error"
                );
                unsized_ok += t.ok_without_size;
                // (Without the object's size, an entry reaching into an index at the end can only
                // be caught when the chunk is read: a corrupt or checksum error then.)
                let mut whole = vec![0u8; 32];
                let e = layout
                    .decode_shard_into(&bad, &mut whole)
                    .unwrap_err()
                    .to_string();
                assert!(e.contains("index entry"), "{label}: {e}");
                n += 1;
            }
        }
    }
    println!("hostile: forged index entries (valid checksum): {n} objects, all refused naming the entry when the object size is known; {unsized_ok} read without error when it is not (nested sharding, entry reaching into the index)");
}

#[test]
fn index_size_mismatch_between_metadata_and_object() {
    // Each object read with the layouts of the other configurations (a different index size,
    // location, checksum or inner codec than it was written with): Ok or corrupt/checksum only.
    let expected = original();
    let all = matrix();
    let mut t = Tally::default();
    for (_, writer_layout, _) in &all {
        let object = written(writer_layout);
        for (_, reader_layout, _) in &all {
            read_every_way(reader_layout, &object, &expected, &mut t);
        }
        // A shard of 1×1 inner chunks (16 entries, a bigger index) read with each layout too.
        for layout in [
            layout_of(
                &json!({"chunk_shape": [1, 1], "codecs": [bytes_le()], "index_codecs": [bytes_le()]}),
            ),
            layout_of(
                &json!({"chunk_shape": [4, 4], "codecs": [bytes_le()], "index_codecs": [bytes_le(), {"name": "crc32c"}]}),
            ),
        ] {
            read_every_way(&layout, &object, &expected, &mut t);
        }
    }
    println!(
        "hostile: index size / layout mismatches: {} reads ({t:?})",
        t.inputs
    );
}

/// A shard whose chunk (0, 0) holds `encoded` as its bytes, everything else empty.
fn shard_with_raw_chunk(layout: &Arc<ShardLayout>, encoded: &[u8]) -> Vec<u8> {
    let io = MemoryIo::new();
    let mut w = ShardWriter::new(
        layout.clone(),
        &io,
        WriteStrategy::Buffered,
        WriteOptions::default(),
    )
    .unwrap();
    w.write_chunk_raw(&[0, 0], encoded).unwrap();
    w.finalize().unwrap();
    io.bytes().unwrap()
}

const BOMB: usize = 256 << 20; // what each bomb expands to; the inner chunk holds 8 KiB

#[test]
fn decompression_bombs_are_capped_at_the_chunk_size() {
    let _g = serial();
    let zeros = vec![0u8; BOMB];
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        e.write_all(&zeros).unwrap();
        e.finish().unwrap()
    };
    let zs = zstd::bulk::compress(&zeros, 1).unwrap();
    let zs_stream = {
        // No content size in the frame header: the decoder must stream with a cap.
        let mut e = zstd::stream::write::Encoder::new(Vec::new(), 1).unwrap();
        e.include_contentsize(false).unwrap();
        e.write_all(&zeros).unwrap();
        e.finish().unwrap()
    };
    drop(zeros);
    // A blosc header that claims 1 GiB (a valid 8 KiB buffer with its nbytes field rewritten).
    let blosc_claim = {
        let l = layout_of(&config(&inner_chains()[5].1, "end", true));
        let obj = written(&l);
        let ix =
            ShardIndex::decode_unchecked(&obj[obj.len() - l.index_size() as usize..], &l).unwrap();
        let loc = ix.get(0).unwrap();
        let mut b = obj[loc.offset as usize..loc.end() as usize].to_vec();
        b[4..8].copy_from_slice(&(1u32 << 30).to_le_bytes());
        b
    };
    let big = 64u64; // inner chunk 64×64 uint16 = 8 KiB
    let cfg = |b2b: Value| json!({"chunk_shape": [big, big], "codecs": [bytes_le(), b2b], "index_codecs": [bytes_le(), {"name": "crc32c"}]});
    let cases: Vec<(&str, Value, &[u8])> = vec![
        (
            "gzip",
            json!({"name": "gzip", "configuration": {"level": 1}}),
            &gz,
        ),
        (
            "zstd (content size in header)",
            json!({"name": "zstd", "configuration": {"level": 1}}),
            &zs,
        ),
        (
            "zstd (streamed, no content size)",
            json!({"name": "zstd", "configuration": {"level": 1}}),
            &zs_stream,
        ),
        (
            "blosc (header claims 1 GiB)",
            json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}}),
            &blosc_claim,
        ),
    ];
    for (what, b2b, bomb) in cases {
        let layout = Arc::new(
            ShardLayout::from_config_json(
                &cfg(b2b),
                DataType::UInt16,
                vec![big * 2, big * 2],
                FillValue(vec![0, 0]),
            )
            .unwrap(),
        );
        let object = shard_with_raw_chunk(&layout, bomb);
        let (r, peak) = peak_during(|| {
            let reader = ShardReader::open(layout.clone(), MemoryIo::from_bytes(object.clone()))?;
            reader.read_chunk(&[0, 0])
        });
        let e = r.unwrap_err();
        assert!(matches!(e, Error::Corrupt { .. }), "{what}: {e}");
        // The object itself is copied once (index + chunk reads); the decoder holds at most
        // the 8 KiB chunk plus its own working state — never the 256 MiB the stream expands to.
        assert!(
            peak < object.len() * 2 + (4 << 20),
            "{what}: peak {peak} bytes for a {}-byte object",
            object.len()
        );
        println!(
            "hostile: bomb {what}: {} bytes in, refused: {e}; peak heap {peak} bytes",
            bomb.len()
        );
    }
}

#[test]
fn a_bomb_after_sharding_and_between_two_compressors_is_capped_by_the_memory_limit() {
    let _g = serial();
    // gzip over gzip: the first gzip's output has no bound in the configuration, so the
    // memory limit caps it.
    let chain = CodecChain::from_json(
        &json!([bytes_le(), {"name": "gzip", "configuration": {"level": 1}}, {"name": "gzip", "configuration": {"level": 1}}]),
        "codecs",
    )
    .unwrap();
    let repr = ChunkRepr {
        shape: vec![8],
        dtype: DataType::UInt8,
        fill_value: FillValue(vec![0]),
    };
    let inner = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        e.write_all(&vec![7u8; BOMB]).unwrap();
        e.finish().unwrap()
    };
    let outer = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::new(1));
        e.write_all(&inner).unwrap();
        e.finish().unwrap()
    };
    set_memory_limit(16 << 20);
    let (r, peak) = peak_during(|| chain.decode(&outer, &repr));
    set_memory_limit(0);
    let e = r.unwrap_err();
    assert!(e.to_string().contains("expands past"), "{e}");
    assert!(peak < 40 << 20, "peak {peak} with a 16 MiB limit");
    println!("hostile: gzip over gzip bomb ({} bytes -> 256 MiB): refused at the 16 MiB limit, peak {peak} bytes", outer.len());
}

/// Adversarial `zarr.json` documents and the error kind each must give.
#[test]
fn adversarial_metadata() {
    let base = || {
        json!({"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
                "codecs": [bytes_le()], "index_codecs": [bytes_le()]}}]})
    };
    let with = |path: &[&str], v: Value| {
        let mut m = base();
        let mut at = &mut m;
        for p in &path[..path.len() - 1] {
            at = match p.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*p],
            };
        }
        at[path[path.len() - 1]] = v;
        m
    };
    let sharding = |c: Value| {
        with(
            &["codecs"],
            json!([{"name": "sharding_indexed", "configuration": c}]),
        )
    };
    let big = u64::MAX / 2;
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "shape product overflows",
            with(&["shape"], json!([big, big])),
            "metadata",
        ),
        (
            "chunk shape product overflows",
            with(
                &["chunk_grid", "configuration", "chunk_shape"],
                json!([big, big]),
            ),
            "metadata",
        ),
        (
            "negative shape",
            with(&["shape"], json!([-1, 8])),
            "metadata",
        ),
        ("float shape", with(&["shape"], json!([8.5, 8])), "metadata"),
        (
            "shape not a list",
            with(&["shape"], json!("8,8")),
            "metadata",
        ),
        (
            "rank mismatch",
            with(&["shape"], json!([8, 8, 8])),
            "metadata",
        ),
        (
            "chunk shape 0",
            with(
                &["chunk_grid", "configuration", "chunk_shape"],
                json!([0, 8]),
            ),
            "metadata",
        ),
        (
            "unknown data type",
            with(&["data_type"], json!("uint128")),
            "metadata|codec",
        ),
        (
            "data type not a string",
            with(&["data_type"], json!(16)),
            "metadata",
        ),
        (
            "raw bits of 256 KiB per element",
            with(&["data_type"], json!("r2097152")),
            "metadata",
        ),
        (
            "fill value wrong type",
            with(&["fill_value"], json!("zero")),
            "metadata",
        ),
        (
            "fill value out of range",
            with(&["fill_value"], json!(70000)),
            "metadata",
        ),
        (
            "unknown codec",
            with(&["codecs"], json!([{"name": "lzma"}])),
            "codec",
        ),
        (
            "codec name not a string",
            with(&["codecs"], json!([{"name": 5}])),
            "metadata",
        ),
        (
            "codecs not a list",
            with(&["codecs"], json!({"name": "bytes"})),
            "metadata",
        ),
        (
            "no array->bytes codec",
            with(&["codecs"], json!([{"name": "gzip"}])),
            "metadata",
        ),
        (
            "two array->bytes codecs",
            with(&["codecs"], json!([bytes_le(), bytes_le()])),
            "metadata",
        ),
        (
            "inner chunk does not divide",
            sharding(
                json!({"chunk_shape": [3, 4], "codecs": [bytes_le()], "index_codecs": [bytes_le()]}),
            ),
            "metadata",
        ),
        (
            "inner chunk rank",
            sharding(
                json!({"chunk_shape": [4], "codecs": [bytes_le()], "index_codecs": [bytes_le()]}),
            ),
            "metadata",
        ),
        (
            "compressed index",
            sharding(
                json!({"chunk_shape": [4, 4], "codecs": [bytes_le()], "index_codecs": [bytes_le(), {"name": "gzip", "configuration": {"level": 1}}]}),
            ),
            "metadata",
        ),
        (
            "index_location wrong",
            sharding(
                json!({"chunk_shape": [4, 4], "codecs": [bytes_le()], "index_codecs": [bytes_le()], "index_location": "middle"}),
            ),
            "metadata",
        ),
        (
            "gzip level wrong type",
            with(
                &["codecs"],
                json!([bytes_le(), {"name": "gzip", "configuration": {"level": "max"}}]),
            ),
            "metadata",
        ),
        (
            "zstd level huge",
            with(
                &["codecs"],
                json!([bytes_le(), {"name": "zstd", "configuration": {"level": 1_000_000}}]),
            ),
            "metadata",
        ),
        (
            "transpose not a permutation",
            with(
                &["codecs"],
                json!([{"name": "transpose", "configuration": {"order": [0, 0]}}, bytes_le()]),
            ),
            "metadata",
        ),
        ("unknown member", with(&["surprise"], json!(1)), "metadata"),
        (
            "2^27 chunks per shard",
            {
                let mut m = with(&["shape"], json!([1u64 << 27, 1]));
                m["chunk_grid"]["configuration"]["chunk_shape"] = json!([1u64 << 27, 1]);
                m["codecs"][0]["configuration"]["chunk_shape"] = json!([1, 1]);
                m
            },
            "metadata",
        ),
    ];
    let mut n = 0;
    for (what, doc, kind) in &cases {
        let e = ArrayMetadata::from_json(doc).map(|_| ()).unwrap_err();
        let got = match e {
            Error::InvalidMetadata(_) => "metadata",
            Error::UnsupportedCodec(_) => "codec",
            ref other => panic!("{what}: unexpected error kind {other}"),
        };
        assert!(kind.split('|').any(|k| k == got), "{what}: {got} ({e})");
        n += 1;
    }
    // Deep nesting: JSON parsers limit recursion; the error is an error, not a stack overflow.
    let deep = "[".repeat(100_000) + &"]".repeat(100_000);
    assert!(ArrayMetadata::parse(&deep).is_err());
    let deep_codecs = {
        let mut c =
            json!({"chunk_shape": [8, 8], "codecs": [bytes_le()], "index_codecs": [bytes_le()]});
        for _ in 1..zarrshard::runtime::limits::MAX_SHARDING_NESTING {
            c = json!({"chunk_shape": [8, 8], "codecs": [{"name": "sharding_indexed", "configuration": c}], "index_codecs": [bytes_le()]});
        }
        sharding(c)
    };
    // Nested sharding to the documented limit is valid metadata (each level one 8×8 chunk):
    // it opens (one level more is refused: tests/metadata_limits.rs).
    ArrayMetadata::from_json(&deep_codecs).unwrap();
    n += 2;
    // 10^6 inner chunks per shard is within the limit of 2^26: accepted, and a missing shard
    // of it reads as fill value without allocating its 16 MB index.
    let million = {
        let mut m = with(&["shape"], json!([1000, 1000]));
        m["chunk_grid"]["configuration"]["chunk_shape"] = json!([1000, 1000]);
        m["codecs"][0]["configuration"]["chunk_shape"] = json!([1, 1]);
        m
    };
    let meta = ArrayMetadata::from_json(&million).unwrap();
    assert_eq!(meta.shard_layout().unwrap().num_chunks(), 1_000_000);
    n += 1;
    println!("hostile: adversarial metadata: {n} documents, each the expected error kind");
}

/// A writer of the export of `enormous_shapes_…`'s array (2^20 rows of 2^20 uint16, the
/// first 1024×1024 inner chunk all bytes 1, fill 0 elsewhere) that checks each byte and fails
/// after 32 MiB.
struct Stop {
    at: u64,
}

impl std::io::Write for Stop {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.at >= 32 << 20 {
            return Err(std::io::Error::other("enough"));
        }
        let n = buf.len().min(((32 << 20) - self.at) as usize);
        for (k, &b) in buf[..n].iter().enumerate() {
            let p = self.at + k as u64;
            let (row, col) = (p >> 21, (p & ((1 << 21) - 1)) / 2);
            assert_eq!(b, u8::from(row < 1024 && col < 1024), "byte {p}");
        }
        self.at += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn enormous_shapes_are_refused_by_the_memory_limit_before_allocating() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // A valid document: a 2^40-element uint16 array in one chunk (2 TiB decoded); its one
    // shard is stored with a single 1-element inner chunk. Exporting or reading it whole
    // would need 2 TiB: refused before allocating, naming the limit.
    let meta = json!({"zarr_format": 3, "node_type": "array", "shape": [1u64 << 20, 1u64 << 20], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1u64 << 20, 1u64 << 20]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1u64 << 10, 1u64 << 10],
            "codecs": [bytes_le(), {"name": "zstd", "configuration": {"level": 1}}], "index_codecs": [bytes_le()]}}]});
    std::fs::write(dir.path().join("zarr.json"), meta.to_string()).unwrap();
    let array = Array::open(FsStore::new(dir.path())).unwrap();
    let layout = Arc::new(array.metadata().shard_layout().unwrap());
    {
        let io = array.store().shard_io("c/0/0").unwrap();
        let mut w = ShardWriter::new(
            layout.clone(),
            io,
            WriteStrategy::Streaming,
            WriteOptions::default(),
        )
        .unwrap();
        w.write_chunk(&[0, 0], &vec![1u8; layout.inner_byte_size()])
            .unwrap();
        w.finalize().unwrap();
    }
    // Export streams it in blocks of a few rows (cutting its inner chunks rather than holding
    // 1024 rows, 2 GiB): the first 32 MiB are the stored chunk's ones and fill, in bounded
    // memory; the writer stops it there.
    let mut out = Stop { at: 0 };
    let (r, peak) = peak_during(|| array.export(&mut out));
    let e = r.unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
    assert_eq!(out.at, 32 << 20);
    assert!(peak < 64 << 20, "export peak {peak}");
    let e = array.read_shard(&[0, 0]).unwrap_err();
    assert!(matches!(e, Error::MemoryLimit { .. }), "{e}");
    // Partial reads still work: one 2 MiB inner chunk is within the limit.
    let reader = array.shard_reader(&[0, 0]).unwrap();
    assert_eq!(reader.read_chunk(&[0, 0]).unwrap(), vec![1u8; 2 << 20]);
    // Under a 1 MiB limit even that chunk is refused, and 4 MiB allows it again.
    set_memory_limit(1 << 20);
    let e = reader.read_chunk(&[0, 0]).unwrap_err();
    set_memory_limit(4 << 20);
    let again = reader.read_chunk(&[0, 0]);
    set_memory_limit(0);
    assert_eq!(
        e.to_string(),
        "memory limit: a chunk of shape [1024, 1024] uint16 needs 2097152 bytes, more than the limit of 1048576 (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)"
    );
    assert!(again.is_ok());
    assert_eq!(memory_limit(), DEFAULT_LIMIT);
    #[cfg(feature = "cli")]
    {
        // The CLI under a limit below one inner chunk: one line, exit 1, no abort, no output.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .env("ZARRSHARD_MEMORY_LIMIT", "1048576")
            .arg("export")
            .arg(dir.path())
            .arg(dir.path().join("out.raw"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.starts_with("zarrshard: memory limit: a chunk of shape [1024, 1024] uint16 needs 2097152 bytes, more than the limit of 1048576"), "{stderr}");
        assert!(!dir.path().join("out.raw").exists());
        // The same with ZARRSHARD_MEMORY_LIMIT set lower: the limit quoted is the one set.
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .env("ZARRSHARD_MEMORY_LIMIT", "1000")
            .arg("verify")
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("more than the limit of 1000 "),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

const DEFAULT_LIMIT: u64 = 4 << 30;

/// Through the C ABI, a host whose callbacks cannot tell the object's size (only `read`): an
/// index entry claiming 1 TiB used to size the read buffer (an allocation failure aborts the
/// host); now the read is held to the memory limit first.
#[test]
fn c_host_without_size_and_a_terabyte_entry() {
    use std::ffi::c_void;
    use zarrshard::ffi::codec::*;
    use zarrshard::ffi::io::*;
    use zarrshard::ffi::shard::*;
    use zarrshard::ffi::status::shard_status::*;

    unsafe extern "C" fn read(
        ud: *mut c_void,
        offset: u64,
        len: usize,
        buf: *mut u8,
        got: *mut usize,
    ) -> i32 {
        let d = unsafe { &*(ud as *const Vec<u8>) };
        let start = (offset as usize).min(d.len());
        let n = len.min(d.len() - start);
        unsafe { std::ptr::copy_nonoverlapping(d[start..].as_ptr(), buf, n) };
        unsafe { *got = n };
        0
    }
    let cfg = json!({"chunk_shape": [2, 2], "codecs": [bytes_le()], "index_codecs": [bytes_le()], "index_location": "start"});
    let layout = layout_of(&cfg);
    let mut object = written(&layout);
    let mut index = ShardIndex::decode_unchecked(&object[..64], &layout).unwrap();
    index.set(
        0,
        Some(ChunkLocation {
            offset: 64,
            nbytes: 1 << 40,
        }),
    );
    object[..64].copy_from_slice(&index.encode(&layout).unwrap());
    let text = cfg.to_string();
    let mut codec = std::ptr::null_mut();
    let st = unsafe {
        shard_codec_from_config(
            text.as_ptr().cast(),
            text.len(),
            c"uint16".as_ptr(),
            6,
            [4u64, 4].as_ptr(),
            2,
            c"0".as_ptr(),
            1,
            &mut codec,
        )
    };
    assert_eq!(st, SHARD_OK);
    let io = shard_io_callbacks {
        version: SHARD_IO_VERSION,
        userdata: &object as *const Vec<u8> as *mut c_void,
        read: Some(read),
        read_suffix: None,
        size: None,
        write: None,
        truncate: None,
        remove: None,
        destroy: None,
        read_vectored: None,
        create_new: None,
        write_new: None,
        commit_new: None,
        discard_new: None,
    };
    let mut h = std::ptr::null_mut();
    assert_eq!(
        unsafe { shard_open(codec, &io, shard_mode::SHARD_MODE_READ as u32, &mut h) },
        SHARD_OK
    );
    let mut buf = [0u8; 8];
    let st = unsafe { shard_read_chunk(h, [0u64, 0].as_ptr(), 2, buf.as_mut_ptr(), 8) };
    assert_eq!(st, SHARD_ERR_INVALID_ARGUMENT);
    // The other chunks still read.
    assert_eq!(
        unsafe { shard_read_chunk(h, [0u64, 1].as_ptr(), 2, buf.as_mut_ptr(), 8) },
        SHARD_OK
    );
    unsafe { shard_close(h) };
    unsafe { shard_codec_free(codec) };
}
