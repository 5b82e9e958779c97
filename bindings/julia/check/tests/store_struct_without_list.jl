# The Julia mirror of shard_store_callbacks still in its version-1 layout while the header's
# table (and SHARD_STORE_VERSION) is version 2: the library would read `list` past its end.
# drop: shard_store_callbacks
# expect: struct: shard_store_callbacks: fields are (version, flags, userdata, open_object, destroy), the C struct has (version, flags, userdata, open_object, destroy, list)
struct shard_store_callbacks
    version::UInt32
    flags::UInt32
    userdata::Ptr{Cvoid}
    open_object::Ptr{Cvoid}
    destroy::Ptr{Cvoid}
end
