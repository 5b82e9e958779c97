//! The `sharding_indexed` array→bytes codec: configuration, the layout of one shard, and
//! encoding/decoding a whole shard held in memory.
//!
//! Partial access to a shard in storage (read only the index, then only the wanted inner
//! chunks) is the [`crate::shard::reader`]'s job; this module is the in-memory form of the codec,
//! which is also what nested sharding (a `sharding_indexed` inside the inner `codecs`) uses.

pub mod index;

use crate::codec::sharding::index::{ShardIndex, EMPTY};
use crate::codec::{
    checked_product, ArrayToBytes, ChunkRepr, CodecChain, Config, EncodeTarget, EncodedSize,
};
use crate::error::{shown, Error, Result};
use crate::metadata::dtype::{DataType, FillValue};
use crate::nd;
use crate::runtime::limits::MAX_SHARDING_NESTING;
use crate::runtime::threads;
use crate::shard::encoded::{Collector, EncodedChunks};
use crate::shard::writer::{Finalized, ShardWriter, WriteOptions, WriteStrategy};
use crate::storage::io::MemoryIo;
use serde_json::{json, Value};
use std::sync::Arc;

/// Largest number of inner chunks per shard we accept: the index alone is 16 bytes per chunk,
/// so this bounds what a hostile configuration can make us allocate (1 GiB of index).
pub const MAX_CHUNKS_PER_SHARD: u64 = 1 << 26;

/// Where the index sits in the shard object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexLocation {
    /// The index opens the object (`"start"`).
    Start,
    /// The index closes the object (`"end"`, the default).
    End,
}

/// The `sharding_indexed` configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardingCodec {
    /// Inner chunk shape.
    pub chunk_shape: Vec<u64>,
    /// Codecs of each inner chunk.
    pub codecs: CodecChain,
    /// Codecs of the index (must have a fixed encoded size).
    pub index_codecs: CodecChain,
    /// Where the index is in the shard object.
    pub index_location: IndexLocation,
}

impl ShardingCodec {
    /// Parse the configuration of a sharding codec at nesting level `level` (1 for one that
    /// no other encloses), refused past [`MAX_SHARDING_NESTING`] before its inner codecs are
    /// parsed, so that nesting never deepens the stack further.
    pub(crate) fn from_config(cfg: &Config, level: usize) -> Result<Self> {
        if level > MAX_SHARDING_NESTING {
            return Err(Error::metadata(format!(
                "sharding_indexed nested more than {MAX_SHARDING_NESTING} levels deep (the limit, zarrshard::runtime::limits::MAX_SHARDING_NESTING)"
            )));
        }
        cfg.only(&["chunk_shape", "codecs", "index_codecs", "index_location"])?;
        let chunk_shape = cfg
            .uints("chunk_shape")?
            .ok_or_else(|| cfg.bad("chunk_shape", "is required"))?;
        if chunk_shape.contains(&0) {
            return Err(cfg.bad("chunk_shape", "must not contain 0"));
        }
        let codecs = CodecChain::from_json_at(
            cfg.get("codecs")
                .ok_or_else(|| cfg.bad("codecs", "is required"))?,
            "codecs",
            level,
        )?;
        let index_codecs = CodecChain::from_json_at(
            cfg.get("index_codecs")
                .ok_or_else(|| cfg.bad("index_codecs", "is required"))?,
            "index_codecs",
            level,
        )?;
        // Absent means "end" (tensorstore omits it then).
        let index_location = match cfg.str("index_location")? {
            None | Some("end") => IndexLocation::End,
            Some("start") => IndexLocation::Start,
            Some(_) => return Err(cfg.bad("index_location", "must be \"start\" or \"end\"")),
        };
        Ok(ShardingCodec {
            chunk_shape,
            codecs,
            index_codecs,
            index_location,
        })
    }

    /// Parse a bare `sharding_indexed` configuration object (the value of `configuration`).
    pub fn from_config_json(config: &Value) -> Result<Self> {
        let map = config
            .as_object()
            .ok_or_else(|| Error::metadata("sharding_indexed configuration must be an object"))?;
        Self::from_config(
            &Config {
                codec: "sharding_indexed",
                map,
            },
            1,
        )
    }

    /// The codec as Zarr v3 JSON (`index_location` always written).
    pub fn to_json(&self) -> Value {
        json!({"name": "sharding_indexed", "configuration": {
            "chunk_shape": self.chunk_shape,
            "codecs": self.codecs.to_json(),
            "index_codecs": self.index_codecs.to_json(),
            "index_location": match self.index_location {
                IndexLocation::Start => "start",
                IndexLocation::End => "end",
            },
        }})
    }

    /// Check this configuration against a shard of `shard` and compute its layout.
    pub fn bind(&self, shard: &ChunkRepr) -> Result<ShardLayout> {
        ShardLayout::new(self.clone(), shard.clone())
    }

    /// Encoded size of a shard of `shard`: unbounded. The spec allows unused space between
    /// inner chunks, so a valid shard object may be larger than its chunks and index packed
    /// together (what this codec writes); a codec after it decodes up to the memory limit.
    /// Errors: the configuration does not fit `shard`.
    pub(crate) fn encoded_size(&self, shard: &ChunkRepr) -> Result<EncodedSize> {
        self.bind(shard)?;
        Ok(EncodedSize::Unbounded)
    }

    /// Encode a whole shard held in memory: inner chunks in C order, those equal to the fill
    /// value left out.
    pub(crate) fn encode(&self, data: &[u8], shard: &ChunkRepr) -> Result<Vec<u8>> {
        self.bind(shard)?.encode_shard(data)
    }

    /// Decode a whole shard held in memory into `out` (the shard's decoded size).
    pub(crate) fn decode_into(
        &self,
        bytes: &[u8],
        shard: &ChunkRepr,
        out: &mut [u8],
    ) -> Result<()> {
        self.bind(shard)?.decode_shard_into(bytes, out)
    }
}

/// A sharding configuration bound to one shard shape, data type and fill value: everything
/// needed to find, read and write inner chunks.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardLayout {
    codec: ShardingCodec,
    shard: ChunkRepr,
    inner: ChunkRepr,
    chunks_per_shard: Vec<u64>,
    num_chunks: usize,
    index_repr: ChunkRepr,
    index_size: u64,
    /// Inner chunks are stored as their native bytes (`bytes` codec alone, native order), so
    /// they can be copied without decoding.
    plain: bool,
}

thread_local! {
    /// One decoded inner chunk per thread, reused by [`ShardLayout::encode_chunks_with`].
    static SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Free this thread's scratch chunk (for [`crate::release_memory`]); returns its capacity.
/// A scratch chunk in use is out of the cell, so it is not affected.
pub(crate) fn release_scratch() -> u64 {
    SCRATCH.take().capacity() as u64
}

impl ShardLayout {
    /// Validate `codec` against `shard` (rank, divisibility, one array→bytes codec, fixed-size
    /// index codecs) and compute the layout.
    pub fn new(mut codec: ShardingCodec, shard: ChunkRepr) -> Result<Self> {
        codec.codecs.resolve(&shard.dtype);
        codec.index_codecs.resolve(&DataType::UInt64);
        let inner_shape = &codec.chunk_shape;
        if inner_shape.len() != shard.shape.len() {
            return Err(Error::metadata(format!(
                "sharding_indexed: chunk_shape {} has rank {}, the shard shape {} has rank {}",
                shown(inner_shape),
                inner_shape.len(),
                shown(&shard.shape),
                shard.shape.len()
            )));
        }
        if shard.shape.contains(&0) {
            return Err(Error::metadata(format!(
                "shard shape {} contains 0",
                shown(&shard.shape)
            )));
        }
        let mut chunks_per_shard = Vec::with_capacity(inner_shape.len());
        for (&s, &c) in shard.shape.iter().zip(inner_shape) {
            if s % c != 0 {
                return Err(Error::metadata(format!(
                    "sharding_indexed: chunk_shape {} does not divide the shard shape {}",
                    shown(inner_shape),
                    shown(&shard.shape)
                )));
            }
            chunks_per_shard.push(s / c);
        }
        let n = checked_product(&chunks_per_shard)?;
        if n > MAX_CHUNKS_PER_SHARD {
            return Err(Error::metadata(format!(
                "sharding_indexed: {n} inner chunks per shard exceed the limit of {MAX_CHUNKS_PER_SHARD}"
            )));
        }
        let inner = ChunkRepr {
            shape: inner_shape.clone(),
            ..shard.clone()
        };
        inner.byte_size()?;
        codec.codecs.validate(&inner)?;
        let index_repr = ChunkRepr {
            shape: chunks_per_shard.iter().copied().chain([2]).collect(),
            dtype: DataType::UInt64,
            fill_value: FillValue(EMPTY.to_ne_bytes().to_vec()),
        };
        codec.index_codecs.validate(&index_repr)?;
        let index_size = match codec.index_codecs.encoded_size(&index_repr)? {
            EncodedSize::Fixed(n) => n,
            _ => return Err(Error::metadata(
                "sharding_indexed: index_codecs must have a fixed encoded size (no compression)",
            )),
        };
        let plain = matches!(&codec.codecs, CodecChain {
            array_to_array: a2a,
            array_to_bytes: ArrayToBytes::Bytes(b),
            bytes_to_bytes: b2b,
        } if a2a.is_empty() && b2b.is_empty() && b.is_identity(&inner));
        Ok(ShardLayout {
            plain,
            codec,
            shard,
            inner,
            chunks_per_shard,
            num_chunks: n as usize,
            index_repr,
            index_size,
        })
    }

    /// Parse a bare `sharding_indexed` configuration for shards of `shard_shape`.
    pub fn from_config_json(
        config: &Value,
        dtype: DataType,
        shard_shape: Vec<u64>,
        fill_value: FillValue,
    ) -> Result<Self> {
        if fill_value.0.len() != dtype.size() {
            return Err(Error::InvalidArgument(format!(
                "fill value of {} bytes for data type {} ({} bytes)",
                fill_value.0.len(),
                dtype.name(),
                dtype.size()
            )));
        }
        ShardLayout::new(
            ShardingCodec::from_config_json(config)?,
            ChunkRepr {
                shape: shard_shape,
                dtype,
                fill_value,
            },
        )
    }

    /// The sharding configuration.
    pub fn codec(&self) -> &ShardingCodec {
        &self.codec
    }
    /// The shard: shape, data type, fill value.
    pub fn shard_repr(&self) -> &ChunkRepr {
        &self.shard
    }
    /// One inner chunk: shape, data type, fill value.
    pub fn inner_repr(&self) -> &ChunkRepr {
        &self.inner
    }
    /// Inner chunks per shard, per dimension.
    pub fn chunks_per_shard(&self) -> &[u64] {
        &self.chunks_per_shard
    }
    /// Inner chunks per shard in all (entries of the index).
    pub fn num_chunks(&self) -> usize {
        self.num_chunks
    }
    /// Encoded size of the index in bytes.
    pub fn index_size(&self) -> u64 {
        self.index_size
    }
    /// The index as an array: shape `chunks_per_shard + [2]`, uint64.
    pub fn index_repr(&self) -> &ChunkRepr {
        &self.index_repr
    }
    /// Decoded size of one inner chunk in bytes.
    pub fn inner_byte_size(&self) -> usize {
        // Checked in `new`.
        self.inner.byte_size().unwrap() as usize
    }

    /// Linear index of inner chunk `coords`, or an error naming coordinates outside the shard.
    pub fn linear_index(&self, coords: &[u64]) -> Result<usize> {
        if coords.len() != self.chunks_per_shard.len()
            || coords
                .iter()
                .zip(&self.chunks_per_shard)
                .any(|(c, n)| c >= n)
        {
            return Err(Error::InvalidArgument(format!(
                "inner chunk {} is outside the shard's {} inner chunks",
                shown(coords),
                shown(&self.chunks_per_shard)
            )));
        }
        Ok(nd::ravel(coords, &self.chunks_per_shard) as usize)
    }

    /// Split a whole shard object into (index bytes, object), checking it can hold its index.
    pub fn index_bytes<'a>(&self, object: &'a [u8]) -> Result<&'a [u8]> {
        let n = self.index_size as usize;
        if (object.len() as u64) < self.index_size {
            return Err(Error::corrupt(crate::error::truncated(
                object.len() as u64,
                self.index_size,
            )));
        }
        Ok(match self.codec.index_location {
            IndexLocation::Start => &object[..n],
            IndexLocation::End => &object[object.len() - n..],
        })
    }

    /// Decode and validate the index of a whole shard object held in memory.
    pub fn decode_index(&self, object: &[u8]) -> Result<ShardIndex> {
        ShardIndex::decode(self.index_bytes(object)?, self, Some(object.len() as u64))
    }

    /// Decode one inner chunk's encoded bytes into `out` (`inner_byte_size()` bytes).
    pub fn decode_chunk_into(&self, i: usize, encoded: &[u8], out: &mut [u8]) -> Result<()> {
        self.codec
            .codecs
            .decode_into(encoded, &self.inner, out)
            .map_err(|e| e.at_chunk(&nd::unravel(i as u64, &self.chunks_per_shard)))
    }

    /// `encoded` itself when inner chunks are stored as their native bytes (the `bytes` codec
    /// alone, native order) and it has the decoded size: then it *is* the decoded chunk and
    /// can be copied into place without a decode step.
    pub fn as_decoded<'a>(&self, encoded: &'a [u8]) -> Option<&'a [u8]> {
        (self.plain && encoded.len() == self.inner_byte_size()).then_some(encoded)
    }

    /// Origin, in shard elements, of inner chunk `i`.
    pub fn chunk_origin(&self, i: usize) -> Vec<u64> {
        nd::unravel(i as u64, &self.chunks_per_shard)
            .iter()
            .zip(&self.codec.chunk_shape)
            .map(|(c, s)| c * s)
            .collect()
    }

    /// Copy decoded inner chunk `i` into its place in a decoded shard buffer.
    pub fn place_chunk(&self, i: usize, chunk: &[u8], shard_out: &mut [u8]) {
        nd::copy_box(
            chunk,
            &self.inner.shape,
            &vec![0; self.inner.shape.len()],
            shard_out,
            &self.shard.shape,
            &self.chunk_origin(i),
            &self.inner.shape,
            self.shard.dtype.size(),
        );
    }

    /// Copy inner chunk `i` out of a decoded shard buffer.
    pub fn extract_chunk(&self, i: usize, shard: &[u8], chunk_out: &mut [u8]) {
        nd::copy_box(
            shard,
            &self.shard.shape,
            &self.chunk_origin(i),
            chunk_out,
            &self.inner.shape,
            &vec![0; self.inner.shape.len()],
            &self.inner.shape,
            self.shard.dtype.size(),
        );
    }

    /// True when every element of `chunk` equals the fill value (byte for byte).
    pub fn is_fill(&self, chunk: &[u8]) -> bool {
        self.shard.fill_value.fills(chunk)
    }

    /// Decode a whole shard object held in memory into `out` (the shard's decoded size).
    ///
    /// Inner chunks are decoded in parallel, one row of chunks (along the first dimension) per
    /// task: each row covers a contiguous slab of `out`, so tasks never share memory. When an
    /// inner chunk spans the shard's trailing dimensions it is decoded straight into place.
    pub fn decode_shard_into(&self, object: &[u8], out: &mut [u8]) -> Result<()> {
        crate::codec::check_len(out.len(), self.shard.byte_size()?)?;
        let index = self.decode_index(object)?;
        if index.stored().count() < self.num_chunks {
            self.shard.fill_value.fill(out);
        }
        let bytes_of = |i: usize| {
            index
                .get(i)
                .map(|l| &object[l.offset as usize..l.end() as usize])
        };
        let rank = self.shard.shape.len();
        if rank == 0 {
            return match bytes_of(0) {
                Some(b) => self.decode_chunk_into(0, b, out),
                None => Ok(()),
            };
        }
        let rows = self.chunks_per_shard[0] as usize;
        let per_row = self.num_chunks / rows;
        let contiguous = self.inner.shape[1..] == self.shard.shape[1..];
        let mut slab_shape = self.shard.shape.clone();
        slab_shape[0] = self.inner.shape[0];
        let slab_bytes = out.len() / rows;
        threads::for_each_piece(out, slab_bytes, |row, slab| {
            let mut chunk = vec![
                0u8;
                if contiguous || self.plain {
                    0
                } else {
                    self.inner_byte_size()
                }
            ];
            let (zeros, mut origin) = (vec![0u64; rank], vec![0u64; rank]);
            for i in row * per_row..(row + 1) * per_row {
                let Some(bytes) = bytes_of(i) else { continue };
                let src: &[u8] = if let Some(decoded) = self.as_decoded(bytes) {
                    // Uncompressed, native order: copy from the object straight into place.
                    decoded
                } else if contiguous {
                    self.decode_chunk_into(i, bytes, slab)?;
                    continue;
                } else {
                    if chunk.is_empty() {
                        chunk.resize(self.inner_byte_size(), 0);
                    }
                    self.decode_chunk_into(i, bytes, &mut chunk)?;
                    &chunk
                };
                // Origin in the slab: the chunk's position, first coordinate 0.
                let mut rest = i % per_row;
                for d in (1..rank).rev() {
                    origin[d] = (rest as u64 % self.chunks_per_shard[d]) * self.inner.shape[d];
                    rest /= self.chunks_per_shard[d] as usize;
                }
                nd::copy_box(
                    src,
                    &self.inner.shape,
                    &zeros,
                    slab,
                    &slab_shape,
                    &origin,
                    &self.inner.shape,
                    self.shard.dtype.size(),
                );
            }
            Ok(())
        })
    }

    /// Encode every inner chunk of a decoded shard, in parallel; a chunk equal to the fill
    /// value is left unstored (unless `store_fill_chunks`). The chunks are held in reused
    /// memory until the result is dropped ([`crate::shard::encoded`]).
    pub fn encode_chunks(&self, data: &[u8], store_fill_chunks: bool) -> Result<EncodedChunks> {
        crate::codec::check_len(data.len(), self.shard.byte_size()?)?;
        self.encode_chunks_with(store_fill_chunks, |i, chunk| {
            self.extract_chunk(i, data, chunk)
        })
    }

    /// [`ShardLayout::encode_chunks`] where `fill(i, chunk)` writes inner chunk `i`'s decoded
    /// bytes (so a caller can cut chunks straight out of a larger array, without first
    /// assembling the shard).
    pub fn encode_chunks_with(
        &self,
        store_fill_chunks: bool,
        fill: impl Fn(usize, &mut [u8]) + Sync + Send,
    ) -> Result<EncodedChunks> {
        let collector = Collector::default();
        let held = threads::map_init(
            self.num_chunks,
            || collector.appender(),
            |out, i| {
                let kept = self.encode_chunk_to(i, store_fill_chunks, &fill, out)?;
                Ok(kept.map(|n| out.commit(n)))
            },
        )?;
        Ok(collector.finish(held))
    }

    /// Encode inner chunk `i`, which `fill` writes decoded, into `out`'s room: its encoded
    /// size, or `None` for a chunk equal to the fill value that is not to be stored.
    pub(crate) fn encode_chunk_to(
        &self,
        i: usize,
        store_fill_chunks: bool,
        fill: &(impl Fn(usize, &mut [u8]) + Sync),
        out: &mut dyn EncodeTarget,
    ) -> Result<Option<usize>> {
        let n = self.inner_byte_size();
        if self.plain {
            // Stored as is: the chunk is cut straight into its place among the encoded.
            let room = &mut out.room(n)[..n];
            fill(i, room);
            let keep = store_fill_chunks || !self.is_fill(room);
            return Ok(keep.then_some(n));
        }
        // The decoded chunk lives in a buffer reused by this thread (taken out while in use,
        // so a nested sharding codec gets its own).
        let mut chunk = SCRATCH.take();
        chunk.resize(n, 0);
        fill(i, &mut chunk[..n]);
        let encoded = match !store_fill_chunks && self.is_fill(&chunk[..n]) {
            true => Ok(None),
            false => self
                .codec
                .codecs
                .encode_to(&chunk[..n], &self.inner, out)
                .map(Some),
        };
        SCRATCH.set(chunk);
        encoded
    }

    /// Encode a whole decoded shard: inner chunks in C order, chunks equal to the fill value
    /// left out, index at the configured location (the buffered writer into memory). A shard
    /// with nothing stored encodes as its all-empty index.
    pub fn encode_shard(&self, data: &[u8]) -> Result<Vec<u8>> {
        let encoded = self.encode_chunks(data, false)?;
        let io = MemoryIo::new();
        let writer = ShardWriter::new(
            Arc::new(self.clone()),
            &io,
            WriteStrategy::Buffered,
            WriteOptions::default(),
        )?;
        match writer.finish_with(encoded)? {
            Finalized::Written { .. } => Ok(io.bytes().expect("a written shard exists")),
            Finalized::Deleted => ShardIndex::new_empty(self.num_chunks).encode(self),
        }
    }
}
