"""The Python package's API against numpy expectations and zarr-python as the independent
reader and writer: create, open, index, write, resize, append, attributes, groups, errors,
threads, and an fsspec memory:// store."""

import json
import threading

import numpy as np
import pytest
import zarr

import zarrshard


def image(shape, dtype="uint16"):
    """Deterministic values that differ everywhere (so a misplaced tile shows)."""
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.uint64) * 7919 % 65521).astype(dtype).reshape(shape)


@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "a.zarr")


def test_create_write_read_and_zarr_python_reads_it(path):
    v = image((100, 130))
    a = zarrshard.create_array(
        path, shape=v.shape, dtype="uint16", chunks=(16, 16), shards=(32, 64), fill_value=7,
        attributes={"unit": "nm"}, dimension_names=["y", "x"],
    )
    assert (a.shape, a.dtype, a.ndim, a.chunks, a.shards) == ((100, 130), np.dtype("uint16"), 2, (16, 16), (32, 64))
    assert a.fill_value == 7 and a.dimension_names == ("y", "x") and dict(a.attrs) == {"unit": "nm"}
    a[:] = v
    z = zarr.open_array(path, mode="r")
    np.testing.assert_array_equal(z[...], v)
    assert z.chunks == (16, 16) and z.shards == (32, 64) and z.fill_value == 7
    assert z.attrs["unit"] == "nm" and z.metadata.dimension_names == ("y", "x")
    b = zarrshard.open_array(path, mode="r")
    np.testing.assert_array_equal(b[...], v)
    np.testing.assert_array_equal(b[3:40, 100:], v[3:40, 100:])
    np.testing.assert_array_equal(np.asarray(b), v)


def test_indexing_matches_numpy(path):
    v = image((9, 20, 33), "int32")
    a = zarrshard.create_array(path, shape=v.shape, dtype="int32", chunks=(2, 8, 8), shards=(4, 16, 16))
    a[...] = v
    for key in [
        (0,), (-1,), (3, 5), (3, 5, 7), (-2, -3, -4), (slice(2, 5),), (Ellipsis, 4),
        (1, Ellipsis), (slice(None), 19, slice(30, None)), (slice(7, 100), slice(-5, None)),
        (slice(4, 4),), Ellipsis, (), (2, Ellipsis, slice(1, 2)),
    ]:
        got, want = a[key], v[key]
        assert np.shape(got) == np.shape(want), key
        np.testing.assert_array_equal(got, want, err_msg=str(key))
    assert isinstance(a[1, 2, 3], np.int32) and a[1, 2, 3] == v[1, 2, 3]
    for bad, error in [((0, 0, 0, 0), IndexError), ((slice(0, 9, 2),), IndexError),
                       ((9,), IndexError), (([1, 2],), IndexError), ((1.5,), IndexError),
                       ((Ellipsis, Ellipsis), IndexError)]:
        with pytest.raises(error):
            a[bad]


def test_setitem_scalar_broadcast_and_partial_shards(path):
    v = np.zeros((40, 50), "float32")
    a = zarrshard.create_array(path, shape=v.shape, dtype="float32", chunks=(8, 8), shards=(16, 16), fill_value=-1)
    np.testing.assert_array_equal(a[...], np.full(v.shape, -1, "float32"))
    v[:] = -1
    a[3:20, 5:9] = 2.5
    v[3:20, 5:9] = 2.5
    a[7] = np.arange(50)
    v[7] = np.arange(50)
    a[:, 49] = np.arange(40)[:, None][:, 0]
    v[:, 49] = np.arange(40)
    a[39, 0] = 9
    v[39, 0] = 9
    np.testing.assert_array_equal(a[...], v)
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], v)


def test_read_region_into_a_callers_buffer(path):
    v = image((64, 64))
    a = zarrshard.create_array(path, shape=v.shape, dtype="uint16", chunks=(16, 16), shards=(32, 32))
    a.write_region((0, 0), v)
    out = np.empty((10, 20), "uint16")
    got = a.read_region((30, 40), (10, 20), out=out)
    assert got is out
    np.testing.assert_array_equal(out, v[30:40, 40:60])
    with pytest.raises(ValueError, match="out must be"):
        a.read_region((0, 0), (10, 20), out=np.empty((10, 20), "int16"))
    with pytest.raises(ValueError, match="out must be"):
        a.read_region((0, 0), (10, 20), out=np.empty((20, 10), "uint16").T)


def test_resize_append_and_flush(path):
    a = zarrshard.create_array(path, shape=(0, 8, 8), dtype="uint8", chunks=(1, 8, 8), shards=(4, 8, 8))
    frames = image((10, 8, 8), "uint8")
    for t in range(6):
        assert a.append(frames[t : t + 1]) == (t + 1, 8, 8)
    # Gathered per shard layer: stored by flush.
    for t in range(6, 10):
        a.append(frames[t : t + 1], flush=False)
    np.testing.assert_array_equal(a[...], frames)
    a.flush()
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], frames)
    a.resize(3, 8, 8)
    a.resize((5, 8, 8))
    want = np.zeros((5, 8, 8), "uint8")
    want[:3] = frames[:3]
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(zarr.open_array(path, mode="r")[...], want)
    with pytest.raises(ValueError, match="append: data of 2 dimensions"):
        a.append(np.zeros((8, 8), "uint8"))


def test_attributes_and_metadata_follow_changes(path):
    a = zarrshard.create_array(path, shape=(4, 4), dtype="int64", chunks=(2, 2), shards=(4, 4))
    a.attrs["a"] = [1, 2]
    a.attrs.update(b={"c": None})
    del a.attrs["a"]
    assert dict(a.attrs) == {"b": {"c": None}}
    assert json.loads(open(f"{path}/zarr.json").read())["attributes"] == {"b": {"c": None}}
    assert zarr.open_array(path, mode="r").attrs.asdict() == {"b": {"c": None}}
    a.resize(6, 4)
    assert a.shape == (6, 4) and a.metadata["shape"] == [6, 4]


def test_reads_what_zarr_python_wrote_unsharded_and_sharded(tmp_path):
    v = image((70, 90), "float64")
    for name, shards in [("sharded", (32, 32)), ("plain", None)]:
        p = str(tmp_path / name)
        z = zarr.create_array(p, shape=v.shape, dtype="float64", chunks=(16, 16), shards=shards, fill_value=np.nan)
        z[...] = v
        a = zarrshard.open_array(p, mode="r")
        assert a.shards == shards and a.chunks == (16, 16) and np.isnan(a.fill_value)
        np.testing.assert_array_equal(a[...], v)
        np.testing.assert_array_equal(a[5:9, 80:], v[5:9, 80:])


def test_data_types_round_trip_through_zarr_python(tmp_path):
    for dt, fill in [("bool", True), ("int8", -3), ("uint64", 2**64 - 1), ("float16", 0.5),
                     ("float32", float("inf")), ("complex64", 1 + 2j), ("complex128", 0)]:
        p = str(tmp_path / dt)
        v = (image((10, 12), "uint16") % 7).astype(dt)
        a = zarrshard.create_array(p, shape=v.shape, dtype=dt, chunks=(4, 4), shards=(8, 8), fill_value=fill)
        a[:8, :8] = v[:8, :8]
        want = np.full(v.shape, fill, dtype=dt)
        want[:8, :8] = v[:8, :8]
        np.testing.assert_array_equal(a[...], want, err_msg=dt)
        z = zarr.open_array(p, mode="r")
        np.testing.assert_array_equal(z[...], want, err_msg=dt)


def test_compressors_as_zarr_python_spells_them(tmp_path):
    v = image((64, 64))
    for i, compressors in enumerate([None, "gzip", {"name": "zstd", "configuration": {"level": 1}},
                                     zarr.codecs.ZstdCodec(level=5), [zarr.codecs.GzipCodec(level=1)], "blosc"]):
        p = str(tmp_path / f"c{i}")
        a = zarrshard.create_array(p, shape=v.shape, dtype="uint16", chunks=(16, 16), shards=(32, 32), compressors=compressors)
        a[...] = v
        np.testing.assert_array_equal(zarr.open_array(p, mode="r")[...], v)
        codecs = json.loads(open(f"{p}/zarr.json").read())["codecs"][0]["configuration"]["codecs"]
        names = [c["name"] for c in codecs]
        expected = {0: ["bytes"], 1: ["bytes", "gzip"], 2: ["bytes", "zstd"], 3: ["bytes", "zstd"], 4: ["bytes", "gzip"], 5: ["bytes", "blosc"]}[i]
        assert names == expected, (compressors, names)
    with pytest.raises(ValueError, match="one compressor"):
        zarrshard.create_array(str(tmp_path / "x"), shape=(4,), dtype="uint8", chunks=(2,), compressors=["zstd", "gzip"])


def test_modes_and_errors(path):
    with pytest.raises(FileNotFoundError, match="a.zarr") as e:
        zarrshard.open_array(path, mode="r")
    assert isinstance(e.value, zarrshard.StoreError) and e.value.io_code == 2
    import os

    os.mkdir(path)
    with pytest.raises(zarrshard.InvalidMetadataError, match="zarr.json") as e:
        zarrshard.open_array(path, mode="r")
    assert e.value.status == 2 and e.value.status_name == "SHARD_ERR_INVALID_METADATA"
    assert isinstance(e.value, ValueError)
    a = zarrshard.open_array(path, mode="a", shape=(4, 4), dtype="uint8", chunks=(2, 2), shards=(4, 4))
    a[...] = 1
    with pytest.raises(zarrshard.InvalidStateError):
        zarrshard.create_array(path, shape=(2,), dtype="uint8", chunks=(1,))
    with pytest.raises(zarrshard.InvalidStateError):
        zarrshard.open_array(path, mode="w-", shape=(2,), dtype="uint8", chunks=(1,))
    b = zarrshard.open_array(path, mode="w", shape=(2,), dtype="uint8", chunks=(1,))
    assert b.shape == (2,) and zarr.open_array(path, mode="r").shape == (2,)
    r = zarrshard.open_array(path, mode="r")
    with pytest.raises(zarrshard.ReadOnlyError):
        r[0] = 1
    with pytest.raises(zarrshard.ReadOnlyError):
        r.attrs["x"] = 1
    with pytest.raises(zarrshard.ReadOnlyError):
        r.resize(3)
    with pytest.raises(zarrshard.InvalidMetadataError, match=r"chunk_shape \[3\] does not divide the shard shape \[4\]"):
        zarrshard.create_array(path + "2", shape=(10,), dtype="uint8", chunks=(3,), shards=(4,))
    with pytest.raises(ValueError, match="mode"):
        zarrshard.open_array(path, mode="x")


def test_a_corrupt_shard_is_an_exception_naming_it(path):
    a = zarrshard.create_array(path, shape=(8, 8), dtype="uint16", chunks=(4, 4), shards=(8, 8))
    a[...] = 5
    shard = f"{path}/c/0/0"
    data = bytearray(open(shard, "rb").read())
    data[-10] ^= 0xFF  # inside the index: its checksum no longer matches
    open(shard, "wb").write(bytes(data))
    with pytest.raises(zarrshard.ChecksumError, match="c/0/0") as e:
        zarrshard.open_array(path, mode="r")[...]
    assert e.value.status_name == "SHARD_ERR_CHECKSUM" and isinstance(e.value, zarrshard.CorruptError)


def test_groups(tmp_path):
    root = str(tmp_path / "g.zarr")
    g = zarrshard.create_group(root, attributes={"name": "root"})
    assert dict(g.attrs) == {"name": "root"}
    g.attrs["more"] = 1
    img = g.create_group("image", attributes={"multiscales": []})
    a = img.create_array("0", shape=(8, 8), dtype="uint8", chunks=(4, 4), shards=(8, 8))
    a[...] = 3
    reopened = zarrshard.open_group(root, mode="r")
    assert dict(reopened.attrs) == {"name": "root", "more": 1}
    assert isinstance(reopened["image"], zarrshard.Group)
    np.testing.assert_array_equal(reopened["image"]["0"][...], np.full((8, 8), 3, "uint8"))
    zg = zarr.open_group(root, mode="r")
    assert zg.attrs["more"] == 1 and (zg["image/0"][...] == 3).all()
    with pytest.raises(zarrshard.InvalidMetadataError, match="no group at `image/0`"):
        zarrshard.open_group(root, path="image/0", mode="r")
    with pytest.raises(FileNotFoundError):
        zarrshard.open_group(str(tmp_path / "none"), mode="r")
    assert isinstance(zarrshard.open(root + "/image/0", mode="r"), zarrshard.Array)
    with pytest.raises(zarrshard.ReadOnlyError):
        reopened.attrs["x"] = 2


def test_threads_read_and_write_one_array_at_once(path):
    v = image((256, 256))
    a = zarrshard.create_array(path, shape=v.shape, dtype="uint16", chunks=(16, 16), shards=(64, 64))
    errors = []

    def write(i):
        try:
            r, c = divmod(i, 4)
            a[r * 64 : (r + 1) * 64, c * 64 : (c + 1) * 64] = v[r * 64 : (r + 1) * 64, c * 64 : (c + 1) * 64]
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    np.testing.assert_array_equal(a[...], v)
    got = [None] * 8

    def read(i):
        got[i] = a[i * 32 : (i + 1) * 32]

    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(np.concatenate(got), v)


def test_the_gil_is_released_during_library_calls(path):
    """Another Python thread runs while this one is inside a library call: it notes the time
    every millisecond, and notes fall in the middle of the call (with the GIL held through
    the call there could be none there)."""
    import time

    v = image((2048, 2048))
    a = zarrshard.create_array(path, shape=v.shape, dtype="uint16", chunks=(64, 64), shards=(1024, 1024), compressors="gzip")
    stamps = []
    done = threading.Event()

    def tick():
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=tick)
    t.start()
    t0 = time.perf_counter()
    a[...] = v  # one C call of some hundred milliseconds (gzip)
    t1 = time.perf_counter()
    done.set()
    t.join()
    quarter = (t1 - t0) / 4
    assert any(t0 + quarter < s < t1 - quarter for s in stamps), (t1 - t0, len(stamps))


def test_set_threads(path):
    old = zarrshard.get_threads()
    try:
        zarrshard.set_threads(1)
        assert zarrshard.get_threads() == 1
        with pytest.raises(zarrshard.InvalidArgumentError):
            zarrshard.set_threads(100000)
    finally:
        zarrshard.set_threads(old)


def test_fsspec_memory_store_whole_shards_and_listing():
    import fsspec

    v = image((64, 96))
    a = zarrshard.create_array("memory://api/x", shape=v.shape, dtype="uint16", chunks=(16, 16), shards=(32, 32))
    a[...] = v
    fs = fsspec.filesystem("memory")
    assert sorted(fs.find("/api/x")) == sorted(["/api/x/zarr.json"] + [f"/api/x/c/{i}/{j}" for i in range(2) for j in range(3)])
    b = zarrshard.open_array("memory://api/x", mode="r")
    np.testing.assert_array_equal(b[...], v)
    # zarr-python reads the same objects through fsspec.
    from fsspec.implementations.asyn_wrapper import AsyncFileSystemWrapper

    z = zarr.open_array(zarr.storage.FsspecStore(AsyncFileSystemWrapper(fs, asynchronous=True), path="/api/x", read_only=True), mode="r")
    np.testing.assert_array_equal(z[...], v)
    # A callback's exception is the cause of the StoreError.
    store = zarrshard.FsspecStore(fs, "/api/x")
    c = zarrshard.open_array(store, mode="r")

    def broken(*args, **kwargs):
        raise PermissionError(13, "denied by the test")

    fs.cat_file, saved = broken, fs.cat_file
    try:
        with pytest.raises(zarrshard.StoreError) as e:
            c[0:16, 0:16]
    finally:
        fs.cat_file = saved
    assert e.value.io_code == 13 and isinstance(e.value.__cause__, PermissionError)


def test_cached_indexes_are_a_snapshot_until_forgotten(path):
    """Another handle rewrites a shard so its chunks move (no checksums, uncompressed: the
    stale entries still decode). The reader's cached index points at the old places until
    `forget_cached_indexes`; then it reads the new values. With the cache off it always does."""
    a = zarrshard.create_array(path, shape=(16, 8), dtype="uint16", chunks=(4, 8), shards=(16, 8), compressors=None, checksums=())
    old = image((16, 8)) + 1
    a[...] = old
    reader = zarrshard.open_array(path, mode="r")
    np.testing.assert_array_equal(reader[...], old)  # index cached
    new = old + 100
    new[0:4] = 0  # the fill value: the first chunk is no longer stored, the others move up
    zarrshard.open_array(path, mode="r+")[...] = new
    stale = reader[4:8]
    np.testing.assert_array_equal(stale, new[8:12])  # the bytes now at the second chunk's old place
    reader.forget_cached_indexes()
    np.testing.assert_array_equal(reader[...], new)
    uncached = zarrshard.open_array(path, mode="r")
    uncached.set_index_cache(0)
    np.testing.assert_array_equal(uncached[...], new)
    a[...] = old
    np.testing.assert_array_equal(uncached[...], old)
