package io.zarrshard;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Objects;

/**
 * The host's storage for a whole array (the Java face of the C {@code shard_store_callbacks}):
 * it maps a key ({@code "c/0/1"}, per the array's {@code chunk_key_encoding}) to the
 * {@link ShardIO} of that object, as a file system maps a path to an open file.
 *
 * <p>A {@link ShardArray} calls {@link #open} once per shard a call touches and
 * {@link #release} when done with that object, both before the call returns, on the thread
 * of the call (the store is registered without {@code SHARD_STORE_THREAD_SAFE}). The object
 * need not exist: its {@link ShardIO} then reports {@link ShardIO.NotFound} and it reads as
 * the fill value.
 *
 * <p><b>Errors.</b> An exception from {@link #open} fails the array call with a
 * {@link ShardException} of status {@link Status#IO} whose cause is that exception, as a
 * {@link ShardIO}'s does; {@code open} returning {@code null} fails it the same way (cause a
 * {@link NullPointerException}). An exception from {@link #release} cannot fail the call any
 * more (the data is read or written by then): it is dropped, or chained as the cause when the
 * call fails for another reason.
 */
@FunctionalInterface
public interface ShardStore {

    /**
     * The ShardIO of the object at {@code key}, which need not exist. The array uses it until
     * it calls {@link #release} with it, before the array call returns.
     *
     * @param key the object's key, e.g. {@code "c/0/1"}
     * @return the object's ShardIO, not null
     * @throws IOException (or any other exception) to fail the array call with
     *     {@link Status#IO} and this exception as cause
     */
    ShardIO open(String key) throws IOException;

    /**
     * The array is done with {@code io}, a ShardIO from {@link #open}. By default, closes it
     * when it is {@link Closeable} (e.g. a {@link FileShardIO}).
     *
     * @param io the ShardIO {@link #open} returned
     * @throws IOException (or any other exception): dropped, or the cause of an array call
     *     that fails for another reason
     */
    default void release(ShardIO io) throws IOException {
        if (io instanceof Closeable c) {
            c.close();
        }
    }

    /**
     * A read-only store over a directory: key {@code c/0/1} is the file {@code root/c/0/1},
     * read with {@link FileShardIO} (a missing file reads as the fill value). Writing through
     * it fails with {@link Status#IO}: to write the Parquet reference set into a directory,
     * use {@link ShardArray#kerchunkRefsParquetDir}. Thread-safe (each call opens its own
     * file).
     *
     * @param root the array's directory (where {@code zarr.json} is)
     * @return the store
     * @throws NullPointerException when {@code root} is null
     */
    static ShardStore directory(Path root) {
        Objects.requireNonNull(root, "root");
        return key -> FileShardIO.open(root.resolve(key), FileShardIO.Mode.READ);
    }
}
