package io.zarrshard;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One shard object as one file, the Java twin of {@code examples-c/posix_io.c}. Reads are
 * positional ({@link FileChannel#read(ByteBuffer, long)}: thread-safe, no seek state).
 *
 * <p><b>Crash safety.</b> A write context never touches {@code path}: it writes a temporary
 * file next to it ({@code NAME.tmp.PID.N}), and {@link #commit()} makes the result visible
 * (fsync, atomic rename, fsync of the directory) only after {@link Shard#finalizeShard()}
 * succeeded. Closing without commit deletes the temporary, so the previous shard stays intact.
 * When finalize removed the shard (nothing stored), commit deletes {@code path} instead.
 *
 * <pre>{@code
 * try (FileShardIO io = FileShardIO.open(path, FileShardIO.Mode.WRITE);
 *      Shard shard = Shard.open(codec, io, Shard.Mode.WRITE_STREAMING)) {
 *     shard.writeChunk(new long[] {0, 0}, bytes);
 *     shard.finalizeShard();
 *     io.commit();
 * }   // closes the shard, then the file (deleting an uncommitted temporary)
 * }</pre>
 *
 * <p>Close the FileShardIO after the Shard that uses it (try-with-resources does, in reverse
 * order). Write modes create missing parent directories.
 *
 * <p><b>Interrupts.</b> A {@link FileChannel} is closed when a thread blocked in it is
 * interrupted ({@link java.nio.channels.ClosedByInterruptException}); every later call on this
 * FileShardIO then fails with {@link Status#IO}. Do not interrupt threads reading a shared
 * FileShardIO (e.g. {@code Future.cancel(true)}), or give each such task its own.
 */
public final class FileShardIO implements ShardIO, Closeable {

    /** How {@link #open} opens {@code path}. */
    public enum Mode {
        /** Read {@code path} in place; a missing file reads as all fill value. */
        READ,
        /** Write a new object to a temporary; {@code path} is replaced by {@link #commit()}. */
        WRITE,
        /** As WRITE, but the temporary starts as a copy of {@code path} (for update modes). */
        UPDATE
    }

    private static final AtomicLong COUNTER = new AtomicLong();

    private final Path path;
    private final Path tmp; // null in READ mode
    private final FileChannel channel; // null: path is missing (READ mode)
    // Write modes: whether the object logically exists. The temporary exists from open, but
    // until something is written it stands for "no object", as a missing file does.
    private volatile boolean exists;
    private boolean committed;
    private boolean closed;

    private FileShardIO(Path path, Path tmp, FileChannel channel, boolean exists) {
        this.path = path;
        this.tmp = tmp;
        this.channel = channel;
        this.exists = exists;
    }

    /**
     * Open the object at {@code path}. READ opens the file if it exists; WRITE and UPDATE
     * create the temporary (and missing parent directories), UPDATE copies {@code path} into
     * it. The caller owns the result: close it after the {@link Shard} that uses it.
     *
     * @param path the shard's file
     * @param mode how to open it
     * @return the new FileShardIO
     * @throws IOException when the file or temporary cannot be opened or copied (nothing is
     *     left behind)
     * @throws NullPointerException when an argument is null
     */
    public static FileShardIO open(Path path, Mode mode) throws IOException {
        java.util.Objects.requireNonNull(path, "path");
        java.util.Objects.requireNonNull(mode, "mode");
        if (mode == Mode.READ) {
            try {
                return new FileShardIO(path, null, FileChannel.open(path, StandardOpenOption.READ),
                        true);
            } catch (NoSuchFileException e) {
                return new FileShardIO(path, null, null, false);
            }
        }
        Path abs = path.toAbsolutePath();
        Path dir = abs.getParent();
        Files.createDirectories(dir);
        Path tmp;
        FileChannel ch;
        for (;;) {
            tmp = dir.resolve(abs.getFileName() + ".tmp." + ProcessHandle.current().pid() + "."
                    + COUNTER.incrementAndGet());
            try {
                ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                        StandardOpenOption.WRITE);
                break;
            } catch (FileAlreadyExistsException e) {
                // a leftover of a crashed process with the same pid: take the next name
            }
        }
        boolean exists = false;
        if (mode == Mode.UPDATE) {
            try (FileChannel src = FileChannel.open(abs, StandardOpenOption.READ)) {
                long size = src.size();
                long done = 0;
                while (done < size) {
                    done += src.transferTo(done, size - done, ch.position(done));
                }
                exists = true;
            } catch (NoSuchFileException e) {
                // a new, empty shard
            } catch (IOException | RuntimeException e) {
                ch.close();
                Files.deleteIfExists(tmp);
                throw e;
            }
        }
        return new FileShardIO(abs, tmp, ch, exists);
    }

    /**
     * The shard's file (absolute in write modes), not the temporary.
     *
     * @return the path given to {@link #open}
     */
    public Path path() {
        return path;
    }

    private boolean absent() {
        return channel == null || !exists;
    }

    @Override
    public int read(long offset, ByteBuffer dst) throws IOException {
        if (absent()) {
            throw new NotFound(path.toString());
        }
        return readAt(channel, offset, dst);
    }

    @Override
    public long readSuffix(ByteBuffer dst) throws IOException {
        if (absent()) {
            return -1;
        }
        long size = channel.size();
        int n = (int) Math.min(dst.remaining(), size);
        dst.limit(dst.position() + n);
        read(size - n, dst);
        return size;
    }

    @Override
    public long size() throws IOException {
        return absent() ? -1 : channel.size();
    }

    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        writable();
        writeAt(channel, offset, src);
        exists = true;
    }

    @Override
    public void truncate(long length) throws IOException {
        writable();
        long size = channel.size();
        if (length < size) {
            channel.truncate(length);
        } else if (length > size) {
            channel.write(ByteBuffer.allocate(1), length - 1); // extend with zeros
        }
        exists = true;
    }

    /** The temporary is emptied, not deleted; commit of a missing object deletes path. */
    @Override
    public void remove() throws IOException {
        writable();
        channel.truncate(0);
        exists = false;
    }

    /**
     * Make a successful write visible: fsync the temporary and rename it over {@code path}
     * (atomically), or, when the shard was removed, delete {@code path}; then fsync the
     * directory. Call once, after {@link Shard#finalizeShard()} returned.
     *
     * @throws IOException when the fsync, rename or delete fails (the temporary stays until
     *     {@link #close()}, the old shard is intact)
     * @throws IllegalStateException for a READ context, a second commit, or after close
     */
    public synchronized void commit() throws IOException {
        if (tmp == null || committed || closed) {
            throw new IllegalStateException(tmp == null ? "a read context has nothing to commit"
                    : committed ? "already committed" : "closed");
        }
        if (!exists) {
            Files.deleteIfExists(path);
            Files.deleteIfExists(tmp);
        } else {
            channel.force(true);
            try {
                Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
            }
        }
        committed = true;
        syncDirectory(path.getParent());
    }

    /**
     * Close the file; an uncommitted temporary is deleted. Idempotent; thread-safe. A Shard
     * still using this FileShardIO fails its later calls with {@link Status#IO}.
     *
     * @throws IOException when closing or deleting fails
     */
    @Override
    public synchronized void close() throws IOException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            if (channel != null) {
                channel.close();
            }
        } finally {
            if (tmp != null && !committed) {
                Files.deleteIfExists(tmp);
            }
        }
    }

    private void writable() throws IOException {
        if (tmp == null) {
            throw new IOException("FileShardIO opened for reading: " + path);
        }
    }

    /** So a rename or delete survives a crash; some file systems refuse it, which is fine. */
    private static void syncDirectory(Path dir) {
        try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
            d.force(true);
        } catch (IOException e) {
            // not supported here
        }
    }

    /** Reads into {@code dst} from {@code offset} until it is full or the file ends. */
    static int readAt(FileChannel ch, long offset, ByteBuffer dst) throws IOException {
        int got = 0;
        while (dst.hasRemaining()) {
            int n = ch.read(dst, offset + got);
            if (n < 0) {
                break; // end of file: a short read means the object ends here
            }
            got += n;
        }
        return got;
    }

    /** Writes all of {@code src} at {@code offset}. */
    static void writeAt(FileChannel ch, long offset, ByteBuffer src) throws IOException {
        long done = 0;
        while (src.hasRemaining()) {
            done += ch.write(src, offset + done);
        }
    }
}
