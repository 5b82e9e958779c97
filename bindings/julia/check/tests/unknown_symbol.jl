# A typo in the symbol: the header has shard_read_chunks, not shard_read_chunkz.
# expect: ccall: `shard_read_chunkz` is not declared in zarrshard.h
read_bad(shard, coords, buf) = ccall((:shard_read_chunkz, libzarrshard), Cint,
    (Ptr{shard_handle}, Ptr{UInt64}, Csize_t, Csize_t, Ptr{UInt8}, Csize_t),
    shard, coords, 1, 2, buf, length(buf))
