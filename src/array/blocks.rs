//! Blocks of an array that are contiguous in C order, for `export` and `import`: the raw
//! format is the array in C order, so a block can be written (or read) as soon as it is done,
//! and the memory held is one block, never a row of the chunk grid however wide.
//!
//! A block is a run of rows along one dimension (the *level*), whole in every dimension after
//! it, and a single index in every dimension before it. The level is the first dimension whose
//! rows are at most the target size, so a block is about that size; it is moved up to an
//! earlier dimension when cutting there would make the same work be done again (an inner chunk
//! decoded once per row of it, a shard that cannot be written in pieces), as long as the larger
//! block is within the memory limit (for `import` it must be: a shard is written whole).

use crate::error::{shown, Result};
use crate::nd;

/// How an array is cut into blocks ([`Plan::new`]).
pub(crate) struct Plan {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    /// The dimension blocks run along.
    level: usize,
    /// Rows along `level` in a full block.
    rows: u64,
}

/// One block: where it starts and its extent (array coordinates).
pub(crate) struct Block {
    pub(crate) start: Vec<u64>,
    pub(crate) shape: Vec<u64>,
}

impl Plan {
    /// Blocks of about `target` bytes of an array of `shape` (no dimension 0), `elem`-byte
    /// elements, chunk grid `chunk`. `unit[d]`: the rows along `d` a block should hold whole
    /// (an inner chunk's extent for partial reads, a shard's to write it whole); `cut`: whether
    /// a block may cut them (repeating work) when holding them would pass a quarter of `limit`
    /// (the memory limit, [`crate::runtime::limits::memory_limit`]).
    ///
    /// Errors: [`crate::Error::MemoryLimit`] naming `what` when the smallest block that holds
    /// the units whole passes the limit and `cut` is false.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        shape: &[u64],
        chunk: &[u64],
        elem: u64,
        unit: &[u64],
        target: u64,
        limit: u64,
        cut: bool,
        what: &str,
    ) -> Result<Plan> {
        let rank = shape.len();
        let mut plan = Plan {
            shape: shape.to_vec(),
            chunk: chunk.to_vec(),
            level: 0,
            rows: 1,
        };
        if rank == 0 {
            return Ok(plan);
        }
        // row[a]: bytes of one index along `a`, all of the dimensions after it.
        let mut row = vec![elem; rank];
        for d in (0..rank - 1).rev() {
            row[d] = row[d + 1].saturating_mul(shape[d + 1]);
        }
        let target = target.max(elem);
        let fits = (0..rank).find(|&a| row[a] <= target).unwrap_or(rank - 1);
        let held = |d: usize| unit[d].min(shape[d]).max(1);
        // The first dimension that a single index would cut through units.
        let first_cut = (0..rank).find(|&d| held(d) > 1).unwrap_or(rank);
        // Units are held whole up to a quarter of the limit when they may be cut (so one
        // block never takes the limit for itself), up to the limit when they must not be.
        let cap = if cut { limit / 4 } else { limit };
        let holds = |d: usize| held(d).saturating_mul(row[d]) <= cap;
        let level = if fits <= first_cut || (cut && !holds(first_cut)) {
            fits
        } else {
            first_cut
        };
        let least = if level == first_cut && (holds(level) || !cut) {
            held(level)
        } else {
            1
        };
        let mut rows = (target / row[level]).max(least).min(shape[level]);
        // Whole shards, else whole units, so blocks repeat as little as they can.
        if rows >= chunk[level] {
            rows -= rows % chunk[level];
        } else if rows >= unit[level] && unit[level] > 0 {
            rows -= rows % unit[level];
        }
        let mut block_shape = vec![1; rank];
        block_shape[level] = rows;
        block_shape[level + 1..].copy_from_slice(&shape[level + 1..]);
        let bytes = rows.saturating_mul(row[level]);
        if bytes > limit || usize::try_from(bytes).is_err() {
            return Err(crate::Error::MemoryLimit {
                what: format!("{what} of shape {}", shown(&block_shape)),
                needed: bytes,
                limit,
            });
        }
        (plan.level, plan.rows) = (level, rows);
        Ok(plan)
    }

    /// The blocks in C order, made as they are asked for. A block that would reach into the
    /// next shard along the level while holding less than a shard ends at the shard's edge,
    /// so every block after it starts on a shard (and unit) boundary again.
    pub(crate) fn blocks(&self) -> impl Iterator<Item = Block> + '_ {
        let rank = self.shape.len();
        let empty = self.shape.contains(&0);
        let level = self.level;
        let prefixes: u64 = if rank == 0 || empty {
            u64::from(!empty)
        } else {
            self.shape[..level].iter().product()
        };
        let (mut p, mut x0) = (0u64, 0u64);
        std::iter::from_fn(move || {
            if p >= prefixes {
                return None;
            }
            if rank == 0 {
                p += 1;
                return Some(Block {
                    start: vec![],
                    shape: vec![],
                });
            }
            let along = self.shape[level];
            let c = self.chunk[level];
            let mut end = along.min(x0.saturating_add(self.rows));
            if self.rows < c {
                end = end.min((x0 / c).saturating_add(1).saturating_mul(c));
            }
            let mut start = nd::unravel(p, &self.shape[..level]);
            start.push(x0);
            start.resize(rank, 0);
            let mut shape = vec![1; level];
            shape.push(end - x0);
            shape.extend_from_slice(&self.shape[level + 1..]);
            x0 = end;
            if x0 >= along {
                (p, x0) = (p + 1, 0);
            }
            Some(Block { start, shape })
        })
    }
}

impl Block {
    /// The C-order positions of the chunk grid `grid` (cells `chunk`) the block touches:
    /// `lo..hi`. Every position in between is touched (the block is whole after its level
    /// and one index before it).
    pub(crate) fn shard_range(&self, chunk: &[u64], grid: &[u64]) -> (u64, u64) {
        let first: Vec<u64> = self.start.iter().zip(chunk).map(|(s, c)| s / c).collect();
        let last: Vec<u64> = (self.start.iter().zip(&self.shape).zip(chunk))
            .map(|((s, n), c)| (s + n - 1) / c)
            .collect();
        (nd::ravel(&first, grid), nd::ravel(&last, grid) + 1)
    }

    /// The block's bytes.
    pub(crate) fn bytes(&self, elem: u64) -> u64 {
        self.shape.iter().fold(elem, |a, &n| a.saturating_mul(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(plan: &Plan) -> Vec<(Vec<u64>, Vec<u64>)> {
        plan.blocks().map(|b| (b.start, b.shape)).collect()
    }

    /// Blocks cover the array once, in C order, and are contiguous in it.
    fn covers(plan: &Plan, shape: &[u64]) {
        let mut next = 0u64;
        for (start, extent) in all(plan) {
            assert_eq!(nd::ravel(&start, shape), next, "{start:?} {extent:?}");
            next += extent.iter().product::<u64>();
        }
        assert_eq!(next, shape.iter().product::<u64>());
    }

    #[test]
    fn blocks_by_hand() {
        // Rows of 8 KiB, shards of 1024 rows: 16 KiB target → 2 rows, inside one shard row.
        let p = Plan::new(
            &[4096, 4096],
            &[1024, 1024],
            2,
            &[64, 64],
            16 << 10,
            4 << 30,
            true,
            "b",
        )
        .unwrap();
        assert_eq!(
            (p.level, p.rows),
            (0, 64),
            "rounded up to a whole inner chunk"
        );
        covers(&p, &[4096, 4096]);
        // Whole shard rows when they fit.
        let p = Plan::new(
            &[4096, 4096],
            &[1024, 1024],
            2,
            &[64, 64],
            16 << 20,
            4 << 30,
            true,
            "b",
        )
        .unwrap();
        assert_eq!((p.level, p.rows), (0, 2048));
        assert_eq!(all(&p)[1], (vec![2048, 0], vec![2048, 4096]));
        // One wide row of 1-element shards: cut along the row, 1 KiB at a time.
        let p = Plan::new(&[1, 1 << 20], &[1, 1], 1, &[1, 1], 1024, 4 << 30, true, "b").unwrap();
        assert_eq!((p.level, p.rows), (1, 1024));
        assert_eq!(all(&p).len(), 1024);
        covers(&p, &[1, 1 << 20]);
        // Units cut along a level before the one that fits: held whole when allowed...
        let p = Plan::new(
            &[4, 1 << 20],
            &[4, 8],
            1,
            &[4, 8],
            1024,
            4 << 30,
            false,
            "b",
        )
        .unwrap();
        assert_eq!((p.level, p.rows), (0, 4));
        // ... cut when they may be and would pass the limit (blocks stop at shard edges).
        let p = Plan::new(&[4, 1 << 20], &[4, 8], 1, &[4, 8], 1024, 1 << 20, true, "b").unwrap();
        let refused = Plan::new(
            &[4, 1 << 20],
            &[4, 8],
            1,
            &[4, 8],
            1024,
            1 << 20,
            false,
            "a block",
        );
        assert_eq!((p.level, p.rows), (1, 1024));
        covers(&p, &[4, 1 << 20]);
        assert_eq!(
            refused.err().unwrap().to_string(),
            "memory limit: a block of shape [4, 1048576] needs 4194304 bytes, more than the limit of 1048576 (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)"
        );
        let p = Plan::new(&[10], &[4], 1, &[2], 3, 4 << 30, true, "b").unwrap();
        assert_eq!(
            all(&p),
            vec![
                (vec![0], vec![2]),
                (vec![2], vec![2]),
                (vec![4], vec![2]),
                (vec![6], vec![2]),
                (vec![8], vec![2])
            ]
        );
        let b = Block {
            start: vec![3, 2],
            shape: vec![1, 6],
        };
        assert_eq!(b.shard_range(&[2, 4], &[5, 2]), (2, 4));
    }
}
