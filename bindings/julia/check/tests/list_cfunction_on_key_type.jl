# The store's list made with on_key as Ptr{UInt8}: shard_key_fn is a function pointer
# (Ptr{Cvoid}), and the @cfunction no longer matches the method cb_store_list.
# sub: io.jl | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Cvoid}, Ptr{Cvoid})) | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{UInt8}, Ptr{Cvoid}))
# expect: cfunction: cb_store_list as shard_store_callbacks.list: argument 3 (on_key): `shard_key_fn` is a function pointer: Ptr{Cvoid} (an @cfunction), not Ptr{UInt8}; cb_store_list
# expect: callback-coverage: shard_store_callbacks.list has no matching @cfunction
