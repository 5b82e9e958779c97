#!/usr/bin/env python3
"""Reference sets at their edges, read back with fsspec's ReferenceFileSystem + zarr-python:

* a Parquet set whose encoded fill chunk starts with b"base64:" (fsspec base64-decodes such
  inline values, so zarrshard writes them base64-encoded);
* a Parquet set of an empty array whose fill chunks are large (several pages per file);
* JSON v1 sets of v3-draft arrays whose shard keys contain `{`, `}` or `{{`
  (fsspec's simple templates run str.format over each reference);
* sets whose URL prefix holds `{{`, `}}`, braces, quotes, spaces or non-ASCII characters (a
  template value with `{{` is rendered by jinja, so such a prefix is written without one).

Usage:  check_edge_refs.py ZARRSHARD_BIN     (prints one line per case, exits 1 on a failure)
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import warnings

warnings.simplefilter("ignore")
import numpy as np  # noqa: E402
import zarr  # noqa: E402
from fsspec.implementations.reference import ReferenceFileSystem  # noqa: E402
from zarr.storage import FsspecStore  # noqa: E402

BIN = sys.argv[1]
failures = 0
passes = 0


def run(*args):
    subprocess.run([BIN, *args], check=True)


def read(path, name, zarr_format):
    fs = ReferenceFileSystem(path, asynchronous=True, remote_protocol="file",
                             remote_options={"asynchronous": True})
    store = FsspecStore(fs, read_only=True, path=name)
    return zarr.open_array(store=store, mode="r", zarr_format=zarr_format)[...]


def check(what, got, want):
    global failures, passes
    ok = np.array_equal(np.asarray(got), np.asarray(want))
    failures += not ok
    passes += ok
    print(("ok    " if ok else "FAIL  ") + what + ("" if ok else f": {got!r} != {want!r}"))


def v3_array(path, shape, dtype, fill, inner, codecs):
    os.makedirs(path)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dtype,
                   "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": shape}},
                   "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
                   "fill_value": fill, "codecs": [{"name": "sharding_indexed", "configuration": {
                       "chunk_shape": inner, "codecs": codecs,
                       "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
                       "index_location": "end"}}]}, f)


with tempfile.TemporaryDirectory() as t:
    le = [{"name": "bytes", "configuration": {"endian": "little"}}]
    # 1. A fill value whose little-endian bytes spell b"base64:A".
    fill = int.from_bytes(b"base64:A", "little")
    a = os.path.join(t, "b64")
    v3_array(a, [4], "uint64", fill, [2], le)
    raw = os.path.join(t, "b64.raw")
    with open(raw, "wb") as f:
        f.write(struct.pack("<4Q", 1, 2, fill, fill))
    run("import", raw, a)
    run("refs", a, "--format", "parquet", "--url-prefix", "file://" + a, "-o", a + ".pq",
        "--name", "b", "--record-size", "3")
    check("parquet, fill chunk starting with base64:", read(a + ".pq", "b", 2),
          [1, 2, fill, fill])

    # 2. Nothing stored, 40 fill chunks of 64 KiB, 7 rows per file.
    a = os.path.join(t, "empty")
    v3_array(a, [40, 65536], "uint8", 9, [1, 65536], [{"name": "bytes"}])
    run("refs", a, "--format", "parquet", "--url-prefix", "file://" + a, "-o", a + ".pq",
        "--name", "e", "--record-size", "7")
    check("parquet, large fill chunks", read(a + ".pq", "e", 2), np.full((40, 65536), 9, "u1"))

    # 3. v3-draft arrays whose shard keys hold braces, JSON v1 (and v0 for comparison).
    for path in ["g{x}/a", "g}/a", "g{{x}}/a", "{u}/a"]:
        root = os.path.join(t, "h" + str(abs(hash(path))))
        meta = os.path.join(root, "meta", "root", path + ".array.json")
        os.makedirs(os.path.dirname(meta))
        with open(os.path.join(root, "zarr.json"), "w") as f:
            json.dump({"zarr_format": "https://purl.org/zarr/spec/protocol/core/3.0"}, f)
        with open(meta, "w") as f:
            json.dump({"shape": [4], "data_type": "<u2", "chunk_grid": {
                "type": "regular", "chunk_shape": [2], "separator": "/"},
                "chunk_memory_layout": "C", "compressor": None, "fill_value": 7,
                "extensions": [], "attributes": {}, "storage_transformers": [{
                    "extension": "https://purl.org/zarr/spec/storage_transformers/sharding/1.0",
                    "type": "indexed", "configuration": {"chunks_per_shard": [2]}}]}, f)
        raw = os.path.join(t, "d.raw")
        with open(raw, "wb") as f:
            f.write(struct.pack("<4H", 1, 2, 3, 4))
        run("import", raw, meta)
        for fmt in ["json-v0", "json-v1"]:
            out = os.path.join(t, "set.json")
            run("refs", meta, "--format", fmt, "--url-prefix", "file://" + root, "-o", out)
            check(f"{fmt}, shard key data/root/{path}/c0", read(out, "", 3), [1, 2, 3, 4])

    # 4. URL prefixes holding `{{`, `}}`, single braces, quotes, spaces and non-ASCII: the
    #    array's own folder is named so, and every format must read back through it.
    le = [{"name": "bytes", "configuration": {"endian": "little"}}]
    raw = os.path.join(t, "p.raw")
    with open(raw, "wb") as f:
        f.write(struct.pack("<4H", 1, 2, 3, 4))
    for k, folder in enumerate(["p{{x}}", "p}}y", "p{u}", "p\"q\" 'r'", "p with  spaces",
                                "p ünï{{cödé}} \u6f22"]):
        a = os.path.join(t, f"prefix{k}", folder)
        v3_array(a, [4], "uint16", 7, [2], le)
        run("import", raw, a)
        for fmt in ["json-v0", "json-v1"]:
            out = os.path.join(t, f"prefix{k}.{fmt}.json")
            run("refs", a, "--format", fmt, "--url-prefix", "file://" + a, "-o", out)
            check(f"{fmt}, URL prefix {folder!r}", read(out, "", 3), [1, 2, 3, 4])
        out = os.path.join(t, f"prefix{k}.pq")
        run("refs", a, "--format", "parquet", "--url-prefix", "file://" + a, "-o", out,
            "--name", "p")
        check(f"parquet, URL prefix {folder!r}", read(out, "p", 2), [1, 2, 3, 4])

print(f"{passes} passed, {failures} failed")
sys.exit(1 if failures else 0)
