# GC.@preserve of the wrong variable does not root the array pointer() points into.
# expect: preserve: `pointer(buf)`: `buf` is not among the preserved variables (shard)
function read_wrong_root(shard, coords)
    buf = Vector{UInt8}(undef, 512)
    GC.@preserve shard begin
        @check LibZarrShard.shard_read_chunk(shard, coords, 2, pointer(buf), 512)
    end
    return buf
end
