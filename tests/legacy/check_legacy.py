#!/usr/bin/env python3
"""Interop check of zarrshard against the independent legacy-format implementation.

Usage:  check_legacy.py FIX_DIR ZARRSHARD_BIN [--timeout SECONDS] [--filter SUBSTR]

FIX_DIR is made by `legacy_formats.py write FIX_DIR`.  Run with a python that
has numpy and numcodecs (the repo's .venv).  For every entry of
FIX_DIR/manifest.json (paths in it are relative to FIX_DIR):

  export  ZARRSHARD_BIN export ARRAY OUT.raw; OUT.raw must equal EXPECTED byte
          for byte (zarrshard reads another writer's files).
  import  copy only the metadata (.zarray; or the root zarr.json plus the
          .array.json at the same place below meta/root/) into a fresh
          directory, run ZARRSHARD_BIN import EXPECTED NEWARRAY (NEWARRAY = the
          new array directory, or the new .array.json), then decode NEWARRAY
          with legacy_formats' reader (index validated; a stored chunk outside
          the chunk grid is an error) and compare with EXPECTED.  Also: no
          shard file may exist for a shard whose in-bounds part is entirely the
          fill value, and no file other than the metadata and shard files may
          exist in the new directory.
  repack  (entries with attributes) ZARRSHARD_BIN repack ARRAY NEW.zarr, then
          zarr-python opens NEW.zarr: its attributes must equal the entry's (the
          v2 .zattrs or the draft's attributes) and its data EXPECTED.
  list    (v3draft only) legacy_formats' list_prefix listing of the imported
          array must equal the keys of the chunks holding at least one non-fill
          element (i.e. the import leaves all-fill chunks empty).  Counted as
          failed ("not run") when the import check could not produce an array.

A non-zero exit, a signal or a timeout (default 20 s per run, or
$ZARRSHARD_LEGACY_TIMEOUT) is a failure.  One line per failure; the last line is
exactly "N passed, M failed"; exit 1 if M > 0 (2 for bad usage).
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import legacy_formats as lf  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procs import run  # noqa: E402





def first_difference(got: bytes, want: bytes, itemsize: int) -> str:
    if len(got) != len(want):
        return f"{len(got)} bytes, expected {len(want)}"
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            e = i // itemsize
            return (f"bytes differ first at offset {i} (element {e}): "
                    f"got {got[e * itemsize:(e + 1) * itemsize].hex()}, "
                    f"expected {want[e * itemsize:(e + 1) * itemsize].hex()}")
    return "identical"


def copy_metadata(entry, fix_dir, dest_root):
    """Fresh directory with only the metadata; returns NEWARRAY."""
    src = os.path.join(fix_dir, entry["array"])
    if entry["format"] == "v2proto":
        os.makedirs(dest_root)
        shutil.copyfile(os.path.join(src, ".zarray"), os.path.join(dest_root, ".zarray"))
        return dest_root
    root, _path = lf.find_v3_root(src)
    rel = os.path.relpath(os.path.abspath(src), root)
    new_array = os.path.join(dest_root, rel)
    os.makedirs(os.path.dirname(new_array))
    shutil.copyfile(os.path.join(root, "zarr.json"), os.path.join(dest_root, "zarr.json"))
    shutil.copyfile(src, new_array)
    return new_array


def check_export(entry, fix_dir, zbin, tmp, timeout, expected):
    out = os.path.join(tmp, "export.raw")
    why = run([zbin, "export", os.path.join(fix_dir, entry["array"]), out], timeout)
    if why:
        return [why]
    if not os.path.isfile(out):
        return ["exit status 0 but no output file"]
    with open(out, "rb") as f:
        got = f.read()
    if got != expected:
        itemsize = lf.parse_dtype(entry["dtype"]).itemsize if "dtype" in entry else 1
        return [first_difference(got, expected, itemsize)]
    return []


def check_import(entry, fix_dir, zbin, tmp, timeout, exp_path, expected):
    """-> (problems, new_array or None if there is nothing to list)."""
    dest = os.path.join(tmp, "imported")
    new_array = copy_metadata(entry, fix_dir, dest)
    why = run([zbin, "import", exp_path, new_array], timeout)
    if why:
        return [why], None
    problems = []
    try:
        meta, arr = lf.read_array(new_array, strict_outside=True)
    except Exception as e:  # noqa: BLE001 -- any decoder failure is a finding
        return [f"written array does not decode: {type(e).__name__}: {e}"], None
    got = lf.to_raw(arr)
    if got != expected:
        problems.append(f"read back: {first_difference(got, expected, meta.dtype.itemsize)}")
    want = lf.from_raw(expected, meta.dtype, meta.shape)
    for sc in lf.fill_only_shards(meta, want):
        if os.path.lexists(meta.shard_path(sc)):
            problems.append(f"shard {meta.shard_key(sc)} written although it is entirely fill value")
    # stray files
    allowed = set()
    if meta.fmt == "v2proto":
        allowed.add(os.path.join(dest, ".zarray"))
    else:
        allowed.add(os.path.join(dest, "zarr.json"))
        allowed.add(os.path.abspath(new_array))
    for sc in itertools.product(*(range(g) for g in meta.shard_grid)):
        allowed.add(os.path.abspath(meta.shard_path(sc)))
    stray = []
    for dirpath, _dirs, files in os.walk(dest):
        for fn in files:
            p = os.path.abspath(os.path.join(dirpath, fn))
            if p not in allowed:
                stray.append(os.path.relpath(p, dest))
    if stray:
        stray.sort()
        more = f" (+{len(stray) - 3} more)" if len(stray) > 3 else ""
        problems.append(f"unexpected file(s): {', '.join(stray[:3])}{more}")
    return problems, (new_array, meta, want)


def check_repack(entry, fix_dir, zbin, tmp, timeout, expected):
    """Legacy -> Zarr v3 keeps the user's attributes; zarr-python reads them back."""
    import numpy as np
    import zarr
    dst = os.path.join(tmp, "repacked.zarr")
    why = run([zbin, "repack", os.path.join(fix_dir, entry["array"]), dst], timeout)
    if why:
        return [why]
    a = zarr.open_array(dst, mode="r")
    problems = []
    got = a.attrs.asdict()
    if got != entry["attributes"]:
        problems.append(f"attributes {got!r}, expected {entry['attributes']!r}")
    data = a[...]
    raw = np.ascontiguousarray(data, dtype=data.dtype.newbyteorder("<")).tobytes()
    if raw != expected:
        problems.append(f"zarr-python reads: {first_difference(raw, expected, data.dtype.itemsize)}")
    return problems


def check_list(listing_input):
    new_array, meta, want = listing_input
    try:
        got = lf.list_chunks(new_array)
    except Exception as e:  # noqa: BLE001
        return [f"listing failed: {type(e).__name__}: {e}"]
    exp = lf.nonfill_chunk_keys(meta, want)
    if got == exp:
        return []
    extra = sorted(set(got) - set(exp))
    missing = sorted(set(exp) - set(got))
    parts = [f"{len(got)} keys, expected {len(exp)}"]
    if extra:
        parts.append(f"unexpected {extra[:3]}{'...' if len(extra) > 3 else ''}")
    if missing:
        parts.append(f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}")
    if not extra and not missing:
        parts.append("same keys, different order/duplicates")
    return ["; ".join(parts)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("fix_dir")
    ap.add_argument("zarrshard_bin")
    ap.add_argument("--timeout", type=float,
                    default=float(os.environ.get("ZARRSHARD_LEGACY_TIMEOUT", "20")))
    ap.add_argument("--filter", default="", help="only cases whose FORMAT/CASE contains this")
    args = ap.parse_args()
    man_path = os.path.join(args.fix_dir, "manifest.json")
    try:
        with open(man_path) as f:
            manifest = json.load(f)
    except (OSError, ValueError) as e:
        print(f"cannot read {man_path}: {e} (run legacy_formats.py write {args.fix_dir})",
              file=sys.stderr)
        return 2
    zbin = os.path.abspath(args.zarrshard_bin) if os.path.sep in args.zarrshard_bin else args.zarrshard_bin
    passed = failed = 0

    def record(label, problems):
        nonlocal passed, failed
        if problems:
            failed += 1
            for p in problems:
                print(f"FAIL {label}: {p}", flush=True)
        else:
            passed += 1

    for entry in manifest:
        name = f"{entry['format']}/{entry['case']}"
        if args.filter not in name:
            continue
        exp_path = os.path.abspath(os.path.join(args.fix_dir, entry["expected"]))
        with open(exp_path, "rb") as f:
            expected = f.read()
        with tempfile.TemporaryDirectory(prefix="check_legacy_") as tmp:
            try:
                record(f"{name} export", check_export(entry, args.fix_dir, zbin, tmp, args.timeout,
                                                      expected))
            except Exception as e:  # noqa: BLE001
                record(f"{name} export", [f"harness error: {type(e).__name__}: {e}"])
            listing_input = None
            try:
                problems, listing_input = check_import(entry, args.fix_dir, zbin, tmp, args.timeout,
                                                       exp_path, expected)
            except Exception as e:  # noqa: BLE001
                problems = [f"harness error: {type(e).__name__}: {e}"]
            record(f"{name} import", problems)
            if entry.get("attributes"):
                try:
                    record(f"{name} repack", check_repack(entry, args.fix_dir, zbin, tmp,
                                                          args.timeout, expected))
                except Exception as e:  # noqa: BLE001
                    record(f"{name} repack", [f"harness error: {type(e).__name__}: {e}"])
            if entry["format"] == "v3draft":
                if listing_input is None:
                    record(f"{name} list", ["not run (import produced no readable array)"])
                else:
                    record(f"{name} list", check_list(listing_input))
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
