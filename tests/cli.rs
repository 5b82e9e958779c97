//! The `zarrshard` command-line contract: export, verify, info, inspect, and errors.

mod common;

use common::cli::{export, image, le, meta, stderr, stdout, zarrshard};
use common::write_array;
use serde_json::json;
use std::process::Command;

#[test]
fn export_matches_the_original_across_configurations() {
    let tmp = tempfile::tempdir().unwrap();
    let data = image();
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let cases = [
        ("plain_end", json!([bytes]), json!({}), "end"),
        (
            "zstd_start",
            json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
            json!({}),
            "start",
        ),
        (
            "transpose_before",
            json!([bytes, {"name": "gzip", "configuration": {"level": 1}}]),
            json!({"before": [{"name": "transpose", "configuration": {"order": [1, 0]}}]}),
            "end",
        ),
        (
            "crc_after",
            json!([bytes]),
            json!({"after": [{"name": "crc32c"}]}),
            "end",
        ),
        (
            "nested",
            json!([{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
            "codecs": [bytes, {"name": "blosc", "configuration": {"cname": "zstd", "clevel": 3, "shuffle": "bitshuffle", "typesize": 2, "blocksize": 0}}],
            "index_codecs": [bytes]}}]),
            json!({}),
            "start",
        ),
    ];
    for (name, inner, extra, loc) in cases {
        let dir = tmp.path().join(name);
        // transpose [1,0] before sharding makes the shard seen by sharding 32x32 too.
        write_array(
            &dir,
            &meta(&[50, 70], &[32, 32], &[8, 16], inner, extra, loc),
            &data,
        );
        assert!(
            !dir.join("c/0/0").exists(),
            "{name}: an all-fill shard was written"
        );
        assert_eq!(export(&dir), le(&data), "{name}");
        let v = zarrshard(&["verify", dir.to_str().unwrap()]);
        assert!(v.status.success(), "{name}: {}{}", stdout(&v), stderr(&v));
        assert_eq!(stdout(&v), "");
    }
}

#[test]
fn verify_names_shard_and_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    write_array(
        &dir,
        &meta(
            &[50, 70],
            &[32, 32],
            &[8, 16],
            json!([bytes, {"name": "crc32c"}]),
            json!({}),
            "start",
        ),
        &image(),
    );
    // Shard c/0/1 (index at start: 8 chunks * 16 + 4 = 132 bytes); its first stored chunk
    // is [0, 0] at offset 132 (C order). Flip one of its data bytes.
    let p = dir.join("c/0/1");
    let mut obj = std::fs::read(&p).unwrap();
    obj[140] ^= 0x55;
    std::fs::write(&p, &obj).unwrap();
    let v = zarrshard(&["verify", dir.to_str().unwrap()]);
    assert_eq!(v.status.code(), Some(1));
    let out = stdout(&v);
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with("c/0/1: checksum mismatch: inner chunk [0, 0]: crc32c codec: stored"),
        "{out}"
    );

    // Break the index checksum of another shard: one line for that shard.
    let p = dir.join("c/1/0");
    let mut obj = std::fs::read(&p).unwrap();
    obj[3] ^= 1;
    std::fs::write(&p, &obj).unwrap();
    let out = stdout(&zarrshard(&["verify", dir.to_str().unwrap()]));
    assert!(
        out.lines()
            .any(|l| l.starts_with("c/1/0: checksum mismatch: shard index")),
        "{out}"
    );
    assert_eq!(out.lines().count(), 2);
}

#[test]
fn inspect_shows_index_and_dead_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    write_array(
        &dir,
        &meta(
            &[50, 70],
            &[32, 32],
            &[8, 16],
            json!([bytes]),
            json!({}),
            "start",
        ),
        &image(),
    );
    // Append 10 bytes nothing points at.
    let p = dir.join("c/1/1");
    let mut obj = std::fs::read(&p).unwrap();
    let size = obj.len();
    obj.extend_from_slice(&[0xEE; 10]);
    std::fs::write(&p, &obj).unwrap();
    let o = zarrshard(&["inspect", dir.to_str().unwrap(), "c/1/1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    // Each inner chunk is 8*16*2 = 256 bytes; the index is 8*16+4 = 132 bytes at the start.
    assert!(
        out.starts_with(&format!(
            "shard c/1/1: {} bytes, index 132 bytes at the start\n",
            size + 10
        )),
        "{out}"
    );
    let words = |n: usize| {
        out.lines()
            .nth(n)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    // Shard c/1/1 covers rows 32..64 and columns 32..64: chunk [0, 0] (rows 32..40,
    // cols 32..48) is the fill value, so it is empty and [0, 1] is the first one stored.
    assert_eq!(words(2), ["[0,", "0]", "-", "-", "empty"]);
    assert_eq!(words(3), ["[0,", "1]", "132", "256", "stored"]);
    assert_eq!(out.lines().count(), 2 + 8 + 1);
    assert!(out.contains("dead bytes: 10,"), "{out}");
}

#[test]
fn info_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    write_array(
        &dir,
        &meta(
            &[50, 70],
            &[32, 32],
            &[8, 16],
            json!([bytes]),
            json!({}),
            "end",
        ),
        &image(),
    );
    let out = stdout(&zarrshard(&["info", dir.to_str().unwrap()]));
    assert!(
        out.contains("shape: [50, 70]\n") && out.contains("chunks per shard: [4, 2]\n"),
        "{out}"
    );
    assert!(out.contains("index: 132 bytes at the end\n"), "{out}");
    assert!(out.contains("stored shards: 5 of 6"), "{out}");

    // Every failure: exit 1, exactly one line on stderr, nothing on stdout.
    let missing = tmp.path().join("nope");
    let bad_json = tmp.path().join("bad");
    std::fs::create_dir_all(&bad_json).unwrap();
    std::fs::write(bad_json.join("zarr.json"), "{\"zarr_format\": 3,").unwrap();
    for args in [
        vec!["export", missing.to_str().unwrap(), "/tmp/x"],
        vec!["verify", bad_json.to_str().unwrap()],
        vec!["inspect", dir.to_str().unwrap(), "c/9/9"],
        vec!["inspect", dir.to_str().unwrap(), "../../etc/passwd"],
    ] {
        let o = zarrshard(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o).lines().count(), 1, "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).starts_with("zarrshard: "));
    }
    let e = stderr(&zarrshard(&["verify", bad_json.to_str().unwrap()]));
    assert!(e.contains("zarr.json is not valid JSON"), "{e}");
}

#[test]
fn import_then_compact() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let m = meta(
        &[50, 70],
        &[32, 32],
        &[8, 16],
        json!([bytes, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]),
        json!({}),
        "end",
    );
    let reference = tmp.path().join("reference");
    write_array(&reference, &m, &image());
    let raw = tmp.path().join("image.raw");
    std::fs::write(&raw, le(&image())).unwrap();

    let dir = tmp.path().join("imported");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(reference.join("zarr.json"), dir.join("zarr.json")).unwrap();
    for strategy in ["buffered", "streaming", "update", "update-in-place"] {
        let o = zarrshard(&[
            "import",
            raw.to_str().unwrap(),
            dir.to_str().unwrap(),
            "--strategy",
            strategy,
        ]);
        assert!(o.status.success(), "{strategy}: {}", stderr(&o));
        assert_eq!(export(&dir), le(&image()), "{strategy}");
        assert!(
            !dir.join("c/0/0").exists(),
            "{strategy}: the all-fill shard was written"
        );
    }
    // Buffered C order gives exactly the shards of the whole-shard encoder.
    let o = zarrshard(&["import", raw.to_str().unwrap(), dir.to_str().unwrap()]);
    assert!(o.status.success());
    for key in ["c/0/1", "c/1/0", "c/1/1", "c/0/2", "c/1/2"] {
        assert_eq!(
            std::fs::read(dir.join(key)).unwrap(),
            std::fs::read(reference.join(key)).unwrap(),
            "{key}"
        );
    }

    // An update over existing shards appends: dead bytes that compact reclaims.
    let o = zarrshard(&[
        "import",
        raw.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--strategy",
        "update",
    ]);
    assert!(o.status.success());
    let grown = std::fs::metadata(dir.join("c/0/1")).unwrap().len();
    assert!(grown > std::fs::metadata(reference.join("c/0/1")).unwrap().len());
    let o = zarrshard(&["compact", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = stdout(&o);
    assert_eq!(report.lines().count(), 5, "{report}");
    assert!(report.contains(&format!("c/0/1: {grown} -> ")), "{report}");
    assert_eq!(
        std::fs::read(dir.join("c/0/1")).unwrap(),
        std::fs::read(reference.join("c/0/1")).unwrap()
    );
    assert_eq!(export(&dir), le(&image()));

    // Standard input works; wrong sizes are one-line errors.
    let mut child = Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args(["import", "-", dir.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(&le(&image()))
        .unwrap();
    assert!(child.wait().unwrap().success());
    let before = std::fs::read(dir.join("c/0/1")).unwrap();
    for (len, word) in [(7000 - 1, "shorter"), (7000 + 1, "longer")] {
        let mut data = vec![0x77u8; 7000];
        data.resize(len, 0);
        std::fs::write(&raw, &data).unwrap();
        let o = zarrshard(&["import", raw.to_str().unwrap(), dir.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(1));
        assert_eq!(
            stderr(&o),
            format!(
                "zarrshard: invalid argument: the input is {word} than the array's 7000 bytes\n"
            )
        );
        // Refused before any shard was touched.
        assert_eq!(std::fs::read(dir.join("c/0/1")).unwrap(), before);
    }
}
