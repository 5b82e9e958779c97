//! The command-line contract at its edges: usage errors, a closed stderr, the memory limit in
//! `get`, outputs that are not regular files, overflowing shapes, v3-draft hierarchy roots,
//! `import -`, and error messages that name the output path. (docs/cli.md, "Exit codes":
//! "Any error is one line on stderr starting `zarrshard: `, exit 1; the tool never panics or
//! dies by a signal".)

mod common;

use common::cli::{stderr, stdout, zarrshard};
use serde_json::json;
use std::io::{Read, Write};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_zarrshard"))
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// 4×6 uint16 (values 1..=24 in C order), shards 4×4 of 2×2 inner chunks, `bytes` + `crc32c`
/// inner codecs, crc32c index at the end.
fn small(dir: &Path) {
    let m = json!({"zarr_format": 3, "node_type": "array", "shape": [4, 6], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
            "chunk_shape": [2, 2],
            "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            "index_location": "end"}}]});
    let data: Vec<u8> = (1..=24u16).flat_map(u16::to_ne_bytes).collect();
    common::write_array(dir, &m, &data);
}

/// The export format of `small`: 1..=24 as little-endian uint16.
fn small_raw() -> Vec<u8> {
    (1..=24u16).flat_map(u16::to_le_bytes).collect()
}

/// A one-dimensional uint8 array of `n` elements, one shard, one inner chunk of `n`, nothing
/// stored.
fn empty_u8(dir: &Path, n: u64) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("zarr.json"),
        json!({"zarr_format": 3, "node_type": "array", "shape": [n], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [n]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [n], "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}}]})
        .to_string(),
    )
    .unwrap();
}

#[test]
fn usage_errors_are_one_line_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    // `repair` exits 2 for "every damaged shard recovered": a typo must not look like that.
    // The wording after `zarrshard: ` is clap's (it may change with clap); the shape is ours:
    // one line, exit 1, nothing on stdout, the offending word named.
    let cases: [(&[&str], &str); 5] = [
        (&["repair", s(&a), "--dryrun"], "'--dryrun'"),
        (&[], "a command is required"),
        (&["import"], "<IN_FILE>, <ARRAY_DIR>"),
        (&["frobnicate"], "'frobnicate'"),
        (
            &[
                "refs",
                s(&a),
                "--format",
                "xml",
                "--url-prefix",
                "x",
                "-o",
                "y",
            ],
            "'xml'",
        ),
    ];
    for (args, names) in cases {
        let o = zarrshard(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        let err = stderr(&o);
        assert!(
            err.starts_with("zarrshard: ") && err.ends_with("; see --help\n"),
            "{args:?}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(names), "{args:?}: {err}");
        assert_eq!(stdout(&o), "", "{args:?}");
    }
    assert_eq!(
        stderr(&zarrshard(&[])),
        "zarrshard: a command is required; see --help\n"
    );
    // --help and --version still print to stdout and exit 0.
    let o = zarrshard(&["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        stdout(&o),
        format!("zarrshard {}\n", env!("CARGO_PKG_VERSION"))
    );
    assert_eq!(stderr(&o), "");
    let o = zarrshard(&["repair", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stdout(&o).contains("Example: zarrshard repair data/image.zarr --dry-run"),
        "{}",
        stdout(&o)
    );
    assert_eq!(stderr(&o), "");
}

/// The write end of a pipe whose read end is closed: every write fails with EPIPE.
fn closed_pipe() -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let mut fds = [0i32; 2];
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    unsafe { libc::close(fds[0]) };
    unsafe { std::os::fd::OwnedFd::from_raw_fd(fds[1]) }
}

#[test]
fn a_closed_stderr_is_not_a_signal() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    let damaged = tmp.path().join("damaged");
    small(&damaged);
    let p = damaged.join("c/0/0");
    let mut d = std::fs::read(&p).unwrap();
    d[13] ^= 0xff;
    std::fs::write(&p, d).unwrap();
    let empty = tmp.path().join("empty");
    empty_u8(&empty, 4);
    // Each writes something on stderr; the exit code is the one docs/cli.md documents.
    let cases: [(Vec<&str>, i32); 6] = [
        (vec!["info", "/nonexistent-zarrshard-path"], 1), // the error line
        (vec!["compact", s(&a)], 0),                      // "0 shard(s) compacted"
        (vec!["verify", s(&damaged)], 1),                 // "1 problem(s) found"
        (vec!["repair", s(&a)], 0),                       // "0 damaged shard(s): …"
        (vec!["get", s(&empty), "0", "--raw"], 3),        // "… is not stored …"
        (vec!["repair", s(&a), "--dryrun"], 1),           // usage error
    ];
    for (args, code) in cases {
        let status = bin()
            .args(&args)
            .stdout(Stdio::null())
            .stderr(Stdio::from(closed_pipe()))
            .status()
            .unwrap();
        assert_eq!(status.signal(), None, "{args:?}");
        assert_eq!(status.code(), Some(code), "{args:?}");
    }
}

#[test]
fn get_holds_the_decoded_chunk_to_the_memory_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    empty_u8(&a, 64); // one 64-byte inner chunk; its index is 16 bytes
    let limited = |args: &[&str]| {
        bin()
            .args(args)
            .env("ZARRSHARD_MEMORY_LIMIT", "63")
            .output()
            .unwrap()
    };
    let want = "zarrshard: memory limit: a chunk of shape [64] uint8 needs 64 bytes, more than the limit of 63 (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)\n";
    let o = limited(&["get", s(&a), "0"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stderr(&o), want);
    assert_eq!(o.stdout, b"");
    // Under a limit that fits, the fill value.
    let o = bin()
        .args(["get", s(&a), "0"])
        .env("ZARRSHARD_MEMORY_LIMIT", "64")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, vec![0u8; 64]);

    // A 2^42-byte inner chunk under the default limit of 4 GiB: an error, not an abort.
    let huge = tmp.path().join("huge");
    let n: u64 = 1 << 42;
    empty_u8(&huge, n);
    let o = zarrshard(&["get", s(&huge), "0"]);
    assert_eq!(o.status.signal(), None);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!("zarrshard: memory limit: a chunk of shape [{n}] uint8 needs {n} bytes, more than the limit of {} (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)\n", 4u64 << 30)
    );
}

/// Make a FIFO at `path` and collect whatever is written into it on a thread.
fn fifo_reader(path: &Path) -> std::thread::JoinHandle<Vec<u8>> {
    let c = std::ffi::CString::new(s(path)).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        std::fs::File::open(path)
            .unwrap()
            .read_to_end(&mut out)
            .unwrap();
        out
    })
}

#[test]
fn export_and_refs_write_into_a_fifo_or_stdout_instead_of_replacing_it() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);

    let fifo = tmp.path().join("export.fifo");
    let reader = fifo_reader(&fifo);
    let o = zarrshard(&["export", s(&a), s(&fifo)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // Checked before joining: had OUT been replaced, the reader would wait forever.
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(reader.join().unwrap(), small_raw());
    assert!(!tmp.path().join("export.fifo.partial").exists());

    // The same set through a FIFO and through a regular file.
    let file = tmp.path().join("refs.json");
    let args = |out: &Path| -> Vec<String> {
        [
            "refs",
            s(&a),
            "--format",
            "json-v0",
            "--url-prefix",
            "x",
            "-o",
            s(out),
        ]
        .map(String::from)
        .to_vec()
    };
    let o = bin().args(args(&file)).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let fifo = tmp.path().join("refs.fifo");
    let reader = fifo_reader(&fifo);
    let o = bin().args(args(&fifo)).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
    assert_eq!(reader.join().unwrap(), std::fs::read(&file).unwrap());

    // /dev/stdout: a pipe, and a regular file the shell opened.
    let o = zarrshard(&["export", s(&a), "/dev/stdout"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, small_raw());
    let redirected = tmp.path().join("redirected.raw");
    std::fs::write(
        &redirected,
        b"previous content, longer than the export itself....",
    )
    .unwrap();
    let out = std::fs::OpenOptions::new()
        .write(true)
        .open(&redirected)
        .unwrap();
    let o = bin()
        .args(["export", s(&a), "/dev/stdout"])
        .stdout(Stdio::from(out))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&redirected).unwrap(), small_raw());

    // A regular OUT is still replaced by rename (a new inode), leaving no OUT.partial.
    let regular = tmp.path().join("out.raw");
    std::fs::write(&regular, b"old").unwrap();
    let before = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&regular).unwrap());
    let o = zarrshard(&["export", s(&a), s(&regular)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&regular).unwrap(), small_raw());
    let after = std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(&regular).unwrap());
    assert_ne!(before, after);
    assert!(!tmp.path().join("out.raw.partial").exists());
}

#[test]
fn output_errors_name_the_path() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    let out = tmp.path().join("missing/dir/out");
    let want = format!(
        "zarrshard: I/O error (code 2): {}.partial: No such file or directory (os error 2)\n",
        out.display()
    );
    for args in [
        vec!["export", s(&a), s(&out)],
        vec![
            "refs",
            s(&a),
            "--format",
            "json-v1",
            "--url-prefix",
            "x",
            "-o",
            s(&out),
        ],
        vec![
            "refs",
            s(&a),
            "--format",
            "json-v0",
            "--url-prefix",
            "x",
            "-o",
            s(&out),
        ],
    ] {
        let o = zarrshard(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), want, "{args:?}");
    }
    // A directory as OUT: nothing to replace it with.
    let o = zarrshard(&["export", s(&a), s(tmp.path())]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "zarrshard: I/O error (code 21): {}: Is a directory (os error 21)\n",
            tmp.path().display()
        )
    );
}

#[test]
fn export_and_import_of_an_overflowing_shape_are_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("ovf");
    std::fs::create_dir_all(&a).unwrap();
    let (n, c) = (1u64 << 40, 1u64 << 20);
    std::fs::write(
        a.join("zarr.json"),
        json!({"zarr_format": 3, "node_type": "array", "shape": [n, n], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [c, c]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 0, "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [c, c], "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}}]})
        .to_string(),
    )
    .unwrap();
    let raw = tmp.path().join("in.raw");
    std::fs::write(&raw, [0u8; 8]).unwrap();
    // 2^40 × 2^40 one-byte elements: 2^80 bytes.
    let want = format!(
        "zarrshard: invalid argument: the array of shape [{n}, {n}] and 1-byte elements has more than 2^64 bytes\n"
    );
    let out = tmp.path().join("o.raw");
    for args in [
        vec!["export", s(&a), s(&out)],
        vec!["import", s(&raw), s(&a)],
    ] {
        let o = zarrshard(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}");
        assert_eq!(stderr(&o), want, "{args:?}");
    }
    assert!(!out.exists() && !tmp.path().join("o.raw.partial").exists());
}

#[test]
fn import_from_stdin_ignores_a_file_named_dash() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    std::fs::write(tmp.path().join("-"), b"hi\n").unwrap();
    let data: Vec<u8> = (1..=24u16).rev().flat_map(u16::to_le_bytes).collect();
    let mut child = bin()
        .current_dir(tmp.path())
        .args(["import", "-", "a"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&data).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = tmp.path().join("out.raw");
    let o = zarrshard(&["export", s(&a), s(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), data);
}

/// A v3-draft hierarchy at `root` (entry point `zarr.json`) with one 4-element `<u2` array at
/// hierarchy path `path`: fill 7, chunks of 2, two chunks per shard (so one shard, `c0`).
fn draft_array(root: &Path, path: &str) -> PathBuf {
    let meta = match path {
        "" => root.join("meta/root.array.json"),
        _ => root.join(format!("meta/root/{path}.array.json")),
    };
    std::fs::create_dir_all(meta.parent().unwrap()).unwrap();
    std::fs::write(
        root.join("zarr.json"),
        json!({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        &meta,
        json!({"shape": [4], "data_type": "<u2",
        "chunk_grid": {"type": "regular", "chunk_shape": [2], "separator": "/"},
        "chunk_memory_layout": "C", "compressor": null, "fill_value": 7, "extensions": [],
        "attributes": {}, "storage_transformers": [{"extension":
            "https://purl.org/zarr/spec/storage_transformers/sharding/1.0", "type": "indexed",
            "configuration": {"chunks_per_shard": [2]}}]})
        .to_string(),
    )
    .unwrap();
    meta
}

/// Import 1, 2, 3, 4 into the draft array `meta`, export it back and return the bytes.
fn draft_round_trip(meta: &Path, tmp: &Path) -> Vec<u8> {
    let raw = tmp.join("in.raw");
    std::fs::write(&raw, [1u8, 0, 2, 0, 3, 0, 4, 0]).unwrap();
    let o = bin().arg("import").arg(&raw).arg(meta).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = tmp.join("out.raw");
    let o = bin().arg("export").arg(meta).arg(&out).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    std::fs::read(out).unwrap()
}

#[test]
fn v3_draft_hierarchy_under_a_non_utf8_directory() {
    use std::os::unix::ffi::OsStrExt;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp
        .path()
        .join(std::ffi::OsStr::from_bytes(b"non-utf8-\xff"));
    let meta = draft_array(&root, "baz");
    let o = bin().arg("info").arg(&meta).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("shape: [4]\n"), "{}", stdout(&o));
    assert_eq!(
        draft_round_trip(&meta, tmp.path()),
        [1, 0, 2, 0, 3, 0, 4, 0]
    );
    // The draft's shard key: data/root/<path>/c<coords / chunks_per_shard>.
    assert!(root.join("data/root/baz/c0").is_file());
}

#[test]
fn v3_draft_array_at_the_hierarchy_root_and_other_files() {
    // The root array's metadata is ROOT/meta/root.array.json, its shard ROOT/data/root/c0.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("h");
    let meta = draft_array(&root, "");
    assert_eq!(
        draft_round_trip(&meta, tmp.path()),
        [1, 0, 2, 0, 3, 0, 4, 0]
    );
    assert!(root.join("data/root/c0").is_file());
    let o = bin().arg("info").arg(&meta).output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("stored shards: 1 of 1"),
        "{}",
        stdout(&o)
    );
    // Any other file is no array: said so, not "Not a directory".
    let other = root.join("zarr.json");
    let o = bin().arg("info").arg(&other).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!("zarrshard: invalid argument: {} is a file: give an array directory, or a v3-draft ROOT/meta/root/<path>.array.json or ROOT/meta/root.array.json\n", other.display())
    );
}

#[test]
fn v3_draft_root_is_the_first_meta_root() {
    // Groups named `meta` and `root`: the array's hierarchy path is `meta/root/a`, its
    // metadata ROOT/meta/root/meta/root/a.array.json, its shard ROOT/data/root/meta/root/a/c0.
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("h");
    let meta = draft_array(&root, "meta/root/a");
    assert_eq!(
        draft_round_trip(&meta, tmp.path()),
        [1, 0, 2, 0, 3, 0, 4, 0]
    );
    assert!(root.join("data/root/meta/root/a/c0").is_file());
    assert!(!root.join("meta/root/data").exists());

    // A relative path from inside the hierarchy root.
    let o = bin()
        .current_dir(&root)
        .args(["info", "meta/root/meta/root/a.array.json"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("stored shards: 1 of 1"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn json_refs_refuse_an_empty_name_as_parquet_does() {
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    for format in ["json-v0", "json-v1", "parquet"] {
        let out = tmp.path().join(format);
        let o = zarrshard(&[
            "refs",
            s(&a),
            "--format",
            format,
            "--url-prefix",
            "x",
            "-o",
            s(&out),
            "--name",
            "",
        ]);
        assert_eq!(o.status.code(), Some(1), "{format}");
        assert_eq!(
            stderr(&o),
            "zarrshard: invalid argument: invalid array name ``\n",
            "{format}"
        );
        assert!(!out.exists(), "{format}");
    }
}

/// A symbolic link as OUT is followed, as `cp` and a shell's `>` follow it: the file it names
/// (existing, or not yet, through a relative or absolute link, or a chain of links) receives
/// the output and the links stay links. A loop of links is an I/O error naming OUT.
#[test]
fn export_and_refs_write_through_a_symbolic_link_to_the_file_it_names() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let a = tmp.path().join("a");
    small(&a);
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let is_link = |p: &Path| {
        std::fs::symlink_metadata(p)
            .unwrap()
            .file_type()
            .is_symlink()
    };

    // An existing target with other content, through a relative link.
    let target = elsewhere.join("out.raw");
    std::fs::write(&target, b"old content that is longer than nothing").unwrap();
    let link = tmp.path().join("out.raw");
    symlink("elsewhere/out.raw", &link).unwrap();
    let o = zarrshard(&["export", s(&a), s(&link)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(is_link(&link));
    assert_eq!(std::fs::read(&target).unwrap(), small_raw());
    assert!(!elsewhere.join("out.raw.partial").exists());
    assert!(!tmp.path().join("out.raw.partial").exists());

    // A dangling absolute link behind another link: the file is created where it points.
    let new_target = elsewhere.join("refs.json");
    let first = tmp.path().join("first.json");
    let second = tmp.path().join("second.json");
    symlink(&new_target, &second).unwrap();
    symlink("second.json", &first).unwrap();
    let plain = tmp.path().join("plain.json");
    for out in [&plain, &first] {
        let o = zarrshard(&[
            "refs",
            s(&a),
            "--format",
            "json-v1",
            "--url-prefix",
            "x",
            "-o",
            s(out),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    }
    assert!(is_link(&first) && is_link(&second));
    assert_eq!(
        std::fs::read(&new_target).unwrap(),
        std::fs::read(&plain).unwrap()
    );

    // A loop: refused, nothing written.
    let (x, y) = (tmp.path().join("x"), tmp.path().join("y"));
    symlink("y", &x).unwrap();
    symlink("x", &y).unwrap();
    let o = zarrshard(&["export", s(&a), s(&x)]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stderr(&o),
        format!(
            "zarrshard: I/O error (code 40): {}: Too many levels of symbolic links (os error 40)\n",
            x.display()
        )
    );
    assert!(is_link(&x) && is_link(&y));
}
