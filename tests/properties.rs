//! Property tests over random shapes, configurations and stored-chunk subsets.

use proptest::prelude::*;
use serde_json::{json, Value};
use std::sync::Arc;
use zarrshard::*;

fn inner_codecs(kind: u8, dtype_size: usize) -> Value {
    let bytes = json!({"name": "bytes", "configuration": {"endian": if kind % 2 == 0 { "little" } else { "big" }}});
    match kind % 6 {
        0 => json!([bytes]),
        1 => json!([bytes, {"name": "gzip", "configuration": {"level": 1}}]),
        2 => json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": true}}]),
        3 => json!([bytes, {"name": "crc32c"}]),
        4 => {
            json!([bytes, {"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": dtype_size, "blocksize": 0}}])
        }
        _ => {
            json!([{"name": "transpose", "configuration": {"order": "F"}}, bytes, {"name": "zstd", "configuration": {"level": 3}}])
        }
    }
}

#[derive(Debug, Clone)]
struct Case {
    inner: Vec<u64>,
    per_shard: Vec<u64>,
    dtype: DataType,
    kind: u8,
    start: bool,
    crc: bool,
    /// Which inner chunks hold data (others stay at the fill value).
    stored: Vec<bool>,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|rank| {
            (
                prop::collection::vec(1u64..=5, rank),
                prop::collection::vec(1u64..=4, rank),
                prop::sample::select(vec![
                    DataType::UInt8,
                    DataType::Int16,
                    DataType::Float32,
                    DataType::UInt64,
                    DataType::Complex64,
                ]),
                0u8..6,
                any::<bool>(),
                any::<bool>(),
                prop::collection::vec(any::<bool>(), 64),
                any::<u64>(),
            )
        })
        .prop_map(
            |(inner, per_shard, dtype, kind, start, crc, stored, seed)| Case {
                inner,
                per_shard,
                dtype,
                kind,
                start,
                crc,
                stored,
                seed,
            },
        )
}

fn build(c: &Case) -> (ShardLayout, Vec<u8>) {
    let index_codecs = if c.crc {
        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}])
    } else {
        json!([{"name": "bytes", "configuration": {"endian": "little"}}])
    };
    let config = json!({
        "chunk_shape": c.inner,
        "codecs": inner_codecs(c.kind, c.dtype.size()),
        "index_codecs": index_codecs,
        "index_location": if c.start { "start" } else { "end" },
    });
    let shard: Vec<u64> = c
        .inner
        .iter()
        .zip(&c.per_shard)
        .map(|(a, b)| a * b)
        .collect();
    let layout =
        ShardLayout::from_config_json(&config, c.dtype.clone(), shard, FillValue::zero(&c.dtype))
            .unwrap();
    // Data: pseudo-random bytes in the chunks marked stored, zeros (fill) elsewhere.
    let mut data = vec![0u8; layout.shard_repr().byte_size().unwrap() as usize];
    let mut chunk = vec![0u8; layout.inner_byte_size()];
    let mut x = c.seed | 1;
    for i in 0..layout.num_chunks() {
        if !c.stored[i % c.stored.len()] {
            continue;
        }
        for b in chunk.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = (x % 7) as u8; // small alphabet: compressible, and never all-zero in practice
        }
        chunk[0] = 1;
        layout.place_chunk(i, &chunk, &mut data);
    }
    (layout, data)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn decode_of_encode_is_identity(c in case()) {
        let (layout, data) = build(&c);
        let object = layout.encode_shard(&data).unwrap();
        let mut out = vec![0u8; data.len()];
        layout.decode_shard_into(&object, &mut out).unwrap();
        prop_assert_eq!(out, data);
    }

    #[test]
    fn single_chunk_read_costs_index_plus_chunk(c in case(), pick in any::<prop::sample::Index>()) {
        let (layout, data) = build(&c);
        let object = layout.encode_shard(&data).unwrap();
        let layout = Arc::new(layout);
        let i = pick.index(layout.num_chunks());
        let coords = zarrshard::nd::unravel(i as u64, layout.chunks_per_shard());

        let io = CountingIo::new(MemoryIo::from_bytes(object));
        let reader = ShardReader::open(layout.clone(), &io).unwrap();
        let loc = reader.chunk_location(&coords).unwrap();
        let chunk = reader.read_chunk(&coords).unwrap();
        let expected_bytes = layout.index_size() + loc.map_or(0, |l| l.nbytes);
        prop_assert!(io.reads() <= 2);
        prop_assert_eq!(io.reads(), 1 + loc.is_some() as u64);
        prop_assert_eq!(io.bytes_read(), expected_bytes);

        let mut expected = vec![0u8; layout.inner_byte_size()];
        layout.extract_chunk(i, &data, &mut expected);
        prop_assert_eq!(chunk, expected);

        // Warm: the index is loaded, one read (none for an empty chunk).
        io.reset();
        reader.read_chunk(&coords).unwrap();
        prop_assert_eq!(io.reads(), loc.is_some() as u64);
    }
}
