//! A shard's encoded inner chunks between encoding and writing, held in reused memory.
//!
//! A buffered shard write encodes its inner chunks in parallel and keeps them until one
//! vectored write hands the whole object to the store. One allocation per chunk (what zarrs
//! does, and what this crate did before) is cheap in `malloc` itself, but under glibc's default
//! settings the memory a shard's chunks took goes back to the kernel once they are freed (the
//! arena is trimmed, or a large block unmapped), and the next shard faults it in again page by
//! page (`docs/design-notes-2026-11-29.md`, *shard: encode segments*).
//!
//! Here each thread taking part in an encode appends the chunks it encodes to a *segment*: a
//! [`SEGMENT`]-byte buffer from a process-wide free list. A compressor writes straight into the
//! segment (through `codec::EncodeTarget`), so there is no per-chunk allocation and no copy.
//! The segments go back to the free list when the shard is written ([`EncodedChunks`] is
//! dropped), and the list keeps up to [`KEPT_PER_THREAD`] segments per thread of the pool
//! (4 MiB per thread), so the next shard finds its memory already mapped. That memory stays
//! with the process after the call returns, as the codecs' per-thread contexts do
//! ([`crate::release_memory`] frees both). A chunk whose encoding may not fit in a segment (an
//! inner chunk over ~256 KiB) gets a buffer of its own.
//!
//! Where we differ: zarrs encodes each inner chunk into a new `Vec` (with a new zstd context)
//! and then copies the chunks into a shard-sized buffer it allocates for every shard.
//!
//! A shard written while it encodes (`crate::shard::streamed`) takes its segments from the same list,
//! but up front (`Reserved`): other threads write its finished chunks to storage while it
//! still runs, which needs them in memory that outlives the threads filling it.
//!
//! A buffered writer's chunks given one at a time (`ShardWriter::write_chunk`) are appended to
//! segments of the writer's own in the same way (`EncodedChunks::put_with`); chunks handed
//! over already encoded ([`EncodedChunks::set`]: `write_chunk_encoded`, chunks copied by
//! `repack`) keep their buffers.

use crate::codec::EncodeTarget;
use crate::error::Result;
use crate::runtime::threads;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// The size of one segment: 32 benchmark chunks (8 KiB each before compression), small enough
/// that a thread's last, partly filled segment wastes little.
pub const SEGMENT: usize = 256 << 10;

/// How many free segments the process keeps per thread of the pool (4 MiB): enough for the
/// chunks of two compressed shards of a few MB in flight per thread.
pub const KEPT_PER_THREAD: usize = 16;

/// Segments no shard is using, kept for the next one.
static FREE: Mutex<Vec<Box<[u8]>>> = Mutex::new(Vec::new());

/// Segments made since the process started.
static MADE: AtomicU64 = AtomicU64::new(0);

fn take_segment() -> Box<[u8]> {
    let free = FREE.lock().unwrap_or_else(|e| e.into_inner()).pop();
    free.unwrap_or_else(|| {
        MADE.fetch_add(1, Ordering::Relaxed);
        vec![0u8; SEGMENT].into_boxed_slice()
    })
}

/// Return segments to the free list, up to its limit; the rest are freed (outside the lock).
fn give_back(segments: Vec<Box<[u8]>>) {
    if segments.is_empty() {
        return;
    }
    let keep = KEPT_PER_THREAD * threads::threads();
    let mut extra = Vec::new();
    let mut free = FREE.lock().unwrap_or_else(|e| e.into_inner());
    for s in segments {
        match free.len() < keep && s.len() == SEGMENT {
            true => free.push(s),
            false => extra.push(s),
        }
    }
    drop(free);
    drop(extra);
}

/// What the segment free list has done so far (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentCounts {
    /// Segments allocated since the process started (each [`SEGMENT`] bytes).
    pub made: u64,
    /// Segments on the free list now, held for the next encode.
    pub free: usize,
}

/// The segment counts now. Thread-safe; for tests and the benchmark (an encode that finds
/// its memory on the free list makes no segment).
pub fn segment_counts() -> SegmentCounts {
    SegmentCounts {
        made: MADE.load(Ordering::Relaxed),
        free: FREE.lock().unwrap_or_else(|e| e.into_inner()).len(),
    }
}

/// Free every segment the free list holds and return their bytes (part of
/// [`crate::release_memory`]). Segments in use are not affected; later encodes make new ones.
pub(crate) fn release_free_segments() -> u64 {
    let free = std::mem::take(&mut *FREE.lock().unwrap_or_else(|e| e.into_inner()));
    free.iter().map(|s| s.len() as u64).sum()
}

/// Where one stored chunk's bytes are.
#[derive(Debug)]
enum Held {
    /// `len` bytes at `start` in segment `segment` of the [`EncodedChunks`].
    InSegment {
        segment: usize,
        start: usize,
        len: usize,
    },
    /// A buffer of its own.
    Own(Vec<u8>),
}

/// A shard's encoded inner chunks by linear chunk number (C order), each stored or not
/// (`None`: a chunk equal to the fill value, or not written). What
/// [`crate::codec::sharding::ShardLayout::encode_chunks`] returns and
/// [`crate::shard::writer::ShardWriter::finish_with`] writes. Dropping it returns its memory to the
/// process-wide free list (see the module docs). `Send`; not shared between threads.
#[derive(Debug, Default)]
pub struct EncodedChunks {
    segments: Vec<Box<[u8]>>,
    chunks: Vec<Option<Held>>,
    /// Bytes used in the last segment when [`EncodedChunks::put_with`] may append to it.
    tail: Option<usize>,
    /// Bytes in segments that belong to no chunk any more (replaced or cleared).
    dead: usize,
}

impl EncodedChunks {
    /// `n` chunk positions, none stored.
    pub fn new(n: usize) -> Self {
        Self::from_parts(Vec::new(), (0..n).map(|_| None).collect())
    }

    fn from_parts(segments: Vec<Box<[u8]>>, chunks: Vec<Option<Held>>) -> Self {
        EncodedChunks {
            segments,
            chunks,
            tail: None,
            dead: 0,
        }
    }

    /// The number of chunk positions (stored or not).
    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    /// True when there are no chunk positions at all.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    /// Chunk `i`'s encoded bytes; `None` when it is not stored or `i` is out of range.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        match self.chunks.get(i)?.as_ref()? {
            Held::InSegment {
                segment,
                start,
                len,
            } => Some(&self.segments[*segment][*start..start + len]),
            Held::Own(v) => Some(v),
        }
    }

    /// The stored chunks with their positions, in position order.
    pub fn stored(&self) -> impl Iterator<Item = (usize, &[u8])> + '_ {
        (0..self.chunks.len()).filter_map(|i| self.get(i).map(|c| (i, c)))
    }

    /// Store chunk `i` (replacing what it held). Panics when `i` is out of range.
    pub fn set(&mut self, i: usize, encoded: Vec<u8>) {
        self.replace(i, Some(Held::Own(encoded)));
    }

    /// Mark chunk `i` not stored. Out of range: nothing.
    pub fn clear(&mut self, i: usize) {
        if i < self.chunks.len() {
            self.replace(i, None);
        }
    }

    fn replace(&mut self, i: usize, held: Option<Held>) {
        if let Some(Held::InSegment { len, .. }) = std::mem::replace(&mut self.chunks[i], held) {
            self.dead += len;
        }
    }

    /// Store chunk `i` as `encode` writes it into the room it is given, appended to this set's
    /// own segments (a buffered writer's chunks given one at a time: no allocation per
    /// chunk). A chunk that may not fit a segment, or one written while the segments hold
    /// more replaced bytes than live ones (a host rewriting chunks), gets a buffer of its own,
    /// so rewrites never grow the memory past about twice the shard. Returns the chunk's
    /// encoded size. Panics when `i` is out of range; on an error chunk `i` is unchanged.
    pub(crate) fn put_with(
        &mut self,
        i: usize,
        encode: impl FnOnce(&mut dyn EncodeTarget) -> Result<usize>,
    ) -> Result<usize> {
        let live = (self.segments.len() * SEGMENT).saturating_sub(self.dead);
        let wasteful = self.dead > SEGMENT && self.dead > live;
        let mut target = Tail {
            set: self,
            own: None,
            start: 0,
            wasteful,
        };
        let n = encode(&mut target)?;
        let (own, start) = (target.own.take(), target.start);
        let held = match own {
            Some(mut own) => {
                own.truncate(n);
                own.shrink_to_fit();
                Held::Own(own)
            }
            None => {
                self.tail = Some(start + n);
                Held::InSegment {
                    segment: self.segments.len() - 1,
                    start,
                    len: n,
                }
            }
        };
        self.replace(i, Some(held));
        Ok(n)
    }

    /// Take over every chunk `other` stores, replacing this one's at the same positions (its
    /// segments move here: nothing is copied). Positions past this one's length are ignored.
    pub(crate) fn absorb(&mut self, mut other: EncodedChunks) {
        if self.chunks.iter().all(Option::is_none) && self.chunks.len() == other.chunks.len() {
            std::mem::swap(self, &mut other);
            return;
        }
        let base = self.segments.len();
        self.segments.append(&mut other.segments);
        self.tail = None;
        self.dead += other.dead;
        for (i, held) in std::mem::take(&mut other.chunks).into_iter().enumerate() {
            let Some(held) = held else { continue };
            if i >= self.chunks.len() {
                continue;
            }
            let held = match held {
                Held::InSegment {
                    segment,
                    start,
                    len,
                } => Held::InSegment {
                    segment: base + segment,
                    start,
                    len,
                },
                own => own,
            };
            self.replace(i, Some(held));
        }
    }
}

impl From<Vec<Option<Vec<u8>>>> for EncodedChunks {
    /// Chunks encoded one by one, each in its own buffer.
    fn from(chunks: Vec<Option<Vec<u8>>>) -> Self {
        Self::from_parts(
            Vec::new(),
            chunks.into_iter().map(|c| c.map(Held::Own)).collect(),
        )
    }
}

/// [`EncodedChunks::put_with`]'s target: room at the end of the set's last segment (a new
/// one when the bound does not fit), or a buffer of its own.
struct Tail<'a> {
    set: &'a mut EncodedChunks,
    own: Option<Vec<u8>>,
    /// Where the room starts in the last segment.
    start: usize,
    /// Too many replaced bytes in the segments: every room is a buffer of its own.
    wasteful: bool,
}

impl EncodeTarget for Tail<'_> {
    fn room(&mut self, bound: usize) -> &mut [u8] {
        if bound > SEGMENT || self.wasteful {
            return self.own.insert(vec![0u8; bound]);
        }
        self.own = None;
        let set = &mut *self.set;
        match set.tail {
            Some(used) if SEGMENT - used >= bound => self.start = used,
            _ => {
                set.segments.push(take_segment());
                set.tail = Some(0);
                self.start = 0;
            }
        }
        self.current()
    }

    fn current(&mut self) -> &mut [u8] {
        match (&mut self.own, self.set.segments.last_mut()) {
            (Some(own), _) => own,
            (None, Some(last)) if self.set.tail.is_some() => &mut last[self.start..],
            _ => &mut [],
        }
    }
}

impl Drop for EncodedChunks {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.segments));
    }
}

/// The segments that the threads of one parallel encode fill: a segment gets its number when
/// a thread opens it, and its bytes when that thread is done with it.
#[derive(Default)]
pub(crate) struct Collector {
    segments: Mutex<Vec<Option<Box<[u8]>>>>,
}

impl Collector {
    /// A writer for one thread of the encode (it takes a segment only once it needs one).
    pub(crate) fn appender(&self) -> Appender<'_> {
        Appender {
            collector: self,
            open: None,
            pending: Pending::None,
        }
    }

    /// The chunks held by `held` (each from [`Appender::commit`] of one of this collector's
    /// appenders, all dropped by now).
    pub(crate) fn finish(self, held: Vec<Option<HeldChunk>>) -> EncodedChunks {
        let segments =
            std::mem::take(&mut *self.segments.lock().unwrap_or_else(|e| e.into_inner()));
        // Every appender has returned its segment when it was dropped.
        EncodedChunks::from_parts(
            segments
                .into_iter()
                .map(Option::unwrap_or_default)
                .collect(),
            held.into_iter().map(|h| h.map(|h| h.0)).collect(),
        )
    }
}

impl Drop for Collector {
    /// After a failed encode: the segments go back to the free list.
    fn drop(&mut self) {
        let segments =
            std::mem::take(&mut *self.segments.lock().unwrap_or_else(|e| e.into_inner()));
        give_back(segments.into_iter().flatten().collect());
    }
}

/// One encoded chunk's place, from [`Appender::commit`].
#[derive(Debug)]
pub(crate) struct HeldChunk(Held);

/// The room handed out by the last [`EncodeTarget::room`] call.
enum Pending {
    None,
    /// At this offset of the open segment.
    InSegment(usize),
    /// A buffer of its own (the bound exceeded a segment).
    Own(Vec<u8>),
}

/// One thread's end of a parallel encode: an [`EncodeTarget`] that places each chunk after
/// the previous one in its open segment, opening another when the next chunk's bound does not
/// fit. Dropping it hands its open segment to the [`Collector`].
pub(crate) struct Appender<'a> {
    collector: &'a Collector,
    /// The open segment: its number, its bytes, how many are used.
    open: Option<(usize, Box<[u8]>, usize)>,
    pending: Pending,
}

impl Appender<'_> {
    fn close(&mut self) {
        if let Some((id, bytes, _)) = self.open.take() {
            self.collector
                .segments
                .lock()
                .unwrap_or_else(|e| e.into_inner())[id] = Some(bytes);
        }
    }

    /// Keep the first `n` bytes of the room last handed out as one chunk.
    pub(crate) fn commit(&mut self, n: usize) -> HeldChunk {
        HeldChunk(match std::mem::replace(&mut self.pending, Pending::None) {
            Pending::InSegment(start) => {
                let (id, _, used) = self.open.as_mut().expect("room was given in this segment");
                *used = start + n;
                Held::InSegment {
                    segment: *id,
                    start,
                    len: n,
                }
            }
            Pending::Own(mut v) => {
                v.truncate(n);
                v.shrink_to_fit();
                Held::Own(v)
            }
            Pending::None => Held::Own(Vec::new()),
        })
    }
}

impl EncodeTarget for Appender<'_> {
    fn room(&mut self, bound: usize) -> &mut [u8] {
        if bound > SEGMENT {
            self.pending = Pending::Own(vec![0u8; bound]);
            return self.current();
        }
        if self
            .open
            .as_ref()
            .is_none_or(|(_, _, used)| SEGMENT - used < bound)
        {
            self.close();
            let id = {
                let mut all = self
                    .collector
                    .segments
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                all.push(None);
                all.len() - 1
            };
            self.open = Some((id, take_segment(), 0));
        }
        let used = self.open.as_ref().map_or(0, |o| o.2);
        self.pending = Pending::InSegment(used);
        self.current()
    }

    fn current(&mut self) -> &mut [u8] {
        match &mut self.pending {
            Pending::InSegment(start) => match &mut self.open {
                Some((_, bytes, _)) => &mut bytes[*start..],
                None => &mut [],
            },
            Pending::Own(v) => v,
            Pending::None => &mut [],
        }
    }
}

impl Drop for Appender<'_> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Segments taken from the free list for one encode whose finished chunks other threads read
/// while it still runs (a shard written as it encodes, `crate::shard::streamed`). They are handed
/// out as slices that live as long as the reservation ([`Reserved::rooms`]): each thread cuts
/// its chunks off the front of its slice, and a finished chunk is then an ordinary shared
/// slice that any thread may write to storage, with no copy and no `unsafe`. The segments go
/// back to the free list when the reservation is dropped. Since no segment can be added once
/// slices are out, the reservation is made up front from an estimate; a chunk that finds no
/// room left gets a buffer of its own, as one larger than a segment always does.
pub(crate) struct Reserved {
    segments: Vec<Box<[u8]>>,
}

/// The most segments one reservation takes (16 MiB): past that, chunks get buffers of their
/// own rather than a larger shard holding the whole free list and more.
pub(crate) const MAX_RESERVED: usize = 64;

impl Reserved {
    /// Room for about `bytes` of encoded chunks written by `threads` threads: the segments
    /// they fill, plus one for each thread but the first, since each thread ends with a
    /// segment of its own partly filled (half, on average: `bytes` should have some headroom);
    /// at most [`MAX_RESERVED`].
    pub(crate) fn take(bytes: usize, threads: usize) -> Reserved {
        let count = (bytes.div_ceil(SEGMENT) + threads.saturating_sub(1)).min(MAX_RESERVED);
        Reserved {
            segments: (0..count).map(|_| take_segment()).collect(),
        }
    }

    /// The segments as rooms to hand out, first segment first.
    pub(crate) fn rooms(&mut self) -> Rooms<'_> {
        Rooms {
            free: Mutex::new(self.segments.iter_mut().rev().map(|s| &mut s[..]).collect()),
        }
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        give_back(std::mem::take(&mut self.segments));
    }
}

/// The unused segments of a [`Reserved`], shared by the threads of one encode.
pub(crate) struct Rooms<'s> {
    free: Mutex<Vec<&'s mut [u8]>>,
}

impl<'s> Rooms<'s> {
    /// One thread's end: an [`EncodeTarget`] cutting chunks off reserved segments.
    pub(crate) fn cutter(&self) -> Cutter<'_, 's> {
        Cutter {
            rooms: self,
            rest: &mut [],
            own: None,
        }
    }
}

/// A chunk encoded by a [`Cutter`]: in a reserved segment (readable by every thread while the
/// reservation lives), or in a buffer of its own.
#[derive(Debug)]
pub(crate) enum Cut<'s> {
    /// In a reserved segment.
    Reserved(&'s [u8]),
    /// A buffer of its own (larger than a segment's room, or none was left).
    Own(Vec<u8>),
}

impl Cut<'_> {
    /// The chunk's encoded bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Cut::Reserved(b) => b,
            Cut::Own(v) => v,
        }
    }
}

/// One thread's end of an encode into [`Rooms`]: each chunk's room is the front of the
/// thread's current segment, which [`Cutter::cut`] then splits off as the chunk.
pub(crate) struct Cutter<'r, 's> {
    rooms: &'r Rooms<'s>,
    /// What is left of this thread's current segment.
    rest: &'s mut [u8],
    /// The last room, when it is a buffer of its own.
    own: Option<Vec<u8>>,
}

impl<'s> Cutter<'_, 's> {
    /// Keep the first `n` bytes of the room last handed out as one chunk.
    pub(crate) fn cut(&mut self, n: usize) -> Cut<'s> {
        match self.own.take() {
            Some(mut v) => {
                v.truncate(n);
                v.shrink_to_fit();
                Cut::Own(v)
            }
            None => {
                let (chunk, rest) = std::mem::take(&mut self.rest).split_at_mut(n);
                self.rest = rest;
                Cut::Reserved(chunk)
            }
        }
    }
}

impl EncodeTarget for Cutter<'_, '_> {
    fn room(&mut self, bound: usize) -> &mut [u8] {
        if bound <= SEGMENT && self.rest.len() < bound {
            // The rest of this segment is too short: left unused.
            let next = self
                .rooms
                .free
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop();
            if let Some(next) = next {
                self.rest = next;
            }
        }
        if self.rest.len() >= bound {
            self.own = None;
            return &mut self.rest[..];
        }
        self.own.insert(vec![0u8; bound])
    }

    fn current(&mut self) -> &mut [u8] {
        match &mut self.own {
            Some(own) => own,
            None => &mut self.rest[..],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{ChunkRepr, CodecChain};
    use crate::metadata::dtype::{DataType, FillValue};
    use serde_json::json;

    /// Append `chunks` through one appender, each filling `bound` bytes of room and keeping
    /// its own length.
    fn append(collector: &Collector, chunks: &[(usize, &[u8])]) -> Vec<Option<HeldChunk>> {
        let mut out = collector.appender();
        chunks
            .iter()
            .map(|&(bound, bytes)| {
                let room = out.room(bound);
                assert!(room.len() >= bound);
                room[..bytes.len()].copy_from_slice(bytes);
                Some(out.commit(bytes.len()))
            })
            .collect()
    }

    #[test]
    fn cutters_cut_chunks_off_reserved_segments_then_take_buffers_of_their_own() {
        let mut reserved = Reserved::take(SEGMENT, 1);
        assert_eq!(reserved.segments.len(), 1);
        let rooms = reserved.rooms();
        let (mut a, mut b) = (rooms.cutter(), rooms.cutter());
        fn put<'s>(c: &mut Cutter<'_, 's>, bound: usize, byte: u8, n: usize) -> Cut<'s> {
            let room = c.room(bound);
            assert!(room.len() >= bound);
            room[..n].fill(byte);
            c.cut(n)
        }
        // `a` takes the one segment: two chunks fit in it, one after the other.
        let first = put(&mut a, 100_000, 1, 1000);
        let second = put(&mut a, 200_000, 2, 5);
        // A bound the rest does not hold, with no segment left; a bound over a segment;
        // and `b`, which finds no segment at all.
        let third = put(&mut a, SEGMENT - 1000, 3, 7);
        let fourth = put(&mut a, SEGMENT + 1, 4, SEGMENT + 1);
        let fifth = put(&mut b, 10, 5, 10);
        let all = [&first, &second, &third, &fourth, &fifth];
        for (cut, (byte, n)) in
            all.iter()
                .zip([(1, 1000), (2, 5), (3, 7), (4, SEGMENT + 1), (5, 10)])
        {
            assert_eq!(cut.bytes(), vec![byte; n]);
        }
        match (&first, &second) {
            (Cut::Reserved(x), Cut::Reserved(y)) => {
                assert_eq!(
                    x.as_ptr_range().end,
                    y.as_ptr(),
                    "the second follows the first"
                )
            }
            other => panic!("{other:?}"),
        }
        assert!([&third, &fourth, &fifth]
            .iter()
            .all(|c| matches!(c, Cut::Own(_))));
    }

    #[test]
    fn a_reservation_holds_room_for_its_bytes_and_the_other_threads_last_segments() {
        assert_eq!(Reserved::take(1, 1).segments.len(), 1);
        assert_eq!(Reserved::take(3 * SEGMENT + 1, 2).segments.len(), 5);
        assert_eq!(Reserved::take(usize::MAX, 2).segments.len(), MAX_RESERVED);
    }

    #[test]
    fn chunks_share_segments_in_order_and_large_ones_get_their_own() {
        let small = vec![7u8; 100_000];
        let big = vec![9u8; SEGMENT + 1];
        let collector = Collector::default();
        // Two fit in one segment; the third's bound does not fit after them (a new segment);
        // the fourth's bound exceeds a segment (a buffer of its own).
        let bounds = [150_000, 100_000, 200_000, SEGMENT + 10];
        let held = append(
            &collector,
            &[
                (bounds[0], &small[..1000]),
                (bounds[1], &small),
                (bounds[2], &small[..5]),
                (bounds[3], &big),
            ],
        );
        let encoded = collector.finish(held);
        assert_eq!(encoded.segments.len(), 2);
        let places: Vec<_> = encoded
            .chunks
            .iter()
            .map(|h| match h {
                Some(Held::InSegment {
                    segment,
                    start,
                    len,
                }) => (*segment, *start, *len),
                Some(Held::Own(v)) => (usize::MAX, 0, v.len()),
                None => unreachable!(),
            })
            .collect();
        assert_eq!(
            places,
            [
                (0, 0, 1000),
                (0, 1000, 100_000),
                (1, 0, 5),
                (usize::MAX, 0, SEGMENT + 1)
            ]
        );
        assert_eq!(encoded.get(1), Some(&small[..]));
        assert_eq!(encoded.get(2), Some(&small[..5]));
        assert_eq!(encoded.get(3), Some(&big[..]));
        assert_eq!(encoded.get(4), None);
        let stored: Vec<usize> = encoded
            .stored()
            .map(|(i, c)| i * 1_000_000 + c.len())
            .collect();
        assert_eq!(
            stored,
            [1000, 1_100_000, 2_000_005, 3_000_000 + SEGMENT + 1]
        );
    }

    #[test]
    fn absorb_takes_over_chunks_at_their_positions() {
        let collector = Collector::default();
        let mut held = append(&collector, &[(10, b"aa"), (10, b"bbb")]);
        held.insert(0, None);
        let from_segments = collector.finish(held);

        // Into an empty set of the same length: taken whole.
        let mut empty = EncodedChunks::new(3);
        empty.absorb(EncodedChunks::from(vec![None, Some(b"x".to_vec()), None]));
        assert_eq!(empty.get(1), Some(&b"x"[..]));

        // Into one that holds chunks already: segments renumbered, others kept.
        let collector = Collector::default();
        let mine = append(&collector, &[(10, b"zz")]);
        let mut into = collector.finish(vec![mine.into_iter().next().unwrap(), None, None]);
        into.set(2, b"own".to_vec());
        into.absorb(from_segments);
        let all: Vec<Option<&[u8]>> = (0..3).map(|i| into.get(i)).collect();
        assert_eq!(all, [Some(&b"zz"[..]), Some(&b"aa"[..]), Some(&b"bbb"[..])]);
        into.clear(1);
        assert_eq!(into.get(1), None);
        assert_eq!(into.stored().count(), 2);
    }

    /// Where `put_with` put chunk `i`: (segment, start, len), or `usize::MAX` for a buffer of
    /// its own.
    fn place(set: &EncodedChunks, i: usize) -> (usize, usize, usize) {
        match set.chunks[i].as_ref().unwrap() {
            Held::InSegment {
                segment,
                start,
                len,
            } => (*segment, *start, *len),
            Held::Own(v) => (usize::MAX, 0, v.len()),
        }
    }

    /// Write `len` bytes of `byte` into room of `bound` bytes.
    fn fill(
        bound: usize,
        len: usize,
        byte: u8,
    ) -> impl FnOnce(&mut dyn EncodeTarget) -> Result<usize> {
        move |out| {
            out.room(bound)[..len].fill(byte);
            Ok(len)
        }
    }

    #[test]
    fn chunks_given_one_at_a_time_are_appended_and_rewrites_stay_bounded() {
        let mut set = EncodedChunks::new(8);
        set.put_with(0, fill(100_000, 1000, 1)).unwrap();
        set.put_with(1, fill(100_000, 2000, 2)).unwrap();
        // Room for 260 000 bytes no longer fits after 3 000: a second segment.
        set.put_with(2, fill(260_000, 3000, 3)).unwrap();
        set.put_with(3, fill(SEGMENT + 1, 10, 4)).unwrap();
        assert_eq!(place(&set, 0), (0, 0, 1000));
        assert_eq!(place(&set, 1), (0, 1000, 2000));
        assert_eq!(place(&set, 2), (1, 0, 3000));
        assert_eq!(place(&set, 3), (usize::MAX, 0, 10));
        assert_eq!(set.get(1), Some(&[2u8; 2000][..]));
        assert_eq!(set.get(2), Some(&[3u8; 3000][..]));
        // A failed encode leaves the chunk as it was.
        let failed = set.put_with(1, |out| {
            out.room(10)[0] = 9;
            Err(crate::Error::InvalidArgument("no".into()))
        });
        assert!(failed.is_err());
        assert_eq!(set.get(1), Some(&[2u8; 2000][..]));

        // Rewriting one chunk over and over: its old bytes are dead; once the segments hold
        // more dead bytes than live ones (and over a segment), rewrites get buffers of their
        // own, so the segments stop growing.
        for round in 0..200u8 {
            set.put_with(4, fill(60_000, 50_000, round)).unwrap();
        }
        assert_eq!(set.get(4), Some(&[199u8; 50_000][..]));
        assert!(set.segments.len() <= 6, "{} segments", set.segments.len());
        assert_eq!(place(&set, 4).0, usize::MAX);
        set.clear(4);
        assert_eq!(set.get(4), None);
        assert_eq!(set.stored().count(), 4);

        // After taking over another set's segments, appends open a segment of their own.
        let mut other = EncodedChunks::new(8);
        other.put_with(7, fill(10, 7, 7)).unwrap();
        set.absorb(other);
        let before = set.segments.len();
        set.put_with(6, fill(10, 6, 6)).unwrap();
        assert_eq!(set.segments.len(), before + 1);
        assert_eq!(set.get(7), Some(&[7u8; 7][..]));
        assert_eq!(set.get(6), Some(&[6u8; 6][..]));
    }

    /// Encoding into a shard's segments gives the bytes `encode` gives, for every chain that
    /// takes a different path through `encode_to` (compressor written in place, checksums
    /// appended in place, intermediate stages, codecs copied in, byte swapping, transpose).
    #[test]
    #[cfg_attr(
        miri,
        ignore = "zstd, libdeflate and c-blosc are C, which Miri cannot run"
    )]
    fn encode_to_segments_matches_encode_for_every_path() {
        let le = json!({"name": "bytes", "configuration": {"endian": "little"}});
        let be = json!({"name": "bytes", "configuration": {"endian": "big"}});
        let zstd = json!({"name": "zstd", "configuration": {"level": 1, "checksum": true}});
        let gzip = json!({"name": "gzip", "configuration": {"level": 1}});
        let blosc = json!({"name": "blosc", "configuration": {"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": 2, "blocksize": 0}});
        let zlib = json!({"name": "numcodecs.zlib", "configuration": {"level": 1}});
        let crc = json!({"name": "crc32c"});
        let transpose = json!({"name": "transpose", "configuration": {"order": [1, 0]}});
        let chains = [
            json!([le]),
            json!([be]),
            json!([le, crc]),
            json!([le, zstd]),
            json!([le, zstd, crc]),
            json!([be, gzip, crc, crc]),
            json!([le, blosc, crc]),
            json!([le, crc, zstd]),
            json!([le, zstd, gzip]),
            json!([transpose, be, zstd, crc]),
            json!([le, zlib, crc]),
        ];
        let repr = ChunkRepr {
            shape: vec![32, 48],
            dtype: DataType::UInt16,
            fill_value: FillValue::zero(&DataType::UInt16),
        };
        let chunk: Vec<u8> = (0..32 * 48u32)
            .flat_map(|i| ((i * 7 + i / 48 * 300) as u16).to_ne_bytes())
            .collect();
        for chain in chains {
            let codecs = CodecChain::from_json(&chain, "codecs").unwrap();
            let want = codecs.encode(&chunk, &repr).unwrap();
            let collector = Collector::default();
            let mut out = collector.appender();
            // Two chunks into one segment: the second starts where the first ended.
            let first = codecs.encode_to(&chunk, &repr, &mut out).unwrap();
            let first = out.commit(first);
            let second = codecs.encode_to(&chunk, &repr, &mut out).unwrap();
            let second = out.commit(second);
            drop(out);
            let encoded = collector.finish(vec![Some(first), Some(second)]);
            assert_eq!(encoded.get(0), Some(&want[..]), "{chain}");
            assert_eq!(encoded.get(1), Some(&want[..]), "{chain}");
            assert_eq!(codecs.decode(&want, &repr).unwrap(), chunk, "{chain}");
            // A reused buffer as the target: the same bytes, however large it grew before.
            let mut reused = vec![0xAB; 100_000];
            let n = codecs.encode_to(&chunk, &repr, &mut reused).unwrap();
            assert_eq!(&reused[..n], &want[..], "{chain}");
        }
    }
}
