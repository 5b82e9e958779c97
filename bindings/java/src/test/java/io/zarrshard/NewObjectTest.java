package io.zarrshard;

import static io.zarrshard.TestSupport.*;
import static org.junit.Assert.*;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import org.junit.Test;

/**
 * A ShardIO with the new-object methods (C {@code create_new} … {@code discard_new}): a buffered
 * shard is a new object committed with the bytes the in-place path writes; a failing
 * {@code writeNew} or {@code commitNew} leaves the old object.
 */
public class NewObjectTest {

    /** A MemoryShardIO whose whole objects are built aside and set at commitNew. */
    static final class NewObjectIO extends TestSupport.ForwardingIO {
        final MemoryShardIO mem;
        byte[] next = new byte[0];
        int begins, commits, discards, inPlace;
        String fail = "";

        NewObjectIO(MemoryShardIO mem) {
            super(mem);
            this.mem = mem;
        }

        @Override
        public void write(long offset, ByteBuffer src) throws IOException {
            inPlace++;
            super.write(offset, src);
        }

        @Override
        public void beginNew() {
            begins++;
            next = new byte[0];
        }

        @Override
        public void writeNew(long offset, ByteBuffer src) throws IOException {
            if (fail.equals("writeNew")) {
                throw new IOException("no space for the new object");
            }
            int end = Math.toIntExact(offset + src.remaining());
            if (next.length < end) {
                next = Arrays.copyOf(next, end);
            }
            src.get(next, (int) offset, src.remaining());
        }

        @Override
        public void commitNew(long length) throws IOException {
            commits++;
            if (fail.equals("commitNew")) {
                throw new IOException("rename failed");
            }
            if (length != next.length) {
                throw new IOException("wrong length");
            }
            mem.write(0, ByteBuffer.wrap(next));
            mem.truncate(length);
        }

        @Override
        public void discardNew() {
            discards++;
            next = new byte[0];
        }
    }

    @Test
    public void aBufferedShardIsANewObjectWithTheInPlaceBytes() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO plain = new MemoryShardIO();
            writeStandard(codec, plain, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            NewObjectIO io = new NewObjectIO(new MemoryShardIO());
            long size = writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            assertArrayEquals(plain.bytes(), io.mem.bytes());
            assertEquals(plain.bytes().length, size);
            assertEquals(1, io.begins);
            assertEquals(1, io.commits);
            assertEquals(0, io.discards);
            assertEquals("nothing written in place", 0, io.inPlace);
            checkStandard(codec, io, 1);
        }
    }

    @Test
    public void aFailureBeforeTheCommitKeepsTheOldObject() {
        try (ShardCodec codec = codec(CFG_ZSTD_END)) {
            MemoryShardIO before = new MemoryShardIO();
            writeStandard(codec, before, Shard.Mode.WRITE_BUFFERED, 0, 1, false);
            byte[] old = before.bytes();
            for (String where : new String[] {"writeNew", "commitNew"}) {
                NewObjectIO io = new NewObjectIO(new MemoryShardIO(old));
                io.fail = where;
                ShardException e = assertThrows(ShardException.class,
                        () -> writeStandard(codec, io, Shard.Mode.WRITE_BUFFERED, 0, 2, false));
                assertEquals(where, Status.IO, e.status());
                assertTrue(where, e.getCause() instanceof IOException);
                assertArrayEquals(where + ": the old object", old, io.mem.bytes());
                assertEquals(where, where.equals("writeNew") ? 1 : 0, io.discards);
                assertEquals(where, where.equals("commitNew") ? 1 : 0, io.commits);
                assertEquals(where, 0, io.inPlace);
            }
        }
    }
}
