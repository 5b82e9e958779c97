# verify rooting the array instead of the Vector{Problem} whose address is the callback's
# userdata: the GC may move or free the vector while the library calls cb_problem.
# sub: src/ZarrShard.jl |     GC.@preserve problems begin\n        @check L.shard_array_verify |     GC.@preserve a begin\n        @check L.shard_array_verify
# expect: preserve: `pointer_from_objref(problems)`: `problems` is not among the preserved variables (a)
