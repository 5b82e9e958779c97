# A status number that drifted from the header.
# sub: LibZarrShard.jl | SHARD_ERR_BUSY = 12 | SHARD_ERR_BUSY = 13
# expect: enum: @enum shard_status: members are
