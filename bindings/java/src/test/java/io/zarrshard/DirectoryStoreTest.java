package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * {@link Store#directory} (the library's directory store) as a read-write store: whole shards
 * as new files renamed over the old ones, partial updates in place, all-fill shards deleted,
 * a whole-shard rewrite that fails leaving the old file; creating, opening and refusing by
 * path, with errors that name the path; the zarr-python fixture written and read back.
 */
public class DirectoryStoreTest {
    private static final int ROWS = 40, COLS = 32; // TestSupport.ZARR_JSON: a 3x2 grid of 16x16
    private static final List<String> ALL_KEYS =
            List.of("c/0/0", "c/0/1", "c/1/0", "c/1/1", "c/2/0", "c/2/1");

    /** Random non-zero values (so no inner chunk is all fill). */
    private static short[] values(int n, long seed) {
        Random rng = new Random(seed);
        short[] v = new short[n];
        for (int i = 0; i < n; i++) {
            v[i] = (short) (1 + rng.nextInt(60000));
        }
        return v;
    }

    private static void put(short[] all, int width, int r0, int c0, int rows, int cols, short[] v) {
        for (int r = 0; r < rows; r++) {
            System.arraycopy(v, r * cols, all, (r0 + r) * width + c0, cols);
        }
    }

    private static void assertNoTemporaries(Path root) throws IOException {
        for (String key : files(root).keySet()) {
            assertFalse("a temporary left: " + key, key.contains(".tmp"));
        }
    }

    /** The shard objects of {@code root} (zarr.json left out). */
    private static Map<String, byte[]> shards(Path root) throws IOException {
        Map<String, byte[]> out = files(root);
        out.remove("zarr.json");
        return out;
    }

    /** A new directory with TestSupport's array created at its root (library store). */
    private static Path arrayDir() throws IOException {
        Path root = tempDir().resolve("a.zarr");
        try (Store store = Store.directory(root, true);
                ShardArray array = ShardArray.create(store, "", ZARR_JSON, false)) {
            assertArrayEquals(new long[] {ROWS, COLS}, array.shape());
        }
        return root;
    }

    /** The array at the root of {@code root}, opened by path. */
    private static ShardArray open(Path root) {
        return openDir(root);
    }

    @Test
    public void aWholeArrayIsWrittenAsNewFiles() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 1);
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = open(root);
                ShardArray inMemory = ShardArray.open(ZARR_JSON, mem)) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
            inMemory.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
        }
        // Exactly the six shard files, each the bytes (and size) the library gives a memory store.
        Map<String, byte[]> stored = shards(root);
        assertEquals(ALL_KEYS, new ArrayList<>(stored.keySet()));
        assertEquals(mem.keys(), new ArrayList<>(stored.keySet()));
        for (String key : ALL_KEYS) {
            assertArrayEquals(key, mem.open(key).bytes(), stored.get(key));
            assertEquals(key, mem.open(key).size(), Files.size(root.resolve(key)));
        }
        assertNoTemporaries(root);
        // A fresh store reads them back.
        try (ShardArray again = open(root)) {
            assertArrayEquals(model, again.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
            assertEquals(List.of(), again.verify());
        }
        // Rewritten whole: every file replaced by a rename (a new inode), none written in place.
        Map<String, Object> before = new TreeMap<>();
        for (String key : ALL_KEYS) {
            before.put(key, fileKey(root.resolve(key)));
        }
        short[] next = values(ROWS * COLS, 2);
        try (ShardArray array = open(root)) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, next);
            assertArrayEquals(next, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
        }
        for (String key : ALL_KEYS) {
            Object now = fileKey(root.resolve(key));
            if (now != null) { // null where the platform has no file identity
                assertNotEquals(key + " renamed over, not rewritten", before.get(key), now);
            }
        }
        assertEquals(ALL_KEYS, new ArrayList<>(shards(root).keySet()));
        assertNoTemporaries(root);
    }

    @Test
    public void aPartialWriteUpdatesTheFileInPlace() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 3);
        try (ShardArray array = open(root)) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
        }
        Map<String, byte[]> old = shards(root);
        Object oldKey = fileKey(root.resolve("c/0/0"));
        // Rows 3..9, columns 5..20: part of c/0/0 and of c/0/1.
        short[] patch = values(7 * 16, 4);
        put(model, COLS, 3, 5, 7, 16, patch);
        try (ShardArray array = open(root)) {
            array.writeRegion(new long[] {3, 5}, new long[] {7, 16}, patch);
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
        }
        Map<String, byte[]> now = shards(root);
        assertEquals(ALL_KEYS, new ArrayList<>(now.keySet()));
        for (String key : ALL_KEYS) {
            byte[] was = old.get(key), is = now.get(key);
            if (key.equals("c/0/0") || key.equals("c/0/1")) {
                // Appended in place (the touched chunks and a new index): the old bytes lead.
                assertTrue(key + " grew", is.length > was.length);
                assertArrayEquals(key + ": the old bytes are a prefix", was,
                        java.util.Arrays.copyOf(is, was.length));
            } else {
                assertArrayEquals(key + " untouched", was, is);
            }
        }
        Object newKey = fileKey(root.resolve("c/0/0"));
        if (oldKey != null) {
            assertEquals("the same file, not a new one", oldKey, newKey);
        }
        assertNoTemporaries(root);
        // A fresh store agrees, and the updated shards verify clean.
        try (ShardArray again = open(root)) {
            assertArrayEquals(model, again.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
            assertEquals(List.of(), again.verify());
        }
        // Into an empty directory (no c/ yet): the file and its parents are created.
        Path fresh = arrayDir();
        try (ShardArray array = open(fresh)) {
            array.writeRegion(new long[] {20, 3}, new long[] {2, 2}, new short[] {1, 2, 3, 4});
            short[] want = new short[16];
            want[5] = 1;
            want[6] = 2;
            want[9] = 3;
            want[10] = 4;
            assertArrayEquals(want, array.readRegionShorts(new long[] {19, 2}, new long[] {4, 4}));
        }
        assertEquals(List.of("c/1/0"), new ArrayList<>(shards(fresh).keySet()));
        assertNoTemporaries(fresh);
    }

    @Test
    public void aShardLeftAllFillIsDeleted() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 5);
        try (ShardArray array = open(root)) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
            // A region of fill value covering shard c/1/0 whole: its file is deleted.
            array.writeRegion(new long[] {16, 0}, new long[] {16, 16}, new short[256]);
            assertFalse(Files.exists(root.resolve("c/1/0")));
            put(model, COLS, 16, 0, 16, 16, new short[256]);
            // The same for c/2/1 (rows 32..39, the array's edge), then a partial write gives it
            // one stored chunk, and a partial write of fill value over that chunk deletes it.
            array.writeRegion(new long[] {32, 16}, new long[] {8, 16}, new short[128]);
            assertFalse(Files.exists(root.resolve("c/2/1")));
            array.writeRegion(new long[] {33, 20}, new long[] {1, 2}, new short[] {7, 8});
            assertTrue(Files.exists(root.resolve("c/2/1")));
            array.writeRegion(new long[] {33, 20}, new long[] {1, 2}, new short[2]);
            assertFalse("a partial write leaving c/2/1 all fill deletes it",
                    Files.exists(root.resolve("c/2/1")));
            put(model, COLS, 32, 16, 8, 16, new short[128]);
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
        }
        assertEquals(List.of("c/0/0", "c/0/1", "c/1/1", "c/2/0"), new ArrayList<>(shards(root).keySet()));
        assertTrue(Files.isDirectory(root.resolve("c/1")));
        assertNoTemporaries(root);
    }

    /**
     * A whole-shard rewrite whose rename fails (a non-empty directory stands where shard
     * c/1/0's file goes): SHARD_ERR_IO naming the key, the other shards byte for byte as they
     * were, the directory kept, no temporary left; the array reads on.
     */
    @Test
    public void aWholeShardRewriteThatFailsLeavesTheOldFiles() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 6);
        try (ShardArray array = open(root)) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
        }
        Files.delete(root.resolve("c/1/0"));
        Files.createDirectories(root.resolve("c/1/0"));
        Files.writeString(root.resolve("c/1/0/keep"), "keep");
        Map<String, byte[]> old = shards(root);
        short[] next = values(256, 7);
        try (ShardArray array = open(root)) {
            ShardException e = assertThrows(ShardException.class,
                    () -> array.writeRegion(new long[] {16, 0}, new long[] {16, 16}, next));
            assertEquals(Status.IO, e.status());
            assertTrue(e.getMessage(), e.libraryMessage().contains("c/1/0"));
            Map<String, byte[]> now = shards(root);
            assertEquals(old.keySet(), now.keySet());
            for (String key : old.keySet()) {
                assertArrayEquals(key + " byte for byte", old.get(key), now.get(key));
            }
            assertNoTemporaries(root);
            // The shards around it read as written.
            put(model, COLS, 16, 0, 16, 16, new short[256]);
            short[] got = array.readRegionShorts(new long[] {0, 0}, new long[] {16, COLS});
            short[] want = new short[16 * COLS];
            System.arraycopy(model, 0, want, 0, want.length);
            assertArrayEquals(want, got);
        }
    }

    /**
     * Create, open and refuse by path: nested nodes are keys under their path; an existing
     * node is refused without overwrite (INVALID_STATE, "already exists") and replaced with it
     * (its shards removed); a missing node, a missing root and every path that would leave the
     * root are errors naming the path.
     */
    @Test
    public void nodesByPathAndTheirErrors() throws Exception {
        Path root = tempDir().resolve("tree.zarr");
        ShardException missingRoot = assertThrows(ShardException.class,
                () -> Store.directory(root, false));
        assertTrue(missingRoot.getMessage(), missingRoot.libraryMessage().contains(root.toString()));
        assertFalse(Files.exists(root));
        try (Store store = Store.directory(root, true)) {
            assertTrue(Files.isDirectory(root));
            Group.create(store, "", "{\"title\": \"tree\"}", false);
            try (ShardArray array = ShardArray.create(store, "a/b", ZARR_JSON, false)) {
                array.writeRegion(new long[] {0, 0}, new long[] {2, 2}, new short[] {1, 2, 3, 4});
            }
            assertEquals(List.of("a/b/c/0/0", "a/b/zarr.json", "zarr.json"),
                    new ArrayList<>(files(root).keySet()));
            Map<String, Object> group = jsonObject(parseJson(Files.readString(root.resolve("zarr.json"))));
            assertEquals("group", group.get("node_type"));
            assertEquals(3L, group.get("zarr_format"));
            assertEquals(Map.of("title", "tree"), group.get("attributes"));

            ShardException exists = assertThrows(ShardException.class,
                    () -> ShardArray.create(store, "a/b", ZARR_JSON, false));
            assertEquals(Status.INVALID_STATE, exists.status());
            assertTrue(exists.getMessage(), exists.libraryMessage().contains("`a/b` already holds"));
            ShardException groupExists = assertThrows(ShardException.class,
                    () -> Group.create(store, "", null, false));
            assertEquals(Status.INVALID_STATE, groupExists.status());
            assertTrue(Files.exists(root.resolve("a/b/c/0/0")));
            try (ShardArray array = ShardArray.create(store, "a/b", ZARR_JSON, true)) {
                assertArrayEquals(new short[4],
                        array.readRegionShorts(new long[] {0, 0}, new long[] {2, 2}));
            }
            assertFalse("the old array's shard is removed", Files.exists(root.resolve("a/b/c/0/0")));

            ShardException none = assertThrows(ShardException.class,
                    () -> ShardArray.open(store, "a/x"));
            assertEquals(Status.INVALID_METADATA, none.status());
            assertTrue(none.getMessage(), none.libraryMessage().contains("a/x"));

            for (String bad : new String[] {"..", "../x", "a/../../x", "/etc", "a//b", "a/./b",
                "a\\b"}) {
                ShardException e = assertThrows(bad, ShardException.class,
                        () -> ShardArray.create(store, bad, ZARR_JSON, false));
                assertEquals(bad, Status.INVALID_ARGUMENT, e.status());
                // Named between backquotes, a backslash escaped.
                String named = "`" + bad.replace("\\", "\\\\") + "`";
                assertTrue(bad + ": " + e.getMessage(), e.libraryMessage().contains(named));
                ShardException g = assertThrows(bad, ShardException.class,
                        () -> Group.create(store, bad, null, false));
                assertEquals(bad, Status.INVALID_ARGUMENT, g.status());
            }
            ShardException nul = assertThrows(ShardException.class,
                    () -> ShardArray.open(store, "a\0b"));
            assertEquals(Status.INVALID_ARGUMENT, nul.status());
            assertTrue(nul.getMessage(), nul.libraryMessage().contains("a\\0b"));
            assertEquals("nothing was written outside the tree", List.of("tree.zarr"),
                    listNames(root.getParent()));
        }
    }

    private static List<String> listNames(Path dir) throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /** A closed Store refuses new opens; arrays opened before keep working. */
    @Test
    public void anArrayOutlivesItsStoreHandle() throws Exception {
        Path root = arrayDir();
        Store store = Store.directory(root, false);
        ShardArray array = ShardArray.open(store, "");
        store.close();
        store.close(); // idempotent
        assertTrue(store.isClosed());
        assertThrows(IllegalStateException.class, () -> ShardArray.open(store, ""));
        array.writeRegion(new long[] {1, 1}, new long[] {1, 1}, new short[] {42});
        assertArrayEquals(new short[] {42}, array.readRegionShorts(new long[] {1, 1}, new long[] {1, 1}));
        array.close();
        try (ShardArray again = open(root)) {
            assertArrayEquals(new short[] {42}, again.readRegionShorts(new long[] {1, 1}, new long[] {1, 1}));
        }
    }

    /**
     * The zarr-python fixture's zarr.json, its values written through the directory store and
     * read back; the same shard keys as zarr-python's. With -Dzarrshard.dirstore.out=DIR the
     * array goes to DIR (for run.sh to read with zarr-python).
     */
    @Test
    public void theFixtureWrittenThroughTheStoreReadsBack() throws Exception {
        String fixture = System.getProperty("zarrshard.fixture");
        assertNotNull("set -Dzarrshard.fixture=DIR (bindings/make_fixture.py DIR)", fixture);
        Path src = Path.of(fixture);
        byte[] raw = Files.readAllBytes(src.resolve("fixture.raw"));
        short[] want = new short[64 * 64];
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).asShortBuffer().get(want);
        String zarrJson = Files.readString(src.resolve("fixture.zarr/zarr.json"));
        String out = System.getProperty("zarrshard.dirstore.out");
        Path root = out != null ? Path.of(out) : tempDir().resolve("fixture.zarr");
        assertFalse("a new directory", Files.exists(root));
        try (Store store = Store.directory(root, true);
                ShardArray array = ShardArray.create(store, "", zarrJson, false)) {
            array.writeRegion(new long[] {0, 0}, new long[] {64, 64}, want);
        }
        try (ShardArray array = open(root)) {
            assertArrayEquals(want, array.readRegionShorts(new long[] {0, 0}, new long[] {64, 64}));
            assertEquals(List.of(), array.verify());
        }
        // The same shard files as zarr-python wrote.
        List<String> keys = new ArrayList<>(shards(root).keySet());
        Map<String, byte[]> theirFiles = files(src.resolve("fixture.zarr"));
        theirFiles.remove("zarr.json");
        assertEquals(new ArrayList<>(theirFiles.keySet()), keys);
        assertNoTemporaries(root);
    }
}
