"""Dask with zarrshard arrays (issue 37, "Dask"): an `Array` pickles by reference and reopens
cheaply; `dask.array.from_array` and `dask.array.store(lock=False)` work unchanged along shard
boundaries, also when the threaded scheduler's threads write at once; `zarrshard.dask.store`
rechunks other chunkings to whole shards; and a `distributed.LocalCluster` of two worker
processes writes a 4-D array that zarr-python and a Dask read through this package read back
equal. Expected values always come from numpy formulas, never from a run of ours."""

import logging
import os
import pickle
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import cloudpickle
import dask.array as da
import distributed
import numpy as np
import pytest
import zarr
from fsspec.implementations.memory import MemoryFileSystem

import zarrshard
import zarrshard.dask as zd

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = REPO / "examples" / "python"


def formula(shape):
    """The values every test writes: the flat index mod a prime below 2^16, as uint16."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.int64) % 65521).astype(np.uint16).reshape(shape)


def dask_formula(shape, chunks):
    """`formula(shape)` as a Dask array, computed by Dask in its own chunks."""
    n = int(np.prod(shape))
    return (da.arange(n, chunks=chunks) % 65521).astype("uint16").reshape(shape)


def small_array(root, **kwargs):
    """A 3-D array whose edge shards are partial: 3 × 4 × 3 shards of (2, 32, 32)."""
    spec = dict(shape=(6, 100, 90), dtype="uint16", chunks=(1, 16, 16), shards=(2, 32, 32))
    spec.update(kwargs)
    return zarrshard.create_array(str(root), **spec)


def shard_regions(array):
    """Every shard's region as (start, shape), clipped at the array's end."""
    grid = [range(0, n, s) for n, s in zip(array.shape, array.shards)]
    out = []
    for start in np.ndindex(*[len(g) for g in grid]):
        start = tuple(g[i] for g, i in zip(grid, start))
        out.append((start, tuple(min(s, n - a) for a, s, n in zip(start, array.shards, array.shape))))
    return out


class CountingMemoryFS(MemoryFileSystem):
    """An fsspec memory file system of its own that records every path it reads bytes of
    (`cat_ranges` reads through `cat_file`). Pickles by reference to this module's class and
    comes back as the same cached instance, so a pickled array's store sees its records."""

    store = {}
    pseudo_dirs = [""]
    reads = []

    def cat_file(self, path, start=None, end=None, **kwargs):
        type(self).reads.append(self._strip_protocol(path))
        return super().cat_file(path, start=start, end=end, **kwargs)


# Pickling ----------------------------------------------------------------------------------


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
@pytest.mark.parametrize("path", ["", "group/sub"], ids=["root", "in-group"])
@pytest.mark.parametrize("mode", ["r", "r+", "a"])
def test_array_pickles_as_store_path_mode(tmp_path, dumps, path, mode):
    root = tmp_path / "p.zarr"
    if path:
        zarrshard.create_group(str(root)).create_group("group")
    a = zarrshard.create_array(str(root), name=path, shape=(5, 70), dtype="uint16", chunks=(2, 16), shards=(4, 32))
    a[...] = formula(a.shape)
    opened = zarrshard.open_array(str(root), path=path, mode=mode)

    b = pickle.loads(dumps(opened))

    assert isinstance(b, zarrshard.Array)
    assert b.store == zarrshard.LocalStore(str(root))
    assert b.path == path
    # "a" (and "w"/"w-") reopen as "r+": unpickling never creates or replaces anything.
    assert b.mode == ("r" if mode == "r" else "r+")
    assert (b.shape, b.dtype, b.chunks, b.shards) == ((5, 70), np.dtype("uint16"), (2, 16), (4, 32))
    np.testing.assert_array_equal(b[...], formula((5, 70)))
    if mode == "r":
        with pytest.raises(zarrshard.ReadOnlyError, match="mode='r'"):
            b[0, 0] = 1
    else:
        b[4, :] = 7
        expected = formula((5, 70))
        expected[4, :] = 7
        np.testing.assert_array_equal(zarr.open_array(str(root), path=path, mode="r")[...], expected)


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_group_pickles_as_store_path_mode(tmp_path, dumps):
    root = tmp_path / "g.zarr"
    zarrshard.create_group(str(root), path="inner", attributes={"k": 1})
    g = zarrshard.open_group(str(root), path="inner", mode="r")

    h = pickle.loads(dumps(g))

    assert (h.path, h.mode, h.attrs.asdict()) == ("inner", "r", {"k": 1})
    assert not (root / "zarr.json").exists()  # unpickling created nothing


@pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps], ids=["pickle", "cloudpickle"])
def test_memory_store_array_refuses_pickling(dumps):
    a = zarrshard.create_array(zarrshard.MemoryStore(), shape=(4,), dtype="uint8", chunks=(2,), shards=(4,))
    with pytest.raises(TypeError, match=r"a zarrshard\.MemoryStore cannot be pickled: its arrays live in this process's memory"):
        dumps(a)


def test_unpickling_reads_metadata_only():
    fs = CountingMemoryFS()
    root = f"/pickle-{uuid.uuid4().hex}"
    a = zarrshard.create_array(fs, name=root.lstrip("/"), shape=(8, 64), dtype="uint16", chunks=(4, 16), shards=(8, 32))
    a[...] = formula(a.shape)
    data = pickle.dumps(a)
    CountingMemoryFS.reads.clear()

    b = pickle.loads(data)

    assert CountingMemoryFS.reads == [f"{root}/zarr.json"]
    # The record is not blind: reading the data reads the shards.
    np.testing.assert_array_equal(b[...], formula((8, 64)))
    assert {p for p in CountingMemoryFS.reads if p != f"{root}/zarr.json"} == {f"{root}/c/0/0", f"{root}/c/0/1"}


def test_dask_names_an_array_without_reading_it():
    fs = CountingMemoryFS()
    root = f"/token-{uuid.uuid4().hex}"
    a = zarrshard.create_array(fs, name=root.lstrip("/"), shape=(8, 64), dtype="uint16", chunks=(4, 16), shards=(8, 32))
    again = zarrshard.open_array(fs, path=root.lstrip("/"), mode="r+")
    CountingMemoryFS.reads.clear()

    x = zd.from_array(a)
    y = zd.from_array(again)
    da.from_array(a, chunks=a.shards)

    assert CountingMemoryFS.reads == []
    assert x.name == y.name  # one array, one name
    a.resize(8, 96)
    assert zd.from_array(a).name != x.name


def test_dask_names_tell_arrays_apart(tmp_path):
    def one(store, value):
        a = zarrshard.create_array(store, shape=(4, 6), dtype="uint8", chunks=(2, 2), shards=(2, 4))
        a[...] = value
        return zd.from_array(a)

    memory = one(zarrshard.MemoryStore(), 1) + one(zarrshard.MemoryStore(), 2)
    local = one(str(tmp_path / "one.zarr"), 1) + one(str(tmp_path / "two.zarr"), 2)
    fs = one(MemoryFileSystem(global_store=False, skip_instance_cache=True), 1) + one(
        MemoryFileSystem(global_store=False, skip_instance_cache=True), 2
    )

    for x in (memory, local, fs):
        np.testing.assert_array_equal(x.compute(scheduler="sync"), np.full((4, 6), 3, dtype=np.uint8))


# Dask, threaded scheduler ------------------------------------------------------------------


def test_dask_from_array_one_task_per_shard(tmp_path):
    a = small_array(tmp_path / "r.zarr")
    a[...] = formula(a.shape)

    x = da.from_array(a, chunks=a.shards)
    y = zd.from_array(zarrshard.open_array(str(tmp_path / "r.zarr"), mode="r"))

    assert x.chunks == y.chunks == ((2, 2, 2), (32, 32, 32, 4), (32, 32, 26))
    np.testing.assert_array_equal(x.compute(scheduler="threads"), formula(a.shape))
    np.testing.assert_array_equal(y.compute(scheduler="threads"), formula(a.shape))
    np.testing.assert_array_equal(y[1:5, 30:70, 10:11].compute(scheduler="threads"), formula(a.shape)[1:5, 30:70, 10:11])


def test_dask_store_shard_aligned_threads(tmp_path):
    a = small_array(tmp_path / "w.zarr")
    x = dask_formula(a.shape, chunks=600).rechunk(a.shards)

    da.store(x, a, lock=False, scheduler="threads", num_workers=4)

    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "w.zarr"), mode="r")[...], formula(a.shape))


def test_threaded_writes_through_extra_handles(tmp_path):
    """While the array's own handle is busy, every thread writes through a handle of its own
    (`Array._write`); the shards they write at once all arrive, and the busy handle reads
    them afterwards."""
    a = small_array(tmp_path / "t.zarr")
    x = dask_formula(a.shape, chunks=600).rechunk(a.shards)

    outcome = []

    def store():
        try:
            outcome.append(da.store(x, a, lock=False, scheduler="threads", num_workers=4))
        except Exception as exc:
            outcome.append(exc)

    with a._lock:  # the array's own handle is busy throughout
        t = threading.Thread(target=store)
        t.start()
        t.join(timeout=60)
        assert not t.is_alive(), "the writes waited for the busy handle"
    assert outcome == [None]
    assert len(a._spare) >= 1

    np.testing.assert_array_equal(a[...], formula(a.shape))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "t.zarr"), mode="r")[...], formula(a.shape))


def test_two_writers_taking_the_last_extra_handle(tmp_path):
    """Two threads that both find one spare handle: one takes it, the other opens its own."""
    a = small_array(tmp_path / "s.zarr")
    with a._lock:
        a[0:2, 0:32, 0:32] = 1  # leaves one spare handle behind
    assert len(a._spare) == 1
    both_looked = threading.Barrier(2, timeout=10)

    class Spares(list):
        def __bool__(self):
            found = len(self) > 0
            both_looked.wait()
            return found

    a._spare = Spares(a._spare)
    errors = []

    def write(k):
        try:
            a[2:4, 0:32, 32 * k : 32 * k + 32] = 10 + k
        except Exception as exc:
            errors.append(exc)

    with a._lock:
        threads = [threading.Thread(target=write, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)

    assert errors == []
    expected = np.empty((2, 32, 64), dtype=np.uint16)
    expected[..., :32] = 10
    expected[..., 32:] = 11
    np.testing.assert_array_equal(a[2:4, 0:32, 0:64], expected)


# zarrshard.dask.store and aligned ----------------------------------------------------------


def test_aligned():
    a = zarrshard.create_array(zarrshard.MemoryStore(), shape=(6, 100, 90), dtype="uint16", chunks=(1, 16, 16), shards=(2, 32, 32))
    x = da.zeros(a.shape, dtype="uint16", chunks=a.shards)
    assert zd.aligned(x, a)
    assert zd.aligned(x.rechunk((6, 64, 64)), a)  # several shards per task
    assert zd.aligned(x.rechunk(((2, 4), (32, 68), (90,))), a)  # a last task up to the end
    assert not zd.aligned(x.rechunk((2, 16, 32)), a)  # inner chunks: two tasks per shard
    assert not zd.aligned(x.rechunk((3, 32, 32)), a)
    assert not zd.aligned(x.rechunk(((2, 4), (32, 50, 18), (90,))), a)


def test_zd_store_rechunks_to_whole_shards(tmp_path):
    a = small_array(tmp_path / "n.zarr")
    x = dask_formula(a.shape, chunks=5000).rechunk((3, 20, 25))
    assert not zd.aligned(x, a)
    writes = []
    write = a._write

    def recording(start, shape, data):
        writes.append((tuple(start), tuple(shape)))
        write(start, shape, data)

    a._write = recording

    zd.store(x, a, scheduler="threads", num_workers=4)

    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "n.zarr"), mode="r")[...], formula(a.shape))
    # Each write was one whole shard, each shard written once.
    assert sorted(writes) == sorted(shard_regions(a))


def test_zd_store_into_region(tmp_path):
    a = small_array(tmp_path / "g.zarr", fill_value=9)
    x = dask_formula((4, 64, 58), chunks=1000)

    zd.store(x, a, region=(slice(2, 6), slice(32, 96), slice(32, None)), scheduler="threads")

    expected = np.full(a.shape, 9, dtype=np.uint16)
    expected[2:6, 32:96, 32:] = formula((4, 64, 58))
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "g.zarr"), mode="r")[...], expected)
    with pytest.raises(ValueError, match=r"must start on shard boundaries \(2, 32, 32\)"):
        zd.store(x, a, region=(slice(2, 6), slice(16, 80), slice(32, None)), scheduler="threads")
    # From the end: 100 - 64 = 36 is no shard boundary, though -64 is a multiple of 32.
    with pytest.raises(ValueError, match=r"must start on shard boundaries \(2, 32, 32\)"):
        zd.store(x, a, region=(slice(2, None), slice(-64, None), slice(32, None)), scheduler="threads")
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "g.zarr"), mode="r")[...], expected)


# distributed.LocalCluster ------------------------------------------------------------------


@pytest.fixture
def client():
    """Two worker processes of one thread each, no dashboard, closed however the test ends."""
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=logging.ERROR,
        timeout="60s",
    )
    try:
        with distributed.Client(cluster, timeout="60s") as c:
            yield c
    finally:
        cluster.close(timeout=30)


def test_local_cluster_writes_4d_array(tmp_path, client):
    shape = (4, 8, 256, 256)
    path = str(tmp_path / "tzyx.zarr")
    a = zarrshard.create_array(
        path,
        shape=shape,
        dtype="uint16",
        chunks=(1, 2, 64, 64),
        shards=(1, 4, 128, 128),
        dimension_names=("t", "z", "y", "x"),
    )
    x = dask_formula(shape, chunks=2 * 256 * 256)
    assert not zd.aligned(x, a)  # zarrshard.dask.store rechunks to whole shards

    with distributed.get_task_stream(client) as stream:
        client.compute(zd.store(x, a, compute=False)).result(timeout=120)

    workers = {t["worker"] for t in stream.data}
    assert workers and workers <= set(client.scheduler_info()["workers"])
    expected = formula(shape)
    z = zarr.open_array(path, mode="r")
    assert z.metadata.dimension_names == ("t", "z", "y", "x")
    np.testing.assert_array_equal(z[...], expected)
    y = zd.from_array(zarrshard.open_array(path, mode="r"))
    assert y.numblocks == (4, 2, 2, 2)
    np.testing.assert_array_equal(client.compute(y).result(timeout=120), expected)

    # Plain Dask, unchanged, with chunks along the shards: from the first array to a second.
    b = zarrshard.create_array(str(tmp_path / "copy.zarr"), shape=shape, dtype="uint16", chunks=a.chunks, shards=a.shards)
    client.compute(da.store(da.from_array(a, chunks=a.shards), b, lock=False, compute=False)).result(timeout=120)
    np.testing.assert_array_equal(zarr.open_array(str(tmp_path / "copy.zarr"), mode="r")[...], expected)


# Examples ----------------------------------------------------------------------------------


def run_example(name, *args):
    env = dict(os.environ)
    # The zarrshard these tests import, wherever it was installed.
    here = os.path.dirname(os.path.dirname(zarrshard.__file__))
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in [env.get("PYTHONPATH")] if p])
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_example_quickstart(tmp_path):
    path = tmp_path / "quickstart.zarr"
    done = run_example("quickstart.py", path)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1 and str(path) in done.stdout, done.stdout
    expected = np.arange(1024 * 1024, dtype=np.uint32).astype(np.uint16).reshape(1024, 1024)
    np.testing.assert_array_equal(zarr.open_array(str(path), mode="r")[...], expected)


def test_example_dask_write(tmp_path):
    path = tmp_path / "dask_write.zarr"
    done = run_example("dask_write.py", path)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1 and str(path) in done.stdout, done.stdout
    z = zarr.open_array(str(path), mode="r")
    assert (z.shape, z.metadata.dimension_names) == ((2, 4, 128, 128), ("t", "z", "y", "x"))
    np.testing.assert_array_equal(z[...], formula((2, 4, 128, 128)))
