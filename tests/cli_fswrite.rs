//! How the tool's writes treat what is already on disk (issue 34, points 7, 8, 11–15): a
//! write killed part way, a full file-size limit or a second writer never leaves a torn
//! shard; rewrites keep a shard's mode and group; an in-place repack that cannot replace the
//! array touches nothing; leftover temporaries are reported and removed; a shard that cannot
//! be read is a problem; a symbolic link at a shard key is written through.
//!
//! `ZARRSHARD_TEST_BIN` runs these against another build of the tool (to see them fail on
//! the code before the fixes).

#![cfg(unix)]

mod common;

use common::cli::{meta, stderr, stdout};
use common::noise;
use serde_json::json;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn bin() -> Command {
    match std::env::var_os("ZARRSHARD_TEST_BIN") {
        Some(b) => Command::new(b),
        None => Command::new(env!("CARGO_BIN_EXE_zarrshard")),
    }
}

fn run(args: &[&Path]) -> Output {
    bin().args(args).output().unwrap()
}

fn p(s: &str) -> &Path {
    Path::new(s)
}

fn is_root() -> bool {
    // SAFETY: no arguments, no side effects.
    unsafe { libc::geteuid() == 0 }
}

/// A 256x256 uint16 array: 16 shards of 64x64, 64 zstd inner chunks of 8x8 each, index at
/// the end with crc32c; `version` v's data (little-endian, the export format) differs from
/// every other version's in every inner chunk.
fn create(dir: &Path) {
    let codecs = json!([{"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": false}}]);
    let m = meta(&[256, 256], &[64, 64], &[8, 8], codecs, json!({}), "end");
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("zarr.json"), m.to_string()).unwrap();
}

fn version(v: u16) -> Vec<u8> {
    let n = noise(256 * 256, u64::from(v) + 11);
    (0..256 * 256)
        .flat_map(|i| (v * 1000 + (n[i] as u16 & 15) + 4).to_le_bytes())
        .collect()
}

/// Write version `v` to a file next to `dir` and import it with `strategy`.
fn import(dir: &Path, v: u16, strategy: &str) -> Output {
    let raw = dir.with_extension(format!("v{v}"));
    std::fs::write(&raw, version(v)).unwrap();
    run(&[p("import"), &raw, dir, p("--strategy"), p(strategy)])
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{:?}: {}{}",
        o.status,
        stdout(o),
        stderr(o)
    );
}

fn export(dir: &Path) -> Vec<u8> {
    let out = dir.with_extension("out");
    ok(&run(&[p("export"), dir, &out]));
    std::fs::read(out).unwrap()
}

/// Which of `versions` each of the 16 shards of `data` equals (`None`: neither).
fn shard_versions(data: &[u8], versions: &[(u16, Vec<u8>)]) -> Vec<Option<u16>> {
    let region = |d: &[u8], r: usize, c: usize| -> Vec<u8> {
        (0..64)
            .flat_map(|y| {
                let at = ((r * 64 + y) * 256 + c * 64) * 2;
                d[at..at + 128].to_vec()
            })
            .collect()
    };
    let mut out = vec![];
    for r in 0..4 {
        for c in 0..4 {
            let got = region(data, r, c);
            out.push(
                versions
                    .iter()
                    .find(|(_, d)| region(d, r, c) == got)
                    .map(|(v, _)| *v),
            );
        }
    }
    out
}

/// Every file below `dir` whose name holds `.tmp-` or ends `.partial`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    common::files_below(dir)
        .into_iter()
        .filter(|f| {
            let name = f.file_name().unwrap().to_string_lossy();
            name.contains(".tmp-") || name.ends_with(".partial")
        })
        .collect()
}

/// A small deterministic generator for kill times.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Point 7: streaming and update imports over an existing array, killed with SIGKILL at
/// random points: afterwards `repair` (which removes the killed writers' temporaries) finds
/// no damaged shard, `verify` is clean and every shard is the old version or the new one,
/// whole. Before, a killed streaming or in-place import left shards whose index failed its
/// checksum, which `repair` could not recover.
#[test]
fn imports_killed_part_way_leave_every_shard_old_or_new() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for strategy in ["streaming", "update", "update-in-place"] {
        let dir = tmp.path().join(strategy);
        create(&dir);
        ok(&import(&dir, 1, "buffered"));
        let raw = dir.with_extension("v2");
        std::fs::write(&raw, version(2)).unwrap();
        let started = Instant::now();
        ok(&import(&dir, 2, strategy));
        let took = started.elapsed().as_micros() as u64;
        ok(&import(&dir, 1, "buffered"));
        let versions = [(1, version(1)), (2, version(2))];
        let mut seen = std::collections::BTreeSet::new();
        for round in 0..10 {
            // Each round writes over what the one before left: version 1 or 2 per shard.
            let mut child = bin()
                .args([p("import"), &raw, &dir, p("--strategy"), p(strategy)])
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(Duration::from_micros(rng.below(took + took / 4)));
            let _ = child.kill();
            let status = child.wait().unwrap();
            seen.insert(status.success());
            let repair = run(&[p("repair"), &dir]);
            assert_eq!(
                repair.status.code(),
                Some(0),
                "{strategy} round {round}: {}{}",
                stdout(&repair),
                stderr(&repair)
            );
            assert!(temporaries(&dir).is_empty(), "{strategy} {round}");
            let verify = run(&[p("verify"), &dir]);
            assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
            let got = shard_versions(&export(&dir), &versions);
            assert!(
                got.iter().all(Option::is_some),
                "{strategy} {round}: {got:?}"
            );
        }
        eprintln!("{strategy}: import took {took} µs; completed before the kill: {seen:?}");
    }
}

/// Point 8: two streaming imports of different versions into one array at once both
/// succeed, and every shard is one writer's complete version (verify clean). Before, 50–100
/// shards were left corrupt.
#[test]
fn two_concurrent_imports_leave_each_shard_one_writers_version() {
    let tmp = tempfile::tempdir().unwrap();
    for strategy in ["streaming", "update-in-place"] {
        let dir = tmp.path().join(strategy);
        create(&dir);
        ok(&import(&dir, 1, "buffered"));
        let versions = [(2, version(2)), (3, version(3))];
        for (v, data) in &versions {
            std::fs::write(dir.with_extension(format!("v{v}")), data).unwrap();
        }
        for round in 0..3 {
            let children: Vec<_> = versions
                .iter()
                .map(|(v, _)| {
                    let raw = dir.with_extension(format!("v{v}"));
                    bin()
                        .args([p("import"), &raw, &dir, p("--strategy"), p(strategy)])
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            for c in children {
                ok(&c.wait_with_output().unwrap());
            }
            let verify = run(&[p("verify"), &dir]);
            assert_eq!(verify.status.code(), Some(0), "{}", stdout(&verify));
            let got = shard_versions(&export(&dir), &versions);
            assert!(
                got.iter().all(Option::is_some),
                "{strategy} {round}: {got:?}"
            );
            assert!(temporaries(&dir).is_empty());
        }
    }
}

/// Point 13: under a file-size limit (`ulimit -f`) the tool fails with one `zarrshard:` line
/// naming the file (EFBIG) instead of dying by SIGXFSZ, removes its temporaries, and the
/// shards it did not finish are the old ones, byte for byte.
#[test]
fn a_file_size_limit_is_an_error_naming_the_file_and_leaves_no_temporaries() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    let before: Vec<(PathBuf, Vec<u8>)> = common::files_below(&dir)
        .into_iter()
        .map(|f| (f.clone(), std::fs::read(&f).unwrap()))
        .collect();
    let shard = before.iter().map(|(_, b)| b.len()).max().unwrap() as u64;
    let raw = dir.with_extension("v2");
    std::fs::write(&raw, version(2)).unwrap();
    let limited = |args: &[&Path]| {
        let mut cmd = bin();
        cmd.args(args);
        // Half a shard: every shard's new object and the export's output pass it.
        let limit = shard / 2;
        // SAFETY: setrlimit is async-signal-safe; nothing else runs in the child.
        unsafe {
            cmd.pre_exec(move || {
                let lim = libc::rlimit {
                    rlim_cur: limit,
                    rlim_max: limit,
                };
                match libc::setrlimit(libc::RLIMIT_FSIZE, &lim) {
                    0 => Ok(()),
                    _ => Err(std::io::Error::last_os_error()),
                }
            });
        }
        cmd.output().unwrap()
    };
    for strategy in ["buffered", "streaming", "update", "update-in-place"] {
        let o = limited(&[p("import"), &raw, &dir, p("--strategy"), p(strategy)]);
        assert_eq!(o.status.code(), Some(1), "{strategy}: {:?}", o.status);
        let err = stderr(&o);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.starts_with("zarrshard: "), "{err}");
        assert!(err.contains("File too large"), "{err}");
        assert!(err.contains(&*dir.join("c").to_string_lossy()), "{err}");
        assert_eq!(temporaries(tmp.path()), Vec::<PathBuf>::new(), "{strategy}");
        for (f, bytes) in &before {
            assert_eq!(&std::fs::read(f).unwrap(), bytes, "{strategy}: {f:?}");
        }
    }
    let out = tmp.path().join("out.raw");
    let o = limited(&[p("export"), &dir, &out]);
    assert_eq!(o.status.code(), Some(1), "{:?}", o.status);
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains(&*out.to_string_lossy()), "{err}");
    assert!(err.contains("File too large"), "{err}");
    assert_eq!(temporaries(tmp.path()), Vec::<PathBuf>::new());
    assert!(!out.exists());
}

/// Point 13: a temporary left by a killed writer (`KEY.tmp-PID-N`, its process gone) is a
/// problem for `verify` and removed by `repair`; one of a writer still running is neither.
#[test]
fn leftover_temporaries_are_reported_by_verify_and_removed_by_repair() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let stale = dir.join(format!("c/1/2.tmp-{dead}-7"));
    std::fs::write(&stale, b"half a shard").unwrap();
    let running = dir.join(format!("c/1/3.tmp-{}-0", std::process::id()));
    std::fs::write(&running, b"in progress").unwrap();
    let o = run(&[p("verify"), &dir]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        format!(
            "c/1/2.tmp-{dead}-7: invalid state: a temporary file left by an interrupted write (not part of the array); `zarrshard repair` removes it\n"
        )
    );
    let o = run(&[p("repair"), &dir, p("--dry-run")]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stale.exists());
    let o = run(&[p("repair"), &dir]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!("c/1/2.tmp-{dead}-7: removed: a temporary file left by an interrupted write (not part of the array)\n")
    );
    assert!(!stale.exists() && running.exists());
    std::fs::remove_file(&running).unwrap();
    ok(&run(&[p("verify"), &dir]));
}

/// Point 14: a directory or a loop of symbolic links where a shard would be is a problem
/// line of `verify` (export fails on it), and `repair` and `refs` fail naming it instead of
/// calling the array clean.
#[test]
fn a_shard_key_that_cannot_be_read_is_a_problem() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    std::fs::remove_file(dir.join("c/0/1")).unwrap();
    std::fs::create_dir(dir.join("c/0/1")).unwrap();
    std::fs::remove_file(dir.join("c/2/3")).unwrap();
    std::os::unix::fs::symlink("3", dir.join("c/2/3")).unwrap();
    let export = run(&[p("export"), &dir, &tmp.path().join("o.raw")]);
    assert_eq!(export.status.code(), Some(1));
    let o = run(&[p("verify"), &dir]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let lines: Vec<String> = stdout(&o).lines().map(String::from).collect();
    let d = dir.display();
    assert_eq!(
        lines,
        [
            format!("c/0/1: I/O error (code 21): {d}/c/0/1: Is a directory (os error 21)"),
            format!("c/2/3: I/O error (code 40): {d}/c/2/3: Too many levels of symbolic links (os error 40)"),
        ]
    );
    for args in [
        vec![p("repair"), &dir],
        vec![
            p("refs"),
            &dir,
            p("--format"),
            p("json-v1"),
            p("--url-prefix"),
            p("u"),
            p("-o"),
            &tmp.path().join("r.json"),
        ],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains(&format!("{d}/c/0/1: Is a directory")), "{err}");
    }
}

/// Point 11: rewrites keep a shard's mode and group (buffered, streaming and update imports,
/// compact, repair, in-place repack): a 0600 or 0640 shard never becomes 0644.
#[test]
fn rewrites_keep_the_mode_and_group_of_the_shard_they_replace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    // A group other than ours, where we may set one (root).
    let group = if is_root() {
        100
    } else {
        unsafe { libc::getegid() }
    };
    let shards = || {
        let mut s: Vec<PathBuf> = common::files_below(&dir.join("c"));
        s.sort();
        s
    };
    let set = || {
        for (k, f) in shards().iter().enumerate() {
            let mode = if k % 2 == 0 { 0o600 } else { 0o640 };
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(mode)).unwrap();
            std::os::unix::fs::chown(f, None, Some(group)).unwrap();
        }
    };
    let check = |what: &str| {
        for (k, f) in shards().iter().enumerate() {
            let m = std::fs::metadata(f).unwrap();
            let mode = if k % 2 == 0 { 0o600 } else { 0o640 };
            assert_eq!(m.mode() & 0o7777, mode, "{what}: {f:?}");
            assert_eq!(m.gid(), group, "{what}: {f:?}");
        }
    };
    for (v, strategy) in [
        (2, "buffered"),
        (3, "streaming"),
        (4, "update"),
        (5, "update-in-place"),
    ] {
        set();
        ok(&import(&dir, v, strategy));
        check(strategy);
    }
    // Compact (the updates left dead bytes) and repair (a torn append-only update).
    set();
    let o = run(&[p("compact"), &dir]);
    ok(&o);
    assert_eq!(stdout(&o).lines().count(), 16);
    check("compact");
    ok(&import(&dir, 6, "update"));
    set();
    let torn = dir.join("c/1/1");
    let len = std::fs::metadata(&torn).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&torn)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let o = run(&[p("repair"), &dir]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    check("repair");
    // An in-place repack gives every new file the most restrictive old mode, and the array
    // directory's group (here, as `chgrp -R` leaves it, every file's).
    set();
    for f in common::files_below(&dir)
        .iter()
        .chain([&dir, &dir.join("c")])
    {
        std::os::unix::fs::chown(f, None, Some(group)).unwrap();
    }
    ok(&run(&[p("repack"), &dir, p("--shard-shape"), p("128,128")]));
    for f in common::files_below(&dir) {
        let m = std::fs::metadata(&f).unwrap();
        assert_eq!(m.mode() & 0o077, 0, "repack: {f:?} {:o}", m.mode());
        assert_eq!(m.gid(), group, "repack: {f:?}");
    }
}

/// Point 12: an in-place repack of an array its user cannot write (0555 directories, run as
/// `nobody`) is refused before anything is written, naming the directory; the array and its
/// parent are as they were. Before, the array was replaced and the removal of the old one
/// failed with "Permission denied" naming no path, leaving `DIR.repack-old`.
#[test]
fn an_in_place_repack_of_an_array_it_cannot_write_touches_nothing() {
    if !is_root() {
        eprintln!("skipped: needs root to run the tool as another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let parent = tmp.path().join("parent");
    let dir = parent.join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    std::fs::remove_file(dir.with_extension("v1")).unwrap();
    let mut all = vec![parent.clone()];
    all.extend(common::files_below(&parent));
    let mut dirs = vec![dir.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap().path();
            if e.is_dir() {
                dirs.push(e.clone());
                all.push(e);
            }
        }
        all.push(d);
    }
    for f in &all {
        std::os::unix::fs::chown(f, Some(NOBODY), Some(NOBODY)).unwrap();
        if f.is_dir() && *f != parent {
            std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o555)).unwrap();
        }
    }
    let before = common::files_below(&parent);
    let o = bin()
        .args([p("repack"), &dir, p("--shard-shape"), p("128,128")])
        .uid(NOBODY)
        .gid(NOBODY)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{}: Permission denied", dir.display())),
        "{err}"
    );
    assert_eq!(common::files_below(&parent), before);
    let names: Vec<_> = std::fs::read_dir(&parent)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["a"]);
    ok(&run(&[p("verify"), &dir]));
}

/// Point 15: a shard that is a symbolic link (to a file outside the array) is written
/// through by every write path — buffered, streaming and update imports, compact, repair: the
/// link stays and the file it names holds the new shard. Before, buffered writes, compact and
/// repair replaced the link with a file, and the others wrote through it.
#[test]
fn every_write_path_writes_through_a_symbolic_link_at_a_shard_key() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    create(&dir);
    ok(&import(&dir, 1, "buffered"));
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let link = dir.join("c/2/1");
    let target = elsewhere.join("shard");
    std::fs::rename(&link, &target).unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let check = |what: &str, v: Option<u16>| {
        let m = std::fs::symlink_metadata(&link).unwrap();
        assert!(m.file_type().is_symlink(), "{what}: the link was replaced");
        assert_eq!(std::fs::read_link(&link).unwrap(), target, "{what}");
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1, "{what}");
        if let Some(v) = v {
            let got = shard_versions(&export(&dir), &[(v, version(v))]);
            assert_eq!(got[9], Some(v), "{what}");
        }
    };
    for (v, strategy) in [
        (2, "buffered"),
        (3, "streaming"),
        (4, "update"),
        (5, "update-in-place"),
    ] {
        ok(&import(&dir, v, strategy));
        check(strategy, Some(v));
    }
    let o = run(&[p("compact"), &dir]);
    ok(&o);
    assert!(stdout(&o).contains("c/2/1: "), "{}", stdout(&o));
    check("compact", Some(5));
    ok(&import(&dir, 6, "update"));
    let len = std::fs::metadata(&target).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&target)
        .unwrap()
        .set_len(len - 1)
        .unwrap();
    let o = run(&[p("repair"), &dir]);
    assert_eq!(o.status.code(), Some(2), "{}{}", stdout(&o), stderr(&o));
    check("repair", None);
    ok(&run(&[p("verify"), &dir]));
}
