# Base.close as the Shard's finalizer: it takes the shard's lock, which may switch tasks, and
# a finalizer must not (the Julia manual's "Safe use of Finalizers").
# sub: src/ZarrShard.jl | Shard(out[], codec, io, mode, false, ReentrantLock())\n        finalizer(_close_handle!, s) | Shard(out[], codec, io, mode, false, ReentrantLock())\n        finalizer(close, s)
# expect: finalizer: `finalizer(close, s)`: close (ZarrShard/src/ZarrShard.jl
