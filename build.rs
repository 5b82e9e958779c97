// Build script. The C header is generated here once the FFI layer exists (issue 4);
// it writes only into OUT_DIR.
fn main() {
    println!("cargo:rerun-if-changed=build.rs");
}
