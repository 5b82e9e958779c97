//! `refs --format parquet` of an array with nothing stored: every row carries the encoded fill
//! chunk, and memory must not grow with the number of such rows (it grew by one copy of the
//! chunk per row: 0.5 GB for the array below). Alone in its test binary, so the peak resident
//! size of its children is this command's.

#![cfg(feature = "parquet")]

use serde_json::json;
use std::process::Command;

#[test]
fn parquet_of_an_empty_array_needs_memory_independent_of_its_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("sp");
    std::fs::create_dir_all(&a).unwrap();
    // 2000 inner chunks of 256 KiB (uint8, `bytes` only), nothing stored: 500 MiB of fill
    // chunks if each row held its own copy.
    std::fs::write(
        a.join("zarr.json"),
        json!({"zarr_format": 3, "node_type": "array", "shape": [2000, 262144], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2000, 262144]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [1, 262144], "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}}]})
        .to_string(),
    )
    .unwrap();
    let out = tmp.path().join("pq");
    let o = Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args([
            "refs",
            a.to_str().unwrap(),
            "--format",
            "parquet",
            "--url-prefix",
            "x",
        ])
        .args(["-o", out.to_str().unwrap(), "--name", "s"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out.join("s/refs.0.parq").is_file());
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) },
        0
    );
    // The shared fill chunk, one parquet page (1 MiB) and its batch, the compressed file.
    let max_rss_mib = ru.ru_maxrss / 1024; // KiB on Linux
    assert!(
        max_rss_mib < 64,
        "peak resident size {max_rss_mib} MiB for 2000 empty rows of 256 KiB"
    );
    eprintln!("peak resident size: {max_rss_mib} MiB");
}
