//! `Array` entry points that take caller data: a wrong-sized buffer or inconsistent metadata is
//! refused with an error before anything is written or deleted.

use serde_json::json;
use zarrshard::*;

fn meta(codec_after_sharding: bool) -> ArrayMetadata {
    let mut codecs = vec![
        json!({"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]}}),
    ];
    if codec_after_sharding {
        codecs.push(json!({"name": "crc32c"}));
    }
    ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": codecs
    }))
    .unwrap()
}

/// A buffer of fill bytes of the wrong length is a BufferSize error (a 4×4 uint16 shard is 32
/// bytes), not "all fill value" (which deletes the stored shard).
#[test]
fn write_shard_refuses_a_wrong_length_buffer_of_fill_bytes() {
    let data: Vec<u8> = (1..=16u16).flat_map(|v| v.to_ne_bytes()).collect();
    for codec_after_sharding in [false, true] {
        for wrong in [0usize, 3, 30, 34] {
            let store = MemoryStore::new();
            let array = Array::create(store.clone(), meta(codec_after_sharding)).unwrap();
            array.write_region(&[0, 0], &[4, 4], &data).unwrap();
            let stored = store.get("c/0/0").unwrap().unwrap();
            let zeros = vec![0u8; wrong];
            let results = [
                array.write_shard(&[0, 0], &zeros),
                array.write_shard_with(
                    &[0, 0],
                    &zeros,
                    WriteStrategy::Buffered,
                    WriteOptions::default(),
                ),
                array.write_shard_with(
                    &[0, 0],
                    &zeros,
                    WriteStrategy::Streaming,
                    WriteOptions::default(),
                ),
            ];
            for r in results {
                assert!(
                    matches!(r, Err(Error::BufferSize { expected: 32, actual }) if actual == wrong as u64),
                    "codec after sharding: {codec_after_sharding}, {wrong} bytes: {r:?}"
                );
            }
            assert_eq!(store.get("c/0/0").unwrap().unwrap(), stored);
            assert_eq!(array.read_region_vec(&[0, 0], &[4, 4]).unwrap(), data);
            // The right length of fill bytes still deletes the shard.
            assert!(matches!(
                array.write_shard(&[0, 0], &[0u8; 32]).unwrap(),
                Finalized::Deleted
            ));
            assert_eq!(store.get("c/0/0").unwrap(), None);
        }
    }
}
