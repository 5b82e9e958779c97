//! A bounded cache of decoded shard indexes, one per [`crate::Array`] handle.
//!
//! Reading an inner chunk of a shard takes its index first; over an object store that is a
//! request of its own, so a cold single-chunk read costs two and a repeated one, with the index
//! kept, one. Each array handle keeps the indexes it read, keyed by shard key, up to a byte
//! bound ([`DEFAULT_INDEX_CACHE_BYTES`] unless set otherwise), evicting the least recently used
//! entry when a new one would pass it; memory never grows past the bound whatever the grid's
//! size. There is no process-wide cache: two handles never share entries.
//!
//! What is cached is a snapshot: writes through the handle drop the entries of the shards they
//! touch (so a read never uses an index older than a write the handle made), writes by other
//! handles or processes are seen after [`crate::Array::forget_cached_indexes`] or on a new
//! handle, and a read that fails with a cached index (a short or missing object, a checksum
//! or decode error) drops the cached indexes and tries once more with fresh ones. Absence is
//! never cached: a shard another process writes later is found on the next read.

use crate::codec::sharding::index::ShardIndex;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// The default bound of one handle's cache of shard indexes: 8 MiB, the indexes of about
/// half a million inner chunks (16 bytes each).
pub const DEFAULT_INDEX_CACHE_BYTES: u64 = 8 << 20;

/// Bytes counted per entry besides its index and key: the map's and the recency order's
/// bookkeeping, so that many small indexes cannot pass the bound through their overhead.
const ENTRY_OVERHEAD: u64 = 160;

/// One cached index.
struct Entry {
    index: Arc<ShardIndex>,
    object_size: Option<u64>,
    /// What the entry counts against the bound.
    cost: u64,
    /// When it was last used (a value of the cache's clock, the key of `State::order`).
    used: u64,
}

/// The cache's state, behind one lock that is never held across I/O.
struct State {
    limit: u64,
    bytes: u64,
    clock: u64,
    /// Bumped by every removal, so that an index read before a write cannot be inserted after
    /// the write dropped it.
    epoch: u64,
    entries: HashMap<String, Entry>,
    /// Last use → key: the least recently used entry first.
    order: BTreeMap<u64, String>,
}

impl State {
    fn remove(&mut self, key: &str) {
        if let Some(e) = self.entries.remove(key) {
            self.order.remove(&e.used);
            self.bytes -= e.cost;
        }
    }

    /// Evict least recently used entries until `bytes + room` fits the limit.
    fn make_room(&mut self, room: u64) {
        while self.bytes + room > self.limit {
            let Some((_, key)) = self.order.pop_first() else {
                return;
            };
            if let Some(e) = self.entries.remove(&key) {
                self.bytes -= e.cost;
            }
        }
    }
}

/// A bounded, least-recently-used map from shard key to its decoded index (see the module
/// docs). Safe to use from many threads.
pub(crate) struct IndexCache {
    state: Mutex<State>,
}

impl Default for IndexCache {
    fn default() -> Self {
        IndexCache {
            state: Mutex::new(State {
                limit: DEFAULT_INDEX_CACHE_BYTES,
                bytes: 0,
                clock: 0,
                epoch: 0,
                entries: HashMap::new(),
                order: BTreeMap::new(),
            }),
        }
    }
}

impl IndexCache {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cached index of `key` and the object size read with it, marked as used now.
    pub(crate) fn get(&self, key: &str) -> Option<(Arc<ShardIndex>, Option<u64>)> {
        let mut s = self.lock();
        s.clock += 1;
        let now = s.clock;
        let e = s.entries.get_mut(key)?;
        let was = std::mem::replace(&mut e.used, now);
        let found = (e.index.clone(), e.object_size);
        s.order.remove(&was);
        s.order.insert(now, key.to_string());
        Some(found)
    }

    /// The value to hand [`IndexCache::insert`] for an index about to be read.
    pub(crate) fn epoch(&self) -> u64 {
        self.lock().epoch
    }

    /// Keep `index` for `key`, unless an entry was dropped since `epoch` (the index may be
    /// older than a write), the cache is off, or the entry alone passes the bound.
    pub(crate) fn insert(
        &self,
        key: &str,
        index: Arc<ShardIndex>,
        object_size: Option<u64>,
        epoch: u64,
    ) {
        let cost = index
            .memory_bytes()
            .saturating_add(2 * key.len() as u64)
            .saturating_add(ENTRY_OVERHEAD);
        let mut s = self.lock();
        if s.epoch != epoch || cost > s.limit {
            return;
        }
        s.remove(key);
        s.make_room(cost);
        s.clock += 1;
        let used = s.clock;
        s.bytes += cost;
        s.order.insert(used, key.to_string());
        s.entries.insert(
            key.to_string(),
            Entry {
                index,
                object_size,
                cost,
                used,
            },
        );
    }

    /// Drop the entry of `key` (a write changed or removed the shard).
    pub(crate) fn forget(&self, key: &str) {
        let mut s = self.lock();
        s.epoch += 1;
        s.remove(key);
    }

    /// Drop every entry.
    pub(crate) fn clear(&self) {
        let mut s = self.lock();
        s.epoch += 1;
        s.entries.clear();
        s.order.clear();
        s.bytes = 0;
    }

    /// Set the bound (0 turns the cache off), evicting what no longer fits.
    pub(crate) fn set_limit(&self, bytes: u64) {
        let mut s = self.lock();
        s.limit = bytes;
        s.make_room(0);
    }

    /// The bound.
    pub(crate) fn limit(&self) -> u64 {
        self.lock().limit
    }

    /// What the entries count against the bound now.
    pub(crate) fn bytes(&self) -> u64 {
        self.lock().bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(chunks: usize) -> Arc<ShardIndex> {
        Arc::new(ShardIndex::new_empty(chunks))
    }

    #[test]
    fn least_recently_used_goes_first_and_the_bound_holds() {
        let cache = IndexCache::default();
        let one = index(64).memory_bytes() + 2 + ENTRY_OVERHEAD;
        cache.set_limit(3 * one);
        for k in ["a", "b", "c"] {
            cache.insert(k, index(64), Some(1), cache.epoch());
        }
        assert_eq!(cache.bytes(), 3 * one);
        assert!(cache.get("a").is_some(), "a used: b is now the oldest");
        cache.insert("d", index(64), None, cache.epoch());
        assert_eq!(cache.bytes(), 3 * one);
        assert!(cache.get("b").is_none());
        for k in ["a", "c", "d"] {
            assert!(cache.get(k).is_some(), "{k}");
        }
        // An entry larger than the bound is not kept, and evicts nothing.
        cache.insert("e", index(4096), None, cache.epoch());
        assert!(cache.get("e").is_none());
        assert_eq!(cache.bytes(), 3 * one);
        cache.set_limit(one);
        assert_eq!(cache.bytes(), one);
        cache.set_limit(0);
        assert_eq!(cache.bytes(), 0);
        cache.insert("a", index(1), None, cache.epoch());
        assert!(cache.get("a").is_none(), "off");
    }

    #[test]
    fn an_index_read_before_a_forget_is_not_kept() {
        let cache = IndexCache::default();
        let epoch = cache.epoch();
        cache.forget("a");
        cache.insert("a", index(4), None, epoch);
        assert!(cache.get("a").is_none());
        cache.insert("a", index(4), Some(7), cache.epoch());
        assert_eq!(cache.get("a").map(|(_, s)| s), Some(Some(7)));
        cache.clear();
        assert!(cache.get("a").is_none());
        assert_eq!(cache.bytes(), 0);
    }
}
