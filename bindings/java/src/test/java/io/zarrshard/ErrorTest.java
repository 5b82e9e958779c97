package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.Test;

public class ErrorTest {

    private static ShardException expect(Status status, org.junit.function.ThrowingRunnable r) {
        ShardException e = assertThrows(ShardException.class, r);
        assertEquals(e.getMessage(), status, e.status());
        assertEquals(status.code(), e.statusCode());
        assertNotNull(e.libraryMessage());
        assertFalse("library message: " + e, e.libraryMessage().isEmpty());
        assertTrue(e.getMessage().startsWith("SHARD_ERR_" + status.name() + ": "));
        return e;
    }

    @Test
    public void badJson() {
        ShardException e = expect(Status.INVALID_METADATA, () -> ShardCodec.fromZarrJson("{"));
        assertEquals(0, e.ioCode());
        assertNull(e.getCause());
        expect(Status.INVALID_METADATA, () -> ShardCodec.fromConfig("{", "uint16", SHARD_SHAPE, "0"));
        expect(Status.INVALID_METADATA, () -> ShardCodec.fromZarrJson("{\"zarr_format\": 3}"));
        expect(Status.INVALID_METADATA,
                () -> ShardCodec.fromConfig(CFG_ZSTD_END, "uint17", SHARD_SHAPE, "0"));
        expect(Status.INVALID_METADATA,
                () -> ShardCodec.fromConfig(CFG_ZSTD_END, "uint16", SHARD_SHAPE, "70000"));
        // Non-ASCII text survives the trip through the library's message (UTF-8, not JNI's
        // modified UTF-8).
        ShardException u = assertThrows(ShardException.class,
                () -> ShardCodec.fromConfig(CFG_ZSTD_END, "uint16\u00e9\ud83d\ude00", SHARD_SHAPE, "0"));
        assertTrue(u.getMessage(), u.getMessage().contains("\ud83d\ude00"));
        expect(Status.INVALID_METADATA,
                () -> ShardCodec.fromConfig(CFG_ZSTD_END, "uint16", new long[] {16, 16, 16}, "0"));
        assertThrows(NullPointerException.class, () -> ShardCodec.fromZarrJson(null));
    }

    @Test
    public void threadsSettingAndItsLimits() {
        try {
            Threads.set(1);
            assertEquals(1, Threads.get());
            try (ShardCodec codec = codec(CFG_ZSTD_END)) {
                MemoryShardIO io = new MemoryShardIO();
                writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
                checkStandard(codec, io, 1); // decodes on the calling thread alone
            }
            Threads.set(2);
            // Past the documented maximum: refused by the library, the setting unchanged.
            ShardException e = expect(Status.INVALID_ARGUMENT, () -> Threads.set(Threads.MAX + 1));
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("at most 1024"));
            expect(Status.INVALID_ARGUMENT, () -> Threads.set(Integer.MAX_VALUE));
            assertEquals(2, Threads.get());
            // Negative: refused in Java, before a (size_t) cast could turn it into 2^64 - 1.
            assertThrows(IllegalArgumentException.class, () -> Threads.set(-1));
            assertEquals(2, Threads.get());
        } finally {
            Threads.set(0);
        }
        assertTrue(Threads.get() >= 1);
    }

    /** The memory kept between calls is freed on request (what exactly: the Rust crate's
     * tests/encode_memory.rs): at least the compressor and decompressor the shard was written
     * and read with; nothing on a second call right after; and the next read rebuilds it. */
    @Test
    public void retainedMemoryIsReleased() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO io = new MemoryShardIO();
            writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            checkStandard(codec, io, 1);
            RetainedMemory.Released first = RetainedMemory.release();
            assertTrue(first.toString(), first.contexts() >= 2);
            assertEquals(new RetainedMemory.Released(0, 0), RetainedMemory.release());
            checkStandard(codec, io, 1);
            assertTrue(RetainedMemory.release().contexts() >= 1);
        }
    }

    @Test
    public void memoryLimitHoldsRawChunks() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO io = new MemoryShardIO();
            writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            try (Shard r = Shard.open(codec, io, Shard.Mode.READ)) {
                long[] c = allChunks().stream().filter(TestSupport::written).findFirst().get();
                int n = r.readChunkRaw(c).length;
                assertTrue(n > 1);
                try {
                    MemoryLimit.set(n - 1);
                    assertEquals(n - 1, MemoryLimit.get());
                    // The library refuses the size its index names (the size query), with its
                    // own status and message; nothing is allocated.
                    ShardException e = expect(Status.INVALID_ARGUMENT, () -> r.readChunkRaw(c));
                    assertTrue(e.libraryMessage(), e.libraryMessage().startsWith(
                            "memory limit: the encoded bytes of inner chunk [" + c[0] + ", " + c[1]
                                    + "] needs " + n + " bytes, more than the limit of " + (n - 1)));
                    assertEquals(0, e.ioCode());
                    assertNull(e.getCause());
                    MemoryLimit.set(n);
                    assertEquals(n, r.readChunkRaw(c).length);
                    assertThrows(IllegalArgumentException.class, () -> MemoryLimit.set(-1));
                    assertEquals(n, MemoryLimit.get());
                } finally {
                    MemoryLimit.set(0);
                }
                if (System.getenv("ZARRSHARD_MEMORY_LIMIT") == null) {
                    assertEquals(4L << 30, MemoryLimit.get());
                }
            }
        }
    }

    @Test
    public void wrongBufferSize() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO io = new MemoryShardIO();
            writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            try (Shard r = Shard.open(codec, io, Shard.Mode.READ)) {
                expect(Status.BUFFER_SIZE, () -> r.readChunk(new long[] {0, 0}, ByteBuffer.allocateDirect(31)));
                expect(Status.BUFFER_SIZE, () -> r.readChunks(new long[][] {{0, 0}}, ByteBuffer.allocateDirect(64)));
                assertThrows(IllegalArgumentException.class,
                        () -> r.readChunk(new long[] {0, 0}, ByteBuffer.allocate(32)));
                assertThrows(java.nio.ReadOnlyBufferException.class,
                        () -> r.readChunk(new long[] {0, 0}, ByteBuffer.allocateDirect(32).asReadOnlyBuffer()));
                // position is left alone on failure
                ByteBuffer b = ByteBuffer.allocateDirect(40);
                b.position(4);
                expect(Status.BUFFER_SIZE, () -> r.readChunk(new long[] {0, 0}, b));
                assertEquals(4, b.position());
                b.limit(36);
                r.readChunk(new long[] {0, 0}, b);
                assertEquals(36, b.position());
            }
            try (Shard w = Shard.open(codec, new MemoryShardIO(), Shard.Mode.WRITE_STREAMING)) {
                expect(Status.BUFFER_SIZE, () -> w.writeChunk(new long[] {0, 0}, new byte[33]));
                expect(Status.BUFFER_SIZE, () -> w.writeChunk(new long[] {0, 0}, ByteBuffer.allocateDirect(1)));
                assertThrows(IllegalArgumentException.class,
                        () -> w.writeChunk(new long[] {0, 0}, ByteBuffer.allocate(32)));
            }
        }
    }

    @Test
    public void badCoordinatesModesAndFlags() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            try (Shard r = Shard.open(codec, new MemoryShardIO(), Shard.Mode.READ)) {
                expect(Status.INVALID_ARGUMENT, () -> r.readChunk(4, 0));
                expect(Status.INVALID_ARGUMENT, () -> r.readChunk(-1, 0));
                expect(Status.INVALID_ARGUMENT, () -> r.readChunk(0));
                expect(Status.INVALID_ARGUMENT, () -> r.chunkInfo(0, 0, 0));
                assertThrows(IllegalArgumentException.class, () -> r.readChunks(new long[] {0}));
                // read handle refuses writes, write handle refuses reads
                expect(Status.INVALID_STATE, () -> r.writeChunk(new long[] {0, 0}, zeros()));
                expect(Status.INVALID_STATE, r::finalizeShard);
            }
            try (Shard w = Shard.open(codec, new MemoryShardIO(), Shard.Mode.WRITE_BUFFERED)) {
                expect(Status.INVALID_STATE, () -> w.readChunk(0, 0));
            }
            expect(Status.INVALID_ARGUMENT,
                    () -> Shard.open(codec, new MemoryShardIO(), Shard.Mode.READ, 1 << 7));
        }
    }

    @Test
    public void writeAfterFinalize() {
        try (ShardCodec codec = codec(CFG_ZSTD_END);
                Shard w = Shard.open(codec, new MemoryShardIO(), Shard.Mode.WRITE_STREAMING)) {
            w.writeChunk(new long[] {1, 1}, chunk(new long[] {1, 1}, 1));
            assertTrue(w.finalizeShard() > 0);
            expect(Status.INVALID_STATE, () -> w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1)));
            expect(Status.INVALID_STATE, () -> w.eraseChunk(0, 0));
            expect(Status.INVALID_STATE, w::finalizeShard);
        }
    }

    @Test
    public void useAfterClose() {
        ShardCodec codec = codec(CFG_ZSTD_END);
        MemoryShardIO io = new MemoryShardIO();
        writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
        Shard r = Shard.open(codec, io, Shard.Mode.READ);
        codec.close();
        codec.close(); // idempotent
        // the shard holds its own reference to the layout
        assertArrayEquals(chunk(new long[] {0, 0}, 1), r.readChunk(0, 0));
        assertThrows(IllegalStateException.class, codec::gridShape);
        assertThrows(IllegalStateException.class,
                () -> Shard.open(codec, new MemoryShardIO(), Shard.Mode.READ));
        assertEquals(2, codec.rank()); // cached getters still answer
        r.close();
        r.close();
        assertTrue(r.isClosed());
        assertThrows(IllegalStateException.class, () -> r.readChunk(0, 0));
        assertThrows(IllegalStateException.class, () -> r.readChunk(new long[] {0, 0}, ByteBuffer.allocateDirect(32)));
        assertThrows(IllegalStateException.class, () -> r.chunkInfo(0, 0));
        assertThrows(IllegalStateException.class, () -> r.readChunkRaw(0, 0));
        assertThrows(IllegalStateException.class, () -> r.writeChunk(new long[] {0, 0}, zeros()));
        assertThrows(IllegalStateException.class, r::finalizeShard);
    }

    @Test
    public void corruptShard() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO io = new MemoryShardIO();
            writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            byte[] bytes = io.bytes();
            byte[] badIndex = bytes.clone();
            badIndex[badIndex.length - 10] ^= 0x55;
            expect(Status.CHECKSUM, () -> Shard.open(codec, new MemoryShardIO(badIndex), Shard.Mode.READ));
            byte[] badChunk = bytes.clone();
            badChunk[2] ^= 0x55; // inside the first stored zstd frame
            try (Shard r = Shard.open(codec, new MemoryShardIO(badChunk), Shard.Mode.READ)) {
                ShardException e = assertThrows(ShardException.class, () -> {
                    for (long[] c : allChunks()) {
                        r.readChunk(c);
                    }
                });
                assertEquals(e.getMessage(), Status.CORRUPT, e.status());
            }
            expect(Status.CORRUPT, () -> Shard.open(codec, new MemoryShardIO(new byte[] {1, 2, 3}), Shard.Mode.READ));
        }
    }

    /** A ShardIO breaking the read contract is an I/O error, never memory corruption. */
    @Test
    public void contractViolations() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            ShardIO lying = new TestSupport.ForwardingIO(mem) {
                @Override
                public int read(long offset, ByteBuffer dst) throws IOException {
                    int n = super.read(offset, dst);
                    return offset < 100 ? n + 1 : -3;
                }
            };
            try (Shard r = Shard.open(codec, lying, Shard.Mode.READ)) {
                ShardException e = expect(Status.IO, () -> r.readChunk(0, 0));
                assertEquals(ShardException.IO_CONTRACT_VIOLATION, e.ioCode());
                assertTrue(e.getCause() instanceof IllegalStateException);
                assertTrue(e.getCause().getMessage(), e.getCause().getMessage().contains("ShardIO.read returned"));
            }
            ShardIO lazySuffix = new TestSupport.ForwardingIO(mem) {
                @Override
                public long readSuffix(ByteBuffer dst) {
                    return mem.size(); // claims the object's size but puts no byte
                }
            };
            ShardException e = expect(Status.IO, () -> Shard.open(codec, lazySuffix, Shard.Mode.READ));
            assertEquals(ShardException.IO_CONTRACT_VIOLATION, e.ioCode());
            assertTrue(e.getCause().getMessage(), e.getCause().getMessage().contains("readSuffix"));
        }
    }

    /** The Status enum names every status the library has, and no other: the library describes
     * each of its codes (`shard_status_str`) and calls the next one unknown. A status added to
     * the C API without its enum constant fails here. */
    @Test
    public void statusEnumMatchesTheLibrarysStatuses() {
        int next = 0;
        for (Status s : Status.values()) {
            if (s == Status.UNKNOWN) continue;
            String d = new String(Native.statusString(s.code()), StandardCharsets.UTF_8);
            assertNotEquals(s.name(), "unknown status", d);
            next = Math.max(next, s.code() + 1);
        }
        assertEquals("unknown status",
                new String(Native.statusString(next), StandardCharsets.UTF_8));
        // test_region.c's expected verify line carries the same words for status 4.
        assertEquals("corrupt shard",
                new String(Native.statusString(Status.CORRUPT.code()), StandardCharsets.UTF_8));
    }
}
