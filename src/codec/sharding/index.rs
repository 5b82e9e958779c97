//! The shard index: one `(offset, nbytes)` pair of uint64 per inner chunk, C order, with
//! `(2^64-1, 2^64-1)` marking an empty inner chunk, encoded by the index codecs.
//!
//! Every entry taken from storage is checked before it is used (as tensorstore's DataLoss
//! validation does): both-or-neither empty markers, no `offset + nbytes` overflow, inside the
//! object, not overlapping the index itself. The error names the inner chunk.

use crate::codec::bytes::Endian;
use crate::codec::sharding::{IndexLocation, ShardLayout};
use crate::codec::ArrayToBytes;
use crate::error::{ChunkCoords, Error, Result};
use crate::nd;
use std::borrow::Cow;

/// Marker for "no data" in both fields of an entry.
pub const EMPTY: u64 = u64::MAX;

/// Where an inner chunk's encoded bytes are in the shard object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkLocation {
    /// First byte of the encoded chunk in the shard object.
    pub offset: u64,
    /// Its length in bytes.
    pub nbytes: u64,
}

impl ChunkLocation {
    /// One past the last byte (checked when the index was validated).
    pub fn end(&self) -> u64 {
        self.offset + self.nbytes
    }
}

/// The bytes of an object of `object_size` (when known) where inner chunks may live:
/// `(start, end)`, `end` unknown without the size (index at the end).
fn data_region(layout: &ShardLayout, object_size: Option<u64>) -> (u64, Option<u64>) {
    let index_size = layout.index_size();
    match (layout.codec().index_location, object_size) {
        (IndexLocation::Start, size) => (index_size, size),
        (IndexLocation::End, Some(size)) => (0, Some(size.saturating_sub(index_size))),
        (IndexLocation::End, None) => (0, None),
    }
}

/// A decoded shard index.
///
/// Kept as the little-endian bytes of the `(offset, nbytes)` pairs — the form the usual index
/// codecs (`bytes` little-endian, `crc32c`) store — so an index read from storage is used in
/// place: no conversion pass and no second 16-bytes-per-chunk buffer (a 1M-entry index is
/// 16 MiB). Entries are decoded on access.
#[derive(Debug, Clone)]
pub struct ShardIndex {
    /// `16 * num` bytes of pairs (a trailing checksum may follow; it is not part of the index).
    raw: Vec<u8>,
    num: usize,
}

impl PartialEq for ShardIndex {
    fn eq(&self, other: &Self) -> bool {
        self.num == other.num && self.pairs() == other.pairs()
    }
}
impl Eq for ShardIndex {}

impl ShardIndex {
    /// An index with every inner chunk empty.
    pub fn new_empty(num_chunks: usize) -> Self {
        ShardIndex {
            raw: vec![0xff; 16 * num_chunks],
            num: num_chunks,
        }
    }

    /// The bytes the decoded index holds in memory (its entries and this value), what a cache
    /// of indexes counts against its bound.
    pub fn memory_bytes(&self) -> u64 {
        (self.raw.capacity() + std::mem::size_of::<Self>()) as u64
    }

    /// Number of inner chunks the index describes.
    pub fn len(&self) -> usize {
        self.num
    }

    /// True when the index describes no inner chunk at all (a zero-size shard).
    pub fn is_empty(&self) -> bool {
        self.num == 0
    }

    fn pairs(&self) -> &[u8] {
        &self.raw[..16 * self.num]
    }

    /// The raw `(offset, nbytes)` pair of inner chunk `i`, unchecked.
    pub fn entry(&self, i: usize) -> (u64, u64) {
        let p = &self.raw[16 * i..16 * i + 16];
        (
            u64::from_le_bytes(p[..8].try_into().unwrap()),
            u64::from_le_bytes(p[8..].try_into().unwrap()),
        )
    }

    /// Location of inner chunk `i` (C-order linear index), `None` when empty.
    pub fn get(&self, i: usize) -> Option<ChunkLocation> {
        let (offset, nbytes) = self.entry(i);
        (offset != EMPTY || nbytes != EMPTY).then_some(ChunkLocation { offset, nbytes })
    }

    /// Set or clear the location of inner chunk `i`.
    pub fn set(&mut self, i: usize, loc: Option<ChunkLocation>) {
        let (o, n) = loc.map_or((EMPTY, EMPTY), |l| (l.offset, l.nbytes));
        self.raw[16 * i..16 * i + 8].copy_from_slice(&o.to_le_bytes());
        self.raw[16 * i + 8..16 * i + 16].copy_from_slice(&n.to_le_bytes());
    }

    /// Locations of all stored inner chunks as `(linear index, location)`.
    pub fn stored(&self) -> impl Iterator<Item = (usize, ChunkLocation)> + '_ {
        (0..self.len()).filter_map(|i| self.get(i).map(|l| (i, l)))
    }

    /// Bytes of an object of `object_size` that no stored inner chunk covers, index excluded
    /// (what compaction reclaims). Overlapping entries count once; entries that fail
    /// validation cover nothing (so an unchecked index cannot overflow the sum).
    pub fn dead_bytes(&self, layout: &ShardLayout, object_size: u64) -> u64 {
        let mut ranges: Vec<(u64, u64)> = self
            .stored()
            .filter(|(i, _)| self.check_entry(*i, layout, Some(object_size)).is_ok())
            .map(|(_, l)| (l.offset, l.end()))
            .collect();
        ranges.sort_unstable();
        let (mut covered, mut reach) = (0u64, 0u64);
        for (s, e) in ranges {
            let s = s.max(reach);
            if e > s {
                covered += e - s;
            }
            reach = reach.max(e);
        }
        object_size
            .saturating_sub(layout.index_size())
            .saturating_sub(covered)
    }

    /// Decode an index from exactly `layout.index_size()` bytes and validate every entry
    /// against an object of `object_size` bytes (when known).
    pub fn decode(bytes: &[u8], layout: &ShardLayout, object_size: Option<u64>) -> Result<Self> {
        Self::decode_owned(bytes.to_vec(), layout, object_size)
    }

    /// [`ShardIndex::decode`] taking the bytes by value: with the usual index codecs they
    /// become the index itself, without a copy.
    pub fn decode_owned(
        bytes: Vec<u8>,
        layout: &ShardLayout,
        object_size: Option<u64>,
    ) -> Result<Self> {
        let index = Self::decode_unchecked_owned(bytes, layout)?;
        index.validate(layout, object_size)?;
        Ok(index)
    }

    /// Decode an index (checksum included) without checking its entries; for tools that
    /// report every bad entry ([`ShardIndex::entry_errors`]) rather than stop at the first.
    pub fn decode_unchecked(bytes: &[u8], layout: &ShardLayout) -> Result<Self> {
        Self::decode_unchecked_owned(bytes.to_vec(), layout)
    }

    fn decode_unchecked_owned(bytes: Vec<u8>, layout: &ShardLayout) -> Result<Self> {
        if bytes.len() as u64 != layout.index_size() {
            return Err(Error::corrupt(format!(
                "shard index is {} bytes, expected {}",
                bytes.len(),
                layout.index_size()
            )));
        }
        let chain = &layout.codec().index_codecs;
        let name_errors = |e: Error| match e {
            Error::ChecksumMismatch {
                stored, computed, ..
            } => Error::ChecksumMismatch {
                shard: None,
                chunk: None,
                what: "shard index".into(),
                stored,
                computed,
            },
            Error::Corrupt { reason, .. } => Error::corrupt(format!("shard index: {reason}")),
            other => other,
        };
        let num = layout.num_chunks();
        let le = |raw: &[u8], big: bool| -> Vec<u8> {
            if big {
                raw.chunks_exact(8)
                    .flat_map(|w| u64::from_be_bytes(w.try_into().unwrap()).to_le_bytes())
                    .collect()
            } else {
                raw.to_vec()
            }
        };
        let raw = match (&chain.array_to_bytes, chain.array_to_array.is_empty()) {
            // The usual `bytes` (+ crc32c): verify, and keep the bytes as they are.
            (ArrayToBytes::Bytes(b), true) => {
                let stage = chain
                    .decode_bytes_stage(&bytes, layout.index_repr())
                    .map_err(name_errors)?;
                if stage.len() as u64 != 16 * num as u64 {
                    return Err(Error::corrupt(format!(
                        "shard index: {} bytes after its codecs",
                        stage.len()
                    )));
                }
                match (stage, b.endian == Some(Endian::Big)) {
                    // Borrowed: the codecs only checked (crc32c); the pairs are a prefix.
                    (Cow::Borrowed(_), false) => bytes,
                    (stage, big) => le(&stage, big),
                }
            }
            _ => le(
                &chain
                    .decode(&bytes, layout.index_repr())
                    .map_err(name_errors)?,
                cfg!(target_endian = "big"),
            ),
        };
        Ok(ShardIndex { raw, num })
    }

    /// Encode through the index codecs.
    pub fn encode(&self, layout: &ShardLayout) -> Result<Vec<u8>> {
        let raw: Vec<u8> = (0..self.num)
            .flat_map(|i| {
                let (o, n) = self.entry(i);
                [o.to_ne_bytes(), n.to_ne_bytes()]
            })
            .flatten()
            .collect();
        layout
            .codec()
            .index_codecs
            .encode(&raw, layout.index_repr())
    }

    /// Check every entry; `object_size` is the size of the whole shard object when known.
    pub fn validate(&self, layout: &ShardLayout, object_size: Option<u64>) -> Result<()> {
        // One branch-free pass over the pairs (it vectorises); only when it finds a bad entry
        // does the detailed check run, to name the first one.
        let (start, end) = data_region(layout, object_size);
        let end = end.unwrap_or(u64::MAX);
        let mut all_ok = true;
        for pair in self.pairs().chunks_exact(16) {
            let offset = u64::from_le_bytes(pair[..8].try_into().unwrap());
            let nbytes = u64::from_le_bytes(pair[8..].try_into().unwrap());
            let empty = (offset & nbytes) == EMPTY;
            // One field alone may not be the marker, even where the object size is unknown and
            // `(2^64-1, 0)` or `(0, 2^64-1)` would fit.
            let one_marker = (offset == EMPTY) | (nbytes == EMPTY);
            // `offset <= end` first, so `end - offset` cannot underflow when it matters.
            let inside = (offset >= start) & (offset <= end) & (nbytes <= end.wrapping_sub(offset));
            all_ok &= empty | (inside & !one_marker);
        }
        if !all_ok {
            for i in 0..self.num {
                self.check_entry(i, layout, object_size)?;
            }
        }
        Ok(())
    }

    /// Every bad entry, as `(linear index, error)`.
    pub fn entry_errors(
        &self,
        layout: &ShardLayout,
        object_size: Option<u64>,
    ) -> Vec<(usize, Error)> {
        (0..self.len())
            .filter_map(|i| {
                self.check_entry(i, layout, object_size)
                    .err()
                    .map(|e| (i, e))
            })
            .collect()
    }

    fn check_entry(&self, i: usize, layout: &ShardLayout, object_size: Option<u64>) -> Result<()> {
        let index_size = layout.index_size();
        let (data_start, data_end) = data_region(layout, object_size);
        {
            let (offset, nbytes) = self.entry(i);
            let bad = |why: String| Error::Corrupt {
                shard: None,
                chunk: Some(ChunkCoords(nd::unravel(
                    i as u64,
                    layout.chunks_per_shard(),
                ))),
                reason: format!("index entry (offset {offset}, nbytes {nbytes}) {why}"),
            };
            match (offset == EMPTY, nbytes == EMPTY) {
                (true, true) => return Ok(()),
                (true, false) | (false, true) => {
                    return Err(bad("has only one field set to the empty marker".into()))
                }
                _ => {}
            }
            let end = offset
                .checked_add(nbytes)
                .ok_or_else(|| bad("overflows 64 bits".into()))?;
            if offset < data_start {
                return Err(bad(format!("overlaps the index (bytes 0..{index_size})")));
            }
            if let Some(data_end) = data_end {
                if end > data_end {
                    return Err(match (layout.codec().index_location, object_size) {
                        (IndexLocation::End, Some(size)) if end <= size => {
                            bad(format!("overlaps the index (bytes {data_end}..{size})"))
                        }
                        (location, _) => {
                            // The smallest object this entry fits: its end, then the index
                            // when that comes last.
                            let needed = match location {
                                IndexLocation::End => end.saturating_add(index_size),
                                IndexLocation::Start => end,
                            };
                            bad(format!(
                                "points past the end: {}",
                                crate::error::truncated(object_size.unwrap_or(0), needed)
                            ))
                        }
                    });
                }
            }
        }
        Ok(())
    }
}
