//! zarrshard: Zarr v3 sharding (`sharding_indexed`), spec-exact, with a stable C ABI.
//!
//! The core is pure safe Rust, one module per concept:
//!
//! * [`metadata`]: `zarr.json`; [`dtype`]: data types and fill values;
//! * [`codec`]: the codec pipeline (transpose, bytes, gzip, zstd, crc32c, blosc) and
//!   [`sharding`], the `sharding_indexed` codec and the layout of one shard;
//! * [`index`]: the shard index, validated entry by entry;
//! * [`io`]: byte-range I/O of one shard object (memory, file, or the host's callbacks);
//! * [`reader`]: reads only the bytes it needs; [`writer`]: buffered, streaming and update
//!   strategies, compaction;
//! * [`store`] and [`array`](mod@array): a whole array in a directory (export, verify), at
//!   any path of a hierarchy, with [`group`]s; [`spec`]: arrays described without writing
//!   `zarr.json`; [`resize`](mod@resize) and [`append`](mod@append): changing the shape in
//!   place, frame after frame without dead bytes;
//! * [`region`]: any hyper-rectangle of an array, read and written with the minimum I/O;
//! * [`refs`]: kerchunk reference sets (JSON v0/v1, Parquet) over the inner chunks;
//! * [`repack`](mod@repack): rewrite an array into a new shard layout, copying encoded chunks when it can;
//! * [`repair`]: torn shards cut back to their last index that proves itself intact;
//! * [`limits`]: the memory limit on buffers the metadata asks for; [`retained`]: the memory
//!   kept between calls (codec contexts, encode segments) and how to free it.
#![deny(missing_docs)]

pub mod append;
pub mod array;
mod blocks;
pub mod codec;
pub mod dtype;
pub mod encoded;
pub mod error;
pub mod ffi;
pub mod group;
pub mod index;
pub mod io;
pub mod legacy;
pub mod limits;
pub mod metadata;
pub mod nd;
pub mod parallel;
mod placement;
pub mod read_buffers;
pub mod reader;
pub mod refs;
pub mod region;
pub mod repack;
pub mod repair;
pub mod resize;
pub mod retained;
pub mod sharding;
pub mod spec;
pub mod store;
pub mod streamed;
pub mod writer;

pub use array::{Array, Format, Problem, VerifySummary};
pub use codec::{ChunkRepr, CodecChain, EncodedSize};
pub use dtype::{DataType, FillValue};
pub use encoded::{segment_counts, EncodedChunks, SegmentCounts};
pub use error::{Error, Result};
pub use group::Group;
pub use index::{ChunkLocation, ShardIndex};
pub use io::{ByteRange, CountingIo, FileIo, MemoryIo, ObjectSink, ReadOutput, ShardIo};
pub use limits::{memory_limit, set_memory_limit};
pub use metadata::{ArrayMetadata, Attributes, ChunkKeyEncoding};
pub use parallel::{set_threads, threads, MAX_THREADS};
pub use read_buffers::{kept_reads, KeptReads};
pub use reader::{read_whole_shard, FetchedChunks, ShardReader};
pub use repack::{repack, repacked_metadata, RepackOptions, RepackReport};
pub use repair::ShardRepair;
pub use retained::{release_memory, Released};
pub use sharding::{IndexLocation, ShardLayout, ShardingCodec};
pub use spec::{ArraySpec, Compressor};
pub use store::{node_path, FsStore, MemoryStore, Prefixed, Store};
pub use writer::{
    compact, ChunkOrder, Finalized, ShardWriter, UpdateMode, WriteOptions, WriteStrategy,
};
