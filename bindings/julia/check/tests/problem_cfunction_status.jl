# The problem callback made with status as Int64: shard_problem_fn's status is the 32-bit enum
# shard_status (the value would be read from the wrong width), and the @cfunction no longer
# matches the method cb_problem (Cint).
# sub: io.jl | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{UInt64}, Csize_t, Cint, Ptr{UInt8})) | (Ptr{Cvoid}, Ptr{UInt8}, Ptr{UInt64}, Csize_t, Int64, Ptr{UInt8}))
# expect: cfunction: cb_problem as shard_problem_fn: argument 5 (status): enum `shard_status` is Cint/Int32/Cuint/UInt32 or its Julia @enum, not Int64
# expect: callback-coverage: shard_problem_fn has no matching @cfunction
