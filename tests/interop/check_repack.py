#!/usr/bin/env python3
"""Check that zarr-python, tensorstore and zarrs read what `zarrshard repack` writes.

Usage:  check_repack.py FIX_DIR ZARRSHARD_BIN [--filter S] [--timeout SECONDS]

Run it with the project venv (it needs zarr and tensorstore) after building the zarrs peer
(scripts/test.sh does both; see zarrs_peer.py):

    .venv/bin/python tests/interop/write_fixtures.py /tmp/fx
    .venv/bin/python tests/interop/check_repack.py /tmp/fx target/release/zarrshard

For every entry of FIX_DIR/manifest.json (an array zarr-python, tensorstore or zarrs wrote, and its
values as raw bytes) and each VARIANT below this

  1. runs  ZARRSHARD_BIN repack FIX_DIR/<dir> NEW <variant flags>;
  2. checks the counts it prints: "reshard" keeps inner chunk shape and codecs, so every
     chunk is copied (none re-encoded) unless an array->array codec precedes sharding;
     "recodec" changes the inner codecs, so none is copied;
  3. reads NEW with zarr-python, tensorstore and zarrs (the peers that read the fixture the
     same way, as in check_import.py) and compares the values byte for byte with
     FIX_DIR/<expected>;
  4. runs  ZARRSHARD_BIN export NEW  and compares its bytes with FIX_DIR/<expected>.

Variants:
  reshard   --shard-shape: each dimension halved where the half is still a multiple of the
            inner chunk, doubled otherwise (doubled everywhere with a transpose before
            sharding, whose inner chunk shape is in transposed order)
  recodec   --inner-codecs [bytes little, zstd level 1] (gzip level 1 instead if the
            fixture's inner codecs use zstd) --index-location (flipped)
            --order morton

Also, as one more combination per entry (without a transpose before sharding, which `get`
refuses): `ZARRSHARD_BIN get FIX_DIR/<dir> I,J,..` for the first, middle and last inner
chunk of the array's inner-chunk grid must equal that block of FIX_DIR/<expected> (the part
inside the array; the output always has the whole inner chunk shape).

Unsharded arrays: for each case in UNSHARDED, zarr-python writes an unsharded array into a
temporary directory; `repack --shard-shape` (chunks become inner chunks, all copied) and
`repack --shard-shape --inner-chunk-shape` (all re-encoded) must give arrays that
zarr-python, tensorstore and zarrs read equal to the written values (two combinations per
case).

Each (entry, variant) is one combination. A failing one prints "FAIL impl/case [variant]:
what". The last line printed is exactly "N passed, M failed"; the exit status is 1 if M > 0,
2 for bad usage or missing packages.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_import import peer_plan, peer_readers, read_with_peers, to_le_bytes  # noqa: E402

VARIANTS = ("reshard", "recodec")
BYTES = {"name": "bytes", "configuration": {"endian": "little"}}
ZSTD_INNER = [BYTES, {"name": "zstd", "configuration": {"level": 1, "checksum": False}}]
GZIP_INNER = [BYTES, {"name": "gzip", "configuration": {"level": 1}}]
COUNTS = re.compile(r"^shards written: (\d+), bytes: (\d+), chunks copied: (\d+), "
                    r"chunks re-encoded: (\d+)$")


def sharding_of(meta):
    found = [c for c in meta["codecs"] if c["name"] == "sharding_indexed"]
    return found[0]["configuration"] if found else None


def variant_args(variant, meta):
    """(flags, expect) where expect is 'copy', 'reencode' or None (either)."""
    cfg = sharding_of(meta)
    shard = meta["chunk_grid"]["configuration"]["chunk_shape"]
    transposed = any(c["name"] == "transpose" for c in meta["codecs"])
    if variant == "reshard":
        inner = cfg["chunk_shape"]
        if transposed:
            new = [2 * s for s in shard]
        else:
            new = [s // 2 if s % (2 * c) == 0 else 2 * s for s, c in zip(shard, inner)]
        flags = ["--shard-shape", ",".join(map(str, new))] if new else []
        return flags, (None if transposed else "copy")
    location = "start" if cfg.get("index_location", "end") == "end" else "end"
    # Always a different inner codec chain than the fixture's.
    uses_zstd = any(c["name"] == "zstd" for c in cfg.get("codecs", []))
    return (["--inner-codecs", json.dumps(GZIP_INNER if uses_zstd else ZSTD_INNER), "--index-location", location,
             "--order", "morton"], "reencode")


# (name, shape, chunks, dtype, compressor, new shard shape, new inner chunk shape)
UNSHARDED = [
    ("u2_zstd_2d", (50, 70), (8, 16), "uint16", "zstd", "32,32", "16,16"),
    ("f8_gzip_3d", (9, 10, 11), (3, 5, 4), "float64", "gzip", "6,10,8", "3,5,8"),
    ("i1_none_1d", (100,), (7,), "int8", None, "21", "3"),
]


def check_unsharded(binary, work, readers, timeout):
    """[(label, problems)] for the UNSHARDED cases."""
    import numpy as np
    import zarr
    from zarr.codecs import GzipCodec, ZstdCodec
    results = []
    for name, shape, chunks, dtype, comp, shard, inner in UNSHARDED:
        src = os.path.join(work, f"unsharded-{name}")
        rng = np.random.default_rng(zlib_seed(name))
        data = (rng.standard_normal(shape) * 50).astype(dtype)
        data[tuple(slice(0, c) for c in chunks)] = 0  # one chunk of fill value, not stored
        compressors = {"zstd": ZstdCodec(level=1), "gzip": GzipCodec(level=1), None: None}[comp]
        z = zarr.create_array(store=src, shape=shape, chunks=chunks, dtype=dtype,
                              fill_value=0, compressors=compressors)
        z[...] = data
        n_chunks = sum(len(files) for _, _, files in os.walk(os.path.join(src, "c")))
        for variant, flags, expect in (
            ("copy", ["--shard-shape", shard], "copy"),
            ("reencode", ["--shard-shape", shard, "--inner-chunk-shape", inner], "reencode"),
        ):
            problems = []
            new = os.path.join(work, f"unsharded-{name}-{variant}")
            rc, out, err = run([binary, "repack", src, new, *flags], timeout)
            m = COUNTS.match(out.strip())
            if rc != 0 or not m:
                problems.append(f"repack exit {rc}: {err.strip()[:300]} {out.strip()[:100]}")
            else:
                copied, reencoded = int(m.group(3)), int(m.group(4))
                if expect == "copy" and (copied, reencoded) != (n_chunks, 0):
                    problems.append(f"copied {copied}, re-encoded {reencoded}; expected "
                                    f"{n_chunks} copies (the stored chunks)")
                if expect == "reencode" and copied:
                    problems.append(f"{copied} chunks copied, expected re-encoding")
                entry = {"shape": list(shape), "dtype": np.dtype(dtype).name}
                _, p = read_with_peers(readers, dict.fromkeys(readers), new, entry,
                                       to_le_bytes(data))
                problems += p
            results.append((f"zarr-python/unsharded-{name} [{variant}]", problems))
    return results


def zlib_seed(name):
    import zlib
    return zlib.crc32(name.encode())


def check_get(binary, src, meta, entry, expected, timeout):
    """Problems of `get` on three inner chunks, compared with the expected values."""
    import numpy as np
    if any(c["name"] == "transpose" for c in meta["codecs"]):
        return None  # not applicable
    shape = entry["shape"]
    inner = sharding_of(meta)["chunk_shape"]
    dtype = np.dtype(entry["dtype"])
    le = dtype if dtype == np.bool_ else dtype.newbyteorder("<")
    want = np.frombuffer(expected, dtype=le).reshape(shape)
    grid = [-(-s // c) for s, c in zip(shape, inner)]
    if 0 in shape:
        return None
    problems = []
    picks = {tuple(0 for _ in grid), tuple(n // 2 for n in grid), tuple(n - 1 for n in grid)}
    for g in sorted(picks):
        rc, out, err = run([binary, "get", src, ",".join(map(str, g))], timeout, text=False)
        if rc != 0:
            problems.append(f"get {list(g)} exit {rc}: {err.strip()[:200]}")
            continue
        n = int(np.prod(inner)) * dtype.itemsize
        if len(out) != n:
            problems.append(f"get {list(g)} wrote {len(out)} bytes, expected {n}")
            continue
        block = np.frombuffer(out, dtype=le).reshape(inner)
        region = tuple(slice(0, min(c, s - i * c)) for i, c, s in zip(g, inner, shape))
        source = tuple(slice(i * c, min((i + 1) * c, s)) for i, c, s in zip(g, inner, shape))
        if np.ascontiguousarray(block[region]).tobytes() != \
                np.ascontiguousarray(want[source]).tobytes():
            problems.append(f"get {list(g)} differs from the expected values")
    return problems


def run(cmd, timeout, text=True):
    """(exit code, stdout, stderr); stdout as bytes unless text."""
    p = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    out = p.stdout.decode(errors="replace") if text else p.stdout
    return p.returncode, out, p.stderr.decode(errors="replace")


def check_variant(binary, work, src, variant, meta, entry, expected, readers, timeout):
    """Repack `src` with one variant into WORK/new; the peers and `zarrshard export` must read
    the source's values back. Returns (problems, peer reads made)."""
    problems, reads = [], 0
    new = os.path.join(work, "new")
    shutil.rmtree(new, ignore_errors=True)
    flags, expect = variant_args(variant, meta)
    rc, out, err = run([binary, "repack", src, new, *flags], timeout)
    m = COUNTS.match(out.strip())
    if rc != 0:
        return [f"repack exit {rc}: {err.strip()[:300]}"], reads
    if not m:
        return [f"repack printed {out.strip()[:200]!r}"], reads
    copied, reencoded = int(m.group(3)), int(m.group(4))
    if expect == "copy" and reencoded:
        problems.append(f"{reencoded} chunks re-encoded, expected copies")
    if expect == "reencode" and copied:
        problems.append(f"{copied} chunks copied, expected re-encoding")
    reads, p = read_with_peers(readers, peer_plan(entry), new, entry, expected)
    problems += p
    raw = os.path.join(work, "new.raw")
    rc, _, err = run([binary, "export", new, raw], timeout)
    if rc != 0:
        problems.append(f"export exit {rc}: {err.strip()[:300]}")
    else:
        with open(raw, "rb") as f:
            if f.read() != expected:
                problems.append("zarrshard export differs from the expected bytes")
    return problems, reads


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fix_dir")
    ap.add_argument("binary")
    ap.add_argument("--filter", default="")
    ap.add_argument("--timeout", type=float, default=60.0)
    args = ap.parse_args(argv)
    try:
        with open(os.path.join(args.fix_dir, "manifest.json")) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read the manifest: {e}", file=sys.stderr)
        return 2
    try:
        warnings.simplefilter("ignore")
        import numpy as np  # noqa: F401
        import tensorstore as ts  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as e:
        print(f"{e}: run this with the project venv (scripts/venv.sh)", file=sys.stderr)
        return 2

    readers = peer_readers()
    fix_dir = os.path.abspath(args.fix_dir)
    binary = os.path.abspath(args.binary)
    passed = failed = reads = gets = 0

    def record(label, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            print(f"FAIL {label}: " + "; ".join(problems), flush=True)
        else:
            passed += 1

    with tempfile.TemporaryDirectory(prefix="zarrshard-repack-") as work:
        for entry in manifest:
            label_base = f"{entry['impl']}/{entry['case']}"
            if args.filter not in label_base:
                continue
            src = os.path.join(fix_dir, entry["dir"])
            with open(os.path.join(src, "zarr.json")) as f:
                meta = json.load(f)
            if sharding_of(meta) is None:
                continue
            with open(os.path.join(fix_dir, entry["expected"]), "rb") as f:
                expected = f.read()
            try:
                problems = check_get(binary, src, meta, entry, expected, args.timeout)
            except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                problems = [f"harness error: {type(e).__name__}: {e}"]
            if problems is not None:
                gets += 1
                record(f"{label_base} [get]", problems)
            for variant in VARIANTS:
                try:
                    problems, n = check_variant(binary, work, src, variant, meta, entry,
                                                expected, readers, args.timeout)
                    reads += n
                except subprocess.TimeoutExpired:
                    problems = [f"timed out after {args.timeout:g}s"]
                except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                    problems = [f"harness error: {type(e).__name__}: {e}"]
                record(f"{label_base} [{variant}]", problems)
        for label, problems in check_unsharded(binary, work, readers, args.timeout):
            reads += 2
            record(label, problems)
    print(f"repack: {passed + failed} combinations ({gets} of them get), {reads} peer reads",
          flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
