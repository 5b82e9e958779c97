#!/usr/bin/env python3
"""Write sharded Zarr v3 interop fixtures with zarr-python 3, tensorstore and zarrs.

Usage:  write_fixtures.py OUT_DIR

For every case in CASES and every implementation ("zarr-python",
"tensorstore", "zarrs") this writes

  OUT_DIR/<impl>/<case>/      a Zarr v3 array (zarr.json + shard objects)
  OUT_DIR/<impl>/<case>.bin   the whole array as read BACK by the writer:
                              raw bytes, C order, every element little-endian,
                              bool one byte 0/1, complex as re then im

and at the end

  OUT_DIR/manifest.json  list of {"impl", "case", "dir", "expected", "shape",
                         "dtype", "description"}; "dir" and "expected" are
                         paths relative to OUT_DIR
  OUT_DIR/skipped.json   list of {"impl", "case", "reason"} for the
                         configurations an implementation refused

Cases are described once as Zarr v3 metadata (codec JSON); each writer turns
that into its own API: zarr-python's create_array(chunks=, shards=, filters=,
serializer=, compressors=) when the pipeline is a lone sharding codec with the
default index codecs, zarr.create(codecs=...) otherwise; tensorstore's zarr3
driver with the metadata JSON; zarrs (the Rust crate, through the zarrs-peer
tool in zarrs_peer/, see zarrs_peer.py) opening a zarr.json of that metadata
and storing the whole array with store_array_subset. Data is deterministic (smooth + noise, seeded
from the case name), with some inner chunks and some whole shards left at the
fill value so that writers do not store them.

A configuration an implementation is known to refuse (listed in the case's
"refuse" map) is tried anyway and skipped with a printed reason if it fails.
Any other failure, or a read-back that differs from the data written, makes
the script exit non-zero after all cases are processed.

Each array is also read by the other implementations; disagreements are printed
as warnings (and recorded in the manifest entry's "cross_read": {reader: "same" |
"DIFFERENT" | "error: ..."}) but are not errors, since that is not what these
fixtures test.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import sys
import time
import traceback
import warnings
import zlib

import numpy as np

warnings.simplefilter("ignore")  # zarr's "partial reads disabled" etc.

import tensorstore as ts  # noqa: E402
import zarr  # noqa: E402
from zarr.core.chunk_key_encodings import parse_chunk_key_encoding  # noqa: E402
from zarr.registry import get_codec_class  # noqa: E402

import zarrs_peer  # noqa: E402

IMPLS = ("zarr-python", "tensorstore", "zarrs")

# ---------------------------------------------------------------------------
# codec JSON helpers
# ---------------------------------------------------------------------------


def BYTES(endian="little"):
    return {"name": "bytes", "configuration": {"endian": endian}}


def CRC32C():
    return {"name": "crc32c"}


def GZIP(level=5):
    return {"name": "gzip", "configuration": {"level": level}}


def ZSTD(level=3, checksum=False):
    return {"name": "zstd", "configuration": {"level": level, "checksum": checksum}}


def BLOSC(cname="lz4", clevel=5, shuffle="shuffle", typesize=None, blocksize=0):
    cfg = {"cname": cname, "clevel": clevel, "shuffle": shuffle, "blocksize": blocksize}
    if typesize is not None:
        cfg["typesize"] = typesize
    return {"name": "blosc", "configuration": cfg}


def TRANSPOSE(order):
    return {"name": "transpose", "configuration": {"order": list(order)}}


DEFAULT_INDEX = [BYTES(), CRC32C()]


def SHARD(chunk_shape, codecs=None, index_codecs=None, index_location="end"):
    return {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": list(chunk_shape),
            "codecs": codecs if codecs is not None else [BYTES()],
            "index_codecs": index_codecs if index_codecs is not None else DEFAULT_INDEX,
            "index_location": index_location,
        },
    }


def CKE(name="default", sep="/"):
    return {"name": name, "configuration": {"separator": sep}}


# ---------------------------------------------------------------------------
# the case matrix
# ---------------------------------------------------------------------------

ALL_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
              "uint64", "float16", "float32", "float64", "complex64", "complex128"]

NAN = float("nan")
INF = float("inf")
TS_NO_POST = ("tensorstore refuses bytes->bytes codecs after sharding_indexed "
              "(they would apply to the whole shard)")

ZP_PRE_TRANSPOSE = ("zarr-python 3.1.6 checks the sharding inner chunk_shape against the "
                    "untransposed shard shape, so it refuses a transpose before sharding "
                    "unless the inner shape also divides the untransposed shard")

CASES: list[dict] = []


def case(name, *, shape, shard, dtype, codecs, fill=0, cke=None, desc="",
         refuse=None, holes=True):
    """Register a case. `codecs` is the full array codec list (JSON)."""
    CASES.append(dict(name=name, shape=tuple(shape), shard=tuple(shard), dtype=dtype,
                      codecs=codecs, fill=fill, cke=cke or CKE(), desc=desc,
                      refuse=refuse or {}, holes=holes))


# --- every data type: 2-D ragged, plain bytes, default index -----------------
for _dt in ALL_DTYPES:
    case(f"dtype_{_dt}", shape=(37, 29), shard=(16, 12), dtype=_dt,
         codecs=[SHARD((4, 4))], desc=f"{_dt}, ragged 2-D, inner codecs [bytes]")

# --- fill values ------------------------------------------------------------
case("fill_int32_neg", shape=(30, 20), shard=(8, 8), dtype="int32", fill=-7,
     codecs=[SHARD((4, 4))], desc="int32 fill -7")
case("fill_uint8_200", shape=(30, 20), shard=(8, 8), dtype="uint8", fill=200,
     codecs=[SHARD((4, 4))], desc="uint8 fill 200")
case("fill_int64_min", shape=(30, 20), shard=(8, 8), dtype="int64", fill=-(2**63),
     codecs=[SHARD((4, 4))], desc="int64 fill -2^63")
case("fill_uint64_max", shape=(30, 20), shard=(8, 8), dtype="uint64", fill=2**64 - 1,
     codecs=[SHARD((4, 4))], desc="uint64 fill 2^64-1")
case("fill_float64_1_5", shape=(30, 20), shard=(8, 8), dtype="float64", fill=1.5,
     codecs=[SHARD((4, 4))], desc="float64 fill 1.5")
case("fill_float32_nan", shape=(30, 20), shard=(8, 8), dtype="float32", fill=NAN,
     codecs=[SHARD((4, 4))], desc="float32 fill NaN")
case("fill_float64_nan", shape=(30, 20), shard=(8, 8), dtype="float64", fill=NAN,
     codecs=[SHARD((4, 4))], desc="float64 fill NaN")
case("fill_float16_nan", shape=(30, 20), shard=(8, 8), dtype="float16", fill=NAN,
     codecs=[SHARD((4, 4))], desc="float16 fill NaN")
case("fill_float64_inf", shape=(30, 20), shard=(8, 8), dtype="float64", fill=INF,
     codecs=[SHARD((4, 4))], desc="float64 fill +Infinity")
case("fill_float32_neginf", shape=(30, 20), shard=(8, 8), dtype="float32", fill=-INF,
     codecs=[SHARD((4, 4))], desc="float32 fill -Infinity")
case("fill_float16_inf", shape=(30, 20), shard=(8, 8), dtype="float16", fill=INF,
     codecs=[SHARD((4, 4))], desc="float16 fill +Infinity")
case("fill_complex64", shape=(30, 20), shard=(8, 8), dtype="complex64", fill=complex(1.5, -2.0),
     codecs=[SHARD((4, 4))], desc="complex64 fill 1.5-2j")
case("fill_complex128_nan_inf", shape=(30, 20), shard=(8, 8), dtype="complex128",
     fill=complex(NAN, -INF), codecs=[SHARD((4, 4))], desc="complex128 fill NaN-Infinity*j")
case("fill_bool_true", shape=(30, 20), shard=(8, 8), dtype="bool", fill=True,
     codecs=[SHARD((4, 4))], desc="bool fill true")

# --- inner codecs -----------------------------------------------------------
case("inner_big_endian_int32", shape=(40, 30), shard=(16, 16), dtype="int32",
     codecs=[SHARD((8, 4), [BYTES("big")])], desc="inner bytes big-endian, int32")
case("inner_big_endian_float64", shape=(40, 30), shard=(16, 16), dtype="float64", fill=NAN,
     codecs=[SHARD((8, 4), [BYTES("big")])], desc="inner bytes big-endian, float64, fill NaN")
case("inner_big_endian_complex128", shape=(40, 30), shard=(16, 16), dtype="complex128",
     codecs=[SHARD((8, 4), [BYTES("big")])], desc="inner bytes big-endian, complex128")
case("inner_big_endian_uint16_gzip", shape=(40, 30), shard=(16, 16), dtype="uint16",
     codecs=[SHARD((8, 4), [BYTES("big"), GZIP(6)])], desc="inner big-endian + gzip")
case("inner_gzip_1", shape=(64, 48), shard=(32, 16), dtype="float32",
     codecs=[SHARD((8, 8), [BYTES(), GZIP(1)])], desc="inner gzip level 1")
case("inner_gzip_9", shape=(64, 48), shard=(32, 16), dtype="int16",
     codecs=[SHARD((8, 8), [BYTES(), GZIP(9)])], desc="inner gzip level 9")
case("inner_zstd_1", shape=(64, 48), shard=(32, 16), dtype="float64",
     codecs=[SHARD((8, 8), [BYTES(), ZSTD(1)])], desc="inner zstd level 1")
case("inner_zstd_19", shape=(64, 48), shard=(32, 16), dtype="uint32",
     codecs=[SHARD((8, 8), [BYTES(), ZSTD(19)])], desc="inner zstd level 19")
case("inner_zstd_neg", shape=(64, 48), shard=(32, 16), dtype="int64",
     codecs=[SHARD((8, 8), [BYTES(), ZSTD(-5)])], desc="inner zstd level -5")
case("inner_zstd_checksum", shape=(64, 48), shard=(32, 16), dtype="float32",
     codecs=[SHARD((8, 8), [BYTES(), ZSTD(5, checksum=True)])], desc="inner zstd checksum=true")
case("inner_blosc_lz4_shuffle", shape=(64, 48), shard=(32, 16), dtype="float32",
     codecs=[SHARD((8, 8), [BYTES(), BLOSC("lz4", 5, "shuffle", 4)])],
     desc="inner blosc lz4 shuffle typesize 4")
case("inner_blosc_zstd_bitshuffle", shape=(64, 48), shard=(32, 16), dtype="int16",
     codecs=[SHARD((8, 8), [BYTES(), BLOSC("zstd", 3, "bitshuffle", 2)])],
     desc="inner blosc zstd bitshuffle typesize 2")
case("inner_blosc_blosclz_noshuffle", shape=(64, 48), shard=(32, 16), dtype="uint8",
     codecs=[SHARD((8, 8), [BYTES(), BLOSC("blosclz", 9, "noshuffle", 1)])],
     desc="inner blosc blosclz noshuffle typesize 1")
case("inner_blosc_lz4hc_typesize_mismatch", shape=(64, 48), shard=(32, 16), dtype="float64",
     codecs=[SHARD((8, 8), [BYTES(), BLOSC("lz4hc", 7, "shuffle", 4)])],
     desc="inner blosc lz4hc shuffle typesize 4 on float64 data")
case("inner_blosc_zlib_blocksize", shape=(64, 48), shard=(32, 16), dtype="int32",
     codecs=[SHARD((16, 16), [BYTES(), BLOSC("zlib", 4, "shuffle", 4, blocksize=256)])],
     desc="inner blosc zlib shuffle blocksize 256")
case("inner_big_endian_blosc_shuffle", shape=(64, 48), shard=(32, 16), dtype="float32",
     codecs=[SHARD((8, 8), [BYTES("big"), BLOSC("zstd", 5, "shuffle", 4)])],
     desc="inner big-endian + blosc zstd shuffle")
case("inner_crc32c", shape=(50, 40), shard=(16, 16), dtype="int32",
     codecs=[SHARD((4, 8), [BYTES(), CRC32C()])], desc="inner [bytes, crc32c]")
case("inner_zstd_crc32c", shape=(50, 40), shard=(16, 16), dtype="float64",
     codecs=[SHARD((4, 8), [BYTES(), ZSTD(3), CRC32C()])], desc="inner [bytes, zstd, crc32c]")
case("inner_gzip_blosc_chain", shape=(50, 40), shard=(16, 16), dtype="uint16",
     codecs=[SHARD((4, 8), [BYTES(), BLOSC("lz4", 5, "bitshuffle", 2), GZIP(3)])],
     desc="inner [bytes, blosc, gzip]: two compressors chained")
case("inner_transpose_2d", shape=(40, 30), shard=(16, 12), dtype="int16",
     codecs=[SHARD((8, 4), [TRANSPOSE((1, 0)), BYTES()])], desc="inner [transpose(1,0), bytes]")
case("inner_transpose_3d_gzip", shape=(20, 18, 14), shard=(8, 6, 8), dtype="float32",
     codecs=[SHARD((4, 3, 2), [TRANSPOSE((2, 0, 1)), BYTES(), GZIP(4)])],
     desc="inner [transpose(2,0,1), bytes, gzip], 3-D")
case("inner_transpose_big_endian_4d", shape=(6, 7, 8, 9), shard=(4, 4, 4, 4), dtype="uint32",
     codecs=[SHARD((2, 2, 4, 2), [TRANSPOSE((3, 1, 0, 2)), BYTES("big"), ZSTD(2)])],
     desc="inner [transpose(3,1,0,2), bytes big, zstd], 4-D")

# --- index codecs and index location ----------------------------------------
case("index_end_crc32c", shape=(40, 30), shard=(16, 16), dtype="int32",
     codecs=[SHARD((4, 4), index_codecs=[BYTES(), CRC32C()], index_location="end")],
     desc="index [bytes, crc32c] at end")
case("index_end_bytes_only", shape=(40, 30), shard=(16, 16), dtype="int32",
     codecs=[SHARD((4, 4), index_codecs=[BYTES()], index_location="end")],
     desc="index [bytes] (no crc32c) at end")
case("index_start_crc32c", shape=(40, 30), shard=(16, 16), dtype="float32",
     codecs=[SHARD((4, 4), [BYTES(), ZSTD(3)], index_codecs=[BYTES(), CRC32C()],
                   index_location="start")],
     desc="index [bytes, crc32c] at start, inner zstd")
case("index_start_bytes_only", shape=(40, 30), shard=(16, 16), dtype="uint16",
     codecs=[SHARD((4, 4), [BYTES(), GZIP(5)], index_codecs=[BYTES()], index_location="start")],
     desc="index [bytes] at start, inner gzip")
case("index_start_uncompressed", shape=(40, 30), shard=(16, 16), dtype="uint16",
     codecs=[SHARD((4, 4), [BYTES()], index_codecs=[BYTES(), CRC32C()], index_location="start")],
     desc="index [bytes, crc32c] at start, inner uncompressed (byte identity at start)")
case("index_big_endian", shape=(40, 30), shard=(16, 16), dtype="int16",
     codecs=[SHARD((4, 4), index_codecs=[BYTES("big"), CRC32C()])],
     desc="index [bytes big-endian, crc32c]")

# --- nested sharding --------------------------------------------------------
case("nested_2level", shape=(48, 40), shard=(16, 16), dtype="int32",
     codecs=[SHARD((8, 8), [SHARD((2, 4), [BYTES()])])],
     desc="sharding inside sharding: shard 16x16 > 8x8 > 2x4")
case("nested_2level_mixed", shape=(50, 41), shard=(16, 16), dtype="float64", fill=NAN,
     codecs=[SHARD((8, 8), [SHARD((4, 2), [BYTES("big"), ZSTD(3)], index_codecs=[BYTES()],
                                 index_location="start")], index_location="start")],
     desc="nested: outer index start, inner sharding index start w/o crc32c, "
          "big-endian + zstd innermost")
case("nested_post_crc32c", shape=(50, 41), shard=(16, 16), dtype="int16",
     codecs=[SHARD((8, 8), [SHARD((4, 2), [BYTES(), GZIP(2)]), CRC32C()])],
     desc="nested: crc32c over each inner shard (bytes->bytes after the inner sharding codec)",
     refuse={"tensorstore": TS_NO_POST})
case("nested_3level", shape=(40, 36), shard=(20, 12), dtype="uint16",
     codecs=[SHARD((10, 6), [SHARD((5, 3), [SHARD((1, 3), [BYTES(), GZIP(2)])])])],
     desc="three levels of sharding")

# --- array->array transpose before sharding ---------------------------------
case("pre_transpose_2d", shape=(40, 30), shard=(16, 12), dtype="int32",
     codecs=[TRANSPOSE((1, 0)), SHARD((4, 4), [BYTES()])],
     desc="[transpose(1,0), sharding]: inner chunk shape is in transposed order")
case("pre_transpose_3d", shape=(20, 18, 14), shard=(8, 6, 4), dtype="float32",
     codecs=[TRANSPOSE((2, 0, 1)), SHARD((2, 2, 2), [BYTES(), GZIP(3)])],
     desc="[transpose(2,0,1), sharding] 3-D; shard seen as 4x8x6, inner 2x2x2")
case("pre_transpose_3d_asym", shape=(20, 18, 14), shard=(8, 6, 4), dtype="uint16",
     codecs=[TRANSPOSE((2, 0, 1)), SHARD((2, 4, 6), [BYTES(), ZSTD(3)])],
     desc="[transpose(2,0,1), sharding] 3-D; shard seen as 4x8x6, inner 2x4x6 "
          "(divides the transposed shard only)",
     refuse={"zarr-python": ZP_PRE_TRANSPOSE})

# --- bytes->bytes codecs after sharding (whole shard) -----------------------
case("post_crc32c", shape=(40, 30), shard=(16, 16), dtype="int32",
     codecs=[SHARD((4, 4)), CRC32C()], desc="[sharding, crc32c] over whole shard",
     refuse={"tensorstore": TS_NO_POST})
case("post_zstd", shape=(40, 30), shard=(16, 16), dtype="float32",
     codecs=[SHARD((4, 4), [BYTES(), GZIP(1)]), ZSTD(3)], desc="[sharding, zstd] over whole shard",
     refuse={"tensorstore": TS_NO_POST})
case("post_gzip_crc32c_index_start", shape=(40, 30), shard=(16, 16), dtype="uint8",
     codecs=[SHARD((4, 4), index_location="start"), GZIP(5), CRC32C()],
     desc="[sharding(index start), gzip, crc32c]", refuse={"tensorstore": TS_NO_POST})

# --- shapes -----------------------------------------------------------------
case("shape_1d_ragged", shape=(1000,), shard=(128,), dtype="float32",
     codecs=[SHARD((16,), [BYTES(), ZSTD(3)])], desc="1-D, 1000 elements, shard 128, inner 16")
case("shape_1d_small", shape=(7,), shard=(4,), dtype="int64",
     codecs=[SHARD((2,))], desc="1-D, 7 elements, shard 4, inner 2")
case("shape_3d_ragged", shape=(21, 17, 13), shard=(8, 8, 8), dtype="int16",
     codecs=[SHARD((4, 2, 8), [BYTES(), GZIP(5)])], desc="3-D ragged")
case("shape_4d_ragged", shape=(7, 9, 5, 11), shard=(4, 4, 4, 4), dtype="float64",
     codecs=[SHARD((2, 2, 2, 2), [BYTES(), BLOSC("lz4", 5, "shuffle", 8)])], desc="4-D ragged")
case("shape_single_shard", shape=(16, 16), shard=(16, 16), dtype="uint32",
     codecs=[SHARD((4, 4))], desc="array == one shard")
case("shape_smaller_than_shard", shape=(5, 3), shard=(8, 8), dtype="int8",
     codecs=[SHARD((2, 2))], desc="array smaller than one shard, ragged inner chunks")
case("shape_inner_equals_shard", shape=(30, 30), shard=(8, 8), dtype="int32",
     codecs=[SHARD((8, 8), [BYTES(), ZSTD(3)])], desc="one inner chunk per shard")
case("shape_inner_size1", shape=(12, 30), shard=(4, 10), dtype="uint16",
     codecs=[SHARD((1, 10))], desc="inner chunk size 1 along axis 0")
case("shape_unit_dim", shape=(1, 50, 1), shard=(1, 16, 1), dtype="float32",
     codecs=[SHARD((1, 4, 1))], desc="dimensions of size 1")
case("shape_1x1_inner", shape=(6, 5), shard=(4, 4), dtype="complex64",
     codecs=[SHARD((1, 1))], desc="1x1 inner chunks")
case("shape_empty_array", shape=(20, 20), shard=(8, 8), dtype="int32", fill=42,
     codecs=[SHARD((4, 4))], desc="nothing written: every shard missing, all fill (42)",
     holes="all")
case("shape_large_1d", shape=(100000,), shard=(32768,), dtype="float64",
     codecs=[SHARD((1024,), [BYTES(), ZSTD(3)])], desc="1-D, 100000 float64 (800 kB)")

# --- chunk key encodings ----------------------------------------------------
case("cke_default_dot", shape=(30, 20, 6), shard=(8, 8, 4), dtype="int16",
     codecs=[SHARD((4, 4, 2))], cke=CKE("default", "."), desc="chunk keys c.i.j.k")
case("cke_v2_dot", shape=(30, 20, 6), shard=(8, 8, 4), dtype="int16",
     codecs=[SHARD((4, 4, 2))], cke=CKE("v2", "."), desc="chunk keys i.j.k (v2)")
case("cke_v2_slash", shape=(30, 20, 6), shard=(8, 8, 4), dtype="int16",
     codecs=[SHARD((4, 4, 2))], cke=CKE("v2", "/"), desc="chunk keys i/j/k (v2)")
case("cke_v2_dot_1d", shape=(50,), shard=(16,), dtype="uint8",
     codecs=[SHARD((4,))], cke=CKE("v2", "."), desc="chunk keys i (v2), 1-D")

# ---------------------------------------------------------------------------
# deterministic data
# ---------------------------------------------------------------------------


def seed_of(name: str) -> int:
    return zlib.crc32(name.encode())


def smooth(shape, rng):
    """Sum of low-frequency sines over the coordinates, in about [-1, 1]."""
    out = np.zeros(shape, dtype=np.float64)
    grids = np.meshgrid(*[np.linspace(0.0, 1.0, n) for n in shape], indexing="ij")
    for g in grids:
        f = rng.uniform(0.5, 3.0)
        ph = rng.uniform(0, 2 * math.pi)
        out += np.sin(2 * math.pi * f * g + ph)
    return out / max(1, len(shape))


def make_data(shape, dtype, rng) -> np.ndarray:
    dt = np.dtype(dtype)
    n = int(np.prod(shape))
    if dt == np.bool_:
        return (smooth(shape, rng) + rng.normal(0, 0.3, shape)) > 0
    if dt.kind == "f":
        base = smooth(shape, rng) * 100 + rng.normal(0, 2.0, shape)
        a = base.astype(dt)
        flat = a.reshape(-1)
        if n >= 8:  # a few special values at fixed, seeded positions
            idx = rng.choice(n, size=4, replace=False)
            flat[idx] = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=dt)
        return a
    if dt.kind == "c":
        ft = np.float32 if dt == np.complex64 else np.float64
        re = make_data(shape, ft, rng)
        im = make_data(shape, ft, rng)
        return (re + 1j * im).astype(dt)
    # integers: smooth part over 10..90% of the range plus <=5% noise, computed
    # in uint64 "offset from min" space so 64-bit values use every byte.
    info = np.iinfo(dt)
    span = int(info.max) - int(info.min)
    frac = (smooth(shape, rng) + 1.0) / 2.0 * 0.8 + 0.1
    frac = np.clip(frac, 0.0, 0.9)
    u = (frac * float(span)).astype(np.uint64)
    noise_hi = max(1, span // 20)
    u = u + rng.integers(0, noise_hi, size=shape, dtype=np.uint64, endpoint=True)
    if dt.kind == "u":
        a = u.astype(dt)
    elif dt.itemsize == 8:
        a = (u ^ np.uint64(1 << 63)).view(np.int64)
    else:
        a = (u.astype(np.int64) + int(info.min)).astype(dt)
    flat = a.reshape(-1)
    if n >= 4:
        flat[0] = info.min
        flat[-1] = info.max
    return a


def blocks(shape, block):
    """Yield slices for every block of a regular grid over shape (clipped)."""
    grid = [range(0, s, b) for s, b in zip(shape, block)]
    for starts in np.ndindex(*[len(g) for g in grid]):
        yield tuple(slice(g[i], min(g[i] + b, s))
                    for i, g, b, s in zip(starts, grid, block, shape))


def hole_blocks(c) -> list[tuple[int, ...]]:
    """Array-space shapes of the inner chunks at every nesting level."""
    out = []
    codecs = c["codecs"]
    perm = None
    for cd in codecs:
        if cd["name"] == "transpose":
            perm = cd["configuration"]["order"]
    level_codecs = codecs
    while True:
        sh = [cd for cd in level_codecs if cd["name"] == "sharding_indexed"]
        if not sh:
            break
        inner = sh[0]["configuration"]["chunk_shape"]
        if perm is not None:
            # inner is in transposed order: axis i of it is array axis perm[i]
            arr = [0] * len(inner)
            for i, p in enumerate(perm):
                arr[p] = inner[i]
            inner = arr
        out.append(tuple(inner))
        level_codecs = sh[0]["configuration"]["codecs"]
    return out


def make_case_data(c) -> np.ndarray:
    rng = np.random.default_rng(seed_of(c["name"]))
    data = make_data(c["shape"], c["dtype"], rng)
    fill = np.array(c["fill"]).astype(c["dtype"])
    if c["holes"] == "all":
        data[...] = fill
        return data
    if c["holes"]:
        # ~15% of the inner chunks (every nesting level) at the fill value
        for blk in hole_blocks(c):
            for sl in blocks(c["shape"], blk):
                if rng.random() < 0.15:
                    data[sl] = fill
        # one whole shard at the fill value (so it is not stored at all)
        shard_slices = list(blocks(c["shape"], c["shard"]))
        if len(shard_slices) >= 3:
            data[shard_slices[len(shard_slices) // 2]] = fill
    return data


def to_le_bytes(a: np.ndarray) -> bytes:
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.astype(np.uint8).tobytes(order="C")
    return a.astype(a.dtype.newbyteorder("<")).tobytes(order="C")


def same(a: np.ndarray, b: np.ndarray) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.array_equal(a, b, equal_nan=True))
    return bool(np.array_equal(a, b))


# ---------------------------------------------------------------------------
# fill value JSON (zarr v3 spelling), for tensorstore
# ---------------------------------------------------------------------------


def float_json(x: float):
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    return x


def fill_json(fill, dtype):
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return bool(fill)
    if dt.kind in "iu":
        return int(fill)
    if dt.kind == "f":
        return float_json(float(fill))
    z = complex(fill)
    return [float_json(z.real), float_json(z.imag)]


# ---------------------------------------------------------------------------
# writers
# ---------------------------------------------------------------------------


def codec_obj(js):
    return get_codec_class(js["name"]).from_dict(js)


def zarr_split_for_create_array(c):
    """Return create_array kwargs if the pipeline is a lone sharding codec with
    default index codecs, else None."""
    codecs = c["codecs"]
    if len(codecs) != 1 or codecs[0]["name"] != "sharding_indexed":
        return None
    cfg = codecs[0]["configuration"]
    if cfg["index_codecs"] != DEFAULT_INDEX:
        return None
    filters, serializer, compressors = [], None, []
    for cd in cfg["codecs"]:
        obj = codec_obj(cd)
        if serializer is None and cd["name"] == "transpose":
            filters.append(obj)
        elif serializer is None:
            serializer = obj
        else:
            compressors.append(obj)
    return dict(chunks=tuple(cfg["chunk_shape"]),
                shards={"shape": c["shard"], "index_location": cfg["index_location"]},
                filters=filters, serializer=serializer, compressors=compressors)


def write_zarr_python(c, path, data):
    kw = zarr_split_for_create_array(c)
    cke = parse_chunk_key_encoding(c["cke"])
    if kw is not None:
        api = "zarr.create_array(chunks=, shards=, filters=, serializer=, compressors=)"
        arr = zarr.create_array(store=path, shape=c["shape"], dtype=c["dtype"],
                                fill_value=c["fill"], chunk_key_encoding=cke,
                                zarr_format=3, **kw)
    else:
        api = "zarr.create(codecs=...)"
        arr = zarr.create(store=path, shape=c["shape"], chunks=c["shard"], dtype=c["dtype"],
                          fill_value=c["fill"], chunk_key_encoding=cke, zarr_format=3,
                          codecs=[codec_obj(cd) for cd in c["codecs"]])
    arr[...] = data
    back = zarr.open_array(store=path, mode="r")[...]
    return np.asarray(back), api


def ts_spec(path, metadata=None):
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.abspath(path)},
            "context": {"file_io_sync": False}}
    if metadata is not None:
        spec["metadata"] = metadata
    return spec


def case_metadata(c):
    """The case's array metadata in Zarr v3 spelling (what tensorstore takes)."""
    return {
        "shape": list(c["shape"]),
        "data_type": c["dtype"],
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(c["shard"])}},
        "chunk_key_encoding": c["cke"],
        "fill_value": fill_json(c["fill"], c["dtype"]),
        "codecs": c["codecs"],
    }


def write_tensorstore(c, path, data):
    md = case_metadata(c)
    arr = ts.open(ts_spec(path, md), create=True).result()
    arr[...].write(data).result()
    back = ts.open(ts_spec(path), open=True, read=True).result().read().result()
    return np.asarray(back), "tensorstore zarr3 driver, metadata JSON"


def write_zarrs(c, path, data):
    md = {"zarr_format": 3, "node_type": "array", **case_metadata(c), "attributes": {}}
    zarrs_peer.write(path, md, to_le_bytes(data))
    return zarrs_peer.read(path), "zarrs 0.23.14 Array::store_array_subset of the whole array"


def read_zarr_python(path):
    return np.asarray(zarr.open_array(store=path, mode="r")[...])


def read_tensorstore(path):
    return np.asarray(ts.open(ts_spec(path), open=True, read=True).result().read().result())


WRITERS = {"zarr-python": write_zarr_python, "tensorstore": write_tensorstore,
           "zarrs": write_zarrs}
READERS = {"zarr-python": read_zarr_python, "tensorstore": read_tensorstore,
           "zarrs": zarrs_peer.read}


def first_line(e: BaseException) -> str:
    s = f"{type(e).__name__}: {e}"
    s = s.splitlines()[0] if s else s
    return s[:300]


def main(argv):
    if len(argv) != 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    out = os.path.abspath(argv[1])
    os.makedirs(out, exist_ok=True)
    for impl in IMPLS:
        shutil.rmtree(os.path.join(out, impl), ignore_errors=True)
        os.makedirs(os.path.join(out, impl))

    names = [c["name"] for c in CASES]
    assert len(names) == len(set(names)), "duplicate case names"

    t0 = time.time()
    manifest, skipped, errors = [], [], []
    for c in CASES:
        data = make_case_data(c)
        assert data.nbytes < 1_000_000, c["name"]
        written = {}
        for impl in IMPLS:
            rel = f"{impl}/{c['name']}"
            path = os.path.join(out, rel)
            try:
                back, api = WRITERS[impl](c, path, data)
            except Exception as e:  # noqa: BLE001
                shutil.rmtree(path, ignore_errors=True)
                if impl in c["refuse"]:
                    reason = c["refuse"][impl]
                    print(f"skip {rel}: {reason} [{first_line(e)}]")
                    skipped.append({"impl": impl, "case": c["name"], "reason": reason,
                                    "error": first_line(e)})
                    continue
                print(f"ERROR {rel}: {first_line(e)}")
                traceback.print_exc()
                errors.append(f"{rel}: {first_line(e)}")
                continue
            if impl in c["refuse"]:
                print(f"note {rel}: expected refusal did not happen ({c['refuse'][impl]})")
            if not same(back, data):
                print(f"ERROR {rel}: read-back differs from the data written")
                errors.append(f"{rel}: read-back differs from data written")
                continue
            exp_rel = rel + ".bin"
            with open(os.path.join(out, exp_rel), "wb") as f:
                f.write(to_le_bytes(back))
            written[impl] = back
            manifest.append({
                "impl": impl, "case": c["name"], "dir": rel, "expected": exp_rel,
                "shape": list(c["shape"]), "dtype": c["dtype"],
                "description": f"{c['desc']}; shard {list(c['shard'])}; "
                               f"fill {json.dumps(fill_json(c['fill'], c['dtype']))}; "
                               f"chunk keys {c['cke']['name']} '{c['cke']['configuration']['separator']}'; "
                               f"written with {api}",
            })
        # notes about the other implementations' refusals + cross reads
        for entry in manifest:
            if entry["case"] != c["name"]:
                continue
            entry["cross_read"] = {}
            for other in IMPLS:
                if other == entry["impl"]:
                    continue
                if other not in written and other in c["refuse"]:
                    entry["description"] += f" ({other}: skipped, {c['refuse'][other]})"
                try:
                    x = READERS[other](os.path.join(out, entry["dir"]))
                    if same(x, written[entry["impl"]]):
                        entry["cross_read"][other] = "same"
                    else:
                        entry["cross_read"][other] = "DIFFERENT"
                        print(f"warning: {other} reads {entry['dir']} differently")
                except Exception as e:  # noqa: BLE001
                    entry["cross_read"][other] = f"error: {first_line(e)}"
                    if other not in c["refuse"]:  # else: already reported as a skip
                        print(f"warning: {other} cannot read {entry['dir']}: {first_line(e)}")

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    with open(os.path.join(out, "skipped.json"), "w") as f:
        json.dump(skipped, f, indent=1)
        f.write("\n")
    per = {i: sum(1 for m in manifest if m["impl"] == i) for i in IMPLS}
    print(f"wrote {len(manifest)} arrays ({', '.join(f'{i}: {n}' for i, n in per.items())}), "
          f"{len(skipped)} skipped, {len(errors)} errors, in {time.time() - t0:.1f}s "
          f"-> {out}/manifest.json")
    if errors:
        print("FAILED configurations that should have worked:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
