//! Detects optional zarrshard APIs in the sibling crate's source, so the harness builds against
//! whatever state `src/` is in while other work lands:
//! * `zs_threads`: `zarrshard::set_threads` and `zarrshard::threads` are re-exported at the
//!   crate root (the thread-pool setting).
use std::path::Path;

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
}
