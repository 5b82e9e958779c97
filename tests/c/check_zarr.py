"""zarr-python (and zarrs, when its peer tool is built) read the array examples-c/write_array
wrote, equal to the image it meant.

    python check_zarr.py ARRAY_DIR SIZE

The expected image is recomputed here from the formula in write_array.c (pixel()), so this
checks the writer's output against independent readers and an independent copy of the
values. zarrs reads through tests/interop/zarrs_peer, which scripts/test.sh builds before this
runs; run alone without it, that read is reported as not done. Prints one line per reader and
exits 0 when every reader that ran saw the image.
"""
import os
import sys

import numpy as np
import zarr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "interop"))
import zarrs_peer  # noqa: E402


def expected(size: int) -> np.ndarray:
    shard, inner = size // 2, size // 16
    y = np.arange(size, dtype=np.uint64)[:, None]
    x = np.arange(size, dtype=np.uint64)[None, :]
    h = (y.astype(np.uint32) * np.uint32(73856093)) ^ (x.astype(np.uint32) * np.uint32(19349663))
    v = 1000 + (y + x) * 16384 // size + ((h >> np.uint32(13)) & np.uint32(15)).astype(np.uint64)
    blank = ((y // inner + 2 * (x // inner)) % 13 == 5) | ((y >= shard) & (x >= shard))
    return np.where(blank, 0, v).astype(np.uint16)


def layout_problems(arr, want: np.ndarray, shards: tuple, chunks: tuple) -> list:
    """How a zarr-python array differs from the values, shard and inner chunk shapes meant."""
    got = arr[...]
    problems = []
    if arr.dtype != want.dtype or got.shape != want.shape:
        problems.append(f"dtype/shape {arr.dtype} {got.shape}, expected {want.dtype} {want.shape}")
    elif not np.array_equal(got, want):
        bad = np.argwhere(got != want)
        problems.append(f"{len(bad)} values differ, first at {tuple(bad[0])}: "
                        f"{got[tuple(bad[0])]} != {want[tuple(bad[0])]}")
    if arr.shards != shards or arr.chunks != chunks:
        problems.append(f"shards {arr.shards} chunks {arr.chunks}, expected {shards} {chunks}")
    return problems


def main() -> int:
    path, size = sys.argv[1], int(sys.argv[2])
    arr = zarr.open_array(path, mode="r")
    want = expected(size)
    problems = layout_problems(arr, want, (size // 2, size // 2), (size // 16, size // 16))
    if os.path.exists(os.path.join(path, "c", "1", "1")):
        problems.append("the all-fill shard c/1/1 was stored")
    if problems:
        print("zarr-python: " + "; ".join(problems))
        return 1
    print(f"zarr-python {zarr.__version__}: {path} ({size}x{size} uint16, shards {arr.shards}, "
          f"inner chunks {arr.chunks}) equals the image write_array meant")
    if not zarrs_peer.available():
        print(f"zarrs: not read ({zarrs_peer.binary()} is not built; scripts/test.sh builds it)")
        return 0
    got = zarrs_peer.read(path)
    if got.dtype != np.uint16 or got.shape != want.shape or not np.array_equal(got, want):
        print(f"zarrs: read {got.dtype} {got.shape}, not the image write_array meant")
        return 1
    print(f"zarrs: {path} equals the image write_array meant")
    return 0


if __name__ == "__main__":
    sys.exit(main())
