package io.zarrshard;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.util.Objects;

/**
 * One of the library's own stores (C {@code shard_store_directory} / {@code shard_store_memory}):
 * storage for whole arrays and groups, implemented in the library, with no Java callback on
 * the I/O path. Use it where a {@link ShardStore} of your own is not needed.
 *
 * <pre>{@code
 * try (Store store = Store.directory(Path.of("data.zarr"), true);
 *      ShardArray array = ShardArray.create(store, "", new ArraySpec(
 *              new long[] {0, 512, 512}, new long[] {1, 256, 256}, "uint16")
 *              .shardShape(16, 512, 512), false)) {
 *     array.append(0, new long[] {1, 512, 512}, frame);   // a short[] of 512 * 512
 * }
 * }</pre>
 *
 * <ul>
 *   <li>{@link #directory(Path, boolean)}: key {@code a/b/c/0/1} is the file
 *       {@code root/a/b/c/0/1}. Whole objects (a shard written whole, {@code zarr.json}) are
 *       written to a temporary sibling and renamed over the file; partial updates are written
 *       in place; parent directories are made; a shard left all fill value is deleted; a
 *       replaced file keeps its mode. The same bytes zarr-python reads.
 *   <li>{@link #memory()}: objects in the library's memory, gone when the last user closes;
 *       for tests and scratch data.
 * </ul>
 *
 * <p><b>Paths.</b> Node paths ({@link ShardArray#create(Store, String, String, boolean)},
 * {@link ShardArray#open(Store, String)}, {@link Group#create(Store, String, String, boolean)})
 * are {@code ""} or null for the store's root, or names joined with {@code /}
 * ({@code "a/b"}). {@code ..}, {@code .}, an empty name, a leading {@code /}, a backslash or
 * a NUL are refused with {@link Status#INVALID_ARGUMENT} naming the path: no path reaches
 * outside the store's root.
 *
 * <p><b>Lifetime.</b> The store may be shared by any number of calls and arrays, on any
 * threads (the library's stores are thread-safe). Each array opened on it keeps the store
 * alive until the array is closed, so closing the Store (which gives this handle back with
 * {@code shard_store_release}) while arrays are open is safe; opening more on it then throws
 * {@link IllegalStateException}. A {@link Cleaner} gives back a forgotten one.
 */
public final class Store implements AutoCloseable {
    final NativeRef ref;
    private final Cleaner.Cleanable cleanable;
    private final String description;

    private Store(long ptr, String description) {
        this.ref = new NativeRef(ptr, p -> {
            Native.storeRelease(p);
            return null;
        }, "Store");
        this.description = description;
        this.cleanable = ShardCodec.CLEANER.register(this, ref);
    }

    private static Store adopt(long ptr, String description) {
        try {
            return new Store(ptr, description);
        } catch (Throwable t) {
            Native.storeRelease(ptr);
            throw t;
        }
    }

    /**
     * The library's directory store over {@code root} (C {@code shard_store_directory}).
     *
     * @param root the store's root directory (an array or group at the root has its
     *     {@code zarr.json} there)
     * @param create make {@code root} (and its parents) when missing
     *     ({@code SHARD_STORE_CREATE}); without it a missing root is an error
     * @return the store; close it
     * @throws ShardException {@link Status#IO} (no such directory without {@code create},
     *     {@code root} is not a directory, it cannot be made), {@link Status#INVALID_ARGUMENT}
     *     (an empty path); the message names the path
     * @throws IllegalArgumentException for a path of another file system than the default one
     *     (e.g. a zip file system), which the library cannot open
     * @throws NullPointerException when {@code root} is null
     */
    public static Store directory(Path root, boolean create) {
        Objects.requireNonNull(root, "root");
        if (root.getFileSystem() != FileSystems.getDefault()) {
            throw new IllegalArgumentException("the library opens only paths of the default"
                    + " file system, not " + root.getFileSystem().provider().getScheme() + ": "
                    + root);
        }
        String text = root.toString();
        byte[] path = cString(text, "directory");
        return adopt(Native.storeDirectory(path, create ? 2 : 0), "Store.directory(" + text + ")");
    }

    /**
     * The library's in-memory store (C {@code shard_store_memory}): empty, thread-safe; its
     * objects live as long as this Store or an array opened on it.
     *
     * @return the store; close it
     * @throws ShardException {@link Status#PANIC} only
     */
    public static Store memory() {
        return adopt(Native.storeMemory(), "Store.memory()");
    }

    /**
     * Whether {@link #close()} was called.
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return ref.isClosed();
    }

    /**
     * Give this handle back ({@code shard_store_release}). Arrays opened on the store stay
     * usable. Idempotent; thread-safe; never throws.
     */
    @Override
    public void close() {
        cleanable.clean();
    }

    /**
     * How the store was made, e.g. {@code Store.directory(/data/img.zarr)}.
     *
     * @return a description for messages
     */
    @Override
    public String toString() {
        return description;
    }

    /**
     * The UTF-8 bytes of {@code s} as a C string for the library: a NUL inside would cut it
     * short, so it is refused here with the status the library gives (a null node path is the
     * root, {@code ""}).
     */
    static byte[] cString(String s, String what) {
        if (s == null) {
            return new byte[0];
        }
        if (s.indexOf('\0') >= 0) {
            throw new ShardException(Status.INVALID_ARGUMENT.code(), "invalid " + what + " `"
                    + s.replace("\0", "\\0") + "`: contains NUL", 0, null);
        }
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
