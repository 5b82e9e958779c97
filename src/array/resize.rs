//! Changing an array's shape in place. Whatever lies outside the new shape is deleted — shards
//! and inner chunks wholly outside, and the part of an edge chunk past a shrunken edge reset
//! to the fill value — so that growing the array again shows fill, never stale data. Growing
//! checks the same way that nothing stale lies in the newly exposed part (an earlier, longer
//! array's leftovers, a crash between writes).

use crate::array::Array;
use crate::error::{Error, Result};
use crate::nd;
use crate::storage::store::Store;

impl<S: Store> Array<S> {
    /// Set the array's shape to `shape` (same rank; any dimension may grow or shrink), first
    /// writing the frames pending from [`Array::append`].
    ///
    /// Order, so that a crash never exposes stale data: when some dimension shrinks,
    /// `zarr.json` is written first with the shape both old and new cover; then the stored
    /// shards that reach past that shape along a changed dimension are cut back (deleted when
    /// wholly past it; otherwise decoded, the part past it set to the fill value and written
    /// anew, which leaves no chunk that is all fill); then `zarr.json` with the new shape.
    /// Shards are visited through one listing when the store lists ([`Store::list_prefix`]),
    /// else every position of the grid not wholly inside the kept shape is asked. Memory: the
    /// shards being rewritten (in parallel), two decoded copies each.
    ///
    /// Errors: [`Error::Unsupported`] (not a Zarr v3 array); [`Error::InvalidArgument`] (rank,
    /// or a grid of more than 2^64 shards); the codecs' and the store's errors.
    pub fn resize(&mut self, shape: &[u64]) -> Result<()> {
        self.check_v3("resizing")?;
        let old = self.shape().to_vec();
        if shape.len() != old.len() {
            return Err(Error::InvalidArgument(format!(
                "resize: the array has rank {}, the new shape {}",
                old.len(),
                shape.len()
            )));
        }
        self.end_appending()?;
        if shape == old {
            return Ok(());
        }
        // Shards are cut back or deleted below: none of the cached indexes is kept.
        let resized = self.resize_stored(shape, &old);
        self.forget_cached_indexes();
        resized
    }

    /// [`Array::resize`] from `old` to `shape` (checked, and different).
    fn resize_stored(&mut self, shape: &[u64], old: &[u64]) -> Result<()> {
        let cs = self.metadata().chunk_shape.clone();
        let widest: Vec<u64> = old.iter().zip(shape).map(|(a, b)| *a.max(b)).collect();
        let grid_of =
            |s: &[u64]| -> Vec<u64> { s.iter().zip(&cs).map(|(s, c)| s.div_ceil(*c)).collect() };
        crate::codec::checked_product(&grid_of(shape))?;
        let kept: Vec<u64> = old.iter().zip(shape).map(|(a, b)| *a.min(b)).collect();
        // Only changed dimensions have an edge to cut at; elsewhere nothing moves.
        let limit: Vec<u64> = (0..old.len())
            .map(|d| {
                if old[d] == shape[d] {
                    u64::MAX
                } else {
                    kept[d]
                }
            })
            .collect();
        if kept != old {
            self.write_shape(&kept)?;
        }
        self.cut_back(&grid_of(&widest), &limit)?;
        if kept != shape {
            self.write_shape(shape)?;
        }
        Ok(())
    }

    /// Set the shape in memory and write `zarr.json`.
    fn write_shape(&mut self, shape: &[u64]) -> Result<()> {
        self.meta_mut().shape = shape.to_vec();
        self.store()
            .set("zarr.json", &self.metadata().to_json_bytes())
    }

    /// Delete or cut back every stored shard of `grid` that reaches `limit` along some
    /// dimension.
    fn cut_back(&self, grid: &[u64], limit: &[u64]) -> Result<()> {
        let cs = self.metadata().chunk_shape.clone();
        let reaches = |c: &[u64]| (0..c.len()).any(|d| (c[d] + 1).saturating_mul(cs[d]) > limit[d]);
        let (prefix, separator) = self.key_pattern();
        let touched: Vec<Vec<u64>> = match self.store().list_prefix(&prefix)? {
            Some(keys) => keys
                .iter()
                .filter_map(|k| self.coords_of(k, grid, &prefix, separator))
                .filter(|c| reaches(c))
                .collect(),
            None => {
                let mut stored = Vec::new();
                for c in nd::c_order(grid).filter(|c| reaches(c)) {
                    if self
                        .store()
                        .shard_io(&self.shard_key(&c))?
                        .size()?
                        .is_some()
                    {
                        stored.push(c);
                    }
                }
                stored
            }
        };
        let fill = self.fill_shard()?;
        let elem = self.metadata().data_type.size();
        self.map_io(touched.len(), |i| {
            let c = &touched[i];
            let key = self.shard_key(c);
            if (0..c.len()).any(|d| c[d].saturating_mul(cs[d]) >= limit[d]) {
                return self.store().delete(&key);
            }
            let Some(mut shard) = self.read_shard(c)? else {
                return Ok(());
            };
            let before = shard.clone();
            for d in 0..c.len() {
                let origin = c[d] * cs[d];
                if origin + cs[d] > limit[d] {
                    let mut start = vec![0; cs.len()];
                    start[d] = limit[d] - origin;
                    let mut extent = cs.clone();
                    extent[d] = cs[d] - start[d];
                    nd::copy_box(&fill, &cs, &start, &mut shard, &cs, &start, &extent, elem);
                }
            }
            if shard != before {
                self.write_shard(c, &shard)?;
            }
            Ok(())
        })?;
        Ok(())
    }
}
