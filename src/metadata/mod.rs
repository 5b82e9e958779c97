//! Zarr v3 array metadata (`zarr.json`).
//!
//! A document is parsed member by member: `attributes` (any size, any content) stay JSON text
//! ([`Attributes`]) and extension members that may be ignored are never built, so memory stays
//! about the document's size; the rest is parsed into a tree and validated, within the limits
//! of [`crate::runtime::limits`].

pub mod dtype;
pub mod spec;

use crate::codec::sharding::{ShardLayout, ShardingCodec};
use crate::codec::{checked_product, ArrayToBytes, ChunkRepr, CodecChain};
use crate::error::{shown, shown_text, Error, Result};
use crate::metadata::dtype::{DataType, FillValue};
use crate::runtime::limits::{MAX_METADATA_BYTES, MAX_METADATA_STRUCTURE_BYTES};
use crate::storage::store::Store;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::fmt;

/// An array's `attributes`: a JSON object kept as its text, as the document gave it (or, from
/// a `Value`, as serde_json writes it). Parsed into a tree only when asked
/// ([`Attributes::to_map`]), so a document of large attributes opens in memory about its size.
/// Written back verbatim.
#[derive(Clone)]
pub struct Attributes(Box<RawValue>);

/// How deep attributes may nest (the object itself is level 1): the JSON parser's limit, so
/// [`Attributes::to_map`] always succeeds.
const MAX_ATTRIBUTES_DEPTH: usize = 127;

impl Attributes {
    /// No attributes: `{}`.
    pub fn new() -> Self {
        Attributes(RawValue::from_string("{}".into()).expect("valid JSON"))
    }

    /// The attributes `map`, held to the checks of [`Attributes::from_text`].
    pub fn from_map(map: &Map<String, Value>) -> Result<Self> {
        let text = serde_json::to_string(map).expect("JSON values serialise");
        Self::from_text(&text, "attributes")
    }

    /// Attributes from JSON text (`what` names the document in errors): it must be an object,
    /// nested at most 127 levels, and within [`MAX_METADATA_BYTES`]. Checked without building
    /// a tree.
    pub fn from_text(text: &str, what: &str) -> Result<Self> {
        if text.len() as u64 > MAX_METADATA_BYTES {
            return Err(too_large(what, text.len() as u64));
        }
        let raw: Box<RawValue> = serde_json::from_str(text).map_err(|e| json_error(what, &e))?;
        Self::from_raw(raw, what)
    }

    /// Attributes from a member kept as text (see [`Attributes::from_text`]).
    pub(crate) fn from_raw(raw: Box<RawValue>, what: &str) -> Result<Self> {
        if !raw.get().trim_start().starts_with('{') {
            return Err(Error::metadata(format!(
                "{what} must be an object, got {}",
                shown_text(raw.get())
            )));
        }
        if depth(raw.get()) > MAX_ATTRIBUTES_DEPTH {
            return Err(Error::metadata(format!(
                "{what} nested deeper than {MAX_ATTRIBUTES_DEPTH} levels"
            )));
        }
        // What a tree parse would refuse beyond syntax (a number out of range) is refused
        // now, by a pass that builds nothing.
        serde_json::from_str::<Checked>(raw.get()).map_err(|e| json_error(what, &e))?;
        Ok(Attributes(raw))
    }

    /// The JSON text of the object.
    pub fn as_text(&self) -> &str {
        self.0.get()
    }

    /// The attributes as a tree (which takes many times the text's memory for large ones).
    pub fn to_map(&self) -> Map<String, Value> {
        serde_json::from_str(self.0.get())
            .expect("checked when made: an object within the depth limit")
    }

    /// True for an object without members.
    pub fn is_empty(&self) -> bool {
        self.0
            .get()
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .eq(*b"{}")
    }
}

impl Default for Attributes {
    fn default() -> Self {
        Self::new()
    }
}

/// Two are equal when they hold the same JSON: the same text, or trees that compare equal
/// (members in any order, numbers by value).
impl PartialEq for Attributes {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get() || self.to_map() == other.to_map()
    }
}

/// Any JSON value, read as a tree parse reads it (numbers converted, depth limited) without
/// keeping anything.
struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(CheckedVisitor)
    }
}

struct CheckedVisitor;

impl<'de> Visitor<'de> for CheckedVisitor {
    type Value = Checked;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_unit<E>(self) -> std::result::Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Checked, A::Error> {
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

impl fmt::Debug for Attributes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Attributes({})", shown_text(self.0.get()))
    }
}

impl serde::Serialize for Attributes {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The deepest nesting of arrays and objects in valid JSON `text`, counted without recursion.
fn depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The error for a metadata document of `size` bytes (or more), over [`MAX_METADATA_BYTES`].
fn too_large(what: &str, size: u64) -> Error {
    Error::metadata(format!(
        "{what} has {size} bytes or more, over the limit of {MAX_METADATA_BYTES} bytes for a metadata document (zarrshard::runtime::limits::MAX_METADATA_BYTES)"
    ))
}

/// The metadata document `key` of `store`, `None` when missing; refused past
/// [`MAX_METADATA_BYTES`]: after a first block of 64 KiB, read no further when the store tells
/// the size, else after reading one byte more than the limit.
pub(crate) fn read_document<S: Store>(store: &S, key: &str) -> Result<Option<Vec<u8>>> {
    use crate::storage::io::ByteRange::FromStart;
    let io = store.shard_io(key)?;
    // Documents are small: one read of a first block is the whole of nearly every one (one
    // request to an object store). A longer one is checked against the limit by its size
    // where the store tells it, and read up to one byte past the limit otherwise.
    let Some(first) = io.read(FromStart(0, Some(FIRST_METADATA_READ)))? else {
        return Ok(None);
    };
    let mut data = first.data;
    if (data.len() as u64) < FIRST_METADATA_READ {
        return Ok(Some(data));
    }
    if let Ok(Some(size)) = io.size() {
        if size > MAX_METADATA_BYTES {
            return Err(too_large(key, size));
        }
    }
    let rest = io.read(FromStart(
        FIRST_METADATA_READ,
        Some(MAX_METADATA_BYTES + 1 - FIRST_METADATA_READ),
    ))?;
    let mut object_size = None;
    if let Some(r) = rest {
        data.extend_from_slice(&r.data);
        object_size = r.object_size;
    }
    if data.len() as u64 > MAX_METADATA_BYTES {
        return Err(too_large(key, object_size.unwrap_or(data.len() as u64)));
    }
    Ok(Some(data))
}

/// The first read of a metadata document, which nearly every one fits in.
const FIRST_METADATA_READ: u64 = 64 << 10;

/// A metadata document split into its members: those `parsed` says to build as trees (within
/// [`MAX_METADATA_STRUCTURE_BYTES`] together), the others kept as text, in document order (a
/// repeated member: the last one, as a tree parse keeps).
pub(crate) struct Members {
    /// The members parsed.
    pub(crate) tree: Map<String, Value>,
    /// The members kept as text.
    pub(crate) raw: Vec<(String, Box<RawValue>)>,
}

impl Members {
    /// Split document `bytes` (named `what` in errors).
    pub(crate) fn parse(bytes: &[u8], what: &str, parsed: impl Fn(&str) -> bool) -> Result<Self> {
        if bytes.len() as u64 > MAX_METADATA_BYTES {
            return Err(too_large(what, bytes.len() as u64));
        }
        let mut de = serde_json::Deserializer::from_slice(bytes);
        // Only whitespace may follow the object.
        let all = (&mut de)
            .deserialize_map(RawMembers)
            .and_then(|m| de.end().map(|()| m));
        let all = match all {
            Ok(all) => all,
            Err(e) if e.classify() == serde_json::error::Category::Data => {
                return Err(Error::metadata(format!("{what} must be a JSON object")))
            }
            Err(e) => return Err(json_error(what, &e)),
        };
        let mut members = Members {
            tree: Map::new(),
            raw: Vec::new(),
        };
        let mut structure = 0u64;
        for (key, value) in all {
            if parsed(&key) {
                structure += value.get().len() as u64;
                if structure > MAX_METADATA_STRUCTURE_BYTES {
                    return Err(Error::metadata(format!(
                        "{what}: the members other than `attributes` take more than {MAX_METADATA_STRUCTURE_BYTES} bytes (at `{}`; zarrshard::runtime::limits::MAX_METADATA_STRUCTURE_BYTES)",
                        shown_text(&key)
                    )));
                }
                let tree: Value =
                    serde_json::from_str(value.get()).map_err(|e| json_error(what, &e))?;
                members.tree.insert(key, tree);
            } else {
                members.raw.retain(|(k, _)| *k != key);
                members.raw.push((key, value));
            }
        }
        Ok(members)
    }

    /// Take the member `key` kept as text.
    pub(crate) fn take_raw(&mut self, key: &str) -> Option<Box<RawValue>> {
        let i = self.raw.iter().position(|(k, _)| k == key)?;
        Some(self.raw.remove(i).1)
    }
}

/// Deserialises a JSON object as its members' texts.
struct RawMembers;

impl<'de> Visitor<'de> for RawMembers {
    type Value = Vec<(String, Box<RawValue>)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Self::Value, A::Error> {
        let mut out = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: Box<RawValue> = map.next_value()?;
            out.push((key, value));
        }
        Ok(out)
    }
}

/// An extension member (kept as text) that says `"must_understand": false`, so it may be
/// ignored (Zarr v3 core, "Extension points"). Its other members are skipped unbuilt.
fn may_ignore(raw: &RawValue) -> bool {
    #[derive(serde::Deserialize)]
    struct Extension {
        must_understand: Option<bool>,
    }
    raw.get().trim_start().starts_with('{')
        && serde_json::from_str::<Extension>(raw.get())
            .is_ok_and(|e| e.must_understand == Some(false))
}

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
    /// `attributes`, kept as given (as JSON text).
    pub attributes: Attributes,
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
    /// Parse and validate `zarr.json` text (within the limits of [`crate::runtime::limits`]: the
    /// document's size, what is parsed into a tree, the nesting of sharding).
    pub fn parse(text: &str) -> Result<Self> {
        Self::parse_document(text.as_bytes(), "zarr.json")
    }

    /// [`ArrayMetadata::parse`] of document `bytes`, named `what` in errors. `attributes` stay
    /// text and extension members that may be ignored are skipped unbuilt: the memory taken is
    /// about the document's size.
    pub(crate) fn parse_document(bytes: &[u8], what: &str) -> Result<Self> {
        Self::from_document(Self::members(bytes, what)?)
    }

    /// A `zarr.json` document split as [`ArrayMetadata::from_document`] takes it.
    pub(crate) fn members(bytes: &[u8], what: &str) -> Result<Members> {
        Members::parse(bytes, what, |k| {
            k != "attributes" && KNOWN_KEYS.contains(&k)
        })
    }

    /// Validate a document split by [`ArrayMetadata::members`].
    pub(crate) fn from_document(mut members: Members) -> Result<Self> {
        let attributes = match members.take_raw("attributes") {
            None => Attributes::new(),
            Some(raw) => Attributes::from_raw(raw, "attributes")?,
        };
        let unknown = || match members.raw.iter().find(|(_, v)| !may_ignore(v)) {
            Some((k, _)) => Err(Error::metadata(format!(
                "unknown metadata member `{}`",
                shown_text(k)
            ))),
            None => Ok(()),
        };
        Self::from_members(&members.tree, attributes, unknown)
    }

    /// Parse and validate a `zarr.json` value.
    pub fn from_json(v: &Value) -> Result<Self> {
        let o = v
            .as_object()
            .ok_or_else(|| Error::metadata("zarr.json must be a JSON object"))?;
        let attributes = match o.get("attributes") {
            None => Attributes::new(),
            Some(Value::Object(m)) => {
                let text = serde_json::to_string(m).expect("JSON values serialise");
                Attributes::from_text(&text, "attributes")?
            }
            Some(other) => {
                return Err(Error::metadata(format!(
                    "attributes must be an object, got {}",
                    shown_text(other)
                )))
            }
        };
        // Unknown members are extensions; only those that say must_understand: false may be
        // ignored (Zarr v3 core, "Extension points").
        let unknown = || {
            for (k, val) in o {
                if !KNOWN_KEYS.contains(&k.as_str())
                    && val.get("must_understand") != Some(&Value::Bool(false))
                {
                    return Err(Error::metadata(format!("unknown metadata member `{k}`")));
                }
            }
            Ok(())
        };
        Self::from_members(o, attributes, unknown)
    }

    /// Validate the members of a document (`attributes` and unknown members aside: `unknown`
    /// checks those, after `zarr_format` and `node_type`).
    fn from_members(
        o: &Map<String, Value>,
        attributes: Attributes,
        unknown: impl FnOnce() -> Result<()>,
    ) -> Result<Self> {
        let field = |k: &str| {
            o.get(k)
                .ok_or_else(|| Error::metadata(format!("`{k}` is required")))
        };
        if field("zarr_format")?.as_u64() != Some(3) {
            return Err(Error::metadata(format!(
                "zarr_format must be 3, got {}",
                shown_text(field("zarr_format")?)
            )));
        }
        if field("node_type")?.as_str() != Some("array") {
            return Err(Error::metadata(format!(
                "node_type must be \"array\", got {}",
                shown_text(field("node_type")?)
            )));
        }
        unknown()?;
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
        // The attributes are text checked when made (and not copied here: they may be
        // large); the rest must parse back to itself.
        let structure = self.structure_json();
        let r = Self::from_json(&structure)?;
        let mut codecs = self.codecs.clone();
        codecs.resolve(&self.data_type);
        let same = (&r.shape, &r.data_type, &r.chunk_shape, r.chunk_key_encoding)
            == (
                &self.shape,
                &self.data_type,
                &self.chunk_shape,
                self.chunk_key_encoding,
            )
            && (&r.fill_value, &r.codecs, &r.dimension_names)
                == (&self.fill_value, &codecs, &self.dimension_names);
        if !same {
            return Err(Error::metadata(format!(
                "the metadata would be written as a zarr.json that parses to something else: {}",
                shown_text(structure)
            )));
        }
        Ok(())
    }

    /// [`ArrayMetadata::to_json`] with empty `attributes`.
    pub(crate) fn structure_json(&self) -> Value {
        let mut o = json!({
            "zarr_format": 3,
            "node_type": "array",
            "shape": self.shape,
            "data_type": self.data_type.to_json(),
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": self.chunk_shape}},
            "chunk_key_encoding": self.chunk_key_encoding.to_json(),
            "fill_value": self.fill_value.to_json(&self.data_type),
            "codecs": self.codecs.to_json(),
            "attributes": {},
        });
        if let Some(names) = &self.dimension_names {
            o["dimension_names"] = json!(names);
        }
        o
    }

    /// This metadata validated again as parsing validates it ([`ArrayMetadata::from_json`]),
    /// the attributes carried over as they are.
    pub(crate) fn reparsed(&self) -> Result<Self> {
        let mut meta = Self::from_json(&self.structure_json())?;
        meta.attributes = self.attributes.clone();
        Ok(meta)
    }

    /// The `zarr.json` document, pretty-printed; the attributes' text is written as it is
    /// (no tree is built of them).
    pub fn to_json_bytes(&self) -> Vec<u8> {
        struct Doc<'a>(&'a Map<String, Value>, &'a Attributes);
        impl serde::Serialize for Doc<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                let mut m = s.serialize_map(Some(self.0.len()))?;
                for (k, v) in self.0 {
                    match k.as_str() {
                        "attributes" => m.serialize_entry(k, self.1)?,
                        _ => m.serialize_entry(k, v)?,
                    }
                }
                m.end()
            }
        }
        let structure = self.structure_json();
        let o = structure.as_object().expect("an object");
        let mut out = Vec::with_capacity(self.attributes.as_text().len() + 4096);
        serde_json::to_writer_pretty(&mut out, &Doc(o, &self.attributes))
            .expect("JSON values serialise");
        out
    }

    /// This metadata with what its codec configurations left for the data type to decide
    /// filled in, as parsing fills it ([`CodecChain::resolve`]): what [`crate::Array::create`]
    /// writes.
    pub fn resolved(&self) -> Self {
        let mut m = self.clone();
        m.codecs.resolve(&m.data_type);
        m
    }

    /// The metadata as `zarr.json` JSON (its attributes parsed into the tree; to write the
    /// document, [`ArrayMetadata::to_json_bytes`] does without that).
    pub fn to_json(&self) -> Value {
        let mut o = self.structure_json();
        o["attributes"] = Value::Object(self.attributes.to_map());
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

/// A metadata document `what` that does not parse, as [`Error::InvalidMetadata`]. The
/// parser's depth limit is named with the limit on nesting it stands for.
pub(crate) fn json_error(what: &str, e: &serde_json::Error) -> Error {
    if e.to_string().starts_with("recursion limit exceeded") {
        return Error::metadata(format!(
            "{what}: JSON nested deeper than 128 levels (sharding_indexed may nest at most {} levels) at line {} column {}",
            crate::runtime::limits::MAX_SHARDING_NESTING,
            e.line(),
            e.column()
        ));
    }
    Error::metadata(format!("{what} is not valid JSON: {e}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_nest_as_deep_as_the_parser_reads_them_back() {
        let nested = |levels: usize| "[".repeat(levels - 1) + &"]".repeat(levels - 1);
        let deepest = format!("{{\"a\": {}}}", nested(MAX_ATTRIBUTES_DEPTH));
        let a = Attributes::from_text(&deepest, "attributes").unwrap();
        assert_eq!(a.to_map().len(), 1);
        let over = format!("{{\"a\": {}}}", nested(MAX_ATTRIBUTES_DEPTH + 1));
        assert_eq!(
            Attributes::from_text(&over, "attributes")
                .err()
                .unwrap()
                .to_string(),
            "invalid metadata: attributes nested deeper than 127 levels"
        );
        // Brackets inside strings do not count.
        let text = format!("{{\"a\": \"{}\\\"\"}}", "[".repeat(500));
        assert_eq!(
            Attributes::from_text(&text, "attributes")
                .unwrap()
                .as_text(),
            text
        );
        assert!(Attributes::from_text(" { } ", "attributes")
            .unwrap()
            .is_empty());
        // A number a tree cannot hold is refused when made, not when asked for.
        let e = Attributes::from_text("{\"a\": 1e400}", "attributes")
            .err()
            .unwrap();
        assert!(
            e.to_string()
                .starts_with("invalid metadata: attributes is not valid JSON: number out of range"),
            "{e}"
        );
        // Equal JSON in other spellings is equal.
        let a = Attributes::from_text("{\"a\": 1e3, \"b\": \"\\u00b5\"}", "attributes").unwrap();
        let b = Attributes::from_text("{\"b\":\"µ\",\"a\":1000.0}", "attributes").unwrap();
        assert_eq!(a, b);
        assert!(!Attributes::from_text("{\"a\": {}}", "attributes")
            .unwrap()
            .is_empty());
    }
}
