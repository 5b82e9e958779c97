//! An array described by the few choices people make — shape, shard and inner chunk shapes,
//! data type, fill value, compressor, index location, checksums, dimension names — turned into
//! Zarr v3 metadata, so that nobody writes `zarr.json` by hand. The defaults are what a careful
//! user would pick and what zarr-python and tensorstore write by default: zstd (level 3,
//! zstd's own default), the index at the end with a crc32c checksum (a torn or misplaced index
//! is caught before any offset in it is trusted), and no checksum per inner chunk (the
//! compressed stream already fails to decode on most damage, and peers' defaults do the same;
//! turn it on to detect every flipped bit, for a small cost per byte).

use crate::error::{Error, Result};
use crate::metadata::ArrayMetadata;
use serde_json::{json, Value};

/// The compressor of the inner chunks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compressor {
    /// None: the bytes as they are.
    None,
    /// `zstd` at `level` (1 is fast, 3 zstd's default, up to 22).
    Zstd {
        /// Compression level.
        level: i32,
    },
    /// `gzip` at `level` (0–9).
    Gzip {
        /// Compression level.
        level: i32,
    },
    /// `blosc` with its zstd compressor at `level` (0–9), byte shuffle (bit shuffle for
    /// one-byte elements).
    Blosc {
        /// Compression level.
        level: i32,
    },
}

impl Compressor {
    /// The compressor named `name` (`zstd`, `gzip`, `blosc`, `none`) at `level`.
    ///
    /// Errors: [`Error::InvalidArgument`] for another name.
    pub fn named(name: &str, level: i32) -> Result<Self> {
        Ok(match name {
            "zstd" => Compressor::Zstd { level },
            "gzip" => Compressor::Gzip { level },
            "blosc" => Compressor::Blosc { level },
            "none" => Compressor::None,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "unknown compressor `{}` (zstd, gzip, blosc or none)",
                    other.escape_debug()
                )))
            }
        })
    }

    fn codec(&self, element_bytes: usize) -> Option<Value> {
        match *self {
            Compressor::None => None,
            Compressor::Zstd { level } => {
                Some(json!({"name": "zstd", "configuration": {"level": level, "checksum": false}}))
            }
            Compressor::Gzip { level } => {
                Some(json!({"name": "gzip", "configuration": {"level": level}}))
            }
            Compressor::Blosc { level } => Some(json!({"name": "blosc", "configuration": {
                "cname": "zstd", "clevel": level,
                "shuffle": if element_bytes > 1 { "shuffle" } else { "bitshuffle" },
                "typesize": element_bytes, "blocksize": 0}})),
        }
    }
}

/// An array's description, for [`ArraySpec::to_metadata`] (see the module for the defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct ArraySpec {
    /// The array's shape.
    pub shape: Vec<u64>,
    /// The shard shape (a multiple of `chunk_shape` along every dimension), or `None` for an
    /// unsharded array of `chunk_shape` chunks, each one object.
    pub shard_shape: Option<Vec<u64>>,
    /// The inner chunk shape: the unit read and compressed.
    pub chunk_shape: Vec<u64>,
    /// The data type: a name (`uint16`) or the JSON text of its object form.
    pub data_type: String,
    /// The fill value as JSON, `None` for zero (`false`, `[0.0, 0.0]` for complex).
    pub fill_value: Option<Value>,
    /// The inner chunks' compressor.
    pub compressor: Compressor,
    /// The shard index at the start of each shard instead of its end.
    pub index_at_start: bool,
    /// A crc32c checksum after the index.
    pub index_checksum: bool,
    /// A crc32c checksum after each inner chunk.
    pub chunk_checksum: bool,
    /// `dimension_names`, each a name or `None`.
    pub dimension_names: Option<Vec<Option<String>>>,
}

impl ArraySpec {
    /// An array of `shape` in `chunk_shape` chunks of `data_type`, with the defaults: one shard
    /// (none: set [`ArraySpec::shard_shape`]), zstd level 3, index at the end with a checksum.
    pub fn new(shape: &[u64], chunk_shape: &[u64], data_type: &str) -> Self {
        ArraySpec {
            shape: shape.to_vec(),
            shard_shape: None,
            chunk_shape: chunk_shape.to_vec(),
            data_type: data_type.to_string(),
            fill_value: None,
            compressor: Compressor::Zstd { level: 3 },
            index_at_start: false,
            index_checksum: true,
            chunk_checksum: false,
            dimension_names: None,
        }
    }

    /// With shards of `shard_shape`.
    pub fn sharded(mut self, shard_shape: &[u64]) -> Self {
        self.shard_shape = Some(shard_shape.to_vec());
        self
    }

    /// The `zarr.json` this describes, as JSON.
    ///
    /// Errors: [`Error::InvalidArgument`] (ranks that differ, a data type that is neither a
    /// name nor JSON).
    pub fn to_json(&self) -> Result<Value> {
        let rank = self.shape.len();
        let same_rank = |what: &str, n: usize| {
            if n == rank {
                Ok(())
            } else {
                Err(Error::InvalidArgument(format!(
                    "{what} has {n} dimensions, the shape {rank}"
                )))
            }
        };
        same_rank("chunk_shape", self.chunk_shape.len())?;
        if let Some(s) = &self.shard_shape {
            same_rank("shard_shape", s.len())?;
        }
        if let Some(names) = &self.dimension_names {
            same_rank("dimension_names", names.len())?;
        }
        let data_type: Value = match self.data_type.trim_start().starts_with('{') {
            true => serde_json::from_str(&self.data_type)
                .map_err(|e| Error::InvalidArgument(format!("data_type is not JSON: {e}")))?,
            false => Value::String(self.data_type.clone()),
        };
        let dtype = crate::metadata::dtype::DataType::from_json(&data_type)?;
        let elem = dtype.size();
        let fill = self
            .fill_value
            .clone()
            .unwrap_or_else(|| match data_type.as_str() {
                Some("bool") => json!(false),
                Some(n) if n.starts_with("complex") => json!([0.0, 0.0]),
                _ => json!(0),
            });
        let bytes = match elem {
            1 => json!({"name": "bytes"}),
            _ => json!({"name": "bytes", "configuration": {"endian": "little"}}),
        };
        let crc = json!({"name": "crc32c"});
        let mut chunk_codecs = vec![bytes.clone()];
        chunk_codecs.extend(self.compressor.codec(elem));
        if self.chunk_checksum {
            chunk_codecs.push(crc.clone());
        }
        let (grid_chunk, codecs) = match &self.shard_shape {
            None => (self.chunk_shape.clone(), chunk_codecs),
            Some(shard) => {
                let mut index_codecs =
                    vec![json!({"name": "bytes", "configuration": {"endian": "little"}})];
                if self.index_checksum {
                    index_codecs.push(crc);
                }
                let sharding = json!({"name": "sharding_indexed", "configuration": {
                    "chunk_shape": self.chunk_shape,
                    "codecs": chunk_codecs,
                    "index_codecs": index_codecs,
                    "index_location": if self.index_at_start { "start" } else { "end" }}});
                (shard.clone(), vec![sharding])
            }
        };
        let mut doc = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape,
            "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid_chunk}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill,
            "codecs": codecs,
            "attributes": {},
        });
        if let Some(names) = &self.dimension_names {
            doc["dimension_names"] = json!(names);
        }
        Ok(doc)
    }

    /// The validated metadata this describes.
    ///
    /// Errors: as [`ArraySpec::to_json`], then [`Error::InvalidMetadata`] naming the field
    /// (a shard shape that is not a multiple of the chunk shape, a zero extent, a fill value
    /// the data type cannot hold, a level out of range).
    pub fn to_metadata(&self) -> Result<ArrayMetadata> {
        ArrayMetadata::from_json(&self.to_json()?)
    }
}
