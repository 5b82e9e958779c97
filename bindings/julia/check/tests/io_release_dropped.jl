# The raw layer losing shard_io_release: a ShardFile that is never handed over could not give
# the library's table back.
# drop: shard_io_release
# expect: coverage: shard_io_release is not wrapped by any ccall
# expect: raw-call: the raw layer defines no `shard_io_release`
