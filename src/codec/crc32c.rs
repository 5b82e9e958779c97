//! The `crc32c` bytes→bytes codec: appends the CRC-32C (Castagnoli) of the data, 4 bytes
//! little-endian. It is what makes damage detectable where a compressor would not notice it
//! (uncompressed chunks, and shard indexes, whose offsets must not be trusted unchecked); the
//! `crc32c` crate computes it with the CPU's CRC instruction where there is one.

use super::Config;
use crate::error::{Error, Result};

/// `crc32c` codec (bytes → bytes); no configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Crc32c;

impl Crc32c {
    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&[])?;
        Ok(Crc32c)
    }

    /// The data plus its 4-byte checksum.
    pub(crate) fn bound(n: usize) -> usize {
        n.saturating_add(4)
    }

    /// Copy `data` into `out` (at least [`Crc32c::bound`] bytes) followed by its checksum;
    /// returns the size.
    pub(crate) fn encode_into(&self, data: &[u8], out: &mut [u8]) -> Result<usize> {
        let n = data.len();
        out[..n].copy_from_slice(data);
        out[n..n + 4].copy_from_slice(&::crc32c::crc32c(data).to_le_bytes());
        Ok(n + 4)
    }

    /// Check the trailing checksum and return the data before it.
    pub(crate) fn decode<'a>(&self, data: &'a [u8]) -> Result<&'a [u8]> {
        if data.len() < 4 {
            return Err(Error::corrupt(format!(
                "crc32c codec: {} bytes, too short to hold a checksum",
                data.len()
            )));
        }
        let (payload, tail) = data.split_at(data.len() - 4);
        let stored = u32::from_le_bytes(tail.try_into().unwrap());
        let computed = ::crc32c::crc32c(payload);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                shard: None,
                chunk: None,
                what: "crc32c codec".into(),
                stored,
                computed,
            });
        }
        Ok(payload)
    }
}
