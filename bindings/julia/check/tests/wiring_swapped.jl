# read_suffix and size swapped in the table: each would be called with the other's arguments.
# drop: callback_table
# expect: wiring: field read_suffix gets `sized ? CB_SIZE[] : C_NULL`, expected CB_READ_SUFFIX
function callback_table(io::ShardIO, userdata::Ptr{Cvoid}, write::Bool)
    sized = applicable(objectsize, io)
    w = write && writable(io)
    n = w && new_objects(io)
    return L.shard_io_callbacks(
        L.SHARD_IO_VERSION,
        userdata,
        CB_READ[],
        sized ? CB_SIZE[] : C_NULL,
        sized ? CB_READ_SUFFIX[] : C_NULL,
        w ? CB_WRITE[] : C_NULL,
        w && applicable(truncate_object!, io, UInt64(0)) ? CB_TRUNCATE[] : C_NULL,
        w && applicable(remove_object!, io) ? CB_REMOVE[] : C_NULL,
        CB_DESTROY[],
        CB_READ_VECTORED[],
        n ? CB_CREATE_NEW[] : C_NULL,
        n ? CB_WRITE_NEW[] : C_NULL,
        n ? CB_COMMIT_NEW[] : C_NULL,
        n ? CB_DISCARD_NEW[] : C_NULL,
    )
end
