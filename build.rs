//! Generates the C header into OUT_DIR (never into the source tree) and sets the shared
//! library's soname on Linux.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    // cbindgen parses the whole crate (a `pub const` anywhere can reach the header), so any
    // source change regenerates it and tests/header.rs compares against the current sources.
    println!("cargo:rerun-if-changed=src");
    let crate_dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("zarrshard.h");
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml");
    match cbindgen::generate_with_config(&crate_dir, config) {
        Ok(bindings) => {
            bindings.write_to_file(&out);
        }
        Err(e) => panic!("cbindgen failed: {e}"),
    }
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").unwrap();
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libzarrshard.so.{major}");
    }
}
