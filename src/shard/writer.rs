//! Writing one shard object, with the strategies the sharding spec describes.
//!
//! * [`WriteStrategy::Buffered`]: inner chunks arrive in any order and are kept encoded in memory;
//!   `finalize` lays them out in C or Morton order and writes chunks + index with one `put`.
//!   For converters writing whole arrays. Memory: the encoded shard.
//! * [`WriteStrategy::Streaming`]: each chunk is encoded and written as soon as it is given, at the
//!   next free offset (after space reserved for the index when it is at the start); the index
//!   is written at `finalize`. For acquisition rigs. Memory: the index plus the chunk in hand
//!   (zarrs and zarr-python hold the whole shard).
//! * [`WriteStrategy::Update`]: reads an existing shard's index (one read), then replaces, adds or
//!   erases chunks and writes a new index. [`UpdateMode::AppendOnly`] puts new chunks and the
//!   new index after the old object, so with the index at the end no old byte is overwritten
//!   and the previous index stays in the object (after a torn update, [`crate::shard::repair`]
//!   cuts the object back to it when the index has a crc32c); with the index at the start the index is rewritten in
//!   place. [`UpdateMode::InPlace`] rewrites a chunk where its new encoding fits in the
//!   old slot (always, for uncompressed fixed-size chunks) and appends otherwise, over the old
//!   index. Both leave dead bytes; [`compact`] removes them. The index read at the start is
//!   checked against the object's size (every entry inside the object, none over the index),
//!   so a stale size from the back end cannot make new chunks land on stored ones; an in-place
//!   update never rewrites a slot that another entry shares. When an append-only update fails
//!   before its new index is written (a failed write, or [`ShardWriter::discard`]), the
//!   object is cut back to its old size where the back end can truncate: the previous shard
//!   reads exactly as before.
//!
//! Inner chunks equal to the fill value are not stored unless
//! [`WriteOptions::store_fill_chunks`] says so, and a shard left with no stored chunk is
//! deleted at `finalize`, never written as an empty shard.
//!
//! A writer needs exclusive use (`&mut self`). Crash safety for buffered writes comes from
//! [`ShardIo::put`] (the file back end writes a temporary and renames it); for streaming and
//! update, have the back end write to a temporary object and commit it after `finalize`, as
//! [`crate::Array::write_shard_with`] does where the back end has an
//! [`ShardIo::object_sink`]. A writer given a [`crate::FileIo`] itself writes into the file:
//! killed part way, a streaming or in-place write leaves a torn shard (an append-only one is
//! recoverable by [`crate::shard::repair`]), and two such writers of one file corrupt it.

use crate::codec::sharding::index::{ChunkLocation, ShardIndex};
use crate::codec::sharding::{IndexLocation, ShardLayout};
use crate::error::{Error, Result};
use crate::nd;
use crate::shard::encoded::EncodedChunks;
use crate::shard::reader::load_index;
use crate::storage::io::ShardIo;
use std::sync::Arc;

/// Order of inner chunks in a buffered shard (the index is always C order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChunkOrder {
    /// Row-major order of the inner chunk grid, as tensorstore and zarrs write.
    #[default]
    C,
    /// Compressed Morton order, as zarr-python writes.
    Morton,
}

/// How an update places rewritten chunks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UpdateMode {
    /// Append new chunks and a new index after the existing object (the index at the start is
    /// rewritten in place).
    #[default]
    AppendOnly,
    /// Overwrite a chunk in place when the new encoding fits; otherwise append (over the old
    /// index, when it is at the end).
    InPlace,
}

/// Which writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStrategy {
    /// Holds the shard's chunks until `finalize`, then writes the object once (any order).
    Buffered,
    /// Writes each chunk as soon as it is given, at the next free offset; memory is the index
    /// and the chunk in hand.
    Streaming,
    /// Changes an existing shard (see [`UpdateMode`]).
    Update(UpdateMode),
}

/// Runtime write options (never part of the metadata, as the spec requires).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    /// Layout order for buffered writes.
    pub order: ChunkOrder,
    /// Store inner chunks that equal the fill value (default: leave them empty).
    pub store_fill_chunks: bool,
}

/// What `finalize` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finalized {
    /// The shard object now has this many bytes.
    Written {
        /// The object's size in bytes.
        size: u64,
    },
    /// No inner chunk was stored, so the object was deleted (or never created).
    Deleted,
}

enum Mode {
    Buffered {
        chunks: EncodedChunks,
    },
    /// Streaming and update both write chunks at `next`, the next free offset.
    Positional {
        next: u64,
        in_place: bool,
    },
}

/// Writes inner chunks into one shard object. A writer dropped without
/// [`ShardWriter::finalize`] leaves in the object whatever it wrote; [`ShardWriter::discard`]
/// cuts an append-only update back to the previous shard instead (the C API's `shard_close`
/// calls it).
pub struct ShardWriter<I: ShardIo> {
    layout: Arc<ShardLayout>,
    io: I,
    options: WriteOptions,
    index: ShardIndex,
    mode: Mode,
    /// True once anything was written to `io` (streaming and update).
    touched: bool,
    state: WriterState,
    /// Append-only update: the object's size before it (`None`: there was no object), to cut
    /// the object back to when the update fails before its new index is written.
    restore: Option<Option<u64>>,
    /// In-place update: the chunks whose stored bytes overlap another entry's (never
    /// rewritten in place). Empty otherwise.
    shared: Vec<bool>,
    /// Streaming and update: the buffer each chunk is encoded into before it is written.
    scratch: Vec<u8>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum WriterState {
    Open,
    Finalized,
    /// A write or `finalize` failed part way: the object is incomplete.
    Failed,
}

/// The linear numbers of a shard's inner chunks in the order a buffered write lays them out.
pub(crate) fn file_order(layout: &ShardLayout, order: ChunkOrder) -> Vec<u64> {
    match order {
        ChunkOrder::C => (0..layout.num_chunks() as u64).collect(),
        ChunkOrder::Morton => nd::morton_order(layout.chunks_per_shard()),
    }
}

/// Finalize a shard with no stored chunk: delete its object. A back end that cannot delete is
/// fine when there is nothing to delete (`touched`: this write wrote some of the object).
pub(crate) fn delete_unstored<I: ShardIo + ?Sized>(io: &I, touched: bool) -> Result<Finalized> {
    match io.delete() {
        Err(Error::Unsupported(_)) if !touched && matches!(io.size(), Ok(None)) => {}
        other => other?,
    }
    Ok(Finalized::Deleted)
}

/// The index entry of a chunk a buffered writer holds: stored, `nbytes` long; its offset is
/// assigned at finalize.
fn buffered(nbytes: usize) -> Option<ChunkLocation> {
    Some(ChunkLocation {
        offset: 0,
        nbytes: nbytes as u64,
    })
}

impl<I: ShardIo> ShardWriter<I> {
    /// Start a shard with `strategy`. Buffered and streaming start empty (an existing object is
    /// replaced at `finalize`); update reads the existing index first (one read, plus a
    /// `size` call when the read did not report the size).
    ///
    /// Errors (update only): [`Error::Io`] and [`Error::Unsupported`] from the back end;
    /// [`Error::Corrupt`] / [`Error::ChecksumMismatch`] for an index that does not decode or
    /// does not fit the object's size.
    pub fn new(
        layout: Arc<ShardLayout>,
        io: I,
        strategy: WriteStrategy,
        options: WriteOptions,
    ) -> Result<Self> {
        let n = layout.num_chunks();
        let start = match layout.codec().index_location {
            IndexLocation::Start => layout.index_size(),
            IndexLocation::End => 0,
        };
        let mut restore = None;
        let mut shared = Vec::new();
        let (index, mode) = match strategy {
            WriteStrategy::Buffered => (
                ShardIndex::new_empty(n),
                Mode::Buffered {
                    chunks: EncodedChunks::new(n),
                },
            ),
            WriteStrategy::Streaming => (
                ShardIndex::new_empty(n),
                Mode::Positional {
                    next: start,
                    in_place: false,
                },
            ),
            WriteStrategy::Update(update) => match load_index(&layout, &io)? {
                None => {
                    restore = Some(None);
                    (
                        ShardIndex::new_empty(n),
                        Mode::Positional {
                            next: start,
                            in_place: false,
                        },
                    )
                }
                Some((index, reported)) => {
                    let size = match reported {
                        Some(s) => s,
                        None => io.size()?.ok_or_else(|| {
                            Error::corrupt("the shard object disappeared after its index was read")
                        })?,
                    };
                    // New chunks go at the end of the object, so its size must agree with the
                    // index: a size taken from a second call (or a host that reports a stale
                    // one) is checked as the reader checks a size reported with the index, or
                    // an append would land on stored chunks.
                    if size < layout.index_size() {
                        return Err(Error::corrupt(format!(
                            "the object's reported size ({size} bytes) is smaller than its \
                             {}-byte index",
                            layout.index_size()
                        )));
                    }
                    if reported.is_none() {
                        index.validate(&layout, Some(size))?;
                    }
                    let in_place = update == UpdateMode::InPlace;
                    if in_place {
                        shared = shared_slots(&index);
                    } else {
                        restore = Some(Some(size));
                    }
                    // In place with the index at the end, appended chunks reuse the old index's
                    // bytes; append-only never writes before the old end.
                    let next = match (in_place, layout.codec().index_location) {
                        (true, IndexLocation::End) => size - layout.index_size(),
                        _ => size,
                    };
                    (index, Mode::Positional { next, in_place })
                }
            },
        };
        Ok(ShardWriter {
            layout,
            io,
            options,
            index,
            mode,
            touched: false,
            state: WriterState::Open,
            restore,
            shared,
            scratch: Vec::new(),
        })
    }

    /// The shard layout this writer encodes with.
    pub fn layout(&self) -> &Arc<ShardLayout> {
        &self.layout
    }

    /// The I/O back end.
    pub fn io(&self) -> &I {
        &self.io
    }

    /// The index as it stands (entries of chunks written so far; buffered offsets are assigned
    /// at `finalize`).
    pub fn index(&self) -> &ShardIndex {
        &self.index
    }

    /// Decode inner chunk `coords` as the shard stands now (what an update found, plus what
    /// was written since) into `out` (C order, native byte order); the fill value when it is
    /// empty. For read-modify-write of a part of a chunk. One read in update and streaming
    /// modes; buffered chunks are decoded from memory.
    pub fn read_chunk_into(&self, coords: &[u64], out: &mut [u8]) -> Result<()> {
        crate::codec::check_len(out.len(), self.layout.inner_byte_size() as u64)?;
        let i = self.layout.linear_index(coords)?;
        let Some(loc) = self.index.get(i) else {
            self.layout.inner_repr().fill_value.fill(out);
            return Ok(());
        };
        let bytes = match &self.mode {
            Mode::Buffered { chunks } => {
                return self
                    .layout
                    .decode_chunk_into(i, chunks.get(i).unwrap_or_default(), out)
            }
            Mode::Positional { .. } => {
                let got = self
                    .io
                    .read(crate::storage::io::ByteRange::FromStart(
                        loc.offset,
                        Some(loc.nbytes),
                    ))?
                    .map(|o| o.data)
                    .unwrap_or_default();
                if got.len() as u64 != loc.nbytes {
                    // Worded as the reader words it: a short object is a torn write.
                    return Err(Error::corrupt(format!(
                        "index entry (offset {}, nbytes {}) points past the end: {}",
                        loc.offset,
                        loc.nbytes,
                        crate::error::truncated_read(loc.offset, got.len() as u64, loc.end())
                    ))
                    .at_chunk(coords));
                }
                got
            }
        };
        self.layout.decode_chunk_into(i, &bytes, out)
    }

    /// Give up a writer that will not be finalized (after an error of the caller's own, say).
    /// An append-only update that wrote anything cuts the object back to its size before the
    /// update (or removes an object it created), so the previous shard reads exactly as
    /// before; `Ok(true)` when that was done or nothing had been written. `Ok(false)` when the
    /// object cannot be restored: another strategy (streaming and in-place updates overwrite
    /// bytes), or a back end without `truncate`/`delete`. Later calls on this writer fail
    /// with [`Error::InvalidState`]. Errors: [`Error::Io`] from the back end.
    pub fn discard(&mut self) -> Result<bool> {
        if self.state == WriterState::Finalized {
            return Err(Error::InvalidState(
                "the shard writer was already finalized".into(),
            ));
        }
        self.state = WriterState::Failed;
        if !self.touched {
            return Ok(true);
        }
        let Some(old) = self.restore else {
            return Ok(false);
        };
        let done = match old {
            Some(len) => self.io.truncate(len),
            None => self.io.delete(),
        };
        match done {
            Ok(()) => {
                self.touched = false;
                Ok(true)
            }
            Err(Error::Unsupported(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// [`ShardWriter::discard`] after a failure of this writer's own: best effort, the
    /// failure being reported is the first one.
    fn roll_back(&mut self) {
        let _ = self.discard();
    }

    fn check_open(&self) -> Result<()> {
        match self.state {
            WriterState::Open => Ok(()),
            WriterState::Finalized => Err(Error::InvalidState("the shard writer was already finalized".into())),
            WriterState::Failed => Err(Error::InvalidState(
                "a previous write failed; the object is incomplete (close the writer and discard it)".into(),
            )),
        }
    }

    /// Encode and write inner chunk `coords` (`data`: C order, native byte order, the inner
    /// chunk's decoded size). A chunk equal to the fill value is erased instead, unless
    /// `store_fill_chunks` is set. No allocation per chunk: streaming and update writers
    /// encode into one buffer reused from chunk to chunk, the buffered writer appends each
    /// chunk to segments it holds until `finalize` ([`crate::shard::encoded`]).
    pub fn write_chunk(&mut self, coords: &[u64], data: &[u8]) -> Result<()> {
        self.check_open()?;
        let i = self.layout.linear_index(coords)?;
        crate::codec::check_len(data.len(), self.layout.inner_byte_size() as u64)?;
        if !self.options.store_fill_chunks && self.layout.is_fill(data) {
            self.erase_index(i);
            return Ok(());
        }
        let (codecs, repr) = (&self.layout.codec().codecs, self.layout.inner_repr());
        if let Mode::Buffered { chunks } = &mut self.mode {
            let nbytes = chunks.put_with(i, |out| codecs.encode_to(data, repr, out))?;
            self.index.set(i, buffered(nbytes));
            return Ok(());
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        let written = codecs
            .encode_to(data, repr, &mut scratch)
            .and_then(|n| self.put_positional(i, &scratch[..n]));
        self.scratch = scratch;
        written
    }

    /// Write inner chunk `coords` from already-encoded bytes (copying between shards without
    /// recompressing). The bytes are stored as given.
    pub fn write_chunk_raw(&mut self, coords: &[u64], encoded: &[u8]) -> Result<()> {
        self.check_open()?;
        let i = self.layout.linear_index(coords)?;
        match self.mode {
            Mode::Buffered { .. } => self.put_encoded(i, encoded.to_vec()),
            Mode::Positional { .. } => self.put_positional(i, encoded),
        }
    }

    /// [`ShardWriter::write_chunk_raw`] taking the bytes by value (no copy).
    pub fn write_chunk_encoded(&mut self, coords: &[u64], encoded: Vec<u8>) -> Result<()> {
        self.check_open()?;
        let i = self.layout.linear_index(coords)?;
        self.put_encoded(i, encoded)
    }

    /// Store every chunk `encoded` holds (from [`ShardLayout::encode_chunks`], or a
    /// `Vec<Option<Vec<u8>>>` by linear chunk number) and finalize. The buffered writer takes
    /// the chunks over as they are (no copy).
    ///
    /// Errors: [`Error::InvalidArgument`] when `encoded` does not have one position per inner
    /// chunk (nothing is written); those of [`ShardWriter::finalize`] and, streaming or
    /// updating, of each chunk's write.
    pub fn finish_with(mut self, encoded: impl Into<EncodedChunks>) -> Result<Finalized> {
        let encoded = encoded.into();
        self.check_open()?;
        if encoded.len() != self.layout.num_chunks() {
            return Err(Error::InvalidArgument(format!(
                "{} encoded chunk positions for a shard of {} inner chunks",
                encoded.len(),
                self.layout.num_chunks()
            )));
        }
        match &mut self.mode {
            Mode::Buffered { chunks } => {
                for (i, c) in encoded.stored() {
                    self.index.set(i, buffered(c.len()));
                }
                chunks.absorb(encoded);
            }
            Mode::Positional { .. } => {
                for (i, c) in encoded.stored() {
                    self.put_positional(i, c)?;
                }
            }
        }
        self.finalize()
    }

    /// Mark inner chunk `coords` empty (it reads as the fill value).
    pub fn erase_chunk(&mut self, coords: &[u64]) -> Result<()> {
        self.check_open()?;
        let i = self.layout.linear_index(coords)?;
        self.erase_index(i);
        Ok(())
    }

    fn erase_index(&mut self, i: usize) {
        self.index.set(i, None);
        if let Mode::Buffered { chunks } = &mut self.mode {
            chunks.clear(i);
        }
    }

    fn put_encoded(&mut self, i: usize, encoded: Vec<u8>) -> Result<()> {
        let Mode::Buffered { chunks } = &mut self.mode else {
            return self.put_positional(i, &encoded);
        };
        self.index.set(i, buffered(encoded.len()));
        chunks.set(i, encoded);
        Ok(())
    }

    /// Streaming and update: write chunk `i` at its place (see [`Mode::Positional`]).
    fn put_positional(&mut self, i: usize, encoded: &[u8]) -> Result<()> {
        let len = encoded.len() as u64;
        let Mode::Positional { next, in_place } = &mut self.mode else {
            return Err(Error::InvalidState(
                "a buffered writer writes no chunk in place".into(),
            ));
        };
        // A slot shared with another entry (validation accepts overlapping entries) is never
        // rewritten: that would change the other chunk too.
        let offset = match self.index.get(i) {
            Some(old)
                if *in_place
                    && old.nbytes >= len
                    && !self.shared.get(i).copied().unwrap_or(false) =>
            {
                old.offset
            }
            _ => {
                let at = *next;
                *next = at
                    .checked_add(len)
                    .ok_or_else(|| Error::InvalidArgument("shard exceeds 2^64 bytes".into()))?;
                at
            }
        };
        self.touched = true;
        if let Err(e) = self.io.write_at(offset, encoded) {
            // The object now holds a partial chunk; finishing it would hide that. An
            // append-only update cuts it back to the previous shard when it can.
            self.state = WriterState::Failed;
            self.roll_back();
            return Err(e);
        }
        self.index.set(
            i,
            Some(ChunkLocation {
                offset,
                nbytes: len,
            }),
        );
        Ok(())
    }

    /// Write the index (and, buffered, the chunks), or delete the object when nothing is
    /// stored. Later calls on this writer fail with [`Error::InvalidState`].
    ///
    /// Errors: [`Error::InvalidState`] (finalized before, or an earlier write failed);
    /// [`Error::InvalidArgument`] when the shard would end past byte 2^64 (nothing written);
    /// [`Error::Unsupported`] when the back end cannot truncate a longer old object (buffered:
    /// refused before writing) or cannot delete; [`Error::Io`] from the back end.
    pub fn finalize(&mut self) -> Result<Finalized> {
        self.check_open()?;
        // Whatever happens below, this writer is done: success or a known-bad object.
        self.state = WriterState::Failed;
        let done = self.finish()?;
        self.state = WriterState::Finalized;
        Ok(done)
    }

    fn finish(&mut self) -> Result<Finalized> {
        if self.index.stored().next().is_none() {
            return delete_unstored(&self.io, self.touched);
        }
        let layout = self.layout.clone();
        let layout = &*layout;
        let index_size = layout.index_size();
        match &mut self.mode {
            Mode::Buffered { chunks } => {
                let order = file_order(layout, self.options.order);
                let at_start = layout.codec().index_location == IndexLocation::Start;
                // The object is handed over as parts (chunks in order, the index first or
                // last): never assembled into one buffer here.
                let mut end = if at_start { index_size } else { 0 };
                let mut body: Vec<&[u8]> = Vec::with_capacity(chunks.len() + 1);
                for i in order {
                    if let Some(c) = chunks.get(i as usize) {
                        let loc = ChunkLocation {
                            offset: end,
                            nbytes: c.len() as u64,
                        };
                        self.index.set(i as usize, Some(loc));
                        body.push(c);
                        end += c.len() as u64;
                    }
                }
                let index = self.index.encode(layout)?;
                if at_start {
                    body.insert(0, &index);
                } else {
                    body.push(&index);
                    end += index.len() as u64;
                }
                self.io.put_parts(&body)?;
                // Their memory goes back for the next shard.
                *chunks = EncodedChunks::new(0);
                Ok(Finalized::Written { size: end })
            }
            Mode::Positional { next, .. } => {
                let next = *next;
                let before_index = |w: &mut Self, e: Error| {
                    w.roll_back();
                    Err(e)
                };
                let index = match self.index.encode(layout) {
                    Ok(index) => index,
                    Err(e) => return before_index(self, e),
                };
                let (at, end) = match layout.codec().index_location {
                    IndexLocation::Start => (0, next.max(index_size)),
                    IndexLocation::End => match next.checked_add(index_size) {
                        Some(end) => (next, end),
                        None => {
                            let e = Error::InvalidArgument(format!(
                                "shard exceeds 2^64 bytes (the index would end past byte {next} + {index_size})"
                            ));
                            return before_index(self, e);
                        }
                    },
                };
                if let Err(e) = self.io.write_at(at, &index) {
                    // An index at the end went after the old object too, so cutting back
                    // still restores it; one at the start was partly overwritten.
                    if layout.codec().index_location == IndexLocation::End {
                        self.roll_back();
                    }
                    return Err(e);
                }
                // Cut off whatever an earlier, longer object left after the new end, or refuse
                // when that is not possible (the capi_sequence fuzz target found this ignored).
                crate::storage::io::end_object_at(&self.io, end)?;
                Ok(Finalized::Written { size: end })
            }
        }
    }
}

/// For each entry of `index`, whether its stored bytes overlap another entry's (empty and
/// zero-length entries overlap nothing).
fn shared_slots(index: &ShardIndex) -> Vec<bool> {
    let mut shared = vec![false; index.len()];
    let mut spans: Vec<(u64, u64, usize)> = index
        .stored()
        .filter(|(_, loc)| loc.nbytes > 0)
        .map(|(i, loc)| (loc.offset, loc.end(), i))
        .collect();
    spans.sort_unstable();
    // Sorted by offset: an entry overlaps an earlier one when it starts before the furthest
    // end so far, and a later one when the next entry starts before its own end.
    let mut furthest = 0u64;
    for k in 0..spans.len() {
        let (offset, end, i) = spans[k];
        if k > 0 && offset < furthest {
            shared[i] = true;
        }
        if spans.get(k + 1).is_some_and(|next| next.0 < end) {
            shared[i] = true;
        }
        furthest = furthest.max(end);
    }
    shared
}

/// Rewrite a shard without dead bytes: chunks copied as stored (no re-encoding), in `order`,
/// index at its configured location, one read and one `put`. Returns the sizes before and
/// after, or `None` when the object does not exist.
pub fn compact(
    layout: &ShardLayout,
    io: &dyn ShardIo,
    order: ChunkOrder,
) -> Result<Option<(u64, u64)>> {
    let Some(out) = io.read(crate::storage::io::ByteRange::FromStart(0, None))? else {
        return Ok(None);
    };
    let object = out.data;
    let index = layout.decode_index(&object)?;
    let mut writer = ShardWriter::new(
        Arc::new(layout.clone()),
        io,
        WriteStrategy::Buffered,
        WriteOptions {
            order,
            store_fill_chunks: true,
        },
    )?;
    for (i, loc) in index.stored() {
        let coords = nd::unravel(i as u64, layout.chunks_per_shard());
        writer.write_chunk_raw(&coords, &object[loc.offset as usize..loc.end() as usize])?;
    }
    let after = match writer.finalize()? {
        Finalized::Written { size } => size,
        Finalized::Deleted => 0,
    };
    Ok(Some((object.len() as u64, after)))
}
