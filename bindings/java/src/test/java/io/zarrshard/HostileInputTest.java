package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;
import org.junit.Test;

/**
 * Hostile and extreme input found in review: each test failed before its fix (see
 * docs/reliability.md).
 */
public class HostileInputTest {

    /** A rank-0 shard has one chunk and no coordinates; readChunks takes count empty arrays. */
    @Test
    public void rankZeroReadChunks() {
        String cfg = "{\"chunk_shape\": [], \"codecs\": [" + BYTES_LE + "], \"index_codecs\": ["
                + BYTES_LE + ", " + CRC + "]}";
        try (ShardCodec codec = ShardCodec.fromConfig(cfg, "uint16", new long[0], "7")) {
            assertEquals(0, codec.rank());
            assertEquals(2, codec.innerChunkNbytes());
            MemoryShardIO io = new MemoryShardIO();
            byte[] v = ByteBuffer.allocate(2).order(ByteOrder.nativeOrder()).putShort((short) 513)
                    .array();
            try (Shard w = Shard.open(codec, io, Shard.Mode.WRITE_BUFFERED)) {
                w.writeChunk(new long[0], v);
                assertTrue(w.finalizeShard() > 0);
            }
            try (Shard r = Shard.open(codec, io, Shard.Mode.READ)) {
                assertArrayEquals(v, r.readChunk());
                assertArrayEquals(new byte[] {v[0], v[1], v[0], v[1], v[0], v[1]},
                        r.readChunks(new long[0], new long[0], new long[0]));
                ByteBuffer d = ByteBuffer.allocateDirect(4);
                r.readChunks(new long[][] {{}, {}}, d);
                assertEquals(4, d.position());
                assertEquals(0, r.readChunks().length);
                // a coordinate given to a rank-0 shard is still refused
                assertThrows(IllegalArgumentException.class, () -> r.readChunks(new long[] {0}));
            }
        }
    }

    /**
     * A region whose element count overflows a long is the library's INVALID_ARGUMENT (header:
     * "a region ... whose byte size overflows 64 bits"), not an undocumented ArithmeticException.
     */
    @Test
    public void hugeRegionIsInvalidArgument() {
        try (ShardArray array = ShardArray.open(ZARR_JSON, new MemoryShardStore())) {
            long[] start = {0, 0};
            long[] huge = {1L << 40, 1L << 40};
            for (org.junit.function.ThrowingRunnable r : new org.junit.function.ThrowingRunnable[] {
                () -> array.readRegion(start, huge, new byte[8]),
                () -> array.readRegion(start, huge, ByteBuffer.allocateDirect(8)),
                () -> array.writeRegion(start, huge, new byte[8]),
                () -> array.writeRegion(start, huge, ByteBuffer.allocateDirect(8)),
                // an empty region past the array: still a region past the array
                () -> array.readRegion(start, new long[] {1L << 40, 0}, new byte[0]),
            }) {
                ShardException e = assertThrows(ShardException.class, r);
                assertEquals(e.getMessage(), Status.INVALID_ARGUMENT, e.status());
            }
            // short[] results: a region larger than a Java array is IllegalArgumentException
            assertThrows(IllegalArgumentException.class,
                    () -> array.readRegionShorts(start, huge));
            assertThrows(IllegalArgumentException.class,
                    () -> array.readRegionShorts(start, new long[] {1L << 20, 1L << 20}));
        }
    }

    /** Records every offset the library passes, failing on a negative one. */
    static class OffsetCheckingIO extends TestSupport.ForwardingIO {
        final AtomicLong minOffset = new AtomicLong(Long.MAX_VALUE);

        OffsetCheckingIO(ShardIO inner) {
            super(inner);
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            minOffset.accumulateAndGet(offset, Math::min);
            return super.read(offset, dst);
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            minOffset.accumulateAndGet(offset, Math::min);
            super.write(offset, src);
        }

        @Override
        public void truncate(long length) throws IOException {
            minOffset.accumulateAndGet(length, Math::min);
            super.truncate(length);
        }
    }

    /**
     * An index entry past 2^63 (a corrupt or hostile shard) never reaches a ShardIO as a
     * negative offset: a Java object ends before Long.MAX_VALUE, so the read is short and the
     * library reports the shard corrupt.
     */
    @Test
    public void offsetsPastLongMaxNeverReachTheShardIO() {
        try (ShardCodec codec = codec(CFG_RAW_START)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            byte[] bytes = mem.bytes();
            int entries = 16 * 16; // 16 entries of (offset, nbytes), u64 little-endian
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            assertFalse(b.getLong(0) == -1L); // chunk (0, 0) is stored
            b.putLong(0, 0x8000_0000_0000_0005L);
            CRC32C crc = new CRC32C();
            crc.update(bytes, 0, entries);
            b.putInt(entries, (int) crc.getValue());
            OffsetCheckingIO io = new OffsetCheckingIO(new MemoryShardIO(bytes));
            try (Shard r = Shard.open(codec, io, Shard.Mode.READ)) {
                ShardException e = assertThrows(ShardException.class, () -> r.readChunk(0, 0));
                assertEquals(e.getMessage(), Status.CORRUPT, e.status());
                assertArrayEquals(chunk(new long[] {1, 1}, 1), r.readChunk(1, 1));
            } catch (ShardException atOpen) {
                // The library may refuse the entry at open instead: also fine.
                assertEquals(atOpen.getMessage(), Status.CORRUPT, atOpen.status());
            }
            assertTrue("negative offset " + io.minOffset.get(), io.minOffset.get() >= 0);
        }
    }

    /**
     * A host whose size() claims an object ending near Long.MAX_VALUE makes an update append
     * past it: the write fails with status IO and an IllegalArgumentException as cause; the
     * ShardIO never sees a negative offset.
     */
    @Test
    public void writesPastLongMaxFailCleanly() {
        try (ShardCodec codec = codec(CFG_RAW_START)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            OffsetCheckingIO io = new OffsetCheckingIO(mem) {
                @Override
                public long size() {
                    return Long.MAX_VALUE - 4;
                }

                @Override
                public long readSuffix(ByteBuffer dst) throws IOException {
                    throw new UnsupportedOperationException("index at the start");
                }
            };
            Shard w = Shard.open(codec, io, Shard.Mode.UPDATE_APPEND);
            ShardException e = assertThrows(ShardException.class,
                    () -> w.writeChunk(new long[] {2, 2}, chunk(new long[] {2, 2}, 2)));
            assertEquals(e.getMessage(), Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertTrue(String.valueOf(e.getCause()),
                    e.getCause() instanceof IllegalArgumentException
                            && e.getCause().getMessage().contains("Long.MAX_VALUE"));
            // Discarding the update cuts the object back to the size it claimed, which
            // MemoryShardIO cannot hold: close says so.
            ShardException c = assertThrows(ShardException.class, w::close);
            assertEquals(Status.IO, c.status());
            assertTrue(String.valueOf(c.getCause()), c.getCause() instanceof IllegalArgumentException);
            assertTrue("negative offset " + io.minOffset.get(), io.minOffset.get() >= 0);
        }
    }

    /**
     * Giving up an UPDATE_APPEND update (close without finalize) cuts the object back with
     * truncate. When that truncate throws, the object keeps the appended bytes after its old
     * index (index at the end: the shard no longer opens). close() must say so instead of
     * returning normally, with the ShardIO's exception as cause.
     */
    @Test
    public void failedRollbackAtCloseIsReported() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            byte[] before = mem.bytes();
            IOException boom = new IOException("truncate failed");
            ShardIO io = new TestSupport.ForwardingIO(mem) {
                @Override
                public void truncate(long length) throws IOException {
                    throw boom;
                }
            };
            Shard w = Shard.open(codec, io, Shard.Mode.UPDATE_APPEND);
            w.writeChunk(new long[] {2, 2}, chunk(new long[] {2, 2}, 2));
            assertTrue(mem.bytes().length > before.length); // appended
            ShardException e = assertThrows(ShardException.class, w::close);
            assertEquals(e.getMessage(), Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertSame(boom, e.getCause());
            assertTrue(w.isClosed());
            w.close(); // reported once; closing again is a no-op
            // what the caller is being told about: the old shard is gone
            assertThrows(ShardException.class, () -> Shard.open(codec, mem, Shard.Mode.READ));
            // a rollback that works: close() is silent and the old shard is back
            MemoryShardIO mem2 = new MemoryShardIO(before);
            Shard w2 = Shard.open(codec, mem2, Shard.Mode.UPDATE_APPEND);
            w2.writeChunk(new long[] {2, 2}, chunk(new long[] {2, 2}, 2));
            w2.close();
            assertArrayEquals(before, mem2.bytes());
        }
    }

    /**
     * readChunkRaw sizes its array from the index. With the index at the start, no checksum
     * and a ShardIO that never reports its size, nothing bounds an entry: one naming 2^62 bytes
     * must be the library's INVALID_ARGUMENT (the memory limit, in its size query), not an
     * allocation (OutOfMemoryError) nor an error of the binding's own.
     */
    @Test
    public void rawChunkOfHostileSizeIsTheLibrarysRefusal() {
        String cfg = "{\"chunk_shape\": [4, 4], \"codecs\": [" + BYTES_LE + "], \"index_codecs\": ["
                + BYTES_LE + "], \"index_location\": \"start\"}";
        try (ShardCodec codec = codec(cfg)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            byte[] bytes = mem.bytes();
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            int entry = (1 * 4 + 1) * 16; // chunk (1, 1): offset, then nbytes
            assertEquals(CHUNK_NBYTES, b.getLong(entry + 8)); // stored, uncompressed
            b.putLong(entry + 8, 1L << 62);
            ShardIO sizeless = new ShardIO() {
                @Override
                public int read(long offset, ByteBuffer dst) throws IOException {
                    return new MemoryShardIO(bytes).read(offset, dst);
                }

                @Override
                public long size() {
                    throw new UnsupportedOperationException("this object does not know its size");
                }

                @Override
                public void write(long offset, ByteBuffer src) {
                    throw new UnsupportedOperationException("read-only");
                }
            };
            try (Shard r = Shard.open(codec, sizeless, Shard.Mode.READ)) {
                assertEquals(1L << 62, r.chunkInfo(1, 1).nbytes()); // the entry as written
                ShardException e = assertThrows(ShardException.class, () -> r.readChunkRaw(1, 1));
                assertEquals(e.getMessage(), Status.INVALID_ARGUMENT, e.status());
                assertTrue(e.libraryMessage(), e.libraryMessage().startsWith(
                        "memory limit: the encoded bytes of inner chunk [1, 1] needs "
                                + (1L << 62) + " bytes, more than the limit of "));
                assertNull(e.getCause()); // size() was never called
                // the sound entries still read
                assertArrayEquals(chunk(new long[] {0, 0}, 1), r.readChunkRaw(0, 0));
            }
            // A plausible size reaches the read, which finds the entry past the object.
            b.putLong(entry + 8, 1L << 20);
            try (Shard r = Shard.open(codec, new MemoryShardIO(bytes), Shard.Mode.READ)) {
                ShardException e = assertThrows(ShardException.class, () -> r.readChunkRaw(1, 1));
                assertEquals(e.getMessage(), Status.CORRUPT, e.status());
                // ... unless the limit is below it: refused before any allocation or read.
                try {
                    MemoryLimit.set(1L << 19);
                    e = assertThrows(ShardException.class, () -> r.readChunkRaw(1, 1));
                    assertEquals(e.getMessage(), Status.INVALID_ARGUMENT, e.status());
                    assertTrue(e.libraryMessage(), e.libraryMessage().startsWith("memory limit: "));
                } finally {
                    MemoryLimit.set(0);
                }
            }
        }
    }

    /** MemoryShardIO refuses a negative length or offset instead of corrupting itself. */
    @Test
    public void memoryShardIORefusesNegativeLengths() throws Exception {
        MemoryShardIO io = new MemoryShardIO(new byte[] {1, 2, 3, 4});
        assertThrows(IllegalArgumentException.class, () -> io.truncate(-1));
        assertArrayEquals(new byte[] {1, 2, 3, 4}, io.bytes());
        assertEquals(4, io.size());
        // Long.MIN_VALUE + 2 cast to int is 2: must not write at offset 2
        assertThrows(IllegalArgumentException.class,
                () -> io.write(Long.MIN_VALUE + 2, ByteBuffer.wrap(new byte[] {9})));
        assertArrayEquals(new byte[] {1, 2, 3, 4}, io.bytes());
        assertThrows(IllegalArgumentException.class,
                () -> io.read(-1, ByteBuffer.allocate(1)));
    }
}
