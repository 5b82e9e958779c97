# The store's list made as returning nothing: the library would read a garbage int32_t status
# (a random code: the walk fails, lists nothing, or falls back at random).
# sub: io.jl | CB_STORE_LIST[] = @cfunction(cb_store_list, Int32, | CB_STORE_LIST[] = @cfunction(cb_store_list, Cvoid,
# expect: cfunction: cb_store_list as shard_store_callbacks.list: return type: `int32_t` is Int32/Cint, not Cvoid; cb_store_list (ZarrShard/src/io.jl
# expect: callback-coverage: shard_store_callbacks.list has no matching @cfunction
