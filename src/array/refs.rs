//! Kerchunk reference sets: a sharded array described as the same array *unsharded*, each
//! inner chunk a `[URL/shard key, offset, nbytes]` reference into its shard object, so that
//! fsspec's `ReferenceFileSystem` (and every reader built on it) reads inner chunks with byte
//! ranges and no sharding support of its own.
//!
//! The unsharded array keeps shape, data type, fill value and attributes; its chunk grid is
//! the inner chunk grid and its codecs are the inner codecs, after the array→array codecs that
//! came before `sharding_indexed` (a `transpose` there moves into the chunk's codecs, the inner
//! chunk shape is mapped back to array dimensions). As Zarr v2 metadata the inner codecs become
//! a numpy dtype, `order` and numcodecs filters/compressor; anything else is an error naming
//! the codec.
//!
//! Decisions:
//! * **Nested sharding**: a reference points at an outer shard's inner chunk, which is itself
//!   a shard; the Zarr v3 metadata keeps `sharding_indexed` in the chunk codecs, so readers
//!   decode it as a shard. Zarr v2 has no sharding, so `--zarr-format 2` refuses it.
//! * **Codecs after sharding** (`crc32c`, `zstd`, … over the whole shard): inner chunks are not
//!   byte ranges of the stored object, so there is nothing to reference: an error.
//! * **Empty inner chunks** are left out of JSON sets (a missing key reads as the fill value).
//!   Parquet rows cannot be left out (LazyReferenceMapper finds a key by row number, and reads
//!   a null `path` back as NaN, not as missing), so an empty chunk's row holds the encoded fill
//!   chunk in `raw`.
//! * Padding inner chunks wholly outside the array (in edge shards) are not referenced.

use crate::array::Array;
use crate::codec::{ArrayToArray, ArrayToBytes, ChunkRepr, CodecChain};
use crate::error::{shown, Error, Result};
use crate::metadata::ArrayMetadata;
use crate::nd;
use crate::storage::store::Store;
use serde_json::{json, Map, Value};
use std::io::Write;

/// How the reference set describes the unsharded array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetadataFormat {
    /// Zarr v3: `zarr.json`, chunk keys `c/i/j` (`default` encoding, `/`).
    V3,
    /// Zarr v2: `.zarray` (+ `.zattrs`), chunk keys `i.j`, or `i/j` with separator `/`.
    V2 {
        /// `.` or `/`.
        separator: char,
    },
}

/// One stored inner chunk and where its bytes are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRef {
    /// Position in the unsharded chunk grid.
    pub coords: Vec<u64>,
    /// Key of the shard object that holds it.
    pub shard_key: String,
    /// Byte offset of the encoded chunk in the shard object.
    pub offset: u64,
    /// Encoded size in bytes.
    pub nbytes: u64,
}

/// The unsharded view of a sharded array: its metadata documents and how each shard's inner
/// chunks map onto its chunk grid. Built from the metadata alone (no I/O).
#[derive(Debug, Clone)]
pub struct Unsharded {
    format: MetadataFormat,
    /// `(key, document)`: `zarr.json`, or `.zarray` and maybe `.zattrs`.
    documents: Vec<(String, Value)>,
    /// The unsharded chunk grid.
    grid_shape: Vec<u64>,
    /// The array's shape and the inner chunk shape, both in array dimensions.
    shape: Vec<u64>,
    chunk_shape: Vec<u64>,
    /// Inner chunks per shard along each array dimension.
    per_shard: Vec<u64>,
    /// Array dimension of each dimension the sharding codec sees (`transpose`s before it).
    perm: Vec<usize>,
    /// Inner chunks per shard as the sharding codec sees them (its index order).
    codec_per_shard: Vec<u64>,
    /// The inner codecs and what they encode, for the encoded fill chunk.
    inner_codecs: CodecChain,
    inner_repr: ChunkRepr,
}

impl Unsharded {
    /// The unsharded description of `meta` in `format`. Errors when the array is not sharded,
    /// when a bytes→bytes codec follows `sharding_indexed`, or when `format` cannot express the
    /// inner codecs (the message names the codec).
    pub fn new(meta: &ArrayMetadata, format: MetadataFormat) -> Result<Self> {
        let sharding = meta.sharding().ok_or_else(|| {
            Error::InvalidArgument(
                "the array is not sharded: there are no inner chunks to reference".into(),
            )
        })?;
        if let Some(c) = meta.codecs.bytes_to_bytes.first() {
            return Err(Error::InvalidArgument(format!(
                "codec `{}` follows sharding_indexed: it covers whole shards, so inner chunks are not byte ranges of the stored objects",
                c.name()
            )));
        }
        let layout = meta
            .shard_layout()
            .expect("validated sharded metadata binds");
        let rank = meta.shape.len();
        let perm = permutation(&meta.codecs.array_to_array, rank)?;
        let codec_chunk = &sharding.chunk_shape;
        let mut chunk_shape = vec![0; rank];
        for (k, &d) in perm.iter().enumerate() {
            chunk_shape[d] = codec_chunk[k];
        }
        let per_shard: Vec<u64> = meta
            .chunk_shape
            .iter()
            .zip(&chunk_shape)
            .map(|(s, c)| s / c)
            .collect();
        let grid_shape: Vec<u64> = meta
            .shape
            .iter()
            .zip(&chunk_shape)
            .map(|(s, c)| s.div_ceil(*c))
            .collect();
        let inner = &sharding.codecs;
        let documents = match format {
            MetadataFormat::V3 => {
                let mut doc = meta.to_json();
                let mut codecs: Vec<Value> = meta
                    .codecs
                    .array_to_array
                    .iter()
                    .map(|c| c.to_json())
                    .collect();
                codecs.extend(inner.to_json().as_array().cloned().unwrap_or_default());
                doc["chunk_grid"] =
                    json!({"name": "regular", "configuration": {"chunk_shape": chunk_shape}});
                doc["chunk_key_encoding"] =
                    json!({"name": "default", "configuration": {"separator": "/"}});
                doc["codecs"] = Value::Array(codecs);
                vec![("zarr.json".to_string(), doc)]
            }
            MetadataFormat::V2 { separator } => {
                v2_documents(meta, inner, &perm, &chunk_shape, separator)?
            }
        };
        Ok(Unsharded {
            format,
            documents,
            grid_shape,
            shape: meta.shape.clone(),
            chunk_shape,
            per_shard,
            perm,
            codec_per_shard: layout.chunks_per_shard().to_vec(),
            inner_codecs: inner.clone(),
            inner_repr: layout.inner_repr().clone(),
        })
    }

    /// The metadata documents, `(key, JSON)`.
    pub fn documents(&self) -> &[(String, Value)] {
        &self.documents
    }

    /// The unsharded chunk grid (chunks along each dimension).
    pub fn grid_shape(&self) -> &[u64] {
        &self.grid_shape
    }

    /// The unsharded chunk shape (the inner chunk shape in array dimensions).
    pub fn chunk_shape(&self) -> &[u64] {
        &self.chunk_shape
    }

    /// The storage key of unsharded chunk `coords`: `c/1/2` (v3), `1.2` or `1/2` (v2).
    pub fn chunk_key(&self, coords: &[u64]) -> String {
        let joined = |sep: &str| {
            let parts: Vec<String> = coords.iter().map(u64::to_string).collect();
            parts.join(sep)
        };
        match self.format {
            MetadataFormat::V3 if coords.is_empty() => "c".into(),
            MetadataFormat::V3 => format!("c/{}", joined("/")),
            MetadataFormat::V2 { .. } if coords.is_empty() => "0".into(),
            MetadataFormat::V2 { separator } => joined(&separator.to_string()),
        }
    }

    /// Where inner chunk `i` (in the sharding codec's index order) of the shard at
    /// `shard_coords` sits in the unsharded grid; `None` for padding wholly outside the array.
    pub fn chunk_coords(&self, shard_coords: &[u64], i: usize) -> Option<Vec<u64>> {
        let inner = nd::unravel(i as u64, &self.codec_per_shard);
        let mut coords = vec![0; self.perm.len()];
        for (k, &d) in self.perm.iter().enumerate() {
            coords[d] = shard_coords[d] * self.per_shard[d] + inner[k];
        }
        let inside = coords
            .iter()
            .zip(&self.chunk_shape)
            .zip(&self.shape)
            .all(|((c, s), n)| c * s < *n);
        inside.then_some(coords)
    }

    /// The references to one shard's stored inner chunks, from its decoded index.
    pub fn shard_refs(
        &self,
        shard_coords: &[u64],
        shard_key: &str,
        index: &crate::codec::sharding::index::ShardIndex,
    ) -> Vec<ChunkRef> {
        index
            .stored()
            .filter_map(|(i, loc)| {
                Some(ChunkRef {
                    coords: self.chunk_coords(shard_coords, i)?,
                    shard_key: shard_key.to_string(),
                    offset: loc.offset,
                    nbytes: loc.nbytes,
                })
            })
            .collect()
    }

    /// An inner chunk of fill values through the inner codecs: what a reader decodes to the
    /// fill value (Parquet rows of empty inner chunks carry it).
    pub fn encoded_fill_chunk(&self) -> Result<Vec<u8>> {
        self.inner_codecs
            .encode(&self.inner_repr.filled()?, &self.inner_repr)
    }
}

/// Array dimension of each dimension after the array→array codecs (`transpose`s composed).
fn permutation(codecs: &[ArrayToArray], rank: usize) -> Result<Vec<usize>> {
    let mut perm: Vec<usize> = (0..rank).collect();
    for c in codecs {
        let ArrayToArray::Transpose(t) = c;
        let order = t.permutation(rank)?;
        perm = order.iter().map(|&k| perm[k]).collect();
    }
    Ok(perm)
}

/// `.zarray` (and `.zattrs` when there is something to say) for the unsharded array.
fn v2_documents(
    meta: &ArrayMetadata,
    inner: &CodecChain,
    outer_perm: &[usize],
    chunk_shape: &[u64],
    separator: char,
) -> Result<Vec<(String, Value)>> {
    let rank = meta.shape.len();
    // Stored dimension k is array dimension `stored[k]`: the outer transposes, then the inner.
    let inner_perm = permutation(&inner.array_to_array, rank)?;
    let stored: Vec<usize> = inner_perm.iter().map(|&k| outer_perm[k]).collect();
    let order = if stored.iter().enumerate().all(|(k, &d)| k == d) {
        "C"
    } else if stored.iter().enumerate().all(|(k, &d)| d == rank - 1 - k) {
        "F"
    } else {
        return Err(Error::UnsupportedCodec(format!(
            "transpose (to stored order {stored:?}; Zarr v2 has only C and F order)"
        )));
    };
    let endian =
        match &inner.array_to_bytes {
            ArrayToBytes::Bytes(b) => b.endian,
            ArrayToBytes::Sharding(_) => return Err(Error::UnsupportedCodec(
                "sharding_indexed (nested sharding: Zarr v2 has no sharding; use Zarr v3 metadata)"
                    .into(),
            )),
        };
    let dtype = crate::array::legacy::typestr(&meta.data_type, endian)?;
    let mut numcodecs: Vec<Value> = inner
        .bytes_to_bytes
        .iter()
        .map(crate::array::legacy::v3_to_numcodecs)
        .collect();
    // v2 encodes with the filters in order, then the compressor: the last codec compresses.
    let compressor = numcodecs.pop().unwrap_or(Value::Null);
    let filters = if numcodecs.is_empty() {
        Value::Null
    } else {
        Value::Array(numcodecs)
    };
    let zarray = json!({
        "chunks": chunk_shape,
        "compressor": compressor,
        "dimension_separator": separator.to_string(),
        "dtype": dtype,
        "fill_value": meta.fill_value.to_json(&meta.data_type),
        "filters": filters,
        "order": order,
        "shape": meta.shape,
        "zarr_format": 2,
    });
    let mut docs = vec![(".zarray".to_string(), zarray)];
    let mut attrs = meta.attributes.to_map();
    if let Some(names) = &meta.dimension_names {
        if let Some(names) = names.iter().cloned().collect::<Option<Vec<String>>>() {
            // xarray's spelling of dimension names in Zarr v2.
            attrs.insert("_ARRAY_DIMENSIONS".into(), json!(names));
        }
    }
    if !attrs.is_empty() {
        docs.push((".zattrs".to_string(), Value::Object(attrs)));
    }
    Ok(docs)
}

/// At most how many shards' indexes [`References::from_array`] reads at once (a bound on the
/// memory for their coordinates and references, not on parallelism, which is the pool's).
const INDEX_READS_PER_BATCH: usize = 1024;

/// At most how many inner chunks a batch of index reads may cover, so that shards of many
/// chunks are read fewer at a time (16 shards of 4096 chunks; never fewer than one shard),
/// and how many references are made and handed over at once.
const REFS_PER_BATCH: u64 = 65_536;

/// A whole reference set: the unsharded description and every stored inner chunk, in C order
/// of the unsharded chunk grid.
#[derive(Debug, Clone)]
pub struct References {
    unsharded: Unsharded,
    chunks: Vec<ChunkRef>,
}

impl References {
    /// Read every shard's index (one read each; missing shards have no references) and build
    /// the reference set. The reads run on the thread pool, as region reads do, unless the
    /// store asks for its calls on this thread ([`Store::io_on_caller_thread`]). Errors as
    /// [`Unsharded::new`], or when an index is corrupt or the store fails (the first such
    /// shard in C order).
    pub fn from_array<S: Store>(array: &Array<S>, format: MetadataFormat) -> Result<Self> {
        let unsharded = Unsharded::new(array.metadata(), format)?;
        let mut chunks = Vec::new();
        walk_refs(array, &unsharded, |refs| {
            chunks.extend(refs);
            Ok(())
        })?;
        Self::from_parts(unsharded, chunks)
    }

    /// A reference set from an unsharded description and chunk references in any order.
    /// Errors ([`Error::InvalidArgument`]) when a reference's coordinates are outside the
    /// unsharded chunk grid or when two references have the same coordinates (a set has one
    /// reference per chunk key).
    pub fn from_parts(unsharded: Unsharded, mut chunks: Vec<ChunkRef>) -> Result<Self> {
        let grid = unsharded.grid_shape.clone();
        if let Some(c) = chunks.iter().find(|c| {
            c.coords.len() != grid.len() || c.coords.iter().zip(&grid).any(|(i, n)| i >= n)
        }) {
            return Err(Error::InvalidArgument(format!(
                "chunk reference {} is outside the chunk grid {}",
                shown(&c.coords),
                shown(&grid)
            )));
        }
        chunks.sort_by_key(|c| nd::ravel(&c.coords, &grid));
        if let Some(w) = chunks.windows(2).find(|w| w[0].coords == w[1].coords) {
            return Err(Error::InvalidArgument(format!(
                "two references to chunk {}",
                shown(&w[0].coords)
            )));
        }
        Ok(References { unsharded, chunks })
    }

    /// The unsharded description (metadata documents, chunk grid, chunk keys).
    pub fn unsharded(&self) -> &Unsharded {
        &self.unsharded
    }

    /// The stored inner chunks, in C order of the unsharded grid.
    pub fn chunks(&self) -> &[ChunkRef] {
        &self.chunks
    }

    /// Version 0 JSON: `{KEY: "metadata text", KEY: [URL, offset, nbytes], …}`. Keys are
    /// `NAME/…` when `name` is given, at the root otherwise. The value of the text
    /// [`References::write_json`] writes (for a large set write the text instead: this tree
    /// takes some ten times its size).
    pub fn to_json_v0(&self, url_prefix: &str, name: Option<&str>) -> Value {
        self.to_json(JsonVersion::V0, url_prefix, name)
    }

    /// Version 1 JSON: `{"version": 1, "templates": {"u": URL}, "refs": {…}}`: the value of
    /// the text [`References::write_json`] writes (see [`JsonVersion::V1`]).
    pub fn to_json_v1(&self, url_prefix: &str, name: Option<&str>) -> Value {
        self.to_json(JsonVersion::V1, url_prefix, name)
    }

    fn to_json(&self, version: JsonVersion, url_prefix: &str, name: Option<&str>) -> Value {
        let mut text = Vec::new();
        self.write_json(&mut text, version, url_prefix, name)
            .expect("writing to memory does not fail");
        serde_json::from_slice(&text).expect("the text written is JSON")
    }

    /// Write the set as JSON text of `version` (compact, one line, no newline at the end): the
    /// metadata documents first, then each stored chunk in C order of the unsharded grid,
    /// entry by entry, without building a JSON tree (which would take several times the
    /// text's size in memory). Errors are `out`'s.
    pub fn write_json(
        &self,
        out: &mut dyn Write,
        version: JsonVersion,
        url_prefix: &str,
        name: Option<&str>,
    ) -> std::io::Result<()> {
        let text = JsonText::new(&self.unsharded, version, url_prefix, name);
        let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
        text.begin(&mut out)?;
        for c in &self.chunks {
            text.chunk(&mut out, c)?;
        }
        text.end(&mut out)?;
        out.flush()
    }

    /// The `.zmetadata` of the Parquet layout: every document under `NAME/`, a root `.zgroup`,
    /// and `record_size`.
    pub fn parquet_zmetadata(&self, name: &str, record_size: u64) -> Value {
        parquet_zmetadata(&self.unsharded, name, record_size)
    }
}

/// [`References::parquet_zmetadata`], from the unsharded description alone.
fn parquet_zmetadata(unsharded: &Unsharded, name: &str, record_size: u64) -> Value {
    let mut metadata = Map::new();
    metadata.insert(".zgroup".into(), json!({"zarr_format": 2}));
    for (key, doc) in &unsharded.documents {
        metadata.insert(format!("{name}/{key}"), doc.clone());
    }
    json!({"metadata": metadata, "record_size": record_size})
}

/// A shard's index as read, held (16 bytes an inner chunk) until its slab is complete.
struct ReadShard {
    coords: Vec<u64>,
    key: String,
    /// `None`: the shard is not stored.
    index: Option<crate::codec::sharding::index::ShardIndex>,
}

/// The indexes of `shards` (one read each), in their order. The reads run a batch at a time
/// on the pool as region reads fetch (on this thread when the store asks): through a remote
/// store each read costs latency rather than bandwidth. The error is the first failing
/// shard's, in their order. Only the stored shards are asked for when the store lists them
/// (`Store::list_prefix`, through `Array::shard_walk`).
fn read_shards<S: Store>(array: &Array<S>, shards: &[Vec<u64>]) -> Result<Vec<ReadShard>> {
    array.map_io(shards.len(), |k| {
        let coords = &shards[k];
        let reader = array.shard_reader(coords)?;
        Ok(ReadShard {
            coords: coords.clone(),
            key: array.shard_key(coords),
            index: reader.index().cloned(),
        })
    })
}

/// Hand the references of `shards` (whole slabs, in shard order) to `emit` in C order of the
/// unsharded grid, at most [`REFS_PER_BATCH`] at a time: the stored chunks' places in that
/// order are sorted first (24 bytes each), and each reference (some 150 bytes) is made only
/// when its turn comes.
fn emit_in_order(
    unsharded: &Unsharded,
    shards: &[ReadShard],
    emit: &mut impl FnMut(Vec<ChunkRef>) -> Result<()>,
) -> Result<()> {
    let mut order: Vec<(u64, usize, usize)> = Vec::new();
    for (k, shard) in shards.iter().enumerate() {
        for (i, _) in shard.index.iter().flat_map(|index| index.stored()) {
            if let Some(coords) = unsharded.chunk_coords(&shard.coords, i) {
                order.push((nd::ravel(&coords, &unsharded.grid_shape), k, i));
            }
        }
    }
    order.sort_unstable();
    for part in order.chunks(REFS_PER_BATCH as usize) {
        let refs = part.iter().map(|&(n, k, i)| {
            let shard = &shards[k];
            let index = shard
                .index
                .as_ref()
                .expect("only stored shards have places");
            let loc = index.get(i).expect("only stored chunks have places");
            ChunkRef {
                // The place's number is the chunk's, so its coordinates are not worked out
                // again from the shard's.
                coords: nd::unravel(n, &unsharded.grid_shape),
                shard_key: shard.key.clone(),
                offset: loc.offset,
                nbytes: loc.nbytes,
            }
        });
        emit(refs.collect())?;
    }
    Ok(())
}

/// Read the indexes of the array's stored shards (only those when the store lists) a batch
/// of shards at a time ([`read_shards`]) and hand their references to `emit` in C order of the
/// unsharded grid, slab by slab ([`emit_in_order`]): a slab is the shards sharing their first
/// grid coordinate, the only ones whose chunks interleave in that order. A batch is at most
/// [`INDEX_READS_PER_BATCH`] shards and [`REFS_PER_BATCH`] inner chunks; its last slab may go
/// on in the next batch, so it waits for it. What is held is a batch's and a slab's indexes
/// (16 bytes an inner chunk) and the order of a slab's stored chunks (24 bytes each), not
/// their references (some 150 bytes each), which matters where slabs are large (a grid of
/// `[1, n]` shards is one slab). Errors: the first failing shard's in C order, or `emit`'s.
fn walk_refs<S: Store>(
    array: &Array<S>,
    unsharded: &Unsharded,
    mut emit: impl FnMut(Vec<ChunkRef>) -> Result<()>,
) -> Result<()> {
    let refs_per_shard = (unsharded.codec_per_shard.iter())
        .fold(1u64, |n, &k| n.saturating_mul(k))
        .max(1);
    let batch_len = (REFS_PER_BATCH / refs_per_shard).clamp(1, INDEX_READS_PER_BATCH as u64);
    let walk = array.shard_walk()?;
    let mut shards = walk.positions().filter_map(|(_, c)| c).peekable();
    let mut pending: Vec<ReadShard> = Vec::new();
    while shards.peek().is_some() {
        let batch: Vec<Vec<u64>> = shards.by_ref().take(batch_len as usize).collect();
        pending.extend(read_shards(array, &batch)?);
        // `pending` is in shard order, so the slabs before the batch's last are a prefix (a
        // shard's slab is its first coordinate; none at rank 0: one shard).
        let last = batch.last().and_then(|c| c.first().copied());
        let done = pending.partition_point(|s| s.coords.first().copied() < last);
        if done > 0 {
            emit_in_order(unsharded, &pending[..done], &mut emit)?;
            pending.drain(..done);
        }
    }
    emit_in_order(unsharded, &pending, &mut emit)
}

/// The kind of JSON text a reference set is written as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JsonVersion {
    /// `{KEY: "metadata text", KEY: [URL, offset, nbytes], …}`.
    V0,
    /// `{"version": 1, "templates": {"u": URL}, "refs": {…}}`, each chunk
    /// `["{{u}}/SHARD_KEY", offset, nbytes]`. One template for the URL prefix: fsspec expands
    /// every template in every reference, so one per shard would cost shards × chunks. No
    /// `gen`: fsspec ignores it unless `simple_templates=False`.
    ///
    /// A shard key with a brace (`{`, `}`) would break the template: fsspec turns `{{`/`}}`
    /// into `{`/`}` and calls Python's `str.format`. Such a reference is written as the whole
    /// URL without the template when that contains no `{{` (fsspec then takes it verbatim, in
    /// either template mode); otherwise with its braces escaped for `str.format` (each `{`
    /// written `{{{{`, which fsspec's default simple templates turn back into `{`).
    ///
    /// A URL prefix holding `{{` cannot be a template value (fsspec renders such a value as a
    /// jinja template): the set then has no templates (`"templates": {}`) and every reference
    /// is its whole URL, which fsspec takes verbatim when there are no templates.
    V1,
}

/// Write the JSON reference set of `array` to `out`: the text [`References::write_json`]
/// writes for [`References::from_array`]'s set, byte for byte, holding at most a batch of
/// index reads (1024 shards or 65 536 inner chunks, whichever is fewer) and one slab (the
/// shards that share their first grid coordinate: only their chunks interleave in C order of
/// the unsharded grid), as indexes and the order of their stored chunks (some 40 bytes a
/// chunk), instead of the whole set's references (some 150). Reads as `from_array` does; a failure
/// part way leaves the text's first part in `out` (written in pieces of up to 64 KiB; nothing
/// more is written after the failure, so one before the first 64 KiB of text leaves
/// nothing): write to a temporary, as `zarrshard refs` does. Errors as `from_array`, and
/// `out`'s as [`Error::Io`] (its OS error number as the code, or -1, as [`Error::io_at`]
/// gives).
pub fn write_json_from_array<S: Store>(
    array: &Array<S>,
    format: MetadataFormat,
    version: JsonVersion,
    url_prefix: &str,
    name: Option<&str>,
    out: &mut dyn Write,
) -> Result<()> {
    let unsharded = Unsharded::new(array.metadata(), format)?;
    let text = JsonText::new(&unsharded, version, url_prefix, name);
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, out);
    let failed = |e: std::io::Error| Error::Io {
        code: e.raw_os_error().unwrap_or(-1),
        message: format!("writing the reference set: {e}"),
    };
    let mut write = || {
        text.begin(&mut out).map_err(failed)?;
        walk_refs(array, &unsharded, |refs| {
            refs.iter()
                .try_for_each(|c| text.chunk(&mut out, c))
                .map_err(failed)
        })?;
        text.end(&mut out).map_err(failed)?;
        out.flush().map_err(failed)
    };
    let written = write();
    if written.is_err() {
        // Nothing more reaches `out` after a failure (dropping the buffer would flush it).
        drop(out.into_parts());
    }
    written
}

/// The text of a JSON reference set, piece by piece: [`JsonText::begin`], one
/// [`JsonText::chunk`] per stored chunk in C order of the unsharded grid, [`JsonText::end`].
struct JsonText<'a> {
    unsharded: &'a Unsharded,
    version: JsonVersion,
    /// The URL prefix without a trailing `/`.
    prefix: &'a str,
    name: Option<&'a str>,
}

impl<'a> JsonText<'a> {
    fn new(
        unsharded: &'a Unsharded,
        version: JsonVersion,
        url_prefix: &'a str,
        name: Option<&'a str>,
    ) -> Self {
        JsonText {
            unsharded,
            version,
            prefix: url_base(url_prefix),
            name,
        }
    }

    /// Whether version 1 references use the template `u` for the prefix: not when the prefix
    /// holds `{{`, which fsspec would render as a jinja template (a template value with `{{`
    /// becomes a function, and the reference a function's repr). Without templates fsspec
    /// takes every URL as it is written.
    fn templated(&self) -> bool {
        !self.prefix.contains("{{")
    }

    /// `KEY` or `NAME/KEY`.
    fn named(&self, key: &str) -> String {
        match self.name {
            Some(n) => format!("{n}/{key}"),
            None => key.to_string(),
        }
    }

    /// Up to and with the metadata documents, as `"KEY":"JSON text"` members (kerchunk
    /// stores them as text, pretty-printed).
    fn begin(&self, out: &mut dyn Write) -> std::io::Result<()> {
        if self.version == JsonVersion::V1 && self.templated() {
            out.write_all(br#"{"version":1,"templates":{"u":"#)?;
            serde_json::to_writer(&mut *out, self.prefix)?;
            out.write_all(br#"},"refs":"#)?;
        } else if self.version == JsonVersion::V1 {
            out.write_all(br#"{"version":1,"templates":{},"refs":"#)?;
        }
        out.write_all(b"{")?;
        for (k, (key, doc)) in self.unsharded.documents.iter().enumerate() {
            if k > 0 {
                out.write_all(b",")?;
            }
            let text = serde_json::to_string_pretty(doc).expect("JSON values serialise");
            serde_json::to_writer(&mut *out, &self.named(key))?;
            out.write_all(b":")?;
            serde_json::to_writer(&mut *out, &text)?;
        }
        Ok(())
    }

    /// One chunk's member, `,"KEY":["URL",offset,nbytes]` (a set always has a metadata
    /// document before its first chunk).
    fn chunk(&self, out: &mut dyn Write, c: &ChunkRef) -> std::io::Result<()> {
        let prefix = self.prefix;
        let url = match self.version {
            JsonVersion::V0 => format!("{prefix}/{}", c.shard_key),
            JsonVersion::V1 if !self.templated() => format!("{prefix}/{}", c.shard_key),
            JsonVersion::V1 if !c.shard_key.contains(['{', '}']) => {
                format!("{{{{u}}}}/{}", c.shard_key)
            }
            JsonVersion::V1 if !format!("{prefix}/{}", c.shard_key).contains("{{") => {
                format!("{prefix}/{}", c.shard_key)
            }
            JsonVersion::V1 => {
                let escaped = c.shard_key.replace('{', "{{{{").replace('}', "}}}}");
                format!("{{{{u}}}}/{escaped}")
            }
        };
        out.write_all(b",")?;
        let key = self.named(&self.unsharded.chunk_key(&c.coords));
        serde_json::to_writer(&mut *out, &key)?;
        out.write_all(b":[")?;
        serde_json::to_writer(&mut *out, &url)?;
        write!(out, ",{},{}]", c.offset, c.nbytes)
    }

    fn end(&self, out: &mut dyn Write) -> std::io::Result<()> {
        out.write_all(match self.version {
            JsonVersion::V0 => b"}",
            JsonVersion::V1 => b"}}",
        })
    }
}

/// The URL prefix references are built on, `PREFIX/SHARD_KEY`: the prefix without one trailing
/// `/` (`http://host/a/` → `http://host/a`; `file:///` → `file://`, not `file:`).
fn url_base(url_prefix: &str) -> &str {
    url_prefix.strip_suffix('/').unwrap_or(url_prefix)
}

/// An inline value as fsspec reads it back: fsspec base64-decodes every inline value that
/// starts with `base64:`, so such bytes are written base64-encoded behind that prefix; others
/// as they are.
#[cfg_attr(not(feature = "parquet"), allow(dead_code))]
fn inline_raw(bytes: Vec<u8>) -> Vec<u8> {
    if bytes.starts_with(b"base64:") {
        use base64::Engine;
        let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
        format!("base64:{encoded}").into_bytes()
    } else {
        bytes
    }
}

#[cfg(feature = "parquet")]
pub use parquet_out::{
    write_parquet, write_parquet_from_array, write_parquet_from_array_to, write_parquet_to,
};

/// The arguments of the Parquet layout that need no reference set: `name` not empty, not
/// starting with `.z` and without `..` (it names the folder of the record files next to
/// `.zmetadata`), `record_size` at least 1; [`Error::InvalidArgument`] otherwise. Callers
/// check them before building the set, which reads every shard's index.
pub fn check_parquet_output(name: &str, record_size: u64) -> Result<()> {
    if record_size == 0 {
        return Err(Error::InvalidArgument(
            "record size must be at least 1".into(),
        ));
    }
    if name.is_empty() || name.starts_with(".z") || name.contains("..") {
        return Err(Error::InvalidArgument(format!(
            "invalid array name `{}`",
            crate::error::shown_text(name)
        )));
    }
    Ok(())
}

/// At most how many rows a Parquet reference set may have. The layout has one row per inner
/// chunk of the grid, empty chunks included (LazyReferenceMapper finds a key by its row
/// number), so its size follows the grid, not what is stored: a grid of `[2^64-1, 16]` inner
/// chunks with nothing stored would write files until the disk is full. Larger grids are
/// refused before anything is read or written; the JSON formats list only stored chunks and
/// have no such limit.
pub const MAX_PARQUET_ROWS: u64 = 100_000_000;

/// [`Error::InvalidArgument`] when the Parquet layout of an unsharded chunk grid of
/// `grid_shape` would have more than [`MAX_PARQUET_ROWS`] rows.
pub fn check_parquet_rows(grid_shape: &[u64]) -> Result<()> {
    let rows = grid_shape
        .iter()
        .try_fold(1u64, |n, &k| n.checked_mul(k))
        .filter(|&n| n <= MAX_PARQUET_ROWS);
    if rows.is_none() {
        return Err(Error::InvalidArgument(format!(
            "the Parquet layout has one row per inner chunk, stored or not: the chunk grid {} has more than {MAX_PARQUET_ROWS} (the limit); a JSON reference set lists only the stored chunks",
            shown(grid_shape)
        )));
    }
    Ok(())
}

/// The directory [`write_parquet`] writes into: it must not exist (it is created, with
/// missing parents) or be an empty directory; [`Error::InvalidArgument`] otherwise, or
/// [`Error::Io`] when it cannot be listed or its nearest existing ancestor is not a directory
/// (`ENOTDIR`, which creating it would meet). Callers check it before building the set, which
/// reads every shard's index.
pub fn check_parquet_dir(out: &std::path::Path) -> Result<()> {
    let empty_dir = || -> Result<bool> {
        let mut entries = std::fs::read_dir(out).map_err(|e| Error::io_at(out, e))?;
        Ok(entries.next().is_none())
    };
    if out.exists() && !(out.is_dir() && empty_dir()?) {
        return Err(Error::InvalidArgument(format!(
            "{} exists and is not an empty directory",
            crate::error::shown_text(out.display())
        )));
    }
    // Found now rather than after every index was read. (`exists` is false below a file.)
    let existing = out.ancestors().skip(1).find(|a| a.exists());
    if let Some(file) = existing.filter(|a| !a.as_os_str().is_empty() && !a.is_dir()) {
        #[cfg(unix)]
        let code = libc::ENOTDIR;
        #[cfg(not(unix))]
        let code = -1;
        return Err(Error::Io {
            code,
            message: format!(
                "{}: {} is not a directory",
                crate::error::shown_text(out.display()),
                crate::error::shown_text(file.display())
            ),
        });
    }
    Ok(())
}

/// What the Parquet writers return in a build without the `parquet` feature.
#[cfg(not(feature = "parquet"))]
fn no_parquet() -> Error {
    Error::Unsupported("Parquet output (zarrshard was built without the `parquet` feature)".into())
}

/// Without the `parquet` feature: [`Error::Unsupported`] (the C API keeps its entry point).
#[cfg(not(feature = "parquet"))]
pub fn write_parquet(
    _refs: &References,
    _url_prefix: &str,
    _name: &str,
    _record_size: u64,
    _out: &std::path::Path,
) -> Result<()> {
    Err(no_parquet())
}

/// Without the `parquet` feature: [`Error::Unsupported`] (the C API keeps its entry point).
#[cfg(not(feature = "parquet"))]
pub fn write_parquet_to(
    _refs: &References,
    _url_prefix: &str,
    _name: &str,
    _record_size: u64,
    _out: &dyn crate::storage::store::Store,
) -> Result<()> {
    Err(no_parquet())
}

/// Without the `parquet` feature: [`Error::Unsupported`] (the C API keeps its entry point).
#[cfg(not(feature = "parquet"))]
pub fn write_parquet_from_array<S: Store>(
    _array: &Array<S>,
    _url_prefix: &str,
    _name: &str,
    _record_size: u64,
    _out: &std::path::Path,
) -> Result<()> {
    Err(no_parquet())
}

/// Without the `parquet` feature: [`Error::Unsupported`] (the C API keeps its entry point).
#[cfg(not(feature = "parquet"))]
pub fn write_parquet_from_array_to<S: Store>(
    _array: &Array<S>,
    _url_prefix: &str,
    _name: &str,
    _record_size: u64,
    _out: &dyn crate::storage::store::Store,
) -> Result<()> {
    Err(no_parquet())
}

#[cfg(feature = "parquet")]
mod parquet_out {
    use super::{ChunkRef, References, Unsharded};
    use crate::array::Array;
    use crate::error::{Error, Result};
    use crate::storage::store::{FsStore, Store};
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    use parquet::schema::types::TypePtr;
    use std::path::Path;
    use std::sync::Arc;

    /// The columns LazyReferenceMapper reads, in its order.
    const SCHEMA: &str = "message schema {
        OPTIONAL BYTE_ARRAY path (UTF8);
        REQUIRED INT64 offset;
        REQUIRED INT64 size;
        OPTIONAL BYTE_ARRAY raw;
    }";

    fn parquet_error(e: parquet::errors::ParquetError) -> Error {
        Error::Io {
            code: -1,
            message: format!("writing Parquet: {e}"),
        }
    }

    /// Write the reference set in the Parquet layout of fsspec's `LazyReferenceMapper` into
    /// the directory `out` (created when the first file is written; it must not exist or be
    /// empty): `out/.zmetadata` and `out/NAME/refs.<n>.parq`, file `n` holding chunk numbers
    /// `n*record_size ..` (C order of the chunk grid), one row each. The set must use Zarr v2
    /// metadata with `.` as separator (LazyReferenceMapper parses keys as `NAME/i.j` and reads
    /// only `.zarray`).
    pub fn write_parquet(
        refs: &References,
        url_prefix: &str,
        name: &str,
        record_size: u64,
        out: &Path,
    ) -> Result<()> {
        check_layout(&refs.unsharded, name, record_size)?;
        super::check_parquet_dir(out)?;
        write_parquet_to(refs, url_prefix, name, record_size, &FsStore::new(out))
    }

    /// [`write_parquet`] into any [`Store`]: the objects `.zmetadata` and
    /// `NAME/refs.<n>.parq` (each file built in memory, then one `set`), `.zmetadata` last so
    /// a reader never finds it before the files it names.
    pub fn write_parquet_to(
        refs: &References,
        url_prefix: &str,
        name: &str,
        record_size: u64,
        out: &dyn Store,
    ) -> Result<()> {
        let mut files = Files::new(&refs.unsharded, url_prefix, name, record_size, out)?;
        files.rows(&refs.chunks)?;
        files.finish()
    }

    /// [`write_parquet`] of [`References::from_array`]'s set (Zarr v2 metadata, `.` as
    /// separator), written as the shards are read: it holds a batch of index reads and one
    /// slab of shards (as [`write_json_from_array`](super::write_json_from_array)) and one
    /// file's rows, never the set. `name`, `record_size` and `out` are checked before
    /// any shard is read; a failure part way leaves the files written so far but no
    /// `.zmetadata` (the directory is created with the first file).
    pub fn write_parquet_from_array<S: Store>(
        array: &Array<S>,
        url_prefix: &str,
        name: &str,
        record_size: u64,
        out: &Path,
    ) -> Result<()> {
        super::check_parquet_output(name, record_size)?;
        super::check_parquet_dir(out)?;
        write_parquet_from_array_to(array, url_prefix, name, record_size, &FsStore::new(out))
    }

    /// [`write_parquet_from_array`] into any [`Store`], with [`write_parquet_to`]'s objects.
    pub fn write_parquet_from_array_to<S: Store>(
        array: &Array<S>,
        url_prefix: &str,
        name: &str,
        record_size: u64,
        out: &dyn Store,
    ) -> Result<()> {
        super::check_parquet_output(name, record_size)?;
        let format = super::MetadataFormat::V2 { separator: '.' };
        let unsharded = Unsharded::new(array.metadata(), format)?;
        let mut files = Files::new(&unsharded, url_prefix, name, record_size, out)?;
        super::walk_refs(array, &unsharded, |refs| files.rows(&refs))?;
        files.finish()
    }

    /// What the Parquet layout needs, checked before anything is read or written: Zarr v2
    /// metadata with `.`, the name and record size, and at most [`MAX_PARQUET_ROWS`](super::MAX_PARQUET_ROWS)
    /// rows (one per inner chunk of the grid, stored or not).
    fn check_layout(unsharded: &Unsharded, name: &str, record_size: u64) -> Result<()> {
        if unsharded.format != (super::MetadataFormat::V2 { separator: '.' }) {
            return Err(Error::InvalidArgument(
                "the Parquet layout needs Zarr v2 metadata with `.` as dimension separator (fsspec reads nothing else)".into(),
            ));
        }
        super::check_parquet_rows(unsharded.grid_shape())?;
        super::check_parquet_output(name, record_size)
    }

    /// The record files being written: rows are added in chunk number order, and each file
    /// is written once its last row is in.
    struct Files<'a> {
        unsharded: &'a Unsharded,
        /// The URL prefix without a trailing `/`.
        prefix: &'a str,
        name: &'a str,
        record_size: u64,
        out: &'a dyn Store,
        /// Chunks in the grid: the number of rows over all files.
        total: u64,
        /// The chunk number of the next row.
        next: u64,
        /// One encoded fill chunk shared by every empty row (a `ByteArray` clone shares its
        /// bytes), written so that fsspec reads it back as these bytes.
        fill: ByteArray,
        schema: TypePtr,
        props: Arc<WriterProperties>,
        file: Columns,
    }

    /// The columns of one file, with their definition levels (1: a value, 0: null).
    #[derive(Default)]
    struct Columns {
        paths: Vec<ByteArray>,
        path_def: Vec<i16>,
        offsets: Vec<i64>,
        sizes: Vec<i64>,
        raws: Vec<ByteArray>,
        raw_def: Vec<i16>,
    }

    impl<'a> Files<'a> {
        /// Errors as [`check_layout`], or when the fill chunk cannot be encoded.
        fn new(
            unsharded: &'a Unsharded,
            url_prefix: &'a str,
            name: &'a str,
            record_size: u64,
            out: &'a dyn Store,
        ) -> Result<Self> {
            check_layout(unsharded, name, record_size)?;
            let fill = ByteArray::from(super::inline_raw(unsharded.encoded_fill_chunk()?));
            // Plain encoding: fastparquet (fsspec's default engine) fails on parquet-rs's
            // dictionary page for a column whose values are all null. zstd, as fsspec writes.
            // Rows go to the page in batches of `write_batch_size` before its size is
            // checked: small enough batches that a page of fill chunks stays near the page
            // size limit.
            let batch = (1usize << 20) / fill.len().max(1);
            let props = WriterProperties::builder()
                .set_dictionary_enabled(false)
                .set_write_batch_size(batch.clamp(1, 1024))
                .set_compression(Compression::ZSTD(ZstdLevel::default()))
                .build();
            Ok(Files {
                unsharded,
                prefix: super::url_base(url_prefix),
                name,
                record_size,
                out,
                total: crate::codec::checked_product(&unsharded.grid_shape)?,
                next: 0,
                fill,
                schema: Arc::new(parse_message_type(SCHEMA).map_err(parquet_error)?),
                props: Arc::new(props),
                file: Columns::default(),
            })
        }

        /// Add `chunks` (in C order of the grid, after those added before) and the empty rows
        /// before each, writing every file that is complete.
        fn rows(&mut self, chunks: &[ChunkRef]) -> Result<()> {
            for c in chunks {
                let n = crate::nd::ravel(&c.coords, &self.unsharded.grid_shape);
                debug_assert!(n >= self.next, "references in C order, one per chunk");
                self.empty_rows_to(n)?;
                let f = &mut self.file;
                f.paths.push(ByteArray::from(
                    format!("{}/{}", self.prefix, c.shard_key).as_str(),
                ));
                f.path_def.push(1);
                f.offsets.push(c.offset as i64);
                f.sizes.push(c.nbytes as i64);
                f.raw_def.push(0);
                self.row_added()?;
            }
            Ok(())
        }

        /// Empty rows (the fill chunk inline) up to chunk number `end`.
        fn empty_rows_to(&mut self, end: u64) -> Result<()> {
            while self.next < end {
                let f = &mut self.file;
                f.path_def.push(0);
                f.offsets.push(0);
                f.sizes.push(0);
                f.raws.push(self.fill.clone());
                f.raw_def.push(1);
                self.row_added()?;
            }
            Ok(())
        }

        fn row_added(&mut self) -> Result<()> {
            self.next += 1;
            if self.next % self.record_size == 0 || self.next == self.total {
                self.write_file((self.next - 1) / self.record_size)?;
            }
            Ok(())
        }

        fn write_file(&mut self, file_no: u64) -> Result<()> {
            let f = std::mem::take(&mut self.file);
            let mut writer =
                SerializedFileWriter::new(Vec::new(), self.schema.clone(), self.props.clone())
                    .map_err(parquet_error)?;
            let mut group = writer.next_row_group().map_err(parquet_error)?;
            let mut column = 0;
            while let Some(mut col) = group.next_column().map_err(parquet_error)? {
                let written = match column {
                    0 => {
                        col.typed::<ByteArrayType>()
                            .write_batch(&f.paths, Some(&f.path_def), None)
                    }
                    1 => col.typed::<Int64Type>().write_batch(&f.offsets, None, None),
                    2 => col.typed::<Int64Type>().write_batch(&f.sizes, None, None),
                    _ => col
                        .typed::<ByteArrayType>()
                        .write_batch(&f.raws, Some(&f.raw_def), None),
                };
                written.map_err(parquet_error)?;
                col.close().map_err(parquet_error)?;
                column += 1;
            }
            group.close().map_err(parquet_error)?;
            let file = writer.into_inner().map_err(parquet_error)?;
            self.out
                .set(&format!("{}/refs.{file_no}.parq", self.name), &file)
        }

        /// The empty rows after the last chunk, the last file, and `.zmetadata`.
        fn finish(mut self) -> Result<()> {
            self.empty_rows_to(self.total)?;
            let zmetadata = super::parquet_zmetadata(self.unsharded, self.name, self.record_size);
            let zmetadata = serde_json::to_vec(&zmetadata).expect("JSON values serialise");
            self.out.set(".zmetadata", &zmetadata)
        }
    }
}
