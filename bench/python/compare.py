#!/usr/bin/env python3
"""The Python package against its peers: zarrshard's Python package, zarr-python (its default
codec pipeline), zarr-python with the zarrs codec pipeline (`zarrs` from PyPI) and
tensorstore, in one process, on the same data and the same stored layout, one table.

Not part of the test suite; `scripts/bench.sh python` builds the package and runs this.

    compare.py [--dir DIR] [--reps N] [--reads K] [--seed S]

DIR (default: a temporary directory under $TMPDIR or /tmp, removed at the end; env
ZARRSHARD_PYBENCH_DIR) must be on a local disk. N repetitions of each measurement, best of N
reported (default 3, at least 3; env ZARRSHARD_PYBENCH_REPS). K single-chunk reads (default
1000) at chunk positions drawn from seed S (default 37).

The array: 4096 x 4096 uint16, shards 1024 x 1024, inner chunks 64 x 64, codecs bytes
(little endian) + zstd level 1 inside the shard, shard index bytes + crc32c at the end: what
each library writes by default for sharding, with zstd level 1 asked for explicitly. The
layout each side stored is read back from its `zarr.json` and checked to be this one before
any figure is printed. The data: bench/image.rs's formula (a plane plus a slow 2-D sinusoid,
plus 6 bits of noise), the noise from numpy's PCG64 instead of the Rust harness's xorshift:
it compresses like a microscope image, not trivially.

Measurements (each side on its own array, opened fresh before each sample, opening untimed):
* write: `arr[...] = data` on a newly created array (creation untimed), MB/s of decoded bytes;
* read: `arr[...]`, MB/s of decoded bytes;
* chunk reads: K reads `arr[y:y+64, x:x+64]` at chunk-aligned positions, reads/s.
Each figure is also given as the process CPU time (all threads) the operation took: less
moved by other processes on a shared machine than the wall time. One extra row: zarrshard
reading the array zarr-python wrote. The sides alternate within
each repetition, so a busy moment of the machine hits all of them. Every value read (whole
arrays and each chunk) is compared with the source data after each sample.

Threads: every library runs with its own default (zarrshard: all CPUs, or ZARRSHARD_THREADS;
zarr-python: its default async concurrency and thread pool; zarrs: all CPUs; tensorstore:
its default concurrency limits). tensorstore runs with `file_io_sync: false` (no fsync after
writing, as neither zarrshard's nor zarr-python's local store syncs) and, for the chunk reads
only, a 256 MiB cache pool fresh per sample (so it keeps shard indexes, as zarrshard keeps
them per handle; every chunk read is of a different chunk, so no decoded chunk is served from
it); zarr-python and zarrs keep nothing between calls.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from importlib.metadata import version

import numpy as np

SHAPE = (4096, 4096)
SHARD = (1024, 1024)
CHUNK = (64, 64)
DTYPE = np.dtype("uint16")
LEVEL = 1

SIDES = ("zarrshard", "zarr-python", "zarrs", "tensorstore")
TITLES = {
    "zarrshard": "zarrshard",
    "zarr-python": "zarr-python",
    "zarrs": "zarr-python + zarrs",
    "tensorstore": "tensorstore",
}


def image():
    """bench/image.rs's plane (float formula truncated to an integer) plus 6 bits of noise."""
    h, w = SHAPE
    x = np.arange(w, dtype=np.float64)
    y = np.arange(h, dtype=np.float64)[:, None]
    g = 8000.0 + 2.0 * x + 1.5 * y + 6000.0 * np.sin(x / 611.0) * np.cos(y / 487.0)
    noise = np.random.Generator(np.random.PCG64(0x9E3779B97F4A7C15)).integers(0, 64, size=SHAPE, dtype=np.uint32)
    return (g.astype(np.uint32) + noise).astype(DTYPE)


def stored_bytes(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def layout(path):
    """The stored layout of the array at `path` from its zarr.json, checked to be the
    benchmark's (so every side stores the same thing)."""
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    problems = []
    if meta.get("shape") != list(SHAPE) or meta.get("data_type") != "uint16":
        problems.append(f"shape/data type {meta.get('shape')} {meta.get('data_type')}")
    if meta["chunk_grid"]["configuration"]["chunk_shape"] != list(SHARD):
        problems.append(f"shard shape {meta['chunk_grid']['configuration']['chunk_shape']}")
    codecs = meta.get("codecs", [])
    if len(codecs) != 1 or codecs[0]["name"] != "sharding_indexed":
        problems.append(f"codecs {[c['name'] for c in codecs]} (want sharding_indexed alone)")
        return meta, problems
    conf = codecs[0]["configuration"]
    if conf["chunk_shape"] != list(CHUNK):
        problems.append(f"inner chunk shape {conf['chunk_shape']}")
    inner = [(c["name"], c.get("configuration", {})) for c in conf["codecs"]]
    if [n for n, _ in inner] != ["bytes", "zstd"] or inner[1][1].get("level") != LEVEL:
        problems.append(f"inner codecs {inner} (want bytes, zstd level {LEVEL})")
    if inner and inner[0][1].get("endian", "little") != "little":
        problems.append("inner bytes codec not little endian")
    if inner[1:] and inner[1][1].get("checksum", False):
        problems.append("inner zstd with a checksum")
    index = [c["name"] for c in conf.get("index_codecs", [])]
    if index != ["bytes", "crc32c"]:
        problems.append(f"index codecs {index} (want bytes, crc32c)")
    if conf.get("index_location", "end") != "end":
        problems.append(f"index location {conf.get('index_location')}")
    return meta, problems


class Side:
    """One library: create + write, open + read whole, open + read chunks."""

    name = None

    def __init__(self, root):
        self.path = os.path.join(root, self.name + ".zarr")

    def create(self):
        raise NotImplementedError

    def write(self, arr, data):
        arr[...] = data

    def open(self, path, chunks=False):
        raise NotImplementedError

    def read(self, arr):
        return arr[...]

    def chunk(self, arr, y, x):
        return arr[y : y + CHUNK[0], x : x + CHUNK[1]]


class Zarrshard(Side):
    name = "zarrshard"

    def create(self):
        import zarrshard

        return zarrshard.create_array(
            self.path,
            shape=SHAPE,
            dtype=DTYPE,
            chunks=CHUNK,
            shards=SHARD,
            compressors={"name": "zstd", "configuration": {"level": LEVEL}},
            overwrite=True,
        )

    def open(self, path, chunks=False):
        import zarrshard

        return zarrshard.open_array(path, mode="r")


class ZarrPython(Side):
    name = "zarr-python"
    pipeline = None

    def config(self):
        import zarr

        if self.pipeline is None:
            return zarr.config.set({})
        return zarr.config.set({"codec_pipeline.path": self.pipeline})

    def create(self):
        import zarr
        from zarr.codecs import ZstdCodec
        from zarr.storage import LocalStore

        with self.config():
            return zarr.create_array(
                LocalStore(self.path),
                shape=SHAPE,
                dtype=DTYPE,
                chunks=CHUNK,
                shards=SHARD,
                compressors=ZstdCodec(level=LEVEL),
                overwrite=True,
            )

    def open(self, path, chunks=False):
        import zarr
        from zarr.storage import LocalStore

        # The codec pipeline is fixed when the array object is made.
        with self.config():
            return zarr.open_array(store=LocalStore(path, read_only=True), mode="r")

    def check_pipeline(self, arr):
        got = type(arr._async_array.codec_pipeline)
        want = self.pipeline or "zarr.core.codec_pipeline.BatchedCodecPipeline"
        if f"{got.__module__}.{got.__name__}" != want:
            raise AssertionError(f"{self.name}: codec pipeline {got.__module__}.{got.__name__}, not {want}")


class Zarrs(ZarrPython):
    name = "zarrs"
    pipeline = "zarrs.ZarrsCodecPipeline"


class Tensorstore(Side):
    name = "tensorstore"

    def _context(self, cache_bytes=0):
        import tensorstore as ts

        return ts.Context({"cache_pool": {"total_bytes_limit": cache_bytes}, "file_io_sync": False})

    def create(self):
        import tensorstore as ts

        spec = {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": self.path},
            "metadata": {
                "shape": list(SHAPE),
                "data_type": "uint16",
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(SHARD)}},
                "codecs": [
                    {
                        "name": "sharding_indexed",
                        "configuration": {
                            "chunk_shape": list(CHUNK),
                            "codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "zstd", "configuration": {"level": LEVEL}},
                            ],
                            "index_codecs": [
                                {"name": "bytes", "configuration": {"endian": "little"}},
                                {"name": "crc32c"},
                            ],
                            "index_location": "end",
                        },
                    }
                ],
                "fill_value": 0,
            },
        }
        return ts.open(spec, create=True, delete_existing=True, context=self._context()).result()

    def write(self, arr, data):
        arr[...].write(data).result()

    def open(self, path, chunks=False):
        import tensorstore as ts

        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return ts.open(spec, open=True, read=True, context=self._context(256 << 20 if chunks else 0)).result()

    def read(self, arr):
        return arr[...].read().result()

    def chunk(self, arr, y, x):
        return arr[y : y + CHUNK[0], x : x + CHUNK[1]].read().result()


def best(samples, better=max):
    return better(samples)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=os.environ.get("ZARRSHARD_PYBENCH_DIR"))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("ZARRSHARD_PYBENCH_REPS", "3")))
    ap.add_argument("--reads", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=37)
    args = ap.parse_args()
    if args.reps < 3:
        ap.error("--reps: at least 3 (best of N)")

    import zarrshard

    made = args.dir is None
    root = tempfile.mkdtemp(prefix="zarrshard-pybench.") if made else args.dir
    os.makedirs(root, exist_ok=True)
    try:
        run(args, root, zarrshard)
    finally:
        if made:
            shutil.rmtree(root, ignore_errors=True)


def run(args, root, zarrshard):
    import zarr

    data = image()
    mb = data.nbytes / 1e6
    rng = np.random.Generator(np.random.PCG64(args.seed))
    grid = (SHAPE[0] // CHUNK[0], SHAPE[1] // CHUNK[1])
    positions = [(int(i) * CHUNK[0], int(j) * CHUNK[1]) for i, j in zip(rng.integers(0, grid[0], args.reads), rng.integers(0, grid[1], args.reads))]
    expected = [data[y : y + CHUNK[0], x : x + CHUNK[1]] for y, x in positions]

    sides = {s.name: s for s in (Zarrshard(root), ZarrPython(root), Zarrs(root), Tensorstore(root))}
    results = {}  # (row, side) -> samples of the figure
    cpu = {}  # (row, side) -> samples of the process CPU time (all threads) per operation

    def record(row, side, measured):
        value, seconds = measured
        results.setdefault((row, side), []).append(value)
        cpu.setdefault((row, side), []).append(seconds)

    def same(got, want, what):
        got = np.asarray(got)
        if got.shape != want.shape or got.dtype != want.dtype or not np.array_equal(got, want):
            raise AssertionError(f"{what}: the values read differ from the source data")

    def write(side):
        shutil.rmtree(side.path, ignore_errors=True)
        arr = side.create()
        c, t = time.process_time(), time.perf_counter()
        side.write(arr, data)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        del arr
        return mb / dt, dc

    def read(side, path, label):
        arr = side.open(path)
        if isinstance(side, ZarrPython):
            side.check_pipeline(arr)
        c, t = time.process_time(), time.perf_counter()
        out = side.read(arr)
        dt, dc = time.perf_counter() - t, time.process_time() - c
        same(out, data, f"{label}: whole array")
        return mb / dt, dc

    def chunks(side, path, label):
        arr = side.open(path, chunks=True)
        out = []
        c, t = time.process_time(), time.perf_counter()
        for y, x in positions:
            out.append(side.chunk(arr, y, x))
        dt, dc = time.perf_counter() - t, time.process_time() - c
        for (y, x), got, want in zip(positions, out, expected):
            same(got, want, f"{label}: chunk at [{y}, {x}]")
        return len(positions) / dt, dc / len(positions)

    for rep in range(args.reps):
        for name, side in sides.items():
            print(f"[compare.py] repetition {rep + 1}/{args.reps}: {name}", file=sys.stderr)
            record("write", name, write(side))
            if rep == 0:
                meta, problems = layout(side.path)
                if problems:
                    raise AssertionError(f"{name} stored a different layout: {'; '.join(problems)}")
            record("read", name, read(side, side.path, name))
            record("chunks", name, chunks(side, side.path, name))
        zp = sides["zarr-python"].path
        record("read-zp", "zarrshard", read(sides["zarrshard"], zp, "zarrshard on zarr-python's array"))
        record("chunks-zp", "zarrshard", chunks(sides["zarrshard"], zp, "zarrshard on zarr-python's array"))

    print_table(args, results, cpu, {n: stored_bytes(s.path) for n, s in sides.items()}, zarr, zarrshard)


def print_table(args, results, cpu, sizes, zarr, zarrshard):

    cpus = os.cpu_count()
    versions = {
        "zarrshard": zarrshard.__version__,
        "zarr-python": zarr.__version__,
        "zarrs": version("zarrs"),
        "tensorstore": version("tensorstore"),
        "numpy": np.__version__,
    }
    print(f"Python package vs peers: {SHAPE[0]}x{SHAPE[1]} uint16, shards {SHARD[0]}x{SHARD[1]}, "
          f"chunks {CHUNK[0]}x{CHUNK[1]}, bytes + zstd {LEVEL}, index crc32c, local files; best of {args.reps}")
    print(f"os.cpu_count() = {cpus}; zarrshard threads = {zarrshard.get_threads()} (its default: all CPUs); "
          f"zarr-python async.concurrency = {zarr.config.get('async.concurrency')}, "
          f"threading.max_workers = {zarr.config.get('threading.max_workers')}; zarrs and tensorstore: their defaults")
    print("versions: " + ", ".join(f"{k} {v}" for k, v in versions.items()) + f", Python {sys.version.split()[0]}")
    print()
    rows = [
        ("write", "whole-array write (MB/s)", "{:.0f}"),
        ("read", "whole-array read (MB/s)", "{:.0f}"),
        ("chunks", f"{args.reads} single-chunk reads (reads/s)", "{:.0f}"),
        ("read-zp", "read of zarr-python's array (MB/s)", "{:.0f}"),
        ("chunks-zp", f"{args.reads} chunk reads, zarr-python's array (reads/s)", "{:.0f}"),
    ]
    peers = SIDES[1:]
    head = ["measurement"] + [TITLES[s] for s in SIDES] + [f"zarrshard / {TITLES[p]}" for p in peers]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for key, title, fmt in rows:
        own = key.split("-")[0]
        zs = best(results[(key, "zarrshard")])
        cells = [title, fmt.format(zs)]
        for s in peers:
            cells.append(fmt.format(best(results[(own, s)])) if key == own else "")
        for s in peers:
            cells.append(f"{zs / best(results[(own, s)]):.2f}x")
        print("| " + " | ".join(cells) + " |")
    print("| stored bytes | " + " | ".join(f"{sizes[s]:,}" for s in SIDES) + " |" + " |" * len(peers))
    print()
    print("Spread (min - max of the samples):")
    for key, title, fmt in rows:
        parts = []
        for s in SIDES:
            v = results.get((key, s))
            if v:
                parts.append(f"{TITLES[s]} {min(v):.0f}-{max(v):.0f}")
        print(f"  {title}: " + "; ".join(parts))
    # The CPU the process spent, all threads: less moved by other processes than the wall
    # time on a shared machine, and a parallel library's cost beside a serial one's.
    print()
    print("Process CPU time (all threads) per operation, least of the samples:")
    units = {"write": (1e3, "ms"), "read": (1e3, "ms"), "chunks": (1e6, "us")}
    for key, title, fmt in rows:
        scale, unit = units[key.split("-")[0]]
        parts = [f"{TITLES[s]} {min(cpu[(key, s)]) * scale:.1f} {unit}" for s in SIDES if (key, s) in cpu]
        print(f"  {title.split(' (')[0]}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
