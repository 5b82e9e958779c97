//! The two formats that preceded the `sharding_indexed` codec, read and written as profiles of
//! the same engine. Both use the binary shard format the codec later kept (chunks, then an index
//! of little-endian `(offset, nbytes)` uint64 pairs in C order, `2^64-1` for empty) with the
//! index at the end and no checksum, so each maps onto a [`ShardingCodec`] with
//! `index_codecs = [bytes little]`, `index_location = end`:
//!
//! * the **Zarr v2 sharding prototype** (zarr-python PR 876): a `.zarray` with `"shards"` (chunks
//!   per shard) and `"shard_format": "indexed"`, numcodecs compressors, shard keys like `2.0`;
//! * the **sharding storage transformer draft** (Zarr v3 draft, 2022): `meta/root/<path>.array.json`
//!   with a `storage_transformers` entry holding `chunks_per_shard`, chunk keys like
//!   `data/root/<path>/c96/18`, a shard key being the chunk key with its coordinates divided by
//!   `chunks_per_shard`.
//!
//! Each parser synthesises the equivalent Zarr v3 metadata, so reading, writing, verifying and
//! exporting need nothing format-specific beyond the key of each shard.
//!
//! [`ShardingCodec`]: crate::codec::sharding::ShardingCodec

use crate::codec::bytes::Endian;
use crate::codec::BytesToBytes;
use crate::error::{shown, shown_text, Error, Result};
use crate::metadata::dtype::DataType;
use crate::metadata::{ArrayMetadata, Attributes, Members};
use serde_json::{json, Map, Value};

/// The sharding storage transformer's extension URI, as the draft's configuration example
/// spells it (and as we write it).
pub const SHARDING_TRANSFORMER: &str =
    "https://purl.org/zarr/spec/storage_transformers/sharding/1.0";
/// The same URI as the draft's header spells it ("Specification URI"); read as the same
/// extension.
pub const SHARDING_TRANSFORMER_HEADER: &str =
    "http://purl.org/zarr/spec/storage-transformers/sharding/1.0";
/// Prefix of the draft's codec URIs (`…/codec/<id>/1.0`).
const DRAFT_CODEC_PREFIX: &str = "https://purl.org/zarr/spec/codec/";

/// A numpy type string (`<u2`, `|b1`, `>f8`, `<c16`; the draft also writes `bool`, `i1`, `u1`)
/// as a data type and its stored byte order (`None` for single bytes).
pub fn parse_typestr(s: &str) -> Result<(DataType, Option<Endian>)> {
    let bad = || Error::metadata(format!("unsupported dtype `{s}`"));
    if s == "bool" {
        return Ok((DataType::Bool, None));
    }
    let (endian, body) = match s.as_bytes().first() {
        Some(b'<') => (Some(Endian::Little), &s[1..]),
        Some(b'>') => (Some(Endian::Big), &s[1..]),
        Some(b'|') => (None, &s[1..]),
        _ => (None, s),
    };
    let dtype = match body {
        "b1" => DataType::Bool,
        "i1" => DataType::Int8,
        "i2" => DataType::Int16,
        "i4" => DataType::Int32,
        "i8" => DataType::Int64,
        "u1" => DataType::UInt8,
        "u2" => DataType::UInt16,
        "u4" => DataType::UInt32,
        "u8" => DataType::UInt64,
        "f2" => DataType::Float16,
        "f4" => DataType::Float32,
        "f8" => DataType::Float64,
        "c8" => DataType::Complex64,
        "c16" => DataType::Complex128,
        _ => match body.strip_prefix('V').and_then(|n| n.parse::<usize>().ok()) {
            Some(n) if n > 0 => DataType::raw_bytes(n, s)?,
            _ => return Err(bad()),
        },
    };
    let endian = if dtype.swap_unit() > 1 {
        Some(endian.ok_or_else(bad)?)
    } else {
        None
    };
    Ok((dtype, endian))
}

/// A numcodecs compressor configuration (`{"id": "zstd", "level": 1}`) as the equivalent Zarr
/// v3 codec JSON. `itemsize` is blosc's typesize.
pub fn numcodecs_to_v3(id: &str, config: &Map<String, Value>, itemsize: usize) -> Result<Value> {
    let int = |k: &str, default: i64| config.get(k).and_then(Value::as_i64).unwrap_or(default);
    Ok(match id {
        "zlib" => json!({"name": "zlib", "configuration": {"level": int("level", 1)}}),
        "gzip" => json!({"name": "gzip", "configuration": {"level": int("level", 1)}}),
        "zstd" => json!({"name": "zstd", "configuration": {
            "level": int("level", 0),
            "checksum": config.get("checksum").and_then(Value::as_bool).unwrap_or(false)}}),
        "blosc" => {
            // numcodecs: 0 none, 1 byte, 2 bit, -1 auto (bit for 1-byte items, else byte).
            let shuffle = match int("shuffle", 1) {
                0 => "noshuffle",
                2 => "bitshuffle",
                -1 if itemsize == 1 => "bitshuffle",
                _ => "shuffle",
            };
            json!({"name": "blosc", "configuration": {
                "cname": config.get("cname").and_then(Value::as_str).unwrap_or("lz4"),
                "clevel": int("clevel", 5), "shuffle": shuffle, "typesize": itemsize,
                "blocksize": int("blocksize", 0)}})
        }
        other => return Err(Error::UnsupportedCodec(other.to_string())),
    })
}

/// The reverse of [`numcodecs_to_v3`]: a Zarr v3 bytes→bytes codec as the numcodecs
/// configuration Zarr v2 readers decode the same stream with. Every bytes→bytes codec this
/// build has has one (crc32c is numcodecs' `crc32c` with the checksum at the end, as v3 puts it).
pub fn v3_to_numcodecs(codec: &BytesToBytes) -> Value {
    match codec {
        BytesToBytes::Zlib(c) => json!({"id": "zlib", "level": c.level}),
        BytesToBytes::Gzip(c) => json!({"id": "gzip", "level": c.level}),
        BytesToBytes::Zstd(c) => json!({"id": "zstd", "level": c.level, "checksum": c.checksum}),
        BytesToBytes::Blosc(c) => json!({"id": "blosc", "cname": c.cname, "clevel": c.clevel,
            "shuffle": c.effective().0 as i64, "blocksize": c.blocksize}),
        BytesToBytes::Crc32c(_) => json!({"id": "crc32c", "location": "end"}),
    }
}

/// The reverse of [`parse_typestr`]: the numpy type string of `dtype` stored in `endian`
/// order (`<u2`, `>f8`, `|b1`). Raw bits (`r<N>`) have no spelling the v2 readers agree on.
pub fn typestr(dtype: &DataType, endian: Option<Endian>) -> Result<String> {
    let body = match dtype {
        DataType::Bool => "b1",
        DataType::Int8 => "i1",
        DataType::Int16 => "i2",
        DataType::Int32 => "i4",
        DataType::Int64 => "i8",
        DataType::UInt8 => "u1",
        DataType::UInt16 => "u2",
        DataType::UInt32 => "u4",
        DataType::UInt64 => "u8",
        DataType::Float16 => "f2",
        DataType::Float32 => "f4",
        DataType::Float64 => "f8",
        DataType::Complex64 => "c8",
        DataType::Complex128 => "c16",
        DataType::RawBits(_)
        | DataType::RawBytes(_)
        | DataType::NullTerminatedBytes(_)
        | DataType::FixedLengthUtf32(_)
        | DataType::DateTime64(_)
        | DataType::TimeDelta64(_)
        | DataType::Struct(_) => {
            return Err(Error::InvalidArgument(format!(
                "data type {} has no Zarr v2 dtype that readers agree on",
                dtype.name()
            )))
        }
    };
    let order = match endian {
        _ if dtype.swap_unit() == 1 => '|',
        Some(Endian::Big) => '>',
        _ => '<',
    };
    Ok(format!("{order}{body}"))
}

/// What a legacy array's metadata says, in the engine's terms.
struct Profile<'a> {
    shape: &'a Value,
    inner_chunks: Vec<u64>,
    /// `None`: not sharded.
    chunks_per_shard: Option<Vec<u64>>,
    typestr: &'a str,
    fortran_order: bool,
    /// The compressor as v3 codec JSON.
    compressor: Option<Value>,
    fill_value: &'a Value,
    key_encoding: Value,
    attributes: Attributes,
}

/// Synthesise the equivalent Zarr v3 metadata.
fn to_v3(p: Profile) -> Result<ArrayMetadata> {
    let (dtype, endian) = parse_typestr(p.typestr)?;
    let bytes = match endian {
        None => json!({"name": "bytes"}),
        Some(Endian::Little) => json!({"name": "bytes", "configuration": {"endian": "little"}}),
        Some(Endian::Big) => json!({"name": "bytes", "configuration": {"endian": "big"}}),
    };
    let mut codecs = Vec::new();
    if p.fortran_order && p.inner_chunks.len() > 1 {
        // A Fortran-order chunk is the C-order serialisation of the reversed-axes chunk.
        let order: Vec<usize> = (0..p.inner_chunks.len()).rev().collect();
        codecs.push(json!({"name": "transpose", "configuration": {"order": order}}));
    }
    codecs.push(bytes);
    codecs.extend(p.compressor);
    let (grid_chunks, codecs) = match &p.chunks_per_shard {
        Some(per_shard) => {
            if per_shard.len() != p.inner_chunks.len() {
                return Err(Error::metadata(format!(
                    "chunks per shard {} do not match the rank of chunks {}",
                    shown(per_shard),
                    shown(&p.inner_chunks)
                )));
            }
            let shard: Vec<u64> = p
                .inner_chunks
                .iter()
                .zip(per_shard)
                .map(|(c, n)| {
                    c.checked_mul(*n)
                        .ok_or_else(|| Error::metadata("shard shape overflows"))
                })
                .collect::<Result<_>>()?;
            let sharding = json!({"name": "sharding_indexed", "configuration": {
                "chunk_shape": p.inner_chunks, "codecs": codecs,
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_location": "end"}});
            (shard, vec![sharding])
        }
        None => (p.inner_chunks.clone(), codecs),
    };
    let fill_value = match (p.fill_value, &dtype) {
        (Value::Null, _) => crate::metadata::dtype::FillValue::zero(&dtype).to_json(&dtype),
        // v2 writers spell a complex fill value as one real number.
        (v @ (Value::Number(_) | Value::String(_)), DataType::Complex64 | DataType::Complex128) => {
            json!([v, 0.0])
        }
        // Zarr v2 spells the fill value of a raw `|V<n>` type as base64 of its n bytes
        // (zarr-python: `"fill_value": "AQIDBA=="` for b"\x01\x02\x03\x04").
        (Value::String(text), DataType::RawBits(n)) => {
            let bytes = crate::metadata::dtype::base64_decode(text)
                .filter(|b| b.len() == *n)
                .ok_or_else(|| {
                    Error::metadata(format!(
                        "fill_value \"{text}\" is not the base64 of {n} bytes (data type {})",
                        p.typestr
                    ))
                })?;
            json!(bytes)
        }
        (v, _) => v.clone(),
    };
    let mut meta = ArrayMetadata::from_json(&json!({
        "zarr_format": 3, "node_type": "array", "shape": p.shape, "data_type": dtype.name(),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": grid_chunks}},
        "chunk_key_encoding": p.key_encoding, "fill_value": fill_value,
        "codecs": codecs,
    }))?;
    meta.attributes = p.attributes;
    Ok(meta)
}

fn uints(v: Option<&Value>, what: &str) -> Result<Vec<u64>> {
    v.and_then(Value::as_array)
        .and_then(|a| a.iter().map(Value::as_u64).collect::<Option<Vec<_>>>())
        .ok_or_else(|| Error::metadata(format!("`{what}` must be a list of non-negative integers")))
}

fn itemsize(typestr: &str) -> Result<usize> {
    Ok(parse_typestr(typestr)?.0.size())
}

/// Parse a Zarr v2 sharding-prototype `.zarray` (a plain v2 `.zarray`, without `shards`,
/// reads as an unsharded array).
pub fn parse_v2_prototype(v: &Value) -> Result<ArrayMetadata> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::metadata(".zarray must be a JSON object"))?;
    if o.get("zarr_format").and_then(Value::as_u64) != Some(2) {
        return Err(Error::metadata(".zarray: zarr_format must be 2"));
    }
    let typestr = o
        .get("dtype")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::metadata(".zarray: `dtype` must be a type string"))?;
    match o.get("filters") {
        None | Some(Value::Null) => {}
        Some(Value::Array(a)) if a.is_empty() => {}
        Some(Value::Array(a)) => {
            let id = a[0].get("id").and_then(Value::as_str).unwrap_or("?");
            return Err(Error::UnsupportedCodec(format!("{id} (v2 filter)")));
        }
        Some(other) => {
            return Err(Error::metadata(format!(
                ".zarray: invalid filters {}",
                shown_text(other)
            )))
        }
    }
    let compressor = match o.get("compressor") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => {
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .ok_or_else(|| Error::metadata(".zarray: compressor without `id`"))?;
            Some(numcodecs_to_v3(id, c, itemsize(typestr)?)?)
        }
        Some(other) => {
            return Err(Error::metadata(format!(
                ".zarray: invalid compressor {}",
                shown_text(other)
            )))
        }
    };
    let chunks_per_shard = match o.get("shards") {
        None | Some(Value::Null) => None,
        Some(s) => {
            match o.get("shard_format").and_then(Value::as_str) {
                None | Some("indexed") => {}
                Some(f) => {
                    return Err(Error::metadata(format!(
                        ".zarray: unsupported shard_format `{f}`"
                    )))
                }
            }
            Some(uints(Some(s), "shards")?)
        }
    };
    let separator = o
        .get("dimension_separator")
        .and_then(Value::as_str)
        .unwrap_or(".");
    let fortran_order = match o.get("order").and_then(Value::as_str) {
        None | Some("C") => false,
        Some("F") => true,
        Some(other) => {
            return Err(Error::metadata(format!(
                ".zarray: invalid order `{}`",
                shown_text(other)
            )))
        }
    };
    to_v3(Profile {
        shape: o
            .get("shape")
            .ok_or_else(|| Error::metadata(".zarray: `shape` is required"))?,
        inner_chunks: uints(o.get("chunks"), "chunks")?,
        chunks_per_shard,
        typestr,
        fortran_order,
        compressor,
        fill_value: o.get("fill_value").unwrap_or(&Value::Null),
        key_encoding: json!({"name": "v2", "configuration": {"separator": separator}}),
        attributes: Attributes::new(),
    })
}

/// Parse a v3-draft `*.array.json`; returns the metadata and the chunk key separator.
pub fn parse_v3_draft(v: &Value) -> Result<(ArrayMetadata, char)> {
    let o = v
        .as_object()
        .ok_or_else(|| Error::metadata("array metadata must be a JSON object"))?;
    let attributes = match o.get("attributes") {
        None => Attributes::new(),
        Some(a) => Attributes::from_text(&a.to_string(), "attributes")?,
    };
    draft_from_members(o, attributes)
}

/// [`parse_v3_draft`] of document `bytes` (named `what` in errors), within the limits of
/// [`crate::runtime::limits`]: the `attributes` stay text, the other members are parsed.
pub fn parse_v3_draft_document(bytes: &[u8], what: &str) -> Result<(ArrayMetadata, char)> {
    let mut members = Members::parse(bytes, what, |k| k != "attributes")?;
    let attributes = match members.take_raw("attributes") {
        None => Attributes::new(),
        Some(raw) => Attributes::from_raw(raw, "attributes")?,
    };
    draft_from_members(&members.tree, attributes)
}

fn draft_from_members(
    o: &Map<String, Value>,
    attributes: Attributes,
) -> Result<(ArrayMetadata, char)> {
    let typestr = o
        .get("data_type")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::metadata("`data_type` must be a string"))?;
    let grid = o
        .get("chunk_grid")
        .ok_or_else(|| Error::metadata("`chunk_grid` is required"))?;
    if grid.get("type").and_then(Value::as_str) != Some("regular") {
        return Err(Error::metadata(format!(
            "chunk_grid type must be \"regular\", got {}",
            grid.get("type").unwrap_or(&Value::Null)
        )));
    }
    let separator = match grid.get("separator").and_then(Value::as_str).unwrap_or("/") {
        "/" => '/',
        "." => '.',
        other => {
            return Err(Error::metadata(format!(
                "invalid chunk separator `{}`",
                shown_text(other)
            )))
        }
    };
    let compressor = match o.get("compressor") {
        None | Some(Value::Null) => None,
        Some(c) => {
            let uri = c.get("codec").and_then(Value::as_str).unwrap_or("");
            let id = uri
                .strip_prefix(DRAFT_CODEC_PREFIX)
                .and_then(|r| r.strip_suffix("/1.0"))
                .ok_or_else(|| Error::UnsupportedCodec(uri.to_string()))?;
            let empty = Map::new();
            let config = c
                .get("configuration")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            Some(numcodecs_to_v3(id, config, itemsize(typestr)?)?)
        }
    };
    if o.get("extensions")
        .and_then(Value::as_array)
        .is_some_and(|e| !e.is_empty())
    {
        return Err(Error::metadata("unsupported array extensions"));
    }
    let transformers = match o.get("storage_transformers") {
        None => &[][..],
        Some(Value::Array(a)) => &a[..],
        Some(other) => {
            return Err(Error::metadata(format!(
                "`storage_transformers` must be a list, got {}",
                shown_text(other)
            )))
        }
    };
    // The draft stacks transformers (each one's underlying store the next); a stack of
    // shardings would be sharding nested in storage, which no writer is known to produce: it
    // is refused rather than read as one of its layers.
    if transformers.len() > 1 {
        return Err(Error::metadata(format!(
            "a stack of {} storage transformers is not supported (one sharding transformer at most)",
            transformers.len()
        )));
    }
    let mut chunks_per_shard = None;
    for t in transformers {
        let uri = t.get("extension").and_then(Value::as_str).unwrap_or("");
        let known = uri == SHARDING_TRANSFORMER || uri == SHARDING_TRANSFORMER_HEADER;
        if !known || t.get("type").and_then(Value::as_str) != Some("indexed") {
            return Err(Error::metadata(format!(
                "unsupported storage transformer {}",
                shown_text(t)
            )));
        }
        chunks_per_shard = Some(uints(
            t.get("configuration")
                .and_then(|c| c.get("chunks_per_shard")),
            "chunks_per_shard",
        )?);
    }
    let fortran_order = match o.get("chunk_memory_layout").and_then(Value::as_str) {
        None | Some("C") => false,
        Some("F") => true,
        Some(other) => {
            return Err(Error::metadata(format!(
                "invalid chunk_memory_layout `{}`",
                shown_text(other)
            )))
        }
    };
    let meta = to_v3(Profile {
        shape: o
            .get("shape")
            .ok_or_else(|| Error::metadata("`shape` is required"))?,
        inner_chunks: uints(grid.get("chunk_shape"), "chunk_shape")?,
        chunks_per_shard,
        typestr,
        fortran_order,
        compressor,
        fill_value: o.get("fill_value").unwrap_or(&Value::Null),
        // Draft keys are not expressible as a v3 encoding; the array computes them.
        key_encoding: json!({"name": "default", "configuration": {"separator": separator.to_string()}}),
        attributes,
    })?;
    Ok((meta, separator))
}

/// A draft chunk (or shard) key: `PREFIX` + `c` + coordinates joined by the separator.
pub fn draft_key(data_prefix: &str, separator: char, coords: &[u64]) -> String {
    let joined: Vec<String> = coords.iter().map(u64::to_string).collect();
    format!("{data_prefix}c{}", joined.join(&separator.to_string()))
}

/// The storage transformer's key translation: the shard key holding the chunk `chunk_key`
/// (spec example: `data/root/foo/baz/c96/18` with `chunks_per_shard [32, 2]` is
/// `data/root/foo/baz/c3/9`). Only keys [`draft_key`] writes are chunk keys: `c96/018` or
/// `c+96/18` would alias chunk `[96, 18]` under a key no writer stores, so they are refused;
/// a zero-dimensional array's one chunk is `c`.
pub fn draft_shard_key(
    chunk_key: &str,
    data_prefix: &str,
    separator: char,
    chunks_per_shard: &[u64],
) -> Result<String> {
    let bad = || {
        Error::InvalidArgument(format!(
            "`{chunk_key}` is not a chunk key under `{data_prefix}`"
        ))
    };
    let rest = chunk_key
        .strip_prefix(data_prefix)
        .and_then(|k| k.strip_prefix('c'))
        .ok_or_else(bad)?;
    let coords: Vec<u64> = match rest {
        "" => Vec::new(),
        _ => rest
            .split(separator)
            .map(|c| c.parse::<u64>().map_err(|_| bad()))
            .collect::<Result<_>>()?,
    };
    if coords.len() != chunks_per_shard.len()
        || chunks_per_shard.contains(&0)
        || draft_key(data_prefix, separator, &coords) != chunk_key
    {
        return Err(bad());
    }
    let shard: Vec<u64> = coords
        .iter()
        .zip(chunks_per_shard)
        .map(|(c, n)| c / n)
        .collect();
    Ok(draft_key(data_prefix, separator, &shard))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_key_translation_example() {
        let p = "data/root/foo/baz/";
        assert_eq!(
            draft_shard_key("data/root/foo/baz/c96/18", p, '/', &[32, 2]).unwrap(),
            "data/root/foo/baz/c3/9"
        );
        // Every chunk from [96, 18] to [127, 19] shares that shard.
        assert_eq!(
            draft_shard_key("data/root/foo/baz/c127/19", p, '/', &[32, 2]).unwrap(),
            "data/root/foo/baz/c3/9"
        );
        assert_eq!(
            draft_shard_key("data/root/foo/baz/c128/19", p, '/', &[32, 2]).unwrap(),
            "data/root/foo/baz/c4/9"
        );
        // The separator is honoured.
        assert_eq!(
            draft_shard_key("data/root/foo/baz/c96.18", p, '.', &[32, 2]).unwrap(),
            "data/root/foo/baz/c3.9"
        );
        assert!(draft_shard_key("data/root/other/c1/1", p, '/', &[2, 2]).is_err());
    }

    #[test]
    fn only_keys_the_draft_writes_translate() {
        // Found by the store_listing fuzz target: `c01/01` translated to the shard of chunk
        // [1, 1], so a key no writer stores read as that chunk.
        let p = "data/root/a/";
        let err = |key: &str, per_shard: &[u64]| {
            draft_shard_key(key, p, '/', per_shard)
                .unwrap_err()
                .to_string()
        };
        for key in [
            "c01/01", "c1/01", "c+1/1", "c1/1/", "c/1/1", "c1//1", "c 1/1", "c1",
        ] {
            assert_eq!(
                err(&format!("{p}{key}"), &[2, 2]),
                format!("invalid argument: `{p}{key}` is not a chunk key under `{p}`")
            );
        }
        assert_eq!(
            draft_shard_key("data/root/a/c0/0", p, '/', &[2, 2]).unwrap(),
            "data/root/a/c0/0"
        );
        // Rank 0: the one chunk is `c`, in the one shard `c`.
        assert_eq!(draft_key(p, '/', &[]), "data/root/a/c");
        assert_eq!(
            draft_shard_key("data/root/a/c", p, '/', &[]).unwrap(),
            "data/root/a/c"
        );
        assert_eq!(
            err("data/root/a/c0", &[]),
            "invalid argument: `data/root/a/c0` is not a chunk key under `data/root/a/`"
        );
    }

    #[test]
    fn typestrings() {
        assert_eq!(
            parse_typestr("<u2").unwrap(),
            (DataType::UInt16, Some(Endian::Little))
        );
        assert_eq!(
            parse_typestr(">c16").unwrap(),
            (DataType::Complex128, Some(Endian::Big))
        );
        assert_eq!(parse_typestr("|b1").unwrap(), (DataType::Bool, None));
        assert_eq!(parse_typestr("u1").unwrap(), (DataType::UInt8, None));
        assert!(
            parse_typestr("u2").is_err(),
            "multi-byte types need a byte order"
        );
        assert!(parse_typestr("<M8[ns]").is_err());
    }

    #[test]
    fn raw_typestrings_are_bounded_like_v3_raw_bits() {
        // 131072 bytes = 1048576 bits, the widest `r<N>` (fuzzing found `<V3246680448946580131`
        // sizing a fill value of 3.2 EB).
        assert_eq!(
            parse_typestr("|V131072").unwrap(),
            (DataType::RawBits(131072), None)
        );
        assert_eq!(parse_typestr("|V3").unwrap(), (DataType::RawBits(3), None));
        for s in ["|V131073", "<V3246680448946580131"] {
            assert_eq!(
                parse_typestr(s).unwrap_err().to_string(),
                format!("invalid metadata: data_type `{s}`: raw elements wider than 131072 bytes are not supported")
            );
        }
        assert_eq!(
            parse_typestr("|V0").unwrap_err().to_string(),
            "invalid metadata: unsupported dtype `|V0`"
        );
    }
}
