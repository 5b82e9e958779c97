package io.zarrshard;

/**
 * The memory the library keeps between calls so that no inner chunk allocates
 * ({@code shard_release_memory}): the free list of encode segments (up to 4 MiB per library
 * thread), the buffers region reads fetched shards into (up to 8 MiB per library thread, 64 MiB in all) and,
 * per thread that encoded or decoded, its codec contexts (zstd, gzip) and one
 * scratch chunk. A viewer done writing or reading for a while frees it with {@link #release()};
 * later calls rebuild what they need, once per thread. Process-wide (the JVM loads the library
 * once). Static methods only; thread-safe.
 */
public final class RetainedMemory {
    private RetainedMemory() {}

    /**
     * What one {@link #release()} freed.
     *
     * @param bytes the library's own buffers freed (encode segments, read buffers, scratch
     *     chunks); exact
     * @param contexts codec contexts freed (zstd, libdeflate): counted, since libdeflate
     *     does not report its size
     */
    public record Released(long bytes, long contexts) {}

    /**
     * Frees the encode segments on the free list and the codec
     * contexts and scratch chunks of the calling thread and of every library thread; with {@code Threads.set(1)} in force, the
     * library's threads (which only sleep then) are ended too. Other Java threads keep theirs until they
     * exit or call this themselves. Memory in use by a call in progress on another thread is
     * not touched; waits until each library thread has finished its current inner chunk or
     * task. A second call right after frees nothing unless other threads worked in between.
     *
     * @return what was freed
     * @throws ShardException {@link Status#PANIC} only (a library bug)
     */
    public static Released release() {
        long[] r = Native.releaseMemory();
        return new Released(r[0], r[1]);
    }
}
