#!/usr/bin/env python3
"""Python peers of the zarrshard benchmark: tensorstore and zarr-python.

Not part of the test suite. The Rust harness (benches/compare.rs) prepares a work directory
(the source image as raw little-endian uint16, the arrays every implementation reads, the
`zarr.json` files every implementation writes under, and `manifest.json` describing them),
then starts this script with `--serve` and sends it one request per sample, alternating with
its own implementations (zarrshard, zarrs, tensorstore, zarr-python, zarrshard, ...).

  peers.py --serve                  line protocol: one JSON request per line on stdin, one
                                    JSON reply per line on stdout (used by compare.rs)
  peers.py --workdir DIR [--reps N] standalone: runs every workload N times on a work
                                    directory kept by the harness (ZARRSHARD_BENCH_KEEP=1)
                                    and prints JSON timings

Requests: {"op": "init", "manifest": {...}}, {"op": "info"},
{"op": "run", "impl": "tensorstore"|"tensorstore-fsync"|"zarr-python", "workload": W,
 "variant": V, "check": bool}, {"op": "quit"}.
The scaling mode (examples/scaling.rs) sends a manifest with a "scaling" section and
{"op": "run", "impl": "tensorstore", "workload": "scale_write"|"scale_read"|"scale_small",
 "variant": "2d"|"3d", "threads": N, "check": bool}; it needs tensorstore and numpy only.
A run replies {"ok": true, "seconds": S, "cpu_seconds": P} where S is the wall time of the
timed part only (per chunk for the single-chunk workloads, total otherwise) and P the
process CPU time (all threads) over it, or {"ok": false, "error": "..."}.
With "check": true the result is compared with the source image (the harness does this on
the untimed warm-up run).

How each workload is done (the idiomatic way each library offers):
* tensorstore: `ts.open({"driver": "zarr3", "kvstore": {"driver": "file", ...}})` on the
  `zarr.json` the harness wrote, then `store[region].read().result()` /
  `store.write(data).result()` (one shard: `store[shard_region].write(data).result()`). The
  context's `cache_pool` is 0 bytes (nothing cached, so the shard index is read again on
  every access) except for the "warm" and "1000 random chunks" workloads, which use a fresh
  256 MiB pool per sample so the shard index stays cached (every chunk read there is a
  different chunk, so the decoded-chunk cache never serves a read).
  Writes use `file_io_sync: false` (no fsync, like zarrshard's and zarr-python's file
  stores); "tensorstore-fsync" keeps tensorstore's default (`file_io_sync: true`).
* zarr-python: `zarr.open_array(LocalStore(dir))`, `arr[region]`, `arr[...] = data` (one
  shard: `arr[shard_region] = data`), default configuration. zarr-python 3.1 keeps no shard
  index between calls, so its "warm" reads are the same as its cold ones.
* Scaling mode (tensorstore at N threads): a fresh context per sample whose
  `data_copy_concurrency` and `file_io_concurrency` limits are N; whole-array `write(data)`
  (`file_io_sync: false`, no cache) and `read()` (no cache); small reads: N Python threads,
  thread t doing reads t, t+N, ... with `arr[box].read().result()`, a 256 MiB cache pool so
  each shard's index is read once per sample.
"""

import json
import sys
import time

import numpy as np


class Clock:
    """Wall time and process CPU time (all threads) of an interval."""

    def __init__(self):
        self.cpu = time.process_time()
        self.wall = time.perf_counter()

    def stop(self):
        wall = time.perf_counter() - self.wall
        return wall, time.process_time() - self.cpu


def _versions():
    from importlib.metadata import version

    out = {}
    for p in ("tensorstore", "zarr", "numpy", "numcodecs"):
        try:
            out[p] = version(p)
        except Exception as e:  # noqa: BLE001
            out[p] = f"unavailable ({e})"
    return out


class Peers:
    def __init__(self, manifest):
        self.m = manifest
        # The scaling manifest has neither (its arrays are under "scaling").
        self.shape = tuple(manifest.get("shape", ()))
        self.inner = tuple(manifest.get("inner", ()))
        self._data = None
        self._scaling_data = {}

    # -- data -------------------------------------------------------------------------------
    @property
    def data(self):
        if self._data is None:
            self._data = np.fromfile(self.m["data"], dtype="<u2").reshape(self.shape)
        return self._data

    def _expect(self, got, r0, r1, c0, c1):
        want = self.data[r0:r1, c0:c1]
        if got.shape != want.shape or not np.array_equal(got, want):
            raise AssertionError(f"decoded [{r0}:{r1}, {c0}:{c1}] differs from the source")

    # -- opening ----------------------------------------------------------------------------
    def _ts(self, path, cache_bytes=0, sync=False):
        import tensorstore as ts

        ctx = ts.Context(
            {"cache_pool": {"total_bytes_limit": cache_bytes}, "file_io_sync": sync}
        )
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return ts.open(spec, open=True, context=ctx).result()

    def _zp(self, path, mode="r"):
        import zarr
        from zarr.storage import LocalStore

        return zarr.open_array(store=LocalStore(path, read_only=(mode == "r")), mode=mode)

    def _read(self, impl, arr, r0, r1, c0, c1):
        if impl.startswith("tensorstore"):
            return arr[r0:r1, c0:c1].read().result()
        return arr[r0:r1, c0:c1]

    def _open_read(self, impl, path, cache_bytes=0):
        if impl.startswith("tensorstore"):
            return self._ts(path, cache_bytes)
        return self._zp(path, "r")

    # -- workloads --------------------------------------------------------------------------
    def run(self, impl, workload, variant, check, threads=None):
        fn = getattr(self, "w_" + workload, None)
        if fn is None:
            raise ValueError(f"unknown workload {workload}")
        if workload.startswith("scale_"):
            return fn(impl, variant, check, threads)
        return fn(impl, variant, check)

    # -- scaling mode (tensorstore at N threads) ---------------------------------------------
    def _scaling(self, variant):
        a = self.m["scaling"][variant]
        if variant not in self._scaling_data:
            self._scaling_data[variant] = np.fromfile(a["data"], dtype="<u2").reshape(a["shape"])
        return a, self._scaling_data[variant]

    def _ts_threads(self, path, threads, cache_bytes=0):
        import tensorstore as ts

        ctx = ts.Context({
            "cache_pool": {"total_bytes_limit": cache_bytes},
            "file_io_sync": False,
            "data_copy_concurrency": {"limit": threads},
            "file_io_concurrency": {"limit": threads},
        })
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return ts.open(spec, open=True, context=ctx).result()

    def w_scale_write(self, impl, variant, check, threads):
        # The harness removes the previous shards before each sample and reads the written
        # array back with zarrshard.
        a, data = self._scaling(variant)
        arr = self._ts_threads(a["write_dir"], threads)
        clk = Clock()
        arr.write(data).result()
        return clk.stop()

    def w_scale_read(self, impl, variant, check, threads):
        a, data = self._scaling(variant)
        arr = self._ts_threads(a["read_dir"], threads)
        clk = Clock()
        out = arr.read().result()
        dt = clk.stop()
        if check and (out.shape != data.shape or not np.array_equal(out, data)):
            raise AssertionError(f"tensorstore: the {variant} array read differs from the source")
        return dt

    def w_scale_small(self, impl, variant, check, threads):
        import threading

        small = self.m["small"]
        a, data = self._scaling(small["variant"])
        arr = self._ts_threads(a["read_dir"], threads, 256 << 20)
        origins, size = small["origins"], small["shape"]
        outs = [None] * len(origins)
        errors = []

        def worker(t):
            try:
                for k in range(t, len(origins), threads):
                    box = tuple(slice(o, o + s) for o, s in zip(origins[k], size))
                    out = arr[box].read().result()
                    if check:
                        outs[k] = out
            except Exception as e:  # noqa: BLE001
                errors.append(e)

        workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
        clk = Clock()
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        dt = clk.stop()
        if errors:
            raise errors[0]
        if check:
            for o, out in zip(origins, outs):
                box = tuple(slice(p, p + s) for p, s in zip(o, size))
                if out is None or not np.array_equal(out, data[box]):
                    raise AssertionError(f"tensorstore: the read at {o} differs from the source")
        return dt

    def w_encode(self, impl, variant, check):
        path = self.m["enc_dirs"][impl][variant]
        data = self.data
        if impl.startswith("tensorstore"):
            arr = self._ts(path, 0, sync=(impl == "tensorstore-fsync"))
            clk = Clock()
            arr.write(data).result()
            dt = clk.stop()
        else:
            arr = self._zp(path, "r+")
            clk = Clock()
            arr[...] = data
            dt = clk.stop()
        return dt

    def w_write_shard(self, impl, variant, check):
        # One whole shard (shard_region) written as a region of the array; the harness removes
        # the shard before each sample, so there is nothing stored to merge with. The input is
        # made contiguous untimed, as the Rust rows get their decoded shard.
        path = self.m["shard_write_dirs"][impl]
        (r0, r1), (c0, c1) = self.m["shard_region"]
        data = np.ascontiguousarray(self.data[r0:r1, c0:c1])
        if impl.startswith("tensorstore"):
            arr = self._ts(path, 0, sync=False)
            clk = Clock()
            arr[r0:r1, c0:c1].write(data).result()
        else:
            arr = self._zp(path, "r+")
            clk = Clock()
            arr[r0:r1, c0:c1] = data
        return clk.stop()

    def w_decode_array(self, impl, variant, check):
        arr = self._open_read(impl, self.m["read_dirs"][variant])
        h, w = self.shape
        clk = Clock()
        out = self._read(impl, arr, 0, h, 0, w)
        dt = clk.stop()
        if check:
            self._expect(out, 0, h, 0, w)
        return dt

    def w_decode_shard(self, impl, variant, check):
        arr = self._open_read(impl, self.m["read_dirs"][variant])
        (r0, r1), (c0, c1) = self.m["shard_region"]
        clk = Clock()
        out = self._read(impl, arr, r0, r1, c0, c1)
        dt = clk.stop()
        if check:
            self._expect(out, r0, r1, c0, c1)
        return dt

    def _chunk_loop(self, impl, arr, origins, check):
        ch, cw = self.inner
        outs = []
        clk = Clock()
        for r, c in origins:
            out = self._read(impl, arr, r, r + ch, c, c + cw)
            if check:
                outs.append(out)
        dt = clk.stop()
        if check:
            for (r, c), out in zip(origins, outs):
                self._expect(out, r, r + ch, c, c + cw)
        return dt

    def w_chunk_cold(self, impl, variant, check):
        # Index not cached: tensorstore with a 0-byte cache pool re-reads the shard index on
        # every access; zarr-python always does.
        arr = self._open_read(impl, self.m["read_dirs"][variant], 0)
        origins = self.m["single_chunks"][1:]
        wall, cpu = self._chunk_loop(impl, arr, origins, check)
        return wall / len(origins), cpu / len(origins)

    def w_chunk_warm(self, impl, variant, check):
        # Index cached: read the shard's first chunk untimed, then time the others.
        arr = self._open_read(impl, self.m["read_dirs"][variant], 256 << 20)
        first = self.m["single_chunks"][0]
        ch, cw = self.inner
        self._read(impl, arr, first[0], first[0] + ch, first[1], first[1] + cw)
        origins = self.m["single_chunks"][1:]
        wall, cpu = self._chunk_loop(impl, arr, origins, check)
        return wall / len(origins), cpu / len(origins)

    def w_random1000(self, impl, variant, check):
        arr = self._open_read(impl, self.m["read_dirs"][variant], 256 << 20)
        return self._chunk_loop(impl, arr, self.m["random_chunks"], check)

    def w_region(self, impl, variant, check):
        arr = self._open_read(impl, self.m["read_dirs"][variant], 0)
        (r0, r1), (c0, c1) = self.m["region"]
        clk = Clock()
        out = self._read(impl, arr, r0, r1, c0, c1)
        dt = clk.stop()
        if check:
            self._expect(out, r0, r1, c0, c1)
        return dt


def info():
    import os

    try:
        import zarr

        config = {
            "async.concurrency": zarr.config.get("async.concurrency"),
            "threading.max_workers": zarr.config.get("threading.max_workers"),
        }
    except ImportError:  # the scaling mode needs tensorstore only
        config = {}
    return {"versions": _versions(), "cpus": os.cpu_count(), "zarr_config": config}


def serve():
    peers = None
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            req = json.loads(line)
            op = req.get("op")
            if op == "init":
                peers = Peers(req["manifest"])
                # Import the libraries now, outside any timing (the scaling mode needs
                # tensorstore only).
                import tensorstore  # noqa: F401

                if "scaling" not in req["manifest"]:
                    import zarr  # noqa: F401

                reply = {"ok": True}
            elif op == "info":
                reply = {"ok": True, "info": info()}
            elif op == "run":
                s, cpu = peers.run(
                    req["impl"], req["workload"], req.get("variant"), req.get("check", False), req.get("threads")
                )
                reply = {"ok": True, "seconds": s, "cpu_seconds": cpu}
            elif op == "quit":
                print(json.dumps({"ok": True}), flush=True)
                return
            else:
                reply = {"ok": False, "error": f"unknown op {op!r}"}
        except Exception as e:  # noqa: BLE001
            reply = {"ok": False, "error": f"{type(e).__name__}: {e}"}
        print(json.dumps(reply), flush=True)


def standalone(workdir, reps):
    import os
    import statistics

    with open(os.path.join(workdir, "manifest.json")) as f:
        manifest = json.load(f)
    peers = Peers(manifest)
    results = {"info": info(), "results": []}
    plan = []
    for variant in manifest["enc_dirs"]["tensorstore"]:
        plan.append(("encode", variant))
    for w in ("decode_array", "decode_shard", "random1000", "region"):
        plan.append((w, "zstd1-end"))
    for w in ("chunk_cold", "chunk_warm"):
        for v in manifest["read_dirs"]:
            plan.append((w, v))
    if "shard_write_dirs" in manifest:
        plan.append(("write_shard", "zstd1-end"))
    for workload, variant in plan:
        for impl in ("tensorstore", "zarr-python"):
            try:
                peers.run(impl, workload, variant, True)
                s = [peers.run(impl, workload, variant, False)[0] for _ in range(reps)]
                results["results"].append(
                    {"workload": workload, "variant": variant, "impl": impl,
                     "median_s": statistics.median(s), "min_s": min(s), "max_s": max(s),
                     "samples_s": s}
                )
            except Exception as e:  # noqa: BLE001
                results["results"].append(
                    {"workload": workload, "variant": variant, "impl": impl, "error": str(e)}
                )
    print(json.dumps(results, indent=1))


def main(argv):
    if "--serve" in argv:
        serve()
        return 0
    if "--workdir" in argv:
        workdir = argv[argv.index("--workdir") + 1]
        reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 5
        standalone(workdir, reps)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
