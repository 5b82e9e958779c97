//! For the build scripts of `bench/` and `bench/zarrs-shipped/`: the zarrs version in the
//! package's lock file (the one actually built), as `ZARRS_VERSION` for the table's header.
use std::path::Path;

pub fn export_zarrs_version() {
    let lock_path = Path::new(&std::env::var_os("CARGO_MANIFEST_DIR").expect("run by cargo")).join("Cargo.lock");
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
