// A second translation unit using zarrshard.hpp, linked with test_zarrshard.cpp: the
// header's inline functions, inline variables and function-local statics (the per-thread
// host message, the trampolines' templates) must not break the one-definition rule.
#include "zarrshard.hpp"

#include "common.hpp"

namespace tu2 {

// Write a buffered shard with every inner chunk from `chunk_values` into `mem`; returns the
// shard's size.
std::uint64_t write_shard(const zarrshard::Codec &codec, zarrshard::MemoryIO mem, int seed) {
    auto shard = zarrshard::Shard::open(codec, mem, zarrshard::Mode::WriteBuffered);
    for (std::uint64_t cy = 0; cy < 4; cy++)
        for (std::uint64_t cx = 0; cx < 4; cx++)
            shard.write_chunk_as<std::uint16_t>({cy, cx}, testing::chunk_values(cy, cx, seed));
    return shard.finalize();
}

// Make a read fail with a host exception in this translation unit; returns the error.
zarrshard::Error failing_read(const zarrshard::Codec &codec) {
    struct Boom {
        std::size_t read(std::uint64_t, zarrshard::span<std::uint8_t>) {
            throw std::runtime_error("boom from the second translation unit");
        }
        std::optional<std::uint64_t> size() { return 1000; }
    };
    try {
        (void)zarrshard::Shard::open(codec, Boom{});
    } catch (const zarrshard::Error &e) {
        return e;
    }
    return zarrshard::Error(SHARD_OK, "no error");
}

} // namespace tu2
