import io.zarrshard.ArraySpec;
import io.zarrshard.Shard;
import io.zarrshard.ShardArray;
import io.zarrshard.ShardCodec;
import io.zarrshard.ShardException;
import io.zarrshard.Store;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;

/**
 * Write a 64x64 uint16 Zarr v3 array (2x2 shards of 32x32, inner chunks 8x8, zstd, crc32c
 * index) with zarrshard from Java, as an acquisition does: create it empty in a directory
 * (the library's directory store), append two blocks of 32 rows, flush; then read one inner
 * chunk back from its shard file, and a region across all four shards through the array.
 *
 *     java -cp classes:example-classes -Djava.library.path=lib Example OUT_DIR
 *
 * Value at (row, col) is (row * 64 + col) % 65536, except the lower right shard, which is all
 * fill value (0): the library does not store it at all.
 */
public final class Example {
    static short value(long row, long col) {
        return row >= 32 && col >= 32 ? 0 : (short) (row * 64 + col);
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : "example.zarr");
        ArraySpec spec = new ArraySpec(new long[] {0, 64}, new long[] {8, 8}, "uint16")
                .shardShape(32, 32).compressionLevel(1).dimensionNames("y", "x");

        try (Store store = Store.directory(dir, true);
                ShardArray array = ShardArray.create(store, "", spec, false)) {
            for (int block = 0; block < 2; block++) {
                short[] rows = new short[32 * 64];
                for (int r = 0; r < 32; r++) {
                    for (int c = 0; c < 64; c++) {
                        rows[r * 64 + c] = value(block * 32 + r, c);
                    }
                }
                array.append(0, new long[] {32, 64}, rows);
            }
            array.setAttributes("{\"description\": \"zarrshard Java example\"}");
            array.flush(); // zarr.json now says 64 x 64; close would too, but hides errors
            System.out.printf("shape %d x %d%n", array.shape()[0], array.shape()[1]);

            // Read inner chunk (1, 2) of shard (0, 1) back from its file: rows 8..15, columns
            // 48..55.
            try (ShardCodec codec = array.codec();
                    Shard shard = Shard.open(codec, dir.resolve(codec.shardKey(0, 1)),
                            Shard.Mode.READ)) {
                ByteBuffer b = ByteBuffer.wrap(shard.readChunk(1, 2)).order(ByteOrder.nativeOrder());
                short first = b.getShort(0);
                System.out.printf("shard c/0/1, inner chunk (1, 2): first value %d (expected %d), %s%n",
                        first, value(8, 48), shard.chunkInfo(1, 2));
                if (first != value(8, 48)) {
                    throw new AssertionError("read back the wrong value");
                }
            }

            // Rows 24..39 and columns 24..39 cross all four shards, the absent one included
            // (it reads as the fill value).
            short[] region = array.readRegionShorts(new long[] {24, 24}, new long[] {16, 16});
            for (int r = 0; r < 16; r++) {
                for (int c = 0; c < 16; c++) {
                    if (region[r * 16 + c] != value(24 + r, 24 + c)) {
                        throw new AssertionError("region: wrong value at (" + (24 + r) + ", "
                                + (24 + c) + ")");
                    }
                }
            }
            System.out.printf("region rows 24..39, columns 24..39: %d values as written%n",
                    region.length);

            // An error names what is wrong: the array exists already.
            try {
                ShardArray.create(store, "", spec, false).close();
                throw new AssertionError("created twice");
            } catch (ShardException e) {
                System.out.println("as expected: " + e.getMessage());
            }
        }
        System.out.println("wrote " + dir);
    }
}
