//! A whole Zarr v3 array in a [`Store`]: its metadata, its shards, and whole-array operations
//! (export to raw bytes, verification).

use crate::error::{Error, Result};
use crate::index::ShardIndex;
use crate::io::ShardIo;
use crate::metadata::ArrayMetadata;
use crate::nd;
use crate::reader::ShardReader;
use crate::store::Store;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

/// An array opened from a store.
pub struct Array<S: Store> {
    meta: ArrayMetadata,
    store: S,
}

/// One problem `verify` found: the shard key, and what is wrong (the error names the inner
/// chunk when it concerns one).
#[derive(Debug)]
pub struct Problem {
    pub key: String,
    pub error: Error,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.error)
    }
}

impl<S: Store> Array<S> {
    /// Open the array whose `zarr.json` is at the store's root.
    pub fn open(store: S) -> Result<Self> {
        let text = store
            .get("zarr.json")?
            .ok_or_else(|| Error::metadata("no zarr.json in the store"))?;
        let text =
            String::from_utf8(text).map_err(|_| Error::metadata("zarr.json is not UTF-8"))?;
        Ok(Array {
            meta: ArrayMetadata::parse(&text)?,
            store,
        })
    }

    /// Create an array: write its `zarr.json` (existing shards are left alone).
    pub fn create(store: S, meta: ArrayMetadata) -> Result<Self> {
        let text = serde_json::to_vec_pretty(&meta.to_json()).expect("JSON values serialise");
        store.set("zarr.json", &text)?;
        Ok(Array { meta, store })
    }

    /// An array from metadata the caller already has.
    pub fn with_metadata(meta: ArrayMetadata, store: S) -> Self {
        Array { meta, store }
    }

    pub fn metadata(&self) -> &ArrayMetadata {
        &self.meta
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Storage key of the shard at grid `coords`.
    pub fn shard_key(&self, coords: &[u64]) -> String {
        self.meta.chunk_key(coords)
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
    }

    /// Encode a whole decoded shard (C order, native byte order, the chunk grid's chunk shape)
    /// through the full codec chain and store it in one write. A shard that is entirely the
    /// fill value is deleted instead of written.
    pub fn write_shard(&self, coords: &[u64], data: &[u8]) -> Result<()> {
        let key = self.shard_key(coords);
        let fill = &self.meta.fill_value.0;
        if data.chunks_exact(fill.len()).all(|e| e == fill.as_slice()) {
            return self.store.delete(&key);
        }
        let encoded = self.meta.codecs.encode(data, &self.meta.chunk_repr())?;
        self.store.set(&key, &encoded)
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
        let layout = Arc::new(self.meta.shard_layout().expect("sharded"));
        ShardReader::open(layout, self.store.shard_io(&self.shard_key(coords))?)
    }

    /// Write the whole array as raw bytes: C order, each element little-endian, bool as one
    /// byte 0/1, complex as real then imaginary part, the fill value where nothing is stored.
    ///
    /// Works one slab of shards at a time (one shard row along the first dimension), so memory
    /// is bounded by a slab, not by the array.
    pub fn export(&self, out: &mut dyn Write) -> Result<()> {
        let meta = &self.meta;
        let elem = meta.data_type.size();
        let grid = meta.grid_shape();
        if meta.shape.contains(&0) {
            return Ok(());
        }
        let rank = meta.shape.len();
        let fill = &meta.fill_value.0;
        let slabs = if rank == 0 { 1 } else { grid[0] };
        for g0 in 0..slabs {
            let mut slab_shape = meta.shape.clone();
            if rank > 0 {
                slab_shape[0] = meta.chunk_shape[0].min(meta.shape[0] - g0 * meta.chunk_shape[0]);
            }
            let n = nd_len(&slab_shape)?;
            let mut slab = fill.repeat(n);
            let rest = if rank == 0 {
                vec![]
            } else {
                grid[1..].to_vec()
            };
            for tail in nd::c_order(&rest) {
                let coords: Vec<u64> = if rank == 0 {
                    vec![]
                } else {
                    std::iter::once(g0).chain(tail).collect()
                };
                let Some(chunk) = self.read_shard(&coords)? else {
                    continue;
                };
                let origin: Vec<u64> = coords
                    .iter()
                    .zip(&meta.chunk_shape)
                    .map(|(c, s)| c * s)
                    .collect();
                let region: Vec<u64> = origin
                    .iter()
                    .zip(&meta.chunk_shape)
                    .zip(&meta.shape)
                    .map(|((o, c), s)| (*c).min(s - o))
                    .collect();
                let mut dst_start = origin.clone();
                if rank > 0 {
                    dst_start[0] = 0;
                }
                nd::copy_box(
                    &chunk,
                    &meta.chunk_shape,
                    &vec![0; rank],
                    &mut slab,
                    &slab_shape,
                    &dst_start,
                    &region,
                    elem,
                );
            }
            to_little_endian(&mut slab, meta.data_type);
            out.write_all(&slab)?;
        }
        Ok(())
    }

    /// Check every shard: index checksum and bounds, and that every inner chunk decodes.
    /// Returns one problem per bad shard or inner chunk (empty when the array is clean);
    /// `Err` only when the store itself fails.
    pub fn verify(&self) -> Result<Vec<Problem>> {
        let mut problems = Vec::new();
        for coords in nd::c_order(&self.meta.grid_shape()) {
            let key = self.shard_key(&coords);
            let Some(object) = self.store.get(&key)? else {
                continue;
            };
            for error in self.check_shard_object(&object) {
                problems.push(Problem {
                    key: key.clone(),
                    error,
                });
            }
        }
        Ok(problems)
    }

    /// Every problem in one stored shard object.
    pub fn check_shard_object(&self, object: &[u8]) -> Vec<Error> {
        let meta = &self.meta;
        let Some(layout) = meta.shard_layout() else {
            return meta
                .codecs
                .decode(object, &meta.chunk_repr())
                .err()
                .into_iter()
                .collect();
        };
        let shard = match meta.codecs.decode_bytes_stage(object, &meta.chunk_repr()) {
            Ok(s) => s,
            Err(e) => return vec![e],
        };
        let index = match layout
            .index_bytes(&shard)
            .and_then(|b| ShardIndex::decode_unchecked(b, &layout))
        {
            Ok(ix) => ix,
            Err(e) => return vec![e],
        };
        let size = Some(shard.len() as u64);
        let bad = index.entry_errors(&layout, size);
        let mut errors: Vec<Error> = Vec::new();
        let mut chunk = vec![0u8; layout.inner_byte_size()];
        let mut skip = vec![false; index.len()];
        for (i, e) in bad {
            skip[i] = true;
            errors.push(e);
        }
        for (i, loc) in index.stored() {
            if skip[i] {
                continue;
            }
            let bytes = &shard[loc.offset as usize..loc.end() as usize];
            if let Err(e) = layout.decode_chunk_into(i, bytes, &mut chunk) {
                errors.push(e);
            }
        }
        errors
    }
}

fn nd_len(shape: &[u64]) -> Result<usize> {
    crate::codec::checked_product(shape).and_then(|n| {
        usize::try_from(n).map_err(|_| Error::InvalidArgument(format!("{shape:?} is too large")))
    })
}

/// Native → little-endian element bytes, bools normalised to 0/1 (export format).
fn to_little_endian(data: &mut [u8], dtype: crate::dtype::DataType) {
    if dtype == crate::dtype::DataType::Bool {
        for b in data.iter_mut() {
            *b = (*b != 0) as u8;
        }
    }
    if cfg!(target_endian = "big") {
        crate::codec::bytes::swap_in_place(data, dtype.swap_unit());
    }
}
