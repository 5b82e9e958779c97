//! Every index entry from storage is checked before use; errors name the inner chunk.

use serde_json::json;
use std::sync::Arc;
use zarrshard::*;

fn layout(location: &str, crc: bool) -> ShardLayout {
    let index_codecs = if crc {
        json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}])
    } else {
        json!([{"name": "bytes", "configuration": {"endian": "little"}}])
    };
    let config = json!({"chunk_shape": [2, 2], "codecs": [{"name": "bytes"}], "index_codecs": index_codecs, "index_location": location});
    ShardLayout::from_config_json(&config, DataType::UInt8, vec![4, 4], FillValue(vec![0])).unwrap()
}

/// A shard object: 4 chunks of 4 bytes each, index entries given by hand.
fn object(location: &str, entries: &[u64]) -> Vec<u8> {
    let index: Vec<u8> = entries.iter().flat_map(|v| v.to_le_bytes()).collect();
    let data = vec![1u8; 16];
    if location == "start" {
        [index, data].concat()
    } else {
        [data, index].concat()
    }
}

const E: u64 = u64::MAX;

fn decode_err(location: &str, entries: &[u64]) -> String {
    let l = layout(location, false);
    let mut out = vec![0u8; 16];
    l.decode_shard_into(&object(location, entries), &mut out)
        .unwrap_err()
        .to_string()
}

#[test]
fn bad_entries_are_named() {
    // Object: 16 data bytes + 64 index bytes = 80.
    assert_eq!(
        decode_err("end", &[0, 4, E, 4, E, E, E, E]),
        "corrupt shard: inner chunk [0, 1]: index entry (offset 18446744073709551615, nbytes 4) has only one field set to the empty marker"
    );
    assert_eq!(
        decode_err("end", &[0, 4, E, E, 5, E - 1, E, E]),
        "corrupt shard: inner chunk [1, 0]: index entry (offset 5, nbytes 18446744073709551614) overflows 64 bits"
    );
    assert_eq!(
        decode_err("end", &[0, 4, 4, 4, 8, 4, 12, 100]),
        "corrupt shard: inner chunk [1, 1]: index entry (offset 12, nbytes 100) points past the end: object is 80 bytes, index needs 176: torn write? try `zarrshard repair`"
    );
    assert_eq!(
        decode_err("end", &[0, 4, 4, 4, 8, 4, 14, 4]),
        "corrupt shard: inner chunk [1, 1]: index entry (offset 14, nbytes 4) overlaps the index (bytes 16..80)"
    );
    assert_eq!(
        decode_err("start", &[64, 4, 68, 4, 10, 4, 76, 4]),
        "corrupt shard: inner chunk [1, 0]: index entry (offset 10, nbytes 4) overlaps the index (bytes 0..64)"
    );
    // A wrong nbytes for the `bytes` codec is caught when decoding, naming the chunk.
    assert_eq!(
        decode_err("end", &[0, 3, E, E, E, E, E, E]),
        "corrupt shard: inner chunk [0, 0]: `bytes` codec: 3 bytes stored where 4 were expected"
    );
}

#[test]
fn index_checksum_and_truncation() {
    let l = layout("end", true);
    let good = l.encode_shard(&[7u8; 16]).unwrap();
    let mut out = vec![0u8; 16];
    l.decode_shard_into(&good, &mut out).unwrap();
    assert_eq!(out, vec![7u8; 16]);

    let mut flipped = good.clone();
    let n = flipped.len();
    flipped[n - 10] ^= 0x01;
    let e = l.decode_shard_into(&flipped, &mut out).unwrap_err();
    assert!(
        matches!(e, Error::ChecksumMismatch { chunk: None, .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .starts_with("checksum mismatch: shard index: stored"),
        "{e}"
    );

    // Every truncation is an error, never a panic or a wrong value.
    for len in 0..good.len() {
        assert!(
            l.decode_shard_into(&good[..len], &mut out).is_err(),
            "length {len}"
        );
        let io = MemoryIo::from_bytes(good[..len].to_vec());
        let opened = ShardReader::open(Arc::new(l.clone()), &io);
        if let Ok(r) = opened {
            // Index at end survived only if the cut removed nothing the chunks need; any
            // chunk read must then fail or return the original data.
            for c in [[0, 0], [0, 1], [1, 0], [1, 1]] {
                if let Ok(v) = r.read_chunk(&c) {
                    assert_eq!(v, vec![7u8; 4]);
                }
            }
        }
    }
}

#[test]
fn reader_bounds_checks_when_object_size_is_unknown() {
    /// A back end that never reports the object size.
    struct NoSize(MemoryIo);
    impl ShardIo for NoSize {
        fn read(&self, r: ByteRange) -> Result<Option<ReadOutput>> {
            Ok(self.0.read(r)?.map(|o| ReadOutput {
                data: o.data,
                object_size: None,
            }))
        }
    }
    let l = Arc::new(layout("end", false));
    let io = NoSize(MemoryIo::from_bytes(object(
        "end",
        &[0, 4, 4, 4, 8, 4, 100, 4],
    )));
    let r = ShardReader::open(l, io).unwrap();
    assert_eq!(r.read_chunk(&[0, 0]).unwrap(), vec![1u8; 4]);
    assert_eq!(
        r.read_chunk(&[1, 1]).unwrap_err().to_string(),
        "corrupt shard: inner chunk [1, 1]: index entry (offset 100, nbytes 4) points past the end: object ends at or before byte 100, index needs 104: torn write? try `zarrshard repair`"
    );
}

#[test]
fn inner_chunk_checksum_names_the_chunk() {
    let config = json!({"chunk_shape": [2, 2], "codecs": [{"name": "bytes"}, {"name": "crc32c"}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]});
    let l = ShardLayout::from_config_json(&config, DataType::UInt8, vec![4, 4], FillValue(vec![0]))
        .unwrap();
    let data: Vec<u8> = (1..=16).collect();
    let mut obj = l.encode_shard(&data).unwrap();
    // Chunks are 8 bytes each (4 data + 4 crc) in C order; flip a data byte of chunk [1, 0].
    obj[16] ^= 0xff;
    let mut out = vec![0u8; 16];
    let e = l.decode_shard_into(&obj, &mut out).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("checksum mismatch: inner chunk [1, 0]: crc32c codec: stored"),
        "{e}"
    );
}
