//! A buffered shard written while its inner chunks are still being encoded.
//!
//! A whole shard written through the `Array` (`write_region` of its extent, `write_shard`,
//! `write_shard_with` buffered) has its inner chunks encoded by the pool. Written only once
//! every chunk was encoded, the object's write (creating the temporary file, copying the shard
//! into the page cache, the rename) would run on one thread while the others idle. Here the chunks are encoded in the order they are laid out, and
//! after each chunk the thread that finished it, unless another is writing, writes the
//! finished chunks at the front of what is not written yet, in pieces ending on multiples of
//! [`PIECE`] bytes. The remainder and the index follow when every chunk is encoded.
//!
//! The object goes through the back end's [`ObjectSink`] (for files, the temporary sibling
//! that is renamed over the shard at the end), so readers see the old object until the new
//! one is complete, as with a whole-object write, and a failure leaves it as it was. The
//! bytes are exactly those of [`crate::shard::writer::WriteStrategy::Buffered`]: the same order
//! (C or Morton), the same index, chunks equal to the fill value left out the same way.
//!
//! Used when a shard written from the host's thread is encoded by the pool (two threads or
//! more, a back end with an [`ObjectSink`] whose I/O may
//! run on any thread). Shards written side by side on the pool (a whole-array write) already
//! overlap one shard's write with the others' encoding: there, and on one thread, the
//! buffered writer writes each object at once, which costs less (one aligned write).
//!
//! The encoded chunks live in segments reserved for the call (`encoded::Reserved`), so a
//! finished chunk is a shared slice that whichever thread writes can read, without a copy and
//! without `unsafe`.
//!
//! Where we differ: zarrs and tensorstore encode every inner chunk of a shard, assemble the
//! shard in one buffer and then write it; zarr-python the same, a chunk at a time.

use crate::codec::sharding::index::{ChunkLocation, ShardIndex};
use crate::codec::sharding::{IndexLocation, ShardLayout};
use crate::error::Result;
use crate::runtime::threads;
use crate::shard::encoded::{Cut, Reserved};
use crate::shard::writer::{delete_unstored, file_order, Finalized, WriteOptions};
use crate::storage::io::{ObjectSink, ShardIo};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};

/// Chunks are written during the encode in pieces that end on multiples of this many bytes of
/// the object (see `Progress::advance`): large enough that a system call is small beside the
/// copy, small enough that little is left for the end.
pub const PIECE: u64 = 256 << 10;

/// Encode shard `layout`'s inner chunks, which `fill(i, chunk)` writes decoded, and write them
/// with the index through `sink`, a new object of `io` (see the module docs). Chunks are
/// encoded by the pool ([`threads::map_init`]). Returns what was
/// written; a shard with no stored chunk deletes the object instead (nothing is written).
///
/// Errors: the codecs' and the back end's, the lowest chunk's first; the old object is then
/// unchanged.
pub(crate) fn encode_and_write(
    layout: &ShardLayout,
    io: &dyn ShardIo,
    sink: Box<dyn ObjectSink + '_>,
    options: WriteOptions,
    ratio: &Ratio,
    fill: impl Fn(usize, &mut [u8]) + Sync + Send,
) -> Result<Finalized> {
    let n = layout.num_chunks();
    let order = file_order(layout, options.order);
    let raw = n.saturating_mul(layout.inner_byte_size());
    let mut reserved = Reserved::take(ratio.estimate(raw, n), threads::threads().min(n));
    let rooms = reserved.rooms();
    // By position in the file order: set once the chunk there is encoded (`None`: not stored).
    let done: Vec<OnceLock<Option<Cut>>> = (0..n).map(|_| OnceLock::new()).collect();
    let at_start = layout.codec().index_location == IndexLocation::Start;
    let progress = Mutex::new(Progress {
        sink,
        next: 0,
        partial: 0,
        offset: if at_start { layout.index_size() } else { 0 },
        index: ShardIndex::new_empty(n),
    });
    threads::map_init(
        n,
        || rooms.cutter(),
        |out, k| {
            let i = order[k] as usize;
            let kept = layout.encode_chunk_to(i, options.store_fill_chunks, &fill, out)?;
            let _ = done[k].set(kept.map(|len| out.cut(len)));
            match progress.try_lock() {
                Ok(mut p) => p.advance(&done, &order),
                // Another thread is writing: this one goes on encoding.
                Err(TryLockError::WouldBlock) => Ok(()),
                Err(TryLockError::Poisoned(p)) => p.into_inner().advance(&done, &order),
            }
        },
    )?;
    let mut p = progress.into_inner().unwrap_or_else(|e| e.into_inner());
    let (at, mut rest) = p.take(&done, &order, None);
    if p.index.stored().next().is_none() {
        // Nothing was written, so the sink made nothing.
        drop(p.sink);
        return delete_unstored(io, false);
    }
    // The rest of the chunks and the index after them in one write, or the index at 0.
    let index = p.index.encode(layout)?;
    let size = match at_start {
        true => {
            if !rest.is_empty() {
                p.sink.write_parts_at(at, &rest)?;
            }
            p.sink.write_parts_at(0, &[&index])?;
            p.offset
        }
        false => {
            rest.push(&index);
            p.sink.write_parts_at(at, &rest)?;
            p.offset + index.len() as u64
        }
    };
    p.sink.commit(size)?;
    ratio.note(size - index.len() as u64, raw);
    Ok(Finalized::Written { size })
}

/// Encoded over decoded bytes of the last shard an array wrote here, in 1024ths (0 before the
/// first): how much room the next one reserves. One per array, since arrays differ in how
/// their data compresses.
#[derive(Debug, Default)]
pub(crate) struct Ratio(AtomicUsize);

impl Ratio {
    /// The bytes to reserve for the `n` chunks of a shard of `raw` decoded bytes: what the
    /// last shard's ratio makes of them, plus 1/16 and a little per chunk for codecs' headers;
    /// the decoded size before any shard was written (what stored and most compressed chunks
    /// stay under), since reserving the decoded size every time would hold about twice what a
    /// compressed shard needs. An estimate that falls short only costs the chunks past it a
    /// buffer of their own.
    fn estimate(&self, raw: usize, n: usize) -> usize {
        let per_chunk = n.saturating_mul(64);
        match self.0.load(Ordering::Relaxed) {
            0 => raw.saturating_add(per_chunk),
            r => (raw / 1024)
                .saturating_mul(r + r / 16)
                .saturating_add(per_chunk),
        }
    }

    /// A shard of `raw` decoded bytes was written as `encoded` bytes of chunks.
    fn note(&self, encoded: u64, raw: usize) {
        let r = encoded.saturating_mul(1024) / (raw as u64).max(1);
        self.0.store(r.clamp(1, 4096) as usize, Ordering::Relaxed);
    }
}

/// How far the object is written: behind the lock that one writing thread holds.
struct Progress<'a> {
    sink: Box<dyn ObjectSink + 'a>,
    /// The position, in the file order, of the first chunk not yet written whole.
    next: usize,
    /// How many of that chunk's bytes are written (a piece ends inside it).
    partial: usize,
    /// Where the next byte goes.
    offset: u64,
    /// The entries of the chunks written (or begun) so far.
    index: ShardIndex,
}

impl Progress<'_> {
    /// Write the finished chunks' bytes from `offset` up to the last multiple of [`PIECE`]
    /// they reach. Pieces end there because the page cache then takes them in large folios.
    fn advance(&mut self, done: &[OnceLock<Option<Cut>>], order: &[u64]) -> Result<()> {
        let (at, parts) = self.take(done, order, Some(PIECE));
        match parts.is_empty() {
            true => Ok(()),
            false => self.sink.write_parts_at(at, &parts),
        }
    }

    /// The finished chunks' bytes from `offset` up to the last multiple of `piece` they reach
    /// (all of them, with `None`), with the offset they go to, entering each chunk in the index
    /// as its first byte is taken; `offset` moves past them.
    fn take<'d>(
        &mut self,
        done: &'d [OnceLock<Option<Cut>>],
        order: &[u64],
        piece: Option<u64>,
    ) -> (u64, Vec<&'d [u8]>) {
        let start = self.offset;
        let finished = || done[self.next..].iter().map_while(OnceLock::get);
        let ready: u64 = finished().flatten().map(|c| c.bytes().len() as u64).sum();
        let end = start + ready - self.partial as u64;
        let end = piece.map_or(end, |piece| end / piece * piece);
        let mut parts = Vec::new();
        if end <= start && piece.is_some() {
            return (start, parts);
        }
        // Chunks finished since `ready` was summed are left for the next piece.
        while let Some(kept) = done.get(self.next).and_then(OnceLock::get) {
            if self.offset == end && piece.is_some() {
                break;
            }
            if let Some(c) = kept {
                let bytes = &c.bytes()[self.partial..];
                if self.partial == 0 {
                    let loc = ChunkLocation {
                        offset: self.offset,
                        nbytes: bytes.len() as u64,
                    };
                    self.index.set(order[self.next] as usize, Some(loc));
                }
                let take = bytes.len().min((end - self.offset) as usize);
                parts.push(&bytes[..take]);
                self.offset += take as u64;
                if take < bytes.len() {
                    self.partial += take;
                    break;
                }
            }
            self.next += 1;
            self.partial = 0;
        }
        (start, parts)
    }
}
