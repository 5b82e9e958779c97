package io.zarrshard;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
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

    /**
     * A read-write store over a directory: key {@code c/0/1} is the file {@code root/c/0/1}
     * (a missing file reads as the fill value). Each {@link #open} returns a new ShardIO over
     * that file, which {@link #release} closes; nothing is opened until it is used.
     *
     * <ul>
     *   <li>Reads are positional reads of the file; several threads may read one ShardIO.
     *   <li>Partial updates (a region write covering a shard in part, an append) write the file
     *       in place ({@link ShardIO#write}, {@link ShardIO#truncate}), creating it and missing
     *       parent directories; a shard left with no stored chunk is deleted
     *       ({@link ShardIO#remove}).
     *   <li>Whole objects (a shard a region write covers entirely, a buffered shard's
     *       finalize) are new objects ({@link ShardIO#beginNew} … {@link ShardIO#commitNew}):
     *       written to a temporary sibling {@code NAME.tmp-PID-N} and renamed over the file in
     *       one step ({@code ATOMIC_MOVE}) only when complete. A reader sees the old file or the
     *       new one whole; after a failure the old file is byte for byte as it was and the
     *       temporary is deleted (as it is when the ShardIO is closed with one pending).
     *   <li>No fsync (as the library's own file store): readers see the old file or the new
     *       one whole, but after a power loss or an OS crash a file may hold neither. A partial
     *       update that fails is cut back by the library ({@code truncate}); one a crash
     *       interrupts may leave the file torn.
     * </ul>
     *
     * <p>Errors are the {@link IOException}s of {@code java.nio.file} (e.g.
     * {@link java.nio.file.AccessDeniedException}), which fail the call with {@link Status#IO}
     * and that exception as the cause; so does a call on an interrupted thread (the JDK closes
     * the file: {@link java.nio.channels.ClosedByInterruptException}). Thread-safe (each call
     * opens its own objects). A symbolic link at a shard's path is followed by reads and
     * in-place writes; a whole-shard write replaces the link itself, and a removal deletes
     * it. The
     * Parquet reference set can be written through it ({@link ShardArray#kerchunkRefsParquet},
     * each file in place), or with {@link ShardArray#kerchunkRefsParquetDir} (each file
     * through a temporary and a rename, {@code .zmetadata} last).
     *
     * <p>It lists, as the library's own file store does: {@link #list} walks the directory
     * part of the prefix ({@code root/c/} for {@code "c/"}) and returns every regular file
     * below it whose key starts with the prefix, keys joined with {@code /}. Symbolic links
     * are followed, so a directory reached under a second name lists its files under that name
     * too (they open under it); only a link back into a directory the walk is inside is not
     * entered. A missing directory, a file where a directory would be, a dangling link or a
     * link loop is no object; any other failure (a directory that cannot be read) is an
     * {@link IOException}, which fails the call: skipping it would pass a stored shard over.
     * A temporary of a write in progress may be listed; its key is not a shard key, so the
     * library ignores it.
     *
     * @param root the array's directory (where {@code zarr.json} is)
     * @return the store
     * @throws NullPointerException when {@code root} is null
     */
    static ShardStore directory(Path root) {
        return new DirectoryShardStore(Objects.requireNonNull(root, "root"));
    }
}
