//! Reading and writing any hyper-rectangle ("region") of an array, across shards and inner
//! chunks.
//!
//! **Reads** fetch only what the region needs: per shard one index read, then the byte ranges
//! of the inner chunks the region touches, coalesced ([`crate::ShardReader::fetch_chunks`]: runs
//! closer than the coalescing gap are one read, the whole span when most of it is wanted).
//! Shards are fetched in parallel, a pass of rows of shards (along the first dimension) at a
//! time, so memory beyond the caller's buffer is bounded by one pass's *encoded* bytes; then
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
use crate::parallel;
use crate::read_buffers;
use crate::reader::FetchedChunks;
use crate::store::Store;
use crate::writer::{ShardWriter, UpdateMode, WriteOptions, WriteStrategy};
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
    /// Errors: [`Error::InvalidArgument`] when the region's rank differs from the array's or it
    /// reaches past the array, or its byte size overflows 64 bits; [`Error::BufferSize`] when
    /// `out` has the wrong length (both checked, in that order, before the store is touched);
    /// and whatever reading and decoding the shards reports (corruption names shard and
    /// chunk). Safe to call from many threads at once.
    pub fn read_region(&self, start: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        check_region(&meta.shape, start, shape)?;
        check_len(out.len(), region_bytes(shape, elem)?)?;
        if shape.contains(&0) {
            return Ok(());
        }
        if !self.partial_regions() {
            return self.read_region_by_shards(start, shape, out);
        }
        let layout = Arc::new(meta.shard_layout().expect("sharded"));
        let inner = layout.codec().chunk_shape.clone();
        let cs = &meta.chunk_shape;
        let row_bytes = nd_len(&shape[1..])? * elem;
        let shard_ranges = cells(start, shape, cs);
        // The buffers shards are fetched into are never freed between passes: freed and
        // allocated afresh, row after row, glibc trims them and the kernel faults them in again
        // page by page (measured on the benchmark's array with one thread: 53 → 46 ms for
        // zstd, 20 → 9 ms uncompressed). When shards are fetched on the calling thread, each
        // shard of a pass reuses the buffers of the shard in the same place of the pass
        // before; with the pool, they go back to the process's kept buffers after each pass
        // and the next pass takes them from there. The kept buffers also outlive the call, for
        // the next one (`crate::read_buffers`).
        let recycle = self.store().io_on_caller_thread() || parallel::threads() <= 1;
        let mut spare: Vec<Mutex<Vec<Vec<u8>>>> = Vec::new();
        // The output rows shard rows g0..g1 cover: [lo, hi). Saturating: the last shard of an
        // array within one shard of 2^64 elements ends past u64::MAX; the region (inside the
        // array) ends before that.
        let rows_of = |g0: u64, g1: u64| {
            let lo = start[0].max(g0.saturating_mul(cs[0]));
            (lo, (start[0] + shape[0]).min(g1.saturating_mul(cs[0])))
        };
        // Decoded bytes of the inner chunks that cover one row of the region: what a pass
        // fetches per output row, at most (encoded chunks are about that size or smaller). A
        // thin region is covered by chunks much wider than it, so the pass is bounded by
        // those, not by the region's own bytes.
        let covering_row: u64 = cells(start, shape, &inner)
            .iter()
            .zip(&inner)
            .skip(1)
            .map(|((a, b), i)| (b - a).saturating_mul(*i))
            .fold(elem as u64, u64::saturating_mul);
        let (mut g0, last) = shard_ranges[0];
        while g0 < last {
            let g1 = pass_end(g0, last, |a, b| {
                let (lo, hi) = rows_of(a, b);
                let rows = (hi.div_ceil(inner[0]) - lo / inner[0]).saturating_mul(inner[0]);
                usize::try_from(rows.saturating_mul(covering_row)).unwrap_or(usize::MAX)
            });
            let shards = rows_of_boxes(&shard_ranges, g0, g1);
            spare.resize_with(shards.len(), Default::default);
            let empty = spare.iter_mut().map(lock).filter(|b| b.is_empty()).count();
            let mut kept = read_buffers::take(empty).into_iter();
            for bufs in spare.iter_mut().map(lock).filter(|b| b.is_empty()) {
                bufs.extend(kept.next());
            }
            // Phase 1: each shard's index, then its wanted chunks' bytes, shards in parallel.
            let fetched = self.map_io(shards.len(), |s| -> Result<Wanted> {
                let origin = nd::mul(&shards[s], cs);
                let (bs, be) = nd::intersect(start, shape, &origin, cs);
                let local = cells(&nd::sub(&bs, &origin), &be, &inner);
                let chunks: Vec<Vec<u64>> = boxes(&local).collect();
                let reader = self.shard_reader(&shards[s])?;
                let fetched = match reader.index() {
                    None => None,
                    Some(_) => {
                        let cps = layout.chunks_per_shard();
                        let indices: Vec<usize> =
                            chunks.iter().map(|c| nd::ravel(c, cps) as usize).collect();
                        let mut bufs = spare[s].lock().unwrap_or_else(|e| e.into_inner());
                        let fetched = reader.fetch_chunks_reusing(&indices, &mut bufs);
                        Some(fetched.map_err(|e| e.in_shard(&self.shard_key(&shards[s])))?)
                    }
                };
                let origins = chunks
                    .iter()
                    .map(|c| {
                        c.iter()
                            .zip(&inner)
                            .zip(&origin)
                            .map(|((c, i), o)| o + c * i)
                            .collect()
                    })
                    .collect();
                Ok(Wanted { origins, fetched })
            })?;
            // Phase 2: the output rows these rows of shards cover, cut where inner chunks
            // start along the first dimension; each band is decoded into by one thread, the
            // calling thread taking bands from the same queue as the pool's (not handing them
            // over: after idleness a woken pool thread may join late, `parallel`).
            let (lo, hi) = rows_of(g0, g1);
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
            parallel::for_each_split(&mut out[from..to], &sizes, |b, band| {
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
                for (s, w) in fetched.iter().enumerate() {
                    for (k, c) in w.origins.iter().enumerate() {
                        if !(c[0] <= r0 && r0 < c[0].saturating_add(inner[0])) {
                            continue;
                        }
                        let encoded = w.fetched.as_ref().and_then(|f| f.encoded(k));
                        // Uncompressed native chunks are copied straight from the fetched bytes.
                        let src: &[u8] = match (encoded, &w.fetched) {
                            (Some(e), _) if layout.as_decoded(e).is_some() => e,
                            (_, Some(f)) => {
                                f.decode_into(k, &mut chunk)
                                    .map_err(|e| e.in_shard(&self.shard_key(&shards[s])))?;
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
                    }
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
            g0 = g1;
        }
        read_buffers::keep(spare.iter_mut().flat_map(|m| std::mem::take(lock(m))));
        Ok(())
    }

    /// [`Array::read_region`] into a new buffer.
    pub fn read_region_vec(&self, start: &[u64], shape: &[u64]) -> Result<Vec<u8>> {
        let bytes = region_bytes(shape, self.metadata().data_type.size())?;
        let mut out = vec![0u8; crate::limits::buffer_len(bytes, "the region")?];
        self.read_region(start, shape, &mut out)?;
        Ok(out)
    }

    /// Write `data` (C order, native byte order, `shape.product() × element size` bytes) to
    /// the region of extent `shape` at `start`, appending rewritten chunks
    /// ([`UpdateMode::AppendOnly`]) and not storing chunks equal to the fill value.
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
        let shards: Vec<Vec<u64>> = boxes(&cells(start, shape, &meta.chunk_shape)).collect();
        self.map_io(shards.len(), |s| {
            // A shard read back and merged names its key when its bytes do not decode.
            self.write_region_shard(&shards[s], start, shape, data, mode, options)
                .map_err(|e| e.in_shard(&self.shard_key(&shards[s])))
        })?;
        Ok(())
    }

    /// `f(0..n)` where `f` does I/O: on the pool ([`parallel::map_on_pool`]: the items
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
            parallel::map_on_pool(n, f)
        }
    }

    /// Partial regions: shards readable chunk by chunk and inner chunks in array space.
    fn partial_regions(&self) -> bool {
        let meta = self.metadata();
        meta.supports_partial_reads()
            && meta.codecs.array_to_array.is_empty()
            && !meta.shape.is_empty()
    }

    /// The region through whole decoded shards (see the module docs for when).
    fn read_region_by_shards(&self, start: &[u64], shape: &[u64], out: &mut [u8]) -> Result<()> {
        let meta = self.metadata();
        let elem = meta.data_type.size();
        let cs = &meta.chunk_shape;
        meta.fill_value.fill(out);
        let shards: Vec<Vec<u64>> = boxes(&cells(start, shape, cs)).collect();
        // A few shards at a time: decoded shards are full size.
        for batch in shards.chunks(parallel::threads().max(1).saturating_mul(2)) {
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
        Ok(())
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
        // written, and the shard stays exactly as it was. Memory: the partly covered chunks.
        let mut parts = Vec::new();
        for local in boxes(&cells(&nd::sub(&bs, &origin), &be, &inner)) {
            let corigin: Vec<u64> = origin
                .iter()
                .zip(local.iter().zip(&inner))
                .map(|(o, (c, i))| o + c * i)
                .collect();
            let (cb, ce) = nd::intersect(&bs, &be, &corigin, &inner);
            // Read only a chunk the region covers partly; the rest of a covered chunk that lies
            // past the array's edge is the fill value.
            let old = if cb == corigin && ce == nd::in_array(&meta.shape, &corigin, &inner) {
                None
            } else {
                let mut chunk = layout.inner_repr().filled()?;
                writer.read_chunk_into(&local, &mut chunk)?;
                Some(chunk)
            };
            parts.push((local, corigin, cb, ce, old));
        }
        let written = (|| -> Result<()> {
            let mut chunk = layout.inner_repr().filled()?;
            for (local, corigin, cb, ce, old) in &parts {
                match old {
                    Some(old) => chunk.copy_from_slice(old),
                    None => layout.inner_repr().fill_value.fill(&mut chunk),
                }
                nd::copy_box(
                    data,
                    shape,
                    &nd::sub(cb, start),
                    &mut chunk,
                    &inner,
                    &nd::sub(cb, corigin),
                    ce,
                    elem,
                );
                writer.write_chunk(local, &chunk)?;
            }
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

/// One shard's part of a region read: where each inner chunk the region touches starts (array
/// coordinates, C order), and their fetched bytes (`None`: no object).
struct Wanted {
    origins: Vec<Vec<u64>>,
    fetched: Option<FetchedChunks>,
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
fn region_bytes(shape: &[u64], elem: usize) -> Result<u64> {
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

/// Every coordinate in the ranges, C order.
fn boxes(ranges: &[(u64, u64)]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let extent: Vec<u64> = ranges.iter().map(|(a, b)| b - a).collect();
    nd::c_order(&extent)
        .collect::<Vec<_>>()
        .into_iter()
        .map(move |c| c.iter().zip(ranges).map(|(x, (a, _))| a + x).collect())
}

/// Where the pass of a region read that starts at shard row `g0` ends (exclusive): after as
/// many rows as fetch at most [`PASS_BYTES`] together (`bytes(g0, g1)`), at least one, at most
/// up to `last`.
fn pass_end(g0: u64, last: u64, bytes: impl Fn(u64, u64) -> usize) -> u64 {
    let mut g1 = g0 + 1;
    while g1 < last && bytes(g0, g1 + 1) <= PASS_BYTES {
        g1 += 1;
    }
    g1
}

/// The cells of `ranges` whose first coordinate is in `g0..g1`, C order.
fn rows_of_boxes(ranges: &[(u64, u64)], g0: u64, g1: u64) -> Vec<Vec<u64>> {
    let mut rows = ranges.to_vec();
    rows[0] = (g0, g1);
    boxes(&rows).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows of shards go into one pass while together they cover at most `PASS_BYTES`; a row
    /// covering more is a pass of its own; a pass never runs past the region's last row.
    #[test]
    fn passes_by_hand() {
        let mib = |n: u64| move |a: u64, b: u64| ((b - a) * n) as usize * (1 << 20);
        assert_eq!(
            pass_end(0, 10, mib(1)),
            4,
            "4 MiB in four rows; a fifth would exceed it"
        );
        assert_eq!(pass_end(3, 10, mib(1)), 7);
        assert_eq!(pass_end(8, 10, mib(1)), 10, "up to the last row");
        assert_eq!(pass_end(0, 10, mib(2)), 2);
        assert_eq!(pass_end(0, 10, mib(3)), 1);
        assert_eq!(
            pass_end(0, 10, mib(9)),
            1,
            "a row over the limit is a pass of its own"
        );
        assert_eq!(pass_end(5, 6, mib(0)), 6);
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
