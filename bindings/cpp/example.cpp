// example: write one shard to a file with the zarrshard C++ binding, then read an inner
// chunk back and print it.
//
//     example [DIR]      writes DIR/example.shard (DIR defaults to ".")
//
// Build (from the repository root):
//     g++ -std=c++17 -I include -I bindings/cpp bindings/cpp/example.cpp
//         target/release/libzarrshard.a -lpthread -ldl -lm
#include "zarrshard.hpp"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char **argv) {
    const std::string path = std::string(argc > 1 ? argv[1] : ".") + "/example.shard";
    try {
        // 8x8 uint16 shards of 4x4 inner chunks, zstd-compressed, crc32c-protected index at
        // the end; fill value 0.
        const zarrshard::Codec codec = zarrshard::Codec::from_config(
            R"({"chunk_shape": [4, 4],
                "codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                           {"name": "zstd", "configuration": {"level": 1, "checksum": false}}],
                "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                 {"name": "crc32c"}],
                "index_location": "end"})",
            "uint16", {8, 8}, "0");

        {
            // Writes go to a temporary; commit() makes them visible only after finalize().
            auto shard = zarrshard::Shard::open(codec, zarrshard::FileIO(path, zarrshard::FileIO::Write),
                                                zarrshard::Mode::WriteStreaming);
            for (std::uint64_t cy = 0; cy < 2; cy++) {
                for (std::uint64_t cx = 0; cx < 2; cx++) {
                    std::vector<std::uint16_t> chunk(16);
                    for (std::size_t i = 0; i < chunk.size(); i++)
                        chunk[i] = static_cast<std::uint16_t>(1000 * (cy * 2 + cx) + i);
                    shard.write_chunk_as<std::uint16_t>({cy, cx}, chunk);
                }
            }
            const std::uint64_t size = shard.finalize();
            shard.io<zarrshard::FileIO>().commit();
            std::printf("wrote %s: %llu bytes (zarrshard %s)\n", path.c_str(),
                        static_cast<unsigned long long>(size), zarrshard::version());
        } // the shard closes here, and its FileIO with it

        const auto shard =
            zarrshard::Shard::open(codec, zarrshard::FileIO(path, zarrshard::FileIO::Read));
        const std::vector<std::uint16_t> values = shard.read_chunk_as<std::uint16_t>({1, 0});
        const zarrshard::ChunkLocation where = shard.chunk_info({1, 0});
        std::printf("inner chunk [1, 0] (%llu bytes at offset %llu):\n",
                    static_cast<unsigned long long>(where.nbytes),
                    static_cast<unsigned long long>(where.offset));
        for (std::size_t r = 0; r < 4; r++) {
            for (std::size_t c = 0; c < 4; c++) std::printf(" %5u", values[r * 4 + c]);
            std::printf("\n");
        }
        return values[0] == 2000 && values[15] == 2015 ? 0 : 1;
    } catch (const zarrshard::Error &e) {
        std::fprintf(stderr, "example: %s (status %d, io code %d)\n", e.what(),
                     static_cast<int>(e.status()), static_cast<int>(e.io_code()));
        return 1;
    }
}
