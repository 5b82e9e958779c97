"""The interop fixture every binding reads: a sharded Zarr v3 array written by zarr-python.

    .venv/bin/python bindings/make_fixture.py OUT_DIR

writes OUT_DIR/fixture.zarr (zarr.json + shards c/I/J) and OUT_DIR/fixture.raw, the expected
values: the whole array, C order, uint16 little-endian. The array is 64x64 uint16, shards
32x32 of 16x16 inner chunks, bytes + zstd inner codecs, bytes + crc32c index at the end, fill
value 0; value at (r, c) is (r * 64 + c) * 7 % 65536, except the top-left 16x16 inner chunk of
every shard, which is 0 (so not stored: it reads as the fill value).
"""
import sys
from pathlib import Path

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
r, c = np.indices((64, 64))
values = ((r * 64 + c) * 7 % 65536).astype("<u2")
values[(r % 32 < 16) & (c % 32 < 16)] = 0
a = zarr.create_array(
    store=str(out / "fixture.zarr"), shape=(64, 64), chunks=(16, 16), shards=(32, 32),
    dtype="uint16", compressors=ZstdCodec(level=1), fill_value=0, overwrite=True,
)
a[...] = values
back = zarr.open_array(str(out / "fixture.zarr"), mode="r")[...]
assert (back == values).all()
(out / "fixture.raw").write_bytes(values.tobytes(order="C"))
print(out / "fixture.zarr")
