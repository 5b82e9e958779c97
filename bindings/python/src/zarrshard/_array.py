"""Arrays and groups shaped like zarr-python's (`create_array`, `open_array`, `Array[...]`),
each call one C call into the library with the GIL released. The binding only converts:
indexing to a region, numpy buffers to pointers, statuses to exceptions; what is stored where,
and how, is the library's."""

import json
import operator
import threading
from collections.abc import MutableMapping

import numpy as np

from ._lib import ffi, lib, check, c_text, u64s, read_string, ReadOnlyError, InvalidMetadataError, StoreNotFoundError
from ._store import store_of

__all__ = ["Array", "Group", "create_array", "open_array", "create_group", "open_group", "open"]

_NUMPY_OF = {
    "bool": "?",
    "int8": "i1",
    "int16": "i2",
    "int32": "i4",
    "int64": "i8",
    "uint8": "u1",
    "uint16": "u2",
    "uint32": "u4",
    "uint64": "u8",
    "float16": "f2",
    "float32": "f4",
    "float64": "f8",
    "complex64": "c8",
    "complex128": "c16",
}
_NAME_OF = {np.dtype(v).str[1:]: k for k, v in _NUMPY_OF.items()}


def _numpy_dtype(data_type):
    """The numpy dtype (native byte order: the library's buffers are) of a Zarr v3 data type."""
    if isinstance(data_type, dict):
        name = data_type.get("name")
        config = data_type.get("configuration") or {}
        if name == "raw_bytes" and "length_bytes" in config:
            return np.dtype(f"V{int(config['length_bytes'])}")
        raise NotImplementedError(f"data type {json.dumps(data_type)} has no numpy form in zarrshard's Python binding")
    if data_type in _NUMPY_OF:
        return np.dtype(_NUMPY_OF[data_type])
    if data_type.startswith("r") and data_type[1:].isdigit() and int(data_type[1:]) % 8 == 0:
        return np.dtype(f"V{int(data_type[1:]) // 8}")
    raise NotImplementedError(f"data type {data_type!r} has no numpy form in zarrshard's Python binding")


def _zarr_dtype(dtype):
    """The Zarr v3 name of a numpy dtype (what `shard_array_spec.data_type` takes)."""
    dt = np.dtype(dtype)
    key = dt.str[1:]
    if key in _NAME_OF:
        return _NAME_OF[key]
    if dt.kind == "V" and dt.fields is None:
        return f"r{dt.itemsize * 8}"
    raise ValueError(f"data type {dt} is not one zarrshard creates (bool, integers, floats, complex, raw bytes)")


def _fill_value(value, dtype):
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return dtype.type(float(value.replace("Infinity", "inf")))
    if isinstance(value, (bool, int, float)) and dtype.kind in "biufc":
        return dtype.type(value)
    return value


def _fill_json(value, dtype):
    """The fill value as JSON text for the spec (NaN and infinities by name)."""
    if value is None:
        return None
    v = np.asarray(value, dtype=dtype)[()]
    if dtype.kind == "f":
        f = float(v)
        if f != f:
            return '"NaN"'
        if f in (float("inf"), float("-inf")):
            return '"Infinity"' if f > 0 else '"-Infinity"'
        return json.dumps(f)
    if dtype.kind == "b":
        return "true" if bool(v) else "false"
    if dtype.kind in "iu":
        return str(int(v))
    if dtype.kind == "c":
        return json.dumps([float(v.real), float(v.imag)])
    raise ValueError(f"a fill value for {dtype} is not supported by zarrshard's Python binding")


def _compressor(compressors):
    """(name, level) of `shard_array_spec` for zarr-python's `compressors` argument: "auto"
    (zstd level 3), None or () (none), a name, a dict `{"name": ..., "configuration":
    {"level": ...}}`, an object with `to_dict()` (zarr.codecs.ZstdCodec), or a one-item list."""
    if compressors == "auto":
        return "zstd", 3
    if compressors is None or compressors == () or compressors == []:
        return "none", 0
    if isinstance(compressors, (list, tuple)):
        if len(compressors) != 1:
            raise ValueError("zarrshard takes one compressor (zstd, gzip or blosc)")
        compressors = compressors[0]
    if isinstance(compressors, str):
        return compressors, {"zstd": 3, "gzip": 5, "blosc": 5, "none": 0}.get(compressors, 3)
    if hasattr(compressors, "to_dict"):
        compressors = compressors.to_dict()
    if isinstance(compressors, dict):
        name = compressors.get("name")
        config = compressors.get("configuration") or {}
        level = config.get("level", config.get("clevel", {"zstd": 3, "gzip": 5, "blosc": 5}.get(name, 3)))
        return name, int(level)
    raise ValueError(f"compressors: {compressors!r} is not a compressor zarrshard knows")


class Attributes(MutableMapping):
    """A node's attributes; every change writes `zarr.json` (a new object) at once."""

    def __init__(self, read, write):
        self._read = read
        self._write = write

    def asdict(self):
        return json.loads(self._read())

    def put(self, d):
        """Replace all attributes with `d`."""
        self._write(json.dumps(d))

    def update(self, *args, **kwargs):
        d = self.asdict()
        d.update(*args, **kwargs)
        self.put(d)

    def __getitem__(self, k):
        return self.asdict()[k]

    def __setitem__(self, k, v):
        d = self.asdict()
        d[k] = v
        self.put(d)

    def __delitem__(self, k):
        d = self.asdict()
        del d[k]
        self.put(d)

    def __iter__(self):
        return iter(self.asdict())

    def __len__(self):
        return len(self.asdict())

    def __repr__(self):
        return repr(self.asdict())


def _check_mode(mode):
    if mode not in ("r", "r+", "a", "w", "w-"):
        raise ValueError(f"mode {mode!r}: one of 'r', 'r+', 'a', 'w', 'w-'")


class Array:
    """A Zarr v3 array (sharded or not) of a store, as zarr-python's `Array`: `shape`,
    `dtype`, `chunks` (inner chunks), `shards`, `attrs`, numpy indexing with integers,
    step-1 slices and `...`. Reads may come from many threads at once; writes from many
    threads too (each on a handle of its own, shards written whole or updated as units).
    Pickles as (store, path, mode) and reopens where it is unpickled (a Dask worker)."""

    def __init__(self, handle, store, path, mode):
        self._handle = handle
        self.store = store
        self.path = path
        self.mode = mode
        self._lock = threading.Lock()
        self._spare = []
        self._generation = 0
        self._load_metadata()

    # Opening ---------------------------------------------------------------------------

    @classmethod
    def _open(cls, store, path, mode):
        out = ffi.new("shard_array **")
        with store.table() as table:
            check(lib.shard_array_open_path(table.ptr, c_text(path), out), store)
            table.adopted()
        return cls(ffi.gc(out[0], lib.shard_array_close), store, path, mode)

    def _load_metadata(self):
        self.metadata = json.loads(read_string(lambda b, n, w: lib.shard_array_metadata(self._handle, b, n, w)))
        meta = self.metadata
        self.dtype = _numpy_dtype(meta["data_type"])
        self.shape = tuple(int(n) for n in meta["shape"])
        grid = [int(n) for n in meta["chunk_grid"]["configuration"]["chunk_shape"]]
        sharding = next((c for c in meta.get("codecs", []) if c.get("name") == "sharding_indexed"), None)
        if sharding is not None:
            self.shards = tuple(grid)
            self.chunks = tuple(int(n) for n in sharding["configuration"]["chunk_shape"])
        else:
            self.shards = None
            self.chunks = tuple(grid)
        self.fill_value = _fill_value(meta.get("fill_value"), self.dtype)
        names = meta.get("dimension_names")
        self.dimension_names = tuple(names) if names is not None else None

    def __reduce__(self):
        # Unpickling opens the same path again (never creates or replaces: "a", "w" and "w-"
        # come back as "r+"); a `__reduce__` state dict would only set attributes, not open.
        return (_reopen_array, (self.store, self.path, "r" if self.mode == "r" else "r+"))

    def __dask_tokenize__(self):
        # Dask names tasks after this; its default (pickling, then unpickling to check) would
        # reopen the array each time, a request of the store's. The metadata: a resized array
        # gets new names. A store that cannot be pickled (memory) gets a new token each time.
        from dask.base import tokenize

        return ("zarrshard.Array", tokenize(self.store), self.path, self.read_only, json.dumps(self.metadata, sort_keys=True))

    # Properties --------------------------------------------------------------------------

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.uint64)) if self.shape else 1

    @property
    def nbytes(self):
        return self.size * self.dtype.itemsize

    @property
    def read_only(self):
        return self.mode == "r"

    @property
    def attrs(self):
        def write(text):
            self._writable()
            data = text.encode("utf-8")
            with self._lock:
                check(lib.shard_array_set_attributes(self._handle, data, len(data)), self.store)
                self._renew()

        return Attributes(lambda: read_string(lambda b, n, w: lib.shard_array_attributes(self._handle, b, n, w)), write)

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d array")
        return self.shape[0]

    def __repr__(self):
        return f"<zarrshard.Array {self.path or '/'} shape={self.shape} dtype={self.dtype} chunks={self.chunks} shards={self.shards}>"

    def __array__(self, dtype=None, copy=None):
        a = self[...]
        return a if dtype is None else a.astype(dtype)

    # Regions -----------------------------------------------------------------------------

    def _region(self, key):
        """(start, shape, kept axes) of a numpy index; kept is None when every axis is."""
        # The common index, a step-1 slice per axis, on a short path: a small read's cost
        # is mostly this method's and the C call's.
        if type(key) is tuple and len(key) == len(self.shape):
            start, shape = [], []
            for k, n in zip(key, self.shape):
                if type(k) is not slice:
                    break
                a, b, step = k.indices(n)
                if step != 1:
                    break
                start.append(a)
                shape.append(b - a if b > a else 0)
            else:
                return start, shape, None
        if not isinstance(key, tuple):
            key = (key,)
        if sum(k is Ellipsis for k in key) > 1:
            raise IndexError("an index can only have a single ellipsis ('...')")
        if Ellipsis in key:
            i = next(i for i, k in enumerate(key) if k is Ellipsis)
            key = key[:i] + (slice(None),) * (self.ndim - len(key) + 1) + key[i + 1 :]
        if len(key) > self.ndim:
            raise IndexError(f"too many indices for an array of {self.ndim} dimensions: {len(key)}")
        key = key + (slice(None),) * (self.ndim - len(key))
        start, shape, kept = [], [], []
        for d, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, slice):
                a, b, step = k.indices(n)
                if step != 1:
                    raise IndexError(f"axis {d}: only slices with step 1 are supported, not {step}")
                start.append(a)
                shape.append(max(0, b - a))
                kept.append(d)
            elif isinstance(k, (bool, np.bool_)) or not hasattr(k, "__index__"):
                raise IndexError(f"axis {d}: only integers, slices with step 1 and '...' are supported, not {k!r}")
            else:
                i = operator.index(k)
                if not -n <= i < n:
                    raise IndexError(f"index {i} is out of bounds for axis {d} with size {n}")
                start.append(i % n)
                shape.append(1)
        return start, shape, kept

    def read_region(self, start, shape, out=None):
        """The region of extent `shape` at `start` as a C-ordered array; into `out` (C
        contiguous, of this dtype and `shape`) when given, without another copy."""
        shape = tuple(int(n) for n in shape)
        if out is None:
            out = np.empty(shape, dtype=self.dtype)
        elif out.dtype != self.dtype or tuple(out.shape) != shape or not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError(f"out must be a writable C-contiguous {self.dtype} array of shape {shape}")
        self._read(u64s(start), shape, out)
        return out

    def _read(self, start, shape, out):
        """The C read of the region at `start` (a `uint64_t[]`) of extent `shape` (ints)
        into `out`, checked by the caller."""
        if out.size:
            buf = ffi.from_buffer("uint8_t[]", out, require_writable=True)
            status = lib.shard_array_read_region(
                self._handle, start, ffi.new("uint64_t[]", shape), len(shape), buf, out.nbytes
            )
            if status != lib.SHARD_OK:
                check(status, self.store)

    def __getitem__(self, key):
        start, shape, kept = self._region(key)
        out = np.empty(shape, dtype=self.dtype)
        self._read(ffi.new("uint64_t[]", start), shape, out)
        if kept is None:
            return out
        out = out.reshape([shape[d] for d in kept])
        return out[()] if out.ndim == 0 else out

    def _writable(self):
        if self.read_only:
            raise ReadOnlyError(f"array {self.path or '/'} was opened with mode='r'")

    def write_region(self, start, data):
        """Write `data` (an array of this array's rank) at `start`."""
        self._writable()
        data = np.ascontiguousarray(data, dtype=self.dtype)
        self._write(list(start), list(data.shape), data)

    def __setitem__(self, key, value):
        self._writable()
        start, shape, kept = self._region(key)
        value = np.asarray(value, dtype=self.dtype)
        data = np.ascontiguousarray(np.broadcast_to(value, shape if kept is None else [shape[d] for d in kept])).reshape(shape)
        self._write(start, shape, data)

    def _write(self, start, shape, data):
        if data.size == 0:
            return
        buf = ffi.from_buffer("uint8_t[]", data)
        args = (u64s(start), u64s(shape), len(shape), buf, data.nbytes)
        # A handle has one writer at a time: a thread that finds it busy writes through a
        # handle of its own (kept for the next), so threads write shards in parallel.
        if self._lock.acquire(blocking=False):
            try:
                check(lib.shard_array_write_region(self._handle, *args), self.store)
            finally:
                self._lock.release()
            return
        generation = self._generation
        try:
            # Not `if self._spare`: another thread may take the last one in between.
            handle = self._spare.pop()
        except IndexError:
            handle = Array._open(self.store, self.path, self.mode)._handle
        try:
            check(lib.shard_array_write_region(handle, *args), self.store)
        finally:
            if generation == self._generation:
                self._spare.append(handle)
        # This handle's cached indexes of the shards just written are stale.
        self.forget_cached_indexes()

    def forget_cached_indexes(self):
        """Drop the shard indexes this array has cached, so that its next reads see what other
        handles or processes wrote since (writes through this `Array` need no call)."""
        check(lib.shard_array_forget_cached_indexes(self._handle))

    def set_index_cache(self, nbytes):
        """Bound the cache of shard indexes of this array (default 8 MiB; 0: none). With it,
        a second read of a shard costs only its chunks' reads: one request over S3 or HTTP."""
        check(lib.shard_array_set_index_cache(self._handle, int(nbytes)))

    def _renew(self):
        """After a change of shape or attributes: spare handles reopen, metadata reloads."""
        self._generation += 1
        self._spare = []
        self._load_metadata()

    # Shape -------------------------------------------------------------------------------

    def resize(self, *shape):
        """Set the shape (any dimension may grow or shrink; data past a shrunken edge is
        deleted and reads as the fill value if it grows again)."""
        self._writable()
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        with self._lock:
            check(lib.shard_array_resize(self._handle, u64s(shape), len(shape)), self.store)
            self._renew()

    def append(self, data, axis=0, *, flush=True):
        """Append `data` at the end of `axis` (it spans the other axes) and return the new
        shape. With `flush=False` frames are gathered per shard layer and each shard written
        once, whole, when its layer is complete (a stream of frames: call `flush()` or close
        the array when done); the default writes a partial layer at once, as zarr-python
        does."""
        self._writable()
        data = np.ascontiguousarray(data, dtype=self.dtype)
        if data.ndim != self.ndim:
            raise ValueError(f"append: data of {data.ndim} dimensions to an array of {self.ndim}")
        buf = ffi.from_buffer("uint8_t[]", data)
        with self._lock:
            check(lib.shard_array_append(self._handle, axis, u64s(data.shape), data.ndim, buf, data.nbytes), self.store)
            if flush:
                check(lib.shard_array_flush(self._handle), self.store)
            self._renew()
        return self.shape

    def flush(self):
        """Write the frames appended with `flush=False` and not yet stored."""
        if self.read_only:
            return
        with self._lock:
            check(lib.shard_array_flush(self._handle), self.store)

    def close(self):
        """Flush and release the handle (also when garbage collected, where errors are lost)."""
        if self._handle is None:
            return
        self.flush()
        ffi.release(self._handle)
        self._handle = None
        self._spare = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Group:
    """A Zarr v3 group: attributes, and arrays and groups below it by name."""

    def __init__(self, store, path, mode):
        self.store = store
        self.path = path
        self.mode = mode
        self._attributes()  # fails when no group is there

    def _attributes(self):
        with self.store.table() as table:
            return read_string(lambda b, n, w: lib.shard_group_attributes(table.ptr, c_text(self.path), b, n, w))

    def _set_attributes(self, text):
        if self.mode == "r":
            raise ReadOnlyError(f"group {self.path or '/'} was opened with mode='r'")
        data = text.encode("utf-8")
        with self.store.table() as table:
            check(lib.shard_group_set_attributes(table.ptr, c_text(self.path), data, len(data)), self.store)

    @property
    def attrs(self):
        return Attributes(self._attributes, self._set_attributes)

    def _child(self, name):
        return f"{self.path}/{name}" if self.path else name

    def __getitem__(self, name):
        try:
            return open_array(self.store, path=self._child(name), mode=self.mode if self.mode == "r" else "r+")
        except InvalidMetadataError:
            return open_group(self.store, path=self._child(name), mode=self.mode if self.mode == "r" else "r+")

    def create_array(self, name, **kwargs):
        return create_array(self.store, name=self._child(name), **kwargs)

    def create_group(self, name, **kwargs):
        return create_group(self.store, path=self._child(name), **kwargs)

    def __reduce__(self):
        return (_reopen_group, (self.store, self.path, "r" if self.mode == "r" else "r+"))

    def __repr__(self):
        return f"<zarrshard.Group {self.path or '/'}>"


def _reopen_array(store, path, mode):
    """The `Array` at `path` of `store` opened again where it is unpickled (a Dask worker):
    one read of its metadata, no data."""
    return Array._open(store, path, mode)


def _reopen_group(store, path, mode):
    """The `Group` at `path` of `store` opened again where it is unpickled."""
    return Group(store, path, mode)


def create_array(
    store,
    *,
    name=None,
    shape,
    dtype,
    chunks,
    shards=None,
    compressors="auto",
    fill_value=None,
    attributes=None,
    dimension_names=None,
    overwrite=False,
    checksums=("index",),
    index_location="end",
    storage_options=None,
):
    """Create a Zarr v3 array, as zarr-python's `create_array`: `chunks` is the inner chunk
    shape (the unit read and compressed), `shards` the shard shape (a multiple of `chunks`;
    None: unsharded); `compressors` "auto" (zstd 3), None, "zstd"/"gzip"/"blosc", a dict or a
    zarr codec; `checksums` ("index", "chunks"); `index_location` "end" or "start". A node
    already at the path is refused unless `overwrite`."""
    store = store_of(store, storage_options)
    path = name or ""
    shape = tuple(int(n) for n in ((shape,) if isinstance(shape, int) else shape))
    rank = len(shape)
    chunks = tuple(int(n) for n in ((chunks,) if isinstance(chunks, int) else chunks))
    dt = np.dtype(dtype)
    spec = ffi.new("shard_array_spec *")
    check(lib.shard_array_spec_init(spec))
    keep = []  # the C strings and arrays the spec points to, alive through the call

    def hold(x):
        keep.append(x)
        return x

    spec.rank = rank
    spec.shape = hold(u64s(shape))
    spec.chunk_shape = hold(u64s(chunks))
    if shards is not None:
        spec.shard_shape = hold(u64s((shards,) if isinstance(shards, int) else shards))
    spec.data_type = hold(c_text(_zarr_dtype(dt)))
    fill = _fill_json(fill_value, dt)
    if fill is not None:
        spec.fill_value = hold(c_text(fill))
    name_, level = _compressor(compressors)
    spec.compressor = hold(c_text(name_))
    spec.compression_level = level
    if index_location not in ("end", "start"):
        raise ValueError(f"index_location {index_location!r}: 'end' or 'start'")
    spec.index_location = lib.SHARD_INDEX_AT_START if index_location == "start" else lib.SHARD_INDEX_AT_END
    flags = 0
    for c in checksums or ():
        if c not in ("index", "chunks"):
            raise ValueError(f"checksums: {c!r} is not 'index' or 'chunks'")
        flags |= lib.SHARD_CHECKSUM_INDEX if c == "index" else lib.SHARD_CHECKSUM_CHUNKS
    spec.checksums = flags
    if dimension_names is not None:
        if len(dimension_names) != rank:
            raise ValueError(f"dimension_names: {len(dimension_names)} names for {rank} dimensions")
        names = hold([hold(c_text(n)) if n is not None else ffi.NULL for n in dimension_names])
        spec.dimension_names = hold(ffi.new("const char *[]", names))
    out = ffi.new("shard_array **")
    with store.table(create=True) as table:
        check(
            lib.shard_array_create_spec(
                table.ptr, c_text(path), spec, lib.SHARD_CREATE_OVERWRITE if overwrite else 0, out
            ),
            store,
        )
        table.adopted()
    array = Array(ffi.gc(out[0], lib.shard_array_close), store, path, "r+")
    if attributes:
        array.attrs.put(dict(attributes))
    return array


def open_array(store, *, path="", mode="a", storage_options=None, **create_kwargs):
    """Open the array at `path`, as zarr-python's `open_array`: mode "r" (read only), "r+"
    (read and write), "a" (read and write; created from `create_kwargs` when missing), "w"
    (created, replacing what is there), "w-" (created, refused if something is there)."""
    _check_mode(mode)
    store = store_of(store, storage_options)
    if mode in ("w", "w-"):
        return create_array(store, name=path, overwrite=mode == "w", **create_kwargs)
    try:
        return Array._open(store, path, mode)
    except (InvalidMetadataError, StoreNotFoundError):
        if mode == "a" and "shape" in create_kwargs:
            return create_array(store, name=path, **create_kwargs)
        raise


def create_group(store, *, path="", attributes=None, overwrite=False, storage_options=None):
    """Create a Zarr v3 group (refused where a node is, unless `overwrite`)."""
    store = store_of(store, storage_options)
    text = json.dumps(dict(attributes or {})).encode("utf-8")
    with store.table(create=True) as table:
        check(
            lib.shard_group_create(table.ptr, c_text(path), text, len(text), lib.SHARD_CREATE_OVERWRITE if overwrite else 0),
            store,
        )
    return Group(store, path, "r+")


def open_group(store, *, path="", mode="a", storage_options=None, attributes=None):
    """Open the group at `path` ("r", "r+"; "a" creates it when missing; "w" replaces)."""
    _check_mode(mode)
    store = store_of(store, storage_options)
    if mode in ("w", "w-"):
        return create_group(store, path=path, attributes=attributes, overwrite=mode == "w")
    try:
        return Group(store, path, mode)
    except (InvalidMetadataError, StoreNotFoundError):
        if mode == "a":
            return create_group(store, path=path, attributes=attributes)
        raise


def open(store, *, path="", mode="a", storage_options=None, **kwargs):
    """The array or group at `path`."""
    try:
        return open_array(store, path=path, mode="r" if mode == "r" else ("r+" if mode == "a" else mode), storage_options=storage_options, **kwargs)
    except InvalidMetadataError:
        return open_group(store, path=path, mode=mode, storage_options=storage_options)
