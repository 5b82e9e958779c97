# A zarrshard symbol looked up in another library.
# expect: ccall: shard_version: calls into `"libzarrshard_old"`, not `libzarrshard`
old_version() = ccall((:shard_version, "libzarrshard_old"), Cstring, ())
