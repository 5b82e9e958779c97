//! N-dimensional helpers: C-order strides, coordinate (un)ravelling, block copies.

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
/// box lies inside both arrays.
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
    let rank = region.len();
    if region.contains(&0) {
        return;
    }
    if rank == 0 {
        dst[..elem].copy_from_slice(&src[..elem]);
        return;
    }
    // Merge trailing dimensions that are whole in source, destination and region, so a
    // contiguous block is one memcpy.
    let mut inner = rank - 1;
    let mut run = region[rank - 1] as usize * elem;
    while inner > 0
        && region[inner] == src_shape[inner]
        && region[inner] == dst_shape[inner]
        && src_start[inner] == 0
        && dst_start[inner] == 0
    {
        inner -= 1;
        run *= region[inner] as usize;
    }
    let strides = |shape: &[u64]| {
        let mut s = vec![elem; rank];
        for d in (0..rank - 1).rev() {
            s[d] = s[d + 1] * shape[d + 1] as usize;
        }
        s
    };
    let (ss, ds) = (strides(src_shape), strides(dst_shape));
    let offset = |start: &[u64], strides: &[usize]| -> usize {
        start
            .iter()
            .zip(strides)
            .map(|(&a, &s)| a as usize * s)
            .sum()
    };
    let (mut so, mut dof) = (offset(src_start, &ss), offset(dst_start, &ds));
    // Iterate over the outer dimensions [0, inner) of the region with an odometer.
    let mut idx = vec![0u64; inner];
    loop {
        dst[dof..dof + run].copy_from_slice(&src[so..so + run]);
        let mut d = inner;
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            idx[d] += 1;
            so += ss[d];
            dof += ds[d];
            if idx[d] < region[d] {
                break;
            }
            so -= ss[d] * region[d] as usize;
            dof -= ds[d] * region[d] as usize;
            idx[d] = 0;
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
/// do not overlap.
pub(crate) fn intersect(
    a: &[u64],
    a_shape: &[u64],
    b: &[u64],
    b_shape: &[u64],
) -> (Vec<u64>, Vec<u64>) {
    let start: Vec<u64> = a.iter().zip(b).map(|(x, y)| *x.max(y)).collect();
    let extent = (0..a.len())
        .map(|d| {
            (a[d].saturating_add(a_shape[d]))
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

#[cfg(test)]
mod tests {
    use super::*;

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
