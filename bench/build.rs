//! Detects optional zarrshard APIs in the sibling crate's source, so the harness builds against
//! whatever state `src/` is in while other work lands:
//! * `zs_threads`: `zarrshard::set_threads` and `zarrshard::threads` are re-exported at the
//!   crate root (the thread-pool setting).
//!
//! Also records the zarrs version (`ZARRS_VERSION`) and the zarrshard commit being built
//! (`ZARRSHARD_COMMIT`, `+dirty` when `src/` differs from it) for the tables' headers, so a
//! binary carried to another machine says what it measured.
use std::path::Path;
use std::process::Command;

#[path = "zarrs_version.rs"]
mod zarrs_version;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(zs_threads)");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../src");
    println!("cargo::rerun-if-changed={}", src.join("lib.rs").display());
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let reexported = lib.lines().any(|l| {
        let l = l.trim();
        l.starts_with("pub use") && l.contains("set_threads") && l.contains(" threads")
    });
    if reexported {
        println!("cargo::rustc-cfg=zs_threads");
    }

    // The zarrs version actually built, for the table's header.
    zarrs_version::export_zarrs_version();
    export_commit(&src);
}

/// `ZARRSHARD_COMMIT`: `git rev-parse --short HEAD` of the sibling crate, `+dirty` when `src/`
/// or `Cargo.toml` has uncommitted changes, `unknown` outside git. Rerun when `src/` or the
/// checked-out commit changes.
fn export_commit(src: &Path) {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git").arg("-C").arg(src).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    println!("cargo::rerun-if-changed={}", src.display());
    for path in [git(&["rev-parse", "--git-path", "HEAD"]), git(&["symbolic-ref", "-q", "HEAD"]).and_then(|r| git(&["rev-parse", "--git-path", &r]))]
        .into_iter()
        .flatten()
    {
        // Relative git paths are relative to the directory git ran in; a ref kept only in
        // `packed-refs` has no file to watch (a missing path would rerun this every build).
        let path = src.join(path);
        if path.exists() {
            println!("cargo::rerun-if-changed={}", path.display());
        }
    }
    let commit = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(c) => {
            let dirty = git(&["status", "--porcelain", "--", ".", "../Cargo.toml"]).is_some_and(|s| !s.is_empty());
            format!("{c}{}", if dirty { "+dirty" } else { "" })
        }
        None => "unknown".into(),
    };
    println!("cargo::rustc-env=ZARRSHARD_COMMIT={commit}");
}
