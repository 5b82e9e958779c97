# A mutable Julia struct is a pointer to a boxed object, not the C layout.
# sub: LibZarrShard.jl | struct shard_chunk_location | mutable struct shard_chunk_location
# expect: struct: shard_chunk_location: is a mutable struct
# expect: ccall: shard_chunk_info: argument 4 (info_out)
