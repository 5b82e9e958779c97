# The write callback's len is size_t: UInt64 is wrong on 32-bit platforms, and no longer
# matches the method cb_write (Csize_t).
# sub: io.jl | CB_WRITE[] = @cfunction(cb_write, Int32, (Ptr{Cvoid}, UInt64, Ptr{UInt8}, Csize_t)) | CB_WRITE[] = @cfunction(cb_write, Int32, (Ptr{Cvoid}, UInt64, Ptr{UInt8}, UInt64))
# expect: cfunction: argument 4 (len): `size_t` is Csize_t/UInt, not UInt64
# expect: callback-coverage: shard_io_callbacks.write has no matching @cfunction
