package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;

public class RoundTripTest {

    private static final Shard.Mode[] WRITE_MODES = {Shard.Mode.WRITE_BUFFERED,
        Shard.Mode.WRITE_STREAMING, Shard.Mode.UPDATE_APPEND, Shard.Mode.UPDATE_IN_PLACE};

    @Test
    public void codecGettersFromConfig() {
        try (ShardCodec c = codec(CFG_ZSTD_END)) {
            assertEquals(2, c.rank());
            assertArrayEquals(new long[] {16, 16}, c.shardShape());
            assertArrayEquals(new long[] {4, 4}, c.innerChunkShape());
            assertArrayEquals(new long[] {4, 4}, c.chunksPerShard());
            assertEquals(16, c.numChunks());
            assertEquals(32, c.innerChunkNbytes());
            assertEquals(260, c.indexNbytes());
            assertEquals(2, c.elementNbytes());
            assertArrayEquals(new byte[2], c.fillValue());
            assertEquals("uint16", c.dataType());
            ShardException e = assertThrows(ShardException.class, c::arrayShape);
            assertEquals(Status.INVALID_STATE, e.status());
            assertFalse(ShardCodec.libraryVersion().isEmpty());
        }
    }

    @Test
    public void codecGettersFromZarrJson() {
        try (ShardCodec c = ShardCodec.fromZarrJson(ZARR_JSON)) {
            assertArrayEquals(new long[] {40, 32}, c.arrayShape());
            assertArrayEquals(new long[] {3, 2}, c.gridShape());
            assertEquals("c/2/1", c.shardKey(2, 1));
            assertEquals(32, c.innerChunkNbytes());
            ShardException e = assertThrows(ShardException.class, () -> c.shardKey(3, 0));
            assertEquals(Status.INVALID_ARGUMENT, e.status());
        }
    }

    @Test
    public void memoryEveryModeBytes() {
        memoryEveryMode(false);
    }

    @Test
    public void memoryEveryModeDirect() {
        memoryEveryMode(true);
    }

    private void memoryEveryMode(boolean direct) {
        for (String cfg : new String[] {CFG_ZSTD_END, CFG_RAW_START}) {
            try (ShardCodec codec = codec(cfg)) {
                for (Shard.Mode mode : WRITE_MODES) {
                    MemoryShardIO io = new MemoryShardIO();
                    long size = writeStandard(codec, io, mode, 0, 1, direct);
                    assertEquals(mode + " size", io.bytes().length, size);
                    checkStandard(codec, io, 1);
                    // and the same bytes through a fresh object
                    checkStandard(codec, new MemoryShardIO(io.bytes()), 1);
                }
            }
        }
    }

    /**
     * Every write mode through the library's file I/O ({@link Shard#open(ShardCodec, Path,
     * Shard.Mode, int)}): the file holds exactly the bytes the same writes give a memory
     * object, reads back through a new Shard, and no temporary is left.
     */
    @Test
    public void fileEveryModeBytesAndDirect() throws Exception {
        Path dir = tempDir();
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            int v = 0;
            List<String> names = new ArrayList<>();
            for (Shard.Mode mode : WRITE_MODES) {
                for (boolean direct : new boolean[] {false, true}) {
                    v++;
                    String name = "c/" + mode + "/" + direct;
                    names.add(name);
                    Path path = dir.resolve(name);
                    MemoryShardIO mem = new MemoryShardIO();
                    long memSize = writeStandard(codec, mem, mode, 0, v, direct);
                    long size;
                    try (Shard s = Shard.open(codec, path, mode)) {
                        size = writeStandard(s, v, direct);
                    }
                    assertEquals(mode + " size", memSize, size);
                    assertEquals(mode + " file size", size, Files.size(path));
                    assertArrayEquals(mode + " bytes", mem.bytes(), Files.readAllBytes(path));
                    try (Shard s = Shard.open(codec, path, Shard.Mode.READ)) {
                        checkStandard(s, v);
                    }
                }
            }
            names.sort(null);
            assertEquals("no temporaries left", names, new ArrayList<>(files(dir).keySet()));
        }
    }

    /**
     * A buffered write through the library's file I/O is one new file renamed over the old one
     * at finalize: closed before finalize it leaves the old file byte for byte and no
     * temporary; finalized, the file is a new one (a new identity) with the new bytes.
     */
    @Test
    public void unfinishedBufferedWriteLeavesOldShard() throws Exception {
        Path dir = tempDir();
        Path path = dir.resolve("c/0/0");
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_BUFFERED)) {
                writeStandard(s, 1, false);
            }
            byte[] before = Files.readAllBytes(path);
            Object identity = fileKey(path);
            try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_BUFFERED)) {
                s.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 9));
                // no finalize: as if the host gave up half way
            }
            assertArrayEquals(before, Files.readAllBytes(path));
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(dir).keySet()));
            try (Shard s = Shard.open(codec, path, Shard.Mode.READ)) {
                checkStandard(s, 1);
            }
            try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_BUFFERED)) {
                writeStandard(s, 2, false);
            }
            if (identity != null) {
                assertNotEquals("renamed over, not rewritten", identity, fileKey(path));
            }
            assertEquals(List.of("c/0/0"), new ArrayList<>(files(dir).keySet()));
            try (Shard s = Shard.open(codec, path, Shard.Mode.READ)) {
                checkStandard(s, 2);
            }
        }
    }

    /** The library's file I/O reports the OS error of a file it cannot write. */
    @Test
    public void fileErrorsCarryTheOsError() throws Exception {
        Path dir = tempDir();
        Path notADir = dir.resolve("plain");
        Files.writeString(notADir, "x");
        Path path = notADir.resolve("c/0/0"); // a regular file where a directory would be
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            ShardException e = assertThrows(ShardException.class, () -> {
                try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_BUFFERED)) {
                    writeStandard(s, 1, false);
                }
            });
            assertEquals(Status.IO, e.status());
            assertEquals("ENOTDIR", 20, e.ioCode());
            assertEquals("only the regular file", List.of("plain"),
                    new ArrayList<>(files(dir).keySet()));
        }
    }

    @Test
    public void updateAppendAndInPlace() throws Exception {
        Path dir = tempDir();
        for (String cfg : new String[] {CFG_ZSTD_END, CFG_RAW_START}) {
            try (ShardCodec codec = codec(cfg)) {
                for (Shard.Mode mode : new Shard.Mode[] {Shard.Mode.UPDATE_APPEND,
                    Shard.Mode.UPDATE_IN_PLACE}) {
                    Path path = dir.resolve(mode + "-" + cfg.hashCode());
                    try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_BUFFERED)) {
                        writeStandard(s, 1, false);
                    }
                    // Change chunk (0,0), erase (0,2), fill in the formerly empty (1,0).
                    long[] a = {0, 0}, b = {0, 2}, e = {1, 0};
                    assertTrue(written(a) && written(b) && !written(e));
                    try (Shard s = Shard.open(codec, path, mode)) {
                        s.writeChunk(a, chunk(a, 7));
                        s.eraseChunk(b);
                        s.writeChunk(e, direct(chunk(e, 7)));
                        assertFalse(s.chunkInfo(e).empty());
                        s.finalizeShard();
                    }
                    try (Shard s = Shard.open(codec, path, Shard.Mode.READ)) {
                        for (long[] c : allChunks()) {
                            byte[] want = c[0] == 0 && c[1] == 0 ? chunk(c, 7)
                                    : c[0] == 0 && c[1] == 2 ? zeros()
                                            : c[0] == 1 && c[1] == 0 ? chunk(c, 7)
                                                    : written(c) ? chunk(c, 1) : zeros();
                            assertChunk(s, c, want);
                        }
                    }
                }
            }
        }
    }

    @Test
    public void flagsMortonAndStoreFill() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO c = new MemoryShardIO(), m = new MemoryShardIO();
            writeStandard(codec, c, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            writeStandard(codec, m, Shard.Mode.WRITE_BUFFERED, Shard.FLAG_MORTON_ORDER, 1, false);
            assertEquals(c.bytes().length, m.bytes().length);
            assertFalse("Morton order lays chunks out differently",
                    java.util.Arrays.equals(c.bytes(), m.bytes()));
            checkStandard(codec, m, 1);

            MemoryShardIO f = new MemoryShardIO();
            try (Shard s = Shard.open(codec, f, Shard.Mode.WRITE_STREAMING,
                    Shard.FLAG_STORE_FILL_CHUNKS)) {
                s.writeChunk(new long[] {1, 1}, zeros());
                s.finalizeShard();
            }
            try (Shard s = Shard.open(codec, f, Shard.Mode.READ)) {
                assertFalse(s.chunkInfo(1, 1).empty());
                assertTrue(s.chunkInfo(1, 2).empty());
                assertArrayEquals(zeros(), s.readChunk(1, 1));
            }
        }
    }

    @Test
    public void readChunksAndRawCopy() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO src = new MemoryShardIO();
            writeStandard(codec, src, Shard.Mode.WRITE_STREAMING, 0, 3, false);
            MemoryShardIO dst = new MemoryShardIO();
            try (Shard r = Shard.open(codec, src, Shard.Mode.READ)) {
                long[][] all = allChunks().toArray(new long[0][]);
                byte[] many = r.readChunks(all);
                for (int i = 0; i < all.length; i++) {
                    byte[] want = written(all[i]) ? chunk(all[i], 3) : zeros();
                    assertArrayEquals(want, java.util.Arrays.copyOfRange(many, i * 32, i * 32 + 32));
                }
                ByteBuffer d = ByteBuffer.allocateDirect(64);
                r.readChunks(new long[][] {{3, 3}, {0, 0}}, d);
                assertEquals(64, d.position());

                try (Shard w = Shard.open(codec, dst, Shard.Mode.WRITE_BUFFERED)) {
                    for (int i = 0; i < all.length; i++) {
                        byte[] raw = r.readChunkRaw(all[i]);
                        ChunkLocation loc = r.chunkInfo(all[i]);
                        assertEquals(loc.nbytes(), raw.length);
                        if (loc.empty()) {
                            assertEquals(0, raw.length);
                        } else if (i % 2 == 0) {
                            w.writeChunkRaw(all[i], raw);
                        } else {
                            w.writeChunkRaw(all[i], direct(raw));
                        }
                    }
                    w.finalizeShard();
                }
            }
            checkStandard(codec, dst, 3);
        }
    }

    /**
     * Shard.setCoalesceGap decides how many ShardIO reads one readChunks call makes: two chunks
     * far apart in the object are two reads with gap 0 and one read spanning both with a gap
     * wider than the bytes between them (also the default, 64 KiB, here); the values are the
     * same. Write handles refuse the setting.
     */
    @Test
    public void coalesceGapDecidesTheReadCount() {
        try (ShardCodec codec = codec(CFG_RAW_START)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            java.util.concurrent.atomic.AtomicInteger reads = new java.util.concurrent.atomic.AtomicInteger();
            java.util.List<Long> lengths = new java.util.concurrent.CopyOnWriteArrayList<>();
            ShardIO counting = new TestSupport.ForwardingIO(mem) {
                @Override
                public int read(long offset, ByteBuffer dst) throws java.io.IOException {
                    reads.incrementAndGet();
                    lengths.add((long) dst.remaining());
                    return super.read(offset, dst);
                }
            };
            long[] a = {0, 0}, b = {3, 3};
            byte[] want = new byte[2 * CHUNK_NBYTES];
            System.arraycopy(chunk(a, 1), 0, want, 0, CHUNK_NBYTES);
            System.arraycopy(chunk(b, 1), 0, want, CHUNK_NBYTES, CHUNK_NBYTES);
            try (Shard r = Shard.open(codec, counting, Shard.Mode.READ)) {
                ChunkLocation la = r.chunkInfo(a), lb = r.chunkInfo(b);
                long between = lb.offset() - (la.offset() + la.nbytes());
                assertTrue("chunks far apart: " + between, between >= 8 * CHUNK_NBYTES);
                reads.set(0);
                assertArrayEquals(want, r.readChunks(a, b)); // the default gap, 65536
                assertEquals(1, reads.get());
                r.setCoalesceGap(0);
                reads.set(0);
                lengths.clear();
                assertArrayEquals(want, r.readChunks(a, b));
                assertEquals(2, reads.get());
                assertEquals(java.util.List.of((long) CHUNK_NBYTES, (long) CHUNK_NBYTES), lengths);
                r.setCoalesceGap(between - 1); // one byte short of bridging them
                reads.set(0);
                assertArrayEquals(want, r.readChunks(a, b));
                assertEquals(2, reads.get());
                r.setCoalesceGap(Long.MAX_VALUE);
                reads.set(0);
                lengths.clear();
                assertArrayEquals(want, r.readChunks(a, b));
                assertEquals(1, reads.get());
                assertEquals(java.util.List.of(lb.offset() + lb.nbytes() - la.offset()), lengths);
                assertThrows(IllegalArgumentException.class, () -> r.setCoalesceGap(-1));
            }
            try (Shard w = Shard.open(codec, new MemoryShardIO(), Shard.Mode.WRITE_BUFFERED)) {
                ShardException e = assertThrows(ShardException.class, () -> w.setCoalesceGap(0));
                assertEquals(e.getMessage(), Status.INVALID_STATE, e.status());
            }
            Shard closed = Shard.open(codec, mem, Shard.Mode.READ);
            closed.close();
            assertThrows(IllegalStateException.class, () -> closed.setCoalesceGap(0));
        }
    }

    @Test
    public void allFillShardIsRemoved() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO io = new MemoryShardIO(new byte[] {1, 2, 3});
            try (Shard s = Shard.open(codec, io, Shard.Mode.WRITE_BUFFERED)) {
                s.writeChunk(new long[] {0, 0}, zeros());
                assertEquals(0, s.finalizeShard());
            }
            assertFalse(io.exists());

            Path path = tempDir().resolve("gone");
            Files.write(path, new byte[] {9});
            try (Shard s = Shard.open(codec, path, Shard.Mode.WRITE_STREAMING)) {
                s.writeChunk(new long[] {0, 1}, chunk(new long[] {0, 1}, 1));
                s.eraseChunk(0, 1);
                assertEquals(0, s.finalizeShard());
            }
            assertFalse(Files.exists(path));
        }
    }

    @Test
    public void missingObjectReadsAsFill() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END);
                Shard a = Shard.open(codec, tempDir().resolve("nope"), Shard.Mode.READ);
                Shard b = Shard.open(codec, new MemoryShardIO(), Shard.Mode.READ)) {
            assertArrayEquals(zeros(), a.readChunk(2, 3));
            assertArrayEquals(zeros(), b.readChunk(2, 3));
            assertTrue(b.chunkInfo(0, 0).empty());
        }
    }

    @Test
    public void minimalShardIOUsesFallbacks() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            // No truncate/remove/readSuffix: streaming write and read (size + read) still work.
            writeStandard(codec, new MinimalIO(mem), Shard.Mode.WRITE_STREAMING, 0, 2, true);
            checkStandard(codec, new MinimalIO(mem), 2);
            // Removing an all-fill shard needs remove: not offered, so UNSUPPORTED.
            try (Shard s = Shard.open(codec, new MinimalIO(mem), Shard.Mode.WRITE_BUFFERED)) {
                ShardException e = assertThrows(ShardException.class, s::finalizeShard);
                assertEquals(Status.UNSUPPORTED, e.status());
            }
        }
    }

    @Test
    public void nonDefaultFillValue() {
        try (ShardCodec codec = ShardCodec.fromConfig(CFG_ZSTD_END, "float32", SHARD_SHAPE,
                "\"NaN\"")) {
            assertEquals(64, codec.innerChunkNbytes());
            float fill = ByteBuffer.wrap(codec.fillValue()).order(java.nio.ByteOrder.nativeOrder())
                    .getFloat();
            assertTrue(Float.isNaN(fill));
            try (Shard s = Shard.open(codec, new MemoryShardIO(), Shard.Mode.READ)) {
                ByteBuffer b = ByteBuffer.wrap(s.readChunk(0, 0)).order(java.nio.ByteOrder.nativeOrder());
                assertTrue(Float.isNaN(b.getFloat(60)));
            }
        }
    }
}
