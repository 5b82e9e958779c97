package io.zarrshard;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The host's storage for one shard object: the Java face of the C {@code shard_io_callbacks}.
 * Offsets are positional; there is no seek state.
 *
 * <p><b>Buffers.</b> {@code dst}/{@code src} are direct buffers over the library's memory,
 * valid only during the call: never keep them, or a view of them, after returning.
 * {@code src} is read-only.
 *
 * <p><b>Missing object.</b> {@link #read}, {@link #readSuffix}, {@link #size} and
 * {@link #remove} may throw {@link NotFound} (size and readSuffix may instead return a negative
 * value): the object then reads as all fill value.
 *
 * <p><b>Errors.</b> Any other exception (checked or not) is caught at the JNI boundary, never
 * crosses into native code, and fails the zarrshard call with a {@link ShardException} of
 * status {@link Status#IO} whose cause is that exception.
 *
 * <p><b>Threads.</b> {@link #read}, {@link #readSuffix} and {@link #size} are called
 * concurrently from every thread reading a read-mode {@link Shard}: they must be thread-safe.
 * {@link #write}, {@link #truncate} and {@link #remove} are called only from the thread calling
 * a write method of a write handle, never concurrently.
 *
 * <p><b>Optional methods.</b> {@link #readSuffix}, {@link #truncate} and {@link #remove} are
 * offered to the library only when the implementing class overrides them; otherwise the
 * library uses its fallback (a suffix read becomes size + read) or reports
 * {@link Status#UNSUPPORTED} when it needs the operation.
 *
 * <p><b>Lifetime.</b> A {@link Shard} keeps its ShardIO reachable (a JNI global reference)
 * from a successful open until it is closed; it never closes the ShardIO. The host closes its
 * own resources (e.g. a file it opened for the ShardIO) after the shard. For a shard that is
 * a local file, {@link Shard#open(ShardCodec, java.nio.file.Path, Shard.Mode, int)} uses the
 * library's own file I/O instead.
 */
public interface ShardIO {

    /**
     * Thrown by a ShardIO to say that the object does not exist (from {@link #read},
     * {@link #readSuffix}, {@link #size} or {@link #remove}; from {@link #write} or
     * {@link #truncate} it is an ordinary I/O error).
     */
    final class NotFound extends IOException {
        private static final long serialVersionUID = 1L;

        /** A NotFound with the message "object not found". */
        public NotFound() {
            super("object not found", null);
        }

        /**
         * A NotFound naming the object.
         *
         * @param message e.g. the missing path
         */
        public NotFound(String message) {
            super(message);
        }

        /** No stack trace: this is a normal answer, not a failure. */
        @Override
        public synchronized Throwable fillInStackTrace() {
            return this;
        }
    }

    /**
     * Read up to {@code dst.remaining()} bytes at {@code offset} into {@code dst}. Return the
     * number of bytes read; fewer than asked only when the object ends there (loop over your
     * own partial transfers). Required. Called concurrently by every thread reading a read
     * handle.
     *
     * @param offset byte offset in the object, never negative ({@code offset +
     *     dst.remaining()} never exceeds {@link Long#MAX_VALUE})
     * @param dst a direct buffer over library memory, valid only during the call
     * @return the bytes read, 0 to {@code dst.remaining()}; any other value fails the call
     *     with {@link Status#IO} and {@link ShardException#IO_CONTRACT_VIOLATION}
     * @throws NotFound when the object does not exist (it then reads as the fill value)
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    int read(long offset, ByteBuffer dst) throws IOException;

    /**
     * The object's size in bytes. Required (the library falls back to it without
     * {@link #readSuffix}, and checks sizes before updates). Called concurrently.
     *
     * @return the size; negative when the object does not exist
     * @throws NotFound when the object does not exist
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    long size() throws IOException;

    /**
     * Write all of {@code src} at {@code offset}, creating or extending the object. Required
     * for write handles; a read-only ShardIO may throw {@link UnsupportedOperationException}.
     * Called from one thread at a time.
     *
     * @param offset byte offset in the object, never negative ({@code offset +
     *     src.remaining()} never exceeds {@link Long#MAX_VALUE})
     * @param src a read-only direct buffer over library memory, valid only during the call
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    void write(long offset, ByteBuffer src) throws IOException;

    /**
     * Optional: put the last {@code dst.remaining()} bytes of the object (the whole object if
     * it is shorter) into {@code dst}, advancing its position by exactly
     * {@code min(dst.remaining(), size)}, and return the object's size (negative, or
     * {@link NotFound}, when it does not exist). One request instead of {@code size} + {@code
     * read} when the shard index is at the end. Called concurrently.
     *
     * @param dst a direct buffer over library memory, valid only during the call
     * @return the object's size; negative when it does not exist
     * @throws NotFound when the object does not exist
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default long readSuffix(ByteBuffer dst) throws IOException {
        throw new UnsupportedOperationException("readSuffix");
    }

    /**
     * Optional: set the object's size to {@code length} (a rewrite shorter than the old object
     * needs it unless the object always starts empty). Called from one thread at a time.
     *
     * @param length the new size, never negative
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default void truncate(long length) throws IOException {
        throw new UnsupportedOperationException("truncate");
    }

    /**
     * Optional: remove the object (a shard left with no stored chunk is removed at finalize).
     * Removing a missing object must succeed (return, or throw {@link NotFound}). Called from
     * one thread at a time.
     *
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default void remove() throws IOException {
        throw new UnsupportedOperationException("remove");
    }

    /**
     * Optional, with {@link #writeNew}, {@link #commitNew} and {@link #discardNew} (all four, or
     * none is used: C {@code create_new} … {@code discard_new}): start a new, empty object
     * beside this one (a temporary file, say) that replaces it only at {@link #commitNew}.
     * Whole shards (a buffered shard's {@code finalizeShard}, a shard a {@link ShardArray}
     * region write covers entirely) are then written this way, and any failure before the
     * commit calls {@link #discardNew} instead, leaving this object as it was. At most one new
     * object at a time. Called from one thread at a time.
     *
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default void beginNew() throws IOException {
        throw new UnsupportedOperationException("beginNew");
    }

    /**
     * Optional (see {@link #beginNew}): write all of {@code src} at {@code offset} of the new
     * object. Offsets increase without gaps, except that an index at the start comes last, at 0.
     *
     * @param offset where {@code src}'s first byte goes
     * @param src a read-only direct buffer over library memory, valid only during the call
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default void writeNew(long offset, ByteBuffer src) throws IOException {
        throw new UnsupportedOperationException("writeNew");
    }

    /**
     * Optional (see {@link #beginNew}): put the new object, {@code length} bytes, in place of
     * this one in one step (a rename). On failure throw, leave this object as it was and forget
     * the new one: nothing more is called for it.
     *
     * @param length the new object's size (the end of its writes)
     * @throws IOException (or any other exception) to fail the call with {@link Status#IO}
     */
    default void commitNew(long length) throws IOException {
        throw new UnsupportedOperationException("commitNew");
    }

    /**
     * Optional (see {@link #beginNew}): forget the new object; this one stays. An exception is
     * dropped (it is only reported as the cause of a call that fails for another reason).
     */
    default void discardNew() {
        throw new UnsupportedOperationException("discardNew");
    }
}
