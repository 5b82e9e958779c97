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

fn invalid_metadata(r: Result<impl Sized>) -> String {
    match r {
        Err(Error::InvalidMetadata(why)) => why,
        Err(e) => panic!("expected InvalidMetadata, got {e}"),
        Ok(_) => panic!("expected InvalidMetadata, got Ok"),
    }
}

/// `ArrayMetadata`'s fields are public: metadata edited in code is checked as a parsed
/// `zarr.json` would be, wherever it enters (`Array::create`, `Array::from_metadata`, a repack
/// target), and refused with InvalidMetadata before anything is written.
#[test]
fn edited_metadata_is_validated_where_it_enters() {
    let mut not_dividing = meta(false);
    not_dividing.chunk_shape = vec![3, 3]; // inner chunks [2, 2] do not divide it
    let mut rank = meta(false);
    rank.chunk_shape = vec![4];
    let mut zero = meta(false);
    zero.chunk_shape = vec![4, 0];
    let mut fill = meta(false);
    fill.fill_value = FillValue(vec![0]); // uint16 needs 2 bytes
    let mut separator = meta(false);
    separator.chunk_key_encoding = ChunkKeyEncoding::Default { separator: '\\' };
    let mut raw = meta(false);
    raw.data_type = DataType::RawBits(0);
    raw.fill_value = FillValue(vec![]);
    let mut gzip = meta(false);
    gzip.codecs
        .bytes_to_bytes
        .push(codec::BytesToBytes::Gzip(codec::gzip::Gzip { level: 10 }));
    for (m, why) in [
        (
            &not_dividing,
            "sharding_indexed: chunk_shape [2, 2] does not divide the shard shape [3, 3]",
        ),
        (&rank, "chunk_shape [4] has rank 1, shape [4, 4] has rank 2"),
        (&zero, "chunk_shape [4, 0] contains 0"),
        (
            &fill,
            "fill value of 1 bytes for data_type uint16 (2 bytes)",
        ),
        (
            &separator,
            r#"invalid chunk_key_encoding {"name":"default","configuration":{"separator":"\\"}}"#,
        ),
        (&raw, "unknown data_type `r0`"),
        (
            &gzip,
            "codec `gzip`: `level` must be between 0 and 9 (got 10)",
        ),
    ] {
        assert_eq!(invalid_metadata(m.validate()), why);
        let store = MemoryStore::new();
        assert_eq!(
            invalid_metadata(Array::create(store.clone(), m.clone())),
            why
        );
        assert_eq!(
            store.get("zarr.json").unwrap(),
            None,
            "{why}: nothing written"
        );
        assert_eq!(
            invalid_metadata(Array::from_metadata(MemoryStore::new(), m.clone())),
            why
        );
    }
    // A repack target: refused before any shard is written.
    let src = Array::create(MemoryStore::new(), meta(false)).unwrap();
    let data: Vec<u8> = (1..=16u16).flat_map(|v| v.to_ne_bytes()).collect();
    src.write_region(&[0, 0], &[4, 4], &data).unwrap();
    let dst = MemoryStore::new();
    assert_eq!(
        invalid_metadata(repack(
            &src,
            dst.clone(),
            not_dividing,
            ChunkOrder::C,
            &|_| {}
        )),
        "sharding_indexed: chunk_shape [2, 2] does not divide the shard shape [3, 3]"
    );
    assert!(dst.keys().is_empty());
    // Valid edits are accepted and written as themselves.
    let mut bigger = meta(false);
    bigger.shape = vec![8, 6];
    let store = MemoryStore::new();
    Array::create(store.clone(), bigger.clone()).unwrap();
    assert_eq!(Array::open(store).unwrap().metadata(), &bigger);
}
