//! The specification's own examples, with the expected bytes computed by hand in the test
//! (never copied from our own output).

use serde_json::json;
use zarrshard::*;

fn layout(
    config: serde_json::Value,
    dtype: &str,
    shard: &[u64],
    fill: serde_json::Value,
) -> ShardLayout {
    let dtype = DataType::parse(dtype).unwrap();
    let fill = FillValue::parse(&fill, &dtype).unwrap();
    ShardLayout::from_config_json(&config, dtype, shard.to_vec(), fill).unwrap()
}

fn spec_config(location: &str) -> serde_json::Value {
    json!({
        "chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": location
    })
}

fn le(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn crc32c_check_value() {
    // The CRC-32C check value of "123456789" is 0xE3069283 (RFC 3720, appendix B.4).
    let chain =
        CodecChain::from_json(&json!([{"name": "bytes"}, {"name": "crc32c"}]), "codecs").unwrap();
    let repr = ChunkRepr {
        shape: vec![9],
        dtype: DataType::UInt8,
        fill_value: FillValue(vec![0]),
    };
    let encoded = chain.encode(b"123456789", &repr).unwrap();
    assert_eq!(&encoded[9..], &0xE306_9283u32.to_le_bytes());
    assert_eq!(chain.decode(&encoded, &repr).unwrap(), b"123456789");
}

#[test]
fn spec_index_example_is_68_bytes() {
    // Shard [64, 64], inner [32, 32], bytes + crc32c: 16 * 4 + 4 = 68 bytes.
    let l = layout(spec_config("end"), "uint16", &[64, 64], json!(0));
    assert_eq!(l.chunks_per_shard(), &[2, 2]);
    assert_eq!(l.index_size(), 68);

    // Chunk (0,0) at 0 (2048 bytes), (0,1) empty, (1,0) empty, (1,1) at 2048.
    let mut ix = ShardIndex::new_empty(4);
    ix.set(
        0,
        Some(ChunkLocation {
            offset: 0,
            nbytes: 2048,
        }),
    );
    ix.set(
        3,
        Some(ChunkLocation {
            offset: 2048,
            nbytes: 2048,
        }),
    );
    let body = le(&[0, 2048, u64::MAX, u64::MAX, u64::MAX, u64::MAX, 2048, 2048]);
    let mut expected = body.clone();
    // CRC-32C of the 64 index bytes, from the crc32c crate (independent of our codec).
    expected.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    assert_eq!(ix.encode(&l).unwrap(), expected);
    let decoded = ShardIndex::decode(&expected, &l, Some(4096 + 68)).unwrap();
    assert_eq!(decoded, ix);
}

#[test]
fn hand_built_shard_decodes_both_index_locations() {
    // uint16 shard [64, 64] of inner [32, 32]; chunk (0,1) holds 7s, chunk (1,0) holds its
    // row-major element number, the rest is the fill value 5.
    for location in ["end", "start"] {
        let l = layout(spec_config(location), "uint16", &[64, 64], json!(5));
        let chunk_a: Vec<u8> = std::iter::repeat_n(7u16, 1024)
            .flat_map(u16::to_le_bytes)
            .collect();
        let chunk_b: Vec<u8> = (0..1024u16).flat_map(u16::to_le_bytes).collect();
        let base = if location == "start" { 68 } else { 0 };
        let body = le(&[
            u64::MAX,
            u64::MAX,
            base,
            2048,
            base + 2048,
            2048,
            u64::MAX,
            u64::MAX,
        ]);
        let mut index = body.clone();
        index.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
        let object = if location == "start" {
            [index, chunk_a, chunk_b].concat()
        } else {
            [chunk_a, chunk_b, index].concat()
        };
        let mut shard = vec![0u8; 64 * 64 * 2];
        l.decode_shard_into(&object, &mut shard).unwrap();
        let at = |r: usize, c: usize| {
            u16::from_ne_bytes([shard[(r * 64 + c) * 2], shard[(r * 64 + c) * 2 + 1]])
        };
        assert_eq!(at(0, 0), 5);
        assert_eq!(at(31, 31), 5);
        assert_eq!(at(0, 32), 7);
        assert_eq!(at(31, 63), 7);
        assert_eq!(at(32, 0), 0);
        assert_eq!(at(33, 2), 34);
        assert_eq!(at(63, 31), 1023);
        assert_eq!(at(63, 63), 5);

        // Partial reads through the reader: index read, then one chunk.
        let io = CountingIo::new(MemoryIo::from_bytes(object.clone()));
        let reader = ShardReader::open(std::sync::Arc::new(l.clone()), &io).unwrap();
        assert_eq!((io.reads(), io.bytes_read()), (1, 68));
        let c = reader.read_chunk(&[1, 0]).unwrap();
        assert_eq!(u16::from_ne_bytes([c[6], c[7]]), 3);
        assert_eq!((io.reads(), io.bytes_read()), (2, 68 + 2048));
        // An empty chunk costs no read at all.
        assert_eq!(
            reader.read_chunk(&[0, 0]).unwrap(),
            5u16.to_ne_bytes().repeat(1024)
        );
        assert_eq!(io.reads(), 2);
    }
}

#[test]
fn big_endian_and_transpose_inner_codecs() {
    // Inner chunk [2, 3] of uint16 stored big-endian after a transpose [1, 0]:
    // decoded [[1,2,3],[4,5,6]] is stored as [[1,4],[2,5],[3,6]] big-endian.
    let config = json!({
        "chunk_shape": [2, 3],
        "codecs": [{"name": "transpose", "configuration": {"order": [1, 0]}},
                   {"name": "bytes", "configuration": {"endian": "big"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
    });
    let l = layout(config, "uint16", &[2, 3], json!(0));
    assert_eq!(l.index_size(), 16);
    let chunk: Vec<u8> = [1u16, 4, 2, 5, 3, 6]
        .iter()
        .flat_map(|v| v.to_be_bytes())
        .collect();
    let object = [chunk, le(&[0, 12])].concat();
    let mut shard = vec![0u8; 12];
    l.decode_shard_into(&object, &mut shard).unwrap();
    let expected: Vec<u8> = (1u16..=6).flat_map(u16::to_ne_bytes).collect();
    assert_eq!(shard, expected);
    // And encoding gives back the same object.
    assert_eq!(l.encode_shard(&expected).unwrap(), object);
}

#[test]
fn missing_object_reads_as_fill() {
    let l = std::sync::Arc::new(layout(spec_config("end"), "uint16", &[64, 64], json!(9)));
    let io = CountingIo::new(MemoryIo::new());
    let reader = ShardReader::open(l, &io).unwrap();
    assert!(reader.index().is_none());
    assert_eq!(
        reader.read_chunk(&[1, 1]).unwrap(),
        9u16.to_ne_bytes().repeat(1024)
    );
    assert_eq!(io.reads(), 1);
}

#[test]
fn many_chunks_coalesce_into_few_reads() {
    // 1-D shard of 8 uncompressed 4-byte chunks, index at the end (8 * 16 + 4 bytes).
    let config = json!({"chunk_shape": [4], "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]});
    let l = std::sync::Arc::new(
        ShardLayout::from_config_json(&config, DataType::UInt8, vec![32], FillValue(vec![0]))
            .unwrap(),
    );
    let data: Vec<u8> = (1..=32).collect();
    let io = CountingIo::new(MemoryIo::from_bytes(l.encode_shard(&data).unwrap()));
    let reader = ShardReader::open(l.clone(), &io).unwrap();
    let read = |coords: &[u64], gap: u64| {
        reader.set_coalesce_gap(gap);
        io.reset();
        let list: Vec<[u64; 1]> = coords.iter().map(|&c| [c]).collect();
        let refs: Vec<&[u64]> = list.iter().map(|c| &c[..]).collect();
        let mut out = vec![0u8; 4 * coords.len()];
        reader.read_chunks_into(&refs, &mut out).unwrap();
        let expected: Vec<u8> = coords
            .iter()
            .flat_map(|&c| data[4 * c as usize..4 * c as usize + 4].to_vec())
            .collect();
        assert_eq!(out, expected);
        (io.reads(), io.bytes_read())
    };
    // Chunks 0, 1 and 2 touch: one read of 12 bytes, whatever the order asked.
    assert_eq!(read(&[2, 0, 1], 0), (1, 12));
    // 0 and 7 are 24 bytes apart: two reads with no gap allowed, one (32 bytes) with a 24-byte gap.
    assert_eq!(read(&[0, 7], 0), (2, 8));
    assert_eq!(read(&[7, 0], 24), (1, 32));
    // 0, 3 and 6 (12 of the 28 spanned bytes, under half): three reads; 0, 2, 4, 6 (16 of 28):
    // one read of the whole span.
    assert_eq!(read(&[0, 3, 6], 0), (3, 12));
    assert_eq!(read(&[0, 2, 4, 6], 0), (1, 28));
    // The same chunk twice is fine.
    assert_eq!(read(&[5, 5], 0), (1, 4));
}

/// Spec, "Binary shard format": inner chunks are written successively, "where unused space
/// between them is allowed". A nested shard (inner `codecs` = sharding, then a compressor)
/// with a gap between its chunks is valid and must decode: its size is not bounded by its
/// chunks and index packed together.
#[test]
fn nested_shard_with_unused_space_behind_a_compressor() {
    let nested = json!({"name": "sharding_indexed", "configuration": {"chunk_shape": [1],
        "codecs": [{"name": "bytes"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_location": "end"}});
    let repr = ChunkRepr {
        shape: vec![2],
        dtype: DataType::UInt8,
        fill_value: FillValue(vec![0]),
    };
    // By hand: chunk 0 (7) at offset 0, 100 unused bytes, chunk 1 (9) at offset 101, then
    // the index (offset, nbytes) little-endian: 134 bytes where packed chunks and index are 34.
    let mut shard = vec![7u8];
    shard.extend([0xaa; 100]);
    shard.push(9);
    shard.extend(le(&[0, 1, 101, 1]));
    assert_eq!(shard.len(), 134);
    let alone = CodecChain::from_json(&json!([nested]), "codecs").unwrap();
    assert_eq!(alone.decode(&shard, &repr).unwrap(), [7, 9]);
    let as_bytes = ChunkRepr {
        shape: vec![shard.len() as u64],
        ..repr.clone()
    };
    for compressor in [
        json!({"name": "gzip", "configuration": {"level": 1}}),
        json!({"name": "zstd", "configuration": {"level": 1, "checksum": false}}),
        json!({"name": "zlib", "configuration": {"level": 1}}),
        json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 1,
            "shuffle": "noshuffle", "typesize": 1, "blocksize": 0}}),
        json!({"name": "crc32c"}),
    ] {
        // The compressed stream of the hand-built shard (compressing its plain bytes).
        let stored = CodecChain::from_json(&json!([{"name": "bytes"}, compressor]), "codecs")
            .unwrap()
            .encode(&shard, &as_bytes)
            .unwrap();
        let chain = CodecChain::from_json(&json!([nested, compressor]), "codecs").unwrap();
        assert_eq!(
            chain.decode(&stored, &repr).unwrap(),
            [7, 9],
            "{compressor}"
        );
        assert_eq!(
            chain.encoded_size(&repr).unwrap(),
            EncodedSize::Unbounded,
            "{compressor}"
        );
    }
}
