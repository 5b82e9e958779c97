# The store table declaring version 1 by hand while it carries list, and destroy's callback in
# list: the library would call cb_store_destroy with list's four arguments.
# drop: store_table
# expect: wiring: field version gets `UInt32(1)`, expected SHARD_STORE_VERSION; field list gets `CB_STORE_DESTROY[]`, expected CB_STORE_LIST (or C_NULL)
function store_table(userdata::Ptr{Cvoid})
    return L.shard_store_callbacks(
        UInt32(1),
        UInt32(0),
        userdata,
        CB_STORE_OPEN_OBJECT[],
        CB_STORE_DESTROY[],
        CB_STORE_DESTROY[],
    )
end
