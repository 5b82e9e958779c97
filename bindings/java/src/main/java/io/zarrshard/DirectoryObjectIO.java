package io.zarrshard;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * The object at one key of {@link ShardStore#directory}: the file {@code PATH}, read and
 * written in place, with whole objects written beside it and renamed over it (the Java twin of
 * the library's own {@code FileIo}).
 *
 * <ul>
 *   <li>{@link #read}, {@link #readSuffix}, {@link #size}: positional reads of {@code PATH}; a
 *       missing file reads as not found (all fill value).
 *   <li>{@link #write}, {@link #truncate}: in place (appends and updates), creating the file and
 *       missing parent directories. {@link #remove} deletes it (missing is fine).
 *   <li>{@link #beginNew} … {@link #commitNew}: a temporary sibling {@code PATH.tmp-PID-N},
 *       renamed over {@code PATH} in one step ({@code ATOMIC_MOVE}) once its size is the
 *       committed length; {@link #discardNew}, a failed commit and {@link #close} delete it. So
 *       a reader sees the old object or the new one whole, never a mix. There is no fsync: after
 *       a power loss the file may hold neither (as the library's {@code FileIo}).
 * </ul>
 *
 * <p>{@code PATH} is opened on first use and kept open; an operation that replaces or deletes
 * it (commit, remove) closes the cached channel, so later reads through this object see the
 * new file. Errors are the {@link IOException}s of {@code java.nio.file} (a failure of the
 * shard call with {@link Status#IO} and that exception as cause); a new-object call out of
 * order is an {@link IllegalStateException}.
 *
 * <p><b>Threads.</b> Thread-safe: reads share a read lock and run concurrently; every other
 * call takes the lock alone, so it waits for reads in flight and never closes a channel under
 * one. A call on an interrupted thread fails with {@link Status#IO}: the JDK closes the channel
 * ({@link java.nio.channels.ClosedByInterruptException}), which also fails reads in flight on
 * other threads. The next call opens {@code PATH} again.
 */
final class DirectoryObjectIO implements ShardIO, Closeable {
    private static final AtomicLong COUNTER = new AtomicLong();

    private final Path path;
    // Guards everything below: reads hold the read lock, everything else the write lock.
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private FileChannel channel; // PATH, open; null: missing (when looked) or not opened yet
    private boolean looked; // whether channel says what PATH is now
    private boolean writable; // channel was opened for writing
    private Path tmp; // the pending new object, or null
    private FileChannel tmpChannel;
    private boolean closed;

    /**
     * The object at {@code path}, which need not exist; nothing is opened yet. The caller owns
     * the result: {@link #close} it (the store's default {@link ShardStore#release} does).
     *
     * @param path the object's file (made absolute)
     */
    DirectoryObjectIO(Path path) {
        this.path = path.toAbsolutePath();
    }

    /**
     * The object's file.
     *
     * @return {@code PATH}, absolute
     */
    Path path() {
        return path;
    }

    /**
     * Read up to {@code dst.remaining()} bytes of {@code PATH} at {@code offset}; short only at
     * the end of the file. Thread-safe.
     *
     * @param offset byte offset in the file
     * @param dst where the bytes go
     * @return the bytes read
     * @throws NotFound when {@code PATH} does not exist
     * @throws IOException when it cannot be opened or read, or after {@link #close}
     */
    @Override
    public int read(long offset, ByteBuffer dst) throws IOException {
        FileChannel ch = lockForRead();
        try {
            if (ch == null) {
                throw new NotFound(path.toString());
            }
            return FileShardIO.readAt(ch, offset, dst);
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * The last {@code dst.remaining()} bytes of {@code PATH} (all of it if shorter) into
     * {@code dst}. Thread-safe.
     *
     * @param dst where the bytes go
     * @return the file's size; -1 when it does not exist
     * @throws IOException when it cannot be opened or read, or after {@link #close}
     */
    @Override
    public long readSuffix(ByteBuffer dst) throws IOException {
        FileChannel ch = lockForRead();
        try {
            if (ch == null) {
                return -1;
            }
            long size = ch.size();
            int n = (int) Math.min(dst.remaining(), size);
            dst.limit(dst.position() + n);
            FileShardIO.readAt(ch, size - n, dst);
            return size;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * The size of {@code PATH}. Thread-safe.
     *
     * @return the size in bytes; -1 when it does not exist
     * @throws IOException when it cannot be opened, or after {@link #close}
     */
    @Override
    public long size() throws IOException {
        FileChannel ch = lockForRead();
        try {
            return ch == null ? -1 : ch.size();
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Write all of {@code src} into {@code PATH} at {@code offset}, in place, creating the file
     * and missing parent directories.
     *
     * @param offset byte offset in the file
     * @param src the bytes
     * @throws IOException when the file cannot be created or written, or after {@link #close}
     */
    @Override
    public void write(long offset, ByteBuffer src) throws IOException {
        lock.writeLock().lock();
        try {
            FileShardIO.writeAt(forWriting(), offset, src);
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Set the size of {@code PATH} to {@code length} (cut, or extended with zeros), creating
     * it and missing parent directories.
     *
     * @param length the new size
     * @throws IOException when the file cannot be created or resized, or after {@link #close}
     */
    @Override
    public void truncate(long length) throws IOException {
        lock.writeLock().lock();
        try {
            FileChannel ch = forWriting();
            long size = ch.size();
            if (length < size) {
                ch.truncate(length);
            } else if (length > size) {
                ch.write(ByteBuffer.allocate(1), length - 1); // extend with zeros
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Delete {@code PATH}; a missing file is fine.
     *
     * @throws IOException when it cannot be deleted, or after {@link #close}
     */
    @Override
    public void remove() throws IOException {
        lock.writeLock().lock();
        try {
            checkOpen();
            forgetQuietly();
            Files.deleteIfExists(path);
            looked = true; // missing now
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Create the temporary {@code PATH.tmp-PID-N} (and missing parent directories) for a new
     * object; {@code PATH} is untouched until {@link #commitNew}.
     *
     * @throws IllegalStateException when a new object is pending already
     * @throws IOException when the temporary cannot be created, or after {@link #close}
     */
    @Override
    public void beginNew() throws IOException {
        lock.writeLock().lock();
        try {
            checkOpen();
            if (tmp != null) {
                throw new IllegalStateException("a new object is pending already: " + tmp);
            }
            for (;;) {
                Path t = path.resolveSibling(path.getFileName() + ".tmp-"
                        + ProcessHandle.current().pid() + "-" + COUNTER.incrementAndGet());
                try {
                    tmpChannel = openCreating(t, StandardOpenOption.CREATE_NEW);
                    tmp = t;
                    return;
                } catch (FileAlreadyExistsException e) {
                    // a leftover of a crashed process with the same pid: take the next name
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Write all of {@code src} into the temporary at {@code offset}.
     *
     * @param offset byte offset in the new object
     * @param src the bytes
     * @throws IllegalStateException when no new object is pending
     * @throws IOException when the temporary cannot be written, or after {@link #close}
     */
    @Override
    public void writeNew(long offset, ByteBuffer src) throws IOException {
        lock.writeLock().lock();
        try {
            checkOpen();
            FileShardIO.writeAt(pending(), offset, src);
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Rename the temporary over {@code PATH} in one step, once its size is {@code length}.
     * Whatever happens the new object is released: on failure the temporary is deleted and
     * {@code PATH} is as it was.
     *
     * @param length the new object's size
     * @throws IllegalStateException when no new object is pending
     * @throws IOException when the temporary's size is not {@code length}, the rename fails
     *     (also where the file system cannot rename atomically), or after {@link #close}
     */
    @Override
    public void commitNew(long length) throws IOException {
        lock.writeLock().lock();
        try {
            checkOpen();
            FileChannel ch = pending();
            Path t = tmp;
            tmp = null; // released whatever happens
            tmpChannel = null;
            try {
                long size;
                try (ch) {
                    size = ch.size();
                }
                if (size != length) {
                    throw new IOException(t + ": the new object has " + size
                            + " bytes, committed as " + length);
                }
                // No fallback to a plain move: a copy and delete could show a reader half a file.
                Files.move(t, path, StandardCopyOption.ATOMIC_MOVE,
                        StandardCopyOption.REPLACE_EXISTING);
            } catch (IOException | RuntimeException e) {
                try {
                    Files.deleteIfExists(t);
                } catch (IOException d) {
                    e.addSuppressed(d);
                }
                throw e;
            }
            forgetQuietly(); // the cached channel is the replaced file's
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Delete the temporary; {@code PATH} stays. Does nothing when no new object is pending.
     *
     * @throws UncheckedIOException when the temporary cannot be deleted (the library drops it)
     */
    @Override
    public void discardNew() {
        lock.writeLock().lock();
        try {
            Path t = tmp;
            if (t != null) {
                try {
                    dropPending();
                    Files.deleteIfExists(t);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    /**
     * Close {@code PATH} and delete a pending temporary. Idempotent; thread-safe; waits for
     * reads in flight. Later calls fail with {@link IOException}.
     *
     * @throws IOException when closing a channel or deleting the temporary fails
     */
    @Override
    public void close() throws IOException {
        lock.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            Path t = tmp;
            try {
                forget();
            } finally {
                if (t != null) {
                    dropPending();
                    Files.deleteIfExists(t);
                }
            }
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public String toString() {
        return "DirectoryObjectIO[" + path + "]";
    }

    /**
     * Take the read lock and return the channel of {@code PATH} (null when it is missing),
     * opening it first when needed; the caller unlocks. On an exception no lock is held.
     */
    private FileChannel lockForRead() throws IOException {
        lock.readLock().lock();
        if (looked && !closed && (channel == null || channel.isOpen())) {
            return channel;
        }
        lock.readLock().unlock();
        // Opening changes the state: under the write lock, then downgraded to the read lock.
        lock.writeLock().lock();
        try {
            checkOpen();
            if (!looked || (channel != null && !channel.isOpen())) {
                forgetQuietly(); // closed by an interrupt: open PATH again
                try {
                    channel = FileChannel.open(path, StandardOpenOption.READ);
                } catch (NoSuchFileException e) {
                    channel = null;
                }
                writable = false;
                looked = true;
            }
            lock.readLock().lock();
            return channel;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** The channel of {@code PATH} opened for writing (created). Under the write lock. */
    private FileChannel forWriting() throws IOException {
        checkOpen();
        if (looked && channel != null && writable && channel.isOpen()) {
            return channel;
        }
        forgetQuietly(); // a channel opened for reading only
        channel = openCreating(path, StandardOpenOption.CREATE);
        writable = true;
        looked = true;
        return channel;
    }

    /** Close the cached channel: the next use opens {@code PATH} again. Under the write lock. */
    private void forget() throws IOException {
        FileChannel ch = channel;
        channel = null;
        looked = false;
        writable = false;
        if (ch != null) {
            ch.close();
        }
    }

    /** The pending temporary's channel. Under the write lock. */
    private FileChannel pending() {
        if (tmpChannel == null) {
            throw new IllegalStateException("no new object pending for " + path);
        }
        return tmpChannel;
    }

    /** {@link #forget} where the file is replaced or deleted anyway: its close cannot matter. */
    private void forgetQuietly() {
        try {
            forget();
        } catch (IOException e) {
            // only a descriptor of the old file
        }
    }

    /** Forget the pending new object and close its channel (the file stays). */
    private void dropPending() throws IOException {
        FileChannel ch = tmpChannel;
        tmp = null;
        tmpChannel = null;
        if (ch != null) {
            ch.close();
        }
    }

    private void checkOpen() throws IOException {
        if (closed) {
            throw new IOException(this + " is closed");
        }
    }

    /** Open {@code file} read-write with {@code create}; a missing parent is made, once. */
    private static FileChannel openCreating(Path file, StandardOpenOption create)
            throws IOException {
        try {
            return FileChannel.open(file, create, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
        } catch (NoSuchFileException e) {
            // One system call in the usual case; the directories only when they are missing.
            Files.createDirectories(file.getParent());
            return FileChannel.open(file, create, StandardOpenOption.READ,
                    StandardOpenOption.WRITE);
        }
    }
}
