# Base.close as the Shard's finalizer: it takes the shard's lock, which may switch tasks, and
# a finalizer must not (the Julia manual's "Safe use of Finalizers").
# sub: src/ZarrShard.jl | finalizer(_close_handle!, s) | finalizer(close, s)
# expect: finalizer: `finalizer(close, s)`: close (ZarrShard/src/ZarrShard.jl
