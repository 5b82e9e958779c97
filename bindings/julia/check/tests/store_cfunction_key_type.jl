# The store's open_object made with the key as a Cstring and io_out as an untyped pointer.
# sub: io.jl | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{L.shard_io_callbacks})) | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Cvoid}))
# expect: cfunction: cb_store_open_object as shard_store_callbacks.open_object: argument 3 (io_out)
# expect: callback-coverage: shard_store_callbacks.open_object has no matching @cfunction
