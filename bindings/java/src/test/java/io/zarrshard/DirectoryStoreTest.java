package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ClosedByInterruptException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.Test;

/**
 * {@link ShardStore#directory} as a read-write store ({@link DirectoryObjectIO}): whole shards
 * as new files renamed over the old ones, partial updates in place, all-fill shards deleted, a
 * whole-shard rewrite that fails midway leaving the old file; the new-object calls on the
 * class itself; concurrent reads; the zarr-python fixture written and read back.
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

    private static short[] sub(short[] all, int width, int r0, int c0, int rows, int cols) {
        short[] out = new short[rows * cols];
        for (int r = 0; r < rows; r++) {
            System.arraycopy(all, (r0 + r) * width + c0, out, r * cols, cols);
        }
        return out;
    }

    private static void put(short[] all, int width, int r0, int c0, int rows, int cols, short[] v) {
        for (int r = 0; r < rows; r++) {
            System.arraycopy(v, r * cols, all, (r0 + r) * width + c0, cols);
        }
    }

    /** Every regular file under {@code root}, key (joined with '/') to bytes. */
    private static Map<String, byte[]> files(Path root) throws IOException {
        Map<String, byte[]> out = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
                out.put(root.relativize(p).toString().replace('\\', '/'), Files.readAllBytes(p));
            }
        }
        return out;
    }

    private static void assertNoTemporaries(Path root) throws IOException {
        for (String key : files(root).keySet()) {
            assertFalse("a temporary left: " + key, key.contains(".tmp-"));
        }
    }

    /** The file's identity (inode on Unix): a rename over it gives a new one. */
    private static Object fileKey(Path p) throws IOException {
        return Files.readAttributes(p, BasicFileAttributes.class).fileKey();
    }

    /** The shard objects of {@code root} (zarr.json left out). */
    private static Map<String, byte[]> shards(Path root) throws IOException {
        Map<String, byte[]> out = files(root);
        out.remove("zarr.json");
        return out;
    }

    private static Path arrayDir() throws IOException {
        Path root = tempDir();
        Files.writeString(root.resolve("zarr.json"), ZARR_JSON);
        return root;
    }

    @Test
    public void aWholeArrayIsWrittenAsNewFiles() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 1);
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root));
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
        try (ShardArray again = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
            assertArrayEquals(model, again.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
            assertEquals(List.of(), again.verify());
        }
        // Rewritten whole: every file replaced by a rename (a new inode), none written in place.
        Map<String, Object> before = new TreeMap<>();
        for (String key : ALL_KEYS) {
            before.put(key, fileKey(root.resolve(key)));
        }
        short[] next = values(ROWS * COLS, 2);
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
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
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
        }
        Map<String, byte[]> old = shards(root);
        Object oldKey = fileKey(root.resolve("c/0/0"));
        // Rows 3..9, columns 5..20: part of c/0/0 and of c/0/1.
        short[] patch = values(7 * 16, 4);
        put(model, COLS, 3, 5, 7, 16, patch);
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
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
        try (ShardArray again = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
            assertArrayEquals(model, again.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
            assertEquals(List.of(), again.verify());
        }
        // Into an empty directory (no c/ yet): the file and its parents are created.
        Path fresh = arrayDir();
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(fresh))) {
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
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
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

    @Test
    public void aWholeShardRewriteThatFailsLeavesTheOldFile() throws Exception {
        Path root = arrayDir();
        short[] model = values(ROWS * COLS, 6);
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
            array.writeRegion(new long[] {0, 0}, new long[] {ROWS, COLS}, model);
        }
        Map<String, byte[]> old = shards(root);
        short[] next = values(256, 7);
        // A real failure of the shipped class midway: on an interrupted thread the temporary is
        // created (FileChannel.open does not check interrupts) and the first write into it
        // fails (the channel closes itself: ClosedByInterruptException), so the library
        // discards the new object.
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(root))) {
            ShardException e;
            Thread.currentThread().interrupt();
            try {
                e = assertThrows(ShardException.class,
                        () -> array.writeRegion(new long[] {16, 0}, new long[] {16, 16}, next));
            } finally {
                assertTrue("still interrupted", Thread.interrupted()); // and cleared
            }
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertTrue(String.valueOf(e.getCause()), e.getCause() instanceof ClosedByInterruptException);
            // Midway: the temporary was made, and writing into it failed.
            assertTrue(java.util.Arrays.stream(e.getCause().getStackTrace()).anyMatch(f ->
                    f.getClassName().equals(DirectoryObjectIO.class.getName())
                            && f.getMethodName().equals("writeNew")));
            Map<String, byte[]> now = shards(root);
            assertEquals(old.keySet(), now.keySet()); // no temporary either
            for (String key : ALL_KEYS) {
                assertArrayEquals(key + " byte for byte", old.get(key), now.get(key));
            }
            assertNoTemporaries(root);
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
            // The same write, not interrupted, goes through.
            array.writeRegion(new long[] {16, 0}, new long[] {16, 16}, next);
            put(model, COLS, 16, 0, 16, 16, next);
            assertArrayEquals(model, array.readRegionShorts(new long[] {0, 0}, new long[] {ROWS, COLS}));
        }
        assertNoTemporaries(root);
    }

    private static ByteBuffer bytes(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String read(ShardIO io) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(100);
        int n = io.read(0, b);
        return new String(b.array(), 0, n, StandardCharsets.UTF_8);
    }

    @Test
    public void newObjectsOnTheClass() throws Exception {
        Path root = tempDir();
        ShardStore store = ShardStore.directory(root);
        Path file = root.resolve("c/0/0");
        DirectoryObjectIO io = (DirectoryObjectIO) store.open("c/0/0");
        try {
            assertEquals(Native.CAP_READ_SUFFIX | Native.CAP_TRUNCATE | Native.CAP_REMOVE
                    | Native.CAP_NEW_OBJECTS, Capabilities.of(io));
            assertEquals(file.toAbsolutePath(), io.path());
            // Missing: not found; in-place writes create the file and its parents.
            assertThrows(ShardIO.NotFound.class, () -> read(io));
            assertEquals(-1, io.size());
            assertEquals(-1, io.readSuffix(ByteBuffer.allocate(4)));
            io.remove(); // missing is fine
            io.write(0, bytes("old!"));
            assertEquals("old!", Files.readString(file));
            io.truncate(6);
            assertArrayEquals("old!\0\0".getBytes(StandardCharsets.UTF_8), Files.readAllBytes(file));
            io.truncate(4);
            ByteBuffer suffix = ByteBuffer.allocate(2);
            assertEquals(4, io.readSuffix(suffix));
            assertEquals("d!", new String(suffix.array(), StandardCharsets.UTF_8));

            // Discarded: the file stays, no temporary.
            io.beginNew();
            List<String> during = new ArrayList<>(files(root).keySet());
            assertEquals(2, during.size());
            assertTrue(during.toString(), during.get(1).matches(
                    "c/0/0\\.tmp-" + ProcessHandle.current().pid() + "-[0-9]+"));
            assertThrows(IllegalStateException.class, io::beginNew); // one at a time
            io.writeNew(0, bytes("abc"));
            assertEquals("old!", read(io)); // readers see the old file until the commit
            io.discardNew();
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(root).keySet()));
            assertEquals("old!", read(io));

            // A commit with the wrong length fails: the old file, no temporary, nothing pending.
            io.beginNew();
            io.writeNew(0, bytes("abc"));
            IOException e = assertThrows(IOException.class, () -> io.commitNew(4));
            assertTrue(e.getMessage(), e.getMessage().contains("3 bytes, committed as 4"));
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(root).keySet()));
            assertEquals("old!", Files.readString(file));
            assertThrows(IllegalStateException.class, () -> io.commitNew(3));
            assertThrows(IllegalStateException.class, () -> io.writeNew(0, bytes("x")));

            // Committed (written out of order, as an index at the start is): the same object
            // reads the new file at once.
            Object before = fileKey(file);
            io.beginNew();
            io.writeNew(3, bytes("-bytes"));
            io.writeNew(0, bytes("new"));
            io.commitNew(9);
            assertEquals("new-bytes", Files.readString(file));
            assertEquals("new-bytes", read(io));
            assertEquals(9, io.size());
            if (before != null) {
                assertNotEquals(before, fileKey(file));
            }
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(root).keySet()));

            // Closed with a new object pending: the temporary goes, the file stays.
            io.beginNew();
            io.writeNew(0, bytes("never"));
            io.close();
            io.close(); // idempotent
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(root).keySet()));
            assertEquals("new-bytes", Files.readString(file));
            assertThrows(IOException.class, () -> read(io));
            assertThrows(IOException.class, io::beginNew);
        } finally {
            io.close();
        }

        // A rename that fails (a non-empty directory where the file would be): the temporary is
        // deleted, the directory stays.
        Path blocked = root.resolve("c/1/0");
        Files.createDirectories(blocked);
        Files.writeString(blocked.resolve("x"), "keep");
        try (DirectoryObjectIO blockedIO = (DirectoryObjectIO) store.open("c/1/0")) {
            blockedIO.beginNew();
            blockedIO.writeNew(0, bytes("abc"));
            assertThrows(IOException.class, () -> blockedIO.commitNew(3));
        }
        assertEquals(List.of("c/0/0", "c/1/0/x"), new ArrayList<>(files(root).keySet()));

        // A read on an interrupted thread fails (the JDK closes the channel); the next opens
        // the file again. remove deletes the file; the object then reads as missing.
        try (DirectoryObjectIO again = (DirectoryObjectIO) store.open("c/0/0")) {
            assertEquals("new-bytes", read(again));
            Thread.currentThread().interrupt();
            try {
                assertThrows(ClosedByInterruptException.class, () -> read(again));
            } finally {
                assertTrue(Thread.interrupted());
            }
            assertEquals("new-bytes", read(again));
            again.remove();
            assertFalse(Files.exists(file));
            assertThrows(ShardIO.NotFound.class, () -> read(again));
            assertEquals(-1, again.size());
        }

        // A link at the shard's path: followed by reads and in-place writes; a commit replaces
        // the link itself, remove deletes the link.
        Path target = root.resolve("elsewhere");
        Files.writeString(target, "linked");
        Files.createSymbolicLink(file, target);
        try (DirectoryObjectIO linked = (DirectoryObjectIO) store.open("c/0/0")) {
            assertEquals("linked", read(linked));
            linked.write(0, bytes("L"));
            assertEquals("Linked", Files.readString(target));
            linked.beginNew();
            linked.writeNew(0, bytes("own"));
            linked.commitNew(3);
            assertFalse(Files.isSymbolicLink(file));
            assertEquals("own", Files.readString(file));
            assertEquals("Linked", Files.readString(target));
        }
        Files.delete(file);
        Files.createSymbolicLink(file, target);
        try (DirectoryObjectIO linked = (DirectoryObjectIO) store.open("c/0/0")) {
            linked.remove();
        }
        assertFalse(Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS));
        assertEquals("Linked", Files.readString(target));
    }

    @Test
    public void aBufferedShardIsCommittedAndReadThroughTheSameObject() throws Exception {
        Path root = tempDir();
        ShardStore store = ShardStore.directory(root);
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO plain = new MemoryShardIO();
            writeStandard(codec, plain, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            ShardIO io = store.open("a/b/shard");
            try {
                checkStandardMissing(codec, io);
                long size = writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
                assertEquals(plain.bytes().length, size);
                assertArrayEquals(plain.bytes(), Files.readAllBytes(root.resolve("a/b/shard")));
                checkStandard(codec, io, 1);
                // Many threads read one object at once.
                try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
                    ExecutorService pool = Executors.newFixedThreadPool(8);
                    CyclicBarrier start = new CyclicBarrier(8);
                    List<Future<?>> done = new ArrayList<>();
                    for (int t = 0; t < 8; t++) {
                        final int seed = t;
                        done.add(pool.submit(() -> {
                            start.await();
                            List<long[]> all = allChunks();
                            for (int round = 0; round < 100; round++) {
                                long[] c = all.get((round * 5 + seed) % all.size());
                                assertArrayEquals(written(c) ? chunk(c, 1) : zeros(), s.readChunk(c));
                                assertEquals(size, io.size());
                            }
                            return null;
                        }));
                    }
                    for (Future<?> f : done) {
                        f.get();
                    }
                    pool.shutdown();
                }
            } finally {
                store.release(io);
            }
        }
        assertNoTemporaries(root);
    }

    private static void checkStandardMissing(ShardCodec codec, ShardIO io) {
        try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
            for (long[] c : allChunks()) {
                assertArrayEquals(zeros(), s.readChunk(c));
            }
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
        Files.createDirectories(root);
        try (Stream<Path> stale = Files.list(root)) {
            assertEquals("an empty directory", 0, stale.count());
        }
        Files.writeString(root.resolve("zarr.json"), zarrJson);
        ShardStore store = ShardStore.directory(root);
        try (ShardArray array = ShardArray.open(zarrJson, store)) {
            array.writeRegion(new long[] {0, 0}, new long[] {64, 64}, want);
        }
        try (ShardArray array = ShardArray.open(zarrJson, ShardStore.directory(root))) {
            assertArrayEquals(want, array.readRegionShorts(new long[] {0, 0}, new long[] {64, 64}));
            assertEquals(List.of(), array.verify());
        }
        List<String> keys = new ArrayList<>(store.list("c/"));
        keys.sort(null);
        List<String> theirs = new ArrayList<>(ShardStore.directory(src.resolve("fixture.zarr")).list("c/"));
        theirs.sort(null);
        assertEquals(theirs, keys);
        assertNoTemporaries(root);
    }
}
