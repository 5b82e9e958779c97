//! Repacking: rewrite a sharded array into a new layout — another shard shape, inner chunk
//! shape, inner codecs, index location or chunk order — in another store; or shard an
//! unsharded array, its chunks becoming inner chunks.
//!
//! When the inner chunk shape and the inner codec chain stay the same (and no array→array
//! codec comes before `sharding_indexed` on either side), every stored inner chunk is copied
//! as its encoded bytes, without decoding: the new shard shape then only has to be a multiple
//! of the inner chunk shape, which [`ShardLayout::new`] checks. Otherwise each new shard is
//! assembled from the decoded source shards and encoded again, and inner chunks equal to the
//! fill value are not stored.
//!
//! The work goes one row of new shards (along the first dimension) at a time, in parallel
//! within the row; memory is bounded by the source shards that row overlaps. When the stores
//! list their keys, only the stored source shards are read and only the rows and shards they
//! reach are written (see [`repack`]). The target's
//! `zarr.json` is written last, so a repack that fails part way never leaves a store that
//! opens as a complete array.

use crate::array::Array;
use crate::codec::sharding::index::{ChunkLocation, ShardIndex};
use crate::codec::sharding::{IndexLocation, ShardLayout, ShardingCodec};
use crate::codec::{ArrayToBytes, CodecChain};
use crate::error::{shown, Error, Result};
use crate::metadata::ArrayMetadata;
use crate::nd;
use crate::runtime::threads;
use crate::shard::encoded::EncodedChunks;
use crate::shard::writer::{ChunkOrder, Finalized, ShardWriter, WriteOptions, WriteStrategy};
use crate::storage::io::MemoryIo;
use crate::storage::store::Store;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

/// What to change; `None` keeps the source's setting.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RepackOptions {
    /// Shard shape (the chunk grid's chunk shape) in array elements.
    pub shard_shape: Option<Vec<u64>>,
    /// Inner chunk shape; must divide the shard shape.
    pub inner_chunk_shape: Option<Vec<u64>>,
    /// Codecs of each inner chunk.
    pub inner_codecs: Option<CodecChain>,
    /// Where the new shards' index goes.
    pub index_location: Option<IndexLocation>,
    /// Order of inner chunks in the new shards (the index is always C order).
    pub order: ChunkOrder,
}

/// What a repack did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RepackReport {
    /// Shard objects written (shards with nothing stored are not written).
    pub shards_written: u64,
    /// Bytes of all shard objects written.
    pub bytes_written: u64,
    /// Inner chunks copied as their encoded bytes.
    pub chunks_copied: u64,
    /// Inner chunks decoded from the source and encoded again.
    pub chunks_reencoded: u64,
}

/// The metadata of `src` with the changes of `options`: same shape, data type, fill value,
/// chunk key encoding, attributes, dimension names and codecs around `sharding_indexed`.
/// Validated like a parsed `zarr.json` (e.g. an inner chunk shape that does not divide the
/// shard shape is an [`Error::InvalidMetadata`]).
///
/// An unsharded source becomes sharded: its chunks become the inner chunks (its array→bytes
/// and bytes→bytes codecs the inner codecs; array→array codecs stay before sharding), with
/// index codecs `bytes` (little-endian) + `crc32c` at the end unless `options` say otherwise.
pub fn repacked_metadata(src: &ArrayMetadata, options: &RepackOptions) -> Result<ArrayMetadata> {
    let mut meta = src.clone();
    let mut sharding = match src.sharding() {
        Some(s) => s.clone(),
        None => {
            meta.codecs.bytes_to_bytes.clear();
            // The chunk as the array→bytes codec sees it (after any transpose).
            let inner = src.codecs.bytes_repr(&src.chunk_repr())?.shape;
            ShardingCodec::from_config_json(&json!({
                "chunk_shape": inner,
                "codecs": chunk_codecs(src).to_json(),
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
            }))?
        }
    };
    if let Some(shape) = &options.inner_chunk_shape {
        sharding.chunk_shape = shape.clone();
    }
    if let Some(codecs) = &options.inner_codecs {
        sharding.codecs = codecs.clone();
    }
    if let Some(location) = options.index_location {
        sharding.index_location = location;
    }
    if let Some(shape) = &options.shard_shape {
        meta.chunk_shape = shape.clone();
    }
    meta.codecs.array_to_bytes = ArrayToBytes::Sharding(Box::new(sharding));
    // The same checks as any zarr.json we read: rank, divisibility, codec validity.
    meta.reparsed()
}

/// The codecs of an unsharded array's chunks without its array→array codecs.
fn chunk_codecs(m: &ArrayMetadata) -> CodecChain {
    CodecChain {
        array_to_array: vec![],
        ..m.codecs.clone()
    }
}

/// True when repacking `src` into sharded `dst` can copy encoded inner chunks: no
/// array→array codec before sharding on either side, the same inner chunk shape and inner
/// codecs — or, for an unsharded `src`, its chunks are exactly `dst`'s inner chunks.
pub fn copies_encoded_chunks(src: &ArrayMetadata, dst: &ArrayMetadata) -> bool {
    let Some(b) = dst.sharding() else {
        return false;
    };
    let plain_arrays = src.codecs.array_to_array.is_empty() && dst.codecs.array_to_array.is_empty();
    match src.sharding() {
        Some(a) => plain_arrays && a.chunk_shape == b.chunk_shape && a.codecs == b.codecs,
        None => plain_arrays && src.chunk_shape == b.chunk_shape && chunk_codecs(src) == b.codecs,
    }
}

/// Inner chunks per source shard; an unsharded source's chunk is its one inner chunk.
fn source_chunks_per_shard(m: &ArrayMetadata) -> Vec<u64> {
    match m.shard_layout() {
        Some(layout) => layout.chunks_per_shard().to_vec(),
        None => vec![1; m.shape.len()],
    }
}

/// Rewrite every shard of `src` into `dst` (which should be empty) with the layout of
/// `target` (see [`repacked_metadata`]; shape, data type and fill value must match the
/// source), then write `dst`'s `zarr.json`; returns the new array and what was done.
/// `on_progress(n)` is called as positions of the target's chunk grid are done, `n` the
/// number done since the last call (for a progress display: the calls add up to the number of
/// target positions; called from worker threads).
///
/// When the source's store lists ([`Store::list_prefix`]) only the listed source shards are
/// read; when the target's store lists too, only the target shards they overlap, and those it
/// lists (so a stale object there is still replaced), are written: a sparse array costs its
/// stored shards, not its grid. Otherwise every position of either grid is visited. `src` is only read; it may be shared with
/// other readers meanwhile, not with writers.
///
/// Copied chunks are not decoded, so a corrupt inner chunk is copied as it is (with its
/// checksum, if the inner codecs have one); [`Array::verify`] finds those.
///
/// Errors: the source's errors (a corrupt index or, when re-encoding, a corrupt chunk stops
/// the repack with the error naming the source shard), the stores' I/O errors,
/// [`Error::InvalidMetadata`] when `target` fails [`ArrayMetadata::validate`] (nothing is
/// written then), [`Error::InvalidArgument`] when `target` does not fit `src` or is not
/// sharded. On error,
/// `dst` may hold some shards but no `zarr.json`.
pub fn repack<S: Store, D: Store>(
    src: &Array<S>,
    dst: D,
    target: ArrayMetadata,
    order: ChunkOrder,
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<(Array<D>, RepackReport)> {
    target.validate()?;
    let sm = src.metadata();
    if sm.shape != target.shape
        || sm.data_type != target.data_type
        || sm.fill_value != target.fill_value
    {
        return Err(Error::InvalidArgument(format!(
            "the target's shape {}, data type {} and fill value {} differ from the source's {}, {} and {}",
            shown(&target.shape),
            target.data_type.name(),
            target.fill_value.to_json(&target.data_type),
            shown(&sm.shape),
            sm.data_type.name(),
            sm.fill_value.to_json(&sm.data_type)
        )));
    }
    if target.sharding().is_none() {
        return Err(Error::InvalidArgument(
            "the repack target must be sharded".into(),
        ));
    }
    let copy = copies_encoded_chunks(sm, &target);
    let dst = Array::from_metadata(dst, target)?;
    let job = Job {
        src,
        dst: &dst,
        order,
    };
    let mut report = RepackReport::default();
    let tm = dst.metadata();
    if !tm.shape.contains(&0) {
        let dst_grid = tm.grid_shape();
        let rank = tm.shape.len();
        let rows = if rank == 0 { 1 } else { dst_grid[0] };
        let plan = job.plan()?;
        let row_numbers: Box<dyn Iterator<Item = u64>> = match &plan.targets {
            Some(targets) => Box::new(targets.keys().copied()),
            None => Box::new(0..rows),
        };
        let mut visited = 0u64;
        let mut loaded: HashMap<Vec<u64>, Arc<Loaded>> = HashMap::new();
        for row in row_numbers {
            // The source shards this row of target shards overlaps, loaded once each.
            let needed = job.source_shards_of_row(row, &plan);
            loaded.retain(|k, _| needed.contains(k));
            let missing: Vec<&Vec<u64>> =
                needed.iter().filter(|k| !loaded.contains_key(*k)).collect();
            let fresh = threads::map_nested(missing.len(), |k| job.load(missing[k], copy))?;
            for (k, v) in missing.into_iter().zip(fresh) {
                loaded.insert(k.clone(), Arc::new(v));
            }
            let targets: Vec<Vec<u64>> = match &plan.targets {
                Some(targets) => targets[&row].clone(),
                None if rank == 0 => vec![vec![]],
                None => nd::c_order(&dst_grid[1..])
                    .map(|tail| std::iter::once(row).chain(tail).collect())
                    .collect(),
            };
            visited += targets.len() as u64;
            let done = threads::map_nested(targets.len(), |k| {
                let result = if copy {
                    job.copy_shard(&targets[k], &loaded)
                } else {
                    job.reencode_shard(&targets[k], &loaded)
                };
                on_progress(1);
                result
            })?;
            for (finalized, chunks) in done {
                if let Finalized::Written { size } = finalized {
                    report.shards_written += 1;
                    report.bytes_written += size;
                }
                if copy {
                    report.chunks_copied += chunks;
                } else {
                    report.chunks_reencoded += chunks;
                }
            }
        }
        // The positions the listings showed have nothing to read or replace.
        let total = crate::codec::checked_product(&dst_grid)?;
        if total > visited {
            on_progress(total - visited);
        }
    }
    dst.store().set("zarr.json", &tm.to_json_bytes())?;
    Ok((dst, report))
}

/// A source shard as the copy or the re-encode path needs it.
enum Loaded {
    Missing,
    /// The sharding codec's output (bytes→bytes codecs after it undone) and its index.
    Encoded(Vec<u8>, ShardIndex),
    /// The whole shard decoded (C order, native byte order, the source's shard shape).
    Decoded(Vec<u8>),
}

/// What a repack reads and writes when the stores list ([`Job::plan`]); `None` where every
/// position is visited.
struct Plan {
    /// The stored source shards, by their first grid coordinate.
    sources: Option<BTreeMap<u64, Vec<Vec<u64>>>>,
    /// The target shards to write, by row (first grid coordinate), each row in C order.
    targets: Option<BTreeMap<u64, Vec<Vec<u64>>>>,
}

struct Job<'a, S: Store, D: Store> {
    src: &'a Array<S>,
    dst: &'a Array<D>,
    order: ChunkOrder,
}

impl<S: Store, D: Store> Job<'_, S, D> {
    /// What to visit. When the source's store lists: only its stored shards are read; when
    /// the target's store lists too, only the target shards those overlap and the ones it
    /// already holds (each replaced, as a full walk would) are written. Rank 0 has one
    /// position anyway.
    fn plan(&self) -> Result<Plan> {
        let (sm, tm) = (self.src.metadata(), self.dst.metadata());
        let source_walk = self.src.shard_walk()?;
        let (Some(listed), false) = (source_walk.listed, sm.shape.is_empty()) else {
            return Ok(Plan {
                sources: None,
                targets: None,
            });
        };
        let mut sources: BTreeMap<u64, Vec<Vec<u64>>> = BTreeMap::new();
        for i in listed {
            let coords = nd::unravel(i, &source_walk.grid);
            sources.entry(coords[0]).or_default().push(coords);
        }
        let Some(held) = self.dst.shard_walk()?.listed else {
            return Ok(Plan {
                sources: Some(sources),
                targets: None,
            });
        };
        let dst_grid = tm.grid_shape();
        let mut targets: BTreeSet<Vec<u64>> = held
            .into_iter()
            .map(|i| nd::unravel(i, &dst_grid))
            .collect();
        for source in sources.values().flatten() {
            // The target shards this source shard's elements fall in: a box of them.
            let first: Vec<u64> = (0..source.len())
                .map(|d| source[d] * sm.chunk_shape[d] / tm.chunk_shape[d])
                .collect();
            let count: Vec<u64> = (0..source.len())
                .map(|d| {
                    let lo = source[d] * sm.chunk_shape[d];
                    let hi = lo.saturating_add(sm.chunk_shape[d]).min(sm.shape[d]);
                    (hi - 1) / tm.chunk_shape[d] + 1 - first[d]
                })
                .collect();
            targets.extend(nd::c_order(&count).map(|c| {
                c.iter()
                    .zip(&first)
                    .map(|(c, f)| c + f)
                    .collect::<Vec<u64>>()
            }));
        }
        let mut by_row: BTreeMap<u64, Vec<Vec<u64>>> = BTreeMap::new();
        for target in targets {
            by_row.entry(target[0]).or_default().push(target);
        }
        Ok(Plan {
            sources: Some(sources),
            targets: Some(by_row),
        })
    }

    /// Grid coordinates of the source shards that row `row` of the target grid overlaps
    /// (only the stored ones when the plan lists them).
    fn source_shards_of_row(&self, row: u64, plan: &Plan) -> Vec<Vec<u64>> {
        let (sm, tm) = (self.src.metadata(), self.dst.metadata());
        let mut grid = sm.grid_shape();
        if grid.is_empty() {
            return vec![vec![]];
        }
        let lo = row * tm.chunk_shape[0];
        let hi = lo.saturating_add(tm.chunk_shape[0]).min(tm.shape[0]);
        let first = lo / sm.chunk_shape[0];
        grid[0] = hi.div_ceil(sm.chunk_shape[0]) - first;
        if let Some(sources) = &plan.sources {
            return sources
                .range(first..first + grid[0])
                .flat_map(|(_, shards)| shards.iter().cloned())
                .collect();
        }
        nd::c_order(&grid)
            .map(|mut c| {
                c[0] += first;
                c
            })
            .collect()
    }

    /// Source shard `coords`; an error names its key.
    fn load(&self, coords: &[u64], copy: bool) -> Result<Loaded> {
        let key = self.src.shard_key(coords);
        self.load_unnamed(coords, copy)
            .map_err(|e| e.in_shard(&key))
    }

    fn load_unnamed(&self, coords: &[u64], copy: bool) -> Result<Loaded> {
        let src = self.src;
        if !copy {
            return Ok(src
                .read_shard(coords)?
                .map_or(Loaded::Missing, Loaded::Decoded));
        }
        let m = src.metadata();
        let Some(object) = src.store().get(&src.shard_key(coords))? else {
            return Ok(Loaded::Missing);
        };
        let Some(layout) = m.shard_layout() else {
            // An unsharded chunk: the whole object is the one inner chunk.
            let mut index = ShardIndex::new_empty(1);
            let nbytes = object.len() as u64;
            index.set(0, Some(ChunkLocation { offset: 0, nbytes }));
            return Ok(Loaded::Encoded(object, index));
        };
        let shard = m
            .codecs
            .decode_bytes_stage(&object, &m.chunk_repr())?
            .into_owned();
        let index = layout.decode_index(&shard)?;
        Ok(Loaded::Encoded(shard, index))
    }

    /// Fill target shard `coords` with the source's encoded inner chunks. Returns what was
    /// stored and how many chunks were copied.
    fn copy_shard(
        &self,
        coords: &[u64],
        loaded: &HashMap<Vec<u64>, Arc<Loaded>>,
    ) -> Result<(Finalized, u64)> {
        let (sm, tm) = (self.src.metadata(), self.dst.metadata());
        let layout = tm.shard_layout().expect("sharded");
        let inner = &layout.codec().chunk_shape;
        let (per_src, per_dst) = (&source_chunks_per_shard(sm), layout.chunks_per_shard());
        let mut encoded = vec![None; layout.num_chunks()];
        let mut copied = 0;
        for (i, slot) in encoded.iter_mut().enumerate() {
            // The chunk in the array's inner-chunk grid, then in the source's shards.
            let global: Vec<u64> = nd::unravel(i as u64, per_dst)
                .iter()
                .zip(coords)
                .zip(per_dst)
                .map(|((c, s), n)| s * n + c)
                .collect();
            if global
                .iter()
                .zip(inner)
                .zip(&tm.shape)
                .any(|((g, c), s)| g.checked_mul(*c).is_none_or(|origin| origin >= *s))
            {
                continue; // wholly outside the array: never read
            }
            let shard: Vec<u64> = global.iter().zip(per_src).map(|(g, n)| g / n).collect();
            let local: Vec<u64> = global.iter().zip(per_src).map(|(g, n)| g % n).collect();
            let Some(Loaded::Encoded(object, index)) = loaded.get(&shard).map(|l| &**l) else {
                continue;
            };
            if let Some(loc) = index.get(nd::ravel(&local, per_src) as usize) {
                *slot = Some(object[loc.offset as usize..loc.end() as usize].to_vec());
                copied += 1;
            }
        }
        let done = self.store_chunks(coords, &layout, encoded.into(), true)?;
        Ok((done, copied))
    }

    /// Assemble target shard `coords` from decoded source shards and encode it. Returns what
    /// was stored and how many inner chunks were encoded (fill-value chunks are not).
    fn reencode_shard(
        &self,
        coords: &[u64],
        loaded: &HashMap<Vec<u64>, Arc<Loaded>>,
    ) -> Result<(Finalized, u64)> {
        let (sm, tm) = (self.src.metadata(), self.dst.metadata());
        let elem = tm.data_type.size();
        let repr = tm.chunk_repr();
        let mut data = repr.filled()?;
        let origin = nd::mul(coords, &tm.chunk_shape);
        let inside = nd::in_array(&tm.shape, &origin, &tm.chunk_shape);
        for (key, l) in loaded {
            let Loaded::Decoded(shard) = &**l else {
                continue;
            };
            let src_origin = nd::mul(key, &sm.chunk_shape);
            // The box both shards cover (within the array).
            let (lo, size) = nd::intersect(&origin, &inside, &src_origin, &sm.chunk_shape);
            if size.contains(&0) {
                continue;
            }
            nd::copy_box(
                shard,
                &sm.chunk_shape,
                &nd::sub(&lo, &src_origin),
                &mut data,
                &tm.chunk_shape,
                &nd::sub(&lo, &origin),
                &size,
                elem,
            );
        }
        let layout = tm.shard_layout().expect("sharded");
        let arrays = tm.codecs.encode_arrays(&data, &repr)?;
        let encoded = layout.encode_chunks(&arrays, false)?;
        let count = encoded.stored().count() as u64;
        let done = self.store_chunks(coords, &layout, encoded, false)?;
        Ok((done, count))
    }

    /// Write target shard `coords` from its encoded inner chunks (in `self.order`), through
    /// any bytes→bytes codecs after sharding; nothing stored means no object.
    fn store_chunks(
        &self,
        coords: &[u64],
        layout: &ShardLayout,
        encoded: EncodedChunks,
        store_fill_chunks: bool,
    ) -> Result<Finalized> {
        let tm = self.dst.metadata();
        let key = self.dst.shard_key(coords);
        let options = WriteOptions {
            order: self.order,
            store_fill_chunks,
        };
        let layout = Arc::new(layout.clone());
        if tm.supports_partial_reads() {
            let io = self.dst.store().shard_io(&key)?;
            return ShardWriter::new(layout, io, WriteStrategy::Buffered, options)?
                .finish_with(encoded);
        }
        // A codec after sharding: build the shard in memory, then encode it whole.
        let io = MemoryIo::new();
        match ShardWriter::new(layout, &io, WriteStrategy::Buffered, options)?
            .finish_with(encoded)?
        {
            Finalized::Deleted => {
                self.dst.store().delete(&key)?;
                Ok(Finalized::Deleted)
            }
            Finalized::Written { .. } => {
                let object = tm
                    .codecs
                    .encode_bytes_stage(io.bytes().expect("a written shard exists"))?;
                self.dst.store().set(&key, &object)?;
                Ok(Finalized::Written {
                    size: object.len() as u64,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::store::MemoryStore;

    fn huge(shard: u64, inner: u64) -> ArrayMetadata {
        ArrayMetadata::from_json(&json!({
            "zarr_format": 3, "node_type": "array", "shape": [u64::MAX], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [shard]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [inner],
                "codecs": [{"name": "bytes"}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}}]
        }))
        .unwrap()
    }

    /// Shape 2^64 - 1: the last row of target shards (shard 4) starts at 2^64 - 4 and would
    /// end at 2^64; source shards of 2 cover it with shards 2^63 - 2 and 2^63 - 1 (the last,
    /// holding element 2^64 - 2 only). No overflow.
    #[test]
    fn source_shards_of_the_last_row_near_two_to_the_64() {
        let src = Array::create(MemoryStore::new(), huge(2, 1)).unwrap();
        let dst = Array::create(MemoryStore::new(), huge(4, 1)).unwrap();
        let job = Job {
            src: &src,
            dst: &dst,
            order: ChunkOrder::C,
        };
        let last_row = u64::MAX / 4; // target grid: ceil((2^64 - 1) / 4) = 2^62 rows
        assert_eq!(
            job.source_shards_of_row(
                last_row,
                &Plan {
                    sources: None,
                    targets: None
                }
            ),
            vec![vec![(1u64 << 63) - 2], vec![(1u64 << 63) - 1]]
        );
    }
}
