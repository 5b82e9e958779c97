# The library store's finalizer going through Base.close: close takes the store's lock, which
# may switch tasks, and a finalizer must not (the Julia manual's "Safe use of Finalizers").
# sub: src/stores.jl | s = new(t, p, false, ReentrantLock())\n        finalizer(_release_store!, s) | s = new(t, p, false, ReentrantLock())\n        finalizer(close, s)
# expect: finalizer: close (ZarrShard/src/stores.jl
