package io.zarrshard;

import java.util.concurrent.atomic.AtomicLong;

/**
 * One native pointer, shared by the calls in flight and freed exactly once.
 *
 * <p>Every call brackets its native work with {@link #acquire()} / {@link #release()}. Closing
 * ({@link #run()}, the {@link java.lang.ref.Cleaner} action) marks the pointer closed: it is freed
 * at once when no call is using it, otherwise by the last call to finish. So a {@code close()}
 * racing with reads on other threads (or from inside a {@link ShardIO} callback) can never free
 * a handle the library is still using, and nothing ever blocks.
 *
 * <p>This object must not reference the owning {@code Shard}/{@code ShardCodec}: it is the
 * Cleaner action, and a reference back would keep the owner reachable forever.
 */
final class NativeRef implements Runnable {
    /** Frees a pointer; returns what went wrong on the way (the pointer is freed anyway), or
     * null. */
    @FunctionalInterface
    interface Free {
        Throwable free(long ptr);
    }

    private static final long CLOSED = 1; // state: (calls in flight << 1) | CLOSED
    private final AtomicLong state = new AtomicLong();
    private final long ptr;
    private final Free free;
    private final String what;
    // What the free reported when run() (close, or the Cleaner) freed the pointer itself; a
    // free by the last call in flight cannot report to anyone and drops it.
    private volatile Throwable closeFailure;

    NativeRef(long ptr, Free free, String what) {
        this.ptr = ptr;
        this.free = free;
        this.what = what;
    }

    /** The pointer, held until {@link #release()}; IllegalStateException once closed. */
    long acquire() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                throw new IllegalStateException(what + " is closed");
            }
            if (state.compareAndSet(s, s + 2)) {
                return ptr;
            }
        }
    }

    void release() {
        if (state.addAndGet(-2) == CLOSED) {
            free.free(ptr);
        }
    }

    boolean isClosed() {
        return (state.get() & CLOSED) != 0;
    }

    /** Close: idempotent. */
    @Override
    public void run() {
        for (;;) {
            long s = state.get();
            if ((s & CLOSED) != 0) {
                return;
            }
            if (state.compareAndSet(s, s | CLOSED)) {
                if (s == 0) {
                    closeFailure = free.free(ptr);
                }
                return;
            }
        }
    }

    /** What the free reported when {@link #run()} freed the pointer, once; else null. */
    Throwable takeCloseFailure() {
        Throwable t = closeFailure;
        closeFailure = null;
        return t;
    }
}
