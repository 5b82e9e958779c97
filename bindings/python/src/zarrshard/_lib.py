"""The C library as Python sees it: the cffi module, the exceptions that carry the library's
statuses and messages, and the few conversions every call needs. Every C call releases the
GIL (cffi does so for each call), so Python threads read and write in parallel."""

import errno
import threading

from ._native import ffi, lib

# What the package exports from here (the modules of the package import ffi, lib, check
# and the helpers by name).
__all__ = [
    "ZarrshardError",
    "InvalidArgumentError",
    "InvalidMetadataError",
    "UnsupportedError",
    "CorruptError",
    "ChecksumError",
    "StoreError",
    "StoreNotFoundError",
    "InvalidStateError",
    "BusyError",
    "ReadOnlyError",
    "set_threads",
    "get_threads",
]


class ZarrshardError(Exception):
    """A call of the library failed. `status` is its stable `shard_status` number,
    `status_name` its name (`"SHARD_ERR_CORRUPT"`), and the message the library's own text,
    naming the key, path or field at fault."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status
        self.status_name = _STATUS_NAMES.get(status, f"status {status}")
        self.message = message


class InvalidArgumentError(ZarrshardError, ValueError):
    """An argument is out of range or has the wrong size (`SHARD_ERR_INVALID_ARGUMENT`,
    `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_NULL_POINTER`)."""


class InvalidMetadataError(ZarrshardError, ValueError):
    """Metadata is malformed, violates the specification, or no node is there
    (`SHARD_ERR_INVALID_METADATA`)."""


class UnsupportedError(ZarrshardError, NotImplementedError):
    """A codec or an operation this build or this store does not have
    (`SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_UNSUPPORTED`)."""


class CorruptError(ZarrshardError):
    """Stored bytes cannot be decoded (`SHARD_ERR_CORRUPT`)."""


class ChecksumError(CorruptError):
    """A crc32c checksum does not match (`SHARD_ERR_CHECKSUM`)."""


class StoreError(ZarrshardError, OSError):
    """The store failed (`SHARD_ERR_IO`); `io_code` is the store's own code (an errno for the
    directory store). When a Python store callback raised, that exception is the
    `__cause__`."""

    def __init__(self, status, message, io_code):
        ZarrshardError.__init__(self, status, message)
        self.io_code = io_code


class StoreNotFoundError(StoreError, FileNotFoundError):
    """The store's root (a directory) or an object it needs does not exist: a `StoreError`
    whose `io_code` is ENOENT."""


class InvalidStateError(ZarrshardError):
    """The call is not allowed now (`SHARD_ERR_INVALID_STATE`): a node already exists, say."""


class BusyError(ZarrshardError):
    """Another thread is writing through the same array handle (`SHARD_ERR_BUSY`)."""


class ReadOnlyError(PermissionError):
    """A write to an array or group opened with `mode="r"`."""


_STATUS_NAMES = {
    lib.SHARD_OK: "SHARD_OK",
    lib.SHARD_ERR_NULL_POINTER: "SHARD_ERR_NULL_POINTER",
    lib.SHARD_ERR_INVALID_METADATA: "SHARD_ERR_INVALID_METADATA",
    lib.SHARD_ERR_UNSUPPORTED_CODEC: "SHARD_ERR_UNSUPPORTED_CODEC",
    lib.SHARD_ERR_CORRUPT: "SHARD_ERR_CORRUPT",
    lib.SHARD_ERR_CHECKSUM: "SHARD_ERR_CHECKSUM",
    lib.SHARD_ERR_IO: "SHARD_ERR_IO",
    lib.SHARD_ERR_BUFFER_SIZE: "SHARD_ERR_BUFFER_SIZE",
    lib.SHARD_ERR_INVALID_ARGUMENT: "SHARD_ERR_INVALID_ARGUMENT",
    lib.SHARD_ERR_INVALID_STATE: "SHARD_ERR_INVALID_STATE",
    lib.SHARD_ERR_UNSUPPORTED: "SHARD_ERR_UNSUPPORTED",
    lib.SHARD_ERR_PANIC: "SHARD_ERR_PANIC",
    lib.SHARD_ERR_BUSY: "SHARD_ERR_BUSY",
}

_CLASSES = {
    lib.SHARD_ERR_NULL_POINTER: InvalidArgumentError,
    lib.SHARD_ERR_INVALID_ARGUMENT: InvalidArgumentError,
    lib.SHARD_ERR_BUFFER_SIZE: InvalidArgumentError,
    lib.SHARD_ERR_INVALID_METADATA: InvalidMetadataError,
    lib.SHARD_ERR_UNSUPPORTED_CODEC: UnsupportedError,
    lib.SHARD_ERR_UNSUPPORTED: UnsupportedError,
    lib.SHARD_ERR_CORRUPT: CorruptError,
    lib.SHARD_ERR_CHECKSUM: ChecksumError,
    lib.SHARD_ERR_INVALID_STATE: InvalidStateError,
    lib.SHARD_ERR_BUSY: BusyError,
}


def last_error():
    """The message of the last failed call on this thread."""
    n = ffi.new("size_t *")
    lib.shard_last_error(ffi.NULL, 0, n)
    buf = ffi.new("char[]", n[0] + 1)
    lib.shard_last_error(buf, n[0] + 1, n)
    return ffi.string(buf, n[0]).decode("utf-8", "replace")


def error_of(status, store=None):
    """The exception for a failed call's `status` (read on the thread that made the call)."""
    message = last_error()
    if status == lib.SHARD_ERR_IO:
        code = lib.shard_last_io_code()
        err = (StoreNotFoundError if code == errno.ENOENT else StoreError)(status, message, code)
        cause = store.take_callback_error(message) if store is not None else None
        if cause is not None:
            err.__cause__ = cause
        return err
    return _CLASSES.get(status, ZarrshardError)(status, message)


def check(status, store=None):
    """Raise the exception of `status` unless it is `SHARD_OK`."""
    if status != lib.SHARD_OK:
        raise error_of(status, store)


def u64s(values):
    """A `uint64_t[]` of `values` (kept alive by the caller while the call runs)."""
    return ffi.new("uint64_t[]", [int(v) for v in values])


def c_text(text):
    """A NUL-terminated UTF-8 `char[]` of `text`, or NULL for None."""
    if text is None:
        return ffi.NULL
    return ffi.new("char[]", text.encode("utf-8"))


def read_string(call):
    """Run `call(buf, len, written_out)` twice, as the C API's size query and copy, and return
    the text."""
    n = ffi.new("size_t *")
    check(call(ffi.NULL, 0, n))
    buf = ffi.new("char[]", n[0] + 1)
    check(call(buf, n[0] + 1, n))
    return ffi.string(buf, n[0]).decode("utf-8")


_threads_lock = threading.Lock()


def set_threads(threads):
    """Set how many threads the library encodes and decodes with (process-wide; 1 keeps all
    work on the calling thread). The default is the number of CPUs, or
    `ZARRSHARD_THREADS`."""
    with _threads_lock:
        check(lib.shard_set_threads(int(threads)))


def get_threads():
    """How many threads the library encodes and decodes with."""
    n = ffi.new("size_t *")
    check(lib.shard_get_threads(n))
    return n[0]


for _cls in (ZarrshardError, InvalidArgumentError, InvalidMetadataError, UnsupportedError, CorruptError,
             ChecksumError, StoreError, StoreNotFoundError, InvalidStateError, BusyError, ReadOnlyError):
    _cls.__module__ = "zarrshard"
