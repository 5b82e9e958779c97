# The array may be collected while C writes into it: pointer() needs GC.@preserve.
# expect: preserve: `pointer(buf)` is not inside a GC.@preserve block
function read_unrooted(shard, coords)
    buf = Vector{UInt8}(undef, 512)
    p = pointer(buf)
    @check LibZarrShard.shard_read_chunk(shard, coords, 2, p, 512)
    return buf
end
