//! Fill values: float16 rounding and NaN bits survive writing `zarr.json`. Expected bits are
//! computed independently (Python's `struct` module, or the IEEE 754 rules), never copied from
//! our own output.

use serde_json::{json, Value};
use zarrshard::*;

fn bits16(v: Value) -> u16 {
    let f = FillValue::parse(&v, DataType::Float16).unwrap();
    u16::from_ne_bytes([f.0[0], f.0[1]])
}

/// A float16 fill value given as a number is rounded once, to nearest, ties to even.
#[test]
fn float16_fill_value_is_rounded_once() {
    // Expected: `struct.unpack('<H', struct.pack('<e', x))[0]` in Python 3 (which rounds the
    // double to half precision directly), x given here with its exact hex value.
    for (x, expected) in [
        // 0x1.0020000001198p+0: just above the tie between 0x3c00 and 0x3c01. Rounding through
        // float32 first lands on the tie and then on 0x3c00.
        (1.00048828125 + 1e-12, 0x3c01u16),
        (1.00048828125, 0x3c00),  // 0x1.002p+0, a tie: to even 0x3c00
        (1.00146484375, 0x3c02),  // 0x1.006p+0, a tie: to even 0x3c02
        (1.001464843749, 0x3c01), // just below that tie (via float32: 0x3c02)
        (65519.999999, 0x7bff),   // just below 65520 (via float32: 65520, infinity)
        (65504.0, 0x7bff),        // largest half
        (2f64.powi(-25), 0x0000), // half the least subnormal: a tie, to even 0
        (f64::from_bits(0x3e60_0000_0000_0001), 0x0001), // 0x1.0000000000001p-25
        (3.0 * 2f64.powi(-26), 0x0001), // 0x1.8p-25
        (1.5 * 2f64.powi(-24), 0x0002), // a tie between subnormals 1 and 2: to even 2
        (2.5 * 2f64.powi(-24), 0x0002), // a tie between 2 and 3: to even 2
        (6.097555160522461e-05, 0x03ff), // largest subnormal
        (2f64.powi(-14) - 2f64.powi(-25), 0x0400), // 0x1.ffcp-15 rounds up to the least normal
        (-0.0, 0x8000),
        (-1e-300, 0x8000),
        (-0.75 * 2f64.powi(-24), 0x8001),
        (0.1, 0x2e66),
        (1.0 / 3.0, 0x3555),
    ] {
        assert_eq!(bits16(json!(x)), expected, "{x:e} ({x:?})");
    }
    // Python's struct refuses to pack these ("float too large"); IEEE 754 round to nearest
    // takes every value from 65520 (largest half + half an ulp, a tie whose even neighbour is
    // 2^16) upwards to infinity.
    assert_eq!(bits16(json!(65520.0)), 0x7c00);
    assert_eq!(bits16(json!(-65520.0)), 0xfc00);
    assert_eq!(bits16(json!(1e300)), 0x7c00);
    // The spelled special values (IEEE 754 binary16: quiet NaN 0x7e00, infinity 0x7c00).
    assert_eq!(bits16(json!("NaN")), 0x7e00);
    assert_eq!(bits16(json!("Infinity")), 0x7c00);
    assert_eq!(bits16(json!("-Infinity")), 0xfc00);
}

/// A NaN given by its bits is written back as those bits; only the canonical quiet NaN that
/// `"NaN"` parses to is written `"NaN"`.
#[test]
fn nan_fill_values_keep_their_bits() {
    for (dt, spelled, written) in [
        ("float16", json!("0x7e01"), json!("0x7e01")),
        ("float16", json!("0xfe00"), json!("0xfe00")),
        ("float16", json!("0x7c01"), json!("0x7c01")), // a signalling NaN
        ("float16", json!("0x7e00"), json!("NaN")),
        ("float32", json!("0x7fc00001"), json!("0x7fc00001")),
        ("float32", json!("0xffc00000"), json!("0xffc00000")),
        ("float32", json!("0x7fc00000"), json!("NaN")),
        (
            "float64",
            json!("0x7ff0000000000001"),
            json!("0x7ff0000000000001"),
        ),
        ("float64", json!("0x7ff8000000000000"), json!("NaN")),
        (
            "complex64",
            json!(["0x7fc00001", "NaN"]),
            json!(["0x7fc00001", "NaN"]),
        ),
        (
            "complex128",
            json!([1.5, "0xfff8000000000000"]),
            json!([1.5, "0xfff8000000000000"]),
        ),
        ("float32", json!("NaN"), json!("NaN")),
        ("float32", json!("0x3f800000"), json!(1.0)),
        ("float64", json!("-Infinity"), json!("-Infinity")),
    ] {
        let d = DataType::parse(dt).unwrap();
        let f = FillValue::parse(&spelled, d).unwrap();
        assert_eq!(f.to_json(d), written, "{dt} {spelled}");
        assert_eq!(FillValue::parse(&written, d).unwrap(), f, "{dt} {spelled}");
    }
}

fn float32_meta(fill: Value) -> ArrayMetadata {
    ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": fill,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                             {"name": "crc32c"}]}}]
    }))
    .unwrap()
}

/// `Array::create` writes the fill value it was given, and `repack` accepts its own target.
#[test]
fn nan_payload_fill_value_survives_create_and_repack() {
    let meta = float32_meta(json!("0xffc00000"));
    assert_eq!(meta.fill_value.0, 0xffc0_0000u32.to_ne_bytes());
    let store = MemoryStore::new();
    let src = Array::create(store.clone(), meta.clone()).unwrap();
    let written: Value = serde_json::from_slice(&store.get("zarr.json").unwrap().unwrap()).unwrap();
    assert_eq!(written["fill_value"], json!("0xffc00000"));
    assert_eq!(Array::open(store).unwrap().metadata(), &meta);

    let data: Vec<u8> = [1.0f32, 2.0].iter().flat_map(|f| f.to_ne_bytes()).collect();
    src.write_region(&[0], &[2], &data).unwrap();
    let options = RepackOptions {
        inner_chunk_shape: Some(vec![1]),
        ..Default::default()
    };
    let target = repacked_metadata(&meta, &options).unwrap();
    assert_eq!(target.fill_value, meta.fill_value);
    let (dst, _) = repack(&src, MemoryStore::new(), target, ChunkOrder::C, &|_| {}).unwrap();
    let mut expected = data.clone();
    expected.extend(0xffc0_0000u32.to_ne_bytes().repeat(2));
    assert_eq!(dst.read_region_vec(&[0], &[4]).unwrap(), expected);
}
