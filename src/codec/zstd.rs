//! The `zstd` bytes→bytes codec.
//!
//! Compression and decompression contexts are kept per thread and reused: creating a context
//! costs more than compressing an 8 KiB inner chunk.

use super::Config;
use crate::error::{Error, Result};
use serde_json::{json, Value};
use std::cell::RefCell;

/// `zstd` codec (bytes → bytes): one zstd frame per chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zstd {
    /// Compression level (negative levels are zstd's fast modes).
    pub level: i32,
    /// Whether frames carry zstd's content checksum.
    pub checksum: bool,
}

thread_local! {
    /// The last compressor used on this thread and its (level, checksum).
    static COMPRESSOR: RefCell<Option<((i32, bool), ::zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static DECOMPRESSOR: RefCell<Option<::zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Free this thread's contexts (for [`crate::release_memory`]); returns how many there were.
/// A context in use (a call further up this thread's stack) is left.
pub(crate) fn release_contexts() -> usize {
    COMPRESSOR.with(super::free_slot) + DECOMPRESSOR.with(super::free_slot)
}

fn corrupt(e: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("zstd: {e}"))
}

impl Zstd {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["level", "checksum"])?;
        let level = cfg.int("level")?.unwrap_or(0);
        let range = ::zstd::compression_level_range();
        if !range.contains(&(level as i32)) || level != level as i32 as i64 {
            return Err(cfg.bad("level", "is out of zstd's range"));
        }
        Ok(Zstd {
            level: level as i32,
            checksum: cfg.bool("checksum")?.unwrap_or(false),
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({"name": "zstd", "configuration": {"level": self.level, "checksum": self.checksum}})
    }

    /// Run `f` with this thread's compressor for this level and checksum setting.
    fn with_compressor<T>(
        &self,
        f: impl FnOnce(&mut ::zstd::bulk::Compressor<'static>) -> Result<T>,
    ) -> Result<T> {
        COMPRESSOR.with(|slot| {
            let mut slot = slot.borrow_mut();
            let key = (self.level, self.checksum);
            if slot.as_ref().is_none_or(|(k, _)| *k != key) {
                let mut c = ::zstd::bulk::Compressor::new(self.level)?;
                c.include_checksum(self.checksum)?;
                *slot = Some((key, c));
            }
            f(&mut slot.as_mut().expect("set above").1)
        })
    }

    /// The most bytes one frame of `n` input bytes takes (`ZSTD_compressBound`).
    pub(crate) fn bound(n: usize) -> usize {
        ::zstd::zstd_safe::compress_bound(n)
    }

    /// Compress into `out` (at least [`Zstd::bound`] bytes); returns the frame's size.
    pub(crate) fn encode_into(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        self.with_compressor(|c| Ok(c.compress_to_buffer(data, out)?))
    }

    /// Decompress exactly `out.len()` bytes into `out` (no intermediate buffer).
    pub(crate) fn decode_into(&self, data: &[u8], out: &mut [u8]) -> Result<()> {
        let n = DECOMPRESSOR.with(|slot| -> Result<usize> {
            let mut slot = slot.borrow_mut();
            if slot.is_none() {
                *slot = Some(::zstd::bulk::Decompressor::new().map_err(corrupt)?);
            }
            // A frame that expands past `out` is an error here, never a larger allocation.
            slot.as_mut()
                .expect("set above")
                .decompress_to_buffer(data, out)
                .map_err(corrupt)
        })?;
        if n != out.len() {
            return Err(Error::corrupt(format!(
                "zstd: {n} bytes decoded where {} were expected",
                out.len()
            )));
        }
        Ok(())
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        // A frame that records its size lets us allocate exactly; otherwise stream with a cap.
        match ::zstd::zstd_safe::get_frame_content_size(data) {
            Ok(Some(n)) if n > max_out => Err(Error::corrupt(format!(
                "zstd: frame claims {n} bytes, more than the expected {max_out}"
            ))),
            Ok(Some(n)) if is_single_frame(data) => {
                let mut out = vec![0u8; n as usize];
                self.decode_into(data, &mut out)?;
                Ok(out)
            }
            _ => {
                let dec = ::zstd::stream::read::Decoder::with_buffer(data).map_err(corrupt)?;
                super::gzip::read_capped(dec, max_out, "zstd")
            }
        }
    }
}

/// True when `data` is exactly one zstd frame (bulk decompression handles only that).
fn is_single_frame(data: &[u8]) -> bool {
    ::zstd::zstd_safe::find_frame_compressed_size(data).is_ok_and(|n| n == data.len())
}
