// Shared by the test translation units: configurations and chunk contents.
#ifndef ZARRSHARD_CPP_TESTS_COMMON_HPP
#define ZARRSHARD_CPP_TESTS_COMMON_HPP

#include <cstdint>
#include <vector>

#include "zarrshard.hpp"

namespace testing {

#define ZS_BYTES_LE R"({"name": "bytes", "configuration": {"endian": "little"}})"
#define ZS_ZSTD1 R"({"name": "zstd", "configuration": {"level": 1, "checksum": false}})"
#define ZS_CRC R"({"name": "crc32c"})"

// 16x16 uint16 shards of 4x4 inner chunks (16 chunks of 32 bytes), crc32c index at the end.
inline constexpr const char CFG_END[] =
    R"({"chunk_shape": [4, 4], "codecs": [)" ZS_BYTES_LE ", " ZS_ZSTD1
    R"(], "index_codecs": [)" ZS_BYTES_LE ", " ZS_CRC R"(], "index_location": "end"})";

// The same with the index at the start.
inline constexpr const char CFG_START[] =
    R"({"chunk_shape": [4, 4], "codecs": [)" ZS_BYTES_LE ", " ZS_ZSTD1
    R"(], "index_codecs": [)" ZS_BYTES_LE ", " ZS_CRC R"(], "index_location": "start"})";

// A 32x32 array of such shards.
inline constexpr const char ZARR_JSON[] =
    R"({"zarr_format": 3, "node_type": "array", "shape": [32, 32], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [16, 16]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [4, 4],
            "codecs": [)" ZS_BYTES_LE ", " ZS_ZSTD1 R"(],
            "index_codecs": [)" ZS_BYTES_LE ", " ZS_CRC R"(],
            "index_location": "end"}}]})";

// Inner chunk (cy, cx) of a 4x4-chunk shard: 16 values; chunk (0, 0) and, for odd seeds,
// (3, 3) are all fill value (0).
inline std::vector<std::uint16_t> chunk_values(std::uint64_t cy, std::uint64_t cx, int seed) {
    std::vector<std::uint16_t> v(16, 0);
    if ((cy == 0 && cx == 0) || (seed % 2 == 1 && cy == 3 && cx == 3)) return v;
    for (std::size_t i = 0; i < v.size(); i++)
        v[i] = static_cast<std::uint16_t>(seed * 1000 + (cy * 4 + cx) * 16 + i + 1);
    return v;
}

} // namespace testing

#endif
