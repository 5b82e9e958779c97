"""zarrs as a peer of the interop suite: the `zarrs-peer` tool (tests/interop/zarrs_peer, the
`zarrs` crate) writes and reads whole arrays for the Python harnesses.

The tool is built by scripts/test.sh into target/zarrs-peer/release/zarrs-peer; $ZARRS_PEER
names another build. Data goes through files in zarrshard export's raw format (C order, every
element little-endian, bool one byte, complex real then imaginary).
"""
from __future__ import annotations

import json
import os
import subprocess
import tempfile

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TIMEOUT = 120


def binary() -> str:
    return os.environ.get("ZARRS_PEER") or os.path.join(
        REPO, "target", "zarrs-peer", "release", "zarrs-peer")


def available() -> bool:
    return os.access(binary(), os.X_OK)


def _run(*args: str) -> None:
    p = subprocess.run([binary(), *args], stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=TIMEOUT)
    if p.returncode != 0:
        msg = p.stderr.strip().splitlines()
        raise RuntimeError(msg[-1] if msg else f"zarrs-peer exit status {p.returncode}")


def le_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    return dt if dt.itemsize == 1 else dt.newbyteorder("<")


def write(path: str, metadata: dict, data_le: bytes) -> None:
    """Create the array `metadata` (a Zarr v3 zarr.json object) in `path` with zarrs and
    store `data_le` (raw, little-endian) as the whole array."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(metadata, f)
    with tempfile.NamedTemporaryFile(prefix="zarrs-in-", suffix=".bin") as tmp:
        tmp.write(data_le)
        tmp.flush()
        _run("write", path, tmp.name)


def read_bytes(path: str) -> bytes:
    """The whole array in `path` as zarrs reads it, raw little-endian."""
    with tempfile.NamedTemporaryFile(prefix="zarrs-out-", suffix=".bin") as tmp:
        _run("read", path, tmp.name)
        tmp.seek(0)
        return tmp.read()


def read(path: str) -> np.ndarray:
    """The whole array in `path` as zarrs reads it, as numpy (shape and data type from its
    zarr.json)."""
    with open(os.path.join(path, "zarr.json")) as f:
        meta = json.load(f)
    raw = read_bytes(path)
    dt = le_dtype(meta["data_type"])
    return np.frombuffer(raw, dtype=dt).reshape(meta["shape"]).astype(dt.newbyteorder("="))
