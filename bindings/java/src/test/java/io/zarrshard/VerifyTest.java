package io.zarrshard;

import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.zip.CRC32C;
import org.junit.Test;

/**
 * {@link ShardArray#verify} (C {@code shard_array_verify}) over a {@link MemoryShardStore}:
 * {@link TestSupport#ZARR_JSON} (40x32, 16x16 shards of 4x4 inner chunks, a 3x2 shard grid;
 * chunks {@code bytes} + {@code zstd}, the index at the end with a crc32c) with data in shards
 * {@code c/0/1} and {@code c/2/0}. Damage is made by flipping the first byte of an inner
 * chunk's encoded bytes (its zstd frame's magic), found from the shard's own index bytes.
 */
public class VerifyTest {
    /** 16 index entries (offset, nbytes) + crc32c, at the end of the object. */
    private static final int INDEX_NBYTES = 16 * 16 + 4;

    /** The (offset, nbytes) of inner chunk (i, j), parsed from the index bytes of the object. */
    private static long[] entry(MemoryShardIO io, int i, int j) {
        byte[] shard = io.bytes();
        int at = shard.length - INDEX_NBYTES;
        CRC32C crc = new CRC32C();
        crc.update(shard, at, 16 * 16);
        ByteBuffer b = ByteBuffer.wrap(shard).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals("index checksum", (int) crc.getValue(), b.getInt(at + 16 * 16));
        int k = i * TestSupport.PER + j;
        long[] e = {b.getLong(at + 16 * k), b.getLong(at + 16 * k + 8)};
        assertTrue("chunk (" + i + ", " + j + ") is stored", e[0] >= 0 && e[1] > 0);
        return e;
    }

    /** Flip every bit of the byte at {@code offset} of the object. */
    private static void flip(MemoryShardIO io, long offset) {
        byte b = io.bytes()[(int) offset];
        io.write(offset, ByteBuffer.wrap(new byte[] {(byte) ~b}));
    }

    /** An array over {@code store} with c/0/1 written whole and rows 32..39 of c/2/0. */
    private static ShardArray withTwoShards(MemoryShardStore store) {
        ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, store);
        short[] a = new short[16 * 16];
        for (int k = 0; k < a.length; k++) {
            a[k] = (short) (k * 7 + 1);
        }
        array.writeRegion(new long[] {0, 16}, new long[] {16, 16}, a);
        short[] b = new short[8 * 16];
        for (int k = 0; k < b.length; k++) {
            b[k] = (short) (k * 13 + 5);
        }
        array.writeRegion(new long[] {32, 0}, new long[] {8, 16}, b);
        assertEquals(List.of("c/0/1", "c/2/0"), store.keys());
        return array;
    }

    @Test
    public void cleanThenTwoDamagedChunks() {
        MemoryShardStore store = new MemoryShardStore();
        try (ShardArray array = withTwoShards(store)) {
            assertEquals(List.of(), array.verify());

            // Damaged in reverse grid order; reported in grid order.
            MemoryShardIO late = store.open("c/2/0");
            MemoryShardIO early = store.open("c/0/1");
            flip(late, entry(late, 1, 3)[0]);
            flip(early, entry(early, 2, 1)[0]);
            List<ShardArray.Problem> problems = array.verify();
            assertEquals(problems.toString(), 2, problems.size());
            ShardArray.Problem p0 = problems.get(0);
            ShardArray.Problem p1 = problems.get(1);
            assertEquals("c/0/1", p0.key());
            assertArrayEquals(new long[] {2, 1}, p0.chunk());
            assertEquals(Status.CORRUPT, p0.status());
            assertEquals(Status.CORRUPT.code(), p0.statusCode());
            assertTrue(p0.message(), p0.message().startsWith("corrupt shard: inner chunk [2, 1]: "));
            assertEquals("c/0/1: " + p0.message(), p0.toString());
            assertEquals("c/2/0", p1.key());
            assertArrayEquals(new long[] {1, 3}, p1.chunk());
            assertEquals(Status.CORRUPT, p1.status());
            assertTrue(p1.message(), p1.message().startsWith("corrupt shard: inner chunk [1, 3]: "));

            // Immutable: the chunk is a copy, the list unmodifiable; equal on a second check.
            p0.chunk()[0] = 99;
            assertArrayEquals(new long[] {2, 1}, p0.chunk());
            assertThrows(UnsupportedOperationException.class, () -> problems.add(p0));
            assertEquals(problems, array.verify());
            assertEquals(problems.hashCode(), array.verify().hashCode());

            // A damaged index checksum: a problem about the shard, no chunk.
            byte[] bytes = early.bytes();
            flip(early, bytes.length - 1);
            List<ShardArray.Problem> again = array.verify();
            assertEquals(again.toString(), 2, again.size());
            assertEquals("c/0/1", again.get(0).key());
            assertEquals(0, again.get(0).chunk().length);
            assertEquals(Status.CHECKSUM, again.get(0).status());
            assertEquals(p1, again.get(1));
        }
    }

    /** A ShardIO over a MemoryShardIO whose reads and size fail with {@code boom}. */
    private static final class FailingIO implements ShardIO {
        final MemoryShardIO mem;
        final IOException boom;

        FailingIO(MemoryShardIO mem, IOException boom) {
            this.mem = mem;
            this.boom = boom;
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            throw boom;
        }

        @Override
        public long size() throws IOException {
            throw boom;
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            mem.write(offset, src);
        }
    }

    @Test
    public void throwingStore() {
        IOException boom = new IOException("no bucket");
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, key -> {
            throw boom;
        })) {
            ShardException e = assertThrows(ShardException.class, array::verify);
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertSame(boom, e.getCause());
        }
        // Reads of the second stored shard fail, after a clean first one (and damage in it).
        MemoryShardStore store = new MemoryShardStore();
        withTwoShards(store).close();
        MemoryShardIO first = store.open("c/0/1");
        flip(first, entry(first, 0, 0)[0]);
        IOException late = new IOException("c/2/0 unreadable");
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON,
                key -> key.equals("c/2/0") ? new FailingIO(store.open(key), late)
                                           : store.open(key))) {
            ShardException e = assertThrows(ShardException.class, array::verify);
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertSame(late, e.getCause());
            assertTrue(e.getMessage(), e.getMessage().startsWith("SHARD_ERR_IO: "));
        }
    }

    @Test
    public void closedArray() {
        ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, new MemoryShardStore());
        array.close();
        assertThrows(IllegalStateException.class, array::verify);
    }
}
