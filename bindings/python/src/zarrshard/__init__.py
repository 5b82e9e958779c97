"""zarrshard: Zarr v3 sharded arrays through the zarrshard C library, with an API shaped like
zarr-python's. Stores: a local path (the library's directory store), an fsspec URL or file
system (S3, GCS, HTTP, memory), or `MemoryStore()`. Every library call releases the GIL.

    import numpy as np, zarrshard
    a = zarrshard.create_array("data.zarr", shape=(4096, 4096), dtype="uint16",
                               chunks=(64, 64), shards=(1024, 1024))
    a[:] = np.arange(4096 * 4096, dtype="uint16").reshape(4096, 4096)
    b = zarrshard.open_array("data.zarr", mode="r")
    tile = b[1000:1064, 2000:2064]
"""

from ._lib import *  # noqa: F403 - the exceptions and set_threads/get_threads
from ._lib import __all__ as _lib_names, ffi as _ffi, lib as _lib
from ._store import Store, LocalStore, MemoryStore, FsspecStore
from ._array import Array, Group, Attributes, create_array, open_array, create_group, open_group, open

__version__ = _ffi.string(_lib.shard_version()).decode()

__all__ = [
    "Array",
    "Group",
    "Attributes",
    "create_array",
    "open_array",
    "create_group",
    "open_group",
    "open",
    "Store",
    "LocalStore",
    "MemoryStore",
    "FsspecStore",
] + _lib_names
