"""zarr-python reads, through s3fs, the arrays tests/c/test_s3.c wrote into the S3 server that
tests/s3/server.py runs: `image` (2-D, fill value 7 nowhere left), `patched` (the image
with a region rewritten that covers six shards partly), `frames` (3-D, appended
frame by frame, the last shard layer partial) and `big` (one 12 MiB uncompressed shard that
went up as a multipart upload, written twice: the second version is the one stored) and
`big-start` (the same with the shard index at the start, version 3).

    python tests/s3/server.py run -- bash -c 'test_s3 && python check_s3.py'

The endpoint and credentials come from the environment server.py sets; the expected values
are recomputed here from test_s3.c's value functions. Prints one line per array; exits 0
when all are equal.
"""

import os
import sys

import numpy as np
import zarr

BUCKET = "zarrshard-c"


def image():
    y, x = np.meshgrid(np.arange(64), np.arange(96), indexing="ij")
    return (y * 131 + x * 7 + 3).astype(np.uint16)


def patched():
    y, x = np.meshgrid(np.arange(64), np.arange(96), indexing="ij")
    inside = (y >= 10) & (y < 50) & (x >= 20) & (x < 70)
    return np.where(inside, y * 3 + x * 5 + 40000, y * 131 + x * 7 + 3).astype(np.uint16)


def frames():
    t, y, x = np.meshgrid(np.arange(10), np.arange(20), np.arange(24), indexing="ij")
    return (t * 1000 + y * 30 + x + 1).astype(np.uint16)


def big(gen):
    y, x = np.meshgrid(
        np.arange(2048, dtype=np.uint64), np.arange(3072, dtype=np.uint64), indexing="ij"
    )
    return (y * 7 + x * 13 + (y * x >> np.uint64(3)) + gen * 101).astype(np.uint16)


def main() -> int:
    options = {
        "endpoint_url": os.environ["S3_ENDPOINT"],
        "key": os.environ["AWS_ACCESS_KEY_ID"],
        "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
    }
    problems = []
    arrays = [
        ("image", image()),
        ("patched", patched()),
        ("frames", frames()),
        ("big", big(2)),
        ("big-start", big(3)),
    ]
    for name, want in arrays:
        url = f"s3://{BUCKET}/c/{name}"
        got = zarr.open_array(url, mode="r", storage_options=options)[...]
        ok = got.shape == want.shape and got.dtype == want.dtype and np.array_equal(got, want)
        print(f"zarr-python {url}: {'equal' if ok else 'DIFFERENT'} {got.shape} {got.dtype}")
        if not ok:
            problems.append(name)
    print("all equal" if not problems else f"different: {', '.join(problems)}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
