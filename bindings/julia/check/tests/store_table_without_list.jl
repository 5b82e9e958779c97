# The store table built with version 1's five values: a version-2 table needs list (or C_NULL).
# drop: store_table
# expect: wiring: 5 arguments, shard_store_callbacks has 6 fields
function store_table(userdata::Ptr{Cvoid})
    return L.shard_store_callbacks(
        L.SHARD_STORE_VERSION,
        UInt32(0),
        userdata,
        CB_STORE_OPEN_OBJECT[],
        CB_STORE_DESTROY[],
    )
end
