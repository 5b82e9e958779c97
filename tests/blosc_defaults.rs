//! A blosc configuration that leaves out `typesize` and `shuffle` (both optional in the JSON
//! zarr-python and tensorstore accept) is completed from the array's data type as they
//! complete it, so the same hand-written `zarr.json` gives the same chunk bytes and the same
//! recorded metadata in all three.
//!
//! Expected values are zarr-python 3.1.6's (numcodecs' c-blosc), from
//! `zarr.open_array` over a store holding the `zarr.json` below, `a[:] = np.arange(64, dtype)`,
//! then `a.metadata.to_dict()["codecs"][1]` and the bytes of object `c/0`.

use serde_json::{json, Value};
use zarrshard::*;

fn meta(dtype: &str, blosc: Value) -> Value {
    json!({"zarr_format": 3, "node_type": "array", "shape": [64], "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, blosc]})
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// The blosc entry we record and the chunk we write for `0..64` of `dtype` (little endian).
fn ours(dtype: &str, blosc: Value, elem: usize) -> (Value, Vec<u8>) {
    let m = ArrayMetadata::from_json(&meta(dtype, blosc)).unwrap();
    let recorded = m.to_json()["codecs"][1].clone();
    let store = MemoryStore::new();
    let array = Array::create(store.clone(), m).unwrap();
    let data: Vec<u8> = (0..64u64)
        .flat_map(|v| v.to_le_bytes()[..elem].to_vec())
        .collect();
    array.write_region(&[0], &[64], &data).unwrap();
    (recorded, store.get("c/0").unwrap().unwrap())
}

#[test]
fn blosc_without_typesize_and_shuffle_is_completed_as_zarr_python_completes_it() {
    let lz4 = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}});
    // (data type, element size, zarr-python's typesize and shuffle, its chunk): one-byte
    // elements get bitshuffle, others byte shuffle.
    let cases = [
        ("uint16", 2, "shuffle", "020131028000000080000000680000001400000050000000ff36000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f0000000000050023500000000000"),
        ("uint8", 1, "bitshuffle", "02013601400000004000000050000000000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"),
    ];
    for (dtype, elem, shuffle, zarr_python_chunk) in cases {
        let (recorded, chunk) = ours(dtype, lz4.clone(), elem);
        assert_eq!(
            recorded,
            json!({"name": "blosc", "configuration": {"typesize": elem, "cname": "lz4",
                "clevel": 5, "shuffle": shuffle, "blocksize": 0}}),
            "{dtype}"
        );
        assert_eq!(chunk, hex(zarr_python_chunk), "{dtype}");
    }
}

#[test]
fn what_the_configuration_gives_is_kept() {
    // Given values win over the data type; numcodecs' -1 ("auto") is as if absent.
    let given = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
        "shuffle": "noshuffle", "typesize": 4, "blocksize": 0}});
    let m = ArrayMetadata::from_json(&meta("uint16", given.clone())).unwrap();
    assert_eq!(m.to_json()["codecs"][1], given);
    let auto = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5,
        "shuffle": -1, "typesize": 1}});
    let m = ArrayMetadata::from_json(&meta("uint16", auto)).unwrap();
    assert_eq!(
        m.to_json()["codecs"][1]["configuration"]["shuffle"],
        "bitshuffle"
    );
    assert_eq!(m.to_json()["codecs"][1]["configuration"]["typesize"], 1);
}

#[test]
fn inner_chunks_of_a_sharded_array_are_completed_too() {
    let config = json!({"chunk_shape": [8], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 1}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]});
    let mut v = meta("float64", json!({"name": "crc32c"}));
    v["codecs"] = json!([{"name": "sharding_indexed", "configuration": config}]);
    let m = ArrayMetadata::from_json(&v).unwrap();
    let inner = &m.to_json()["codecs"][0]["configuration"]["codecs"][1]["configuration"];
    assert_eq!(
        (&inner["typesize"], &inner["shuffle"]),
        (&json!(8), &json!("shuffle"))
    );
    // The layout the C API binds from a bare sharding configuration completes it the same way.
    let layout = ShardingCodec::from_config_json(&config)
        .unwrap()
        .bind(&m.chunk_repr())
        .unwrap();
    assert_eq!(
        layout.codec().to_json()["configuration"]["codecs"][1],
        m.to_json()["codecs"][0]["configuration"]["codecs"][1]
    );
}

#[test]
fn elements_larger_than_blosc_typesizes_are_not_shuffled() {
    // r2048: 256-byte elements, past c-blosc's largest typesize (255). tensorstore disables
    // shuffling for such an inferred typesize; so do we. 255-byte elements still shuffle.
    let lz4 = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5}});
    let mut v = meta("r2048", lz4.clone());
    v["fill_value"] = json!(vec![0u8; 256]);
    v["shape"] = json!([4]);
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([4]);
    let m = ArrayMetadata::from_json(&v).unwrap();
    let c = &m.to_json()["codecs"][1]["configuration"];
    assert_eq!(
        (&c["typesize"], &c["shuffle"]),
        (&json!(1), &json!("noshuffle"))
    );
    // Round trip through the chain: 4 elements of 256 bytes.
    let store = MemoryStore::new();
    let array = Array::create(store, m).unwrap();
    let data: Vec<u8> = (0..1024u32).map(|i| (i * 7 % 251) as u8).collect();
    array.write_region(&[0], &[4], &data).unwrap();
    assert_eq!(array.read_region_vec(&[0], &[4]).unwrap(), data);

    let mut v = meta("r2040", lz4);
    v["fill_value"] = json!(vec![0u8; 255]);
    let m = ArrayMetadata::from_json(&v).unwrap();
    let c = &m.to_json()["codecs"][1]["configuration"];
    assert_eq!(
        (&c["typesize"], &c["shuffle"]),
        (&json!(255), &json!("shuffle"))
    );
}
