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

    /**
     * A strict JSON parser for checking the library's JSON output: objects as
     * {@link java.util.LinkedHashMap} (a duplicate key is an error), arrays as {@link List},
     * strings, integers as {@link Long}, other numbers as {@link Double}, booleans, null.
     * Anything else, or text after the value, throws {@link IllegalArgumentException}.
     */
    static Object parseJson(String text) {
        JsonParser p = new JsonParser(text);
        Object v = p.value();
        p.ws();
        if (p.i != text.length()) {
            throw p.error("text after the value");
        }
        return v;
    }

    @SuppressWarnings("unchecked")
    static java.util.Map<String, Object> jsonObject(Object v) {
        assertTrue("not a JSON object: " + v, v instanceof java.util.Map);
        return (java.util.Map<String, Object>) v;
    }

    private static final class JsonParser {
        final String s;
        int i;

        JsonParser(String s) {
            this.s = s;
        }

        IllegalArgumentException error(String what) {
            return new IllegalArgumentException("JSON: " + what + " at " + i + ": "
                    + s.substring(Math.max(0, i - 20), Math.min(s.length(), i + 20)));
        }

        void ws() {
            while (i < s.length() && " \t\r\n".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
        }

        void expect(char c) {
            ws();
            if (i >= s.length() || s.charAt(i) != c) {
                throw error("expected '" + c + "'");
            }
            i++;
        }

        boolean take(String word) {
            if (s.startsWith(word, i)) {
                i += word.length();
                return true;
            }
            return false;
        }

        Object value() {
            ws();
            if (i >= s.length()) {
                throw error("unexpected end");
            }
            char c = s.charAt(i);
            if (c == '{') {
                java.util.Map<String, Object> m = new java.util.LinkedHashMap<>();
                i++;
                ws();
                if (take("}")) {
                    return m;
                }
                do {
                    ws();
                    String k = string();
                    expect(':');
                    if (m.containsKey(k)) {
                        throw error("duplicate key " + k);
                    }
                    m.put(k, value());
                    ws();
                } while (take(","));
                expect('}');
                return m;
            }
            if (c == '[') {
                List<Object> l = new ArrayList<>();
                i++;
                ws();
                if (take("]")) {
                    return l;
                }
                do {
                    l.add(value());
                    ws();
                } while (take(","));
                expect(']');
                return l;
            }
            if (c == '"') {
                return string();
            }
            if (take("true")) {
                return Boolean.TRUE;
            }
            if (take("false")) {
                return Boolean.FALSE;
            }
            if (take("null")) {
                return null;
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) {
                i++;
            }
            String num = s.substring(start, i);
            if (num.isEmpty()) {
                throw error("unexpected character");
            }
            if (num.matches("-?(0|[1-9][0-9]*)")) {
                return Long.parseLong(num);
            }
            if (!num.matches("-?(0|[1-9][0-9]*)(\\.[0-9]+)?([eE][+-]?[0-9]+)?")) {
                throw error("bad number " + num);
            }
            return Double.parseDouble(num);
        }

        String string() {
            if (i >= s.length() || s.charAt(i) != '"') {
                throw error("expected a string");
            }
            i++;
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) {
                    throw error("unterminated string");
                }
                char c = s.charAt(i++);
                if (c == '"') {
                    return b.toString();
                }
                if (c < 0x20) {
                    throw error("control character in a string");
                }
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) {
                    throw error("unterminated escape");
                }
                char e = s.charAt(i++);
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw error("short \\u escape");
                        }
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
            }
        }
    }

    /** Write the standard pattern (version v) through any ShardIO; returns finalize's size. */
    static long writeStandard(ShardCodec codec, ShardIO io, Shard.Mode mode, int flags, int v,
            boolean direct) {
        try (Shard s = Shard.open(codec, io, mode, flags)) {
            return writeStandard(s, v, direct);
        }
    }

    /** The standard chunks of version {@code v} written to {@code s}, then finalized. */
    static long writeStandard(Shard s, int v, boolean direct) {
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

    static void checkStandard(ShardCodec codec, ShardIO io, int v) {
        try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
            checkStandard(s, v);
        }
    }

    static void checkStandard(Shard s, int v) {
        for (long[] c : allChunks()) {
            assertChunk(s, c, written(c) ? chunk(c, v) : zeros());
            assertTrue(s.chunkInfo(c).empty() != written(c));
        }
    }

    /** Every regular file under {@code root}, key (joined with '/') to bytes. */
    static java.util.Map<String, byte[]> files(Path root) throws IOException {
        java.util.Map<String, byte[]> out = new java.util.TreeMap<>();
        try (java.util.stream.Stream<Path> walk = Files.walk(root)) {
            for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
                out.put(root.relativize(p).toString().replace('\\', '/'), Files.readAllBytes(p));
            }
        }
        return out;
    }

    /** The file's identity (inode on Unix; null where there is none): a rename gives a new one. */
    static Object fileKey(Path p) throws IOException {
        return Files.readAttributes(p, java.nio.file.attribute.BasicFileAttributes.class).fileKey();
    }

    /**
     * The array at the root of {@code dir} through the library's directory store (the array
     * keeps the store alive; this handle is given back at once).
     */
    static ShardArray openDir(Path dir) {
        try (Store store = Store.directory(dir, false)) {
            return ShardArray.open(store, "");
        }
    }

    /**
     * A host store holding copies of the files under {@code dir}, keyed by their relative
     * paths: for tests that count or record what a host store is asked.
     */
    static MemoryShardStore memoryCopy(Path dir) throws IOException {
        MemoryShardStore mem = new MemoryShardStore();
        try (java.util.stream.Stream<Path> walk = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
                String key = dir.relativize(p).toString().replace('\\', '/');
                mem.open(key).write(0, ByteBuffer.wrap(Files.readAllBytes(p)));
            }
        }
        return mem;
    }
}
