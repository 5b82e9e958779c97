#!/usr/bin/env python3
"""Check that zarr-python, tensorstore and zarrs read what `zarrshard import` writes.

Usage:  check_import.py FIX_DIR ZARRSHARD_BIN [--filter S] [--timeout SECONDS]
                        [--jobs N] [--keep DIR]

Run it with the project venv (it needs zarr and tensorstore) after building the
zarrs peer (scripts/test.sh does both; see zarrs_peer.py):

    .venv/bin/python tests/interop/write_fixtures.py /tmp/fx
    .venv/bin/python tests/interop/check_import.py /tmp/fx target/release/zarrshard

FIX_DIR is the output of write_fixtures.py. For every entry of
FIX_DIR/manifest.json (only those whose "impl/case" contains S, with --filter)
and every writer in STRATEGIES this

  1. copies only the case's zarr.json into a fresh directory NEW;
  2. runs  ZARRSHARD_BIN import FIX_DIR/<expected> NEW --strategy ST --order ORD
     (contract: read raw bytes -- C order, every element little-endian, bool
     one byte, complex re then im -- and write every shard of the array in
     NEW/zarr.json, not storing inner chunks equal to the fill value and not
     writing shards with nothing stored; exit 0 on success);
  3. reads NEW with zarr-python, tensorstore and zarrs and compares the values,
     converted to the raw form above, byte for byte with FIX_DIR/<expected>
     (so NaN equals NaN exactly when the bits agree, and -0.0 != 0.0);
  4. checks that NEW holds exactly the same set of shard objects as the
     fixture directory (every peer writer skips all-fill shards);
  5. for arrays written by tensorstore or zarrs whose codecs are uncompressed
     (bytes, crc32c, transpose, and nested sharding of those, inside the
     sharding codec and after it; any index codecs and index location) and the
     buffered writer in C order: checks that every shard object of NEW is
     byte-identical to the peer's (both write inner chunks in C order with no
     gaps, at every nesting level; zarrs because zarrs_peer asks for C order).

Which peer reads what: the implementation that wrote a fixture read it back
when writing it, so it reads NEW. The others read NEW only if they read the
fixture itself with the same result: write_fixtures.py records that in the
manifest entry's "cross_read" ({peer: "same" | "DIFFERENT" | "error: ..."}).
An "error" (e.g. tensorstore refuses bytes->bytes codecs
after sharding_indexed; zarr-python 3.1.6 refuses some transposes before
sharding) or "DIFFERENT" skips that peer's read, with a printed "skip" line.
Without "cross_read" the read is attempted.

Every (entry, writer) pair is one combination: it passes if the import
succeeds and every applicable check holds. A failing combination prints one
line "FAIL impl/case [strategy/order]: what differed; ...". A non-zero exit,
a signal or a timeout (default 60 s, or $ZARRSHARD_IMPORT_TIMEOUT) of the
import is a failure. The last line printed is exactly "N passed, M failed";
the exit status is 1 if M > 0, 2 for bad usage / missing manifest / missing
Python packages.

Imports run --jobs at a time (default 4) in worker threads while the main
thread reads and checks the finished ones.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procs import describe_exit, run_with_timeout, squash  # noqa: E402

STRATEGIES = [("buffered", "c"), ("buffered", "morton"), ("streaming", "c"), ("update", "c")]
BYTE_IDENTITY_STRATEGY = ("buffered", "c")
PEERS = ("zarr-python", "tensorstore", "zarrs")
# Writers whose uncompressed shards zarrshard's buffered C-order writer must reproduce byte for
# byte: both write inner chunks in C order with no gaps, at every nesting level.
BYTE_IDENTICAL_PEERS = ("tensorstore", "zarrs")
UNCOMPRESSED_CODECS = {"bytes", "crc32c", "transpose"}


# ---------------------------------------------------------------------------
# subprocess handling (same approach as check_export.py)
# ---------------------------------------------------------------------------





def run_import(binary, expected_path, new_dir, strategy, order, timeout):
    """Return (problem or None, seconds)."""
    cmd = [binary, "import", expected_path, new_dir, "--strategy", strategy, "--order", order]
    t0 = time.monotonic()
    try:
        rc, err = run_with_timeout(cmd, timeout)
    except subprocess.TimeoutExpired:
        return f"import timed out after {timeout:g}s", time.monotonic() - t0
    except OSError as e:
        return f"cannot run {binary}: {e}", time.monotonic() - t0
    dt = time.monotonic() - t0
    if rc != 0:
        return f"import {describe_exit(rc)}; stderr: {squash(err) or '(empty)'}", dt
    return None, dt


# ---------------------------------------------------------------------------
# comparisons
# ---------------------------------------------------------------------------


def first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # the first differing offset lies in [lo, hi)
    while hi - lo > 4096:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    for i in range(lo, hi):
        if a[i] != b[i]:
            return i
    return hi


def to_le_bytes(a):
    """Raw form used by write_fixtures.py: C order, little-endian, bool 0/1."""
    import numpy as np
    a = np.ascontiguousarray(a)
    if a.dtype == np.bool_:
        return a.astype(np.uint8).tobytes(order="C")
    return a.astype(a.dtype.newbyteorder("<")).tobytes(order="C")


def compare_values(reader, got, entry, expected: bytes):
    """Return None if `got` (an ndarray) has the manifest's shape and dtype and
    the same raw bytes as `expected`, else a message."""
    import numpy as np
    want_shape = tuple(entry["shape"])
    want_dtype = np.dtype(entry["dtype"])
    if tuple(got.shape) != want_shape:
        return f"{reader} read shape {list(got.shape)}, expected {list(want_shape)}"
    if got.dtype.newbyteorder("=") != want_dtype.newbyteorder("="):
        return f"{reader} read dtype {got.dtype}, expected {want_dtype}"
    raw = to_le_bytes(got)
    if raw == expected:
        return None
    if len(raw) != len(expected):
        return f"{reader} read {len(raw)} raw bytes, expected {len(expected)}"
    off = first_difference(raw, expected)
    item = want_dtype.itemsize
    flat = off // item
    idx = tuple(int(i) for i in np.unravel_index(flat, want_shape)) if want_shape else ()
    le = want_dtype.newbyteorder("<") if want_dtype != np.bool_ else np.dtype(np.uint8)
    g = np.frombuffer(raw, dtype=le)
    e = np.frombuffer(expected, dtype=le)
    rows = (g.view(np.uint8).reshape(-1, item) != e.view(np.uint8).reshape(-1, item))
    ndiff = int(np.count_nonzero(rows.any(axis=1)))
    msg = (f"{reader} values differ at element {list(idx)} (byte {off}): got {g[flat]!r} "
           f"[{raw[flat * item:(flat + 1) * item].hex()}], expected {e[flat]!r} "
           f"[{expected[flat * item:(flat + 1) * item].hex()}]; {ndiff} of {g.size} elements differ")
    if want_dtype.kind in "fc" and np.array_equal(g, e, equal_nan=True):
        msg += " (only NaN bit patterns differ)"
    return msg


def read_with_peers(readers, plan, array_dir, entry, expected: bytes):
    """Read `array_dir` with every peer `plan` does not skip and compare with `expected`.
    Returns (reads made, problems)."""
    reads, problems = 0, []
    for reader, skip in plan.items():
        if skip:
            continue
        reads += 1
        try:
            got = readers[reader](array_dir)
        except Exception as e:  # noqa: BLE001
            msg = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            problems.append(f"{reader} cannot read it: {msg}")
            continue
        p = compare_values(reader, got, entry, expected)
        if p:
            problems.append(p)
    return reads, problems


def shard_files(array_dir: str) -> dict[str, str]:
    """Relative key -> path of every object under array_dir except its zarr.json."""
    out = {}
    for root, _dirs, files in os.walk(array_dir):
        for f in files:
            p = os.path.join(root, f)
            rel = os.path.relpath(p, array_dir).replace(os.sep, "/")
            if rel != "zarr.json":
                out[rel] = p
    return out


def preview(keys, n=4) -> str:
    keys = sorted(keys)
    s = ", ".join(keys[:n])
    return s + (f", ... ({len(keys)} in all)" if len(keys) > n else "")


def compare_shard_sets(new_files, fix_files):
    missing = set(fix_files) - set(new_files)
    extra = set(new_files) - set(fix_files)
    problems = []
    if missing:
        problems.append(f"shard objects missing: {preview(missing)}")
    if extra:
        problems.append(f"extra objects (all-fill shards must not be written): {preview(extra)}")
    return problems


def compare_shard_bytes(new_files, fix_files, peer):
    diffs = []
    for key in sorted(set(new_files) & set(fix_files)):
        with open(new_files[key], "rb") as f:
            a = f.read()
        with open(fix_files[key], "rb") as f:
            b = f.read()
        if a != b:
            off = first_difference(a, b)
            diffs.append(f"{key} at byte {off} (sizes {len(a)} vs {len(b)})")
    if not diffs:
        return None
    more = f", ... ({len(diffs)} of {len(set(new_files) & set(fix_files))} shards differ)" \
        if len(diffs) > 3 else ""
    return f"not byte-identical to {peer}: " + "; ".join(diffs[:3]) + more


# ---------------------------------------------------------------------------
# deciding what applies to an entry
# ---------------------------------------------------------------------------


def peer_readers():
    """The peers that read an array directory back whole: name -> (path -> numpy array)."""
    import numpy as np
    import tensorstore as ts
    import zarr

    import zarrs_peer

    def read_zarr_python(path):
        return np.asarray(zarr.open_array(store=path, mode="r")[...])

    def read_tensorstore(path):
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path}}
        return np.asarray(ts.open(spec, open=True, read=True).result().read().result())

    return {"zarr-python": read_zarr_python, "tensorstore": read_tensorstore,
            "zarrs": zarrs_peer.read}


def peer_plan(entry) -> dict[str, str | None]:
    """reader -> None (read it) or a skip reason."""
    plan = {}
    for reader in PEERS:
        if reader == entry["impl"]:
            plan[reader] = None  # it wrote the fixture and read it back
            continue
        verdict = entry.get("cross_read", {}).get(reader)
        if verdict is None:
            plan[reader] = None  # nothing known: try it
            continue
        cr = f"{reader}: {verdict}"
        if verdict == "same":
            plan[reader] = None
        elif verdict.startswith("error"):
            detail = verdict[len("error"):].lstrip(": ")
            plan[reader] = (f"{reader} cannot read the {entry['impl']} fixture of this "
                            f"configuration [{detail[:160]}]")
        else:
            plan[reader] = f"{reader} reads the {entry['impl']} fixture itself differently ({cr})"
    return plan


def inner_uncompressed(codecs) -> bool:
    for cd in codecs:
        name = cd["name"]
        if name == "sharding_indexed":
            if not inner_uncompressed(cd["configuration"].get("codecs", [])):
                return False
        elif name not in UNCOMPRESSED_CODECS:
            return False
    return True


def byte_identity_applies(entry, meta) -> bool:
    """tensorstore or zarrs fixture whose codecs (the sharding codec's inner ones, and any
    after it: zarrs writes those, tensorstore refuses them) are all uncompressed."""
    if entry["impl"] not in BYTE_IDENTICAL_PEERS:
        return False
    codecs = meta.get("codecs", [])
    if sum(cd["name"] == "sharding_indexed" for cd in codecs) != 1:
        return False
    return inner_uncompressed(codecs)


# ---------------------------------------------------------------------------
# main
# ---------------------------------------------------------------------------


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Check that zarr-python and tensorstore read "
                                             "what `zarrshard import` writes.")
    ap.add_argument("fix_dir")
    ap.add_argument("binary")
    ap.add_argument("--filter", default="", help="only entries whose impl/case contains this")
    ap.add_argument("--timeout", type=float,
                    default=float(os.environ.get("ZARRSHARD_IMPORT_TIMEOUT", "60")),
                    help="seconds per import run (default 60)")
    ap.add_argument("--jobs", type=int, default=4, help="imports run in parallel (default 4)")
    ap.add_argument("--keep", metavar="DIR",
                    help="write the imported arrays under DIR and keep them (default: a "
                         "temporary directory, each array removed once checked)")
    args = ap.parse_args(argv)

    manifest_path = os.path.join(args.fix_dir, "manifest.json")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {manifest_path}: {e}", file=sys.stderr)
        return 2
    try:
        warnings.simplefilter("ignore")  # zarr's "partial reads disabled" etc.
        import numpy as np  # noqa: F401
        import tensorstore as ts  # noqa: F401
        import zarr  # noqa: F401
    except ImportError as e:
        print(f"{e}: run this with the project venv (scripts/venv.sh, .venv/bin/python)",
              file=sys.stderr)
        return 2

    fix_dir = os.path.abspath(args.fix_dir)
    binary = os.path.abspath(args.binary) if os.sep in args.binary else args.binary
    readers = peer_readers()

    entries = [e for e in manifest if args.filter in f"{e['impl']}/{e['case']}"]

    t_start = time.monotonic()
    if args.keep:
        work = os.path.abspath(args.keep)
        os.makedirs(work, exist_ok=True)
        cleanup = None
    else:
        cleanup = tempfile.TemporaryDirectory(prefix="zarrshard-import-")
        work = cleanup.name

    # jobs in manifest order; each prepared and run in a worker thread
    jobs = []
    for entry in entries:
        for strategy, order in STRATEGIES:
            jobs.append((entry, strategy, order))

    def prepare_and_import(entry, strategy, order):
        new_dir = os.path.join(work, entry["impl"], entry["case"], f"{strategy}-{order}")
        shutil.rmtree(new_dir, ignore_errors=True)
        os.makedirs(new_dir)
        shutil.copyfile(os.path.join(fix_dir, entry["dir"], "zarr.json"),
                        os.path.join(new_dir, "zarr.json"))
        problem, dt = run_import(binary, os.path.join(fix_dir, entry["expected"]), new_dir,
                                 strategy, order, args.timeout)
        return new_dir, problem, dt

    passed = failed = skipped_reads = reads = identity_checked = 0
    import_seconds = check_seconds = 0.0
    expected_cache: dict[str, bytes] = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(prepare_and_import, *job) for job in jobs]
        for (entry, strategy, order), fut in zip(jobs, futures):
            label = f"{entry['impl']}/{entry['case']} [{strategy}/{order}]"
            problems: list[str] = []
            new_dir = None
            plan = peer_plan(entry)
            for reader, skip in plan.items():
                if skip:
                    skipped_reads += 1
                    print(f"skip {label}: {reader} read: {skip}", flush=True)
            try:
                new_dir, import_problem, dt = fut.result()
                import_seconds += dt
                t0 = time.monotonic()
                if import_problem:
                    problems.append(import_problem)
                else:
                    key = entry["expected"]
                    if key not in expected_cache:
                        expected_cache.clear()
                        with open(os.path.join(fix_dir, key), "rb") as f:
                            expected_cache[key] = f.read()
                    expected = expected_cache[key]
                    fixture = os.path.join(fix_dir, entry["dir"])
                    with open(os.path.join(fixture, "zarr.json")) as f:
                        meta = json.load(f)

                    # 3. values, as read by each peer that can read this configuration
                    n, p = read_with_peers(readers, plan, new_dir, entry, expected)
                    reads += n
                    problems += p

                    # 4. the same set of shard objects as the fixture
                    new_files = shard_files(new_dir)
                    fix_files = shard_files(fixture)
                    problems += compare_shard_sets(new_files, fix_files)

                    # 5. byte identity with tensorstore's and zarrs' shards
                    if (strategy, order) == BYTE_IDENTITY_STRATEGY and \
                            byte_identity_applies(entry, meta):
                        identity_checked += 1
                        p = compare_shard_bytes(new_files, fix_files, entry["impl"])
                        if p:
                            problems.append(p)
                check_seconds += time.monotonic() - t0
            except Exception as e:  # noqa: BLE001 - a harness error is a failure too
                problems.append(f"harness error: {type(e).__name__}: {e}")
            finally:
                if cleanup is not None and new_dir is not None:
                    shutil.rmtree(new_dir, ignore_errors=True)
            if problems:
                failed += 1
                print(f"FAIL {label}: " + "; ".join(problems), flush=True)
            else:
                passed += 1

    if cleanup is not None:
        cleanup.cleanup()
    wall = time.monotonic() - t_start
    print(f"{len(entries)} arrays x {len(STRATEGIES)} writers = {len(jobs)} combinations; "
          f"{reads} peer reads, {skipped_reads} skipped; byte identity checked for "
          f"{identity_checked}; import {import_seconds:.1f}s (summed), reads+checks "
          f"{check_seconds:.1f}s, wall {wall:.1f}s", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
