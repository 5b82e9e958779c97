"""Where arrays live: the library's own directory and memory stores, and any fsspec file
system (S3, GCS, Azure, HTTP, memory) as a host store whose callbacks are Python functions.

An fsspec store maps the library's calls onto fsspec's: ranged reads to `cat_file` (a suffix
read is one request), the byte ranges of one shard to the concurrent `cat_ranges`, listing to
`find`, and every write of an object to a *new object* that replaces the old one only when
complete: one PUT (`pipe_file`), or for an object past `multipart_threshold` on an object
store a multipart upload (`open(..., autocommit=False)`) completed at commit and aborted on a
failure, so readers never see a torn shard. The library asks for no write at an offset."""

import errno
import io
import threading

from ._lib import ffi, lib, check, c_text

__all__ = ["Store", "LocalStore", "MemoryStore", "FsspecStore", "store_of"]


class _Table:
    """One store table handed to one call: released after it unless an array adopted it."""

    def __init__(self, ptr, release=None):
        self.ptr = ptr
        self._release = release

    def adopted(self):
        self._release = None

    def close(self):
        if self._release is not None:
            release, self._release = self._release, None
            release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Store:
    """A place arrays and groups live in (a directory, memory, a bucket)."""

    def table(self, create=False):
        """A `_Table` for one call; `create`: the call may make the store's root."""
        raise NotImplementedError

    def take_callback_error(self, message=""):
        """The exception a Python callback of this store raised for the object `message`
        names (or last), if any: the cause of a `StoreError`."""
        return None


class LocalStore(Store):
    """A directory on the local file system, through the library's own directory store
    (temporary files renamed over shards: a shard is replaced only when complete). Pickles
    as its path."""

    def __init__(self, root):
        import os

        self.root = os.fspath(root)
        self._tables = {}
        self._lock = threading.Lock()

    def table(self, create=False):
        flags = lib.SHARD_STORE_CREATE if create else 0
        with self._lock:
            ptr = self._tables.get(flags)
            if ptr is None:
                ptr = ffi.new("shard_store_callbacks *")
                check(lib.shard_store_directory(c_text(self.root), flags, ptr))
                self._tables[flags] = ffi.gc(ptr, lib.shard_store_release)
                ptr = self._tables[flags]
        # Shared: arrays keep the library's store alive themselves.
        return _Table(ptr)

    def __reduce__(self):
        return (LocalStore, (self.root,))

    def __repr__(self):
        return f"LocalStore({self.root!r})"

    def __eq__(self, other):
        return isinstance(other, LocalStore) and other.root == self.root

    def __hash__(self):
        return hash(("LocalStore", self.root))


class MemoryStore(Store):
    """The library's memory store: for tests and scratch arrays; lives as long as this object
    or an array on it. It cannot be pickled (another process has other memory)."""

    def __init__(self):
        self._ptr = ffi.new("shard_store_callbacks *")
        check(lib.shard_store_memory(self._ptr))
        self._ptr = ffi.gc(self._ptr, lib.shard_store_release)

    def table(self, create=False):
        return _Table(self._ptr)

    def __reduce__(self):
        raise TypeError("a zarrshard.MemoryStore cannot be pickled: its arrays live in this process's memory")

    def __repr__(self):
        return "MemoryStore()"


# Python objects the library holds through `void *` (stores, objects, new objects), kept
# alive here until the library gives them back.
_live = {}


def _hold(obj):
    handle = ffi.new_handle(obj)
    _live[int(ffi.cast("uintptr_t", handle))] = handle
    return handle


def _drop(ptr):
    _live.pop(int(ffi.cast("uintptr_t", ptr)), None)


# Object stores that write large objects as multipart uploads through an fsspec file opened
# with autocommit=False (completed by `commit`, aborted by `discard`).
_MULTIPART_PROTOCOLS = {"s3", "s3a", "gs", "gcs", "abfs", "az", "abfss"}
# S3's smallest part but the last (s3fs refuses to open a file for writing with less).
_S3_PART_MIN = 5 << 20


class FsspecStore(Store):
    """An fsspec file system at `path` as a host store (thread-safe: the library reads and
    writes several shards at once from its worker threads, each callback taking the GIL only
    around fsspec's call). `multipart_threshold`: objects larger go up as multipart uploads
    in parts of that size, on object stores (default: the file system's
    `default_block_size`, s3fs's 50 MiB, or 50 MiB; at least 5 MiB on S3). Pickles as (fs, path, threshold)."""

    def __init__(self, fs, path="", *, multipart_threshold=None):
        self.fs = fs
        self.root = fs._strip_protocol(path).rstrip("/") if path else ""
        protocols = fs.protocol if isinstance(fs.protocol, (tuple, list)) else (fs.protocol,)
        self.multipart = any(p in _MULTIPART_PROTOCOLS for p in protocols)
        if multipart_threshold is None:
            # Not `fs.blocksize`: fsspec's generic 4 MiB, below S3's smallest part.
            multipart_threshold = getattr(fs, "default_block_size", None) or 50 << 20
        self.multipart_threshold = int(multipart_threshold)
        if self.multipart_threshold < _S3_PART_MIN and any(p in ("s3", "s3a") for p in protocols):
            # Refused here, not at the first large write as a store error.
            raise ValueError(
                f"multipart_threshold {self.multipart_threshold}: S3's parts are at least 5 MiB ({_S3_PART_MIN} bytes)"
            )
        # The exceptions callbacks raised lately, by key (bounded): the cause of the
        # StoreError whose message names that key.
        self._errors = {}
        self._error_lock = threading.Lock()

    @classmethod
    def from_url(cls, url, storage_options=None, **kwargs):
        """The store at an fsspec URL (`s3://bucket/path`, `memory://x`)."""
        import fsspec

        fs, path = fsspec.core.url_to_fs(url, **(storage_options or {}))
        return cls(fs, path, **kwargs)

    def path_of(self, key):
        return f"{self.root}/{key}" if self.root else key

    def table(self, create=False):
        handle = _hold(self)
        ptr = ffi.new("shard_store_callbacks *")
        ptr.version = lib.SHARD_STORE_VERSION
        ptr.flags = lib.SHARD_STORE_THREAD_SAFE
        ptr.userdata = handle
        ptr.open_object = lib.zs_py_open_object
        ptr.destroy = lib.zs_py_store_destroy
        ptr.list = lib.zs_py_list
        # Until an array adopts the table, this store's handle is ours to drop.
        return _Table(ptr, lambda: _drop(handle))

    def record(self, exc, key):
        with self._error_lock:
            self._errors.pop(key, None)
            self._errors[key] = exc
            while len(self._errors) > 64:
                del self._errors[next(iter(self._errors))]

    def take_callback_error(self, message=""):
        """The exception a callback raised for the key `message` names (the library's
        message names the object: "... failed for `c/0/1`"), else the latest one."""
        with self._error_lock:
            if not self._errors:
                return None
            named = [k for k in self._errors if f"`{k}`" in message]
            key = named[-1] if named else next(reversed(self._errors))
            return self._errors.pop(key)

    def __reduce__(self):
        return (_fsspec_store, (self.fs, self.root, self.multipart_threshold))

    def __repr__(self):
        return f"FsspecStore({type(self.fs).__name__}, {self.root!r})"


def _fsspec_store(fs, root, threshold):
    return FsspecStore(fs, root, multipart_threshold=threshold)


def store_of(store, storage_options=None):
    """A `Store` for what users pass: a `Store`, a local path (str or os.PathLike), a
    `file://` URL, another fsspec URL (`s3://…`), or an fsspec file system."""
    import os

    if isinstance(store, Store):
        return store
    if isinstance(store, os.PathLike):
        return LocalStore(store)
    if isinstance(store, str):
        if "://" not in store:
            return LocalStore(store)
        if store.startswith("file://"):
            return LocalStore(store[len("file://"):])
        return FsspecStore.from_url(store, storage_options)
    if hasattr(store, "cat_file") and hasattr(store, "protocol"):
        return FsspecStore(store)
    raise TypeError(f"not a store: {store!r} (a path, an fsspec URL or file system, or a zarrshard store)")


class _Object:
    """One object the library opened through an FsspecStore."""

    __slots__ = ("store", "key", "path")

    def __init__(self, store, key):
        self.store = store
        self.key = key
        self.path = store.path_of(key)


def _missing_bucket(exc):
    """True for a FileNotFoundError about the bucket, not the object (s3fs's for NoSuchBucket
    carries botocore's error as its cause): a mistyped bucket must not read as a missing
    array."""
    response = getattr(exc.__cause__, "response", None)
    return isinstance(response, dict) and (response.get("Error") or {}).get("Code") == "NoSuchBucket"


def _code_of(exc, missing=lib.SHARD_IO_NOT_FOUND):
    """The host code reported for `exc`: a missing object is `missing`, a missing bucket
    ENOENT, refused credentials EACCES, an OSError its errno, anything else EIO."""
    if isinstance(exc, FileNotFoundError):
        return errno.ENOENT if _missing_bucket(exc) else missing
    if isinstance(exc, PermissionError) and not exc.errno:
        # s3fs's for a 403 has no errno.
        return errno.EACCES
    if isinstance(exc, OSError) and isinstance(exc.errno, int) and exc.errno > 0:
        return exc.errno
    return errno.EIO


def _fail(store, exc, missing=lib.SHARD_IO_NOT_FOUND, key=""):
    code = _code_of(exc, missing)
    if code != lib.SHARD_IO_NOT_FOUND:
        store.record(exc, key)
    return code


def _beyond_end(exc):
    """True for an object store's answer to a range that starts at or past the end (HTTP
    416). s3fs's OSError says only "The requested range is not satisfiable"; botocore's error
    behind it has the code."""
    for e in (exc, exc.__cause__):
        response = getattr(e, "response", None)
        if isinstance(response, dict):
            if (response.get("Error") or {}).get("Code") == "InvalidRange":
                return True
            if (response.get("ResponseMetadata") or {}).get("HTTPStatusCode") == 416:
                return True
    text = str(exc)
    return "InvalidRange" in text or "416" in text or "range is not satisfiable" in text.lower()


def _ignore(exception, exc_value, traceback):
    # Every callback catches its own errors; this only keeps cffi from printing.
    return None


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_open_object(userdata, key, io_out):
    store = ffi.from_handle(userdata)
    try:
        obj = _Object(store, ffi.string(key).decode("utf-8"))
        io_out.version = 3
        io_out.userdata = _hold(obj)
        io_out.read = lib.zs_py_read
        io_out.read_suffix = lib.zs_py_read_suffix
        io_out.size = lib.zs_py_size
        io_out.remove = lib.zs_py_remove
        io_out.destroy = lib.zs_py_object_destroy
        io_out.read_vectored = lib.zs_py_read_vectored
        io_out.create_new = lib.zs_py_create_new
        io_out.write_new = lib.zs_py_write_new
        io_out.commit_new = lib.zs_py_commit_new
        io_out.discard_new = lib.zs_py_discard_new
        return 0
    except BaseException as exc:
        return _fail(store, exc, errno.EIO)


@ffi.def_extern(onerror=_ignore)
def zs_py_store_destroy(userdata):
    _drop(userdata)


@ffi.def_extern(onerror=_ignore)
def zs_py_object_destroy(userdata):
    _drop(userdata)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_list(userdata, prefix, on_key, list_state):
    store = ffi.from_handle(userdata)
    try:
        prefix = ffi.string(prefix).decode("utf-8")
        base = store.path_of(prefix)
        # `find` lists a directory's tree; a prefix that ends inside a name lists its parent.
        where = base if prefix.endswith("/") or not prefix else base.rsplit("/", 1)[0]
        try:
            found = store.fs.find(where)
        except FileNotFoundError as exc:
            if _missing_bucket(exc):
                raise
            found = []
        skip = len(store.root) + 1 if store.root else 0
        for path in found:
            path = store.fs._strip_protocol(path)
            key = path[skip:]
            if key.startswith(prefix):
                data = key.encode("utf-8")
                on_key(list_state, data, len(data))
        return 0
    except BaseException as exc:
        return _fail(store, exc, errno.EIO)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_read(userdata, offset, length, buf, read_out):
    obj = ffi.from_handle(userdata)
    try:
        try:
            data = obj.store.fs.cat_file(obj.path, start=offset, end=offset + length)
        except FileNotFoundError:
            raise
        except Exception as exc:
            if not _beyond_end(exc):
                raise
            data = b""
        n = min(len(data), length)
        ffi.memmove(buf, data, n)
        read_out[0] = n
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_read_suffix(userdata, length, buf, read_out, size_out):
    obj = ffi.from_handle(userdata)
    try:
        data = obj.store.fs.cat_file(obj.path, start=-length) if length else b""
        n = min(len(data), length)
        ffi.memmove(buf, data[len(data) - n:], n)
        read_out[0] = n
        if n < length:
            # Shorter than asked: the whole object.
            size_out[0] = n
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_size(userdata, size_out):
    obj = ffi.from_handle(userdata)
    try:
        size_out[0] = int(obj.store.fs.size(obj.path))
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_read_vectored(userdata, count, offsets, lens, bufs, read_outs):
    obj = ffi.from_handle(userdata)
    try:
        starts = [offsets[k] for k in range(count)]
        ends = [offsets[k] + lens[k] for k in range(count)]
        # One call, the ranges fetched concurrently by fsspec (its async file systems).
        got = obj.store.fs.cat_ranges([obj.path] * count, starts, ends, on_error="return")
        for k, data in enumerate(got):
            if isinstance(data, BaseException):
                if isinstance(data, FileNotFoundError) or not _beyond_end(data):
                    raise data
                data = b""
            n = min(len(data), lens[k])
            ffi.memmove(bufs[k], data, n)
            read_outs[k] = n
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_remove(userdata):
    obj = ffi.from_handle(userdata)
    try:
        try:
            obj.store.fs.rm_file(obj.path)
        except FileNotFoundError:
            pass
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, errno.EIO, key=obj.key)


class _NewObject:
    """An object being written: in memory, or once past the multipart threshold (and written
    from its start without gaps) streamed into a multipart upload in parts of exactly the
    threshold (the last one the rest). The parts are cut here because fsspec's object-store
    files send whatever they buffered as one part, whatever the block size: a 16 MiB write
    would go up as one 16 MiB part."""

    def __init__(self, obj):
        self.obj = obj
        self.buffer = io.BytesIO()
        self.end = 0
        self.in_order = True
        self.file = None

    def write(self, offset, data):
        store = self.obj.store
        if self.file is not None:
            if offset != self.end:
                raise ValueError(f"{self.obj.key}: a write at {offset} after streaming up to {self.end}")
            self.buffer.write(data)
            self.end += len(data)
            self._send_parts()
            return
        self.in_order = self.in_order and offset == self.end
        self.buffer.seek(offset)
        self.buffer.write(data)
        self.end = max(self.end, offset + len(data))
        if self.in_order and store.multipart and self.end > store.multipart_threshold:
            self.file = store.fs.open(self.obj.path, "wb", autocommit=False, block_size=store.multipart_threshold)
            self.buffer.seek(0, io.SEEK_END)
            self._send_parts()

    def _send_parts(self):
        """Hand the file every whole part buffered (each fills its buffer to the block size,
        which uploads it); keep the rest."""
        size = self.obj.store.multipart_threshold
        with self.buffer.getbuffer() as view:
            whole = len(view) // size * size
            if not whole:
                return
            for at in range(0, whole, size):
                self.file.write(view[at:at + size])
            rest = bytes(view[whole:])
        self.buffer = io.BytesIO()
        self.buffer.write(rest)

    def commit(self, length):
        if length != self.end:
            raise ValueError(f"{self.obj.key}: committed at {length} bytes, written {self.end}")
        if self.file is not None:
            self.file.write(self.buffer.getbuffer())
            self.buffer = None
            self.file.close()
            self.file.commit()
            self.file = None
        else:
            self.obj.store.fs.pipe_file(self.obj.path, self.buffer.getvalue())
            self.buffer = None

    def discard(self):
        self.buffer = None
        if self.file is not None:
            file, self.file = self.file, None
            try:
                file.discard()
            finally:
                # Discarded (or its abort failed): closing it, by the garbage collector too,
                # must not send the parts it still holds.
                file.closed = True


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_create_new(userdata, new_out):
    obj = ffi.from_handle(userdata)
    try:
        new_out[0] = _hold(_NewObject(obj))
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, errno.EIO, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_write_new(userdata, new, offset, buf, length):
    obj = ffi.from_handle(userdata)
    try:
        ffi.from_handle(new).write(offset, bytes(ffi.buffer(buf, length)))
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, errno.EIO, key=obj.key)


@ffi.def_extern(error=errno.EIO, onerror=_ignore)
def zs_py_commit_new(userdata, new, length):
    obj = ffi.from_handle(userdata)
    try:
        pending = ffi.from_handle(new)
        try:
            pending.commit(length)
        except BaseException:
            pending.discard()
            raise
        return 0
    except BaseException as exc:
        return _fail(obj.store, exc, errno.EIO, key=obj.key)
    finally:
        _drop(new)


@ffi.def_extern(onerror=_ignore)
def zs_py_discard_new(userdata, new):
    try:
        ffi.from_handle(new).discard()
    finally:
        _drop(new)
