package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.Test;

/** Exceptions thrown by a host ShardIO: caught at the JNI boundary, chained, never a crash. */
public class ThrowingIOTest {

    static final class Boom extends RuntimeException {
        Boom(String m) {
            super(m);
        }
    }

    /** A ShardIO that throws from the chosen method while armed. */
    static class FaultyIO extends TestSupport.ForwardingIO {
        final AtomicBoolean armed = new AtomicBoolean();
        final String method;
        final RuntimeException runtime;
        final IOException checked;

        FaultyIO(ShardIO inner, String method, RuntimeException runtime, IOException checked) {
            super(inner);
            this.method = method;
            this.runtime = runtime;
            this.checked = checked;
        }

        void maybe(String m) throws IOException {
            if (armed.get() && method.equals(m)) {
                if (checked != null) {
                    throw checked;
                }
                throw runtime;
            }
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            maybe("read");
            return super.read(offset, dst);
        }

        @Override
        public long readSuffix(ByteBuffer dst) throws IOException {
            maybe("readSuffix");
            return super.readSuffix(dst);
        }

        @Override
        public long size() throws IOException {
            maybe("size");
            return super.size();
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            maybe("write");
            super.write(offset, src);
        }

        @Override
        public void truncate(long length) throws IOException {
            maybe("truncate");
            super.truncate(length);
        }
    }

    private static ShardException expectIo(Throwable cause, org.junit.function.ThrowingRunnable r) {
        ShardException e = assertThrows(ShardException.class, r);
        assertEquals(e.getMessage(), Status.IO, e.status());
        assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
        assertSame("the ShardIO's exception is the cause", cause, e.getCause());
        return e;
    }

    private static MemoryShardIO standard(ShardCodec codec) {
        MemoryShardIO mem = new MemoryShardIO();
        writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
        return mem;
    }

    @Test
    public void runtimeExceptionInRead() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            Boom boom = new Boom("read failed");
            FaultyIO io = new FaultyIO(standard(codec), "read", boom, null);
            try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                io.armed.set(true);
                expectIo(boom, () -> s.readChunk(0, 0));
                expectIo(boom, () -> s.readChunk(new long[] {0, 0}, ByteBuffer.allocateDirect(32)));
                expectIo(boom, () -> s.readChunks(new long[] {0, 0}, new long[] {1, 1}));
                expectIo(boom, () -> s.readChunkRaw(0, 0));
                // an empty chunk needs no read
                assertArrayEquals(zeros(), s.readChunk(1, 0));
                io.armed.set(false);
                // the handle is still good
                assertChunk(s, new long[] {0, 0}, chunk(new long[] {0, 0}, 1));
            }
        }
    }

    @Test
    public void checkedExceptionInReadAtOpen() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            IOException ioe = new IOException("disk on fire");
            FaultyIO io = new FaultyIO(standard(codec), "readSuffix", null, ioe);
            io.armed.set(true);
            expectIo(ioe, () -> Shard.open(codec, io, Shard.Mode.READ));
            io.armed.set(false);
            try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                assertArrayEquals(chunk(new long[] {1, 1}, 1), s.readChunk(1, 1));
            }
        }
    }

    @Test
    public void exceptionInSize() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            Boom boom = new Boom("size failed");
            FaultyIO io = new FaultyIO(standard(codec), "size", boom, null);
            io.armed.set(true);
            // MinimalIO: no readSuffix, so opening needs size
            ShardIO minimal = new ShardIO() {
                @Override
                public int read(long offset, ByteBuffer dst) throws IOException {
                    return io.read(offset, dst);
                }

                @Override
                public long size() throws IOException {
                    return io.size();
                }

                @Override
                public void write(long offset, ByteBuffer src) {
                    throw new UnsupportedOperationException();
                }
            };
            expectIo(boom, () -> Shard.open(codec, minimal, Shard.Mode.READ));
        }
    }

    @Test
    public void runtimeExceptionInWrite() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            Boom boom = new Boom("write failed");
            // streaming: the chunk write fails
            FaultyIO s1 = new FaultyIO(new MemoryShardIO(), "write", boom, null);
            try (Shard w = Shard.open(codec, s1, Shard.Mode.WRITE_STREAMING)) {
                s1.armed.set(true);
                expectIo(boom, () -> w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1)));
                // The object is now incomplete: the handle refuses further writes (header:
                // shard_write_chunk), without calling the ShardIO again.
                s1.armed.set(false);
                ShardException e = assertThrows(ShardException.class,
                        () -> w.writeChunk(new long[] {1, 1}, chunk(new long[] {1, 1}, 1)));
                assertEquals(e.getMessage(), Status.INVALID_STATE, e.status());
                assertNull(e.getCause());
                assertEquals(Status.INVALID_STATE,
                        assertThrows(ShardException.class, w::finalizeShard).status());
            }
            FaultyIO s1b = new FaultyIO(new MemoryShardIO(), "write", boom, null);
            try (Shard w = Shard.open(codec, s1b, Shard.Mode.WRITE_STREAMING)) {
                s1b.armed.set(true);
                expectIo(boom, () -> w.writeChunk(new long[] {0, 0}, direct(chunk(new long[] {0, 0}, 1))));
            }
            // buffered: finalize fails
            FaultyIO s2 = new FaultyIO(new MemoryShardIO(), "write", boom, null);
            try (Shard w = Shard.open(codec, s2, Shard.Mode.WRITE_BUFFERED)) {
                w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1));
                s2.armed.set(true);
                expectIo(boom, w::finalizeShard);
            }
            // a read-only ShardIO used for writing
            ShardIO readOnly = new TestSupport.ForwardingIO(new MemoryShardIO()) {
                @Override
                public void write(long offset, ByteBuffer src) {
                    throw new UnsupportedOperationException("read-only");
                }
            };
            try (Shard w = Shard.open(codec, readOnly, Shard.Mode.WRITE_STREAMING)) {
                ShardException e = assertThrows(ShardException.class,
                        () -> w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1)));
                assertTrue(e.getCause() instanceof UnsupportedOperationException);
            }
        }
    }

    @Test
    public void writingIntoTheReadOnlySourceBufferIsCaught() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            ShardIO scribbler = new TestSupport.ForwardingIO(new MemoryShardIO()) {
                @Override
                public void write(long offset, ByteBuffer src) {
                    src.put(0, (byte) 1);
                }
            };
            try (Shard w = Shard.open(codec, scribbler, Shard.Mode.WRITE_STREAMING)) {
                ShardException e = assertThrows(ShardException.class,
                        () -> w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1)));
                assertTrue(e.getCause() instanceof java.nio.ReadOnlyBufferException);
            }
        }
    }

    @Test
    public void errorsAreNotSwallowed() {
        // An Error (not just Exceptions) is caught at the boundary and chained too.
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            AssertionError err = new AssertionError("host bug");
            ShardIO io = new TestSupport.ForwardingIO(standard(codec)) {
                @Override
                public int read(long offset, ByteBuffer dst) {
                    throw err;
                }
            };
            try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                expectIo(err, () -> s.readChunk(0, 0));
            }
        }
    }

    /** A ShardIO that itself uses a Shard: the per-thread exception slot nests. */
    @Test
    public void nestedCallsKeepTheirOwnCause() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            Boom innerBoom = new Boom("inner");
            FaultyIO innerIo = new FaultyIO(standard(codec), "read", innerBoom, null);
            Shard innerShard = Shard.open(codec, innerIo, Shard.Mode.READ);
            innerIo.armed.set(true);
            IOException outer = new IOException("outer");
            ShardIO io = new TestSupport.ForwardingIO(standard(codec)) {
                @Override
                public int read(long offset, ByteBuffer dst) throws IOException {
                    ShardException e = assertThrows(ShardException.class, () -> innerShard.readChunk(0, 0));
                    assertSame(innerBoom, e.getCause());
                    outer.initCause(e);
                    throw outer;
                }
            };
            try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                ShardException e = expectIo(outer, () -> s.readChunk(1, 1));
                assertSame(innerBoom, e.getCause().getCause().getCause());
            } finally {
                innerShard.close();
            }
        }
    }

    /** The library calls back on a thread the JVM does not know: attached, called, detached. */
    @Test
    public void callbackOnNativeThread() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            AtomicBoolean sawThread = new AtomicBoolean();
            FaultyIO io = new FaultyIO(standard(codec), "read", new Boom("on a native thread"), null) {
                @Override
                public int read(long offset, ByteBuffer dst) throws IOException {
                    sawThread.set(Thread.currentThread().isDaemon());
                    return super.read(offset, dst);
                }
            };
            try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                long[] c = {3, 3};
                byte[] out = new byte[32];
                int[] ioCode = {99};
                for (int i = 0; i < 20; i++) {
                    assertEquals(0, s.readChunkOnNativeThread(c, out, ioCode));
                    assertArrayEquals(chunk(c, 1), out);
                    assertEquals(0, ioCode[0]);
                }
                assertTrue("attached as a daemon thread", sawThread.get());
                io.armed.set(true);
                assertEquals(Status.IO.code(), s.readChunkOnNativeThread(c, out, ioCode));
                assertEquals(ShardException.IO_JAVA_EXCEPTION, ioCode[0]);
            }
        }
    }

    /** A failed open releases the ShardIO (its global reference is deleted). */
    @Test
    public void failedOpenReleasesTheShardIO() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            WeakReference<ShardIO> ref = failOpen(codec);
            assertTrue("ShardIO collected after a failed open", collected(ref));
        }
    }

    private static WeakReference<ShardIO> failOpen(ShardCodec codec) {
        ShardIO io = new MemoryShardIO(new byte[] {1, 2, 3}); // not a shard
        assertThrows(ShardException.class, () -> Shard.open(codec, io, Shard.Mode.READ));
        return new WeakReference<>(io);
    }

    /** close() releases the ShardIO; a forgotten Shard is closed by the Cleaner. */
    @Test
    public void closeAndCleanerReleaseTheShardIO() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            WeakReference<ShardIO> closed = openAndClose(codec, true);
            assertTrue("ShardIO collected after close", collected(closed));
            WeakReference<ShardIO> forgotten = openAndClose(codec, false);
            assertTrue("ShardIO collected after the Cleaner closed the Shard", collected(forgotten));
        }
        // and a forgotten codec
        WeakReference<ShardCodec> c = new WeakReference<>(codec(CFG_ZSTD_END));
        assertTrue(collected(c));
    }

    private static WeakReference<ShardIO> openAndClose(ShardCodec codec, boolean close) {
        MemoryShardIO io = standard(codec);
        Shard s = Shard.open(codec, io, Shard.Mode.READ);
        assertArrayEquals(chunk(new long[] {0, 0}, 1), s.readChunk(0, 0));
        if (close) {
            s.close();
        }
        return new WeakReference<>(io);
    }
}
