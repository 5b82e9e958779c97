# kerchunk_refs passing the I/O table's write callback as the sink: a 4-argument function the
# library would call with the sink's 3 arguments. (kerchunk_refs(io, …) still passes CB_SINK[]
# to shard_array_refs_stream, so the sink's coverage holds.)
# sub: src/ZarrShard.jl | sizeof(nm), CB_SINK[], pointer_from_objref(out)) | sizeof(nm), CB_WRITE[], pointer_from_objref(out))
# expect: wiring: shard_array_refs_write: argument 8 (sink) gets `CB_WRITE[]`, expected CB_SINK[]
