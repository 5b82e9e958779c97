//! Reading inner chunks of one shard object, fetching only the bytes needed.
//!
//! Opening reads the index and nothing else, in one read: a suffix read when the index is at
//! the end (no size call), a prefix read when it is at the start. After that, one inner chunk
//! costs exactly one read of exactly its bytes. A missing object reads as all fill value.
//!
//! Where we differ from zarrs and zarr-python: both re-read (or re-request from a cache) the
//! index per partial decode unless the caller keeps a partial decoder around; here the reader
//! *is* the loaded index, immutable after open, so any number of threads share it without a
//! lock.

use crate::codec::sharding::index::{ChunkLocation, ShardIndex};
use crate::codec::sharding::{IndexLocation, ShardLayout};
use crate::error::{shown, Error, Result};
use crate::runtime::threads;
use crate::storage::io::{ByteRange, ShardIo};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// An open shard: its layout, its I/O, and its index (loaded once at open).
pub struct ShardReader<I: ShardIo> {
    layout: Arc<ShardLayout>,
    io: I,
    /// `None` when the object does not exist; shared with the array's cache of indexes.
    index: Option<Arc<ShardIndex>>,
    /// Size of the object when the back end reported it with the index read.
    object_size: Option<u64>,
    /// Byte ranges of wanted chunks closer than this are fetched in one read.
    coalesce_gap: AtomicU64,
}

/// Default gap below which the byte ranges of wanted chunks are merged into one read: 64 KiB
/// (a round trip to object storage costs far more than 64 KiB of transfer).
pub const DEFAULT_COALESCE_GAP: u64 = 64 << 10;

impl<I: ShardIo> ShardReader<I> {
    /// Open a shard: one read, of the index only.
    pub fn open(layout: Arc<ShardLayout>, io: I) -> Result<Self> {
        Ok(match load_index(&layout, &io)? {
            Some((index, size)) => Self::with_index(layout, io, Some(Arc::new(index)), size),
            None => Self::with_index(layout, io, None, None),
        })
    }

    /// A reader of an index loaded before (`None`: the object does not exist), without reading
    /// anything: `index` must be the one `io`'s object has (the array's cache of indexes).
    pub(crate) fn with_index(
        layout: Arc<ShardLayout>,
        io: I,
        index: Option<Arc<ShardIndex>>,
        object_size: Option<u64>,
    ) -> Self {
        ShardReader {
            layout,
            io,
            index,
            object_size,
            coalesce_gap: AtomicU64::new(DEFAULT_COALESCE_GAP),
        }
    }

    /// Size of the shard object, when the back end reported it while the index was read.
    pub fn object_size(&self) -> Option<u64> {
        self.object_size
    }

    /// The shard layout this reader decodes with.
    pub fn layout(&self) -> &Arc<ShardLayout> {
        &self.layout
    }

    /// The loaded index; `None` when the shard object does not exist.
    pub fn index(&self) -> Option<&ShardIndex> {
        self.index.as_deref()
    }

    /// The I/O back end.
    pub fn io(&self) -> &I {
        &self.io
    }

    /// Where inner chunk `coords` is stored; `None` when it is empty.
    pub fn chunk_location(&self, coords: &[u64]) -> Result<Option<ChunkLocation>> {
        let i = self.layout.linear_index(coords)?;
        Ok(self.index.as_ref().and_then(|ix| ix.get(i)))
    }

    /// How many encoded bytes inner chunk `coords` has per the index (0 when it is empty), for
    /// a caller that sizes its own buffer from it (the C API's size query), held to the memory
    /// limit ([`Error::MemoryLimit`] past it): where the object's size is unknown (a host
    /// without a size callback, index at the start) nothing else bounds an entry, and a damaged
    /// one may name 2^62 bytes. [`Self::read_chunk_raw`] needs no such check: the back end
    /// bounds its reads (files and memory to the object, callbacks to the memory limit), so a
    /// damaged entry there is [`Error::Corrupt`] when the object turns out shorter.
    pub fn chunk_raw_len(&self, coords: &[u64]) -> Result<usize> {
        match self.chunk_location(coords)? {
            None => Ok(0),
            Some(loc) => crate::runtime::limits::buffer_len(
                loc.nbytes,
                &format!("the encoded bytes of inner chunk {}", shown(coords)),
            ),
        }
    }

    /// The encoded bytes of inner chunk `coords` (one read); `None` when it is empty.
    pub fn read_chunk_raw(&self, coords: &[u64]) -> Result<Option<Vec<u8>>> {
        let i = self.layout.linear_index(coords)?;
        let Some(loc) = self.index.as_ref().and_then(|ix| ix.get(i)) else {
            return Ok(None);
        };
        let bad = |reason: String| Error::corrupt(reason).at_chunk(coords);
        let out = self
            .io
            .read(ByteRange::FromStart(loc.offset, Some(loc.nbytes)))?
            .ok_or_else(|| bad("the shard object disappeared after its index was read".into()))?;
        if out.data.len() as u64 != loc.nbytes {
            return Err(bad(format!(
                "index entry (offset {}, nbytes {}) points past the end: {}",
                loc.offset,
                loc.nbytes,
                crate::error::truncated_read(loc.offset, out.data.len() as u64, loc.end())
            )));
        }
        Ok(Some(out.data))
    }

    /// Decode inner chunk `coords` into `out` (C order, native byte order,
    /// `layout.inner_byte_size()` bytes); the fill value when it is empty.
    pub fn read_chunk_into(&self, coords: &[u64], out: &mut [u8]) -> Result<()> {
        crate::codec::check_len(out.len(), self.layout.inner_byte_size() as u64)?;
        let i = self.layout.linear_index(coords)?;
        match self.read_chunk_raw(coords)? {
            Some(bytes) => self.layout.decode_chunk_into(i, &bytes, out),
            None => {
                self.layout.inner_repr().fill_value.fill(out);
                Ok(())
            }
        }
    }

    /// Decode inner chunk `coords` into a new buffer.
    pub fn read_chunk(&self, coords: &[u64]) -> Result<Vec<u8>> {
        let repr = self.layout.inner_repr();
        let mut out =
            vec![0u8; crate::runtime::limits::buffer_len(repr.byte_size()?, &repr.describe())?];
        self.read_chunk_into(coords, &mut out)?;
        Ok(out)
    }

    /// Set the gap (bytes) below which the ranges of chunks wanted together are fetched in
    /// one read; 0 merges only touching ranges. Safe to call while other threads read.
    pub fn set_coalesce_gap(&self, gap: u64) {
        self.coalesce_gap.store(gap, Ordering::Relaxed);
    }

    /// Decode many inner chunks into `out`, one after another (`coords.len()` ×
    /// `inner_byte_size()` bytes). Their byte ranges are fetched together
    /// ([`ShardReader::fetch_chunks`]: at most 1 + number of runs host reads counting the
    /// index) and the chunks are decoded in parallel straight into `out`.
    pub fn read_chunks_into(&self, coords: &[&[u64]], out: &mut [u8]) -> Result<()> {
        let each = self.layout.inner_byte_size();
        crate::codec::check_len(out.len(), (coords.len() as u64).saturating_mul(each as u64))?;
        let indices: Vec<usize> = coords
            .iter()
            .map(|c| self.layout.linear_index(c))
            .collect::<Result<_>>()?;
        let fetched = self.fetch_chunks(&indices)?;
        threads::for_each_piece(out, each, |k, piece| fetched.decode_into(k, piece))
    }

    /// Fetch the encoded bytes of the inner chunks at linear `indices` (C order within the
    /// shard): their byte ranges are sorted and merged where the gap between them is below
    /// the coalescing gap, or into one read of the whole span when the wanted bytes are most
    /// of it; then all runs are fetched with one [`ShardIo::read_many`] call (through
    /// [`ShardIo::read_many_reusing`], which back ends that cannot reuse buffers pass on).
    pub fn fetch_chunks(&self, indices: &[usize]) -> Result<FetchedChunks> {
        self.fetch_chunks_reusing(indices, &mut Vec::new())
    }

    /// [`ShardReader::fetch_chunks`] reading into `spare` buffers where the back end can
    /// (see [`ShardIo::read_many_reusing`]); [`FetchedChunks::into_buffers`] gives them back
    /// for the next shard.
    pub fn fetch_chunks_reusing(
        &self,
        indices: &[usize],
        spare: &mut Vec<Vec<u8>>,
    ) -> Result<FetchedChunks> {
        let n = self.layout.num_chunks();
        let locs: Vec<Option<ChunkLocation>> = indices
            .iter()
            .map(|&i| {
                if i >= n {
                    return Err(Error::InvalidArgument(format!(
                        "inner chunk {i} is outside the shard's {n} chunks"
                    )));
                }
                Ok(self.index.as_ref().and_then(|ix| ix.get(i)))
            })
            .collect::<Result<_>>()?;
        let runs = plan_runs(&locs, self.coalesce_gap.load(Ordering::Relaxed));
        let ranges: Vec<ByteRange> = runs
            .iter()
            .map(|&(s, e)| ByteRange::FromStart(s, Some(e - s)))
            .collect();
        let fetched = self.io.read_many_reusing(&ranges, spare)?;
        let mut data = Vec::with_capacity(fetched.len());
        for ((start, end), got) in runs.iter().zip(fetched) {
            let got = got.ok_or_else(|| {
                Error::corrupt("the shard object disappeared after its index was read")
            })?;
            if got.data.len() as u64 != end - start {
                return Err(Error::corrupt(format!(
                    "bytes {start}..{end} point past the end: {}",
                    crate::error::truncated_read(*start, got.data.len() as u64, *end)
                )));
            }
            data.push((*start, got.data));
        }
        Ok(FetchedChunks {
            layout: self.layout.clone(),
            indices: indices.to_vec(),
            locs,
            runs: data,
        })
    }
}

/// Encoded inner chunks fetched together by [`ShardReader::fetch_chunks`], ready to decode
/// (from any thread, in any order).
pub struct FetchedChunks {
    layout: Arc<ShardLayout>,
    indices: Vec<usize>,
    locs: Vec<Option<ChunkLocation>>,
    /// `(offset in the object, bytes)` of each run, sorted by offset.
    runs: Vec<(u64, Vec<u8>)>,
}

impl FetchedChunks {
    /// The buffers the chunks were fetched into, to read the next shard's chunks into
    /// ([`ShardReader::fetch_chunks_reusing`]).
    pub fn into_buffers(self) -> Vec<Vec<u8>> {
        self.runs.into_iter().map(|(_, bytes)| bytes).collect()
    }

    /// The encoded bytes of the `k`-th requested chunk; `None` when it is empty.
    pub fn encoded(&self, k: usize) -> Option<&[u8]> {
        let loc = self.locs[k]?;
        // The run holding this chunk: the last one starting at or before it.
        let r = self.runs.partition_point(|(s, _)| *s <= loc.offset) - 1;
        let (start, bytes) = &self.runs[r];
        let from = (loc.offset - start) as usize;
        Some(&bytes[from..from + loc.nbytes as usize])
    }

    /// Decode the `k`-th requested chunk into `out` (`inner_byte_size()` bytes, C order,
    /// native byte order); the fill value when it is empty.
    pub fn decode_into(&self, k: usize, out: &mut [u8]) -> Result<()> {
        match self.encoded(k) {
            None => {
                self.layout.inner_repr().fill_value.fill(out);
                Ok(())
            }
            Some(bytes) => self.layout.decode_chunk_into(self.indices[k], bytes, out),
        }
    }
}

/// Merge the byte ranges of `locs` into runs `(start, end)`, sorted: ranges closer than `gap`
/// join; when the runs would cover most (≥ half) of the span from the first to the last byte,
/// one run over the whole span is cheaper.
fn plan_runs(locs: &[Option<ChunkLocation>], gap: u64) -> Vec<(u64, u64)> {
    let mut ranges: Vec<(u64, u64)> = locs.iter().flatten().map(|l| (l.offset, l.end())).collect();
    ranges.sort_unstable();
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (s, e) in ranges {
        match runs.last_mut() {
            Some(last) if s <= last.1.saturating_add(gap) => last.1 = last.1.max(e),
            _ => runs.push((s, e)),
        }
    }
    if runs.len() > 1 {
        let span = runs.last().unwrap().1 - runs[0].0;
        let wanted: u64 = runs.iter().map(|(s, e)| e - s).sum();
        if wanted >= span / 2 {
            return vec![(runs[0].0, runs.last().unwrap().1)];
        }
    }
    runs
}

/// Read and validate the index of a shard object in one read (a suffix read when the index is
/// at the end). `Ok(None)` when the object does not exist; otherwise the index and the object
/// size if the back end reported it.
pub fn load_index(
    layout: &ShardLayout,
    io: &dyn ShardIo,
) -> Result<Option<(ShardIndex, Option<u64>)>> {
    let n = layout.index_size();
    let range = match layout.codec().index_location {
        IndexLocation::End => ByteRange::Suffix(n),
        IndexLocation::Start => ByteRange::FromStart(0, Some(n)),
    };
    let Some(out) = io.read(range)? else {
        return Ok(None);
    };
    if (out.data.len() as u64) < n {
        return Err(Error::corrupt(crate::error::truncated(
            out.data.len() as u64,
            n,
        )));
    }
    let index = ShardIndex::decode_owned(out.data, layout, out.object_size)?;
    Ok(Some((index, out.object_size)))
}

/// Read and decode a whole shard in one read of the object. `Ok(None)` when the object does
/// not exist. The result is the decoded shard (C order, native byte order).
pub fn read_whole_shard(layout: &ShardLayout, io: &dyn ShardIo) -> Result<Option<Vec<u8>>> {
    let Some(out) = io.read(ByteRange::FromStart(0, None))? else {
        return Ok(None);
    };
    let repr = layout.shard_repr();
    let mut shard =
        vec![0u8; crate::runtime::limits::buffer_len(repr.byte_size()?, &repr.describe())?];
    layout.decode_shard_into(&out.data, &mut shard)?;
    Ok(Some(shard))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(offset: u64, nbytes: u64) -> Option<ChunkLocation> {
        Some(ChunkLocation { offset, nbytes })
    }

    #[test]
    fn runs_by_hand() {
        // Touching and near ranges merge; a far one stays apart; empties are skipped.
        let locs = [at(0, 10), None, at(10, 5), at(20, 5), at(1000, 10)];
        assert_eq!(plan_runs(&locs, 5), vec![(0, 25), (1000, 1010)]);
        assert_eq!(plan_runs(&locs, 0), vec![(0, 15), (20, 25), (1000, 1010)]);
        // Most of the span wanted: one read of the whole span.
        let locs = [at(0, 100), at(150, 100), at(300, 100)];
        assert_eq!(plan_runs(&locs, 0), vec![(0, 400)]);
        assert_eq!(plan_runs(&[None, None], 10), vec![]);
    }
}
