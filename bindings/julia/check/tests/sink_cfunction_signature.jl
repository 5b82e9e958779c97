# The sink made with len as UInt64: shard_sink_fn's len is size_t (wrong on 32-bit platforms),
# and the @cfunction no longer matches the method cb_sink (Csize_t).
# sub: io.jl | CB_SINK[] = @cfunction(cb_sink, Int32, (Ptr{Cvoid}, Ptr{UInt8}, Csize_t)) | CB_SINK[] = @cfunction(cb_sink, Int32, (Ptr{Cvoid}, Ptr{UInt8}, UInt64))
# expect: cfunction: cb_sink as shard_sink_fn: argument 3 (len): `size_t` is Csize_t/UInt, not UInt64
# expect: callback-coverage: shard_sink_fn has no matching @cfunction
