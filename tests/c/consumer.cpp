// consumer.cpp: a C++ program built against an installed zarrshard's C++ header
// (<zarrshard.hpp>, installed next to <zarrshard.h>). tests/c/run.sh builds it with
// `pkg-config --cflags --libs zarrshard` and with CMake's find_package(zarrshard), then runs it
// without LD_LIBRARY_PATH: a layout read from zarr.json, and a bad one refused with the status
// and the field it names.
#include <zarrshard.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main() {
    const std::string json =
        R"({"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "int32",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8, 8]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": -1,
            "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
              "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
              "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                               {"name": "crc32c"}]}}]})";
    auto codec = zarrshard::Codec::from_zarr_json(json);
    if (codec.rank() != 2 || codec.inner_chunk_shape() != std::vector<std::uint64_t>{4, 4}) {
        std::fprintf(stderr, "consumer_cpp: wrong layout\n");
        return 1;
    }
    try {
        (void)zarrshard::Codec::from_zarr_json(R"({"zarr_format": 3, "node_type": "array"})");
        std::fprintf(stderr, "consumer_cpp: metadata without a shape was accepted\n");
        return 1;
    } catch (const zarrshard::Error &e) {
        if (e.status() != SHARD_ERR_INVALID_METADATA ||
            std::string(e.what()).find("shape") == std::string::npos) {
            std::fprintf(stderr, "consumer_cpp: unexpected error %d: %s\n", int(e.status()), e.what());
            return 1;
        }
    }
    std::printf("consumer_cpp: zarrshard %s, a 2-D layout of 4x4 inner chunks\n", zarrshard::version());
    return 0;
}
