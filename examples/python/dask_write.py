"""Write a 4-D (t, z, y, x) uint16 array from Dask on a local cluster of two worker processes,
one task per shard, then read it back through Dask, one task per shard.

    python examples/python/dask_write.py [ARRAY_PATH]

ARRAY_PATH (a new directory) defaults to one in a temporary directory. Needs the zarrshard
package (pip install ./bindings/python) and dask[array] and distributed."""

import os
import sys
import tempfile

import dask.array as da
from distributed import Client, LocalCluster

import zarrshard
import zarrshard.dask


def main(path):
    with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None) as cluster, Client(cluster):
        a = zarrshard.create_array(path, shape=(2, 4, 128, 128), dtype="uint16", chunks=(1, 1, 32, 32),
                                   shards=(1, 2, 64, 64), dimension_names=("t", "z", "y", "x"))
        x = (da.arange(a.size).reshape(a.shape) % 65521).astype("uint16")
        zarrshard.dask.store(x, a)  # one task per shard (x is rechunked to a.shards if need be)
        y = zarrshard.dask.from_array(zarrshard.open_array(path, mode="r"))  # one task per shard
        total = int(y.sum(dtype="uint64").compute())
    print(f"wrote {path}: shape {a.shape} uint16 in {y.npartitions} shards from 2 worker processes, sum {total}")


if __name__ == "__main__":  # worker processes import this file: only the parent runs main
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "dask_write.zarr"))
