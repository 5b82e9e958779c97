# A callback that lets a Julia exception unwind into the C library.
# drop: cb_remove
# expect: callback: the body does not start with `try`
function cb_remove(ud::Ptr{Cvoid})::Int32
    remove_object!(_shardio(ud))
    return Int32(0)
end
