//! Zarr v3 array metadata (`zarr.json`).

use crate::codec::{checked_product, ArrayToBytes, ChunkRepr, CodecChain};
use crate::dtype::{DataType, FillValue};
use crate::error::{shown, shown_text, Error, Result};
use crate::sharding::{ShardLayout, ShardingCodec};
use serde_json::{json, Map, Value};

/// How chunk grid coordinates become storage keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkKeyEncoding {
    /// `c/1/2` (or `c.1.2`); `c` for a rank-0 array.
    Default {
        /// `/` (the default) or `.`.
        separator: char,
    },
    /// `1.2` (or `1/2`); `0` for a rank-0 array.
    V2 {
        /// `.` (the default) or `/`.
        separator: char,
    },
}

impl ChunkKeyEncoding {
    /// The storage key of the chunk (shard) at grid `coords`.
    pub fn key(&self, coords: &[u64]) -> String {
        let join = |sep: char| {
            coords
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(&sep.to_string())
        };
        match *self {
            ChunkKeyEncoding::Default { .. } if coords.is_empty() => "c".into(),
            ChunkKeyEncoding::Default { separator } => format!("c{separator}{}", join(separator)),
            ChunkKeyEncoding::V2 { .. } if coords.is_empty() => "0".into(),
            ChunkKeyEncoding::V2 { separator } => join(separator),
        }
    }

    /// What every key of a rank-`ndim` array starts with, and the separator between its
    /// coordinates: `("c/", '/')` for `c/1/2`, `("", '.')` for `1.2`.
    pub(crate) fn key_pattern(&self, ndim: usize) -> (String, char) {
        match *self {
            ChunkKeyEncoding::Default { separator } if ndim > 0 => {
                (format!("c{separator}"), separator)
            }
            ChunkKeyEncoding::Default { separator } => ("c".into(), separator),
            ChunkKeyEncoding::V2 { separator } => (String::new(), separator),
        }
    }

    fn from_json(v: &Value) -> Result<Self> {
        let bad = || Error::metadata(format!("invalid chunk_key_encoding {}", shown_text(v)));
        let (name, config) = match v {
            Value::String(s) => (s.as_str(), None),
            Value::Object(o) => (
                o.get("name").and_then(Value::as_str).ok_or_else(bad)?,
                o.get("configuration"),
            ),
            _ => return Err(bad()),
        };
        let sep = match config.and_then(|c| c.get("separator")) {
            None => None,
            Some(Value::String(s)) if s == "/" => Some('/'),
            Some(Value::String(s)) if s == "." => Some('.'),
            Some(_) => return Err(bad()),
        };
        match name {
            "default" => Ok(ChunkKeyEncoding::Default {
                separator: sep.unwrap_or('/'),
            }),
            "v2" => Ok(ChunkKeyEncoding::V2 {
                separator: sep.unwrap_or('.'),
            }),
            _ => Err(Error::metadata(format!(
                "unknown chunk_key_encoding `{name}`"
            ))),
        }
    }

    fn to_json(self) -> Value {
        let (name, sep) = match self {
            ChunkKeyEncoding::Default { separator } => ("default", separator),
            ChunkKeyEncoding::V2 { separator } => ("v2", separator),
        };
        json!({"name": name, "configuration": {"separator": sep.to_string()}})
    }
}

/// A parsed Zarr v3 array `zarr.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayMetadata {
    /// The array's shape (C order).
    pub shape: Vec<u64>,
    /// Its element type.
    pub data_type: DataType,
    /// The regular chunk grid's chunk shape; with sharding, the shard shape.
    pub chunk_shape: Vec<u64>,
    /// How chunk (shard) grid coordinates become keys.
    pub chunk_key_encoding: ChunkKeyEncoding,
    /// The value of elements nothing is stored for.
    pub fill_value: FillValue,
    /// The codec pipeline.
    pub codecs: CodecChain,
    /// `dimension_names`, when present (each a name or `null`).
    pub dimension_names: Option<Vec<Option<String>>>,
    /// `attributes`, kept as given.
    pub attributes: Map<String, Value>,
}

const KNOWN_KEYS: [&str; 11] = [
    "zarr_format",
    "node_type",
    "shape",
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "fill_value",
    "codecs",
    "attributes",
    "dimension_names",
    "storage_transformers",
];

impl ArrayMetadata {
    /// Parse and validate `zarr.json` text.
    pub fn parse(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| Error::metadata(format!("zarr.json is not valid JSON: {e}")))?;
        Self::from_json(&v)
    }

    /// Parse and validate a `zarr.json` value.
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::metadata("zarr.json must be a JSON object"))?;
        let field = |k: &str| {
            o.get(k)
                .ok_or_else(|| Error::metadata(format!("`{k}` is required")))
        };
        if field("zarr_format")?.as_u64() != Some(3) {
            return Err(Error::metadata(format!(
                "zarr_format must be 3, got {}",
                field("zarr_format")?
            )));
        }
        if field("node_type")?.as_str() != Some("array") {
            return Err(Error::metadata(format!(
                "node_type must be \"array\", got {}",
                field("node_type")?
            )));
        }
        // Unknown members are extensions; only those that say must_understand: false may be
        // ignored (Zarr v3 core, "Extension points").
        for (k, val) in o {
            if !KNOWN_KEYS.contains(&k.as_str())
                && val.get("must_understand") != Some(&Value::Bool(false))
            {
                return Err(Error::metadata(format!("unknown metadata member `{k}`")));
            }
        }
        let shape = uint_list(field("shape")?, "shape")?;
        let data_type = DataType::from_json(field("data_type")?)?;
        let grid = field("chunk_grid")?;
        if grid.get("name").and_then(Value::as_str) != Some("regular") {
            return Err(Error::metadata(format!(
                "chunk_grid must be \"regular\", got {}",
                grid.get("name").unwrap_or(grid)
            )));
        }
        let chunk_shape = uint_list(
            grid.get("configuration")
                .and_then(|c| c.get("chunk_shape"))
                .ok_or_else(|| {
                    Error::metadata("chunk_grid.configuration.chunk_shape is required")
                })?,
            "chunk_shape",
        )?;
        if chunk_shape.len() != shape.len() {
            return Err(Error::metadata(format!(
                "chunk_shape {} has rank {}, shape {} has rank {}",
                shown(&chunk_shape),
                chunk_shape.len(),
                shown(&shape),
                shape.len()
            )));
        }
        if chunk_shape.contains(&0) {
            return Err(Error::metadata(format!(
                "chunk_shape {} contains 0",
                shown(&chunk_shape)
            )));
        }
        let chunk_key_encoding = match o.get("chunk_key_encoding") {
            Some(v) => ChunkKeyEncoding::from_json(v)?,
            None => return Err(Error::metadata("`chunk_key_encoding` is required")),
        };
        let fill_value = FillValue::parse(field("fill_value")?, &data_type)?;
        let codecs = CodecChain::from_json(field("codecs")?, "codecs")?;
        let dimension_names = match o.get("dimension_names") {
            None | Some(Value::Null) => None,
            Some(Value::Array(a)) if a.len() == shape.len() => Some(
                a.iter()
                    .map(|n| match n {
                        Value::Null => Ok(None),
                        Value::String(s) => Ok(Some(s.clone())),
                        other => Err(Error::metadata(format!(
                            "dimension_names entries must be strings or null, got {}",
                            shown_text(other)
                        ))),
                    })
                    .collect::<Result<_>>()?,
            ),
            Some(other) => {
                return Err(Error::metadata(format!(
                    "dimension_names must be a list of {} names, got {}",
                    shape.len(),
                    shown_text(other)
                )))
            }
        };
        if let Some(t) = o.get("storage_transformers") {
            if t.as_array().is_none_or(|a| !a.is_empty()) {
                return Err(Error::metadata(format!(
                    "unsupported storage_transformers {}",
                    shown_text(t)
                )));
            }
        }
        let attributes = match o.get("attributes") {
            None => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(other) => {
                return Err(Error::metadata(format!(
                    "attributes must be an object, got {}",
                    shown_text(other)
                )))
            }
        };
        let mut meta = ArrayMetadata {
            shape,
            data_type,
            chunk_shape,
            chunk_key_encoding,
            fill_value,
            codecs,
            dimension_names,
            attributes,
        };
        checked_product(&meta.grid_shape())?;
        meta.codecs.validate(&meta.chunk_repr())?;
        meta.codecs.resolve(&meta.data_type);
        Ok(meta)
    }

    /// Check metadata built or edited in code (the fields are public) with the same checks as
    /// parsing `zarr.json`: it must be exactly what its own `zarr.json` parses back to.
    ///
    /// Errors: [`Error::InvalidMetadata`] naming the problem — a fill value of the wrong size
    /// for the data type, anything [`ArrayMetadata::from_json`] refuses (ranks, a zero in the
    /// chunk shape, an inner chunk shape that does not divide the shard shape, codec
    /// configurations, a data type or key separator no `zarr.json` can spell), or a value that
    /// would not be written as itself. [`Error::UnsupportedCodec`] as parsing gives it.
    pub fn validate(&self) -> Result<()> {
        if self.fill_value.0.len() != self.data_type.size() {
            return Err(Error::metadata(format!(
                "fill value of {} bytes for data_type {} ({} bytes)",
                self.fill_value.0.len(),
                self.data_type.name(),
                self.data_type.size()
            )));
        }
        let reparsed = Self::from_json(&self.to_json())?;
        if reparsed != self.resolved() {
            return Err(Error::metadata(format!(
                "the metadata would be written as a zarr.json that parses to something else: {}",
                shown_text(self.to_json())
            )));
        }
        Ok(())
    }

    /// This metadata with what its codec configurations left for the data type to decide
    /// filled in, as parsing fills it ([`CodecChain::resolve`]): what [`crate::Array::create`]
    /// writes.
    pub fn resolved(&self) -> Self {
        let mut m = self.clone();
        m.codecs.resolve(&m.data_type);
        m
    }

    /// The metadata as `zarr.json` JSON.
    pub fn to_json(&self) -> Value {
        let mut o = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape,
            "data_type": self.data_type.to_json(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.chunk_shape}},
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.fill_value.to_json(&self.data_type),
            "codecs": self.codecs.to_json(),
            "attributes": self.attributes,
        });
        if let Some(names) = &self.dimension_names {
            o["dimension_names"] = json!(names);
        }
        o
    }

    /// One chunk of the chunk grid (with sharding: one shard) before the codecs.
    pub fn chunk_repr(&self) -> ChunkRepr {
        ChunkRepr {
            shape: self.chunk_shape.clone(),
            dtype: self.data_type.clone(),
            fill_value: self.fill_value.clone(),
        }
    }

    /// Number of chunks (shards) along each dimension.
    pub fn grid_shape(&self) -> Vec<u64> {
        self.shape
            .iter()
            .zip(&self.chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect()
    }

    /// Storage key of the chunk (shard) at grid `coords`.
    pub fn chunk_key(&self, coords: &[u64]) -> String {
        self.chunk_key_encoding.key(coords)
    }

    /// The sharding codec, when the array→bytes codec is `sharding_indexed`.
    pub fn sharding(&self) -> Option<&ShardingCodec> {
        match &self.codecs.array_to_bytes {
            ArrayToBytes::Sharding(s) => Some(s),
            ArrayToBytes::Bytes(_) => None,
        }
    }

    /// The layout of one shard, as the sharding codec sees it (after any array→array codecs
    /// that come before it). `None` when the array is not sharded.
    pub fn shard_layout(&self) -> Option<ShardLayout> {
        let sharding = self.sharding()?;
        // Validated in `from_json`, so binding cannot fail here.
        let repr = self.codecs.bytes_repr(&self.chunk_repr()).ok()?;
        sharding.bind(&repr).ok()
    }

    /// True when inner chunks can be read from storage one by one: the shard object is the
    /// sharding codec's output itself (no bytes→bytes codec after it).
    pub fn supports_partial_reads(&self) -> bool {
        self.sharding().is_some() && self.codecs.bytes_to_bytes.is_empty()
    }
}

fn uint_list(v: &Value, what: &str) -> Result<Vec<u64>> {
    v.as_array()
        .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| {
            Error::metadata(format!(
                "`{what}` must be a list of non-negative integers, got {}",
                shown_text(v)
            ))
        })
}
