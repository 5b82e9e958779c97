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

use crate::error::{Error, Result};
use crate::index::{ChunkLocation, ShardIndex};
use crate::io::{ByteRange, ShardIo};
use crate::sharding::{IndexLocation, ShardLayout};
use std::sync::Arc;

/// An open shard: its layout, its I/O, and its index (loaded once at open).
pub struct ShardReader<I: ShardIo> {
    layout: Arc<ShardLayout>,
    io: I,
    /// `None` when the object does not exist.
    index: Option<ShardIndex>,
    /// Size of the object when the back end reported it with the index read.
    object_size: Option<u64>,
}

impl<I: ShardIo> ShardReader<I> {
    /// Open a shard: one read, of the index only.
    pub fn open(layout: Arc<ShardLayout>, io: I) -> Result<Self> {
        let (index, object_size) = match load_index(&layout, &io)? {
            Some((index, size)) => (Some(index), size),
            None => (None, None),
        };
        Ok(ShardReader {
            layout,
            io,
            index,
            object_size,
        })
    }

    /// Open a shard whose index the caller already holds (no read).
    pub fn with_index(layout: Arc<ShardLayout>, io: I, index: Option<ShardIndex>) -> Self {
        ShardReader {
            layout,
            io,
            index,
            object_size: None,
        }
    }

    /// Size of the shard object, when the back end reported it while the index was read.
    pub fn object_size(&self) -> Option<u64> {
        self.object_size
    }

    pub fn layout(&self) -> &Arc<ShardLayout> {
        &self.layout
    }

    /// The loaded index; `None` when the shard object does not exist.
    pub fn index(&self) -> Option<&ShardIndex> {
        self.index.as_ref()
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
                "index entry (offset {}, nbytes {}) points past the end of the object ({} bytes read)",
                loc.offset,
                loc.nbytes,
                out.data.len()
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
                let fill = &self.layout.inner_repr().fill_value.0;
                for e in out.chunks_exact_mut(fill.len()) {
                    e.copy_from_slice(fill);
                }
                Ok(())
            }
        }
    }

    /// Decode inner chunk `coords` into a new buffer.
    pub fn read_chunk(&self, coords: &[u64]) -> Result<Vec<u8>> {
        let mut out = vec![0u8; self.layout.inner_byte_size()];
        self.read_chunk_into(coords, &mut out)?;
        Ok(out)
    }
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
        return Err(Error::corrupt(format!(
            "object of {} bytes is shorter than its {n}-byte index",
            out.data.len()
        )));
    }
    let index = ShardIndex::decode(&out.data, layout, out.object_size)?;
    Ok(Some((index, out.object_size)))
}

/// Read and decode a whole shard in one read of the object. `Ok(None)` when the object does
/// not exist. The result is the decoded shard (C order, native byte order).
pub fn read_whole_shard(layout: &ShardLayout, io: &dyn ShardIo) -> Result<Option<Vec<u8>>> {
    let Some(out) = io.read(ByteRange::FromStart(0, None))? else {
        return Ok(None);
    };
    let mut shard = vec![0u8; layout.shard_repr().byte_size()? as usize];
    layout.decode_shard_into(&out.data, &mut shard)?;
    Ok(Some(shard))
}
