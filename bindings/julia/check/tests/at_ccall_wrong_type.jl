# The @ccall form is checked like ccall: uint64_t * is not Ref{UInt32}.
# expect: ccall: shard_codec_num_chunks: argument 2 (count_out)
function num_chunks_bad(codec)
    n = Ref{UInt32}(0)
    @ccall libzarrshard.shard_codec_num_chunks(codec::Ptr{shard_codec}, n::Ref{UInt32})::Cint
    return n[]
end
