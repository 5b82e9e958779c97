# The raw layer loses its shard_erase_chunk wrapper.
# drop: shard_erase_chunk
# expect: coverage: shard_erase_chunk is not wrapped by any ccall
# expect: raw-call: the raw layer defines no `shard_erase_chunk`
