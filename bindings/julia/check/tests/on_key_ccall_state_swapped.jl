# cb_store_list calling through list_state (a void *, the library's data) instead of on_key.
# sub: io.jl | ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), list_state, | ccall(list_state, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), on_key,
# expect: ccall: ccall through `list_state`: parameter 4 (list_state) of shard_store_callbacks.list is `void *`, not a function pointer type
# expect: callback-coverage: shard_key_fn (the library's, passed to a callback) is called by no ccall
