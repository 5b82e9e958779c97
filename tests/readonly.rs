//! Reading an array the process may read but not write: another user's world-readable files
//! (a shared dataset), as a read-only mount would be. `FileIo` used to open every file whose
//! mode has a write bit for writing, so such an array failed to open with `EACCES`.
//!
//! The other user is simulated by running this test binary again as `nobody` (uid 65534),
//! which needs root; run as another user the tests say they are skipped.

mod common;

use common::noise;
use serde_json::json;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use zarrshard::*;

const NOBODY: u32 = 65534;
/// Set in the child process: the array to read.
const DIR_VAR: &str = "ZARRSHARD_TEST_READONLY_DIR";

fn meta() -> serde_json::Value {
    json!({
        "zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 8]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}],
    })
}

fn is_root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}

/// Every directory and file under `dir` world-readable, writable by the owner only.
fn share(dir: &Path) {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            share(&p);
        } else {
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
}

#[test]
fn another_users_array_reads_with_the_library_and_the_tool() {
    if !is_root() {
        eprintln!("skipped: needs root to read as another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let data = noise(8 * 8 * 2, 7);
    let array = Array::create(
        FsStore::new(&dir),
        ArrayMetadata::from_json(&meta()).unwrap(),
    )
    .unwrap();
    array.write_region(&[0, 0], &[8, 8], &data).unwrap();
    share(tmp.path());

    // The library, in this test binary run again as `nobody` (the test below).
    let child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "as_nobody_read_and_refuse_to_write",
            "--nocapture",
        ])
        .env(DIR_VAR, &dir)
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&child.stdout).into_owned()
        + &String::from_utf8_lossy(&child.stderr);
    assert!(child.status.success(), "{out}");
    assert!(out.contains("1 passed"), "{out}");

    // The tool (built with the `cli` feature).
    #[cfg(feature = "cli")]
    {
        let info = Command::new(env!("CARGO_BIN_EXE_zarrshard"))
            .args(["info", dir.to_str().unwrap()])
            .uid(NOBODY)
            .gid(NOBODY)
            .output()
            .unwrap();
        assert!(
            info.status.success(),
            "{}",
            String::from_utf8_lossy(&info.stderr)
        );
    }
    // Nothing was changed by the reader.
    assert_eq!(array.read_region_vec(&[0, 0], &[8, 8]).unwrap(), data);
}

/// Run by the test above as `nobody`; does nothing in a plain test run.
#[test]
fn as_nobody_read_and_refuse_to_write() {
    let Some(dir) = std::env::var_os(DIR_VAR) else {
        return;
    };
    let data = noise(8 * 8 * 2, 7);
    let array = Array::open(FsStore::new(&dir)).unwrap();
    assert_eq!(array.read_region_vec(&[0, 0], &[8, 8]).unwrap(), data);
    let reader = array.shard_reader(&[1, 0]).unwrap();
    let mut chunk = vec![0u8; 8];
    reader.read_chunk_into(&[1, 3], &mut chunk).unwrap();
    // Rows 6 and 7, columns 6 and 7 of the array.
    let want: Vec<u8> = [6usize, 7]
        .iter()
        .flat_map(|y| data[(y * 8 + 6) * 2..][..4].to_vec())
        .collect();
    assert_eq!(chunk, want);
    // Writing still needs write access: the error is the system's "permission denied".
    match array.write_region(&[0, 0], &[2, 2], &[0u8; 8]) {
        Err(Error::Io { code, .. }) => assert_eq!(code, libc::EACCES),
        other => panic!("{other:?}"),
    }
    assert_eq!(array.read_region_vec(&[0, 0], &[8, 8]).unwrap(), data);
}

#[test]
fn a_descriptor_opened_for_reading_is_reopened_to_write() {
    // A file whose mode has no write bit opens read-only; a later write through the same
    // `FileIo` used that descriptor and failed with EBADF whatever the process's rights.
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("obj");
    std::fs::write(&path, b"abcdef").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let io = FileIo::new(&path);
    let got = io.read(ByteRange::FromStart(1, Some(3))).unwrap().unwrap();
    assert_eq!(got.data, b"bcd");
    let written = io.write_at(0, b"X");
    if is_root() {
        // Root may write a file without write bits.
        written.unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"Xbcdef");
    } else {
        match written {
            Err(Error::Io { code, .. }) => assert_eq!(code, libc::EACCES),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdef");
    }
}
