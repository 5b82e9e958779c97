"""
    ZarrShard

Julia binding of zarrshard (Zarr v3 sharding, `sharding_indexed`) over its C ABI.

Two layers, as in LibGit2 and CodecZstd.jl: [`LibZarrShard`](@ref) is the raw `ccall` layer
(C types, C order, 0-based, `Cint` statuses); this module is the Julian layer: the library's
stores ([`DirectoryStore`](@ref), [`MemoryStore`](@ref)), arrays made ([`create`](@ref)) and
opened (`open(store, path)`) at a path of a store, grown ([`append!`](@ref), `resize!`) and
read and written by region ([`ShardArray`](@ref)), groups ([`create_group`](@ref)),
[`Codec`](@ref) and [`Shard`](@ref) objects with finalizers and an idempotent `close`,
do-block `open`, [`ZarrShardError`](@ref) exceptions, and storage written in Julia (custom
storage: a [`ShardIO`](@ref) object, a [`HostStore`](@ref)). Files are the library's own file
I/O ([`DirectoryStore`](@ref), [`ShardFile`](@ref)).

# Dimension order and indexing (read this once)

Zarr stores inner chunks in C order (row-major, last index fastest). Julia arrays are
column-major (first index fastest) and 1-based. This binding follows Zarr.jl and HDF5.jl:
**every Julia-side shape and coordinate is in reversed dimension order and 1-based**, so that
no data is ever copied or permuted:

| what                                  | C / Zarr (`zarr.json`, raw layer) | Julian layer                 |
|:--------------------------------------|:----------------------------------|:-----------------------------|
| inner chunk shape                     | `(d0, d1, …, dn)`                 | `(dn, …, d1, d0)`            |
| inner chunk coordinates               | `[i0, i1, …, in]`, 0-based        | `(in+1, …, i1+1, i0+1)`      |
| element `[a][b]` of a rank-2 chunk    | `buf[a*d1 + b]`                   | `A[b+1, a+1]`                |
| shard grid coordinates (`shard_key`)  | `c/i0/i1`, 0-based                | `(i1+1, i0+1)`               |

`read_chunk` returns `reshape(bytes, reverse(c_shape)...)`-shaped data in the codec's element
type: the very bytes the library decoded, so `A[j, i] == C[i][j]` (0-based C, shifted by one).
Use `permutedims(A, ndims(A):-1:1)` for the C-shaped view of the same values. JSON text
(`zarr.json`, a sharding configuration) is Zarr's and stays in C order.

# Ownership of the `ShardIO`

The `ShardIO` given to `Shard`/`open` belongs to the shard from then on: the shard keeps it
alive (its `userdata` pointer points at it), and the C library calls `release!(io)` exactly
once, from `close` (or the finalizer). If opening fails, the binding calls `release!(io)`
itself (the C contract leaves `userdata` with the host after a failed open).
"""
module ZarrShard

include("LibZarrShard.jl")
const L = LibZarrShard

export Codec, Shard, ZarrShardError, ObjectNotFound,
       ShardIO, ShardFile, MemoryShardIO,
       read_at!, write_at, objectsize, truncate_object!, remove_object!, release!, commit!,
       writable, contents,
       read_chunk, read_chunk!, read_chunks, read_chunk_raw, chunk_info,
       write_chunk, write_chunk_raw, erase_chunk, finalize_shard!,
       data_type, shard_shape, inner_chunk_shape, chunks_per_shard, num_chunks,
       inner_chunk_nbytes, index_nbytes, element_nbytes, fill_value,
       array_shape, grid_shape, shard_key,
       ShardArray, Store, HostStore, DictStore, DirectoryStore, MemoryStore,
       create, create_group, metadata_json, attributes, set_attributes!, compact!,
       metadata, group_attributes, set_group_attributes!, set_index_cache!, forget_cached_indexes!,
       list_keys, read_region, read_region!, write_region, kerchunk_refs, kerchunk_refs_parquet,
       verify, Problem,
       set_coalesce_gap!,
       set_threads!, threads, memory_limit, set_memory_limit!, release_memory

# ---------------------------------------------------------------------------------------------
# Errors

"""
    ZarrShardError(status, message, io_code, cause)

A failed `shard_*` call. `status` is the C `shard_status` (`Int32`; see
`LibZarrShard.shard_status`), `message` the text of `shard_last_error`, `io_code` the value
of `shard_last_io_code` (the code a failing I/O callback returned; 0 otherwise) and `cause`
the Julia exception of the callback that returned that code (the first such, when the library
went on after it, e.g. to roll an append back), or `nothing`.
"""
struct ZarrShardError <: Exception
    status::Int32
    message::String
    io_code::Int32
    cause::Any
end

"""
    ZarrShardError(status)

Build the exception for a failed call: reads `shard_last_error` and `shard_last_io_code`.
Call it right after the failing call, on the same task (no yield in between): the C library
keeps the message per OS thread.
"""
function ZarrShardError(status::Integer)
    message = last_error_message()
    io_code = L.shard_last_io_code()
    return ZarrShardError(Int32(status), message, io_code, _take_callback_exception(io_code))
end

"The name of a status (`:SHARD_ERR_IO`), or `Symbol(\"status <n>\")` for one this binding does not know."
function status_name(status::Integer)
    for s in instances(L.shard_status)
        Int32(s) == status && return Symbol(s)
    end
    return Symbol("status ", status)
end

function Base.showerror(io::IO, e::ZarrShardError)
    print(io, "ZarrShardError: ", status_name(e.status), ": ", e.message)
    e.io_code == 0 || print(io, " (I/O code ", e.io_code, ")")
    if e.cause !== nothing
        print(io, "\ncaused by: ")
        showerror(io, e.cause)
    end
end

"""
    last_error_message() -> String

The message of the last failed call on this thread (`shard_last_error`): a size query, then
the copy. Empty when no call failed.
"""
function last_error_message()
    n = Ref{Csize_t}(0)
    L.shard_last_error(C_NULL, 0, n) == Cint(0) || return ""
    n[] == 0 && return ""
    buf = Vector{UInt8}(undef, n[] + 1)
    L.shard_last_error(buf, length(buf), n) == Cint(0) || return ""
    return String(resize!(buf, min(n[], length(buf) - 1)))
end

"""
    @check call

Run a raw `shard_*` call that returns a `shard_status`; throw [`ZarrShardError`](@ref) unless
it returned `SHARD_OK`. Evaluates to `nothing`. The callback exceptions of earlier calls are
forgotten first, so the error's `cause` is always from this call.
"""
macro check(expr)
    return quote
        _clear_callback_exceptions()
        local status = $(esc(expr))
        status == Cint(0) || throw(ZarrShardError(status))
        nothing
    end
end

"""
    memory_limit() -> UInt64

The library's memory limit (`shard_get_memory_limit`): the most bytes one buffer the library
allocates for data may take; the library also holds `read_chunk_raw`'s size query to it, so
the buffer [`read_chunk_raw`](@ref) sizes from an index entry is bounded too.
`ZARRSHARD_MEMORY_LIMIT` bytes, else 4 GiB, unless [`set_memory_limit!`](@ref) changed it.
For hosts that size their own buffers or report the setting. Thread-safe; throws
`ZarrShardError` only if the library cannot report it.
"""
function memory_limit()
    n = Ref{UInt64}(0)
    @check L.shard_get_memory_limit(n)
    return n[]
end

"""
    set_memory_limit!(bytes::Integer)

Set the library's memory limit (`shard_set_memory_limit`); 0 restores the default.
Process-wide; takes effect for calls that start afterwards; thread-safe. Throws
`ArgumentError` for a negative value.
"""
function set_memory_limit!(bytes::Integer)
    bytes < 0 && throw(ArgumentError("a memory limit is 0 (the default) or more bytes, not $bytes"))
    @check L.shard_set_memory_limit(bytes > typemax(UInt64) ? typemax(UInt64) : UInt64(bytes))
end

"""
    release_memory() -> NamedTuple{(:bytes, :contexts)}

Free the memory the library keeps between calls so that no inner chunk allocates
(`shard_release_memory`): the free list of encode segments (up to 4 MiB per library thread),
the buffers region reads fetched shards into (up to 8 MiB per library thread, 64 MiB in all), and the codec
contexts (zstd, gzip) and scratch chunk of the calling thread and of every
library thread; with `set_threads!(1)` in force, the library's threads (which only sleep then)
are ended too. For a session done writing or reading for a while; later calls rebuild what
they need. Other threads keep theirs until they exit or call this themselves; memory in use by
a call in progress is not touched. Returns `bytes`, the library's own buffers freed (exact),
and `contexts`, the codec contexts freed (counted: libdeflate does not report its size).
Thread-safe; throws `ZarrShardError` only for a library bug (`SHARD_ERR_PANIC`).
"""
function release_memory()
    bytes = Ref{UInt64}(0)
    contexts = Ref{Csize_t}(0)
    @check L.shard_release_memory(bytes, contexts)
    return (bytes = bytes[], contexts = Int(contexts[]))
end

"The library version (`shard_version`)."
version() = unsafe_string(L.shard_version())

"""
    set_threads!(n::Integer)

Set the library's worker threads for encoding and decoding inner chunks (`shard_set_threads`):
0 = one per core (the default, or `ZARRSHARD_THREADS`), 1 = the calling thread only, for a
host that runs its own threads. Process-wide; takes effect for calls that start afterwards;
thread-safe. Throws `ArgumentError` for a negative `n` and [`ZarrShardError`](@ref)
(`SHARD_ERR_INVALID_ARGUMENT`) above `LibZarrShard.SHARD_MAX_THREADS` (1024) or when the
threads cannot be started; the setting is then unchanged.
"""
function set_threads!(n::Integer)
    n < 0 && throw(ArgumentError("threads must be 0 (one per core) or more, not $n"))
    # Past what size_t holds is past the maximum too: refused by the library.
    @check L.shard_set_threads(n > typemax(Csize_t) ? typemax(Csize_t) : Csize_t(n))
end

"""
    threads() -> Int

The number of threads the library encodes and decodes with now (`shard_get_threads`; the
default resolved, at least 1). Thread-safe.
"""
function threads()
    n = Ref{Csize_t}(0)
    @check L.shard_get_threads(n)
    return Int(n[])
end

"A static description of a status (`shard_status_str`)."
status_string(status::Integer) = unsafe_string(L.shard_status_str(status % UInt32))

# ---------------------------------------------------------------------------------------------
# Dimension order: Julia order and 1-based outside, C order and 0-based inside.

"C-order `UInt64` shape (e.g. from the library) -> Julia-order `Int` tuple."
julia_shape(v::AbstractVector{UInt64}) = ntuple(i -> Int(v[length(v) - i + 1]), length(v))

"Julia-order shape -> C-order `UInt64` vector."
function c_shape(shape)
    t = Tuple(shape)
    return UInt64[t[length(t) - k + 1] for k in 1:length(t)]
end

"""
    c_coords(rank, coords) -> Vector{UInt64}

1-based Julia-order coordinates (tuple, vector or `CartesianIndex`) -> 0-based C-order ones.
"""
function c_coords(rank::Integer, coords)
    t = Tuple(coords)
    length(t) == rank ||
        throw(DimensionMismatch("$(length(t)) coordinates given for rank $rank"))
    v = Vector{UInt64}(undef, rank)
    for k in 1:rank
        x = t[rank - k + 1]
        x >= 1 || throw(ArgumentError("coordinates are 1-based, got $t"))
        v[k] = UInt64(x - 1)
    end
    return v
end

# ---------------------------------------------------------------------------------------------
# Codec

const ELTYPES = Dict{String,DataType}(
    "bool" => Bool, "int8" => Int8, "int16" => Int16, "int32" => Int32, "int64" => Int64,
    "uint8" => UInt8, "uint16" => UInt16, "uint32" => UInt32, "uint64" => UInt64,
    "float16" => Float16, "float32" => Float32, "float64" => Float64,
    "complex64" => ComplexF32, "complex128" => ComplexF64,
)

"The Julia element type of a Zarr data type; raw bits `r<N>` are `NTuple{N÷8,UInt8}`."
function julia_eltype(name::AbstractString)
    T = get(ELTYPES, name, nothing)
    T === nothing || return T
    if startswith(name, "r")
        bits = tryparse(Int, name[2:end])
        bits !== nothing && bits > 0 && bits % 8 == 0 && return NTuple{bits ÷ 8,UInt8}
    end
    throw(ArgumentError("zarrshard data type $(repr(name)) has no Julia element type"))
end

"""
    Codec(zarr_json::AbstractString)
    Codec(config_json, data_type, shard_shape, fill_value_json)

A shard layout (`shard_codec`): from the text of a Zarr v3 array's `zarr.json`
(`shard_codec_from_zarr_json`), or from a bare `sharding_indexed` configuration object, a data
type name (`"uint16"`), the shard shape **in Julia order** and the fill value as JSON
(`shard_codec_from_config`). JSON text is Zarr's own, in C order.

Immutable and shareable between tasks and threads. `close(codec)` frees it (idempotent; also
done by the finalizer); shards opened with it stay valid.

The constructor makes these C calls, in this order: the constructor call, then
`shard_codec_rank`, `shard_codec_data_type` (size query, then copy),
`shard_codec_inner_chunk_shape`, `shard_codec_inner_chunk_nbytes`; the results are cached.
Every other accessor calls the library when it is called.
"""
mutable struct Codec
    ptr::Ptr{L.shard_codec}
    rank::Int
    data_type::String
    eltype::DataType
    chunk_shape_c::Vector{UInt64}   # inner chunk shape, C order
    chunk_nbytes::Int

    function Codec(ptr::Ptr{L.shard_codec})
        c = new(ptr, 0, "", Nothing, UInt64[], 0)
        finalizer(_free_codec!, c)
        try
            _describe!(c)
        catch
            close(c)
            rethrow()
        end
        return c
    end
end

function Codec(zarr_json::AbstractString)
    json = String(zarr_json)
    out = Ref{Ptr{L.shard_codec}}(C_NULL)
    @check L.shard_codec_from_zarr_json(json, sizeof(json), out)
    return Codec(out[])
end

function Codec(config_json::AbstractString, data_type::AbstractString, shard_shape,
               fill_value_json::AbstractString)
    config = String(config_json)
    dtype = String(data_type)
    fill = String(fill_value_json)
    shape = c_shape(shard_shape)
    out = Ref{Ptr{L.shard_codec}}(C_NULL)
    @check L.shard_codec_from_config(config, sizeof(config), dtype, sizeof(dtype),
                                     shape, length(shape), fill, sizeof(fill), out)
    return Codec(out[])
end

function _describe!(c::Codec)
    rank = Ref{Csize_t}(0)
    @check L.shard_codec_rank(c, rank)
    c.rank = Int(rank[])
    n = Ref{Csize_t}(0)
    @check L.shard_codec_data_type(c, C_NULL, 0, n)
    name = Vector{UInt8}(undef, n[] + 1)
    @check L.shard_codec_data_type(c, name, length(name), n)
    c.data_type = String(resize!(name, n[]))
    c.eltype = julia_eltype(c.data_type)
    c.chunk_shape_c = zeros(UInt64, c.rank)
    @check L.shard_codec_inner_chunk_shape(c, c.chunk_shape_c, length(c.chunk_shape_c))
    nbytes = Ref{Csize_t}(0)
    @check L.shard_codec_inner_chunk_nbytes(c, nbytes)
    c.chunk_nbytes = Int(nbytes[])
    expected = prod(Int.(c.chunk_shape_c)) * sizeof(c.eltype)   # prod(Int[]) == 1
    c.chunk_nbytes == expected || error("zarrshard reports $(c.chunk_nbytes)-byte inner " *
                                        "chunks, the element type and shape give $expected")
    return c
end

function _free_codec!(c::Codec)
    p = c.ptr
    c.ptr = C_NULL
    p == C_NULL || L.shard_codec_free(p)
    return nothing
end

"Free the codec (`shard_codec_free`). Idempotent. Do not close a codec other tasks are using."
Base.close(c::Codec) = _free_codec!(c)
Base.isopen(c::Codec) = c.ptr != C_NULL

# Passing a Codec to a raw wrapper roots it for the duration of the ccall.
function Base.unsafe_convert(::Type{Ptr{L.shard_codec}}, c::Codec)
    p = c.ptr
    p == C_NULL && throw(ArgumentError("the Codec is closed"))
    return p
end

Base.ndims(c::Codec) = c.rank
"The element type of decoded chunks."
Base.eltype(c::Codec) = c.eltype
"The Zarr data type name, e.g. `\"uint16\"` (cached)."
data_type(c::Codec) = c.data_type

"Inner chunk shape in Julia order, from the cache (no C call)."
chunk_dims(c::Codec) = julia_shape(c.chunk_shape_c)

function _shape_query(f, c::Codec)
    v = zeros(UInt64, c.rank)
    @check f(c, v, length(v))
    return julia_shape(v)
end

"Shard shape, Julia order (`shard_codec_shard_shape`)."
shard_shape(c::Codec) = _shape_query(L.shard_codec_shard_shape, c)
"Inner chunk shape, Julia order (`shard_codec_inner_chunk_shape`)."
inner_chunk_shape(c::Codec) = _shape_query(L.shard_codec_inner_chunk_shape, c)
"Inner chunks per shard along each dimension, Julia order (`shard_codec_chunks_per_shard`)."
chunks_per_shard(c::Codec) = _shape_query(L.shard_codec_chunks_per_shard, c)
"Array shape, Julia order; codec from `zarr.json` only (`shard_codec_array_shape`)."
array_shape(c::Codec) = _shape_query(L.shard_codec_array_shape, c)
"Shards per dimension, Julia order; codec from `zarr.json` only (`shard_codec_grid_shape`)."
grid_shape(c::Codec) = _shape_query(L.shard_codec_grid_shape, c)

"Inner chunks per shard (`shard_codec_num_chunks`)."
function num_chunks(c::Codec)
    n = Ref{UInt64}(0)
    @check L.shard_codec_num_chunks(c, n)
    return Int(n[])
end

"Decoded bytes of one inner chunk (`shard_codec_inner_chunk_nbytes`)."
function inner_chunk_nbytes(c::Codec)
    n = Ref{Csize_t}(0)
    @check L.shard_codec_inner_chunk_nbytes(c, n)
    return Int(n[])
end

"Encoded bytes of the shard index (`shard_codec_index_nbytes`)."
function index_nbytes(c::Codec)
    n = Ref{UInt64}(0)
    @check L.shard_codec_index_nbytes(c, n)
    return Int(n[])
end

"Bytes of one element (`shard_codec_element_nbytes`)."
function element_nbytes(c::Codec)
    n = Ref{Csize_t}(0)
    @check L.shard_codec_element_nbytes(c, n)
    return Int(n[])
end

"The fill value as an `eltype(c)` (`shard_codec_element_nbytes`, `shard_codec_fill_value`)."
function fill_value(c::Codec)
    buf = Vector{UInt8}(undef, element_nbytes(c))
    @check L.shard_codec_fill_value(c, buf, length(buf))
    return reinterpret(c.eltype, buf)[1]
end

"""
    shard_key(codec, coords) -> String

The storage key (`"c/0/1"`) of the shard at grid coordinates `coords`: 1-based, Julia order,
so `shard_key(codec, (2, 1)) == "c/0/1"` (`shard_codec_shard_key`: size query, then copy).
"""
function shard_key(c::Codec, coords)
    cc = c_coords(c.rank, coords)
    n = Ref{Csize_t}(0)
    @check L.shard_codec_shard_key(c, cc, length(cc), C_NULL, 0, n)
    buf = Vector{UInt8}(undef, n[] + 1)
    @check L.shard_codec_shard_key(c, cc, length(cc), buf, length(buf), n)
    return String(resize!(buf, n[]))
end

function Base.show(io::IO, c::Codec)
    print(io, "ZarrShard.Codec(", c.data_type, ", inner chunk ", chunk_dims(c))
    isopen(c) || print(io, ", closed")
    print(io, ")")
end

# ---------------------------------------------------------------------------------------------
# Storage (ShardIO, the callbacks, ShardFile, MemoryShardIO, host stores)

include("io.jl")

# ---------------------------------------------------------------------------------------------
# Shard

const MODES = Dict{Symbol,L.shard_mode}(
    :read => L.SHARD_MODE_READ,
    :buffered => L.SHARD_MODE_WRITE_BUFFERED,
    :streaming => L.SHARD_MODE_WRITE_STREAMING,
    :append => L.SHARD_MODE_UPDATE_APPEND,
    :in_place => L.SHARD_MODE_UPDATE_IN_PLACE,
)

"""
    Shard(codec, io::ShardIO; mode = :read, morton = false, store_fill_chunks = false)
    Shard(codec, file::ShardFile; kwargs...)
    open(codec, io; kwargs...) -> Shard
    open(f, codec, io; kwargs...)

Open the shard object stored in `io` with `codec`'s layout (`shard_open_ex`). `mode` is
`:read`, `:buffered`, `:streaming` (new shard), `:append` or `:in_place` (update an existing
one); `morton` and `store_fill_chunks` are the `SHARD_FLAG_*` flags.

`io` belongs to the shard from this call on (see the module docstring): keep using it only
through the shard; `close(shard)` calls `release!(io)`. A [`ShardFile`](@ref) (the library's
file I/O) is handed over likewise, and given back if the open fails. Reads may run on many tasks and
threads at once; writes on one at a time; `close` must not race any other call.

The do-block form closes the shard when `f` returns or throws, and for a write mode calls
[`finalize_shard!`](@ref) first if `f` returned normally and did not finalize itself.
"""
mutable struct Shard
    ptr::Ptr{L.shard_handle}
    codec::Codec
    io::Union{ShardIO,ShardFile}   # a ShardIO: the handle's userdata points here (kept alive)
    mode::Symbol
    finalized::Bool
    lock::ReentrantLock
end

function Shard(codec::Codec, io::ShardIO; mode::Symbol = :read, morton::Bool = false,
               store_fill_chunks::Bool = false)
    m = get(MODES, mode, nothing)
    problem = m === nothing ? "unknown mode $(repr(mode)); one of $(sort!(collect(keys(MODES))))" :
              !ismutable(io) ? "a ShardIO must be a mutable struct (its address is the userdata)" :
              (mode !== :read && !writable(io)) ? "mode $(repr(mode)) needs a writable ShardIO" :
              nothing
    if problem !== nothing
        _release_quietly(io)
        throw(ArgumentError(problem))
    end
    flags = (morton ? L.SHARD_FLAG_MORTON_ORDER : UInt32(0)) |
            (store_fill_chunks ? L.SHARD_FLAG_STORE_FILL_CHUNKS : UInt32(0))
    out = Ref{Ptr{L.shard_handle}}(C_NULL)
    shard = GC.@preserve io begin
        table = callback_table(io, pointer_from_objref(io), mode !== :read)
        _clear_callback_exceptions()
        status = L.shard_open_ex(codec, Ref(table), UInt32(m), flags, out)
        if status != Cint(0)
            err = ZarrShardError(status)
            _release_quietly(io)   # a failed open leaves userdata with the host: us
            throw(err)
        end
        s = Shard(out[], codec, io, mode, false, ReentrantLock())
        finalizer(_close_handle!, s)
        s
    end
    return shard
end

function Shard(codec::Codec, file::ShardFile; mode::Symbol = :read, morton::Bool = false,
               store_fill_chunks::Bool = false)
    m = get(MODES, mode, nothing)
    if m === nothing
        close(file)
        throw(ArgumentError("unknown mode $(repr(mode)); one of $(sort!(collect(keys(MODES))))"))
    end
    flags = (morton ? L.SHARD_FLAG_MORTON_ORDER : UInt32(0)) |
            (store_fill_chunks ? L.SHARD_FLAG_STORE_FILL_CHUNKS : UInt32(0))
    out = Ref{Ptr{L.shard_handle}}(C_NULL)
    table = Ref(_hand_over!(file))   # the handle's from a successful open on
    _clear_callback_exceptions()
    status = L.shard_open_ex(codec, table, UInt32(m), flags, out)
    if status != Cint(0)
        err = ZarrShardError(status)
        L.shard_io_release(table)    # a failed open leaves the table with the host
        throw(err)
    end
    s = Shard(out[], codec, file, mode, false, ReentrantLock())
    finalizer(_close_handle!, s)
    return s
end

Base.open(codec::Codec, io::Union{ShardIO,ShardFile}; kwargs...) = Shard(codec, io; kwargs...)

function Base.open(f::Function, codec::Codec, io::Union{ShardIO,ShardFile}; kwargs...)
    shard = Shard(codec, io; kwargs...)
    try
        result = f(shard)
        if shard.mode !== :read && !shard.finalized && isopen(shard)
            finalize_shard!(shard)
        end
        return result
    finally
        close(shard)
    end
end

# Finalizer: nothing else can reach the object, so no lock.
function _close_handle!(s::Shard)
    p = s.ptr
    s.ptr = C_NULL
    p == C_NULL || L.shard_close(p)   # calls release!(s.io) through the destroy callback
    return nothing
end

"""
    close(shard)

Close the handle (`shard_close`), which releases its `ShardIO`. Idempotent. A write shard
that was not finalized is discarded (a `ShardFile` deletes its temporary file).
"""
function Base.close(s::Shard)
    lock(s.lock)
    try
        _close_handle!(s)
    finally
        unlock(s.lock)
    end
    return nothing
end

Base.isopen(s::Shard) = s.ptr != C_NULL

function Base.unsafe_convert(::Type{Ptr{L.shard_handle}}, s::Shard)
    p = s.ptr
    p == C_NULL && throw(ArgumentError("the Shard is closed"))
    return p
end

function Base.show(io::IO, s::Shard)
    print(io, "ZarrShard.Shard(", s.mode, ", ", s.codec.data_type, ", inner chunk ",
          chunk_dims(s.codec), isopen(s) ? "" : ", closed", ")")
end

"""
    read_chunk(shard, coords) -> Array{T,N}

Decode the inner chunk at `coords` (1-based, Julia order) into a new
`Array{eltype(codec)}` of size `reverse(C inner chunk shape)`: `A[j, i]` is C element
`[i-1][j-1]`. An empty chunk reads as the fill value. One `shard_read_chunk` call.
"""
function read_chunk(s::Shard, coords)
    c = s.codec
    A = Array{c.eltype}(undef, chunk_dims(c))
    return read_chunk!(A, s, coords)
end

"""
    read_chunk!(A, shard, coords) -> A

[`read_chunk`](@ref) into an existing `Array` of the chunk's Julia shape and element type.
"""
function read_chunk!(A::Array, s::Shard, coords)
    c = s.codec
    eltype(A) === c.eltype ||
        throw(ArgumentError("element type $(eltype(A)) given, the codec's is $(c.eltype)"))
    size(A) == chunk_dims(c) ||
        throw(DimensionMismatch("array of size $(size(A)), inner chunks are $(chunk_dims(c))"))
    cc = c_coords(c.rank, coords)
    GC.@preserve A begin
        @check L.shard_read_chunk(s, cc, length(cc), Ptr{UInt8}(pointer(A)), sizeof(A))
    end
    return A
end

"""
    read_chunks(shard, coords_list) -> Array{T,N+1}

Decode many inner chunks in one call (`shard_read_chunks`): chunk `k` of the list is
`A[.., k]` (the last dimension counts the chunks).
"""
function read_chunks(s::Shard, coords_list)
    c = s.codec
    list = collect(coords_list)
    count = length(list)
    cc = Vector{UInt64}(undef, count * c.rank)
    for (k, coords) in enumerate(list)
        cc[(k - 1) * c.rank + 1:k * c.rank] = c_coords(c.rank, coords)
    end
    A = Array{c.eltype}(undef, (chunk_dims(c)..., count))
    GC.@preserve A begin
        @check L.shard_read_chunks(s, cc, count, c.rank, Ptr{UInt8}(pointer(A)), sizeof(A))
    end
    return A
end

"""
    read_chunk_raw(shard, coords) -> Vector{UInt8}

The encoded bytes of an inner chunk, empty for an empty chunk (`shard_read_chunk_raw`: size
query, then copy). The size comes from the index, which a damaged or hostile shard may fill
with anything; the library holds its size query to its memory limit ([`memory_limit`](@ref)),
so an entry naming more throws `ZarrShardError` (`SHARD_ERR_INVALID_ARGUMENT`, message
`memory limit: the encoded bytes of inner chunk …`) before anything is allocated. Read
shards only; thread-safe.
"""
function read_chunk_raw(s::Shard, coords)
    cc = c_coords(s.codec.rank, coords)
    n = Ref{Csize_t}(0)
    @check L.shard_read_chunk_raw(s, cc, length(cc), C_NULL, 0, n)   # held to the memory limit
    buf = Vector{UInt8}(undef, n[])
    isempty(buf) && return buf
    @check L.shard_read_chunk_raw(s, cc, length(cc), buf, length(buf), n)
    return resize!(buf, n[])
end

"""
    chunk_info(shard, coords) -> (offset, nbytes, empty)

Where an inner chunk is stored (`shard_chunk_info`), as a `NamedTuple`.
"""
function chunk_info(s::Shard, coords)
    cc = c_coords(s.codec.rank, coords)
    info = Ref{L.shard_chunk_location}()
    @check L.shard_chunk_info(s, cc, length(cc), info)
    loc = info[]
    return (offset = loc.offset, nbytes = loc.nbytes, empty = loc.empty)
end

"""
    write_chunk(shard, coords, data::AbstractArray)

Encode and write one inner chunk (`shard_write_chunk`). `data` has the chunk's Julia shape
(reversed C shape); it is converted to `Array{eltype(codec)}` when it is not one already. A
chunk equal to the fill value is left empty unless the shard was opened with
`store_fill_chunks = true`.
"""
function write_chunk(s::Shard, coords, data::AbstractArray)
    c = s.codec
    size(data) == chunk_dims(c) ||
        throw(DimensionMismatch("data of size $(size(data)), inner chunks are $(chunk_dims(c))"))
    A = data isa Array && eltype(data) === c.eltype ? data : convert(Array{c.eltype}, data)
    cc = c_coords(c.rank, coords)
    GC.@preserve A begin
        @check L.shard_write_chunk(s, cc, length(cc), Ptr{UInt8}(pointer(A)), sizeof(A))
    end
    return nothing
end

"""
    write_chunk_raw(shard, coords, bytes::AbstractVector{UInt8})

Write already-encoded bytes as inner chunk `coords` (`shard_write_chunk_raw`).
"""
function write_chunk_raw(s::Shard, coords, bytes::AbstractVector{UInt8})
    b = bytes isa Vector{UInt8} ? bytes : Vector{UInt8}(bytes)
    cc = c_coords(s.codec.rank, coords)
    @check L.shard_write_chunk_raw(s, cc, length(cc), b, length(b))
    return nothing
end

"Mark inner chunk `coords` empty: it then reads as the fill value (`shard_erase_chunk`)."
function erase_chunk(s::Shard, coords)
    cc = c_coords(s.codec.rank, coords)
    @check L.shard_erase_chunk(s, cc, length(cc))
    return nothing
end

"""
    finalize_shard!(shard) -> UInt64

Complete a write shard (`shard_finalize`), then `commit!` its `ShardIO` (a `ShardFile` has
already put the complete object in place). Returns the object's size, 0 when nothing
was stored and the object was removed. Close the shard afterwards.
"""
function finalize_shard!(s::Shard)
    size_out = Ref{UInt64}(0)
    @check L.shard_finalize(s, size_out)
    s.finalized = true
    s.io isa ShardIO && commit!(s.io)
    return size_out[]
end

# ---------------------------------------------------------------------------------------------
# ShardArray: regions of a whole array over a store

"""
    ShardArray(zarr_json, store)
    open(f, ShardArray, zarr_json, store)

A whole Zarr v3 array (`shard_array`) over a [`Store`](@ref), its metadata given as text.
(To open an array at a path of a store from its own `zarr.json` or `.zarray`, use
`open(store, path)`; to make one, [`create`](@ref).) `store` is a library store
([`DirectoryStore`](@ref), [`MemoryStore`](@ref)) or a store written in Julia: a
[`HostStore`](@ref), or a function `store(key::String)` returning the [`ShardIO`](@ref) (or
[`ShardFile`](@ref)) of the object at `key` (`"c/0/1"`, per the array's
`chunk_key_encoding`), e.g. `key -> get!(MemoryShardIO, objects, key)`. The library calls it
once per shard a call touches and calls `release!` on what it returned before that call
returns, so return a fresh object per call unless its `release!` does nothing. Exceptions
from `store` or the `ShardIO` become the `cause` of the call's `ZarrShardError` (status
`SHARD_ERR_IO`).

Regions are Julia order and 1-based like everything in the Julian layer: `read_region(a,
start, shape)` returns an `Array` of size `shape` whose element `R[x, y]` is array element
`(start[1] + x - 1, start[2] + y - 1)`, i.e. C element `[start[2]+y-2][start[1]+x-2]`. The
library decodes straight into the array's memory; the fill value where nothing is stored.
`size(a)` is the shape in the same order.

`codec(a)` is the array's [`Codec`](@ref) (`nothing` for an array without sharding, whose
regions then need [`read_region!`](@ref) with an array of the right element type).
`close(a)` closes the handle and that codec (idempotent; it writes frames
[`append!`](@ref) still holds, but an error doing so is lost: call `flush(a)` first to see
it); an array never closed is closed by its finalizer, which leaves the codec to the codec's
own finalizer. Reads may run on many tasks at once; one writer at a time (`SHARD_ERR_BUSY`
otherwise).

A store may also list: when [`list_keys`](@ref)`(store, prefix)` has a method for the store's
type (as for [`DictStore`](@ref); the library stores always list), the walks over the stored
shards ([`verify`](@ref), [`kerchunk_refs`](@ref), [`kerchunk_refs_parquet`](@ref)) list
once and open only the listed shards, instead of calling `store(key)` for every position of
the chunk grid (on a sparse grid over a remote store, one listing instead of a request per
position). A stored shard the listing leaves out is then treated as missing; `nothing` (the
default) means "cannot list". Region reads and writes never list.
"""
mutable struct ShardArray
    ptr::Ptr{L.shard_array}
    store::Store   # a HostStore: the store table's userdata points here, this field keeps it
    codec::Union{Codec,Nothing}
    lock::ReentrantLock
end

function ShardArray(zarr_json::AbstractString, store)
    json = String(zarr_json)
    st = as_store(store)
    out = Ref{Ptr{L.shard_array}}(C_NULL)
    with_table(st) do table
        @check L.shard_array_open(json, sizeof(json), table, out)
    end
    return _wrap_array(out[], st)
end

# The Julia object of a freshly opened handle: finalizer, then the codec (closing the handle if
# the codec cannot be had).
function _wrap_array(ptr::Ptr{L.shard_array}, st::Store)
    a = ShardArray(ptr, st, nothing, ReentrantLock())
    finalizer(_close_array!, a)
    try
        a.codec = _array_codec(a)
    catch
        close(a)
        rethrow()
    end
    return a
end

function Base.open(f::Function, ::Type{ShardArray}, zarr_json::AbstractString, store)
    a = ShardArray(zarr_json, store)
    try
        return f(a)
    finally
        close(a)
    end
end

# The array's codec (`shard_array_codec`), or nothing when it is not sharded.
function _array_codec(a::ShardArray)
    out = Ref{Ptr{L.shard_codec}}(C_NULL)
    _clear_callback_exceptions()
    status = L.shard_array_codec(a, out)
    status == Cint(L.SHARD_ERR_UNSUPPORTED) && return nothing
    status == Cint(0) || throw(ZarrShardError(status))
    return Codec(out[])
end

"The array's `Codec`, or `nothing` when it is not sharded."
codec(a::ShardArray) = a.codec

# Finalizer: only the array's own handle. The Codec is a Julia object of its own that the
# caller may still hold (`codec(a)`) and use, on this or another thread; its own finalizer
# frees it once nothing references it.
function _close_array!(a::ShardArray)
    p = a.ptr
    a.ptr = C_NULL
    p == C_NULL || L.shard_array_close(p)
    return nothing
end

"""
    close(a::ShardArray)

Close the array (`shard_array_close`, which writes the frames [`append!`](@ref) still holds,
losing an error doing so, and releases the store) and its codec. Idempotent.
Must not race other calls on `a`. A `ShardArray` that is never closed is closed by its
finalizer, which leaves the codec to its own finalizer (`codec(a)` stays usable while it is
referenced).
"""
function Base.close(a::ShardArray)
    lock(a.lock)
    try
        _close_array!(a)
        c = a.codec
        c === nothing || close(c)
    finally
        unlock(a.lock)
    end
    return nothing
end

Base.isopen(a::ShardArray) = a.ptr != C_NULL

function Base.unsafe_convert(::Type{Ptr{L.shard_array}}, a::ShardArray)
    p = a.ptr
    p == C_NULL && throw(ArgumentError("the ShardArray is closed"))
    return p
end

# The library reads and writes an array's memory as raw bytes: only for element types stored
# inline (isbits). An Array{Any} (or of any other non-isbits type) holds pointers to boxed
# values there: the library would overwrite them with data (a crash in the GC) or store the
# pointers as data.
function _check_bits_eltype(T::Type)
    isbitstype(T) ||
        throw(ArgumentError("element type $T is not a bits type (isbitstype): its array " *
                            "holds references, not the values the library reads and writes"))
    return nothing
end

function _region_eltype(a::ShardArray)
    a.codec === nothing &&
        throw(ArgumentError("the array is not sharded: pass an Array of its element type to read_region!"))
    return eltype(a.codec)
end

"""
    set_coalesce_gap!(a::ShardArray, gap::Integer) -> a

Set the gap in bytes below which the byte ranges of inner chunks one `read_region` call
wants from a shard are fetched as one range (`shard_array_set_coalesce_gap`): 0 merges only
touching ranges, a large gap reads whole spans (fewer requests to a high-latency store).
The default is 65536.
"""
function set_coalesce_gap!(a::ShardArray, gap::Integer)
    gap >= 0 || throw(ArgumentError("the coalescing gap must be non-negative, got $gap"))
    @check L.shard_array_set_coalesce_gap(a, UInt64(gap))
    return a
end

"""
    read_region(a::ShardArray, start, shape) -> Array{T,N}

The region of Julia-order size `shape` at the 1-based, Julia-order `start`
(`shard_array_read_region`), as an `Array{eltype(codec(a))}`. The library checks the region
(rank, bounds) with an empty buffer before the array is allocated, so a region past the
array throws `ZarrShardError` (`SHARD_ERR_INVALID_ARGUMENT`) without allocating for it.
"""
function read_region(a::ShardArray, start, shape)
    T = _region_eltype(a)
    dims = Tuple(shape)
    all(d -> d isa Integer && d >= 0, dims) ||
        throw(ArgumentError("a region's shape is non-negative integers, got $dims"))
    if !any(iszero, dims)
        # (NULL, 0): the library checks rank and bounds and then refuses the empty buffer
        # with SHARD_ERR_BUFFER_SIZE, reading nothing; any other status is the real error,
        # found before a region past the array is allocated.
        cs = c_coords(length(dims), start)
        cshape = c_shape(dims)
        _clear_callback_exceptions()
        status = L.shard_array_read_region(a, cs, cshape, length(cs), C_NULL, 0)
        status == Cint(L.SHARD_ERR_BUFFER_SIZE) || status == Cint(0) ||
            throw(ZarrShardError(status))
    end
    return read_region!(Array{T}(undef, dims), a, start)
end

"""
    read_region!(R::Array, a::ShardArray, start) -> R

[`read_region`](@ref) into an existing `Array` (the region's size is `size(R)`). `eltype(R)`
must be a bits type (`isbitstype`) and, for a sharded array, `eltype(codec(a))`; otherwise
`ArgumentError`.
"""
function read_region!(R::Array, a::ShardArray, start)
    _check_bits_eltype(eltype(R))
    a.codec === nothing || eltype(R) === eltype(a.codec) ||
        throw(ArgumentError("element type $(eltype(R)) given, the array's is $(eltype(a.codec))"))
    cs = c_coords(ndims(R), start)
    cshape = c_shape(size(R))
    GC.@preserve R begin
        @check L.shard_array_read_region(a, cs, cshape, length(cs), Ptr{UInt8}(pointer(R)),
                                         sizeof(R))
    end
    return R
end

"""
    write_region(a::ShardArray, start, data::AbstractArray)

Write `data` to the region of size `size(data)` at the 1-based, Julia-order `start`
(`shard_array_write_region`): the minimum read-modify-write (shards covered entirely are not
read; in the others only the index and the partly covered inner chunks are), chunks equal to
the fill value are not stored, a shard left empty is removed. `data` is converted to
`Array{eltype(codec(a))}` when it is not one already (for an array without sharding it is
written as it is: its element type must be a bits type, `ArgumentError` otherwise). The
store's `ShardIO`s must be writable. Not atomic across shards.
"""
function write_region(a::ShardArray, start, data::AbstractArray)
    T = a.codec === nothing ? eltype(data) : eltype(a.codec)
    _check_bits_eltype(T)
    D = data isa Array && eltype(data) === T ? data : convert(Array{T}, data)
    cs = c_coords(ndims(D), start)
    cshape = c_shape(size(D))
    GC.@preserve D begin
        @check L.shard_array_write_region(a, cs, cshape, length(cs), Ptr{UInt8}(pointer(D)),
                                          sizeof(D))
    end
    return nothing
end

"""
    kerchunk_refs(a::ShardArray, url_prefix; version=1, zarr_format=3, name="") -> String

The array's kerchunk reference set as JSON text: version 0 or 1, the array described
unsharded with Zarr v3 (`zarr.json`) or v2 (`.zarray`) metadata, each stored inner chunk
`[url_prefix/SHARD_KEY, offset, nbytes]` (empty ones are left out: they read as the fill
value), keys under `name/` when `name` is not empty.

One C call, `shard_array_refs_write`: the library reads each stored shard's index once
(through the array's store, on this task's thread; only the listed shards when the store lists,
see [`list_keys`](@ref)), builds the whole set, then hands its text in pieces of
at most 64 KiB to a `@cfunction` sink (`cb_sink`) that appends them to an `IOBuffer`, held by
a `Ref{IO}` whose address is the call's `userdata` (rooted by `GC.@preserve` for the call).
(The copying `shard_array_refs` needs a size query and then the copy, which read every index
twice.) `kerchunk_refs(io, a, url_prefix)` writes the same text to an `IO` as the
shards are read, never holding it.

Thread-safe (not while another task writes the array). Throws `ArgumentError` for a
`version` other than 0 or 1 (`InexactError` for a `zarr_format` no `UInt32` holds), and
[`ZarrShardError`](@ref): `SHARD_ERR_INVALID_ARGUMENT` (`zarr_format` not 2 or 3, an array that is not sharded, a codec after sharding, a data type
Zarr v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (what the chosen metadata cannot
express), `SHARD_ERR_IO` (the store or its `ShardIO` threw, or the sink did, e.g. an
`OutOfMemoryError` appending: the exception is the error's `cause`), `SHARD_ERR_CORRUPT`,
`SHARD_ERR_CHECKSUM`. A failed read never reaches the sink; a failed sink leaves a partial
text, which is dropped.
"""
function kerchunk_refs(a::ShardArray, url_prefix::AbstractString; version::Integer=1,
                       zarr_format::Integer=3, name::AbstractString="")
    version in (0, 1) || throw(ArgumentError("reference set version must be 0 or 1, got $version"))
    format = version == 0 ? L.SHARD_REFS_JSON_V0 : L.SHARD_REFS_JSON_V1
    url = String(url_prefix)
    nm = String(name)
    out = Ref{IO}(IOBuffer())   # the sink's userdata: cb_sink appends each piece there
    GC.@preserve out begin
        @check L.shard_array_refs_write(a, format, UInt32(zarr_format), url, sizeof(url), nm,
                                        sizeof(nm), CB_SINK[], pointer_from_objref(out))
    end
    return String(take!(out[]))
end

"""
    kerchunk_refs(io::IO, a::ShardArray, url_prefix; version=1, zarr_format=3, name="") -> nothing

The same JSON text as `kerchunk_refs(a, url_prefix; …)`, written to `io` as the shards are
read (`shard_array_refs_stream`): the library holds a batch of shard indexes, never the text,
so a set too large to hold as a `String` fits. Each piece (at most 64 KiB) goes to
`unsafe_write(io, …)` through the same `@cfunction` sink (`cb_sink`), whose `userdata` is the
address of a `Ref{IO}` holding `io` (rooted by `GC.@preserve` for the call). `io` is neither
flushed nor closed.

The write runs in the middle of the C call, on this task's thread: give an `IOStream` (a
file) or an `IOBuffer`, whose writes do not yield; a socket or pipe may yield, which is safe
only from a task that does not migrate between threads (see docs/bindings.md, "Julia: threads,
errors and ownership").

A failure part way (the store, a damaged index, `io` throwing) leaves the text's first part
written to `io`: write to a temporary file and move it into place when the call returns.
Throws as `kerchunk_refs(a, url_prefix; …)`; what `io` threw is the `ZarrShardError`'s `cause`
(`SHARD_ERR_IO`), and the library writes nothing more after it.
"""
function kerchunk_refs(io::IO, a::ShardArray, url_prefix::AbstractString; version::Integer=1,
                       zarr_format::Integer=3, name::AbstractString="")
    version in (0, 1) || throw(ArgumentError("reference set version must be 0 or 1, got $version"))
    format = version == 0 ? L.SHARD_REFS_JSON_V0 : L.SHARD_REFS_JSON_V1
    url = String(url_prefix)
    nm = String(name)
    box = Ref{IO}(io)   # the sink's userdata (an IO may be immutable: no address of its own)
    GC.@preserve box begin
        @check L.shard_array_refs_stream(a, format, UInt32(zarr_format), url, sizeof(url), nm,
                                         sizeof(nm), CB_SINK[], pointer_from_objref(box))
    end
    return nothing
end

"""
    kerchunk_refs_parquet(a::ShardArray, store, url_prefix; name, record_size=10000) -> nothing

Write the array's kerchunk reference set in the Parquet layout of fsspec's
`LazyReferenceMapper` (`shard_array_refs_parquet`, what `zarrshard refs --format parquet`
writes) as objects of `store`: `"\$name/refs.<n>.parq"`, file `n` holding the chunks numbered
`n * record_size ..` of the unsharded chunk grid in C order, one row each (an empty chunk's row
carries the encoded fill chunk), then, last, `".zmetadata"` (Zarr v2 metadata, the only kind
fsspec reads in this layout). Each reference is `url_prefix/SHARD_KEY`. Reads each shard's
index once through the array's own store (only the listed shards when it lists, see
[`list_keys`](@ref)).

`store` is any [`Store`](@ref), borrowed for the call: a library store (a
[`DirectoryStore`](@ref) writes the files under its root), or a store written in Julia like
[`ShardArray`](@ref)'s, `key::String -> ShardIO`, e.g. `key -> get!(MemoryShardIO, objects,
key)` (the set in memory: `contents(objects[key])`): it is called once per object, on this
task's thread, and the library calls `release!` on each `ShardIO` it returned before the call
returns. The `ShardIO`s must be writable; each is written with one `write_at` at offset 0
(plus `truncate_object!`). To write files, a `DirectoryStore` or a directory (the method
below) do. `name` must not be
empty (nor start with `.z` or contain `..`); `record_size` is at least 1 (fsspec's default,
10000).

Thread-safe (not while another task writes the array). Throws `ArgumentError` for a negative
`record_size`, and [`ZarrShardError`](@ref): `SHARD_ERR_INVALID_ARGUMENT` (empty or invalid
`name`, `record_size` 0, an array that is not sharded, has a codec after sharding or a data
type Zarr v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (what v2 metadata cannot express),
`SHARD_ERR_IO` (reading the array, or `store` or its `ShardIO` threw: the exception is the
error's `cause`), `SHARD_ERR_UNSUPPORTED` (a `ShardIO` that is not writable),
`SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`. After an error some objects may be written
already; `.zmetadata`, written last, then is not.
"""
function kerchunk_refs_parquet(a::ShardArray, store, url_prefix::AbstractString;
                               name::AbstractString, record_size::Integer=10000)
    record_size >= 0 ||
        throw(ArgumentError("record_size is the number of rows per file (at least 1), got $record_size"))
    url = String(url_prefix)
    nm = String(name)
    rows = record_size > typemax(UInt64) ? typemax(UInt64) : UInt64(record_size)
    sf = HostStore(store)   # borrowed: the table's userdata points here for the call only
    GC.@preserve sf begin
        table = store_table(pointer_from_objref(sf))
        @check L.shard_array_refs_parquet(a, url, sizeof(url), nm, sizeof(nm), rows, Ref(table))
    end
    return nothing
end

function kerchunk_refs_parquet(a::ShardArray, store::Store, url_prefix::AbstractString;
                               name::AbstractString, record_size::Integer=10000)
    record_size >= 0 ||
        throw(ArgumentError("record_size is the number of rows per file (at least 1), got $record_size"))
    url = String(url_prefix)
    nm = String(name)
    rows = record_size > typemax(UInt64) ? typemax(UInt64) : UInt64(record_size)
    with_table(store) do table
        @check L.shard_array_refs_parquet(a, url, sizeof(url), nm, sizeof(nm), rows, table)
    end
    return nothing
end

"""
    kerchunk_refs_parquet(a::ShardArray, dir::AbstractString, url_prefix; name, record_size=10000) -> nothing

Write the same Parquet reference set as the store method above into the local directory `dir`
(`shard_array_refs_parquet_dir`, what `zarrshard refs --format parquet -o DIR` writes):
`dir/\$name/refs.<n>.parq` and, last, `dir/.zmetadata`. `dir` must not exist (it is created,
with missing parents, with the first file) or be an empty directory; that is checked, with
`name` and `record_size`, before any shard is read. Each file is written to a temporary
sibling and renamed, so no reader sees a partial file. Reads each shard's index once through
the array's own store; the library writes the files itself (no `ShardIO` is involved in
writing them). A `dir` that is not an `AbstractString` (a store function) selects the store
method: the two never overlap.

Thread-safe (not while another task writes the array, or another call writes `dir`). Throws
`ArgumentError` for a negative `record_size`, and [`ZarrShardError`](@ref):
`SHARD_ERR_INVALID_ARGUMENT` (empty or invalid `name`, `record_size` 0, `dir` empty, holding
NUL, or naming something other than an empty directory; an array that is not sharded, has a
codec after sharding or a data type Zarr v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (what
v2 metadata cannot express), `SHARD_ERR_IO` (reading the array: the store's exception is the
error's `cause`; or creating or writing `dir`: the OS error number is its `io_code`, e.g.
`ENOTDIR` for a path under a regular file), `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`,
`SHARD_ERR_UNSUPPORTED` (a library built without the `parquet` feature). After an error some
files may be written already; `.zmetadata`, written last, then is not.
"""
function kerchunk_refs_parquet(a::ShardArray, dir::AbstractString, url_prefix::AbstractString;
                               name::AbstractString, record_size::Integer=10000)
    record_size >= 0 ||
        throw(ArgumentError("record_size is the number of rows per file (at least 1), got $record_size"))
    url = String(url_prefix)
    nm = String(name)
    path = String(dir)
    rows = record_size > typemax(UInt64) ? typemax(UInt64) : UInt64(record_size)
    @check L.shard_array_refs_parquet_dir(a, url, sizeof(url), nm, sizeof(nm), rows, path,
                                          sizeof(path))
    return nothing
end

"""
    Problem(key::String, chunk::Vector{UInt64}, status::Int32, message::String)

One problem [`verify`](@ref) found: `key` is the shard object's key (`"c/0/1"`); `chunk` the
coordinates of the inner chunk within that shard, in the Julian layer's order (reversed,
1-based, as [`read_chunk`](@ref) takes them: C inner chunk `[0][1]` is `[2, 1]`), or empty
when the problem concerns the shard as a whole (its index, its size); `status` the
`shard_status` reading it would fail with (`LibZarrShard.SHARD_ERR_CHECKSUM`,
`SHARD_ERR_CORRUPT`, …) and `message` the error text, as `zarrshard verify` prints it.
"""
struct Problem
    key::String
    chunk::Vector{UInt64}
    status::Int32
    message::String
end

"""
    verify(a::ShardArray) -> Vector{Problem}

Check every stored shard of the array as `zarrshard verify` does (`shard_array_verify`): the
index (its checksum, every entry within the object) and that every inner chunk decodes. The
problems found, as [`Problem`](@ref)s in C order of the shard grid and of each shard's chunks;
empty when the array is clean. A damaged shard is a problem, not an error: it does not throw.

One C call: the library reads each whole shard object once (through the array's store, on this
task's thread: the store is not `SHARD_STORE_THREAD_SAFE`; chunks decode on the library's
threads). A store that lists ([`list_keys`](@ref), e.g. [`DictStore`](@ref)) is listed once
and only the listed shards are opened (a stored shard the listing leaves out is not checked);
otherwise every position of the chunk grid is asked (`store(key)` once each, stored or not) and hands each problem to a `@cfunction` (`cb_problem`, made as a
`shard_problem_fn`) that copies it into a `Vector{Problem}`, whose address is the call's
`userdata` (rooted by `GC.@preserve` for the call).

Thread-safe (not while another task writes the array). Throws [`ZarrShardError`](@ref):
`SHARD_ERR_IO` (the store, its `ShardIO` or its `list_keys` threw, e.g. for the first such
shard in grid order, or copying a problem did: the exception is the error's `cause`), `SHARD_ERR_INVALID_ARGUMENT`
(a shard object larger than the library's [`memory_limit`](@ref)). The problems found before an
error are dropped.
"""
function verify(a::ShardArray)
    problems = Problem[]   # the callback's userdata: cb_problem pushes each problem here
    n = Ref{UInt64}(0)
    GC.@preserve problems begin
        @check L.shard_array_verify(a, CB_PROBLEM[], pointer_from_objref(problems), n)
    end
    return problems
end

# ---------------------------------------------------------------------------------------------
# The library's stores, creating arrays and groups, opening by path, growing arrays

include("stores.jl")

end # module ZarrShard
