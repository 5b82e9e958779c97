//! Appending along one axis, as an acquisition writes frame after frame: frames are gathered
//! in memory per shard layer (the shards that share one grid position along the axis) and
//! each shard is written once, whole, when its layer is complete, so appending leaves no dead
//! bytes and holds at most one layer in memory. `zarr.json` is written after each layer, so a
//! crash leaves every completed layer readable under a shape that covers only written data;
//! [`Array::flush`] writes a partial layer (its shards are rewritten whole when later frames
//! complete it).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::nd;
use crate::storage::store::Store;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

/// The shard layer frames are being appended to.
pub(crate) struct PendingLayer {
    /// The axis appended along.
    axis: usize,
    /// The layer's shard grid coordinate along `axis`.
    layer: u64,
    /// Rows (along `axis`) of the layer that hold data.
    filled: u64,
    /// Rows of the layer stored when it was last written (`zarr.json`'s shape ends there).
    written: u64,
    /// One decoded shard per grid position of the layer, in C order over the other axes.
    shards: Vec<Vec<u8>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<S: Store> Array<S> {
    /// Append `data` (C order, native byte order), a block of extent `block_shape`, at the end
    /// of `axis`, growing the array's shape by `block_shape[axis]`: one frame of a time series
    /// is `block_shape[axis] = 1`. `block_shape` equals the array's shape along every other
    /// axis.
    ///
    /// Frames are kept in memory until the shard layer they belong to is complete (its shards
    /// are then each written once, whole, and `zarr.json` after them) or [`Array::flush`] is
    /// called; region reads ([`Array::read_region`], export) see them at once, [`Array::read_shard`]
    /// and the walks over stored shards (verify, compact, references) only once written.
    /// Memory: one layer of shards along `axis` (its decoded size, checked against the memory
    /// limit when the layer is started). Appending to an array whose last layer is partly
    /// stored first reads that layer's shards back. Appending along another axis than the
    /// frames pending writes them first. Dropping the array flushes, ignoring errors (as
    /// `std::io::BufWriter` does): call [`Array::flush`] to see them.
    ///
    /// Errors: [`Error::Unsupported`] (not a Zarr v3 array); [`Error::InvalidArgument`] (rank,
    /// axis, a block shape that does not match the array's other extents or is 0 along
    /// `axis`, a shape past 2^64); [`Error::BufferSize`] (`data`'s length); [`Error::MemoryLimit`]
    /// (one layer is larger than the memory limit); the codecs' and the store's errors. After
    /// a store error the block was taken if the shape grew (its rows stay pending: a later
    /// `append` or [`Array::flush`] writes them again), not taken if it did not (an error
    /// reading back a partly stored layer).
    pub fn append(&mut self, axis: usize, block_shape: &[u64], data: &[u8]) -> Result<()> {
        self.check_v3("appending")?;
        let shape = self.shape().to_vec();
        let rank = shape.len();
        if block_shape.len() != rank || axis >= rank {
            return Err(Error::InvalidArgument(format!(
                "append: the array has rank {rank}; got a block of rank {} along axis {axis}",
                block_shape.len()
            )));
        }
        let mismatch = (0..rank).find(|&d| d != axis && block_shape[d] != shape[d]);
        if let Some(d) = mismatch {
            return Err(Error::InvalidArgument(format!(
                "append along axis {axis}: the block's extent along axis {d} is {}, the array's is {}",
                block_shape[d], shape[d]
            )));
        }
        if block_shape[axis] == 0 {
            return Err(Error::InvalidArgument(format!(
                "append along axis {axis}: the block has no rows along it"
            )));
        }
        let elem = self.metadata().data_type.size();
        let block_bytes = crate::array::region::region_bytes(block_shape, elem)?;
        crate::codec::check_len(data.len(), block_bytes)?;
        let end = shape[axis].checked_add(block_shape[axis]).ok_or_else(|| {
            Error::InvalidArgument(format!("append: axis {axis} would pass 2^64 elements"))
        })?;
        let mut grown = shape.clone();
        grown[axis] = end;
        let grown_grid: Vec<u64> = grown
            .iter()
            .zip(&self.metadata().chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        crate::codec::checked_product(&grown_grid)?;

        if lock(&self.pending).as_ref().is_some_and(|p| p.axis != axis) {
            self.end_appending()?;
        }
        let mut pending = match lock(&self.pending).take() {
            Some(p) => p,
            None => self.start_layer(axis)?,
        };
        let result = self.append_rows(&mut pending, block_shape, data);
        *lock(&self.pending) = Some(pending);
        self.appending.store(true, Ordering::Release);
        result
    }

    /// Copy the block's rows into the pending layer, writing each layer as it completes.
    fn append_rows(
        &mut self,
        pending: &mut PendingLayer,
        block_shape: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let axis = pending.axis;
        let cs = self.metadata().chunk_shape.clone();
        let elem = self.metadata().data_type.size();
        let mut row = 0;
        loop {
            if pending.filled == cs[axis] {
                // A complete layer: written now (or again, after a write that failed).
                if pending.written != pending.filled {
                    self.write_layer(pending)?;
                }
                // The next layer starts as fill: nothing is stored past the shape.
                pending.layer += 1;
                pending.filled = 0;
                pending.written = 0;
                let fill = self.fill_shard()?;
                pending
                    .shards
                    .iter_mut()
                    .for_each(|s| s.copy_from_slice(&fill));
            }
            if row == block_shape[axis] {
                break;
            }
            let rows = (block_shape[axis] - row).min(cs[axis] - pending.filled);
            let coords = self.layer_coords(axis, pending.layer);
            for (shard, c) in pending.shards.iter_mut().zip(&coords) {
                let mut src_start = vec![0; cs.len()];
                let mut dst_start = vec![0; cs.len()];
                let mut region = vec![0; cs.len()];
                for d in 0..cs.len() {
                    if d == axis {
                        src_start[d] = row;
                        dst_start[d] = pending.filled;
                        region[d] = rows;
                    } else {
                        src_start[d] = c[d] * cs[d];
                        region[d] = cs[d].min(block_shape[d] - src_start[d]);
                    }
                }
                nd::copy_box(
                    data,
                    block_shape,
                    &src_start,
                    shard,
                    &cs,
                    &dst_start,
                    &region,
                    elem,
                );
            }
            pending.filled += rows;
            self.meta_shape_mut()[axis] += rows;
            row += rows;
        }
        Ok(())
    }

    /// Write the frames appended and not yet stored: the partial shard layer's shards (each
    /// whole, as a new object) and then `zarr.json` with the shape that covers them. Nothing
    /// to do when nothing is pending. Not to be called concurrently with region writes.
    ///
    /// Errors: the codecs' and the store's errors (the frames stay pending).
    pub fn flush(&self) -> Result<()> {
        if !self.appending.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut guard = lock(&self.pending);
        let Some(pending) = guard.as_mut() else {
            return Ok(());
        };
        if pending.filled == pending.written {
            return Ok(());
        }
        self.write_layer(pending)
    }

    /// Flush and forget the pending layer (before a change of shape).
    pub(crate) fn end_appending(&mut self) -> Result<()> {
        self.flush()?;
        *lock(&self.pending) = None;
        self.appending.store(false, Ordering::Release);
        Ok(())
    }

    /// Write every shard of the pending layer, then `zarr.json` (whose shape, the array's,
    /// ends at the layer's last filled row).
    fn write_layer(&self, pending: &mut PendingLayer) -> Result<()> {
        let coords = self.layer_coords(pending.axis, pending.layer);
        self.map_io(coords.len(), |i| {
            self.write_shard(&coords[i], &pending.shards[i]).map(|_| ())
        })?;
        self.store()
            .set("zarr.json", &self.metadata().to_json_bytes())?;
        pending.written = pending.filled;
        Ok(())
    }

    /// A new pending layer at the end of `axis`: the layer holding the last row (its stored
    /// shards read back, anything past the shape reset to fill), or a new one.
    fn start_layer(&self, axis: usize) -> Result<PendingLayer> {
        let meta = self.metadata();
        let cs = &meta.chunk_shape;
        let len = meta.shape[axis];
        let layer = len / cs[axis];
        let filled = len - layer * cs[axis];
        let coords = self.layer_coords(axis, layer);
        let shard_bytes = meta.chunk_repr().byte_size()?;
        let total = shard_bytes.saturating_mul(coords.len() as u64);
        crate::runtime::limits::buffer_len(total, &format!("one shard layer along axis {axis}"))?;
        let fill = self.fill_shard()?;
        let elem = meta.data_type.size();
        let mut shards = Vec::with_capacity(coords.len());
        for c in &coords {
            let mut shard = match filled {
                0 => None,
                _ => self.read_shard(c)?,
            }
            .unwrap_or_else(|| fill.clone());
            // Rows past the shape may hold what an earlier, longer array left.
            let mut start = vec![0; cs.len()];
            start[axis] = filled;
            let mut region = cs.clone();
            region[axis] = cs[axis] - filled;
            nd::copy_box(&fill, cs, &start, &mut shard, cs, &start, &region, elem);
            shards.push(shard);
        }
        Ok(PendingLayer {
            axis,
            layer,
            filled,
            written: filled,
            shards,
        })
    }

    /// One shard of fill value, decoded.
    pub(crate) fn fill_shard(&self) -> Result<Vec<u8>> {
        let meta = self.metadata();
        let bytes = meta.chunk_repr().byte_size()?;
        let mut fill = vec![0u8; crate::runtime::limits::buffer_len(bytes, "a shard")?];
        meta.fill_value.fill(&mut fill);
        Ok(fill)
    }

    /// The grid coordinates of the shards of layer `layer` along `axis`, in C order.
    fn layer_coords(&self, axis: usize, layer: u64) -> Vec<Vec<u64>> {
        let mut grid = self.metadata().grid_shape();
        grid[axis] = 1;
        nd::c_order(&grid)
            .map(|mut c| {
                c[axis] = layer;
                c
            })
            .collect()
    }

    /// Copy the pending rows that fall in the region at `start` of extent `shape` into `out`
    /// (the region's bytes): region reads see appended frames before they are written.
    pub(crate) fn read_pending(&self, start: &[u64], shape: &[u64], out: &mut [u8]) {
        let (cs, elem) = (
            &self.metadata().chunk_shape,
            self.metadata().data_type.size(),
        );
        self.pending_boxes(start, shape, |shard, in_shard, in_region, extent| {
            nd::copy_box(shard, cs, in_shard, out, shape, in_region, extent, elem)
        });
    }

    /// Copy the region's bytes `data` into the pending rows it covers, so that the layer's
    /// later write keeps what a region write put there.
    pub(crate) fn write_pending(&self, start: &[u64], shape: &[u64], data: &[u8]) {
        let (cs, elem) = (
            &self.metadata().chunk_shape,
            self.metadata().data_type.size(),
        );
        self.pending_boxes(start, shape, |shard, in_shard, in_region, extent| {
            nd::copy_box(data, shape, in_region, shard, cs, in_shard, extent, elem)
        });
    }

    /// Call `f(shard, start in shard, start in region, extent)` for each pending shard's
    /// filled rows that meet the region at `start` of extent `shape`.
    fn pending_boxes(
        &self,
        start: &[u64],
        shape: &[u64],
        mut f: impl FnMut(&mut [u8], &[u64], &[u64], &[u64]),
    ) {
        if !self.appending.load(Ordering::Acquire) {
            return;
        }
        let mut guard = lock(&self.pending);
        let Some(pending) = guard.as_mut() else {
            return;
        };
        let meta = self.metadata();
        let (axis, cs, rank) = (pending.axis, &meta.chunk_shape, meta.chunk_shape.len());
        let layer_start = pending.layer * cs[axis];
        let coords = self.layer_coords(axis, pending.layer);
        for (shard, c) in pending.shards.iter_mut().zip(&coords) {
            let origin: Vec<u64> = (0..rank)
                .map(|d| if d == axis { layer_start } else { c[d] * cs[d] })
                .collect();
            let end = |d: usize| match d == axis {
                true => layer_start + pending.filled,
                false => (origin[d] + cs[d]).min(meta.shape[d]),
            };
            let lo: Vec<u64> = (0..rank).map(|d| origin[d].max(start[d])).collect();
            let hi: Vec<u64> = (0..rank).map(|d| end(d).min(start[d] + shape[d])).collect();
            if (0..rank).any(|d| lo[d] >= hi[d]) {
                continue;
            }
            let in_shard: Vec<u64> = (0..rank).map(|d| lo[d] - origin[d]).collect();
            let in_region: Vec<u64> = (0..rank).map(|d| lo[d] - start[d]).collect();
            let extent: Vec<u64> = (0..rank).map(|d| hi[d] - lo[d]).collect();
            f(shard, &in_shard, &in_region, &extent);
        }
    }

    /// True when rows are pending along some axis at or after `start`'s position on it.
    pub(crate) fn pending_overlaps(&self, start: &[u64], shape: &[u64]) -> bool {
        if !self.appending.load(Ordering::Acquire) {
            return false;
        }
        let guard = lock(&self.pending);
        let Some(p) = guard.as_ref() else {
            return false;
        };
        let cs = self.metadata().chunk_shape[p.axis];
        let lo = p.layer * cs;
        start[p.axis] < lo + cs && start[p.axis] + shape[p.axis] > lo
    }

    fn meta_shape_mut(&mut self) -> &mut Vec<u64> {
        &mut self.meta_mut().shape
    }
}
