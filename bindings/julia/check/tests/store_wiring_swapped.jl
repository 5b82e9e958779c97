# open_object and destroy swapped in the store table: destroy would be called as open_object.
# drop: store_table
# expect: wiring: field open_object gets `CB_STORE_DESTROY[]`, expected CB_STORE_OPEN_OBJECT (or C_NULL); field destroy gets `CB_STORE_OPEN_OBJECT[]`, expected CB_STORE_DESTROY (or C_NULL)
function store_table(userdata::Ptr{Cvoid})
    return L.shard_store_callbacks(
        L.SHARD_STORE_VERSION,
        UInt32(0),
        userdata,
        CB_STORE_DESTROY[],
        CB_STORE_OPEN_OBJECT[],
        CB_STORE_LIST[],
    )
end
