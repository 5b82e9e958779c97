# Storage: the ShardIO protocol (storage written in Julia), the C callbacks that call it, a
# memory implementation, host stores (key -> ShardIO), and ShardFile, the library's own file
# I/O for one shard object. Included into module ZarrShard.

"""
    ShardIO

The storage of one shard object, implemented in Julia. Subtypes must be `mutable struct`s
(the object's address is the callbacks' `userdata`). Methods:

| method                                | needed for            | does                                                       |
|:--------------------------------------|:----------------------|:-----------------------------------------------------------|
| `read_at!(io, offset::UInt64, buf)::Int` | always             | fill `buf` from byte `offset`; return the count; fewer than `length(buf)` only where the object ends; throw [`ObjectNotFound`](@ref) if it does not exist |
| `write_at(io, offset::UInt64, data)`  | write modes           | write all of `data` at `offset`, creating or extending the object |
| `objectsize(io)::UInt64`              | optional              | the object's size (or throw `ObjectNotFound`); enables the one-call suffix read of the index |
| `truncate_object!(io, len::UInt64)`   | optional, write modes | set the size (also from `close` of an unfinalized `:append` shard, which cuts the object back: maybe from a finalizer) |
| `remove_object!(io)`                  | optional, write modes | remove the object (a shard with nothing stored is removed; also as `truncate_object!`) |
| `writable(io)::Bool`                  | optional              | whether write modes may use it (default: a `write_at` method exists) |
| `commit!(io)`                         | optional              | make a finished write visible; called after a successful `finalize_shard!` |
| `begin_new!(io)`                      | optional, with the next three | start a new object beside the current one (a temporary file); readers keep seeing the current one |
| `write_new(io, offset::UInt64, data)` | with `begin_new!`     | write all of `data` at `offset` of the new object |
| `commit_new!(io, len::UInt64)`        | with `begin_new!`     | put the new object (`len` bytes) in place of the current one as one step (a rename); on failure throw, keep the current one, and forget the new one |
| `discard_new!(io)`                    | with `begin_new!`     | forget the new object; the current one stays |
| `release!(io)`                        | optional              | free resources; called exactly once, from `close(shard)` (maybe from a finalizer: do not block or yield) |

With the four new-object methods (C `create_new` … `discard_new`, version 3 of the table), a
whole shard — `finalize_shard!` of a `:buffered` shard, a shard a `ShardArray` region write
covers entirely — goes to a new object that replaces the current one only once complete: any
failure before `commit_new!` calls `discard_new!` and leaves the current object as it was.
There is at most one new object per `ShardIO` at a time. Without them such writes go through
`write_at` in place.

`buf` and `data` are `Vector{UInt8}`s wrapping the library's memory: valid only during the
call, never keep them. `read_at!`, `objectsize` may be called from many threads at once (make
them thread-safe); write-side methods from one thread at a time. Any exception is caught at
the C boundary and becomes an error code: `ObjectNotFound` -> `SHARD_IO_NOT_FOUND`,
`SystemError` -> its `errno`, `Base.IOError` -> its code, anything else ->
[`IO_CODE_EXCEPTION`](@ref); the failing call then throws a `ZarrShardError` whose `cause` is
that exception.
"""
abstract type ShardIO end

"""
    ObjectNotFound(what)

Thrown by a `ShardIO` when its object does not exist: the shard then reads as fill value.
"""
struct ObjectNotFound <: Exception
    what::String
end

"The I/O code a callback returns for a Julia exception that carries no error number."
const IO_CODE_EXCEPTION = Int32(0x4A4C4558)   # "JLEX"

"Read into `buf` from `offset`; return the count (see [`ShardIO`](@ref))."
function read_at! end
"Write all of `data` at `offset` (see [`ShardIO`](@ref))."
function write_at end
"The object's size (optional, see [`ShardIO`](@ref))."
function objectsize end
"Set the object's size (optional, see [`ShardIO`](@ref))."
function truncate_object! end
"Remove the object (optional, see [`ShardIO`](@ref))."
function remove_object! end

"Start a new object beside the current one (optional, see [`ShardIO`](@ref))."
function begin_new! end
"Write all of `data` at `offset` of the new object (see [`ShardIO`](@ref))."
function write_new end
"Put the new object, `len` bytes, in place of the current one (see [`ShardIO`](@ref))."
function commit_new! end
"Forget the new object; the current one stays (see [`ShardIO`](@ref))."
function discard_new! end

"Whether `io` has the four new-object methods (see [`ShardIO`](@ref))."
new_objects(io::ShardIO) = applicable(begin_new!, io) &&
    applicable(write_new, io, UInt64(0), UInt8[]) &&
    applicable(commit_new!, io, UInt64(0)) && applicable(discard_new!, io)

"Whether write modes may use `io`; by default, whether it has a `write_at` method."
writable(io::ShardIO) = applicable(write_at, io, UInt64(0), UInt8[])
"Make a finished write visible (after a successful `finalize_shard!`). Default: nothing."
commit!(io::ShardIO) = nothing
"Free `io`'s resources; called once, when its shard is closed. Default: nothing."
release!(io::ShardIO) = nothing

function _release_quietly(io::ShardIO)
    try
        release!(io)
    catch
    end
    return nothing
end

# ---------------------------------------------------------------------------------------------
# The C callbacks. Each one runs on the thread that called into the library, recovers the
# ShardIO from userdata, and catches every exception: nothing may unwind into the library.

const CALLBACK_EXCEPTION = :ZarrShard_callback_exception

"The code for an exception thrown by a `ShardIO` method (never 0)."
function io_code(e)::Int32
    e isa ObjectNotFound && return L.SHARD_IO_NOT_FOUND
    if e isa SystemError && e.errnum != 0
        return Int32(e.errnum)
    end
    if e isa Base.IOError && e.code != 0
        return Int32(e.code)
    end
    return IO_CODE_EXCEPTION
end

# Remember the exception on the current task, for the ZarrShardError the failing call throws
# on that same task: every failure of the call, in order (the first 8), since the library may
# go on after one (a failed append `write`, then a failed `truncate` rolling it back) and
# reports the first. `ObjectNotFound` is not a failure of an object (it reads as fill value)
# and is not kept, except from a `list` callback (`listing`), where every code fails the
# call; there a code equal to SHARD_STORE_CANNOT_LIST, which would turn the failure into a
# walk over every grid position, becomes IO_CODE_EXCEPTION. Never throws.
function _callback_failed(e; listing::Bool=false)::Int32
    code = IO_CODE_EXCEPTION
    try
        code = io_code(e)
        listing && code == L.SHARD_STORE_CANNOT_LIST && (code = IO_CODE_EXCEPTION)
        if code != L.SHARD_IO_NOT_FOUND || listing
            list = get!(() -> Tuple{Int32,Any}[], task_local_storage(),
                        CALLBACK_EXCEPTION)::Vector{Tuple{Int32,Any}}
            length(list) < 8 && push!(list, (code, e))
        end
    catch
    end
    return code
end

"Forget the callback exceptions of earlier calls on this task (before each C call)."
function _clear_callback_exceptions()
    delete!(task_local_storage(), CALLBACK_EXCEPTION)
    return nothing
end

# The exception of the first failed callback that returned `io_code` (the code the library
# reports), or nothing; the list is then forgotten.
function _take_callback_exception(io_code::Int32)
    list = pop!(task_local_storage(), CALLBACK_EXCEPTION, nothing)
    list === nothing && return nothing
    for (code, e) in list
        code == io_code && return e
    end
    return nothing
end

function _checked_count(n::Integer, len::Integer)::Csize_t
    0 <= n <= len || throw(ArgumentError("a ShardIO reported $n bytes for a $len-byte buffer"))
    return Csize_t(n)
end

# The userdata of a table is a ShardIO (a Shard's) or a StoreObject (from a store).
function _shardio(ud::Ptr{Cvoid})
    o = unsafe_pointer_to_objref(ud)
    return (o isa StoreObject ? o.io : o)::ShardIO
end

# int32_t (*read)(void *userdata, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out)
function cb_read(ud::Ptr{Cvoid}, offset::UInt64, len::Csize_t, buf::Ptr{UInt8},
                 read_out::Ptr{Csize_t})::Int32
    try
        io = _shardio(ud)
        n = read_at!(io, offset, unsafe_wrap(Array, buf, Int(len)))
        unsafe_store!(read_out, _checked_count(n, len))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*read_vectored)(void *userdata, size_t count, const uint64_t *offsets,
#                          const size_t *lens, uint8_t *const *bufs, size_t *read_outs)
# Version 2 of the table: several ranges in one call (here simply one read_at! each).
function cb_read_vectored(ud::Ptr{Cvoid}, count::Csize_t, offsets::Ptr{UInt64},
                          lens::Ptr{Csize_t}, bufs::Ptr{Ptr{UInt8}},
                          read_outs::Ptr{Csize_t})::Int32
    try
        io = _shardio(ud)
        for k in 1:Int(count)
            len = unsafe_load(lens, k)
            n = read_at!(io, unsafe_load(offsets, k), unsafe_wrap(Array, unsafe_load(bufs, k), Int(len)))
            unsafe_store!(read_outs, _checked_count(n, len), k)
        end
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*read_suffix)(void *userdata, size_t len, uint8_t *buf, size_t *read_out,
#                        uint64_t *object_size_out)
function cb_read_suffix(ud::Ptr{Cvoid}, len::Csize_t, buf::Ptr{UInt8}, read_out::Ptr{Csize_t},
                        object_size_out::Ptr{UInt64})::Int32
    try
        io = _shardio(ud)
        total = UInt64(objectsize(io))
        n = min(total, UInt64(len))
        got = read_at!(io, total - n, unsafe_wrap(Array, buf, Int(n)))
        unsafe_store!(read_out, _checked_count(got, n))
        unsafe_store!(object_size_out, total)
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*size)(void *userdata, uint64_t *size_out)
function cb_size(ud::Ptr{Cvoid}, size_out::Ptr{UInt64})::Int32
    try
        unsafe_store!(size_out, UInt64(objectsize(_shardio(ud))))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*write)(void *userdata, uint64_t offset, const uint8_t *buf, size_t len)
function cb_write(ud::Ptr{Cvoid}, offset::UInt64, buf::Ptr{UInt8}, len::Csize_t)::Int32
    try
        write_at(_shardio(ud), offset, unsafe_wrap(Array, buf, Int(len)))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*truncate)(void *userdata, uint64_t len)
function cb_truncate(ud::Ptr{Cvoid}, len::UInt64)::Int32
    try
        truncate_object!(_shardio(ud), len)
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*remove)(void *userdata)
function cb_remove(ud::Ptr{Cvoid})::Int32
    try
        remove_object!(_shardio(ud))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*create_new)(void *userdata, void **new_out): version 3. The new object's handle is
# the userdata itself: one new object per ShardIO at a time.
function cb_create_new(ud::Ptr{Cvoid}, new_out::Ptr{Ptr{Cvoid}})::Int32
    try
        begin_new!(_shardio(ud))
        unsafe_store!(new_out, ud)
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*write_new)(void *userdata, void *new_object, uint64_t offset, const uint8_t *buf,
#                      size_t len)
function cb_write_new(ud::Ptr{Cvoid}, new_object::Ptr{Cvoid}, offset::UInt64, buf::Ptr{UInt8},
                      len::Csize_t)::Int32
    try
        write_new(_shardio(ud), offset, unsafe_wrap(Array, buf, Int(len)))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# int32_t (*commit_new)(void *userdata, void *new_object, uint64_t len)
function cb_commit_new(ud::Ptr{Cvoid}, new_object::Ptr{Cvoid}, len::UInt64)::Int32
    try
        commit_new!(_shardio(ud), len)
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# void (*discard_new)(void *userdata, void *new_object): a failure can only be swallowed.
function cb_discard_new(ud::Ptr{Cvoid}, new_object::Ptr{Cvoid})::Cvoid
    try
        discard_new!(_shardio(ud))
    catch
    end
    return nothing
end

# void (*destroy)(void *userdata): the last callback; a failure can only be swallowed.
function cb_destroy(ud::Ptr{Cvoid})::Cvoid
    try
        o = unsafe_pointer_to_objref(ud)
        o isa StoreObject && _unroot!(o)
        release!(_shardio(ud))
    catch
    end
    return nothing
end

# C function pointers are process-specific: made in __init__, never precompiled.
const CB_READ = Ref{Ptr{Cvoid}}(C_NULL)
const CB_READ_SUFFIX = Ref{Ptr{Cvoid}}(C_NULL)
const CB_SIZE = Ref{Ptr{Cvoid}}(C_NULL)
const CB_WRITE = Ref{Ptr{Cvoid}}(C_NULL)
const CB_TRUNCATE = Ref{Ptr{Cvoid}}(C_NULL)
const CB_REMOVE = Ref{Ptr{Cvoid}}(C_NULL)
const CB_DESTROY = Ref{Ptr{Cvoid}}(C_NULL)
const CB_READ_VECTORED = Ref{Ptr{Cvoid}}(C_NULL)
const CB_CREATE_NEW = Ref{Ptr{Cvoid}}(C_NULL)
const CB_WRITE_NEW = Ref{Ptr{Cvoid}}(C_NULL)
const CB_COMMIT_NEW = Ref{Ptr{Cvoid}}(C_NULL)
const CB_DISCARD_NEW = Ref{Ptr{Cvoid}}(C_NULL)
const CB_STORE_OPEN_OBJECT = Ref{Ptr{Cvoid}}(C_NULL)
const CB_STORE_DESTROY = Ref{Ptr{Cvoid}}(C_NULL)
const CB_STORE_LIST = Ref{Ptr{Cvoid}}(C_NULL)
const CB_SINK = Ref{Ptr{Cvoid}}(C_NULL)
const CB_PROBLEM = Ref{Ptr{Cvoid}}(C_NULL)

function __init__()
    CB_READ[] = @cfunction(cb_read, Int32,
                           (Ptr{Cvoid}, UInt64, Csize_t, Ptr{UInt8}, Ptr{Csize_t}))
    CB_READ_SUFFIX[] = @cfunction(cb_read_suffix, Int32,
                                  (Ptr{Cvoid}, Csize_t, Ptr{UInt8}, Ptr{Csize_t}, Ptr{UInt64}))
    CB_SIZE[] = @cfunction(cb_size, Int32, (Ptr{Cvoid}, Ptr{UInt64}))
    CB_WRITE[] = @cfunction(cb_write, Int32, (Ptr{Cvoid}, UInt64, Ptr{UInt8}, Csize_t))
    CB_TRUNCATE[] = @cfunction(cb_truncate, Int32, (Ptr{Cvoid}, UInt64))
    CB_REMOVE[] = @cfunction(cb_remove, Int32, (Ptr{Cvoid},))
    CB_DESTROY[] = @cfunction(cb_destroy, Cvoid, (Ptr{Cvoid},))
    CB_READ_VECTORED[] = @cfunction(cb_read_vectored, Int32,
                                    (Ptr{Cvoid}, Csize_t, Ptr{UInt64}, Ptr{Csize_t},
                                     Ptr{Ptr{UInt8}}, Ptr{Csize_t}))
    CB_CREATE_NEW[] = @cfunction(cb_create_new, Int32, (Ptr{Cvoid}, Ptr{Ptr{Cvoid}}))
    CB_WRITE_NEW[] = @cfunction(cb_write_new, Int32,
                                (Ptr{Cvoid}, Ptr{Cvoid}, UInt64, Ptr{UInt8}, Csize_t))
    CB_COMMIT_NEW[] = @cfunction(cb_commit_new, Int32, (Ptr{Cvoid}, Ptr{Cvoid}, UInt64))
    CB_DISCARD_NEW[] = @cfunction(cb_discard_new, Cvoid, (Ptr{Cvoid}, Ptr{Cvoid}))
    CB_STORE_OPEN_OBJECT[] = @cfunction(cb_store_open_object, Int32,
                                        (Ptr{Cvoid}, Ptr{UInt8}, Ptr{L.shard_io_callbacks}))
    CB_STORE_DESTROY[] = @cfunction(cb_store_destroy, Cvoid, (Ptr{Cvoid},))
    CB_STORE_LIST[] = @cfunction(cb_store_list, Int32,
                                 (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Cvoid}, Ptr{Cvoid}))
    CB_SINK[] = @cfunction(cb_sink, Int32, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t))
    CB_PROBLEM[] = @cfunction(cb_problem, Int32,
                              (Ptr{Cvoid}, Ptr{UInt8}, Ptr{UInt64}, Csize_t, Cint, Ptr{UInt8}))
    return nothing
end

"""
    callback_table(io, userdata, write) -> LibZarrShard.shard_io_callbacks

The C callback table for `io` (version 3). `read`, `read_vectored` and `destroy` always; `read_suffix` and `size` when
`io` has an `objectsize` method; for write modes `write`, and `truncate`/`remove` when `io`
has those methods, and the four new-object callbacks when it has all four methods
([`new_objects`](@ref)). The caller must keep `io` alive (and `userdata` is its address).
"""
function callback_table(io::ShardIO, userdata::Ptr{Cvoid}, write::Bool)
    sized = applicable(objectsize, io)
    w = write && writable(io)
    n = w && new_objects(io)
    return L.shard_io_callbacks(
        L.SHARD_IO_VERSION,
        userdata,
        CB_READ[],
        sized ? CB_READ_SUFFIX[] : C_NULL,
        sized ? CB_SIZE[] : C_NULL,
        w ? CB_WRITE[] : C_NULL,
        w && applicable(truncate_object!, io, UInt64(0)) ? CB_TRUNCATE[] : C_NULL,
        w && applicable(remove_object!, io) ? CB_REMOVE[] : C_NULL,
        CB_DESTROY[],
        CB_READ_VECTORED[],
        n ? CB_CREATE_NEW[] : C_NULL,
        n ? CB_WRITE_NEW[] : C_NULL,
        n ? CB_COMMIT_NEW[] : C_NULL,
        n ? CB_DISCARD_NEW[] : C_NULL,
    )
end

# ---------------------------------------------------------------------------------------------
# Stores: key -> ShardIO, for ShardArray

"""
    Store

What arrays and groups live in: a store of objects by key. The library's own stores,
[`DirectoryStore`](@ref) and [`MemoryStore`](@ref), and [`HostStore`](@ref), a store written
in Julia (custom storage). [`create`](@ref), `open(store, path)`, [`create_group`](@ref) and
[`ShardArray`](@ref) take any of them; where a store is expected, any other value (a function
from key to [`ShardIO`](@ref)) is made a `HostStore`.
"""
abstract type Store end

"""
    HostStore(open)

A store written in Julia (custom storage): `open(key::String)` returns the [`ShardIO`](@ref)
of the object at `key` (`"c/0/1"`, `"a/b/zarr.json"`), or a [`ShardFile`](@ref) (the
library's file I/O for that object); [`list_keys`](@ref)`(open, prefix)` may list. Its
address is the store table's `userdata`: an array opened on it keeps it (its `store` field),
and a call that borrows it ([`create_group`](@ref), [`kerchunk_refs_parquet`](@ref)) roots it
for the call. A function given where a store is expected is wrapped in one.
"""
mutable struct HostStore <: Store
    open::Any
end

"The `Store` for `x`: itself, or a [`HostStore`](@ref) calling it."
as_store(s::Store) = s
as_store(f) = HostStore(f)

"""
    StoreObject(io)

What an object table's `userdata` points at when a store opened the object. Nothing in Julia
holds it while the library uses it, so it is rooted in `STORE_OBJECTS` from `open_object`
until its `destroy` (which also calls `release!(io)`; both happen before the `ShardArray`
call returns, on its thread).
"""
mutable struct StoreObject
    io::ShardIO
end

const STORE_OBJECTS = IdDict{StoreObject,Nothing}()
const STORE_OBJECTS_LOCK = ReentrantLock()

function _root!(o::StoreObject)
    lock(STORE_OBJECTS_LOCK)
    try
        STORE_OBJECTS[o] = nothing
    finally
        unlock(STORE_OBJECTS_LOCK)
    end
    return o
end

function _unroot!(o::StoreObject)
    lock(STORE_OBJECTS_LOCK)
    try
        delete!(STORE_OBJECTS, o)
    finally
        unlock(STORE_OBJECTS_LOCK)
    end
    return nothing
end

# int32_t (*open_object)(void *userdata, const char *key, shard_io_callbacks *io_out)
# The object may be missing (its ShardIO throws ObjectNotFound): it then reads as fill value.
function cb_store_open_object(ud::Ptr{Cvoid}, key::Ptr{UInt8},
                              io_out::Ptr{L.shard_io_callbacks})::Int32
    try
        store = unsafe_pointer_to_objref(ud)::HostStore
        io = store.open(unsafe_string(key))
        if io isa ShardFile
            # The library's own table: handed over, the library calls its destroy.
            unsafe_store!(io_out, _hand_over!(io))
            return Int32(0)
        end
        io isa ShardIO ||
            throw(ArgumentError("a store must return a ShardIO or a ShardFile, not $(typeof(io))"))
        obj = StoreObject(io)
        table = GC.@preserve obj callback_table(io, pointer_from_objref(obj), true)
        _root!(obj)   # from here the library owns the table: cb_destroy unroots obj
        unsafe_store!(io_out, table)
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# void (*destroy)(void *userdata): the ShardArray holds its HostStore; nothing to free.
function cb_store_destroy(ud::Ptr{Cvoid})::Cvoid
    try
        ud == C_NULL && return nothing
    catch
    end
    return nothing
end

"""
    list_keys(store, prefix::String) -> collection of `String`s, or `nothing`

The optional listing hook of the store protocol: the keys of the objects `store` holds whose
keys start with `prefix` (the library asks for the array's shard key prefix, `"c/"`), in any
order, or `nothing` when `store` cannot list. The default method returns `nothing`; define a
method for your store's type to make walks over the stored shards ([`verify`](@ref),
[`kerchunk_refs`](@ref), [`kerchunk_refs_parquet`](@ref)) cost one listing plus one object per
*stored* shard instead of one `store(key)` per position of the chunk grid. [`DictStore`](@ref)
implements it.

Contract (the library's, `shard_store_callbacks.list`): list **every** stored object under
`prefix`. Extra keys (other objects, keys outside the grid) are ignored, but a stored shard
left out is treated as missing: `verify` does not check it, the reference sets do not
reference it. Return `nothing` rather than a partial listing when you cannot list completely
(a server without listing): the library then asks every grid position, as without the hook.
Runs on the calling task's thread, in the middle of the C call: do not yield (see
[`ShardIO`](@ref)). An exception becomes the `cause` of the call's [`ZarrShardError`](@ref)
(`SHARD_ERR_IO`; `io_code` per [`ShardIO`](@ref)'s rules, [`IO_CODE_EXCEPTION`](@ref) for
most; an [`ObjectNotFound`](@ref) gives `SHARD_IO_NOT_FOUND` and is the cause too, since a
listing that failed must not pass for an empty one; a code that would equal
`SHARD_STORE_CANNOT_LIST` is `IO_CODE_EXCEPTION`).
"""
list_keys(store, prefix::String) = nothing

# int32_t (*list)(void *userdata, const char *prefix, shard_key_fn on_key, void *list_state)
# userdata is the HostStore's address, as for open_object. Calls list_keys on the store
# function: `nothing` is SHARD_STORE_CANNOT_LIST; else the library's on_key (a
# `void (*)(void *list_state, const char *key, size_t key_len)`) once per key, with the key's
# UTF-8 bytes (rooted by GC.@preserve; the library copies them during the call). Runs on the
# calling task's thread (the library calls `list` there always); an exception becomes a
# non-zero code, which fails the call with SHARD_ERR_IO, the exception as its cause.
function cb_store_list(ud::Ptr{Cvoid}, prefix::Ptr{UInt8}, on_key::Ptr{Cvoid},
                       list_state::Ptr{Cvoid})::Int32
    try
        store = unsafe_pointer_to_objref(ud)::HostStore
        listed = list_keys(store.open, unsafe_string(prefix))
        listed === nothing && return L.SHARD_STORE_CANNOT_LIST
        for k in listed
            k isa AbstractString ||
                throw(ArgumentError("list_keys must return strings, got a $(typeof(k))"))
            key = String(k)
            GC.@preserve key begin
                ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), list_state, pointer(key),
                      sizeof(key))
            end
        end
        return Int32(0)
    catch e
        return _callback_failed(e; listing=true)
    end
end

"""
    store_table(userdata) -> LibZarrShard.shard_store_callbacks

The C store table (version 2) whose `userdata` is a `HostStore`'s address. `list` is
always `cb_store_list`: whether the store lists is decided by [`list_keys`](@ref) at each
call (`nothing`, the default, is `SHARD_STORE_CANNOT_LIST`). No `SHARD_STORE_THREAD_SAFE`:
every callback runs on the task and thread of the `ShardArray` call, so a callback's
exception reaches that call's `ZarrShardError`.
"""
function store_table(userdata::Ptr{Cvoid})
    return L.shard_store_callbacks(
        L.SHARD_STORE_VERSION,
        UInt32(0),
        userdata,
        CB_STORE_OPEN_OBJECT[],
        CB_STORE_DESTROY[],
        CB_STORE_LIST[],
    )
end

# ---------------------------------------------------------------------------------------------
# The sink: text the library hands over in pieces (shard_array_refs_write and
# shard_array_refs_stream, for the two kerchunk_refs methods)

# int32_t (*shard_sink_fn)(void *userdata, const uint8_t *data, size_t len)
# userdata is the address of a Ref{IO} holding where the text goes: the IOBuffer kerchunk_refs
# collects it in, or the caller's IO for kerchunk_refs(io, …) (boxed, since an IO may be
# immutable, e.g. an IOContext; the box rooted by GC.@preserve for the call);
# `data` is the library's, valid only during the call: written (copied), never kept. Runs on
# the calling task's thread, in the middle of the C call: an IOBuffer or IOStream write does
# not yield (a socket's may: see kerchunk_refs(io, …)). An exception (say OutOfMemoryError,
# or the IO's own error) becomes a non-zero code, which stops the call with SHARD_ERR_IO; the
# @check then throws the ZarrShardError carrying it as `cause`.
function cb_sink(ud::Ptr{Cvoid}, data::Ptr{UInt8}, len::Csize_t)::Int32
    try
        out = (unsafe_pointer_to_objref(ud)::Base.RefValue{IO})[]
        unsafe_write(out, data, len) == len ||
            throw(EOFError())   # a short write: the IO took less than the piece
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# ---------------------------------------------------------------------------------------------
# Problems: what shard_array_verify finds, one call each (for verify)

# int32_t (*shard_problem_fn)(void *userdata, const char *key, const uint64_t *chunk,
#                             size_t chunk_rank, shard_status status, const char *message)
# userdata is the address of the Vector{Problem} verify collects them in (rooted there by
# GC.@preserve for the call); `key`, `chunk` and `message` are the library's, valid only during
# the call: copied into a Problem, never kept. The chunk coordinates become the Julian layer's
# (reversed, 1-based); NULL and 0 (a problem of the whole shard) an empty vector. Runs on the
# calling task's thread; push! does not yield. An exception (say OutOfMemoryError) becomes a
# non-zero code, which stops the check with SHARD_ERR_IO; verify's @check then throws the
# ZarrShardError carrying it as `cause`.
function cb_problem(ud::Ptr{Cvoid}, key::Ptr{UInt8}, chunk::Ptr{UInt64}, chunk_rank::Csize_t,
                    status::Cint, message::Ptr{UInt8})::Int32
    try
        out = unsafe_pointer_to_objref(ud)::Vector{Problem}
        n = Int(chunk_rank)
        coords = UInt64[unsafe_load(chunk, n - i + 1) + 1 for i in 1:n]
        push!(out, Problem(unsafe_string(key), coords, Int32(status), unsafe_string(message)))
        return Int32(0)
    catch e
        return _callback_failed(e)
    end
end

# ---------------------------------------------------------------------------------------------
# ShardFile: the library's file I/O for one shard object

"""
    ShardFile(path)

One shard object = one file, through the library's own file I/O (`shard_io_file`): reads with
`pread`, a whole shard (`:buffered`, `:streaming`, a `finalize_shard!` that rewrites it)
written to a temporary file renamed over `path` once complete, updates (`:append`,
`:in_place`) in place. A missing file reads as the fill value. The same file I/O as
[`DirectoryStore`](@ref)'s objects; no Julia callback runs.

Give it to [`Shard`](@ref)/`open(codec, file)`, or return it from a [`HostStore`](@ref)'s
function: the library's table is then handed over (the handle releases it at `close`), and a
`ShardFile` serves one open only. One that is never handed over is released by `close(file)`
or its finalizer (`shard_io_release`). Throws [`ZarrShardError`](@ref)
(`SHARD_ERR_INVALID_ARGUMENT`) for a path with a NUL byte.
"""
mutable struct ShardFile
    table::Base.RefValue{L.shard_io_callbacks}   # the library's; zeroed once released
    path::String
    owned::Bool      # true while this object must release the table
    lock::ReentrantLock

    function ShardFile(path::AbstractString)
        p = String(path)
        t = Ref{L.shard_io_callbacks}()
        @check L.shard_io_file(p, UInt32(0), t)
        f = new(t, p, true, ReentrantLock())
        finalizer(_release_file!, f)
        return f
    end
end

# Finalizer and close: give the table back unless it was handed over.
function _release_file!(f::ShardFile)
    if f.owned
        f.owned = false
        L.shard_io_release(f.table)   # calls its destroy, zeroes the table
    end
    return nothing
end

"Give the library's table back (`shard_io_release`) unless an open took it. Idempotent."
function Base.close(f::ShardFile)
    lock(f.lock)
    try
        _release_file!(f)
    finally
        unlock(f.lock)
    end
    return nothing
end

# The table, now the receiver's (a shard handle or the library's store walk): this object
# no longer releases it.
function _hand_over!(f::ShardFile)
    lock(f.lock)
    try
        f.owned || throw(ArgumentError("ShardFile($(repr(f.path))) was used or closed already"))
        f.owned = false
        return f.table[]
    finally
        unlock(f.lock)
    end
end

Base.show(io::IO, f::ShardFile) = print(io, "ZarrShard.ShardFile(", repr(f.path), ")")

# ---------------------------------------------------------------------------------------------
# MemoryShardIO

"""
    MemoryShardIO()
    MemoryShardIO(bytes)

A shard object in memory: `nothing` (no object; reads as fill value) or a byte vector.
Thread-safe (one lock). `release!` does nothing, so one `MemoryShardIO` can be written by one
shard and read by the next; [`contents`](@ref) copies its bytes out.
"""
mutable struct MemoryShardIO <: ShardIO
    data::Union{Vector{UInt8},Nothing}
    lock::ReentrantLock
end

MemoryShardIO() = MemoryShardIO(nothing, ReentrantLock())
MemoryShardIO(bytes::AbstractVector{UInt8}) = MemoryShardIO(Vector{UInt8}(bytes), ReentrantLock())

# Whether the object exists (holds bytes, maybe none), without copying them.
function _exists(m::MemoryShardIO)
    lock(m.lock)
    try
        return m.data !== nothing
    finally
        unlock(m.lock)
    end
end

"A copy of the object's bytes, or `nothing` when it does not exist."
function contents(m::MemoryShardIO)
    lock(m.lock)
    try
        return m.data === nothing ? nothing : copy(m.data)
    finally
        unlock(m.lock)
    end
end

function read_at!(m::MemoryShardIO, offset::UInt64, buf::Vector{UInt8})
    lock(m.lock)
    try
        d = m.data
        d === nothing && throw(ObjectNotFound("MemoryShardIO"))
        n = offset >= length(d) ? 0 : Int(min(UInt64(length(buf)), length(d) - offset))
        n > 0 && copyto!(buf, 1, d, Int(offset) + 1, n)
        return n
    finally
        unlock(m.lock)
    end
end

function objectsize(m::MemoryShardIO)
    lock(m.lock)
    try
        m.data === nothing && throw(ObjectNotFound("MemoryShardIO"))
        return UInt64(length(m.data))
    finally
        unlock(m.lock)
    end
end

writable(::MemoryShardIO) = true

function _resize_zeroed!(d::Vector{UInt8}, len::Integer)
    old = length(d)
    resize!(d, len)
    len > old && fill!(view(d, old + 1:len), 0x00)
    return d
end

function write_at(m::MemoryShardIO, offset::UInt64, data::Vector{UInt8})
    lock(m.lock)
    try
        d = m.data === nothing ? UInt8[] : m.data
        stop = Int(offset) + length(data)
        length(d) < stop && _resize_zeroed!(d, stop)
        isempty(data) || copyto!(d, Int(offset) + 1, data, 1, length(data))
        m.data = d
    finally
        unlock(m.lock)
    end
    return nothing
end

function truncate_object!(m::MemoryShardIO, len::UInt64)
    lock(m.lock)
    try
        m.data = _resize_zeroed!(m.data === nothing ? UInt8[] : m.data, Int(len))
    finally
        unlock(m.lock)
    end
    return nothing
end

function remove_object!(m::MemoryShardIO)
    lock(m.lock)
    try
        m.data = nothing
    finally
        unlock(m.lock)
    end
    return nothing
end

# ---------------------------------------------------------------------------------------------
# DictStore: a store of MemoryShardIOs that lists

"""
    DictStore()

A store written in Julia (a host store, see [`HostStore`](@ref)): [`MemoryShardIO`](@ref)s by
key, in a `Dict`, that lists: `store(key)` returns the object at
`key` (`get!(MemoryShardIO, …)`: a new, empty one the first time), and
[`list_keys`](@ref)`(store, prefix)` the keys under `prefix` whose object exists (holds
bytes), so [`verify`](@ref) and the reference sets open only the stored shards. `store[key]`,
`store[key] = io`, `haskey(store, key)` and `keys(store)` (a sorted copy; with keys of
objects that were asked for but never written) reach the objects. Thread-safe (one lock).
"""
struct DictStore
    objects::Dict{String,MemoryShardIO}
    lock::ReentrantLock
end

DictStore() = DictStore(Dict{String,MemoryShardIO}(), ReentrantLock())

function (s::DictStore)(key::AbstractString)
    lock(s.lock)
    try
        return get!(MemoryShardIO, s.objects, String(key))
    finally
        unlock(s.lock)
    end
end

function Base.getindex(s::DictStore, key::AbstractString)
    lock(s.lock)
    try
        return s.objects[String(key)]
    finally
        unlock(s.lock)
    end
end

function Base.setindex!(s::DictStore, io::MemoryShardIO, key::AbstractString)
    lock(s.lock)
    try
        s.objects[String(key)] = io
    finally
        unlock(s.lock)
    end
    return s
end

function Base.haskey(s::DictStore, key::AbstractString)
    lock(s.lock)
    try
        return haskey(s.objects, String(key))
    finally
        unlock(s.lock)
    end
end

function Base.keys(s::DictStore)
    lock(s.lock)
    try
        return sort!(collect(keys(s.objects)))
    finally
        unlock(s.lock)
    end
end

function list_keys(s::DictStore, prefix::String)
    lock(s.lock)
    try
        return sort!([k for (k, m) in s.objects if startswith(k, prefix) && _exists(m)])
    finally
        unlock(s.lock)
    end
end
