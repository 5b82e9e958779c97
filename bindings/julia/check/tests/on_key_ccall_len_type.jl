# cb_store_list calling the library's on_key with the key length as UInt64: shard_key_fn takes
# a size_t (Csize_t), which is 32 bits on 32-bit platforms.
# sub: io.jl | ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t) | ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, UInt64)
# expect: ccall: ccall through on_key (a shard_key_fn): argument 3 (key_len): `size_t` is Csize_t/UInt, not UInt64
# expect: callback-coverage: shard_key_fn (the library's, passed to a callback) is called by no ccall
