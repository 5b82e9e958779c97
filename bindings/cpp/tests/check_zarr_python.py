#!/usr/bin/env python3
"""Read with zarr-python, independently of zarrshard, the hierarchy the C++ binding wrote
through the library's directory store (test_zarrshard's test_write_for_zarr_python).

Usage:  check_zarr_python.py ROOT

ROOT (SCRATCH/py.zarr) holds a root group and the group `img` with
  * `img/frames`: uint16, fill value 7, dimension names t, y, x, sharded, 10 frames of 12x10
    appended one by one (value t * 1000 + y * 10 + x), then flushed;
  * `img/json`: 32x32 uint16 written whole (value y * 32 + x), attributes {"scale": [1.5, 2]};
  * `img/checked`: uint8 8x8 from a spec with gzip level 5, the index at the start without a
    checksum, a crc32c after each inner chunk, fill value 255; rows 0-3 written (y * 8 + x);
  * `img/resized`: int32, not sharded, 20x20 of y * 20 + x + 1, resized to 10x12, then to
    16x16 (so everything outside 10x12 reads as the fill value 0).
The expected values are computed here from those formulas, not read from zarrshard.

Prints one line per check and, last, "N passed, M failed"; exit status 1 on any failure.
"""
from __future__ import annotations

import sys
import warnings

import numpy as np
import zarr

warnings.simplefilter("ignore")


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    root = argv[1]
    passed = failed = 0

    def check(name, ok):
        nonlocal passed, failed
        print(("ok " if ok else "FAIL ") + name)
        if ok:
            passed += 1
        else:
            failed += 1

    top = zarr.open_group(root, mode="r")
    check("root group attributes", dict(top.attrs) == {"written_by": "zarrshard C++"})
    img = zarr.open_group(root, path="img", mode="r")
    check("img multiscales", dict(img.attrs) == {"multiscales": [{"version": "0.5", "name": "cpp"}]})
    check("img members", sorted(img.array_keys()) == ["checked", "frames", "json", "resized"])

    frames = zarr.open_array(root, path="img/frames", mode="r")
    t, y, x = np.meshgrid(np.arange(10), np.arange(12), np.arange(10), indexing="ij")
    check("frames shape", frames.shape == (10, 12, 10))
    check("frames dtype and fill", frames.dtype == np.uint16 and int(frames.fill_value) == 7)
    check("frames dimension names", tuple(frames.metadata.dimension_names) == ("t", "y", "x"))
    check("frames sharded", frames.shards == (4, 12, 10) and frames.chunks == (1, 6, 5))
    (sharding,) = frames.metadata.codecs
    check(
        "frames codecs (the spec's defaults: zstd 3, crc32c index at the end, no chunk crc32c)",
        [type(c).__name__ for c in sharding.codecs] == ["BytesCodec", "ZstdCodec"]
        and sharding.codecs[1].level == 3
        and [type(c).__name__ for c in sharding.index_codecs] == ["BytesCodec", "Crc32cCodec"]
        and sharding.index_location.value == "end",
    )
    check("frames values", np.array_equal(frames[...], (t * 1000 + y * 10 + x).astype(np.uint16)))

    js = zarr.open_array(root, path="img/json", mode="r")
    check("json values", np.array_equal(js[...], np.arange(32 * 32, dtype=np.uint16).reshape(32, 32)))
    check("json attributes", dict(js.attrs) == {"scale": [1.5, 2]})

    checked = zarr.open_array(root, path="img/checked", mode="r")
    (sharding,) = checked.metadata.codecs
    check(
        "checked codecs (gzip 5, a crc32c per chunk, index at the start without checksum)",
        [type(c).__name__ for c in sharding.codecs] == ["BytesCodec", "GzipCodec", "Crc32cCodec"]
        and sharding.codecs[1].level == 5
        and [type(c).__name__ for c in sharding.index_codecs] == ["BytesCodec"]
        and sharding.index_location.value == "start"
        and checked.shards == (4, 8)
        and checked.chunks == (2, 4),
    )
    want_checked = np.full((8, 8), 255, dtype=np.uint8)
    want_checked[:4] = np.arange(32, dtype=np.uint8).reshape(4, 8)
    check("checked values and fill", int(checked.fill_value) == 255 and np.array_equal(checked[...], want_checked))

    resized = zarr.open_array(root, path="img/resized", mode="r")
    want = np.zeros((16, 16), dtype=np.int32)
    yy, xx = np.meshgrid(np.arange(10), np.arange(12), indexing="ij")
    want[:10, :12] = yy * 20 + xx + 1
    check("resized shape", resized.shape == (16, 16) and resized.dtype == np.int32)
    check("resized values (the cut part reads as fill)", np.array_equal(resized[...], want))

    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
