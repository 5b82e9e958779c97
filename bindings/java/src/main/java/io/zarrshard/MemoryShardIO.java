package io.zarrshard;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.locks.ReentrantReadWriteLock;

/**
 * A shard object in a Java byte array: tests, caches, or a staging buffer before an upload.
 * Thread-safe (reads share a read lock). Starts missing unless given initial bytes. Holds at
 * most 2 GiB: a write or truncate beyond, or a negative offset or length, throws
 * {@link IllegalArgumentException} (an {@link Status#IO} failure of the shard call).
 */
public final class MemoryShardIO implements ShardIO {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private byte[] data = new byte[0];
    private int size;
    private boolean exists;

    /** A missing object (it reads as all fill value until something is written). */
    public MemoryShardIO() {}

    /**
     * An object holding a copy of {@code bytes}.
     *
     * @param bytes the object's contents (copied; the caller keeps its array)
     * @throws NullPointerException when {@code bytes} is null
     */
    public MemoryShardIO(byte[] bytes) {
        data = bytes.clone();
        size = bytes.length;
        exists = true;
    }

    /**
     * A copy of the object's bytes. Thread-safe.
     *
     * @return a new array, or null when the object does not exist
     */
    public byte[] bytes() {
        lock.readLock().lock();
        try {
            return exists ? Arrays.copyOf(data, size) : null;
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Whether the object exists (something was written and it was not removed). Thread-safe.
     *
     * @return true when it exists
     */
    public boolean exists() {
        lock.readLock().lock();
        try {
            return exists;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public int read(long offset, ByteBuffer dst) throws NotFound {
        nonNegative("offset", offset);
        lock.readLock().lock();
        try {
            if (!exists) {
                throw new NotFound();
            }
            if (offset >= size) {
                return 0;
            }
            int n = (int) Math.min(dst.remaining(), size - offset);
            dst.put(data, (int) offset, n);
            return n;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public long readSuffix(ByteBuffer dst) {
        lock.readLock().lock();
        try {
            if (!exists) {
                return -1;
            }
            int n = Math.min(dst.remaining(), size);
            dst.put(data, size - n, n);
            return size;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public long size() {
        lock.readLock().lock();
        try {
            return exists ? size : -1;
        } finally {
            lock.readLock().unlock();
        }
    }

    @Override
    public void write(long offset, ByteBuffer src) {
        nonNegative("offset", offset);
        lock.writeLock().lock();
        try {
            long end = offset + src.remaining();
            if (end > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("MemoryShardIO holds at most 2 GiB");
            }
            ensure((int) end);
            if (offset > size) {
                Arrays.fill(data, size, (int) offset, (byte) 0); // a hole reads as zeros
            }
            src.get(data, (int) offset, src.remaining());
            size = Math.max(size, (int) end);
            exists = true;
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public void truncate(long length) {
        nonNegative("length", length);
        lock.writeLock().lock();
        try {
            if (length > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("MemoryShardIO holds at most 2 GiB");
            }
            int n = (int) length;
            ensure(n);
            if (n > size) {
                Arrays.fill(data, size, n, (byte) 0);
            }
            size = n;
            exists = true;
        } finally {
            lock.writeLock().unlock();
        }
    }

    @Override
    public void remove() {
        lock.writeLock().lock();
        try {
            data = new byte[0];
            size = 0;
            exists = false;
        } finally {
            lock.writeLock().unlock();
        }
    }

    /** A negative offset or length would index the array from a wrong place (its low 32
     * bits) and corrupt the object: refused. */
    private static void nonNegative(String what, long value) {
        if (value < 0) {
            throw new IllegalArgumentException("negative " + what + " " + value);
        }
    }

    private void ensure(int capacity) {
        if (capacity > data.length) {
            int grown = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(capacity, 2L * data.length));
            data = Arrays.copyOf(data, grown);
        }
    }
}
