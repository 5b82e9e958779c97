# The types tuple is right but one value is missing.
# expect: ccall: 3 argument types but 2 values
erase_one(shard, coords) =
    ccall((:shard_erase_chunk, libzarrshard), Cint, (Ptr{shard_handle}, Ptr{UInt64}, Csize_t), shard, coords)
