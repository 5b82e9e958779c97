package io.zarrshard;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** Shared fixtures: 16x16 uint16 shards of 4x4 inner chunks (16 chunks of 32 bytes). */
final class TestSupport {
    private TestSupport() {}

    static final String BYTES_LE = "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}";
    static final String ZSTD1 =
            "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}";
    static final String CRC = "{\"name\": \"crc32c\"}";

    /** zstd chunks, crc32c index at the end. */
    static final String CFG_ZSTD_END = "{\"chunk_shape\": [4, 4], \"codecs\": [" + BYTES_LE + ", "
            + ZSTD1 + "], \"index_codecs\": [" + BYTES_LE + ", " + CRC
            + "], \"index_location\": \"end\"}";
    /** Uncompressed chunks, index first (updates in place overwrite exactly). */
    static final String CFG_RAW_START = "{\"chunk_shape\": [4, 4], \"codecs\": [" + BYTES_LE
            + "], \"index_codecs\": [" + BYTES_LE + ", " + CRC + "], \"index_location\": \"start\"}";

    /** A 40x32 array of 16x16 shards (a 3x2 grid). */
    static final String ZARR_JSON = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [40, 32],"
            + " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
            + " {\"chunk_shape\": [16, 16]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
            + " \"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\":"
            + " {\"chunk_shape\": [4, 4], \"codecs\": [" + BYTES_LE + ", " + ZSTD1 + "],"
            + " \"index_codecs\": [" + BYTES_LE + ", " + CRC + "]}}]}";

    static final long[] SHARD_SHAPE = {16, 16};
    static final int PER = 4;
    static final int CHUNK_NBYTES = 32;

    static ShardCodec codec(String cfg) {
        return ShardCodec.fromConfig(cfg, "uint16", SHARD_SHAPE, "0");
    }

    /** All inner chunk coordinates, C order. */
    static List<long[]> allChunks() {
        List<long[]> out = new ArrayList<>();
        for (int i = 0; i < PER; i++) {
            for (int j = 0; j < PER; j++) {
                out.add(new long[] {i, j});
            }
        }
        return out;
    }

    /** Chunk (i, j) with a version tag: 16 uint16 values, native byte order, never all 0. */
    static byte[] chunk(long[] c, int version) {
        ByteBuffer b = ByteBuffer.allocate(CHUNK_NBYTES).order(ByteOrder.nativeOrder());
        for (int k = 0; k < 16; k++) {
            b.putShort((short) (version * 1000 + (c[0] * PER + c[1]) * 16 + k + 1));
        }
        return b.array();
    }

    static ByteBuffer direct(byte[] bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes.length);
        b.put(bytes).flip();
        return b;
    }

    static byte[] zeros() {
        return new byte[CHUNK_NBYTES];
    }

    /** Whether chunk (i, j) is written in the standard pattern (some are left as fill). */
    static boolean written(long[] c) {
        return (c[0] + 2 * c[1]) % 5 != 1;
    }

    static void assertChunk(Shard s, long[] c, byte[] expected) {
        assertArrayEquals("chunk " + c[0] + "," + c[1], expected, s.readChunk(c));
        ByteBuffer d = ByteBuffer.allocateDirect(CHUNK_NBYTES);
        s.readChunk(c, d);
        assertTrue(!d.hasRemaining());
        byte[] got = new byte[CHUNK_NBYTES];
        d.flip().get(got);
        assertArrayEquals("direct chunk " + c[0] + "," + c[1], expected, got);
    }

    static Path tempDir() throws IOException {
        Path base = Path.of(System.getProperty("zarrshard.test.tmp", System.getProperty("java.io.tmpdir")));
        Files.createDirectories(base);
        return Files.createTempDirectory(base, "zs-java-");
    }

    /** Run System.gc until ref is cleared (or give up). */
    static boolean collected(java.lang.ref.Reference<?> ref) throws InterruptedException {
        for (int i = 0; i < 100 && ref.get() != null; i++) {
            System.gc();
            Thread.sleep(20);
        }
        return ref.get() == null;
    }

    /** A ShardIO that forwards to another; subclasses inject faults. Overrides every method. */
    static class ForwardingIO implements ShardIO {
        final ShardIO inner;

        ForwardingIO(ShardIO inner) {
            this.inner = inner;
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            return inner.read(offset, dst);
        }

        @Override
        public long readSuffix(ByteBuffer dst) throws IOException {
            return inner.readSuffix(dst);
        }

        @Override
        public long size() throws IOException {
            return inner.size();
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            inner.write(offset, src);
        }

        @Override
        public void truncate(long length) throws IOException {
            inner.truncate(length);
        }

        @Override
        public void remove() throws IOException {
            inner.remove();
        }
    }

    /** Only the required methods (no readSuffix, truncate or remove). */
    static final class MinimalIO implements ShardIO {
        final MemoryShardIO inner;

        MinimalIO(MemoryShardIO inner) {
            this.inner = inner;
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            return inner.read(offset, dst);
        }

        @Override
        public long size() {
            return inner.size();
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            inner.write(offset, src);
        }
    }

    /** Write the standard pattern (version v) through any ShardIO; returns finalize's size. */
    static long writeStandard(ShardCodec codec, ShardIO io, Shard.Mode mode, int flags, int v,
            boolean direct) {
        try (Shard s = Shard.open(codec, io, mode, flags)) {
            for (long[] c : allChunks()) {
                if (written(c)) {
                    if (direct) {
                        s.writeChunk(c, direct(chunk(c, v)));
                    } else {
                        s.writeChunk(c, chunk(c, v));
                    }
                }
            }
            return s.finalizeShard();
        }
    }

    static void checkStandard(ShardCodec codec, ShardIO io, int v) {
        try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
            for (long[] c : allChunks()) {
                assertChunk(s, c, written(c) ? chunk(c, v) : zeros());
                assertTrue(s.chunkInfo(c).empty() != written(c));
            }
        }
    }
}
