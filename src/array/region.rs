//! Reading and writing any hyper-rectangle ("region") of an array, across shards and inner
//! chunks.
//!
//! **Reads** fetch only what the region needs: per shard one index read, then the byte ranges
//! of the inner chunks the region touches, coalesced ([`crate::ShardReader::fetch_chunks`]: runs
//! closer than the coalescing gap are one read, the whole span when most of it is wanted).
//! The touched shards are taken in passes (C order) of at most [`PASS_BYTES`] of inner chunks
//! (decoded size), `PASS_SHARDS` shards and `PASS_CHUNKS` chunks, so memory beyond the
//! caller's buffer is one pass's fetched bytes and bookkeeping, whatever the region's size.
//! A pass fetches its shards in parallel, then decodes every (shard, inner chunk) of it as one
//! item of a parallel loop, each writing its part of the caller's buffer
//! (`nd::DisjointOut`: the parts are disjoint, claimed once each). So the work has
//! as many pieces as the pass has chunks whatever the array's shape: a 3-D array with four
//! shards along its first axis keeps sixteen threads busy. A read of a few inner chunks runs
//! on the calling thread, without the pool. Where nothing is stored the output holds the fill
//! value.
//!
//! **Writes** do the minimum read-modify-write: a shard the region covers entirely is encoded
//! and written whole without reading it; otherwise an update writer
//! ([`WriteStrategy::Update`]) reads the shard's index, and of its inner chunks reads only
//! those the region covers partly, encodes the touched chunks and writes them and a new index;
//! chunks the region does not touch are neither read nor rewritten. Over an object store that
//! cannot write at an offset ([`crate::ShardIo::writes_in_place`] false, with new objects) the
//! update is applied to a copy of the old object in memory, compacted (no dead bytes), and the
//! result written whole as a new object, which replaces the old one only when complete.
//!
//! Arrays whose shards cannot be read partially (a bytes→bytes codec after
//! `sharding_indexed`, or no sharding) and arrays with array→array codecs before sharding
//! (`transpose`, whose inner chunks live in the transformed space) are read and written a
//! whole shard at a time.
//!
//! Where we differ: zarrs and tensorstore offer region access too (zarrs'
//! `retrieve_array_subset`, tensorstore's indexing); zarrs decodes each touched inner chunk
//! into an intermediate array and copies it serially per shard; here the copy is split
//! across the pool, and the byte ranges of one shard are fetched with one vectored call.

use crate::array::update_on_copy;
use crate::array::Array;
use crate::codec::check_len;
use crate::error::{shown, Error, Result};
use crate::nd;
use crate::runtime::threads;
use crate::shard::reader::FetchedChunks;
use crate::shard::writer::{
    compact, delete_unstored, Finalized, ShardWriter, UpdateMode, WriteOptions, WriteStrategy,
};
use crate::storage::io::ShardIo;
use crate::storage::store::Store;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The read's spare fetch buffers.
fn lock(m: &Mutex<Vec<Vec<u8>>>) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The most decoded bytes of the inner chunks one pass of a read covers (more only when one
/// shard alone does): the bound on what a read fetches and holds at a time besides the
/// caller's buffer, since encoded chunks are rarely larger than decoded ones. Large enough that
/// a pass has hundreds of inner chunks for the threads of a many-core machine, small beside
/// the regions that need several passes.
pub const PASS_BYTES: u64 = 64 << 20;

/// A read that touches at most this many inner chunks runs on the calling thread: handing it
/// to the pool would cost more than the work.
const SMALL_READ_CHUNKS: usize = 4;

impl<S: Store> Array<S> {
    /// Read the region of extent `shape` at `start` (array coordinates) into `out`: C order,
    /// native byte order, `shape.product() × element size` bytes. The fill value where
    /// nothing is stored.
    ///
    /// Memory beyond `out`: one pass of at most [`PASS_BYTES`] of inner chunks (decoded
    /// size), 1024 shards and 65 536 inner chunks at a time (their fetched bytes and a few
    /// hundred bytes of bookkeeping each), one decoded inner chunk per thread, and one bit per
    /// inner chunk the region touches; nothing is kept after the call. A single shard whose
    /// touched chunks need more bookkeeping (48 bytes each) than the memory limit is
    /// [`Error::MemoryLimit`], before any read.
    ///
    /// Errors: [`Error::InvalidArgument`] when the region's rank differs from the array's or it
    /// reaches past the array, or its byte size overflows 64 bits; [`Error::BufferSize`] when
    /// `out` has the wrong length (both checked, in that order, before the store is touched);
    /// [`Error::MemoryLimit`] as above; and whatever reading and decoding the shards reports
    /// (corruption names shard and chunk). Safe to call from many threads at once.
    pub fn read_region(&self, start: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        self.read_region_in(start, shape, out, None)
    }

    /// [`Array::read_region`]; with `listed` (the C-order positions of the stored shards,
    /// sorted, [`Array::shard_walk`]) only those shards are read and the rest of `out` is set
    /// to the fill value without asking the store.
    pub(crate) fn read_region_in(
        &self,
        start: &[u64],
        shape: &[u64],
        out: &mut [u8],
        listed: Option<&[u64]>,
    ) -> Result<()> {
        self.read_stored_region(start, shape, out, listed)?;
        // Frames appended and not yet written (`Array::append`) are read from memory.
        self.read_pending(start, shape, out);
        Ok(())
    }

    /// [`Array::read_region_in`] of what the store holds. A read that fails on a shard whose
    /// index came from the cache of indexes (which may predate another writer's) empties the
    /// cache and is done once more with indexes read afresh ([`Array::set_index_cache`]).
    fn read_stored_region(
        &self,
        start: &[u64],
        shape: &[u64],
        out: &mut [u8],
        listed: Option<&[u64]>,
    ) -> Result<()> {
        let stale = AtomicBool::new(false);
        match self.read_stored_region_once(start, shape, out, listed, &stale) {
            Err(_) if stale.load(Ordering::Relaxed) => {
                self.forget_cached_indexes();
                self.read_stored_region_once(start, shape, out, listed, &AtomicBool::new(false))
            }
            done => done,
        }
    }

    /// [`Array::read_stored_region`] once, setting `stale` when a shard whose index came from
    /// the cache fails.
    fn read_stored_region_once(
        &self,
        start: &[u64],
        shape: &[u64],
        out: &mut [u8],
        listed: Option<&[u64]>,
        stale: &AtomicBool,
    ) -> Result<()> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        check_region(&meta.shape, start, shape)?;
        check_len(out.len(), region_bytes(shape, elem)?)?;
        if shape.contains(&0) {
            return Ok(());
        }
        if !self.partial_regions() {
            return self.read_region_by_shards(start, shape, out, listed);
        }
        if listed.is_some() {
            meta.fill_value.fill(out);
        }
        let layout = Arc::new(meta.shard_layout().expect("sharded"));
        let inner = layout.codec().chunk_shape.clone();
        let chunk_bytes = layout.inner_byte_size() as u64;
        let cs = &meta.chunk_shape;
        let grid = meta.grid_shape();
        let cps = layout.chunks_per_shard();
        // The inner chunks of a shard the region touches (per dimension, in the shard).
        let local_of = |g: &[u64]| {
            let origin = nd::mul(g, cs);
            let (bs, be) = nd::intersect(start, shape, &origin, cs);
            cells(&nd::sub(&bs, &origin), &be, &inner)
        };
        let out = nd::DisjointOut::new(out, start, shape, &inner, elem);
        // One decoded inner chunk of scratch per thread taking part, copied from this one.
        let filled = layout.inner_repr().filled()?;
        // Fetch buffers go back here after each pass and are taken by the next one's shards,
        // so a read of many passes maps its memory once; all are freed when the call returns.
        let spare: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());
        let shard_ranges = cells(start, shape, cs);
        let mut shards = touched(&shard_ranges, &grid, listed).peekable();
        while shards.peek().is_some() {
            let pass = next_pass(&mut shards, |g| cell_count(&local_of(g)), chunk_bytes)?;
            let locals: Vec<Vec<(u64, u64)>> = pass.iter().map(|g| local_of(g)).collect();
            // `ends[s]`: the pass's chunks up to and including shard `s`'s.
            let ends: Vec<usize> = locals
                .iter()
                .scan(0usize, |n, l| {
                    *n += cell_count(l) as usize;
                    Some(*n)
                })
                .collect();
            let total = ends.last().copied().unwrap_or(0);
            // A read of a few inner chunks stays on the calling thread: handing it to the pool
            // would cost more than the work.
            let here = shards.peek().is_none() && total <= SMALL_READ_CHUNKS;
            // Phase 1: each shard's index, then its wanted chunks' bytes, shards in parallel.
            let fetch = |s: usize| -> Result<(Option<FetchedChunks>, bool)> {
                let (reader, cached) = self.cached_shard_reader(&pass[s])?;
                if reader.index().is_none() {
                    return Ok((None, false));
                }
                let mut indices = Vec::with_capacity(cell_count(&locals[s]) as usize);
                each_cell(&locals[s], |c| {
                    indices.push(nd::ravel(c, cps) as usize);
                    Ok(())
                })?;
                let mut bufs: Vec<Vec<u8>> = lock(&spare).pop().into_iter().collect();
                let fetched = reader.fetch_chunks_reusing(&indices, &mut bufs);
                lock(&spare).append(&mut bufs);
                if fetched.is_err() && cached {
                    stale.store(true, Ordering::Relaxed);
                }
                Ok((
                    Some(fetched.map_err(|e| e.in_shard(&self.shard_key(&pass[s])))?),
                    cached,
                ))
            };
            let fetched: Vec<(Option<FetchedChunks>, bool)> =
                match here || self.store().io_on_caller_thread() {
                    true => (0..pass.len()).map(fetch).collect::<Result<_>>()?,
                    false => threads::map(pass.len(), fetch)?,
                };
            let (fetched, cached): (Vec<Option<FetchedChunks>>, Vec<bool>) =
                fetched.into_iter().unzip();
            // Phase 2: every (shard, inner chunk) of the pass is one item, decoded straight
            // into its part of `out`; the pool splits the items into runs by work stealing, so
            // the pass keeps every thread busy whatever the region's shape.
            let decode = |chunk: &mut Vec<u8>, i: usize| -> Result<()> {
                let s = ends.partition_point(|&e| e <= i);
                let k = i - if s == 0 { 0 } else { ends[s - 1] };
                let extent: Vec<u64> = locals[s].iter().map(|(a, b)| b - a).collect();
                let mut cell = nd::unravel(k as u64, &extent);
                for d in 0..cell.len() {
                    cell[d] += pass[s][d] * cps[d] + locals[s][d].0;
                }
                let encoded = fetched[s].as_ref().and_then(|f| f.encoded(k));
                // Uncompressed native chunks are copied straight from the fetched bytes.
                let src: &[u8] = match (encoded, &fetched[s]) {
                    (Some(e), _) if layout.as_decoded(e).is_some() => e,
                    (_, Some(f)) => {
                        if let Err(e) = f.decode_into(k, chunk) {
                            if cached[s] {
                                stale.store(true, Ordering::Relaxed);
                            }
                            return Err(e.in_shard(&self.shard_key(&pass[s])));
                        }
                        chunk
                    }
                    (_, None) => {
                        layout.inner_repr().fill_value.fill(chunk);
                        chunk
                    }
                };
                out.put_chunk(&cell, src);
                #[cfg(test)]
                tests::decoded_here();
                Ok(())
            };
            match here {
                true => {
                    let mut chunk = filled.clone();
                    (0..total).try_for_each(|i| decode(&mut chunk, i))?
                }
                false => threads::for_each_init(total, || filled.clone(), decode)?,
            }
            let mut bufs = lock(&spare);
            bufs.extend(
                fetched
                    .into_iter()
                    .flatten()
                    .flat_map(FetchedChunks::into_buffers),
            );
            bufs.truncate(pass.len());
        }
        Ok(())
    }

    /// [`Array::read_region`] into a new buffer.
    pub fn read_region_vec(&self, start: &[u64], shape: &[u64]) -> Result<Vec<u8>> {
        let bytes = region_bytes(shape, self.metadata().data_type.size())?;
        let mut out = vec![0u8; crate::runtime::limits::buffer_len(bytes, "the region")?];
        self.read_region(start, shape, &mut out)?;
        Ok(out)
    }

    /// Write `data` (C order, native byte order, `shape.product() × element size` bytes) to
    /// the region of extent `shape` at `start`, appending rewritten chunks
    /// ([`UpdateMode::AppendOnly`]) and not storing chunks equal to the fill value.
    ///
    /// Memory: shards are written a pass of at most 1024 at a time (in parallel), each holding
    /// its encoded chunks and the decoded chunks the region covers partly; nothing is kept
    /// per shard or per chunk of the region as a whole.
    ///
    /// Not atomic across shards: each shard is written on its own (in parallel); on an error
    /// some shards may hold the new values and others the old. Within a shard the update
    /// strategy's guarantees hold: the chunks the region covers partly are read and decoded
    /// before anything is written, so a read or decode error (a corrupt chunk) leaves the
    /// shard as it was; an append-only update that fails while writing is cut back to the
    /// previous shard when the store can truncate. Not to be called concurrently with another write or a read
    /// of the same shards (the caller serialises; the C API refuses a second concurrent
    /// writer on one handle).
    pub fn write_region(&self, start: &[u64], shape: &[u64], data: &[u8]) -> Result<()> {
        self.write_region_with(
            start,
            shape,
            data,
            UpdateMode::AppendOnly,
            WriteOptions::default(),
        )
    }

    /// [`Array::write_region`] with the update mode for partly covered shards and the write
    /// options (chunk order of shards written whole, storing fill chunks).
    pub fn write_region_with(
        &self,
        start: &[u64],
        shape: &[u64],
        data: &[u8],
        mode: UpdateMode,
        options: WriteOptions,
    ) -> Result<()> {
        let meta = self.metadata();
        check_region(&meta.shape, start, shape)?;
        check_len(data.len(), region_bytes(shape, meta.data_type.size())?)?;
        if shape.contains(&0) {
            return Ok(());
        }
        // Over frames still pending (`Array::append`): they are written first, and the pending
        // layer takes the region's values too, so that its later whole write keeps them.
        let over_pending = self.pending_overlaps(start, shape);
        if over_pending {
            self.flush()?;
        }
        self.write_stored_region(start, shape, data, mode, options)?;
        if over_pending {
            self.write_pending(start, shape, data);
        }
        Ok(())
    }

    /// [`Array::write_region_with`] into the store, arguments checked.
    fn write_stored_region(
        &self,
        start: &[u64],
        shape: &[u64],
        data: &[u8],
        mode: UpdateMode,
        options: WriteOptions,
    ) -> Result<()> {
        let meta = self.metadata();
        // The shards are made as they are written, a pass of at most `PASS_SHARDS` at a time,
        // so the bookkeeping follows the pass, not the region's number of shards.
        let ranges = cells(start, shape, &meta.chunk_shape);
        let mut shards = boxes(&ranges);
        loop {
            let pass: Vec<Vec<u64>> = shards.by_ref().take(PASS_SHARDS).collect();
            if pass.is_empty() {
                return Ok(());
            }
            self.map_io(pass.len(), |s| {
                // A shard read back and merged names its key when its bytes do not decode.
                let key = self.shard_key(&pass[s]);
                self.forgetting(&key, || {
                    self.write_region_shard(&pass[s], start, shape, data, mode, options)
                })
                .map_err(|e| e.in_shard(&key))
            })?;
        }
    }

    /// `f(0..n)` where `f` does I/O and may start parallel work (whole shards): on the pool
    /// ([`threads::map_nested`]), or on this thread when the store's callbacks must run there
    /// (a host store not marked thread-safe).
    pub(crate) fn map_io<T: Send>(
        &self,
        n: usize,
        f: impl Fn(usize) -> Result<T> + Sync + Send,
    ) -> Result<Vec<T>> {
        if self.store().io_on_caller_thread() {
            (0..n).map(f).collect()
        } else {
            threads::map_nested(n, f)
        }
    }

    /// Partial regions: shards readable chunk by chunk and inner chunks in array space.
    pub(crate) fn partial_regions(&self) -> bool {
        let meta = self.metadata();
        meta.supports_partial_reads()
            && meta.codecs.array_to_array.is_empty()
            && !meta.shape.is_empty()
    }

    /// The region through whole decoded shards (see the module docs for when).
    fn read_region_by_shards(
        &self,
        start: &[u64],
        shape: &[u64],
        out: &mut [u8],
        listed: Option<&[u64]>,
    ) -> Result<()> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        let cs = &meta.chunk_shape;
        let grid = meta.grid_shape();
        meta.fill_value.fill(out);
        let ranges = cells(start, shape, cs);
        let mut shards = touched(&ranges, &grid, listed);
        // A few shards at a time: decoded shards are full size.
        let per_batch = threads::threads().max(1).saturating_mul(2);
        loop {
            let batch: Vec<Vec<u64>> = shards.by_ref().take(per_batch).collect();
            if batch.is_empty() {
                return Ok(());
            }
            let decoded = self.map_io(batch.len(), |k| self.read_shard(&batch[k]))?;
            for (g, shard) in batch.iter().zip(decoded) {
                let Some(shard) = shard else { continue };
                let origin = nd::mul(g, cs);
                let (bs, be) = nd::intersect(start, shape, &origin, cs);
                nd::copy_box(
                    &shard,
                    cs,
                    &nd::sub(&bs, &origin),
                    out,
                    shape,
                    &nd::sub(&bs, start),
                    &be,
                    elem,
                );
            }
        }
    }

    fn write_region_shard(
        &self,
        g: &[u64],
        start: &[u64],
        shape: &[u64],
        data: &[u8],
        mode: UpdateMode,
        options: WriteOptions,
    ) -> Result<()> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        let cs = &meta.chunk_shape;
        let origin = nd::mul(g, cs);
        let (bs, be) = nd::intersect(start, shape, &origin, cs);
        let whole = bs == origin && be == nd::in_array(&meta.shape, &origin, cs);
        if whole && self.partial_regions() {
            // Covered entirely: not read, its chunks cut straight out of `data`.
            self.write_shard_cut(g, data, shape, &nd::sub(&bs, start), &be, options)?;
            return Ok(());
        }
        if whole || !self.partial_regions() {
            // A shard covered entirely is not read.
            let old = if whole { None } else { self.read_shard(g)? };
            let mut shard = match old {
                Some(s) => s,
                None => meta.chunk_repr().filled()?,
            };
            check_len(shard.len(), region_bytes(cs, elem)?)?;
            nd::copy_box(
                data,
                shape,
                &nd::sub(&bs, start),
                &mut shard,
                cs,
                &nd::sub(&bs, &origin),
                &be,
                elem,
            );
            self.write_shard_with(g, &shard, WriteStrategy::Buffered, options)?;
            return Ok(());
        }
        let io = self.store().shard_io(&self.shard_key(g))?;
        let update = |io: &dyn ShardIo| {
            self.update_region_chunks(io, &origin, &bs, &be, start, shape, data, mode, options)
        };
        // An object store cannot write at an offset: the update is applied to a copy of the
        // old object and written whole, as a new object that replaces it only when complete.
        // Being written whole anyway, the copy is first compacted: the bytes the update left
        // dead (the old versions of the chunks it rewrote) would otherwise pile up in the
        // shard with every partial write.
        if !io.writes_in_place() && io.object_sink().is_some() {
            let layout = self.metadata().shard_layout().expect("sharded");
            let compacted = |copy: &dyn ShardIo| {
                let done = update(copy)?;
                if let Finalized::Written { .. } = done {
                    compact(&layout, copy, options.order)?;
                }
                Ok(done)
            };
            if update_on_copy(&*io, compacted)? == Finalized::Deleted {
                delete_unstored(&*io, false)?;
            }
            return Ok(());
        }
        update(&*io).map(|_| ())
    }

    /// The update of shard at `origin` (array coordinates) by the part `bs..be` of the region
    /// `start`/`shape` whose values are `data`, through `io` (the object, or a copy of it):
    /// the chunks the region covers partly are read, merged and written with the rest.
    #[allow(clippy::too_many_arguments)]
    fn update_region_chunks(
        &self,
        io: &dyn ShardIo,
        origin: &[u64],
        bs: &[u64],
        be: &[u64],
        start: &[u64],
        shape: &[u64],
        data: &[u8],
        mode: UpdateMode,
        options: WriteOptions,
    ) -> Result<Finalized> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        let layout = Arc::new(meta.shard_layout().expect("sharded"));
        let inner = layout.codec().chunk_shape.clone();
        let mut writer =
            ShardWriter::new(layout.clone(), io, WriteStrategy::Update(mode), options)?;
        // First read (and decode) every chunk the region covers partly, then write: a read
        // or decode that fails (a corrupt chunk, a store error) then fails before any byte is
        // written, and the shard stays exactly as it was. Memory: the partly covered chunks
        // (the chunks are walked twice rather than listed, so nothing is kept per chunk).
        let local_box = cells(&nd::sub(bs, origin), be, &inner);
        let rank = inner.len();
        let mut corigin = vec![0u64; rank];
        // The chunk at `local`: its origin into `corigin`, and whether the region covers it
        // only partly (the rest of a covered chunk that lies past the array's edge is the
        // fill value, so such a chunk counts as covered).
        let partly = |local: &[u64], corigin: &mut [u64]| {
            for d in 0..rank {
                corigin[d] = origin[d] + local[d] * inner[d];
            }
            let (cb, ce) = nd::intersect(bs, be, corigin, &inner);
            let part = !(cb == corigin && ce == nd::in_array(&meta.shape, corigin, &inner));
            (cb, ce, part)
        };
        let mut old = Vec::new();
        each_cell(&local_box, |local| {
            if partly(local, &mut corigin).2 {
                let mut chunk = layout.inner_repr().filled()?;
                writer.read_chunk_into(local, &mut chunk)?;
                old.push(chunk);
            }
            Ok(())
        })?;
        let written = (|| -> Result<Finalized> {
            let mut chunk = layout.inner_repr().filled()?;
            let mut old = old.into_iter();
            each_cell(&local_box, |local| {
                let (cb, ce, part) = partly(local, &mut corigin);
                match if part { old.next() } else { None } {
                    Some(old) => chunk.copy_from_slice(&old),
                    None => layout.inner_repr().fill_value.fill(&mut chunk),
                }
                nd::copy_box(
                    data,
                    shape,
                    &nd::sub(&cb, start),
                    &mut chunk,
                    &inner,
                    &nd::sub(&cb, &corigin),
                    &ce,
                    elem,
                );
                writer.write_chunk(local, &chunk)
            })?;
            writer.finalize()
        })();
        if written.is_err() {
            // An append-only update cuts what it appended off again (the writer does so itself
            // when a write or the index fails; this covers the rest, e.g. an encode error).
            let _ = writer.discard();
        }
        written
    }
}

/// The most shards one pass of a region read or write handles: their bookkeeping (a reader,
/// the fetched bytes, a few hundred bytes each besides) follows the pass, not the region.
const PASS_SHARDS: usize = 1024;

/// The most inner chunks one pass of a region read fetches (more only when one shard alone
/// has more): about [`CHUNK_BOOKKEEPING`] bytes each besides their bytes.
const PASS_CHUNKS: u64 = 1 << 16;

/// Bytes of bookkeeping a read keeps per inner chunk it fetches (its position in the request,
/// its location in the object), which [`next_pass`] holds to the memory limit for a shard
/// whose chunks alone pass [`PASS_CHUNKS`].
const CHUNK_BOOKKEEPING: u64 = 48;

/// The next pass of a region read: shards from `shards` (C order) while together they number
/// at most [`PASS_SHARDS`] and [`PASS_CHUNKS`] inner chunks (`chunks(shard)` each, of
/// `chunk_bytes` decoded), and keep the decoded bytes of the pass within [`PASS_BYTES`]; at
/// least one shard.
///
/// Errors: [`Error::MemoryLimit`] when one shard's chunks need more bookkeeping than the limit.
fn next_pass(
    shards: &mut std::iter::Peekable<impl Iterator<Item = Vec<u64>>>,
    chunks: impl Fn(&[u64]) -> u64,
    chunk_bytes: u64,
) -> Result<Vec<Vec<u64>>> {
    let mut pass: Vec<Vec<u64>> = Vec::new();
    let (mut total, mut bytes) = (0u64, 0u64);
    while let Some(g) = shards.peek() {
        let n = chunks(g);
        let b = n.saturating_mul(chunk_bytes);
        if !pass.is_empty() {
            if pass.len() >= PASS_SHARDS
                || total + n > PASS_CHUNKS
                || bytes.saturating_add(b) > PASS_BYTES
            {
                break;
            }
        } else if n > PASS_CHUNKS {
            crate::runtime::limits::buffer_len(
                n.saturating_mul(CHUNK_BOOKKEEPING),
                &format!(
                    "the bookkeeping of the {n} inner chunks the region touches in shard {}",
                    shown(g)
                ),
            )?;
        }
        total += n;
        bytes = bytes.saturating_add(b);
        pass.extend(shards.next());
    }
    Ok(pass)
}

/// The cells of `ranges` (a box of the chunk grid `grid`) in C order, made as they are asked
/// for; with `listed` (the C-order positions of the stored shards, sorted) only those listed.
fn touched<'a>(
    ranges: &'a [(u64, u64)],
    grid: &'a [u64],
    listed: Option<&'a [u64]>,
) -> Box<dyn Iterator<Item = Vec<u64>> + 'a> {
    let Some(listed) = listed else {
        return Box::new(boxes(ranges));
    };
    let first: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    let last: Vec<u64> = ranges.iter().map(|r| r.1 - 1).collect();
    let (lo, hi) = (nd::ravel(&first, grid), nd::ravel(&last, grid));
    let from = listed.partition_point(|&i| i < lo);
    let to = listed.partition_point(|&i| i <= hi);
    Box::new(listed[from..to].iter().filter_map(move |&i| {
        let c = nd::unravel(i, grid);
        let inside = c.iter().zip(ranges).all(|(x, (a, b))| (a..b).contains(&x));
        inside.then_some(c)
    }))
}

/// The number of cells in `ranges`.
fn cell_count(ranges: &[(u64, u64)]) -> u64 {
    ranges
        .iter()
        .fold(1u64, |n, (a, b)| n.saturating_mul(b - a))
}

/// `f(coords)` for every coordinate in `ranges`, C order, through one reused buffer; the
/// first error stops the walk.
fn each_cell(ranges: &[(u64, u64)], mut f: impl FnMut(&[u64]) -> Result<()>) -> Result<()> {
    if ranges.iter().any(|(a, b)| a >= b) {
        return Ok(());
    }
    let mut c: Vec<u64> = ranges.iter().map(|r| r.0).collect();
    loop {
        f(&c)?;
        let mut d = c.len();
        loop {
            if d == 0 {
                return Ok(());
            }
            d -= 1;
            c[d] += 1;
            if c[d] < ranges[d].1 {
                break;
            }
            c[d] = ranges[d].0;
        }
    }
}

fn check_region(array: &[u64], start: &[u64], shape: &[u64]) -> Result<()> {
    if start.len() != array.len() || shape.len() != array.len() {
        return Err(Error::InvalidArgument(format!(
            "the region has rank {} (start) / {} (shape), the array {}",
            start.len(),
            shape.len(),
            array.len()
        )));
    }
    for d in 0..array.len() {
        match start[d].checked_add(shape[d]) {
            Some(end) if end <= array[d] => {}
            _ => {
                return Err(Error::InvalidArgument(format!(
                    "the region {} + {} reaches past the array's shape {} in dimension {d}",
                    shown(start),
                    shown(shape),
                    shown(array)
                )))
            }
        }
    }
    Ok(())
}

/// The byte size of a region (an argument of the call, so overflow is
/// [`Error::InvalidArgument`]).
pub(crate) fn region_bytes(shape: &[u64], elem: usize) -> Result<u64> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(elem as u64, |acc, &n| acc.checked_mul(n))
        .ok_or_else(|| Error::InvalidArgument(format!("a region of {} overflows", shown(shape))))
}

/// The cells of a grid with cell shape `cell` that the box `[start, start + shape)` (non-empty)
/// touches: per dimension `(first, end)`.
fn cells(start: &[u64], shape: &[u64], cell: &[u64]) -> Vec<(u64, u64)> {
    start
        .iter()
        .zip(shape)
        .zip(cell)
        .map(|((s, n), c)| (s / c, (s + n - 1) / c + 1))
        .collect()
}

/// Every coordinate in the ranges, C order, made as they are asked for.
fn boxes(ranges: &[(u64, u64)]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let extent: Vec<u64> = ranges.iter().map(|(a, b)| b - a).collect();
    (0..cell_count(ranges)).map(move |i| {
        let mut c = nd::unravel(i, &extent);
        for (x, (a, _)) in c.iter_mut().zip(ranges) {
            *x += a;
        }
        c
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Condvar;
    use std::thread::ThreadId;
    use std::time::Duration;

    /// What the decode items of region reads report while a test watches (one test at a time).
    struct Watch {
        /// The threads that decoded an inner chunk.
        threads: HashSet<ThreadId>,
        /// Threads held at their first item now, and the most held at once.
        held: usize,
        most: usize,
        /// Hold each thread at its first item until this many are held (or 10 s pass).
        gather: usize,
    }

    static WATCH: (Mutex<Option<Watch>>, Condvar) = (Mutex::new(None), Condvar::new());

    /// Called by every decode item of a region read (in test builds).
    pub(super) fn decoded_here() {
        let (watch, arrived) = &WATCH;
        let mut w = watch.lock().unwrap();
        let Some(watching) = w.as_mut() else { return };
        if !watching.threads.insert(std::thread::current().id()) {
            return;
        }
        watching.held += 1;
        watching.most = watching.most.max(watching.held);
        arrived.notify_all();
        let (mut w, _) = arrived
            .wait_timeout_while(w, Duration::from_secs(10), |w| {
                w.as_ref().is_some_and(|w| w.most < w.gather)
            })
            .unwrap();
        if let Some(w) = w.as_mut() {
            w.held -= 1;
        }
    }

    /// The threads that decoded inner chunks while `f` ran and the most that held an item at
    /// once, each held at its first item until `gather` threads were.
    fn decoders(gather: usize, f: impl FnOnce()) -> (HashSet<ThreadId>, usize) {
        *WATCH.0.lock().unwrap() = Some(Watch {
            threads: HashSet::new(),
            held: 0,
            most: 0,
            gather,
        });
        f();
        let w = WATCH.0.lock().unwrap().take().unwrap();
        (w.threads, w.most)
    }

    /// With 16 threads, a whole read of a 3-D array with only four shards along its first axis
    /// has work for all 16 at once (each holds an inner chunk until all do: the caller and 15
    /// pool tasks), where bands of inner-chunk rows along that axis gave four; a one-chunk read
    /// stays on the calling thread.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn sixteen_threads_decode_a_3d_read_at_once_and_a_small_read_stays_here() {
        let meta = crate::ArrayMetadata::from_json(&serde_json::json!({
            "zarr_format": 3, "node_type": "array", "shape": [64, 256, 256], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 128, 128]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {
                "chunk_shape": [4, 32, 32], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}],
        }))
        .unwrap();
        let array = Array::create(crate::MemoryStore::new(), meta).unwrap();
        let n = 64 * 256 * 256;
        let data: Vec<u8> = (0..n as u32)
            .flat_map(|i| (i as u16 ^ 0x5a5a).to_ne_bytes())
            .collect();
        array
            .write_region(&[0, 0, 0], &[64, 256, 256], &data)
            .unwrap();
        let _setting = threads::TEST_SETTING
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        crate::set_threads(16).unwrap();
        let mut out = vec![0u8; data.len()];
        let (all, most) = decoders(16, || {
            array
                .read_region(&[0; 3], &[64, 256, 256], &mut out)
                .unwrap()
        });
        assert!(out == data);
        assert_eq!(most, 16, "threads decoding at once");
        assert!(
            all.contains(&std::thread::current().id()),
            "the caller takes part"
        );
        let mut one = vec![0u8; 4 * 32 * 32 * 2];
        let (small, _) = decoders(1, || {
            array
                .read_region(&[4, 32, 64], &[4, 32, 32], &mut one)
                .unwrap()
        });
        assert_eq!(small, HashSet::from([std::thread::current().id()]));
        let want: Vec<u8> = (0..4u64 * 32 * 32)
            .flat_map(|k| {
                let (z, y, x) = (4 + k / 1024, 32 + k / 32 % 32, 64 + k % 32);
                ((z * 65536 + y * 256 + x) as u16 ^ 0x5a5a).to_ne_bytes()
            })
            .collect();
        assert_eq!(one, want);
        crate::set_threads(0).unwrap();
    }

    /// Shards go into one pass (C order, rows or not) while together they cover at most
    /// `PASS_BYTES`, `PASS_SHARDS` and `PASS_CHUNKS`; a pass has at least one shard.
    #[test]
    fn passes_by_hand() {
        let mib = 1u64 << 20;
        let passes = |grid: &[u64], chunks: u64, bytes: u64| {
            let ranges: Vec<(u64, u64)> = grid.iter().map(|&n| (0, n)).collect();
            let mut shards = boxes(&ranges).peekable();
            let mut lens = Vec::new();
            while shards.peek().is_some() {
                lens.push(next_pass(&mut shards, |_| chunks, bytes).unwrap().len());
            }
            lens
        };
        assert_eq!(
            passes(&[10, 10], 1, mib),
            vec![64, 36],
            "64 MiB, across rows"
        );
        assert_eq!(
            passes(&[3, 4], 1, 30 * mib),
            vec![2, 2, 2, 2, 2, 2],
            "rows are cut"
        );
        assert_eq!(
            passes(&[2, 2], 1, 100 * mib),
            vec![1, 1, 1, 1],
            "one shard alone"
        );
        assert_eq!(
            passes(&[1, 3000], 1, 1),
            vec![1024, 1024, 952],
            "at most PASS_SHARDS"
        );
        assert_eq!(
            passes(&[1, 5], 1 << 15, 1),
            vec![2, 2, 1],
            "at most PASS_CHUNKS"
        );
        assert_eq!(
            passes(&[1, 2], 1 << 17, 1),
            vec![1, 1],
            "one shard over PASS_CHUNKS"
        );
        let mut one = boxes(&[(0, 1)]).peekable();
        let e = next_pass(&mut one, |_| 1 << 40, 1).unwrap_err();
        assert!(
            matches!(e, Error::MemoryLimit { needed, .. } if needed == 48 << 40),
            "{e}"
        );
    }

    #[test]
    fn cells_and_intersections_by_hand() {
        // Region rows 3..10, cols 0..1 on a grid of 4×4 cells: cells rows 0..3, cols 0..1.
        assert_eq!(cells(&[3, 0], &[7, 1], &[4, 4]), vec![(0, 3), (0, 1)]);
        assert_eq!(
            nd::intersect(&[3, 0], &[7, 1], &[4, 0], &[4, 4]),
            (vec![4, 0], vec![4, 1])
        );
        assert_eq!(nd::in_array(&[10, 6], &[8, 4], &[4, 4]), vec![2, 2]);
        let b: Vec<Vec<u64>> = boxes(&[(1, 3), (5, 6)]).collect();
        assert_eq!(b, vec![vec![1, 5], vec![2, 5]]);
    }
}
