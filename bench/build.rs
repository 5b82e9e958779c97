//! Detects optional zarrshard APIs in the sibling crate's source, so the harness builds against
//! whatever state `src/` is in while other work lands:
//! * `zs_threads`: `zarrshard::set_threads` and `zarrshard::threads` are re-exported at the
//!   crate root (the thread-pool setting).
use std::path::Path;

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
    let lock_path = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.lock");
    println!("cargo::rerun-if-changed={}", lock_path.display());
    let lock = std::fs::read_to_string(lock_path).unwrap_or_default();
    let version = lock
        .split("[[package]]")
        .find(|p| p.contains("name = \"zarrs\"\n"))
        .and_then(|p| p.lines().find(|l| l.starts_with("version = ")))
        .map(|l| l.trim_start_matches("version = ").trim_matches('"').to_string())
        .unwrap_or_else(|| "?".into());
    println!("cargo::rustc-env=ZARRS_VERSION={version}");
}
