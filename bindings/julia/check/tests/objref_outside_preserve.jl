# pointer_from_objref(io) as userdata without rooting io for the call.
# expect: preserve: `pointer_from_objref(io)` is not inside a GC.@preserve block
function table_unrooted(io)
    ud = pointer_from_objref(io)
    return callback_table(io, ud, false)
end
