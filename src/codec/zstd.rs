//! The `zstd` bytes→bytes codec.

use super::Config;
use crate::error::{Error, Result};
use serde_json::{json, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zstd {
    pub level: i32,
    pub checksum: bool,
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

    pub(crate) fn encode(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut c = ::zstd::bulk::Compressor::new(self.level)?;
        c.include_checksum(self.checksum)?;
        Ok(c.compress(data)?)
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        // A frame that records its size lets us allocate exactly; otherwise stream with a cap.
        match ::zstd::zstd_safe::get_frame_content_size(data) {
            Ok(Some(n)) if n > max_out => Err(Error::corrupt(format!(
                "zstd: frame claims {n} bytes, more than the expected {max_out}"
            ))),
            Ok(Some(n)) if is_single_frame(data) => ::zstd::bulk::decompress(data, n as usize)
                .map_err(|e| Error::corrupt(format!("zstd: {e}"))),
            _ => {
                let dec = ::zstd::stream::read::Decoder::with_buffer(data)
                    .map_err(|e| Error::corrupt(format!("zstd: {e}")))?;
                super::gzip::read_capped(dec, max_out, "zstd")
            }
        }
    }
}

/// True when `data` is exactly one zstd frame (bulk decompression handles only that).
fn is_single_frame(data: &[u8]) -> bool {
    ::zstd::zstd_safe::find_frame_compressed_size(data).is_ok_and(|n| n == data.len())
}
