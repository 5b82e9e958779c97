# Catching and rethrowing is no better than not catching.
# drop: cb_truncate
# expect: callback: the catch clause calls rethrow()
function cb_truncate(ud::Ptr{Cvoid}, len::UInt64)::Int32
    try
        truncate_object!(_shardio(ud), len)
        return Int32(0)
    catch e
        _callback_failed(e)
        rethrow()
    end
end
