#!/usr/bin/env python3
"""Read the Parquet reference set the C++ binding wrote (Array::kerchunk_refs_parquet) with the
real clients, independently of zarrshard: fastparquet (fsspec's default engine) for the layout,
fsspec's ReferenceFileSystem (LazyReferenceMapper) + zarr-python for the values.

Usage:  check_parquet_refs.py REFS_DIR NAME FIXTURE_DIR RECORD_SIZE

REFS_DIR holds `.zmetadata` and `NAME/refs.<n>.parq`, written by test_zarrshard's
test_array_kerchunk_refs_parquet from FIXTURE_DIR/fixture.zarr (bindings/make_fixture.py) with
the URL prefix file://FIXTURE_DIR/fixture.zarr. Checks, with tests/refs/check_refs.py's helpers
(the same ones that check `zarrshard refs --format parquet`):

  * the layout: one file per RECORD_SIZE chunks, every file readable by fastparquet with columns
    path, offset, size, raw and min(RECORD_SIZE, rest) rows, each row a reference or data;
  * the references: every path is a shard of FIXTURE_DIR/fixture.zarr and the byte range it
    names lies inside that file; the rows without a path are exactly the inner chunks that
    zarr-python left unwritten (all fill value in fixture.raw);
  * the values: the whole array read through ReferenceFileSystem + zarr.open_array equals
    fixture.raw, the values zarr-python wrote.

Prints one line per check and, last, "N passed, M failed"; exit status 1 on any failure.
"""
from __future__ import annotations

import json
import os
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "refs"))
from check_refs import open_refs, parquet_layout_problem, same  # noqa: E402


def main(argv):
    if len(argv) != 4:
        print(__doc__)
        return 2
    refs_dir, name, fixture, record_size = argv[0], argv[1], os.path.abspath(argv[2]), int(argv[3])
    array_dir = os.path.join(fixture, "fixture.zarr")
    passed = failed = 0

    def check(ok, what):
        nonlocal passed, failed
        print(f"{'ok  ' if ok else 'FAIL'} {what}")
        passed, failed = passed + bool(ok), failed + (not ok)

    import pandas as pd

    with open(os.path.join(refs_dir, ".zmetadata")) as f:
        zmeta = json.load(f)
    zarray = zmeta["metadata"][f"{name}/.zarray"]
    check(zmeta["record_size"] == record_size, f".zmetadata: record_size {zmeta['record_size']}")
    why = parquet_layout_problem(refs_dir, name)
    check(why is None, f"layout (fastparquet): {why or 'every file and row as fsspec reads them'}")

    # The fixture's facts, from zarr-python's own files: 64x64 uint16, 16x16 inner chunks.
    with open(os.path.join(array_dir, "zarr.json")) as f:
        meta = json.load(f)
    shape = meta["shape"]
    inner = meta["codecs"][0]["configuration"]["chunk_shape"]
    check(zarray["shape"] == shape and zarray["chunks"] == inner,
          f".zarray shape {zarray['shape']} chunks {zarray['chunks']} (zarr.json: {shape}, {inner})")
    with open(os.path.join(fixture, "fixture.raw"), "rb") as f:
        raw = f.read()
    values = np.frombuffer(raw, dtype="<u2").reshape(shape)
    grid = [-(-s // c) for s, c in zip(shape, inner)]
    all_fill = [bool((values[i * inner[0]:(i + 1) * inner[0], j * inner[1]:(j + 1) * inner[1]] == 0).all())
                for i in range(grid[0]) for j in range(grid[1])]

    rows = pd.concat([pd.read_parquet(os.path.join(refs_dir, name, f"refs.{n}.parq"), engine="fastparquet")
                      for n in range(-(-len(all_fill) // record_size))], ignore_index=True)
    check(len(rows) == len(all_fill), f"{len(rows)} rows for {len(all_fill)} chunks")
    prefix = "file://" + array_dir + "/"
    bad_refs = []
    for k, (path, offset, size) in enumerate(zip(rows["path"], rows["offset"], rows["size"])):
        if not isinstance(path, str):
            continue
        local = path[len(prefix):] if path.startswith(prefix) else None
        file = os.path.join(array_dir, local) if local else None
        if file is None or not os.path.isfile(file) or not (0 <= offset and size > 0
                                                             and offset + size <= os.path.getsize(file)):
            bad_refs.append((k, path, offset, size))
    check(not bad_refs, f"every reference is a byte range of a shard file: {bad_refs[:3] or 'yes'}")
    no_path = [not isinstance(p, str) for p in rows["path"]]
    check(no_path == all_fill,
          f"rows without a path ({sum(no_path)}) are the chunks zarr-python left unwritten ({sum(all_fill)})")

    try:
        got = open_refs(refs_dir, False, name, 2)[...]
        ok = list(got.shape) == shape and same(got, raw)
        what = f"{got.shape} {got.dtype}"
    except Exception as e:  # noqa: BLE001 - any reader failure is a test failure
        ok, what = False, f"read failed: {type(e).__name__}: {e}"
    check(ok, f"ReferenceFileSystem + zarr-python read the array equal to fixture.raw ({what})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
