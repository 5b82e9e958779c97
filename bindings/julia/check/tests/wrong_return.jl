# shard_last_io_code returns int32_t.
# expect: ccall: return type: `int32_t` is Int32/Cint, not UInt32
io_code_bad() = ccall((:shard_last_io_code, libzarrshard), UInt32, ())
