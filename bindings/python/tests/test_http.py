"""Reading over http:// from a real HTTP server (Debian's nginx on loopback, tests/refs/nginx.py),
through fsspec's HTTP file system: values equal to numpy's, requests counted in nginx's
access log."""

import os
import sys

import numpy as np
import pytest
import zarr

import zarrshard

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "refs"))
from nginx import Nginx  # noqa: E402


def image(shape):
    n = int(np.prod(shape))
    return (np.arange(n, dtype=np.uint64) * 7919 % 65521).astype("uint16").reshape(shape)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("http")
    v = image((256, 320))
    a = zarrshard.create_array(str(root / "a.zarr"), shape=v.shape, dtype="uint16", chunks=(64, 64), shards=(128, 128))
    a[...] = v
    z = zarr.create_array(str(root / "z.zarr"), shape=v.shape, dtype="uint16", chunks=(32, 32), shards=(128, 64))
    z[...] = v
    with Nginx(str(root)) as srv:
        yield srv, v


def gets_since(srv, before):
    return [line for line in srv.access_lines()[before:] if line.startswith("GET ")]


def test_arrays_read_over_http_equal(served):
    srv, v = served
    for name in ("a.zarr", "z.zarr"):
        a = zarrshard.open_array(f"{srv.url}/{name}", mode="r")
        np.testing.assert_array_equal(a[...], v, err_msg=name)
        np.testing.assert_array_equal(a[100:200, 7:300], v[100:200, 7:300], err_msg=name)


def test_a_single_chunk_read_is_two_gets_cold_and_one_warm(served):
    srv, v = served
    a = zarrshard.open_array(f"{srv.url}/a.zarr", mode="r")
    before = len(srv.access_lines())
    np.testing.assert_array_equal(a[0:64, 64:128], v[0:64, 64:128])
    cold = gets_since(srv, before)
    # The index (a suffix range) and the chunk.
    assert len(cold) == 2, cold
    assert cold[0].startswith("GET /a.zarr/c/0/0 206") and '"bytes=-' in cold[0], cold
    assert cold[1].startswith("GET /a.zarr/c/0/0 206") and '"bytes=' in cold[1], cold
    before = len(srv.access_lines())
    np.testing.assert_array_equal(a[64:128, 0:64], v[64:128, 0:64])
    warm = gets_since(srv, before)
    assert len(warm) == 1 and warm[0].startswith("GET /a.zarr/c/0/0 206"), warm


def test_writing_over_http_is_refused_with_the_cause(served):
    srv, _ = served
    a = zarrshard.open_array(f"{srv.url}/a.zarr", mode="r+")
    with pytest.raises(zarrshard.StoreError) as e:
        a[0:128, 0:128] = 1  # one whole shard: a new object, which HTTP cannot take
    assert e.value.__cause__ is not None
