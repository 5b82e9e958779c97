# kerchunk_refs rooting the array instead of the IOBuffer whose address is the sink's
# userdata: the GC may move or free the buffer while the library calls the sink.
# sub: src/ZarrShard.jl |     GC.@preserve out begin\n        @check L.shard_array_refs_write |     GC.@preserve a begin\n        @check L.shard_array_refs_write
# expect: preserve: `pointer_from_objref(out)`: `out` is not among the preserved variables (a)
