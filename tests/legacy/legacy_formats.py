#!/usr/bin/env python3
"""Independent Python implementation of the two older Zarr sharding formats.

Written from the spec texts only (not from zarrshard's Rust code):

* ``v2proto`` -- the zarr-python PR 876 sharding prototype: a Zarr v2 array
  directory whose ``.zarray`` has two extra keys, ``"shards"`` (chunks per
  shard) and ``"shard_format": "indexed"``.  Shard keys are the shard grid
  coordinates joined by ``dimension_separator`` (``2.0`` or ``2/0``).
* ``v3draft`` -- the sharding storage transformer draft (18 Feb 2022) on the
  Zarr v3 core protocol draft: ``ROOT/zarr.json`` entry point and
  ``ROOT/meta/root/<path>.array.json`` with a ``storage_transformers`` entry
  (the array at the hierarchy's root: ``ROOT/meta/root.array.json``).
  Chunk key ``data/root/<path>/c<i><sep><j>`` (root array: ``data/root/c<i>...``);
  the shard key is the chunk grid position floor-divided by ``chunks_per_shard``
  in the same format.  The transformer's URI is accepted in both of the draft's
  spellings (its example's ``https://.../storage_transformers/...`` and its
  header's ``http://.../storage-transformers/...``).

Both use the ``indexed`` binary shard format: encoded chunks (any order, unused
space allowed), then an index at the end of 16 bytes per chunk (little-endian
uint64 offset, nbytes), C order over chunks-per-shard; (2^64-1, 2^64-1) means
the chunk is absent.

Usage:
    legacy_formats.py write OUT_DIR        fixtures of both formats + OUT_DIR/manifest.json
    legacy_formats.py read ARRAY OUT_FILE  decode ARRAY (a v2proto directory with .zarray,
                                           or a v3draft .array.json) -> raw bytes
    legacy_formats.py list ARRAY           list_prefix listing of the stored chunks

Raw bytes: the whole array in C order, each element little-endian, bool one
byte 0/1, complex as real then imaginary; the fill value where nothing is stored.
"""
from __future__ import annotations

import gzip as _gzip
import itertools
import json
import math
import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import numcodecs
from numcodecs.compat import ensure_bytes

EMPTY = 2**64 - 1
INDEX_ENTRY = 16

V3_PROTOCOL = "https://purl.org/zarr/spec/protocol/core/3.0"
V3_SHARDING = "https://purl.org/zarr/spec/storage_transformers/sharding/1.0"
# The same extension as the draft's header ("Specification URI") spells it.
V3_SHARDING_HEADER = "http://purl.org/zarr/spec/storage-transformers/sharding/1.0"
V3_CODEC_PREFIX = "https://purl.org/zarr/spec/codec/"
V3_CODEC_SUFFIX = "/1.0"
CODEC_IDS = ("zlib", "gzip", "zstd", "blosc")

# v3 core draft spellings of the one-byte types
DTYPE_ALIASES = {"bool": "|b1", "i1": "|i1", "u1": "|u1", "b1": "|b1"}


class LegacyError(Exception):
    """Anything wrong with metadata, an index or a chunk."""


# --------------------------------------------------------------------------
# metadata
# --------------------------------------------------------------------------

def parse_dtype(s) -> np.dtype:
    if not isinstance(s, str):
        raise LegacyError(f"dtype must be a string, got {s!r}")
    s2 = DTYPE_ALIASES.get(s, s)
    if len(s2) < 3 or s2[0] not in "<>|" or s2[1] not in "biufc":
        raise LegacyError(f"unsupported dtype {s!r}")
    try:
        dt = np.dtype(s2)
    except TypeError as e:
        raise LegacyError(f"unsupported dtype {s!r}: {e}")
    if dt.kind not in "biufc":
        raise LegacyError(f"unsupported dtype {s!r}")
    if dt.itemsize == 1 and s2[0] != "|":
        # '<u1' is harmless; normalise
        dt = np.dtype("|" + s2[1:])
    if dt.itemsize > 1 and s2[0] == "|":
        raise LegacyError(f"dtype {s!r} needs a byte order")
    return dt


def _float_from_json(v):
    if isinstance(v, bool):
        raise LegacyError(f"bad float fill value {v!r}")
    if isinstance(v, (int, float)):
        return float(v)
    if v == "NaN":
        return float("nan")
    if v == "Infinity":
        return float("inf")
    if v == "-Infinity":
        return float("-inf")
    raise LegacyError(f"bad float fill value {v!r}")


def parse_fill(v, dt: np.dtype, allow_null: bool):
    """JSON fill value -> numpy 0-d array of dtype dt."""
    if v is None:
        if not allow_null:
            raise LegacyError("fill_value null is not allowed here")
        return np.zeros((), dtype=dt)
    k = dt.kind
    if k == "b":
        if isinstance(v, bool):
            return np.array(v, dtype=dt)
        if isinstance(v, int) and v in (0, 1):
            return np.array(bool(v), dtype=dt)
        raise LegacyError(f"bad bool fill value {v!r}")
    if k in "iu":
        if isinstance(v, bool) or not isinstance(v, int):
            if isinstance(v, float) and v.is_integer():
                v = int(v)
            else:
                raise LegacyError(f"bad integer fill value {v!r}")
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            raise LegacyError(f"fill value {v} out of range for {dt}")
        return np.array(v, dtype=dt)
    if k == "f":
        return np.array(_float_from_json(v), dtype=dt)
    if k == "c":
        if isinstance(v, list):
            if len(v) != 2:
                raise LegacyError(f"bad complex fill value {v!r}")
            return np.array(complex(_float_from_json(v[0]), _float_from_json(v[1])), dtype=dt)
        return np.array(complex(_float_from_json(v), 0.0), dtype=dt)
    raise LegacyError(f"unsupported dtype {dt}")


def fill_to_json(fill: np.ndarray):
    """Inverse of parse_fill, used by the fixture writer."""
    x = fill[()]
    k = fill.dtype.kind
    if k == "b":
        return bool(x)
    if k in "iu":
        return int(x)

    def f(val):
        val = float(val)
        if math.isnan(val):
            return "NaN"
        if math.isinf(val):
            return "Infinity" if val > 0 else "-Infinity"
        return val

    if k == "f":
        return f(x)
    if k == "c":
        if x.imag == 0:
            return f(x.real)
        return [f(x.real), f(x.imag)]
    raise LegacyError(f"unsupported dtype {fill.dtype}")


@dataclass
class ArrayMeta:
    fmt: str                      # "v2proto" | "v3draft"
    shape: Tuple[int, ...]
    chunk_shape: Tuple[int, ...]
    cps: Tuple[int, ...]          # chunks per shard
    dtype: np.dtype
    fill: np.ndarray              # 0-d
    order: str                    # "C" | "F"
    compressor: Optional[dict]    # numcodecs config (with "id") or None
    sep: str
    store_dir: str                # v2proto: array dir; v3draft: hierarchy root
    v3_path: str = ""             # v3draft: array path below meta/root, e.g. "foo/baz"
    raw_meta: dict = field(default_factory=dict)

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def chunk_grid(self):
        return tuple(-(-s // c) for s, c in zip(self.shape, self.chunk_shape))

    @property
    def shard_grid(self):
        return tuple(-(-g // n) for g, n in zip(self.chunk_grid, self.cps))

    @property
    def chunks_per_shard(self):
        return int(np.prod(self.cps))

    @property
    def chunk_nbytes(self):
        return int(np.prod(self.chunk_shape)) * self.dtype.itemsize

    # keys are relative to store_dir and always use '/' between path parts
    def shard_key(self, shard_coords) -> str:
        return self._key(shard_coords)

    def chunk_key(self, chunk_coords) -> str:
        return self._key(chunk_coords)

    def _key(self, coords) -> str:
        joined = self.sep.join(str(int(c)) for c in coords)
        if self.fmt == "v2proto":
            return joined
        if not self.v3_path:
            return f"data/root/c{joined}"
        return f"data/root/{self.v3_path}/c{joined}"

    def shard_path(self, shard_coords) -> str:
        return os.path.join(self.store_dir, *self.shard_key(shard_coords).split("/"))

    def chunk_region(self, chunk_coords):
        """(slices into the array, slices into the chunk) of the in-bounds part."""
        arr_sl, chk_sl = [], []
        for c, cs, s in zip(chunk_coords, self.chunk_shape, self.shape):
            lo = c * cs
            hi = min(lo + cs, s)
            arr_sl.append(slice(lo, hi))
            chk_sl.append(slice(0, hi - lo))
        return tuple(arr_sl), tuple(chk_sl)

    def chunks_of_shard(self, shard_coords):
        """Chunk coordinates of every index slot of a shard, C order (may lie outside the grid)."""
        for local in itertools.product(*(range(n) for n in self.cps)):
            yield tuple(s * n + l for s, n, l in zip(shard_coords, self.cps, local))

    def in_grid(self, chunk_coords) -> bool:
        return all(c < g for c, g in zip(chunk_coords, self.chunk_grid))

    def codec(self):
        if self.compressor is None:
            return None
        return numcodecs.get_codec(self.compressor)


def _int_list(v, what, positive=True):
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise LegacyError(f"{what} must be a list of integers, got {v!r}")
    if any((x <= 0 if positive else x < 0) for x in v):
        raise LegacyError(f"{what} has a non-positive entry: {v!r}")
    return tuple(v)


def _check_compressor_config(cfg: dict):
    cid = cfg.get("id")
    if cid not in CODEC_IDS:
        raise LegacyError(f"unsupported compressor {cid!r}")
    try:
        numcodecs.get_codec(cfg)
    except Exception as e:  # noqa: BLE001
        raise LegacyError(f"bad compressor config {cfg!r}: {e}")


def load_v2proto(array_dir: str) -> ArrayMeta:
    with open(os.path.join(array_dir, ".zarray"), "rb") as f:
        m = json.loads(f.read())
    if m.get("zarr_format") != 2:
        raise LegacyError(f"zarr_format must be 2, got {m.get('zarr_format')!r}")
    shape = _int_list(m.get("shape"), "shape", positive=False)
    chunks = _int_list(m.get("chunks"), "chunks")
    if "shards" not in m:
        raise LegacyError(".zarray has no 'shards': not a sharded (PR 876) array")
    shards = _int_list(m.get("shards"), "shards")
    if not (len(shape) == len(chunks) == len(shards)) or len(shape) == 0:
        raise LegacyError("shape/chunks/shards rank mismatch (or rank 0)")
    if m.get("shard_format", "indexed") != "indexed":
        raise LegacyError(f"unsupported shard_format {m.get('shard_format')!r}")
    dt = parse_dtype(m.get("dtype"))
    order = m.get("order", "C")
    if order not in ("C", "F"):
        raise LegacyError(f"bad order {order!r}")
    if m.get("filters") not in (None, []):
        raise LegacyError("filters are not supported")
    sep = m.get("dimension_separator", ".")
    if sep not in (".", "/"):
        raise LegacyError(f"bad dimension_separator {sep!r}")
    comp = m.get("compressor")
    if comp is not None:
        if not isinstance(comp, dict):
            raise LegacyError(f"bad compressor {comp!r}")
        _check_compressor_config(comp)
    fill = parse_fill(m.get("fill_value"), dt, allow_null=True)
    return ArrayMeta("v2proto", shape, chunks, shards, dt, fill, order, comp, sep,
                     array_dir, raw_meta=m)


def find_v3_root(array_json: str) -> Tuple[str, str]:
    """(hierarchy root, array path) for ROOT/meta/root/<path>.array.json, or (ROOT, "")
    for ROOT/meta/root.array.json (the root array).
    The root is the nearest ancestor holding zarr.json that has the file below meta/root/."""
    p = os.path.abspath(array_json)
    if not p.endswith(".array.json"):
        raise LegacyError(f"{array_json}: not a .array.json file")
    d = os.path.dirname(p)
    while True:
        if p == os.path.join(d, "meta", "root.array.json") and os.path.isfile(os.path.join(d, "zarr.json")):
            return d, ""
        meta_root = os.path.join(d, "meta", "root") + os.sep
        if p.startswith(meta_root) and os.path.isfile(os.path.join(d, "zarr.json")):
            rel = p[len(meta_root):-len(".array.json")]
            path = rel.replace(os.sep, "/")
            if not path:
                raise LegacyError("empty array path")
            return d, path
        parent = os.path.dirname(d)
        if parent == d:
            raise LegacyError(f"{array_json}: no hierarchy root (zarr.json with meta/root/) above it")
        d = parent


def load_v3draft(array_json: str) -> ArrayMeta:
    root, path = find_v3_root(array_json)
    with open(os.path.join(root, "zarr.json"), "rb") as f:
        ep = json.loads(f.read())
    if ep.get("zarr_format") != V3_PROTOCOL:
        raise LegacyError(f"zarr.json: unsupported zarr_format {ep.get('zarr_format')!r}")
    if ep.get("metadata_encoding") != V3_PROTOCOL:
        raise LegacyError(f"zarr.json: unsupported metadata_encoding {ep.get('metadata_encoding')!r}")
    if ep.get("metadata_key_suffix", ".json") != ".json":
        raise LegacyError("zarr.json: metadata_key_suffix must be .json")
    if ep.get("extensions", []):
        raise LegacyError("zarr.json: extensions are not supported")
    with open(array_json, "rb") as f:
        m = json.loads(f.read())
    shape = _int_list(m.get("shape"), "shape", positive=False)
    grid = m.get("chunk_grid")
    if not isinstance(grid, dict) or grid.get("type") != "regular":
        raise LegacyError(f"unsupported chunk_grid {grid!r}")
    chunks = _int_list(grid.get("chunk_shape"), "chunk_shape")
    sep = grid.get("separator", "/")
    if sep not in (".", "/"):
        raise LegacyError(f"bad separator {sep!r}")
    dt = parse_dtype(m.get("data_type"))
    order = m.get("chunk_memory_layout", "C")
    if order not in ("C", "F"):
        raise LegacyError(f"bad chunk_memory_layout {order!r}")
    if m.get("extensions", []):
        raise LegacyError("array extensions are not supported")
    comp = m.get("compressor")
    ncomp = None
    if comp is not None:
        if not isinstance(comp, dict):
            raise LegacyError(f"bad compressor {comp!r}")
        uri = comp.get("codec", "")
        if not (uri.startswith(V3_CODEC_PREFIX) and uri.endswith(V3_CODEC_SUFFIX)):
            raise LegacyError(f"unsupported codec {uri!r}")
        cid = uri[len(V3_CODEC_PREFIX):-len(V3_CODEC_SUFFIX)]
        conf = comp.get("configuration", {}) or {}
        if not isinstance(conf, dict) or "id" in conf:
            raise LegacyError(f"bad codec configuration {conf!r}")
        ncomp = {"id": cid, **conf}
        _check_compressor_config(ncomp)
    st = m.get("storage_transformers")
    if not isinstance(st, list) or len(st) != 1:
        raise LegacyError(f"expected exactly one storage transformer, got {st!r}")
    t = st[0]
    if t.get("extension") not in (V3_SHARDING, V3_SHARDING_HEADER):
        raise LegacyError(f"unsupported storage transformer {t.get('extension')!r}")
    if t.get("type") != "indexed":
        raise LegacyError(f"unsupported shard type {t.get('type')!r}")
    cps = _int_list((t.get("configuration") or {}).get("chunks_per_shard"), "chunks_per_shard")
    if not (len(shape) == len(chunks) == len(cps)) or len(shape) == 0:
        raise LegacyError("shape/chunk_shape/chunks_per_shard rank mismatch (or rank 0)")
    fill = parse_fill(m.get("fill_value"), dt, allow_null=False)
    return ArrayMeta("v3draft", shape, chunks, cps, dt, fill, order, ncomp, sep,
                     root, v3_path=path, raw_meta=m)


def load_meta(array: str) -> ArrayMeta:
    if os.path.isdir(array) and os.path.isfile(os.path.join(array, ".zarray")):
        return load_v2proto(array)
    if os.path.isfile(array) and array.endswith(".array.json"):
        return load_v3draft(array)
    raise LegacyError(f"{array}: neither a directory with .zarray nor a .array.json file")


# --------------------------------------------------------------------------
# values
# --------------------------------------------------------------------------

def is_fill(a: np.ndarray, fill: np.ndarray) -> np.ndarray:
    """Elementwise "equals the fill value"; NaN equals NaN (per component for complex)."""
    if a.dtype.kind == "c":
        return is_fill(a.real, np.asarray(fill.real)) & is_fill(a.imag, np.asarray(fill.imag))
    if a.dtype.kind == "f":
        f = fill[()]
        if np.isnan(f):
            return np.isnan(a)
        return a == f
    return a == fill[()]


def to_raw(a: np.ndarray) -> bytes:
    """C order, little-endian, bool 0/1, complex re then im."""
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<")).tobytes(order="C")


def from_raw(raw: bytes, dt: np.dtype, shape) -> np.ndarray:
    n = int(np.prod(shape)) * dt.itemsize
    if len(raw) != n:
        raise LegacyError(f"raw data has {len(raw)} bytes, expected {n}")
    if dt.kind == "b" and not set(np.unique(np.frombuffer(raw, dtype=np.uint8)).tolist()) <= {0, 1}:
        raise LegacyError("raw bool data has bytes other than 0/1")
    return np.frombuffer(raw, dtype=dt.newbyteorder("<")).reshape(shape).astype(dt)


# --------------------------------------------------------------------------
# chunk codec
# --------------------------------------------------------------------------

def encode_chunk(meta: ArrayMeta, chunk: np.ndarray) -> bytes:
    flat = np.ascontiguousarray(chunk.astype(meta.dtype, copy=False).ravel(order=meta.order))
    raw = flat.tobytes()
    assert len(raw) == meta.chunk_nbytes
    c = meta.compressor
    if c is None:
        return raw
    if c["id"] == "gzip":
        # numcodecs' GZip stamps the current time into the header; use mtime=0
        # so the fixtures are reproducible (any gzip reader accepts either).
        return _gzip.compress(raw, compresslevel=c.get("level", 1), mtime=0)
    if c["id"] == "blosc":
        # pass the typed array: blosc's typesize = dtype itemsize
        return ensure_bytes(meta.codec().encode(flat))
    return ensure_bytes(meta.codec().encode(raw))


def decode_chunk(meta: ArrayMeta, data: bytes, codec) -> np.ndarray:
    if codec is None:
        raw = data
    else:
        try:
            raw = ensure_bytes(codec.decode(data))
        except Exception as e:  # noqa: BLE001
            raise LegacyError(f"decompression failed ({meta.compressor['id']}): {e}")
    if len(raw) != meta.chunk_nbytes:
        raise LegacyError(f"decoded chunk has {len(raw)} bytes, expected {meta.chunk_nbytes}")
    if meta.dtype.kind == "b" and not set(np.unique(np.frombuffer(raw, dtype=np.uint8)).tolist()) <= {0, 1}:
        raise LegacyError("bool chunk has bytes other than 0/1")
    return np.frombuffer(raw, dtype=meta.dtype).reshape(meta.chunk_shape, order=meta.order)


# --------------------------------------------------------------------------
# shard index
# --------------------------------------------------------------------------

def parse_index(meta: ArrayMeta, shard: bytes, where: str = "shard"):
    """Validated list of (offset, nbytes) or None per index slot, C order."""
    n = meta.chunks_per_shard
    isz = n * INDEX_ENTRY
    if len(shard) < isz:
        raise LegacyError(f"{where}: {len(shard)} bytes, shorter than its index ({isz} bytes)")
    data_end = len(shard) - isz
    idx = np.frombuffer(shard[data_end:], dtype="<u8").reshape(n, 2)
    out = []
    for i, (off, nb) in enumerate(idx.tolist()):
        if off == EMPTY and nb == EMPTY:
            out.append(None)
            continue
        if off == EMPTY or nb == EMPTY:
            raise LegacyError(f"{where}: index entry {i} has only one of offset/nbytes = 2^64-1 "
                              f"({off}, {nb})")
        if off + nb > data_end:
            raise LegacyError(f"{where}: index entry {i} (offset {off}, nbytes {nb}) "
                              f"runs past the chunk data ({data_end} bytes before the index)")
        out.append((off, nb))
    return out


# --------------------------------------------------------------------------
# read / list
# --------------------------------------------------------------------------

def read_array(array: str, strict_outside: bool = False):
    """-> (meta, numpy array in meta.dtype).  strict_outside: a stored chunk whose
    position lies entirely outside the chunk grid is an error (otherwise ignored)."""
    meta = load_meta(array)
    out = np.empty(meta.shape, dtype=meta.dtype)
    out[...] = meta.fill[()]
    codec = meta.codec()
    for sc in itertools.product(*(range(g) for g in meta.shard_grid)):
        p = meta.shard_path(sc)
        if not os.path.isfile(p):
            if os.path.exists(p):
                raise LegacyError(f"{p}: exists but is not a file")
            continue
        with open(p, "rb") as f:
            shard = f.read()
        where = meta.shard_key(sc)
        entries = parse_index(meta, shard, where)
        for cc, e in zip(meta.chunks_of_shard(sc), entries):
            if e is None:
                continue
            if not meta.in_grid(cc):
                if strict_outside:
                    raise LegacyError(f"{where}: chunk {cc} lies outside the chunk grid "
                                      f"{meta.chunk_grid} but is stored")
                continue
            off, nb = e
            chunk = decode_chunk(meta, shard[off:off + nb], codec)
            arr_sl, chk_sl = meta.chunk_region(cc)
            out[arr_sl] = chunk[chk_sl]
    return meta, out


def list_chunks(array: str) -> List[str]:
    """list_prefix of the data: original keys of the stored chunks, sorted (str order)."""
    meta = load_meta(array)
    keys = []
    for sc in itertools.product(*(range(g) for g in meta.shard_grid)):
        p = meta.shard_path(sc)
        if not os.path.isfile(p):
            continue
        with open(p, "rb") as f:
            shard = f.read()
        for cc, e in zip(meta.chunks_of_shard(sc), parse_index(meta, shard, meta.shard_key(sc))):
            if e is not None:
                keys.append(meta.chunk_key(cc))
    return sorted(keys)


def nonfill_chunk_keys(meta: ArrayMeta, arr: np.ndarray) -> List[str]:
    """Keys of the chunks whose in-bounds part holds a non-fill element, sorted:
    the listing of an array written with every all-fill chunk left empty."""
    keys = []
    for cc in itertools.product(*(range(g) for g in meta.chunk_grid)):
        arr_sl, _ = meta.chunk_region(cc)
        if not is_fill(arr[arr_sl], meta.fill).all():
            keys.append(meta.chunk_key(cc))
    return sorted(keys)


def fill_only_shards(meta: ArrayMeta, arr: np.ndarray) -> List[Tuple[int, ...]]:
    """Shard coordinates whose in-bounds part is entirely the fill value."""
    out = []
    for sc in itertools.product(*(range(g) for g in meta.shard_grid)):
        sl = tuple(slice(s * n * c, min((s + 1) * n * c, dim))
                   for s, n, c, dim in zip(sc, meta.cps, meta.chunk_shape, meta.shape))
        if is_fill(arr[sl], meta.fill).all():
            out.append(sc)
    return out


# --------------------------------------------------------------------------
# write
# --------------------------------------------------------------------------

def write_array(meta: ArrayMeta, data: np.ndarray, policy: str = "skip",
                layout: str = "packed", rng: Optional[np.random.Generator] = None) -> List[str]:
    """Write every shard of `data` (shape meta.shape) below meta.store_dir.

    policy: "skip"  -- chunks entirely fill are left empty in the index;
            "keep"  -- every in-grid chunk is stored, fill or not;
            "mixed" -- all-fill chunks are left empty or stored at random.
            A shard with no stored chunk is not written.
    layout: "packed"    -- chunks back to back in index (C) order, then the index;
            "reversed"  -- back to back in reverse index order;
            "scattered" -- junk bytes first, chunks in random order with random junk
                           gaps between them and before the index.
    Returns the sorted original keys of the stored chunks."""
    assert data.shape == meta.shape
    rng = rng if rng is not None else np.random.default_rng(0)
    stored_keys = []
    for sc in itertools.product(*(range(g) for g in meta.shard_grid)):
        encoded: List[Optional[bytes]] = []
        for cc in meta.chunks_of_shard(sc):
            if not meta.in_grid(cc):
                encoded.append(None)
                continue
            arr_sl, chk_sl = meta.chunk_region(cc)
            chunk = np.empty(meta.chunk_shape, dtype=meta.dtype)
            chunk[...] = meta.fill[()]
            chunk[chk_sl] = data[arr_sl]
            if is_fill(chunk, meta.fill).all():
                if policy == "skip" or (policy == "mixed" and rng.random() < 0.5):
                    encoded.append(None)
                    continue
            encoded.append(encode_chunk(meta, chunk))
            stored_keys.append(meta.chunk_key(cc))
        present = [i for i, e in enumerate(encoded) if e is not None]
        if not present:
            continue
        if layout == "packed":
            order = present
        elif layout == "reversed":
            order = present[::-1]
        elif layout == "scattered":
            order = [present[i] for i in rng.permutation(len(present))]
        else:
            raise ValueError(layout)
        body = bytearray()
        if layout == "scattered":
            body += rng.integers(0, 256, int(rng.integers(1, 40)), dtype=np.uint8).tobytes()
        index = np.full((meta.chunks_per_shard, 2), EMPTY, dtype="<u8")
        for i in order:
            index[i] = (len(body), len(encoded[i]))
            body += encoded[i]
            if layout == "scattered":
                body += rng.integers(0, 256, int(rng.integers(0, 14)), dtype=np.uint8).tobytes()
        body += index.tobytes()
        p = meta.shard_path(sc)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(bytes(body))
    return sorted(stored_keys)


def v2proto_zarray(shape, chunks, shards, dtype: str, compressor, fill_json, order, sep) -> dict:
    return {
        "zarr_format": 2,
        "shape": list(shape),
        "chunks": list(chunks),
        "dtype": dtype,
        "compressor": compressor,
        "fill_value": fill_json,
        "order": order,
        "filters": None,
        "dimension_separator": sep,
        "shards": list(shards),
        "shard_format": "indexed",
    }


def v3_entry_point() -> dict:
    return {
        "zarr_format": V3_PROTOCOL,
        "metadata_encoding": V3_PROTOCOL,
        "metadata_key_suffix": ".json",
        "extensions": [],
    }


def v3draft_array_json(shape, chunks, cps, dtype: str, compressor, fill_json, order, sep,
                       uri=V3_SHARDING, attributes=None) -> dict:
    comp = None
    if compressor is not None:
        conf = {k: v for k, v in compressor.items() if k != "id"}
        comp = {"codec": f"{V3_CODEC_PREFIX}{compressor['id']}{V3_CODEC_SUFFIX}",
                "configuration": conf}
    return {
        "shape": list(shape),
        "data_type": dtype,
        "chunk_grid": {"type": "regular", "chunk_shape": list(chunks), "separator": sep},
        "chunk_memory_layout": order,
        "compressor": comp,
        "fill_value": fill_json,
        "extensions": [],
        "attributes": attributes if attributes is not None else {},
        "storage_transformers": [{
            "extension": uri,
            "type": "indexed",
            "configuration": {"chunks_per_shard": list(cps)},
        }],
    }


def _dump_json(path, obj):
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


# --------------------------------------------------------------------------
# fixture matrix
# --------------------------------------------------------------------------

def Z(level=1):
    return {"id": "zlib", "level": level}


def GZ(level=1):
    return {"id": "gzip", "level": level}


def ZS(level=1, checksum=False):
    c = {"id": "zstd", "level": level}
    if checksum:
        c["checksum"] = True
    return c


def BL(cname, shuffle):
    return {"id": "blosc", "cname": cname, "clevel": 5, "shuffle": shuffle, "blocksize": 0}


# name, dtype, shape, chunks, chunks-per-shard, compressor, order, sep, fill (JSON),
# policy, layout, shard density, chunk density, [extra]
V2_CASES = [
    ("pr876_example_u2", "<u2", (20, 3), (3, 3), (2, 2), None, "C", ".", 0, "skip", "packed", 1, 1,
     {"attributes": {"units": "mm", "_ARRAY_DIMENSIONS": ["y", "x"], "scale": [0.5, 0.001]}}),
    ("b1_zlib_1d", "|b1", (37,), (4,), (3,), Z(), "C", ".", False, "mixed", "scattered", .7, .8),
    ("i1_gzip_F_nested", "|i1", (13, 17), (4, 5), (2, 2), GZ(), "F", "/", -3, "skip", "reversed", .8, .7),
    ("i2_zstd_3d_keep", "<i2", (5, 6, 7), (2, 3, 2), (2, 1, 3), ZS(), "C", ".", 0, "keep", "packed", .8, .6),
    ("i4be_blosc_lz4_nullfill", ">i4", (50,), (7,), (4,), BL("lz4", 1), "C", ".", None, "skip", "scattered", 1, .7),
    ("i8_blosc_zstd_bitshuffle_F", "<i8", (9, 11), (3, 4), (2, 2), BL("zstd", 2), "F", "/", 123456789012,
     "mixed", "packed", 1, .6),
    ("u1_blosc_blosclz_sparse", "|u1", (64, 64), (8, 8), (4, 4), BL("blosclz", 0), "C", "/", 0, "skip", "packed",
     .5, .3),
    ("u2be_zlib_F_3d", ">u2", (6, 7, 8), (2, 2, 3), (3, 2, 2), Z(), "F", "/", 513, "skip", "reversed", 1, .7),
    ("u4_zstd_checksum_keep", "<u4", (100,), (10,), (5,), ZS(1, True), "C", ".", 7, "keep", "scattered", 1, .5),
    ("u8_blosc_zlib_maxfill", "<u8", (10, 10), (5, 5), (1, 2), BL("zlib", 1), "C", ".", 2**64 - 1, "skip",
     "packed", 1, .7),
    ("f2_gzip", "<f2", (15, 9), (4, 4), (2, 3), GZ(), "C", ".", -2.5, "skip", "scattered", 1, .6),
    ("f4_nan_blosc_lz4hc_sparse", "<f4", (40, 40), (5, 5), (2, 2), BL("lz4hc", 1), "C", ".", "NaN", "mixed",
     "scattered", .5, .5),
    ("f8be_none_F_inf", ">f8", (7, 5, 3), (2, 2, 2), (2, 2, 1), None, "F", ".", "Infinity", "skip", "reversed",
     1, .7),
    ("c8_zlib_nested", "<c8", (11, 6), (3, 3), (2, 2), Z(), "C", "/", 0, "skip", "packed", 1, .8),
    ("c16_blosc_lz4_F", "<c16", (8, 9), (3, 4), (2, 2), BL("lz4", 2), "F", ".", 0, "mixed", "scattered", 1, .7),
    ("f8_neginf_one_chunk", "<f8", (20,), (4,), (2,), GZ(), "C", "/", "-Infinity", "skip", "packed", 1, 0,
     {"force": [(3,)]}),
    ("u2_all_fill_no_shards", "<u2", (10, 12), (3, 3), (2, 2), ZS(), "C", ".", 42, "skip", "packed", 0, 0),
    ("i2_chunk_larger_than_array", "<i2", (3, 2), (5, 5), (2, 2), Z(), "F", ".", 9, "skip", "packed", 1, 1),
]

# name, v3 path, dtype, shape, chunks, chunks-per-shard, compressor, layout (C/F), sep, fill,
# policy, layout, shard density, chunk density, [extra]
V3_CASES = [
    ("spec_foo_baz_u2", "foo/baz", "<u2", (20, 3), (3, 3), (2, 2), Z(), "C", "/", 0, "skip", "packed", 1, 1),
    ("spec_cps_32x2_i2", "foo/baz", "<i2", (100, 20), (1, 1), (32, 2), GZ(), "C", "/", 0, "skip", "packed",
     .35, .2, {"force": [(96, 18)]}),
    ("bool_none_dot", "masks/m", "bool", (10, 10), (3, 3), (2, 2), None, "C", ".", True, "mixed", "scattered",
     1, .6),
    ("i1_gzip_F_3d", "x", "i1", (7, 9, 5), (3, 4, 2), (2, 2, 3), GZ(), "F", "/", 0, "skip", "reversed", 1, .6),
    ("i4be_zstd_checksum_keep", "a/b/c/deep", ">i4", (33,), (5,), (3,), ZS(1, True), "C", ".", -7, "keep",
     "packed", 1, .5),
    ("u1_blosc_lz4_sparse", "sparse", "u1", (64, 48), (8, 8), (2, 3), BL("lz4", 1), "C", "/", 0, "skip",
     "packed", .5, .4),
    ("f4_nan_blosc_zstd_F", "nan/f4", "<f4", (17, 13), (4, 4), (2, 2), BL("zstd", 2), "F", ".", "NaN", "mixed",
     "scattered", 1, .5),
    ("f8be_none_F_neginf", "f8be", ">f8", (5, 6, 7), (2, 3, 3), (2, 1, 2), None, "F", "/", "-Infinity", "skip",
     "reversed", 1, .6),
    ("c8_zlib_scattered", "cplx/c8", "<c8", (9, 7), (2, 3), (3, 2), Z(), "C", "/", 0, "skip", "scattered", 1, .7),
    ("c16_blosc_blosclz_cps1", "cplx/c16", "<c16", (6, 5), (4, 4), (1, 1), BL("blosclz", 0), "C", ".", 0, "keep",
     "packed", 1, .5),
    ("u8_blosc_zlib_1d", "u8", "<u8", (30,), (4,), (4,), BL("zlib", 1), "C", "/", 0, "skip", "packed", .6, .7),
    ("f2_zstd_dot", "half", "<f2", (11, 11), (3, 3), (2, 2), ZS(), "C", ".", 0.5, "skip", "packed", 1, .6),
    ("u2be_gzip_F", "u2be", ">u2", (10, 7), (3, 2), (2, 2), GZ(), "F", ".", 1, "mixed", "reversed", 1, .6),
    # the array at the hierarchy's root: meta/root.array.json, chunks data/root/c...
    ("root_array_zlib", "", "<u2", (9, 10), (2, 3), (2, 2), Z(), "C", "/", 3, "skip", "scattered", 1, .7),
    ("root_array_dot_header_uri", "", "<i4", (7,), (2,), (2,), None, "C", ".", 0, "skip", "packed", 1, .8,
     {"uri": V3_SHARDING_HEADER}),
    # the transformer URI as the draft's header spells it
    ("header_uri_zstd", "img/a", "<f4", (8, 6), (3, 2), (2, 3), ZS(), "C", "/", 0, "skip", "packed", 1, .7,
     {"uri": V3_SHARDING_HEADER, "attributes": {"units": "m", "_ARRAY_DIMENSIONS": ["y", "x"]}}),
]


def random_values(rng: np.random.Generator, dt: np.dtype, shape) -> np.ndarray:
    n = int(np.prod(shape))
    k = dt.kind
    if k == "b":
        v = rng.random(n) < 0.5
    elif k in "iu":
        info = np.iinfo(dt)
        if dt.itemsize == 8:
            v = rng.integers(info.min, info.max, size=n, dtype=dt.newbyteorder("="), endpoint=True)
        else:
            v = rng.integers(int(info.min), int(info.max), size=n, endpoint=True)
        # make sure the extremes appear
        if n >= 4:
            v[:2] = [info.min, info.max]
    elif k == "f":
        if dt.itemsize == 2:
            v = rng.integers(-2000, 2001, n) / 4.0      # exact in float16
        else:
            v = np.round(rng.standard_normal(n) * 1000.0, 3)
        if n >= 8:
            v[rng.integers(0, n, 3)] = [np.inf, -np.inf, np.nan]
    elif k == "c":
        v = (np.round(rng.standard_normal(n) * 100, 3)
             + 1j * np.round(rng.standard_normal(n) * 100, 3))
    else:
        raise ValueError(dt)
    if k in "fc":
        v = v + 0.0  # no negative zeros: they equal a 0 fill but differ in bytes
    return np.asarray(v).astype(dt).reshape(shape)


def make_data(meta: ArrayMeta, rng, shard_density, chunk_density, force=()) -> np.ndarray:
    """Chunks are populated with random values (with some fill-valued holes) if their
    shard was picked (probability shard_density) and then they were (chunk_density);
    everything else is the fill value."""
    data = np.empty(meta.shape, dtype=meta.dtype)
    data[...] = meta.fill[()]
    picked_shards = {sc for sc in itertools.product(*(range(g) for g in meta.shard_grid))
                     if rng.random() < shard_density}
    for cc in itertools.product(*(range(g) for g in meta.chunk_grid)):
        sc = tuple(c // n for c, n in zip(cc, meta.cps))
        populate = (sc in picked_shards and rng.random() < chunk_density) or cc in force
        if not populate:
            continue
        arr_sl, _ = meta.chunk_region(cc)
        shape = data[arr_sl].shape
        vals = random_values(rng, meta.dtype, shape)
        holes = rng.random(shape) < 0.15
        vals[holes] = meta.fill[()]
        if cc in force and is_fill(vals, meta.fill).all():
            vals.flat[0] = np.array(1, dtype=meta.dtype) if meta.fill[()] != 1 else 0
        data[arr_sl] = vals
    return data


def write_fixtures(out_dir: str) -> List[dict]:
    for sub in ("v2proto", "v3draft", "expected", "keys"):
        shutil.rmtree(os.path.join(out_dir, sub), ignore_errors=True)
    os.makedirs(os.path.join(out_dir, "expected"), exist_ok=True)
    os.makedirs(os.path.join(out_dir, "keys"), exist_ok=True)
    manifest = []
    seed = 876
    for case in V2_CASES:
        seed += 1
        (name, dts, shape, chunks, shards, comp, order, sep, fill_json,
         policy, layout, sdens, cdens) = case[:13]
        extra = case[13] if len(case) > 13 else {}
        rng = np.random.default_rng(seed)
        adir = os.path.join(out_dir, "v2proto", name)
        zarray = v2proto_zarray(shape, chunks, shards, dts, comp, fill_json, order, sep)
        _dump_json(os.path.join(adir, ".zarray"), zarray)
        if "attributes" in extra:
            _dump_json(os.path.join(adir, ".zattrs"), extra["attributes"])
        meta = load_v2proto(adir)
        data = make_data(meta, rng, sdens, cdens, set(extra.get("force", ())))
        write_array(meta, data, policy, layout, rng)
        exp = os.path.join("expected", f"v2proto-{name}.raw")
        with open(os.path.join(out_dir, exp), "wb") as f:
            f.write(to_raw(data))
        manifest.append({"format": "v2proto", "case": name,
                         "array": os.path.join("v2proto", name), "expected": exp,
                         "dtype": dts, "shape": list(shape), "policy": policy, "layout": layout,
                         "attributes": extra.get("attributes", {})})
    seed = 2022
    for case in V3_CASES:
        seed += 1
        (name, path, dts, shape, chunks, cps, comp, order, sep, fill_json,
         policy, layout, sdens, cdens) = case[:14]
        extra = case[14] if len(case) > 14 else {}
        rng = np.random.default_rng(seed)
        root = os.path.join(out_dir, "v3draft", name)
        _dump_json(os.path.join(root, "zarr.json"), v3_entry_point())
        if path:
            ajson = os.path.join(root, "meta", "root", *path.split("/")) + ".array.json"
        else:
            ajson = os.path.join(root, "meta", "root.array.json")
        _dump_json(ajson, v3draft_array_json(shape, chunks, cps, dts, comp, fill_json, order, sep,
                                             extra.get("uri", V3_SHARDING), extra.get("attributes")))
        meta = load_v3draft(ajson)
        data = make_data(meta, rng, sdens, cdens, set(extra.get("force", ())))
        keys = write_array(meta, data, policy, layout, rng)
        exp = os.path.join("expected", f"v3draft-{name}.raw")
        with open(os.path.join(out_dir, exp), "wb") as f:
            f.write(to_raw(data))
        kfile = os.path.join("keys", f"v3draft-{name}.txt")
        with open(os.path.join(out_dir, kfile), "w") as f:
            f.write("".join(k + "\n" for k in keys))
        manifest.append({"format": "v3draft", "case": name,
                         "array": os.path.relpath(ajson, out_dir), "expected": exp,
                         "chunk_keys": kfile,
                         "dtype": dts, "shape": list(shape), "policy": policy, "layout": layout,
                         "attributes": extra.get("attributes", {})})
    with open(os.path.join(out_dir, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    return manifest


# --------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------

def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    usage = __doc__.split("Usage:")[1].split("Raw bytes")[0]
    if not argv or argv[0] in ("-h", "--help"):
        print("usage:" + usage, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    try:
        if cmd == "write" and len(args) == 1:
            m = write_fixtures(args[0])
            print(f"wrote {len(m)} arrays to {args[0]}")
            return 0
        if cmd == "read" and len(args) == 2:
            _, arr = read_array(args[0])
            with open(args[1], "wb") as f:
                f.write(to_raw(arr))
            return 0
        if cmd == "list" and len(args) == 1:
            for k in list_chunks(args[0]):
                print(k)
            return 0
    except (LegacyError, OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print("usage:" + usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
