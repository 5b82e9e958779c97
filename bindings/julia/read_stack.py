"""zarr-python reads the stack calls.c wrote ([64]-[86], what example.jl's library-store steps
write): FIXTURE_DIR/stack.zarr, a group whose array "0" was made from a shard_array_spec, grown
by shard_array_append, resized, updated and compacted.

    .venv/bin/python bindings/julia/read_stack.py FIXTURE_DIR

The expected values are computed here, from the steps' definition, not from our output: frame
t (0..6) holds 1000 t + 10 y + x at [t][y][x]; frame 7 (cut by the shrink to 7 frames, then
regrown) is the fill value 0; [1][0:8][0:20] is 7 (the region write). Prints one line per
check and ends with "N passed, M failed"; exit status 1 on failure.
"""
import sys
from pathlib import Path

import numpy as np
import zarr

root = Path(sys.argv[1]) / "stack.zarr"
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok   " if ok else "FAIL ") + what)
    if ok:
        passed += 1
    else:
        failed += 1


try:
    group = zarr.open_group(str(root), mode="r")
    check(dict(group.attrs) == {"description": "frames"}, f"group attributes {dict(group.attrs)}")
    a = group["0"]
    check(a.shape == (8, 24, 40), f"shape {a.shape} == (8, 24, 40)")
    check(a.dtype == np.dtype("uint16"), f"dtype {a.dtype}")
    check(a.chunks == (2, 8, 20), f"inner chunks {a.chunks} == (2, 8, 20)")
    check(a.shards == (4, 24, 40), f"shards {a.shards} == (4, 24, 40)")
    check(tuple(a.metadata.dimension_names or ()) == ("t", "y", "x"),
          f"dimension names {a.metadata.dimension_names} == (t, y, x)")
    check(dict(a.attrs) == {"unit": "ms"}, f"array attributes {dict(a.attrs)}")
    t, y, x = np.indices((8, 24, 40))
    want = (1000 * t + 10 * y + x).astype("uint16")
    want[7] = 0
    want[1, :8, :20] = 7
    got = a[...]
    check(np.array_equal(got, want), "values: frames 0..6, frame 7 fill, the 7s of the region write")
    shards = sorted(p.relative_to(root / "0").as_posix() for p in (root / "0" / "c").rglob("*") if p.is_file())
    check(shards == ["c/0/0/0", "c/1/0/0"], f"shard objects {shards}: one per layer of 4 frames")
except Exception as e:  # a read that fails is a failed check, with its reason
    check(False, f"zarr-python could not read {root}: {type(e).__name__}: {e}")
print(f"{passed} passed, {failed} failed")
sys.exit(0 if failed == 0 else 1)
