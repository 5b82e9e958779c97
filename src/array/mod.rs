//! A whole Zarr v3 array in a [`Store`]: its metadata, its shards, and whole-array operations
//! (export to raw bytes, verification).

pub mod append;
pub(crate) mod blocks;
pub mod group;
pub mod index_cache;
pub mod legacy;
pub mod refs;
pub mod region;
pub mod repack;
pub mod resize;

use crate::array::blocks::Block;
use crate::codec::sharding::index::ShardIndex;
use crate::codec::sharding::ShardLayout;
use crate::error::{shown, Error, Result};
use crate::metadata::{read_document, ArrayMetadata, Attributes};
use crate::nd;
use crate::runtime::threads;
use crate::shard::reader::{ShardReader, DEFAULT_COALESCE_GAP};
use crate::shard::streamed;
use crate::shard::writer::{
    compact, ChunkOrder, Finalized, ShardWriter, WriteOptions, WriteStrategy,
};
use crate::storage::io::{ByteRange, MemoryIo, ShardIo, SinkIo};
use crate::storage::store::{Prefixed, Store};
use serde_json::Value;
use std::fmt;
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Which metadata format an array was opened from; it decides where the metadata lives and
/// how shard keys are spelled. Everything else is the same engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// Zarr v3 `zarr.json` at the store root.
    V3,
    /// Zarr v2 sharding prototype: `.zarray` at the store root, keys like `2.0`.
    V2Prototype,
    /// Zarr v3 draft with the sharding storage transformer: metadata at `metadata_key`
    /// (`meta/root/<path>.array.json`, `meta/root.array.json` for the root array), shard keys
    /// `data/root/<path>/c<i><sep><j>` (`data/root/c<i><sep><j>`).
    V3Draft {
        /// The array's metadata document, e.g. `meta/root/image.array.json`.
        metadata_key: String,
        /// The prefix of its shard keys, e.g. `data/root/image/`.
        data_prefix: String,
        /// Between a shard key's grid coordinates (`/` or `.`).
        separator: char,
    },
}

/// An array opened from a store.
pub struct Array<S: Store> {
    meta: ArrayMetadata,
    store: S,
    format: Format,
    /// Given to every shard reader the array opens ([`Array::set_coalesce_gap`]).
    coalesce_gap: AtomicU64,
    /// What the last shard written while it encoded compressed to (`crate::shard::streamed`): the
    /// next one's memory estimate.
    write_ratio: streamed::Ratio,
    /// Frames appended ([`Array::append`]) to the shard layer not yet complete.
    pub(crate) pending: std::sync::Mutex<Option<crate::array::append::PendingLayer>>,
    /// Whether `pending` may hold a layer: region reads skip its lock otherwise, so that many
    /// threads reading one array never meet on it.
    pub(crate) appending: std::sync::atomic::AtomicBool,
    /// The shard indexes this handle read ([`Array::set_index_cache`]).
    index_cache: crate::array::index_cache::IndexCache,
}

/// What a store's root holds, for [`Array::open`] and [`Array::open_at`].
enum Found {
    /// An array: its metadata and format.
    Array(Box<ArrayMetadata>, Format),
    /// No `zarr.json` or `.zarray`.
    Nothing,
    /// A Zarr v3 draft hierarchy's entry point, whose arrays live under `meta/root/`.
    DraftEntryPoint,
}

/// What `store`'s root holds (see [`Array::open`]).
fn open_metadata<T: Store>(store: &T) -> Result<Found> {
    if let Some(text) = read_document(store, "zarr.json")? {
        let members = ArrayMetadata::members(&text, "zarr.json")?;
        drop(text);
        if members
            .tree
            .get("zarr_format")
            .is_some_and(Value::is_string)
        {
            return Ok(Found::DraftEntryPoint);
        }
        let meta = ArrayMetadata::from_document(members)?;
        return Ok(Found::Array(Box::new(meta), Format::V3));
    }
    if let Some(text) = read_document(store, ".zarray")? {
        let mut meta = crate::array::legacy::parse_v2_prototype(&parse_json(&text, ".zarray")?)?;
        // Zarr v2 keeps the user's attributes beside: they are the array's attributes.
        if let Some(text) = read_document(store, ".zattrs")? {
            let text =
                std::str::from_utf8(&text).map_err(|_| Error::metadata(".zattrs is not UTF-8"))?;
            meta.attributes = Attributes::from_text(text, ".zattrs")?;
        }
        return Ok(Found::Array(Box::new(meta), Format::V2Prototype));
    }
    Ok(Found::Nothing)
}

/// Writes the frames still pending ([`Array::append`]), ignoring errors, as
/// `std::io::BufWriter` does: call [`Array::flush`] to see them.
impl<S: Store> Drop for Array<S> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

/// One problem `verify` found: the shard key, and what is wrong (the error names the inner
/// chunk when it concerns one).
#[derive(Debug)]
pub struct Problem {
    /// The shard's key in the store.
    pub key: String,
    /// What is wrong with it.
    pub error: Error,
}

/// What [`Array::verify_counted`] checked, besides the problems it found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VerifySummary {
    /// Shard objects stored (each fetched and checked); 0 when the store holds none.
    pub stored_shards: u64,
    /// Inner chunks (unsharded: chunks) that decoded without error.
    pub chunks_decoded: u64,
    /// Of those, the ones no checksum covers: decoded, not verified.
    pub chunks_unverifiable: u64,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // An error that names its shard already starts with the key; it is shown once.
        write!(f, "{}: {}", self.key, self.error.text_without_shard())
    }
}

impl<S: Store> Array<S> {
    /// Open the array at the store's root: `zarr.json` (Zarr v3), or `.zarray` (the Zarr v2
    /// sharding prototype; plain v2 arrays read too).
    pub fn open(store: S) -> Result<Self> {
        match open_metadata(&store)? {
            Found::Array(meta, format) => Ok(Array::new(*meta, store, format)),
            Found::Nothing => Err(Error::metadata("no zarr.json or .zarray in the store")),
            Found::DraftEntryPoint => Err(Error::metadata(
                "zarr.json is a Zarr v3 draft entry point; open the array's meta/root/<path>.array.json",
            )),
        }
    }

    /// Open a Zarr v3 draft array (sharding storage transformer) at hierarchy path `path`
    /// (e.g. `foo/baz`) of a store rooted at the hierarchy root. An empty path (or `/`) is the
    /// array at the hierarchy's root: metadata `meta/root.array.json`, chunks `data/root/c…`.
    pub fn open_v3_draft(store: S, path: &str) -> Result<Self> {
        let path = path.trim_matches('/');
        let (metadata_key, data_prefix) = match path {
            "" => ("meta/root.array.json".to_string(), "data/root/".to_string()),
            _ => (
                format!("meta/root/{path}.array.json"),
                format!("data/root/{path}/"),
            ),
        };
        let text = read_document(&store, &metadata_key)?
            .ok_or_else(|| Error::metadata(format!("no {metadata_key} in the store")))?;
        let (meta, separator) =
            crate::array::legacy::parse_v3_draft_document(&text, &metadata_key)?;
        let format = Format::V3Draft {
            metadata_key,
            data_prefix,
            separator,
        };
        Ok(Array::new(meta, store, format))
    }

    /// Create a Zarr v3 array: write its `zarr.json` (existing shards are left alone).
    ///
    /// Errors: [`Error::InvalidMetadata`] (or [`Error::UnsupportedCodec`]) when `meta` fails
    /// [`ArrayMetadata::validate`] — nothing is written then; the store's errors.
    pub fn create(store: S, mut meta: ArrayMetadata) -> Result<Self> {
        meta.codecs.resolve(&meta.data_type);
        meta.validate()?;
        store.set("zarr.json", &meta.to_json_bytes())?;
        Ok(Array::new(meta, store, Format::V3))
    }

    /// Create a Zarr v3 array at node `path` of `store` (`""` for its root; checked by
    /// [`crate::storage::store::node_path`]): validate `meta`, then write `PATH/zarr.json` as a new
    /// object. A node already there (`zarr.json`, `.zarray` or `.zgroup`) is refused unless
    /// `overwrite`; then an array there has its stored shards and metadata deleted first, and
    /// a group everything stored below it (which needs a store that lists).
    ///
    /// Errors: [`Error::InvalidArgument`] (the path), [`Error::InvalidMetadata`] or
    /// [`Error::UnsupportedCodec`] (`meta`; nothing is written then), [`Error::InvalidState`]
    /// (a node exists and not `overwrite`), [`Error::Unsupported`] (overwriting a group in a
    /// store that cannot list), the store's errors.
    pub fn create_at(
        store: S,
        path: &str,
        mut meta: ArrayMetadata,
        overwrite: bool,
    ) -> Result<Array<Prefixed<S>>> {
        let node = Prefixed::new(store, path)?;
        meta.codecs.resolve(&meta.data_type);
        meta.validate()?;
        crate::array::group::make_room(&node, overwrite)?;
        node.set("zarr.json", &meta.to_json_bytes())?;
        Ok(Array::new(meta, node, Format::V3))
    }

    /// Open the array at node `path` of `store` (`""` for its root), as [`Array::open`] opens
    /// the one at a store's root: `PATH/zarr.json` or `PATH/.zarray`, else the Zarr v3 draft
    /// array at hierarchy path `path` (`meta/root/PATH.array.json`, [`Array::open_v3_draft`]).
    ///
    /// Errors: [`Error::InvalidArgument`] (the path), [`Error::InvalidMetadata`] (no array
    /// there, naming the path, or its metadata is invalid), the store's errors.
    pub fn open_at(store: S, path: &str) -> Result<Array<Prefixed<S>>> {
        let node = Prefixed::new(store, path)?;
        match open_metadata(&node)? {
            Found::Array(meta, format) => Ok(Array::new(*meta, node, format)),
            Found::Nothing | Found::DraftEntryPoint => {
                // A Zarr v3 draft hierarchy keeps its arrays' metadata under `meta/root/`.
                let root = Prefixed::new(node.into_inner(), "")?;
                let draft = match path {
                    "" => "meta/root.array.json".to_string(),
                    p => format!("meta/root/{p}.array.json"),
                };
                if read_document(&root, &draft)?.is_some() {
                    return Array::open_v3_draft(root, path);
                }
                Err(Error::metadata(format!(
                    "no zarr.json or .zarray at {}",
                    crate::storage::store::shown_path(path)
                )))
            }
        }
    }

    /// An array of a Zarr v3 `meta` whose document the caller already has, or will write
    /// itself (nothing is read or written now; `repack` writes `zarr.json` last, so a
    /// half-written array never opens as a complete one).
    ///
    /// Errors: [`Error::InvalidMetadata`] (or [`Error::UnsupportedCodec`]) when `meta` fails
    /// [`ArrayMetadata::validate`].
    pub fn from_metadata(store: S, mut meta: ArrayMetadata) -> Result<Self> {
        meta.codecs.resolve(&meta.data_type);
        meta.validate()?;
        Ok(Array::new(meta, store, Format::V3))
    }

    fn new(meta: ArrayMetadata, store: S, format: Format) -> Self {
        Array {
            meta,
            store,
            format,
            coalesce_gap: AtomicU64::new(DEFAULT_COALESCE_GAP),
            write_ratio: streamed::Ratio::default(),
            pending: std::sync::Mutex::new(None),
            appending: std::sync::atomic::AtomicBool::new(false),
            index_cache: Default::default(),
        }
    }

    /// Set the bound, in bytes, of this handle's cache of shard indexes (default
    /// [`index_cache::DEFAULT_INDEX_CACHE_BYTES`], 8 MiB); 0 turns it off and empties it.
    ///
    /// Reads (region reads, [`Array::shard_reader`]) keep the index of each shard they open,
    /// so that reading that shard again costs only the reads of its chunks: over an object
    /// store a repeated single-chunk read is one request instead of two. Each entry counts its
    /// decoded index (16 bytes per inner chunk) and about 200 bytes besides; when a new entry
    /// would pass the bound the least recently used ones are dropped, so the cache never holds
    /// more than the bound whatever the grid's size. An index larger than the bound is not
    /// kept. A shard with no stored object is never cached as missing.
    ///
    /// The cache is a snapshot of the shards as this handle read them:
    /// - every write through this handle (region writes, [`Array::write_shard`] and
    ///   [`Array::write_shard_with`], appends, [`Array::resize`], [`Array::compact`],
    ///   [`Array::repair`], [`Array::import`], repacking into it) drops the entries of the
    ///   shards it writes or deletes, whether it succeeds or fails, so a read never uses an
    ///   index older than a write this handle made;
    /// - writes by other handles or processes are seen once [`Array::forget_cached_indexes`]
    ///   is called, or on a new handle; until then a region read that fails on a shard whose
    ///   index came from the cache (the object shorter than an entry or gone, a checksum
    ///   mismatch, a chunk that does not decode, a store error) empties the cache and is
    ///   tried once more with indexes read afresh, so a shard replaced by another writer is
    ///   read correctly in the common case. A shard replaced by an object whose old entries
    ///   still decode (no checksum, same layout) reads the old entries' bytes until then.
    ///
    /// Safe to call while other threads read.
    pub fn set_index_cache(&self, bytes: u64) {
        self.index_cache.set_limit(bytes);
    }

    /// The bound [`Array::set_index_cache`] set.
    pub fn index_cache_limit(&self) -> u64 {
        self.index_cache.limit()
    }

    /// What the entries of the cache of shard indexes count against its bound now (never more
    /// than [`Array::index_cache_limit`]).
    pub fn cached_index_bytes(&self) -> u64 {
        self.index_cache.bytes()
    }

    /// Drop every cached shard index ([`Array::set_index_cache`]): the next read of each
    /// shard reads its index again, seeing what other handles or processes wrote since. Safe
    /// to call while other threads read.
    pub fn forget_cached_indexes(&self) {
        self.index_cache.clear();
    }

    /// Drop the cached index of the shard at `key` once `write` (which writes or deletes it)
    /// returns, whatever it returns.
    pub(crate) fn forgetting<T>(&self, key: &str, write: impl FnOnce() -> Result<T>) -> Result<T> {
        let done = write();
        self.index_cache.forget(key);
        done
    }

    /// The array's shape, frames appended and not yet written ([`Array::append`]) included.
    pub fn shape(&self) -> &[u64] {
        &self.meta.shape
    }

    /// Replace the array's `attributes` and write its `zarr.json` (a new object: temporary and
    /// rename for a directory), after the frames appended so far ([`Array::flush`]).
    ///
    /// Errors: [`Error::Unsupported`] for arrays not opened from a Zarr v3 `zarr.json`; the
    /// store's errors (the attributes in memory are unchanged then).
    pub fn set_attributes(&mut self, attributes: Attributes) -> Result<()> {
        self.check_v3("setting attributes")?;
        self.flush()?;
        let mut meta = self.meta.clone();
        meta.attributes = attributes;
        self.store.set("zarr.json", &meta.to_json_bytes())?;
        self.meta = meta;
        Ok(())
    }

    /// [`Error::Unsupported`] unless the array's metadata is a Zarr v3 `zarr.json` (the older
    /// formats are read and repacked, not changed in place).
    pub(crate) fn check_v3(&self, what: &str) -> Result<()> {
        match self.format {
            Format::V3 => Ok(()),
            _ => Err(Error::Unsupported(format!(
                "{what} needs a Zarr v3 array (zarr.json); repack this one first (`zarrshard repack`)"
            ))),
        }
    }

    /// Set the gap (bytes) below which the byte ranges of inner chunks one call wants from a
    /// shard are fetched with one read: region reads, and every reader
    /// [`Array::shard_reader`] opens from now on. 0 merges only touching ranges; a large value
    /// reads the whole span (fewer requests for a high-latency store such as HTTP, at the cost
    /// of bytes not wanted). Default [`DEFAULT_COALESCE_GAP`] (64 KiB). Safe to call while
    /// other threads read (calls that start afterwards use it).
    pub fn set_coalesce_gap(&self, gap: u64) {
        self.coalesce_gap.store(gap, Ordering::Relaxed);
    }

    /// The gap [`Array::set_coalesce_gap`] set.
    pub fn coalesce_gap(&self) -> u64 {
        self.coalesce_gap.load(Ordering::Relaxed)
    }

    /// The metadata format the array was opened from.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// The parsed metadata.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.meta
    }

    /// The metadata, to change it in place (resize, append); the caller writes `zarr.json`.
    pub(crate) fn meta_mut(&mut self) -> &mut ArrayMetadata {
        &mut self.meta
    }

    /// The store the array lives in.
    pub fn store(&self) -> &S {
        &self.store
    }

    /// Storage key of the shard at grid `coords`.
    pub fn shard_key(&self, coords: &[u64]) -> String {
        match &self.format {
            Format::V3 | Format::V2Prototype => self.meta.chunk_key(coords),
            Format::V3Draft {
                data_prefix,
                separator,
                ..
            } => crate::array::legacy::draft_key(data_prefix, *separator, coords),
        }
    }

    /// What every shard key starts with (the key up to its first coordinate: `c/`,
    /// `data/root/image/c`, nothing for `0.0`-style keys), and the separator between its
    /// coordinates.
    pub(crate) fn key_pattern(&self) -> (String, char) {
        match &self.format {
            Format::V3 | Format::V2Prototype => self
                .meta
                .chunk_key_encoding
                .key_pattern(self.meta.shape.len()),
            Format::V3Draft {
                data_prefix,
                separator,
                ..
            } => (format!("{data_prefix}c"), *separator),
        }
    }

    /// The grid coordinates of the shard stored at `key`, or `None` when `key` is not one of
    /// this array's shard keys: another object (`zarr.json`, a temporary file), a position
    /// outside the chunk grid, or a spelling [`Array::shard_key`] never produces (`c/01/0`,
    /// `c/+1/0`), which no implementation would read.
    pub fn shard_coords(&self, key: &str) -> Option<Vec<u64>> {
        let (prefix, separator) = self.key_pattern();
        self.coords_of(key, &self.meta.grid_shape(), &prefix, separator)
    }

    /// [`Array::shard_coords`] with the grid and key pattern worked out once by the caller
    /// (a listing parses every key with the same ones).
    pub(crate) fn coords_of(
        &self,
        key: &str,
        grid: &[u64],
        prefix: &str,
        separator: char,
    ) -> Option<Vec<u64>> {
        let rest = key.strip_prefix(prefix)?;
        let coords: Vec<u64> = match grid.len() {
            0 => Vec::new(),
            _ => rest
                .split(separator)
                .map(|c| c.parse().ok())
                .collect::<Option<_>>()?,
        };
        // The key this array would write for them must be `key` itself.
        let inside = coords.len() == grid.len() && coords.iter().zip(grid).all(|(c, n)| c < n);
        (inside && self.shard_key(&coords) == key).then_some(coords)
    }

    /// The grid coordinates of the shards that are stored, in C order. When the store lists
    /// ([`Store::list_prefix`]) this is one listing and nothing is read; otherwise every
    /// position of the chunk grid is asked for its size (one store call each).
    pub fn stored_shards(&self) -> Result<Vec<Vec<u64>>> {
        let walk = self.shard_walk()?;
        if walk.listed.is_some() {
            return Ok(walk.positions().filter_map(|(_, c)| c).collect());
        }
        let mut stored = Vec::new();
        for coords in nd::c_order(&walk.grid) {
            if self
                .store
                .shard_io(&self.shard_key(&coords))?
                .size()?
                .is_some()
            {
                stored.push(coords);
            }
        }
        Ok(stored)
    }

    /// How many shards are stored ([`Array::stored_shards`]'s count): 0 for an array whose
    /// store holds none, which reads as all fill value.
    pub fn stored_shard_count(&self) -> Result<u64> {
        Ok(self.stored_shards()?.len() as u64)
    }

    /// What a walk over the stored shards visits: the listed shards when the store lists,
    /// else every position of the grid.
    pub(crate) fn shard_walk(&self) -> Result<ShardWalk> {
        let grid = self.meta.grid_shape();
        // Parsed metadata never overflows here; checked so positions always fit in a u64.
        let total = crate::codec::checked_product(&grid)?;
        let (prefix, separator) = self.key_pattern();
        let listed = self.store.list_prefix(&prefix)?.map(|keys| {
            let mut listed: Vec<u64> = keys
                .iter()
                .filter_map(|key| self.coords_of(key, &grid, &prefix, separator))
                .map(|coords| nd::ravel(&coords, &grid))
                .collect();
            listed.sort_unstable();
            listed.dedup();
            listed
        });
        Ok(ShardWalk {
            grid,
            total,
            listed,
        })
    }

    /// Decode the whole shard (chunk of the grid) at `coords` through the full codec chain,
    /// in one read of its object; `None` when it is not stored.
    pub fn read_shard(&self, coords: &[u64]) -> Result<Option<Vec<u8>>> {
        let key = self.shard_key(coords);
        let Some(object) = self.store.get(&key)? else {
            return Ok(None);
        };
        self.meta
            .codecs
            .decode(&object, &self.meta.chunk_repr())
            .map(Some)
            .map_err(|e| e.in_shard(&key))
    }

    /// Encode a whole decoded shard (C order, native byte order, the chunk grid's chunk shape)
    /// through the full codec chain and store it. A shard that is entirely the fill value is
    /// deleted instead of written. Its inner chunks are encoded in parallel; where the array
    /// has no bytes→bytes codec after sharding, they are handed to the store without first
    /// being assembled into one buffer (as [`Array::write_shard_with`] with
    /// [`WriteStrategy::Buffered`] and the default options), and with two threads or more,
    /// from the host's thread, written while the rest still encode (see
    /// [`crate::ShardIo::object_sink`]). The object is the same either way.
    ///
    /// Errors: [`Error::BufferSize`] when `data` is not exactly one shard's decoded size
    /// (checked before anything else: a short buffer of fill bytes never deletes the shard),
    /// the codecs' and the store's errors.
    pub fn write_shard(&self, coords: &[u64], data: &[u8]) -> Result<Finalized> {
        crate::codec::check_len(data.len(), self.meta.chunk_repr().byte_size()?)?;
        let key = self.shard_key(coords);
        self.forgetting(&key, || self.write_shard_unforgotten(&key, coords, data))
    }

    /// [`Array::write_shard`] of `key`, `data` checked; the caller drops the cached index.
    fn write_shard_unforgotten(&self, key: &str, coords: &[u64], data: &[u8]) -> Result<Finalized> {
        let key = key.to_string();
        if self.meta.fill_value.fills(data) {
            self.store.delete(&key)?;
            return Ok(Finalized::Deleted);
        }
        if self.meta.supports_partial_reads() {
            let options = WriteOptions::default();
            return self.write_shard_with(coords, data, WriteStrategy::Buffered, options);
        }
        let encoded = self.meta.codecs.encode(data, &self.meta.chunk_repr())?;
        self.store.set(&key, &encoded)?;
        Ok(Finalized::Written {
            size: encoded.len() as u64,
        })
    }

    /// A reader for partial access to the shard at `coords` (reads its index now).
    ///
    /// Inner chunk coordinates and contents are those the sharding codec sees: when
    /// array→array codecs (e.g. `transpose`) come before `sharding_indexed`, they are in the
    /// transformed space. Arrays with bytes→bytes codecs after sharding can only be read as
    /// whole shards ([`Array::read_shard`]).
    pub fn shard_reader(&self, coords: &[u64]) -> Result<ShardReader<Box<dyn ShardIo>>> {
        if !self.meta.supports_partial_reads() {
            return Err(Error::InvalidArgument(
                "this array's shards cannot be read partially (not sharded, or a bytes→bytes codec follows sharding_indexed)".into(),
            ));
        }
        Ok(self.cached_shard_reader(coords)?.0)
    }

    /// [`Array::shard_reader`], and whether its index came from the cache of indexes (a read
    /// that fails with it is tried again, [`Array::set_index_cache`]). The array's shards are
    /// read partially (checked by the caller).
    pub(crate) fn cached_shard_reader(
        &self,
        coords: &[u64],
    ) -> Result<(ShardReader<Box<dyn ShardIo>>, bool)> {
        let layout = Arc::new(self.meta.shard_layout().expect("sharded"));
        let key = self.shard_key(coords);
        let io = self.store.shard_io(&key)?;
        let (reader, cached) = match self.index_cache.get(&key) {
            Some((index, size)) => (ShardReader::with_index(layout, io, Some(index), size), true),
            None => {
                let epoch = self.index_cache.epoch();
                let loaded =
                    crate::shard::reader::load_index(&layout, &io).map_err(|e| e.in_shard(&key))?;
                let reader = match loaded {
                    Some((index, size)) => {
                        let index = Arc::new(index);
                        self.index_cache.insert(&key, index.clone(), size, epoch);
                        ShardReader::with_index(layout, io, Some(index), size)
                    }
                    // Absence is not cached: another writer may store the shard later.
                    None => ShardReader::with_index(layout, io, None, None),
                };
                (reader, false)
            }
        };
        reader.set_coalesce_gap(self.coalesce_gap());
        Ok((reader, cached))
    }

    /// Write the whole array as raw bytes: C order, each element little-endian, bool as one
    /// byte 0/1, complex as real then imaginary part, the fill value where nothing is stored.
    ///
    /// Memory follows the work, not the grid: the array is read in blocks contiguous in C
    /// order (`crate::array::blocks`) of at most [`EXPORT_BLOCK_BYTES`] (or the memory limit, when
    /// lower) through [`Array::read_region`], which holds a bounded pass of shards at a time.
    /// A block is larger only where cutting it would decode inner chunks (or whole shards, for
    /// arrays read a shard at a time) once per row of them, and then at most the memory limit;
    /// past that the block is cut anyway (slower, never more memory). When the store lists
    /// ([`Store::list_prefix`]) only the listed shards are read, and a block without any is
    /// written as fill bytes without asking the store, so a sparse array exports at the speed
    /// of writing its bytes; otherwise every grid position in a block is asked (one store call
    /// each).
    ///
    /// Errors: [`Error::MemoryLimit`] when an inner chunk (or a shard read whole) passes the
    /// limit; the codecs', the store's and `out`'s errors.
    pub fn export(&self, out: &mut dyn Write) -> Result<()> {
        let meta = &self.meta;
        let elem = meta.data_type.size() as u64;
        if meta.shape.contains(&0) {
            return Ok(());
        }
        let walk = self.shard_walk()?;
        let listed = walk.listed.as_deref();
        let limit = crate::runtime::limits::memory_limit();
        // Whole inner chunks where they are read one by one, else whole shards.
        let unit = match (self.partial_regions(), meta.shard_layout()) {
            (true, Some(layout)) => layout.codec().chunk_shape.clone(),
            _ => meta.chunk_shape.clone(),
        };
        let target = EXPORT_BLOCK_BYTES.min(limit);
        let plan = crate::array::blocks::Plan::new(
            &meta.shape,
            &meta.chunk_shape,
            elem,
            &unit,
            target,
            limit,
            true,
            "a block",
        )?;
        // Fill bytes in the export order, written as often as a block of fill needs them.
        let mut fill = Vec::new();
        let mut block = Vec::new();
        for b in plan.blocks() {
            let bytes = b.bytes(elem);
            let (lo, hi) = b.shard_range(&meta.chunk_shape, &walk.grid);
            let empty = listed
                .is_some_and(|l| l.partition_point(|&i| i < lo) == l.partition_point(|&i| i < hi));
            if empty {
                if fill.is_empty() {
                    let len = bytes.min(FILL_BYTES.div_ceil(elem) * elem);
                    fill = meta.fill_value.0.repeat((len / elem) as usize);
                    raw_order(&mut fill, &meta.data_type);
                }
                let mut left = bytes;
                while left > 0 {
                    let n = left.min(fill.len() as u64);
                    out.write_all(&fill[..n as usize])?;
                    left -= n;
                }
                continue;
            }
            let len = crate::runtime::limits::buffer_len(
                bytes,
                &format!("a block of shape {}", shown(&b.shape)),
            )?;
            block.resize(len, 0);
            self.read_region_in(&b.start, &b.shape, &mut block, listed)?;
            raw_order(&mut block, &meta.data_type);
            out.write_all(&block)?;
        }
        Ok(())
    }

    /// Write every shard from raw bytes in the export format (C order, little-endian, bool one
    /// byte, complex real then imaginary), with `strategy`. Inner chunks equal to the fill
    /// value are not stored, and a shard with nothing stored is deleted rather than written.
    /// The input must hold exactly the array's bytes.
    ///
    /// Strategies apply where the shard object is the sharding codec's own output; with a
    /// bytes→bytes codec after `sharding_indexed` (or no sharding) each shard is encoded whole.
    ///
    /// The input is read in blocks contiguous in C order (`crate::array::blocks`) of about
    /// [`IMPORT_BLOCK_BYTES`] (or the memory limit, when lower), on the calling thread, while
    /// the pool encodes and writes the shards of the previous block, at most a pass of
    /// [`IMPORT_PASS_SHARDS`] at a time: two block buffers are held, and bookkeeping for one
    /// pass, however many shards the grid has. A block holds whole shards (a shard is written
    /// whole), so it is larger where a row of shards is: the smallest such block must be
    /// within the memory limit ([`Error::MemoryLimit`] otherwise, before anything is read or
    /// written). `input` is never used from another thread.
    pub fn import(
        &self,
        input: &mut dyn Read,
        strategy: WriteStrategy,
        options: WriteOptions,
    ) -> Result<()> {
        let meta = &self.meta;
        let elem = meta.data_type.size();
        let zeros = vec![0; meta.shape.len()];
        let total = crate::codec::checked_product(&meta.shape)?.saturating_mul(elem as u64);
        // Buffered, sharded, no array→array codec: chunks are cut straight out of the block.
        let direct = strategy == WriteStrategy::Buffered
            && meta.supports_partial_reads()
            && meta.codecs.array_to_array.is_empty();
        let grid = meta.grid_shape();
        let limit = crate::runtime::limits::memory_limit();
        let plan = crate::array::blocks::Plan::new(
            &meta.shape,
            &meta.chunk_shape,
            elem as u64,
            &meta.chunk_shape,
            IMPORT_BLOCK_BYTES.min(limit),
            limit,
            false,
            "a block (whole shards) of the input",
        )?;
        let read_block = |input: &mut dyn Read, block: &Block, buf: &mut Vec<u8>| {
            let len = crate::runtime::limits::buffer_len(
                block.bytes(elem as u64),
                "a block of the input",
            )?;
            buf.clear();
            buf.reserve_exact(len);
            // Read into the buffer's spare capacity (`read_to_end` needs no zeroed memory:
            // `read_exact` would take a memset of every block first).
            input.take(len as u64).read_to_end(buf)?;
            if buf.len() < len {
                return Err(Error::InvalidArgument(format!(
                    "the input is shorter than the array's {total} bytes"
                )));
            }
            raw_order(buf, &meta.data_type);
            Ok::<_, Error>(())
        };
        // The block's shards are cut out, encoded and written in parallel, a pass at a time.
        let encode_block = |buf: &[u8], block: &Block| -> Result<()> {
            let (mut lo, hi) = block.shard_range(&meta.chunk_shape, &grid);
            while lo < hi {
                let n = (hi - lo).min(IMPORT_PASS_SHARDS);
                threads::map_nested(n as usize, |k| {
                    let coords = nd::unravel(lo + k as u64, &grid);
                    let origin = nd::mul(&coords, &meta.chunk_shape);
                    let at = nd::sub(&origin, &block.start);
                    let region = nd::in_array(&meta.shape, &origin, &meta.chunk_shape);
                    if direct {
                        return self.write_shard_cut(
                            &coords,
                            buf,
                            &block.shape,
                            &at,
                            &region,
                            options,
                        );
                    }
                    let mut shard = meta.chunk_repr().filled()?;
                    nd::copy_box(
                        buf,
                        &block.shape,
                        &at,
                        &mut shard,
                        &meta.chunk_shape,
                        &zeros,
                        &region,
                        elem,
                    );
                    self.write_shard_with(&coords, &shard, strategy, options)
                })?;
                lo += n;
            }
            Ok(())
        };
        // Two block buffers, reused: the next block is read on this thread while the pool
        // encodes and writes the current one's shards.
        let mut blocks = plan.blocks();
        let (mut current, mut next) = (Vec::new(), Vec::new());
        let mut block = blocks.next();
        if let Some(b) = &block {
            read_block(input, b, &mut current)?;
        }
        while let Some(b) = block {
            let following = blocks.next();
            let (encoded, read) = threads::overlap(
                || encode_block(&current, &b),
                || match &following {
                    Some(f) => read_block(input, f, &mut next),
                    None => Ok(()),
                },
            );
            encoded?;
            read?;
            std::mem::swap(&mut current, &mut next);
            block = following;
        }
        if input.read(&mut [0u8])? != 0 {
            return Err(Error::InvalidArgument(format!(
                "the input is longer than the array's {total} bytes"
            )));
        }
        Ok(())
    }

    /// Write shard `coords` with the buffered writer from a larger C-order buffer `src` of
    /// shape `src_shape`, in which the shard's origin is at `at` and `region` of it lies inside
    /// the array: each inner chunk is cut straight out of `src` (no shard-sized intermediate
    /// copy), chunks past the array's edge padded with the fill value. For sharded arrays
    /// without array→array codecs or bytes→bytes codecs after sharding.
    pub(crate) fn write_shard_cut(
        &self,
        coords: &[u64],
        src: &[u8],
        src_shape: &[u64],
        at: &[u64],
        region: &[u64],
        options: WriteOptions,
    ) -> Result<Finalized> {
        let meta = &self.meta;
        let layout = Arc::new(meta.shard_layout().expect("sharded"));
        let inner = &layout.inner_repr().shape;
        let (rank, elem) = (inner.len(), meta.data_type.size());
        let cut = |i: usize, chunk: &mut [u8]| {
            let origin = layout.chunk_origin(i);
            // Where the chunk starts in the slab, and how much of it lies inside the array.
            let start: Vec<u64> = at.iter().zip(&origin).map(|(a, b)| a + b).collect();
            let part: Vec<u64> = (0..rank)
                .map(|d| inner[d].min(region[d].saturating_sub(origin[d])))
                .collect();
            if part != *inner {
                meta.fill_value.fill(chunk);
            }
            nd::copy_box(
                src,
                src_shape,
                &start,
                chunk,
                inner,
                &vec![0; rank],
                &part,
                elem,
            );
        };
        self.write_buffered(coords, &layout, options, cut)
    }

    /// Encode shard `coords`'s inner chunks, which `fill(i, chunk)` writes decoded, in
    /// parallel and write them with the buffered strategy. When the calling thread shares the
    /// chunks with the pool and the store's objects have an [`crate::ObjectSink`], finished
    /// chunks are written while the rest still encode (`crate::shard::streamed`); otherwise the whole
    /// object is written at the end. The bytes are the same either way.
    fn write_buffered(
        &self,
        coords: &[u64],
        layout: &Arc<ShardLayout>,
        options: WriteOptions,
        fill: impl Fn(usize, &mut [u8]) + Sync + Send,
    ) -> Result<Finalized> {
        let key = self.shard_key(coords);
        self.forgetting(&key, || {
            self.write_buffered_unforgotten(&key, layout, options, fill)
        })
    }

    /// [`Array::write_buffered`] of `key`; the caller drops the cached index.
    fn write_buffered_unforgotten(
        &self,
        key: &str,
        layout: &Arc<ShardLayout>,
        options: WriteOptions,
        fill: impl Fn(usize, &mut [u8]) + Sync + Send,
    ) -> Result<Finalized> {
        let io = self.store.shard_io(key)?;
        if threads::shares_with_caller(layout.num_chunks()) && !self.store.io_on_caller_thread() {
            if let Some(sink) = io.object_sink() {
                let ratio = &self.write_ratio;
                return streamed::encode_and_write(layout, &*io, sink, options, ratio, fill);
            }
        }
        let encoded = layout.encode_chunks_with(options.store_fill_chunks, fill)?;
        let writer = ShardWriter::new(layout.clone(), io, WriteStrategy::Buffered, options)?;
        writer.finish_with(encoded)
    }

    /// Write one decoded shard with `strategy` (see [`Array::import`]).
    ///
    /// When the store's objects have an [`crate::ObjectSink`] ([`FsStore`](crate::FsStore):
    /// a temporary file renamed over the shard), every strategy writes a new object that
    /// replaces the shard only when it is complete: the streaming writer writes into it chunk
    /// by chunk; an update (append-only or in place) is applied to a copy of the old object in
    /// memory and written whole, its bytes those the update would leave in place. So a killed
    /// process, a full disk or a failed write leaves the old shard as it was, and of two
    /// writers of one shard the last to finish wins whole. Without one, streaming and updates
    /// write into the object itself (see [`crate::shard::writer`]).
    ///
    /// Errors: [`Error::BufferSize`] when `data` is not exactly one shard's decoded size
    /// (nothing is written or deleted then), the writer's, codecs' and store's errors.
    pub fn write_shard_with(
        &self,
        coords: &[u64],
        data: &[u8],
        strategy: WriteStrategy,
        options: WriteOptions,
    ) -> Result<Finalized> {
        if !self.meta.supports_partial_reads() {
            return self.write_shard(coords, data);
        }
        let layout = Arc::new(self.meta.shard_layout().expect("sharded"));
        // Array→array codecs before sharding (transpose) apply to the shard as a whole.
        let data = self
            .meta
            .codecs
            .encode_arrays(data, &self.meta.chunk_repr())?;
        if strategy == WriteStrategy::Buffered {
            // The whole shard is in memory anyway: encode its chunks in parallel.
            return self.write_buffered(coords, &layout, options, |i, chunk| {
                layout.extract_chunk(i, &data, chunk)
            });
        }
        let key = self.shard_key(coords);
        self.forgetting(&key, || {
            self.update_shard(&key, &layout, &data, strategy, options)
        })
    }

    /// [`Array::write_shard_with`] of `key` with a streaming or update strategy, `data` after
    /// the array→array codecs; the caller drops the cached index.
    fn update_shard(
        &self,
        key: &str,
        layout: &Arc<ShardLayout>,
        data: &[u8],
        strategy: WriteStrategy,
        options: WriteOptions,
    ) -> Result<Finalized> {
        let io = self.store.shard_io(key)?;
        let write = |io: &dyn ShardIo| {
            // An update reads the old index: a damaged one names the shard.
            let mut writer = ShardWriter::new(layout.clone(), io, strategy, options)
                .map_err(|e| e.in_shard(key))?;
            let mut chunk = vec![0u8; layout.inner_byte_size()];
            for i in 0..layout.num_chunks() {
                layout.extract_chunk(i, data, &mut chunk);
                writer.write_chunk(&nd::unravel(i as u64, layout.chunks_per_shard()), &chunk)?;
            }
            writer.finalize()
        };
        // Where the store makes new objects (files: a temporary renamed over the shard),
        // streaming and updates write one too, so the old shard is replaced only by a complete
        // new one: a killed process, a full disk or a second writer never leaves a torn shard.
        // An update is applied to a copy of the old object in memory (the shard's size; the
        // decoded shard is in memory anyway), which is then written whole.
        let Some(sink) = io.object_sink() else {
            return write(&*io);
        };
        let done = match strategy {
            WriteStrategy::Streaming => {
                let new = SinkIo::new(sink);
                let done = write(&new)?;
                if let Finalized::Written { .. } = done {
                    new.commit()?;
                }
                done
            }
            _ => {
                drop(sink);
                update_on_copy(&*io, write)?
            }
        };
        if done == Finalized::Deleted {
            crate::shard::writer::delete_unstored(&*io, false)?;
        }
        Ok(done)
    }

    /// Rewrite every shard that has dead bytes (left by updates) without them. Returns
    /// `(shard key, bytes before, bytes after)` for each shard rewritten.
    pub fn compact(&self, order: ChunkOrder) -> Result<Vec<(String, u64, u64)>> {
        self.compact_with_progress(order, &|_| {})
    }

    /// [`Array::compact`], calling `on_progress(n)` as positions of the chunk grid are done,
    /// `n` the number done since the last call (for a progress display: the calls add up to
    /// the number of grid positions; not called for an unsharded array). Only stored shards
    /// are visited when the store lists ([`Store::list_prefix`]).
    pub fn compact_with_progress(
        &self,
        order: ChunkOrder,
        on_progress: &dyn Fn(u64),
    ) -> Result<Vec<(String, u64, u64)>> {
        let Some(layout) = self
            .meta
            .shard_layout()
            .filter(|_| self.meta.supports_partial_reads())
        else {
            return Ok(vec![]); // whole-shard encodings never have dead bytes
        };
        let mut done = Vec::new();
        for (covered, coords) in self.shard_walk()?.positions() {
            on_progress(covered);
            let Some(coords) = coords else { continue };
            let key = self.shard_key(&coords);
            let io = self.store.shard_io(&key)?;
            let Some((index, size)) = crate::shard::reader::load_index(&layout, &io)? else {
                continue;
            };
            let size = match size {
                Some(s) => s,
                None => io.size()?.unwrap_or(0),
            };
            if index.dead_bytes(&layout, size) == 0 {
                continue;
            }
            if let Some((before, after)) = self.forgetting(&key, || compact(&layout, &io, order))? {
                done.push((key, before, after));
            }
        }
        Ok(done)
    }

    /// The draft storage transformer's `list_prefix`: the keys of the chunks that exist (index
    /// entry not empty), by their original chunk key, sorted, that start with `prefix`. Only
    /// for [`Format::V3Draft`] arrays. Reads every stored shard's index (one read each; every
    /// position of the grid is asked when the store cannot list, [`Store::list_prefix`]).
    pub fn list_chunk_keys(&self, prefix: &str) -> Result<Vec<String>> {
        let Format::V3Draft {
            data_prefix,
            separator,
            ..
        } = &self.format
        else {
            return Err(Error::InvalidArgument(
                "chunk key listing is defined for the v3 draft format only".into(),
            ));
        };
        let mut keys = Vec::new();
        match self.meta.shard_layout() {
            None => {
                for coords in self.stored_shards()? {
                    keys.push(crate::array::legacy::draft_key(
                        data_prefix,
                        *separator,
                        &coords,
                    ));
                }
            }
            Some(layout) => {
                let per_shard = layout.chunks_per_shard();
                for (_, coords) in self.shard_walk()?.positions() {
                    let Some(coords) = coords else { continue };
                    let io = self.store.shard_io(&self.shard_key(&coords))?;
                    let Some((index, _)) = crate::shard::reader::load_index(&layout, &io)? else {
                        continue;
                    };
                    for (i, _) in index.stored() {
                        let inner = nd::unravel(i as u64, per_shard);
                        let chunk: Vec<u64> = coords
                            .iter()
                            .zip(per_shard)
                            .zip(&inner)
                            .map(|((s, n), c)| s * n + c)
                            .collect();
                        keys.push(crate::array::legacy::draft_key(
                            data_prefix,
                            *separator,
                            &chunk,
                        ));
                    }
                }
            }
        }
        keys.retain(|k| k.starts_with(prefix));
        keys.sort();
        Ok(keys)
    }

    /// Check every shard: index checksum and bounds, and that every inner chunk decodes.
    /// Returns one problem per bad shard or inner chunk (empty when the array is clean), in C
    /// order of the chunk grid and of each shard's chunks. A shard whose object cannot be read
    /// (the store's error for that key: a directory or a loop of symbolic links where the file
    /// would be, no permission) is a problem with that error; `Err` only when the store cannot
    /// list or a progress or problem callback fails.
    pub fn verify(&self) -> Result<Vec<Problem>> {
        self.verify_with_progress(&|_| {})
    }

    /// [`Array::verify`], calling `on_progress(n)` on this thread as each batch of positions of
    /// the chunk grid is done, `n` the number done since the last call (for a progress
    /// display: the calls add up to the number of grid positions).
    ///
    /// When the store lists ([`Store::list_prefix`]) only the listed shards are fetched, so a
    /// sparse grid costs one listing and a read per stored shard; otherwise every position is
    /// asked (one read each, missing or not).
    ///
    /// Shards are fetched and checked several at once on the thread pool, as region reads
    /// fetch them (on this thread when the store asks, [`Store::io_on_caller_thread`]), a few
    /// shards per thread at a time, so only those are in memory at once; each shard's chunks
    /// decode in parallel too. The result is the same as one thread's.
    pub fn verify_with_progress(&self, on_progress: &dyn Fn(u64)) -> Result<Vec<Problem>> {
        let mut problems = Vec::new();
        self.verify_each(on_progress, |problem| {
            problems.push(problem);
            Ok(())
        })?;
        Ok(problems)
    }

    /// [`Array::verify_with_progress`], handing each problem to `on_problem` on this thread as
    /// its batch of shards is done, in the same order, instead of collecting them: memory
    /// stays bounded by a batch however damaged the array. An error from `on_problem` stops
    /// the walk and is returned.
    pub fn verify_each(
        &self,
        on_progress: &dyn Fn(u64),
        on_problem: impl FnMut(Problem) -> Result<()>,
    ) -> Result<()> {
        self.verify_counted(on_progress, on_problem).map(|_| ())
    }

    /// [`Array::verify_each`], returning what was checked besides the problems: how many
    /// shards are stored (0 for an array whose store holds none, which reads as all fill value
    /// like one mistyped or never written) and how many inner chunks decoded, and of those how
    /// many no checksum covers ([`crate::CodecChain::checks_integrity`]): they decoded, but whether
    /// their bytes are the ones written cannot be told, so an array with such chunks is never
    /// proven clean.
    pub fn verify_counted(
        &self,
        on_progress: &dyn Fn(u64),
        mut on_problem: impl FnMut(Problem) -> Result<()>,
    ) -> Result<VerifySummary> {
        let mut summary = VerifySummary::default();
        let checked = self.chunks_checked_by_checksum();
        // A shard that cannot be read (a directory or a loop of links where the file would be,
        // no permission) is a problem of that shard, not the end of the walk.
        self.for_each_stored_object(
            |key, object| match object {
                Ok(object) => Ok((key, self.check_shard_counted(&object))),
                Err(e) if self.store.unreadable_shard_is_problem() => Ok((key, (vec![e], 0))),
                Err(e) => Err(e),
            },
            |covered, shard| {
                on_progress(covered);
                if let Some((key, (errors, decoded))) = shard {
                    summary.stored_shards += 1;
                    summary.chunks_decoded += decoded;
                    if !checked {
                        summary.chunks_unverifiable += decoded;
                    }
                    for error in errors {
                        on_problem(Problem {
                            key: key.clone(),
                            error,
                        })?;
                    }
                }
                Ok(())
            },
        )?;
        Ok(summary)
    }

    /// Whether a checksum covers every inner chunk (or, unsharded, every chunk): one in the
    /// inner codecs, or one after `sharding_indexed` over the whole shard.
    fn chunks_checked_by_checksum(&self) -> bool {
        let codecs = &self.meta.codecs;
        match &codecs.array_to_bytes {
            crate::codec::ArrayToBytes::Sharding(s) => {
                s.codecs.checks_integrity()
                    || (codecs.bytes_to_bytes.iter())
                        .any(crate::codec::BytesToBytes::checks_integrity)
            }
            crate::codec::ArrayToBytes::Bytes(_) => codecs.checks_integrity(),
        }
    }

    /// `check(key, object)` for every stored shard object, then `then(covered, result)` on this
    /// thread in C order: once per stored shard, `covered` counting it and the empty positions
    /// since the one before, and `None` for empty positions (each, or those after the last
    /// listed shard at once when the store lists, [`Array::shard_walk`]). The objects are
    /// fetched and checked several at once on the thread pool, as region reads fetch them (on
    /// this thread when the store asks, [`Store::io_on_caller_thread`]), a batch of a few
    /// shards per thread at a time, so only those are in memory at once. A failure (the store's, `check`'s or `then`'s) stops the walk after `then` has seen every
    /// position before it, as one thread's loop would.
    pub(crate) fn for_each_stored_shard<T: Send>(
        &self,
        check: impl Fn(String, Vec<u8>) -> Result<T> + Sync + Send,
        then: impl FnMut(u64, Option<T>) -> Result<()>,
    ) -> Result<()> {
        self.for_each_stored_object(|key, object| check(key, object?), then)
    }

    /// [`Array::for_each_stored_shard`], handing `check` the store's error when a listed or
    /// existing object cannot be read, instead of stopping there.
    pub(crate) fn for_each_stored_object<T: Send>(
        &self,
        check: impl Fn(String, Result<Vec<u8>>) -> Result<T> + Sync + Send,
        mut then: impl FnMut(u64, Option<T>) -> Result<()>,
    ) -> Result<()> {
        let walk = self.shard_walk()?;
        let mut positions = walk.positions().peekable();
        let batch_len = threads::threads()
            .max(1)
            .saturating_mul(SHARDS_PER_THREAD_CHECKED);
        while positions.peek().is_some() {
            let batch: Vec<(u64, Option<Vec<u64>>)> = positions.by_ref().take(batch_len).collect();
            // Each position's own outcome, so that the positions before a failure are handed
            // to `then` before it is returned.
            let checked = self.map_io(batch.len(), |k| {
                let Some(coords) = &batch[k].1 else {
                    return Ok(Ok(None));
                };
                let key = self.shard_key(coords);
                Ok(match self.store.get(&key) {
                    Ok(None) => Ok(None),
                    Ok(Some(object)) => check(key, Ok(object)).map(Some),
                    Err(e) => check(key, Err(e)).map(Some),
                })
            })?;
            for ((covered, _), shard) in batch.iter().zip(checked) {
                then(*covered, shard?)?;
            }
        }
        Ok(())
    }

    /// Every problem in one stored shard object.
    pub fn check_shard_object(&self, object: &[u8]) -> Vec<Error> {
        self.check_shard_counted(object).0
    }

    /// [`Array::check_shard_object`] and how many inner chunks (unsharded: chunks) decoded
    /// without error.
    fn check_shard_counted(&self, object: &[u8]) -> (Vec<Error>, u64) {
        let meta = &self.meta;
        let Some(layout) = meta.shard_layout() else {
            return match meta.codecs.decode(object, &meta.chunk_repr()) {
                Ok(_) => (Vec::new(), 1),
                Err(e) => (vec![e], 0),
            };
        };
        let shard = match meta.codecs.decode_bytes_stage(object, &meta.chunk_repr()) {
            Ok(s) => s,
            Err(e) => return (vec![e], 0),
        };
        let index = match layout
            .index_bytes(&shard)
            .and_then(|b| ShardIndex::decode_unchecked(b, &layout))
        {
            Ok(ix) => ix,
            Err(e) => return (vec![e], 0),
        };
        let size = Some(shard.len() as u64);
        let bad = index.entry_errors(&layout, size);
        let mut errors: Vec<Error> = Vec::new();
        let mut skip = vec![false; index.len()];
        for (i, e) in bad {
            skip[i] = true;
            errors.push(e);
        }
        let stored: Vec<_> = index.stored().filter(|(i, _)| !skip[*i]).collect();
        // Decoded in parallel, a run of chunks per item with one buffer for the run; the
        // errors stay in chunk order.
        let runs = stored.len().div_ceil(CHUNKS_PER_CHECK_ITEM);
        let decoded = threads::map(runs, |r| {
            let mut chunk = layout.inner_repr().filled()?;
            let run = &stored
                [r * CHUNKS_PER_CHECK_ITEM..stored.len().min((r + 1) * CHUNKS_PER_CHECK_ITEM)];
            Ok(run
                .iter()
                .filter_map(|(i, loc)| {
                    let bytes = &shard[loc.offset as usize..loc.end() as usize];
                    layout.decode_chunk_into(*i, bytes, &mut chunk).err()
                })
                .collect::<Vec<Error>>())
        });
        let mut failed = 0;
        match decoded {
            Ok(runs) => {
                for run in runs {
                    failed += run.len();
                    errors.extend(run);
                }
            }
            Err(e) => {
                failed = stored.len();
                errors.push(e);
            }
        }
        (errors, (stored.len() - failed) as u64)
    }
}

/// Apply an update (`write`, a shard writer's whole run over the object it is given) to a copy
/// of `io`'s object in memory, then write the result whole with [`ShardIo::put`] (a new object,
/// where the back end makes them, that replaces the old one only when complete). Memory: the
/// old object. The old object is left as it was when `write` fails; when it leaves no stored
/// chunk ([`Finalized::Deleted`]) nothing is written and the caller deletes the object.
pub(crate) fn update_on_copy(
    io: &dyn ShardIo,
    write: impl FnOnce(&dyn ShardIo) -> Result<Finalized>,
) -> Result<Finalized> {
    let copy = match io.read(ByteRange::FromStart(0, None))? {
        Some(old) => MemoryIo::from_bytes(old.data),
        None => MemoryIo::new(),
    };
    let done = write(&copy)?;
    if let (Finalized::Written { .. }, Some(bytes)) = (done, copy.bytes()) {
        io.put(&bytes)?;
    }
    Ok(done)
}

/// The positions a walk over an array's stored shards visits ([`Array::shard_walk`]).
pub(crate) struct ShardWalk {
    /// The chunk grid's shape.
    pub(crate) grid: Vec<u64>,
    /// Its number of positions.
    total: u64,
    /// The stored shards' C-order positions, sorted, when the store listed them.
    pub(crate) listed: Option<Vec<u64>>,
}

impl ShardWalk {
    /// The positions to visit, in C order, each with how many grid positions it accounts for
    /// (for progress; the counts add up to the grid's size): every position with 1 when the
    /// store did not list; else each listed shard, counting the empty positions before it,
    /// and `(rest, None)` for the empty positions after the last.
    pub(crate) fn positions(&self) -> Box<dyn Iterator<Item = (u64, Option<Vec<u64>>)> + '_> {
        let Some(listed) = &self.listed else {
            return Box::new(nd::c_order(&self.grid).map(|c| (1, Some(c))));
        };
        let mut done = 0;
        let stored = listed.iter().map(move |&i| {
            let covered = i + 1 - done;
            done = i + 1;
            (covered, Some(nd::unravel(i, &self.grid)))
        });
        let rest = self.total - listed.last().map_or(0, |&i| i + 1);
        Box::new(stored.chain((rest > 0).then_some((rest, None))))
    }
}

/// Shards per pool thread in one batch of [`Array::for_each_stored_shard`]: enough that a slow
/// shard does not idle the other threads, few enough that progress moves and memory (one
/// whole object per shard being checked) stays small.
const SHARDS_PER_THREAD_CHECKED: usize = 4;

/// Inner chunks per parallel item when [`Array::check_shard_object`] decodes a shard: one
/// chunk buffer per item, and items long enough to be worth scheduling.
const CHUNKS_PER_CHECK_ITEM: usize = 16;

/// A document that is all structure (`.zarray`): parsed whole, within
/// [`crate::runtime::limits::MAX_METADATA_STRUCTURE_BYTES`].
fn parse_json(bytes: &[u8], what: &str) -> Result<Value> {
    let limit = crate::runtime::limits::MAX_METADATA_STRUCTURE_BYTES;
    if bytes.len() as u64 > limit {
        return Err(Error::metadata(format!(
            "{what} has {} bytes, more than the {limit} bytes it may have (zarrshard::runtime::limits::MAX_METADATA_STRUCTURE_BYTES)",
            bytes.len()
        )));
    }
    serde_json::from_slice(bytes).map_err(|e| crate::metadata::json_error(what, &e))
}

/// The most bytes of one block of [`Array::export`] (less when the memory limit is lower).
pub const EXPORT_BLOCK_BYTES: u64 = 16 << 20;

/// The bytes of one block of [`Array::import`]'s input (two are held; less when the memory
/// limit is lower, more where a row of shards needs it).
pub const IMPORT_BLOCK_BYTES: u64 = 16 << 20;

/// The most shards [`Array::import`] encodes and writes in one parallel pass.
pub const IMPORT_PASS_SHARDS: u64 = 1024;

/// The most fill bytes [`Array::export`] keeps to write where nothing is stored.
const FILL_BYTES: u64 = 256 << 10;

/// Native ↔ raw export order, in place (little-endian; a swap on big-endian machines, its own
/// inverse), bools normalised to 0/1: turns decoded chunk bytes into the export format.
pub fn raw_order(data: &mut [u8], dtype: &crate::metadata::dtype::DataType) {
    if *dtype == crate::metadata::dtype::DataType::Bool {
        for b in data.iter_mut() {
            *b = (*b != 0) as u8;
        }
    }
    if cfg!(target_endian = "big") {
        dtype.swap(data);
    }
}
