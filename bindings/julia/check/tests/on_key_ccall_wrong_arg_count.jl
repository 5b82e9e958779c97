# cb_store_list calling on_key without the key length: shard_key_fn takes three arguments.
# sub: io.jl | ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t), list_state, pointer(key),\n                      sizeof(key)) | ccall(on_key, Cvoid, (Ptr{Cvoid}, Ptr{UInt8}), list_state, pointer(key))
# expect: ccall: ccall through on_key (a shard_key_fn): 2 argument types, shard_key_fn takes 3
# expect: callback-coverage: shard_key_fn (the library's, passed to a callback) is called by no ccall
