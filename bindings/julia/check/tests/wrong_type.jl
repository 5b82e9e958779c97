# size_t * is Ref{Csize_t} / Ptr{Csize_t}; UInt64 is only right on 64-bit platforms.
# expect: ccall: argument 2 (rank_out): Ref{UInt64} for `size_t *`: `size_t` is Csize_t/UInt, not UInt64
function rank_bad(codec)
    r = Ref{UInt64}(0)
    ccall((:shard_codec_rank, libzarrshard), Cint, (Ptr{shard_codec}, Ref{UInt64}), codec, r)
    r[]
end
