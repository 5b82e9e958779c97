//! The one error type of the core.
//!
//! Corrupt input is always an error value, never a panic: every decoder checks lengths and
//! arithmetic before it trusts a number that came from storage.

use std::fmt;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Coordinates of an inner chunk inside its shard, printed as `[i, j, …]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkCoords(pub Vec<u64>);

impl fmt::Display for ChunkCoords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        shown(&self.0).fmt(f)
    }
}

/// How many values of a coordinate or shape list an error message spells out.
const SHOWN_VALUES: usize = 16;

/// A coordinate or shape list for an error message: `[1, 2, 3]`, or past
/// [`SHOWN_VALUES`] values the first ones and a count (`[0, 0, …, 99984 more]`), so a hostile
/// rank-100 000 configuration gives a short message rather than hundreds of kilobytes.
pub(crate) fn shown(values: &[u64]) -> Shown<'_> {
    Shown(values)
}

/// How many characters of a value from the host's metadata an error message spells out.
const SHOWN_CHARS: usize = 256;

/// A value from the host's metadata (JSON, a name) for an error message, cut after
/// [`SHOWN_CHARS`] characters (`{"a":[1,2,… (40000 bytes)`): metadata may be any size.
pub(crate) fn shown_text(value: impl fmt::Display) -> String {
    let text = value.to_string();
    match text.char_indices().nth(SHOWN_CHARS) {
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
        None => text,
    }
}

/// See [`shown`].
pub(crate) struct Shown<'a>(&'a [u64]);

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[")?;
        for (i, c) in self.0.iter().take(SHOWN_VALUES).enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{c}")?;
        }
        if self.0.len() > SHOWN_VALUES {
            write!(f, ", … {} more", self.0.len() - SHOWN_VALUES)?;
        }
        write!(f, "]")
    }
}

/// What a shard object too short for its index or an index entry is reported as: the same
/// words wherever it is found, with the hint that a torn write is the usual cause.
pub(crate) fn truncated(size: u64, needed: u64) -> String {
    format!("object is {size} bytes, index needs {needed}: torn write? try `zarrshard repair`")
}

/// [`truncated`] for a read of `needed - offset` bytes at `offset` that returned `got`: the
/// object's size is `offset + got` when some bytes came back; with none, only that it ends at
/// or before `offset`.
pub(crate) fn truncated_read(offset: u64, got: u64, needed: u64) -> String {
    if got > 0 {
        return truncated(offset + got, needed);
    }
    format!(
        "object ends at or before byte {offset}, index needs {needed}: torn write? try `zarrshard repair`"
    )
}

/// Prefix `KEY: ` when the error is about a stored shard, so a message starts with the object
/// it is about wherever it is shown.
fn shard_prefix(shard: &Option<String>) -> String {
    match shard {
        Some(key) => format!("{key}: "),
        None => String::new(),
    }
}

/// Prefix `inner chunk [i, j]: ` when the error is tied to one inner chunk.
fn chunk_prefix(chunk: &Option<ChunkCoords>) -> String {
    match chunk {
        Some(c) => format!("inner chunk {c}: "),
        None => String::new(),
    }
}

/// Everything that can go wrong in zarrshard.
///
/// Each variant maps to one stable C status code (see the FFI layer); the message names the
/// offending value, chunk or codec.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The metadata (`zarr.json`, a codec configuration, `.zarray`) is malformed or violates
    /// the specification.
    #[error("invalid metadata: {0}")]
    InvalidMetadata(String),

    /// A codec name (or a codec option) this build does not implement.
    #[error("unsupported codec `{0}`")]
    UnsupportedCodec(String),

    /// The bytes of a shard or inner chunk cannot be decoded: bad index entry, truncated
    /// object, undecodable compressed stream, decoded size mismatch.
    #[error(
        "{}corrupt shard: {}{reason}",
        shard_prefix(shard),
        chunk_prefix(chunk)
    )]
    Corrupt {
        /// The key of the shard object concerned, when known ([`Error::in_shard`]).
        shard: Option<String>,
        /// The inner chunk concerned, when known.
        chunk: Option<ChunkCoords>,
        /// What is wrong.
        reason: String,
    },

    /// A crc32c checksum (index or inner chunk) does not match its data.
    #[error(
        "{}checksum mismatch: {}{what}: stored {stored:#010x}, computed {computed:#010x}",
        shard_prefix(shard),
        chunk_prefix(chunk)
    )]
    ChecksumMismatch {
        /// The key of the shard object concerned, when known ([`Error::in_shard`]).
        shard: Option<String>,
        /// The inner chunk concerned, when known (None for the shard index).
        chunk: Option<ChunkCoords>,
        /// Which checksum (`shard index`, `crc32c codec`).
        what: String,
        /// Checksum stored in the data.
        stored: u32,
        /// Checksum computed over the data.
        computed: u32,
    },

    /// The storage back end failed. `code` is the host's own error code (an errno for the
    /// file back end), kept so the host can act on it.
    #[error("I/O error (code {code}): {message}")]
    Io {
        /// The back end's error code.
        code: i32,
        /// What failed.
        message: String,
    },

    /// A caller-supplied buffer has the wrong length.
    #[error("wrong buffer size: expected {expected} bytes, got {actual}")]
    BufferSize {
        /// Bytes required.
        expected: u64,
        /// Bytes given.
        actual: u64,
    },

    /// An argument is out of range (chunk coordinates outside the shard, …).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),

    /// A call that the object's state does not allow: a write after `finalize`, a writer used
    /// from two threads at once.
    #[error("invalid state: {0}")]
    InvalidState(String),

    /// A buffer the metadata asks for (a decoded chunk, shard or slab) is larger than the
    /// memory limit ([`crate::runtime::limits::set_memory_limit`], `ZARRSHARD_MEMORY_LIMIT`); refused
    /// before anything is allocated.
    #[error("memory limit: {what} needs {needed} bytes, more than the limit of {limit} (raise it with set_memory_limit or ZARRSHARD_MEMORY_LIMIT)")]
    MemoryLimit {
        /// What the buffer was for.
        what: String,
        /// Bytes it would take.
        needed: u64,
        /// The limit in force.
        limit: u64,
    },

    /// The I/O back end does not offer an optional operation (size, delete, …).
    #[error("operation not supported by the I/O back end: {0}")]
    Unsupported(String),
}

impl Error {
    /// Shorthand for [`Error::InvalidMetadata`].
    pub fn metadata(msg: impl Into<String>) -> Self {
        Error::InvalidMetadata(msg.into())
    }

    /// Shorthand for [`Error::Corrupt`] without chunk coordinates.
    pub fn corrupt(reason: impl Into<String>) -> Self {
        Error::Corrupt {
            shard: None,
            chunk: None,
            reason: reason.into(),
        }
    }

    /// [`Error::Io`] for an operation on `path`: the OS error code and a message naming the
    /// path.
    pub fn io_at(path: &std::path::Path, e: std::io::Error) -> Self {
        Error::Io {
            code: e.raw_os_error().unwrap_or(-1),
            message: format!("{}: {e}", path.display()),
        }
    }

    /// Name the shard an error is about: a corrupt-shard or checksum error then starts with
    /// its key (`c/1/0: corrupt shard: inner chunk [0, 0]: …`) wherever it is shown, the C
    /// API's `shard_last_error` included, and keeps its variant and status. The first key
    /// given stays; other errors are not about the shard's bytes and are returned as they are
    /// (an I/O error names its path already).
    pub fn in_shard(self, key: &str) -> Self {
        match self {
            Error::Corrupt {
                shard: None,
                chunk,
                reason,
            } => Error::Corrupt {
                shard: Some(key.to_owned()),
                chunk,
                reason,
            },
            Error::ChecksumMismatch {
                shard: None,
                chunk,
                what,
                stored,
                computed,
            } => Error::ChecksumMismatch {
                shard: Some(key.to_owned()),
                chunk,
                what,
                stored,
                computed,
            },
            other => other,
        }
    }

    /// The key of the shard a corrupt-shard or checksum error is about, when it was named
    /// ([`Error::in_shard`]).
    pub fn shard(&self) -> Option<&str> {
        match self {
            Error::Corrupt { shard, .. } | Error::ChecksumMismatch { shard, .. } => {
                shard.as_deref()
            }
            _ => None,
        }
    }

    /// The error's text without the `KEY: ` that [`Error::in_shard`] put first: for a report
    /// that shows the key already, so it is not printed twice.
    pub fn text_without_shard(&self) -> String {
        let text = self.to_string();
        match self.shard() {
            Some(key) => text
                .strip_prefix(&format!("{key}: "))
                .map_or(text.clone(), str::to_owned),
            None => text,
        }
    }

    /// Attach inner-chunk coordinates to a decoding error that does not have them yet.
    pub fn at_chunk(self, coords: &[u64]) -> Self {
        match self {
            Error::Corrupt {
                shard,
                chunk: None,
                reason,
            } => Error::Corrupt {
                shard,
                chunk: Some(ChunkCoords(coords.to_vec())),
                reason,
            },
            Error::ChecksumMismatch {
                shard,
                chunk: None,
                what,
                stored,
                computed,
            } => Error::ChecksumMismatch {
                shard,
                chunk: Some(ChunkCoords(coords.to_vec())),
                what,
                stored,
                computed,
            },
            other => other,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io {
            code: e.raw_os_error().unwrap_or(-1),
            message: e.to_string(),
        }
    }
}
