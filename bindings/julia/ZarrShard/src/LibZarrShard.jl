"""
    LibZarrShard

The raw layer: one `ccall` wrapper per function of `include/zarrshard.h`, with the C types of
the header, and the header's constants, enums and structs. Nothing here allocates, checks or
converts: statuses come back as `Cint`, coordinates are C order and 0-based, buffers are raw
pointers (Julia arrays passed to these functions are converted and rooted by `ccall`).

Use the Julian layer (`ZarrShard.Codec`, `ZarrShard.Shard`) unless you need the C API as is.
`bindings/julia/check` verifies statically that every wrapper here matches the header.
"""
module LibZarrShard

"""
The shared library. Set `ZARRSHARD_LIBRARY` to the full path of `libzarrshard.so`
(`.dylib`, `.dll`) before the package is precompiled; otherwise the dynamic loader's search
path is used. `ccall` needs a constant here, so the value is fixed at precompile time.
"""
const libzarrshard = get(ENV, "ZARRSHARD_LIBRARY", "libzarrshard")

# ---------------------------------------------------------------------------------------------
# Constants (#define)

"""
The store callback table version this header defines (`shard_store_callbacks.version`):
version 2 appends `list` to version 1's fields; the library reads only the fields of the
version a table declares.
"""
const SHARD_STORE_VERSION = UInt32(2)
"""
Returned by `shard_store_callbacks.list` when the store cannot list after all: the library
then asks every position of the chunk grid, as when `list` is NULL.
"""
const SHARD_STORE_CANNOT_LIST = Int32(2147483645)
"`shard_store_callbacks.flags`: the store's and its objects' callbacks are thread-safe."
const SHARD_STORE_THREAD_SAFE = UInt32(1)
"The callback table version this header defines (`shard_io_callbacks.version`)."
const SHARD_IO_VERSION = UInt32(3)
"Returned by `read`, `read_suffix`, `size` when the object does not exist (reads as fill)."
const SHARD_IO_NOT_FOUND = Int32(2147483647)
"`shard_last_io_code` after a callback reported more bytes than it was asked for."
const SHARD_IO_CONTRACT_VIOLATION = Int32(2147483646)
"`shard_open_ex` flag: lay out buffered shards in Morton order."
const SHARD_FLAG_MORTON_ORDER = UInt32(1)
"`shard_open_ex` flag: store inner chunks equal to the fill value."
const SHARD_FLAG_STORE_FILL_CHUNKS = UInt32(2)
"The most threads `shard_set_threads` accepts."
const SHARD_MAX_THREADS = Csize_t(1024)
"The coalescing gap of a new read handle, in bytes (`shard_set_coalesce_gap`)."
const SHARD_DEFAULT_COALESCE_GAP = UInt64(65536)
"The index cache bound of a new array handle, in bytes (`shard_array_set_index_cache`)."
const SHARD_DEFAULT_INDEX_CACHE_BYTES = UInt64(8388608)

"`shard_store_directory` flag: create the directory (and its parents) when it is missing."
const SHARD_STORE_CREATE = UInt32(2)
"`shard_array_create`, `shard_array_create_spec`, `shard_group_create` flag: replace an existing node (its shards or children removed)."
const SHARD_CREATE_OVERWRITE = UInt32(1)
"The `shard_array_spec` version this header defines (`shard_array_spec.version`)."
const SHARD_ARRAY_SPEC_VERSION = UInt32(1)
"`shard_array_spec.index_location`: the shard index after the inner chunks (the default)."
const SHARD_INDEX_AT_END = UInt32(0)
"`shard_array_spec.index_location`: the shard index before the inner chunks."
const SHARD_INDEX_AT_START = UInt32(1)
"`shard_array_spec.checksums` bit: a crc32c checksum on the shard index (the default)."
const SHARD_CHECKSUM_INDEX = UInt32(1)
"`shard_array_spec.checksums` bit: a crc32c checksum on every inner chunk."
const SHARD_CHECKSUM_CHUNKS = UInt32(2)

"`shard_array_refs` format: kerchunk reference set version 0 JSON."
const SHARD_REFS_JSON_V0 = UInt32(0)

"`shard_array_refs` format: kerchunk reference set version 1 JSON (`templates`, `refs`)."
const SHARD_REFS_JSON_V1 = UInt32(1)

# ---------------------------------------------------------------------------------------------
# Enums. The functions return `Cint`, not `shard_status`, so that a status this binding does
# not know yet still arrives intact; compare with `Cint(SHARD_OK)`.

"Result of every fallible `shard_*` function (`Cint` in C)."
@enum shard_status::Cint begin
    SHARD_OK = 0
    SHARD_ERR_NULL_POINTER = 1
    SHARD_ERR_INVALID_METADATA = 2
    SHARD_ERR_UNSUPPORTED_CODEC = 3
    SHARD_ERR_CORRUPT = 4
    SHARD_ERR_CHECKSUM = 5
    SHARD_ERR_IO = 6
    SHARD_ERR_BUFFER_SIZE = 7
    SHARD_ERR_INVALID_ARGUMENT = 8
    SHARD_ERR_INVALID_STATE = 9
    SHARD_ERR_UNSUPPORTED = 10
    SHARD_ERR_PANIC = 11
    SHARD_ERR_BUSY = 12
end

"How `shard_open` opens the shard; passed as a `UInt32`."
@enum shard_mode::UInt32 begin
    SHARD_MODE_READ = 0
    SHARD_MODE_WRITE_BUFFERED = 1
    SHARD_MODE_WRITE_STREAMING = 2
    SHARD_MODE_UPDATE_APPEND = 3
    SHARD_MODE_UPDATE_IN_PLACE = 4
end

# ---------------------------------------------------------------------------------------------
# Types

"Opaque: a shard layout (`shard_codec *`). Only ever used as `Ptr{shard_codec}`."
mutable struct shard_codec end

"Opaque: an open shard object (`shard_handle *`). Only ever used as `Ptr{shard_handle}`."
mutable struct shard_handle end

"""
The host's storage for one shard object: the C struct, field for field. The callbacks are C
function pointers (`@cfunction`); see the header for the whole contract.
"""
struct shard_io_callbacks
    version::UInt32
    userdata::Ptr{Cvoid}
    read::Ptr{Cvoid}        # int32_t (*)(void *, uint64_t, size_t, uint8_t *, size_t *)
    read_suffix::Ptr{Cvoid} # int32_t (*)(void *, size_t, uint8_t *, size_t *, uint64_t *)
    size::Ptr{Cvoid}        # int32_t (*)(void *, uint64_t *)
    write::Ptr{Cvoid}       # int32_t (*)(void *, uint64_t, const uint8_t *, size_t)
    truncate::Ptr{Cvoid}    # int32_t (*)(void *, uint64_t)
    remove::Ptr{Cvoid}      # int32_t (*)(void *)
    destroy::Ptr{Cvoid}     # void (*)(void *)
    read_vectored::Ptr{Cvoid} # int32_t (*)(void *, size_t, const uint64_t *, const size_t *, uint8_t *const *, size_t *)
    create_new::Ptr{Cvoid}  # int32_t (*)(void *, void **)
    write_new::Ptr{Cvoid}   # int32_t (*)(void *, void *, uint64_t, const uint8_t *, size_t)
    commit_new::Ptr{Cvoid}  # int32_t (*)(void *, void *, uint64_t)
    discard_new::Ptr{Cvoid} # void (*)(void *, void *)
end

"Opaque: an array over a host store (`shard_array *`). Only ever used as `Ptr{shard_array}`."
mutable struct shard_array end

"""
The host's storage for a whole array: the C struct (version 2), field for field.
`open_object` fills a `shard_io_callbacks` for a key; `list` (optional, version 2) lists the
stored objects under a prefix by calling the library's `shard_key_fn` once per key; see the
header for the whole contract.
"""
struct shard_store_callbacks
    version::UInt32
    flags::UInt32
    userdata::Ptr{Cvoid}
    open_object::Ptr{Cvoid} # int32_t (*)(void *, const char *, shard_io_callbacks *)
    destroy::Ptr{Cvoid}     # void (*)(void *)
    list::Ptr{Cvoid}        # int32_t (*)(void *, const char *, shard_key_fn, void *)
end

# `shard_key_fn`, `void (*)(void *list_state, const char *key, size_t key_len)`, the library's
# receiver of the keys a store's `list` callback lists: a C function pointer the library
# passes to `list` (as `Ptr{Cvoid}`), which the host calls with `ccall(on_key, Cvoid, ...)`.

# `shard_sink_fn`, `int32_t (*)(void *userdata, const uint8_t *data, size_t len)`, the host's
# receiver of the text `shard_array_refs_write` produces: a C function pointer, passed as
# `Ptr{Cvoid}` (an `@cfunction`).

# `shard_problem_fn`, `int32_t (*)(void *userdata, const char *key, const uint64_t *chunk,
# size_t chunk_rank, shard_status status, const char *message)`, the host's receiver of the
# problems `shard_array_verify` finds: a C function pointer, passed as `Ptr{Cvoid}` (an
# `@cfunction`).

"""
What `shard_array_create_spec` and `shard_array_spec_json` turn into an array's metadata: the
C struct (version 1), field for field. Fill it with `shard_array_spec_init` first (the
library's defaults, pointers NULL). Every pointer is the caller's and only read during the
call: `shape`, `shard_shape` (NULL: not sharded), `chunk_shape` hold `rank` values, C order;
the strings are NUL-terminated; `dimension_names` is NULL or `rank` strings (an entry may be
NULL).
"""
struct shard_array_spec
    version::UInt32
    rank::Csize_t
    shape::Ptr{UInt64}
    shard_shape::Ptr{UInt64}
    chunk_shape::Ptr{UInt64}
    data_type::Ptr{UInt8}
    fill_value::Ptr{UInt8}
    compressor::Ptr{UInt8}
    compression_level::Int32
    index_location::UInt32
    checksums::UInt32
    dimension_names::Ptr{Ptr{UInt8}}
end

"What `shard_array_verify_summary` checked."
struct shard_verify_summary
    stored_shards::UInt64
    chunks_decoded::UInt64
    chunks_unverifiable::UInt64
    problems::UInt64
end

"Where an inner chunk is stored (`shard_chunk_info`)."
struct shard_chunk_location
    offset::UInt64
    nbytes::UInt64
    empty::Bool
end

# ---------------------------------------------------------------------------------------------
# Functions, in the header's order.

"`const char *shard_version(void)`"
function shard_version()
    ccall((:shard_version, libzarrshard), Cstring, ())
end

"`const char *shard_status_str(uint32_t status)`"
function shard_status_str(status)
    ccall((:shard_status_str, libzarrshard), Cstring, (UInt32,), status)
end

"`shard_status shard_last_error(char *buf, size_t len, size_t *written_out)`"
function shard_last_error(buf, len, written_out)
    ccall((:shard_last_error, libzarrshard), Cint,
          (Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          buf, len, written_out)
end

"`int32_t shard_last_io_code(void)`"
function shard_last_io_code()
    ccall((:shard_last_io_code, libzarrshard), Int32, ())
end

"""
`shard_status shard_array_open(const char *json, size_t json_len,
const shard_store_callbacks *store, shard_array **array_out)`
"""
function shard_array_open(json, json_len, store, array_out)
    ccall((:shard_array_open, libzarrshard), Cint,
          (Ptr{UInt8}, Csize_t, Ref{shard_store_callbacks}, Ref{Ptr{shard_array}}),
          json, json_len, store, array_out)
end

"`void shard_array_close(shard_array *array)`"
function shard_array_close(array)
    ccall((:shard_array_close, libzarrshard), Cvoid, (Ptr{shard_array},), array)
end

"`shard_status shard_array_set_coalesce_gap(const shard_array *array, uint64_t gap)`"
function shard_array_set_coalesce_gap(array, gap)
    ccall((:shard_array_set_coalesce_gap, libzarrshard), Cint, (Ptr{shard_array}, UInt64), array, gap)
end

"`shard_status shard_array_set_index_cache(const shard_array *array, uint64_t bytes)`"
function shard_array_set_index_cache(array, bytes)
    ccall((:shard_array_set_index_cache, libzarrshard), Cint, (Ptr{shard_array}, UInt64), array, bytes)
end

"`shard_status shard_array_forget_cached_indexes(const shard_array *array)`"
function shard_array_forget_cached_indexes(array)
    ccall((:shard_array_forget_cached_indexes, libzarrshard), Cint, (Ptr{shard_array},), array)
end

"`shard_status shard_array_codec(const shard_array *array, shard_codec **codec_out)`"
function shard_array_codec(array, codec_out)
    ccall((:shard_array_codec, libzarrshard), Cint,
          (Ptr{shard_array}, Ref{Ptr{shard_codec}}), array, codec_out)
end

"""
`shard_status shard_array_read_region(const shard_array *array, const uint64_t *start,
const uint64_t *shape, size_t rank, uint8_t *buf, size_t len)`
"""
function shard_array_read_region(array, start, shape, rank, buf, len)
    ccall((:shard_array_read_region, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt64}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          array, start, shape, rank, buf, len)
end

"""
`shard_status shard_array_write_region(const shard_array *array, const uint64_t *start,
const uint64_t *shape, size_t rank, const uint8_t *data, size_t len)`
"""
function shard_array_write_region(array, start, shape, rank, data, len)
    ccall((:shard_array_write_region, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt64}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          array, start, shape, rank, data, len)
end

"""
`shard_status shard_array_refs(const shard_array *array, uint32_t format, uint32_t zarr_format,
const char *url_prefix, size_t url_prefix_len, const char *name, size_t name_len, char *buf,
size_t len, size_t *written_out)`
"""
function shard_array_refs(array, format, zarr_format, url_prefix, url_prefix_len, name,
                          name_len, buf, len, written_out)
    ccall((:shard_array_refs, libzarrshard), Cint,
          (Ptr{shard_array}, UInt32, UInt32, Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t,
           Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          array, format, zarr_format, url_prefix, url_prefix_len, name, name_len, buf, len,
          written_out)
end

"""
`shard_status shard_array_refs_write(const shard_array *array, uint32_t format,
uint32_t zarr_format, const char *url_prefix, size_t url_prefix_len, const char *name,
size_t name_len, shard_sink_fn sink, void *userdata)`

`sink` is a `shard_sink_fn` made with `@cfunction` (`Int32`, `(Ptr{Cvoid}, Ptr{UInt8}, Csize_t)`);
the library calls it on the calling thread with pieces of at most 64 KiB of the text, and
`userdata` as given.
"""
function shard_array_refs_write(array, format, zarr_format, url_prefix, url_prefix_len, name,
                                name_len, sink, userdata)
    ccall((:shard_array_refs_write, libzarrshard), Cint,
          (Ptr{shard_array}, UInt32, UInt32, Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t,
           Ptr{Cvoid}, Ptr{Cvoid}),
          array, format, zarr_format, url_prefix, url_prefix_len, name, name_len, sink,
          userdata)
end

"""
`shard_status shard_array_refs_stream(const shard_array *array, uint32_t format,
uint32_t zarr_format, const char *url_prefix, size_t url_prefix_len, const char *name,
size_t name_len, shard_sink_fn sink, void *userdata)`

As `shard_array_refs_write`, but the pieces come as the shards are read (the library holds a
batch of shard indexes, not the text); after a failure the sink has had the text's first part.
"""
function shard_array_refs_stream(array, format, zarr_format, url_prefix, url_prefix_len, name,
                                 name_len, sink, userdata)
    ccall((:shard_array_refs_stream, libzarrshard), Cint,
          (Ptr{shard_array}, UInt32, UInt32, Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t,
           Ptr{Cvoid}, Ptr{Cvoid}),
          array, format, zarr_format, url_prefix, url_prefix_len, name, name_len,
          sink, userdata)
end

"""
`shard_status shard_array_refs_parquet_dir(const shard_array *array, const char *url_prefix,
size_t url_prefix_len, const char *name, size_t name_len, uint64_t record_size,
const char *dir, size_t dir_len)`

`dir` is `dir_len` bytes of a local path (no NUL); it must not exist or be an empty directory.
"""
function shard_array_refs_parquet_dir(array, url_prefix, url_prefix_len, name, name_len,
                                      record_size, dir, dir_len)
    ccall((:shard_array_refs_parquet_dir, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t, UInt64, Ptr{UInt8},
           Csize_t),
          array, url_prefix, url_prefix_len, name, name_len, record_size, dir, dir_len)
end

"""
`shard_status shard_array_verify(const shard_array *array, shard_problem_fn on_problem,
void *userdata, uint64_t *problems_out)`

`on_problem` is a `shard_problem_fn` made with `@cfunction` (`Int32`, `(Ptr{Cvoid},
Ptr{UInt8}, Ptr{UInt64}, Csize_t, Cint, Ptr{UInt8})`), or `C_NULL` to count only; the library
calls it on the calling thread, once per problem, with `userdata` as given.
"""
function shard_array_verify(array, on_problem, userdata, problems_out)
    ccall((:shard_array_verify, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{Cvoid}, Ptr{Cvoid}, Ref{UInt64}),
          array, on_problem, userdata, problems_out)
end

"""
`shard_status shard_array_verify_summary(const shard_array *array, shard_problem_fn
on_problem, void *userdata, shard_verify_summary *summary_out)`

`on_problem` as for `shard_array_verify`, or `C_NULL` to count only.
"""
function shard_array_verify_summary(array, on_problem, userdata, summary_out)
    ccall((:shard_array_verify_summary, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{Cvoid}, Ptr{Cvoid}, Ref{shard_verify_summary}),
          array, on_problem, userdata, summary_out)
end

"`shard_status shard_array_stored_shards(const shard_array *array, uint64_t *count_out)`"
function shard_array_stored_shards(array, count_out)
    ccall((:shard_array_stored_shards, libzarrshard), Cint,
          (Ptr{shard_array}, Ref{UInt64}), array, count_out)
end

"""
`shard_status shard_array_refs_parquet(const shard_array *array, const char *url_prefix,
size_t url_prefix_len, const char *name, size_t name_len, uint64_t record_size,
const shard_store_callbacks *out)`
"""
function shard_array_refs_parquet(array, url_prefix, url_prefix_len, name, name_len,
                                  record_size, out)
    ccall((:shard_array_refs_parquet, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t, UInt64,
           Ref{shard_store_callbacks}),
          array, url_prefix, url_prefix_len, name, name_len, record_size, out)
end

# ---------------------------------------------------------------------------------------------
# The library's stores, arrays by path, groups, the array spec and the library's file I/O.

"""
`shard_status shard_store_directory(const char *path, uint32_t flags,
shard_store_callbacks *store_out)`

Fills `store_out` with the library's directory store rooted at `path` (`flags`:
`SHARD_STORE_CREATE` or 0). Give the table back with `shard_store_release`.
"""
function shard_store_directory(path, flags, store_out)
    ccall((:shard_store_directory, libzarrshard), Cint,
          (Cstring, UInt32, Ref{shard_store_callbacks}), path, flags, store_out)
end

"`shard_status shard_store_memory(shard_store_callbacks *store_out)`"
function shard_store_memory(store_out)
    ccall((:shard_store_memory, libzarrshard), Cint, (Ref{shard_store_callbacks},), store_out)
end

"`void shard_store_release(shard_store_callbacks *store)`: NULL-safe; zeroes the table."
function shard_store_release(store)
    ccall((:shard_store_release, libzarrshard), Cvoid, (Ref{shard_store_callbacks},), store)
end

"""
`shard_status shard_array_create(const shard_store_callbacks *store, const char *path,
const char *metadata_json, size_t json_len, uint32_t flags, shard_array **array_out)`
"""
function shard_array_create(store, path, metadata_json, json_len, flags, array_out)
    ccall((:shard_array_create, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ptr{UInt8}, Csize_t, UInt32,
           Ref{Ptr{shard_array}}),
          store, path, metadata_json, json_len, flags, array_out)
end

"""
`shard_status shard_array_open_path(const shard_store_callbacks *store, const char *path,
shard_array **array_out)`
"""
function shard_array_open_path(store, path, array_out)
    ccall((:shard_array_open_path, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ref{Ptr{shard_array}}), store, path, array_out)
end

"`shard_status shard_array_rank(const shard_array *array, size_t *rank_out)`"
function shard_array_rank(array, rank_out)
    ccall((:shard_array_rank, libzarrshard), Cint,
          (Ptr{shard_array}, Ref{Csize_t}), array, rank_out)
end

"`shard_status shard_array_shape(const shard_array *array, uint64_t *shape_out, size_t rank)`"
function shard_array_shape(array, shape_out, rank)
    ccall((:shard_array_shape, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt64}, Csize_t), array, shape_out, rank)
end

"`shard_status shard_array_resize(shard_array *array, const uint64_t *shape, size_t rank)`"
function shard_array_resize(array, shape, rank)
    ccall((:shard_array_resize, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt64}, Csize_t), array, shape, rank)
end

"""
`shard_status shard_array_append(shard_array *array, size_t axis, const uint64_t *block_shape,
size_t rank, const uint8_t *data, size_t len)`
"""
function shard_array_append(array, axis, block_shape, rank, data, len)
    ccall((:shard_array_append, libzarrshard), Cint,
          (Ptr{shard_array}, Csize_t, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          array, axis, block_shape, rank, data, len)
end

"`shard_status shard_array_flush(shard_array *array)`"
function shard_array_flush(array)
    ccall((:shard_array_flush, libzarrshard), Cint, (Ptr{shard_array},), array)
end

"`shard_status shard_array_set_attributes(shard_array *array, const char *json, size_t json_len)`"
function shard_array_set_attributes(array, json, json_len)
    ccall((:shard_array_set_attributes, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt8}, Csize_t), array, json, json_len)
end

"""
`shard_status shard_array_attributes(const shard_array *array, char *buf, size_t len,
size_t *written_out)`: the attributes as JSON object text (size query with `(NULL, 0)`).
"""
function shard_array_attributes(array, buf, len, written_out)
    ccall((:shard_array_attributes, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt8}, Csize_t, Ref{Csize_t}), array, buf, len, written_out)
end

"""
`shard_status shard_array_metadata(const shard_array *array, char *buf, size_t len,
size_t *written_out)`: the array's `zarr.json` text (size query with `(NULL, 0)`).
"""
function shard_array_metadata(array, buf, len, written_out)
    ccall((:shard_array_metadata, libzarrshard), Cint,
          (Ptr{shard_array}, Ptr{UInt8}, Csize_t, Ref{Csize_t}), array, buf, len, written_out)
end

"""
`shard_status shard_array_compact(shard_array *array, uint32_t flags,
uint64_t *shards_rewritten_out, uint64_t *bytes_freed_out)`
"""
function shard_array_compact(array, flags, shards_rewritten_out, bytes_freed_out)
    ccall((:shard_array_compact, libzarrshard), Cint,
          (Ptr{shard_array}, UInt32, Ref{UInt64}, Ref{UInt64}),
          array, flags, shards_rewritten_out, bytes_freed_out)
end

"""
`shard_status shard_group_create(const shard_store_callbacks *store, const char *path,
const char *attributes_json, size_t json_len, uint32_t flags)`
"""
function shard_group_create(store, path, attributes_json, json_len, flags)
    ccall((:shard_group_create, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ptr{UInt8}, Csize_t, UInt32),
          store, path, attributes_json, json_len, flags)
end

"""
`shard_status shard_group_attributes(const shard_store_callbacks *store, const char *path,
char *buf, size_t len, size_t *written_out)`
"""
function shard_group_attributes(store, path, buf, len, written_out)
    ccall((:shard_group_attributes, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          store, path, buf, len, written_out)
end

"""
`shard_status shard_group_set_attributes(const shard_store_callbacks *store, const char *path,
const char *attributes_json, size_t json_len)`
"""
function shard_group_set_attributes(store, path, attributes_json, json_len)
    ccall((:shard_group_set_attributes, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ptr{UInt8}, Csize_t),
          store, path, attributes_json, json_len)
end

"`shard_status shard_array_spec_init(shard_array_spec *spec)`"
function shard_array_spec_init(spec)
    ccall((:shard_array_spec_init, libzarrshard), Cint, (Ref{shard_array_spec},), spec)
end

"""
`shard_status shard_array_spec_json(const shard_array_spec *spec, char *buf, size_t len,
size_t *written_out)`
"""
function shard_array_spec_json(spec, buf, len, written_out)
    ccall((:shard_array_spec_json, libzarrshard), Cint,
          (Ref{shard_array_spec}, Ptr{UInt8}, Csize_t, Ref{Csize_t}), spec, buf, len, written_out)
end

"""
`shard_status shard_array_create_spec(const shard_store_callbacks *store, const char *path,
const shard_array_spec *spec, uint32_t flags, shard_array **array_out)`
"""
function shard_array_create_spec(store, path, spec, flags, array_out)
    ccall((:shard_array_create_spec, libzarrshard), Cint,
          (Ref{shard_store_callbacks}, Cstring, Ref{shard_array_spec}, UInt32,
           Ref{Ptr{shard_array}}),
          store, path, spec, flags, array_out)
end

"""
`shard_status shard_io_file(const char *path, uint32_t flags, shard_io_callbacks *io_out)`

The library's file I/O for one shard object. Passing the table to `shard_open`/`shard_open_ex`
hands it over; otherwise give it back with `shard_io_release`.
"""
function shard_io_file(path, flags, io_out)
    ccall((:shard_io_file, libzarrshard), Cint,
          (Cstring, UInt32, Ref{shard_io_callbacks}), path, flags, io_out)
end

"`void shard_io_release(shard_io_callbacks *io)`: NULL-safe; calls destroy; zeroes the table."
function shard_io_release(io)
    ccall((:shard_io_release, libzarrshard), Cvoid, (Ref{shard_io_callbacks},), io)
end

"`shard_status shard_codec_from_zarr_json(const char *json, size_t json_len, shard_codec **codec_out)`"
function shard_codec_from_zarr_json(json, json_len, codec_out)
    ccall((:shard_codec_from_zarr_json, libzarrshard), Cint,
          (Ptr{UInt8}, Csize_t, Ref{Ptr{shard_codec}}),
          json, json_len, codec_out)
end

"""
`shard_status shard_codec_from_config(const char *config_json, size_t config_len,
const char *data_type, size_t data_type_len, const uint64_t *shard_shape, size_t rank,
const char *fill_value_json, size_t fill_value_len, shard_codec **codec_out)`
"""
function shard_codec_from_config(config_json, config_len, data_type, data_type_len,
                                 shard_shape, rank, fill_value_json, fill_value_len, codec_out)
    ccall((:shard_codec_from_config, libzarrshard), Cint,
          (Ptr{UInt8}, Csize_t, Ptr{UInt8}, Csize_t, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t,
           Ref{Ptr{shard_codec}}),
          config_json, config_len, data_type, data_type_len, shard_shape, rank,
          fill_value_json, fill_value_len, codec_out)
end

"`shard_status shard_codec_clone(const shard_codec *codec, shard_codec **codec_out)`"
function shard_codec_clone(codec, codec_out)
    ccall((:shard_codec_clone, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{Ptr{shard_codec}}), codec, codec_out)
end

"`shard_status shard_set_threads(size_t threads)`"
function shard_set_threads(threads)
    ccall((:shard_set_threads, libzarrshard), Cint, (Csize_t,), threads)
end

"`shard_status shard_get_threads(size_t *threads_out)`"
function shard_get_threads(threads_out)
    ccall((:shard_get_threads, libzarrshard), Cint, (Ref{Csize_t},), threads_out)
end

"`shard_status shard_set_memory_limit(uint64_t bytes)`"
function shard_set_memory_limit(bytes)
    ccall((:shard_set_memory_limit, libzarrshard), Cint, (UInt64,), bytes)
end

"`shard_status shard_get_memory_limit(uint64_t *bytes_out)`"
function shard_get_memory_limit(bytes_out)
    ccall((:shard_get_memory_limit, libzarrshard), Cint, (Ref{UInt64},), bytes_out)
end

"`shard_status shard_release_memory(uint64_t *bytes_out, size_t *contexts_out)`"
function shard_release_memory(bytes_out, contexts_out)
    ccall((:shard_release_memory, libzarrshard), Cint, (Ref{UInt64}, Ref{Csize_t}), bytes_out, contexts_out)
end

"`shard_status shard_set_coalesce_gap(const shard_handle *shard, uint64_t gap)`"
function shard_set_coalesce_gap(shard, gap)
    ccall((:shard_set_coalesce_gap, libzarrshard), Cint, (Ptr{shard_handle}, UInt64), shard, gap)
end

"`void shard_codec_free(shard_codec *codec)`"
function shard_codec_free(codec)
    ccall((:shard_codec_free, libzarrshard), Cvoid, (Ptr{shard_codec},), codec)
end

"`shard_status shard_codec_rank(const shard_codec *codec, size_t *rank_out)`"
function shard_codec_rank(codec, rank_out)
    ccall((:shard_codec_rank, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{Csize_t}), codec, rank_out)
end

"`shard_status shard_codec_shard_shape(const shard_codec *codec, uint64_t *shape_out, size_t rank)`"
function shard_codec_shard_shape(codec, shape_out, rank)
    ccall((:shard_codec_shard_shape, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t), codec, shape_out, rank)
end

"`shard_status shard_codec_inner_chunk_shape(const shard_codec *codec, uint64_t *shape_out, size_t rank)`"
function shard_codec_inner_chunk_shape(codec, shape_out, rank)
    ccall((:shard_codec_inner_chunk_shape, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t), codec, shape_out, rank)
end

"`shard_status shard_codec_chunks_per_shard(const shard_codec *codec, uint64_t *shape_out, size_t rank)`"
function shard_codec_chunks_per_shard(codec, shape_out, rank)
    ccall((:shard_codec_chunks_per_shard, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t), codec, shape_out, rank)
end

"`shard_status shard_codec_num_chunks(const shard_codec *codec, uint64_t *count_out)`"
function shard_codec_num_chunks(codec, count_out)
    ccall((:shard_codec_num_chunks, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{UInt64}), codec, count_out)
end

"`shard_status shard_codec_inner_chunk_nbytes(const shard_codec *codec, size_t *nbytes_out)`"
function shard_codec_inner_chunk_nbytes(codec, nbytes_out)
    ccall((:shard_codec_inner_chunk_nbytes, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{Csize_t}), codec, nbytes_out)
end

"`shard_status shard_codec_index_nbytes(const shard_codec *codec, uint64_t *nbytes_out)`"
function shard_codec_index_nbytes(codec, nbytes_out)
    ccall((:shard_codec_index_nbytes, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{UInt64}), codec, nbytes_out)
end

"`shard_status shard_codec_element_nbytes(const shard_codec *codec, size_t *nbytes_out)`"
function shard_codec_element_nbytes(codec, nbytes_out)
    ccall((:shard_codec_element_nbytes, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{Csize_t}), codec, nbytes_out)
end

"`shard_status shard_codec_fill_value(const shard_codec *codec, uint8_t *buf, size_t len)`"
function shard_codec_fill_value(codec, buf, len)
    ccall((:shard_codec_fill_value, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt8}, Csize_t), codec, buf, len)
end

"`shard_status shard_codec_data_type(const shard_codec *codec, char *buf, size_t len, size_t *written_out)`"
function shard_codec_data_type(codec, buf, len, written_out)
    ccall((:shard_codec_data_type, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          codec, buf, len, written_out)
end

"`shard_status shard_codec_array_shape(const shard_codec *codec, uint64_t *shape_out, size_t rank)`"
function shard_codec_array_shape(codec, shape_out, rank)
    ccall((:shard_codec_array_shape, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t), codec, shape_out, rank)
end

"`shard_status shard_codec_grid_shape(const shard_codec *codec, uint64_t *shape_out, size_t rank)`"
function shard_codec_grid_shape(codec, shape_out, rank)
    ccall((:shard_codec_grid_shape, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t), codec, shape_out, rank)
end

"""
`shard_status shard_codec_shard_key(const shard_codec *codec, const uint64_t *coords,
size_t rank, char *buf, size_t len, size_t *written_out)`
"""
function shard_codec_shard_key(codec, coords, rank, buf, len, written_out)
    ccall((:shard_codec_shard_key, libzarrshard), Cint,
          (Ptr{shard_codec}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          codec, coords, rank, buf, len, written_out)
end

"""
`shard_status shard_open(const shard_codec *codec, const shard_io_callbacks *io,
uint32_t mode, shard_handle **shard_out)`
"""
function shard_open(codec, io, mode, shard_out)
    ccall((:shard_open, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{shard_io_callbacks}, UInt32, Ref{Ptr{shard_handle}}),
          codec, io, mode, shard_out)
end

"""
`shard_status shard_open_ex(const shard_codec *codec, const shard_io_callbacks *io,
uint32_t mode, uint32_t flags, shard_handle **shard_out)`
"""
function shard_open_ex(codec, io, mode, flags, shard_out)
    ccall((:shard_open_ex, libzarrshard), Cint,
          (Ptr{shard_codec}, Ref{shard_io_callbacks}, UInt32, UInt32, Ref{Ptr{shard_handle}}),
          codec, io, mode, flags, shard_out)
end

"`void shard_close(shard_handle *shard)`"
function shard_close(shard)
    ccall((:shard_close, libzarrshard), Cvoid, (Ptr{shard_handle},), shard)
end

"""
`shard_status shard_read_chunk(const shard_handle *shard, const uint64_t *coords,
size_t rank, uint8_t *buf, size_t len)`
"""
function shard_read_chunk(shard, coords, rank, buf, len)
    ccall((:shard_read_chunk, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          shard, coords, rank, buf, len)
end

"""
`shard_status shard_read_chunks(const shard_handle *shard, const uint64_t *coords,
size_t count, size_t rank, uint8_t *buf, size_t len)`
"""
function shard_read_chunks(shard, coords, count, rank, buf, len)
    ccall((:shard_read_chunks, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Csize_t, Ptr{UInt8}, Csize_t),
          shard, coords, count, rank, buf, len)
end

"""
`shard_status shard_read_chunk_raw(const shard_handle *shard, const uint64_t *coords,
size_t rank, uint8_t *buf, size_t len, size_t *nbytes_out)`
"""
function shard_read_chunk_raw(shard, coords, rank, buf, len, nbytes_out)
    ccall((:shard_read_chunk_raw, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t, Ref{Csize_t}),
          shard, coords, rank, buf, len, nbytes_out)
end

"""
`shard_status shard_chunk_info(const shard_handle *shard, const uint64_t *coords,
size_t rank, shard_chunk_location *info_out)`
"""
function shard_chunk_info(shard, coords, rank, info_out)
    ccall((:shard_chunk_info, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Ref{shard_chunk_location}),
          shard, coords, rank, info_out)
end

"""
`shard_status shard_write_chunk(const shard_handle *shard, const uint64_t *coords,
size_t rank, const uint8_t *data, size_t len)`
"""
function shard_write_chunk(shard, coords, rank, data, len)
    ccall((:shard_write_chunk, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          shard, coords, rank, data, len)
end

"""
`shard_status shard_write_chunk_raw(const shard_handle *shard, const uint64_t *coords,
size_t rank, const uint8_t *data, size_t len)`
"""
function shard_write_chunk_raw(shard, coords, rank, data, len)
    ccall((:shard_write_chunk_raw, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Ptr{UInt8}, Csize_t),
          shard, coords, rank, data, len)
end

"`shard_status shard_erase_chunk(const shard_handle *shard, const uint64_t *coords, size_t rank)`"
function shard_erase_chunk(shard, coords, rank)
    ccall((:shard_erase_chunk, libzarrshard), Cint,
          (Ptr{shard_handle}, Ptr{UInt64}, Csize_t), shard, coords, rank)
end

"`shard_status shard_finalize(const shard_handle *shard, uint64_t *size_out)`"
function shard_finalize(shard, size_out)
    ccall((:shard_finalize, libzarrshard), Cint,
          (Ptr{shard_handle}, Ref{UInt64}), shard, size_out)
end

end # module LibZarrShard
