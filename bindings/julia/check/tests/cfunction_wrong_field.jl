# The remove callback stored where destroy belongs.
# sub: io.jl | CB_DESTROY[] = @cfunction(cb_destroy, Cvoid, (Ptr{Cvoid},)) | CB_DESTROY[] = @cfunction(cb_remove, Int32, (Ptr{Cvoid},))
# expect: cfunction: stored in CB_DESTROY (field destroy) but the callback is cb_remove (field remove)
# expect: callback-coverage: shard_io_callbacks.destroy has no matching @cfunction
