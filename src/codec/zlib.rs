//! The `zlib` bytes→bytes codec (RFC 1950 stream), as numcodecs' `zlib` writes it. Not a Zarr
//! v3 core codec: it exists for the Zarr v2 sharding prototype's `"compressor": {"id": "zlib"}`
//! In v3 metadata it is written `numcodecs.zlib`, the name zarr-python 3 reads; `zlib` is
//! read too.

use super::Config;
use crate::error::Result;
use flate2::{bufread::ZlibDecoder, write::ZlibEncoder, Compression};
use serde_json::{json, Value};
use std::io::Write;

/// `zlib` / `numcodecs.zlib` codec (bytes → bytes): one RFC 1950 stream per chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Zlib {
    /// Compression level, 0–9.
    pub level: u32,
}

impl Zlib {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["level"])?;
        let level = cfg.int("level")?.unwrap_or(1);
        if !(0..=9).contains(&level) {
            return Err(cfg.bad("level", "must be between 0 and 9"));
        }
        Ok(Zlib {
            level: level as u32,
        })
    }

    pub(crate) fn to_json(&self) -> Value {
        // The name zarr-python 3 reads it by (it parses `zlib` too).
        json!({"name": "numcodecs.zlib", "configuration": {"level": self.level}})
    }

    pub(crate) fn encode(&self, data: &[u8]) -> Result<Vec<u8>> {
        let mut enc = ZlibEncoder::new(
            Vec::with_capacity(data.len() / 2 + 64),
            Compression::new(self.level),
        );
        enc.write_all(data)?;
        Ok(enc.finish()?)
    }

    pub(crate) fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        super::gzip::read_capped(ZlibDecoder::new(data), max_out, "zlib")
    }
}
