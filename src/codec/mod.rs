//! The Zarr v3 codec pipeline: array→array codecs, exactly one array→bytes codec, then
//! bytes→bytes codecs (Zarr v3 core, "Codecs").
//!
//! The set of codecs is closed, so they are enums rather than trait objects: dispatch is a
//! `match`, and each codec lives in its own module. Every codec encodes as well as decodes, and
//! declares the size of its output ([`EncodedSize`]), which is how the shard index size is
//! known before anything is read.
//!
//! Decoders are given the exact or maximum size they may produce, so a hostile stream that
//! claims or expands to more than an inner chunk can hold is an error, never a huge allocation.
//! The one unbounded case is a compressor after a nested `sharding_indexed` (a shard may hold
//! unused space between its inner chunks): there the memory limit
//! ([`crate::runtime::limits::memory_limit`]) bounds what it may produce.

pub mod blosc;
pub mod bytes;
pub mod crc32c;
pub mod gzip;
pub mod sharding;
pub mod transpose;
pub mod zlib;
pub mod zstd;

use crate::codec::sharding::ShardingCodec;
use crate::error::{shown, shown_text, Error, Result};
use crate::metadata::dtype::{DataType, FillValue};
use serde_json::{json, Map, Value};
use std::borrow::Cow;

/// What a chunk is before the array→bytes codec: its shape, element type and fill value.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkRepr {
    /// The chunk's shape (C order).
    pub shape: Vec<u64>,
    /// Its element type.
    pub dtype: DataType,
    /// Its fill value.
    pub fill_value: FillValue,
}

impl ChunkRepr {
    /// Number of elements (checked: errors on overflow).
    pub fn num_elements(&self) -> Result<u64> {
        checked_product(&self.shape)
    }

    /// Decoded size in bytes (checked).
    pub fn byte_size(&self) -> Result<u64> {
        self.num_elements()?
            .checked_mul(self.dtype.size() as u64)
            .ok_or_else(|| Error::metadata("chunk byte size overflows 64 bits"))
    }

    /// `a chunk of shape [..] uint16` (for errors).
    pub fn describe(&self) -> String {
        format!(
            "a chunk of shape {} {}",
            shown(&self.shape),
            self.dtype.name()
        )
    }

    /// A buffer of this shape filled with the fill value.
    pub fn filled(&self) -> Result<Vec<u8>> {
        let bytes = crate::runtime::limits::buffer_len(self.byte_size()?, &self.describe())?;
        Ok(self.fill_value.0.repeat(bytes / self.dtype.size()))
    }
}

/// Product of a shape, with overflow reported as invalid metadata.
pub fn checked_product(shape: &[u64]) -> Result<u64> {
    shape.iter().try_fold(1u64, |acc, &d| {
        acc.checked_mul(d)
            .ok_or_else(|| Error::metadata(format!("shape {} overflows 64 bits", shown(shape))))
    })
}

/// Size of a codec's output given its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodedSize {
    /// Always exactly this many bytes.
    Fixed(u64),
    /// At most this many bytes.
    Bounded(u64),
    /// No bound known in advance.
    Unbounded,
}

impl EncodedSize {
    /// The most bytes this can be, if bounded.
    pub fn max(self) -> Option<u64> {
        match self {
            EncodedSize::Fixed(n) | EncodedSize::Bounded(n) => Some(n),
            EncodedSize::Unbounded => None,
        }
    }
}

/// An array→array codec.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayToArray {
    /// `transpose`.
    Transpose(transpose::Transpose),
}

/// An array→bytes codec.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayToBytes {
    /// `bytes`.
    Bytes(bytes::BytesCodec),
    /// `sharding_indexed` (nested when inside another sharding codec).
    Sharding(Box<ShardingCodec>),
}

/// A bytes→bytes codec.
#[derive(Debug, Clone, PartialEq)]
pub enum BytesToBytes {
    /// `gzip`.
    Gzip(gzip::Gzip),
    /// `zstd`.
    Zstd(zstd::Zstd),
    /// `crc32c`.
    Crc32c(crc32c::Crc32c),
    /// `blosc`.
    Blosc(blosc::Blosc),
    /// `numcodecs.zlib` (the v2 prototype's `zlib` compressor).
    Zlib(zlib::Zlib),
}

impl BytesToBytes {
    /// Whether decoding checks a checksum over the bytes (see [`CodecChain::checks_integrity`]).
    pub fn checks_integrity(&self) -> bool {
        match self {
            BytesToBytes::Crc32c(_) | BytesToBytes::Gzip(_) | BytesToBytes::Zlib(_) => true,
            BytesToBytes::Zstd(z) => z.checksum,
            BytesToBytes::Blosc(_) => false,
        }
    }
}

impl ArrayToArray {
    fn encoded_repr(&self, repr: &ChunkRepr) -> Result<ChunkRepr> {
        match self {
            ArrayToArray::Transpose(t) => t.encoded_repr(repr),
        }
    }
    fn encode(&self, data: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        match self {
            ArrayToArray::Transpose(t) => t.encode(data, repr),
        }
    }
    fn decode(&self, data: &[u8], decoded: &ChunkRepr) -> Result<Vec<u8>> {
        match self {
            ArrayToArray::Transpose(t) => t.decode(data, decoded),
        }
    }
    pub(crate) fn to_json(&self) -> Value {
        match self {
            ArrayToArray::Transpose(t) => t.to_json(),
        }
    }
}

impl ArrayToBytes {
    /// Encoded size of a chunk of `repr`.
    pub fn encoded_size(&self, repr: &ChunkRepr) -> Result<EncodedSize> {
        match self {
            ArrayToBytes::Bytes(_) => Ok(EncodedSize::Fixed(repr.byte_size()?)),
            ArrayToBytes::Sharding(s) => s.encoded_size(repr),
        }
    }
    fn encode(&self, data: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        match self {
            ArrayToBytes::Bytes(b) => b.encode(data, repr),
            ArrayToBytes::Sharding(s) => s.encode(data, repr),
        }
    }
    fn decode_into(&self, encoded: &[u8], repr: &ChunkRepr, out: &mut [u8]) -> Result<()> {
        match self {
            ArrayToBytes::Bytes(b) => b.decode_into(encoded, repr, out),
            ArrayToBytes::Sharding(s) => s.decode_into(encoded, repr, out),
        }
    }
    fn to_json(&self) -> Value {
        match self {
            ArrayToBytes::Bytes(b) => b.to_json(),
            ArrayToBytes::Sharding(s) => s.to_json(),
        }
    }
}

impl BytesToBytes {
    /// The codec's name in metadata.
    pub fn name(&self) -> &'static str {
        match self {
            BytesToBytes::Gzip(_) => "gzip",
            BytesToBytes::Zstd(_) => "zstd",
            BytesToBytes::Crc32c(_) => "crc32c",
            BytesToBytes::Blosc(_) => "blosc",
            BytesToBytes::Zlib(_) => "zlib",
        }
    }

    /// Size of this codec's output for an input of size `input`; an error when the size
    /// overflows 64 bits (no such object can be stored).
    fn encoded_size(&self, input: EncodedSize) -> Result<EncodedSize> {
        let plus_checksum = |n: u64| {
            n.checked_add(4).ok_or_else(|| {
                Error::metadata(format!(
                    "crc32c: an encoded chunk of {n} bytes plus its checksum overflows 64 bits"
                ))
            })
        };
        Ok(match self {
            BytesToBytes::Crc32c(_) => match input {
                EncodedSize::Fixed(n) => EncodedSize::Fixed(plus_checksum(n)?),
                EncodedSize::Bounded(n) => EncodedSize::Bounded(plus_checksum(n)?),
                EncodedSize::Unbounded => EncodedSize::Unbounded,
            },
            // Compressors can grow incompressible input; their size is data dependent.
            _ => EncodedSize::Unbounded,
        })
    }
    fn encode(&self, data: &[u8]) -> Result<Vec<u8>> {
        encode_to_vec(|out| self.encode_to(data, out, 0))
    }
    /// Encode into room from `target` (the codec's bound, with `extra` bytes to spare after
    /// it for checksums appended in place); returns the output's size. zstd, gzip and blosc
    /// write straight into the room. zlib's encoder (flate2) makes a buffer of its own, copied
    /// in: its size has no bound to make room by beforehand (zlib-rs' level 1 can exceed zlib's
    /// `compressBound`).
    fn encode_to(&self, data: &[u8], target: &mut dyn EncodeTarget, extra: usize) -> Result<usize> {
        let n = data.len();
        let mut into = |bound: usize, encode: &dyn Fn(&mut [u8]) -> Result<usize>| {
            encode(&mut target.room(bound.saturating_add(extra))[..bound])
        };
        match self {
            BytesToBytes::Gzip(c) => into(c.bound(n)?, &|out| c.encode_into(data, out)),
            BytesToBytes::Zstd(c) => into(zstd::Zstd::bound(n), &|out| c.encode_into(data, out)),
            BytesToBytes::Crc32c(c) => {
                into(crc32c::Crc32c::bound(n), &|out| c.encode_into(data, out))
            }
            BytesToBytes::Blosc(c) => {
                into(blosc::Blosc::bound(n)?, &|out| c.encode_into(data, out))
            }
            BytesToBytes::Zlib(c) => {
                let stream = c.encode(data)?;
                into(stream.len(), &|out| {
                    out.copy_from_slice(&stream);
                    Ok(stream.len())
                })
            }
        }
    }

    /// Decode; the output may not exceed `max_out` bytes.
    fn decode(&self, data: &[u8], max_out: u64) -> Result<Vec<u8>> {
        match self {
            BytesToBytes::Gzip(c) => c.decode(data, max_out),
            BytesToBytes::Zstd(c) => c.decode(data, max_out),
            BytesToBytes::Crc32c(c) => c.decode(data).map(<[u8]>::to_vec),
            BytesToBytes::Blosc(c) => c.decode(data, max_out),
            BytesToBytes::Zlib(c) => c.decode(data, max_out),
        }
    }
    /// Decode into `out`, which must receive exactly `out.len()` bytes (no intermediate
    /// buffer for the compressors).
    fn decode_into(&self, data: &[u8], out: &mut [u8]) -> Result<()> {
        match self {
            BytesToBytes::Zstd(c) => c.decode_into(data, out),
            BytesToBytes::Gzip(_) => {
                read_exactly(flate2::bufread::MultiGzDecoder::new(data), out, "gzip")
            }
            BytesToBytes::Zlib(_) => {
                read_exactly(flate2::bufread::ZlibDecoder::new(data), out, "zlib")
            }
            BytesToBytes::Blosc(_) => blosc::decode_into(data, out),
            BytesToBytes::Crc32c(c) => {
                let payload = c.decode(data)?;
                if payload.len() != out.len() {
                    return Err(Error::corrupt(format!(
                        "crc32c codec: {} bytes where {} were expected",
                        payload.len(),
                        out.len()
                    )));
                }
                out.copy_from_slice(payload);
                Ok(())
            }
        }
    }

    fn to_json(&self) -> Value {
        match self {
            BytesToBytes::Gzip(c) => c.to_json(),
            BytesToBytes::Zstd(c) => c.to_json(),
            BytesToBytes::Crc32c(_) => json!({"name": "crc32c"}),
            BytesToBytes::Blosc(c) => c.to_json(),
            BytesToBytes::Zlib(c) => c.to_json(),
        }
    }
}

/// Memory an encoder writes a chunk into (see [`CodecChain::encode_to`]): a growing buffer,
/// or a shard's segments ([`crate::shard::encoded`]).
pub(crate) trait EncodeTarget {
    /// At least `bound` bytes of writable room (its contents are unspecified), which stays
    /// the target's current room until the next call.
    fn room(&mut self, bound: usize) -> &mut [u8];
    /// The room the last [`EncodeTarget::room`] call gave (empty before any).
    fn current(&mut self) -> &mut [u8];
}

/// A buffer reused from chunk to chunk: it grows to the largest bound asked for and is never
/// cleared, so after the first chunk no room costs an allocation or a fill.
impl EncodeTarget for Vec<u8> {
    fn room(&mut self, bound: usize) -> &mut [u8] {
        if self.len() < bound {
            self.resize(bound, 0);
        }
        self
    }
    fn current(&mut self) -> &mut [u8] {
        self
    }
}

/// Run an encoder that writes into an [`EncodeTarget`] and returns its size, with a new buffer
/// as the target; the buffer is cut to that size.
fn encode_to_vec(encode: impl FnOnce(&mut dyn EncodeTarget) -> Result<usize>) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let n = encode(&mut out)?;
    out.truncate(n);
    // Give back the compressor's bound (in place: a shrinking realloc does not copy), so
    // chunks held until a shard is written take what they compressed to.
    out.shrink_to_fit();
    Ok(out)
}

/// A whole codec list: `array→array* array→bytes bytes→bytes*`.
#[derive(Debug, Clone, PartialEq)]
pub struct CodecChain {
    /// The array → array codecs, in encoding order.
    pub array_to_array: Vec<ArrayToArray>,
    /// The one array → bytes codec.
    pub array_to_bytes: ArrayToBytes,
    /// The bytes → bytes codecs, in encoding order.
    pub bytes_to_bytes: Vec<BytesToBytes>,
}

impl CodecChain {
    /// Whether decoding through this chain proves the bytes are the ones encoded: a checksum
    /// covers them (`crc32c`, zstd with its content checksum, gzip's CRC-32, zlib's Adler-32),
    /// or, for a nested shard, its own inner codecs do. Without one, a chunk that decodes may
    /// still hold other bytes than were written.
    pub fn checks_integrity(&self) -> bool {
        self.bytes_to_bytes
            .iter()
            .any(BytesToBytes::checks_integrity)
            || matches!(&self.array_to_bytes, ArrayToBytes::Sharding(s) if s.codecs.checks_integrity())
    }

    /// Parse a `codecs` list. `what` names the list in errors (`codecs`, `index_codecs`).
    /// `sharding_indexed` codecs may nest at most [`crate::runtime::limits::MAX_SHARDING_NESTING`]
    /// levels deep.
    pub fn from_json(value: &Value, what: &str) -> Result<Self> {
        Self::from_json_at(value, what, 0)
    }

    /// [`CodecChain::from_json`] for a list inside `enclosing` sharding codecs.
    pub(crate) fn from_json_at(value: &Value, what: &str, enclosing: usize) -> Result<Self> {
        let list = value
            .as_array()
            .ok_or_else(|| Error::metadata(format!("`{what}` must be a list of codecs")))?;
        let mut a2a = Vec::new();
        let mut a2b: Option<ArrayToBytes> = None;
        let mut b2b = Vec::new();
        for item in list {
            let (name, config) = codec_name_and_config(item, what)?;
            match parse_codec(name, config, enclosing)? {
                Parsed::A2A(c) => {
                    if a2b.is_some() {
                        return Err(Error::metadata(format!(
                            "`{what}`: array→array codec `{name}` after the array→bytes codec"
                        )));
                    }
                    a2a.push(c)
                }
                Parsed::A2B(c) => {
                    if a2b.is_some() {
                        return Err(Error::metadata(format!(
                            "`{what}` must contain exactly one array→bytes codec, found a second (`{name}`)"
                        )));
                    }
                    a2b = Some(c)
                }
                Parsed::B2B(c) => {
                    if a2b.is_none() {
                        return Err(Error::metadata(format!(
                            "`{what}`: bytes→bytes codec `{name}` before the array→bytes codec"
                        )));
                    }
                    b2b.push(c)
                }
            }
        }
        let array_to_bytes = a2b.ok_or_else(|| {
            Error::metadata(format!(
                "`{what}` must contain exactly one array→bytes codec, found none"
            ))
        })?;
        Ok(CodecChain {
            array_to_array: a2a,
            array_to_bytes,
            bytes_to_bytes: b2b,
        })
    }

    /// Fill in what codec configurations left for the data to decide, for chunks of `dtype`
    /// (inner chunks of a sharding codec too; its index is uint64): blosc's `typesize` and
    /// `shuffle` ([`blosc::Blosc::resolve`]). Parsing an array's metadata and binding a sharding
    /// codec to a shard do this; idempotent.
    pub fn resolve(&mut self, dtype: &DataType) {
        for c in &mut self.bytes_to_bytes {
            if let BytesToBytes::Blosc(b) = c {
                b.resolve(dtype.size());
            }
        }
        if let ArrayToBytes::Sharding(s) = &mut self.array_to_bytes {
            s.codecs.resolve(dtype);
            s.index_codecs.resolve(&DataType::UInt64);
        }
    }

    /// The codec list as Zarr v3 JSON.
    pub fn to_json(&self) -> Value {
        let mut list: Vec<Value> = self.array_to_array.iter().map(|c| c.to_json()).collect();
        list.push(self.array_to_bytes.to_json());
        list.extend(self.bytes_to_bytes.iter().map(|c| c.to_json()));
        Value::Array(list)
    }

    /// Representation of the chunk entering the array→bytes codec.
    pub fn bytes_repr(&self, repr: &ChunkRepr) -> Result<ChunkRepr> {
        let mut r = repr.clone();
        for c in &self.array_to_array {
            r = c.encoded_repr(&r)?;
        }
        Ok(r)
    }

    /// Check the chain against a chunk representation (shapes, nested sharding, dtype).
    pub fn validate(&self, repr: &ChunkRepr) -> Result<()> {
        let r = self.bytes_repr(repr)?;
        match &self.array_to_bytes {
            ArrayToBytes::Bytes(b) => b.validate(&r),
            ArrayToBytes::Sharding(s) => s.bind(&r).map(|_| ()),
        }
    }

    /// Sizes after the array→bytes codec and after each bytes→bytes codec (an error when one
    /// overflows 64 bits).
    fn stage_sizes(&self, repr: &ChunkRepr) -> Result<Vec<EncodedSize>> {
        let mut sizes = vec![self.array_to_bytes.encoded_size(&self.bytes_repr(repr)?)?];
        for c in &self.bytes_to_bytes {
            let last = *sizes.last().unwrap();
            sizes.push(c.encoded_size(last)?);
        }
        Ok(sizes)
    }

    /// Encoded size of a chunk of `repr`. Errors: the chain does not fit `repr` (a nested
    /// sharding codec that does not bind), or the size overflows 64 bits.
    pub fn encoded_size(&self, repr: &ChunkRepr) -> Result<EncodedSize> {
        Ok(*self.stage_sizes(repr)?.last().unwrap())
    }

    /// Apply the array→array codecs only: the chunk as the array→bytes codec receives it
    /// (borrowed when there are none).
    pub fn encode_arrays<'a>(&self, data: &'a [u8], repr: &ChunkRepr) -> Result<Cow<'a, [u8]>> {
        check_len(data.len(), repr.byte_size()?)?;
        if self.array_to_array.is_empty() {
            return Ok(Cow::Borrowed(data));
        }
        let mut r = repr.clone();
        let mut out = Cow::Borrowed(data);
        for c in &self.array_to_array {
            out = Cow::Owned(c.encode(&out, &r)?);
            r = c.encoded_repr(&r)?;
        }
        Ok(out)
    }

    /// Encode one chunk (`data` in native byte order, C order, `repr.byte_size()` bytes) into a
    /// new buffer of its encoded size.
    pub fn encode(&self, data: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        encode_to_vec(|out| self.encode_to(data, repr, out))
    }

    /// [`CodecChain::encode`] into memory `target` provides; returns the encoded size (the
    /// chunk is the first that many bytes of the room `target` last gave). The last
    /// compressor writes straight into the target (zstd, gzip, blosc) and trailing `crc32c`
    /// checksums are appended in place, so the usual chains (`bytes` + `zstd` + `crc32c`)
    /// copy nothing; intermediate stages (and zlib's encoder) use buffers of their own.
    pub(crate) fn encode_to(
        &self,
        data: &[u8],
        repr: &ChunkRepr,
        target: &mut dyn EncodeTarget,
    ) -> Result<usize> {
        let arrays = self.encode_arrays(data, repr)?;
        let brepr = match self.array_to_array.is_empty() {
            true => Cow::Borrowed(repr),
            false => Cow::Owned(self.bytes_repr(repr)?),
        };
        let bytes = match &self.array_to_bytes {
            // `bytes` in native order changes nothing: the next stage reads the chunk where it
            // is (`encode_arrays` checked its length).
            ArrayToBytes::Bytes(b) if b.is_identity(&brepr) => arrays,
            a2b => Cow::Owned(a2b.encode(&arrays, &brepr)?),
        };
        let sums = self
            .bytes_to_bytes
            .iter()
            .rev()
            .take_while(|c| matches!(c, BytesToBytes::Crc32c(_)))
            .count();
        let body = &self.bytes_to_bytes[..self.bytes_to_bytes.len() - sums];
        let mut n = match body.split_last() {
            None => {
                let room = target.room(bytes.len() + 4 * sums);
                room[..bytes.len()].copy_from_slice(&bytes);
                bytes.len()
            }
            Some((last, before)) => {
                let mut stage = bytes;
                for c in before {
                    stage = Cow::Owned(c.encode(&stage)?);
                }
                last.encode_to(&stage, target, 4 * sums)?
            }
        };
        let out = target.current();
        for _ in 0..sums {
            let sum = ::crc32c::crc32c(&out[..n]);
            out[n..n + 4].copy_from_slice(&sum.to_le_bytes());
            n += 4;
        }
        Ok(n)
    }

    /// Apply the bytes→bytes codecs only, to what the array→bytes codec produced.
    pub fn encode_bytes_stage(&self, mut bytes: Vec<u8>) -> Result<Vec<u8>> {
        for c in &self.bytes_to_bytes {
            bytes = c.encode(&bytes)?;
        }
        Ok(bytes)
    }

    /// Decode one chunk into a new buffer.
    pub fn decode(&self, encoded: &[u8], repr: &ChunkRepr) -> Result<Vec<u8>> {
        let len = crate::runtime::limits::buffer_len(repr.byte_size()?, &repr.describe())?;
        let mut out = vec![0u8; len];
        self.decode_into(encoded, repr, &mut out)?;
        Ok(out)
    }

    /// Undo the bytes→bytes codecs: the bytes the array→bytes codec produced (borrowed when
    /// there are none). Each stage may produce at most what its input stage can be.
    pub fn decode_bytes_stage<'a>(
        &self,
        encoded: &'a [u8],
        repr: &ChunkRepr,
    ) -> Result<Cow<'a, [u8]>> {
        undo_bytes_to_bytes(&self.bytes_to_bytes, encoded, &self.stage_sizes(repr)?)
    }

    /// Decode one chunk into `out`, which must be exactly `repr.byte_size()` bytes.
    pub fn decode_into(&self, encoded: &[u8], repr: &ChunkRepr, out: &mut [u8]) -> Result<()> {
        check_len(out.len(), repr.byte_size()?)?;
        if let (true, ArrayToBytes::Bytes(b), Some((first, rest))) = (
            self.array_to_array.is_empty(),
            &self.array_to_bytes,
            self.bytes_to_bytes.split_first(),
        ) {
            // The common chain `bytes, compressor…`: the innermost decoder writes straight
            // into `out`, and `bytes` at most swaps in place.
            b.validate(repr)?;
            let sizes = self.stage_sizes(repr)?;
            let inner = undo_bytes_to_bytes(rest, encoded, &sizes[1..])?;
            first.decode_into(&inner, out)?;
            return b.swap_decoded(repr, out);
        }
        let bytes = self.decode_bytes_stage(encoded, repr)?;
        if self.array_to_array.is_empty() {
            return self.array_to_bytes.decode_into(&bytes, repr, out);
        }
        // Decode through the array→array codecs, innermost first.
        let mut reprs = vec![repr.clone()];
        for c in &self.array_to_array {
            let next = c.encoded_repr(reprs.last().unwrap())?;
            reprs.push(next);
        }
        let mut data = vec![0u8; out.len()];
        self.array_to_bytes
            .decode_into(&bytes, reprs.last().unwrap(), &mut data)?;
        for (i, c) in self.array_to_array.iter().enumerate().rev() {
            data = c.decode(&data, &reprs[i])?;
        }
        out.copy_from_slice(&data);
        Ok(())
    }
}

/// Undo `codecs` (bytes→bytes, applied in order when encoding) last to first; `sizes[i]` is
/// the size of codec `i`'s input, which bounds what decoding it may produce.
fn undo_bytes_to_bytes<'a>(
    codecs: &[BytesToBytes],
    encoded: &'a [u8],
    sizes: &[EncodedSize],
) -> Result<Cow<'a, [u8]>> {
    let mut bytes = Cow::Borrowed(encoded);
    for (i, c) in codecs.iter().enumerate().rev() {
        // No configuration bounds e.g. a compressor over a compressor: the memory limit does.
        let max_out = sizes[i]
            .max()
            .unwrap_or_else(crate::runtime::limits::memory_limit);
        bytes = match (c, bytes) {
            // A checksum only checks: keep borrowing (or shorten the owned buffer), no copy.
            (BytesToBytes::Crc32c(crc), Cow::Borrowed(b)) => Cow::Borrowed(crc.decode(b)?),
            (BytesToBytes::Crc32c(crc), Cow::Owned(mut v)) => {
                let n = crc.decode(&v)?.len();
                v.truncate(n);
                Cow::Owned(v)
            }
            (c, b) => Cow::Owned(c.decode(&b, max_out)?),
        };
        if let EncodedSize::Fixed(n) = sizes[i] {
            if bytes.len() as u64 != n {
                return Err(Error::corrupt(format!(
                    "decoded {} bytes where {n} were expected",
                    bytes.len()
                )));
            }
        }
    }
    Ok(bytes)
}

/// Fill `out` from a decompressing stream that must end exactly there.
fn read_exactly(mut r: impl std::io::Read, out: &mut [u8], codec: &str) -> Result<()> {
    r.read_exact(out)
        .map_err(|e| Error::corrupt(format!("{codec}: {e}")))?;
    match r.read(&mut [0u8; 1]) {
        Ok(0) => Ok(()),
        Ok(_) => Err(Error::corrupt(format!(
            "{codec}: stream expands past the expected {} bytes",
            out.len()
        ))),
        Err(e) => Err(Error::corrupt(format!("{codec}: {e}"))),
    }
}

/// Free this thread's codec contexts (zstd, gzip); returns how many there were.
pub(crate) fn release_contexts() -> usize {
    zstd::release_contexts() + gzip::release_contexts()
}

/// Empty a thread-local context slot; 1 if it held one. A slot in use (borrowed further up
/// this thread's stack) is left as it is: 0.
fn free_slot<T>(slot: &std::cell::RefCell<Option<T>>) -> usize {
    slot.try_borrow_mut()
        .map_or(0, |mut s| usize::from(s.take().is_some()))
}

/// Error unless a buffer has the expected length.
pub(crate) fn check_len(actual: usize, expected: u64) -> Result<()> {
    if actual as u64 != expected {
        return Err(Error::BufferSize {
            expected,
            actual: actual as u64,
        });
    }
    Ok(())
}

enum Parsed {
    A2A(ArrayToArray),
    A2B(ArrayToBytes),
    B2B(BytesToBytes),
}

/// A codec entry is `{"name": …, "configuration": {…}}`, or a bare name string.
fn codec_name_and_config<'a>(
    item: &'a Value,
    what: &str,
) -> Result<(&'a str, Option<&'a Map<String, Value>>)> {
    match item {
        Value::String(s) => Ok((s, None)),
        Value::Object(o) => {
            let name = o.get("name").and_then(Value::as_str).ok_or_else(|| {
                Error::metadata(format!("`{what}`: codec entry without a `name`: {item}"))
            })?;
            let config = match o.get("configuration") {
                None | Some(Value::Null) => None,
                Some(Value::Object(c)) => Some(c),
                Some(other) => {
                    return Err(Error::metadata(format!(
                        "`{what}`: configuration of `{name}` must be an object, got {}",
                        shown_text(other)
                    )))
                }
            };
            Ok((name, config))
        }
        other => Err(Error::metadata(format!(
            "`{what}`: codec entry must be an object, got {}",
            shown_text(other)
        ))),
    }
}

fn parse_codec(
    name: &str,
    config: Option<&Map<String, Value>>,
    enclosing: usize,
) -> Result<Parsed> {
    let empty = Map::new();
    let cfg = Config {
        codec: name,
        map: config.unwrap_or(&empty),
    };
    Ok(match name {
        "transpose" => Parsed::A2A(ArrayToArray::Transpose(transpose::Transpose::from_config(
            &cfg,
        )?)),
        "bytes" => Parsed::A2B(ArrayToBytes::Bytes(bytes::BytesCodec::from_config(&cfg)?)),
        "sharding_indexed" => Parsed::A2B(ArrayToBytes::Sharding(Box::new(
            ShardingCodec::from_config(&cfg, enclosing + 1)?,
        ))),
        "gzip" => Parsed::B2B(BytesToBytes::Gzip(gzip::Gzip::from_config(&cfg)?)),
        "zstd" => Parsed::B2B(BytesToBytes::Zstd(zstd::Zstd::from_config(&cfg)?)),
        "crc32c" => Parsed::B2B(BytesToBytes::Crc32c(crc32c::Crc32c::from_config(&cfg)?)),
        "blosc" => Parsed::B2B(BytesToBytes::Blosc(blosc::Blosc::from_config(&cfg)?)),
        // zarr-python registers numcodecs' zlib under `numcodecs.zlib`.
        "zlib" | "numcodecs.zlib" => {
            Parsed::B2B(BytesToBytes::Zlib(zlib::Zlib::from_config(&cfg)?))
        }
        other => return Err(Error::UnsupportedCodec(other.to_string())),
    })
}

/// A codec's `configuration` object with typed, error-naming accessors.
pub struct Config<'a> {
    /// The codec's name, for error messages.
    pub codec: &'a str,
    /// Its `configuration` object.
    pub map: &'a Map<String, Value>,
}

impl<'a> Config<'a> {
    /// The member `key`, if present.
    pub fn get(&self, key: &str) -> Option<&'a Value> {
        self.map.get(key)
    }

    /// An error naming this codec and option.
    pub fn bad(&self, key: &str, why: &str) -> Error {
        Error::metadata(format!(
            "codec `{}`: `{key}` {why} (got {})",
            shown_text(self.codec),
            self.map.get(key).map_or("nothing".to_string(), shown_text)
        ))
    }

    /// The member `key` as a string; an error names the codec when it has another type.
    pub fn str(&self, key: &str) -> Result<Option<&'a str>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.bad(key, "must be a string")),
        }
    }

    /// The member `key` as an integer; an error names the codec when it has another type.
    pub fn int(&self, key: &str) -> Result<Option<i64>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.bad(key, "must be an integer")),
        }
    }

    /// The member `key` as a boolean; an error names the codec when it has another type.
    pub fn bool(&self, key: &str) -> Result<Option<bool>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(v) => v
                .as_bool()
                .map(Some)
                .ok_or_else(|| self.bad(key, "must be a boolean")),
        }
    }

    /// A list of non-negative integers.
    pub fn uints(&self, key: &str) -> Result<Option<Vec<u64>>> {
        match self.map.get(key) {
            None => Ok(None),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| v.as_u64())
                .collect::<Option<Vec<u64>>>()
                .map(Some)
                .ok_or_else(|| self.bad(key, "must be a list of non-negative integers")),
            Some(_) => Err(self.bad(key, "must be a list of non-negative integers")),
        }
    }

    /// Reject configuration keys the codec does not define.
    pub fn only(&self, keys: &[&str]) -> Result<()> {
        match self.map.keys().find(|k| !keys.contains(&k.as_str())) {
            Some(k) => Err(Error::metadata(format!(
                "codec `{}`: unknown configuration key `{k}`",
                self.codec
            ))),
            None => Ok(()),
        }
    }
}
