package io.zarrshard;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/**
 * A new array described without writing {@code zarr.json} by hand (C {@code shard_array_spec}):
 * shape, inner chunk shape and data type are required, the rest has the library's defaults.
 * {@link #toJson()} gives the metadata the library makes of it;
 * {@link ShardArray#create(Store, String, ArraySpec, boolean)} creates the array.
 *
 * <pre>{@code
 * ArraySpec spec = new ArraySpec(new long[] {0, 2048, 2048}, new long[] {1, 256, 256}, "uint16")
 *         .shardShape(32, 2048, 2048)
 *         .dimensionNames("t", "y", "x");
 * }</pre>
 *
 * <p>Defaults (those of {@code shard_array_spec_init}): sharded only when
 * {@link #shardShape(long...)} is set (else each inner chunk is one object); fill value 0;
 * compressor {@code "zstd"} at level 3; the shard index at the end of each shard, with a
 * crc32c checksum; inner chunks without a checksum; no dimension names. Setters return this
 * spec; the spec is not thread-safe while it is being set up, and may be shared once it is.
 * The library checks every value when the spec is used (rank, shapes, data type, compressor),
 * with {@link Status#INVALID_ARGUMENT} or {@link Status#INVALID_METADATA} naming the field;
 * this class checks only what Java must (null, equal lengths, negative numbers).
 */
public final class ArraySpec {
    private final long[] shape;
    private final long[] chunkShape;
    private final String dataType;
    private long[] shardShape;
    private String fillValue;
    private String compressor = "zstd";
    private int compressionLevel = 3;
    private boolean indexAtStart;
    private boolean indexChecksum = true;
    private boolean chunkChecksum;
    private String[] dimensionNames;

    /**
     * A spec with the required fields and every default.
     *
     * @param shape the array's shape (0 along an axis that {@link ShardArray#append} grows)
     * @param chunkShape the inner chunk shape, one value per dimension
     * @param dataType the Zarr v3 data type name: {@code "uint16"}, {@code "float32"}, ...
     * @throws IllegalArgumentException when the shapes differ in length or hold a negative
     *     value
     * @throws NullPointerException for a null argument
     */
    public ArraySpec(long[] shape, long[] chunkShape, String dataType) {
        this.shape = checked(shape, "shape", -1);
        this.chunkShape = checked(chunkShape, "chunkShape", shape.length);
        this.dataType = Objects.requireNonNull(dataType, "dataType");
    }

    private static long[] checked(long[] v, String what, int rank) {
        Objects.requireNonNull(v, what);
        if (rank >= 0 && v.length != rank) {
            throw new IllegalArgumentException(what + " has " + v.length + " values, the shape "
                    + rank);
        }
        for (long e : v) {
            if (e < 0) {
                throw new IllegalArgumentException(what + " holds a negative value: "
                        + Arrays.toString(v));
            }
        }
        return v.clone();
    }

    /**
     * Shard the array: each object holds a shard of this shape (a whole number of inner chunks
     * along each dimension); without it, each inner chunk is an object of its own.
     *
     * @param shardShape one value per dimension
     * @return this spec
     * @throws IllegalArgumentException when the length differs from the rank or a value is
     *     negative
     */
    public ArraySpec shardShape(long... shardShape) {
        this.shardShape = checked(shardShape, "shardShape", shape.length);
        return this;
    }

    /**
     * The fill value as JSON text, as {@code zarr.json} holds it: {@code "0"}, {@code "-1"},
     * {@code "\"NaN\""}; null for the default 0.
     *
     * @param json the fill value's JSON text, or null
     * @return this spec
     */
    public ArraySpec fillValue(String json) {
        this.fillValue = json;
        return this;
    }

    /**
     * The inner chunks' compressor: {@code "zstd"} (the default), {@code "gzip"},
     * {@code "blosc"} or {@code "none"}; null for the default.
     *
     * @param name the compressor's name, or null
     * @return this spec
     */
    public ArraySpec compressor(String name) {
        this.compressor = name == null ? "zstd" : name;
        return this;
    }

    /**
     * The compression level (default 3), as the compressor understands it.
     *
     * @param level the level
     * @return this spec
     */
    public ArraySpec compressionLevel(int level) {
        this.compressionLevel = level;
        return this;
    }

    /**
     * Where each shard's index is: at the start ({@code true}) or the end (the default, which
     * lets a shard be streamed to storage chunk by chunk).
     *
     * @param atStart whether the index comes first
     * @return this spec
     */
    public ArraySpec indexAtStart(boolean atStart) {
        this.indexAtStart = atStart;
        return this;
    }

    /**
     * Whether each shard's index carries a crc32c checksum (default on: a damaged index is then
     * found before a wrong byte range is read).
     *
     * @param on the index checksum
     * @return this spec
     */
    public ArraySpec indexChecksum(boolean on) {
        this.indexChecksum = on;
        return this;
    }

    /**
     * Whether each inner chunk carries a crc32c checksum (default off, as zarr-python and
     * tensorstore write by default: a damaged compressed chunk nearly always fails to decode;
     * on catches every flipped bit, at some CPU cost).
     *
     * @param on the inner chunks' checksum
     * @return this spec
     */
    public ArraySpec chunkChecksum(boolean on) {
        this.chunkChecksum = on;
        return this;
    }

    /**
     * The dimensions' names (an entry may be null: that dimension has none); null for none.
     *
     * @param names one per dimension, or null
     * @return this spec
     * @throws IllegalArgumentException when the count differs from the rank
     */
    public ArraySpec dimensionNames(String... names) {
        if (names != null && names.length != shape.length) {
            throw new IllegalArgumentException(names.length + " dimension names for rank "
                    + shape.length);
        }
        this.dimensionNames = names == null ? null : names.clone();
        return this;
    }

    /**
     * The {@code zarr.json} text the library makes of this spec (C
     * {@code shard_array_spec_json}), as {@link ShardArray#create(Store, String, ArraySpec,
     * boolean)} writes it.
     *
     * @return the metadata, JSON text
     * @throws ShardException {@link Status#INVALID_ARGUMENT} or {@link Status#INVALID_METADATA}
     *     naming the field the library refuses (a data type it does not know, a shard shape
     *     that is not a multiple of the chunk shape, an unknown compressor, ...)
     */
    public String toJson() {
        Object[] a = nativeArgs();
        return new String(Native.specJson((long[]) a[0], (long[]) a[1], (long[]) a[2],
                (byte[]) a[3], (byte[]) a[4], (byte[]) a[5], compressionLevel,
                indexAtStart ? 1 : 0, checksums(), (byte[][]) a[6]), StandardCharsets.UTF_8);
    }

    /** {@code SHARD_CHECKSUM_*} bits. */
    int checksums() {
        return (indexChecksum ? 1 : 0) | (chunkChecksum ? 2 : 0);
    }

    int compressionLevelValue() {
        return compressionLevel;
    }

    int indexLocation() {
        return indexAtStart ? 1 : 0;
    }

    /** {shape, shardShape, chunkShape, dataType, fillValue, compressor, names} for Native. */
    Object[] nativeArgs() {
        byte[][] names = null;
        if (dimensionNames != null) {
            names = new byte[dimensionNames.length][];
            for (int i = 0; i < names.length; i++) {
                names[i] = dimensionNames[i] == null ? null
                        : Store.cString(dimensionNames[i], "dimension name");
            }
        }
        return new Object[] {shape, shardShape, chunkShape, Store.cString(dataType, "data type"),
            fillValue == null ? null : Store.cString(fillValue, "fill value"),
            Store.cString(compressor, "compressor"), names};
    }
}
