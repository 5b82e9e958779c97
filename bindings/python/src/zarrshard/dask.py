"""Dask with zarrshard arrays. A shard is one object: two tasks writing parts of one shard at
once would each replace it whole with their own version, and one task's data would be lost.
So writes from Dask must be cut along shard boundaries; `store` does that (rechunking to the
shards when the chunks are not aligned) and `from_array` reads one shard per task."""

import dask.array as da

__all__ = ["from_array", "store", "aligned"]


def from_array(array, chunks=None, **kwargs):
    """`dask.array.from_array` over a zarrshard `Array`, one task per shard by default (per
    chunk for an unsharded array)."""
    return da.from_array(array, chunks=chunks or array.shards or array.chunks, fancy=False, **kwargs)


def aligned(x, array):
    """True when every chunk boundary of the Dask array `x` lies on a shard boundary of
    `array` (or its end), so no two tasks write one shard: then plain
    `dask.array.store(x, array, lock=False)` is safe; otherwise use `store`."""
    unit = array.shards or array.chunks
    for bounds, step, n in zip(x.chunks, unit, array.shape):
        edge = 0
        for b in bounds[:-1]:
            edge += b
            if edge % step and edge != n:
                return False
    return True


def store(x, array, region=None, compute=True, **kwargs):
    """`dask.array.store(x, array, lock=False)`, rechunked to `array`'s shards first when
    `x`'s chunks are not aligned with them (see `aligned`). With `region` (a tuple of slices
    with step 1) `x` goes there; the region must start on shard boundaries too."""
    if region is not None:
        # slice.indices: a negative start counts from the end, as in the write itself.
        starts = [s.indices(n)[0] for s, n in zip(region, array.shape)]
        unit = array.shards or array.chunks
        if any(a % u for a, u in zip(starts, unit)):
            raise ValueError(f"region {region}: must start on shard boundaries {unit}")
    if not aligned(x, array):
        x = x.rechunk(array.shards or array.chunks)
    return da.store(x, array, lock=False, regions=region, compute=compute, **kwargs)
