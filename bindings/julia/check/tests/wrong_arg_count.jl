# A wrapper that forgets an argument: shard_erase_chunk takes (shard, coords, rank).
# expect: ccall: shard_erase_chunk: 2 argument types, the C function takes 3
function erase_without_rank(shard, coords)
    ccall((:shard_erase_chunk, libzarrshard), Cint, (Ptr{shard_handle}, Ptr{UInt64}), shard, coords)
end
