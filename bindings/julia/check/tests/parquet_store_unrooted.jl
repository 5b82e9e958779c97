# kerchunk_refs_parquet rooting the array instead of the StoreFunction whose address is the
# borrowed store table's userdata: the GC may move or free it while the library calls back.
# sub: src/ZarrShard.jl |     GC.@preserve sf begin\n        table = store_table(pointer_from_objref(sf))\n        @check L.shard_array_refs_parquet |     GC.@preserve a begin\n        table = store_table(pointer_from_objref(sf))\n        @check L.shard_array_refs_parquet
# expect: preserve: `pointer_from_objref(sf)`: `sf` is not among the preserved variables (a)
