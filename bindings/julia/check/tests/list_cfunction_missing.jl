# No @cfunction made from cb_store_list: the list field has no callback, and nothing tells the C
# type of the on_key it calls through.
# sub: io.jl |     CB_STORE_LIST[] = @cfunction(cb_store_list, Int32,\n                                 (Ptr{Cvoid}, Ptr{UInt8}, Ptr{Cvoid}, Ptr{Cvoid}))\n | 
# expect: callback-coverage: shard_store_callbacks.list has no matching @cfunction
# expect: ccall: ccall through `on_key` (parameter 3 of cb_store_list): cb_store_list is made into no @cfunction
# expect: callback-coverage: shard_key_fn (the library's, passed to a callback) is called by no ccall
