//! The documented limits on metadata (`zarrshard::runtime::limits`): how deep `sharding_indexed` may
//! nest and how large a document may be, the same from a file, from a `Value` and through
//! the C API; and the memory opening a large document takes.

#[path = "common/alloc.rs"]
mod alloc;

use alloc::{peak_during, Counting};
use serde_json::{json, Value};
use std::ffi::c_char;
use zarrshard::ffi::status::shard_status;
use zarrshard::runtime::limits::{MAX_METADATA_BYTES, MAX_SHARDING_NESTING};
use zarrshard::*;

#[global_allocator]
static ALLOC: Counting = Counting;

/// Tests run one at a time: peak measurements count every thread's allocations.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn bytes_le() -> Value {
    json!({"name": "bytes", "configuration": {"endian": "little"}})
}

/// A 4×4 uint16 array in one shard of 2×2 inner chunks, each inner chunk itself a shard, and
/// so on: `levels` sharding codecs inside each other.
fn nested(levels: usize) -> Value {
    let mut codecs = json!([bytes_le()]);
    for _ in 0..levels {
        codecs = json!([{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2], "codecs": codecs, "index_codecs": [bytes_le()]}}]);
    }
    json!({"zarr_format": 3, "node_type": "array", "shape": [4, 4], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": codecs})
}

fn too_deep() -> String {
    format!("invalid metadata: sharding_indexed nested more than {MAX_SHARDING_NESTING} levels deep (the limit, zarrshard::runtime::limits::MAX_SHARDING_NESTING)")
}

/// `shard_array_open` over a store with no objects: the status and the error text.
fn c_open(json: &str) -> (shard_status, String) {
    use zarrshard::ffi::array::*;
    use zarrshard::ffi::io::*;
    use zarrshard::ffi::shard_last_error;
    unsafe extern "C" fn open_object(
        _: *mut std::ffi::c_void,
        _: *const c_char,
        _: *mut shard_io_callbacks,
    ) -> i32 {
        SHARD_IO_NOT_FOUND
    }
    let store = shard_store_callbacks {
        version: SHARD_STORE_VERSION,
        flags: 0,
        userdata: std::ptr::null_mut(),
        open_object: Some(open_object),
        destroy: None,
        list: None,
    };
    let mut array = std::ptr::null_mut();
    let status = unsafe { shard_array_open(json.as_ptr().cast(), json.len(), &store, &mut array) };
    unsafe { shard_array_close(array) };
    let mut buf = vec![0u8; 1024];
    let mut n = 0;
    unsafe { shard_last_error(buf.as_mut_ptr().cast(), buf.len(), &mut n) };
    buf.truncate(n);
    (status, String::from_utf8(buf).unwrap())
}

#[test]
fn sharding_nested_to_the_limit_opens_from_a_file_and_one_more_is_refused_everywhere() {
    let _g = serial();
    // On a thread with the default 2 MiB stack: parsing, writing and reading through every
    // level stay within it.
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let dir = tempfile::tempdir().unwrap();
            let at_limit = nested(MAX_SHARDING_NESTING);
            std::fs::write(dir.path().join("zarr.json"), at_limit.to_string()).unwrap();
            let array = Array::open(FsStore::new(dir.path())).unwrap();
            let data: Vec<u8> = (0..16u16).flat_map(|v| (v * 3 + 1).to_ne_bytes()).collect();
            array.write_shard(&[0, 0], &data).unwrap();
            assert_eq!(array.read_shard(&[0, 0]).unwrap().unwrap(), data);
            assert_eq!(array.read_region_vec(&[1, 1], &[2, 2]).unwrap().len(), 8);
            assert!(array.verify().unwrap().is_empty());
            ArrayMetadata::from_json(&at_limit).unwrap();

            let past = nested(MAX_SHARDING_NESTING + 1);
            std::fs::write(dir.path().join("zarr.json"), past.to_string()).unwrap();
            let e = Array::open(FsStore::new(dir.path())).err().unwrap();
            assert_eq!(e.to_string(), too_deep());
            assert_eq!(
                ArrayMetadata::from_json(&past).unwrap_err().to_string(),
                too_deep()
            );
            assert_eq!(
                ArrayMetadata::parse(&past.to_string())
                    .unwrap_err()
                    .to_string(),
                too_deep()
            );
            // The bare configuration (C API `shard_codec_new`) counts its own level.
            let config = &past["codecs"][0]["configuration"];
            let e = ShardingCodec::from_config_json(config).unwrap_err();
            assert_eq!(e.to_string(), too_deep());
            let config = &nested(MAX_SHARDING_NESTING)["codecs"][0]["configuration"];
            ShardingCodec::from_config_json(config).unwrap();
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn c_api_open_honours_the_nesting_limit() {
    let _g = serial();
    let (status, _) = c_open(&nested(MAX_SHARDING_NESTING).to_string());
    assert_eq!(status, shard_status::SHARD_OK);
    let (status, message) = c_open(&nested(MAX_SHARDING_NESTING + 1).to_string());
    assert_eq!(status, shard_status::SHARD_ERR_INVALID_METADATA);
    assert_eq!(message, too_deep());
}

#[test]
fn far_deeper_nesting_is_an_error_naming_the_limit_not_a_stack_overflow() {
    let _g = serial();
    // 2000 levels, as text (a `Value` that deep would overflow the stack being dropped): the
    // JSON parser's own depth limit (128) stops it first; the error says what the limit on
    // nesting is.
    let open = r#"{"name": "sharding_indexed", "configuration": {"chunk_shape": [1], "index_codecs": [{"name": "bytes"}], "codecs": ["#;
    let deep = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8", "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [1]}}}}, "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{}{{"name": "bytes"}}{}]}}"#,
        open.repeat(2000),
        "]}}".repeat(2000)
    );
    let e = ArrayMetadata::parse(&deep).unwrap_err().to_string();
    let want = format!("invalid metadata: zarr.json: JSON nested deeper than 128 levels (sharding_indexed may nest at most {MAX_SHARDING_NESTING} levels) at line 1 column ");
    assert!(e.starts_with(&want), "{e}");
}

/// A valid `zarr.json` of a small unsharded array whose attributes are `attributes` (text).
fn with_attributes(attributes: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
  "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [4]}}}},
  "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{{"name": "bytes"}}],
  "attributes": {attributes}}}"#
    )
}

#[test]
fn large_attributes_open_in_memory_about_their_size() {
    let _g = serial();
    // 4 million numbers (about 16 MB of text): as a JSON tree with ordered maps each number
    // is a node of ~80 bytes (over 300 MB); kept as text they take their own size.
    let numbers: Vec<String> = (0..4_000_000u32).map(|i| (i % 1000).to_string()).collect();
    let attributes = format!(r#"{{"units": "m", "values": [{}]}}"#, numbers.join(","));
    drop(numbers);
    let doc = with_attributes(&attributes);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("zarr.json"), &doc).unwrap();
    let size = doc.len();
    let (array, peak) = peak_during(|| Array::open(FsStore::new(dir.path())).unwrap());
    assert!(
        peak < 3 * size,
        "peak {peak} for a document of {size} bytes"
    );
    // The attributes are the document's, as text.
    assert_eq!(array.metadata().attributes.as_text(), attributes);
    let (meta, peak) = peak_during(|| ArrayMetadata::parse(&doc).unwrap());
    assert!(
        peak < 3 * size,
        "peak {peak} for a document of {size} bytes"
    );
    assert_eq!(meta.attributes.as_text(), attributes);
    // Written back as they are: a new array's zarr.json holds the same text.
    let copy = tempfile::tempdir().unwrap();
    let (_, peak) = peak_during(|| Array::create(FsStore::new(copy.path()), meta.clone()).unwrap());
    assert!(
        peak < 3 * size,
        "peak {peak} writing a document of {size} bytes"
    );
    let again = Array::open(FsStore::new(copy.path())).unwrap();
    assert_eq!(again.metadata().attributes.as_text(), attributes);
    // Asked for as a tree, they are the same JSON.
    let map = again.metadata().attributes.to_map();
    assert_eq!(map["units"], json!("m"));
    assert_eq!(map["values"].as_array().unwrap().len(), 4_000_000);
}

#[test]
fn extension_members_that_may_be_ignored_are_not_built() {
    let _g = serial();
    let numbers = vec!["7"; 2_000_000].join(",");
    let doc = with_attributes("{}").replacen(
        "\"attributes\"",
        &format!(
            r#""an_extension": {{"must_understand": false, "data": [{numbers}]}}, "attributes""#
        ),
        1,
    );
    let (meta, peak) = peak_during(|| ArrayMetadata::parse(&doc).unwrap());
    assert!(peak < 3 * doc.len(), "peak {peak} for {} bytes", doc.len());
    assert_eq!(meta.shape, [4]);
    // One that must be understood is refused, as before.
    let doc = doc.replace("\"must_understand\": false", "\"must_understand\": true");
    assert_eq!(
        ArrayMetadata::parse(&doc).unwrap_err().to_string(),
        "invalid metadata: unknown metadata member `an_extension`"
    );
}

#[test]
fn documents_over_the_cap_are_refused_naming_file_and_cap() {
    let _g = serial();
    let dir = tempfile::tempdir().unwrap();
    // A file over the cap (sparse: nothing is written) is refused before it is read.
    let f = std::fs::File::create(dir.path().join("zarr.json")).unwrap();
    f.set_len(MAX_METADATA_BYTES + 1).unwrap();
    let (r, peak) = peak_during(|| Array::open(FsStore::new(dir.path())).err().unwrap());
    assert!(peak < 1 << 20, "peak {peak}");
    assert_eq!(
        r.to_string(),
        format!("invalid metadata: zarr.json has {} bytes or more, over the limit of 67108864 bytes for a metadata document (zarrshard::runtime::limits::MAX_METADATA_BYTES)", MAX_METADATA_BYTES + 1)
    );
    // The same from text (the C API's way in).
    let big = with_attributes(&format!(
        r#"{{"pad": "{}"}}"#,
        "x".repeat(MAX_METADATA_BYTES as usize)
    ));
    assert_eq!(
        ArrayMetadata::parse(&big).unwrap_err().to_string(),
        format!("invalid metadata: zarr.json has {} bytes or more, over the limit of 67108864 bytes for a metadata document (zarrshard::runtime::limits::MAX_METADATA_BYTES)", big.len())
    );
    let (status, message) = c_open(&big);
    assert_eq!(status, shard_status::SHARD_ERR_INVALID_METADATA);
    assert_eq!(message, format!("invalid metadata: zarr.json has {} bytes or more, over the limit of 67108864 bytes for a metadata document (zarrshard::runtime::limits::MAX_METADATA_BYTES)", big.len()));
    // Everything but the attributes is parsed into a tree, within its own cap.
    let shape = format!("[{}]", vec!["1"; 600_000].join(","));
    let doc = with_attributes("{}").replace("\"shape\": [4]", &format!("\"shape\": {shape}"));
    assert_eq!(
        ArrayMetadata::parse(&doc).unwrap_err().to_string(),
        "invalid metadata: zarr.json: the members other than `attributes` take more than 1048576 bytes (at `shape`; zarrshard::runtime::limits::MAX_METADATA_STRUCTURE_BYTES)"
    );
}
