package io.zarrshard;

/**
 * The C API's {@code shard_status} values ({@link ShardException#status()}); the numbers never
 * change. Immutable; thread-safe.
 */
public enum Status {
    /** {@code SHARD_OK}: success (never carried by a {@link ShardException}). */
    OK(0),
    /** {@code SHARD_ERR_NULL_POINTER}: a required pointer was NULL (the binding throws
     * {@link NullPointerException} before the library could see one). */
    NULL_POINTER(1),
    /** {@code SHARD_ERR_INVALID_METADATA}: metadata or configuration JSON is malformed or
     * violates the specification. */
    INVALID_METADATA(2),
    /** {@code SHARD_ERR_UNSUPPORTED_CODEC}: a codec (or codec option) this build does not
     * implement. */
    UNSUPPORTED_CODEC(3),
    /** {@code SHARD_ERR_CORRUPT}: the shard's bytes cannot be decoded (bad index entry,
     * truncated object, bad stream). */
    CORRUPT(4),
    /** {@code SHARD_ERR_CHECKSUM}: a crc32c checksum (index or inner chunk) does not match. */
    CHECKSUM(5),
    /** {@code SHARD_ERR_IO}: an I/O callback failed; {@link ShardException#ioCode()} has the
     * host's code and {@link ShardException#getCause()} what a {@link ShardIO} threw. */
    IO(6),
    /** {@code SHARD_ERR_BUFFER_SIZE}: a buffer has the wrong length. */
    BUFFER_SIZE(7),
    /** {@code SHARD_ERR_INVALID_ARGUMENT}: an argument is out of range (coordinates, rank,
     * mode, flags, a region past the array) or a buffer exceeds the memory limit. */
    INVALID_ARGUMENT(8),
    /** {@code SHARD_ERR_INVALID_STATE}: the handle's state forbids the call (write after
     * finalize, read on a write handle, a getter a codec not built from a zarr.json lacks). */
    INVALID_STATE(9),
    /** {@code SHARD_ERR_UNSUPPORTED}: the {@link ShardIO} lacks an optional operation the call
     * needs, or the array is not sharded. */
    UNSUPPORTED(10),
    /** {@code SHARD_ERR_PANIC}: a bug in zarrshard was caught at the boundary; close the
     * handle. */
    PANIC(11),
    /** {@code SHARD_ERR_BUSY}: a write handle was used from two threads at once; the second
     * call was refused. */
    BUSY(12),
    /** A status this binding does not know (from a newer library); see
     * {@link ShardException#statusCode()}. */
    UNKNOWN(-1);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /**
     * The C value ({@code SHARD_OK} = 0, ...).
     *
     * @return the {@code shard_status} number, -1 for {@link #UNKNOWN}
     */
    public int code() {
        return code;
    }

    /**
     * The status with C value {@code code}. Thread-safe; never throws.
     *
     * @param code a {@code shard_status} number
     * @return its status, {@link #UNKNOWN} for a number this binding does not know
     */
    public static Status of(int code) {
        for (Status s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }
}
