# cb_store_list calling on_key as if it returned an Int32: shard_key_fn returns void.
# sub: io.jl | ccall(on_key, Cvoid, | ccall(on_key, Int32,
# expect: ccall: ccall through on_key (a shard_key_fn): return type: `void` is Cvoid (return only), not Int32
# expect: callback-coverage: shard_key_fn (the library's, passed to a callback) is called by no ccall
