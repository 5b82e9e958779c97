package io.zarrshard;

import java.io.IOException;
import java.io.OutputStream;
import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * A whole Zarr v3 array (C {@code shard_array}): reads and writes any hyper-rectangle (a
 * region) across shards and inner chunks, grows by appending blocks, resizes, carries
 * attributes.
 *
 * <pre>{@code
 * try (Store store = Store.directory(dir, false);
 *      ShardArray array = ShardArray.open(store, "")) {
 *     short[] values = array.readRegionShorts(new long[] {10, 20}, new long[] {40, 30});
 * }
 * }</pre>
 *
 * <p><b>Stores.</b> An array lives in one of the library's own stores ({@link Store}: a
 * directory, memory), opened or created there by path ({@link #open(Store, String)},
 * {@link #create(Store, String, ArraySpec, boolean)}), or in a {@link ShardStore} the host
 * implements in Java (custom storage), by path or from a {@code zarr.json} text
 * ({@link #open(String, ShardStore)}).
 *
 * <p><b>Buffers.</b> A region is C order, native byte order ({@link ByteOrder#nativeOrder()}),
 * exactly its element count × the element size (else {@link Status#BUFFER_SIZE}); the fill
 * value where nothing is stored. The {@link ByteBuffer} variants take direct buffers and use
 * {@code remaining()} bytes from {@code position()}; on success the position moves past them.
 *
 * <p><b>Writes</b> do the minimum read-modify-write: a shard the region covers entirely is
 * written whole without being read; in others only the index and the inner chunks the region
 * covers partly are read, and the touched chunks plus a new index are appended. Chunks equal to
 * the fill value are not stored; a shard left empty is removed. Not atomic across shards.
 *
 * <p><b>Threads.</b> Reads may run on many threads at once (the store and its ShardIOs must
 * then be thread-safe); one writer at a time (a concurrent write fails with
 * {@link Status#BUSY}). Every store callback runs on the thread of the call that needs it.
 * {@link #close()} is safe at any time from any thread, as {@link Shard#close()}.
 *
 * <p><b>Errors.</b> {@link ShardException} with the library's status; when the store or a
 * ShardIO threw, status {@link Status#IO} and that exception as the cause. Mismatched
 * {@code start}/{@code shape} lengths or a negative extent: {@link IllegalArgumentException}
 * (a negative start is a region past the array: {@link Status#INVALID_ARGUMENT}). Every method
 * throws {@link IllegalStateException} once the array is closed and
 * {@link NullPointerException} for a null argument.
 *
 * <p><b>Stored shards.</b> {@link #verify} and the {@code kerchunkRefs*} methods visit the
 * stored shards only: they first call {@link ShardStore#list} once (prefix {@code "c/"} under
 * the default chunk key encoding) and open just the shards listed, so over a sparse grid in a
 * remote store one listing replaces a request per grid position. A store that cannot list
 * ({@code list} returns {@code null}, the default) has every grid position opened instead. A
 * stored shard the listing leaves out is treated as missing.
 *
 * <p><b>Ownership.</b> The array owns its native handle (free it with {@link #close()}; a
 * {@link Cleaner} frees a forgotten one) and keeps its {@link ShardStore} reachable until then.
 */
public final class ShardArray implements AutoCloseable {
    private final NativeRef ref;
    private final Cleaner.Cleanable cleanable;

    private ShardArray(long ptr) {
        ref = new NativeRef(ptr, p -> {
            Native.arrayClose(p);
            return null;
        }, "ShardArray");
        // The safety net: an unreachable ShardArray is closed by the Cleaner (which frees the
        // handle and releases the store).
        cleanable = ShardCodec.CLEANER.register(this, ref);
    }

    /**
     * Open the array described by the Zarr v3 {@code zarr.json} text over {@code store}.
     * Nothing is read yet. On success the array keeps {@code store} reachable until closed; on
     * failure it keeps nothing. Thread-safe.
     *
     * @param zarrJson the text of the array's {@code zarr.json}
     * @param store where the array's objects are
     * @return the open array; close it
     * @throws ShardException {@link Status#INVALID_METADATA}, {@link Status#UNSUPPORTED_CODEC},
     *     {@link Status#INVALID_ARGUMENT}
     */
    public static ShardArray open(String zarrJson, ShardStore store) {
        Objects.requireNonNull(zarrJson, "zarrJson");
        Objects.requireNonNull(store, "store");
        return adopt(Native.arrayOpen(zarrJson.getBytes(StandardCharsets.UTF_8), store));
    }

    /** The array for a handle a native call just returned (closed again if that fails). */
    private static ShardArray adopt(long h) {
        try {
            return new ShardArray(h);
        } catch (Throwable t) {
            Native.arrayClose(h);
            throw t;
        }
    }

    /** {@code SHARD_CREATE_OVERWRITE} or 0. */
    private static int createFlags(boolean overwrite) {
        return overwrite ? 1 : 0;
    }

    /**
     * Create the array described by {@code zarrJson} at {@code path} of a library store (C
     * {@code shard_array_create}): the metadata is checked, then {@code zarr.json} written
     * whole. The array is open for writing and reading; close it (which
     * {@link #flush() flushes}). Thread-safe.
     *
     * @param store where to create it; the array keeps it alive until closed
     * @param path the node path ({@code ""} or null: the store's root; {@code "a/b"})
     * @param zarrJson the Zarr v3 array metadata
     * @param overwrite replace an existing node at {@code path} (its shards removed) instead
     *     of refusing it
     * @return the new array; close it
     * @throws ShardException {@link Status#INVALID_METADATA} or
     *     {@link Status#UNSUPPORTED_CODEC} (the message names the field; nothing is written),
     *     {@link Status#INVALID_STATE} (a node exists and {@code overwrite} is false:
     *     "`PATH` already holds ..."), {@link Status#INVALID_ARGUMENT} (an invalid path,
     *     named), {@link Status#UNSUPPORTED} (overwriting a group in a store that cannot
     *     list), {@link Status#IO}
     * @throws IllegalStateException when {@code store} is closed
     */
    public static ShardArray create(Store store, String path, String zarrJson,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(zarrJson, "zarrJson");
        byte[] p = Store.cString(path, "path");
        long s = store.ref.acquire();
        try {
            return adopt(Native.arrayCreate(s, null, p, zarrJson.getBytes(StandardCharsets.UTF_8),
                    createFlags(overwrite)));
        } finally {
            store.ref.release();
        }
    }

    /**
     * {@link #create(Store, String, String, boolean)} with the metadata made of {@code spec}
     * (C {@code shard_array_create_spec}; {@link ArraySpec#toJson()} shows it).
     *
     * @param store where to create it; the array keeps it alive until closed
     * @param path the node path ({@code ""} or null: the store's root)
     * @param spec the array's description
     * @param overwrite replace an existing node at {@code path} instead of refusing it
     * @return the new array; close it
     * @throws ShardException as {@link #create(Store, String, String, boolean)}, and
     *     {@link Status#INVALID_ARGUMENT} naming the spec's field the library refuses
     * @throws IllegalStateException when {@code store} is closed
     */
    public static ShardArray create(Store store, String path, ArraySpec spec,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(spec, "spec");
        byte[] p = Store.cString(path, "path");
        long s = store.ref.acquire();
        try {
            return createSpec(s, null, p, spec, overwrite);
        } finally {
            store.ref.release();
        }
    }

    /**
     * {@link #create(Store, String, String, boolean)} in a host {@link ShardStore}: the array
     * keeps {@code store} reachable until closed (on failure nothing). Every store callback
     * runs on the thread of the call that needs it.
     *
     * @param store the host's store
     * @param path the node path ({@code ""} or null: the store's root)
     * @param zarrJson the Zarr v3 array metadata
     * @param overwrite replace an existing node at {@code path} instead of refusing it
     * @return the new array; close it
     * @throws ShardException as {@link #create(Store, String, String, boolean)}; when the
     *     store threw, {@link Status#IO} with that exception as the cause
     */
    public static ShardArray create(ShardStore store, String path, String zarrJson,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(zarrJson, "zarrJson");
        byte[] p = Store.cString(path, "path");
        return adopt(Native.arrayCreate(0, store, p, zarrJson.getBytes(StandardCharsets.UTF_8),
                createFlags(overwrite)));
    }

    /**
     * {@link #create(Store, String, ArraySpec, boolean)} in a host {@link ShardStore}.
     *
     * @param store the host's store
     * @param path the node path ({@code ""} or null: the store's root)
     * @param spec the array's description
     * @param overwrite replace an existing node at {@code path} instead of refusing it
     * @return the new array; close it
     * @throws ShardException as {@link #create(ShardStore, String, String, boolean)}
     */
    public static ShardArray create(ShardStore store, String path, ArraySpec spec,
            boolean overwrite) {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(spec, "spec");
        return createSpec(0, store, Store.cString(path, "path"), spec, overwrite);
    }

    private static ShardArray createSpec(long lib, ShardStore host, byte[] path, ArraySpec spec,
            boolean overwrite) {
        Object[] a = spec.nativeArgs();
        return adopt(Native.arrayCreateSpec(lib, host, path, (long[]) a[0], (long[]) a[1],
                (long[]) a[2], (byte[]) a[3], (byte[]) a[4], (byte[]) a[5],
                spec.compressionLevelValue(), spec.indexLocation(), spec.checksums(),
                (byte[][]) a[6], createFlags(overwrite)));
    }

    /**
     * Open the array at {@code path} of a library store (C {@code shard_array_open_path}): its
     * {@code zarr.json} (Zarr v3), {@code .zarray} (Zarr v2) or v3-draft metadata is read
     * here. Thread-safe.
     *
     * @param store where the array is; the array keeps it alive until closed
     * @param path the node path ({@code ""} or null: the store's root; {@code "a/b"})
     * @return the open array; close it
     * @throws ShardException {@link Status#INVALID_METADATA} (no array there: "no zarr.json or
     *     .zarray at `a/b`"; metadata the library refuses, naming the field),
     *     {@link Status#UNSUPPORTED_CODEC}, {@link Status#INVALID_ARGUMENT} (an invalid path,
     *     named), {@link Status#IO}
     * @throws IllegalStateException when {@code store} is closed
     */
    public static ShardArray open(Store store, String path) {
        Objects.requireNonNull(store, "store");
        byte[] p = Store.cString(path, "path");
        long s = store.ref.acquire();
        try {
            return adopt(Native.arrayOpenPath(s, null, p));
        } finally {
            store.ref.release();
        }
    }

    /**
     * {@link #open(Store, String)} in a host {@link ShardStore}: the metadata is read through
     * it. The array keeps {@code store} reachable until closed (on failure nothing).
     *
     * @param store the host's store
     * @param path the node path ({@code ""} or null: the store's root)
     * @return the open array; close it
     * @throws ShardException as {@link #open(Store, String)}; when the store threw,
     *     {@link Status#IO} with that exception as the cause
     */
    public static ShardArray open(ShardStore store, String path) {
        Objects.requireNonNull(store, "store");
        return adopt(Native.arrayOpenPath(0, store, Store.cString(path, "path")));
    }

    /**
     * The array's current shape, one value per dimension: grown by {@link #append} at once
     * (the frames are readable), changed by {@link #resize}. Thread-safe.
     *
     * @return a new array
     */
    public long[] shape() {
        long h = ref.acquire();
        try {
            return Native.arrayShape(h);
        } finally {
            ref.release();
        }
    }

    /**
     * Grow or shrink the array to {@code shape} (C {@code shard_array_resize}): {@code zarr.json}
     * is replaced whole; shards and inner chunks wholly outside the new shape are deleted, and
     * the part of an edge chunk past a shrunken edge is reset to the fill value, so growing
     * again shows the fill value, never old data. Frames {@link #append} holds are flushed
     * first. One writer at a time.
     *
     * @param shape the new shape, one value per dimension
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (another rank),
     *     {@link Status#UNSUPPORTED} (not a Zarr v3 array), {@link Status#BUSY},
     *     {@link Status#IO}, {@link Status#CORRUPT}, {@link Status#CHECKSUM} (an edge shard
     *     read back)
     * @throws IllegalArgumentException for a negative extent
     */
    public void resize(long... shape) {
        Objects.requireNonNull(shape, "shape");
        for (long e : shape) {
            if (e < 0) {
                throw new IllegalArgumentException("negative extent " + e + " in "
                        + Arrays.toString(shape));
            }
        }
        long h = ref.acquire();
        try {
            Native.arrayResize(h, shape);
        } finally {
            ref.release();
        }
    }

    /**
     * Append a block at the end of dimension {@code axis}, growing the shape by
     * {@code blockShape[axis]} (C {@code shard_array_append}; e.g. one camera frame,
     * {@code blockShape} {@code {1, height, width}} along axis 0). Frames are gathered per
     * layer of shards in memory and each shard is written once, whole, when its layer is
     * complete: no dead bytes, memory bounded by one layer. Appended frames are readable at
     * once ({@link #readRegion(long[], long[], byte[])}); {@code zarr.json}'s shape covers
     * only the layers written until {@link #flush()} or {@link #close()}. One writer at a
     * time.
     *
     * @param axis the dimension to grow
     * @param blockShape the block's extent: at least 1 along {@code axis}, the array's
     *     extent along every other dimension
     * @param data the block, C order, native byte order, exactly its element count times the
     *     element size (copied)
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (an axis past the rank, a block
     *     that does not span the other dimensions or is empty, a layer over the
     *     {@link MemoryLimit}), {@link Status#BUFFER_SIZE}, {@link Status#UNSUPPORTED} (not a
     *     Zarr v3 array), {@link Status#BUSY}, {@link Status#IO} (the frames stay pending; a
     *     later flush retries), {@link Status#CORRUPT}, {@link Status#CHECKSUM}
     * @throws IllegalArgumentException for a negative axis or extent
     */
    public void append(int axis, long[] blockShape, byte[] data) {
        Objects.requireNonNull(data, "data");
        checkAppend(axis, blockShape);
        long h = ref.acquire();
        try {
            Native.arrayAppend(h, axis, blockShape, data);
        } finally {
            ref.release();
        }
    }

    /**
     * {@link #append(int, long[], byte[])} from the remaining bytes of a direct buffer; on
     * success its position moves past them.
     *
     * @param axis the dimension to grow
     * @param blockShape the block's extent
     * @param src a direct buffer with exactly the block's byte size remaining
     * @throws ShardException as {@link #append(int, long[], byte[])}
     * @throws IllegalArgumentException when {@code src} is not direct, for a negative axis or
     *     extent
     */
    public void append(int axis, long[] blockShape, ByteBuffer src) {
        Objects.requireNonNull(src, "src");
        checkAppend(axis, blockShape);
        if (!src.isDirect()) {
            throw new IllegalArgumentException("a direct ByteBuffer is required");
        }
        int pos = src.position();
        int len = src.remaining();
        long h = ref.acquire();
        try {
            Native.arrayAppendDirect(h, axis, blockShape, src, pos, len);
        } finally {
            ref.release();
        }
        src.position(pos + len);
    }

    /**
     * {@link #append(int, long[], byte[])} from 16-bit elements (data types of 2 bytes; else
     * {@link Status#BUFFER_SIZE}).
     *
     * @param axis the dimension to grow
     * @param blockShape the block's extent
     * @param values the block's elements, C order (copied)
     * @throws ShardException as {@link #append(int, long[], byte[])}
     * @throws IllegalArgumentException when the values do not fit one ByteBuffer, for a
     *     negative axis or extent
     */
    public void append(int axis, long[] blockShape, short[] values) {
        append(axis, blockShape, shortBuffer(values));
    }

    private static void checkAppend(int axis, long[] blockShape) {
        Objects.requireNonNull(blockShape, "blockShape");
        if (axis < 0) {
            throw new IllegalArgumentException("negative axis " + axis);
        }
        for (long e : blockShape) {
            if (e < 0) {
                throw new IllegalArgumentException("negative extent " + e + " in "
                        + Arrays.toString(blockShape));
            }
        }
    }

    /**
     * Write what {@link #append} holds (the partial layer, as edge shards that later frames
     * rewrite whole) and the current shape to {@code zarr.json} (C {@code shard_array_flush}).
     * {@link #close()} flushes too, but cannot report a failure: call this to see it.
     *
     * @throws ShardException {@link Status#IO} (the frames stay pending), {@link Status#BUSY}
     */
    public void flush() {
        long h = ref.acquire();
        try {
            Native.arrayFlush(h);
        } finally {
            ref.release();
        }
    }

    /**
     * Replace the array's attributes (C {@code shard_array_set_attributes}): {@code zarr.json}
     * is rewritten whole with them.
     *
     * @param json a JSON object's text, e.g. {@code {"units": "nm"}}
     * @throws ShardException {@link Status#INVALID_METADATA} (not a JSON object, or past
     *     the metadata limits), {@link Status#UNSUPPORTED} (not a Zarr v3 array),
     *     {@link Status#BUSY}, {@link Status#IO}
     */
    public void setAttributes(String json) {
        Objects.requireNonNull(json, "json");
        long h = ref.acquire();
        try {
            Native.arraySetAttributes(h, json.getBytes(StandardCharsets.UTF_8));
        } finally {
            ref.release();
        }
    }

    /**
     * The array's attributes (C {@code shard_array_attributes}): {@code {}} when it has none.
     * Thread-safe.
     *
     * @return a JSON object's text
     */
    public String attributes() {
        long h = ref.acquire();
        try {
            return new String(Native.arrayAttributes(h), StandardCharsets.UTF_8);
        } finally {
            ref.release();
        }
    }

    /**
     * What {@link #compact(boolean)} did.
     *
     * @param shardsRewritten how many shards were rewritten
     * @param bytesFreed how many bytes of dead space the rewrites freed
     */
    public record Compaction(long shardsRewritten, long bytesFreed) {}

    /**
     * Rewrite every shard that holds dead bytes (left by partial updates) without them, as
     * {@code zarrshard compact} does (C {@code shard_array_compact}): each shard written whole
     * as a new object. One writer at a time.
     *
     * @param mortonOrder lay the inner chunks out in Morton order instead of C order
     * @return what was rewritten and freed
     * @throws ShardException {@link Status#IO}, {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM}, {@link Status#BUSY}
     */
    public Compaction compact(boolean mortonOrder) {
        long[] r;
        long h = ref.acquire();
        try {
            r = Native.arrayCompact(h, mortonOrder ? Shard.FLAG_MORTON_ORDER : 0);
        } finally {
            ref.release();
        }
        return new Compaction(r[0], r[1]);
    }

    /**
     * A new codec for the array's sharding layout and metadata (shape, data type, fill value,
     * shard keys); close it when done. Thread-safe.
     *
     * @return a new codec, independent of this array's lifetime
     * @throws ShardException {@link Status#UNSUPPORTED} (the array is not sharded),
     *     {@link Status#UNSUPPORTED_CODEC} (a bytes-to-bytes codec after sharding)
     */
    public ShardCodec codec() {
        long h = ref.acquire();
        long c;
        try {
            c = Native.arrayCodec(h);
        } finally {
            ref.release();
        }
        return ShardCodec.adopt(c);
    }

    /**
     * Set the gap in bytes below which the byte ranges of inner chunks one region read wants
     * from a shard are fetched as one range: 0 merges only touching ranges, a large gap reads
     * whole spans (fewer requests to a high-latency store). The default is 65536. Safe while
     * other threads read.
     *
     * @param gap the gap in bytes
     * @throws IllegalArgumentException for a negative gap
     */
    public void setCoalesceGap(long gap) {
        if (gap < 0) {
            throw new IllegalArgumentException("the coalescing gap must be non-negative, got " + gap);
        }
        long h = ref.acquire();
        try {
            Native.arraySetCoalesceGap(h, gap);
        } finally {
            ref.release();
        }
    }

    /** {@link #kerchunkRefs(String, int, int, String)} version: kerchunk JSON version 0. */
    public static final int REFS_JSON_V0 = 0;
    /**
     * {@link #kerchunkRefs(String, int, int, String)} version: kerchunk JSON version 1
     * ({@code templates}, {@code refs}).
     */
    public static final int REFS_JSON_V1 = 1;

    /**
     * {@link #kerchunkRefs(String, int, int, String)} with version 1, Zarr v3 metadata and the
     * keys at the root.
     *
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @return the reference set, JSON text
     * @throws ShardException as {@link #kerchunkRefs(String, int, int, String)}
     */
    public String kerchunkRefs(String urlPrefix) {
        return kerchunkRefs(urlPrefix, REFS_JSON_V1, 3, null);
    }

    /**
     * The array's kerchunk reference set as JSON text (C {@code shard_array_refs}, what
     * {@code zarrshard refs} writes): the array described unsharded, so that any fsspec-based
     * reader reads it with plain byte-range requests. Each stored inner chunk becomes
     * {@code [urlPrefix/SHARD_KEY, offset, nbytes]} under its key in the unsharded chunk grid;
     * empty ones are left out (they read as the fill value). One trailing {@code /} of
     * {@code urlPrefix} is dropped.
     *
     * <p>Reads each stored shard's index once through the array's {@link ShardStore} (only
     * the shards {@link ShardStore#list} lists when it lists), on the calling thread (C {@code shard_array_refs_write}: the library builds the whole set, then hands
     * its text over). The result is a new String owned by the caller. Thread-safe, but not
     * while another thread writes the array.
     *
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @param version {@link #REFS_JSON_V0} or {@link #REFS_JSON_V1}; passed to the library as
     *     given
     * @param zarrFormat 3 (a {@code zarr.json}, chunk keys {@code c/i/j}) or 2 (a
     *     {@code .zarray}, keys {@code i.j}); passed to the library as given
     * @param name null or empty for keys at the root, else the keys go under {@code name/}
     * @return the reference set, JSON text
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (another version or
     *     {@code zarrFormat}, an array that is not sharded or has a bytes-to-bytes codec after
     *     sharding, a data type Zarr v2 cannot name), {@link Status#UNSUPPORTED_CODEC} (a codec
     *     the chosen metadata cannot express), {@link Status#IO} (the store or a ShardIO threw:
     *     that exception is the cause), {@link Status#CORRUPT}, {@link Status#CHECKSUM} (an
     *     index), {@link Status#UNSUPPORTED} (a ShardIO cannot read an index at the end)
     * @throws IllegalArgumentException when the set is larger than a Java array
     * @throws OutOfMemoryError when native memory for the text runs out
     */
    public String kerchunkRefs(String urlPrefix, int version, int zarrFormat, String name) {
        Objects.requireNonNull(urlPrefix, "urlPrefix");
        byte[] url = urlPrefix.getBytes(StandardCharsets.UTF_8);
        byte[] n = name == null ? null : name.getBytes(StandardCharsets.UTF_8);
        byte[] json;
        long h = ref.acquire();
        try {
            json = Native.arrayRefs(h, version, zarrFormat, url, n);
        } finally {
            ref.release();
        }
        return new String(json, StandardCharsets.UTF_8);
    }

    /**
     * {@link #writeKerchunkRefs(OutputStream, String, int, int, String)} with version 1, Zarr
     * v3 metadata and the keys at the root.
     *
     * @param out where the JSON text goes, as UTF-8 bytes
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @throws IOException what {@code out.write} threw
     * @throws ShardException as {@link #kerchunkRefs(String, int, int, String)}
     */
    public void writeKerchunkRefs(OutputStream out, String urlPrefix) throws IOException {
        writeKerchunkRefs(out, urlPrefix, REFS_JSON_V1, 3, null);
    }

    /**
     * The text of {@link #kerchunkRefs(String, int, int, String)} written to {@code out} as
     * UTF-8 bytes as the shards are read (C {@code shard_array_refs_stream}): the library holds
     * a batch of shards' indexes, never the text, so a set larger than a Java array or the heap can
     * be written; {@code out.write(byte[], int, int)} gets pieces of at most 64 KiB, on the
     * calling thread. A failure part way (the store, a damaged index, {@code out} throwing)
     * leaves the text's first part written to {@code out}: write to a temporary file and move
     * it into place when this returns. {@code out} is neither flushed nor closed. Thread-safe,
     * but not while another thread writes the array.
     *
     * @param out where the JSON text goes; the library calls it no more after it threw
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @param version {@link #REFS_JSON_V0} or {@link #REFS_JSON_V1}; passed to the library as
     *     given
     * @param zarrFormat 3 or 2, as for {@link #kerchunkRefs(String, int, int, String)}
     * @param name null or empty for keys at the root, else the keys go under {@code name/}
     * @throws IOException what {@code out.write} threw (any other exception or error it threw
     *     is rethrown as it was too)
     * @throws ShardException as {@link #kerchunkRefs(String, int, int, String)}, before any
     *     byte is written for a bad argument
     * @throws OutOfMemoryError when the exception {@code out} threw could not be kept
     */
    public void writeKerchunkRefs(OutputStream out, String urlPrefix, int version,
            int zarrFormat, String name) throws IOException {
        Objects.requireNonNull(out, "out");
        Objects.requireNonNull(urlPrefix, "urlPrefix");
        byte[] url = urlPrefix.getBytes(StandardCharsets.UTF_8);
        byte[] n = name == null ? null : name.getBytes(StandardCharsets.UTF_8);
        long h = ref.acquire();
        try {
            Native.arrayRefsStream(h, version, zarrFormat, url, n, out);
        } finally {
            ref.release();
        }
    }

    /** The arguments both Parquet outputs check before the library does. */
    private static void checkParquetArgs(String urlPrefix, String name, long recordSize) {
        Objects.requireNonNull(urlPrefix, "urlPrefix");
        Objects.requireNonNull(name, "name");
        if (recordSize < 0) {
            throw new IllegalArgumentException("the record size must be at least 1, got "
                    + recordSize);
        }
    }

    /**
     * Write the array's kerchunk reference set in the Parquet layout of fsspec's
     * {@code LazyReferenceMapper} (C {@code shard_array_refs_parquet}, what
     * {@code zarrshard refs --format parquet} writes) as objects of the store {@code out}:
     * {@code name/refs.<n>.parq}, file {@code n} holding the chunks numbered
     * {@code n * recordSize} onwards in C order of the unsharded chunk grid, one row each (an
     * empty chunk's row carries the encoded fill chunk), then {@code .zmetadata} (Zarr v2
     * metadata, the only kind fsspec reads in this layout). The same bytes as the command
     * line tool writes.
     *
     * <p>{@code out} is borrowed for the call: for each object, {@link ShardStore#open} with
     * its key, one {@link ShardIO#write} of the whole object at offset 0, then
     * {@link ShardIO#truncate} to its length when the ShardIO overrides it (without it,
     * {@link ShardIO#size} first, and a longer existing object is refused before any byte is
     * written), then {@link ShardStore#release}, all on the calling thread and before this
     * returns. Not atomic: after a failure, the objects written before it stay.
     * Reads each stored shard's index once through the array's store (only the shards
     * {@link ShardStore#list} lists when it lists). Thread-safe, but not while
     * another thread writes the array.
     * For a local directory, {@link #kerchunkRefsParquetDir} writes each file through a
     * temporary and a rename, {@code .zmetadata} last;
     * {@link #kerchunkRefsParquetInto} writes into a library store.
     *
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @param name the folder of the files and the array's name in {@code .zmetadata}; not empty
     * @param recordSize rows per file, at least 1 (fsspec's default is 10000)
     * @param out where the objects are written
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (an empty or invalid name,
     *     {@code recordSize} 0, an array that is not sharded or has a bytes-to-bytes codec after
     *     sharding, a data type Zarr v2 cannot name), {@link Status#UNSUPPORTED_CODEC} (a codec
     *     Zarr v2 metadata cannot express), {@link Status#IO} (reading the array or writing
     *     {@code out}: what the store or a ShardIO threw is the cause), {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM}, {@link Status#UNSUPPORTED} (a ShardIO of {@code out} without
     *     {@code truncate} over a longer object; a library built without Parquet)
     * @throws IllegalArgumentException for a negative {@code recordSize}
     */
    public void kerchunkRefsParquet(String urlPrefix, String name, long recordSize,
            ShardStore out) {
        checkParquetArgs(urlPrefix, name, recordSize);
        Objects.requireNonNull(out, "out");
        byte[] url = urlPrefix.getBytes(StandardCharsets.UTF_8);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        long h = ref.acquire();
        try {
            Native.arrayRefsParquet(h, url, n, recordSize, out);
        } finally {
            ref.release();
        }
    }

    /**
     * {@link #kerchunkRefsParquet(String, String, long, ShardStore)} into one of the library's
     * stores (a distinct name, so that a {@code null} store stays unambiguous) (for {@link Store#directory}, files {@code ROOT/name/refs.<n>.parq} and
     * {@code ROOT/.zmetadata}). Thread-safe, but not while another thread writes the array.
     *
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @param name the folder of the files and the array's name in {@code .zmetadata}; not empty
     * @param recordSize rows per file, at least 1 (fsspec's default is 10000)
     * @param out where the objects are written
     * @throws ShardException as {@link #kerchunkRefsParquet(String, String, long, ShardStore)}
     * @throws IllegalArgumentException for a negative {@code recordSize}
     * @throws IllegalStateException when {@code out} is closed
     */
    public void kerchunkRefsParquetInto(String urlPrefix, String name, long recordSize,
            Store out) {
        checkParquetArgs(urlPrefix, name, recordSize);
        Objects.requireNonNull(out, "out");
        byte[] url = urlPrefix.getBytes(StandardCharsets.UTF_8);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        long o = out.ref.acquire();
        try {
            long h = ref.acquire();
            try {
                Native.arrayRefsParquetStore(h, url, n, recordSize, o);
            } finally {
                ref.release();
            }
        } finally {
            out.ref.release();
        }
    }

    /**
     * Write the array's kerchunk reference set in the Parquet layout of fsspec's
     * {@code LazyReferenceMapper} into the local directory {@code dir} (C
     * {@code shard_array_refs_parquet_dir}, what {@code zarrshard refs --format parquet -o DIR}
     * writes): {@code dir/name/refs.<n>.parq}, then {@code dir/.zmetadata}, the same bytes as
     * {@link #kerchunkRefsParquet(String, String, long, ShardStore)} writes as objects (and the
     * command line tool as files). {@code dir} must not exist (it is created, with missing
     * parents) or be an empty directory; anything else is refused before any shard is read.
     * Each file is written by the library to a temporary sibling and renamed, so a reader never
     * sees a partial file; {@code .zmetadata} comes last, so after a failure part way the files
     * written so far stay but there is no {@code .zmetadata}. Reads each stored shard's index
     * once through the array's store (only the shards {@link ShardStore#list} lists when it
     * lists), on the calling thread. Thread-safe, but not while another
     * thread writes the array or another call writes {@code dir}.
     *
     * <p><b>The path.</b> The library opens {@code dir} itself, so it must be a path of the
     * default file system ({@link FileSystems#getDefault()}). A relative {@code dir} is first
     * made absolute with {@link Path#toAbsolutePath()} (against {@code user.dir}, as Java's
     * own file operations resolve it). The library gets the absolute path's
     * {@link Path#toString() String} encoded as UTF-8: on Linux these are the file name bytes
     * of the system calls whenever {@code sun.jnu.encoding} is UTF-8 (a UTF-8 locale, the usual
     * case); under another encoding a name with non-ASCII characters would name other bytes
     * than Java's file operations use. On Windows the library takes UTF-8 paths.
     *
     * <p><b>Why not an overload of {@code kerchunkRefsParquet}.</b> {@link ShardStore} and
     * {@link Path} are unrelated interfaces, so a call with a {@code null} literal as the last
     * argument would match both overloads and no longer compile (as would a class implementing
     * both); a distinct name, after the C function, keeps every existing call unambiguous.
     *
     * @param urlPrefix where readers find the array, e.g. {@code "https://host/data/img.zarr"}
     * @param name the folder of the files and the array's name in {@code .zmetadata}; not empty
     * @param recordSize rows per file, at least 1 (fsspec's default is 10000)
     * @param dir the directory to write: missing or empty; on the default file system
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (an empty or invalid name,
     *     {@code recordSize} 0, {@code dir} naming something other than an empty directory: a
     *     non-empty directory, a regular file; an array that is not sharded or has a
     *     bytes-to-bytes codec after sharding, a data type Zarr v2 cannot name),
     *     {@link Status#UNSUPPORTED_CODEC} (a codec Zarr v2 metadata cannot express),
     *     {@link Status#IO} (reading the array: what the store or a ShardIO threw is the cause,
     *     {@link ShardException#ioCode()} {@link ShardException#IO_JAVA_EXCEPTION}; creating or
     *     writing {@code dir}: no cause, {@link ShardException#ioCode()} the OS error number,
     *     e.g. 20 {@code ENOTDIR} for a path under a regular file (found before any index is
     *     read), 13 {@code EACCES}, 28 {@code ENOSPC}), {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM} (an index), {@link Status#UNSUPPORTED} (a ShardIO cannot read
     *     an index at the end; a library built without Parquet), {@link Status#PANIC}
     * @throws IllegalArgumentException for a negative {@code recordSize}, or a {@code dir} of
     *     another file system (e.g. a zip file system)
     * @throws java.io.IOError when a relative {@code dir} cannot be made absolute
     */
    public void kerchunkRefsParquetDir(String urlPrefix, String name, long recordSize,
            Path dir) {
        checkParquetArgs(urlPrefix, name, recordSize);
        Objects.requireNonNull(dir, "dir");
        if (dir.getFileSystem() != FileSystems.getDefault()) {
            throw new IllegalArgumentException("the library writes only paths of the default"
                    + " file system, not " + dir.getFileSystem().provider().getScheme() + ": "
                    + dir);
        }
        byte[] url = urlPrefix.getBytes(StandardCharsets.UTF_8);
        byte[] n = name.getBytes(StandardCharsets.UTF_8);
        byte[] d = dir.toAbsolutePath().toString().getBytes(StandardCharsets.UTF_8);
        long h = ref.acquire();
        try {
            Native.arrayRefsParquetDir(h, url, n, recordSize, d);
        } finally {
            ref.release();
        }
    }

    /**
     * One problem {@link #verify()} found: a shard object that is damaged where reading it
     * would fail. Immutable; thread-safe.
     */
    public static final class Problem {
        private final String key;
        private final long[] chunk;
        private final int statusCode;
        private final String message;

        Problem(String key, long[] chunk, int statusCode, String message) {
            this.key = key;
            this.chunk = chunk;
            this.statusCode = statusCode;
            this.message = message;
        }

        /**
         * The key of the shard object, e.g. {@code "c/0/1"}.
         *
         * @return the shard's key
         */
        public String key() {
            return key;
        }

        /**
         * The coordinates of the inner chunk within the shard when the problem concerns one
         * (a chunk that does not decode), else an empty array (the index, or the object as a
         * whole).
         *
         * @return a new array each call: the chunk's coordinates, or empty
         */
        public long[] chunk() {
            return chunk.clone();
        }

        /**
         * The status reading there fails with ({@link Status#CORRUPT}, {@link Status#CHECKSUM},
         * ...).
         *
         * @return the status, {@link Status#UNKNOWN} for a number this binding does not know
         */
        public Status status() {
            return Status.of(statusCode);
        }

        /**
         * The raw C {@code shard_status} value of {@link #status()}.
         *
         * @return the status number
         */
        public int statusCode() {
            return statusCode;
        }

        /**
         * The library's error text, as {@code zarrshard verify} prints it (e.g.
         * {@code "corrupt shard: inner chunk [0, 0]: ..."}).
         *
         * @return the message
         */
        public String message() {
            return message;
        }

        /**
         * Equal to another problem with the same key, chunk, status and message.
         *
         * @param o the other object
         * @return whether they are equal
         */
        @Override
        public boolean equals(Object o) {
            return o instanceof Problem p && key.equals(p.key) && Arrays.equals(chunk, p.chunk)
                    && statusCode == p.statusCode && message.equals(p.message);
        }

        /**
         * A hash of key, chunk, status and message.
         *
         * @return the hash code
         */
        @Override
        public int hashCode() {
            return Objects.hash(key, Arrays.hashCode(chunk), statusCode, message);
        }

        /**
         * The line {@code zarrshard verify} prints: {@code KEY: MESSAGE}.
         *
         * @return the problem as text
         */
        @Override
        public String toString() {
            return key + ": " + message;
        }
    }

    /**
     * Check every stored shard of the array (C {@code shard_array_verify}, what
     * {@code zarrshard verify} does): each shard's index (its checksum, every entry within the
     * object) and that every inner chunk decodes. A damaged shard is a problem in the result,
     * not an exception; shards not stored (which read as the fill value) are not problems.
     *
     * <p>Each stored shard object (each shard {@link ShardStore#list} lists when the store
     * lists; else every grid position is opened to find them) is read whole once through the
     * array's {@link ShardStore},
     * one after another on the calling thread (the store is registered without
     * {@code SHARD_STORE_THREAD_SAFE}); its chunks decode on the library's worker threads.
     * The library hands each problem to the shim as it finds it; the list is built when the
     * check is done. Thread-safe, but not while another thread writes the array.
     *
     * @return the problems, in C order of the shard grid and, within a shard, of its inner
     *     chunks; empty when the array is clean. A new unmodifiable list owned by the caller
     * @throws ShardException {@link Status#IO} (the store or a ShardIO threw: that exception
     *     is the cause, {@link ShardException#ioCode()} {@link ShardException#IO_JAVA_EXCEPTION};
     *     the first shard in grid order that failed stops the check, and the problems found
     *     before it are not returned), {@link Status#INVALID_ARGUMENT} (a shard object larger
     *     than the {@link MemoryLimit}), {@link Status#PANIC}
     * @throws IllegalArgumentException when the problems do not fit in Java arrays
     * @throws OutOfMemoryError when native memory for the problems runs out
     */
    public List<Problem> verify() {
        Object[] r;
        long h = ref.acquire();
        try {
            r = Native.arrayVerify(h);
        } finally {
            ref.release();
        }
        int[] meta = (int[]) r[0];
        byte[] text = (byte[]) r[1];
        long[] chunks = (long[]) r[2];
        List<Problem> problems = new ArrayList<>(meta.length / 4);
        int t = 0;
        int c = 0;
        for (int i = 0; i < meta.length; i += 4) {
            int keyLen = meta[i + 1];
            int msgLen = meta[i + 2];
            int rank = meta[i + 3];
            String key = new String(text, t, keyLen, StandardCharsets.UTF_8);
            String message = new String(text, t + keyLen, msgLen, StandardCharsets.UTF_8);
            t += keyLen + msgLen;
            problems.add(new Problem(key, Arrays.copyOfRange(chunks, c, c + rank), meta[i],
                    message));
            c += rank;
        }
        return Collections.unmodifiableList(problems);
    }

    /**
     * Read the region of extent {@code shape} at {@code start} into {@code out} (written only
     * when the call succeeds). Thread-safe.
     *
     * @param start the region's first element, one value per dimension
     * @param shape the region's extent, one value per dimension
     * @param out exactly the region's element count times the element size
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (rank, a region past the array or
     *     too large), {@link Status#BUFFER_SIZE}, {@link Status#IO}, {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM}, {@link Status#UNSUPPORTED}
     */
    public void readRegion(long[] start, long[] shape, byte[] out) {
        bytes(start, shape, Objects.requireNonNull(out, "out"), false);
    }

    /**
     * {@link #readRegion(long[], long[], byte[])} into the remaining bytes of a direct buffer,
     * in place (on failure the position is unchanged and those bytes are unspecified).
     *
     * @param start the region's first element
     * @param shape the region's extent
     * @param dst a direct, writable buffer with exactly the region's byte size remaining
     * @throws ShardException as {@link #readRegion(long[], long[], byte[])}
     * @throws IllegalArgumentException when {@code dst} is not direct
     * @throws java.nio.ReadOnlyBufferException when {@code dst} is read-only
     */
    public void readRegion(long[] start, long[] shape, ByteBuffer dst) {
        direct(start, shape, dst, false);
    }

    /**
     * The region as 16-bit elements (data types of 2 bytes). Thread-safe.
     *
     * @param start the region's first element
     * @param shape the region's extent
     * @return a new array, C order
     * @throws ShardException as {@link #readRegion(long[], long[], byte[])};
     *     {@link Status#BUFFER_SIZE} for a data type not of 2 bytes
     * @throws IllegalArgumentException when the region does not fit a short[]
     */
    public short[] readRegionShorts(long[] start, long[] shape) {
        int n = shortCount(start, shape);
        ByteBuffer dst = ByteBuffer.allocateDirect(n * 2);
        readRegion(start, shape, dst);
        short[] out = new short[n];
        dst.flip().order(ByteOrder.nativeOrder()).asShortBuffer().get(out);
        return out;
    }

    /**
     * Write {@code data} to the region of extent {@code shape} at {@code start}: the minimum
     * read-modify-write (see the class comment). Not atomic across shards. One writer at a
     * time.
     *
     * @param start the region's first element
     * @param shape the region's extent
     * @param data exactly the region's element count times the element size (copied)
     * @throws ShardException {@link Status#INVALID_ARGUMENT}, {@link Status#BUFFER_SIZE},
     *     {@link Status#BUSY}, {@link Status#IO}, {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM}, {@link Status#UNSUPPORTED}
     */
    public void writeRegion(long[] start, long[] shape, byte[] data) {
        bytes(start, shape, Objects.requireNonNull(data, "data"), true);
    }

    /**
     * {@link #writeRegion(long[], long[], byte[])} from the remaining bytes of a direct buffer;
     * on success its position moves past them.
     *
     * @param start the region's first element
     * @param shape the region's extent
     * @param src a direct buffer with exactly the region's byte size remaining
     * @throws ShardException as {@link #writeRegion(long[], long[], byte[])}
     * @throws IllegalArgumentException when {@code src} is not direct
     */
    public void writeRegion(long[] start, long[] shape, ByteBuffer src) {
        direct(start, shape, src, true);
    }

    /**
     * {@link #writeRegion(long[], long[], byte[])} from 16-bit elements (data types of 2
     * bytes; else {@link Status#BUFFER_SIZE}).
     *
     * @param start the region's first element
     * @param shape the region's extent
     * @param values the region's elements, C order (copied)
     * @throws ShardException as {@link #writeRegion(long[], long[], byte[])}
     * @throws IllegalArgumentException when the values do not fit one ByteBuffer
     */
    public void writeRegion(long[] start, long[] shape, short[] values) {
        writeRegion(start, shape, shortBuffer(values));
    }

    /** The values in a new direct buffer, native byte order. */
    private static ByteBuffer shortBuffer(short[] values) {
        Objects.requireNonNull(values, "values");
        if (values.length > (Integer.MAX_VALUE - 8) / 2) {
            throw new IllegalArgumentException(values.length + " values do not fit a ByteBuffer");
        }
        ByteBuffer src = ByteBuffer.allocateDirect(values.length * 2)
                .order(ByteOrder.nativeOrder());
        src.asShortBuffer().put(values);
        return src;
    }

    /**
     * Whether {@link #close()} was called (calls in flight may still be running).
     *
     * @return true once closed
     */
    public boolean isClosed() {
        return ref.isClosed();
    }

    /**
     * Close the handle and release the store; frames {@link #append} still holds are written
     * first (a failure to write them is lost: call {@link #flush()} before to see it).
     * Idempotent; thread-safe, also from inside a store callback; safe while other threads
     * read (the handle is freed when the last call returns). Never throws.
     */
    @Override
    public synchronized void close() {
        cleanable.clean();
    }

    /**
     * The checks the library cannot make (it sees unsigned numbers): non-null, one length, no
     * negative extent. Everything else (rank, a region past the array or too large, the buffer
     * size) is the library's to report, with its status.
     */
    private static void checkRegion(long[] start, long[] shape) {
        Objects.requireNonNull(start, "start");
        Objects.requireNonNull(shape, "shape");
        if (start.length != shape.length) {
            throw new IllegalArgumentException("start has " + start.length + " values, shape "
                    + shape.length);
        }
        for (long e : shape) {
            if (e < 0) {
                throw new IllegalArgumentException("negative extent " + e);
            }
        }
    }

    /** The element count of a region that must fit one Java array of 2-byte elements. */
    private static int shortCount(long[] start, long[] shape) {
        checkRegion(start, shape);
        long n = 1;
        for (long e : shape) {
            if (e == 0) {
                return 0;
            }
        }
        for (long e : shape) {
            if (e > (Integer.MAX_VALUE - 8) / 2 || (n *= e) > (Integer.MAX_VALUE - 8) / 2) {
                throw new IllegalArgumentException("a region of shape "
                        + java.util.Arrays.toString(shape) + " does not fit a short[]");
            }
        }
        return (int) n;
    }

    private void bytes(long[] start, long[] shape, byte[] buf, boolean write) {
        checkRegion(start, shape);
        long h = ref.acquire();
        try {
            if (write) {
                Native.arrayWriteRegion(h, start, shape, buf);
            } else {
                Native.arrayReadRegion(h, start, shape, buf);
            }
        } finally {
            ref.release();
        }
    }

    /** {@code remaining()} bytes from {@code position()}; on success the position moves past. */
    private void direct(long[] start, long[] shape, ByteBuffer b, boolean write) {
        checkRegion(start, shape);
        Objects.requireNonNull(b, write ? "src" : "dst");
        if (!b.isDirect()) {
            throw new IllegalArgumentException("a direct ByteBuffer is required");
        }
        if (!write && b.isReadOnly()) {
            throw new java.nio.ReadOnlyBufferException();
        }
        int pos = b.position();
        int len = b.remaining();
        long h = ref.acquire();
        try {
            if (write) {
                Native.arrayWriteRegionDirect(h, start, shape, b, pos, len);
            } else {
                Native.arrayReadRegionDirect(h, start, shape, b, pos, len);
            }
        } finally {
            ref.release();
        }
        b.position(pos + len);
    }
}
