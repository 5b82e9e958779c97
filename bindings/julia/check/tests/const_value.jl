# SHARD_IO_NOT_FOUND must be the header's value exactly.
# sub: LibZarrShard.jl | const SHARD_IO_NOT_FOUND = Int32(2147483647) | const SHARD_IO_NOT_FOUND = Int32(2147483646)
# expect: const: SHARD_IO_NOT_FOUND is 2147483647 in C
