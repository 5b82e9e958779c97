package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.Test;

public class ConcurrencyTest {
    private static final int THREADS = 8;

    /** Counts callbacks in flight, to see that reads really overlap. */
    static final class OverlapIO extends TestSupport.ForwardingIO {
        final AtomicInteger inFlight = new AtomicInteger(), maxInFlight = new AtomicInteger();

        OverlapIO(ShardIO inner) {
            super(inner);
        }

        @Override
        public int read(long offset, ByteBuffer dst) throws IOException {
            int n = inFlight.incrementAndGet();
            maxInFlight.accumulateAndGet(n, Math::max);
            try {
                Thread.onSpinWait();
                return super.read(offset, dst);
            } finally {
                inFlight.decrementAndGet();
            }
        }
    }

    private static void readConcurrently(ShardCodec codec, ShardIO io) throws Exception {
        try (Shard s = Shard.open(codec, io, Shard.Mode.READ)) {
            readConcurrently(s);
        }
    }

    /** THREADS threads read every chunk of the standard shard through {@code s} at once. */
    private static void readConcurrently(Shard s) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(THREADS);
        CyclicBarrier start = new CyclicBarrier(THREADS);
        List<Future<Integer>> results = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            final int seed = t;
            results.add(pool.submit(() -> {
                start.await();
                int checked = 0;
                ByteBuffer d = ByteBuffer.allocateDirect(CHUNK_NBYTES);
                List<long[]> all = allChunks();
                for (int round = 0; round < 200; round++) {
                    long[] c = all.get((round * 7 + seed) % all.size());
                    byte[] want = written(c) ? chunk(c, 1) : zeros();
                    assertArrayEquals(want, s.readChunk(c));
                    d.clear();
                    s.readChunk(c, d);
                    assertEquals(ByteBuffer.wrap(want), d.flip());
                    checked++;
                }
                return checked;
            }));
        }
        int total = 0;
        for (Future<Integer> f : results) {
            total += f.get(60, TimeUnit.SECONDS);
        }
        pool.shutdown();
        assertEquals(THREADS * 200, total);
    }

    @Test
    public void eightThreadsReadOneMemoryShard() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            OverlapIO io = new OverlapIO(mem);
            readConcurrently(codec, io);
            // Not a hard guarantee on a loaded machine; report rather than fail.
            System.out.println("ConcurrencyTest: max ShardIO.read calls in flight: "
                    + io.maxInFlight.get());
        }
    }

    @Test
    public void eightThreadsReadOneFileShard() throws Exception {
        Path path = tempDir().resolve("shard");
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_STREAMING, 0, 1, true);
            Files.write(path, mem.bytes());
            try (Shard s = Shard.open(codec, path, Shard.Mode.READ)) {
                readConcurrently(s);
            }
        }
    }

    /** close() while 8 threads read: every read succeeds or sees IllegalStateException. */
    @Test
    public void closeWhileReading() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO mem = new MemoryShardIO();
            writeStandard(codec, mem, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            for (int round = 0; round < 20; round++) {
                Shard s = Shard.open(codec, mem, Shard.Mode.READ);
                ExecutorService pool = Executors.newFixedThreadPool(THREADS);
                CountDownLatch started = new CountDownLatch(THREADS);
                List<Future<Integer>> results = new ArrayList<>();
                for (int t = 0; t < THREADS; t++) {
                    results.add(pool.submit(() -> {
                        started.countDown();
                        int ok = 0;
                        long[] c = {1, 1};
                        for (;;) {
                            try {
                                assertArrayEquals(chunk(c, 1), s.readChunk(c));
                                ok++;
                            } catch (IllegalStateException closed) {
                                return ok;
                            }
                        }
                    }));
                }
                started.await();
                Thread.sleep(2);
                s.close();
                for (Future<Integer> f : results) {
                    f.get(60, TimeUnit.SECONDS);
                }
                pool.shutdown();
                assertTrue(s.isClosed());
            }
        }
    }

    /** A write handle is exclusive: a second writer while one is inside write() gets BUSY. */
    @Test
    public void concurrentWriteIsBusy() throws Exception {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            CountDownLatch inWrite = new CountDownLatch(1), release = new CountDownLatch(1);
            ShardIO slow = new TestSupport.ForwardingIO(new MemoryShardIO()) {
                @Override
                public void write(long offset, ByteBuffer src) throws IOException {
                    inWrite.countDown();
                    try {
                        release.await();
                    } catch (InterruptedException e) {
                        throw new IOException(e);
                    }
                    super.write(offset, src);
                }
            };
            try (Shard w = Shard.open(codec, slow, Shard.Mode.WRITE_STREAMING)) {
                ExecutorService pool = Executors.newSingleThreadExecutor();
                Future<?> first = pool.submit(() -> w.writeChunk(new long[] {0, 0}, chunk(new long[] {0, 0}, 1)));
                assertTrue(inWrite.await(30, TimeUnit.SECONDS));
                ShardException e = assertThrows(ShardException.class,
                        () -> w.writeChunk(new long[] {1, 1}, chunk(new long[] {1, 1}, 1)));
                assertEquals(Status.BUSY, e.status());
                release.countDown();
                first.get(30, TimeUnit.SECONDS);
                pool.shutdown();
                w.writeChunk(new long[] {1, 1}, chunk(new long[] {1, 1}, 1));
                assertTrue(w.finalizeShard() > 0);
            }
        }
    }
}
