# The store's list made with the prefix as a Cstring: a callback argument must be a Ptr (the
# library passes a raw char *), and the method says Ptr{UInt8}.
# sub: io.jl | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Cvoid}, Ptr{Cvoid})) | (Ptr{Cvoid}, Cstring, Ptr{Cvoid}, Ptr{Cvoid}))
# expect: cfunction: cb_store_list as shard_store_callbacks.list: argument 2 (prefix)
# expect: callback-coverage: shard_store_callbacks.list has no matching @cfunction
