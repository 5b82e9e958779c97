package io.zarrshard;

import java.nio.ByteBuffer;

/**
 * The JNI entry points of {@code libzarrshard_jni} (bindings/java/native/zarrshard_jni.c), one
 * per C ABI function. Handles are {@code long}s (the C pointers). Every method throws instead
 * of returning a status: {@link ShardException} for a failed library call, a standard
 * exception for a failure of the shim itself. Callers guarantee that a handle is live for the
 * whole call ({@link NativeRef}).
 */
final class Native {
    private Native() {}

    static {
        // -Dzarrshard.jni.library=/abs/path/libzarrshard_jni.so, else java.library.path.
        String path = System.getProperty("zarrshard.jni.library");
        if (path != null && !path.isEmpty()) {
            System.load(path);
        } else {
            System.loadLibrary("zarrshard_jni");
        }
    }

    /** Forces the library to load (and JNI_OnLoad to run) now. */
    static void load() {}

    // codecLong getters
    static final int CODEC_RANK = 0, CODEC_NUM_CHUNKS = 1, CODEC_INNER_CHUNK_NBYTES = 2,
            CODEC_INDEX_NBYTES = 3, CODEC_ELEMENT_NBYTES = 4;
    // codecShape getters
    static final int SHAPE_SHARD = 0, SHAPE_INNER_CHUNK = 1, SHAPE_CHUNKS_PER_SHARD = 2,
            SHAPE_ARRAY = 3, SHAPE_GRID = 4;
    // shardOpen capabilities: optional ShardIO methods the host overrides
    static final int CAP_READ_SUFFIX = 1, CAP_TRUNCATE = 2, CAP_REMOVE = 4, CAP_NEW_OBJECTS = 8;

    static native byte[] version();

    static native byte[] statusString(int status);

    static native long codecFromZarrJson(byte[] json);

    static native long codecFromConfig(byte[] config, byte[] dataType, long[] shardShape,
            byte[] fillValue);

    static native void codecFree(long codec);

    static native long codecLong(long codec, int which);

    static native long[] codecShape(long codec, int which, int rank);

    static native byte[] codecFillValue(long codec, int nbytes);

    static native byte[] codecDataType(long codec);

    static native byte[] codecShardKey(long codec, long[] gridCoords);

    static native long shardOpen(long codec, ShardIO io, int mode, int flags, int caps);

    /** Close; returns what a ShardIO callback threw during the close (a failed rollback of an
     * unfinished update), or null. */
    static native Throwable shardClose(long shard);

    static native void readChunk(long shard, long[] coords, byte[] out);

    static native void readChunkDirect(long shard, long[] coords, ByteBuffer dst, int pos, int len);

    static native void readChunks(long shard, long[] coords, int count, int rank, ByteBuffer dst,
            int pos, int len);

    static native byte[] readChunkRaw(long shard, long[] coords);

    static native void setCoalesceGap(long shard, long gap);

    static native long[] chunkInfo(long shard, long[] coords);

    static native void writeChunk(long shard, long[] coords, byte[] data);

    static native void writeChunkDirect(long shard, long[] coords, ByteBuffer src, int pos, int len);

    static native void writeChunkRaw(long shard, long[] coords, byte[] data);

    static native void writeChunkRawDirect(long shard, long[] coords, ByteBuffer src, int pos,
            int len);

    static native void eraseChunk(long shard, long[] coords);

    static native long finalizeShard(long shard);

    static native long arrayOpen(byte[] json, ShardStore store);

    static native void arrayClose(long array);

    static native long arrayCodec(long array);

    static native void arraySetCoalesceGap(long array, long gap);

    /** The kerchunk JSON reference set, UTF-8; {@code name} null for the root. */
    static native byte[] arrayRefs(long array, int format, int zarrFormat, byte[] urlPrefix,
            byte[] name);

    /**
     * The same text written to {@code out} as the shards are read; what {@code out.write}
     * throws is rethrown as it was.
     */
    static native void arrayRefsStream(long array, int format, int zarrFormat, byte[] urlPrefix,
            byte[] name, java.io.OutputStream out) throws java.io.IOException;

    static native void arrayRefsParquet(long array, byte[] urlPrefix, byte[] name,
            long recordSize, ShardStore out);

    /** {@code dir}: the bytes of a path (UTF-8 of the absolute path's String). */
    static native void arrayRefsParquetDir(long array, byte[] urlPrefix, byte[] name,
            long recordSize, byte[] dir);

    /** The problems of every stored shard: {int[] meta (status, key length, message length,
     * rank per problem), byte[] text (key then message, UTF-8), long[] chunks}. */
    static native Object[] arrayVerify(long array);

    static native void setThreads(int threads);

    static native int getThreads();

    static native void setMemoryLimit(long bytes);

    static native long getMemoryLimit();

    /** {bytes, contexts} freed (see RetainedMemory). */
    static native long[] releaseMemory();

    static native void arrayReadRegion(long array, long[] start, long[] shape, byte[] out);

    static native void arrayReadRegionDirect(long array, long[] start, long[] shape,
            ByteBuffer dst, int pos, int len);

    static native void arrayWriteRegion(long array, long[] start, long[] shape, byte[] data);

    static native void arrayWriteRegionDirect(long array, long[] start, long[] shape,
            ByteBuffer src, int pos, int len);

    // ---- the library's stores, arrays by path, groups ----

    /** A library store's table (malloc'd), owned by {@link Store}. */
    static native long storeDirectory(byte[] path, int flags);

    static native long storeMemory();

    /** shard_store_release, then the table's memory freed. */
    static native void storeRelease(long store);

    // Store arguments: a library table {@code lib} (when {@code host} is null) or a host store.

    static native long arrayCreate(long lib, ShardStore host, byte[] path, byte[] json, int flags);

    static native long arrayCreateSpec(long lib, ShardStore host, byte[] path, long[] shape,
            long[] shardShape, long[] chunkShape, byte[] dataType, byte[] fillValue,
            byte[] compressor, int level, int indexLocation, int checksums, byte[][] names,
            int flags);

    static native byte[] specJson(long[] shape, long[] shardShape, long[] chunkShape,
            byte[] dataType, byte[] fillValue, byte[] compressor, int level, int indexLocation,
            int checksums, byte[][] names);

    static native long arrayOpenPath(long lib, ShardStore host, byte[] path);

    static native void groupCreate(long lib, ShardStore host, byte[] path, byte[] attributes,
            int flags);

    static native long[] arrayShape(long array);

    static native void arrayResize(long array, long[] shape);

    static native void arrayAppend(long array, int axis, long[] block, byte[] data);

    static native void arrayAppendDirect(long array, int axis, long[] block, ByteBuffer src,
            int pos, int len);

    static native void arrayFlush(long array);

    static native void arraySetAttributes(long array, byte[] json);

    static native byte[] arrayAttributes(long array);

    /** {shards rewritten, bytes freed}. */
    static native long[] arrayCompact(long array, int flags);

    static native void arrayRefsParquetStore(long array, byte[] urlPrefix, byte[] name,
            long recordSize, long store);

    /** shard_io_file + shard_open_ex. */
    static native long shardOpenFile(long codec, byte[] path, int mode, int flags);

    /** Test hook: read on a native thread the JVM does not know; returns the status. */
    static native int readChunkOnNativeThread(long shard, long[] coords, byte[] out, int[] ioOut);
}
