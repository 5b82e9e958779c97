//! zarrs as a peer of the interop suite: writes or reads a whole Zarr v3 array with the
//! `zarrs` crate, so `tests/interop/*.py` can check zarrshard against a third implementation's
//! real files and reader.
//!
//! ```text
//! zarrs-peer write ARRAY_DIR DATA_FILE   # ARRAY_DIR/zarr.json exists; stores DATA_FILE as the whole array
//! zarrs-peer read ARRAY_DIR OUT_FILE     # the whole array into OUT_FILE
//! ```
//!
//! Data files hold the whole array as raw bytes: C order, every element little-endian, bool one
//! byte 0/1, complex as real then imaginary (`zarrshard export`'s format). zarrs keeps elements
//! in native order, so this tool refuses to run on a big-endian machine rather than swap.
//! Exit status 0 on success; 1 with one line on stderr on any error.
//!
//! Writes use `SubchunkWriteOrder::C`: zarrs' default, `Unordered`, appends inner chunks in
//! the order its parallel encoders finish them, so a fixture's layout would change from run to
//! run (seen on a one-shard array); in C order zarrs' uncompressed shards are deterministic and
//! comparable byte for byte. Layouts other than C order are covered by zarr-python's
//! Morton-order shards.

use std::process::ExitCode;
use std::sync::Arc;

use zarrs::array::codec::{ShardingCodecOptions, SubchunkWriteOrder};
use zarrs::array::{Array, ArrayBytes, CodecSpecificOptions};
use zarrs::filesystem::FilesystemStore;

type Result<T> = std::result::Result<T, String>;

fn store(dir: &str) -> Result<Arc<FilesystemStore>> {
    FilesystemStore::new(dir)
        .map(Arc::new)
        .map_err(|e| format!("{dir}: {e}"))
}

/// Stores `data` as the whole array whose `zarr.json` is in `dir`, inner chunks in C order
/// (zarrs' defaults otherwise: inner chunks and shards equal to the fill value are not stored).
fn write(dir: &str, data: &str) -> Result<()> {
    let c_order = ShardingCodecOptions::default().with_subchunk_write_order(SubchunkWriteOrder::C);
    let array = Array::open(store(dir)?, "/")
        .map_err(|e| format!("{dir}: {e}"))?
        .with_codec_specific_options(&CodecSpecificOptions::default().with_option(c_order));
    let bytes = std::fs::read(data).map_err(|e| format!("{data}: {e}"))?;
    array
        .store_array_subset(&array.subset_all(), ArrayBytes::new_flen(bytes))
        .map_err(|e| format!("{dir}: store: {e}"))
}

/// Reads the whole array in `dir` into `out`.
fn read(dir: &str, out: &str) -> Result<()> {
    let array = Array::open(store(dir)?, "/").map_err(|e| format!("{dir}: {e}"))?;
    let bytes: ArrayBytes<'static> = array
        .retrieve_array_subset(&array.subset_all())
        .map_err(|e| format!("{dir}: retrieve: {e}"))?;
    let fixed = bytes.into_fixed().map_err(|e| format!("{dir}: {e}"))?;
    std::fs::write(out, &fixed[..]).map_err(|e| format!("{out}: {e}"))
}

fn main() -> ExitCode {
    if cfg!(target_endian = "big") {
        eprintln!("zarrs-peer: data files are little-endian and zarrs works in native order");
        return ExitCode::FAILURE;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["write", dir, data] => write(dir, data),
        ["read", dir, out] => read(dir, out),
        _ => Err("usage: zarrs-peer write ARRAY_DIR DATA_FILE | read ARRAY_DIR OUT_FILE".into()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("zarrs-peer: {e}");
            ExitCode::FAILURE
        }
    }
}
