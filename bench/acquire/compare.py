"""zarrshard's C API against acquire-zarr, streaming the same frames with the same settings.

    python compare.py --stream PATH/TO/stream [--workdir DIR] [--frames T] [--size N]
                      [--rounds R] [--threads K]

Runs in the venv `scripts/venv.sh acquire` makes (acquire-zarr, zarr-python); scripts/bench.sh
builds bench/acquire/stream.c and calls this. Each round runs, back to back and in a rotating
order:

  * acquire-zarr (its Python API: StreamSettings / ArraySettings / Dimension, one
    ZarrStream.append per frame, then close), blosc 1 with zstd level 1 and byte shuffle (the
    only zstd acquire-zarr offers), `max_threads` K;
  * zarrshard, bench/acquire/stream (shard_store_directory, shard_array_create with the same
    codecs as acquire-zarr's zarr.json, one shard_array_append per frame, flush, close),
    `shard_set_threads(K)`;
  * zarrshard with plain zstd level 1 (shard_array_create_spec), which acquire-zarr cannot write.

Every writer gets T frames of N x N uint16 (frames() here, stream.c's frame() in C), an
unbounded first dimension grown by appends, inner chunks of 4 x 256 x 256 and shards of
8 x 1024 x 1024, the shard index at the end with crc32c. The frames exist before the clock
starts; each time covers opening the store or stream through close. MB/s = raw frame bytes /
seconds / 1e6. The ratio column is the median of per-round ratios to acquire-zarr, with their
range. CPU s is the writer's process CPU time (all threads) over the same span: on a machine
other processes keep busy the wall times move with them, the CPU cost much less. After the rounds zarr-python reads each writer's last output, which must equal the
frames (values, shape, chunk and shard shapes). No timed assertions: the table is the result;
the exit status is 1 only when an output is wrong or a writer fails.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version

import acquire_zarr as az
import numpy as np
import zarr

CHUNK = (4, 256, 256)
SHARD_CHUNKS = (2, 4, 4)


def frames(t_count: int, n: int) -> np.ndarray:
    """Frame t's value at (y, x); the same formula as frame() in stream.c (uint32 arithmetic
    wraps as C's does)."""
    u32 = np.uint32
    y = np.arange(n, dtype=u32)[:, None]
    x = np.arange(n, dtype=u32)[None, :]
    ramp = x + u32(2) * y
    hyx = (y * u32(73856093)) ^ (x * u32(19349663))
    out = np.empty((t_count, n, n), dtype=np.uint16)
    for t in range(t_count):
        ht = u32((t * 83492791) & 0xFFFFFFFF)
        out[t] = u32(1000) + ((ramp + u32(7 * t)) & u32(2047)) + (((hyx ^ ht) >> u32(11)) & u32(63))
    return out


def run_acquire(out: str, data: np.ndarray, threads: int) -> tuple:
    t_count, ny, nx = data.shape
    dims = [
        az.Dimension(name="t", kind=az.DimensionType.TIME, array_size_px=0,
                     chunk_size_px=CHUNK[0], shard_size_chunks=SHARD_CHUNKS[0]),
        az.Dimension(name="y", kind=az.DimensionType.SPACE, array_size_px=ny,
                     chunk_size_px=CHUNK[1], shard_size_chunks=SHARD_CHUNKS[1]),
        az.Dimension(name="x", kind=az.DimensionType.SPACE, array_size_px=nx,
                     chunk_size_px=CHUNK[2], shard_size_chunks=SHARD_CHUNKS[2]),
    ]
    settings = az.StreamSettings(store_path=out, overwrite=True, max_threads=threads)
    settings.arrays = [az.ArraySettings(
        output_key="", data_type=np.uint16, dimensions=dims,
        compression=az.CompressionSettings(compressor=az.Compressor.BLOSC1,
                                           codec=az.CompressionCodec.BLOSC_ZSTD,
                                           level=1, shuffle=1))]
    t0, c0 = time.perf_counter(), time.process_time()
    stream = az.ZarrStream(settings)
    for i in range(t_count):
        stream.append(data[i])
    stream.close()
    return time.perf_counter() - t0, time.process_time() - c0


def run_stream(program: str, out: str, shape: tuple, codec: str, threads: int) -> tuple:
    shard = [c * s for c, s in zip(CHUNK, SHARD_CHUNKS)]
    args = [program, out, *map(str, shape), *map(str, CHUNK), *map(str, shard), codec,
            str(threads)]
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} exited {res.returncode}: {res.stderr.strip()}")
    fields = dict(kv.split("=", 1) for kv in res.stdout.split())
    return float(fields["seconds"]), float(fields["cpu_seconds"])


def stored_bytes(path: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def check(path: str, want: np.ndarray) -> list:
    arr = zarr.open_array(path, mode="r")
    problems = []
    shard = tuple(c * s for c, s in zip(CHUNK, SHARD_CHUNKS))
    if arr.shape != want.shape or arr.dtype != want.dtype:
        problems.append(f"{arr.dtype} {arr.shape}, expected {want.dtype} {want.shape}")
    elif arr.chunks != CHUNK or arr.shards != shard:
        problems.append(f"chunks {arr.chunks} shards {arr.shards}, expected {CHUNK} {shard}")
    else:
        got = arr[...]
        bad = np.argwhere(got != want)
        if len(bad):
            problems.append(f"{len(bad)} values differ, first at {tuple(bad[0])}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stream", required=True, help="bench/acquire/stream, built")
    ap.add_argument("--workdir", help="where the outputs go (default: a temporary directory)")
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    az.set_log_level(az.LogLevel.ERROR)

    work = a.workdir or tempfile.mkdtemp(prefix="zarrshard-acquire-")
    os.makedirs(work, exist_ok=True)
    shape = (a.frames, a.size, a.size)
    data = frames(*shape[:2])
    raw = data.nbytes
    writers = {
        "acquire-zarr": ("blosc zstd 1, shuffle",
                         lambda out: run_acquire(out, data, a.threads)),
        "zarrshard C API": ("blosc zstd 1, shuffle",
                            lambda out: run_stream(a.stream, out, shape, "blosc-zstd", a.threads)),
        "zarrshard C API, zstd": ("zstd 1",
                                  lambda out: run_stream(a.stream, out, shape, "zstd", a.threads)),
    }
    names = list(writers)
    secs = {n: [] for n in names}
    cpus = {n: [] for n in names}
    load0 = os.getloadavg()[0]
    print(f"[compare.py] {a.rounds} rounds of {len(names)} writers, {shape[0]} frames of "
          f"{shape[1]}x{shape[2]} uint16 ({raw / 1e6:.0f} MB), threads {a.threads}, in {work}",
          file=sys.stderr)
    for r in range(a.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for n in order:
            out = os.path.join(work, n.replace(" ", "_").replace(",", ""))
            shutil.rmtree(out, ignore_errors=True)
            wall, cpu = writers[n][1](out)
            secs[n].append(wall)
            cpus[n].append(cpu)
        print(f"[compare.py] round {r + 1}: " +
              ", ".join(f"{n} {secs[n][-1]:.2f} s" for n in names), file=sys.stderr)
    load1 = os.getloadavg()[0]

    failed = 0
    print(f"acquire-zarr comparison: {shape[0]} frames of {shape[1]}x{shape[2]} uint16 "
          f"({raw / 1e6:.0f} MB), inner chunks {CHUNK}, shards "
          f"{tuple(c * s for c, s in zip(CHUNK, SHARD_CHUNKS))}, index at the end + crc32c, "
          f"{a.threads} threads, {a.rounds} rounds; load average {load0:.2f} before, "
          f"{load1:.2f} after\n")
    print("| writer | codec | MB/s median (min–max) | ratio to acquire-zarr, median (range) | "
          "CPU s median | stored MB | zarr-python reads the frames |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    base = secs["acquire-zarr"]
    for n in names:
        mbs = [raw / s / 1e6 for s in secs[n]]
        ratios = [b / s for b, s in zip(base, secs[n])]
        out = os.path.join(work, n.replace(" ", "_").replace(",", ""))
        problems = check(out, data)
        failed += bool(problems)
        print(f"| {n} | {writers[n][0]} | {statistics.median(mbs):.0f} "
              f"({min(mbs):.0f}–{max(mbs):.0f}) | "
              f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) | "
              f"{statistics.median(cpus[n]):.2f} | {stored_bytes(out) / 1e6:.1f} | "
              f"{'; '.join(problems) if problems else 'yes, equal'} |")
    print(f"\nacquire-zarr {version('acquire-zarr')}, zarr-python {zarr.__version__}, "
          f"numpy {np.__version__}")
    if not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
