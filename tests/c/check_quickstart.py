"""zarr-python and tensorstore read the arrays README's C quick start wrote (tests/c/run.sh).

    python check_quickstart.py ARRAY_DIR STDOUT_FILE [ARRAY_DIR ...]

What they must hold comes from the README's description of the program, not from its
output: 10 frames of 64x64 uint16 appended along axis 0, pixel t*4096 + y*64 + x, in shards
of 4 frames and inner chunks of 1x32x32, fill value 0; and STDOUT_FILE, what the first run
printed, is frame 5, row 10, columns 0 to 3 of it. Prints a line per array and reader; exits
0 when every one is as described.
"""
import sys

import numpy as np
import tensorstore as ts
import zarr

from check_zarr import layout_problems


def main() -> int:
    paths, stdout = [sys.argv[1], *sys.argv[3:]], sys.argv[2]
    want = (np.arange(10, dtype=np.uint32)[:, None, None] * 4096
            + np.arange(64, dtype=np.uint32)[None, :, None] * 64
            + np.arange(64, dtype=np.uint32)[None, None, :]).astype(np.uint16)
    bad = 0
    for path in paths:
        arr = zarr.open_array(path, mode="r")
        problems = layout_problems(arr, want, (4, 64, 64), (1, 32, 32))
        if arr.fill_value != 0:
            problems.append(f"fill value {arr.fill_value}")
        print(f"zarr-python {path}: " + ("; ".join(problems) if problems else "as described"))
        bad += bool(problems)
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        got = ts.open(spec, read=True).result().read().result()
        same = got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
        print(f"tensorstore {path}: " + ("as described" if same else f"{got.dtype} {got.shape} differs"))
        bad += not same
    printed = open(stdout, encoding="utf-8").read()
    expected = "frame 5, row 10: " + " ".join(str(v) for v in want[5, 10, 0:4]) + "\n"
    if printed != expected:
        print(f"the program printed {printed!r}, expected {expected!r}")
        bad += 1
    else:
        print(f"the program printed {expected.strip()!r}, as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
