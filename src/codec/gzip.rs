//! The `gzip` bytes→bytes codec (RFC 1952), through flate2 with the zlib-rs back end.

use super::Config;
use crate::error::{Error, Result};
use flate2::{read::MultiGzDecoder, write::GzEncoder, Compression};
use serde_json::{json, Value};
use std::io::{Read, Write};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gzip {
    pub level: u32,
}

impl Gzip {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["level"])?;
        let level = cfg.int("level")?.unwrap_or(5);
        if !(0..=9).contains(&level) {
            return Err(cfg.bad("level", "must be between 0 and 9"));
        }
        Ok(Gzip {
            level: level as u32,
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        json!({"name": "gzip", "configuration": {"level": self.level}})
    }

    pub(crate) fn encode(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut enc = GzEncoder::new(
            Vec::with_capacity(data.len() / 2 + 64),
            Compression::new(self.level),
        );
        enc.write_all(data)?;
        Ok(enc.finish()?)
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        read_capped(MultiGzDecoder::new(data), max_out, "gzip")
    }
}

/// Read a decompressing stream to its end, failing once it would exceed `max_out` bytes.
pub(crate) fn read_capped(reader: impl Read, max_out: u64, codec: &str) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut limited = reader.take(max_out.saturating_add(1));
    limited
        .read_to_end(&mut out)
        .map_err(|e| Error::corrupt(format!("{codec}: {e}")))?;
    if out.len() as u64 > max_out {
        return Err(Error::corrupt(format!(
            "{codec}: stream expands past the expected {max_out} bytes"
        )));
    }
    Ok(out)
}
