//! The library's repack API: target metadata, when chunks are copied, the report and the
//! progress callback.

mod common;

use common::cli::{image, meta};
use common::write_array;
use serde_json::json;
use std::sync::atomic::{AtomicU64, Ordering};
use zarrshard::array::repack::copies_encoded_chunks;
use zarrshard::*;

fn bytes_codec() -> serde_json::Value {
    json!({"name": "bytes", "configuration": {"endian": "little"}})
}

#[test]
fn repacked_metadata_changes_only_what_was_asked() {
    let mut m = meta(
        &[50, 70],
        &[32, 32],
        &[8, 16],
        json!([bytes_codec()]),
        json!({"after": [{"name": "crc32c"}]}),
        "end",
    );
    m["attributes"] = json!({"units": "mm"});
    m["dimension_names"] = json!(["y", "x"]);
    let src = ArrayMetadata::from_json(&m).unwrap();
    let options = RepackOptions {
        shard_shape: Some(vec![64, 16]),
        index_location: Some(IndexLocation::Start),
        ..Default::default()
    };
    let dst = repacked_metadata(&src, &options).unwrap();
    let mut want = m.clone();
    want["chunk_grid"]["configuration"]["chunk_shape"] = json!([64, 16]);
    want["codecs"][0]["configuration"]["index_location"] = json!("start");
    assert_eq!(dst, ArrayMetadata::from_json(&want).unwrap());
    assert!(copies_encoded_chunks(&src, &dst));

    let gzip = CodecChain::from_json(
        &json!([bytes_codec(), {"name": "gzip", "configuration": {"level": 1}}]),
        "codecs",
    )
    .unwrap();
    let recoded = repacked_metadata(
        &src,
        &RepackOptions {
            inner_codecs: Some(gzip),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!copies_encoded_chunks(&src, &recoded));
    let reshaped = repacked_metadata(
        &src,
        &RepackOptions {
            shard_shape: Some(vec![32, 32]),
            inner_chunk_shape: Some(vec![16, 16]),
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!copies_encoded_chunks(&src, &reshaped));

    // Shapes that do not fit are refused as metadata errors, before anything is written.
    for (shard, inner) in [
        (vec![20, 20], None),
        (vec![32, 32], Some(vec![5, 5])),
        (vec![32], None),
    ] {
        let e = repacked_metadata(
            &src,
            &RepackOptions {
                shard_shape: Some(shard.clone()),
                inner_chunk_shape: inner.clone(),
                ..Default::default()
            },
        )
        .unwrap_err();
        assert!(
            matches!(e, Error::InvalidMetadata(_)),
            "{shard:?} {inner:?}: {e}"
        );
    }

    // An unsharded array: its chunks (as the codecs after transpose see them, so 3x2) become
    // inner chunks.
    let transpose = json!({"name": "transpose", "configuration": {"order": [1, 0]}});
    let gzip = json!({"name": "gzip", "configuration": {"level": 1}});
    let plain_json = json!({"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 3]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [transpose, {"name": "bytes"}, gzip]});
    let plain = ArrayMetadata::from_json(&plain_json).unwrap();
    let options = RepackOptions {
        shard_shape: Some(vec![4, 6]),
        ..Default::default()
    };
    let sharded = repacked_metadata(&plain, &options).unwrap();
    let mut want = plain_json.clone();
    want["chunk_grid"]["configuration"]["chunk_shape"] = json!([4, 6]);
    want["codecs"] = json!([transpose, {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [3, 2], "codecs": [{"name": "bytes"}, gzip],
        "index_codecs": [bytes_codec(), {"name": "crc32c"}], "index_location": "end"}}]);
    assert_eq!(sharded, ArrayMetadata::from_json(&want).unwrap());
    // The transpose makes the inner chunk grid differ from the chunk grid: no copies.
    assert!(!copies_encoded_chunks(&plain, &sharded));
    let mut untransposed = plain.clone();
    untransposed.codecs.array_to_array.clear();
    let sharded = repacked_metadata(&untransposed, &options).unwrap();
    assert!(copies_encoded_chunks(&untransposed, &sharded));
}

#[test]
fn repack_reports_and_calls_back_once_per_target_shard() {
    let tmp = tempfile::tempdir().unwrap();
    let m = meta(
        &[50, 70],
        &[32, 32],
        &[8, 16],
        json!([bytes_codec()]),
        json!({}),
        "end",
    );
    write_array(&tmp.path().join("src"), &m, &image());
    let src = Array::open(FsStore::new(tmp.path().join("src"))).unwrap();
    let options = RepackOptions {
        shard_shape: Some(vec![16, 32]),
        order: ChunkOrder::Morton,
        ..Default::default()
    };
    let target = repacked_metadata(src.metadata(), &options).unwrap();
    let calls = AtomicU64::new(0);
    let (dst, report) = repack(
        &src,
        FsStore::new(tmp.path().join("dst")),
        target,
        options.order,
        &|n| {
            calls.fetch_add(n, Ordering::Relaxed);
        },
    )
    .unwrap();
    // 16x32 shards over 50x70: 4 x 3 grid positions; rows 0..32 x cols 0..32 hold only the
    // fill value, so the 2 shards there are not written.
    assert_eq!(calls.into_inner(), 12);
    assert_eq!(report.shards_written, 10);
    assert_eq!((report.chunks_copied, report.chunks_reencoded), (26, 0));
    // Uncompressed 8x16 uint16 chunks are 256 bytes; each index is 2 x 2 entries of 16 bytes
    // and a 4-byte crc32c.
    assert_eq!(report.bytes_written, 26 * 256 + 10 * (64 + 4));
    let mut out = vec![];
    dst.export(&mut out).unwrap();
    let mut want = vec![];
    src.export(&mut want).unwrap();
    assert_eq!(out, want);
    assert!(dst.verify().unwrap().is_empty());

    // Shape, data type and fill value must be the source's (a copied chunk keeps its values,
    // an empty one would read as another fill value).
    let mut other_shape = src.metadata().clone();
    other_shape.shape = vec![50, 71];
    let mut other_fill = src.metadata().clone();
    other_fill.fill_value = FillValue(4u16.to_ne_bytes().to_vec());
    for other in [other_shape, other_fill] {
        let e = repack(
            &src,
            FsStore::new(tmp.path().join("x")),
            other,
            ChunkOrder::C,
            &|_| {},
        )
        .err()
        .unwrap();
        assert!(matches!(e, Error::InvalidArgument(_)), "{e}");
        assert!(!tmp.path().join("x").exists());
    }
}
