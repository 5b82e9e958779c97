//! What the library keeps between calls, and how a host gets it back.
//!
//! Encoding and decoding reuse memory from one call to the next, so that no inner chunk
//! allocates:
//!
//! * per thread that has encoded or decoded (the pool's threads and host threads alike): a
//!   zstd compression context and a zstd decompression context, a libdeflate compressor for
//!   gzip, and one decoded inner chunk of scratch;
//! * per process: the free list of encode segments ([`crate::shard::encoded`]), at most
//!   [`crate::shard::encoded::KEPT_PER_THREAD`] × threads × 256 KiB (4 MiB per thread of the pool).
//!
//! Region reads keep nothing: the buffers they fetch shards into are recycled from pass to
//! pass within the call and freed when it returns.
//!
//! A host that is done writing (or decoding) for a while calls [`release_memory`] to free all
//! of it that it can reach: the free list, and the per-thread state of the calling thread and
//! of every thread of the pool. The next call rebuilds what it needs, once per thread. Other
//! host threads keep their own state until they exit (thread-local storage is freed then) or
//! call [`release_memory`] themselves. The pool's threads stay while the thread setting is
//! above 1; while it is 1 they only sleep (kept so that switching back is quick, see
//! [`crate::set_threads`]), and [`release_memory`] ends them. A handle's cached index lives as
//! long as the handle.
//!
//! Where we differ: zarrs keeps nothing between calls and makes a new zstd context for each
//! chunk, which costs time on every chunk. Keeping the memory by default and freeing it on
//! request gives hosts the speed and the memory back.

use crate::runtime::threads;

/// What one [`release_memory`] call freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Released {
    /// Bytes of the library's own buffers freed: encode segments on the free list and
    /// per-thread scratch chunks. Exact.
    pub bytes: u64,
    /// Codec contexts freed (zstd compression and decompression contexts, libdeflate
    /// compressors). Counted rather than measured: libdeflate does not report its size.
    pub contexts: usize,
}

impl std::ops::AddAssign for Released {
    fn add_assign(&mut self, other: Released) {
        self.bytes += other.bytes;
        self.contexts += other.contexts;
    }
}

/// Free the memory the library keeps between calls (see the module docs): the encode
/// segments on the free list and the codec contexts and scratch buffers of the calling thread
/// and of every thread of the pool; while the thread setting is 1, the pool's sleeping threads
/// are ended too (a later setting above 1 starts new ones). Returns what was freed; a second
/// call right after returns zeros unless another thread encoded or decoded in between.
///
/// Thread-safe, and safe to call while other threads encode or decode: memory in use by a
/// call in progress is not touched (a context in use on a pool thread is skipped, segments
/// held by a shard being written go back to the free list when it is written). Waits until
/// every thread of the pool has taken part, which on a busy pool is after the inner chunk or
/// task each one is running.
pub fn release_memory() -> Released {
    let mut released = release_thread_state();
    for on_pool_thread in threads::on_each_pool_thread(release_thread_state) {
        released += on_pool_thread;
    }
    released.bytes += crate::shard::encoded::release_free_segments();
    threads::end_sleeping_pool();
    released
}

/// Free this thread's codec contexts and scratch chunk.
fn release_thread_state() -> Released {
    Released {
        bytes: crate::codec::sharding::release_scratch(),
        contexts: crate::codec::release_contexts(),
    }
}
