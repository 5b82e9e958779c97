# The library's own stores (DirectoryStore, MemoryStore), arrays and groups made and opened at
# a path of any Store, and what grows and maintains an array (size, resize!, append!, flush,
# attributes, compact!). Included into module ZarrShard, after ShardArray.
#
# Shapes, axes and dimension names are in the Julian layer's order (reversed, see the module
# docstring); JSON text (metadata, attributes) is Zarr's own, in C order.

# ---------------------------------------------------------------------------------------------
# Library stores

"""
    LibraryStore <: Store

A store the library implements ([`DirectoryStore`](@ref), [`MemoryStore`](@ref)): a
`shard_store_callbacks` table the library filled, so no Julia code runs when arrays read or
write. The table may serve any number of arrays and calls at once, from any thread
(`SHARD_STORE_THREAD_SAFE`); each array opened on it keeps the library's store alive until the
array is closed, so `close(store)` (`shard_store_release`, also the finalizer's) only gives
this object's reference back. `close` must not race another call on the same store object.
"""
abstract type LibraryStore <: Store end

"""
    DirectoryStore(path; create = false)

The library's directory store rooted at `path` (`shard_store_directory`): key `"a/b/c/0/1"`
is the file `path/a/b/c/0/1`; whole objects are written to a temporary file and renamed into
place, updates in place, parent directories made as needed, a shard left all fill value
deleted. `create = true` makes `path` (and its parents) when it is missing
(`SHARD_STORE_CREATE`); otherwise a missing `path` throws [`ZarrShardError`](@ref). See
[`LibraryStore`](@ref) for sharing and `close`.
"""
mutable struct DirectoryStore <: LibraryStore
    table::Base.RefValue{L.shard_store_callbacks}   # the library's; zeroed once released
    path::String
    released::Bool
    lock::ReentrantLock

    function DirectoryStore(path::AbstractString; create::Bool = false)
        p = String(path)
        t = Ref{L.shard_store_callbacks}()
        @check L.shard_store_directory(p, create ? L.SHARD_STORE_CREATE : UInt32(0), t)
        s = new(t, p, false, ReentrantLock())
        finalizer(_release_store!, s)
        return s
    end
end

"""
    MemoryStore()

The library's store in memory (`shard_store_memory`): objects by key, gone when the last
reference (this object or an array opened on it) is released. For tests, scratch arrays and
pipelines that export elsewhere. See [`LibraryStore`](@ref) for sharing and `close`. (A store
of Julia objects that the host can inspect is [`DictStore`](@ref).)
"""
mutable struct MemoryStore <: LibraryStore
    table::Base.RefValue{L.shard_store_callbacks}   # the library's; zeroed once released
    released::Bool
    lock::ReentrantLock

    function MemoryStore()
        t = Ref{L.shard_store_callbacks}()
        @check L.shard_store_memory(t)
        s = new(t, false, ReentrantLock())
        finalizer(_release_store!, s)
        return s
    end
end

# Finalizer and close: this object's reference to the library's store.
function _release_store!(s::LibraryStore)
    if !s.released
        s.released = true
        L.shard_store_release(s.table)   # zeroes the table
    end
    return nothing
end

"Give this object's reference to the library's store back (`shard_store_release`). Idempotent."
function Base.close(s::LibraryStore)
    lock(s.lock)
    try
        _release_store!(s)
    finally
        unlock(s.lock)
    end
    return nothing
end

Base.isopen(s::LibraryStore) = !s.released

Base.show(io::IO, s::DirectoryStore) =
    print(io, "ZarrShard.DirectoryStore(", repr(s.path), isopen(s) ? "" : ", closed", ")")
Base.show(io::IO, s::MemoryStore) =
    print(io, "ZarrShard.MemoryStore(", isopen(s) ? "" : "closed", ")")

"""
    with_table(f, store::Store)

Call `f(table)` with the store's C table (a `Ref{LibZarrShard.shard_store_callbacks}`) valid
for the call: the library's own for a [`LibraryStore`](@ref), one whose `userdata` is the
[`HostStore`](@ref)'s address (rooted for the call) for a host store.
"""
function with_table(f, s::LibraryStore)
    s.released && throw(ArgumentError("the $(nameof(typeof(s))) is closed"))
    return f(s.table)
end

function with_table(f, s::HostStore)
    r = GC.@preserve s begin
        table = store_table(pointer_from_objref(s))
        f(Ref(table))
    end
    return r
end

# ---------------------------------------------------------------------------------------------
# Paths and flags

# A node path as C text: "" is the store's root. A NUL byte would cut the path short in C.
function _c_path(path::AbstractString)
    p = String(path)
    '\0' in p && throw(ArgumentError("a path cannot contain a NUL byte: $(repr(p))"))
    return p
end

_create_flags(overwrite::Bool) = overwrite ? L.SHARD_CREATE_OVERWRITE : UInt32(0)

# ---------------------------------------------------------------------------------------------
# The array spec: metadata from keywords

"The Zarr data type name of a Julia element type (`UInt16` -> `\"uint16\"`) or of a name."
zarr_data_type(name::AbstractString) = String(name)
zarr_data_type(name::Symbol) = String(name)
function zarr_data_type(T::Type)
    for (name, U) in ELTYPES
        U === T && return name
    end
    if T <: NTuple && isbitstype(T) && eltype(T) === UInt8
        return string("r", 8 * sizeof(T))
    end
    throw(ArgumentError("no Zarr data type for the Julia type $T"))
end

"The fill value as JSON text (Zarr v3: numbers; `\"NaN\"`, `\"Infinity\"`; `[re, im]`)."
fill_json(x::AbstractString) = String(x)   # JSON text given as is
fill_json(x::Bool) = x ? "true" : "false"
fill_json(x::Integer) = string(x)
function fill_json(x::AbstractFloat)
    isnan(x) && return "\"NaN\""
    isinf(x) && return x > 0 ? "\"Infinity\"" : "\"-Infinity\""
    return string(Float64(x))
end
fill_json(x::Complex) = string("[", fill_json(real(x)), ",", fill_json(imag(x)), "]")

function _no_nul(what::AbstractString, s::String)
    '\0' in s && throw(ArgumentError("$what cannot contain a NUL byte: $(repr(s))"))
    return s
end

function _dims_arg(what::AbstractString, dims, rank::Int)
    t = Tuple(dims)
    length(t) == rank ||
        throw(DimensionMismatch("$what has $(length(t)) dimensions, the shape $rank"))
    all(d -> d isa Integer && d >= 0, t) ||
        throw(ArgumentError("$what is non-negative integers, got $t"))
    return c_shape(t)
end

"""
    with_spec(f; shape, chunks, shards = nothing, dtype, fill_value = nothing,
              compressor = nothing, level = nothing, index_location = nothing,
              index_checksum = nothing, chunk_checksum = nothing, dimension_names = nothing)

Call `f(spec)` with a `Ref{LibZarrShard.shard_array_spec}` describing the array: shapes and
dimension names in Julia order (reversed into C order here), every array and string rooted
for the call. Keywords left `nothing` keep the library's defaults (`shard_array_spec_init`).
"""
function with_spec(f; shape, chunks, shards = nothing, dtype, fill_value = nothing,
                   compressor = nothing, level = nothing, index_location = nothing,
                   index_checksum = nothing, chunk_checksum = nothing,
                   dimension_names = nothing)
    init = Ref{L.shard_array_spec}()
    @check L.shard_array_spec_init(init)
    d = init[]
    rank = length(Tuple(shape))
    cshape = _dims_arg("shape", shape, rank)
    cchunks = _dims_arg("chunks", chunks, rank)
    cshards = shards === nothing ? UInt64[] : _dims_arg("shards", shards, rank)
    dt = _no_nul("dtype", zarr_data_type(dtype))
    fv = fill_value === nothing ? "" : _no_nul("fill_value", fill_json(fill_value))
    comp = compressor === nothing ? "" : _no_nul("compressor", string(compressor))
    lvl = level === nothing ? d.compression_level : Int32(level)
    loc = index_location === nothing ? d.index_location :
          index_location === :end ? L.SHARD_INDEX_AT_END :
          index_location === :start ? L.SHARD_INDEX_AT_START :
          throw(ArgumentError("index_location is :end or :start, not $(repr(index_location))"))
    sums = d.checksums
    index_checksum === nothing ||
        (sums = index_checksum ? sums | L.SHARD_CHECKSUM_INDEX : sums & ~L.SHARD_CHECKSUM_INDEX)
    chunk_checksum === nothing ||
        (sums = chunk_checksum ? sums | L.SHARD_CHECKSUM_CHUNKS : sums & ~L.SHARD_CHECKSUM_CHUNKS)
    # Dimension names, C order, as one buffer of NUL-terminated strings; offset 0: no name.
    namebuf = UInt8[]
    offsets = zeros(Int, rank)
    if dimension_names !== nothing
        names = collect(dimension_names)
        length(names) == rank ||
            throw(DimensionMismatch("$(length(names)) dimension names for rank $rank"))
        for k in 1:rank
            n = names[rank - k + 1]
            n === nothing && continue
            offsets[k] = length(namebuf) + 1
            append!(namebuf, codeunits(_no_nul("a dimension name", String(n))))
            push!(namebuf, 0x00)
        end
    end
    ptrs = Vector{Ptr{UInt8}}(undef, rank)
    r = GC.@preserve cshape cchunks cshards dt fv comp namebuf ptrs begin
        for k in 1:rank
            ptrs[k] = offsets[k] == 0 ? Ptr{UInt8}(C_NULL) : pointer(namebuf, offsets[k])
        end
        spec = L.shard_array_spec(
            d.version,
            Csize_t(rank),
            pointer(cshape),
            shards === nothing ? Ptr{UInt64}(C_NULL) : pointer(cshards),
            pointer(cchunks),
            pointer(dt),
            fill_value === nothing ? Ptr{UInt8}(C_NULL) : pointer(fv),
            compressor === nothing ? Ptr{UInt8}(C_NULL) : pointer(comp),
            lvl,
            loc,
            sums,
            dimension_names === nothing ? Ptr{Ptr{UInt8}}(C_NULL) : pointer(ptrs),
        )
        f(Ref(spec))
    end
    return r
end

"""
    metadata_json(; shape, chunks, shards = nothing, dtype, kwargs...) -> String

The `zarr.json` text [`create`](@ref) would write for these keywords
(`shard_array_spec_json`), without a store: to check or store it elsewhere.
"""
function metadata_json(; kwargs...)
    return with_spec(; kwargs...) do spec
        n = Ref{Csize_t}(0)
        @check L.shard_array_spec_json(spec, C_NULL, 0, n)
        buf = Vector{UInt8}(undef, n[] + 1)
        @check L.shard_array_spec_json(spec, buf, length(buf), n)
        String(resize!(buf, min(n[], length(buf) - 1)))
    end
end

# ---------------------------------------------------------------------------------------------
# Arrays and groups at a path

"""
    create(store, path = ""; shape, chunks, dtype, shards = nothing, fill_value = nothing,
           compressor = nothing, level = nothing, index_location = nothing,
           index_checksum = nothing, chunk_checksum = nothing, dimension_names = nothing,
           overwrite = false) -> ShardArray
    create(store, path, metadata_json::AbstractString; overwrite = false) -> ShardArray

Make a Zarr v3 array at `path` of `store` (`""`: the store's root; `"a/b"`: a node under
groups) and open it: its `zarr.json` is written atomically, then the open array is returned
(close it when done). `store` is any
[`Store`](@ref) (a function from key to `ShardIO` is made a [`HostStore`](@ref)).

The first form describes the array with keywords (`shard_array_create_spec`), shapes in
Julia order like everything in the Julian layer: `shape` (a dimension may be 0, to grow it by
[`append!`](@ref)), `chunks` the inner chunk shape, `shards` the shard shape (a multiple of
`chunks`; `nothing`: not sharded, each chunk its own object), `dtype` a Julia element type
(`UInt16`) or a Zarr name (`"uint16"`), `fill_value` a value (`0`, `NaN`) or JSON text,
`compressor` `"zstd"`, `"gzip"`, `"blosc"` or `"none"` with `level`, `index_location` `:end` or
`:start`, `index_checksum`/`chunk_checksum` (crc32c of the shard index / of each inner chunk),
`dimension_names` (Julia order; an entry may be `nothing`). A keyword left `nothing` keeps the
library's default: fill value 0, zstd level 3, the index at the end with a checksum, inner
chunks without one (see the C header's `shard_array_spec`). The second form takes the
metadata as `zarr.json` text (`shard_array_create`).

Throws [`ZarrShardError`](@ref): `SHARD_ERR_INVALID_METADATA` naming the field the library
refused, `SHARD_ERR_INVALID_STATE` when a node exists at `path` and `overwrite` is false
(with `overwrite = true` it is replaced, its shards or children removed),
`SHARD_ERR_INVALID_ARGUMENT` for a path that could leave the store (`..`, `.`, an empty
component, absolute, a backslash), `SHARD_ERR_IO` from the store; `ArgumentError` or
`DimensionMismatch` for keywords that cannot be passed at all.
"""
function create(store, path::AbstractString = ""; overwrite::Bool = false, kwargs...)
    st = as_store(store)
    p = _c_path(path)
    out = Ref{Ptr{L.shard_array}}(C_NULL)
    with_spec(; kwargs...) do spec
        with_table(st) do table
            @check L.shard_array_create_spec(table, p, spec, _create_flags(overwrite), out)
        end
    end
    return _wrap_array(out[], st)
end

function create(store, path::AbstractString, metadata_json::AbstractString;
                overwrite::Bool = false)
    st = as_store(store)
    p = _c_path(path)
    json = String(metadata_json)
    out = Ref{Ptr{L.shard_array}}(C_NULL)
    with_table(st) do table
        @check L.shard_array_create(table, p, json, sizeof(json), _create_flags(overwrite), out)
    end
    return _wrap_array(out[], st)
end

"""
    open(store::Store, path = "") -> ShardArray
    open(f, store::Store, path = "")

Open the array at `path` of `store` from its own metadata (`shard_array_open_path`): Zarr v3
`zarr.json`, Zarr v2 `.zarray`, or the v3 draft layout. A store written in Julia is passed as
a [`HostStore`](@ref) here (a bare function would read as the do-block form). The do-block
form closes the array when `f` returns or throws. Throws [`ZarrShardError`](@ref):
`SHARD_ERR_INVALID_METADATA` when there is no array at `path` (`no zarr.json or .zarray at
…`) or its metadata is refused, `SHARD_ERR_INVALID_ARGUMENT` for a path that could leave the
store, `SHARD_ERR_IO` from the store.
"""
function Base.open(store::Store, path::AbstractString = "")
    p = _c_path(path)
    out = Ref{Ptr{L.shard_array}}(C_NULL)
    with_table(store) do table
        @check L.shard_array_open_path(table, p, out)
    end
    return _wrap_array(out[], store)
end

function Base.open(f::Function, store::Store, path::AbstractString = "")
    a = open(store, path)
    try
        return f(a)
    finally
        close(a)
    end
end

"""
    create_group(store, path = ""; attributes = nothing, overwrite = false)

Make a Zarr v3 group at `path` of `store` (`shard_group_create`), its `zarr.json` holding
`attributes`: JSON object text (e.g. OME-Zarr's `{"ome": {"multiscales": …}}`), `nothing`
for `{}`. Arrays and groups under it are made at `"path/name"`. The store is borrowed for the
call. Throws [`ZarrShardError`](@ref) as [`create`](@ref) does (`SHARD_ERR_INVALID_METADATA`
for attributes that are not a JSON object).
"""
function create_group(store, path::AbstractString = ""; attributes = nothing,
                      overwrite::Bool = false)
    st = as_store(store)
    p = _c_path(path)
    json = attributes === nothing ? "" : String(attributes)
    with_table(st) do table
        @check L.shard_group_create(table, p, json, sizeof(json), _create_flags(overwrite))
    end
    return nothing
end

"""
    group_attributes(store, path = "") -> String

The attributes of the group at `path` of `store` as JSON object text
(`shard_group_attributes`). Throws [`ZarrShardError`](@ref) (`SHARD_ERR_INVALID_METADATA`
when no group is there).
"""
function group_attributes(store, path::AbstractString = "")
    st = as_store(store)
    p = _c_path(path)
    with_table(st) do table
        _string_result((buf, len, n) -> L.shard_group_attributes(table, p, buf, len, n))
    end
end

"""
    set_group_attributes!(store, path, json::AbstractString) -> nothing

Replace the attributes of the group at `path` of `store` with `json`, a JSON object's text
(`shard_group_set_attributes`; its `zarr.json` rewritten as a new object, members untouched).
"""
function set_group_attributes!(store, path::AbstractString, json::AbstractString)
    st = as_store(store)
    p = _c_path(path)
    j = String(json)
    with_table(st) do table
        @check L.shard_group_set_attributes(table, p, j, sizeof(j))
    end
    return nothing
end

# ---------------------------------------------------------------------------------------------
# Shape, growing, attributes, compaction

"The array's rank (`shard_array_rank`)."
function Base.ndims(a::ShardArray)
    n = Ref{Csize_t}(0)
    @check L.shard_array_rank(a, n)
    return Int(n[])
end

"""
    size(a::ShardArray) -> NTuple{N,Int}

The array's shape now, in Julia order (`shard_array_shape`): it follows [`resize!`](@ref) and
[`append!`](@ref), counting appended frames not yet written.
"""
function Base.size(a::ShardArray)
    v = zeros(UInt64, ndims(a))
    @check L.shard_array_shape(a, v, length(v))
    return julia_shape(v)
end

Base.size(a::ShardArray, d::Integer) = size(a)[d]

"""
    resize!(a::ShardArray, dims) -> a
    resize!(a::ShardArray, dims::Integer...) -> a

Grow or shrink the array to `dims` (Julia order; `shard_array_resize`): `zarr.json` replaced
atomically, shards and inner chunks wholly outside the new shape deleted, the part of an edge
inner chunk past a shrunken edge reset to the fill value (growing again shows the fill value,
never old data). Writes the frames [`append!`](@ref) holds first. Throws
[`ZarrShardError`](@ref) (`SHARD_ERR_INVALID_ARGUMENT` for another rank).
"""
function Base.resize!(a::ShardArray, dims::Tuple)
    cs = _dims_arg("the new shape", dims, length(dims))
    @check L.shard_array_resize(a, cs, length(cs))
    return a
end

Base.resize!(a::ShardArray, dims::Integer...) = resize!(a, dims)

"""
    append!(a::ShardArray, block::AbstractArray; dims = ndims(a)) -> a

Append `block` at the end of dimension `dims` (Julia order; the default, the last, is C's
first axis: the time axis of a `(x, y, t)` stack), growing the array (`shard_array_append`).
`block` has the array's size in every other dimension and any extent along `dims`; a block
with one dimension fewer is one frame (`size(block) == size(a)[1:end-1]` for the default
`dims`). Julia's column-major `block` is the very bytes of the C-order block the library
takes, so nothing is copied unless `block` needs converting to `Array{eltype(codec(a))}`.

Frames are gathered per layer of shards in memory and each shard is written once, whole, when
its layer is complete (no dead bytes; memory: one layer of shards). They read back at once
through [`read_region`](@ref); `zarr.json`'s shape covers them only once they are written:
call `flush(a)` to write a partial layer and the shape (`close` does, losing errors).
Throws [`ZarrShardError`](@ref) (`SHARD_ERR_INVALID_ARGUMENT` for a block that does not fit),
`DimensionMismatch` for a block of another rank.
"""
function Base.append!(a::ShardArray, block::AbstractArray;
                      dims::Union{Integer,Nothing} = nothing)
    n = ndims(a)
    dims === nothing && (dims = n)
    1 <= dims <= n || throw(ArgumentError("dims is 1 to $n, not $dims"))
    T = a.codec === nothing ? eltype(block) : eltype(a.codec)
    _check_bits_eltype(T)
    B = block isa Array && eltype(block) === T ? block : convert(Array{T}, block)
    if ndims(B) == n - 1   # one frame: a dimension of 1 at `dims`, the same bytes
        sz = size(B)
        B = reshape(B, (sz[1:dims - 1]..., 1, sz[dims:end]...))
    end
    ndims(B) == n ||
        throw(DimensionMismatch("a block of $(ndims(block)) dimensions for an array of $n"))
    cshape = c_shape(size(B))
    GC.@preserve B begin
        @check L.shard_array_append(a, n - dims, cshape, n, Ptr{UInt8}(pointer(B)), sizeof(B))
    end
    return a
end

"""
    flush(a::ShardArray)

Write the frames [`append!`](@ref) still holds (a partial layer as edge shards, rewritten
whole when later frames complete it) and the array's shape to `zarr.json`
(`shard_array_flush`). Throws [`ZarrShardError`](@ref) for what the store refused.
"""
function Base.flush(a::ShardArray)
    @check L.shard_array_flush(a)
    return nothing
end

"""
    attributes(a::ShardArray) -> String

The array's attributes as JSON object text (`shard_array_attributes`; `"{}"` when none).
"""
attributes(a::ShardArray) = _string_result((buf, len, n) -> L.shard_array_attributes(a, buf, len, n))

# A string result of a C call `f(buf, len, written_out)`: its size query with `(C_NULL, 0)`,
# then the copy into a buffer of that size and its NUL.
function _string_result(f)
    n = Ref{Csize_t}(0)
    @check f(C_NULL, 0, n)
    buf = Vector{UInt8}(undef, n[] + 1)
    @check f(buf, length(buf), n)
    return String(resize!(buf, min(n[], length(buf) - 1)))
end

"""
    metadata(a::ShardArray) -> String

The array's current `zarr.json` text (`shard_array_metadata`).
"""
metadata(a::ShardArray) = _string_result((buf, len, n) -> L.shard_array_metadata(a, buf, len, n))

"""
    set_index_cache!(a::ShardArray, bytes::Integer) -> a

Bound the handle's cache of shard indexes (`shard_array_set_index_cache`; 8 MiB by default, 0
turns it off): a shard read before costs only its chunks' reads.
"""
function set_index_cache!(a::ShardArray, bytes::Integer)
    bytes >= 0 || throw(ArgumentError("the index cache bound must be non-negative, got $bytes"))
    @check L.shard_array_set_index_cache(a, UInt64(bytes))
    return a
end

"""
    forget_cached_indexes!(a::ShardArray) -> a

Drop the shard indexes the handle cached (`shard_array_forget_cached_indexes`), so its next
reads see what other handles or processes wrote since.
"""
function forget_cached_indexes!(a::ShardArray)
    @check L.shard_array_forget_cached_indexes(a)
    return a
end

"""
    set_attributes!(a::ShardArray, json::AbstractString) -> a

Replace the array's attributes with `json`, a JSON object's text (`shard_array_set_attributes`;
`zarr.json` rewritten atomically). Throws [`ZarrShardError`](@ref)
(`SHARD_ERR_INVALID_METADATA` for text that is not a JSON object).
"""
function set_attributes!(a::ShardArray, json::AbstractString)
    j = String(json)
    @check L.shard_array_set_attributes(a, j, sizeof(j))
    return a
end

"""
    compact!(a::ShardArray; morton = false) -> (shards_rewritten, bytes_freed)

What `zarrshard compact` does (`shard_array_compact`): every stored shard with dead bytes
(left by updates) rewritten without them, inner chunks in C order or, with `morton = true`,
Morton order. Returns the shards rewritten and the bytes freed.
"""
function compact!(a::ShardArray; morton::Bool = false)
    rewritten = Ref{UInt64}(0)
    freed = Ref{UInt64}(0)
    flags = morton ? L.SHARD_FLAG_MORTON_ORDER : UInt32(0)
    @check L.shard_array_compact(a, flags, rewritten, freed)
    return (shards_rewritten = Int(rewritten[]), bytes_freed = Int(freed[]))
end
