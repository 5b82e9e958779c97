//! Status codes: one `repr(C)` enum whose numbers are fixed forever (new codes are appended,
//! none is ever reused), and the one function that maps every core error onto them.

use crate::error::Error;

/// Result of every fallible `shard_*` function. `SHARD_OK` is 0; every other value is an
/// error whose details `shard_last_error` copies out. The numbers never change.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum shard_status {
    /// Success.
    SHARD_OK = 0,
    /// A required pointer argument was NULL.
    SHARD_ERR_NULL_POINTER = 1,
    /// Metadata or configuration JSON is malformed or violates the specification.
    SHARD_ERR_INVALID_METADATA = 2,
    /// A codec (or codec option) this build does not implement.
    SHARD_ERR_UNSUPPORTED_CODEC = 3,
    /// The shard's bytes cannot be decoded (bad index entry, truncated object, bad stream).
    SHARD_ERR_CORRUPT = 4,
    /// A crc32c checksum (index or inner chunk) does not match.
    SHARD_ERR_CHECKSUM = 5,
    /// An I/O callback failed; `shard_last_io_code` returns the host's code.
    SHARD_ERR_IO = 6,
    /// A caller buffer has the wrong length.
    SHARD_ERR_BUFFER_SIZE = 7,
    /// An argument is out of range (chunk coordinates, rank, mode, flags, UTF-8), or a buffer
    /// the metadata asks for exceeds the memory limit (`ZARRSHARD_MEMORY_LIMIT`).
    SHARD_ERR_INVALID_ARGUMENT = 8,
    /// The handle's state forbids the call (write after finalize, read on a write handle).
    SHARD_ERR_INVALID_STATE = 9,
    /// The I/O callbacks lack an operation the call needs (e.g. `write`, `remove`).
    SHARD_ERR_UNSUPPORTED = 10,
    /// A bug in zarrshard was caught at the boundary; the handle should be closed.
    SHARD_ERR_PANIC = 11,
    /// A write handle was used from two threads at once; the second call was refused.
    SHARD_ERR_BUSY = 12,
}

impl From<&Error> for shard_status {
    fn from(e: &Error) -> Self {
        use shard_status::*;
        match e {
            Error::InvalidMetadata(_) => SHARD_ERR_INVALID_METADATA,
            Error::UnsupportedCodec(_) => SHARD_ERR_UNSUPPORTED_CODEC,
            Error::Corrupt { .. } => SHARD_ERR_CORRUPT,
            Error::ChecksumMismatch { .. } => SHARD_ERR_CHECKSUM,
            Error::Io { .. } => SHARD_ERR_IO,
            Error::BufferSize { .. } => SHARD_ERR_BUFFER_SIZE,
            Error::InvalidArgument(_) | Error::MemoryLimit { .. } => SHARD_ERR_INVALID_ARGUMENT,
            Error::InvalidState(_) => SHARD_ERR_INVALID_STATE,
            Error::Unsupported(_) => SHARD_ERR_UNSUPPORTED,
        }
    }
}

impl shard_status {
    /// A short, static description of the status.
    pub(crate) fn describe(self) -> &'static std::ffi::CStr {
        use shard_status::*;
        match self {
            SHARD_OK => c"ok",
            SHARD_ERR_NULL_POINTER => c"a required pointer argument was NULL",
            SHARD_ERR_INVALID_METADATA => c"invalid metadata",
            SHARD_ERR_UNSUPPORTED_CODEC => c"unsupported codec",
            SHARD_ERR_CORRUPT => c"corrupt shard",
            SHARD_ERR_CHECKSUM => c"checksum mismatch",
            SHARD_ERR_IO => c"I/O callback failed",
            SHARD_ERR_BUFFER_SIZE => c"wrong buffer size",
            SHARD_ERR_INVALID_ARGUMENT => c"invalid argument",
            SHARD_ERR_INVALID_STATE => c"invalid state",
            SHARD_ERR_UNSUPPORTED => c"operation not supported by the I/O callbacks",
            SHARD_ERR_PANIC => c"internal error (panic caught)",
            SHARD_ERR_BUSY => c"handle busy: used from two threads at once",
        }
    }
}
