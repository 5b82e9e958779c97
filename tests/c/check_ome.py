"""ome-zarr (ome-zarr-py) and ome-zarr-models read the OME-Zarr 0.5 image examples-c/ome_pyramid
wrote, equal to the pyramid it meant.

    python check_ome.py IMAGE_DIR Z Y X

Runs in the venv `scripts/venv.sh ome` makes (ome-zarr, which brings ome-zarr-models and
zarr-python). The expected pyramid is recomputed here: level 0 from the formula in
ome_pyramid.c (pixel()), each further level as the floor of the mean of 2 x 2 blocks in y/x of
the level before it, with numpy; so the C program's output is checked against independent
readers and an independent copy of the values. Checks:

  - ome-zarr's Reader finds one multiscale image with NGFF version 0.5, three levels whose
    shapes and pixels equal the expected pyramid, axes z/y/x in micrometer, and the scales;
  - ome-zarr-models validates the group against the 0.5 schema (datasets, axes, arrays'
    dimension_names matching the axes, ranks);
  - each level is sharded as the example says (zarr-python's view of its zarr.json).

Prints one line per check and `N passed, M failed`; exits 0 when nothing failed.
"""
import sys

import numpy as np
import zarr
from ome_zarr.io import parse_url
from ome_zarr.reader import Multiscales, Reader
from ome_zarr_models.v05.image import Image

LEVELS = 3
# Physical pixel size of level 0 (micrometer), as ome_pyramid.c writes it.
Z_STEP, XY_STEP = 2.0, 0.5


def level0(nz: int, ny: int, nx: int) -> np.ndarray:
    z = np.arange(nz, dtype=np.uint64)[:, None, None]
    y = np.arange(ny, dtype=np.uint64)[None, :, None]
    x = np.arange(nx, dtype=np.uint64)[None, None, :]
    u32 = np.uint32
    h = ((y.astype(u32) * u32(73856093)) ^ (x.astype(u32) * u32(19349663))
         ^ (z.astype(u32) * u32(83492791)))
    v = 1000 + 500 * z + ((y * y + 3 * x) & 1023) + ((h >> u32(13)) & u32(15)).astype(np.uint64)
    return v.astype(np.uint16)


def halve(a: np.ndarray) -> np.ndarray:
    nz, ny, nx = a.shape
    blocks = a.astype(np.uint32).reshape(nz, ny // 2, 2, nx // 2, 2)
    return (blocks.sum(axis=(2, 4)) // 4).astype(np.uint16)


def expected(nz: int, ny: int, nx: int) -> list:
    levels = [level0(nz, ny, nx)]
    for _ in range(LEVELS - 1):
        levels.append(halve(levels[-1]))
    return levels


def main() -> int:
    path = sys.argv[1]
    nz, ny, nx = (int(v) for v in sys.argv[2:5])
    want = expected(nz, ny, nx)
    results = []

    def check(name: str, ok: bool, detail: str) -> None:
        results.append(ok)
        print(f"{'ok  ' if ok else 'FAIL'} {name}: {detail}")

    # ome-zarr's own reader, as napari-ome-zarr uses it.
    loc = parse_url(path, mode="r")
    check("ome-zarr finds the image", loc is not None, f"parse_url({path!r}) -> {loc}")
    if loc is None:
        print(f"{sum(results)} passed, {len(results) - sum(results)} failed")
        return 1
    check("NGFF version", loc.fmt.version == "0.5", f"ome-zarr reads version {loc.fmt.version}")
    nodes = [n for n in Reader(loc)() if Multiscales.matches(n.zarr)]
    check("one multiscale image", len(nodes) == 1, f"{len(nodes)} image node(s)")
    if nodes:
        node = nodes[0]
        got = [np.asarray(level) for level in node.data]
        shapes = [g.shape for g in got]
        check("levels' shapes", shapes == [w.shape for w in want],
              f"{shapes}, expected {[w.shape for w in want]}")
        for i, (g, w) in enumerate(zip(got, want)):
            if g.shape != w.shape or g.dtype != w.dtype:
                check(f"level {i} pixels", False, f"{g.dtype} {g.shape}, expected {w.dtype} {w.shape}")
                continue
            bad = np.argwhere(g != w)
            check(f"level {i} pixels", len(bad) == 0,
                  "equal to the expected level" if len(bad) == 0 else
                  f"{len(bad)} differ, first at {tuple(bad[0])}: {g[tuple(bad[0])]} != {w[tuple(bad[0])]}")
        axes = node.metadata.get("axes")
        want_axes = [{"name": n, "type": "space", "unit": "micrometer"} for n in ("z", "y", "x")]
        check("axes", axes == want_axes, f"{axes}")
        scales = [t[0].get("scale") for t in node.metadata.get("coordinateTransformations", [])]
        want_scales = [[Z_STEP, XY_STEP * 2**i, XY_STEP * 2**i] for i in range(LEVELS)]
        check("scales", scales == want_scales, f"{scales}, expected {want_scales}")
        names = node.metadata.get("channel_names")
        check("omero channel", names == ["synthetic"], f"channel_names {names}")

    # ome-zarr-models: pydantic models of the 0.5 schema, stricter than the reader.
    group = zarr.open_group(path, mode="r")
    try:
        image = Image.from_zarr(group)
        ms = image.ome_attributes.multiscales
        check("ome-zarr-models validates", len(ms) == 1 and
              [d.path for d in ms[0].datasets] == ["0", "1", "2"],
              f"multiscales[0].datasets {[d.path for d in ms[0].datasets]}")
    except Exception as e:  # noqa: BLE001 - any validation error is the finding
        check("ome-zarr-models validates", False, f"{type(e).__name__}: {e}")

    # The storage layout the example promises: sharded, dimension names on every level.
    for i in range(LEVELS):
        arr = zarr.open_array(f"{path}/{i}", mode="r")
        _, ly, lx = want[i].shape
        shard = (4, min(256, ly), min(256, lx))
        chunk = (1, min(64, ly), min(64, lx))
        check(f"level {i} layout", arr.shards == shard and arr.chunks == chunk and
              arr.metadata.dimension_names == ("z", "y", "x"),
              f"shards {arr.shards} chunks {arr.chunks} dimension_names "
              f"{arr.metadata.dimension_names}; expected {shard} {chunk} ('z', 'y', 'x')")

    passed = sum(results)
    print(f"{passed} passed, {len(results) - passed} failed")
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
