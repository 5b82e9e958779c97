package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.junit.BeforeClass;
import org.junit.Test;

/**
 * {@link ShardArray#kerchunkRefs}, {@link ShardArray#kerchunkRefsParquet} and
 * {@link ShardArray#kerchunkRefsParquetDir} on the zarr-python
 * fixture (4x4 inner chunks of 16x16 in 2x2 shards; the top-left inner chunk of every shard is
 * not stored). Every JSON entry is checked against the shard's own index, parsed here from the
 * shard's bytes (and against {@link Shard#chunkInfo}); the Parquet objects are compared byte for
 * byte with what {@code zarrshard refs --format parquet} writes ({@code -Dzarrshard.cli}), and
 * the files of the directory variant with those objects.
 * With {@code -Dzarrshard.refs.out=DIR} the sets are also written there, for run.sh to read
 * back with fsspec and zarr-python.
 */
public class RefsTest {
    private static final String URL = "file:///data/fx";
    private static Path dir; // fixture.zarr
    /** Shard key ("c/0/1") to its 4 index entries {offset, nbytes}, from the shard's bytes. */
    private static final Map<String, long[][]> INDEX = new TreeMap<>();

    @BeforeClass
    public static void load() throws Exception {
        String d = System.getProperty("zarrshard.fixture");
        assertNotNull("set -Dzarrshard.fixture=DIR (bindings/make_fixture.py DIR)", d);
        dir = Path.of(d).resolve("fixture.zarr");
        for (int si = 0; si < 2; si++) {
            for (int sj = 0; sj < 2; sj++) {
                String key = "c/" + si + "/" + sj;
                INDEX.put(key, parseIndex(Files.readAllBytes(dir.resolve(key))));
            }
        }
    }

    /**
     * The index at the end of a fixture shard: 4 entries of (offset, nbytes), u64 little-endian,
     * then the crc32c of those 64 bytes. The checksum is verified, so a misparse cannot pass.
     */
    private static long[][] parseIndex(byte[] shard) {
        int at = shard.length - (4 * 16 + 4);
        CRC32C crc = new CRC32C();
        crc.update(shard, at, 4 * 16);
        ByteBuffer b = ByteBuffer.wrap(shard).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals("index checksum", (int) crc.getValue(), b.getInt(at + 64));
        long[][] entries = new long[4][];
        for (int k = 0; k < 4; k++) {
            entries[k] = new long[] {b.getLong(at + 16 * k), b.getLong(at + 16 * k + 8)};
        }
        return entries;
    }

    private static ShardArray fixture(ShardStore store) throws IOException {
        return ShardArray.open(Files.readString(dir.resolve("zarr.json")), store);
    }

    /**
     * The references the sets must hold, from the parsed index: unsharded chunk key (keys of
     * the {@code v3} or the v2 grid) to {shard key, offset, nbytes}; empty chunks left out.
     * Also checks the parsed index against Shard.chunkInfo.
     */
    private static Map<String, Object[]> expectedRefs(boolean v3) throws IOException {
        Map<String, Object[]> out = new TreeMap<>();
        int empty = 0;
        try (ShardCodec codec = ShardCodec.fromZarrJson(Files.readString(dir.resolve("zarr.json")))) {
            for (int i = 0; i < 4; i++) {
                for (int j = 0; j < 4; j++) {
                    String shardKey = "c/" + i / 2 + "/" + j / 2;
                    long[] e = INDEX.get(shardKey)[(i % 2) * 2 + j % 2];
                    ChunkLocation loc;
                    try (Shard s = Shard.open(codec, dir.resolve(shardKey), Shard.Mode.READ)) {
                        loc = s.chunkInfo(i % 2, j % 2);
                    }
                    if (e[0] == -1L && e[1] == -1L) {
                        assertTrue(loc.empty());
                        empty++;
                        continue;
                    }
                    assertFalse(loc.empty());
                    assertEquals(e[0], loc.offset());
                    assertEquals(e[1], loc.nbytes());
                    String key = v3 ? "c/" + i + "/" + j : i + "." + j;
                    out.put(key, new Object[] {shardKey, e[0], e[1]});
                }
            }
        }
        assertEquals("the fixture leaves one inner chunk per shard empty", 4, empty);
        assertEquals(12, out.size());
        return out;
    }

    /** The chunk references of a set (every key but the metadata documents). */
    private static void assertRefs(Map<String, Object> refs, String prefix, String urlHead,
            Map<String, Object[]> want, List<String> metadataKeys) {
        TreeSet<String> wantKeys = new TreeSet<>();
        for (String k : want.keySet()) {
            wantKeys.add(prefix + k);
        }
        for (String k : metadataKeys) {
            wantKeys.add(prefix + k);
        }
        assertEquals(wantKeys, new TreeSet<>(refs.keySet()));
        for (Map.Entry<String, Object[]> e : want.entrySet()) {
            Object[] w = e.getValue();
            assertEquals(e.getKey(), List.of(urlHead + "/" + w[0], w[1], w[2]),
                    refs.get(prefix + e.getKey()));
        }
        for (String k : metadataKeys) {
            assertTrue(k, refs.get(prefix + k) instanceof String);
        }
    }

    @Test
    public void jsonV0EntriesEqualEachShardIndex() throws Exception {
        Map<String, Object[]> want = expectedRefs(true);
        try (ShardArray array = openDir(dir)) {
            String v0 = array.kerchunkRefs(URL, ShardArray.REFS_JSON_V0, 3, null);
            Map<String, Object> refs = jsonObject(parseJson(v0));
            assertRefs(refs, "", URL, want, List.of("zarr.json"));
            // The metadata: the same array, unsharded, its inner chunks as chunks.
            Map<String, Object> meta = jsonObject(parseJson((String) refs.get("zarr.json")));
            assertEquals(3L, meta.get("zarr_format"));
            assertEquals(List.of(64L, 64L), meta.get("shape"));
            assertEquals("uint16", meta.get("data_type"));
            assertEquals(0L, meta.get("fill_value"));
            Map<String, Object> grid = jsonObject(meta.get("chunk_grid"));
            assertEquals(List.of(16L, 16L), jsonObject(grid.get("configuration")).get("chunk_shape"));
            List<String> codecs = new ArrayList<>();
            for (Object c : (List<?>) meta.get("codecs")) {
                codecs.add((String) jsonObject(c).get("name"));
            }
            assertEquals(List.of("bytes", "zstd"), codecs);
            // The same set with the keys under a name, and from a prefix ending in '/'.
            Map<String, Object> named = jsonObject(parseJson(
                    array.kerchunkRefs(URL + "/", ShardArray.REFS_JSON_V0, 3, "img")));
            assertRefs(named, "img/", URL, want, List.of("zarr.json"));
            // An empty name is the root, as null.
            assertEquals(v0, array.kerchunkRefs(URL, 0, 3, ""));
        }
    }

    @Test
    public void jsonV1AndZarrV2() throws Exception {
        try (ShardArray array = openDir(dir)) {
            Map<String, Object> v1 = jsonObject(parseJson(array.kerchunkRefs(URL)));
            assertEquals(new TreeSet<>(List.of("version", "templates", "refs")),
                    new TreeSet<>(v1.keySet()));
            assertEquals(1L, v1.get("version"));
            assertEquals(Map.of("u", URL), v1.get("templates"));
            assertRefs(jsonObject(v1.get("refs")), "", "{{u}}", expectedRefs(true),
                    List.of("zarr.json"));
            assertEquals(array.kerchunkRefs(URL), array.kerchunkRefs(URL, 1, 3, null));

            // Zarr v2 metadata: a .zarray, keys i.j.
            Map<String, Object> v2 = jsonObject(parseJson(array.kerchunkRefs(URL, 0, 2, null)));
            List<String> docs = v2.containsKey(".zattrs") ? List.of(".zarray", ".zattrs")
                    : List.of(".zarray");
            assertRefs(v2, "", URL, expectedRefs(false), docs);
            Map<String, Object> zarray = jsonObject(parseJson((String) v2.get(".zarray")));
            assertEquals(2L, zarray.get("zarr_format"));
            assertEquals(List.of(64L, 64L), zarray.get("shape"));
            assertEquals(List.of(16L, 16L), zarray.get("chunks"));
            assertEquals("<u2", zarray.get("dtype"));
            assertEquals("zstd", jsonObject(zarray.get("compressor")).get("id"));
            Map<String, Object> v2v1 = jsonObject(parseJson(array.kerchunkRefs(URL, 1, 2, "a")));
            assertRefs(jsonObject(v2v1.get("refs")), "a/", "{{u}}", expectedRefs(false), docs);
        }
    }

    private static ShardException expect(Status status, org.junit.function.ThrowingRunnable r) {
        ShardException e = assertThrows(ShardException.class, r);
        assertEquals(e.getMessage(), status, e.status());
        return e;
    }

    @Test
    public void refsErrors() throws Exception {
        try (ShardArray array = openDir(dir)) {
            // The library refuses what it does not know, with its own message.
            ShardException e = expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefs(URL, 2, 3, null));
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("unknown reference format 2"));
            expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefs(URL, -1, 3, null));
            e = expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefs(URL, 1, 4, null));
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("zarr_format must be 2 or 3, got 4"));
            expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefs(URL, 1, 0, null));
            e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquet(URL, "fx", 0, new MemoryShardStore()));
            e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquet(URL, "", 5, new MemoryShardStore()));
            assertThrows(IllegalArgumentException.class,
                    () -> array.kerchunkRefsParquet(URL, "fx", -1, new MemoryShardStore()));
            assertThrows(NullPointerException.class, () -> array.kerchunkRefs(null));
            assertThrows(NullPointerException.class,
                    () -> array.kerchunkRefsParquet(URL, null, 5, new MemoryShardStore()));
            assertThrows(NullPointerException.class,
                    () -> array.kerchunkRefsParquet(URL, "fx", 5, null));
        }
        // A store whose reads throw: status IO, that exception as the cause.
        IOException boom = new IOException("store down");
        try (ShardArray array = fixture(key -> {
            throw boom;
        })) {
            ShardException e = expect(Status.IO, () -> array.kerchunkRefs(URL));
            assertSame(boom, e.getCause());
            e = expect(Status.IO, () -> array.kerchunkRefsParquet(URL, "fx", 5, new MemoryShardStore()));
            assertSame(boom, e.getCause());
        }
        // An output store that throws, and one whose objects cannot be cut to length.
        try (ShardArray array = openDir(dir)) {
            IOException full = new IOException("disk full");
            ShardException e = expect(Status.IO, () -> array.kerchunkRefsParquet(URL, "fx", 5, key -> {
                throw full;
            }));
            assertSame(full, e.getCause());
            MemoryShardIO longer = new MemoryShardIO(new byte[1 << 20]);
            e = expect(Status.UNSUPPORTED, () -> array.kerchunkRefsParquet(URL, "fx", 5,
                    key -> new TestSupport.MinimalIO(longer)));
            assertArrayEquals(new byte[1 << 20], longer.bytes()); // refused before any byte
        }
        // An array without sharding has no reference set.
        String plain = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8, 8],"
                + " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
                + " {\"chunk_shape\": [4, 4]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
                + " \"fill_value\": 3, \"codecs\": [" + BYTES_LE + "]}";
        try (ShardArray array = ShardArray.open(plain, new MemoryShardStore())) {
            expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefs(URL));
            expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquet(URL, "p", 5, new MemoryShardStore()));
        }
        ShardArray closed = openDir(dir);
        closed.close();
        assertThrows(IllegalStateException.class, () -> closed.kerchunkRefs(URL));
        assertThrows(IllegalStateException.class,
                () -> closed.kerchunkRefsParquet(URL, "fx", 5, new MemoryShardStore()));
    }

    /** An OutputStream that keeps what it is given and the length of each write. */
    private static class PieceStream extends java.io.OutputStream {
        final java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        final List<Integer> pieces = new ArrayList<>();

        @Override
        public void write(int b) {
            throw new AssertionError("the library writes arrays");
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            pieces.add(len);
            bytes.write(b, off, len);
        }
    }

    /**
     * {@link ShardArray#writeKerchunkRefs} writes the text {@link ShardArray#kerchunkRefs}
     * returns (v1; v0 with v2 metadata under a name; v0 with a URL prefix of 100000 characters,
     * several pieces of at most 64 KiB). What the stream throws comes back as it was (an
     * IOException, a RuntimeException), after one write; a failing store is a ShardException
     * with the store's exception as its cause; argument errors write nothing.
     */
    @Test
    public void writeKerchunkRefsStreamsTheSameText() throws Exception {
        String longUrl = URL + "/" + "u".repeat(100000 - URL.length() - 1);
        try (ShardArray array = openDir(dir)) {
            PieceStream out = new PieceStream();
            array.writeKerchunkRefs(out, URL);
            assertEquals(array.kerchunkRefs(URL), out.bytes.toString(StandardCharsets.UTF_8));
            out = new PieceStream();
            array.writeKerchunkRefs(out, URL, ShardArray.REFS_JSON_V0, 2, "img");
            String v2 = array.kerchunkRefs(URL, ShardArray.REFS_JSON_V0, 2, "img");
            assertEquals(v2, out.bytes.toString(StandardCharsets.UTF_8));
            assertTrue(v2.contains("\"img/.zarray\""));
            out = new PieceStream();
            array.writeKerchunkRefs(out, longUrl, ShardArray.REFS_JSON_V0, 3, null);
            assertEquals(array.kerchunkRefs(longUrl, ShardArray.REFS_JSON_V0, 3, null),
                    out.bytes.toString(StandardCharsets.UTF_8));
            assertTrue(out.pieces.toString(), out.pieces.size() >= 3);
            for (int n : out.pieces) {
                assertTrue(out.pieces.toString(), n > 0 && n <= 65536);
            }

            IOException full = new IOException("disk full");
            RuntimeException odd = new IllegalStateException("stream closed");
            for (Exception thrown : new Exception[] {full, odd}) {
                int[] writes = {0};
                java.io.OutputStream failing = new java.io.OutputStream() {
                    @Override
                    public void write(int b) {
                        throw new AssertionError("the library writes arrays");
                    }

                    @Override
                    public void write(byte[] b, int off, int len) throws IOException {
                        writes[0]++;
                        if (thrown instanceof IOException) {
                            throw (IOException) thrown;
                        }
                        throw (RuntimeException) thrown;
                    }
                };
                Exception e = assertThrows(Exception.class,
                        () -> array.writeKerchunkRefs(failing, longUrl, 0, 3, null));
                assertSame(thrown, e);
                assertEquals(1, writes[0]);
            }

            PieceStream none = new PieceStream();
            expect(Status.INVALID_ARGUMENT, () -> array.writeKerchunkRefs(none, URL, 2, 3, null));
            expect(Status.INVALID_ARGUMENT, () -> array.writeKerchunkRefs(none, URL, 1, 4, null));
            assertEquals(0, none.bytes.size());
            assertThrows(NullPointerException.class, () -> array.writeKerchunkRefs(null, URL));
            assertThrows(NullPointerException.class, () -> array.writeKerchunkRefs(none, null));
        }
        IOException boom = new IOException("store down");
        try (ShardArray array = fixture(key -> {
            throw boom;
        })) {
            PieceStream out = new PieceStream();
            ShardException e = expect(Status.IO, () -> array.writeKerchunkRefs(out, URL));
            assertSame(boom, e.getCause());
            assertEquals(0, out.bytes.size()); // every shard fails: not even the metadata
        }
        ShardArray closed = openDir(dir);
        closed.close();
        assertThrows(IllegalStateException.class,
                () -> closed.writeKerchunkRefs(new PieceStream(), URL));
    }

    /**
     * A ShardIO over a {@link MemoryShardIO} that counts its calls into {@code calls}:
     * {read, readSuffix, size, write}. Without readSuffix (the library then reads an index at
     * the end with size and read); {@link SuffixCountingIO} offers it.
     */
    private static class CountingIO implements ShardIO {
        final MemoryShardIO inner;
        final int[] calls;

        CountingIO(MemoryShardIO inner, int[] calls) {
            this.inner = inner;
            this.calls = calls;
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            calls[0]++;
            return inner.read(offset, dst);
        }

        @Override
        public long size() {
            calls[2]++;
            return inner.size();
        }

        @Override
        public void write(long offset, ByteBuffer src) {
            calls[3]++;
            inner.write(offset, src);
        }
    }

    private static final class SuffixCountingIO extends CountingIO {
        SuffixCountingIO(MemoryShardIO inner, int[] calls) {
            super(inner, calls);
        }

        @Override
        public long readSuffix(ByteBuffer dst) {
            calls[1]++;
            return inner.readSuffix(dst);
        }
    }

    /** A store over another whose objects count their calls, per key ({@link CountingIO}). */
    private static final class CountingStore implements ShardStore {
        final MemoryShardStore inner;
        final boolean suffix;
        final Map<String, int[]> calls = new TreeMap<>();

        CountingStore(MemoryShardStore inner, boolean suffix) {
            this.inner = inner;
            this.suffix = suffix;
        }

        @Override
        public ShardIO open(String key) {
            int[] c = calls.computeIfAbsent(key, k -> new int[4]);
            MemoryShardIO io = inner.open(key);
            return suffix ? new SuffixCountingIO(io, c) : new CountingIO(io, c);
        }

        /** key -> "read=R suffix=S size=Z write=W", for messages that show every count. */
        Map<String, String> shown() {
            Map<String, String> out = new TreeMap<>();
            calls.forEach((k, c) -> out.put(k, counts(c[0], c[1], c[2], c[3])));
            return out;
        }
    }

    private static String counts(int read, int suffix, int size, int write) {
        return "read=" + read + " suffix=" + suffix + " size=" + size + " write=" + write;
    }

    /**
     * {@link ShardArray#kerchunkRefs} reads each shard's index once (C
     * {@code shard_array_refs_write}), not twice as a size query and a copy did. The array is
     * {@link TestSupport#ZARR_JSON} (40x32, 16x16 shards of 4x4 inner chunks: a 3x2 shard
     * grid, keys c/0/0 .. c/2/1), with 4 of its 6 shards written: c/0/0 (1 inner chunk),
     * c/1/1 (2) and c/2/0, c/2/1 (8 each, the last shard row is 8 rows high); c/0/1 and c/1/0
     * do not exist. Counted per key during one call, by hand from the reader's one-read open:
     * <ul>
     * <li>index at the end, a ShardIO with readSuffix: one readSuffix per key (the 2 missing
     *     objects answer -1), no read, no size;
     * <li>index at the end, no readSuffix: size and one read per existing object; a missing
     *     one answers size -1 and is not read;
     * <li>index at the start: one read per key (a missing object's throws NotFound), no size.
     * </ul>
     * So exactly one index read per existing shard object, 4 in all, and never a write; the
     * same with a URL prefix long enough that the text (about 1.9 MB) comes in many pieces.
     */
    @Test
    public void kerchunkRefsReadsEachIndexOnce() throws Exception {
        List<String> existing = List.of("c/0/0", "c/1/1", "c/2/0", "c/2/1");
        List<String> missing = List.of("c/0/1", "c/1/0");
        String atStart = ZARR_JSON.replace("\"index_codecs\"",
                "\"index_location\": \"start\", \"index_codecs\"");
        assertNotEquals(ZARR_JSON, atStart);
        // {zarr.json, readSuffix offered, {read, suffix, size} per existing key, ... per missing}
        Object[][] cases = {
            {ZARR_JSON, true, new int[] {0, 1, 0}, new int[] {0, 1, 0}},
            {ZARR_JSON, false, new int[] {1, 0, 1}, new int[] {0, 0, 1}},
            {atStart, true, new int[] {1, 0, 0}, new int[] {1, 0, 0}},
            {atStart, false, new int[] {1, 0, 0}, new int[] {1, 0, 0}},
        };
        for (Object[] c : cases) {
            String json = (String) c[0];
            boolean suffix = (Boolean) c[1];
            int[] onExisting = (int[]) c[2];
            int[] onMissing = (int[]) c[3];
            String what = (json.equals(ZARR_JSON) ? "index at the end" : "index at the start")
                    + (suffix ? ", readSuffix" : ", no readSuffix");
            MemoryShardStore backing = new MemoryShardStore();
            try (ShardArray writer = ShardArray.open(json, backing)) {
                writer.writeRegion(new long[] {0, 0}, new long[] {4, 4}, values(16));
                writer.writeRegion(new long[] {16, 16}, new long[] {8, 4}, values(32));
                writer.writeRegion(new long[] {32, 0}, new long[] {8, 32}, values(256));
            }
            assertEquals(what, existing, backing.keys());
            CountingStore counting = new CountingStore(backing, suffix);
            Map<String, String> want = new TreeMap<>();
            for (String k : existing) {
                want.put(k, counts(onExisting[0], onExisting[1], onExisting[2], 0));
            }
            for (String k : missing) {
                want.put(k, counts(onMissing[0], onMissing[1], onMissing[2], 0));
            }
            // A short prefix (the text in one piece) and one of 100000 characters: some 1.9 MB
            // of text, handed over in 64 KiB pieces into a native buffer that grows.
            for (String url : new String[] {URL, URL + "/" + "u".repeat(100000 - URL.length() - 1)}) {
                try (ShardArray array = ShardArray.open(json, counting)) {
                    counting.calls.clear();
                    String v0 = array.kerchunkRefs(url, ShardArray.REFS_JSON_V0, 3, null);
                    assertEquals(what, want, counting.shown());
                    // One index read per existing object: a read or a suffix read, never both.
                    int indexReads = 0;
                    for (String k : existing) {
                        int[] n = counting.calls.get(k);
                        assertEquals(what + ": " + k, 1, n[0] + n[1]);
                        indexReads += n[0] + n[1];
                    }
                    assertEquals(what, existing.size(), indexReads);
                    // The set itself: 1 + 2 + 8 + 8 inner chunks and the zarr.json.
                    Map<String, Object> refs = jsonObject(parseJson(v0));
                    assertEquals(what + ": " + refs.keySet(), 20, refs.size());
                    assertEquals(url + "/c/0/0", ((List<?>) refs.get("c/0/0")).get(0));
                    assertEquals(url + "/c/1/1", ((List<?>) refs.get("c/5/4")).get(0));
                    assertEquals(url + "/c/2/1", ((List<?>) refs.get("c/9/7")).get(0));
                    assertTrue(refs.get("zarr.json") instanceof String);
                    assertTrue(what, url.equals(URL) || v0.length() > 19 * 100000);
                }
            }
        }
    }

    /** n uint16 values 1..n (none the fill value 0, so every inner chunk written is stored). */
    private static short[] values(int n) {
        short[] v = new short[n];
        for (int k = 0; k < n; k++) {
            v[k] = (short) (k + 1);
        }
        return v;
    }

    /** What {@code zarrshard refs --format parquet} writes for the fixture: path to bytes. */
    private static Map<String, byte[]> cliParquet(String url, String name, long recordSize)
            throws Exception {
        String cli = System.getProperty("zarrshard.cli");
        assertNotNull("set -Dzarrshard.cli=PATH (target/release/zarrshard)", cli);
        Path out = tempDir().resolve("cli-" + name + "-" + recordSize);
        Process p = new ProcessBuilder(cli, "refs", dir.toString(), "--format", "parquet",
                "--url-prefix", url, "-o", out.toString(), "--name", name, "--record-size",
                Long.toString(recordSize)).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue("zarrshard refs timed out", p.waitFor(60, TimeUnit.SECONDS));
        assertEquals(output, 0, p.exitValue());
        return tree(out, new TreeSet<>());
    }

    /**
     * The regular files under {@code root}: path relative to it ({@code "fx/refs.0.parq"}) to
     * bytes. Every entry below {@code root} (files, folders, anything else) goes to
     * {@code entries}.
     */
    private static Map<String, byte[]> tree(Path root, Set<String> entries) throws IOException {
        Map<String, byte[]> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path f : (Iterable<Path>) walk::iterator) {
                if (f.equals(root)) {
                    continue;
                }
                String rel = root.relativize(f).toString().replace('\\', '/');
                entries.add(rel);
                if (Files.isRegularFile(f)) {
                    files.put(rel, Files.readAllBytes(f));
                }
            }
        }
        return files;
    }

    private static boolean parquetMagic(byte[] b) {
        byte[] magic = "PAR1".getBytes(StandardCharsets.US_ASCII);
        return b.length > 8 && java.util.Arrays.equals(b, 0, 4, magic, 0, 4)
                && java.util.Arrays.equals(b, b.length - 4, b.length, magic, 0, 4);
    }

    @Test
    public void parquetObjectsEqualTheCommandLineTools() throws Exception {
        String url = "file://" + dir.toAbsolutePath();
        try (ShardArray array = openDir(dir)) {
            // 16 chunks in the v2 grid: record sizes 5, 1 and 10000 give 4, 16 and 1 files.
            for (long recordSize : new long[] {5, 1, 10000}) {
                int files = (int) ((16 + recordSize - 1) / recordSize);
                MemoryShardStore out = new MemoryShardStore();
                array.kerchunkRefsParquet(url, "fx", recordSize, out);
                List<String> keys = new ArrayList<>();
                keys.add(".zmetadata");
                for (int n = 0; n < files; n++) {
                    keys.add("fx/refs." + n + ".parq");
                }
                keys.sort(null);
                assertEquals(keys, out.keys());
                assertEquals("one open per object", files + 1, out.opens());
                Map<String, byte[]> cli = cliParquet(url, "fx", recordSize);
                assertEquals(keys, new ArrayList<>(cli.keySet()));
                for (String k : keys) {
                    byte[] got = out.open(k).bytes();
                    assertTrue(k, got.length > 0);
                    if (k.endsWith(".parq")) {
                        assertTrue(k + " is not a Parquet file", parquetMagic(got));
                    }
                    assertArrayEquals(k + " differs from zarrshard refs", cli.get(k), got);
                }
                Map<String, Object> zmeta = jsonObject(parseJson(
                        new String(out.open(".zmetadata").bytes(), StandardCharsets.UTF_8)));
                assertEquals(recordSize, zmeta.get("record_size"));
                Map<String, Object> docs = jsonObject(zmeta.get("metadata"));
                assertTrue(docs.keySet().toString(), docs.containsKey(".zgroup"));
                Map<String, Object> zarray = jsonObject(docs.get("fx/.zarray"));
                assertEquals(List.of(64L, 64L), zarray.get("shape"));
                assertEquals(List.of(16L, 16L), zarray.get("chunks"));
                if (recordSize == 5) {
                    writeForRunSh(array, url, out);
                }
                // Into the library's directory store: the same bytes as files.
                Path lib = tempDir().resolve("lib.parq");
                try (Store store = Store.directory(lib, true)) {
                    array.kerchunkRefsParquetInto(url, "fx", recordSize, store);
                }
                assertSameFiles(out, lib);
            }
        }
    }

    /**
     * The files {@code d} holds are exactly the objects of {@code want}, byte for byte, plus
     * their folder {@code fx}: no temporary left behind, nothing else.
     */
    private static void assertSameFiles(MemoryShardStore want, Path d) throws IOException {
        Set<String> entries = new TreeSet<>();
        Map<String, byte[]> files = tree(d, entries);
        assertEquals(d.toString(), want.keys(), new ArrayList<>(files.keySet()));
        Set<String> wantEntries = new TreeSet<>(want.keys());
        wantEntries.add("fx");
        assertEquals(d + " holds exactly the set's files", wantEntries, entries);
        for (String k : want.keys()) {
            assertArrayEquals(d + ": " + k + " differs from the store's object",
                    want.open(k).bytes(), files.get(k));
        }
    }

    /**
     * {@link ShardArray#kerchunkRefsParquetDir} writes, for record sizes 5, 1 and 10000, exactly
     * the files whose bytes {@link ShardArray#kerchunkRefsParquet} writes as objects of a
     * {@link MemoryShardStore} for the same arguments (which the test above holds equal to the
     * command line tool's): into a directory that does not exist (below a missing parent), an
     * empty one, and a relative path. With {@code -Dzarrshard.refs.out} the set with record
     * size 5 is also written there as {@code refs-dir.parq/}, for run.sh's fsspec check.
     */
    @Test
    public void parquetDirFilesEqualTheStoreObjects() throws Exception {
        String url = "file://" + dir.toAbsolutePath();
        Path base = tempDir();
        try (ShardArray array = openDir(dir)) {
            for (long recordSize : new long[] {5, 1, 10000}) {
                MemoryShardStore out = new MemoryShardStore();
                array.kerchunkRefsParquet(url, "fx", recordSize, out);
                assertEquals((16 + recordSize - 1) / recordSize + 1, out.keys().size());
                Path missing = base.resolve("missing-" + recordSize).resolve("refs.parq");
                Path empty = Files.createDirectory(base.resolve("empty-" + recordSize));
                // Relative to the working directory: resolved as Java resolves it.
                Path relative = Path.of("").toAbsolutePath()
                        .relativize(base.resolve("relative-" + recordSize));
                assertFalse(relative.isAbsolute());
                for (Path d : List.of(missing, empty, relative)) {
                    array.kerchunkRefsParquetDir(url, "fx", recordSize, d);
                    assertSameFiles(out, d);
                }
            }
            String refsOut = System.getProperty("zarrshard.refs.out");
            if (refsOut != null) {
                Path d = Path.of(refsOut).resolve("refs-dir.parq");
                array.kerchunkRefsParquetDir(url, "fx", 5, d);
                MemoryShardStore out = new MemoryShardStore();
                array.kerchunkRefsParquet(url, "fx", 5, out);
                assertSameFiles(out, d);
            }
        }
    }

    /** The names in a directory, sorted. */
    private static List<String> listing(Path d) throws IOException {
        try (Stream<Path> list = Files.list(d)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /**
     * {@link ShardArray#kerchunkRefsParquetDir}'s errors: a non-empty directory and a regular
     * file refused (INVALID_ARGUMENT) before any shard is read and left as they were; a path
     * under a regular file: IO with the OS's ENOTDIR as the I/O code (when the library creates
     * it, after the indexes are read); the library's argument checks; null arguments, a
     * negative record size, a path of another file system; a store that throws (its exception
     * the cause, nothing created); an array without sharding; a closed array.
     */
    @Test
    public void parquetDirErrors() throws Exception {
        Path base = tempDir();
        Path full = Files.createDirectory(base.resolve("full"));
        Files.writeString(full.resolve("keep"), "x");
        Path file = Files.writeString(base.resolve("file"), "x");
        Path unused = base.resolve("unused");
        try (ShardArray array = openDir(dir)) {
            ShardException e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", 5, full));
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("not an empty directory"));
            assertEquals(List.of("keep"), listing(full));
            assertEquals("x", Files.readString(full.resolve("keep")));
            e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", 5, file));
            assertTrue(e.libraryMessage(), e.libraryMessage().contains("not an empty directory"));
            assertEquals("x", Files.readString(file));
            e = expect(Status.IO, () -> array.kerchunkRefsParquetDir(URL, "fx", 5,
                    file.resolve("sub")));
            assertEquals(e.toString(), 20, e.ioCode()); // ENOTDIR
            assertNull(e.getCause());
            assertEquals("x", Files.readString(file));
            // The library's checks, before it creates anything.
            e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", 0, unused));
            e = expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquetDir(URL, "", 5, unused));
            assertThrows(IllegalArgumentException.class,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", -1, unused));
            assertThrows(NullPointerException.class,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", 5, null));
            assertThrows(NullPointerException.class,
                    () -> array.kerchunkRefsParquetDir(URL, null, 5, unused));
            assertThrows(NullPointerException.class,
                    () -> array.kerchunkRefsParquetDir(null, "fx", 5, unused));
            try (FileSystem zip = FileSystems.newFileSystem(base.resolve("refs.zip"),
                    Map.of("create", "true"))) {
                IllegalArgumentException iae = assertThrows(IllegalArgumentException.class,
                        () -> array.kerchunkRefsParquetDir(URL, "fx", 5, zip.getPath("/refs")));
                assertTrue(iae.getMessage(), iae.getMessage().contains("default file system"));
            }
            assertFalse(Files.exists(unused));
        }
        // A store whose reads throw: the directory is checked before any shard is read; a
        // failed read is IO with that exception as the cause, and nothing is created.
        IOException boom = new IOException("store down");
        int[] opens = {0};
        try (ShardArray array = fixture(key -> {
            opens[0]++;
            throw boom;
        })) {
            expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefsParquetDir(URL, "fx", 5, full));
            expect(Status.INVALID_ARGUMENT, () -> array.kerchunkRefsParquetDir(URL, "fx", 5, file));
            assertEquals("no shard read for a refused directory", 0, opens[0]);
            ShardException e = expect(Status.IO,
                    () -> array.kerchunkRefsParquetDir(URL, "fx", 5, unused));
            assertSame(boom, e.getCause());
            assertEquals(ShardException.IO_JAVA_EXCEPTION, e.ioCode());
            assertTrue(opens[0] > 0);
            assertFalse(Files.exists(unused));
            // A path under a regular file: ENOTDIR, found before any shard is read.
            int before = opens[0];
            e = expect(Status.IO, () -> array.kerchunkRefsParquetDir(URL, "fx", 5,
                    file.resolve("sub")));
            assertNull(e.getCause());
            assertEquals(20, e.ioCode());
            assertEquals("no shard read for a path under a file", before, opens[0]);
        }
        String plain = "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8, 8],"
                + " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\":"
                + " {\"chunk_shape\": [4, 4]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
                + " \"fill_value\": 3, \"codecs\": [" + BYTES_LE + "]}";
        try (ShardArray array = ShardArray.open(plain, new MemoryShardStore())) {
            expect(Status.INVALID_ARGUMENT,
                    () -> array.kerchunkRefsParquetDir(URL, "p", 5, unused));
            assertFalse(Files.exists(unused));
        }
        ShardArray closed = openDir(dir);
        closed.close();
        assertThrows(IllegalStateException.class,
                () -> closed.kerchunkRefsParquetDir(URL, "fx", 5, unused));
        assertEquals(List.of("file", "full", "refs.zip"), listing(base));
    }

    /** With -Dzarrshard.refs.out=DIR: refs.json (v1) and refs.parq/ for run.sh's fsspec check. */
    private static void writeForRunSh(ShardArray array, String url, MemoryShardStore parquet)
            throws IOException {
        String d = System.getProperty("zarrshard.refs.out");
        if (d == null) {
            return;
        }
        Path out = Path.of(d);
        Files.createDirectories(out);
        Files.writeString(out.resolve("refs.json"), array.kerchunkRefs(url));
        Path pq = out.resolve("refs.parq");
        for (String k : parquet.keys()) {
            Path f = pq.resolve(k);
            Files.createDirectories(f.getParent());
            Files.write(f, parquet.open(k).bytes());
        }
    }
}
