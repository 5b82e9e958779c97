package io.zarrshard;

/**
 * The library's worker threads, which encode and decode inner chunks in parallel
 * ({@code shard_set_threads}, {@code shard_get_threads}). Process-wide: one setting for every
 * {@link Shard} and {@link ShardArray} of the process (the JVM loads the library once). A
 * viewer that runs its own thread pool sets 1, so each of its threads decodes on itself only.
 * Static methods only; thread-safe.
 */
public final class Threads {
    /** The most threads {@link #set(int)} accepts ({@code SHARD_MAX_THREADS}). */
    public static final int MAX = 1024;

    private Threads() {}

    /**
     * Sets the number of threads for calls that start afterwards: 0 = one per core (the default,
     * or the {@code ZARRSHARD_THREADS} environment variable), 1 = the calling thread only. Above
     * 1, a call hands its work to the library's threads and waits for them. The library's threads call a {@link ShardIO} or
     * {@link ShardStore} only when its capabilities say it is thread-safe.
     *
     * @param threads 0 to {@link #MAX}
     * @throws IllegalArgumentException if {@code threads} is negative (the setting is unchanged)
     * @throws ShardException {@link Status#INVALID_ARGUMENT} above {@link #MAX} or when the
     *     threads cannot be started (the setting is unchanged)
     */
    public static void set(int threads) {
        if (threads < 0) {
            throw new IllegalArgumentException("threads must be 0 (one per core) or more, not "
                    + threads);
        }
        Native.setThreads(threads);
    }

    /**
     * The number of threads encoding and decoding uses now (the default resolved: never 0).
     *
     * @return at least 1, at most {@link #MAX}
     */
    public static int get() {
        return Native.getThreads();
    }
}
