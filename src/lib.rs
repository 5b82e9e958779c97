//! zarrshard: Zarr v3 sharding (`sharding_indexed`), spec-exact, with a stable C ABI.
//!
//! The core is pure safe Rust in folders that follow the data from `zarr.json` to the bytes:
//!
//! * [`metadata`]: `zarr.json`, [`metadata::dtype`] (data types and fill values) and
//!   [`metadata::spec`] (arrays described without writing `zarr.json`);
//! * [`codec`]: the codec pipeline (transpose, bytes, gzip, zstd, crc32c, blosc) and
//!   [`codec::sharding`], the `sharding_indexed` codec, the layout of one shard and its
//!   [`index`](codec::sharding::index);
//! * [`shard`]: one shard object: [`reader`](shard::reader) (only the bytes it needs),
//!   [`writer`](shard::writer) (buffered, streaming and update strategies, compaction),
//!   [`repair`](shard::repair) (torn shards cut back to an index that proves itself intact);
//! * [`storage`]: byte-range I/O of one object ([`storage::io`]: memory, file, the host's
//!   callbacks) and stores of many ([`storage::store`]: a directory, memory, a prefix);
//! * [`array`](mod@array): a whole array at any path of a hierarchy, with
//!   [`group`](array::group)s, [`region`](array::region)s read and written with the minimum
//!   I/O, [`resize`](array::resize), [`append`](array::append), [`repack`](array::repack),
//!   kerchunk [`refs`](array::refs), and the [`legacy`](array::legacy) formats;
//! * [`runtime`]: the thread pool, the memory limit, and the memory kept between calls;
//! * [`ffi`]: the C ABI over all of it (the only `unsafe` besides the blosc binding and one
//!   audited output helper, `nd::DisjointOut`).
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
