//! Reading and writing any hyper-rectangle ("region") of an array, across shards and inner
//! chunks.
//!
//! **Reads** fetch only what the region needs: per shard one index read, then the byte ranges
//! of the inner chunks the region touches, coalesced ([`crate::ShardReader::fetch_chunks`]: runs
//! closer than the coalescing gap are one read, the whole span when most of it is wanted).
//! Shards are fetched in parallel, a pass of rows of shards (along the first dimension) at a
//! time, at most `PASS_SHARDS` shards and `PASS_CHUNKS` inner chunks (a row of many small
//! shards is cut), so memory beyond the caller's buffer is bounded by one pass's *encoded*
//! bytes and bookkeeping, whatever the number of shards the region touches; then
//! the inner chunks are decoded in parallel, each task owning a band of rows of the output, so
//! the copy into the caller's buffer is parallel too and needs no lock and no `unsafe`. A pass
//! is one row of shards, or as many as the inner chunks covering the region's part of them
//! decode to at most 4 MiB together: a small region across shard rows then fetches all its
//! shards in one parallel step and decodes all its bands in another, instead of a step of each
//! per row. The benchmark's 117-chunk
//! region across two shard rows (`bench/examples/profile.rs region`, two threads, alternated
//! with the previous code): 0.59–0.64 → 0.56–0.57 ms back to back, 0.86–0.98 → 0.81–0.90 ms
//! after 20 ms idle; one thread and whole-array reads (a pass per row) unchanged.
//! Where nothing is stored the output holds the fill value.
//!
//! **Writes** do the minimum read-modify-write: a shard the region covers entirely is encoded
//! and written whole without reading it; otherwise an update writer
//! ([`WriteStrategy::Update`]) reads the shard's index, and of its inner chunks reads only
//! those the region covers partly, encodes the touched chunks and writes them and a new index;
//! chunks the region does not touch are neither read nor rewritten.
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

use crate::array::Array;
use crate::codec::check_len;
use crate::error::{shown, Error, Result};
use crate::nd;
use crate::runtime::read_buffers;
use crate::runtime::threads;
use crate::shard::reader::FetchedChunks;
use crate::shard::writer::{ShardWriter, UpdateMode, WriteOptions, WriteStrategy};
use crate::storage::store::Store;
use std::sync::{Arc, Mutex};

/// A pass's spare buffers of one shard, from `&mut` (no other thread holds them then).
fn lock(m: &mut Mutex<Vec<Vec<u8>>>) -> &mut Vec<Vec<u8>> {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

/// The most decoded bytes of the inner chunks covering a region that one pass of a read
/// fetches when it takes more than one row of shards (see the module docs). A row of shards
/// covering more is a pass of its own, so a whole-array read still holds one row of shards'
/// fetched bytes at a time.
const PASS_BYTES: usize = 4 << 20;

impl<S: Store> Array<S> {
    /// Read the region of extent `shape` at `start` (array coordinates) into `out`: C order,
    /// native byte order, `shape.product() × element size` bytes. The fill value where
    /// nothing is stored.
    ///
    /// Memory beyond `out`: one pass of at most 1024 shards and 65 536 inner chunks at a time
    /// (their fetched bytes and a few hundred bytes of bookkeeping each, nothing per element
    /// or per chunk of the region as a whole); a single shard whose touched chunks need more
    /// (48 bytes each) than the memory limit is [`Error::MemoryLimit`], before any read.
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

    /// [`Array::read_region_in`] of what the store holds.
    fn read_stored_region(
        &self,
        start: &[u64],
        shape: &[u64],
        out: &mut [u8],
        listed: Option<&[u64]>,
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
        let row_bytes = nd_len(&shape[1..])? * elem;
        let shard_ranges = cells(start, shape, cs);
        // The buffers shards are fetched into are never freed between passes: freed and
        // allocated afresh, row after row, glibc trims them and the kernel faults them in again
        // page by page (measured on the benchmark's array with one thread: 53 → 46 ms for
        // zstd, 20 → 9 ms uncompressed). When shards are fetched on the calling thread, each
        // shard of a pass reuses the buffers of the shard in the same place of the pass
        // before; with the pool, they go back to the process's kept buffers after each pass
        // and the next pass takes them from there. The kept buffers also outlive the call, for
        // the next one (`crate::runtime::read_buffers`).
        let recycle = self.store().io_on_caller_thread() || threads::threads() <= 1;
        let mut spare: Vec<Mutex<Vec<Vec<u8>>>> = Vec::new();
        // The output rows shard rows g0..g1 cover: [lo, hi). Saturating: the last shard of an
        // array within one shard of 2^64 elements ends past u64::MAX; the region (inside the
        // array) ends before that.
        let rows_of = |g0: u64, g1: u64| {
            let lo = start[0].max(g0.saturating_mul(cs[0]));
            (lo, (start[0] + shape[0]).min(g1.saturating_mul(cs[0])))
        };
        // The inner chunks of a shard the region touches (per dimension, in the shard).
        let local_of = |g: &[u64]| {
            let origin = nd::mul(g, cs);
            let (bs, be) = nd::intersect(start, shape, &origin, cs);
            cells(&nd::sub(&bs, &origin), &be, &inner)
        };
        let mut shards = touched(&shard_ranges, &grid, listed).peekable();
        while shards.peek().is_some() {
            let pass = next_pass(&mut shards, |g| cell_count(&local_of(g)), chunk_bytes)?;
            spare.resize_with(pass.len(), Default::default);
            let empty = spare.iter_mut().map(lock).filter(|b| b.is_empty()).count();
            let mut kept = read_buffers::take(empty).into_iter();
            for bufs in spare.iter_mut().map(lock).filter(|b| b.is_empty()) {
                bufs.extend(kept.next());
            }
            // Phase 1: each shard's index, then its wanted chunks' bytes, shards in parallel.
            let fetched = self.map_io(pass.len(), |s| -> Result<Wanted> {
                let local = local_of(&pass[s]);
                let reader = self.shard_reader(&pass[s])?;
                let fetched = match reader.index() {
                    None => None,
                    Some(_) => {
                        let cps = layout.chunks_per_shard();
                        let mut indices = Vec::with_capacity(cell_count(&local) as usize);
                        each_cell(&local, |c| {
                            indices.push(nd::ravel(c, cps) as usize);
                            Ok(())
                        })?;
                        let mut bufs = spare[s].lock().unwrap_or_else(|e| e.into_inner());
                        let fetched = reader.fetch_chunks_reusing(&indices, &mut bufs);
                        Some(fetched.map_err(|e| e.in_shard(&self.shard_key(&pass[s])))?)
                    }
                };
                let origin = nd::mul(&pass[s], cs);
                Ok(Wanted {
                    origin,
                    local,
                    fetched,
                })
            })?;
            // Phase 2: the output rows these shards cover, cut where inner chunks start along
            // the first dimension; each band is decoded into by one thread, the calling thread
            // taking bands from the same queue as the pool's (not handing them over: after
            // idleness a woken pool thread may join late, `parallel`). A band writes only
            // the parts of this pass's shards; a row of shards split between passes is
            // written by each in turn.
            let (lo, hi) = rows_of(pass[0][0], pass[pass.len() - 1][0] + 1);
            let mut bands = Vec::new();
            let mut r = lo;
            while r < hi {
                let next = ((r / inner[0] + 1).saturating_mul(inner[0])).min(hi);
                bands.push((r, next));
                r = next;
            }
            let sizes: Vec<usize> = bands
                .iter()
                .map(|(a, b)| (b - a) as usize * row_bytes)
                .collect();
            let from = (lo - start[0]) as usize * row_bytes;
            let to = (hi - start[0]) as usize * row_bytes;
            threads::for_each_split(&mut out[from..to], &sizes, |b, band| {
                let (r0, r1) = bands[b];
                let mut band_start = start.to_vec();
                band_start[0] = r0;
                let mut band_shape = shape.to_vec();
                band_shape[0] = r1 - r0;
                let mut chunk = layout.inner_repr().filled()?;
                // Where each chunk's part goes: reused for every chunk (no allocation per chunk).
                let rank = shape.len();
                let (mut from, mut to, mut extent) =
                    (vec![0u64; rank], vec![0u64; rank], vec![0u64; rank]);
                let (mut c, mut in_band) = (vec![0u64; rank], Vec::with_capacity(rank));
                for w in &fetched {
                    // The shard's row of inner chunks holding the band's first row, if any.
                    let Some(row) = r0.checked_sub(w.origin[0]).map(|r| r / inner[0]) else {
                        continue;
                    };
                    if !(w.local[0].0..w.local[0].1).contains(&row) {
                        continue;
                    }
                    in_band.clear();
                    in_band.push((row, row + 1));
                    in_band.extend_from_slice(&w.local[1..]);
                    each_cell(&in_band, |local| {
                        // Its position among the chunks fetched (C order of `w.local`).
                        let k = local
                            .iter()
                            .zip(&w.local)
                            .fold(0u64, |k, (x, (a, b))| k * (b - a) + (x - a))
                            as usize;
                        for d in 0..rank {
                            c[d] = w.origin[d] + local[d] * inner[d];
                        }
                        let encoded = w.fetched.as_ref().and_then(|f| f.encoded(k));
                        // Uncompressed native chunks are copied straight from the fetched bytes.
                        let src: &[u8] = match (encoded, &w.fetched) {
                            (Some(e), _) if layout.as_decoded(e).is_some() => e,
                            (_, Some(f)) => {
                                f.decode_into(k, &mut chunk).map_err(|e| {
                                    let g: Vec<u64> =
                                        w.origin.iter().zip(cs).map(|(o, c)| o / c).collect();
                                    e.in_shard(&self.shard_key(&g))
                                })?;
                                &chunk
                            }
                            (_, None) => {
                                layout.inner_repr().fill_value.fill(&mut chunk);
                                &chunk
                            }
                        };
                        for d in 0..rank {
                            let lo = band_start[d].max(c[d]);
                            let hi =
                                (band_start[d] + band_shape[d]).min(c[d].saturating_add(inner[d]));
                            (from[d], to[d], extent[d]) = (lo - c[d], lo - band_start[d], hi - lo);
                        }
                        nd::copy_box(src, &inner, &from, band, &band_shape, &to, &extent, elem);
                        Ok(())
                    })?;
                }
                Ok(())
            })?;
            let buffers = fetched
                .into_iter()
                .map(|w| w.fetched.map(FetchedChunks::into_buffers));
            if recycle {
                for (s, bufs) in buffers.enumerate() {
                    if let Some(bufs) = bufs {
                        *lock(&mut spare[s]) = bufs;
                    }
                }
            } else {
                read_buffers::keep(buffers.flatten().flatten());
            }
        }
        read_buffers::keep(spare.iter_mut().flat_map(|m| std::mem::take(lock(m))));
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
                self.write_region_shard(&pass[s], start, shape, data, mode, options)
                    .map_err(|e| e.in_shard(&self.shard_key(&pass[s])))
            })?;
        }
    }

    /// `f(0..n)` where `f` does I/O: on the pool ([`threads::map_on_pool`]: the items
    /// decode or encode whole shards, or allocate the fetched bytes, which pool threads' own
    /// allocator arenas keep between calls), or on this thread when the store asks.
    pub(crate) fn map_io<T: Send>(
        &self,
        n: usize,
        f: impl Fn(usize) -> Result<T> + Sync + Send,
    ) -> Result<Vec<T>> {
        if self.store().io_on_caller_thread() {
            (0..n).map(f).collect()
        } else {
            threads::map_on_pool(n, f)
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
        let layout = Arc::new(meta.shard_layout().expect("sharded"));
        let inner = layout.codec().chunk_shape.clone();
        let io = self.store().shard_io(&self.shard_key(g))?;
        let mut writer =
            ShardWriter::new(layout.clone(), io, WriteStrategy::Update(mode), options)?;
        // First read (and decode) every chunk the region covers partly, then write: a read
        // or decode that fails (a corrupt chunk, a store error) then fails before any byte is
        // written, and the shard stays exactly as it was. Memory: the partly covered chunks
        // (the chunks are walked twice rather than listed, so nothing is kept per chunk).
        let local_box = cells(&nd::sub(&bs, &origin), &be, &inner);
        let rank = inner.len();
        let mut corigin = vec![0u64; rank];
        // The chunk at `local`: its origin into `corigin`, and whether the region covers it
        // only partly (the rest of a covered chunk that lies past the array's edge is the
        // fill value, so such a chunk counts as covered).
        let partly = |local: &[u64], corigin: &mut [u64]| {
            for d in 0..rank {
                corigin[d] = origin[d] + local[d] * inner[d];
            }
            let (cb, ce) = nd::intersect(&bs, &be, corigin, &inner);
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
        let written = (|| -> Result<()> {
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
            writer.finalize()?;
            Ok(())
        })();
        if written.is_err() {
            // An append-only update cuts what it appended off again (the writer does so itself
            // when a write or the index fails; this covers the rest, e.g. an encode error).
            let _ = writer.discard();
        }
        written
    }
}

/// One shard's part of a region read: where the shard starts (array coordinates), the inner
/// chunks the region touches in it (per dimension; fetched in C order of this box), and their
/// fetched bytes (`None`: no object). Nothing is kept per chunk beyond what the reader fetched.
struct Wanted {
    origin: Vec<u64>,
    local: Vec<(u64, u64)>,
    fetched: Option<FetchedChunks>,
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
/// `chunk_bytes` decoded), and either lie in the first's row of shards or keep the decoded
/// bytes of the pass within [`PASS_BYTES`]; at least one shard.
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
        if let Some(first) = pass.first() {
            if pass.len() >= PASS_SHARDS
                || total + n > PASS_CHUNKS
                || (g[0] != first[0] && bytes.saturating_add(b) > PASS_BYTES as u64)
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

fn nd_len(shape: &[u64]) -> Result<usize> {
    region_bytes(shape, 1)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| {
            Error::InvalidArgument(format!("{} does not fit this platform", shown(shape)))
        })
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

    /// Rows of shards go into one pass while together they cover at most `PASS_BYTES`; the
    /// first row is whole unless it passes `PASS_SHARDS` or `PASS_CHUNKS`.
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
            passes(&[10, 1], 1, mib),
            vec![4, 4, 2],
            "4 MiB in four rows"
        );
        assert_eq!(
            passes(&[3, 4], 1, mib),
            vec![4, 4, 4],
            "a row is never cut for bytes"
        );
        assert_eq!(passes(&[2, 2], 1, 3 * mib), vec![2, 2]);
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
