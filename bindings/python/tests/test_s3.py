"""The package over S3 for real: arrays written and read through `s3://` (s3fs) against an
S3 server on loopback (moto, started and stopped by this module: tests/s3/server.py), read
back by zarr-python; shards past the multipart threshold uploaded in parts and visible only
when complete; the requests a read makes, counted at the HTTP level; store errors as
exceptions that name what failed, with nothing printed.

Requests are counted with botocore's `before-send` event on the s3fs client (every HTTP
request, retries included), UploadPart calls with `before-parameter-build.s3.UploadPart` (its
parameters as the caller gave them). Every request has a timeout, so a server that stops
answering fails the tests instead of hanging them."""

import contextlib
import errno
import itertools
import pathlib
import sys

import numpy as np
import pytest

s3fs = pytest.importorskip("s3fs")
pytest.importorskip("moto")
boto3 = pytest.importorskip("boto3")
import botocore.config  # noqa: E402  (boto3's)

import zarrshard  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "tests" / "s3"))
from server import ACCESS_KEY, SECRET_KEY, REGION, s3_server  # noqa: E402

zarr = pytest.importorskip("zarr")

MiB = 1 << 20
TIMEOUTS = {"connect_timeout": 5, "read_timeout": 30}


@pytest.fixture(scope="module")
def endpoint():
    with s3_server() as url:
        yield url


@pytest.fixture(scope="module")
def options(endpoint):
    return {"endpoint_url": endpoint, "key": ACCESS_KEY, "secret": SECRET_KEY, "config_kwargs": TIMEOUTS}


@pytest.fixture(scope="module")
def fs(options):
    # An instance of our own: the event handlers registered on it count only our requests.
    return s3fs.S3FileSystem(skip_instance_cache=True, **options)


@pytest.fixture(scope="module")
def client(endpoint):
    """A plain (synchronous) boto3 client: usable inside s3fs's event handlers, which run on
    fsspec's event loop thread where s3fs's own synchronous calls would deadlock."""
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
        region_name=REGION, config=botocore.config.Config(**TIMEOUTS),
    )


_names = itertools.count()


@pytest.fixture
def bucket(fs):
    name = f"zarrshard-test-{next(_names)}"
    fs.mkdir(name)
    return name


@contextlib.contextmanager
def on_event(fs, event, handler):
    """`handler` registered on the s3fs client's botocore events for the block."""
    fs.s3.meta.events.register(event, handler)
    try:
        yield
    finally:
        fs.s3.meta.events.unregister(event, handler)


@contextlib.contextmanager
def http_requests(fs):
    """The list of (method, key, Range header) of every HTTP request `fs` sends in the block."""
    sent = []

    def record(request, **_):
        path = request.url.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
        rng = request.headers.get("Range")
        sent.append((request.method, path, rng.decode() if isinstance(rng, bytes) else rng))

    with on_event(fs, "before-send.s3", record):
        yield sent


def expected(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return rng.random(shape).astype(dtype)
    return rng.integers(0, np.iinfo(dtype).max, size=shape, dtype=dtype)


# Round trips ---------------------------------------------------------------------------------

# Edge chunks and shards partly outside the array on every axis; few objects (moto answers a
# request in milliseconds, and an unsharded array is an object per chunk).
LAYOUTS = [
    pytest.param((100, 90), (16, 20), (48, 60), "uint16", id="2d-sharded"),
    pytest.param((40, 50), (16, 20), None, "int32", id="2d-unsharded"),
    pytest.param((21, 35, 40), (4, 8, 8), (8, 16, 24), "float32", id="3d-sharded"),
    pytest.param((10, 20, 18), (4, 8, 8), None, "int64", id="3d-unsharded"),
]

REGIONS = {
    2: [(slice(0, 16), slice(0, 20)), (slice(5, 39), slice(17, 49)), (7, slice(None)), (Ellipsis, 49)],
    3: [(slice(0, 4), slice(0, 8), slice(0, 8)), (slice(3, 10), slice(7, 19), slice(5, 17)), (9, Ellipsis),
        (slice(None), 9, slice(7, 9))],
}


@pytest.mark.parametrize("shape,chunks,shards,dtype", LAYOUTS)
def test_write_and_read_through_s3_urls(bucket, options, shape, chunks, shards, dtype):
    url = f"s3://{bucket}/group/array"
    data = expected(shape, dtype)
    a = zarrshard.create_array(url, shape=shape, dtype=dtype, chunks=chunks, shards=shards,
                               fill_value=0, storage_options=options)
    a[...] = data
    b = zarrshard.open_array(url, mode="r", storage_options=options)
    assert (b.shape, b.dtype, b.chunks, b.shards) == (shape, np.dtype(dtype), chunks, shards)
    np.testing.assert_array_equal(b[...], data)
    for region in REGIONS[len(shape)]:
        np.testing.assert_array_equal(b[region], data[region])

    z = zarr.open_array(url, mode="r", storage_options=options)
    assert z.shape == shape and z.chunks == chunks and z.shards == shards
    np.testing.assert_array_equal(z[...], data)


@pytest.mark.parametrize("shape,chunks,shards,dtype", LAYOUTS)
def test_reads_what_zarr_python_wrote_to_s3(bucket, options, shape, chunks, shards, dtype):
    url = f"s3://{bucket}/from-zarr"
    data = expected(shape, dtype, seed=1)
    z = zarr.create_array(url, shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=0,
                          storage_options=options)
    z[...] = data
    a = zarrshard.open_array(url, mode="r", storage_options=options)
    np.testing.assert_array_equal(a[...], data)
    for region in REGIONS[len(shape)]:
        np.testing.assert_array_equal(a[region], data[region])


@pytest.mark.parametrize("shape,chunks,shards,dtype", LAYOUTS)
def test_region_writes_that_cover_shards_partly(bucket, options, shape, chunks, shards, dtype):
    # An object store has no write at an offset: a shard covered partly is updated on a copy
    # of the old object and replaced whole.
    url = f"s3://{bucket}/regions"
    data = expected(shape, dtype, seed=8)
    a = zarrshard.create_array(url, shape=shape, dtype=dtype, chunks=chunks, shards=shards, fill_value=0,
                               storage_options=options)
    a[...] = data
    for k, region in enumerate(REGIONS[len(shape)]):
        block = expected(data[region].shape, dtype, seed=20 + k)
        a[region] = block
        data[region] = block
        np.testing.assert_array_equal(a[...], data)
    z = zarr.open_array(url, mode="r", storage_options=options)
    np.testing.assert_array_equal(z[...], data)


def test_threads_write_and_read_one_array_at_once(bucket, options):
    # The store's callbacks run on the library's threads and the callers' at once.
    from concurrent.futures import ThreadPoolExecutor

    data = expected((128, 192), "int16", seed=13)
    a = zarrshard.create_array(f"s3://{bucket}/threads", shape=data.shape, dtype="int16", chunks=(16, 16),
                               shards=(64, 64), storage_options=options)
    tiles = [(slice(i, i + 64), slice(j, j + 64)) for i in (0, 64) for j in (0, 64, 128)]

    def write(t):
        a[t] = data[t]

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, tiles))
        b = zarrshard.open_array(f"s3://{bucket}/threads", mode="r", storage_options=options)
        regions = tiles + [(slice(5, 120), slice(7, 190)), (slice(60, 70), slice(None))]
        for region, got in zip(regions, pool.map(lambda r: b[r], regions)):
            np.testing.assert_array_equal(got, data[region])


def test_resize_deletes_the_shards_past_the_edge(fs, bucket):
    # Listing (`find`) and deleting (`rm_file`) through the store.
    store = zarrshard.FsspecStore(fs, f"{bucket}/resized")
    data = expected((64, 96), "uint8", seed=14)
    a = zarrshard.create_array(store, shape=data.shape, dtype="uint8", chunks=(16, 16), shards=(32, 32),
                               fill_value=7)
    a[...] = data
    assert len(fs.find(f"{bucket}/resized/c")) == 6
    a.resize(30, 40)
    assert sorted(fs.find(f"{bucket}/resized/c")) == [f"{bucket}/resized/c/0/0", f"{bucket}/resized/c/0/1"]
    a.resize(64, 96)
    want = np.full(data.shape, 7, dtype="uint8")
    want[:30, :40] = data[:30, :40]
    np.testing.assert_array_equal(a[...], want)
    np.testing.assert_array_equal(zarrshard.open_array(store, mode="r")[...], want)


def test_a_truncated_shard_is_corrupt_as_on_local_files(fs, bucket, tmp_path):
    # The index at the start and the object cut short: the last chunk starts past the end,
    # which S3 answers with 416. The directory store's error for the same bytes is the
    # reference.
    data = expected((128, 128), "uint16", seed=12)
    errors = []
    for store in (zarrshard.LocalStore(tmp_path), zarrshard.FsspecStore(fs, f"{bucket}/cut")):
        a = zarrshard.create_array(store, shape=data.shape, dtype="uint16", chunks=(64, 64), shards=(128, 128),
                                   index_location="start", compressors=None)
        a[...] = data
        if isinstance(store, zarrshard.LocalStore):
            path = tmp_path / "c" / "0" / "0"
            path.write_bytes(path.read_bytes()[:-3 * 64 * 64 * 2])
        else:
            fs.pipe_file(f"{bucket}/cut/c/0/0", fs.cat_file(f"{bucket}/cut/c/0/0")[:-3 * 64 * 64 * 2])
        b = zarrshard.open_array(store, mode="r")
        np.testing.assert_array_equal(b[0:64, 0:64], data[0:64, 0:64])
        with pytest.raises(zarrshard.CorruptError) as e:
            b[64:128, 64:128]
        errors.append(str(e.value))
    assert errors[0].startswith("c/0/0: corrupt shard: bytes "), errors[0]
    assert errors[1] == errors[0]


def test_fsspec_store_on_a_file_system_object(bucket, fs):
    store = zarrshard.FsspecStore(fs, f"s3://{bucket}/x")
    a = zarrshard.create_array(store, shape=(40, 40), dtype="uint8", chunks=(10, 10), shards=(20, 20))
    data = expected((40, 40), "uint8", seed=2)
    a[...] = data
    assert sorted(fs.find(f"{bucket}/x")) == sorted(
        [f"{bucket}/x/zarr.json"] + [f"{bucket}/x/c/{i}/{j}" for i in range(2) for j in range(2)]
    )
    np.testing.assert_array_equal(zarrshard.open_array(store, mode="r")[...], data)


# Multipart uploads ---------------------------------------------------------------------------

THRESHOLD = 5 * MiB  # S3's smallest part (all but the last)
BIG_SHAPE, BIG_CHUNKS = (2048, 1024), (256, 256)  # one uncompressed float64 shard of 16 MiB
# The shard's size from the format: its 32 chunks, then the index (an offset and a length of
# 8 bytes each per chunk) and the index's crc32c.
BIG_SHARD_SIZE = 2048 * 1024 * 8 + 32 * 16 + 4
# (part number, size): parts of the threshold, the last one the rest.
PARTS = [(1, THRESHOLD), (2, THRESHOLD), (3, THRESHOLD), (4, BIG_SHARD_SIZE - 3 * THRESHOLD)]


def big_array(fs, bucket):
    store = zarrshard.FsspecStore(fs, f"{bucket}/big", multipart_threshold=THRESHOLD)
    a = zarrshard.create_array(store, shape=BIG_SHAPE, dtype="float64", chunks=BIG_CHUNKS, shards=BIG_SHAPE,
                               compressors=None)
    return a, f"{bucket}/big/c/0/0"


def stored(client, bucket, key):
    """The object's bytes as the server has them now, or None where there is none."""
    try:
        return client.get_object(Bucket=bucket, Key=key.split("/", 1)[1])["Body"].read()
    except client.exceptions.NoSuchKey:
        return None


def test_large_shard_goes_up_in_parts_and_appears_when_complete(fs, client, bucket, options):
    a, key = big_array(fs, bucket)
    first, second = expected(BIG_SHAPE, "float64", seed=3), expected(BIG_SHAPE, "float64", seed=4)
    parts, seen = [], []

    def on_part(params, **_):
        parts.append((params["PartNumber"], len(params["Body"])))
        # What readers see while the upload runs (a blocking client: this is the loop's thread).
        seen.append(stored(client, bucket, key))

    with on_event(fs, "before-parameter-build.s3.UploadPart", on_part):
        a[...] = first
        assert parts == PARTS
        assert seen == [None] * len(PARTS)
        old = fs.cat_file(key)
        assert len(old) == BIG_SHARD_SIZE

        parts.clear(), seen.clear()
        a[...] = second
        assert parts == PARTS
        assert len(seen) == len(PARTS) and all(s == old for s in seen)

    assert fs.info(key)["size"] == BIG_SHARD_SIZE
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    z = zarr.open_array(f"s3://{bucket}/big", mode="r", storage_options=options)
    np.testing.assert_array_equal(z[...], second)


def test_default_threshold_writes_a_shard_of_some_mib_in_one_put(fs, bucket):
    # 6 MiB: past fsspec's generic 4 MiB block size, which S3 refuses as a part size.
    store = zarrshard.FsspecStore(fs, f"{bucket}/default")
    data = expected((1024, 768), "float64", seed=11)
    a = zarrshard.create_array(store, shape=data.shape, dtype="float64", chunks=(256, 256), shards=data.shape,
                               compressors=None)
    with http_requests(fs) as sent:
        a[...] = data
    assert [(m, k) for m, k, _ in sent] == [("PUT", f"{bucket}/default/c/0/0")]
    assert fs.info(f"{bucket}/default/c/0/0")["size"] == 1024 * 768 * 8 + 12 * 16 + 4
    np.testing.assert_array_equal(zarrshard.open_array(store, mode="r")[...], data)


def test_a_threshold_below_the_smallest_part_is_refused_at_once(fs, bucket):
    with pytest.raises(ValueError, match=r"^multipart_threshold 1048576: S3's parts are at least 5 MiB \(5242880 bytes\)$"):
        zarrshard.FsspecStore(fs, f"{bucket}/small-parts", multipart_threshold=MiB)


class PartFailure(Exception):
    """The failure injected into an upload."""


@pytest.mark.parametrize("operation,callback", [
    # Parts go up as the library writes, so the second fails inside a write of the shard;
    # the completion is the commit of the new object.
    ("UploadPart", "write_new"),
    ("CompleteMultipartUpload", "commit_new"),
])
def test_a_failed_upload_leaves_the_old_object_and_no_upload(fs, client, bucket, capfd, operation, callback):
    a, key = big_array(fs, bucket)
    first = expected(BIG_SHAPE, "float64", seed=5)
    a[...] = first
    old = fs.cat_file(key)
    capfd.readouterr()
    injected = []

    def fail(params, **_):
        if params.get("PartNumber", 2) == 2:
            injected.append(PartFailure(f"{operation} of {params['Key']} refused by the test"))
            raise injected[-1]

    with on_event(fs, f"before-parameter-build.s3.{operation}", fail):
        with pytest.raises(zarrshard.StoreError) as e:
            a[...] = expected(BIG_SHAPE, "float64", seed=6)
    assert len(injected) == 1
    assert e.value.__cause__ is injected[0]
    assert e.value.status_name == "SHARD_ERR_IO"
    assert str(e.value) == f"I/O error (code {errno.EIO}): the host's {callback} callback failed for `c/0/0`"
    assert fs.cat_file(key) == old
    assert client.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    np.testing.assert_array_equal(zarrshard.open_array(a.store, mode="r")[...], first)
    assert capfd.readouterr() == ("", "")


# Requests per read ---------------------------------------------------------------------------


def chunk_ranges(shard, chunks_per_shard):
    """(offset, length) of each inner chunk, from the shard's index at its end (little-endian
    uint64 pairs, then a 4-byte crc32c), in C order."""
    n = int(np.prod(chunks_per_shard))
    index = np.frombuffer(shard[-(16 * n + 4):-4], dtype="<u8").reshape(n, 2)
    return [(int(o), int(length)) for o, length in index]


def test_single_chunk_reads_cold_two_gets_warm_one(fs, bucket):
    store = zarrshard.FsspecStore(fs, f"{bucket}/counted")
    a = zarrshard.create_array(store, shape=(256, 256), dtype="uint16", chunks=(64, 64), shards=(128, 128))
    data = expected((256, 256), "uint16", seed=7)
    a[...] = data
    key = f"{bucket}/counted/c/0/0"
    ranges = chunk_ranges(fs.cat_file(key), (2, 2))

    # Opening is one request: zarr.json read whole by one GET (no HEAD for its size first).
    with http_requests(fs) as sent:
        b = zarrshard.open_array(store, mode="r")
    assert sent == [("GET", f"{bucket}/counted/zarr.json", "bytes=0-65535")], sent
    with http_requests(fs) as sent:
        np.testing.assert_array_equal(b[0:64, 0:64], data[0:64, 0:64])
    offset, length = ranges[0]
    assert sent == [("GET", key, f"bytes=-{4 * 16 + 4}"), ("GET", key, f"bytes={offset}-{offset + length - 1}")]

    with http_requests(fs) as sent:
        np.testing.assert_array_equal(b[64:128, 0:64], data[64:128, 0:64])
    offset, length = ranges[2]
    assert sent == [("GET", key, f"bytes={offset}-{offset + length - 1}")]


# Errors --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checking_endpoint():
    """A second server that checks credentials (moto's IAM authentication from the first
    request on): it knows no access key, so every request is refused as S3 refuses a wrong
    one (403 InvalidAccessKeyId)."""
    import os

    saved = os.environ.get("INITIAL_NO_AUTH_ACTION_COUNT")
    os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "0"  # read by the server at its start
    server = s3_server()
    try:
        url = server.__enter__()
    finally:
        if saved is None:
            del os.environ["INITIAL_NO_AUTH_ACTION_COUNT"]
        else:
            os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = saved
    try:
        yield url
    finally:
        server.__exit__(None, None, None)


def test_missing_bucket_is_a_store_error_naming_the_key(options, capfd):
    # Not a missing array: the bucket name is wrong. Creating reads `zarr.json` first (a node
    # there is refused without `overwrite`).
    message = f"I/O error (code {errno.ENOENT}): the host's read callback failed for `zarr.json`"
    for call in (
        lambda: zarrshard.create_array("s3://zarrshard-no-such-bucket/a", shape=(10,), dtype="uint8", chunks=(5,),
                                       storage_options=options),
        lambda: zarrshard.open_array("s3://zarrshard-no-such-bucket/a", mode="r", storage_options=options),
    ):
        with pytest.raises(zarrshard.StoreError) as e:
            call()
        assert str(e.value) == message
        assert e.value.io_code == errno.ENOENT
        assert isinstance(e.value, zarrshard.StoreNotFoundError)
        assert isinstance(e.value.__cause__, FileNotFoundError)
        assert str(e.value.__cause__) == "The specified bucket does not exist"
    assert capfd.readouterr() == ("", "")


def test_missing_array_is_invalid_metadata(bucket, options, capfd):
    with pytest.raises(zarrshard.InvalidMetadataError, match="no zarr.json"):
        zarrshard.open_array(f"s3://{bucket}/nothing-here", mode="r", storage_options=options)
    assert capfd.readouterr() == ("", "")


def test_wrong_credentials_are_a_store_error_naming_the_key(checking_endpoint, capfd):
    wrong = {"endpoint_url": checking_endpoint, "key": "not-a-key", "secret": "not-a-secret",
             "config_kwargs": TIMEOUTS, "skip_instance_cache": True}
    for call in (
        lambda: zarrshard.open_array("s3://bucket/a", mode="r", storage_options=wrong),
        lambda: zarrshard.create_array("s3://bucket/a", shape=(10,), dtype="uint8", chunks=(5,),
                                       storage_options=wrong),
    ):
        with pytest.raises(zarrshard.StoreError) as e:
            call()
        assert str(e.value) == f"I/O error (code {errno.EACCES}): the host's read callback failed for `zarr.json`"
        assert e.value.io_code == errno.EACCES
        assert isinstance(e.value.__cause__, PermissionError), repr(e.value.__cause__)
        assert "Access Key Id you provided does not exist" in str(e.value.__cause__)
    assert capfd.readouterr() == ("", "")


def test_cached_index_follows_writes_through_the_handle(fs, bucket):
    # The chunk moves in the rewritten shard (it compresses to another size), so an index
    # kept from before the write would point into the wrong bytes.
    store = zarrshard.FsspecStore(fs, f"{bucket}/rewritten")
    a = zarrshard.create_array(store, shape=(128, 128), dtype="uint16", chunks=(64, 64), shards=(128, 128))
    data = np.zeros((128, 128), dtype="uint16")
    data[0:64, 64:128] = expected((64, 64), "uint16", seed=9)
    a[...] = data
    np.testing.assert_array_equal(a[64:128, 64:128], data[64:128, 64:128])  # the index cached
    data[0:64, 0:64] = expected((64, 64), "uint16", seed=10)
    a[0:64, 0:64] = data[0:64, 0:64]
    key = f"{bucket}/rewritten/c/0/0"
    offset, length = chunk_ranges(fs.cat_file(key), (2, 2))[1]
    with http_requests(fs) as sent:
        np.testing.assert_array_equal(a[0:64, 64:128], data[0:64, 64:128])
    # The index read again after the write, then the chunk where the new index says.
    assert sent == [("GET", key, f"bytes=-{4 * 16 + 4}"), ("GET", key, f"bytes={offset}-{offset + length - 1}")]
