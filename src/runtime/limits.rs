//! The memory limit: the most bytes one buffer the library allocates for decoded data (an
//! inner chunk, a whole shard, one slab of an export or import) may take.
//!
//! Shapes come from metadata, which may be hostile or simply wrong: a `zarr.json` that says a
//! chunk is 2^40 elements must be refused with an error, not attempted until the host is out
//! of memory. The limit is a process-wide setting ([`set_memory_limit`], or the environment
//! variable `ZARRSHARD_MEMORY_LIMIT` in bytes, read once), checked before each such
//! allocation; it also caps what a decompressor may produce when no configuration bounds it.
//!
//! Metadata has fixed limits of its own, the same for every way in (a file a store holds, a
//! `Value` built in code, the C API's JSON text): [`MAX_METADATA_BYTES`] for one document,
//! [`MAX_METADATA_STRUCTURE_BYTES`] for what is parsed into a JSON tree (everything but the
//! `attributes`, which are kept as text), and [`MAX_SHARDING_NESTING`] for `sharding_indexed`
//! codecs inside each other. They keep the memory and stack that opening an array takes a small
//! multiple of the document, whatever it holds.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The default limit: 4 GiB per buffer. Large enough for any shard a reader decodes whole in
/// practice (zarr-python's and tensorstore's defaults hold whole shards, typically < 1 GiB);
/// hosts that mean more raise it.
pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;

/// The largest metadata document (`zarr.json`, `.zarray`, `.zattrs`, a v3-draft
/// `*.array.json`, the JSON text given to the C API) read: 64 MiB. Real documents are a few KB;
/// the room is for large `attributes`, kept as text (about their own size in memory). A larger
/// document is refused with [`Error::InvalidMetadata`] naming it, before it is read.
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

/// The most bytes of a metadata document parsed into a JSON tree: every member but
/// `attributes` (and extension members that may be ignored): 1 MiB. A tree takes up to ~80
/// times its text (each number a tree node), so this bounds that memory to tens of MB; shapes,
/// codecs and dimension names of any real array take a few KB.
pub const MAX_METADATA_STRUCTURE_BYTES: u64 = 1 << 20;

/// How deep `sharding_indexed` codecs may nest: 32 levels (a sharded array whose inner codecs
/// hold no other sharding codec is 1 level). Deeper metadata is refused with
/// [`Error::InvalidMetadata`] naming this limit, whether it comes from a file, a `Value` or
/// the C API; every depth up to it opens (its JSON stays within the parser's 128 levels), and
/// reading and writing through it stay far within a 2 MiB thread stack.
pub const MAX_SHARDING_NESTING: usize = 32;

/// 0 = not read from the environment yet.
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Set the most bytes one decoded buffer may take (0 restores the default). Takes effect for
/// calls that start afterwards; safe to call from any thread.
pub fn set_memory_limit(bytes: u64) {
    let v = if bytes == 0 { from_env() } else { bytes };
    LIMIT.store(v, Ordering::Relaxed);
}

/// The current limit in bytes.
pub fn memory_limit() -> u64 {
    match LIMIT.load(Ordering::Relaxed) {
        0 => {
            let v = from_env();
            LIMIT.store(v, Ordering::Relaxed);
            v
        }
        v => v,
    }
}

/// `ZARRSHARD_MEMORY_LIMIT` when it is a positive number of bytes, else the default.
fn from_env() -> u64 {
    std::env::var("ZARRSHARD_MEMORY_LIMIT")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(DEFAULT_MEMORY_LIMIT)
}

/// `bytes` as a buffer length, or [`Error::MemoryLimit`] naming `what` when it exceeds the
/// limit (or the address space).
pub fn buffer_len(bytes: u64, what: &str) -> Result<usize> {
    let limit = memory_limit();
    match usize::try_from(bytes) {
        Ok(n) if bytes <= limit => Ok(n),
        _ => Err(Error::MemoryLimit {
            what: what.to_string(),
            needed: bytes,
            limit,
        }),
    }
}
