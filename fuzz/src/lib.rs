//! The bodies of the fuzz targets, kept apart from libFuzzer so the normal test suite
//! (`tests/fuzz_regressions.rs`) replays the corpus and every saved finding through the same
//! code on the stable toolchain. Each function takes arbitrary bytes and panics only on a bug:
//! a crash, a broken invariant, or a status the documentation does not list.

use serde_json::{json, Value};
use std::sync::Arc;
use zarrshard::{
    read_whole_shard, Array, ByteRange, DataType, FillValue, MemoryIo, ReadOutput, ShardIndex,
    ShardIo, ShardLayout, ShardReader, Store,
};

#[path = "capi.rs"]
mod capi;
pub use capi::capi_sequence;
use capi::CONFIG_COUNT;

#[path = "listing.rs"]
mod listing;
pub use listing::{listing_seeds, store_listing};

/// A fuzz target's body: arbitrary bytes in, a panic only on a bug.
pub type Target = fn(&[u8]);

/// The targets, by name: what `fuzz/corpus/<name>/` and `fuzz/regressions/<name>/` feed.
pub const TARGETS: [(&str, Target); 6] = [
    ("index_parse", index_parse),
    ("shard_decode_raw", shard_decode_raw),
    ("shard_decode_codecs", shard_decode_codecs),
    ("metadata_parse", metadata_parse),
    ("capi_sequence", capi_sequence),
    ("store_listing", store_listing),
];

/// A `bytes` codec.
fn bytes(endian: &str) -> Value {
    json!({"name": "bytes", "configuration": {"endian": endian}})
}

/// A `sharding_indexed` configuration.
fn sharding(chunk_shape: &[u64], codecs: Value, index_codecs: Value, at_end: bool) -> Value {
    json!({
        "chunk_shape": chunk_shape,
        "codecs": codecs,
        "index_codecs": index_codecs,
        "index_location": if at_end { "end" } else { "start" },
    })
}

/// A layout from a configuration that is valid by construction.
fn layout(config: &Value, dtype: DataType, shard: &[u64], fill: Value) -> ShardLayout {
    let fill = FillValue::parse(&fill, &dtype).expect("valid fill value");
    ShardLayout::from_config_json(config, dtype, shard.to_vec(), fill).expect("valid layout")
}

/// The fixed layouts `shard_decode_raw` reads arbitrary objects with: both index locations,
/// both byte orders, with and without crc32c, a transpose, three ranks.
pub fn raw_layouts() -> Vec<ShardLayout> {
    let crc = json!({"name": "crc32c"});
    vec![
        layout(
            &sharding(
                &[4, 4],
                json!([bytes("little")]),
                json!([bytes("little"), crc]),
                true,
            ),
            DataType::UInt16,
            &[8, 8],
            json!(0),
        ),
        layout(
            &sharding(
                &[4],
                json!([bytes("little")]),
                json!([bytes("little")]),
                false,
            ),
            DataType::UInt8,
            &[16],
            json!(3),
        ),
        layout(
            &sharding(
                &[2, 2],
                json!([bytes("big")]),
                json!([bytes("big"), crc]),
                false,
            ),
            DataType::Float32,
            &[4, 4],
            json!("NaN"),
        ),
        layout(
            &sharding(
                &[1, 3, 2],
                json!([{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, bytes("little")]),
                json!([bytes("little")]),
                true,
            ),
            DataType::Int64,
            &[2, 3, 4],
            json!(-1),
        ),
        layout(
            &sharding(
                &[2, 2],
                json!([bytes("little"), crc]),
                json!([bytes("little"), crc]),
                true,
            ),
            DataType::UInt8,
            &[4, 4],
            json!(0),
        ),
    ]
}

/// One layout per codec chain for `shard_decode_codecs`: uint16 shards of 8×8, inner chunks
/// of 4×4, a crc32c index at the end.
pub fn codec_layouts() -> Vec<ShardLayout> {
    let blosc = |cname: &str, shuffle: &str| {
        json!({"name": "blosc", "configuration": {
            "cname": cname, "clevel": 3, "shuffle": shuffle, "typesize": 2, "blocksize": 0}})
    };
    let chains = [
        json!([bytes("little"), {"name": "gzip", "configuration": {"level": 1}}]),
        json!([bytes("little"), {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
        json!([bytes("big"), {"name": "zstd", "configuration": {"level": 3, "checksum": true}}]),
        json!([bytes("little"), blosc("lz4", "shuffle")]),
        json!([bytes("little"), blosc("zstd", "bitshuffle")]),
        json!([bytes("little"), blosc("blosclz", "noshuffle")]),
        json!([{"name": "transpose", "configuration": {"order": [1, 0]}}, bytes("big")]),
        json!([bytes("little"), {"name": "crc32c"}]),
        json!([{"name": "sharding_indexed", "configuration": sharding(
            &[2, 2],
            json!([bytes("little"), {"name": "gzip", "configuration": {"level": 1}}]),
            json!([bytes("little"), {"name": "crc32c"}]),
            false,
        )}]),
        json!([bytes("little"), {"name": "gzip", "configuration": {"level": 1}}, {"name": "crc32c"}]),
    ];
    let index = json!([bytes("little"), {"name": "crc32c"}]);
    chains
        .into_iter()
        .map(|codecs| {
            layout(
                &sharding(&[4, 4], codecs, index.clone(), true),
                DataType::UInt16,
                &[8, 8],
                json!(0),
            )
        })
        .collect()
}

/// A back end that hides the object size, as an HTTP store without `Content-Range` does: the
/// index is then checked against nothing and each chunk read against its own length.
struct NoSizeIo(MemoryIo);

impl ShardIo for NoSizeIo {
    fn read(&self, range: ByteRange) -> zarrshard::Result<Option<ReadOutput>> {
        Ok(self.0.read(range)?.map(|o| ReadOutput {
            object_size: None,
            ..o
        }))
    }
}

/// Every coordinate of a grid, C order.
fn grid(shape: &[u64]) -> Vec<Vec<u64>> {
    zarrshard::nd::c_order(shape).collect()
}

/// Read everything a reader offers, one chunk at a time and all at once, and check the two
/// agree; then decode the object whole and check it agrees too.
fn read_everything<I: ShardIo>(reader: &ShardReader<I>, object: &[u8]) {
    let layout = reader.layout().clone();
    let each = layout.inner_byte_size();
    let coords = grid(layout.chunks_per_shard());
    let mut one_by_one = Vec::with_capacity(each * coords.len());
    let mut all_ok = true;
    for c in &coords {
        let _ = reader.read_chunk_raw(c);
        match reader.read_chunk(c) {
            Ok(chunk) => one_by_one.extend(chunk),
            Err(_) => all_ok = false,
        }
    }
    let refs: Vec<&[u64]> = coords.iter().map(Vec::as_slice).collect();
    let mut together = vec![0u8; each * coords.len()];
    let batch = reader.read_chunks_into(&refs, &mut together);
    if all_ok {
        // Both paths read the same bytes and decode them the same way.
        batch.expect("every chunk decodes alone, so together too");
        assert_eq!(
            one_by_one, together,
            "read_chunks_into differs from read_chunk"
        );
    }
    // Without the object size an entry pointing into an index at the end cannot be told from
    // a chunk (documented), so only a reader that knew the size must agree with the whole.
    if all_ok && reader.object_size().is_some() {
        let mut whole = vec![0u8; layout.shard_repr().byte_size().unwrap() as usize];
        layout
            .decode_shard_into(object, &mut whole)
            .expect("every chunk decodes, so the whole shard too");
        for (i, c) in coords.iter().enumerate() {
            let mut chunk = vec![0u8; each];
            layout.extract_chunk(i, &whole, &mut chunk);
            assert_eq!(chunk, one_by_one[i * each..(i + 1) * each], "chunk {c:?}");
        }
    }
}

/// Decode an object with `layout` through every entry point: the reader (with and without the
/// object size), the whole-shard decoder, the index checks `verify` uses.
fn decode_object(layout: ShardLayout, object: &[u8], hide_size: bool) {
    let layout = Arc::new(layout);
    let io = MemoryIo::from_bytes(object.to_vec());
    if hide_size {
        if let Ok(reader) = ShardReader::open(layout.clone(), NoSizeIo(io)) {
            read_everything(&reader, object);
        }
    } else if let Ok(reader) = ShardReader::open(layout.clone(), io) {
        read_everything(&reader, object);
    }
    let _ = read_whole_shard(&layout, &MemoryIo::from_bytes(object.to_vec()));
    if let Ok(index) = layout.index_bytes(object) {
        if let Ok(index) = ShardIndex::decode_unchecked(index, &layout) {
            let _ = index.entry_errors(&layout, Some(object.len() as u64));
            let _ = index.dead_bytes(&layout, object.len() as u64);
        }
    }
}

/// `ShardIndex` decode and validation over layouts the input chooses (rank 1–3, 1–5 chunks
/// per dimension, either location, either byte order, with or without crc32c) and an object
/// size it chooses. Checks that the fast validation agrees with the per-entry check, that a
/// valid index only points inside the data region, and that encode/decode round-trips.
pub fn index_parse(data: &[u8]) {
    one_thread();
    let mut input = Cursor(data);
    let flags = input.u8();
    let rank = 1 + input.u8() as usize % 3;
    let shape: Vec<u64> = (0..rank).map(|_| 1 + input.u8() as u64 % 5).collect();
    let at_end = flags & 1 != 0;
    let endian = if flags & 2 != 0 { "big" } else { "little" };
    let index_codecs = if flags & 4 != 0 {
        json!([bytes(endian), {"name": "crc32c"}])
    } else {
        json!([bytes(endian)])
    };
    let config = sharding(
        &vec![1; rank],
        json!([bytes("little")]),
        index_codecs,
        at_end,
    );
    let layout = layout(&config, DataType::UInt8, &shape, json!(0));
    let size_bits = input.u64();
    let index_size = layout.index_size();
    // Mostly plausible sizes (a little past the index), sometimes any 64-bit value or unknown.
    let object_size = match flags >> 6 {
        0 => None,
        1 => Some(size_bits),
        _ => Some(index_size + size_bits % 4096),
    };
    let rest = input.rest();
    if rest.len() as u64 != index_size {
        assert!(ShardIndex::decode(rest, &layout, object_size).is_err());
    }
    let mut raw = rest.to_vec();
    raw.resize(index_size as usize, 0xff);
    if flags & 8 != 0 && flags & 4 != 0 {
        // Make the checksum right, so the entries themselves get checked.
        let n = raw.len() - 4;
        let sum = crc32c::crc32c(&raw[..n]);
        raw[n..].copy_from_slice(&sum.to_le_bytes());
    }
    let Ok(index) = ShardIndex::decode_unchecked(&raw, &layout) else {
        assert!(ShardIndex::decode(&raw, &layout, object_size).is_err());
        return;
    };
    let valid = index.validate(&layout, object_size).is_ok();
    let errors = index.entry_errors(&layout, object_size);
    assert_eq!(
        valid,
        errors.is_empty(),
        "validate and entry_errors disagree"
    );
    assert_eq!(
        valid,
        ShardIndex::decode(&raw, &layout, object_size).is_ok()
    );
    if valid {
        let start = if at_end { 0 } else { index_size };
        for (_, loc) in index.stored() {
            assert!(loc.offset >= start, "entry overlaps an index at the start");
            assert!(loc.offset.checked_add(loc.nbytes).is_some());
            if let Some(size) = object_size {
                let end = if at_end {
                    size.saturating_sub(index_size)
                } else {
                    size
                };
                assert!(loc.end() <= end, "valid entry {loc:?} past {end}");
            }
        }
    }
    if let Some(size) = object_size {
        assert!(index.dead_bytes(&layout, size) <= size);
    }
    let encoded = index.encode(&layout).expect("an index encodes");
    assert_eq!(encoded.len() as u64, index_size);
    let again = ShardIndex::decode_unchecked(&encoded, &layout).expect("own encoding decodes");
    assert_eq!(again, index, "index encode/decode round trip");
}

/// `ShardReader` over arbitrary bytes for the fixed layouts of [`raw_layouts`]: the first
/// byte picks the layout and whether the back end reports the object size.
pub fn shard_decode_raw(data: &[u8]) {
    one_thread();
    let mut input = Cursor(data);
    let pick = input.u8();
    let mut layouts = raw_layouts();
    let layout = layouts.swap_remove(pick as usize % layouts.len());
    decode_object(layout, input.rest(), pick & 0x80 != 0);
}

/// One codec chain per layout of [`codec_layouts`], picked by the first byte. With the second
/// byte odd, the rest is array data: it is encoded into a shard and must decode back equal
/// (one chunk at a time and whole). Otherwise the rest is a shard object to decode.
pub fn shard_decode_codecs(data: &[u8]) {
    one_thread();
    let mut input = Cursor(data);
    let pick = input.u8();
    let mode = input.u8();
    let mut layouts = codec_layouts();
    let layout = layouts.swap_remove(pick as usize % layouts.len());
    if mode & 1 == 0 {
        return decode_object(layout, input.rest(), mode & 2 != 0);
    }
    let size = layout.shard_repr().byte_size().unwrap() as usize;
    let rest = input.rest();
    let shard: Vec<u8> = if rest.is_empty() {
        vec![0; size]
    } else {
        rest.iter().copied().cycle().take(size).collect()
    };
    let object = layout
        .encode_shard(&shard)
        .expect("encoding valid data succeeds");
    let mut whole = vec![0u8; size];
    layout
        .decode_shard_into(&object, &mut whole)
        .expect("own encoding decodes");
    assert_eq!(whole, shard, "whole-shard round trip");
    let layout = Arc::new(layout);
    let reader = ShardReader::open(layout.clone(), MemoryIo::from_bytes(object.clone()))
        .expect("own encoding opens");
    for (i, c) in grid(layout.chunks_per_shard()).iter().enumerate() {
        let mut want = vec![0u8; layout.inner_byte_size()];
        layout.extract_chunk(i, &shard, &mut want);
        assert_eq!(reader.read_chunk(c).expect("own chunk decodes"), want);
    }
}

/// Metadata text as `zarr.json` (Zarr v3), `.zarray` (v2 sharding prototype), a v3-draft
/// `meta/root/a.array.json`, or through `shard_codec_from_zarr_json`; the first byte picks.
/// An array that opens must bind its shard layout, name its shard keys, survive a JSON round
/// trip, and read a missing shard as its fill value when the inner chunk is small.
pub fn metadata_parse(data: &[u8]) {
    one_thread();
    let mut input = Cursor(data);
    let pick = input.u8();
    let text = input.rest();
    let store = MemStore::default();
    let opened = match pick % 4 {
        0 => {
            store.put("zarr.json", text);
            Array::open(store)
        }
        1 => {
            store.put(".zarray", text);
            Array::open(store)
        }
        2 => {
            store.put("meta/root/a.array.json", text);
            Array::open_v3_draft(store, "a")
        }
        _ => return capi::codec_from_zarr_json(text),
    };
    let Ok(array) = opened else { return };
    let meta = array.metadata();
    let rank = meta.shape.len();
    let _ = array.shard_key(&vec![0; rank]);
    let again = zarrshard::ArrayMetadata::from_json(&meta.to_json())
        .expect("metadata we print parses again");
    assert_eq!(&again, meta, "metadata JSON round trip");
    if let Some(layout) = meta.shard_layout() {
        if layout.inner_byte_size() <= 1 << 16 && !meta.shape.contains(&0) {
            if let Ok(reader) = array.shard_reader(&vec![0; rank]) {
                let chunk = reader
                    .read_chunk(&vec![0; layout.chunks_per_shard().len()])
                    .expect("a missing shard reads as fill");
                let mut fill = vec![0u8; chunk.len()];
                layout.inner_repr().fill_value.fill(&mut fill);
                assert_eq!(chunk, fill);
            }
        }
    }
}

/// Decode on the calling thread: a crash then has one stack, and runs are reproducible.
pub(crate) fn one_thread() {
    let _ = zarrshard::set_threads(1);
}

/// A store in memory, for metadata that never reaches a disk.
#[derive(Default)]
struct MemStore(std::sync::Mutex<std::collections::HashMap<String, Vec<u8>>>);

impl MemStore {
    fn put(&self, key: &str, value: &[u8]) {
        self.0.lock().unwrap().insert(key.into(), value.to_vec());
    }
}

impl Store for MemStore {
    fn shard_io(&self, key: &str) -> zarrshard::Result<Box<dyn ShardIo>> {
        Ok(Box::new(match self.0.lock().unwrap().get(key) {
            Some(v) => MemoryIo::from_bytes(v.clone()),
            None => MemoryIo::new(),
        }))
    }
    fn set(&self, key: &str, value: &[u8]) -> zarrshard::Result<()> {
        self.put(key, value);
        Ok(())
    }
}

/// Reads the fuzzer's bytes as small numbers; past the end everything is 0.
pub(crate) struct Cursor<'a>(pub(crate) &'a [u8]);

impl<'a> Cursor<'a> {
    pub(crate) fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|_| self.u8()))
    }
    /// A number below `n` (> 0).
    pub(crate) fn u64_below(&mut self, n: u64) -> u64 {
        self.u64() % n
    }
    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Seed inputs, as `(target, name, bytes)`: valid shards for every layout and codec chain,
/// valid indexes, metadata in the three formats, and C API sequences that write, update and
/// read back. `tests/fuzz_regressions.rs` writes them into `fuzz/corpus/` (an ignored test,
/// run by hand) and checks on every run that each decodes.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for (k, layout) in raw_layouts().into_iter().enumerate() {
        let size = layout.shard_repr().byte_size().unwrap() as usize;
        let object = layout.encode_shard(&seed_data(size)).unwrap();
        out.push((
            "shard_decode_raw",
            format!("layout{k}"),
            [&[k as u8][..], &object].concat(),
        ));
        let hidden = [&[k as u8 | 0x80][..], &object].concat();
        out.push(("shard_decode_raw", format!("layout{k}-nosize"), hidden));
    }
    for (k, layout) in codec_layouts().into_iter().enumerate() {
        let size = layout.shard_repr().byte_size().unwrap() as usize;
        let object = layout.encode_shard(&seed_data(size)).unwrap();
        out.push((
            "shard_decode_codecs",
            format!("chain{k}"),
            [&[k as u8, 0][..], &object].concat(),
        ));
        out.push((
            "shard_decode_codecs",
            format!("chain{k}-roundtrip"),
            vec![k as u8, 1, 1, 2, 3, 250],
        ));
    }
    // index_parse: rank 2, 3×2 chunks, crc32c at the end, a plausible size; the entries of a
    // real shard of that layout.
    for (flags, name) in [
        (0b1000_1101u8, "end-crc"),
        (0b1000_0010, "start-big"),
        (0b0100_0001, "end-any-size"),
    ] {
        let at_end = flags & 1 != 0;
        let endian = if flags & 2 != 0 { "big" } else { "little" };
        let index_codecs = if flags & 4 != 0 {
            json!([bytes(endian), {"name": "crc32c"}])
        } else {
            json!([bytes(endian)])
        };
        let config = sharding(&[1, 1], json!([bytes("little")]), index_codecs, at_end);
        let layout = layout(&config, DataType::UInt8, &[3, 2], json!(0));
        let object = layout.encode_shard(&[0, 1, 2, 0, 4, 5]).unwrap();
        let index = layout.index_bytes(&object).unwrap();
        let extra = object.len() as u64 - layout.index_size();
        let mut seed = vec![flags, 1, 2, 1];
        seed.extend_from_slice(&extra.to_le_bytes());
        seed.extend_from_slice(index);
        out.push(("index_parse", name.to_string(), seed));
    }
    let sharded = json!({
        "zarr_format": 3, "node_type": "array", "shape": [16, 12], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 3,
        "codecs": [{"name": "sharding_indexed", "configuration": sharding(
            &[4, 2], json!([bytes("little"), {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
            json!([bytes("little"), {"name": "crc32c"}]), true)}],
        "attributes": {"a": [1, 2.5, "x"]}, "dimension_names": ["y", null]
    });
    let v2 = json!({
        "zarr_format": 2, "shape": [20, 20], "chunks": [5, 5], "shards": [2, 2],
        "shard_format": "indexed", "dtype": "<u2", "compressor": {"id": "zlib", "level": 1},
        "fill_value": 0, "order": "C", "filters": null, "dimension_separator": "."
    });
    let draft = json!({
        "shape": [8], "data_type": "<f8", "chunk_grid": {"type": "regular", "chunk_shape": [4], "separator": "/"},
        "chunk_memory_layout": "C", "fill_value": "NaN", "extensions": [], "attributes": {},
        "compressor": null,
        "storage_transformers": [{"extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
            "type": "indexed", "configuration": {"chunks_per_shard": [2]}}]
    });
    for (k, (name, meta)) in [
        ("zarr-json", &sharded),
        ("zarray", &v2),
        ("draft", &draft),
        ("capi", &sharded),
    ]
    .into_iter()
    .enumerate()
    {
        let text = serde_json::to_vec_pretty(meta).unwrap();
        out.push((
            "metadata_parse",
            name.to_string(),
            [&[k as u8][..], &text].concat(),
        ));
    }
    out.extend(capi_seeds());
    out.extend(listing_seeds());
    out
}

/// The `capi_sequence` seeds: open buffered (0 1 0 2), write three chunks (5 …), finalize
/// (8 1), open for reading (0 0 0 2), read, read many, read raw, info; then update in place and
/// read; and a streaming session whose `write` callback fails.
pub fn capi_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for cfg in 0..CONFIG_COUNT as u8 {
        let write = |c: u8, p: u8| [5, 1, c, 0, p, 1];
        let mut seq = vec![cfg, 0, 1, 0, 2];
        seq.extend(write(0, 9));
        seq.extend(write(1, 0));
        seq.extend(write(3, 200));
        seq.extend([
            8, 1, 0, 0, 0, 2, 1, 1, 0, 0, 1, 2, 3, 1, 0, 0, 1, 1, 1, 0, 8, 3, 1, 0, 0, 1, 4, 1, 1,
            0,
        ]);
        seq.extend([0, 4, 0, 2, 7, 1, 0, 0]);
        seq.extend(write(1, 77));
        seq.extend([8, 1, 0, 0, 0, 2, 2, 3, 1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0]);
        out.push((
            "capi_sequence",
            format!("config{cfg}-write-update-read"),
            seq.clone(),
        ));
        // The same, streaming, with a write callback failing at the second callback.
        let mut faulty = vec![cfg, 0, 2, 0, 2, 10, 1];
        faulty.extend(write(0, 9));
        faulty.extend(write(2, 5));
        faulty.extend([8, 1, 9, 0, 0, 0, 2, 1, 1, 0, 0]);
        out.push((
            "capi_sequence",
            format!("config{cfg}-streaming-fault"),
            faulty,
        ));
        // Buffered writes as new objects (a version-3 table with the four callbacks): one
        // committed, then a rewrite whose create_new, write_new or commit_new fails, after
        // which the old shard must read back unchanged; and a table missing commit_new.
        for fail_at in 0..3u8 {
            let mut seq = vec![cfg, 0, 1, 0, 2 | 128, 0];
            seq.extend(write(0, 9));
            seq.extend(write(1, 200));
            seq.extend([8, 1, 0, 1, 0, 2 | 128, 0]);
            seq.extend(write(0, 77));
            seq.extend([10, fail_at, 8, 1, 0, 0, 0, 2]);
            seq.extend([1, 1, 0, 0, 1, 1, 1, 1, 0, 1, 2, 2, 0, 0, 1, 1, 0, 0, 1, 0]);
            out.push((
                "capi_sequence",
                format!("config{cfg}-new-object-fails-at-{}", fail_at + 1),
                seq,
            ));
        }
        out.push((
            "capi_sequence",
            format!("config{cfg}-new-object-table-partial"),
            vec![cfg, 0, 1, 0, 2 | 128, 4 | 2, 5, 1, 0, 0, 9, 1, 8, 1],
        ));
    }
    out
}

/// The array data of the shard seeds: `n` bytes, no inner chunk equal to the fill value.
pub fn seed_data(n: usize) -> Vec<u8> {
    (0..n).map(|k| (k * 7 % 251) as u8 + 1).collect()
}
