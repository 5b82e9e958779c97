//! Zarr v3 data types and fill values.
//!
//! In memory an element is stored in the machine's native byte order (each field of a struct,
//! each code unit of a UTF-32 string); the `bytes` codec converts to and from the stored order.
//! A fill value is kept as the bytes of one element. Besides the core types (spelled as
//! strings), the fixed-size extension types zarr-python writes are read and written in their
//! object form: `raw_bytes`, `null_terminated_bytes`, `fixed_length_utf32`,
//! `numpy.datetime64` / `numpy.timedelta64`, and `structured` / `struct`. Variable-length types
//! (`string`, `bytes`) have no fixed element size, which the engine needs; they are refused by
//! name.

use crate::error::{Error, Result};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// The widest raw-bits type accepted, in bytes: `r1048576` (128 KiB per element). The spec
/// sets no bound; without one a metadata document could size a single element (its fill value,
/// every chunk's element stride) past any buffer. Extension types (raw bytes, strings, structs)
/// are held to the same bound.
pub const MAX_RAW_BYTES: usize = 1 << 17;

/// How deep structs may nest (a struct field of a struct field …).
pub const MAX_STRUCT_DEPTH: usize = 32;

/// The time units `numpy.datetime64` and `numpy.timedelta64` take (`us` and `μs` are both
/// microseconds; each is written back as it was read).
pub const TIME_UNITS: [&str; 15] = [
    "Y", "M", "W", "D", "h", "m", "s", "ms", "us", "μs", "ns", "ps", "fs", "as", "generic",
];

/// The configuration of a `numpy.datetime64` or `numpy.timedelta64` data type: an element is
/// a signed 64-bit count of `scale_factor` × `unit` (`i64::MIN` is NaT, "not a time").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TimeUnit {
    /// The data type's name as read: `numpy.datetime64` / `numpy.timedelta64` (what
    /// zarr-python writes) or `datetime64` / `timedelta64`.
    pub name: &'static str,
    /// One of [`TIME_UNITS`].
    pub unit: &'static str,
    /// In `1..=2147483647`.
    pub scale_factor: u32,
}

/// One field of a struct data type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructField {
    /// The field's name (non-empty, unique within its struct).
    pub name: String,
    /// The field's data type (fixed-size; a struct may nest).
    pub data_type: DataType,
}

/// A struct data type: fields packed in order, no padding.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StructType {
    /// `"structured"` (zarr-python 3.1: fields as `[name, data_type]` pairs, fill value as
    /// base64 of the element's bytes) or `"struct"` (zarr-extensions: fields as
    /// `{"name", "data_type"}` objects, fill value as an object of field values).
    pub name: &'static str,
    /// The fields, in storage order.
    pub fields: Vec<StructField>,
}

impl StructType {
    /// Bytes per element: the sum of the fields' sizes.
    pub fn size(&self) -> usize {
        self.fields.iter().map(|f| f.data_type.size()).sum()
    }

    /// `(offset, width)` within an element of each multi-byte unit that a change of byte order
    /// reverses, in order.
    fn swap_units(&self, base: usize, out: &mut Vec<(usize, usize)>) {
        let mut offset = base;
        for f in &self.fields {
            match &f.data_type {
                DataType::Struct(s) => s.swap_units(offset, out),
                t => {
                    let unit = t.swap_unit();
                    if unit > 1 {
                        out.extend((0..t.size() / unit).map(|i| (offset + i * unit, unit)));
                    }
                }
            }
            offset += f.data_type.size();
        }
    }
}

/// A Zarr v3 `data_type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DataType {
    /// `bool`: one byte, 0 or 1.
    Bool,
    /// `int8`.
    Int8,
    /// `int16`.
    Int16,
    /// `int32`.
    Int32,
    /// `int64`.
    Int64,
    /// `uint8`.
    UInt8,
    /// `uint16`.
    UInt16,
    /// `uint32`.
    UInt32,
    /// `uint64`.
    UInt64,
    /// `float16` (IEEE 754 half precision).
    Float16,
    /// `float32`.
    Float32,
    /// `float64`.
    Float64,
    /// `complex64`: two `float32`, real then imaginary.
    Complex64,
    /// `complex128`: two `float64`, real then imaginary.
    Complex128,
    /// `r<N>`: N raw bits, N a positive multiple of 8. Never byte-swapped.
    RawBits(usize),
    /// `{"name": "raw_bytes", "configuration": {"length_bytes": N}}`: N opaque bytes (numpy
    /// `V<N>`). Never byte-swapped; the fill value is base64.
    RawBytes(usize),
    /// `{"name": "null_terminated_bytes", "configuration": {"length_bytes": N}}`: a byte string
    /// of at most N bytes, padded with zero bytes (numpy `S<N>`). Never byte-swapped; the fill
    /// value is base64 of the string without its padding.
    NullTerminatedBytes(usize),
    /// `{"name": "fixed_length_utf32", "configuration": {"length_bytes": N}}`: N/4 UTF-32 code
    /// units padded with zeros (numpy `U<N/4>`). Each code unit is byte-swapped; the fill value
    /// is a JSON string.
    FixedLengthUtf32(usize),
    /// `{"name": "numpy.datetime64", "configuration": {"unit", "scale_factor"}}`: an `int64`
    /// count of units since the Unix epoch. The fill value is an integer or `"NaT"`.
    DateTime64(TimeUnit),
    /// `{"name": "numpy.timedelta64", "configuration": {"unit", "scale_factor"}}`: an `int64`
    /// count of units. The fill value is an integer or `"NaT"`.
    TimeDelta64(TimeUnit),
    /// `{"name": "structured" | "struct", "configuration": {"fields": [...]}}`: named fields
    /// packed in order; each multi-byte field is byte-swapped on its own.
    Struct(Arc<StructType>),
}

/// Core data types' names (spelled as JSON strings).
const CORE: [(&str, DataType); 14] = [
    ("bool", DataType::Bool),
    ("int8", DataType::Int8),
    ("int16", DataType::Int16),
    ("int32", DataType::Int32),
    ("int64", DataType::Int64),
    ("uint8", DataType::UInt8),
    ("uint16", DataType::UInt16),
    ("uint32", DataType::UInt32),
    ("uint64", DataType::UInt64),
    ("float16", DataType::Float16),
    ("float32", DataType::Float32),
    ("float64", DataType::Float64),
    ("complex64", DataType::Complex64),
    ("complex128", DataType::Complex128),
];

/// Variable-length data types zarr-python writes, and the codec it stores each with.
const VARIABLE_LENGTH: [(&str, &str); 4] = [
    ("string", "vlen-utf8"),
    ("variable_length_utf8", "vlen-utf8"),
    ("bytes", "vlen-bytes"),
    ("variable_length_bytes", "vlen-bytes"),
];

impl DataType {
    /// Parse a `data_type` name such as `uint16` or `r24` (the string spelling).
    pub fn parse(name: &str) -> Result<Self> {
        if let Some((_, t)) = CORE.iter().find(|(n, _)| *n == name) {
            return Ok(t.clone());
        }
        if let Some((_, codec)) = VARIABLE_LENGTH.iter().find(|(n, _)| *n == name) {
            return Err(Error::metadata(format!(
                "data_type `{name}` is variable-length (stored with the `{codec}` codec); \
                 zarrshard reads and writes only fixed-size data types"
            )));
        }
        let bits = name
            .strip_prefix('r')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0 && n % 8 == 0)
            .ok_or_else(|| Error::metadata(format!("unknown data_type `{name}`")))?;
        Self::raw_bytes(bits / 8, name)
    }

    /// Parse a `data_type` as it appears in `zarr.json`: a string ([`DataType::parse`]) or an
    /// extension type's object `{"name": …, "configuration": {…}}`.
    pub fn from_json(v: &Value) -> Result<Self> {
        Self::from_json_nested(v, 0)
    }

    /// [`DataType::from_json`] for a struct field `depth` structs deep: nesting is bounded
    /// ([`MAX_STRUCT_DEPTH`]) so a metadata value built in code cannot exhaust the stack.
    fn from_json_nested(v: &Value, depth: usize) -> Result<Self> {
        let o = match v {
            Value::String(s) => return Self::parse(s),
            Value::Object(o) => o,
            other => {
                return Err(Error::metadata(format!(
                    "data_type must be a string or an object, got {other}"
                )))
            }
        };
        let name = o
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::metadata(format!("data_type {v} has no string `name`")))?;
        if let Some(k) = o.keys().find(|k| *k != "name" && *k != "configuration") {
            return Err(Error::metadata(format!(
                "data_type `{name}`: unknown member `{k}`"
            )));
        }
        let config = |keys: &[&str]| -> Result<&Map<String, Value>> {
            let c = o
                .get("configuration")
                .and_then(Value::as_object)
                .ok_or_else(|| {
                    Error::metadata(format!("data_type `{name}` needs a `configuration` object"))
                })?;
            for k in keys {
                if !c.contains_key(*k) {
                    return Err(Error::metadata(format!(
                        "data_type `{name}`: configuration.{k} is required"
                    )));
                }
            }
            if let Some(k) = c.keys().find(|k| !keys.contains(&k.as_str())) {
                return Err(Error::metadata(format!(
                    "data_type `{name}`: unknown configuration member `{k}`"
                )));
            }
            Ok(c)
        };
        let length = || -> Result<usize> {
            let c = config(&["length_bytes"])?;
            let n = c["length_bytes"]
                .as_u64()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    Error::metadata(format!(
                        "data_type `{name}`: configuration.length_bytes must be a positive \
                         integer, got {}",
                        c["length_bytes"]
                    ))
                })?;
            match usize::try_from(n) {
                Ok(n) if n <= MAX_RAW_BYTES => Ok(n),
                _ => Err(Error::metadata(format!(
                    "data_type `{name}`: elements wider than {MAX_RAW_BYTES} bytes are not \
                     supported (length_bytes {n})"
                ))),
            }
        };
        Ok(match name {
            "raw_bytes" => DataType::RawBytes(length()?),
            "null_terminated_bytes" => DataType::NullTerminatedBytes(length()?),
            "fixed_length_utf32" => {
                let n = length()?;
                if n % 4 != 0 {
                    return Err(Error::metadata(format!(
                        "data_type `{name}`: configuration.length_bytes must be a multiple of \
                         4, got {n}"
                    )));
                }
                DataType::FixedLengthUtf32(n)
            }
            "numpy.datetime64" | "datetime64" | "numpy.timedelta64" | "timedelta64" => {
                let c = config(&["unit", "scale_factor"])?;
                let unit = c["unit"]
                    .as_str()
                    .and_then(|u| TIME_UNITS.iter().find(|t| **t == u))
                    .ok_or_else(|| {
                        Error::metadata(format!(
                            "data_type `{name}`: configuration.unit must be one of {}, got {}",
                            TIME_UNITS.join(", "),
                            c["unit"]
                        ))
                    })?;
                let scale_factor = c["scale_factor"]
                    .as_u64()
                    .filter(|s| (1..=i32::MAX as u64).contains(s))
                    .ok_or_else(|| {
                        Error::metadata(format!(
                            "data_type `{name}`: configuration.scale_factor must be an integer \
                             in 1..=2147483647, got {}",
                            c["scale_factor"]
                        ))
                    })? as u32;
                let t = TimeUnit {
                    name: [
                        "numpy.datetime64",
                        "datetime64",
                        "numpy.timedelta64",
                        "timedelta64",
                    ]
                    .into_iter()
                    .find(|n| *n == name)
                    .unwrap_or_default(),
                    unit,
                    scale_factor,
                };
                if name.ends_with("datetime64") {
                    DataType::DateTime64(t)
                } else {
                    DataType::TimeDelta64(t)
                }
            }
            "structured" | "struct" if depth >= MAX_STRUCT_DEPTH => {
                return Err(Error::metadata(format!(
                    "data_type `{name}`: structs nested more than {MAX_STRUCT_DEPTH} deep are \
                     not supported"
                )))
            }
            "structured" | "struct" => Self::parse_struct(name, config(&["fields"])?, depth)?,
            _ if CORE.iter().any(|(n, _)| *n == name) => {
                return Err(Error::metadata(format!(
                    "data_type {v}: a core data type is spelled as the string \"{name}\" \
                     (Zarr v3 core)"
                )))
            }
            _ if VARIABLE_LENGTH.iter().any(|(n, _)| *n == name) => return Self::parse(name),
            _ => return Err(Error::metadata(format!("unknown data_type `{name}`"))),
        })
    }

    fn parse_struct(name: &str, c: &Map<String, Value>, depth: usize) -> Result<Self> {
        let bad = |what: String| Error::metadata(format!("data_type `{name}`: {what}"));
        let list = c["fields"]
            .as_array()
            .filter(|a| !a.is_empty())
            .ok_or_else(|| {
                bad(format!(
                    "configuration.fields must be a non-empty list, got {}",
                    c["fields"]
                ))
            })?;
        let mut fields: Vec<StructField> = Vec::with_capacity(list.len());
        let mut size = 0usize;
        for f in list {
            // `structured` spells a field `[name, data_type]`; `struct` `{"name", "data_type"}`.
            let (field_name, field_type) = match (name, f) {
                ("structured", Value::Array(pair)) if pair.len() == 2 => (&pair[0], &pair[1]),
                ("struct", Value::Object(o))
                    if o.len() == 2 && o.contains_key("name") && o.contains_key("data_type") =>
                {
                    (&o["name"], &o["data_type"])
                }
                _ => {
                    return Err(bad(format!(
                        "field {f} is not {}",
                        if name == "struct" {
                            "an object {\"name\", \"data_type\"}"
                        } else {
                            "a pair [name, data_type]"
                        }
                    )))
                }
            };
            let field_name = field_name
                .as_str()
                .filter(|s| !s.is_empty())
                .ok_or_else(|| bad(format!("field name {field_name} is not a non-empty string")))?;
            if fields.iter().any(|g| g.name == field_name) {
                return Err(bad(format!("field `{field_name}` appears twice")));
            }
            let data_type = Self::from_json_nested(field_type, depth + 1).map_err(|e| match e {
                Error::InvalidMetadata(m) => bad(format!("field `{field_name}`: {m}")),
                other => other,
            })?;
            size = size
                .checked_add(data_type.size())
                .filter(|&s| s <= MAX_RAW_BYTES)
                .ok_or_else(|| {
                    bad(format!(
                        "elements wider than {MAX_RAW_BYTES} bytes are not supported"
                    ))
                })?;
            fields.push(StructField {
                name: field_name.to_string(),
                data_type,
            });
        }
        let name = if name == "struct" {
            "struct"
        } else {
            "structured"
        };
        Ok(DataType::Struct(Arc::new(StructType { name, fields })))
    }

    /// Raw bits of `bytes` bytes per element (`r<8·bytes>`, or a v2 `|V<bytes>`), spelled
    /// `name` in the metadata: refused when 0 or wider than [`MAX_RAW_BYTES`].
    pub fn raw_bytes(bytes: usize, name: &str) -> Result<Self> {
        match bytes {
            1..=MAX_RAW_BYTES => Ok(DataType::RawBits(bytes)),
            0 => Err(Error::metadata(format!("data_type `{name}` has no bits"))),
            _ => Err(Error::metadata(format!(
                "data_type `{name}`: raw elements wider than {MAX_RAW_BYTES} bytes are not supported"
            ))),
        }
    }

    /// The `data_type` as `zarr.json` spells it: a string for the core types and raw bits, the
    /// object form (with the name it was read with) for extension types.
    pub fn to_json(&self) -> Value {
        use DataType::*;
        let length =
            |name: &str, n: &usize| json!({"name": name, "configuration": {"length_bytes": n}});
        match self {
            RawBytes(n) => length("raw_bytes", n),
            NullTerminatedBytes(n) => length("null_terminated_bytes", n),
            FixedLengthUtf32(n) => length("fixed_length_utf32", n),
            DateTime64(t) | TimeDelta64(t) => json!({
                "name": t.name,
                "configuration": {"unit": t.unit, "scale_factor": t.scale_factor}
            }),
            Struct(s) => {
                let fields: Vec<Value> = s
                    .fields
                    .iter()
                    .map(|f| match s.name {
                        "struct" => json!({"name": f.name, "data_type": f.data_type.to_json()}),
                        _ => json!([f.name, f.data_type.to_json()]),
                    })
                    .collect();
                json!({"name": s.name, "configuration": {"fields": fields}})
            }
            other => other.name().into(),
        }
    }

    /// The Zarr v3 name: the string for core types and raw bits, the compact JSON text of the
    /// object for extension types (as in error messages and `zarrshard info`).
    pub fn name(&self) -> String {
        use DataType::*;
        match self {
            RawBits(n) => format!("r{}", n * 8),
            RawBytes(_)
            | NullTerminatedBytes(_)
            | FixedLengthUtf32(_)
            | DateTime64(_)
            | TimeDelta64(_)
            | Struct(_) => self.to_json().to_string(),
            core => CORE
                .iter()
                .find(|(_, t)| t == core)
                .map(|(n, _)| n.to_string())
                .unwrap_or_default(),
        }
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        use DataType::*;
        match self {
            Bool | Int8 | UInt8 => 1,
            Int16 | UInt16 | Float16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 | DateTime64(_) | TimeDelta64(_) => 8,
            Complex128 => 16,
            RawBits(n) | RawBytes(n) | NullTerminatedBytes(n) | FixedLengthUtf32(n) => *n,
            Struct(s) => s.size(),
        }
    }

    /// Size of the unit that is byte-swapped when converting endianness: the element itself,
    /// each half of a complex number, each UTF-32 code unit, and 1 (no swap) for single bytes,
    /// raw bits and byte strings. A struct swaps each field on its own ([`DataType::swap`]);
    /// its unit here is its widest field's (1 when no field has a byte order).
    pub fn swap_unit(&self) -> usize {
        match self {
            DataType::Complex64 => 4,
            DataType::Complex128 => 8,
            DataType::FixedLengthUtf32(_) => 4,
            DataType::RawBits(_) | DataType::RawBytes(_) | DataType::NullTerminatedBytes(_) => 1,
            DataType::Struct(s) => s
                .fields
                .iter()
                .map(|f| f.data_type.swap_unit())
                .max()
                .unwrap_or(1),
            other => other.size(),
        }
    }

    /// Reverse the byte order of every element of `data` (a whole number of elements): each
    /// [`DataType::swap_unit`]-byte unit, and each field of a struct on its own. Its own inverse.
    pub fn swap(&self, data: &mut [u8]) {
        match self {
            DataType::Struct(s) => {
                let mut units = Vec::new();
                s.swap_units(0, &mut units);
                let size = s.size();
                if units.is_empty() || size == 0 {
                    return;
                }
                for element in data.chunks_exact_mut(size) {
                    for &(offset, width) in &units {
                        element[offset..offset + width].reverse();
                    }
                }
            }
            other => crate::codec::bytes::swap_in_place(data, other.swap_unit()),
        }
    }
}

/// One element's bytes, native byte order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue(pub Vec<u8>);

impl FillValue {
    /// Fill `out` (a whole number of elements) with this value: a memset when the element's
    /// bytes are all equal (0, NaN patterns aside, is the common case), otherwise by doubling
    /// copies — never element by element.
    pub fn fill(&self, out: &mut [u8]) {
        let v = &self.0;
        if v.iter().all(|&b| b == v[0]) {
            out.fill(v[0]);
            return;
        }
        let n = v.len().min(out.len());
        out[..n].copy_from_slice(&v[..n]);
        let mut done = n;
        while done < out.len() {
            let k = done.min(out.len() - done);
            out.copy_within(..k, done);
            done += k;
        }
    }

    /// True when every element of `data` is this value, byte for byte. A one-byte pattern (0
    /// for most arrays) is checked a word at a time.
    pub fn fills(&self, data: &[u8]) -> bool {
        let v = &self.0;
        if v.iter().all(|&b| b == v[0]) {
            let w = u64::from_ne_bytes([v[0]; 8]);
            let (body, tail) = data.split_at(data.len() / 8 * 8);
            return body
                .chunks_exact(8)
                .all(|x| u64::from_ne_bytes(x.try_into().unwrap()) == w)
                && tail.iter().all(|&x| x == v[0]);
        }
        data.chunks_exact(v.len()).all(|e| e == v.as_slice())
    }

    /// All-zero fill value of `dtype`.
    pub fn zero(dtype: &DataType) -> Self {
        FillValue(vec![0; dtype.size()])
    }

    /// Parse a `fill_value` in any spelling the Zarr v3 core spec allows for `dtype`:
    /// booleans; integers; floats as numbers, `"NaN"`, `"Infinity"`, `"-Infinity"` or
    /// `"0x…"` (the raw IEEE bits, big-endian hex); complex as `[re, im]`; raw bits as an
    /// array of byte values (or `"0x…"`); and for the extension types what zarr-python writes:
    /// raw bytes, byte strings and `structured` elements as base64, UTF-32 strings as a JSON
    /// string, times as an integer or `"NaT"`, `struct` elements as an object of field values.
    pub fn parse(value: &Value, dtype: &DataType) -> Result<Self> {
        let bad = || {
            Error::metadata(format!(
                "fill_value {value} is not valid for data_type {}",
                dtype.name()
            ))
        };
        use DataType::*;
        let bytes = match dtype {
            Bool => match value {
                Value::Bool(b) => vec![*b as u8],
                // Zarr v2 metadata and some writers spell it 0/1.
                Value::Number(n) if n.as_u64() == Some(0) || n.as_u64() == Some(1) => {
                    vec![n.as_u64().unwrap() as u8]
                }
                _ => return Err(bad()),
            },
            Int8 | Int16 | Int32 | Int64 => {
                let v = integer_of(value).ok_or_else(bad)?;
                let v = i64::try_from(v).map_err(|_| bad())?;
                let size = dtype.size() as u32;
                let (min, max) = if size == 8 {
                    (i64::MIN, i64::MAX)
                } else {
                    (-(1i64 << (size * 8 - 1)), (1i64 << (size * 8 - 1)) - 1)
                };
                if v < min || v > max {
                    return Err(bad());
                }
                v.to_ne_bytes()[native_low_range(8, size as usize)].to_vec()
            }
            UInt8 | UInt16 | UInt32 | UInt64 => {
                let v = integer_of(value).ok_or_else(bad)?;
                let v = u64::try_from(v).map_err(|_| bad())?;
                let size = dtype.size() as u32;
                if size < 8 && v >> (size * 8) != 0 {
                    return Err(bad());
                }
                v.to_ne_bytes()[native_low_range(8, size as usize)].to_vec()
            }
            Float16 => match float_spelling(value, 2).ok_or_else(bad)? {
                FloatSpelling::Bits(b) => (b as u16).to_ne_bytes().to_vec(),
                FloatSpelling::Value(f) => f64_to_f16_bits(f).to_ne_bytes().to_vec(),
            },
            Float32 => float32_bytes(value).ok_or_else(bad)?,
            Float64 => float64_bytes(value).ok_or_else(bad)?,
            Complex64 | Complex128 => {
                let parts = value.as_array().filter(|a| a.len() == 2).ok_or_else(bad)?;
                let mut out = Vec::with_capacity(dtype.size());
                for part in parts {
                    let b = if *dtype == Complex64 {
                        float32_bytes(part)
                    } else {
                        float64_bytes(part)
                    };
                    out.extend(b.ok_or_else(bad)?);
                }
                out
            }
            RawBits(n) => match value {
                Value::Array(items) if items.len() == *n => items
                    .iter()
                    .map(|v| v.as_u64().filter(|&b| b <= 255).map(|b| b as u8))
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(bad)?,
                Value::String(s) => {
                    let bytes = parse_hex(s).ok_or_else(bad)?;
                    if bytes.len() != *n {
                        return Err(bad());
                    }
                    bytes
                }
                _ => return Err(bad()),
            },
            RawBytes(n) => value
                .as_str()
                .and_then(base64_decode)
                .filter(|b| b.len() == *n)
                .ok_or_else(bad)?,
            NullTerminatedBytes(n) => {
                let mut b = value
                    .as_str()
                    .and_then(base64_decode)
                    .filter(|b| b.len() <= *n)
                    .ok_or_else(bad)?;
                b.resize(*n, 0);
                b
            }
            FixedLengthUtf32(n) => {
                let s = value
                    .as_str()
                    .filter(|s| s.chars().count() <= n / 4)
                    .ok_or_else(bad)?;
                let mut b: Vec<u8> = s.chars().flat_map(|c| (c as u32).to_ne_bytes()).collect();
                b.resize(*n, 0);
                b
            }
            DateTime64(_) | TimeDelta64(_) => {
                let v = match value {
                    Value::String(s) if s == "NaT" => i64::MIN,
                    _ => value.as_i64().ok_or_else(bad)?,
                };
                v.to_ne_bytes().to_vec()
            }
            Struct(s) => match value {
                // zarr-python's `structured`: the element's bytes, each field little-endian.
                Value::String(text) => {
                    let mut b = base64_decode(text)
                        .filter(|b| b.len() == s.size())
                        .ok_or_else(bad)?;
                    if cfg!(target_endian = "big") {
                        dtype.swap(&mut b);
                    }
                    b
                }
                Value::Object(o) => {
                    if let Some(k) = o.keys().find(|k| !s.fields.iter().any(|f| &f.name == *k)) {
                        return Err(Error::metadata(format!(
                            "fill_value {value}: data_type {} has no field `{k}`",
                            dtype.name()
                        )));
                    }
                    let mut b = Vec::with_capacity(s.size());
                    for f in &s.fields {
                        let v = o.get(&f.name).ok_or_else(|| {
                            Error::metadata(format!(
                                "fill_value {value} has no value for field `{}`",
                                f.name
                            ))
                        })?;
                        b.extend(FillValue::parse(v, &f.data_type)?.0);
                    }
                    b
                }
                _ => return Err(bad()),
            },
        };
        Ok(FillValue(bytes))
    }

    /// The fill value as Zarr v3 JSON (the canonical spelling). A float NaN is `"NaN"` only
    /// when its bits are the canonical quiet NaN that `"NaN"` parses to (float16 `0x7e00`,
    /// float32 `0x7fc00000`, float64 `0x7ff8000000000000`, as zarr-python and zarrs write);
    /// any other NaN is written as its bits, `"0x…"` (big-endian hex), so it parses back to the
    /// same bits. Complex numbers are written component by component the same way.
    pub fn to_json(&self, dtype: &DataType) -> Value {
        use DataType::*;
        let b = &self.0;
        // `f` is the value, `bits` its `size`-byte IEEE bits, `canonical_nan` the bits "NaN" means.
        let float = |f: f64, bits: u64, size: usize, canonical_nan: u64| -> Value {
            if f.is_nan() && bits != canonical_nan {
                format!("0x{bits:0width$x}", width = 2 * size).into()
            } else if f.is_nan() {
                "NaN".into()
            } else if f == f64::INFINITY {
                "Infinity".into()
            } else if f == f64::NEG_INFINITY {
                "-Infinity".into()
            } else {
                serde_json::Number::from_f64(f).map(Value::Number).unwrap()
            }
        };
        let f32_at = |i: usize| {
            let bits = u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
            float(f32::from_bits(bits) as f64, bits as u64, 4, 0x7fc0_0000)
        };
        let f64_at = |i: usize| {
            let bits = u64::from_ne_bytes(b[i..i + 8].try_into().unwrap());
            float(f64::from_bits(bits), bits, 8, 0x7ff8_0000_0000_0000)
        };
        match dtype {
            Bool => Value::Bool(b[0] != 0),
            Int8 => (b[0] as i8).into(),
            Int16 => i16::from_ne_bytes([b[0], b[1]]).into(),
            Int32 => i32::from_ne_bytes(b[..4].try_into().unwrap()).into(),
            Int64 => i64::from_ne_bytes(b[..8].try_into().unwrap()).into(),
            UInt8 => b[0].into(),
            UInt16 => u16::from_ne_bytes([b[0], b[1]]).into(),
            UInt32 => u32::from_ne_bytes(b[..4].try_into().unwrap()).into(),
            UInt64 => u64::from_ne_bytes(b[..8].try_into().unwrap()).into(),
            Float16 => {
                let bits = u16::from_ne_bytes([b[0], b[1]]);
                float(half::f16::from_bits(bits).to_f64(), bits as u64, 2, 0x7e00)
            }
            Float32 => f32_at(0),
            Float64 => f64_at(0),
            Complex64 => Value::Array(vec![f32_at(0), f32_at(4)]),
            Complex128 => Value::Array(vec![f64_at(0), f64_at(8)]),
            RawBits(_) => Value::Array(b.iter().map(|&x| x.into()).collect()),
            RawBytes(_) => base64_encode(b).into(),
            // numpy drops a byte string's trailing zero bytes (its padding).
            NullTerminatedBytes(_) => {
                let end = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
                base64_encode(&b[..end]).into()
            }
            FixedLengthUtf32(_) => {
                let mut units: Vec<u32> = b
                    .chunks_exact(4)
                    .map(|u| u32::from_ne_bytes(u.try_into().unwrap()))
                    .collect();
                while units.last() == Some(&0) {
                    units.pop();
                }
                // A unit that is no character cannot be spelled; validation reports it.
                units
                    .iter()
                    .map(|&u| char::from_u32(u).unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect::<String>()
                    .into()
            }
            // NaT is written as the integer -2^63, as zarr-python writes it.
            DateTime64(_) | TimeDelta64(_) => i64::from_ne_bytes(b[..8].try_into().unwrap()).into(),
            Struct(s) if s.name == "struct" => {
                let mut o = Map::new();
                let mut offset = 0;
                for f in &s.fields {
                    let size = f.data_type.size();
                    let field = FillValue(b[offset..offset + size].to_vec());
                    o.insert(f.name.clone(), field.to_json(&f.data_type));
                    offset += size;
                }
                Value::Object(o)
            }
            // `structured`: base64 of the element with each field little-endian (zarr-python
            // 3.1 reads no other spelling).
            Struct(_) => {
                let mut le = b.clone();
                if cfg!(target_endian = "big") {
                    dtype.swap(&mut le);
                }
                base64_encode(&le).into()
            }
        }
    }
}

/// The IEEE 754 half-precision bits nearest to `f` (round to nearest, ties to even), rounded
/// once from the double's own bits: subnormal halves, overflow to ±infinity (from ±65520 up),
/// NaN to a quiet NaN keeping the sign and the payload's top bits (`f64::NAN` → `0x7e00`).
/// (`half::f16::from_f64` may round through f32 first, which rounds twice.)
fn f64_to_f16_bits(f: f64) -> u16 {
    let bits = f.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let man = bits & ((1u64 << 52) - 1);
    if exp == 0x7ff {
        return match man {
            0 => sign | 0x7c00,
            _ => sign | 0x7e00 | ((man >> 42) as u16 & 0x3ff),
        };
    }
    if exp == 0 {
        // Zero or a double subnormal (below 2^-1022): far under half the least half subnormal.
        return sign;
    }
    let e = exp - 1023;
    if e > 15 {
        return sign | 0x7c00;
    }
    // The significand with its implicit bit (53 bits), shifted right by `shift` to the half's
    // 10 fraction bits (normal) or to units of 2^-24 (subnormal); the bits shifted out decide.
    let sig = man | (1u64 << 52);
    let (base, shift) = if e >= -14 {
        (((e + 15) as u64) << 10, 42)
    } else {
        (0, (28 - e) as u32)
    };
    if shift > 53 {
        return sign; // below 2^-25: rounds to zero
    }
    let kept = if e >= -14 { man >> shift } else { sig >> shift };
    let rest = sig & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let mut h = base + kept;
    if rest > half || (rest == half && h & 1 == 1) {
        // A carry out of the fraction steps the exponent up, and out of 0x7bff gives infinity.
        h += 1;
    }
    sign | h as u16
}

/// The bytes of the low `size` bytes of a native `total`-byte integer.
fn native_low_range(total: usize, size: usize) -> std::ops::Range<usize> {
    if cfg!(target_endian = "little") {
        0..size
    } else {
        total - size..total
    }
}

/// An integer fill value; floats with an integral value are accepted (some writers emit `0.0`).
fn integer_of(value: &Value) -> Option<i128> {
    let n = value.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i as i128);
    }
    if let Some(u) = n.as_u64() {
        return Some(u as i128);
    }
    let f = n.as_f64()?;
    (f.fract() == 0.0 && f.abs() < 9.3e18).then_some(f as i128)
}

enum FloatSpelling {
    Value(f64),
    Bits(u64),
}

fn float_spelling(value: &Value, size: usize) -> Option<FloatSpelling> {
    match value {
        Value::Number(n) => n.as_f64().map(FloatSpelling::Value),
        Value::String(s) => match s.as_str() {
            "NaN" => Some(FloatSpelling::Value(f64::NAN)),
            "Infinity" => Some(FloatSpelling::Value(f64::INFINITY)),
            "-Infinity" => Some(FloatSpelling::Value(f64::NEG_INFINITY)),
            _ => {
                let bytes = parse_hex(s)?;
                if bytes.len() != size {
                    return None;
                }
                Some(FloatSpelling::Bits(
                    bytes.iter().fold(0u64, |acc, &b| (acc << 8) | b as u64),
                ))
            }
        },
        _ => None,
    }
}

fn float32_bytes(value: &Value) -> Option<Vec<u8>> {
    Some(match float_spelling(value, 4)? {
        FloatSpelling::Bits(b) => (b as u32).to_ne_bytes().to_vec(),
        // "NaN" maps to the canonical quiet NaN, as numpy and zarr-python do.
        FloatSpelling::Value(f) => (f as f32).to_ne_bytes().to_vec(),
    })
}

fn float64_bytes(value: &Value) -> Option<Vec<u8>> {
    Some(match float_spelling(value, 8)? {
        FloatSpelling::Bits(b) => b.to_ne_bytes().to_vec(),
        FloatSpelling::Value(f) => f.to_ne_bytes().to_vec(),
    })
}

/// Standard base64 (RFC 4648 §4; the `=` padding may be left out, as some writers do);
/// `None` when `text` is not base64.
pub(crate) fn base64_decode(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{general_purpose, DecodePaddingMode, GeneralPurpose};
    use base64::Engine;
    const LENIENT_PADDING: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        general_purpose::PAD.with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    LENIENT_PADDING.decode(text).ok()
}

/// Standard base64 with padding, as Python's `base64.b64encode` writes it.
fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// `"0x0a0b"` → `[0x0a, 0x0b]` (big-endian, as the spec writes raw bits).
fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let hex = s.strip_prefix("0x")?;
    if hex.is_empty() || hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fv(v: Value, t: &str) -> Result<Vec<u8>> {
        FillValue::parse(&v, &DataType::parse(t)?).map(|f| f.0)
    }

    #[test]
    fn raw_bits_up_to_128_kib_per_element() {
        assert_eq!(DataType::parse("r8").unwrap(), DataType::RawBits(1));
        assert_eq!(DataType::parse("r1048576").unwrap().size(), 131072);
        assert_eq!(
            DataType::parse("r1048584").unwrap_err().to_string(),
            "invalid metadata: data_type `r1048584`: raw elements wider than 131072 bytes are not supported"
        );
        for bad in ["r0", "r12", "r", "r-8"] {
            assert_eq!(
                DataType::parse(bad).unwrap_err().to_string(),
                format!("invalid metadata: unknown data_type `{bad}`")
            );
        }
        assert_eq!(
            DataType::raw_bytes(0, "r0").unwrap_err().to_string(),
            "invalid metadata: data_type `r0` has no bits"
        );
    }

    #[test]
    fn parses_every_spelling() {
        assert_eq!(fv(json!(true), "bool").unwrap(), vec![1]);
        assert_eq!(fv(json!(-2), "int16").unwrap(), (-2i16).to_ne_bytes());
        assert_eq!(
            fv(json!(18446744073709551615u64), "uint64").unwrap(),
            u64::MAX.to_ne_bytes()
        );
        assert_eq!(fv(json!(1.5), "float32").unwrap(), 1.5f32.to_ne_bytes());
        // The spec's example of raw bits for a float: 0x7fc00000 is float32 quiet NaN.
        assert_eq!(
            fv(json!("0x7fc00000"), "float32").unwrap(),
            0x7fc0_0000u32.to_ne_bytes()
        );
        assert_eq!(
            fv(json!("-Infinity"), "float64").unwrap(),
            f64::NEG_INFINITY.to_ne_bytes()
        );
        // float16 1.0 is 0x3c00 (IEEE 754 half precision).
        assert_eq!(fv(json!(1.0), "float16").unwrap(), 0x3c00u16.to_ne_bytes());
        let c = fv(json!([1.0, "NaN"]), "complex64").unwrap();
        assert_eq!(&c[..4], &1.0f32.to_ne_bytes());
        assert!(f32::from_ne_bytes(c[4..].try_into().unwrap()).is_nan());
        assert_eq!(fv(json!([1, 2, 3]), "r24").unwrap(), vec![1, 2, 3]);
    }

    #[test]
    fn fills_recognises_only_the_value() {
        assert!(FillValue(vec![0]).fills(&[0u8; 19]));
        assert!(!FillValue(vec![0]).fills(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
        assert!(FillValue(vec![1, 2]).fills(&[1, 2, 1, 2]));
        assert!(!FillValue(vec![1, 2]).fills(&[1, 2, 2, 1]));
    }

    #[test]
    fn fill_repeats_the_element() {
        for (v, n) in [
            (vec![0u8], 5),
            (vec![1u8, 2], 6),
            (vec![1u8, 2, 3], 9),
            (vec![7u8; 4], 8),
            (vec![9u8, 8], 0),
        ] {
            let mut out = vec![0xaau8; n];
            FillValue(v.clone()).fill(&mut out);
            assert_eq!(out, v.repeat(n / v.len()));
        }
    }

    /// Every half, and every midpoint between neighbouring halves (exact in f64, computed from
    /// `half`'s exact widening), ± one double ulp: the value itself, to even at the tie, and
    /// the nearer neighbour just off it.
    #[test]
    fn f64_to_f16_rounds_every_midpoint() {
        let wide = |h: u16| half::f16::from_bits(h).to_f64();
        // Every half; under Miri (an interpreter) every 61st, and the last.
        let step = if cfg!(miri) { 61 } else { 1 };
        for h in (0..0x7c00u16).step_by(step).chain([0x7bff]) {
            for sign in [0, 0x8000] {
                assert_eq!(f64_to_f16_bits(wide(sign | h)), sign | h);
            }
            let next = h + 1; // 0x7c00 is infinity: the tie above 65504 overflows
            let mid = match next {
                0x7c00 => 65520.0,
                _ => (wide(h) + wide(next)) / 2.0,
            };
            let even = if h % 2 == 0 { h } else { next };
            assert_eq!(f64_to_f16_bits(mid), even, "tie after {h:#06x}");
            assert_eq!(f64_to_f16_bits(-mid), 0x8000 | even, "tie after -{h:#06x}");
            let (below, above) = (
                f64::from_bits(mid.to_bits() - 1),
                f64::from_bits(mid.to_bits() + 1),
            );
            assert_eq!(f64_to_f16_bits(below), h, "below the tie after {h:#06x}");
            assert_eq!(f64_to_f16_bits(above), next, "above the tie after {h:#06x}");
        }
        assert_eq!(f64_to_f16_bits(f64::NAN), 0x7e00);
        assert_eq!(f64_to_f16_bits(f64::INFINITY), 0x7c00);
        assert_eq!(f64_to_f16_bits(f64::MIN_POSITIVE / 2.0), 0);
    }

    #[test]
    fn rejects_out_of_range_and_wrong_types() {
        assert!(fv(json!(256), "uint8").is_err());
        assert!(fv(json!(-1), "uint32").is_err());
        assert!(fv(json!(128), "int8").is_err());
        assert!(fv(json!("0x7fc0"), "float32").is_err());
        assert!(fv(json!("nan"), "float64").is_err());
        assert!(fv(json!([1.0]), "complex128").is_err());
        assert!(fv(json!("x"), "bool").is_err());
        assert!(DataType::parse("r7").is_err());
        assert!(DataType::parse("string").is_err());
    }
}
