//! Metadata validation: each bad value gives a clear error naming it.

use serde_json::{json, Value};
use zarrshard::*;

fn array_json(codecs: Value) -> Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": [100, 100], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 64]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": codecs, "attributes": {}
    })
}

fn sharding(config: Value) -> Value {
    json!([{"name": "sharding_indexed", "configuration": config}])
}

fn good_config() -> Value {
    json!({
        "chunk_shape": [32, 32],
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}]
    })
}

fn error_of(v: Value) -> String {
    ArrayMetadata::from_json(&v).unwrap_err().to_string()
}

fn with(mut config: Value, key: &str, value: Value) -> Value {
    config[key] = value;
    config
}

#[test]
fn valid_metadata_parses_with_defaults() {
    let m = ArrayMetadata::from_json(&array_json(sharding(good_config()))).unwrap();
    let l = m.shard_layout().unwrap();
    // Absent index_location means end.
    assert_eq!(l.codec().index_location, IndexLocation::End);
    assert_eq!(m.grid_shape(), vec![2, 2]);
    assert_eq!(m.chunk_key(&[1, 0]), "c/1/0");
    // The JSON we write parses back to the same metadata.
    assert_eq!(ArrayMetadata::from_json(&m.to_json()).unwrap(), m);
}

#[test]
fn chunk_key_encodings() {
    let mut v = array_json(sharding(good_config()));
    v["chunk_key_encoding"] = json!({"name": "default", "configuration": {"separator": "."}});
    assert_eq!(
        ArrayMetadata::from_json(&v).unwrap().chunk_key(&[1, 0]),
        "c.1.0"
    );
    v["chunk_key_encoding"] = json!({"name": "v2"});
    assert_eq!(
        ArrayMetadata::from_json(&v).unwrap().chunk_key(&[1, 0]),
        "1.0"
    );
    v["chunk_key_encoding"] = json!({"name": "v2", "configuration": {"separator": "/"}});
    assert_eq!(
        ArrayMetadata::from_json(&v).unwrap().chunk_key(&[1, 0]),
        "1/0"
    );
    assert_eq!(ChunkKeyEncoding::V2 { separator: '.' }.key(&[]), "0");
    assert_eq!(ChunkKeyEncoding::Default { separator: '/' }.key(&[]), "c");
}

#[test]
fn sharding_errors_name_the_value() {
    let e = error_of(array_json(sharding(with(
        good_config(),
        "chunk_shape",
        json!([32]),
    ))));
    assert!(
        e.contains("chunk_shape [32] has rank 1") && e.contains("rank 2"),
        "{e}"
    );

    let e = error_of(array_json(sharding(with(
        good_config(),
        "chunk_shape",
        json!([30, 32]),
    ))));
    assert!(
        e.contains("chunk_shape [30, 32] does not divide the shard shape [64, 64]"),
        "{e}"
    );

    let e = error_of(array_json(sharding(with(
        good_config(),
        "codecs",
        json!([{"name": "gzip"}]),
    ))));
    assert!(e.contains("before the array→bytes codec"), "{e}");

    let e = error_of(array_json(sharding(with(
        good_config(),
        "codecs",
        json!([]),
    ))));
    assert!(
        e.contains("`codecs` must contain exactly one array→bytes codec, found none"),
        "{e}"
    );

    let two = json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "bytes", "configuration": {"endian": "little"}}]);
    let e = error_of(array_json(sharding(with(
        good_config(),
        "index_codecs",
        two,
    ))));
    assert!(
        e.contains(
            "`index_codecs` must contain exactly one array→bytes codec, found a second (`bytes`)"
        ),
        "{e}"
    );

    let gz = json!([{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "gzip", "configuration": {"level": 1}}]);
    let e = error_of(array_json(sharding(with(
        good_config(),
        "index_codecs",
        gz,
    ))));
    assert!(
        e.contains("index_codecs must have a fixed encoded size"),
        "{e}"
    );

    let e = error_of(array_json(sharding(with(
        good_config(),
        "index_location",
        json!("middle"),
    ))));
    assert!(
        e.contains("`index_location`") && e.contains("\"middle\""),
        "{e}"
    );

    let e = error_of(array_json(sharding(with(
        good_config(),
        "codecs",
        json!([{"name": "bytes"}, {"name": "lzma"}]),
    ))));
    assert_eq!(e, "unsupported codec `lzma`");

    let e = error_of(array_json(json!([{"name": "bytes"}])));
    assert!(
        e.contains("`endian` is required for data_type uint16"),
        "{e}"
    );
}

#[test]
fn array_errors_name_the_value() {
    let mut v = array_json(sharding(good_config()));
    v["fill_value"] = json!(70000);
    assert_eq!(
        error_of(v),
        "invalid metadata: fill_value 70000 is not valid for data_type uint16"
    );

    let mut v = array_json(sharding(good_config()));
    v["data_type"] = json!("uint12");
    assert_eq!(error_of(v), "invalid metadata: unknown data_type `uint12`");

    let mut v = array_json(sharding(good_config()));
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([64]);
    assert!(error_of(v).contains("chunk_shape [64] has rank 1, shape [100, 100] has rank 2"));

    let mut v = array_json(sharding(good_config()));
    v["zarr_format"] = json!(2);
    assert_eq!(
        error_of(v),
        "invalid metadata: zarr_format must be 3, got 2"
    );

    let mut v = array_json(sharding(good_config()));
    v["shape"] = json!([u64::MAX, u64::MAX]);
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([1, 1]);
    assert!(error_of(v).contains("overflows 64 bits"));

    // Each error that quotes a value quotes the value, in its place (the first two once had
    // their arguments swapped).
    for (names, want) in [
        (
            json!(["y"]),
            "dimension_names must be a list of 2 names, got [\"y\"]",
        ),
        (
            json!("yx"),
            "dimension_names must be a list of 2 names, got \"yx\"",
        ),
        (
            json!(["y", 7]),
            "dimension_names entries must be strings or null, got 7",
        ),
    ] {
        let mut v = array_json(sharding(good_config()));
        v["dimension_names"] = names;
        assert_eq!(error_of(v), format!("invalid metadata: {want}"));
    }
    let mut v = array_json(sharding(good_config()));
    v["attributes"] = json!([1]);
    assert_eq!(
        error_of(v),
        "invalid metadata: attributes must be an object, got [1]"
    );
    let mut v = array_json(sharding(good_config()));
    v["chunk_key_encoding"] = json!({"name": "default", "configuration": {"separator": "-"}});
    assert_eq!(
        error_of(v),
        "invalid metadata: invalid chunk_key_encoding {\"name\":\"default\",\"configuration\":{\"separator\":\"-\"}}"
    );

    let mut v = array_json(sharding(good_config()));
    v["surprise"] = json!(1);
    assert_eq!(
        error_of(v),
        "invalid metadata: unknown metadata member `surprise`"
    );
    let mut v = array_json(sharding(good_config()));
    v["ext"] = json!({"must_understand": false});
    assert!(ArrayMetadata::from_json(&v).is_ok());

    assert!(ArrayMetadata::parse("{not json")
        .unwrap_err()
        .to_string()
        .starts_with("invalid metadata: zarr.json is not valid JSON"));
}

#[test]
fn too_many_chunks_per_shard_is_refused_before_allocating() {
    let mut v = array_json(sharding(with(good_config(), "chunk_shape", json!([1, 1]))));
    v["shape"] = json!([1u64 << 40, 1u64 << 40]);
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!([1u64 << 20, 1u64 << 20]);
    let e = error_of(v);
    assert!(e.contains("inner chunks per shard exceed the limit"), "{e}");
}

#[test]
fn bare_sharding_config() {
    let l = ShardLayout::from_config_json(
        &good_config(),
        DataType::UInt16,
        vec![64, 64],
        FillValue::zero(&DataType::UInt16),
    )
    .unwrap();
    assert_eq!(l.index_size(), 68);
    assert_eq!(l.inner_byte_size(), 32 * 32 * 2);
    let e = ShardLayout::from_config_json(
        &good_config(),
        DataType::UInt16,
        vec![64, 64],
        FillValue(vec![0]),
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("fill value of 1 bytes for data type uint16"));
}

/// A chunk of 2^64 - 1 bytes plus a crc32c checksum does not fit in 64 bits: the parser
/// accepts the metadata (nothing is sized yet), and every size computed from it is an error,
/// never an overflow (a panic in debug builds, a wrapped size in release builds).
#[test]
fn crc32c_encoded_size_overflow_is_an_error() {
    let crc =
        CodecChain::from_json(&json!([{"name": "bytes"}, {"name": "crc32c"}]), "codecs").unwrap();
    let huge = ChunkRepr {
        shape: vec![u64::MAX],
        dtype: DataType::UInt8,
        fill_value: FillValue(vec![0]),
    };
    assert_eq!(
        crc.encoded_size(&huge).unwrap_err().to_string(),
        "invalid metadata: crc32c: an encoded chunk of 18446744073709551615 bytes plus its checksum overflows 64 bits"
    );
    // 2^64 - 5 bytes and a checksum fill 64 bits exactly; 2^64 - 4 bytes do not fit.
    let fits = ChunkRepr {
        shape: vec![u64::MAX - 4],
        ..huge.clone()
    };
    assert_eq!(
        crc.encoded_size(&fits).unwrap(),
        EncodedSize::Fixed(u64::MAX)
    );
    let over = ChunkRepr {
        shape: vec![u64::MAX - 3],
        ..huge.clone()
    };
    assert!(crc.encoded_size(&over).is_err());

    let meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": [u64::MAX], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [u64::MAX]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [u64::MAX],
            "codecs": [{"name": "bytes"}, {"name": "crc32c"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]
    }))
    .unwrap();
    // What `Array::verify` does with a stored object: errors, no panic.
    let array = Array::create(MemoryStore::new(), meta).unwrap();
    assert!(!array.check_shard_object(&le_pair(0, 4)).is_empty());
}

fn le_pair(offset: u64, nbytes: u64) -> Vec<u8> {
    [offset, nbytes]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect()
}

/// Error messages quote the host's values, but a huge value is cut: a rank-100 000 chunk grid
/// or a megabyte of `storage_transformers` must not become a message of the same size (it is
/// copied into every `shard_last_error` and log line). Sizes here are smaller (Miri runs this).
#[test]
fn huge_values_are_cut_in_error_messages() {
    let rank = 1000;
    let mut v = array_json(sharding(good_config()));
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!(vec![1u64; rank]);
    let e = error_of(v);
    // Hand-derived: 16 values, then the count of the rest; the shape's 2 values in full.
    let sixteen = vec!["1"; 16].join(", ");
    assert_eq!(
        e,
        format!(
            "invalid metadata: chunk_shape [{sixteen}, … 984 more] has rank 1000, shape [100, 100] has rank 2"
        )
    );

    let mut v = array_json(sharding(good_config()));
    v["storage_transformers"] = json!("x".repeat(10_000));
    let e = error_of(v);
    assert!(e.len() < 400, "{} bytes", e.len());
    assert!(
        e.ends_with(&format!("\"{}… (10002 bytes)", "x".repeat(255))),
        "{e}"
    );

    // Up to 16 values a list is spelled out whole, as before.
    let mut v = array_json(sharding(good_config()));
    v["chunk_grid"]["configuration"]["chunk_shape"] = json!(vec![2u64; 16]);
    assert!(error_of(v).contains(&format!(
        "chunk_shape [{}] has rank 16",
        vec!["2"; 16].join(", ")
    )));
}

fn with_dtype(data_type: Value, fill_value: Value) -> Value {
    let mut v = array_json(sharding(good_config()));
    v["data_type"] = data_type;
    v["fill_value"] = fill_value;
    v
}

/// `zarr.json` of each object-form data type is written back as it was read (name, field
/// spelling, unit spelling, fill value spelling): what zarr-python 3.1.6 writes, and the
/// zarr-extensions `struct` / `datetime64` names.
#[test]
fn object_form_data_types_are_written_back_as_read() {
    for (data_type, fill) in [
        (
            json!({"name": "raw_bytes", "configuration": {"length_bytes": 5}}),
            json!("AQID/v8="),
        ),
        (
            json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 4}}),
            json!("YWI="),
        ),
        (
            json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 12}}),
            json!("é☃"),
        ),
        (
            json!({"name": "numpy.datetime64", "configuration": {"unit": "ms", "scale_factor": 10}}),
            json!(-9223372036854775808i64),
        ),
        (
            json!({"name": "datetime64", "configuration": {"unit": "μs", "scale_factor": 1}}),
            json!(5),
        ),
        (
            json!({"name": "numpy.timedelta64", "configuration": {"unit": "generic", "scale_factor": 2147483647}}),
            json!(0),
        ),
        (
            json!({"name": "structured", "configuration": {"fields": [
                ["a", "int16"],
                ["t", {"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 1}}],
                ["n", {"name": "structured", "configuration": {"fields": [["x", "uint8"]]}}]]}}),
            json!("AQACAAAAAAAAAAM="),
        ),
        (
            json!({"name": "struct", "configuration": {"fields": [
                {"name": "x", "data_type": "float32"}, {"name": "s", "data_type": "bool"}]}}),
            json!({"x": 1.5, "s": true}),
        ),
    ] {
        let m = ArrayMetadata::from_json(&with_dtype(data_type.clone(), fill.clone())).unwrap();
        let out = m.to_json();
        assert_eq!(out["data_type"], data_type);
        assert_eq!(out["fill_value"], fill, "{data_type}");
        assert_eq!(ArrayMetadata::from_json(&out).unwrap(), m);
        m.validate().unwrap();
    }
}

/// Object-form data types that are malformed, variable-length types and core types spelled as
/// objects: each refused with an error naming the type and what is wrong.
#[test]
fn bad_object_form_data_types_are_refused_by_name() {
    let bad = |data_type: Value, fill: Value| error_of(with_dtype(data_type, fill));
    for (data_type, expected) in [
        (json!("string"), "data_type `string` is variable-length (stored with the `vlen-utf8` codec); zarrshard reads and writes only fixed-size data types"),
        (json!("variable_length_bytes"), "data_type `variable_length_bytes` is variable-length (stored with the `vlen-bytes` codec); zarrshard reads and writes only fixed-size data types"),
        (json!({"name": "string"}), "data_type `string` is variable-length (stored with the `vlen-utf8` codec); zarrshard reads and writes only fixed-size data types"),
        (json!({"name": "int32"}), r#"data_type {"name":"int32"}: a core data type is spelled as the string "int32" (Zarr v3 core)"#),
        (json!({"name": "raw_bytes", "configuration": {"length_bytes": 0}}), "data_type `raw_bytes`: configuration.length_bytes must be a positive integer, got 0"),
        (json!({"name": "raw_bytes", "configuration": {"length_bytes": 131073}}), "data_type `raw_bytes`: elements wider than 131072 bytes are not supported (length_bytes 131073)"),
        (json!({"name": "raw_bytes"}), "data_type `raw_bytes` needs a `configuration` object"),
        (json!({"name": "fixed_length_utf32", "configuration": {"length_bytes": 6}}), "data_type `fixed_length_utf32`: configuration.length_bytes must be a multiple of 4, got 6"),
        (json!({"name": "null_terminated_bytes", "configuration": {"length_bytes": 2, "x": 1}}), "data_type `null_terminated_bytes`: unknown configuration member `x`"),
        (json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 0}}), "data_type `numpy.datetime64`: configuration.scale_factor must be an integer in 1..=2147483647, got 0"),
        (json!({"name": "numpy.datetime64", "configuration": {"unit": "s", "scale_factor": 2147483648u64}}), "data_type `numpy.datetime64`: configuration.scale_factor must be an integer in 1..=2147483647, got 2147483648"),
        (json!({"name": "numpy.timedelta64", "configuration": {"unit": "sec", "scale_factor": 1}}), r#"data_type `numpy.timedelta64`: configuration.unit must be one of Y, M, W, D, h, m, s, ms, us, μs, ns, ps, fs, as, generic, got "sec""#),
        (json!({"name": "numpy.timedelta64", "configuration": {"scale_factor": 1}}), "data_type `numpy.timedelta64`: configuration.unit is required"),
        (json!({"name": "structured", "configuration": {"fields": []}}), "data_type `structured`: configuration.fields must be a non-empty list, got []"),
        (json!({"name": "structured", "configuration": {"fields": [["a", "int8"], ["a", "int8"]]}}), "data_type `structured`: field `a` appears twice"),
        (json!({"name": "structured", "configuration": {"fields": [["a", "string"]]}}), "data_type `structured`: field `a`: data_type `string` is variable-length (stored with the `vlen-utf8` codec); zarrshard reads and writes only fixed-size data types"),
        (json!({"name": "struct", "configuration": {"fields": [["a", "int8"]]}}), r#"data_type `struct`: field ["a","int8"] is not an object {"name", "data_type"}"#),
        (json!({"name": "structured", "configuration": {"fields": [["a", {"name": "raw_bytes", "configuration": {"length_bytes": 131072}}], ["b", "int8"]]}}), "data_type `structured`: elements wider than 131072 bytes are not supported"),
        (json!({"name": "float128", "configuration": {}}), "unknown data_type `float128`"),
        (json!(7), "data_type must be a string or an object, got 7"),
    ] {
        assert_eq!(bad(data_type, json!(0)), format!("invalid metadata: {expected}"));
    }
    assert_eq!(
        bad(
            json!({"name": "raw_bytes", "configuration": {"length_bytes": 2}}),
            json!("AQID")
        ),
        r#"invalid metadata: fill_value "AQID" is not valid for data_type {"name":"raw_bytes","configuration":{"length_bytes":2}}"#
    );
    // 33 structs, each the one field of the one above it.
    let mut deep = json!("uint8");
    for _ in 0..33 {
        deep = json!({"name": "structured", "configuration": {"fields": [["f", deep]]}});
    }
    let e = bad(deep, json!("AA=="));
    assert!(
        e.ends_with("data_type `structured`: structs nested more than 32 deep are not supported"),
        "{e}"
    );
}
