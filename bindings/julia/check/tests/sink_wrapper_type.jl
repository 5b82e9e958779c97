# The raw wrapper declaring the sink a Ref{Cvoid}: shard_sink_fn is a function pointer,
# passed as the @cfunction's Ptr{Cvoid}.
# sub: LibZarrShard.jl |            Ptr{Cvoid}, Ptr{Cvoid}),\n          array, format, zarr_format, url_prefix, url_prefix_len, name, name_len, sink, |            Ref{Cvoid}, Ptr{Cvoid}),\n          array, format, zarr_format, url_prefix, url_prefix_len, name, name_len, sink,
# expect: ccall: argument 8 (sink): `shard_sink_fn` is a function pointer: Ptr{Cvoid} (an @cfunction), not Ref{Cvoid}
