package io.zarrshard;

import java.io.Closeable;
import java.io.IOException;
import java.util.List;

/**
 * The host's storage for a whole array (the Java face of the C {@code shard_store_callbacks}):
 * it maps a key ({@code "c/0/1"}, per the array's {@code chunk_key_encoding}) to the
 * {@link ShardIO} of that object, as a file system maps a path to an open file. Implement it
 * for custom storage (an object store, a database); for a local directory or memory, the
 * library's own {@link Store} needs no Java code on the I/O path.
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
 * call fails for another reason. {@link #list} fails the call as {@link #open} does.
 *
 * <p><b>Listing.</b> Walks over the stored shards ({@link ShardArray#verify},
 * {@link ShardArray#kerchunkRefs}, {@link ShardArray#kerchunkRefsParquet},
 * {@link ShardArray#kerchunkRefsParquetDir}) first ask {@link #list} for the stored keys. A
 * store that lists (e.g. an object store's list-objects call) is then asked to {@link #open}
 * only the shards it listed: on a sparse grid over a remote store that is one listing instead
 * of a request per grid position. A store that cannot list ({@code list} returns
 * {@code null}, the default) has every grid position opened, as before.
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
     * when it is {@link Closeable} (e.g. a ShardIO over a file the store opened for it).
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
     * The keys of the stored objects whose keys start with {@code prefix}, in any order, or
     * {@code null} when this store cannot list (the default): the array then opens every
     * position of the shard grid instead. Called once per walk over the stored shards
     * ({@link ShardArray#verify}, the {@code kerchunkRefs*} methods), on the thread of that
     * call, before any {@link #open}.
     *
     * <p><b>Contract.</b> Listing more keys is harmless: keys that are not this array's shard
     * keys ({@code zarr.json}, {@code c/01/0}, a position outside the grid) are ignored, and a
     * listed key whose object does not exist reads as missing. Listing fewer is not: a stored
     * shard left out is treated as missing (not checked by {@code verify}, not referenced by
     * {@code kerchunkRefs*}). Keys are passed to the library as UTF-8.
     *
     * @param prefix the start of the keys asked for, e.g. {@code "c/"} (the array's chunk key
     *     encoding); may be empty
     * @return the keys (none of them null), or {@code null} when this store cannot list
     * @throws IOException (or any other exception) to fail the array call with
     *     {@link Status#IO} and this exception as cause, as from {@link #open}; a null key in
     *     the result fails it the same way (cause a {@link NullPointerException})
     */
    default List<String> list(String prefix) throws IOException {
        return null;
    }
}
