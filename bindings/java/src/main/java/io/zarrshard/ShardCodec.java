package io.zarrshard;

import java.lang.ref.Cleaner;
import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A shard layout: the {@code sharding_indexed} codec bound to one shard shape, data type and
 * fill value (C {@code shard_codec}). Immutable and thread-safe; any number of {@link Shard}s
 * may use one codec, and they stay valid after the codec is closed. The getters of immutable
 * facts (rank, shapes, sizes, data type, fill value) are read once at construction and work
 * after {@link #close()}; {@link #arrayShape()}, {@link #gridShape()} and {@link #shardKey}
 * ask the library and throw {@link IllegalStateException} once closed. The codec owns its
 * native handle: close it (a {@link Cleaner} frees a forgotten one).
 *
 * <pre>{@code
 * try (ShardCodec codec = ShardCodec.fromZarrJson(Files.readString(dir.resolve("zarr.json")))) {
 *     long[] grid = codec.gridShape();
 *     String key = codec.shardKey(0, 1);          // "c/0/1"
 * }
 * }</pre>
 */
public final class ShardCodec implements AutoCloseable {
    static final Cleaner CLEANER = Cleaner.create();

    final NativeRef ref;
    private final Cleaner.Cleanable cleanable;
    private final int rank;
    private final long[] shardShape;
    private final long[] innerChunkShape;
    private final long[] chunksPerShard;
    private final long numChunks;
    private final int innerChunkNbytes;
    private final long indexNbytes;
    private final int elementNbytes;
    private final byte[] fillValue;
    private final String dataType;

    private ShardCodec(long ptr) {
        ref = new NativeRef(ptr, p -> {
            Native.codecFree(p);
            return null;
        }, "ShardCodec");
        cleanable = CLEANER.register(this, ref);
        try {
            // Everything immutable is read once, so the getters need no native call.
            rank = Math.toIntExact(Native.codecLong(ptr, Native.CODEC_RANK));
            shardShape = Native.codecShape(ptr, Native.SHAPE_SHARD, rank);
            innerChunkShape = Native.codecShape(ptr, Native.SHAPE_INNER_CHUNK, rank);
            chunksPerShard = Native.codecShape(ptr, Native.SHAPE_CHUNKS_PER_SHARD, rank);
            numChunks = Native.codecLong(ptr, Native.CODEC_NUM_CHUNKS);
            long chunkBytes = Native.codecLong(ptr, Native.CODEC_INNER_CHUNK_NBYTES);
            // Neither a byte[] nor a ByteBuffer holds more than 2^31 - 1 bytes.
            if (chunkBytes > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("inner chunks of " + chunkBytes
                        + " bytes do not fit a Java array or ByteBuffer");
            }
            innerChunkNbytes = (int) chunkBytes;
            indexNbytes = Native.codecLong(ptr, Native.CODEC_INDEX_NBYTES);
            elementNbytes = Math.toIntExact(Native.codecLong(ptr, Native.CODEC_ELEMENT_NBYTES));
            fillValue = Native.codecFillValue(ptr, elementNbytes);
            dataType = new String(Native.codecDataType(ptr), StandardCharsets.UTF_8);
        } catch (RuntimeException | Error e) {
            cleanable.clean();
            throw e;
        }
    }

    /** Take ownership of a {@code shard_codec} pointer (from {@link ShardArray#codec()}). */
    static ShardCodec adopt(long ptr) {
        return new ShardCodec(ptr);
    }

    /**
     * A codec from a Zarr v3 array {@code zarr.json}: its {@code codecs} must have
     * {@code sharding_indexed} as the array-to-bytes codec and no bytes-to-bytes codec after it.
     *
     * @param zarrJson the text of the array's {@code zarr.json}
     * @return the codec; close it
     * @throws ShardException {@link Status#INVALID_METADATA} (bad JSON, spec violation, not
     *     sharded), {@link Status#UNSUPPORTED_CODEC} (unknown codec, or a bytes-to-bytes codec
     *     after sharding)
     * @throws IllegalArgumentException when an inner chunk is larger than a Java array
     * @throws NullPointerException when {@code zarrJson} is null
     */
    public static ShardCodec fromZarrJson(String zarrJson) {
        Objects.requireNonNull(zarrJson, "zarrJson");
        return new ShardCodec(Native.codecFromZarrJson(zarrJson.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * A codec from a bare {@code sharding_indexed} configuration object (the value of
     * {@code "configuration"}), a data type name ({@code "uint16"}), the shard shape and the
     * fill value as JSON ({@code "0"}, {@code "\"NaN\""}).
     *
     * @param configJson the {@code sharding_indexed} configuration object
     * @param dataType the Zarr v3 data type name
     * @param shardShape elements per dimension of one shard (copied)
     * @param fillValueJson the fill value as JSON
     * @return the codec; close it
     * @throws ShardException {@link Status#INVALID_METADATA} (malformed JSON, unknown data type,
     *     a fill value the type cannot hold, a shape not matching {@code chunk_shape}),
     *     {@link Status#UNSUPPORTED_CODEC}
     * @throws IllegalArgumentException when an inner chunk is larger than a Java array
     * @throws NullPointerException when an argument is null
     */
    public static ShardCodec fromConfig(String configJson, String dataType, long[] shardShape,
            String fillValueJson) {
        Objects.requireNonNull(configJson, "configJson");
        Objects.requireNonNull(dataType, "dataType");
        Objects.requireNonNull(shardShape, "shardShape");
        Objects.requireNonNull(fillValueJson, "fillValueJson");
        return new ShardCodec(Native.codecFromConfig(configJson.getBytes(StandardCharsets.UTF_8),
                dataType.getBytes(StandardCharsets.UTF_8), shardShape.clone(),
                fillValueJson.getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * The library version. Thread-safe.
     *
     * @return e.g. {@code "0.1.0"}
     */
    public static String libraryVersion() {
        return new String(Native.version(), StandardCharsets.UTF_8);
    }

    /**
     * The number of dimensions of a shard.
     *
     * @return the rank (0 for a scalar shard)
     */
    public int rank() {
        return rank;
    }

    /**
     * Elements per dimension of one shard.
     *
     * @return a new array of {@link #rank()} values
     */
    public long[] shardShape() {
        return shardShape.clone();
    }

    /**
     * Elements per dimension of one inner chunk.
     *
     * @return a new array of {@link #rank()} values
     */
    public long[] innerChunkShape() {
        return innerChunkShape.clone();
    }

    /**
     * Inner chunks per shard along each dimension.
     *
     * @return a new array of {@link #rank()} values
     */
    public long[] chunksPerShard() {
        return chunksPerShard.clone();
    }

    /**
     * Inner chunks per shard.
     *
     * @return the product of {@link #chunksPerShard()}
     */
    public long numChunks() {
        return numChunks;
    }

    /**
     * Decoded bytes of one inner chunk: the buffer size reads and writes take.
     *
     * @return the size in bytes
     */
    public int innerChunkNbytes() {
        return innerChunkNbytes;
    }

    /**
     * Encoded bytes of the shard index.
     *
     * @return the size in bytes
     */
    public long indexNbytes() {
        return indexNbytes;
    }

    /**
     * Bytes of one element of the data type.
     *
     * @return the size in bytes
     */
    public int elementNbytes() {
        return elementNbytes;
    }

    /**
     * The fill value: one element, native byte order.
     *
     * @return a new array of {@link #elementNbytes()} bytes
     */
    public byte[] fillValue() {
        return fillValue.clone();
    }

    /**
     * The Zarr v3 data type name.
     *
     * @return e.g. {@code "uint16"}
     */
    public String dataType() {
        return dataType;
    }

    /**
     * The array shape from {@code zarr.json}. Thread-safe.
     *
     * @return a new array of {@link #rank()} values
     * @throws ShardException {@link Status#INVALID_STATE} when not built from a zarr.json
     * @throws IllegalStateException when the codec is closed
     */
    public long[] arrayShape() {
        long p = ref.acquire();
        try {
            return Native.codecShape(p, Native.SHAPE_ARRAY, rank);
        } finally {
            ref.release();
        }
    }

    /**
     * Shards along each dimension, from {@code zarr.json}. Thread-safe.
     *
     * @return a new array of {@link #rank()} values
     * @throws ShardException {@link Status#INVALID_STATE} when not built from a zarr.json
     * @throws IllegalStateException when the codec is closed
     */
    public long[] gridShape() {
        long p = ref.acquire();
        try {
            return Native.codecShape(p, Native.SHAPE_GRID, rank);
        } finally {
            ref.release();
        }
    }

    /**
     * The storage key of the shard at grid coordinates {@code gridCoords}. Thread-safe.
     *
     * @param gridCoords the shard's coordinates in the grid ({@link #gridShape()})
     * @return e.g. {@code "c/0/1"}
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (coordinates outside the grid or of
     *     the wrong rank), {@link Status#INVALID_STATE} (not built from a zarr.json)
     * @throws IllegalStateException when the codec is closed
     */
    public String shardKey(long... gridCoords) {
        Objects.requireNonNull(gridCoords, "gridCoords");
        long p = ref.acquire();
        try {
            return new String(Native.codecShardKey(p, gridCoords), StandardCharsets.UTF_8);
        } finally {
            ref.release();
        }
    }

    /**
     * Frees the native codec (once no call is using it). Shards opened with it stay valid.
     * Idempotent; thread-safe; never throws.
     */
    @Override
    public synchronized void close() {
        cleanable.clean();
    }
}
