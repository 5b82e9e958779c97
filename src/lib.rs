//! zarrshard: Zarr v3 sharding (`sharding_indexed`), spec-exact, with a stable C ABI.
//!
//! A shard is one stored object holding many inner chunks and an index of where each lies.
//! This crate reads a shard's index and then only the bytes of the inner chunks a call needs,
//! writes shards buffered, streaming or as in-place or append-only updates, and reads and
//! writes any region of an array with the minimum I/O, over a directory, memory or the host's
//! own storage. The same engine serves the C ABI ([`ffi`]), the language bindings and the
//! `zarrshard` tool. `examples/rust_api.rs` writes and reads an array.
//!
//! # Where to start
//!
//! * [`Array`]: an array in a [`Store`]: [`Array::open`], [`Array::create_at`],
//!   [`Array::read_region`], [`Array::write_region`], [`Array::append`], [`Array::export`],
//!   [`Array::verify`]; [`Group`] for the nodes above it.
//! * [`ArraySpec`]: an array described by shapes, data type and compressor, turned into
//!   validated metadata ([`ArraySpec::to_metadata`]), so that nobody writes `zarr.json` by hand.
//! * [`FsStore`], [`MemoryStore`]: stores of objects by key; implement [`Store`] and
//!   [`ShardIo`] for storage of your own.
//! * [`ShardReader`]: one shard read partially; [`ShardWriter`]: one shard written with a
//!   [`WriteStrategy`].
//! * [`codec`]: the codec pipeline; [`ShardLayout`] is `sharding_indexed` bound to one shard.
//! * Process settings: [`set_threads`], [`set_memory_limit`], [`release_memory`]. Every
//!   fallible call returns [`Result`]; corrupt input is an [`Error`], never a panic.
//!
//! # Modules
//!
//! The folders follow the data from `zarr.json` to the bytes:
//!
//! * [`metadata`]: `zarr.json`, [`metadata::dtype`] (data types and fill values) and
//!   [`metadata::spec`] (arrays described without writing `zarr.json`);
//! * [`codec`]: transpose, bytes, gzip, zstd, crc32c, blosc, and [`codec::sharding`] with its
//!   [`index`](codec::sharding::index);
//! * [`shard`]: one shard object: [`reader`](shard::reader), [`writer`](shard::writer),
//!   [`repair`](shard::repair) (torn shards cut back to an index that proves itself intact);
//! * [`storage`]: byte-range I/O of one object ([`storage::io`]) and stores of many
//!   ([`storage::store`]);
//! * [`array`](mod@array): an array at any path of a hierarchy, with [`group`](array::group)s,
//!   [`region`](array::region)s, [`resize`](array::resize), [`append`](array::append),
//!   [`repack`](array::repack), kerchunk [`refs`](array::refs) and the
//!   [`legacy`](array::legacy) formats;
//! * [`runtime`]: the thread pool, the memory limit, and the memory kept between calls;
//! * [`nd`]: C-order grids and box copies; [`error`]: the one error type;
//! * [`ffi`]: the C ABI over all of it (the only `unsafe` besides the blosc binding and one
//!   audited output helper, `nd::DisjointOut`).
//!
//! In the repository, `docs/rust.md` is the guide to this API and `docs/design.md` follows a
//! call to the bytes and back: passes of shards, coalesced reads, threads and memory.
#![deny(missing_docs)]

pub mod array;
pub mod codec;
pub mod error;
pub mod ffi;
pub mod metadata;
pub mod nd;
pub mod runtime;
pub mod shard;
pub mod storage;

pub use array::group::Group;
pub use array::repack::{repack, repacked_metadata, RepackOptions, RepackReport};
pub use array::{Array, Format, Problem, VerifySummary};
pub use codec::sharding::index::{ChunkLocation, ShardIndex};
pub use codec::sharding::{IndexLocation, ShardLayout, ShardingCodec};
pub use codec::{ChunkRepr, CodecChain, EncodedSize};
pub use error::{Error, Result};
pub use metadata::dtype::{DataType, FillValue};
pub use metadata::spec::{ArraySpec, Compressor};
pub use metadata::{ArrayMetadata, Attributes, ChunkKeyEncoding};
pub use runtime::limits::{memory_limit, set_memory_limit};
pub use runtime::memory::{release_memory, Released};
pub use runtime::threads::{set_threads, threads, MAX_THREADS};
pub use shard::encoded::{segment_counts, EncodedChunks, SegmentCounts};
pub use shard::reader::{read_whole_shard, FetchedChunks, ShardReader};
pub use shard::repair::ShardRepair;
pub use shard::writer::{
    compact, ChunkOrder, Finalized, ShardWriter, UpdateMode, WriteOptions, WriteStrategy,
};
pub use storage::io::{ByteRange, CountingIo, FileIo, MemoryIo, ObjectSink, ReadOutput, ShardIo};
pub use storage::store::{node_path, FsStore, MemoryStore, Prefixed, Store};

// README's Rust quick start is compiled and run as a doctest (`cargo test --doc`, the rust stage
// of scripts/test.sh), so it cannot drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
