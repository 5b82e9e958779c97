"""Create a sharded Zarr v3 array, write it from numpy, open it again and read a tile.

    python examples/python/quickstart.py [ARRAY_PATH]

ARRAY_PATH (a new directory) defaults to one in a temporary directory. Needs the zarrshard
package (pip install ./bindings/python)."""

import os
import sys
import tempfile

import numpy as np

import zarrshard


def main(path):
    a = zarrshard.create_array(path, shape=(1024, 1024), dtype="uint16", chunks=(64, 64), shards=(256, 256))
    a[:] = np.arange(1024 * 1024, dtype="uint32").astype("uint16").reshape(1024, 1024)
    b = zarrshard.open_array(path, mode="r")
    tile = b[100:164, 200:264]
    print(f"wrote {path}: {b.shape} {b.dtype} in shards {b.shards} of chunks {b.chunks}; tile sum {int(tile.sum())}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(tempfile.mkdtemp(), "quickstart.zarr"))
