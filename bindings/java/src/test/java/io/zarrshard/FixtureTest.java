package io.zarrshard;

import static org.junit.Assert.*;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Reads the interop fixture zarr-python wrote (bindings/make_fixture.py): a 64x64 uint16 array,
 * 32x32 shards of 16x16 inner chunks, zstd, crc32c index at the end; the top-left inner chunk
 * of every shard is fill (not stored). Every inner chunk of every shard is compared with
 * fixture.raw (C order, little-endian). The directory comes from -Dzarrshard.fixture=DIR.
 */
public class FixtureTest {
    private static Path dir;
    private static short[] expected; // 64 x 64

    @BeforeClass
    public static void load() throws Exception {
        String d = System.getProperty("zarrshard.fixture");
        assertNotNull("set -Dzarrshard.fixture=DIR (bindings/make_fixture.py DIR)", d);
        dir = Path.of(d);
        byte[] raw = Files.readAllBytes(dir.resolve("fixture.raw"));
        assertEquals(64 * 64 * 2, raw.length);
        expected = new short[64 * 64];
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(expected);
    }

    private static ShardCodec codec() throws Exception {
        return ShardCodec.fromZarrJson(Files.readString(dir.resolve("fixture.zarr/zarr.json")));
    }

    /** The expected inner chunk (ci, cj) of shard (si, sj), native byte order. */
    private static byte[] expectedChunk(long si, long sj, long ci, long cj) {
        ByteBuffer b = ByteBuffer.allocate(16 * 16 * 2).order(ByteOrder.nativeOrder());
        for (int r = 0; r < 16; r++) {
            for (int c = 0; c < 16; c++) {
                long row = si * 32 + ci * 16 + r, col = sj * 32 + cj * 16 + c;
                b.putShort(expected[(int) (row * 64 + col)]);
            }
        }
        return b.array();
    }

    @Test
    public void metadata() throws Exception {
        try (ShardCodec codec = codec()) {
            assertEquals("uint16", codec.dataType());
            assertArrayEquals(new long[] {64, 64}, codec.arrayShape());
            assertArrayEquals(new long[] {2, 2}, codec.gridShape());
            assertArrayEquals(new long[] {32, 32}, codec.shardShape());
            assertArrayEquals(new long[] {16, 16}, codec.innerChunkShape());
            assertEquals(512, codec.innerChunkNbytes());
        }
    }

    @Test
    public void everyChunkThroughFiles() throws Exception {
        readAll(false);
    }

    @Test
    public void everyChunkThroughMemory() throws Exception {
        readAll(true);
    }

    private void readAll(boolean memory) throws Exception {
        int chunks = 0;
        try (ShardCodec codec = codec()) {
            long[] grid = codec.gridShape(), per = codec.chunksPerShard();
            for (long si = 0; si < grid[0]; si++) {
                for (long sj = 0; sj < grid[1]; sj++) {
                    Path p = dir.resolve("fixture.zarr").resolve(codec.shardKey(si, sj));
                    assertTrue(p + " exists", Files.exists(p));
                    try (Shard s = memory
                            ? Shard.open(codec, new MemoryShardIO(Files.readAllBytes(p)), Shard.Mode.READ)
                            : Shard.open(codec, p, Shard.Mode.READ)) {
                        for (long ci = 0; ci < per[0]; ci++) {
                            for (long cj = 0; cj < per[1]; cj++) {
                                byte[] want = expectedChunk(si, sj, ci, cj);
                                assertArrayEquals("shard " + si + "," + sj + " chunk " + ci + "," + cj,
                                        want, s.readChunk(ci, cj));
                                ByteBuffer d = ByteBuffer.allocateDirect(want.length);
                                s.readChunk(new long[] {ci, cj}, d);
                                assertEquals(ByteBuffer.wrap(want), d.flip());
                                assertEquals("top-left chunk is fill, not stored",
                                        ci == 0 && cj == 0, s.chunkInfo(ci, cj).empty());
                                chunks++;
                            }
                        }
                    }
                }
            }
        }
        assertEquals(16, chunks);
    }
}
