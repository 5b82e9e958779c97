# A Julia mirror of shard_io_callbacks with two fields swapped: every callback after them
# would be called through the wrong slot.
# drop: shard_io_callbacks
# expect: struct: fields are (version, userdata, read, size, read_suffix, write, truncate, remove, destroy)
struct shard_io_callbacks
    version::UInt32
    userdata::Ptr{Cvoid}
    read::Ptr{Cvoid}
    size::Ptr{Cvoid}
    read_suffix::Ptr{Cvoid}
    write::Ptr{Cvoid}
    truncate::Ptr{Cvoid}
    remove::Ptr{Cvoid}
    destroy::Ptr{Cvoid}
end
