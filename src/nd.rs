//! N-dimensional helpers: C-order strides, coordinate (un)ravelling, block copies. Every layer
//! (the shard index, regions, export and import, repack, the tool) walks grids and moves boxes
//! between C-order buffers, so that arithmetic lives here once, and the box copy that region
//! reads and writes run once per inner chunk is the one place tuned for speed.

/// Linear C-order index of `coords` in a grid of `shape`.
pub fn ravel(coords: &[u64], shape: &[u64]) -> u64 {
    coords
        .iter()
        .zip(shape)
        .fold(0u64, |acc, (&c, &s)| acc * s + c)
}

/// Coordinates of linear C-order index `i` in a grid of `shape`.
pub fn unravel(mut i: u64, shape: &[u64]) -> Vec<u64> {
    let mut coords = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        coords[d] = i % shape[d];
        i /= shape[d];
    }
    coords
}

/// Every coordinate of a grid of `shape`, in C order.
pub fn c_order(shape: &[u64]) -> impl Iterator<Item = Vec<u64>> + '_ {
    let n: u64 = shape.iter().product();
    (0..n).map(move |i| unravel(i, shape))
}

/// Linear C-order indices of a grid of `shape`, sorted in (compressed) Morton order: the
/// coordinate bits interleaved lowest first, dimension 0 first at each level, dimensions that
/// have run out of bits skipped. This is the order zarr-python and neuroglancer use, so
/// neighbouring inner chunks sit near each other in the shard.
pub fn morton_order(shape: &[u64]) -> Vec<u64> {
    let bits: Vec<u32> = shape
        .iter()
        .map(|&s| 64 - s.saturating_sub(1).leading_zeros())
        .collect();
    let max_bits = bits.iter().copied().max().unwrap_or(0);
    let code = |coords: &[u64]| -> u128 {
        let (mut z, mut out_bit) = (0u128, 0u32);
        for b in 0..max_bits {
            for (d, &c) in coords.iter().enumerate() {
                if b < bits[d] {
                    z |= (((c >> b) & 1) as u128) << out_bit;
                    out_bit += 1;
                }
            }
        }
        z
    };
    let n: u64 = shape.iter().product();
    let mut order: Vec<(u128, u64)> = (0..n).map(|i| (code(&unravel(i, shape)), i)).collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

/// Copy the box of extent `region` from `src` (C order, `src_shape`) at `src_start` to `dst`
/// (C order, `dst_shape`) at `dst_start`. Elements are `elem` bytes. The caller guarantees the
/// box lies inside both arrays (a box reaching outside either panics on a slice bound).
///
/// Region reads and writes call this once per inner chunk, so it is built for many small
/// boxes: trailing dimensions whole in both arrays merge into one contiguous run, the strides
/// live on the stack up to rank 8 (no allocation per call), the last outer dimension is a
/// tight loop, and runs of 2–256 bytes (a power of two: an inner chunk's row) are copied with
/// their length known at compile time, so inline moves instead of a `memmove` call per row.
#[allow(clippy::too_many_arguments)]
pub fn copy_box(
    src: &[u8],
    src_shape: &[u64],
    src_start: &[u64],
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_start: &[u64],
    region: &[u64],
    elem: usize,
) {
    copy_box_to(
        src, src_shape, src_start, dst, dst_shape, dst_start, region, elem,
    )
}

/// Where [`copy_box`] writes: a slice, or a region read's output shared between threads
/// ([`DisjointOut`]).
pub(crate) trait BoxDst {
    /// Copy `src` to bytes `at..at + src.len()`; panics when they lie outside.
    fn put(&mut self, at: usize, src: &[u8]);
}

impl BoxDst for [u8] {
    #[inline(always)]
    fn put(&mut self, at: usize, src: &[u8]) {
        self[at..at + src.len()].copy_from_slice(src);
    }
}

/// [`copy_box`] into any [`BoxDst`].
#[allow(clippy::too_many_arguments)]
pub(crate) fn copy_box_to<D: BoxDst + ?Sized>(
    src: &[u8],
    src_shape: &[u64],
    src_start: &[u64],
    dst: &mut D,
    dst_shape: &[u64],
    dst_start: &[u64],
    region: &[u64],
    elem: usize,
) {
    let rank = region.len();
    if region.contains(&0) {
        return;
    }
    if rank == 0 {
        dst.put(0, &src[..elem]);
        return;
    }
    // Merge trailing dimensions that are whole in source, destination and region, so a
    // contiguous block is one run; dimensions [0, outer) remain.
    let mut outer = rank - 1;
    let mut run = region[rank - 1] as usize * elem;
    while outer > 0
        && region[outer] == src_shape[outer]
        && region[outer] == dst_shape[outer]
        && src_start[outer] == 0
        && dst_start[outer] == 0
    {
        outer -= 1;
        run *= region[outer] as usize;
    }
    // Source strides, destination strides and the odometer, on the stack up to rank 8.
    let mut stack = [0usize; 24];
    let mut heap = Vec::new();
    let space: &mut [usize] = if rank <= 8 {
        &mut stack[..3 * rank]
    } else {
        heap.resize(3 * rank, 0);
        &mut heap
    };
    let (ss, rest) = space.split_at_mut(rank);
    let (ds, idx) = rest.split_at_mut(rank);
    (ss[rank - 1], ds[rank - 1]) = (elem, elem);
    for d in (0..rank - 1).rev() {
        ss[d] = ss[d + 1] * src_shape[d + 1] as usize;
        ds[d] = ds[d + 1] * dst_shape[d + 1] as usize;
    }
    let offset = |start: &[u64], strides: &[usize]| -> usize {
        start
            .iter()
            .zip(strides)
            .map(|(&a, &s)| a as usize * s)
            .sum()
    };
    let (mut so, mut dof) = (offset(src_start, ss), offset(dst_start, ds));
    if outer == 0 {
        dst.put(dof, &src[so..so + run]);
        return;
    }
    // Dimension `outer - 1` is walked by `Rows`, the ones before it by an odometer.
    let last = outer - 1;
    let rows = Rows {
        count: region[last] as usize,
        src_step: ss[last],
        dst_step: ds[last],
    };
    loop {
        rows.copy(src, so, dst, dof, run);
        let mut d = last;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            so += ss[d];
            dof += ds[d];
            if idx[d] < region[d] as usize {
                break;
            }
            so -= ss[d] * region[d] as usize;
            dof -= ds[d] * region[d] as usize;
            idx[d] = 0;
        }
    }
}

/// `count` runs, each `src_step` bytes after the last in the source and `dst_step` in the
/// destination: one dimension of [`copy_box`].
struct Rows {
    count: usize,
    src_step: usize,
    dst_step: usize,
}

impl Rows {
    /// Copy the runs of `run` bytes starting at `so` in `src` and `dof` in `dst`. Each common
    /// row length gets its own inlined copy of [`Rows::copy_len`], with the length a constant.
    fn copy<D: BoxDst + ?Sized>(&self, src: &[u8], so: usize, dst: &mut D, dof: usize, run: usize) {
        match run {
            2 => self.copy_len(src, so, dst, dof, 2),
            4 => self.copy_len(src, so, dst, dof, 4),
            8 => self.copy_len(src, so, dst, dof, 8),
            16 => self.copy_len(src, so, dst, dof, 16),
            32 => self.copy_len(src, so, dst, dof, 32),
            64 => self.copy_len(src, so, dst, dof, 64),
            128 => self.copy_len(src, so, dst, dof, 128),
            256 => self.copy_len(src, so, dst, dof, 256),
            _ => self.copy_len(src, so, dst, dof, run),
        }
    }

    /// The runs, `len` bytes each; inlined, so a constant `len` is a fixed-size copy.
    #[inline(always)]
    fn copy_len<D: BoxDst + ?Sized>(
        &self,
        src: &[u8],
        mut so: usize,
        dst: &mut D,
        mut dof: usize,
        len: usize,
    ) {
        for _ in 0..self.count {
            dst.put(dof, &src[so..so + len]);
            so += self.src_step;
            dof += self.dst_step;
        }
    }
}

/// Element-wise product: a cell's origin from its grid coordinates and the cell shape.
pub(crate) fn mul(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x * y).collect()
}

/// Element-wise difference `a - b` (`a ≥ b` in every dimension).
pub(crate) fn sub(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(x, y)| x - y).collect()
}

/// The box two boxes (origin, shape) share: its origin and shape; a shape with a 0 where they
/// do not overlap. A box reaching past 2^64 - 1 (the last shard of an array whose shape is
/// near 2^64) is cut there: no array has elements beyond it, so with one box inside an array
/// the result is exact, and it never overflows.
pub(crate) fn intersect(
    a: &[u64],
    a_shape: &[u64],
    b: &[u64],
    b_shape: &[u64],
) -> (Vec<u64>, Vec<u64>) {
    let start: Vec<u64> = a.iter().zip(b).map(|(x, y)| *x.max(y)).collect();
    let extent = (0..a.len())
        .map(|d| {
            a[d].saturating_add(a_shape[d])
                .min(b[d].saturating_add(b_shape[d]))
                .saturating_sub(start[d])
        })
        .collect();
    (start, extent)
}

/// The part of a `cell`-shaped box at `origin` that lies inside an array of `shape`.
pub(crate) fn in_array(shape: &[u64], origin: &[u64], cell: &[u64]) -> Vec<u64> {
    (0..shape.len())
        .map(|d| cell[d].min(shape[d] - origin[d]))
        .collect()
}

/// A region read's output buffer, written by many threads at once: each inner chunk's part of
/// the region by the one thread that claims the chunk. The region is cut along the inner
/// chunk grid, so the parts of different chunks are disjoint, and a claim is taken once per
/// chunk (a bit per chunk of the region, set atomically): two threads can never write the same
/// byte. This is the crate's one `unsafe` outside the C ABI and the blosc binding; it lets
/// the decode of a region split by (shard × run of inner chunks) instead of by bands of rows,
/// so the work has as many pieces as the region has chunks, whatever its shape.
pub(crate) struct DisjointOut<'a> {
    ptr: *mut u8,
    len: usize,
    start: Vec<u64>,
    shape: Vec<u64>,
    chunk: Vec<u64>,
    elem: usize,
    /// The region's first inner chunk (grid coordinates) and how many it touches per dimension.
    first: Vec<u64>,
    cells: Vec<u64>,
    claimed: Vec<std::sync::atomic::AtomicU64>,
    _out: std::marker::PhantomData<&'a mut [u8]>,
}

// SAFETY: the buffer is only written through `DisjointOut::put_chunk`, which writes only the
// bytes of the chunk it claimed, and claims each chunk once; the `&'a mut` borrow it holds
// keeps every other access out for its lifetime.
unsafe impl Send for DisjointOut<'_> {}
unsafe impl Sync for DisjointOut<'_> {}

impl<'a> DisjointOut<'a> {
    /// `out` holds the region `[start, start + shape)` (C order, `elem`-byte elements, no
    /// dimension empty) of an array cut into inner chunks of shape `chunk`. The claims take a
    /// bit per inner chunk the region touches: at most one per 8 elements of `out`.
    pub(crate) fn new(
        out: &'a mut [u8],
        start: &[u64],
        shape: &[u64],
        chunk: &[u64],
        elem: usize,
    ) -> Self {
        let bytes = shape.iter().fold(elem as u64, |n, &x| n.saturating_mul(x));
        assert_eq!(out.len() as u64, bytes, "the region's buffer");
        let first: Vec<u64> = start.iter().zip(chunk).map(|(s, c)| s / c).collect();
        let cells: Vec<u64> = (0..start.len())
            .map(|d| (start[d] + shape[d] - 1) / chunk[d] + 1 - first[d])
            .collect();
        let n = cells.iter().product::<u64>().div_ceil(64) as usize;
        DisjointOut {
            ptr: out.as_mut_ptr(),
            len: out.len(),
            start: start.to_vec(),
            shape: shape.to_vec(),
            chunk: chunk.to_vec(),
            elem,
            first,
            cells,
            claimed: (0..n).map(|_| Default::default()).collect(),
            _out: std::marker::PhantomData,
        }
    }

    /// Copy the part of the region that inner chunk `cell` (grid coordinates) covers from
    /// `src`, the whole chunk decoded (C order). Panics when the chunk lies outside the region
    /// or was written before: either is a bug of the caller, never of the input.
    pub(crate) fn put_chunk(&self, cell: &[u64], src: &[u8]) {
        let rank = self.start.len();
        assert_eq!(cell.len(), rank, "an inner chunk of another rank");
        let mut bit = 0u64;
        for ((&c, &first), &n) in cell.iter().zip(&self.first).zip(&self.cells) {
            let i = c.checked_sub(first).filter(|&i| i < n);
            bit = bit * n + i.expect("an inner chunk outside the region");
        }
        let mask = 1u64 << (bit % 64);
        let was =
            self.claimed[(bit / 64) as usize].fetch_or(mask, std::sync::atomic::Ordering::Relaxed);
        assert!(was & mask == 0, "an inner chunk written twice");
        let (mut from, mut to, mut extent) = (vec![0; rank], vec![0; rank], vec![0; rank]);
        for d in 0..rank {
            let origin = cell[d] * self.chunk[d];
            let lo = self.start[d].max(origin);
            let hi = (self.start[d] + self.shape[d]).min(origin.saturating_add(self.chunk[d]));
            (from[d], to[d], extent[d]) = (lo - origin, lo - self.start[d], hi - lo);
        }
        let mut dst = Claimed {
            ptr: self.ptr,
            len: self.len,
        };
        copy_box_to(
            src,
            &self.chunk,
            &from,
            &mut dst,
            &self.shape,
            &to,
            &extent,
            self.elem,
        );
    }
}

/// The writes of one claimed chunk into a [`DisjointOut`]'s buffer.
struct Claimed {
    ptr: *mut u8,
    len: usize,
}

impl BoxDst for Claimed {
    #[inline(always)]
    fn put(&mut self, at: usize, src: &[u8]) {
        assert!(
            at <= self.len && src.len() <= self.len - at,
            "outside the region's buffer"
        );
        // SAFETY: in bounds (checked above), and these bytes belong to the chunk this thread
        // claimed (`DisjointOut::put_chunk`), so no other thread reads or writes them now.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(at), src.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `DisjointOut`: two threads write the parts of a region's inner chunks into one buffer
    /// (the region cuts chunks at its edges), giving what one `copy_box` per chunk into a
    /// slice gives; a chunk claimed twice or outside the region panics. Run under Miri too,
    /// for the one `unsafe` copy.
    #[test]
    fn disjoint_out_writes_each_chunk_part_once() {
        // A 2-D array of 1-byte elements in 4×4 chunks; the region rows 2..9, cols 3..7
        // touches chunks (0..3) × (0..2).
        let (start, shape, chunk) = ([2u64, 3], [7u64, 4], [4u64, 4]);
        let cells: Vec<[u64; 2]> = (0..3).flat_map(|r| (0..2).map(move |c| [r, c])).collect();
        let source = |cell: [u64; 2]| -> Vec<u8> {
            (0..16)
                .map(|k| (cell[0] * 40 + cell[1] * 20 + k) as u8)
                .collect()
        };
        let mut want = vec![0u8; 28];
        for &cell in &cells {
            let origin = [cell[0] * 4, cell[1] * 4];
            let (lo, extent) = intersect(&start, &shape, &origin, &chunk);
            copy_box(
                &source(cell),
                &chunk,
                &sub(&lo, &origin),
                &mut want,
                &shape,
                &sub(&lo, &start),
                &extent,
                1,
            );
        }
        let mut got = vec![0u8; 28];
        let out = DisjointOut::new(&mut got, &start, &shape, &chunk, 1);
        std::thread::scope(|s| {
            for half in cells.chunks(3) {
                let out = &out;
                s.spawn(move || half.iter().for_each(|&c| out.put_chunk(&c, &source(c))));
            }
        });
        let twice = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            out.put_chunk(&[1, 1], &source([1, 1]))
        }));
        let outside = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            out.put_chunk(&[3, 0], &source([3, 0]))
        }));
        drop(out);
        assert_eq!(got, want);
        assert!(twice.is_err() && outside.is_err());
        assert_eq!(got, want, "a refused claim wrote nothing");
    }

    #[test]
    fn ravel_unravel() {
        assert_eq!(ravel(&[1, 2], &[3, 4]), 6);
        assert_eq!(unravel(6, &[3, 4]), vec![1, 2]);
        assert_eq!(ravel(&[], &[]), 0);
        assert_eq!(
            c_order(&[2, 2]).collect::<Vec<_>>(),
            vec![vec![0, 0], vec![0, 1], vec![1, 0], vec![1, 1]]
        );
    }

    #[test]
    fn morton_by_hand() {
        // 2x2: (0,0) (1,0) (0,1) (1,1) -- dimension 0 takes the lowest bit.
        assert_eq!(morton_order(&[2, 2]), vec![0, 2, 1, 3]);
        // 4x2: dimension 1 has one bit, dimension 0 two: codes interleave d0b0, d1b0, d0b1.
        // (r,c) -> z: (0,0)0 (1,0)1 (0,1)2 (1,1)3 (2,0)4 (3,0)5 (2,1)6 (3,1)7
        assert_eq!(morton_order(&[4, 2]), vec![0, 2, 1, 3, 4, 6, 5, 7]);
        // Non-power-of-two: 3 along one axis keeps every index once.
        let mut m = morton_order(&[3, 3]);
        assert_eq!(m[..4], [0, 3, 1, 4]);
        m.sort();
        assert_eq!(m, (0..9).collect::<Vec<_>>());
    }

    #[test]
    fn intersect_by_hand_and_near_two_to_the_64() {
        // [3, 10) x [0, 1) and [4, 8) x [0, 4): [4, 8) x [0, 1).
        assert_eq!(
            intersect(&[3, 0], &[7, 1], &[4, 0], &[4, 4]),
            (vec![4, 0], vec![4, 1])
        );
        // Disjoint: extent 0.
        assert_eq!(intersect(&[0], &[2], &[5], &[2]), (vec![5], vec![0]));
        // Array shape [2^64 - 1], shards of 2: the last shard starts at 2^64 - 2 and would end
        // at 2^64 (one past u64::MAX). The region [2^64 - 2, 2^64 - 1) lies in it: 1 element.
        let last = u64::MAX - 1;
        assert_eq!(
            intersect(&[last], &[1], &[last], &[2]),
            (vec![last], vec![1])
        );
        assert_eq!(
            intersect(&[last], &[2], &[last], &[1]),
            (vec![last], vec![1])
        );
        // Element u64::MAX - 2 is in the shard before; none of it in the last shard.
        assert_eq!(
            intersect(&[u64::MAX - 2], &[1], &[last], &[2]),
            (vec![last], vec![0])
        );
        // The last shard clipped to the array: [2^64 - 2, 2^64 - 1), 1 element.
        assert_eq!(
            intersect(&[last], &[2], &[0], &[u64::MAX]),
            (vec![last], vec![1])
        );
    }

    /// `copy_box` against its definition, element by element, on the same box; both
    /// destinations start equal.
    fn agrees(
        src_shape: &[u64],
        src_start: &[u64],
        dst_shape: &[u64],
        dst_start: &[u64],
        region: &[u64],
        elem: usize,
    ) {
        let n = |shape: &[u64]| shape.iter().product::<u64>() as usize * elem;
        let src: Vec<u8> = (0..n(src_shape)).map(|i| (i * 7 + i / 251) as u8).collect();
        let before: Vec<u8> = (0..n(dst_shape)).map(|i| (i * 13 + 5) as u8).collect();
        let (mut got, mut want) = (before.clone(), before);
        copy_box(
            &src, src_shape, src_start, &mut got, dst_shape, dst_start, region, elem,
        );
        let at = |start: &[u64], shape: &[u64], p: &[u64]| {
            let c: Vec<u64> = p.iter().zip(start).map(|(a, b)| a + b).collect();
            ravel(&c, shape) as usize * elem
        };
        for p in c_order(region) {
            let (s, d) = (at(src_start, src_shape, &p), at(dst_start, dst_shape, &p));
            want[d..d + elem].copy_from_slice(&src[s..s + elem]);
        }
        assert!(
            got == want,
            "{src_shape:?} {src_start:?} -> {dst_shape:?} {dst_start:?}, box {region:?} x {elem}"
        );
    }

    #[test]
    #[cfg_attr(
        miri,
        ignore = "over 10 minutes under Miri; copy_box is safe code, sampled there by the proptest"
    )]
    fn copy_box_runs_of_every_specialised_length() {
        // Rows of 2..=256 bytes (the lengths copied inline) and the lengths around them, cut
        // out of a wider array and scattered into one, in 2, 3 and 4 dimensions.
        for run in [
            1u64, 2, 3, 4, 8, 15, 16, 32, 33, 64, 128, 200, 256, 257, 512,
        ] {
            for elem in [1usize, 2, 8] {
                if run % elem as u64 != 0 {
                    continue;
                }
                let w = run / elem as u64;
                agrees(&[5, w + 3], &[1, 2], &[4, w], &[0, 0], &[3, w], elem);
                agrees(&[3, w], &[0, 0], &[6, w + 5], &[2, 4], &[3, w], elem);
                agrees(
                    &[3, 4, w + 1],
                    &[1, 1, 1],
                    &[2, 3, w + 2],
                    &[0, 0, 0],
                    &[2, 3, w],
                    elem,
                );
                agrees(
                    &[2, 3, 4, w + 1],
                    &[0, 1, 0, 1],
                    &[3, 2, 4, w],
                    &[1, 0, 0, 0],
                    &[2, 2, 4, w],
                    elem,
                );
            }
        }
    }

    #[test]
    fn copy_box_past_rank_eight() {
        // Rank 10: strides no longer fit the stack space.
        let src_shape = [2, 1, 2, 3, 1, 2, 2, 1, 3, 5];
        let dst_shape = [2, 2, 2, 3, 1, 2, 2, 2, 3, 4];
        let region = [2, 1, 2, 2, 1, 2, 1, 1, 3, 4];
        agrees(
            &src_shape,
            &[0; 10],
            &dst_shape,
            &[0, 1, 0, 1, 0, 0, 1, 1, 0, 0],
            &region,
            2,
        );
        agrees(
            &src_shape,
            &[0, 0, 0, 1, 0, 0, 1, 0, 0, 1],
            &dst_shape,
            &[0; 10],
            &region,
            1,
        );
    }

    proptest::proptest! {
        // Under Miri (minutes for 256 cases) a sample, to look for undefined behaviour.
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(if cfg!(miri) { 16 } else { 256 }))]
        #[test]
        fn copy_box_matches_element_by_element(
            dims in proptest::collection::vec((1u64..6, 0u64..3, 0u64..3, 0u64..3, 0u64..3), 1..5),
            elem in proptest::sample::select(vec![1usize, 2, 4, 8]),
        ) {
            // Each dimension: the box's extent, and how much the source and destination
            // extend before and after it.
            let region: Vec<u64> = dims.iter().map(|d| d.0).collect();
            let src_start: Vec<u64> = dims.iter().map(|d| d.1).collect();
            let src_shape: Vec<u64> = dims.iter().map(|d| d.1 + d.0 + d.2).collect();
            let dst_start: Vec<u64> = dims.iter().map(|d| d.3).collect();
            let dst_shape: Vec<u64> = dims.iter().map(|d| d.3 + d.0 + d.4).collect();
            agrees(&src_shape, &src_start, &dst_shape, &dst_start, &region, elem);
        }
    }

    #[test]
    fn copy_box_by_hand() {
        // src 3x4 = 0..12; copy the 2x2 box at (1,1) into a 2x3 dst at (0,1).
        let src: Vec<u8> = (0..12).collect();
        let mut dst = vec![0u8; 6];
        copy_box(
            &src,
            &[3, 4],
            &[1, 1],
            &mut dst,
            &[2, 3],
            &[0, 1],
            &[2, 2],
            1,
        );
        assert_eq!(dst, vec![0, 5, 6, 0, 9, 10]);
        // Whole-array copy collapses to one run.
        let mut all = vec![0u8; 12];
        copy_box(
            &src,
            &[3, 4],
            &[0, 0],
            &mut all,
            &[3, 4],
            &[0, 0],
            &[3, 4],
            1,
        );
        assert_eq!(all, src);
    }
}
