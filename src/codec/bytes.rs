//! The `bytes` array→bytes codec: elements in C order, little- or big-endian. The engine keeps
//! elements in the machine's byte order in memory ([`crate::metadata::dtype`]), so this codec
//! is the one place where the stored order is applied: a swap per element when the orders
//! differ, a copy otherwise.

use super::{check_len, ChunkRepr, Config};
use crate::error::{Error, Result};
use crate::metadata::dtype::DataType;
use serde_json::{json, Value};

/// Byte order of stored elements.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endian {
    /// Least significant byte first (`"little"`).
    Little,
    /// Most significant byte first (`"big"`).
    Big,
}

impl Endian {
    /// The byte order of this machine.
    pub const NATIVE: Endian = if cfg!(target_endian = "little") {
        Endian::Little
    } else {
        Endian::Big
    };
}

/// `bytes` codec. `endian` is `None` when the configuration omits it, which the spec allows
/// only for data types whose elements are single bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BytesCodec {
    /// The stored byte order; `None` only for single-byte data types.
    pub endian: Option<Endian>,
}

impl BytesCodec {
    /// `{"name": "bytes", "configuration": {"endian": "little"}}`.
    pub fn little() -> Self {
        BytesCodec {
            endian: Some(Endian::Little),
        }
    }

    pub(crate) fn from_config(cfg: &Config) -> Result<Self> {
        cfg.only(&["endian"])?;
        let endian = match cfg.str("endian")? {
            None => None,
            Some("little") => Some(Endian::Little),
            Some("big") => Some(Endian::Big),
            Some(_) => return Err(cfg.bad("endian", "must be \"little\" or \"big\"")),
        };
        Ok(BytesCodec { endian })
    }

    pub(crate) fn to_json(&self) -> Value {
        match self.endian {
            None => json!({"name": "bytes"}),
            Some(Endian::Little) => json!({"name": "bytes", "configuration": {"endian": "little"}}),
            Some(Endian::Big) => json!({"name": "bytes", "configuration": {"endian": "big"}}),
        }
    }

    pub(crate) fn validate(&self, repr: &ChunkRepr) -> Result<()> {
        // A struct without `endian` is little-endian (zarr-python 3.1 writes it so).
        if self.endian.is_none()
            && repr.dtype.swap_unit() > 1
            && !matches!(repr.dtype, DataType::Struct(_))
        {
            return Err(Error::metadata(format!(
                "codec `bytes`: `endian` is required for data_type {}",
                repr.dtype.name()
            )));
        }
        Ok(())
    }

    /// True when encoding `repr` changes nothing (stored order is native): chunk bytes can be
    /// copied as they are.
    pub(crate) fn is_identity(&self, repr: &ChunkRepr) -> bool {
        self.validate(repr).is_ok() && !self.needs_swap(repr)
    }

    /// Whether stored and native orders differ for this data type.
    fn needs_swap(&self, repr: &ChunkRepr) -> bool {
        let stored = match repr.dtype {
            DataType::Struct(_) => Some(self.endian.unwrap_or(Endian::Little)),
            _ => self.endian,
        };
        repr.dtype.swap_unit() > 1 && stored.is_some_and(|e| e != Endian::NATIVE)
    }

    pub(crate) fn encode(&self, data: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        self.validate(repr)?;
        check_len(data.len(), repr.byte_size()?)?;
        let mut out = data.to_vec();
        if self.needs_swap(repr) {
            repr.dtype.swap(&mut out);
        }
        Ok(out)
    }

    /// Bring decoded bytes already in `out` to native order.
    pub(crate) fn swap_decoded(&self, repr: &ChunkRepr, out: &mut [u8]) -> Result<()> {
        if self.needs_swap(repr) {
            repr.dtype.swap(out);
        }
        Ok(())
    }

    pub(crate) fn decode_into(
        &self,
        encoded: &[u8],
        repr: &ChunkRepr,
        out: &mut [u8],
    ) -> Result<()> {
        self.validate(repr)?;
        if encoded.len() != out.len() {
            return Err(Error::corrupt(format!(
                "`bytes` codec: {} bytes stored where {} were expected",
                encoded.len(),
                out.len()
            )));
        }
        out.copy_from_slice(encoded);
        if self.needs_swap(repr) {
            repr.dtype.swap(out);
        }
        Ok(())
    }
}

/// Reverse the bytes of every `unit`-byte group.
pub fn swap_in_place(data: &mut [u8], unit: usize) {
    if unit > 1 {
        for group in data.chunks_exact_mut(unit) {
            group.reverse();
        }
    }
}
