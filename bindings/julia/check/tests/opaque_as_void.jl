# Ptr{Cvoid} for an opaque handle loses the type: Ptr{shard_codec} is required.
# expect: ccall: argument 1 (codec): Ptr{Cvoid} hides the pointee of `shard_codec *`
free_untyped(p::Ptr{Cvoid}) = ccall((:shard_codec_free, libzarrshard), Cvoid, (Ptr{Cvoid},), p)
