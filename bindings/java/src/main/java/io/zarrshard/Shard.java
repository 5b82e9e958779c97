package io.zarrshard;

import java.lang.ref.Cleaner;
import java.nio.ByteBuffer;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.util.Objects;

/**
 * One open shard object (C {@code shard_handle}), a local file through the library's own
 * file I/O ({@link #open(ShardCodec, Path, Mode, int)}) or any storage through a host
 * {@link ShardIO} ({@link #open(ShardCodec, ShardIO, Mode, int)}).
 *
 * <pre>{@code
 * try (Shard shard = Shard.open(codec, dir.resolve(codec.shardKey(0, 0)), Shard.Mode.READ)) {
 *     byte[] chunk = shard.readChunk(0, 1);            // C order, native byte order
 * }
 * }</pre>
 *
 * <p><b>Threads.</b> A read handle may be read from any number of threads at once. A write
 * handle takes one call at a time (a concurrent call fails with {@link Status#BUSY}).
 * {@link #close()} may be called from any thread at any time: it waits for nothing, and the
 * native handle is freed when the last call in flight returns; later calls throw
 * {@link IllegalStateException}.
 *
 * <p><b>Buffers.</b> Chunks are C order, native byte order ({@link java.nio.ByteOrder#nativeOrder()}).
 * The {@link ByteBuffer} variants take direct buffers and use {@code remaining()} bytes from
 * {@code position()}; on success the position moves past them.
 *
 * <p><b>Errors.</b> Failed calls throw {@link ShardException} with the library's status and
 * message; if the {@link ShardIO} threw, the status is {@link Status#IO} and the cause is that
 * exception. Every method that reaches the library throws {@link IllegalStateException} once
 * the Shard is closed, and every method throws {@link NullPointerException} for a null
 * argument. Coordinates are the inner chunk's, one per dimension; out of range (negative
 * included) or of the wrong rank they give {@link Status#INVALID_ARGUMENT}.
 *
 * <p><b>Ownership.</b> The Shard owns its native handle (free it with {@link #close()}; a
 * {@link java.lang.ref.Cleaner} frees a forgotten one) and keeps its {@link ShardIO} reachable
 * until then, but never closes it. It does not keep the {@link ShardCodec} open.
 */
public final class Shard implements AutoCloseable {

    /** How a shard is opened ({@code shard_mode}). */
    public enum Mode {
        /** Read: the index is read at open. */
        READ(0),
        /** Write, buffered: chunks kept encoded in memory, the whole shard written at finalize. */
        WRITE_BUFFERED(1),
        /** Write, streaming: each chunk written as given; the index at finalize. */
        WRITE_STREAMING(2),
        /** Update an existing shard, appending new chunks and a new index. */
        UPDATE_APPEND(3),
        /** Update an existing shard, rewriting chunks in place where they fit. */
        UPDATE_IN_PLACE(4);

        final int code;

        Mode(int code) {
            this.code = code;
        }
    }

    /** Flag: lay out buffered shards in Morton order instead of C order. */
    public static final int FLAG_MORTON_ORDER = 1;
    /** Flag: store inner chunks equal to the fill value instead of leaving them empty. */
    public static final int FLAG_STORE_FILL_CHUNKS = 2;

    private final NativeRef ref;
    private final Cleaner.Cleanable cleanable;
    private final Mode mode;
    private final int rank;
    private final int chunkNbytes;

    private Shard(long ptr, Mode mode, ShardCodec codec) {
        this.ref = new NativeRef(ptr, Native::shardClose, "Shard");
        this.mode = mode;
        this.rank = codec.rank();
        this.chunkNbytes = codec.innerChunkNbytes();
        // The safety net: a Shard that becomes unreachable without close() is closed by the
        // Cleaner thread (which frees the handle and releases the ShardIO).
        this.cleanable = ShardCodec.CLEANER.register(this, ref);
    }

    /**
     * {@link #open(ShardCodec, ShardIO, Mode, int)} with no flags.
     *
     * @param codec the layout
     * @param io the object's storage
     * @param mode how to open it
     * @return the open Shard; close it
     * @throws ShardException as {@link #open(ShardCodec, ShardIO, Mode, int)}
     */
    public static Shard open(ShardCodec codec, ShardIO io, Mode mode) {
        return open(codec, io, mode, 0);
    }

    /**
     * Open the shard object behind {@code io} with {@code codec}'s layout. Read and update
     * modes read the index here. On success the Shard keeps {@code io} reachable until closed;
     * on failure it keeps nothing. Thread-safe (any number of Shards may be opened on one
     * codec at once).
     *
     * @param codec the layout; it may be closed while the Shard stays open
     * @param io the object's storage
     * @param mode how to open it
     * @param flags a bitwise OR of {@code FLAG_*}, 0 for none (ignored by {@link Mode#READ})
     * @return the open Shard; close it
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (unknown flags),
     *     {@link Status#IO}, {@link Status#CORRUPT}, {@link Status#CHECKSUM} (read and update
     *     modes read the index), {@link Status#UNSUPPORTED} (a ShardIO lacking an operation)
     * @throws IllegalStateException when {@code codec} is closed
     */
    public static Shard open(ShardCodec codec, ShardIO io, Mode mode, int flags) {
        Objects.requireNonNull(codec, "codec");
        Objects.requireNonNull(io, "io");
        Objects.requireNonNull(mode, "mode");
        int caps = Capabilities.of(io);
        long c = codec.ref.acquire();
        long h;
        try {
            h = Native.shardOpen(c, io, mode.code, flags, caps);
        } finally {
            codec.ref.release();
        }
        try {
            return new Shard(h, mode, codec);
        } catch (Throwable t) {
            Native.shardClose(h);
            throw t;
        }
    }

    /**
     * {@link #open(ShardCodec, Path, Mode, int)} with no flags.
     *
     * @param codec the layout
     * @param path the shard's file
     * @param mode how to open it
     * @return the open Shard; close it
     * @throws ShardException as {@link #open(ShardCodec, Path, Mode, int)}
     */
    public static Shard open(ShardCodec codec, Path path, Mode mode) {
        return open(codec, path, mode, 0);
    }

    /**
     * Open the shard object that is the file {@code path}, through the library's own file I/O
     * (C {@code shard_io_file}; no Java code on the I/O path): positional reads (a missing file
     * reads as the fill value); a shard written whole ({@link Mode#WRITE_BUFFERED}'s
     * {@link #finalizeShard()}) goes to a temporary sibling renamed over the file only when
     * complete, so a reader sees the old file or the new one whole; updates write the file in
     * place; a shard left with no stored chunk is deleted. The Shard owns the file I/O and
     * closes it with itself. Thread-safe.
     *
     * @param codec the layout; it may be closed while the Shard stays open
     * @param path the shard's file (of the default file system)
     * @param mode how to open it
     * @param flags a bitwise OR of {@code FLAG_*}, 0 for none (ignored by {@link Mode#READ})
     * @return the open Shard; close it
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (unknown flags, a path with NUL),
     *     {@link Status#IO} (the file cannot be opened or read: the message names the path and
     *     {@link ShardException#ioCode()} is the OS error number), {@link Status#CORRUPT},
     *     {@link Status#CHECKSUM} (read and update modes read the index)
     * @throws IllegalArgumentException for a path of another file system than the default one
     * @throws IllegalStateException when {@code codec} is closed
     */
    public static Shard open(ShardCodec codec, Path path, Mode mode, int flags) {
        Objects.requireNonNull(codec, "codec");
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(mode, "mode");
        if (path.getFileSystem() != FileSystems.getDefault()) {
            throw new IllegalArgumentException("the library opens only paths of the default"
                    + " file system, not " + path.getFileSystem().provider().getScheme() + ": "
                    + path);
        }
        byte[] p = Store.cString(path.toString(), "path");
        long c = codec.ref.acquire();
        long h;
        try {
            h = Native.shardOpenFile(c, p, mode.code, flags);
        } finally {
            codec.ref.release();
        }
        try {
            return new Shard(h, mode, codec);
        } catch (Throwable t) {
            Native.shardClose(h);
            throw t;
        }
    }

    /**
     * The mode the Shard was opened with. Works after close.
     *
     * @return the mode
     */
    public Mode mode() {
        return mode;
    }

    /**
     * Bytes of one decoded inner chunk ({@link ShardCodec#innerChunkNbytes()}). Works after
     * close.
     *
     * @return the size every chunk buffer must have
     */
    public int chunkNbytes() {
        return chunkNbytes;
    }

    /**
     * Inner chunk {@code coords}, decoded (the fill value when it is not stored). Read handles;
     * thread-safe.
     *
     * @param coords the inner chunk's coordinates
     * @return a new array of {@link #chunkNbytes()} bytes, C order, native byte order
     * @throws ShardException {@link Status#INVALID_ARGUMENT}, {@link Status#IO},
     *     {@link Status#CORRUPT}, {@link Status#CHECKSUM}, {@link Status#INVALID_STATE} (write
     *     handle)
     */
    public byte[] readChunk(long... coords) {
        Objects.requireNonNull(coords, "coords");
        byte[] out = new byte[chunkNbytes];
        long h = ref.acquire();
        try {
            Native.readChunk(h, coords, out);
        } finally {
            ref.release();
        }
        return out;
    }

    /**
     * Decode inner chunk {@code coords} into the direct buffer {@code dst}, in place. Read
     * handles; thread-safe. On failure the position is unchanged and the remaining bytes are
     * unspecified.
     *
     * @param coords the inner chunk's coordinates
     * @param dst a direct, writable buffer with exactly {@link #chunkNbytes()} remaining
     * @throws ShardException as {@link #readChunk(long...)}, and {@link Status#BUFFER_SIZE}
     * @throws IllegalArgumentException when {@code dst} is not direct
     * @throws java.nio.ReadOnlyBufferException when {@code dst} is read-only
     */
    public void readChunk(long[] coords, ByteBuffer dst) {
        Objects.requireNonNull(coords, "coords");
        int pos = directWritable(dst);
        int len = dst.remaining();
        long h = ref.acquire();
        try {
            Native.readChunkDirect(h, coords, dst, pos, len);
        } finally {
            ref.release();
        }
        dst.position(pos + len);
    }

    /**
     * Decode several inner chunks in one call (their byte ranges coalesced, decoded in
     * parallel), one after another in the result. Read handles; thread-safe. For a rank-0
     * shard, each coordinate array is empty and each names the one chunk.
     *
     * @param coords one coordinate array per chunk, each of the shard's rank
     * @return a new array of {@code coords.length * chunkNbytes()} bytes
     * @throws ShardException as {@link #readChunk(long...)}
     * @throws IllegalArgumentException when a coordinate array has the wrong length, or the
     *     chunks do not fit one byte[]
     */
    public byte[] readChunks(long[]... coords) {
        Objects.requireNonNull(coords, "coords");
        long total = (long) coords.length * chunkNbytes;
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("the chunks do not fit one byte[]");
        }
        ByteBuffer dst = ByteBuffer.allocateDirect((int) total);
        readChunks(coords, dst);
        byte[] out = new byte[(int) total];
        dst.flip().get(out);
        return out;
    }

    /**
     * Decode several inner chunks into the direct buffer {@code dst}, one after another. Read
     * handles; thread-safe. On failure the position is unchanged and the remaining bytes are
     * unspecified.
     *
     * @param coords one coordinate array per chunk, each of the shard's rank
     * @param dst a direct, writable buffer with exactly {@code coords.length * chunkNbytes()}
     *     bytes remaining
     * @throws ShardException as {@link #readChunk(long...)}, and {@link Status#BUFFER_SIZE}
     * @throws IllegalArgumentException when a coordinate array has the wrong length or
     *     {@code dst} is not direct
     * @throws java.nio.ReadOnlyBufferException when {@code dst} is read-only
     */
    public void readChunks(long[][] coords, ByteBuffer dst) {
        long[] flat = flatten(coords);
        int pos = directWritable(dst);
        int len = dst.remaining();
        long h = ref.acquire();
        try {
            Native.readChunks(h, flat, coords.length, rank, dst, pos, len);
        } finally {
            ref.release();
        }
        dst.position(pos + len);
    }

    /** The coalescing gap of a new read handle, 65536 bytes (C {@code SHARD_DEFAULT_COALESCE_GAP}). */
    public static final long DEFAULT_COALESCE_GAP = 65536;

    /**
     * Set the gap in bytes below which the byte ranges of the chunks one
     * {@link #readChunks(long[]...)} call wants are fetched with one {@link ShardIO#read}
     * (C {@code shard_set_coalesce_gap}): 0 merges only touching ranges, a large gap reads the
     * whole span (fewer requests to a high-latency store, at the cost of bytes not wanted). The
     * default is {@link #DEFAULT_COALESCE_GAP}. The values read are the same whatever the gap.
     * Read handles only; thread-safe (calls that start afterwards use it).
     *
     * @param gap the gap in bytes, 0 or more
     * @throws ShardException {@link Status#INVALID_STATE} for a write handle
     * @throws IllegalArgumentException for a negative gap
     */
    public void setCoalesceGap(long gap) {
        if (gap < 0) {
            throw new IllegalArgumentException("the coalescing gap must be non-negative, got " + gap);
        }
        long h = ref.acquire();
        try {
            Native.setCoalesceGap(h, gap);
        } finally {
            ref.release();
        }
    }

    /**
     * The encoded bytes of inner chunk {@code coords}, as stored. The array is sized from the
     * index; the library holds that size to the {@link MemoryLimit} (where the object's size
     * is unknown, a damaged entry can name any size), so nothing larger is allocated. Read
     * handles; thread-safe.
     *
     * @param coords the inner chunk's coordinates
     * @return a new array, empty when the chunk is not stored
     * @throws ShardException {@link Status#INVALID_ARGUMENT} (coordinates, or an entry naming
     *     more bytes than the {@link MemoryLimit}: the library's message then starts
     *     {@code "memory limit: "}), {@link Status#IO}, {@link Status#CORRUPT},
     *     {@link Status#INVALID_STATE} (write handle)
     * @throws IllegalArgumentException when the chunk is larger than a byte[] can be (the
     *     limit raised past 2 GiB)
     */
    public byte[] readChunkRaw(long... coords) {
        Objects.requireNonNull(coords, "coords");
        long h = ref.acquire();
        try {
            return Native.readChunkRaw(h, coords);
        } finally {
            ref.release();
        }
    }

    /**
     * Where inner chunk {@code coords} is stored: for read handles from the index read at
     * open (thread-safe); for write handles the chunks written so far (buffered offsets are
     * assigned at finalize; {@link Status#BUSY} while another thread writes).
     *
     * @param coords the inner chunk's coordinates
     * @return its location
     * @throws ShardException {@link Status#INVALID_ARGUMENT}, {@link Status#BUSY}
     */
    public ChunkLocation chunkInfo(long... coords) {
        Objects.requireNonNull(coords, "coords");
        long[] v;
        long h = ref.acquire();
        try {
            v = Native.chunkInfo(h, coords);
        } finally {
            ref.release();
        }
        return new ChunkLocation(v[0], v[1], v[2] != 0);
    }

    /**
     * Encode and write inner chunk {@code coords} per the handle's mode (a chunk equal to the
     * fill value is left empty unless {@link #FLAG_STORE_FILL_CHUNKS}). Write handles, one
     * call at a time. After a failed {@link ShardIO#write} the object is incomplete and every
     * later write fails with {@link Status#INVALID_STATE}: close the Shard, discard the object.
     *
     * @param coords the inner chunk's coordinates
     * @param data {@link #chunkNbytes()} bytes, C order, native byte order (copied; the
     *     caller keeps the array)
     * @throws ShardException {@link Status#INVALID_ARGUMENT}, {@link Status#BUFFER_SIZE},
     *     {@link Status#IO}, {@link Status#INVALID_STATE} (read handle, after finalize or a
     *     failed write), {@link Status#BUSY}, {@link Status#UNSUPPORTED}
     */
    public void writeChunk(long[] coords, byte[] data) {
        Objects.requireNonNull(coords, "coords");
        Objects.requireNonNull(data, "data");
        long h = ref.acquire();
        try {
            Native.writeChunk(h, coords, data);
        } finally {
            ref.release();
        }
    }

    /**
     * {@link #writeChunk(long[], byte[])} from the remaining bytes of a direct buffer; on
     * success its position moves past them.
     *
     * @param coords the inner chunk's coordinates
     * @param src a direct buffer with exactly {@link #chunkNbytes()} remaining
     * @throws ShardException as {@link #writeChunk(long[], byte[])}
     * @throws IllegalArgumentException when {@code src} is not direct
     */
    public void writeChunk(long[] coords, ByteBuffer src) {
        Objects.requireNonNull(coords, "coords");
        int pos = direct(src);
        int len = src.remaining();
        long h = ref.acquire();
        try {
            Native.writeChunkDirect(h, coords, src, pos, len);
        } finally {
            ref.release();
        }
        src.position(pos + len);
    }

    /**
     * Write inner chunk {@code coords} from already-encoded bytes (e.g. {@link #readChunkRaw}
     * of a shard with the same inner codecs), stored as given. Write handles, one call at a
     * time.
     *
     * @param coords the inner chunk's coordinates
     * @param encoded the encoded chunk (copied)
     * @throws ShardException as {@link #writeChunk(long[], byte[])}
     */
    public void writeChunkRaw(long[] coords, byte[] encoded) {
        Objects.requireNonNull(coords, "coords");
        Objects.requireNonNull(encoded, "encoded");
        long h = ref.acquire();
        try {
            Native.writeChunkRaw(h, coords, encoded);
        } finally {
            ref.release();
        }
    }

    /**
     * {@link #writeChunkRaw(long[], byte[])} from the remaining bytes of a direct buffer; on
     * success its position moves past them.
     *
     * @param coords the inner chunk's coordinates
     * @param encoded a direct buffer holding the encoded chunk
     * @throws ShardException as {@link #writeChunk(long[], byte[])}
     * @throws IllegalArgumentException when {@code encoded} is not direct
     */
    public void writeChunkRaw(long[] coords, ByteBuffer encoded) {
        Objects.requireNonNull(coords, "coords");
        int pos = direct(encoded);
        int len = encoded.remaining();
        long h = ref.acquire();
        try {
            Native.writeChunkRawDirect(h, coords, encoded, pos, len);
        } finally {
            ref.release();
        }
        encoded.position(pos + len);
    }

    /**
     * Mark inner chunk {@code coords} empty (it then reads as the fill value). Write handles,
     * one call at a time.
     *
     * @param coords the inner chunk's coordinates
     * @throws ShardException {@link Status#INVALID_ARGUMENT}, {@link Status#INVALID_STATE},
     *     {@link Status#BUSY}
     */
    public void eraseChunk(long... coords) {
        Objects.requireNonNull(coords, "coords");
        long h = ref.acquire();
        try {
            Native.eraseChunk(h, coords);
        } finally {
            ref.release();
        }
    }

    /**
     * Write the index (and, buffered, the chunks): the shard is complete when this returns.
     * Returns the object's size, or 0 when nothing was stored and the object was removed.
     * Afterwards every write call fails with {@link Status#INVALID_STATE}; close the Shard.
     * Write handles, one call at a time.
     *
     * @return the object's size in bytes, 0 when it was removed
     * @throws ShardException {@link Status#IO}, {@link Status#INVALID_STATE} (read handle,
     *     finalized before, or after a failed write), {@link Status#BUSY},
     *     {@link Status#UNSUPPORTED} (no {@code remove} when the shard must be removed; no
     *     {@code truncate} over a longer object), {@link Status#INVALID_ARGUMENT}
     */
    public long finalizeShard() {
        long h = ref.acquire();
        try {
            return Native.finalizeShard(h);
        } finally {
            ref.release();
        }
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
     * Close the handle: a write handle not finalized is discarded (an
     * {@link Mode#UPDATE_APPEND} update is cut back to the previous shard with the ShardIO's
     * {@code truncate}, or {@code remove} for an object the update created). Idempotent;
     * thread-safe, also from inside a ShardIO callback, and safe while other threads are
     * reading (the handle is then freed when the last call returns). The ShardIO is released,
     * not closed; the handle is closed even when this throws.
     *
     * @throws ShardException {@link Status#IO} with {@link ShardException#IO_JAVA_EXCEPTION}
     *     and the ShardIO's exception as cause, when that cut-back threw: the object then still
     *     holds the bytes the update appended (with the index at the end, it is no longer a
     *     valid shard), so discard it or restore it. Reported only by the close that frees the
     *     handle (not when a call in flight or the Cleaner frees it).
     */
    @Override
    public synchronized void close() {
        cleanable.clean();
        Throwable rollback = ref.takeCloseFailure();
        if (rollback != null) {
            throw new ShardException(Status.IO.code(), "zarrshard: closing discarded an "
                    + "unfinished " + mode + " update and cutting the object back failed: it "
                    + "keeps the bytes written since open", ShardException.IO_JAVA_EXCEPTION,
                    rollback);
        }
    }

    /** Test hook: read on a native thread unknown to the JVM. Returns the C status. */
    int readChunkOnNativeThread(long[] coords, byte[] out, int[] ioCode) {
        long h = ref.acquire();
        try {
            return Native.readChunkOnNativeThread(h, coords, out, ioCode);
        } finally {
            ref.release();
        }
    }

    private long[] flatten(long[][] coords) {
        Objects.requireNonNull(coords, "coords");
        long[] flat = new long[Math.multiplyExact(coords.length, rank)];
        for (int i = 0; i < coords.length; i++) {
            long[] c = Objects.requireNonNull(coords[i], "coords[i]");
            if (c.length != rank) {
                throw new IllegalArgumentException(
                        "coords[" + i + "] has " + c.length + " values, the shard rank is " + rank);
            }
            System.arraycopy(c, 0, flat, i * rank, rank);
        }
        return flat;
    }

    private static int direct(ByteBuffer b) {
        Objects.requireNonNull(b, "buffer");
        if (!b.isDirect()) {
            throw new IllegalArgumentException("a direct ByteBuffer is required");
        }
        return b.position();
    }

    private static int directWritable(ByteBuffer b) {
        int pos = direct(b);
        if (b.isReadOnly()) {
            throw new java.nio.ReadOnlyBufferException();
        }
        return pos;
    }
}
