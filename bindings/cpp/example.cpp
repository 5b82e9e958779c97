// example: write a 3-D uint16 array frame by frame into a directory with the zarrshard C++
// binding (the library's own directory store), read a region back and print it; then open one
// of its shards alone through the library's file I/O.
//
//     example [DIR]      writes DIR/frames.zarr (DIR defaults to ".")
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
    const std::string root = std::string(argc > 1 ? argv[1] : ".") + "/frames.zarr";
    try {
        const auto store = zarrshard::Store::directory(root, zarrshard::Directory::Create);
        // 0 frames of 64x48 to start; shards of 8 frames, inner chunks of one 32x24 quarter
        // frame; zstd and a crc32c-protected index (the defaults).
        zarrshard::ArraySpec spec({0, 64, 48}, {1, 32, 24}, "uint16");
        spec.shard_shape = std::vector<std::uint64_t>{8, 64, 48};
        spec.dimension_names = std::vector<std::optional<std::string>>{"t", "y", "x"};
        auto array = zarrshard::Array::create(store, "", spec, zarrshard::Existing::Overwrite);
        for (std::uint64_t t = 0; t < 20; t++) {
            std::vector<std::uint16_t> frame(64 * 48);
            for (std::size_t i = 0; i < frame.size(); i++)
                frame[i] = static_cast<std::uint16_t>(t * 100 + i % 100);
            array.append<std::uint16_t>(0, {1, 64, 48}, frame); // one frame at the end of t
        }
        array.flush(); // the partial last layer of shards, and zarr.json's shape
        const auto shape = array.shape();
        std::printf("wrote %s: %llu x %llu x %llu (zarrshard %s)\n", root.c_str(),
                    static_cast<unsigned long long>(shape[0]),
                    static_cast<unsigned long long>(shape[1]),
                    static_cast<unsigned long long>(shape[2]), zarrshard::version());

        const auto region = array.read_region<std::uint16_t>({19, 0, 0}, {1, 2, 4});
        std::printf("frame 19, rows 0-1, columns 0-3:\n");
        for (std::size_t r = 0; r < 2; r++) {
            for (std::size_t c = 0; c < 4; c++) std::printf(" %5u", region[r * 4 + c]);
            std::printf("\n");
        }

        // One shard alone: the codec from the array, the file through the library's I/O.
        const zarrshard::Codec codec = array.codec();
        const auto shard = zarrshard::Shard::open(
            codec, zarrshard::LibraryIO::file(root + "/" + codec.shard_key({1, 0, 0})));
        const auto chunk = shard.read_chunk_as<std::uint16_t>({0, 0, 0}); // frame 8, top left
        std::printf("shard %s, inner chunk [0, 0, 0] starts with %u\n",
                    codec.shard_key({1, 0, 0}).c_str(), chunk[0]);
        return region[0] == 1900 && region[5] == 1949 && chunk[0] == 800 ? 0 : 1;
    } catch (const zarrshard::Error &e) {
        std::fprintf(stderr, "example: %s (status %d, io code %d)\n", e.what(),
                     static_cast<int>(e.status()), static_cast<int>(e.io_code()));
        return 1;
    }
}
