package io.zarrshard;

import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@link ShardArray}: regions of the zarr-python fixture through a directory store equal to
 * fixture.raw; regions written through a memory store equal to a model kept here; errors;
 * throwing stores.
 */
public class RegionTest {
    private static Path dir;
    private static short[] expected; // the fixture, 64 x 64
    private static byte[] raw;

    @BeforeClass
    public static void load() throws Exception {
        String d = System.getProperty("zarrshard.fixture");
        assertNotNull("set -Dzarrshard.fixture=DIR (bindings/make_fixture.py DIR)", d);
        dir = Path.of(d);
        raw = Files.readAllBytes(dir.resolve("fixture.raw"));
        assertEquals(64 * 64 * 2, raw.length);
        expected = new short[64 * 64];
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(expected);
    }

    /** Rows r0.. and columns c0.. of a row-major array of {@code width} columns. */
    private static short[] sub(short[] all, int width, long r0, long c0, long rows, long cols) {
        short[] out = new short[(int) (rows * cols)];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                out[(int) (r * cols + c)] = all[(int) ((r0 + r) * width + c0 + c)];
            }
        }
        return out;
    }

    private static ShardArray fixture(ShardStore store) throws IOException {
        return ShardArray.open(Files.readString(dir.resolve("fixture.zarr/zarr.json")), store);
    }

    /** Counts the store's opens and releases (of Closeable ShardIOs, closed by the default release). */
    private static final class CountingStore implements ShardStore {
        final ShardStore inner;
        final AtomicInteger opened = new AtomicInteger(), released = new AtomicInteger();

        CountingStore(ShardStore inner) {
            this.inner = inner;
        }

        @Override
        public ShardIO open(String key) throws IOException {
            opened.incrementAndGet();
            return inner.open(key);
        }

        @Override
        public void release(ShardIO io) throws IOException {
            released.incrementAndGet();
            inner.release(io);
        }
    }

    @Test
    public void fixtureRegionsEqualFixtureRaw() throws Exception {
        CountingStore store = new CountingStore(TestSupport.memoryCopy(dir.resolve("fixture.zarr")));
        try (ShardArray array = fixture(store); ShardCodec codec = array.codec()) {
            assertArrayEquals(new long[] {64, 64}, codec.arrayShape());
            assertEquals("uint16", codec.dataType());
            long[][] regions = {
                {10, 20, 40, 30}, // across all four shards
                {0, 0, 16, 16}, // the empty top-left inner chunk: fill value
                {5, 3, 1, 1}, {31, 0, 2, 64}, {32, 48, 32, 16}, {63, 63, 1, 1}, {20, 7, 0, 5},
                {0, 0, 64, 64},
            };
            for (long[] g : regions) {
                short[] got = array.readRegionShorts(new long[] {g[0], g[1]}, new long[] {g[2], g[3]});
                assertArrayEquals("region " + java.util.Arrays.toString(g),
                        sub(expected, 64, g[0], g[1], g[2], g[3]), got);
            }
            assertArrayEquals(new short[256], array.readRegionShorts(new long[] {32, 32}, new long[] {16, 16}));
            // Whatever the coalescing gap (only touching ranges, or whole spans), the same values.
            for (long gap : new long[] {0, 1L << 30}) {
                array.setCoalesceGap(gap);
                assertArrayEquals("gap " + gap, sub(expected, 64, 10, 20, 40, 30),
                        array.readRegionShorts(new long[] {10, 20}, new long[] {40, 30}));
            }
            assertThrows(IllegalArgumentException.class, () -> array.setCoalesceGap(-1));
            // Bytes: the whole array is fixture.raw on a little-endian host.
            if (ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN) {
                byte[] all = new byte[raw.length];
                array.readRegion(new long[] {0, 0}, new long[] {64, 64}, all);
                assertArrayEquals(raw, all);
                ByteBuffer dst = ByteBuffer.allocateDirect(raw.length + 6);
                dst.position(6);
                array.readRegion(new long[] {0, 0}, new long[] {64, 64}, dst);
                assertEquals(raw.length + 6, dst.position());
                byte[] back = new byte[raw.length];
                dst.position(6);
                dst.get(back);
                assertArrayEquals(raw, back);
            }
        }
        assertTrue(store.opened.get() > 0);
        assertEquals("every ShardIO the store opened was released", store.opened.get(), store.released.get());
    }

    @Test
    public void writtenRegionsReadBackAsTheModel() {
        MemoryShardStore store = new MemoryShardStore();
        short[] model = new short[40 * 32]; // TestSupport.ZARR_JSON: 40x32, 16x16 shards, 4x4 chunks
        Random rng = new Random(7);
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, store);
                ShardCodec codec = array.codec()) {
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {40, 32}));
            assertEquals(List.of(), store.keys());
            for (int round = 0; round < 40; round++) {
                int r0 = rng.nextInt(40), c0 = rng.nextInt(32);
                int rows = 1 + rng.nextInt(40 - r0), cols = 1 + rng.nextInt(32 - c0);
                short[] values = new short[rows * cols];
                boolean fill = round % 7 == 6;
                for (int i = 0; i < values.length; i++) {
                    values[i] = fill ? 0 : (short) (1 + rng.nextInt(60000));
                }
                if (round % 2 == 0) {
                    array.writeRegion(new long[] {r0, c0}, new long[] {rows, cols}, values);
                } else { // as bytes, native order
                    ByteBuffer b = ByteBuffer.allocate(values.length * 2).order(ByteOrder.nativeOrder());
                    b.asShortBuffer().put(values);
                    array.writeRegion(new long[] {r0, c0}, new long[] {rows, cols}, b.array());
                }
                for (int r = 0; r < rows; r++) {
                    System.arraycopy(values, r * cols, model, (r0 + r) * 32 + c0, cols);
                }
                int q0 = rng.nextInt(40), p0 = rng.nextInt(32);
                int qr = 1 + rng.nextInt(40 - q0), qc = 1 + rng.nextInt(32 - p0);
                assertArrayEquals("round " + round, sub(model, 32, q0, p0, qr, qc),
                        array.readRegionShorts(new long[] {q0, p0}, new long[] {qr, qc}));
            }
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {40, 32}));
            // Each stored shard, read on its own with Shard, holds the model's values.
            for (long gy = 0; gy < 3; gy++) {
                for (long gx = 0; gx < 2; gx++) {
                    try (Shard shard = Shard.open(codec, store.open(codec.shardKey(gy, gx)), Shard.Mode.READ)) {
                        for (long cy = 0; cy < 4; cy++) {
                            for (long cx = 0; cx < 4; cx++) {
                                long row = gy * 16 + cy * 4, col = gx * 16 + cx * 4;
                                if (row >= 40) {
                                    continue; // past the array's edge
                                }
                                ByteBuffer want = ByteBuffer.allocate(32).order(ByteOrder.nativeOrder());
                                want.asShortBuffer().put(sub(model, 32, row, col, 4, 4));
                                assertArrayEquals(want.array(), shard.readChunk(cy, cx));
                            }
                        }
                    }
                }
            }
            // Filling a whole shard with the fill value removes it.
            array.writeRegion(new long[] {16, 16}, new long[] {16, 16}, new short[256]);
            assertFalse(store.keys().contains("c/1/1"));
            assertArrayEquals(new short[256], array.readRegionShorts(new long[] {16, 16}, new long[] {16, 16}));
        }
    }

    /** A ShardIO over a MemoryShardIO whose reads always fail. */
    private static final class BlindIO implements ShardIO {
        final MemoryShardIO mem;

        BlindIO(MemoryShardIO mem) {
            this.mem = mem;
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            throw new IOException("no reads here");
        }

        @Override
        public long size() throws IOException {
            throw new IOException("no reads here");
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            mem.write(offset, src);
        }

        @Override
        public void truncate(long length) {
            mem.truncate(length);
        }

        @Override
        public void remove() {
            mem.remove();
        }
    }

    @Test
    public void aWholeShardIsWrittenWithoutReadingIt() {
        MemoryShardStore inner = new MemoryShardStore();
        short[] whole = new short[16 * 32];
        for (int i = 0; i < whole.length; i++) {
            whole[i] = (short) (i + 1);
        }
        try (ShardArray blind = ShardArray.open(TestSupport.ZARR_JSON, key -> new BlindIO(inner.open(key)))) {
            blind.writeRegion(new long[] {16, 0}, new long[] {16, 32}, whole);
            assertEquals(List.of("c/1/0", "c/1/1"), inner.keys());
            // A partial write must read the shard: the store's failure surfaces with its cause.
            ShardException e = assertThrows(ShardException.class,
                    () -> blind.writeRegion(new long[] {16, 0}, new long[] {1, 1}, new short[] {5}));
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertEquals("no reads here", e.getCause().getMessage());
        }
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, inner)) {
            assertArrayEquals(whole, array.readRegionShorts(new long[] {16, 0}, new long[] {16, 32}));
        }
    }

    @Test
    public void errors() {
        MemoryShardStore store = new MemoryShardStore();
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, store)) {
            assertThrows(IllegalArgumentException.class,
                    () -> array.readRegion(new long[] {0, 0}, new long[] {2}, new byte[8]));
            ShardException e = assertThrows(ShardException.class,
                    () -> array.readRegion(new long[] {0}, new long[] {4}, new byte[8]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.readRegion(new long[] {38, 0}, new long[] {4, 1}, new byte[8]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.readRegion(new long[] {0, 0}, new long[] {2, 2}, new byte[7]));
            assertEquals(Status.BUFFER_SIZE, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.writeRegion(new long[] {0, 0}, new long[] {2, 2}, new byte[9]));
            assertEquals(Status.BUFFER_SIZE, e.status());
            assertThrows(IllegalArgumentException.class,
                    () -> array.readRegion(new long[] {0, 0}, new long[] {2, 2}, ByteBuffer.allocate(8)));
            assertThrows(IllegalArgumentException.class,
                    () -> array.writeRegion(new long[] {0, 0}, new long[] {-1, 2}, new byte[0]));
        }
        ShardArray closed = ShardArray.open(TestSupport.ZARR_JSON, store);
        closed.close();
        closed.close();
        assertTrue(closed.isClosed());
        assertThrows(IllegalStateException.class,
                () -> closed.readRegionShorts(new long[] {0, 0}, new long[] {1, 1}));
        assertThrows(IllegalStateException.class, () -> closed.setCoalesceGap(0));
        ShardException e = assertThrows(ShardException.class, () -> ShardArray.open("{not json", store));
        assertEquals(Status.INVALID_METADATA, e.status());
        // Without sharding: regions work, a sharding codec does not exist.
        String plain = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8, 8],"
                + " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
                + " {\"chunk_shape\": [4, 4]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
                + " \"fill_value\": 3, \"codecs\": [" + TestSupport.BYTES_LE + "]}";
        MemoryShardStore plainStore = new MemoryShardStore();
        try (ShardArray array = ShardArray.open(plain, plainStore)) {
            e = assertThrows(ShardException.class, array::codec);
            assertEquals(Status.UNSUPPORTED, e.status());
            assertArrayEquals(new short[] {3, 3, 3, 3}, array.readRegionShorts(new long[] {1, 1}, new long[] {2, 2}));
            array.writeRegion(new long[] {3, 3}, new long[] {2, 2}, new short[] {1, 2, 3, 4});
            assertArrayEquals(new short[] {1, 2, 3, 4}, array.readRegionShorts(new long[] {3, 3}, new long[] {2, 2}));
            // The chunk c/1/0 got only (4, 3) = 3, the fill value: it is not stored.
            assertEquals(List.of("c/0/0", "c/0/1", "c/1/1"), plainStore.keys());
        }
    }

    @Test
    public void throwingStore() throws Exception {
        IOException boom = new IOException("no bucket");
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, key -> {
            throw boom;
        })) {
            ShardException e = assertThrows(ShardException.class,
                    () -> array.readRegionShorts(new long[] {0, 0}, new long[] {4, 4}));
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertSame(boom, e.getCause());
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("c/0/0"));
        }
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, key -> null)) {
            ShardException e = assertThrows(ShardException.class,
                    () -> array.writeRegion(new long[] {0, 0}, new long[] {1, 1}, new short[] {1}));
            assertEquals(Status.IO, e.status());
            assertTrue(e.getCause() instanceof NullPointerException);
        }
        // An unchecked exception, and an Error, from open.
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, key -> {
            throw new StackOverflowError("deep");
        })) {
            ShardException e = assertThrows(ShardException.class,
                    () -> array.readRegionShorts(new long[] {0, 0}, new long[] {1, 1}));
            assertTrue(e.getCause() instanceof StackOverflowError);
        }
        // release throwing cannot fail a call that has done its work.
        MemoryShardStore inner = new MemoryShardStore();
        ShardStore noisy = new ShardStore() {
            @Override
            public ShardIO open(String key) {
                return inner.open(key);
            }

            @Override
            public void release(ShardIO io) throws IOException {
                throw new IOException("release failed");
            }
        };
        try (ShardArray array = ShardArray.open(TestSupport.ZARR_JSON, noisy)) {
            array.writeRegion(new long[] {0, 0}, new long[] {2, 2}, new short[] {1, 2, 3, 4});
            assertArrayEquals(new short[] {1, 2, 3, 4}, array.readRegionShorts(new long[] {0, 0}, new long[] {2, 2}));
        }
    }
}
