import io.zarrshard.FileShardIO;
import io.zarrshard.Shard;
import io.zarrshard.ShardArray;
import io.zarrshard.ShardCodec;
import io.zarrshard.ShardStore;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Write a 64x64 uint16 Zarr v3 array (2x2 shards of 32x32, inner chunks 8x8, zstd, crc32c
 * index) with zarrshard from Java, shard by shard and chunk by chunk, then read one inner chunk
 * back, and a region across all four shards through the array API.
 *
 *     java -cp classes:example-classes -Djava.library.path=lib Example OUT_DIR
 *
 * Value at (row, col) is (row * 64 + col) % 65536, except the lower right shard, which is all
 * fill value (0): it is not written at all. The host (this program) writes zarr.json and turns
 * shard keys into paths; the library does the shards.
 */
public final class Example {
    static final String ZARR_JSON = """
        {"zarr_format": 3, "node_type": "array", "shape": [64, 64], "data_type": "uint16",
         "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [32, 32]}},
         "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
         "fill_value": 0,
         "codecs": [{"name": "sharding_indexed", "configuration": {
             "chunk_shape": [8, 8],
             "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
             "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                              {"name": "crc32c"}],
             "index_location": "end"}}]}
        """;

    static short value(long row, long col) {
        return row >= 32 && col >= 32 ? 0 : (short) (row * 64 + col);
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args.length > 0 ? args[0] : "example.zarr");
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("zarr.json"), ZARR_JSON);

        try (ShardCodec codec = ShardCodec.fromZarrJson(ZARR_JSON)) {
            long[] grid = codec.gridShape(), per = codec.chunksPerShard(), inner = codec.innerChunkShape();
            ByteBuffer chunk = ByteBuffer.allocateDirect(codec.innerChunkNbytes())
                    .order(ByteOrder.nativeOrder());
            for (long si = 0; si < grid[0]; si++) {
                for (long sj = 0; sj < grid[1]; sj++) {
                    Path path = dir.resolve(codec.shardKey(si, sj));
                    try (FileShardIO io = FileShardIO.open(path, FileShardIO.Mode.WRITE);
                            Shard shard = Shard.open(codec, io, Shard.Mode.WRITE_STREAMING)) {
                        for (long ci = 0; ci < per[0]; ci++) {
                            for (long cj = 0; cj < per[1]; cj++) {
                                chunk.clear();
                                for (long r = 0; r < inner[0]; r++) {
                                    for (long c = 0; c < inner[1]; c++) {
                                        chunk.putShort(value(si * 32 + ci * inner[0] + r,
                                                sj * 32 + cj * inner[1] + c));
                                    }
                                }
                                chunk.flip();
                                shard.writeChunk(new long[] {ci, cj}, chunk);
                            }
                        }
                        long size = shard.finalizeShard(); // 0: nothing stored, shard removed
                        io.commit();                       // rename the temporary over path
                        System.out.printf("%s: %s%n", codec.shardKey(si, sj),
                                size == 0 ? "all fill value, not stored" : size + " bytes");
                    }
                }
            }

            // Read inner chunk (1, 2) of shard (0, 1) back: rows 8..15, columns 48..55.
            try (FileShardIO io = FileShardIO.open(dir.resolve(codec.shardKey(0, 1)),
                    FileShardIO.Mode.READ);
                    Shard shard = Shard.open(codec, io, Shard.Mode.READ)) {
                ByteBuffer b = ByteBuffer.wrap(shard.readChunk(1, 2)).order(ByteOrder.nativeOrder());
                short first = b.getShort(0);
                System.out.printf("shard c/0/1, inner chunk (1, 2): first value %d (expected %d), %s%n",
                        first, value(8, 48), shard.chunkInfo(1, 2));
                if (first != value(8, 48)) {
                    throw new AssertionError("read back the wrong value");
                }
            }
        }

        // The array API over the same directory: rows 24..39 and columns 24..39 cross all four
        // shards, the absent one included (it reads as the fill value).
        try (ShardArray array = ShardArray.open(ZARR_JSON, ShardStore.directory(dir))) {
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
        }
        System.out.println("wrote " + dir);
    }
}
