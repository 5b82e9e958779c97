package io.zarrshard;

/** The C API's {@code shard_status} values; the numbers never change. */
public enum Status {
    OK(0),
    NULL_POINTER(1),
    INVALID_METADATA(2),
    UNSUPPORTED_CODEC(3),
    CORRUPT(4),
    CHECKSUM(5),
    /** An I/O callback failed; {@link ShardException#ioCode()} has the host's code. */
    IO(6),
    BUFFER_SIZE(7),
    INVALID_ARGUMENT(8),
    INVALID_STATE(9),
    UNSUPPORTED(10),
    /** A bug in zarrshard was caught at the boundary; close the handle. */
    PANIC(11),
    BUSY(12),
    /** A status this binding does not know (from a newer library). */
    UNKNOWN(-1);

    private final int code;

    Status(int code) {
        this.code = code;
    }

    /** The C value ({@code SHARD_OK} = 0, ...). */
    public int code() {
        return code;
    }

    public static Status of(int code) {
        for (Status s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }
}
