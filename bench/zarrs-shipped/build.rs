//! The zarrs version this peer is built with, for the harness's table.
#[path = "../zarrs_version.rs"]
mod zarrs_version;

fn main() {
    zarrs_version::export_zarrs_version();
}
