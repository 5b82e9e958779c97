//! Fill values: float16 rounding and NaN bits survive writing `zarr.json`. Expected bits are
//! computed independently (Python's `struct` module, or the IEEE 754 rules), never copied from
//! our own output.

use serde_json::{json, Value};
use zarrshard::*;

fn bits16(v: Value) -> u16 {
    let f = FillValue::parse(&v, &DataType::Float16).unwrap();
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
        let f = FillValue::parse(&spelled, &d).unwrap();
        assert_eq!(f.to_json(&d), written, "{dt} {spelled}");
        assert_eq!(FillValue::parse(&written, &d).unwrap(), f, "{dt} {spelled}");
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

fn dtype(v: Value) -> DataType {
    DataType::from_json(&v).unwrap()
}

fn fill(v: Value, t: &DataType) -> Vec<u8> {
    FillValue::parse(&v, t).unwrap().0
}

/// Fill values of the object-form data types, in the spellings zarr-python 3.1.6 writes
/// (`zarr/core/dtype/npy/*.py`: `to_json_scalar`) and zarr-extensions specifies. Expected
/// bytes: Python's `base64.b64decode`, numpy's element layout, the specs' examples.
#[test]
fn extension_type_fill_values() {
    // raw_bytes: base64 of the element; `base64.b64encode(b"\x01\x02\x03\xfe\xff")`.
    let raw = dtype(json!({"name": "raw_bytes", "configuration": {"length_bytes": 5}}));
    assert_eq!(raw.size(), 5);
    assert_eq!(fill(json!("AQID/v8="), &raw), [1, 2, 3, 0xfe, 0xff]);
    // What zarr-python writes for `np.dtype("V5")`'s default fill value.
    assert_eq!(fill(json!("AAAAAAA="), &raw), [0; 5]);
    assert!(FillValue::parse(&json!("AQID"), &raw).is_err()); // 3 bytes, not 5

    // null_terminated_bytes: numpy's `S4` pads with zero bytes and drops them again.
    let s4 = dtype(json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}));
    let f = FillValue::parse(&json!("YWI="), &s4).unwrap(); // b"ab"
    assert_eq!(f.0, b"ab\0\0");
    assert_eq!(f.to_json(&s4), json!("YWI="));
    assert_eq!(FillValue::zero(&s4).to_json(&s4), json!(""));
    assert!(FillValue::parse(&json!("YWJjZGU="), &s4).is_err()); // b"abcde": 5 bytes

    // fixed_length_utf32: numpy `U3` is 3 UTF-32 code units (length_bytes 12).
    let u3 = dtype(json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}));
    let f = FillValue::parse(&json!("é☃"), &u3).unwrap();
    let units: Vec<u8> = [0xe9u32, 0x2603, 0]
        .iter()
        .flat_map(|u| u.to_ne_bytes())
        .collect();
    assert_eq!(f.0, units);
    assert_eq!(f.to_json(&u3), json!("é☃"));
    assert_eq!(fill(json!("𝄞"), &u3)[..4], 0x1d11eu32.to_ne_bytes());
    assert!(FillValue::parse(&json!("abcd"), &u3).is_err()); // 4 characters

    // datetime64 / timedelta64: an int64, NaT = -2^63 (zarr-extensions datetime64).
    let dt = dtype(
        json!({"name": "numpy.datetime64", "configuration": {"unit": "us", "scale_factor": 10}}),
    );
    assert_eq!(dt.size(), 8);
    assert_eq!(fill(json!("NaT"), &dt), i64::MIN.to_ne_bytes());
    assert_eq!(
        fill(json!(-9223372036854775808i64), &dt),
        i64::MIN.to_ne_bytes()
    );
    assert_eq!(fill(json!(1234), &dt), 1234i64.to_ne_bytes());
    // zarr-python writes NaT as the integer.
    assert_eq!(
        FillValue(i64::MIN.to_ne_bytes().to_vec()).to_json(&dt),
        json!(-9223372036854775808i64)
    );
    let td = dtype(
        json!({"name": "numpy.timedelta64", "configuration": {"unit": "s", "scale_factor": 1}}),
    );
    assert_eq!(fill(json!(-7), &td), (-7i64).to_ne_bytes());
    assert!(FillValue::parse(&json!("7"), &td).is_err());

    // struct (zarr-extensions): an object of field values; the example's x/y float32 fields.
    let xy = dtype(json!({"name": "struct", "configuration": {"fields": [
        {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}));
    let f = FillValue::parse(&json!({"x": 1.23, "y": 4.56}), &xy).unwrap();
    assert_eq!(f.0, [1.23f32.to_ne_bytes(), 4.56f32.to_ne_bytes()].concat());
    assert_eq!(
        f.to_json(&xy),
        json!({"x": 1.23f32 as f64, "y": 4.56f32 as f64})
    );
    assert_eq!(
        FillValue::parse(&json!({"x": 1.0}), &xy)
            .unwrap_err()
            .to_string(),
        r#"invalid metadata: fill_value {"x":1.0} has no value for field `y`"#
    );
    // structured (zarr-python 3.1): base64 of the element, each field little-endian; the
    // legacy example "AAAAAAAAAAA=" is 8 zero bytes. `base64.b64encode(struct.pack("<hd", -2,
    // 2.5))` = "/v8AAAAAAAAEQA==".
    let hd = dtype(
        json!({"name": "structured", "configuration": {"fields": [["a", "int16"], ["b", "float64"]]}}),
    );
    assert_eq!(hd.size(), 10);
    let f = FillValue::parse(&json!("/v8AAAAAAAAEQA=="), &hd).unwrap();
    assert_eq!(
        f.0,
        [(-2i16).to_ne_bytes().as_slice(), &2.5f64.to_ne_bytes()].concat()
    );
    assert_eq!(f.to_json(&hd), json!("/v8AAAAAAAAEQA=="));
    let zero8 = dtype(
        json!({"name": "structured", "configuration": {"fields": [["a", "uint32"], ["b", "float32"]]}}),
    );
    assert_eq!(fill(json!("AAAAAAAAAAA="), &zero8), [0; 8]);
}

/// A struct's layout and byte order follow zarr-extensions' `struct`: fields packed in order
/// with no padding (its example: int32, uint8, float64 at offsets 0, 4, 5; 13 bytes; nested
/// `point` {x, y float32} then float64: 16 bytes), each multi-byte field swapped on its own.
#[test]
fn struct_layout_and_per_field_byte_order() {
    let t = dtype(json!({"name": "struct", "configuration": {"fields": [
        {"name": "id", "data_type": "int32"},
        {"name": "flags", "data_type": "uint8"},
        {"name": "value", "data_type": "float64"}]}}));
    assert_eq!(t.size(), 13);
    let nested = dtype(json!({"name": "struct", "configuration": {"fields": [
        {"name": "point", "data_type": {"name": "struct", "configuration": {"fields": [
            {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}},
        {"name": "value", "data_type": "float64"}]}}));
    assert_eq!(nested.size(), 16);
    // Two elements, big-endian fields: id 0x01020304, flags 9, value 1.5 (0x3ff8000000000000).
    let be: Vec<u8> = [
        &0x0102_0304i32.to_be_bytes()[..],
        &[9],
        &1.5f64.to_be_bytes(),
    ]
    .concat()
    .repeat(2);
    let mut data = be.clone();
    t.swap(&mut data);
    let le: Vec<u8> = [
        &0x0102_0304i32.to_le_bytes()[..],
        &[9],
        &1.5f64.to_le_bytes(),
    ]
    .concat()
    .repeat(2);
    assert_eq!(data, le);
    // A UTF-32 string swaps each code unit; raw and null-terminated bytes never swap.
    let u2 = dtype(json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 8}}));
    let mut s = vec![0, 0, 0, 0x61, 0, 1, 0xd1, 0x1e];
    u2.swap(&mut s);
    assert_eq!(s, [0x61, 0, 0, 0, 0x1e, 0xd1, 1, 0]);
    let raw = dtype(json!({"name": "raw_bytes", "configuration": {"length_bytes": 4}}));
    let mut r = vec![1, 2, 3, 4];
    raw.swap(&mut r);
    assert_eq!(r, [1, 2, 3, 4]);
}
