#!/usr/bin/env python3
"""Run examples-c/http_read against nginx on loopback serving interop fixtures.

Usage:  check_http_read.py FIXTURES_DIR HTTP_READ_BIN

For a few zarr-python- and tensorstore-written arrays (index at the start and at the end,
with and without crc32c, compressed and not) it reads two stored inner chunks of shard 0
and checks: the example prints 2 requests for each cold read and 1 for each warm read; the
nginx access log shows exactly those range requests (206) on the shard object and nothing
else; the decoded values equal the writer's. Last line: "N passed, M failed".
"""
from __future__ import annotations

import json
import os
import re
import time
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx import Nginx  # noqa: E402

DTYPES = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "<u1",
          "uint16": "<u2", "uint32": "<u4", "uint64": "<u8"}


def candidates(fix, manifest):
    """Arrays whose whole codec list is one sharding_indexed with plain inner codecs, an
    integer dtype and fill 0; one per index configuration and writer."""
    seen, out = set(), []
    for e in manifest:
        with open(os.path.join(fix, e["dir"], "zarr.json")) as f:
            meta = json.load(f)
        codecs = meta["codecs"]
        if (len(codecs) != 1 or codecs[0]["name"] != "sharding_indexed"
                or meta["data_type"] not in DTYPES or meta["fill_value"] != 0
                or len(meta["shape"]) != 2):
            continue
        cfg = codecs[0]["configuration"]
        if any(c["name"] in ("sharding_indexed", "transpose") for c in cfg["codecs"]):
            continue
        kind = (e["impl"], cfg.get("index_location", "end"),
                any(c["name"] == "crc32c" for c in cfg["index_codecs"]),
                len(cfg["codecs"]) > 1)
        if kind not in seen:
            seen.add(kind)
            out.append((e, meta))
    return out


def main(argv):
    fix, binary = os.path.abspath(argv[0]), os.path.abspath(argv[1])
    with open(os.path.join(fix, "manifest.json")) as f:
        manifest = json.load(f)
    passed = failed = 0
    with Nginx(fix) as srv, tempfile.TemporaryDirectory() as tmp:
        for e, meta in candidates(fix, manifest):
            shape = meta["shape"]
            shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
            inner = meta["codecs"][0]["configuration"]["chunk_shape"]
            data = np.fromfile(os.path.join(fix, e["expected"]),
                               dtype=DTYPES[meta["data_type"]]).reshape(shape)
            # Two inner chunks of shard (0, 0) that hold data (so they are stored).
            chunks = []
            for a in range(shard[0] // inner[0]):
                for b in range(shard[1] // inner[1]):
                    region = data[a * inner[0]:(a + 1) * inner[0], b * inner[1]:(b + 1) * inner[1]]
                    if region.size and region.any():
                        chunks.append((a, b))
            chunks = chunks[:2]
            if not chunks:
                continue
            key = "c/0/0" if meta["chunk_key_encoding"]["name"] == "default" else "0.0"
            sep = meta["chunk_key_encoding"].get("configuration", {}).get("separator")
            if sep:
                key = key.replace("/", sep) if key.startswith("c") else key.replace(".", sep)
            before = len(srv.access_lines())
            out = os.path.join(tmp, "chunks.bin")
            p = subprocess.run([binary, f"{srv.url}/{e['dir']}", "0,0", out]
                               + [f"{a},{b}" for a, b in chunks],
                               capture_output=True, text=True, timeout=60)
            problems = []
            if p.returncode != 0:
                problems.append(f"exit {p.returncode}: {p.stderr.strip()}")
            else:
                lines = p.stdout.splitlines()
                counts = [int(m.group(1)) for m in
                          (re.search(r": (?:cold|warm) read: (\d+) requests", l) for l in lines) if m]
                if counts != [2, 1] * len(chunks):
                    problems.append(f"request counts {counts}, expected {[2, 1] * len(chunks)}")
                # nginx saw the same: zarr.json once, then only range requests on the shard.
                # nginx logs a request after sending its response, so the last lines may land
                # a moment after the client is done: wait (at most 5 s) for all of them.
                want = 1 + 3 * len(chunks)
                deadline = time.monotonic() + 5
                while len(srv.access_lines()) - before < want and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(0.05)  # and for any line too many
                log = srv.access_lines()[before:]
                shard_hits = [l for l in log if l.startswith(f"GET /{e['dir']}/{key} ")]
                if len(shard_hits) != 3 * len(chunks) or not all(" 206 " in l for l in shard_hits):
                    problems.append(f"nginx log for {key}: {shard_hits}")
                if len(log) != len(shard_hits) + 1:
                    problems.append(f"unexpected requests: {log}")
                got = np.fromfile(out, dtype=data.dtype).reshape(len(chunks), *inner)
                for k, (a, b) in enumerate(chunks):
                    want = data[a * inner[0]:(a + 1) * inner[0], b * inner[1]:(b + 1) * inner[1]]
                    if not np.array_equal(got[k][:want.shape[0], :want.shape[1]], want):
                        problems.append(f"chunk {a},{b}: values differ")
            name = f"{e['dir']} ({len(chunks)} chunks)"
            if problems:
                failed += 1
                print(f"FAIL {name}: {'; '.join(problems)}")
            else:
                passed += 1
                print(f"ok   {name}: {' | '.join(p.stdout.splitlines())}")
    if passed == 0:
        failed += 1
        print("FAIL no fixture was suitable")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
