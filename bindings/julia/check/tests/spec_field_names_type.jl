# shard_array_spec.dimension_names declared as one string: the C field is an array of rank
# string pointers (const char *const *).
# sub: LibZarrShard.jl |     dimension_names::Ptr{Ptr{UInt8}} |     dimension_names::Ptr{UInt8}
# expect: struct: shard_array_spec: field dimension_names (`const char **`): Ptr{UInt8} for `const char **`
