"""zarr-python and tensorstore read the hierarchy tests/c/test_nodes.c wrote with the C API's
own directory store: a group `series` with attributes, `series/raw` (frames appended one at a
time, the last shard layer flushed partial) and `series/cut` (written whole, shrunk to
4 x 3 x 3, grown back to 4 x 6 x 10, so fill value 9 outside the kept part).

    python check_nodes.py OUT_DIR

The expected values are recomputed here from test_nodes.c's value(). Prints one line per
reader and check; exits 0 when all agree.
"""
import json
import sys

import numpy as np
import tensorstore as ts
import zarr

FRAMES, H, W = 10, 6, 10


def value(t, y, x):
    return (t * 1000 + y * 10 + x + 1).astype(np.uint16)


def series(frames):
    t, y, x = np.meshgrid(np.arange(frames), np.arange(H), np.arange(W), indexing="ij")
    return value(t, y, x)


def cut():
    want = np.full((4, H, W), 9, dtype=np.uint16)
    want[:, :3, :3] = series(4)[:, :3, :3]
    return want


def main() -> int:
    root = sys.argv[1]
    problems = []
    group = zarr.open_group(root + "/series", mode="r")
    if dict(group.attrs) != {"description": "test_nodes"}:
        problems.append(f"group attributes {dict(group.attrs)}")
    for name, want in [("raw", series(FRAMES)), ("cut", cut())]:
        path = f"{root}/series/{name}"
        got = zarr.open_array(path, mode="r")[...]
        ok = got.shape == want.shape and np.array_equal(got, want)
        print(f"zarr-python {name}: {'equal' if ok else 'DIFFERENT'} {got.shape}")
        if not ok:
            problems.append(f"zarr-python {name}")
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        got = ts.open(spec, read=True).result().read().result()
        ok = got.shape == want.shape and np.array_equal(got, want)
        print(f"tensorstore {name}: {'equal' if ok else 'DIFFERENT'} {got.shape}")
        if not ok:
            problems.append(f"tensorstore {name}")
    meta = json.load(open(f"{root}/series/raw/zarr.json"))
    if meta.get("dimension_names") != ["t", "y", "x"]:
        problems.append(f"dimension_names {meta.get('dimension_names')}")
    for p in problems:
        print("PROBLEM", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
