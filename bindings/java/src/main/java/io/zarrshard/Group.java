package io.zarrshard;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * Zarr v3 groups (C {@code shard_group_create}): a {@code zarr.json} with
 * {@code "node_type": "group"} and its attributes, under which arrays and groups are created
 * by path. Enough for an OME-Zarr (NGFF 0.5) image: a group with {@code ome} attributes and
 * arrays {@code 0}, {@code 1}, {@code 2} under it.
 *
 * <pre>{@code
 * try (Store store = Store.directory(Path.of("image.zarr"), true)) {
 *     Group.create(store, "", "{\"ome\": {\"version\": \"0.5\", \"multiscales\": [...]}}", false);
 *     try (ShardArray level0 = ShardArray.create(store, "0", spec0, false)) { ... }
 * }
 * }</pre>
 */
public final class Group {
    private Group() {}

    /**
     * Create the group at {@code path} of a library store: its {@code zarr.json}, written
     * whole (temporary and rename for a directory store). Thread-safe.
     *
     * @param store where to create it
     * @param path the node path ({@code ""} or null: the store's root; {@code "a/b"})
     * @param attributesJson the attributes, a JSON object's text; null for {@code {}}
     * @param overwrite replace an existing node at {@code path} (an array's shards, a group's
     *     children removed) instead of refusing it
     * @throws ShardException {@link Status#INVALID_STATE} (a node exists there and
     *     {@code overwrite} is false: "`PATH` already holds ..."),
     *     {@link Status#INVALID_ARGUMENT} (an invalid path, named),
     *     {@link Status#INVALID_METADATA} (attributes that are not a JSON object),
     *     {@link Status#UNSUPPORTED} (overwriting a group in a store that cannot list),
     *     {@link Status#IO} (the store failed)
     * @throws IllegalStateException when {@code store} is closed
     * @throws NullPointerException when {@code store} is null
     */
    public static void create(Store store, String path, String attributesJson,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        byte[] p = Store.cString(path, "path");
        byte[] a = attributesJson == null ? null : attributesJson.getBytes(StandardCharsets.UTF_8);
        long s = store.ref.acquire();
        try {
            Native.groupCreate(s, null, p, a, overwrite ? 1 : 0);
        } finally {
            store.ref.release();
        }
    }

    /**
     * {@link #create(Store, String, String, boolean)} through a host {@link ShardStore},
     * borrowed for the call (the library never takes it over): {@code zarr.json} is written
     * through its {@link ShardIO}, on the calling thread.
     *
     * @param store the host's store
     * @param path the node path, as for {@link #create(Store, String, String, boolean)}
     * @param attributesJson the attributes, a JSON object's text; null for {@code {}}
     * @param overwrite replace an existing node instead of refusing it
     * @throws ShardException as {@link #create(Store, String, String, boolean)}; when the
     *     store threw, {@link Status#IO} with that exception as the cause
     * @throws NullPointerException when {@code store} is null
     */
    public static void create(ShardStore store, String path, String attributesJson,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        byte[] p = Store.cString(path, "path");
        byte[] a = attributesJson == null ? null : attributesJson.getBytes(StandardCharsets.UTF_8);
        Native.groupCreate(0, store, p, a, overwrite ? 1 : 0);
    }
}
