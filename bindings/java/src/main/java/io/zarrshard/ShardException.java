package io.zarrshard;

import java.nio.charset.StandardCharsets;

/**
 * A failed zarrshard call: the C status, the library's message ({@code shard_last_error}) and,
 * for {@link Status#IO}, the host I/O code ({@code shard_last_io_code}).
 *
 * <p>Unchecked on purpose: most statuses are programming errors (bad arguments, wrong buffer
 * size, wrong state) or corrupt data that no caller can repair locally, and a checked exception
 * would have to be declared on every read in every stream and lambda. The I/O failures a
 * caller may want to handle keep their original exception: when a {@link ShardIO} method threw,
 * the status is {@link Status#IO}, {@link #ioCode()} is {@link #IO_JAVA_EXCEPTION} and
 * {@link #getCause()} is what the ShardIO threw.
 */
public class ShardException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** {@link #ioCode()} when a {@link ShardIO} method threw (the exception is the cause). */
    public static final int IO_JAVA_EXCEPTION = -1;
    /** {@link #ioCode()} when a callback could not reach the JVM (thread attach failed). */
    public static final int IO_NO_JVM = -2;
    /** {@link #ioCode()}: the host reported the object missing (C {@code SHARD_IO_NOT_FOUND}). */
    public static final int IO_NOT_FOUND = 2147483647;
    /** {@link #ioCode()}: a callback broke the contract (C {@code SHARD_IO_CONTRACT_VIOLATION}). */
    public static final int IO_CONTRACT_VIOLATION = 2147483646;

    /** The {@code shard_status} value. */
    private final int statusCode;
    /** The library's message, never null. */
    private final String libraryMessage;
    /** The host I/O code, 0 unless the status is IO. */
    private final int ioCode;

    /**
     * A failed call; the binding builds these from the library's status. Public so hosts can
     * build one too (e.g. in a test double).
     *
     * @param statusCode the {@code shard_status} value
     * @param libraryMessage the library's message ({@code shard_last_error}); may be empty
     * @param ioCode the host I/O code of a {@link Status#IO} failure, else 0
     * @param cause what a {@link ShardIO} or {@link ShardStore} threw during the call, or null
     */
    public ShardException(int statusCode, String libraryMessage, int ioCode, Throwable cause) {
        super(describe(statusCode, libraryMessage, ioCode), cause);
        this.statusCode = statusCode;
        this.libraryMessage = libraryMessage == null ? "" : libraryMessage;
        this.ioCode = ioCode;
    }

    /** Called by the JNI shim; the message is UTF-8 (not JNI's modified UTF-8). */
    static ShardException fromNative(int status, byte[] message, int ioCode, Throwable cause) {
        return new ShardException(status, new String(message, StandardCharsets.UTF_8), ioCode,
                cause);
    }

    private static String describe(int status, String message, int ioCode) {
        StringBuilder b = new StringBuilder("SHARD_ERR_").append(Status.of(status).name());
        if (Status.of(status) == Status.UNKNOWN) {
            b.append('(').append(status).append(')');
        }
        b.append(": ").append(message == null || message.isEmpty() ? "(no message)" : message);
        return b.toString();
    }

    /**
     * The status of the failed call.
     *
     * @return the status; {@link Status#UNKNOWN} for a value this binding does not know
     */
    public Status status() {
        return Status.of(statusCode);
    }

    /**
     * The raw {@code shard_status} value.
     *
     * @return the number the library returned
     */
    public int statusCode() {
        return statusCode;
    }

    /**
     * The library's own message, as {@code shard_last_error} returned it.
     *
     * @return the message, never null (empty when the library gave none)
     */
    public String libraryMessage() {
        return libraryMessage;
    }

    /**
     * The host's I/O code of a {@link Status#IO} failure ({@code shard_last_io_code}).
     *
     * @return {@link #IO_JAVA_EXCEPTION} when a ShardIO threw, {@link #IO_CONTRACT_VIOLATION}
     *     when it broke the contract, {@link #IO_NO_JVM}; 0 for other statuses
     */
    public int ioCode() {
        return ioCode;
    }
}
