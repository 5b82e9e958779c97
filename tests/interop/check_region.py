"""zarr-python, tensorstore and zarrs read the arrays zarrshard's region writes produced.

    python check_region.py DIR

DIR is written by the Rust test `region_writes_for_the_peers_to_read` (tests/region.rs):
NAME.zarr (a sharded uint16 array after several overlapping region writes) and NAME.raw (the
values a model of those writes expects, C order, little-endian). One line per check, then
`N passed, M failed`.
"""
import sys
from pathlib import Path

import numpy as np
import tensorstore as ts
import zarr

import zarrs_peer


def main() -> int:
    root = Path(sys.argv[1])
    passed = failed = 0
    arrays = sorted(root.glob("*.zarr"))
    if not arrays:
        print(f"no arrays under {root}")
        print("0 passed, 1 failed")
        return 1
    for path in arrays:
        want = np.frombuffer((root / (path.stem + ".raw")).read_bytes(), "<u2")
        readers = {
            "zarr-python": lambda: zarr.open_array(str(path), mode="r")[...],
            "tensorstore": lambda: ts.open(
                {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path)}}
            ).result().read().result(),
            "zarrs": lambda: zarrs_peer.read(str(path)),
        }
        for who, read in readers.items():
            try:
                got = np.asarray(read())
            except Exception as e:  # noqa: BLE001 - a reader's refusal is a failure
                print(f"FAIL {who} cannot read {path.name}: {type(e).__name__}: {e}")
                failed += 1
                continue
            ok = got.shape == (37, 29) and np.array_equal(got.reshape(-1), want)
            print(f"{'ok' if ok else 'FAIL'} {who} reads {path.name}")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
