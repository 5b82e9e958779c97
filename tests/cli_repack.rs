//! The `repack` and `get` commands, `--json` output, `--help` examples, and quiet stderr.

mod common;

use common::cli::{export, image, le, meta, stderr, stdout, zarrshard};
use common::write_array;
use serde_json::{json, Value};
use std::path::Path;
use zarrshard::{Array, FsStore};

const FILL: u16 = 3;

fn bytes_codec() -> Value {
    json!({"name": "bytes", "configuration": {"endian": "little"}})
}

fn zstd_inner() -> Value {
    json!([bytes_codec(), {"name": "zstd", "configuration": {"level": 1, "checksum": false}}])
}

/// The test image as zstd-compressed 8x16 inner chunks in 32x32 shards, index at the end.
fn source(dir: &Path) {
    write_array(
        dir,
        &meta(
            &[50, 70],
            &[32, 32],
            &[8, 16],
            zstd_inner(),
            json!({}),
            "end",
        ),
        &image(),
    );
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Inner chunks of shape `inner` over the 50x70 image that hold any element other than the
/// fill value, counted from the data itself.
fn nonfill_chunks(inner: [usize; 2]) -> u64 {
    let data = image();
    let at = |r: usize, c: usize| {
        u16::from_ne_bytes([data[(r * 70 + c) * 2], data[(r * 70 + c) * 2 + 1]])
    };
    let mut n = 0;
    for r0 in (0..50).step_by(inner[0]) {
        for c0 in (0..70).step_by(inner[1]) {
            let any = (r0..(r0 + inner[0]).min(50))
                .any(|r| (c0..(c0 + inner[1]).min(70)).any(|c| at(r, c) != FILL));
            n += any as u64;
        }
    }
    n
}

fn counts(out: &str) -> (u64, u64) {
    let words: Vec<&str> = out.trim().split(", ").collect();
    let num = |prefix: &str| {
        words
            .iter()
            .find_map(|w| w.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` in {out}"))
            .parse()
            .unwrap()
    };
    (num("chunks copied: "), num("chunks re-encoded: "))
}

fn json_of(args: &[&str]) -> Value {
    let o = zarrshard(args);
    assert!(o.status.success(), "{args:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", stdout(&o)))
}

#[test]
fn repack_round_trips_across_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    source(&src);
    let want = le(&image());
    let stored = nonfill_chunks([8, 16]);
    // 7 x 5 inner chunks; 4 x 2 in the all-fill top-left shard and one more are the fill value.
    assert_eq!(stored, 35 - 9);
    let gzip = json!([bytes_codec(), {"name": "gzip", "configuration": {"level": 1}}]).to_string();
    // (name, flags, expected copied, expected re-encoded, expected index location)
    let cases: Vec<(&str, Vec<&str>, u64, u64, &str)> = vec![
        (
            "smaller_shards",
            vec!["--shard-shape", "16,32"],
            stored,
            0,
            "end",
        ),
        (
            "larger_shards",
            vec!["--shard-shape", "64,48"],
            stored,
            0,
            "end",
        ),
        (
            "index_start",
            vec!["--index-location", "start"],
            stored,
            0,
            "start",
        ),
        (
            "morton",
            vec!["--order", "morton", "--shard-shape", "32,64"],
            stored,
            0,
            "end",
        ),
        (
            "gzip",
            vec!["--inner-codecs", &gzip, "--index-location", "start"],
            0,
            stored,
            "start",
        ),
        (
            "inner_10x10",
            vec!["--shard-shape", "20,30", "--inner-chunk-shape", "10,10"],
            0,
            nonfill_chunks([10, 10]),
            "end",
        ),
    ];
    for (name, flags, copied, reencoded, location) in cases {
        let dst = tmp.path().join(name);
        let mut args = vec!["repack", s(&src), s(&dst)];
        args.extend(flags.iter().copied());
        let o = zarrshard(&args);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            "",
            "{name}: stderr is not a terminal, so no progress bar"
        );
        assert_eq!(
            counts(&stdout(&o)),
            (copied, reencoded),
            "{name}: {}",
            stdout(&o)
        );
        assert_eq!(export(&dst), want, "{name}");
        let v = zarrshard(&["verify", s(&dst)]);
        assert!(v.status.success(), "{name}: {}", stdout(&v));
        let info = json_of(&["info", s(&dst), "--json"]);
        assert_eq!(info["sharding"]["index_location"], location, "{name}");
    }
    // Repacking back to the source layout gives the source's shard objects byte for byte.
    let back = tmp.path().join("back");
    let o = zarrshard(&[
        "repack",
        s(&tmp.path().join("smaller_shards")),
        s(&back),
        "--shard-shape",
        "32,32",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for key in ["c/0/1", "c/0/2", "c/1/0", "c/1/1", "c/1/2"] {
        assert_eq!(
            std::fs::read(back.join(key)).unwrap(),
            std::fs::read(src.join(key)).unwrap(),
            "{key}"
        );
    }
    assert!(
        !back.join("c/0/0").exists(),
        "the all-fill shard was written"
    );
}

#[test]
fn repack_handles_codecs_around_sharding() {
    let tmp = tempfile::tempdir().unwrap();
    let want = le(&image());
    for (name, extra, copy) in [
        ("crc_after", json!({"after": [{"name": "crc32c"}]}), true),
        (
            "transpose_before",
            json!({"before": [{"name": "transpose", "configuration": {"order": [1, 0]}}]}),
            false,
        ),
    ] {
        let src = tmp.path().join(name);
        write_array(
            &src,
            &meta(&[50, 70], &[32, 32], &[8, 16], zstd_inner(), extra, "end"),
            &image(),
        );
        let dst = tmp.path().join(format!("{name}-out"));
        let o = zarrshard(&[
            "repack",
            s(&src),
            s(&dst),
            "--shard-shape",
            "64,64",
            "--index-location",
            "start",
        ]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        let (copied, reencoded) = counts(&stdout(&o));
        // Transposed, the inner chunks are 16x8 in array order, so re-encoded.
        if copy {
            assert_eq!((copied, reencoded), (nonfill_chunks([8, 16]), 0), "{name}");
        } else {
            assert_eq!((copied, reencoded), (0, nonfill_chunks([16, 8])), "{name}");
        }
        assert_eq!(export(&dst), want, "{name}");
        let m: Value =
            serde_json::from_slice(&std::fs::read(dst.join("zarr.json")).unwrap()).unwrap();
        let names: Vec<&str> = m["codecs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        let src_meta: Value =
            serde_json::from_slice(&std::fs::read(src.join("zarr.json")).unwrap()).unwrap();
        let src_names: Vec<&str> = src_meta["codecs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, src_names, "{name}: codecs around sharding kept");
    }
}

#[test]
fn copied_chunks_keep_their_encoded_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    // Chunks compressed with gzip level 9 under metadata that says level 1: a copy keeps the
    // level-9 streams, a re-encoding would write level-1 ones.
    let gzip =
        |level: u32| json!([bytes_codec(), {"name": "gzip", "configuration": {"level": level}}]);
    write_array(
        &src,
        &meta(&[50, 70], &[32, 32], &[8, 16], gzip(9), json!({}), "end"),
        &image(),
    );
    let mut m: Value =
        serde_json::from_slice(&std::fs::read(src.join("zarr.json")).unwrap()).unwrap();
    let level = &mut m["codecs"][0]["configuration"]["codecs"][1]["configuration"]["level"];
    assert_eq!(*level, 9);
    *level = json!(1);
    std::fs::write(src.join("zarr.json"), m.to_string()).unwrap();
    let level1 = zarrshard::CodecChain::from_json(&gzip(1), "codecs").unwrap();
    let dst = tmp.path().join("dst");
    let o = zarrshard(&[
        "repack",
        s(&src),
        s(&dst),
        "--shard-shape",
        "16,48",
        "--index-location",
        "start",
        "--order",
        "morton",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (a, b) = (
        Array::open(FsStore::new(&src)).unwrap(),
        Array::open(FsStore::new(&dst)).unwrap(),
    );
    let (per_a, per_b) = ([4u64, 2], [2u64, 3]);
    let (mut compared, mut differ) = (0, 0);
    for g0 in 0..7u64 {
        for g1 in 0..5u64 {
            let raw = |array: &Array<FsStore>, per: [u64; 2]| {
                array
                    .shard_reader(&[g0 / per[0], g1 / per[1]])
                    .unwrap()
                    .read_chunk_raw(&[g0 % per[0], g1 % per[1]])
                    .unwrap()
            };
            let (x, y) = (raw(&a, per_a), raw(&b, per_b));
            assert_eq!(x, y, "inner chunk [{g0}, {g1}]");
            if x.is_some() {
                compared += 1;
                let reader = a.shard_reader(&[g0 / 4, g1 / 2]).unwrap();
                let decoded = reader.read_chunk(&[g0 % 4, g1 % 2]).unwrap();
                let fresh = level1
                    .encode(&decoded, reader.layout().inner_repr())
                    .unwrap();
                differ += (Some(fresh) != x) as u64;
            }
        }
    }
    assert_eq!(compared, nonfill_chunks([8, 16]));
    assert!(
        differ > 0,
        "level 1 and level 9 gave the same streams; the check above proves nothing"
    );
    // The new shards have no gaps: chunk bytes plus the index, nothing else.
    for entry in walk(&dst) {
        let key = entry
            .strip_prefix(&dst)
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let r = json_of(&["inspect", s(&dst), &key, "--json"]);
        assert_eq!(r["dead_bytes"], 0, "{key}");
        assert_eq!(
            r["object_bytes"].as_u64().unwrap(),
            r["chunk_bytes"].as_u64().unwrap() + r["index_bytes"].as_u64().unwrap(),
            "{key}"
        );
    }
}

/// Every shard object under `dir` (everything but zarr.json).
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = common::files_below(dir);
    files.retain(|p| p.file_name().unwrap() != "zarr.json");
    files
}

#[test]
fn repack_in_place_replaces_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("a.zarr");
    source(&src);
    let o = zarrshard(&[
        "repack",
        s(&src),
        "--index-location",
        "start",
        "--shard-shape",
        "64,64",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&stdout(&o)), (nonfill_chunks([8, 16]), 0));
    assert_eq!(export(&src), le(&image()));
    let info = json_of(&["info", s(&src), "--json"]);
    assert_eq!(info["chunk_shape"], json!([64, 64]));
    assert_eq!(info["sharding"]["index_location"], "start");
    let mut names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["a.raw", "a.zarr"], "no temporary directory left");
}

#[test]
fn repack_refuses_bad_targets_without_leaving_anything() {
    let tmp = tempfile::tempdir().unwrap();
    let src = tmp.path().join("src");
    source(&src);
    let full = tmp.path().join("full");
    std::fs::create_dir_all(&full).unwrap();
    std::fs::write(full.join("x"), b"x").unwrap();
    // A source whose second row of shards has a bad index checksum: the repack fails after
    // writing the first row, and must remove what it wrote.
    let broken = tmp.path().join("broken");
    source(&broken);
    let p = broken.join("c/1/1");
    let mut obj = std::fs::read(&p).unwrap();
    *obj.last_mut().unwrap() ^= 1;
    std::fs::write(&p, &obj).unwrap();
    let out = tmp.path().join("out");
    for (args, message) in [
        (vec!["repack", s(&src), s(&full)], "exists and is not empty"),
        (
            vec!["repack", s(&src), s(&out), "--shard-shape", "20,20"],
            "does not divide the shard shape",
        ),
        (
            vec!["repack", s(&src), s(&out), "--shard-shape", "32"],
            "has rank 1",
        ),
        (
            vec!["repack", s(&src), s(&out), "--shard-shape", "a,b"],
            "not a comma-separated list",
        ),
        (
            vec!["repack", s(&src), s(&out), "--inner-codecs", "[{"],
            "--inner-codecs is not valid JSON",
        ),
        (
            vec![
                "repack",
                s(&src),
                s(&out),
                "--inner-codecs",
                "[{\"name\": \"lzma\"}]",
            ],
            "lzma",
        ),
        (
            vec!["repack", s(&broken), s(&out), "--shard-shape", "16,16"],
            "c/1/1",
        ),
    ] {
        let o = zarrshard(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let e = stderr(&o);
        assert_eq!(e.lines().count(), 1, "{e}");
        assert!(
            e.starts_with("zarrshard: ") && e.contains(message),
            "{args:?}: {e}"
        );
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
    assert_eq!(std::fs::read(full.join("x")).unwrap(), b"x");
}

/// The 8x16 block of the exported image at inner chunk `g`, padded with the fill value past
/// the array's edge, as little-endian bytes.
fn export_block(raw: &[u8], g: [usize; 2]) -> Vec<u8> {
    let mut out = vec![];
    for r in g[0] * 8..g[0] * 8 + 8 {
        for c in g[1] * 16..g[1] * 16 + 16 {
            if r < 50 && c < 70 {
                out.extend_from_slice(&raw[(r * 70 + c) * 2..(r * 70 + c) * 2 + 2]);
            } else {
                out.extend_from_slice(&FILL.to_le_bytes());
            }
        }
    }
    out
}

#[test]
fn get_returns_decoded_and_raw_chunks() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    source(&plain);
    let crc_after = tmp.path().join("crc_after");
    write_array(
        &crc_after,
        &meta(
            &[50, 70],
            &[32, 32],
            &[8, 16],
            zstd_inner(),
            json!({"after": [{"name": "crc32c"}]}),
            "start",
        ),
        &image(),
    );
    let raw_image = le(&image());
    for dir in [&plain, &crc_after] {
        let (mut stored, mut empty) = (0, 0);
        for g0 in 0..7usize {
            for g1 in 0..5usize {
                let coords = format!("{g0},{g1}");
                let o = zarrshard(&["get", s(dir), &coords]);
                assert!(o.status.success(), "{coords}: {}", stderr(&o));
                assert_eq!(o.stdout, export_block(&raw_image, [g0, g1]), "{coords}");
                let r = zarrshard(&["get", s(dir), &coords, "--raw"]);
                let key = format!("c/{}/{}", g0 / 4, g1 / 2);
                if r.status.code() == Some(3) {
                    empty += 1;
                    assert_eq!(r.stdout, b"");
                    assert!(stderr(&r).contains("is not stored"), "{}", stderr(&r));
                    continue;
                }
                assert!(r.status.success(), "{coords}: {}", stderr(&r));
                stored += 1;
                if dir == &plain {
                    // The bytes the index entry points at, read from the file directly.
                    let ix = json_of(&["inspect", s(dir), &key, "--json"]);
                    let local = json!([g0 % 4, g1 % 2]);
                    let e = ix["chunks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|e| e["coords"] == local)
                        .unwrap();
                    let (off, n) = (
                        e["offset"].as_u64().unwrap() as usize,
                        e["nbytes"].as_u64().unwrap() as usize,
                    );
                    assert_eq!(
                        r.stdout,
                        std::fs::read(dir.join(&key)).unwrap()[off..off + n],
                        "{coords}"
                    );
                }
                let decoded = zstd::decode_all(&r.stdout[..]).unwrap();
                assert_eq!(decoded, export_block(&raw_image, [g0, g1]), "{coords}");
            }
        }
        assert_eq!((stored, empty), (26, 9), "{}", dir.display());
    }
    // -o writes the same bytes as standard output.
    let file = tmp.path().join("chunk.bin");
    let o = zarrshard(&["get", s(&plain), "6,4", "-o", s(&file)]);
    assert!(o.status.success());
    assert_eq!(o.stdout, b"");
    assert_eq!(
        std::fs::read(&file).unwrap(),
        export_block(&raw_image, [6, 4])
    );
    for (coords, message) in [
        ("7,0", "outside the array's [7, 5] inner chunks"),
        ("1", "outside the array's [7, 5] inner chunks"),
        ("x", "not a comma-separated list"),
    ] {
        let o = zarrshard(&["get", s(&plain), coords]);
        assert_eq!(o.status.code(), Some(1), "{coords}");
        assert!(stderr(&o).contains(message), "{coords}: {}", stderr(&o));
    }
}

#[test]
fn json_outputs_parse_and_match_the_array() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    source(&dir);
    let info = json_of(&["info", s(&dir), "--json"]);
    assert_eq!(info["format"], "v3");
    assert_eq!(info["shape"], json!([50, 70]));
    assert_eq!(info["data_type"], "uint16");
    assert_eq!(info["fill_value"], 3);
    assert_eq!(info["grid_shape"], json!([2, 3]));
    assert_eq!(info["sharding"]["chunks_per_shard"], json!([4, 2]));
    assert_eq!(info["sharding"]["inner_codecs"], zstd_inner());
    // 8 * 4 * 2 index entries of 16 bytes, plus the crc32c.
    assert_eq!(info["sharding"]["index_bytes"], 4 * 2 * 16 + 4);
    assert_eq!(info["sharding"]["partial_reads"], true);
    let files = walk(&dir);
    assert_eq!(info["stored_shards"], files.len() as u64);
    assert_eq!(info["total_shards"], 6);
    let total: u64 = files
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert_eq!(info["stored_bytes"], total);

    let size = std::fs::metadata(dir.join("c/1/1")).unwrap().len();
    let r = json_of(&["inspect", s(&dir), "c/1/1", "--json"]);
    assert_eq!(r["key"], "c/1/1");
    assert_eq!(r["object_bytes"], size);
    assert_eq!(r["index_location"], "end");
    assert_eq!(r["total_chunks"], 8);
    let chunks = r["chunks"].as_array().unwrap();
    assert_eq!(chunks.len(), 8);
    // Shard c/1/1 covers rows 32..64, cols 32..64: chunk [0, 0] (rows 32..40, cols 32..48)
    // is the fill value and row 3 (rows 56..64) lies past the array's 50 rows, so 5 stored.
    assert_eq!(chunks[0], json!({"coords": [0, 0], "state": "empty"}));
    assert_eq!(chunks[6], json!({"coords": [3, 0], "state": "empty"}));
    assert_eq!(r["stored_chunks"], 5);
    let sum: u64 = chunks.iter().filter_map(|c| c["nbytes"].as_u64()).sum();
    assert_eq!(r["chunk_bytes"], sum);
    assert_eq!(sum + 132, size);
    assert_eq!(r["dead_bytes"], 0);

    let v = json_of(&["verify", s(&dir), "--json"]);
    assert_eq!(v["shards_checked"], 6);
    assert_eq!(v["problems"], json!([]));
    assert_eq!(v["shards_stored"], files.len() as u64);
    assert!(v["chunks_decoded"].as_u64().unwrap() > 0, "{v}");
    // zstd without its checksum: every chunk decoded, none verified.
    assert_eq!(v["chunks_unverifiable"], v["chunks_decoded"]);
    // Break the zstd magic number of the first stored chunk of c/0/1 (chunk [0, 0] at
    // offset 0: C order, index at the end).
    let p = dir.join("c/0/1");
    let mut obj = std::fs::read(&p).unwrap();
    obj[0] ^= 0xFF;
    std::fs::write(&p, &obj).unwrap();
    let o = zarrshard(&["verify", s(&dir), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let problems = v["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v}");
    assert_eq!(problems[0]["key"], "c/0/1");
    assert_eq!(problems[0]["chunk"], json!([0, 0]));
    assert!(
        problems[0]["error"]
            .as_str()
            .unwrap()
            .starts_with("corrupt shard: inner chunk [0, 0]: "),
        "{v}"
    );
    // The text form says the same.
    let text = stdout(&zarrshard(&["verify", s(&dir)]));
    assert_eq!(
        text.trim_end(),
        format!("c/0/1: {}", problems[0]["error"].as_str().unwrap())
    );
}

#[test]
fn help_shows_an_example_for_every_command_and_flag() {
    // (command, flags whose help must carry an example using them)
    let commands: [(&str, &[&str]); 10] = [
        ("export", &[]),
        ("verify", &["--json"]),
        ("import", &[]),
        ("compact", &[]),
        ("info", &["--json"]),
        ("inspect", &["--json"]),
        (
            "repack",
            &[
                "--shard-shape",
                "--inner-chunk-shape",
                "--inner-codecs",
                "--index-location",
                "--order",
            ],
        ),
        ("get", &["--raw", "-o"]),
        ("repair", &["--dry-run"]),
        (
            "refs",
            &[
                "--format",
                "--url-prefix",
                "-o",
                "--zarr-format",
                "--name",
                "--dimension-separator",
                "--record-size",
            ],
        ),
    ];
    for (command, flags) in commands {
        let o = zarrshard(&[command, "--help"]);
        assert!(o.status.success(), "{command}");
        let help = stdout(&o);
        let examples: Vec<&str> = help
            .lines()
            .filter_map(|l| l.trim().strip_prefix("Example: "))
            .collect();
        assert!(
            examples
                .iter()
                .any(|e| e.starts_with(&format!("zarrshard {command} "))),
            "{command} --help has no example of the command:\n{help}"
        );
        for flag in flags.iter().chain(&["--quiet"]) {
            assert!(
                examples
                    .iter()
                    .any(|e| e.split_whitespace().any(|w| w == *flag)),
                "{command} --help has no example using {flag}:\n{help}"
            );
        }
    }
}

#[test]
fn long_commands_keep_stderr_clean_when_it_is_not_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    source(&dir);
    let raw = tmp.path().join("a.raw");
    let moved = tmp.path().join("b");
    for args in [
        vec!["export", s(&dir), s(&raw)],
        vec!["import", s(&raw), s(&dir)],
        vec!["repack", s(&dir), s(&moved)],
        vec!["--quiet", "repack", s(&dir), s(&tmp.path().join("c"))],
    ] {
        let o = zarrshard(&args);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert_eq!(stderr(&o), "", "{args:?}");
    }
    // verify keeps its one summary line (what it checked) and nothing else.
    let o = zarrshard(&["verify", s(&dir)]);
    assert!(o.status.success());
    let err = stderr(&o);
    assert!(
        err.starts_with("zarrshard: ")
            && err.ends_with("(no checksum)\n")
            && err.lines().count() == 1,
        "{err}"
    );
    // compact keeps its one summary line and nothing else.
    let o = zarrshard(&["compact", s(&dir)]);
    assert_eq!(stderr(&o), "zarrshard: 0 shard(s) compacted\n");
}

#[test]
fn progress_bars_are_drawn_on_a_terminal_unless_quiet() {
    // `script` (util-linux, in every Debian install) runs the command on a pseudo-terminal.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    source(&dir);
    let on_tty = |args: &str| {
        let cmd = format!("{} {args}", env!("CARGO_BIN_EXE_zarrshard"));
        let o = std::process::Command::new("script")
            .args(["-qec", &cmd, "/dev/null"])
            .output()
            .expect("util-linux `script` runs");
        assert!(o.status.success(), "{args}: {}", stdout(&o));
        stdout(&o)
    };
    let raw = tmp.path().join("x.raw");
    let shown = on_tty(&format!("export {} {}", s(&dir), s(&raw)));
    assert!(shown.contains("export ["), "{shown:?}");
    assert_eq!(std::fs::read(&raw).unwrap(), le(&image()));
    assert_eq!(
        on_tty(&format!("--quiet export {} {}", s(&dir), s(&raw))),
        ""
    );
    let shown = on_tty(&format!("repack {} {}", s(&dir), s(&tmp.path().join("r"))));
    assert!(shown.contains("repack ["), "{shown:?}");
    assert!(shown.contains("shards written: 5,"), "{shown:?}");
}

#[test]
fn repack_shards_an_unsharded_array() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = tmp.path().join("plain");
    let mut m = meta(&[50, 70], &[8, 16], &[8, 16], json!([]), json!({}), "end");
    m["codecs"] = zstd_inner();
    write_array(&plain, &m, &image());
    let want = le(&image());

    // Chunks 8x16 become the inner chunks of 32x32 shards: copied as they are.
    let sharded = tmp.path().join("sharded");
    let o = zarrshard(&["repack", s(&plain), s(&sharded), "--shard-shape", "32,32"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&stdout(&o)), (nonfill_chunks([8, 16]), 0));
    assert_eq!(export(&sharded), want);
    let info = json_of(&["info", s(&sharded), "--json"]);
    assert_eq!(info["sharding"]["inner_chunk_shape"], json!([8, 16]));
    assert_eq!(info["sharding"]["inner_codecs"], zstd_inner());
    assert_eq!(info["sharding"]["index_location"], "end");
    let mut compared = 0;
    for g0 in 0..7 {
        for g1 in 0..5 {
            let chunk = plain.join(format!("c/{g0}/{g1}"));
            let r = zarrshard(&["get", s(&sharded), &format!("{g0},{g1}"), "--raw"]);
            if chunk.exists() {
                assert_eq!(r.stdout, std::fs::read(&chunk).unwrap(), "{g0},{g1}");
                compared += 1;
            } else {
                assert_eq!(r.status.code(), Some(3), "{g0},{g1}");
            }
        }
    }
    assert_eq!(compared, nonfill_chunks([8, 16]));

    // Another inner chunk shape: re-encoded.
    let reshaped = tmp.path().join("reshaped");
    let o = zarrshard(&[
        "repack",
        s(&plain),
        s(&reshaped),
        "--shard-shape",
        "32,32",
        "--inner-chunk-shape",
        "16,16",
        "--index-location",
        "start",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(counts(&stdout(&o)), (0, nonfill_chunks([16, 16])));
    assert_eq!(export(&reshaped), want);
}

/// What the older formats' users keep in their attributes, with values whose spelling a
/// round trip through a parser could change (ordering, floats, nesting, unicode).
fn user_attributes() -> Value {
    json!({"units": "mm", "_ARRAY_DIMENSIONS": ["y", "x"], "scale": [0.5, 1e-3],
        "nested": {"b": [1, null, true], "a": "µm"}, "empty": {}})
}

/// The `attributes` of DIR/zarr.json, as JSON.
fn written_attributes(dir: &Path) -> Value {
    let doc: Value =
        serde_json::from_slice(&std::fs::read(dir.join("zarr.json")).unwrap()).unwrap();
    doc["attributes"].clone()
}

#[test]
fn repack_carries_legacy_attributes_into_zarr_json() {
    let tmp = tempfile::tempdir().unwrap();
    // A Zarr v2 sharding-prototype array (4×6 uint16, 2×2 chunks, 2×1 chunks per shard) with
    // its user attributes in `.zattrs`.
    let v2 = tmp.path().join("v2.zarr");
    std::fs::create_dir_all(&v2).unwrap();
    std::fs::write(
        v2.join(".zarray"),
        json!({"zarr_format": 2, "shape": [4, 6], "chunks": [2, 2],
        "dtype": "<u2", "compressor": null, "fill_value": 0, "order": "C", "filters": null,
        "shards": [2, 1], "shard_format": "indexed"})
        .to_string(),
    )
    .unwrap();
    let zattrs = serde_json::to_string_pretty(&user_attributes()).unwrap();
    std::fs::write(v2.join(".zattrs"), &zattrs).unwrap();
    let data: Vec<u8> = (1..=24u16).flat_map(|v| v.to_ne_bytes()).collect();
    let raw = tmp.path().join("in.raw");
    std::fs::write(&raw, le(&data)).unwrap();
    let o = zarrshard(&["import", s(&raw), s(&v2)]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Into a new directory, and in place (where `.zattrs` goes with the old directory).
    let dst = tmp.path().join("v3.zarr");
    let o = zarrshard(&["repack", s(&v2), s(&dst)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(written_attributes(&dst), user_attributes());
    let o = zarrshard(&["repack", s(&v2), "--shard-shape", "4,6"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!v2.join(".zattrs").exists() && v2.join("zarr.json").is_file());
    assert_eq!(written_attributes(&v2), user_attributes());
    assert_eq!(export(&v2), le(&data));
    // The text itself is carried, not a re-spelling of it.
    let text = String::from_utf8(std::fs::read(v2.join("zarr.json")).unwrap()).unwrap();
    assert!(text.contains(&zattrs), "{text}");

    // A v3-draft array's attributes, likewise.
    let root = tmp.path().join("draft");
    std::fs::create_dir_all(root.join("meta/root")).unwrap();
    std::fs::write(
        root.join("zarr.json"),
        json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"}).to_string(),
    )
    .unwrap();
    let array_json = root.join("meta/root/img.array.json");
    std::fs::write(
        &array_json,
        json!({"shape": [4], "data_type": "<u2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": null, "fill_value": 0, "extensions": [],
        "attributes": user_attributes(), "storage_transformers": [{"extension":
            "https://purl.org/zarr/spec/storage_transformers/sharding/1.0", "type": "indexed",
            "configuration": {"chunks_per_shard": [2]}}]})
        .to_string(),
    )
    .unwrap();
    let dst = tmp.path().join("from-draft.zarr");
    let o = zarrshard(&["repack", s(&array_json), s(&dst)]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(written_attributes(&dst), user_attributes());

    // `.zattrs` that is not an object is an error naming it, not attributes lost.
    std::fs::write(tmp.path().join("v3.zarr/../bad.zattrs"), "[1]").unwrap();
    let bad = tmp.path().join("bad.zarr");
    std::fs::create_dir_all(&bad).unwrap();
    std::fs::copy(tmp.path().join("bad.zattrs"), bad.join(".zattrs")).unwrap();
    std::fs::write(
        bad.join(".zarray"),
        json!({"zarr_format": 2, "shape": [4], "chunks": [2],
        "dtype": "<u2", "compressor": null, "fill_value": 0, "order": "C", "filters": null})
        .to_string(),
    )
    .unwrap();
    let o = zarrshard(&["info", s(&bad)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "zarrshard: invalid metadata: {}: .zattrs must be an object, got [1]\n",
            bad.display()
        )
    );
}
