//! The memory limit: the most bytes one buffer the library allocates for decoded data (an
//! inner chunk, a whole shard, one slab of an export or import) may take.
//!
//! Shapes come from metadata, which may be hostile or simply wrong: a `zarr.json` that says a
//! chunk is 2^40 elements must be refused with an error, not attempted until the host is out
//! of memory. The limit is a process-wide setting ([`set_memory_limit`], or the environment
//! variable `ZARRSHARD_MEMORY_LIMIT` in bytes, read once), checked before each such
//! allocation; it also caps what a decompressor may produce when no configuration bounds it.

use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};

/// The default limit: 4 GiB per buffer. Large enough for any shard a reader decodes whole in
/// practice (zarr-python's and tensorstore's defaults hold whole shards, typically < 1 GiB);
/// hosts that mean more raise it.
pub const DEFAULT_MEMORY_LIMIT: u64 = 4 << 30;

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
