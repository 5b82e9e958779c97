#!/usr/bin/env python3
"""Data types zarr-python writes in object form, both ways through zarrshard.

Usage:  check_dtypes.py WORK_DIR ZARRSHARD_BIN [--timeout SECONDS]

zarr-python 3.1 (the newest release; it writes the object form of `raw_bytes`,
`null_terminated_bytes`, `fixed_length_utf32`, `numpy.datetime64`, `numpy.timedelta64`
and `structured`) writes a sharded array of each data type, with a fill value and only part
of the array written, so that missing shards and missing inner chunks read as the fill value.
Then, per data type:

  export  `zarrshard export` gives numpy's bytes of the array zarr-python reads back, in the
          export format (C order, each element little-endian: every field of a struct, every
          UTF-32 code unit, datetimes as int64; raw and null-terminated bytes as they are);
  import  `zarrshard import` of other values (part of them the fill value) into an empty copy
          of the array: zarr-python reads exactly those values;
  repack  `zarrshard repack --shard-shape` writes a new zarr.json (data type and fill value
          spelled by zarrshard): zarr-python opens it, reads the same data type, fill value
          and values.

A variable-length `string` array (vlen-utf8) must be refused by `export` with an error that
names the data type and says it is variable-length. The last line printed is exactly
"N passed, M failed"; the exit status is 1 if M > 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import warnings
import zlib

import numpy as np
import zarr
import zarr.codecs.sharding
from zarr.codecs import BytesCodec

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procs import describe_exit, run_with_timeout, squash  # noqa: E402

warnings.filterwarnings("ignore")  # zarr-python's UnstableSpecificationWarning for these types
# zarr-python 3.1 caches sharding specs keyed by the fill value, which for raw_bytes and
# structured is an unhashable numpy void scalar (zarr-python issue 3054): every read of such a
# sharded array fails there. The codec's own comment turns one such cache off; this turns off
# the rest (they only save recomputing shapes).
zarr.codecs.sharding.lru_cache = lambda *a, **k: (lambda f: f)

SHAPE = (7, 5)
SHARDS = (4, 4)
CHUNKS = (2, 2)
WRITTEN = (slice(0, 3), slice(1, 4))  # partly one shard, partly inner chunks: the rest is fill


def strings(rng, n, length):
    alphabet = ["a", "é", "☃", "𝄞", "Z", "\u0000x"]  # 2-, 3-, 4-byte UTF-8; an inner NUL
    out = []
    for _ in range(n):
        k = int(rng.integers(0, length + 1))
        s = "".join(alphabet[int(i)] for i in rng.integers(0, len(alphabet), k))[:length]
        out.append(s)
    return np.array(out, dtype=f"<U{length}")


def values(dtype, rng, shape):
    """Values of every element of `shape`: valid for the type, varied bytes."""
    n = int(np.prod(shape))
    if dtype.kind == "U":
        return strings(rng, n, dtype.itemsize // 4).reshape(shape)
    if dtype.names is not None:
        out = np.zeros(shape, dtype=dtype)
        for name in dtype.names:
            out[name] = values(dtype.fields[name][0], rng, shape)
        return out
    raw = rng.integers(0, 256, n * dtype.itemsize, dtype=np.uint8).tobytes()
    out = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype).reshape(shape)
    if dtype.kind in "Mm":
        out = out.copy()
        out.flat[::3] = np.array("NaT", dtype=dtype)  # NaT among the values
    return out


def le_bytes(arr):
    """The export format: C order, each element (each field, code unit) little-endian."""
    return np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()


# (name, numpy dtype, fill value, bytes codec endian or None for zarr-python's default)
CASES = [
    ("raw_bytes", np.dtype("V5"), np.void(b"\x01\x02\x03\xfe\xff"), None),
    ("null_terminated_bytes", np.dtype("S4"), np.bytes_(b"ab"), None),
    ("fixed_length_utf32", np.dtype("<U3"), np.str_("é☃"), None),
    ("fixed_length_utf32 big-endian", np.dtype("<U3"), np.str_("𝄞"), "big"),
    ("numpy.datetime64 10ms", np.dtype("M8[10ms]"), np.datetime64(123456789, "10ms"), None),
    ("numpy.datetime64 NaT fill", np.dtype("M8[ns]"), np.datetime64("NaT", "ns"), None),
    ("numpy.datetime64 big-endian", np.dtype("M8[D]"), np.datetime64(-3, "D"), "big"),
    ("numpy.timedelta64", np.dtype("m8[s]"), np.timedelta64(7, "s"), None),
    ("numpy.timedelta64 μs", np.dtype("m8[us]"), np.timedelta64(-1, "us"), None),
    (
        "structured",
        np.dtype([("a", "<i2"), ("b", "<f8"), ("c", "S3"), ("d", "<M8[s]"), ("e", "<U2")]),
        None,  # set below: a record, not a scalar
        None,
    ),
    (
        "structured nested",
        np.dtype([("p", [("x", "<f4"), ("y", "<u2")]), ("v", "<i8"), ("w", "V3")]),
        None,
        None,
    ),
]


def record(dtype, fields):
    return np.array([fields], dtype=dtype)[0]


FILLS = {
    "structured": lambda d: record(d, (-2, 2.5, b"xy", 5, "é")),
    "structured nested": lambda d: record(d, ((1.5, 7), -9, b"\x00\x01\x02")),
}


def create(path, dtype, fill, endian):
    kwargs = {}
    if endian is not None:
        kwargs["serializer"] = BytesCodec(endian=endian)
    return zarr.create_array(path, shape=SHAPE, chunks=CHUNKS, shards=SHARDS, dtype=dtype,
                             fill_value=fill, compressors=None, zarr_format=3, **kwargs)


def zarrshard(binary, timeout, *args):
    rc, err = run_with_timeout([binary, "--quiet", *args], timeout)
    return rc, err


def same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and le_bytes(a) == le_bytes(b)


def check(name, dtype, fill, endian, work, binary, timeout):
    """Yield (label, None | failure message) for each check of one data type."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    src = os.path.join(work, name.replace(" ", "_"))
    a = create(src, dtype, fill, endian)
    a[WRITTEN] = values(dtype, rng, a[WRITTEN].shape)
    meta = json.load(open(os.path.join(src, "zarr.json")))
    if not isinstance(meta["data_type"], dict):
        yield "metadata", f"zarr-python wrote data_type {meta['data_type']!r}, not an object"
        return
    expected = zarr.open_array(src, mode="r")[...]

    out = os.path.join(work, name.replace(" ", "_") + ".bin")
    rc, err = zarrshard(binary, timeout, "export", src, out)
    if rc != 0:
        yield "export", f"{describe_exit(rc)}: {squash(err)}"
    else:
        got = open(out, "rb").read()
        want = le_bytes(expected)
        if got != want:
            diff = next((i for i, (x, y) in enumerate(zip(got, want)) if x != y), min(len(got), len(want)))
            yield "export", f"{len(got)} bytes, expected {len(want)}; first difference at byte {diff}"
        else:
            yield "export", None

    dst = src + "-import"
    create(dst, dtype, fill, endian)
    new = values(dtype, rng, SHAPE)
    new[4:, :] = a.fill_value  # whole inner chunks equal to the fill value
    raw = os.path.join(work, name.replace(" ", "_") + "-in.bin")
    open(raw, "wb").write(le_bytes(new))
    rc, err = zarrshard(binary, timeout, "import", raw, dst)
    if rc != 0:
        yield "import", f"{describe_exit(rc)}: {squash(err)}"
    else:
        back = zarr.open_array(dst, mode="r")[...]
        yield "import", None if same(back, new) else "zarr-python reads other values"

    rep = src + "-repack"
    rc, err = zarrshard(binary, timeout, "repack", src, rep, "--shard-shape", "2,4")
    if rc != 0:
        yield "repack", f"{describe_exit(rc)}: {squash(err)}"
        return
    try:
        r = zarr.open_array(rep, mode="r")
        rmeta = json.load(open(os.path.join(rep, "zarr.json")))
        if rmeta["data_type"] != meta["data_type"] or rmeta["fill_value"] != meta["fill_value"]:
            yield "repack", (f"zarr.json says data_type {rmeta['data_type']}, fill_value "
                             f"{rmeta['fill_value']!r}; the source {meta['data_type']}, "
                             f"{meta['fill_value']!r}")
        elif r.dtype != a.dtype or not same(r[...], expected):
            yield "repack", f"zarr-python reads {r.dtype} values other than the source's"
        else:
            yield "repack", None
    except Exception as e:  # zarr-python refusing our zarr.json is the failure reported
        yield "repack", f"zarr-python cannot read it: {type(e).__name__}: {e}"


def check_vlen(work, binary, timeout):
    src = os.path.join(work, "string")
    a = zarr.create_array(src, shape=(4,), chunks=(2,), shards=(4,), dtype=str, zarr_format=3)
    a[:2] = ["a", "bc"]
    out = os.path.join(work, "string.bin")
    rc, err = zarrshard(binary, timeout, "export", src, out)
    want = "data_type `string` is variable-length (stored with the `vlen-utf8` codec)"
    if rc == 0:
        return "exported a variable-length string array"
    if want not in err:
        return f"{describe_exit(rc)}, error does not say {want!r}: {squash(err)}"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("work_dir")
    ap.add_argument("binary")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args(argv)
    shutil.rmtree(args.work_dir, ignore_errors=True)
    os.makedirs(args.work_dir)
    print(f"zarr-python {zarr.__version__}, numpy {np.__version__}", flush=True)
    passed = failed = 0
    for name, dtype, fill, endian in CASES:
        if fill is None:
            fill = FILLS[name](dtype)
        try:
            results = list(check(name, dtype, fill, endian, args.work_dir, args.binary, args.timeout))
        except Exception as e:
            results = [("setup", f"{type(e).__name__}: {e}")]
        for label, problem in results:
            if problem is None:
                passed += 1
                print(f"ok   {name}: {label}", flush=True)
            else:
                failed += 1
                print(f"FAIL {name}: {label}: {problem}", flush=True)
    problem = check_vlen(args.work_dir, args.binary, args.timeout)
    if problem is None:
        passed += 1
        print("ok   string (vlen-utf8): refused by name", flush=True)
    else:
        failed += 1
        print(f"FAIL string (vlen-utf8): {problem}", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
