# The Julian layer calling a raw wrapper with an argument missing (a MethodError at run time).
# expect: raw-call: shard_read_chunk: called with 4 arguments, defined with 5
function read_short(s, cc, A)
    GC.@preserve A begin
        @check L.shard_read_chunk(s, cc, Ptr{UInt8}(pointer(A)), sizeof(A))
    end
    return A
end
