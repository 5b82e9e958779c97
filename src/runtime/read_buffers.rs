//! Large read buffers kept from one region read to the next.
//!
//! A region read fetches each shard's wanted bytes into a buffer of its own: for a whole-array
//! read of the benchmark's array, one ~1.5 MB buffer per shard, four per row of shards. Freed
//! when the call returns, glibc at its default settings gives that memory back to the kernel
//! (a freed block above the mmap threshold is unmapped; a pool thread's arena is trimmed once
//! its free top passes the trim threshold), and the next call faults it in again page by page:
//! 360–3 500 page faults per two-thread whole-array decode, which took 22.1–23.5 ms by median
//! against 20.1–20.9 ms with the buffers kept (`BENCHMARKS.md`, *Read buffers kept between
//! calls*). The same happened to encoded chunks before [`crate::shard::encoded`] kept its segments.
//!
//! So the buffers a region read is done with go to a process-wide list, and the next pass, of
//! the same call or a later one, takes them from it, the largest first: up to
//! [`KEPT_BYTES_PER_THREAD`] × the thread setting in all, and never more than
//! [`KEPT_BYTES_MAX`] (so a many-core host keeps at most 64 MiB). Buffers under
//! [`MIN_KEPT`] bytes (single chunks, indexes) are left to `malloc`, which serves such sizes
//! from memory it keeps. A kept buffer holds whatever was read into it last; a read into it
//! (`io::read_buffer`) zeroes only what a longer read adds before the back end overwrites it.
//! [`crate::release_memory`] frees the list.
//!
//! Where we differ: zarrs reads every range into a new buffer; under glibc's defaults it pays
//! the same faults (the benchmark harness's `mallopt` spares every Rust implementation them
//! alike).

use crate::runtime::threads;
use std::sync::Mutex;

/// Buffers smaller than this are not kept.
pub const MIN_KEPT: usize = 64 << 10;

/// How many bytes of buffers the list keeps per thread of the pool setting (8 MiB): a row of
/// four of the benchmark's shards fetched whole (~6 MB) with one thread.
pub const KEPT_BYTES_PER_THREAD: usize = 8 << 20;

/// The most bytes of buffers the list keeps, whatever the thread setting (64 MiB).
pub const KEPT_BYTES_MAX: usize = 64 << 20;

/// Buffers no read is using, by capacity, smallest first.
static KEPT: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

fn kept() -> std::sync::MutexGuard<'static, Vec<Vec<u8>>> {
    KEPT.lock().unwrap_or_else(|e| e.into_inner())
}

/// Up to `n` kept buffers, the largest first (for the `spare` of a read).
pub(crate) fn take(n: usize) -> Vec<Vec<u8>> {
    let mut kept = kept();
    let from = kept.len().saturating_sub(n);
    let mut taken = kept.split_off(from);
    taken.reverse();
    taken
}

/// Keep `bufs` for later reads: those of [`MIN_KEPT`] bytes or more, the largest while the
/// list stays within [`KEPT_BYTES_PER_THREAD`] × the thread setting (at most
/// [`KEPT_BYTES_MAX`]); the rest are freed.
pub(crate) fn keep(bufs: impl IntoIterator<Item = Vec<u8>>) {
    keep_in(&mut kept(), bufs, limit_for(threads::threads()));
}

/// The list's limit for a thread setting of `threads`.
fn limit_for(threads: usize) -> usize {
    KEPT_BYTES_PER_THREAD
        .saturating_mul(threads.max(1))
        .min(KEPT_BYTES_MAX)
}

/// [`keep`] into `list` (sorted by capacity, smallest first) within `limit` bytes.
fn keep_in(list: &mut Vec<Vec<u8>>, bufs: impl IntoIterator<Item = Vec<u8>>, limit: usize) {
    list.extend(bufs.into_iter().filter(|b| b.capacity() >= MIN_KEPT));
    list.sort_unstable_by_key(Vec::capacity);
    let mut total: usize = list.iter().map(Vec::capacity).sum();
    // The smallest go first: a large read then still finds a buffer that holds it.
    let mut dropped = 0;
    while total > limit {
        total -= list[dropped].capacity();
        dropped += 1;
    }
    list.drain(..dropped);
}

/// What the list holds now.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeptReads {
    /// Buffers kept.
    pub buffers: usize,
    /// Their bytes (capacity).
    pub bytes: u64,
}

/// The kept read buffers now. Thread-safe; for tests and the benchmark.
pub fn kept_reads() -> KeptReads {
    let kept = kept();
    KeptReads {
        buffers: kept.len(),
        bytes: kept.iter().map(|b| b.capacity() as u64).sum(),
    }
}

/// Free every kept buffer and return their bytes (part of [`crate::release_memory`]). Buffers
/// a read is using are not affected.
pub(crate) fn release() -> u64 {
    let kept = std::mem::take(&mut *kept());
    kept.iter().map(|b| b.capacity() as u64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    // On a list of its own: other unit tests read regions, which use the process's list.
    #[test]
    fn keeps_the_largest_within_the_limit() {
        let limit = 4 * MIN_KEPT;
        let mut list = Vec::new();
        let with = |n: usize| Vec::<u8>::with_capacity(n);
        keep_in(
            &mut list,
            [with(MIN_KEPT - 1), with(MIN_KEPT), with(2 * MIN_KEPT)],
            limit,
        );
        // The small one is not kept; the others fit (3 × MIN_KEPT).
        let caps = |l: &Vec<Vec<u8>>| l.iter().map(Vec::capacity).collect::<Vec<_>>();
        assert_eq!(caps(&list), [MIN_KEPT, 2 * MIN_KEPT]);
        // 5 × MIN_KEPT is over the limit: the smallest goes.
        keep_in(&mut list, [with(2 * MIN_KEPT)], limit);
        assert_eq!(caps(&list), [2 * MIN_KEPT, 2 * MIN_KEPT]);
        // One larger than the limit alone: nothing stays.
        keep_in(&mut list, [with(5 * MIN_KEPT)], limit);
        assert!(list.is_empty());
    }

    #[test]
    fn the_limit_grows_with_the_threads_up_to_64_mib() {
        assert_eq!(limit_for(0), 8 << 20);
        assert_eq!(limit_for(2), 16 << 20);
        assert_eq!(limit_for(8), 64 << 20);
        assert_eq!(limit_for(1024), 64 << 20);
    }
}
