package io.zarrshard;

import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.Test;

/**
 * {@link ShardStore#list} (C {@code shard_store_callbacks.list}, the shim's {@code store_list}
 * trampoline): walks over the stored shards ({@link ShardArray#verify},
 * {@link ShardArray#kerchunkRefs} and the Parquet sets) open only the listed shards.
 *
 * <p>The array: 128x128 uint16 in 2x2 shards of 1x1 inner chunks, a 64x64 shard grid
 * (4096 positions); inner chunks {@code bytes} (uncompressed, 2 bytes each), the index (4
 * entries of 16 bytes + a crc32c, 68 bytes) at the end. A shard written whole holds its 4
 * chunks in C order at offsets 0, 2, 4, 6. The sparse array stores the 3 shards {@code c/0/0},
 * {@code c/17/42}, {@code c/63/63}; element (r, c) holds {@code 1 + 128 r + c} (never the fill
 * value 0).
 */
public class ListTest {
    static final String ZARR_JSON = "{\"zarr_format\": 3, \"node_type\": \"array\","
            + " \"shape\": [128, 128], \"data_type\": \"uint16\", \"chunk_grid\": {\"name\":"
            + " \"regular\", \"configuration\": {\"chunk_shape\": [2, 2]}}, \"chunk_key_encoding\":"
            + " {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": [{\"name\":"
            + " \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1, 1], \"codecs\": ["
            + TestSupport.BYTES_LE + "], \"index_codecs\": [" + TestSupport.BYTES_LE + ", "
            + TestSupport.CRC + "]}}]}";
    static final int GRID = 64;
    static final List<String> STORED = List.of("c/0/0", "c/17/42", "c/63/63");
    static final String URL = "s3://bucket/a.zarr";

    /** What {@link CountingStore#list} does. */
    interface Lister {
        List<String> list(MemoryShardStore mem, String prefix) throws IOException;
    }

    static final Lister LISTS = MemoryShardStore::list;
    static final Lister CANNOT_LIST = (mem, prefix) -> null;

    /** A store over a MemoryShardStore that records every key opened and every prefix listed. */
    static final class CountingStore implements ShardStore {
        final MemoryShardStore mem;
        final Lister lister;
        final List<String> opened = Collections.synchronizedList(new ArrayList<>());
        final List<String> prefixes = Collections.synchronizedList(new ArrayList<>());

        CountingStore(MemoryShardStore mem, Lister lister) {
            this.mem = mem;
            this.lister = lister;
        }

        @Override
        public ShardIO open(String key) {
            opened.add(key);
            return mem.open(key);
        }

        @Override
        public List<String> list(String prefix) throws IOException {
            prefixes.add(prefix);
            return lister.list(mem, prefix);
        }

        /** The keys opened so far, sorted; then forgets them. */
        List<String> takeOpened() {
            synchronized (opened) {
                List<String> out = new ArrayList<>(opened);
                Collections.sort(out);
                opened.clear();
                return out;
            }
        }
    }

    /** Shard (i, j) written whole: its 4 elements 1 + 128 r + c. */
    static void writeShard(ShardArray array, int i, int j) {
        short[] v = new short[4];
        for (int k = 0; k < 4; k++) {
            int r = 2 * i + k / 2;
            int c = 2 * j + k % 2;
            v[k] = (short) (1 + 128 * r + c);
        }
        array.writeRegion(new long[] {2 * i, 2 * j}, new long[] {2, 2}, v);
    }

    /** A MemoryShardStore holding the sparse array's 3 shards. */
    static MemoryShardStore sparse() {
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.open(ZARR_JSON, mem)) {
            writeShard(array, 0, 0);
            writeShard(array, 17, 42);
            writeShard(array, 63, 63);
        }
        assertEquals(STORED, mem.keys());
        return mem;
    }

    /** The sparse array with the index checksum of c/17/42 damaged (its last byte flipped). */
    static MemoryShardStore sparseDamaged() {
        MemoryShardStore mem = sparse();
        MemoryShardIO io = mem.open("c/17/42");
        byte[] bytes = io.bytes();
        assertEquals(4 * 2 + 4 * 16 + 4, bytes.length);
        io.write(bytes.length - 1, ByteBuffer.wrap(new byte[] {(byte) ~bytes[bytes.length - 1]}));
        return mem;
    }

    /** Every key of the 64x64 grid, sorted as strings. */
    static List<String> allKeys() {
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < GRID; i++) {
            for (int j = 0; j < GRID; j++) {
                keys.add("c/" + i + "/" + j);
            }
        }
        Collections.sort(keys);
        return keys;
    }

    /** verify over {@code store}: the problems, and the keys it opened (sorted). */
    static List<ShardArray.Problem> verify(CountingStore store) {
        try (ShardArray array = ShardArray.open(ZARR_JSON, store)) {
            store.takeOpened();
            return array.verify();
        }
    }

    static String refs(CountingStore store) {
        try (ShardArray array = ShardArray.open(ZARR_JSON, store)) {
            store.takeOpened();
            return array.kerchunkRefs(URL, ShardArray.REFS_JSON_V0, 3, null);
        }
    }

    /** The one problem of sparseDamaged(): the index checksum of c/17/42, no chunk. */
    static void assertDamagedProblem(List<ShardArray.Problem> problems) {
        assertEquals(problems.toString(), 1, problems.size());
        ShardArray.Problem p = problems.get(0);
        assertEquals("c/17/42", p.key());
        assertEquals(0, p.chunk().length);
        assertEquals(Status.CHECKSUM, p.status());
    }

    @Test
    public void verifyOpensOnlyListedShards() {
        MemoryShardStore mem = sparseDamaged();
        CountingStore listing = new CountingStore(mem, LISTS);
        List<ShardArray.Problem> listed = verify(listing);
        assertEquals(STORED, listing.takeOpened());
        assertEquals(List.of("c/"), listing.prefixes);
        assertDamagedProblem(listed);

        CountingStore unlisted = new CountingStore(mem, CANNOT_LIST);
        List<ShardArray.Problem> every = verify(unlisted);
        assertEquals(allKeys(), new ArrayList<>(new TreeSet<>(unlisted.takeOpened())));
        assertEquals(List.of("c/"), unlisted.prefixes);
        assertEquals(listed, every);
    }

    /** The v0 refs of the sparse array: 12 inner chunks, [url/shard, offset, 2]. */
    static Map<String, Object> wantRefs() {
        Map<String, Object> want = new TreeMap<>();
        for (String shard : STORED) {
            String[] parts = shard.split("/");
            int i = Integer.parseInt(parts[1]);
            int j = Integer.parseInt(parts[2]);
            for (int k = 0; k < 4; k++) {
                int r = 2 * i + k / 2;
                int c = 2 * j + k % 2;
                want.put("c/" + r + "/" + c, List.of(URL + "/" + shard, 2L * k, 2L));
            }
        }
        return want;
    }

    static Map<String, Object> chunkRefs(String json) {
        Map<String, Object> refs = new TreeMap<>(TestSupport.jsonObject(TestSupport.parseJson(json)));
        assertTrue(refs.remove("zarr.json") instanceof String);
        return refs;
    }

    @Test
    public void kerchunkRefsOpenOnlyListedShards() {
        MemoryShardStore mem = sparse();
        CountingStore listing = new CountingStore(mem, LISTS);
        String listed = refs(listing);
        assertEquals(STORED, listing.takeOpened());
        assertEquals(wantRefs(), chunkRefs(listed));

        CountingStore unlisted = new CountingStore(mem, CANNOT_LIST);
        String every = refs(unlisted);
        assertEquals(allKeys(), new ArrayList<>(new TreeSet<>(unlisted.takeOpened())));
        assertEquals(listed, every);
    }

    @Test
    public void parquetRefsOpenOnlyListedShards() throws IOException {
        MemoryShardStore mem = sparse();
        CountingStore listing = new CountingStore(mem, LISTS);
        CountingStore unlisted = new CountingStore(mem, CANNOT_LIST);
        MemoryShardStore outListed = new MemoryShardStore();
        MemoryShardStore outEvery = new MemoryShardStore();
        try (ShardArray a = ShardArray.open(ZARR_JSON, listing);
                ShardArray b = ShardArray.open(ZARR_JSON, unlisted)) {
            listing.takeOpened();
            unlisted.takeOpened();
            a.kerchunkRefsParquet(URL, "a", 5, outListed);
            assertEquals(STORED, listing.takeOpened());
            b.kerchunkRefsParquet(URL, "a", 5, outEvery);
            assertEquals(4096, new TreeSet<>(unlisted.takeOpened()).size());
            assertEquals(outEvery.keys(), outListed.keys());
            for (String k : outEvery.keys()) {
                assertArrayEquals(k, outEvery.open(k).bytes(), outListed.open(k).bytes());
            }
            Path dir = TestSupport.tempDir().resolve("list-parquet-dir");
            a.kerchunkRefsParquetDir(URL, "a", 5, dir);
            assertEquals(STORED, listing.takeOpened());
        }
    }

    /** The exception list threw, as the call's cause; status and code as for open's. */
    static void assertFailsWith(Throwable boom, org.junit.function.ThrowingRunnable call) {
        ShardException e = assertThrows(ShardException.class, call);
        assertEquals(Status.IO, e.status());
        assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
        assertSame(boom, e.getCause());
        assertTrue(e.getMessage(), e.getMessage().startsWith("SHARD_ERR_IO: "));
    }

    @Test
    public void throwingListFailsLikeThrowingOpen() throws IOException {
        MemoryShardStore mem = sparse();
        Path dir = TestSupport.tempDir().resolve("list-throws");
        for (Exception boom : List.of(new IOException("bucket gone"),
                new IllegalStateException("unchecked"), new ShardIO.NotFound("no bucket"))) {
            CountingStore store = new CountingStore(mem, (m, prefix) -> {
                if (boom instanceof IOException io) {
                    throw io;
                }
                throw (RuntimeException) boom;
            });
            try (ShardArray array = ShardArray.open(ZARR_JSON, store)) {
                store.takeOpened();
                assertFailsWith(boom, array::verify);
                assertFailsWith(boom, () -> array.kerchunkRefs(URL));
                assertFailsWith(boom, () -> array.kerchunkRefsParquet(URL, "a", 5,
                        new MemoryShardStore()));
                assertFailsWith(boom, () -> array.kerchunkRefsParquetDir(URL, "a", 5, dir));
                // Nothing was opened: the listing comes first.
                assertEquals(List.of(), store.takeOpened());
                // The array still works: a region read does not list.
                assertArrayEquals(new short[] {1 + 128 * 34 + 84},
                        array.readRegionShorts(new long[] {34, 84}, new long[] {1, 1}));
            }
            // The same status, code and cause as when open throws it.
            try (ShardArray array = ShardArray.open(ZARR_JSON, new ShardStore() {
                @Override
                public ShardIO open(String key) throws IOException {
                    if (boom instanceof IOException io) {
                        throw io;
                    }
                    throw (RuntimeException) boom;
                }
            })) {
                assertFailsWith(boom, array::verify);
            }
        }
        // A null key: a NullPointerException as the cause, as open returning null.
        CountingStore nullKey = new CountingStore(mem, (m, prefix) -> {
            List<String> keys = new ArrayList<>(m.list(prefix));
            keys.add(null);
            return keys;
        });
        try (ShardArray array = ShardArray.open(ZARR_JSON, nullKey)) {
            ShardException e = assertThrows(ShardException.class, array::verify);
            assertEquals(Status.IO, e.status());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertTrue(String.valueOf(e.getCause()), e.getCause() instanceof NullPointerException);
            assertEquals("ShardStore.list returned a null key", e.getCause().getMessage());
        }
    }

    /** The stored keys after keys that are not shard keys of the 64x64 grid, and c/0/0 twice. */
    static final Lister WITH_JUNK = (m, prefix) -> {
        List<String> keys = new ArrayList<>(List.of("zarr.json", "c/01/0", "c/99/0", "c/0", "",
                "c/", "c/0/0/0", "c/-1/0", "c/\uD83D\uDE00/0", "c/0/0"));
        keys.addAll(m.list(prefix));
        return keys;
    };

    @Test
    public void junkKeysAreHarmless() {
        CountingStore damaged = new CountingStore(sparseDamaged(), WITH_JUNK);
        assertDamagedProblem(verify(damaged));
        // c/0/0 listed twice: opened once.
        assertEquals(STORED, damaged.takeOpened());
        CountingStore clean = new CountingStore(sparse(), WITH_JUNK);
        assertEquals(wantRefs(), chunkRefs(refs(clean)));
        assertEquals(STORED, clean.takeOpened());
    }

    @Test
    public void listedKeysDecideWhatIsVisited() {
        MemoryShardStore mem = sparseDamaged();
        // A listed position that is not stored is opened and reads as missing.
        CountingStore extra = new CountingStore(mem, (m, prefix) -> {
            List<String> keys = new ArrayList<>(m.list(prefix));
            keys.add("c/1/1");
            return keys;
        });
        assertDamagedProblem(verify(extra));
        assertEquals(List.of("c/0/0", "c/1/1", "c/17/42", "c/63/63"), extra.takeOpened());
        // A stored shard left out is treated as missing: the damaged one is not checked.
        CountingStore partial = new CountingStore(mem, (m, prefix) -> List.of("c/0/0", "c/63/63"));
        assertEquals(List.of(), verify(partial));
        assertEquals(List.of("c/0/0", "c/63/63"), partial.takeOpened());
        // An empty listing: nothing is stored, nothing opened.
        CountingStore none = new CountingStore(mem, (m, prefix) -> List.of());
        assertEquals(List.of(), verify(none));
        assertEquals(List.of(), none.takeOpened());
        Map<String, Object> refs = chunkRefs(refs(none));
        assertEquals(Map.of(), refs);
        assertEquals(List.of(), none.takeOpened());
    }

    @Test
    public void denseGridListsManyKeys() {
        MemoryShardStore mem = new MemoryShardStore();
        try (ShardArray array = ShardArray.open(ZARR_JSON, mem)) {
            short[] v = new short[128 * 128];
            for (int k = 0; k < v.length; k++) {
                v[k] = (short) (1 + k); // 1 + 128 r + c
            }
            array.writeRegion(new long[] {0, 0}, new long[] {128, 128}, v);
        }
        assertEquals(allKeys(), mem.keys());
        // 4096 shard keys plus 100,000 keys of other objects, in one listing.
        CountingStore store = new CountingStore(mem, (m, prefix) -> {
            List<String> keys = new ArrayList<>(m.list(prefix));
            for (int n = 0; n < 100_000; n++) {
                keys.add("c/x/" + n);
            }
            return keys;
        });
        assertEquals(List.of(), verify(store));
        assertEquals(allKeys(), store.takeOpened());
        Map<String, Object> refs = chunkRefs(refs(store));
        assertEquals(allKeys(), store.takeOpened());
        assertEquals(128 * 128, refs.size());
        assertEquals(List.of(URL + "/c/63/63", 6L, 2L), refs.get("c/127/127"));
        assertEquals(List.of(URL + "/c/17/42", 4L, 2L), refs.get("c/35/84"));
    }

    @Test
    public void memoryStoreListsStoredKeysWithPrefix() {
        MemoryShardStore mem = new MemoryShardStore();
        mem.open("c/1/0").write(0, ByteBuffer.wrap(new byte[] {1}));
        mem.open("zarr.json").write(0, ByteBuffer.wrap(new byte[] {'{'}));
        mem.open("c/0/0").write(0, ByteBuffer.wrap(new byte[] {2}));
        mem.open("c/0/1"); // opened, never written: not stored
        mem.open("cc").write(0, ByteBuffer.wrap(new byte[] {3}));
        assertEquals(List.of("c/0/0", "c/1/0"), mem.list("c/"));
        assertEquals(List.of("c/0/0", "c/1/0", "cc"), mem.list("c"));
        assertEquals(List.of("c/0/0", "c/1/0", "cc", "zarr.json"), mem.list(""));
        assertEquals(List.of(), mem.list("d"));
        // The default: cannot list.
        ShardStore lambda = key -> mem.open(key);
        try {
            assertNull(lambda.list("c/"));
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }

    /** The sparse array's objects as files under a new directory, with its zarr.json. */
    static Path sparseDirectory(MemoryShardStore mem) throws IOException {
        Path root = TestSupport.tempDir();
        Files.writeString(root.resolve("zarr.json"), ZARR_JSON);
        for (String key : mem.keys()) {
            Path file = root.resolve(key);
            Files.createDirectories(file.getParent());
            Files.write(file, mem.open(key).bytes());
        }
        return root;
    }

    static List<String> sorted(List<String> keys) {
        List<String> out = new ArrayList<>(keys);
        Collections.sort(out);
        return out;
    }

    /**
     * The sparse array as files, through the library's directory store (which lists itself):
     * verify finds the same problem as over the memory store (the damaged index of c/17/42),
     * and a clean stored shard reads back; the files are the three shards, nothing added.
     */
    @Test
    public void directoryStoreLists() throws IOException {
        MemoryShardStore mem = sparseDamaged();
        Path root = sparseDirectory(mem);
        try (ShardArray array = TestSupport.openDir(root)) {
            assertDamagedProblem(array.verify());
            short[] corner = array.readRegionShorts(new long[] {126, 126}, new long[] {2, 2});
            assertArrayEquals(new short[] {(short) (1 + 128 * 126 + 126), (short) (1 + 128 * 126 + 127),
                (short) (1 + 128 * 127 + 126), (short) (1 + 128 * 127 + 127)}, corner);
        }
        assertEquals(sorted(STORED), sorted(new ArrayList<>(TestSupport.files(root).keySet()
                .stream().filter(k -> k.startsWith("c/")).toList())));
    }

    @Test
    public void listingIsUtf8() throws IOException {
        // "c/" + U+1F600 (UTF-8 F0 9F 98 80; modified UTF-8 would be 6 bytes ED A0 BD ED B8 80),
        // then U+00E9 (C3 A9) and an ASCII key.
        List<String> got = new ArrayList<>();
        ShardStore store = new ShardStore() {
            @Override
            public ShardIO open(String key) {
                throw new AssertionError("not opened");
            }

            @Override
            public List<String> list(String prefix) {
                got.add(prefix);
                return List.of("c/\uD83D\uDE00", "\u00E9", "c/0");
            }
        };
        Object[] r = Listing.of(store, new byte[] {'c', (byte) 0xC3, (byte) 0xBC, '/'});
        assertEquals(List.of("c\u00FC/"), got);
        assertArrayEquals(new byte[] {'c', '/', (byte) 0xF0, (byte) 0x9F, (byte) 0x98, (byte) 0x80,
            (byte) 0xC3, (byte) 0xA9, 'c', '/', '0'}, (byte[]) r[0]);
        assertArrayEquals(new int[] {6, 2, 3}, (int[]) r[1]);
        assertNull(Listing.of(key -> null, new byte[0]));
    }
}
