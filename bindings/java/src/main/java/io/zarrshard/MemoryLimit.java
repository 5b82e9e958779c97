package io.zarrshard;

/**
 * The library's memory limit ({@code shard_set_memory_limit}, {@code shard_get_memory_limit}):
 * the most bytes one buffer for decoded data may take. Sizes come from metadata and indexes,
 * which may be damaged or hostile; a larger buffer is refused with
 * {@link Status#INVALID_ARGUMENT} before it is allocated. The library holds the size
 * {@link Shard#readChunkRaw} allocates from the index to the same limit. Process-wide (the
 * JVM loads the library once). Static methods only; thread-safe.
 */
public final class MemoryLimit {
    private MemoryLimit() {}

    /**
     * Sets the limit for calls that start afterwards; 0 restores the default (the
     * {@code ZARRSHARD_MEMORY_LIMIT} environment variable in bytes, else 4 GiB).
     *
     * @param bytes 0, or the most bytes one buffer may take
     * @throws IllegalArgumentException if {@code bytes} is negative (the limit is unchanged)
     */
    public static void set(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("a memory limit is 0 (the default) or more bytes, not "
                    + bytes);
        }
        Native.setMemoryLimit(bytes);
    }

    /**
     * The limit in bytes now.
     *
     * @return at least 1 (a limit above {@code Long.MAX_VALUE} reads as {@code Long.MAX_VALUE})
     */
    public static long get() {
        return Native.getMemoryLimit();
    }
}
