//! Torn shards: `verify` reports every truncation of a shard, and `repair` cuts a torn
//! append-only update back to the previous shard, byte for byte, when its index carries a
//! crc32c — and refuses, leaving the object alone, when nothing can be proven.

use serde_json::{json, Value};
use std::path::Path;
use zarrshard::shard::repair;
use zarrshard::*;

fn meta(location: &str, crc: bool) -> Value {
    let bytes = json!({"name": "bytes", "configuration": {"endian": "little"}});
    let index_codecs = if crc {
        json!([bytes, {"name": "crc32c"}])
    } else {
        json!([bytes])
    };
    json!({"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [2, 2],
            "codecs": [bytes, {"name": "zstd", "configuration": {"level": 1}}],
            "index_codecs": index_codecs, "index_location": location}}]})
}

/// Version `v` of the 8×8 array (native byte order).
fn data(v: u16) -> Vec<u8> {
    (0..64u16)
        .flat_map(|i| (v * 100 + i).to_ne_bytes())
        .collect()
}

/// An array whose one shard holds version 1 (buffered), then version 2 written over it with
/// `strategy`. Returns the array and the shard's bytes after each write.
fn two_versions(
    dir: &Path,
    location: &str,
    crc: bool,
    strategy: WriteStrategy,
) -> (Array<FsStore>, Vec<u8>, Vec<u8>) {
    let m = ArrayMetadata::from_json(&meta(location, crc)).unwrap();
    let array = Array::create(FsStore::new(dir), m).unwrap();
    array
        .write_shard_with(
            &[0, 0],
            &data(1),
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )
        .unwrap();
    let v1 = std::fs::read(dir.join("c/0/0")).unwrap();
    array
        .write_shard_with(&[0, 0], &data(2), strategy, WriteOptions::default())
        .unwrap();
    let v2 = std::fs::read(dir.join("c/0/0")).unwrap();
    (array, v1, v2)
}

fn read_back(array: &Array<FsStore>) -> Vec<u8> {
    array.read_shard(&[0, 0]).unwrap().unwrap()
}

#[test]
fn every_cut_of_an_append_only_update_is_reported_and_repaired_to_the_previous_shard() {
    let dir = tempfile::tempdir().unwrap();
    let (array, v1, v2) = two_versions(
        dir.path(),
        "end",
        true,
        WriteStrategy::Update(UpdateMode::AppendOnly),
    );
    assert!(
        v2.len() > v1.len() && v2[..v1.len()] == v1[..],
        "append-only keeps the old object as a prefix"
    );
    let path = dir.path().join("c/0/0");
    let (mut repaired, mut refused) = (0, 0);
    for cut in 0..v2.len() {
        std::fs::write(&path, &v2[..cut]).unwrap();
        let problems = array.verify().unwrap();
        if cut == v1.len() {
            // Cut exactly at the old end: that is the previous shard, complete and valid.
            assert!(problems.is_empty());
            assert_eq!(read_back(&array), data(1));
            assert!(array.repair(false).unwrap().is_empty());
            continue;
        }
        assert!(
            !problems.is_empty(),
            "cut at {cut} of {} not reported",
            v2.len()
        );
        // A dry run reports and writes nothing.
        let dry = array.repair(true).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), &v2[..cut]);
        let done = array.repair(false).unwrap();
        assert_eq!(dry, done);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].0, "c/0/0");
        if cut > v1.len() {
            assert_eq!(
                done[0].1,
                ShardRepair::Recovered {
                    before: cut as u64,
                    size: v1.len() as u64,
                    chunks: 16
                }
            );
            assert_eq!(
                std::fs::read(&path).unwrap(),
                v1,
                "repaired shard is the previous one, byte for byte"
            );
            assert_eq!(read_back(&array), data(1));
            assert!(array.verify().unwrap().is_empty());
            repaired += 1;
        } else {
            // Cut into the first version: nothing earlier to return to; left as it is.
            assert!(
                matches!(&done[0].1, ShardRepair::Unrecoverable(why) if why == "no earlier index with a valid crc32c in the object"),
                "{:?}",
                done[0].1
            );
            assert_eq!(std::fs::read(&path).unwrap(), &v2[..cut]);
            refused += 1;
        }
    }
    println!("repair: {} cuts of a {}-byte append-only update: {repaired} repaired to the previous shard byte for byte, {refused} (inside the first version) refused, 1 (at the old end) already valid", v2.len(), v2.len());
}

#[test]
fn verify_reports_every_truncation_of_every_kind_of_shard() {
    let mut n = 0;
    for location in ["start", "end"] {
        for crc in [false, true] {
            for strategy in [
                WriteStrategy::Buffered,
                WriteStrategy::Streaming,
                WriteStrategy::Update(UpdateMode::AppendOnly),
                WriteStrategy::Update(UpdateMode::InPlace),
            ] {
                let dir = tempfile::tempdir().unwrap();
                let (array, v1, v2) = two_versions(dir.path(), location, crc, strategy);
                // `verify` = each stored object through `check_shard_object` (in memory here:
                // 10^4 cuts; the file path is exercised by the tests above).
                for cut in 0..v2.len() {
                    if array.check_shard_object(&v2[..cut]).is_empty() {
                        // Only a cut that leaves a complete earlier shard may verify clean,
                        // and then it must read as that shard.
                        assert_eq!(
                            &v2[..cut],
                            &v1[..],
                            "{location} crc={crc} {strategy:?}: cut at {cut} verified clean"
                        );
                        std::fs::write(dir.path().join("c/0/0"), &v2[..cut]).unwrap();
                        assert_eq!(read_back(&array), data(1));
                    }
                    n += 1;
                }
            }
        }
    }
    println!("repair: verify over {n} truncated shards (index at start/end, with/without crc32c, 4 writers): every one reported or a complete earlier shard");
}

#[test]
fn what_cannot_be_proven_is_left_alone() {
    for (location, crc, why) in [
        ("start", true, "the index is at the start, where updates rewrite it: no earlier index can be proven intact"),
        ("end", false, "the index has no crc32c: an earlier index cannot be proven intact"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (array, _, v2) = two_versions(dir.path(), location, crc, WriteStrategy::Update(UpdateMode::AppendOnly));
        let path = dir.path().join("c/0/0");
        let torn = &v2[..v2.len() - 3];
        std::fs::write(&path, torn).unwrap();
        assert_eq!(array.repair(false).unwrap(), vec![("c/0/0".to_string(), ShardRepair::Unrecoverable(why.into()))]);
        assert_eq!(std::fs::read(&path).unwrap(), torn);
    }
    // A flipped byte inside a chunk under a valid index: the chunk is lost, nothing earlier.
    let dir = tempfile::tempdir().unwrap();
    let (array, _, mut v2) = two_versions(dir.path(), "end", true, WriteStrategy::Buffered);
    v2[3] ^= 0xff;
    std::fs::write(dir.path().join("c/0/0"), &v2).unwrap();
    assert_eq!(
        array.repair(false).unwrap(),
        vec![(
            "c/0/0".to_string(),
            ShardRepair::Unrecoverable(repair::CORRUPT_CHUNK_UNDER_VALID_INDEX.into())
        )]
    );
    assert_eq!(std::fs::read(dir.path().join("c/0/0")).unwrap(), v2);
}

/// docs/reliability.md, "Torn shards and repair": a corrupt chunk under a valid index is
/// reported and left alone. With an append-only history the object also holds older indexes
/// with valid checksums; repair must not cut the object back to one of them (that would drop
/// the chunks written since, valid ones included).
#[test]
fn a_corrupt_chunk_under_a_valid_current_index_is_not_rolled_back() {
    let dir = tempfile::tempdir().unwrap();
    let m = ArrayMetadata::from_json(&meta("end", true)).unwrap();
    let array = Array::create(FsStore::new(dir.path()), m).unwrap();
    array.write_region(&[0, 0], &[8, 8], &data(1)).unwrap(); // buffered: index 1
    let v1 = std::fs::read(dir.path().join("c/0/0")).unwrap();
    let c: Vec<u8> = [900u16; 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
    array.write_region(&[0, 0], &[2, 2], &c).unwrap(); // append-only: chunk C, index 2
    let d: Vec<u8> = [555u16; 4].iter().flat_map(|v| v.to_ne_bytes()).collect();
    array.write_region(&[6, 6], &[2, 2], &d).unwrap(); // append-only: chunk D, index 3
    let path = dir.path().join("c/0/0");
    let before = std::fs::read(&path).unwrap();
    // Bit rot in chunk C; index 3 (the last, current one) is intact.
    let loc = array
        .shard_reader(&[0, 0])
        .unwrap()
        .chunk_location(&[0, 0])
        .unwrap()
        .unwrap();
    let mut obj = before.clone();
    obj[(loc.offset + loc.nbytes / 2) as usize] ^= 0xff;
    std::fs::write(&path, &obj).unwrap();
    assert_eq!(array.verify().unwrap().len(), 1);
    // The first version is still there, a prefix ending with an index whose checksum matches
    // (what a rollback would return to): cut back to it, the object verifies clean.
    assert!(before.len() > v1.len() && obj[..v1.len()] == v1[..]);
    assert!(array.check_shard_object(&obj[..v1.len()]).is_empty());
    let expected = vec![(
        "c/0/0".to_string(),
        ShardRepair::Unrecoverable(repair::CORRUPT_CHUNK_UNDER_VALID_INDEX.into()),
    )];
    assert_eq!(array.repair(true).unwrap(), expected);
    assert_eq!(array.repair(false).unwrap(), expected);
    assert_eq!(std::fs::read(&path).unwrap(), obj, "left as it is");
    // Chunk D, written last, still reads; chunk C is reported, not replaced by older data.
    assert_eq!(array.read_region_vec(&[6, 6], &[2, 2]).unwrap(), d);
    assert!(array.read_region_vec(&[0, 0], &[2, 2]).is_err());
}

#[cfg(feature = "cli")]
fn cli(args: &[&str]) -> (i32, String, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_zarrshard"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[cfg(feature = "cli")]
#[test]
fn the_repair_command_and_its_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let (_, v1, v2) = two_versions(
        dir.path(),
        "end",
        true,
        WriteStrategy::Update(UpdateMode::AppendOnly),
    );
    let path = dir.path().join("c/0/0");
    // Clean: exit 0, nothing printed.
    assert_eq!(
        cli(&["repair", d]),
        (
            0,
            String::new(),
            "zarrshard: 0 damaged shard(s): 0 recovered, 0 unrecoverable\n".into()
        )
    );
    let cut = v1.len() + 10;
    std::fs::write(&path, &v2[..cut]).unwrap();
    let (code, out, _) = cli(&["verify", d]);
    assert_eq!(code, 1);
    assert!(out.starts_with("c/0/0: "), "{out}");
    let line = format!(
        "c/0/0: {{}}: 16 inner chunk(s) under the index ending at byte {}; lost: the 10 byte(s) after it (the chunks and index of an interrupted write)\n",
        v1.len()
    );
    let (code, out, err) = cli(&["repair", d, "--dry-run"]);
    assert_eq!((code, out), (2, line.replace("{}", "recoverable")));
    assert_eq!(err, "zarrshard: 1 damaged shard(s): 1 recoverable (dry run, nothing written), 0 unrecoverable\n");
    assert_eq!(std::fs::read(&path).unwrap(), &v2[..cut]);
    let (code, out, _) = cli(&["repair", d]);
    assert_eq!((code, out), (2, line.replace("{}", "recovered")));
    assert_eq!(std::fs::read(&path).unwrap(), v1);
    assert_eq!(cli(&["verify", d]).0, 0);
    // Unrecoverable: exit 3, the object untouched.
    std::fs::write(&path, &v1[..v1.len() - 1]).unwrap();
    let (code, out, _) = cli(&["repair", d]);
    assert_eq!(code, 3);
    assert_eq!(out, "c/0/0: cannot recover: no earlier index with a valid crc32c in the object (left as it is)\n");
    assert_eq!(std::fs::read(&path).unwrap(), &v1[..v1.len() - 1]);
    // Errors: exit 1, one line.
    let (code, _, err) = cli(&["repair", "/nonexistent/array"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("zarrshard: ") && err.lines().count() == 1,
        "{err}"
    );
}

/// A torn write whose bytes hold a crc-valid index that no version ever ended with: repair
/// must return to the real previous version, not to the forged one.
#[test]
fn a_crc_valid_index_inside_the_torn_bytes_is_not_taken_for_a_version() {
    let dir = tempfile::tempdir().unwrap();
    let m = ArrayMetadata::from_json(&meta("end", true)).unwrap();
    let array = Array::create(FsStore::new(dir.path()), m).unwrap();
    array
        .write_shard_with(
            &[0, 0],
            &data(1),
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )
        .unwrap();
    let path = dir.path().join("c/0/0");
    let v1 = std::fs::read(&path).unwrap();
    // 16 inner chunks: the index is 16 × 16 bytes of entries and a crc32c.
    let index_len = 16 * 16 + 4;
    let with_crc = |entries: &[u8]| {
        let mut out = entries.to_vec();
        out.extend_from_slice(&crc32c::crc32c(entries).to_le_bytes());
        out
    };
    let v1_entries = &v1[v1.len() - index_len..v1.len() - 4];
    let forged = [
        // Every chunk empty: nothing to decode, so a checksum was all it had to pass.
        with_crc(&[0xff; 16 * 16]),
        // The previous index itself, copied: its chunks decode, but it does not start where
        // they end.
        with_crc(v1_entries),
    ];
    for (k, fake) in forged.iter().enumerate() {
        let mut torn = v1.clone();
        torn.extend((0..37u8).map(|b| b.wrapping_mul(29) ^ 0x5a)); // chunk bytes of the torn write
        torn.extend_from_slice(fake);
        torn.extend((0..11u8).map(|b| b.wrapping_mul(13) ^ 0xa5));
        std::fs::write(&path, &torn).unwrap();
        assert!(!array.verify().unwrap().is_empty(), "forgery {k}: torn");
        let done = array.repair(false).unwrap();
        assert_eq!(
            done,
            vec![(
                "c/0/0".to_string(),
                ShardRepair::Recovered {
                    before: torn.len() as u64,
                    size: v1.len() as u64,
                    chunks: 16
                }
            )],
            "forgery {k}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), v1, "forgery {k}");
        assert_eq!(read_back(&array), data(1), "forgery {k}");
    }
}
