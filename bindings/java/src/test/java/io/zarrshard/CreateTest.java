package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * Arrays made and grown from Java: {@link ArraySpec} (its defaults and the metadata the library
 * makes of it), {@link ShardArray#create}, {@link ShardArray#open(Store, String)},
 * {@link ShardArray#shape()}, {@link ShardArray#append}, {@link ShardArray#flush()},
 * {@link ShardArray#resize}, attributes, {@link ShardArray#compact}, {@link Group#create},
 * over the library's stores and over a host {@link MemoryShardStore} (whose objects the tests
 * read directly). With {@code -Dzarrshard.create.out=DIR}, an OME-Zarr-like group with an
 * appended array is written to DIR for run.sh to read with zarr-python.
 */
public class CreateTest {

    private static Map<String, Object> json(MemoryShardStore mem, String key) {
        byte[] b = mem.open(key).bytes();
        assertNotNull(key + " stored", b);
        return jsonObject(parseJson(new String(b, StandardCharsets.UTF_8)));
    }

    @SuppressWarnings("unchecked")
    private static List<Object> list(Object o) {
        assertTrue("not a JSON array: " + o, o instanceof List);
        return (List<Object>) o;
    }

    private static List<Object> longs(long... v) {
        List<Object> out = new ArrayList<>();
        for (long x : v) {
            out.add(x);
        }
        return out;
    }

    /** The names of a codec list, in order. */
    private static List<Object> names(Object codecs) {
        List<Object> out = new ArrayList<>();
        for (Object c : list(codecs)) {
            out.add(jsonObject(c).get("name"));
        }
        return out;
    }

    private static Map<String, Object> config(Object codec) {
        return jsonObject(jsonObject(codec).get("configuration"));
    }

    /** Frame t of the acquisition: element (y, x) is t * 100 + y * 8 + x + 1 (never 0). */
    static short[] frame(int t) {
        short[] v = new short[64];
        for (int i = 0; i < 64; i++) {
            v[i] = (short) (t * 100 + i + 1);
        }
        return v;
    }

    /** The acquisition array: uint16 t x 8 x 8, inner chunks 1x4x4, shards 2x8x8. */
    static ArraySpec frames() {
        return new ArraySpec(new long[] {0, 8, 8}, new long[] {1, 4, 4}, "uint16")
                .shardShape(2, 8, 8).dimensionNames("t", "y", "x");
    }

    @Test
    public void specDefaultsAreTheDocumentedOnes() {
        Map<String, Object> m = jsonObject(parseJson(new ArraySpec(new long[] {100, 64},
                new long[] {10, 8}, "uint16").shardShape(20, 32).toJson()));
        assertEquals(3L, m.get("zarr_format"));
        assertEquals("array", m.get("node_type"));
        assertEquals(longs(100, 64), m.get("shape"));
        assertEquals("uint16", m.get("data_type"));
        assertEquals(0L, m.get("fill_value"));
        Map<String, Object> grid = jsonObject(m.get("chunk_grid"));
        assertEquals("regular", grid.get("name"));
        assertEquals("the grid's chunk is the shard", longs(20, 32),
                jsonObject(grid.get("configuration")).get("chunk_shape"));
        List<Object> codecs = list(m.get("codecs"));
        assertEquals(List.of("sharding_indexed"), names(codecs));
        Map<String, Object> sharding = config(codecs.get(0));
        assertEquals(longs(10, 8), sharding.get("chunk_shape"));
        assertEquals("zstd, no chunk checksum", List.of("bytes", "zstd"), names(sharding.get("codecs")));
        assertEquals(3L, config(list(sharding.get("codecs")).get(1)).get("level"));
        assertEquals("crc32c index", List.of("bytes", "crc32c"), names(sharding.get("index_codecs")));
        assertEquals("end", sharding.get("index_location"));
        assertFalse(m.containsKey("dimension_names"));

        // Every option changed.
        m = jsonObject(parseJson(new ArraySpec(new long[] {4}, new long[] {2}, "float32")
                .shardShape(4).fillValue("\"NaN\"").compressor("gzip").compressionLevel(6)
                .indexAtStart(true).indexChecksum(false).chunkChecksum(true)
                .dimensionNames("x").toJson()));
        assertEquals("float32", m.get("data_type"));
        assertEquals("NaN", m.get("fill_value"));
        assertEquals(List.of("x"), m.get("dimension_names"));
        sharding = config(list(m.get("codecs")).get(0));
        assertEquals(List.of("bytes", "gzip", "crc32c"), names(sharding.get("codecs")));
        assertEquals(6L, config(list(sharding.get("codecs")).get(1)).get("level"));
        assertEquals(List.of("bytes"), names(sharding.get("index_codecs")));
        assertEquals("start", sharding.get("index_location"));

        // Not sharded: the grid's chunk is the inner chunk, no sharding codec.
        m = jsonObject(parseJson(new ArraySpec(new long[] {9}, new long[] {3}, "int8")
                .compressor("none").toJson()));
        assertEquals(longs(3), jsonObject(jsonObject(m.get("chunk_grid")).get("configuration"))
                .get("chunk_shape"));
        assertEquals(List.of("bytes"), names(m.get("codecs")));
    }

    @Test
    public void badSpecsAreRefusedNamingTheValue() {
        ShardException e = assertThrows(ShardException.class,
                () -> new ArraySpec(new long[] {8}, new long[] {4}, "uint7").toJson());
        assertTrue(e.getMessage(), e.libraryMessage().contains("uint7"));
        e = assertThrows(ShardException.class, () -> new ArraySpec(new long[] {8},
                new long[] {3}, "uint8").shardShape(4).toJson());
        assertTrue(e.getMessage(), e.status() == Status.INVALID_ARGUMENT
                || e.status() == Status.INVALID_METADATA);
        e = assertThrows(ShardException.class, () -> new ArraySpec(new long[] {8},
                new long[] {4}, "uint8").compressor("lz77").toJson());
        assertTrue(e.getMessage(), e.libraryMessage().contains("lz77"));
        // What only Java can see.
        assertThrows(IllegalArgumentException.class,
                () -> new ArraySpec(new long[] {8, 8}, new long[] {4}, "uint8"));
        assertThrows(IllegalArgumentException.class,
                () -> new ArraySpec(new long[] {-1}, new long[] {4}, "uint8"));
        assertThrows(IllegalArgumentException.class,
                () -> new ArraySpec(new long[] {8}, new long[] {4}, "uint8").dimensionNames("a", "b"));
        // Nothing is created from a bad spec.
        MemoryShardStore mem = new MemoryShardStore();
        assertThrows(ShardException.class, () -> ShardArray.create(mem, "x",
                new ArraySpec(new long[] {8}, new long[] {4}, "uint7"), false));
        assertEquals(List.of(), mem.keys());
    }

    /**
     * Frames appended one at a time read back at once; the shape grows with each; each shard
     * is written once, whole, with no dead bytes (the same bytes as a region write of the same
     * frames); flush writes the partial layer and the shape, which a second handle then sees.
     */
    @Test
    public void appendedFramesReadBackAndAreWrittenWhole() {
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.create(mem, "acq", frames(), false)) {
            assertArrayEquals(new long[] {0, 8, 8}, array.shape());
            for (int t = 0; t < 5; t++) {
                array.append(0, new long[] {1, 8, 8}, frame(t));
                assertArrayEquals(new long[] {t + 1, 8, 8}, array.shape());
                for (int u = 0; u <= t; u++) {
                    assertArrayEquals("frame " + u + " after " + (t + 1), frame(u),
                            array.readRegionShorts(new long[] {u, 0, 0}, new long[] {1, 8, 8}));
                }
            }
            // Before flush: the stored metadata covers at most the two complete layers (4
            // frames), and what it covers reads back through a second handle.
            try (ShardArray other = ShardArray.open(mem, "acq")) {
                long stored = other.shape()[0];
                assertTrue("stored shape " + stored, stored <= 4);
                for (int u = 0; u < stored; u++) {
                    assertArrayEquals(frame(u), other.readRegionShorts(new long[] {u, 0, 0},
                            new long[] {1, 8, 8}));
                }
            }
            array.flush();
            assertEquals(longs(5, 8, 8), json(mem, "acq/zarr.json").get("shape"));
        }
        assertEquals(List.of("acq/c/0/0/0", "acq/c/1/0/0", "acq/c/2/0/0", "acq/zarr.json"),
                mem.keys());
        // The same frames written as one region into a fresh array: byte-equal shards.
        MemoryShardStore fresh = new MemoryShardStore();
        try (ShardArray array = ShardArray.create(fresh, "acq",
                new ArraySpec(new long[] {5, 8, 8}, new long[] {1, 4, 4}, "uint16")
                        .shardShape(2, 8, 8).dimensionNames("t", "y", "x"), false)) {
            short[] all = new short[5 * 64];
            for (int t = 0; t < 5; t++) {
                System.arraycopy(frame(t), 0, all, t * 64, 64);
            }
            array.writeRegion(new long[] {0, 0, 0}, new long[] {5, 8, 8}, all);
        }
        for (String key : List.of("acq/c/0/0/0", "acq/c/1/0/0", "acq/c/2/0/0")) {
            assertArrayEquals(key + ": no dead bytes", fresh.open(key).bytes(), mem.open(key).bytes());
        }
        try (ShardArray again = ShardArray.open(mem, "acq")) {
            assertArrayEquals(new long[] {5, 8, 8}, again.shape());
            assertArrayEquals(frame(4), again.readRegionShorts(new long[] {4, 0, 0},
                    new long[] {1, 8, 8}));
        }
    }

    @Test
    public void appendErrors() {
        try (Store store = Store.memory();
                ShardArray array = ShardArray.create(store, "a", frames(), false)) {
            ShardException e = assertThrows(ShardException.class,
                    () -> array.append(0, new long[] {1, 8, 4}, new short[32]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.append(3, new long[] {1, 8, 8}, new short[64]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.append(0, new long[] {0, 8, 8}, new short[0]));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            e = assertThrows(ShardException.class,
                    () -> array.append(0, new long[] {1, 8, 8}, new short[63]));
            assertEquals(Status.BUFFER_SIZE, e.status());
            assertThrows(IllegalArgumentException.class,
                    () -> array.append(-1, new long[] {1, 8, 8}, new short[64]));
            assertThrows(IllegalArgumentException.class,
                    () -> array.append(0, new long[] {1, -8, 8}, new short[64]));
            assertThrows(IllegalArgumentException.class,
                    () -> array.append(0, new long[] {1, 8, 8}, ByteBuffer.allocate(128)));
            // Nothing was appended by the failed calls; a good frame still is.
            assertArrayEquals(new long[] {0, 8, 8}, array.shape());
            ByteBuffer direct = ByteBuffer.allocateDirect(128).order(ByteOrder.nativeOrder());
            direct.asShortBuffer().put(frame(7));
            array.append(0, new long[] {1, 8, 8}, direct);
            assertEquals(128, direct.position());
            assertArrayEquals(frame(7), array.readRegionShorts(new long[] {0, 0, 0},
                    new long[] {1, 8, 8}));
        }
    }

    /** The values of the 8x8 resize array: element (r, c) is 1 + 8 r + c. */
    private static short[] grid8() {
        short[] v = new short[64];
        for (int i = 0; i < 64; i++) {
            v[i] = (short) (1 + i);
        }
        return v;
    }

    /**
     * Shrinking deletes the shards wholly outside and resets the part of an edge chunk past
     * the new edge; growing again shows the fill value there, never the old values.
     */
    @Test
    public void resizeShrinksAndGrowsWithFill() {
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.create(mem, "", new ArraySpec(new long[] {8, 8},
                new long[] {2, 2}, "uint16").shardShape(4, 4), false)) {
            array.writeRegion(new long[] {0, 0}, new long[] {8, 8}, grid8());
            assertEquals(List.of("c/0/0", "c/0/1", "c/1/0", "c/1/1", "zarr.json"), mem.keys());
            array.resize(3, 3);
            assertArrayEquals(new long[] {3, 3}, array.shape());
            assertEquals(longs(3, 3), json(mem, "zarr.json").get("shape"));
            assertEquals("shards wholly outside deleted", List.of("c/0/0", "zarr.json"), mem.keys());
            array.resize(8, 8);
            assertEquals(longs(8, 8), json(mem, "zarr.json").get("shape"));
            short[] want = new short[64];
            short[] old = grid8();
            for (int r = 0; r < 3; r++) {
                for (int c = 0; c < 3; c++) {
                    want[r * 8 + c] = old[r * 8 + c];
                }
            }
            assertArrayEquals(want, array.readRegionShorts(new long[] {0, 0}, new long[] {8, 8}));
            ShardException e = assertThrows(ShardException.class, () -> array.resize(8));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
            assertThrows(IllegalArgumentException.class, () -> array.resize(8, -1));
        }
    }

    @Test
    public void attributesAreStoredAndReadBack() {
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.create(mem, "img", frames(), false)) {
            assertEquals(Map.of(), jsonObject(parseJson(array.attributes())));
            array.setAttributes("{\"units\": \"nm\", \"scale\": [1, 2.5]}");
            Map<String, Object> want = Map.of("units", "nm", "scale", List.of(1L, 2.5));
            assertEquals(want, jsonObject(parseJson(array.attributes())));
            assertEquals(want, json(mem, "img/zarr.json").get("attributes"));
            // The header: INVALID_METADATA for text that is not a JSON object.
            ShardException e = assertThrows(ShardException.class, () -> array.setAttributes("[1]"));
            assertEquals(Status.INVALID_METADATA, e.status());
            e = assertThrows(ShardException.class, () -> array.setAttributes("{\"a\": "));
            assertEquals(Status.INVALID_METADATA, e.status());
            assertEquals(want, jsonObject(parseJson(array.attributes())));
        }
        try (ShardArray again = ShardArray.open(mem, "img")) {
            assertEquals(Map.of("units", "nm", "scale", List.of(1L, 2.5)),
                    jsonObject(parseJson(again.attributes())));
        }
    }

    /**
     * Partial updates leave dead bytes; compact rewrites the shard to exactly the bytes a fresh
     * whole write gives and reports the bytes it freed; a second compact has nothing to do.
     */
    @Test
    public void compactFreesWhatPartialUpdatesLeft() {
        MemoryShardStore mem = new MemoryShardStore();
        ArraySpec spec = new ArraySpec(new long[] {8, 8}, new long[] {2, 2}, "uint16")
                .shardShape(8, 8);
        short[] values = grid8();
        try (ShardArray array = ShardArray.create(mem, "", spec, false)) {
            array.writeRegion(new long[] {0, 0}, new long[] {8, 8}, values);
            for (int round = 0; round < 3; round++) {
                short[] patch = {(short) (500 + round), 2, 3, 4};
                array.writeRegion(new long[] {2, 2}, new long[] {2, 2}, patch);
            }
            values[2 * 8 + 2] = 502;
            values[2 * 8 + 3] = 2;
            values[3 * 8 + 2] = 3;
            values[3 * 8 + 3] = 4;
            long before = mem.open("c/0/0").size();
            ShardArray.Compaction c = array.compact(false);
            long after = mem.open("c/0/0").size();
            assertTrue(before + " > " + after, before > after);
            assertEquals(new ShardArray.Compaction(1, before - after), c);
            assertArrayEquals(values, array.readRegionShorts(new long[] {0, 0}, new long[] {8, 8}));
            assertEquals(new ShardArray.Compaction(0, 0), array.compact(false));
        }
        MemoryShardStore fresh = new MemoryShardStore();
        try (ShardArray array = ShardArray.create(fresh, "", spec, false)) {
            array.writeRegion(new long[] {0, 0}, new long[] {8, 8}, values);
        }
        assertArrayEquals(fresh.open("c/0/0").bytes(), mem.open("c/0/0").bytes());
    }

    /** A group and arrays under it in a host store; the host store's failure is the cause. */
    @Test
    public void groupsInAHostStore() {
        MemoryShardStore mem = new MemoryShardStore();
        Group.create(mem, "img", "{\"ome\": {\"version\": \"0.5\"}}", false);
        Map<String, Object> g = json(mem, "img/zarr.json");
        assertEquals("group", g.get("node_type"));
        assertEquals(3L, g.get("zarr_format"));
        assertEquals(Map.of("ome", Map.of("version", "0.5")), g.get("attributes"));
        ShardException e = assertThrows(ShardException.class,
                () -> Group.create(mem, "img", null, false));
        assertEquals(Status.INVALID_STATE, e.status());
        assertTrue(e.getMessage(), e.libraryMessage().contains("`img` already holds"));
        Group.create(mem, "img", null, true);
        assertEquals(Map.of(), json(mem, "img/zarr.json").get("attributes"));
        e = assertThrows(ShardException.class, () -> Group.create(mem, "img", "[]", true));
        assertEquals(Status.INVALID_METADATA, e.status());

        IOException boom = new IOException("disk on fire");
        ShardStore failing = key -> {
            throw boom;
        };
        e = assertThrows(ShardException.class, () -> Group.create(failing, "g", null, false));
        assertEquals(Status.IO, e.status());
        assertSame(boom, e.getCause());
        e = assertThrows(ShardException.class, () -> ShardArray.create(failing, "a", frames(), false));
        assertEquals(Status.IO, e.status());
        assertSame(boom, e.getCause());
        e = assertThrows(ShardException.class, () -> ShardArray.open(failing, "a"));
        assertEquals(Status.IO, e.status());
        assertSame(boom, e.getCause());
    }

    /**
     * An OME-Zarr-like image through the library's directory store, as an acquisition writes
     * it: a group with attributes, array {@code 0} created by spec and grown by appending
     * frames. With -Dzarrshard.create.out=DIR it is written to DIR for run.sh (zarr-python).
     */
    @Test
    public void anAcquisitionInADirectoryStore() throws Exception {
        String out = System.getProperty("zarrshard.create.out");
        Path root = out != null ? Path.of(out) : tempDir().resolve("acq.zarr");
        try (Store store = Store.directory(root, true)) {
            Group.create(store, "", "{\"ome\": {\"version\": \"0.5\", \"name\": \"acq\"}}", false);
            try (ShardArray array = ShardArray.create(store, "0", frames(), false)) {
                for (int t = 0; t < 5; t++) {
                    array.append(0, new long[] {1, 8, 8}, frame(t));
                }
                array.setAttributes("{\"frames\": 5}");
                array.flush();
            }
            try (ShardArray array = ShardArray.open(store, "0")) {
                assertArrayEquals(new long[] {5, 8, 8}, array.shape());
                for (int t = 0; t < 5; t++) {
                    assertArrayEquals(frame(t), array.readRegionShorts(new long[] {t, 0, 0},
                            new long[] {1, 8, 8}));
                }
                assertEquals(List.of(), array.verify());
            }
        }
        assertEquals(List.of("0/c/0/0/0", "0/c/1/0/0", "0/c/2/0/0", "0/zarr.json", "zarr.json"),
                new ArrayList<>(files(root).keySet()));
        assertTrue(Files.isDirectory(root));
    }

    /** The library's memory store: shared by arrays, alive while one of them is open. */
    @Test
    public void aMemoryStoreIsSharedByItsArrays() {
        ShardArray kept;
        try (Store store = Store.memory()) {
            try (ShardArray a = ShardArray.create(store, "x/y", frames(), false)) {
                a.append(0, new long[] {1, 8, 8}, frame(1));
            }
            kept = ShardArray.open(store, "x/y");
            ShardException e = assertThrows(ShardException.class, () -> ShardArray.open(store, "x"));
            assertEquals(Status.INVALID_METADATA, e.status());
            assertTrue(e.getMessage(), e.libraryMessage().contains("x"));
        }
        try (ShardArray a = kept) {
            assertArrayEquals(new long[] {1, 8, 8}, a.shape());
            assertArrayEquals(frame(1), a.readRegionShorts(new long[] {0, 0, 0}, new long[] {1, 8, 8}));
        }
    }
}
