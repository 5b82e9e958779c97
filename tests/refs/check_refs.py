#!/usr/bin/env python3
"""Read `zarrshard refs` reference sets with the real clients: fsspec's ReferenceFileSystem
and zarr-python, from local files and over HTTP from nginx on loopback.

Usage:  check_refs.py FIXTURES_DIR ZARRSHARD_BIN [--filter SUBSTR]

FIXTURES_DIR is the output of tests/interop/write_fixtures.py (zarr-python-, tensorstore- and
zarrs-written arrays, manifest.json, and the values each writer read back). For every
array and every variant

    json-v0 (Zarr v3 metadata)  local and http://
    json-v1 (Zarr v3 metadata)  local and http://
    json-v1 --zarr-format 2     local (chunk keys 0.1)
    json-v0 --zarr-format 2 --dimension-separator /   local (chunk keys 0/1)
    parquet (Zarr v2, 5 records per file, so most arrays span several files)
                                local and http://

and with --legacy LFIX also the v2-prototype and v3-draft arrays of
tests/legacy/legacy_formats.py (json-v0, json-v1 --zarr-format 2 over http://, parquet),
it runs `ZARRSHARD_BIN refs ARRAY --format F --url-prefix URL -o OUT`, opens OUT with
ReferenceFileSystem + zarr.open_array and compares every value with the writer's. Where the
array cannot be referenced (a codec after sharding_indexed) or the metadata format cannot say
it (Zarr v2: nested sharding, transposes other than C/F), the tool must exit 1 with one line
naming the codec. Prints one line per failure and, last, "N passed, M failed".
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

warnings.simplefilter("ignore")

import zarr  # noqa: E402
from fsspec.implementations.reference import ReferenceFileSystem  # noqa: E402
from zarr.storage import FsspecStore  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx import Nginx  # noqa: E402

VARIANTS = [
    ("json-v0", 3, "local"), ("json-v0", 3, "http"),
    ("json-v1", 3, "local"), ("json-v1", 3, "http"),
    ("json-v1", 2, "local"), ("json-v0", 2, "local"),  # Zarr v2 keys 0.1, and 0/1 for v0
    ("parquet", 2, "local"), ("parquet", 2, "http"),
]
RECORD_SIZE = 5
REFUSED: dict[str, int] = {}  # expected refusals seen, by the codec named


def perm_of(codecs, rank):
    """Array dimension of each stored dimension after the transposes in `codecs`."""
    perm = list(range(rank))
    for c in codecs:
        if c.get("name") != "transpose":
            continue
        order = c["configuration"]["order"]
        if order == "C":
            order = list(range(rank))
        elif order == "F":
            order = list(range(rank))[::-1]
        perm = [perm[k] for k in order]
    return perm


def expected_refusal(meta, zarr_format):
    """The codec the tool must name when it refuses this array, or None."""
    codecs = meta["codecs"]
    names = [c["name"] for c in codecs]
    i = names.index("sharding_indexed")
    if i + 1 < len(codecs):
        return codecs[i + 1]["name"]
    if zarr_format == 2:
        inner = codecs[i]["configuration"]["codecs"]
        if any(c["name"] == "sharding_indexed" for c in inner):
            return "sharding_indexed"
        rank = len(meta["shape"])
        outer = perm_of(codecs[:i], rank)
        stored = [outer[k] for k in perm_of(inner, rank)]
        if stored not in (list(range(rank)), list(range(rank))[::-1]):
            return "transpose"
    return None


def to_raw(a: np.ndarray) -> bytes:
    """The export format: C order, little-endian, bool one byte."""
    a = np.ascontiguousarray(a)
    if a.dtype == bool:
        return a.view(np.uint8).tobytes()
    return a.astype(a.dtype.newbyteorder("<"), copy=False).tobytes()


def same(got: np.ndarray, expected: bytes) -> bool:
    if to_raw(got) == expected:
        return True
    if got.dtype.kind in "fc":  # NaN payloads may differ between writers
        want = np.frombuffer(expected, dtype=got.dtype.newbyteorder("<")).reshape(got.shape)
        return bool(np.array_equal(got, want, equal_nan=True))
    return False


def parquet_layout_problem(out, name):
    """Every file fsspec will open reads with its default engine (fastparquet), with one row
    per chunk number, each row either a reference (path) or data (raw). A file that fails to
    read would make fsspec report its keys missing, which zarr reads as fill values."""
    import pandas as pd
    with open(os.path.join(out, ".zmetadata")) as f:
        zmeta = json.load(f)
    zarray = zmeta["metadata"][f"{name}/.zarray"]
    total = int(np.prod([-(-s // c) for s, c in zip(zarray["shape"], zarray["chunks"])]))
    rs = zmeta["record_size"]
    nfiles = -(-total // rs)
    if sorted(os.listdir(os.path.join(out, name))) != sorted(f"refs.{n}.parq" for n in range(nfiles)):
        return f"parquet files {sorted(os.listdir(os.path.join(out, name)))}, expected {nfiles}"
    for n in range(nfiles):
        df = pd.read_parquet(os.path.join(out, name, f"refs.{n}.parq"), engine="fastparquet")
        if list(df.columns) != ["path", "offset", "size", "raw"] or len(df) != min(rs, total - n * rs):
            return f"refs.{n}.parq: columns {list(df.columns)}, {len(df)} rows"
        for path, raw in zip(df["path"], df["raw"]):
            if isinstance(path, str) == isinstance(raw, bytes):
                return f"refs.{n}.parq: a row with path {path!r} and raw {raw!r}"
    return None


def open_refs(path, http, name, zarr_format):
    fs = ReferenceFileSystem(
        path, asynchronous=True,
        remote_protocol="http" if http else "file",
        remote_options={"asynchronous": True} if http else {})
    store = FsspecStore(fs, read_only=True, path=name or "")
    return zarr.open_array(store=store, mode="r", zarr_format=zarr_format)


def check(entry, variant, fix, binary, srv, tmp):
    fmt, zf, where = variant
    array_dir = os.path.join(fix, entry["dir"])
    with open(os.path.join(array_dir, "zarr.json")) as f:
        meta = json.load(f)
    url = (f"{srv.url}/{entry['dir']}" if where == "http"
           else "file://" + os.path.abspath(array_dir))
    out = os.path.join(tmp, f"{entry['impl']}-{entry['case']}-{fmt}-{zf}-{where}")
    out += ".parq" if fmt == "parquet" else ".json"
    name = "arr" if fmt == "parquet" else None
    cmd = [binary, "refs", array_dir, "--format", fmt, "--url-prefix", url, "-o", out]
    if fmt == "parquet":
        cmd += ["--name", name, "--record-size", str(RECORD_SIZE)]
    elif zf == 2:
        cmd += ["--zarr-format", "2"]
        if fmt == "json-v0":
            cmd += ["--dimension-separator", "/"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    refusal = expected_refusal(meta, zf)
    if refusal is not None:
        err = p.stderr
        if (p.returncode == 1 and err.startswith("zarrshard: ") and err.count("\n") == 1
                and f"`{refusal}" in err):
            REFUSED[refusal] = REFUSED.get(refusal, 0) + 1
            return None
        return f"expected a one-line refusal naming `{refusal}`, got exit {p.returncode}: {err.strip()!r}"
    if p.returncode != 0:
        return f"refs exit {p.returncode}: {p.stderr.strip()}"
    return read_and_compare(out, where == "http", name, zf, os.path.join(fix, entry["expected"]),
                            entry["shape"])


def read_and_compare(out, http, name, zarr_format, expected_path, shape):
    """Open the set with ReferenceFileSystem + zarr-python; None when every value equals the
    writer's, else what is wrong."""
    with open(expected_path, "rb") as f:
        expected = f.read()
    if out.endswith(".parq"):
        why = parquet_layout_problem(out, name)
        if why:
            return why
    try:
        got = open_refs(out, http, name, zarr_format)[...]
    except Exception as e:  # noqa: BLE001 - report any reader failure as a test failure
        return f"read failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    if list(got.shape) != shape:
        return f"shape {got.shape} != {shape}"
    if not same(got, expected):
        return "values differ"
    return None


LEGACY_VARIANTS = [("json-v0", 3, "local"), ("json-v1", 2, "http"), ("parquet", 2, "local")]


def check_legacy(entry, variant, lfix, binary, srv, tmp):
    """An array of the older formats (tests/legacy): the v2 sharding prototype (shard keys
    like `0.1` in the array folder) or the v3 draft (keys `data/root/<path>/c0/1` under the
    hierarchy root, which is then the URL prefix). Every codec they have is expressible."""
    fmt, zf, where = variant
    array = os.path.join(lfix, entry["array"])
    # A draft array's hierarchy root is before `/meta/root/<path>.array.json`, or before
    # `/meta/root.array.json` for the array at the root itself.
    root = (
        entry["array"].split("/meta/root")[0] if entry["format"] == "v3draft" else entry["array"]
    )
    url = f"{srv.url}/{root}" if where == "http" else "file://" + os.path.join(lfix, root)
    out = os.path.join(tmp, f"legacy-{entry['format']}-{entry['case']}-{fmt}-{zf}-{where}")
    out += ".parq" if fmt == "parquet" else ".json"
    name = "arr" if fmt == "parquet" else None
    cmd = [binary, "refs", array, "--format", fmt, "--url-prefix", url, "-o", out]
    cmd += ["--name", name] if fmt == "parquet" else ["--zarr-format", str(zf)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        return f"refs exit {p.returncode}: {p.stderr.strip()}"
    return read_and_compare(out, where == "http", name, zf, os.path.join(lfix, entry["expected"]),
                            entry["shape"])


def sparse_check(fix, binary, tmp) -> list[str]:
    """A mostly empty array (3 of 64 inner chunks stored): JSON sets list exactly the stored
    chunks; the Parquet set (record size 7) reads back with the fill value everywhere else."""
    d = os.path.join(tmp, "sparse")
    sharding = {"name": "sharding_indexed", "configuration": {
        "chunk_shape": [4, 4], "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                          {"name": "zstd", "configuration": {"level": 1, "checksum": False}}],
        "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "crc32c"}],
        "index_location": "end"}}
    a = zarr.create(store=d, shape=(32, 30), dtype="float32", chunks=(16, 16),
                    fill_value=-1.5, codecs=[sharding], zarr_format=3)
    data = np.full((32, 30), -1.5, dtype="float32")
    data[0, 0] = 1
    data[17, 29] = 2
    data[31, 5:8] = np.nan
    a[...] = data
    failures = []
    out = os.path.join(tmp, "sparse.json")
    subprocess.run([binary, "refs", d, "--format", "json-v0", "--url-prefix", "file://" + d,
                    "-o", out], check=True)
    with open(out) as f:
        refs = json.load(f)
    chunks = sorted(k for k in refs if k.startswith("c/"))
    if chunks != ["c/0/0", "c/4/7", "c/7/1"]:
        failures.append(f"sparse json-v0: chunk keys {chunks}")
    got = open_refs(out, False, None, 3)[...]
    if not np.array_equal(got, data, equal_nan=True):
        failures.append("sparse json-v0: values differ")
    pq = os.path.join(tmp, "sparse.parq")
    subprocess.run([binary, "refs", d, "--format", "parquet", "--url-prefix", "file://" + d,
                    "--name", "s", "--record-size", "7", "-o", pq], check=True)
    files = sorted(os.listdir(os.path.join(pq, "s")))
    if files != [f"refs.{n}.parq" for n in range(10)]:  # 8 x 8 = 64 records, 7 per file
        failures.append(f"sparse parquet: files {files}")
    why = parquet_layout_problem(pq, "s")
    if why:
        failures.append(f"sparse parquet: {why}")
    got = open_refs(pq, False, "s", 2)[...]
    if not np.array_equal(got, data, equal_nan=True):
        failures.append("sparse parquet: values differ")
    return failures


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("fixtures")
    ap.add_argument("binary")
    ap.add_argument("--filter", default="")
    ap.add_argument("--legacy", help="tests/legacy/legacy_formats.py fixtures to check too")
    args = ap.parse_args(argv)
    fix = os.path.abspath(args.fixtures)
    binary = os.path.abspath(args.binary)
    with open(os.path.join(fix, "manifest.json")) as f:
        manifest = [e for e in json.load(f) if args.filter in e["dir"]]
    passed = failed = 0
    t0 = time.monotonic()

    def tally(why, what, variant):
        nonlocal passed, failed
        if why is None:
            passed += 1
        else:
            failed += 1
            print(f"FAIL {what} {'/'.join(map(str, variant))}: {why}")

    with tempfile.TemporaryDirectory(prefix="zarrshard-refs-") as tmp, Nginx(fix) as srv:
        for entry in manifest:
            for variant in VARIANTS:
                tally(check(entry, variant, fix, binary, srv, tmp), entry["dir"], variant)
        legacy = []
        if args.legacy:
            lfix = os.path.abspath(args.legacy)
            with open(os.path.join(lfix, "manifest.json")) as f:
                legacy = json.load(f)
            with Nginx(lfix) as lsrv:
                for entry in legacy:
                    for variant in LEGACY_VARIANTS:
                        tally(check_legacy(entry, variant, lfix, binary, lsrv, tmp),
                              entry["array"], variant)
        sparse = sparse_check(fix, binary, tmp)
        for why in sparse:
            print(f"FAIL {why}")
        passed, failed = passed + (not sparse), failed + bool(sparse)
        served = sum(1 for line in srv.access_lines() if " 206 " in line)
    print(f"refs: {len(manifest)} arrays x {len(VARIANTS)} variants, {len(legacy)} older-format "
          f"arrays x {len(LEGACY_VARIANTS)}, and a sparse array; "
          f"{served} range requests served by nginx, {time.monotonic() - t0:.0f} s; "
          f"refused as expected: {REFUSED or 'none'}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
