#!/usr/bin/env python3
"""Check `zarrshard export` against the fixtures made by write_fixtures.py.

Usage:  check_export.py OUT_DIR ZARRSHARD_BIN [--timeout SECONDS] [--filter SUBSTR]

For every entry of OUT_DIR/manifest.json this runs

    ZARRSHARD_BIN export OUT_DIR/<dir> <tmpfile>

(contract: write the whole array as raw bytes, C order, every element
little-endian, bool one byte, complex re then im, fill value where nothing is
stored; exit 0 on success) and compares <tmpfile> byte for byte with
OUT_DIR/<expected>. A non-zero exit, a signal, a timeout (default 60 s per
run, or $ZARRSHARD_EXPORT_TIMEOUT) or any difference is a failure, reported
on one line per case. The last line printed is exactly "N passed, M failed";
the exit status is 1 if M > 0 (2 for bad usage or a missing manifest).

Only the standard library is used, so any python3 >= 3.8 can run it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procs import describe_exit, run_with_timeout, squash  # noqa: E402





def first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # first differing offset lies in [lo, hi)
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


def check_one(entry, out_dir, binary, timeout, tmp_dir):
    """Return None on success, else a failure message."""
    array_dir = os.path.join(out_dir, entry["dir"])
    expected_path = os.path.join(out_dir, entry["expected"])
    with open(expected_path, "rb") as f:
        expected = f.read()
    fd, out_file = tempfile.mkstemp(prefix="export-", suffix=".bin", dir=tmp_dir)
    os.close(fd)
    os.unlink(out_file)  # the tool must create it
    try:
        try:
            returncode, err = run_with_timeout([binary, "export", array_dir, out_file], timeout)
        except subprocess.TimeoutExpired:
            return f"timed out after {timeout:g}s"
        except OSError as e:
            return f"cannot run {binary}: {e}"
        if returncode != 0:
            return f"{describe_exit(returncode)}; stderr: {squash(err) or '(empty)'}"
        if not os.path.exists(out_file):
            return "exit 0 but no output file written"
        with open(out_file, "rb") as f:
            got = f.read()
    finally:
        if os.path.exists(out_file):
            os.unlink(out_file)
    if got == expected:
        return None
    off = first_difference(got, expected)
    msg = f"output differs at byte {off}"
    if len(got) != len(expected):
        msg += f" (got {len(got)} bytes, expected {len(expected)})"
    else:
        msg += f" (got {got[off:off + 8].hex()}, expected {expected[off:off + 8].hex()})"
    return msg


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Compare `zarrshard export` with fixtures.")
    ap.add_argument("out_dir")
    ap.add_argument("binary")
    ap.add_argument("--timeout", type=float,
                    default=float(os.environ.get("ZARRSHARD_EXPORT_TIMEOUT", "60")))
    ap.add_argument("--filter", default="", help="only cases whose impl/case contains this")
    args = ap.parse_args(argv)

    manifest_path = os.path.join(args.out_dir, "manifest.json")
    try:
        with open(manifest_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {manifest_path}: {e}", file=sys.stderr)
        return 2
    binary = os.path.abspath(args.binary) if os.sep in args.binary else args.binary

    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="zarrshard-check-") as tmp_dir:
        for entry in manifest:
            name = f"{entry['impl']}/{entry['case']}"
            if args.filter and args.filter not in name:
                continue
            try:
                problem = check_one(entry, args.out_dir, binary, args.timeout, tmp_dir)
            except Exception as e:  # noqa: BLE001 - a broken fixture is a failure too
                problem = f"harness error: {type(e).__name__}: {e}"
            if problem is None:
                passed += 1
            else:
                failed += 1
                print(f"FAIL {name}: {problem}", flush=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
