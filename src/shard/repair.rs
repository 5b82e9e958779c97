//! Recovering torn shards: what can be proven intact after a write was cut off.
//!
//! An append-only update ([`crate::UpdateMode::AppendOnly`]) with the index at the end never
//! overwrites a byte: it appends chunks, then a new index. Cut off anywhere, the object still
//! holds the previous shard, byte for byte, as its prefix — ending with the previous index.
//! When the index codecs end in `crc32c`, that index *proves* itself: its checksum matches,
//! every entry lies before it, no two overlap, and it starts where the last chunk written
//! before it ends (where the previous version ended). A checksum alone is not enough: the
//! torn write's chunk bytes may hold a byte run that happens (or was made) to be a crc-valid
//! index, and cutting back to it would give a version that never existed. Repair finds the
//! last index with that shape before the (bad) end and cuts the object back to it; every
//! chunk it references is decoded before that is accepted.
//!
//! What cannot be proven is not touched: an index without a checksum (any bytes could pass
//! for one), an index at the start (rewritten in place by updates), bad chunks under a valid
//! index — when the object's last index proves itself, the object is the current version and
//! is never cut back to an earlier one. Candidates are found with a rolling CRC-32C over the object (one pass), so the cost
//! is linear in the object's size, not size × index size.

use crate::array::Array;
use crate::codec::sharding::index::ShardIndex;
use crate::codec::sharding::{IndexLocation, ShardLayout};
use crate::codec::BytesToBytes;
use crate::error::Result;
use crate::storage::store::Store;

/// What repair found (or did) for one shard object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShardRepair {
    /// The index and every chunk are valid: nothing to do.
    Intact,
    /// An earlier index with a valid crc32c was found; the object is (or, in a dry run, would
    /// be) cut back to `size` bytes, ending with it.
    Recovered {
        /// The object's size before.
        before: u64,
        /// The recovered object's size (the earlier index ends there).
        size: u64,
        /// Inner chunks that index holds (each decoded successfully).
        chunks: usize,
    },
    /// Damaged, and nothing provably intact to return to; the object is left as it is.
    Unrecoverable(String),
}

impl<S: Store> Array<S> {
    /// Check every stored shard and repair the damaged ones: each is cut back to its last
    /// earlier index that proves itself intact (see the module docs), written with
    /// [`Store::set`] (a temporary and a rename for [`crate::FsStore`]). With `dry_run`, nothing
    /// is written. Returns `(shard key, outcome)` for every damaged shard, in grid order;
    /// intact shards are not listed. `Err` only when the store fails: the repairs before the
    /// shard it failed on are written. Shards are fetched and checked several at once, as
    /// [`Array::verify`] does; the repairs are written on this thread, in grid order.
    pub fn repair(&self, dry_run: bool) -> Result<Vec<(String, ShardRepair)>> {
        let meta = self.metadata();
        let layout = meta
            .shard_layout()
            .filter(|_| meta.supports_partial_reads());
        let mut out = Vec::new();
        // Shards are fetched, checked and planned several at once; each repair is written on
        // this thread in grid order, as the walk reaches it.
        self.for_each_stored_shard(
            |key, mut object| {
                if self.check_shard_object(&object).is_empty() {
                    return Ok(None);
                }
                let outcome = match &layout {
                    None => ShardRepair::Unrecoverable(
                        "the shard object is not the sharding codec's own output (not sharded, or a codec follows sharding_indexed)".into(),
                    ),
                    Some(layout) => plan(layout, &object, true),
                };
                // Only the prefix that is written back is kept until then.
                match outcome {
                    ShardRepair::Recovered { size, .. } => object.truncate(size as usize),
                    _ => object = Vec::new(),
                }
                Ok(Some((key, outcome, object)))
            },
            |_, shard| {
                if let Some((key, outcome, prefix)) = shard.flatten() {
                    if matches!(outcome, ShardRepair::Recovered { .. }) && !dry_run {
                        self.forgetting(&key, || self.store().set(&key, &prefix))?;
                    }
                    out.push((key, outcome));
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}

/// Why a shard whose current index is valid is not repaired ([`ShardRepair::Unrecoverable`]).
pub const CORRUPT_CHUNK_UNDER_VALID_INDEX: &str =
    "a chunk is corrupt under a valid index (its crc32c matches and every entry is valid): an earlier index would drop the chunks written since";

/// Decide how to repair a damaged shard `object` (the sharding codec's own output): the last
/// earlier index with a valid crc32c whose chunks all decode. `damaged` is false when the
/// object checked clean (then [`ShardRepair::Intact`]). When the object's own (last) index is
/// valid, the damage is a corrupt chunk under it: [`ShardRepair::Unrecoverable`] (the object
/// is the current version; no earlier one replaces it).
pub fn plan(layout: &ShardLayout, object: &[u8], damaged: bool) -> ShardRepair {
    if !damaged {
        return ShardRepair::Intact;
    }
    let codec = layout.codec();
    if codec.index_location == IndexLocation::Start {
        return ShardRepair::Unrecoverable(
            "the index is at the start, where updates rewrite it: no earlier index can be proven intact".into(),
        );
    }
    if !matches!(
        codec.index_codecs.bytes_to_bytes.last(),
        Some(BytesToBytes::Crc32c(_))
    ) {
        return ShardRepair::Unrecoverable(
            "the index has no crc32c: an earlier index cannot be proven intact".into(),
        );
    }
    if layout.decode_index(object).is_ok() {
        // The current index proves itself (checksum, every entry valid): the damage is in a
        // chunk it names, and rolling back to an earlier index would drop the valid chunks
        // written since.
        return ShardRepair::Unrecoverable(CORRUPT_CHUNK_UNDER_VALID_INDEX.into());
    }
    let n = layout.index_size() as usize;
    // The shapes of a version's end, in object order: a later one may end where the index of
    // an earlier one does (an update that only erased chunks appends just a new index).
    let mut shaped: Vec<(usize, ShardIndex)> = Vec::new();
    let mut any_crc = false;
    for end in crc_candidates(object, n - 4) {
        if end == object.len() {
            continue; // the current index: it was found damaged
        }
        any_crc = true;
        let earlier: Vec<usize> = shaped.iter().map(|(e, _)| *e).collect();
        if let Some(index) = shaped_like_a_version(layout, &object[..end], &earlier) {
            shaped.push((end, index));
        }
    }
    // The latest one whose chunks all decode.
    for (end, index) in shaped.iter().rev() {
        if let Some(chunks) = chunks_decode(layout, &object[..*end], index) {
            return ShardRepair::Recovered {
                before: object.len() as u64,
                size: *end as u64,
                chunks,
            };
        }
    }
    ShardRepair::Unrecoverable(if any_crc {
        "no earlier index in the object proves itself (a valid crc32c, entries that do not overlap and end where the index starts, chunks that decode)".into()
    } else {
        "no earlier index with a valid crc32c in the object".into()
    })
}

/// The index at the end of `prefix` when `prefix` has the shape of a version of the shard
/// that a writer left complete, not merely a byte run whose crc32c happens to match (chunk
/// data may hold one, by chance or by design): the index decodes with a valid crc32c, every
/// entry lies before it, no two entries overlap (identical ones may: a slot shared on
/// purpose), and the index starts where the last chunk ends — or, when no chunk ends there,
/// where an earlier such version (`earlier`: their ends) ends, the index of an update that
/// wrote no chunk. An index with no chunk at all starts the object or follows an earlier one.
fn shaped_like_a_version(
    layout: &ShardLayout,
    prefix: &[u8],
    earlier: &[usize],
) -> Option<ShardIndex> {
    let bytes = layout.index_bytes(prefix).ok()?;
    let index = ShardIndex::decode(bytes, layout, Some(prefix.len() as u64)).ok()?;
    let start = (prefix.len() - bytes.len()) as u64;
    let mut spans: Vec<(u64, u64)> = index.stored().map(|(_, l)| (l.offset, l.end())).collect();
    spans.sort_unstable();
    spans.dedup();
    if spans.windows(2).any(|w| w[1].0 < w[0].1) {
        return None;
    }
    let last_end = spans.iter().map(|s| s.1).max().unwrap_or(0);
    (last_end == start || earlier.contains(&(start as usize))).then_some(index)
}

/// How many chunks `index` holds when every one of them decodes from `object`.
fn chunks_decode(layout: &ShardLayout, object: &[u8], index: &ShardIndex) -> Option<usize> {
    let mut chunk = layout.inner_repr().filled().ok()?;
    let mut count = 0;
    for (i, loc) in index.stored() {
        let bytes = &object[loc.offset as usize..loc.end() as usize];
        layout.decode_chunk_into(i, bytes, &mut chunk).ok()?;
        count += 1;
    }
    Some(count)
}

/// Every `end` (ascending) such that `object[end - w - 4..end - 4]` has the CRC-32C stored
/// little-endian in `object[end - 4..end]`: one pass with a rolling CRC over a `w`-byte window.
fn crc_candidates(object: &[u8], w: usize) -> Vec<usize> {
    let mut out = Vec::new();
    if object.len() < w + 4 {
        return out;
    }
    let table = table();
    let step = |r: u32, b: u8| table[((r ^ b as u32) & 0xff) as usize] ^ (r >> 8);
    // The register from 0 over a byte then `w` zeros, for each byte (linear in the byte).
    let mut out_basis = [0u32; 8];
    for (k, o) in out_basis.iter_mut().enumerate() {
        let mut r = step(0, 1 << k);
        for _ in 0..w {
            r = step(r, 0);
        }
        *o = r;
    }
    let leaving: Vec<u32> = (0..256)
        .map(|b| {
            (0..8)
                .filter(|k| b >> k & 1 == 1)
                .fold(0, |acc, k| acc ^ out_basis[k])
        })
        .collect();
    // crc32c(M) = register from 0 over M, xor crc32c of w zeros (CRC-32C is affine).
    let k = crc32c::crc32c(&vec![0u8; w]);
    let mut r = object[..w].iter().fold(0u32, |r, &b| step(r, b));
    let mut s = 0;
    loop {
        let stored = u32::from_le_bytes(object[s + w..s + w + 4].try_into().unwrap());
        if r ^ k == stored {
            out.push(s + w + 4);
        }
        if s + w + 4 >= object.len() {
            return out;
        }
        r = step(r, object[s + w]) ^ leaving[object[s] as usize];
        s += 1;
    }
}

/// The byte-wise table of the reflected CRC-32C polynomial.
fn table() -> [u32; 256] {
    let mut t = [0u32; 256];
    for (i, e) in t.iter_mut().enumerate() {
        let mut c = i as u32;
        for _ in 0..8 {
            c = if c & 1 == 1 {
                (c >> 1) ^ 0x82F6_3B78
            } else {
                c >> 1
            };
        }
        *e = c;
    }
    t
}

impl<S: Store> Array<S> {
    /// The temporaries that writers killed part way left beside the array's shards
    /// (`KEY.tmp-PID-N`, [`crate::FileIo`]'s new objects, never renamed over `KEY`), sorted:
    /// those whose process no longer runs on this host (a temporary of a writer still running
    /// is its work in progress, not a leftover). They hold nothing the array reads, only disk
    /// space; `zarrshard verify` reports them, `zarrshard repair` removes them
    /// ([`Array::remove_leftover_temporaries`]). Empty when the store cannot list.
    pub fn leftover_temporaries(&self) -> Result<Vec<String>> {
        let Some(mut keys) = self.store().list_prefix("")? else {
            return Ok(Vec::new());
        };
        keys.retain(|key| self.is_leftover_temporary(key));
        keys.sort();
        Ok(keys)
    }

    /// Remove [`Array::leftover_temporaries`] (with `dry_run`, nothing); returns their keys.
    /// Errors: the store's, naming the key's path.
    pub fn remove_leftover_temporaries(&self, dry_run: bool) -> Result<Vec<String>> {
        let keys = self.leftover_temporaries()?;
        if !dry_run {
            for key in &keys {
                self.store().delete(key)?;
            }
        }
        Ok(keys)
    }

    fn is_leftover_temporary(&self, key: &str) -> bool {
        let Some((shard, writer)) = key.rsplit_once(crate::storage::io::TEMPORARY_MARK) else {
            return false;
        };
        let Some((pid, n)) = writer.split_once('-') else {
            return false;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(n) || self.shard_coords(shard).is_none() {
            return false;
        }
        pid.parse::<u32>().map_or(true, |pid| !process_runs(pid))
    }
}

/// Whether process `pid` runs on this host (signal 0 reaches it, or it exists but belongs to
/// another user).
#[cfg(unix)]
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists; no signal is sent.
    let sent = unsafe { libc::kill(pid, 0) };
    sent == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

#[cfg(not(unix))]
fn process_runs(pid: u32) -> bool {
    pid == std::process::id()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolling_crc_finds_every_window_a_direct_crc_finds() {
        let mut x = 0x1234_5678u64;
        let mut data: Vec<u8> = (0..3000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let w = 48;
        // Plant three windows followed by their checksums.
        for at in [0usize, 1000, 3000 - w - 4] {
            let c = crc32c::crc32c(&data[at..at + w]);
            data[at + w..at + w + 4].copy_from_slice(&c.to_le_bytes());
        }
        let direct: Vec<usize> = (w + 4..=data.len())
            .filter(|&e| crc32c::crc32c(&data[e - w - 4..e - 4]).to_le_bytes() == data[e - 4..e])
            .collect();
        assert_eq!(direct, vec![w + 4, 1000 + w + 4, 3000]);
        assert_eq!(crc_candidates(&data, w), direct);
    }
}
