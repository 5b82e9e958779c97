// test_zarrshard: the C++ binding (bindings/cpp/zarrshard.hpp) from a C++ host's side.
//
//     test_zarrshard FIXTURE_DIR SCRATCH_DIR
//
// FIXTURE_DIR holds fixture.zarr and fixture.raw from bindings/make_fixture.py (zarr-python);
// SCRATCH_DIR is an existing directory for the file tests. Each test prints `ok NAME` or
// `FAIL NAME` with its failed checks; the last line is `N passed, M failed`; the exit status is
// non-zero when something failed. Built with -Wall -Wextra -Werror -pedantic, plain and with
// -fsanitize=address,undefined, by bindings/cpp/run.sh.

// Included twice on purpose: the include guard must make that harmless.
#include "zarrshard.hpp"
#include "zarrshard.hpp"

#include "common.hpp"

#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

using zarrshard::Codec;
using zarrshard::Error;
using zarrshard::LibraryIO;
using zarrshard::Flags;
using zarrshard::MemoryIO;
using zarrshard::Mode;
using zarrshard::Shard;
using zarrshard::span;
using testing::chunk_values;
using testing::CFG_END;
using testing::CFG_START;
using testing::ZARR_JSON;

namespace tu2 { // second_tu.cpp
std::uint64_t write_shard(const zarrshard::Codec &codec, zarrshard::MemoryIO mem, int seed);
zarrshard::Error failing_read(const zarrshard::Codec &codec);
} // namespace tu2

// ---- compile-time checks -------------------------------------------------------------------

static_assert(std::is_copy_constructible<Codec>::value && std::is_copy_assignable<Codec>::value &&
                  std::is_nothrow_move_constructible<Codec>::value &&
                  std::is_nothrow_move_assignable<Codec>::value,
              "Codec is copyable (shard_codec_clone) and nothrow-movable");
static_assert(!std::is_copy_constructible<Shard>::value && std::is_nothrow_move_constructible<Shard>::value &&
                  std::is_nothrow_move_assignable<Shard>::value,
              "Shard is move-only");
static_assert(!std::is_copy_constructible<LibraryIO>::value &&
                  std::is_nothrow_move_constructible<LibraryIO>::value &&
                  std::is_nothrow_move_assignable<LibraryIO>::value,
              "LibraryIO is move-only (one owner of the library's table)");
static_assert(std::is_copy_constructible<zarrshard::Store>::value &&
                  std::is_nothrow_move_constructible<zarrshard::Store>::value,
              "Store is copyable (copies share the library's table)");
static_assert(std::is_base_of<std::runtime_error, Error>::value, "Error is a runtime_error");
static_assert(std::is_nothrow_copy_constructible<Error>::value, "exceptions copy without throwing");
static_assert(zarrshard::is_io_object_v<MemoryIO> && !zarrshard::is_io_object_v<LibraryIO> &&
                  zarrshard::is_io_object_v<std::shared_ptr<MemoryIO>> && !zarrshard::is_io_object_v<int>,
              "the I/O concept");
static_assert(std::is_same<zarrshard::Coords, span<const std::uint64_t>>::value, "Coords");

// ---- a tiny harness ------------------------------------------------------------------------

static int g_passed, g_failed, t_failures;
static std::string g_fixture, g_scratch;

static void check_failed(int line, const std::string &what) {
    if (t_failures++ < 8) std::cout << "    line " << line << ": " << what << "\n";
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) check_failed(__LINE__, #cond);                                                \
    } while (0)

// Run STMT, expect an Error with STATUS; evaluates to the Error (std::optional).
#define EXPECT_ERROR(stmt, status) expect_error([&] { stmt; }, (status), __LINE__, #stmt)

template <class F>
static std::optional<Error> expect_error(F &&f, shard_status want, int line, const char *what) {
    try {
        f();
    } catch (const Error &e) {
        if (e.status() != want) {
            check_failed(line, std::string(what) + ": status " + std::to_string(e.status()) +
                                   ", expected " + std::to_string(want) + ": " + e.what());
            return std::nullopt;
        }
        return e;
    } catch (const std::exception &e) {
        check_failed(line, std::string(what) + ": unexpected exception " + e.what());
        return std::nullopt;
    }
    check_failed(line, std::string(what) + ": no exception, expected status " + std::to_string(want));
    return std::nullopt;
}

static bool contains(const std::string &s, const std::string &part) {
    return s.find(part) != std::string::npos;
}

static void run(const char *name, void (*test)()) {
    t_failures = 0;
    try {
        test();
    } catch (const Error &e) {
        check_failed(0, std::string("uncaught zarrshard::Error: ") + e.what() +
                            " (io code " + std::to_string(e.io_code()) + ")");
    } catch (const std::exception &e) {
        check_failed(0, std::string("uncaught exception: ") + e.what());
    } catch (...) {
        check_failed(0, "uncaught non-standard exception");
    }
    if (t_failures == 0) {
        g_passed++;
        std::cout << "ok " << name << "\n";
    } else {
        g_failed++;
        std::cout << "FAIL " << name << " (" << t_failures << " failed checks)\n";
    }
    std::cout.flush();
}

#define RUN(test) run(#test, test)

// ---- helpers ---------------------------------------------------------------------------------

static Codec codec_end() { return Codec::from_config(CFG_END, "uint16", {16, 16}, "0"); }

// Write every inner chunk of `seed`'s shard through `shard` (a write shard).
static void write_all(Shard &shard, int seed) {
    for (std::uint64_t cy = 0; cy < 4; cy++)
        for (std::uint64_t cx = 0; cx < 4; cx++)
            shard.write_chunk_as<std::uint16_t>({cy, cx}, chunk_values(cy, cx, seed));
}

// Whether every inner chunk of `shard` (a read shard) is `seed`'s, with `changed` applied.
static bool reads_as(const Shard &shard, int seed,
                     const std::function<std::vector<std::uint16_t>(std::uint64_t, std::uint64_t,
                                                                   std::vector<std::uint16_t>)>
                         &changed = nullptr) {
    for (std::uint64_t cy = 0; cy < 4; cy++) {
        for (std::uint64_t cx = 0; cx < 4; cx++) {
            auto want = chunk_values(cy, cx, seed);
            if (changed) want = changed(cy, cx, want);
            if (shard.read_chunk_as<std::uint16_t>({cy, cx}) != want) {
                std::cout << "    chunk [" << cy << ", " << cx << "] differs\n";
                return false;
            }
        }
    }
    return true;
}

static bool file_exists(const std::string &path) {
    struct stat st;
    return ::stat(path.c_str(), &st) == 0;
}

static std::vector<std::uint8_t> file_bytes(const std::string &path) {
    std::ifstream f(path, std::ios::binary);
    return std::vector<std::uint8_t>(std::istreambuf_iterator<char>(f), {});
}

static std::string scratch(const std::string &name) { return g_scratch + "/" + name; }

// Files in ROOT whose names hold ".tmp." (temporaries left behind), recursively.
static int temporaries_below(const std::string &root) {
    int n = 0;
    for (const auto &e : std::filesystem::recursive_directory_iterator(root))
        if (e.path().filename().string().find(".tmp.") != std::string::npos) n++;
    return n;
}

// Live instances of CountedIO, to check that a shard destroys its I/O object exactly once.
static std::atomic<int> g_live{0};

struct CountedIO {
    MemoryIO mem;
    explicit CountedIO(MemoryIO m) : mem(std::move(m)) { g_live++; }
    CountedIO(const CountedIO &o) : mem(o.mem) { g_live++; }
    CountedIO(CountedIO &&o) noexcept : mem(o.mem) { g_live++; }
    CountedIO &operator=(const CountedIO &) = delete;
    ~CountedIO() { g_live--; }
    std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) { return mem.read(offset, buf); }
    std::optional<std::uint64_t> size() { return mem.size(); }
    void write(std::uint64_t offset, span<const std::uint8_t> data) { mem.write(offset, data); }
};

// Only `read`: no size, no read_suffix, no write.
struct ReadOnlyIO {
    MemoryIO mem;
    std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) { return mem.read(offset, buf); }
};

// Every callback; the one named `where` throws `kind` (once armed).
enum class Kind { Runtime, Int, IoErr, System, BadAlloc, NotFoundEx };

struct ThrowingIO {
    MemoryIO mem;
    std::string where;
    Kind kind;
    std::shared_ptr<std::atomic<bool>> armed = std::make_shared<std::atomic<bool>>(true);

    void maybe_throw(const char *op) const {
        if (!*armed || where != op) return;
        switch (kind) {
        case Kind::Runtime: throw std::runtime_error(std::string("boom in ") + op);
        case Kind::Int: throw 42;
        case Kind::IoErr: throw zarrshard::IoError(4242, std::string("host error in ") + op);
        case Kind::System: throw std::system_error(ENOSPC, std::generic_category(), "disk full");
        case Kind::BadAlloc: throw std::bad_alloc();
        case Kind::NotFoundEx: throw zarrshard::NotFound();
        }
    }
    std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) {
        maybe_throw("read");
        return mem.read(offset, buf);
    }
    zarrshard::SuffixRead read_suffix(span<std::uint8_t> buf) {
        maybe_throw("read_suffix");
        return mem.read_suffix(buf);
    }
    std::optional<std::uint64_t> size() {
        maybe_throw("size");
        return mem.size();
    }
    void write(std::uint64_t offset, span<const std::uint8_t> data) {
        maybe_throw("write");
        mem.write(offset, data);
    }
    void truncate(std::uint64_t len) {
        maybe_throw("truncate");
        mem.truncate(len);
    }
    void remove() {
        maybe_throw("remove");
        mem.remove();
    }
};

// read + size only (no read_suffix), `size` throws.
struct ThrowingSizeIO {
    MemoryIO mem;
    std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) { return mem.read(offset, buf); }
    std::optional<std::uint64_t> size() { throw 42; }
};

// MemoryIO with the new-object members: the new object is built aside and set at commit_new.
// Copies share everything (the adapter holds a copy), so a test sees what the shard did.
struct NewObjectIO {
    struct State {
        std::vector<std::uint8_t> next;
        int begins = 0, commits = 0, discards = 0, in_place = 0;
        std::string fail; // "write_new" or "commit_new": that member throws IoError
    };
    MemoryIO mem;
    std::shared_ptr<State> st = std::make_shared<State>();

    std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) { return mem.read(offset, buf); }
    std::optional<std::uint64_t> size() { return mem.size(); }
    void write(std::uint64_t offset, span<const std::uint8_t> data) {
        st->in_place++;
        mem.write(offset, data);
    }
    void truncate(std::uint64_t len) { mem.truncate(len); }
    void remove() { mem.remove(); }
    void begin_new() {
        st->begins++;
        st->next.clear();
    }
    void write_new(std::uint64_t offset, span<const std::uint8_t> data) {
        if (st->fail == "write_new") throw zarrshard::IoError(77, "no space for the new object");
        if (st->next.size() < offset + data.size()) st->next.resize(offset + data.size());
        std::copy(data.begin(), data.end(), st->next.begin() + static_cast<std::ptrdiff_t>(offset));
    }
    void commit_new(std::uint64_t len) {
        st->commits++;
        if (st->fail == "commit_new") throw zarrshard::IoError(78, "rename failed");
        if (len != st->next.size()) throw zarrshard::IoError(79, "wrong length");
        mem.set(st->next);
    }
    void discard_new() {
        st->discards++;
        st->next.clear();
    }
};

static MemoryIO written_shard(int seed) {
    MemoryIO mem;
    Codec codec = codec_end();
    auto shard = Shard::open(codec, mem, Mode::WriteBuffered);
    write_all(shard, seed);
    (void)shard.finalize();
    return mem;
}

// ---- tests: basics ---------------------------------------------------------------------------

static void test_version_and_span() {
    CHECK(std::strlen(zarrshard::version()) > 0);
    std::vector<std::uint64_t> v{1, 2, 3};
    std::array<std::uint64_t, 2> a{{4, 5}};
    std::uint64_t c[4] = {6, 7, 8, 9};
    zarrshard::Coords from_vector = v, from_array = a, from_c = c;
    CHECK(from_vector.size() == 3 && from_vector[2] == 3);
    CHECK(from_array.size() == 2 && from_array[0] == 4);
    CHECK(from_c.size() == 4 && from_c[3] == 9);
    auto sum = [](zarrshard::Coords s) {
        std::uint64_t t = 0;
        for (auto x : s) t += x;
        return t;
    };
    CHECK(sum({1, 2, 3, 4}) == 10);
    CHECK(sum({}) == 0);
    std::vector<std::uint16_t> u16{0x0102, 0x0304};
    auto bytes = zarrshard::as_bytes(span<const std::uint16_t>(u16));
    CHECK(bytes.size() == 4);
    span<std::uint8_t> mutable_bytes = zarrshard::as_writable_bytes(span<std::uint16_t>(u16));
    span<const std::uint8_t> const_bytes = mutable_bytes; // non-const to const
    CHECK(const_bytes.size() == 4 && !const_bytes.empty());
}

static void test_threads_setting() {
    zarrshard::set_threads(1);
    CHECK(zarrshard::threads() == 1);
    {
        MemoryIO mem = written_shard(3); // encoded on the calling thread alone
        const Codec codec = codec_end();
        const auto shard = Shard::open(codec, mem, Mode::Read);
        CHECK(reads_as(shard, 3));
    }
    // Past the documented maximum: refused, the setting unchanged.
    CHECK(zarrshard::max_threads == 1024);
    auto e = EXPECT_ERROR(zarrshard::set_threads(zarrshard::max_threads + 1),
                          SHARD_ERR_INVALID_ARGUMENT);
    if (e) CHECK(contains(e->message(), "at most 1024"));
    (void)EXPECT_ERROR(zarrshard::set_threads(SIZE_MAX), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(zarrshard::threads() == 1);
    zarrshard::set_threads(0);
    CHECK(zarrshard::threads() >= 1);
}

// The memory kept between calls is freed on request (what exactly: tests/encode_memory.rs): at
// least the compressor and decompressor the shard was written and read with; nothing on a
// second call right after; and the next read rebuilds what it needs.
static void test_release_memory() {
    MemoryIO mem = written_shard(4);
    const Codec codec = codec_end();
    CHECK(reads_as(Shard::open(codec, mem, Mode::Read), 4));
    CHECK(zarrshard::release_memory().contexts >= 2);
    const auto again = zarrshard::release_memory();
    CHECK(again.bytes == 0 && again.contexts == 0);
    CHECK(reads_as(Shard::open(codec, mem, Mode::Read), 4));
    CHECK(zarrshard::release_memory().contexts >= 1);
}

static void test_codec_from_config_getters() {
    const Codec codec = Codec::from_config(CFG_END, "uint16", {16, 16}, "7");
    CHECK(static_cast<bool>(codec) && codec.get() != nullptr);
    CHECK(codec.rank() == 2);
    CHECK(codec.shard_shape() == (std::vector<std::uint64_t>{16, 16}));
    CHECK(codec.inner_chunk_shape() == (std::vector<std::uint64_t>{4, 4}));
    CHECK(codec.chunks_per_shard() == (std::vector<std::uint64_t>{4, 4}));
    CHECK(codec.num_chunks() == 16);
    CHECK(codec.inner_chunk_nbytes() == 32);
    CHECK(codec.index_nbytes() == 16 * 16 + 4);
    CHECK(codec.element_nbytes() == 2);
    std::uint16_t seven = 0;
    const auto fill = codec.fill_value();
    CHECK(fill.size() == 2);
    std::memcpy(&seven, fill.data(), 2);
    CHECK(seven == 7);
    CHECK(codec.data_type() == "uint16");
    // A codec from a bare configuration knows no array.
    auto e = EXPECT_ERROR((void)codec.array_shape(), SHARD_ERR_INVALID_STATE);
    CHECK(e && !e->message().empty() && e->io_code() == 0);
    EXPECT_ERROR((void)codec.grid_shape(), SHARD_ERR_INVALID_STATE);
    EXPECT_ERROR((void)codec.shard_key({0, 0}), SHARD_ERR_INVALID_STATE);
}

static void test_codec_from_zarr_json_getters() {
    const Codec codec = Codec::from_zarr_json(ZARR_JSON);
    CHECK(codec.array_shape() == (std::vector<std::uint64_t>{32, 32}));
    CHECK(codec.grid_shape() == (std::vector<std::uint64_t>{2, 2}));
    CHECK(codec.shard_shape() == (std::vector<std::uint64_t>{16, 16}));
    CHECK(codec.shard_key({1, 0}) == "c/1/0");
    CHECK(codec.shard_key({0, 1}) == "c/0/1");
    auto e = EXPECT_ERROR((void)codec.shard_key({2, 0}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty() && e->io_code() == 0);
    EXPECT_ERROR((void)codec.shard_key({0}), SHARD_ERR_INVALID_ARGUMENT);
}

static void test_codec_errors() {
    auto e = EXPECT_ERROR((void)Codec::from_zarr_json("{"), SHARD_ERR_INVALID_METADATA);
    if (e) {
        CHECK(!e->message().empty());
        CHECK(e->io_code() == 0);
        CHECK(e->host_message().empty());
        CHECK(contains(e->message(), shard_status_str(SHARD_ERR_INVALID_METADATA)));
        CHECK(std::string(e->what()) == "zarrshard: " + e->message());
        // A copy keeps everything; it is a std::runtime_error too.
        const Error copy = *e;
        CHECK(copy.status() == e->status() && copy.message() == e->message());
        const std::runtime_error &base = copy;
        CHECK(std::string(base.what()) == e->what());
    }
    EXPECT_ERROR((void)Codec::from_zarr_json(""), SHARD_ERR_INVALID_METADATA);
    e = EXPECT_ERROR((void)Codec::from_config(CFG_END, "uint17", {16, 16}, "0"),
                     SHARD_ERR_INVALID_METADATA);
    CHECK(e && contains(e->message(), "uint17"));
    // A shard shape that is not a multiple of the inner chunk shape.
    e = EXPECT_ERROR((void)Codec::from_config(CFG_END, "uint16", {10, 16}, "0"),
                     SHARD_ERR_INVALID_METADATA);
    CHECK(e && !e->message().empty());
    // A bytes→bytes codec after sharding cannot be read chunk by chunk.
    std::string bad = ZARR_JSON;
    const std::string tail = R"("index_location": "end"}})";
    bad.insert(bad.find(tail) + tail.size(), R"(, {"name": "gzip", "configuration": {"level": 1}})");
    e = EXPECT_ERROR((void)Codec::from_zarr_json(bad), SHARD_ERR_UNSUPPORTED_CODEC);
    CHECK(e && !e->message().empty());
    // Invalid UTF-8.
    EXPECT_ERROR((void)Codec::from_zarr_json(std::string_view("\xff\xfe", 2)), SHARD_ERR_INVALID_ARGUMENT);
}

// Copies of a Codec are references to one immutable codec (shard_codec_clone): each outlives
// the original and the others, works on other threads while the original is destroyed, and an
// empty Codec copies as empty. Under ASan a copy that only copied the pointer is a double free.
static void test_codec_copies() {
    const MemoryIO mem = written_shard(1);
    auto original = std::make_unique<Codec>(codec_end());
    const Codec copy = *original; // copy construction
    Codec assigned = Codec::from_config(CFG_START, "uint16", {16, 16}, "0");
    CHECK(assigned.index_nbytes() == 16 * 16 + 4);
    assigned = *original; // copy assignment releases its own codec first
    CHECK(copy && assigned && copy.get() != nullptr);
    // Two threads, each with its own copy, open and read shards while the original goes away.
    std::atomic<int> bad{0}, started{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; t++) {
        threads.emplace_back([c = copy, &mem, &bad, &started] {
            started++;
            try {
                for (int round = 0; round < 20; round++) {
                    const Codec mine = c; // copies made on this thread too
                    const auto shard = Shard::open(mine, mem);
                    if (mine.rank() != 2 || mine.num_chunks() != 16 || !reads_as(shard, 1)) bad++;
                }
            } catch (...) {
                bad++;
            }
        });
    }
    while (started < 2) std::this_thread::yield();
    original.reset(); // the original codec is freed while the threads use their copies
    for (auto &th : threads) th.join();
    CHECK(bad == 0);
    CHECK(copy.rank() == 2 && copy.shard_shape() == (std::vector<std::uint64_t>{16, 16}));
    CHECK(assigned.index_nbytes() == 16 * 16 + 4 && reads_as(Shard::open(assigned, mem), 1));
    // Self-assignment keeps the reference; an empty codec copies as empty (no C call).
    Codec &alias = assigned;
    assigned = alias;
    CHECK(assigned && assigned.rank() == 2);
    Codec moved_from = std::move(assigned);
    const Codec empty_copy = assigned;
    CHECK(!assigned && !empty_copy && moved_from);
    EXPECT_ERROR((void)empty_copy.rank(), SHARD_ERR_NULL_POINTER);
    moved_from = empty_copy; // assigning an empty codec releases this one
    CHECK(!moved_from);
    // Copies in a container, as a value type.
    std::vector<Codec> many(4, copy);
    for (const Codec &c : many) CHECK(c.inner_chunk_nbytes() == 32);
}

// ---- tests: round trips -------------------------------------------------------------------------

static void test_memory_round_trip_write_modes() {
    const Codec codec = codec_end();
    for (Mode mode : {Mode::WriteBuffered, Mode::WriteStreaming}) {
        for (Flags flags : {Flags::None, Flags::MortonOrder, Flags::StoreFillChunks,
                            Flags::MortonOrder | Flags::StoreFillChunks}) {
            MemoryIO mem;
            {
                auto shard = Shard::open(codec, mem, mode, flags);
                CHECK(mem.use_count() == 2); // ours and the shard's
                write_all(shard, 1);
                const auto info = shard.chunk_info({1, 2});
                CHECK(!info.empty && info.nbytes > 0);
                const std::uint64_t size = shard.finalize();
                CHECK(size > 0 && size == mem.bytes().size());
            }
            CHECK(mem.use_count() == 1); // the shard destroyed its copy at close
            CHECK(mem.exists());
            const auto shard = Shard::open(codec, mem);
            CHECK(reads_as(shard, 1));
            const bool store_fill =
                (static_cast<std::uint32_t>(flags) & SHARD_FLAG_STORE_FILL_CHUNKS) != 0;
            CHECK(shard.chunk_info({0, 0}).empty == !store_fill);
            CHECK(shard.chunk_info({3, 3}).empty == !store_fill);
            CHECK(!shard.chunk_info({2, 1}).empty);
        }
    }
}

static void test_memory_round_trip_update_modes() {
    const Codec codec = codec_end();
    const auto changed = [](std::uint64_t cy, std::uint64_t cx, std::vector<std::uint16_t> v) {
        if (cy == 1 && cx == 1) return chunk_values(1, 1, 5);
        if (cy == 2 && cx == 2) return std::vector<std::uint16_t>(16, 0);
        if (cy == 3 && cx == 3) return chunk_values(3, 3, 6);
        return v;
    };
    for (Mode mode : {Mode::UpdateAppend, Mode::UpdateInPlace}) {
        MemoryIO mem = written_shard(1);
        const std::size_t before = mem.bytes().size();
        {
            auto shard = Shard::open(codec, mem, mode);
            shard.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 5));
            shard.erase_chunk({2, 2});
            shard.write_chunk_as<std::uint16_t>({3, 3}, chunk_values(3, 3, 6)); // was empty
            CHECK(shard.chunk_info({2, 2}).empty);
            const std::uint64_t size = shard.finalize();
            CHECK(size == mem.bytes().size());
            if (mode == Mode::UpdateAppend) CHECK(size > before);
        }
        const auto shard = Shard::open(codec, mem);
        CHECK(reads_as(shard, 1, changed));
    }
    // Updating a missing object makes a new shard.
    MemoryIO fresh;
    {
        auto shard = Shard::open(codec, fresh, Mode::UpdateInPlace);
        write_all(shard, 2);
        CHECK(shard.finalize() > 0);
    }
    CHECK(reads_as(Shard::open(codec, fresh), 2));
}

static void test_memory_index_at_start_and_read_chunks() {
    const Codec codec = Codec::from_config(CFG_START, "uint16", {16, 16}, "0");
    MemoryIO mem;
    {
        auto shard = Shard::open(codec, mem, Mode::WriteStreaming);
        write_all(shard, 3);
        (void)shard.finalize();
    }
    const auto shard = Shard::open(codec, mem);
    CHECK(reads_as(shard, 3));
    // Several chunks in one call, both forms.
    const auto many = shard.read_chunks({{0, 1}, {2, 3}, {0, 0}});
    CHECK(many.size() == 3 * 32);
    std::vector<std::uint8_t> want;
    for (auto c : {std::pair<int, int>{0, 1}, {2, 3}, {0, 0}}) {
        auto v = chunk_values(static_cast<std::uint64_t>(c.first), static_cast<std::uint64_t>(c.second), 3);
        auto b = zarrshard::as_bytes(span<const std::uint16_t>(v));
        want.insert(want.end(), b.begin(), b.end());
    }
    CHECK(many == want);
    std::vector<std::uint8_t> out(2 * 32);
    shard.read_chunks({0, 1, 2, 3}, out);
    CHECK(std::vector<std::uint8_t>(want.begin(), want.begin() + 64) == out);
    EXPECT_ERROR(shard.read_chunks({0, 1, 2}, out), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(shard.read_chunks({0, 1}, out), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR((void)shard.read_chunks({{0, 1}, {2}}), SHARD_ERR_INVALID_ARGUMENT);
    // Into a caller buffer.
    std::vector<std::uint8_t> one(32);
    shard.read_chunk({2, 3}, one);
    CHECK(std::vector<std::uint8_t>(want.begin() + 32, want.begin() + 64) == one);
    // The coalescing gap (its effect on host reads is tested in tests/ffi.rs and
    // tests/c/test_region.c): any gap reads the same chunks; write shards refuse it.
    for (const std::uint64_t gap : {std::uint64_t{0}, std::uint64_t{1} << 40}) {
        shard.set_coalesce_gap(gap);
        CHECK(shard.read_chunks({{0, 1}, {2, 3}, {0, 0}}) == want);
    }
    auto writer = Shard::open(codec, MemoryIO(), Mode::WriteBuffered);
    EXPECT_ERROR(writer.set_coalesce_gap(0), SHARD_ERR_INVALID_STATE);
}

static void test_raw_copy_and_chunk_info() {
    const Codec codec = codec_end();
    MemoryIO src_mem = written_shard(1);
    const auto src = Shard::open(codec, src_mem);
    CHECK(src.read_chunk_raw_nbytes({0, 0}) == 0);
    CHECK(src.read_chunk_raw({0, 0}).empty());
    MemoryIO dst_mem;
    {
        auto dst = Shard::open(codec, dst_mem, Mode::WriteBuffered);
        for (std::uint64_t cy = 0; cy < 4; cy++) {
            for (std::uint64_t cx = 0; cx < 4; cx++) {
                const auto raw = src.read_chunk_raw({cy, cx});
                const auto info = src.chunk_info({cy, cx});
                CHECK(raw.size() == info.nbytes);
                CHECK(src.read_chunk_raw_nbytes({cy, cx}) == raw.size());
                if (!raw.empty()) dst.write_chunk_raw({cy, cx}, raw);
            }
        }
        // A buffered writer assigns offsets at finalize.
        const auto pending = dst.chunk_info({1, 0});
        CHECK(!pending.empty && pending.offset == 0 && pending.nbytes > 0);
        CHECK(dst.chunk_info({0, 0}).empty);
        (void)dst.finalize();
    }
    CHECK(reads_as(Shard::open(codec, dst_mem), 1));
    CHECK(dst_mem.bytes() == src_mem.bytes()); // same chunks, same order, same index
    // A caller buffer too small for the raw bytes.
    std::vector<std::uint8_t> tiny(1);
    EXPECT_ERROR((void)src.read_chunk_raw({1, 1}, tiny), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR((void)src.read_chunk_raw({1, 1}, span<std::uint8_t>()), SHARD_ERR_BUFFER_SIZE);
    CHECK(src.read_chunk_raw({0, 0}, span<std::uint8_t>()) == 0);
    std::vector<std::uint8_t> roomy(1000, 0xee);
    const std::size_t n = src.read_chunk_raw({1, 1}, roomy);
    CHECK(n == src.read_chunk_raw_nbytes({1, 1}) && roomy[n] == 0xee);
    CHECK(std::vector<std::uint8_t>(roomy.begin(), roomy.begin() + static_cast<std::ptrdiff_t>(n)) ==
          src.read_chunk_raw({1, 1}));
}

// Every mode through the library's file I/O (LibraryIO::file, shard_io_file): buffered and
// streaming writes give a file of exactly finalize's size that reads back as written, the
// update modes change one chunk and keep the others, and nothing named `.tmp.` is left.
static void test_file_round_trip_every_mode() {
    const Codec codec = codec_end();
    for (Mode mode : {Mode::WriteBuffered, Mode::WriteStreaming}) {
        const std::string path = scratch("write-" + std::to_string(static_cast<int>(mode)) + ".shard");
        std::remove(path.c_str());
        {
            auto shard = Shard::open(codec, LibraryIO::file(path), mode);
            write_all(shard, 1);
            const std::uint64_t size = shard.finalize();
            CHECK(file_exists(path) && file_bytes(path).size() == size);
        }
        CHECK(reads_as(Shard::open(codec, LibraryIO::file(path)), 1));
        // The same bytes as the same shard written to memory.
        MemoryIO mem;
        {
            auto shard = Shard::open(codec, mem, mode);
            write_all(shard, 1);
            (void)shard.finalize();
        }
        CHECK(file_bytes(path) == mem.bytes());
    }
    const auto changed = [](std::uint64_t cy, std::uint64_t cx, std::vector<std::uint16_t> v) {
        return cy == 2 && cx == 1 ? chunk_values(2, 1, 9) : v;
    };
    for (Mode mode : {Mode::UpdateAppend, Mode::UpdateInPlace}) {
        const std::string path = scratch("update-" + std::to_string(static_cast<int>(mode)) + ".shard");
        {
            auto shard = Shard::open(codec, LibraryIO::file(path), Mode::WriteStreaming);
            write_all(shard, 1);
            (void)shard.finalize();
        }
        {
            auto shard = Shard::open(codec, LibraryIO::file(path), mode);
            shard.write_chunk_as<std::uint16_t>({2, 1}, chunk_values(2, 1, 9));
            (void)shard.finalize();
        }
        CHECK(reads_as(Shard::open(codec, LibraryIO::file(path)), 1, changed));
    }
    CHECK(temporaries_below(g_scratch) == 0);
}

// LibraryIO::file: a buffered write given up before finalize leaves the old file byte for
// byte; a shard left with nothing stored deletes its file; a missing file reads as fill; a
// path below a regular file fails with SHARD_ERR_IO and io_code ENOTDIR; an empty
// path or one with NUL is refused naming it; a LibraryIO is handed over only when the open
// succeeds (a failed open leaves it usable), and a moved-from one is empty.
static void test_file_abandoned_and_removed() {
    const Codec codec = codec_end();
    const std::string path = scratch("keep.shard");
    {
        auto shard = Shard::open(codec, LibraryIO::file(path), Mode::WriteBuffered);
        write_all(shard, 1);
        (void)shard.finalize();
    }
    const auto before = file_bytes(path);
    CHECK(!before.empty());
    {
        // Written but never finalized: the old shard stays.
        auto shard = Shard::open(codec, LibraryIO::file(path), Mode::WriteBuffered);
        write_all(shard, 2);
    }
    CHECK(file_bytes(path) == before && temporaries_below(g_scratch) == 0);
    {
        // Nothing stored: finalize removes the object, which deletes the file.
        auto shard = Shard::open(codec, LibraryIO::file(path), Mode::WriteBuffered);
        shard.write_chunk_as<std::uint16_t>({1, 1}, std::vector<std::uint16_t>(16, 0));
        CHECK(shard.finalize() == 0);
    }
    CHECK(!file_exists(path));
    // A missing file reads as all fill value.
    const auto shard = Shard::open(codec, LibraryIO::file(path));
    CHECK(shard.read_chunk_as<std::uint16_t>({2, 2}) == std::vector<std::uint16_t>(16, 0));
    CHECK(shard.chunk_info({2, 2}).empty);
    auto e = EXPECT_ERROR((void)shard.io<MemoryIO>(), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "LibraryIO"));
    // A file that cannot be made: its directory is a regular file.
    {
        const std::string plain = scratch("plain-file");
        std::ofstream(plain) << "x";
        const std::string below = plain + "/x.shard";
        e = EXPECT_ERROR(
            {
                auto w = Shard::open(codec, LibraryIO::file(below), Mode::WriteBuffered);
                write_all(w, 1);
                (void)w.finalize();
            },
            SHARD_ERR_IO);
        // The OS's code for a file below a file. (The library's message names the callback,
        // not the file: its file I/O reports through the generic callback path.)
        CHECK(e && e->io_code() == ENOTDIR && contains(e->message(), "I/O error"));
        std::remove(plain.c_str());
    }
    e = EXPECT_ERROR((void)LibraryIO::file(""), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty());
    e = EXPECT_ERROR((void)LibraryIO::file(std::string("a\0b", 3)), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message() == "invalid argument: path `a?b` contains a NUL byte");
    // Handed over only on success.
    LibraryIO io = LibraryIO::file(scratch("handed.shard"));
    EXPECT_ERROR((void)Shard::open(codec, std::move(io), static_cast<Mode>(99)), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(static_cast<bool>(io)); // still ours after the failed open
    {
        auto w = Shard::open(codec, std::move(io), Mode::WriteBuffered);
        CHECK(!io); // the shard's now
        write_all(w, 3);
        (void)w.finalize();
    }
    CHECK(reads_as(Shard::open(codec, LibraryIO::file(scratch("handed.shard"))), 3));
    LibraryIO a = LibraryIO::file(scratch("handed.shard"));
    LibraryIO b = std::move(a);
    CHECK(!a && b && b.get()->version != 0);
    e = EXPECT_ERROR((void)Shard::open(codec, std::move(a)), SHARD_ERR_NULL_POINTER);
    CHECK(e && contains(e->message(), "empty LibraryIO"));
    b = LibraryIO(); // releases the table
    CHECK(!b);
}

static void test_memory_missing_object_reads_fill() {
    const Codec codec = Codec::from_config(CFG_END, "uint16", {16, 16}, "513");
    MemoryIO missing; // NotFound from read_suffix
    const auto shard = Shard::open(codec, missing);
    CHECK(shard.read_chunk_as<std::uint16_t>({3, 0}) == std::vector<std::uint16_t>(16, 513));
    // `size()` returning nullopt (no read_suffix) says the same.
    struct SizeOnly {
        std::size_t read(std::uint64_t, span<std::uint8_t>) { throw zarrshard::NotFound(); }
        std::optional<std::uint64_t> size() { return std::nullopt; }
    };
    const auto shard2 = Shard::open(codec, SizeOnly{});
    CHECK(shard2.chunk_info({1, 1}).empty);
    CHECK(shard2.read_chunk({1, 1}).size() == 32);
}

// ---- tests: errors ------------------------------------------------------------------------------

static void test_shard_errors() {
    const Codec codec = codec_end();
    MemoryIO mem = written_shard(1);
    const auto reader = Shard::open(codec, mem);
    auto e = EXPECT_ERROR((void)reader.read_chunk({0, 0, 0}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty() && e->io_code() == 0);
    e = EXPECT_ERROR((void)reader.read_chunk({4, 0}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty());
    std::vector<std::uint8_t> small(31);
    EXPECT_ERROR(reader.read_chunk({1, 1}, small), SHARD_ERR_BUFFER_SIZE);
    e = EXPECT_ERROR((void)reader.read_chunk_as<std::uint32_t>({1, 1}), SHARD_ERR_BUFFER_SIZE);
    CHECK(e && contains(e->message(), "4 bytes"));
    // Mode checks: write calls on a read shard, read calls on a write shard.
    Shard &r = const_cast<Shard &>(reader);
    e = EXPECT_ERROR(r.write_chunk({1, 1}, std::vector<std::uint8_t>(32)), SHARD_ERR_INVALID_STATE);
    CHECK(e && !e->message().empty());
    EXPECT_ERROR((void)r.finalize(), SHARD_ERR_INVALID_STATE);
    EXPECT_ERROR(r.erase_chunk({1, 1}), SHARD_ERR_INVALID_STATE);
    MemoryIO out;
    auto writer = Shard::open(codec, out, Mode::WriteStreaming);
    EXPECT_ERROR((void)writer.read_chunk({1, 1}), SHARD_ERR_INVALID_STATE);
    EXPECT_ERROR(writer.write_chunk({1, 1}, std::vector<std::uint8_t>(30)), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR(writer.write_chunk_as<std::uint8_t>({1, 1}, std::vector<std::uint8_t>(32)),
                 SHARD_ERR_BUFFER_SIZE);
    write_all(writer, 1);
    (void)writer.finalize();
    e = EXPECT_ERROR(writer.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 1)),
                     SHARD_ERR_INVALID_STATE);
    CHECK(e && !e->message().empty());
    EXPECT_ERROR((void)writer.finalize(), SHARD_ERR_INVALID_STATE);
    // Unknown flag bits and modes.
    EXPECT_ERROR((void)Shard::open(codec, MemoryIO(), Mode::WriteBuffered, static_cast<Flags>(8)),
                 SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR((void)Shard::open(codec, MemoryIO(), static_cast<Mode>(99)), SHARD_ERR_INVALID_ARGUMENT);
    // The wrong I/O type.
    e = EXPECT_ERROR((void)reader.io<CountedIO>(), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "is not a"));
    CHECK(&reader.io<MemoryIO>() != nullptr);
}

static void test_corrupt_shards() {
    const Codec codec = codec_end();
    // A damaged index: the crc32c does not match.
    auto bytes = written_shard(1).bytes();
    bytes[bytes.size() - 10] ^= 0xff;
    auto e = EXPECT_ERROR((void)Shard::open(codec, MemoryIO(bytes)), SHARD_ERR_CHECKSUM);
    CHECK(e && !e->message().empty() && e->io_code() == 0);
    // Too short to hold an index.
    e = EXPECT_ERROR((void)Shard::open(codec, MemoryIO(std::vector<std::uint8_t>(7, 1))),
                     SHARD_ERR_CORRUPT);
    CHECK(e && !e->message().empty());
    // A damaged inner chunk (zstd frame): the read fails, later reads still work.
    MemoryIO mem = written_shard(1);
    {
        const auto reader = Shard::open(codec, mem);
        const auto loc = reader.chunk_info({1, 1});
        auto b = mem.bytes();
        for (std::uint64_t i = 0; i < 4 && i < loc.nbytes; i++) b[loc.offset + i] ^= 0x5a;
        mem.set(b);
        e = EXPECT_ERROR((void)reader.read_chunk({1, 1}), SHARD_ERR_CORRUPT);
        CHECK(e && !e->message().empty());
        CHECK(reader.read_chunk_as<std::uint16_t>({2, 2}) == chunk_values(2, 2, 1));
    }
}

static void test_host_io_error_code() {
    const Codec codec = codec_end();
    MemoryIO mem = written_shard(1);
    ThrowingIO io{mem, "read", Kind::IoErr};
    auto armed = io.armed;
    *armed = false;
    const auto shard = Shard::open(codec, io);
    *armed = true;
    auto e = EXPECT_ERROR((void)shard.read_chunk({1, 1}), SHARD_ERR_IO);
    if (e) {
        CHECK(e->io_code() == 4242);
        CHECK(contains(e->message(), "read"));
        CHECK(e->host_message() == "host error in read");
        CHECK(contains(e->what(), "host error in read"));
    }
    // The next, successful call does not report the old host message.
    *armed = false;
    CHECK(shard.read_chunk_as<std::uint16_t>({1, 1}) == chunk_values(1, 1, 1));
    e = EXPECT_ERROR((void)shard.read_chunk({9, 9}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->host_message().empty() && e->io_code() == 0);
}

static void test_contract_violation() {
    const Codec codec = codec_end();
    struct Liar {
        MemoryIO mem;
        std::size_t read(std::uint64_t, span<std::uint8_t> buf) { return buf.size() + 1; }
        std::optional<std::uint64_t> size() { return mem.size(); }
    };
    auto e = EXPECT_ERROR((void)Shard::open(codec, Liar{written_shard(1)}), SHARD_ERR_IO);
    CHECK(e && e->io_code() == SHARD_IO_CONTRACT_VIOLATION && !e->message().empty());
}

static void test_missing_callbacks() {
    const Codec codec = codec_end();
    // An index at the end needs read_suffix or size.
    auto e = EXPECT_ERROR((void)Shard::open(codec, ReadOnlyIO{written_shard(1)}), SHARD_ERR_UNSUPPORTED);
    CHECK(e && !e->message().empty());
    // With the index at the start, read alone is enough to read.
    const Codec start = Codec::from_config(CFG_START, "uint16", {16, 16}, "0");
    MemoryIO mem;
    {
        auto w = Shard::open(start, mem, Mode::WriteBuffered);
        write_all(w, 4);
        (void)w.finalize();
    }
    CHECK(reads_as(Shard::open(start, ReadOnlyIO{mem}), 4));
    // Writing needs write.
    auto w = Shard::open(codec, ReadOnlyIO{MemoryIO()}, Mode::WriteStreaming);
    e = EXPECT_ERROR(w.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 1)), SHARD_ERR_UNSUPPORTED);
    CHECK(e && contains(e->message(), "write"));
    // Removing an all-fill shard needs remove (CountedIO has none) once something was written.
    MemoryIO existing = written_shard(1);
    auto u = Shard::open(codec, CountedIO(existing), Mode::UpdateAppend);
    for (std::uint64_t cy = 0; cy < 4; cy++)
        for (std::uint64_t cx = 0; cx < 4; cx++) u.erase_chunk({cy, cx});
    EXPECT_ERROR((void)u.finalize(), SHARD_ERR_UNSUPPORTED);
}

// Every exception kind from every callback surfaces as Error(SHARD_ERR_IO) with the code the
// trampoline chose, and nothing crashes (ASan/UBSan builds run this too).
static void test_throwing_adapter() {
    const Codec codec = codec_end();
    struct KindCase {
        Kind kind;
        std::int32_t code;
        const char *host;
    };
    const KindCase kinds[] = {
        {Kind::Runtime, zarrshard::io_code_exception, "boom in "},
        {Kind::Int, zarrshard::io_code_unknown_exception, "not a std::exception"},
        {Kind::IoErr, 4242, "host error in "},
        {Kind::System, ENOSPC, "disk full"},
        {Kind::BadAlloc, ENOMEM, "alloc"},
    };
    int live_before = g_live;
    for (const auto &k : kinds) {
        const std::string label = "kind " + std::to_string(static_cast<int>(k.kind));
        auto check = [&](const std::optional<Error> &e, const char *where) {
            if (!e) {
                check_failed(__LINE__, label + " " + where + ": no Error");
                return;
            }
            if (e->io_code() != k.code)
                check_failed(__LINE__, label + " " + where + ": io_code " + std::to_string(e->io_code()));
            if (!contains(e->host_message(), k.host))
                check_failed(__LINE__, label + " " + where + ": host message '" + e->host_message() + "'");
            if (!contains(e->message(), where))
                check_failed(__LINE__, label + " " + where + ": message '" + e->message() + "'");
        };
        // read_suffix at open.
        check(EXPECT_ERROR((void)Shard::open(codec, ThrowingIO{written_shard(1), "read_suffix", k.kind}),
                           SHARD_ERR_IO),
              "read_suffix");
        // read, after a good open.
        {
            ThrowingIO io{written_shard(1), "read", k.kind};
            *io.armed = false;
            auto armed = io.armed;
            const auto shard = Shard::open(codec, io);
            *armed = true;
            check(EXPECT_ERROR((void)shard.read_chunk({2, 2}), SHARD_ERR_IO), "read");
            *armed = false;
            CHECK(shard.read_chunk_as<std::uint16_t>({2, 2}) == chunk_values(2, 2, 1));
        }
        // write, streaming.
        {
            auto shard = Shard::open(codec, ThrowingIO{MemoryIO(), "write", k.kind}, Mode::WriteStreaming);
            check(EXPECT_ERROR(shard.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 1)),
                               SHARD_ERR_IO),
                  "write");
        }
        // write, buffered: the whole object at finalize.
        {
            auto shard = Shard::open(codec, ThrowingIO{MemoryIO(), "write", k.kind}, Mode::WriteBuffered);
            write_all(shard, 1);
            check(EXPECT_ERROR((void)shard.finalize(), SHARD_ERR_IO), "write");
        }
        // truncate at a streaming finalize.
        {
            auto shard = Shard::open(codec, ThrowingIO{MemoryIO(), "truncate", k.kind}, Mode::WriteStreaming);
            write_all(shard, 1);
            check(EXPECT_ERROR((void)shard.finalize(), SHARD_ERR_IO), "truncate");
        }
        // remove when nothing is stored.
        {
            auto shard = Shard::open(codec, ThrowingIO{written_shard(1), "remove", k.kind}, Mode::UpdateInPlace);
            for (std::uint64_t cy = 0; cy < 4; cy++)
                for (std::uint64_t cx = 0; cx < 4; cx++) shard.erase_chunk({cy, cx});
            check(EXPECT_ERROR((void)shard.finalize(), SHARD_ERR_IO), "remove");
        }
    }
    // size (no read_suffix): `throw 42`.
    auto e = EXPECT_ERROR((void)Shard::open(codec, ThrowingSizeIO{written_shard(1)}), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_unknown_exception && contains(e->message(), "size"));
    // NotFound from remove means "already gone": success.
    {
        auto shard = Shard::open(codec, ThrowingIO{written_shard(1), "remove", Kind::NotFoundEx},
                                 Mode::UpdateInPlace);
        for (std::uint64_t cy = 0; cy < 4; cy++)
            for (std::uint64_t cx = 0; cx < 4; cx++) shard.erase_chunk({cy, cx});
        CHECK(shard.finalize() == 0);
    }
    CHECK(g_live == live_before);
}

// ---- tests: ownership, moves, threads -----------------------------------------------------------

// An I/O object with begin_new … discard_new: a buffered shard is a new object committed at the
// end with the bytes the in-place path writes; a failing write_new or commit_new leaves the old
// object, as Error(SHARD_ERR_IO) with the host's code.
static void test_new_objects() {
    const Codec codec = codec_end();
    const std::vector<std::uint8_t> want = written_shard(1).bytes();
    NewObjectIO io;
    {
        auto shard = Shard::open(codec, io, Mode::WriteBuffered);
        write_all(shard, 1);
        CHECK(shard.finalize() == want.size());
    }
    CHECK(io.mem.bytes() == want);
    CHECK(io.st->begins == 1 && io.st->commits == 1 && io.st->discards == 0);
    CHECK(io.st->in_place == 0);
    for (const std::string where : {"write_new", "commit_new"}) {
        NewObjectIO f;
        f.mem.set(want);
        f.st->fail = where;
        int code = 0;
        try {
            auto shard = Shard::open(codec, f, Mode::WriteBuffered);
            write_all(shard, 2);
            (void)shard.finalize();
        } catch (const zarrshard::Error &e) {
            code = e.status() == SHARD_ERR_IO ? e.io_code() : -1;
        }
        CHECK(code == (where == "write_new" ? 77 : 78));
        CHECK(f.mem.bytes() == want); // the old shard
        CHECK(f.st->discards == (where == "write_new" ? 1 : 0));
        CHECK(f.st->commits == (where == "commit_new" ? 1 : 0));
        CHECK(f.st->in_place == 0);
    }
}

static void test_io_lifetime() {
    const Codec codec = codec_end();
    MemoryIO mem = written_shard(1);
    CHECK(g_live == 0);
    {
        // A failed open destroys the adapter (and the moved-in object) before throwing.
        EXPECT_ERROR((void)Shard::open(codec, CountedIO(MemoryIO(std::vector<std::uint8_t>(300, 9)))),
                     SHARD_ERR_CHECKSUM);
        CHECK(g_live == 0);
    }
    {
        auto shard = Shard::open(codec, CountedIO(mem));
        CHECK(g_live == 1); // the handle's, the temporary is gone
        CHECK(&shard.io<CountedIO>().mem != nullptr);
        shard.close();
        CHECK(g_live == 0);
        shard.close(); // idempotent
        CHECK(!shard);
    }
    {
        // Shared ownership: the object outlives the shard, io<T>() reaches it.
        auto shared = std::make_shared<CountedIO>(mem);
        auto shard = Shard::open(codec, shared);
        CHECK(shared.use_count() == 2);
        CHECK(&shard.io<CountedIO>() == shared.get());
        CHECK(&shard.io<std::shared_ptr<CountedIO>>() != nullptr);
        CHECK(reads_as(shard, 1));
        shard.close();
        CHECK(shared.use_count() == 1 && g_live == 1);
    }
    CHECK(g_live == 0);
    {
        // Borrowed with std::ref: nothing copied, nothing destroyed by the shard.
        CountedIO local(mem);
        {
            auto shard = Shard::open(codec, std::ref(local));
            CHECK(&shard.io<CountedIO>() == &local);
            CHECK(g_live == 1);
        }
        CHECK(g_live == 1);
    }
    {
        // A read-only object through a pointer to const: no write callback.
        auto shard = Shard::open(codec, std::shared_ptr<const MemoryIO>(std::make_shared<MemoryIO>(mem)));
        CHECK(reads_as(shard, 1) && shard.io<const MemoryIO>().exists());
        auto w = Shard::open(codec, std::shared_ptr<const MemoryIO>(std::make_shared<MemoryIO>()),
                             Mode::WriteStreaming);
        EXPECT_ERROR(w.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 1)), SHARD_ERR_UNSUPPORTED);
    }
    {
        auto unique = std::make_unique<CountedIO>(mem);
        auto shard = Shard::open(codec, std::move(unique));
        CHECK(g_live == 1 && reads_as(shard, 1));
    }
    CHECK(g_live == 0);
}

static void test_move_semantics() {
    Codec a = codec_end();
    Codec b = std::move(a);
    CHECK(!a && b);
    auto e = EXPECT_ERROR((void)a.rank(), SHARD_ERR_NULL_POINTER);
    CHECK(e && !e->message().empty());
    EXPECT_ERROR((void)a.data_type(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Shard::open(a, MemoryIO()), SHARD_ERR_NULL_POINTER);
    a = std::move(b); // into a moved-from codec
    CHECK(a && !b && a.rank() == 2);
    Codec c = codec_end();
    c = std::move(a); // frees c's own codec
    CHECK(c.num_chunks() == 16);

    MemoryIO mem = written_shard(1);
    Shard s1 = Shard::open(c, CountedIO(mem));
    // Shards keep their own reference to the codec.
    c = Codec();
    CHECK(reads_as(s1, 1));
    Shard s2 = std::move(s1);
    CHECK(!s1 && s2 && g_live == 1);
    EXPECT_ERROR((void)s1.read_chunk({1, 1}), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)s1.io<CountedIO>(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)s1.finalize(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)s1.read_chunk_as<std::uint32_t>({1, 1}), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)s1.read_chunks({{1, 1}}), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)s1.chunk_info({1, 1}), SHARD_ERR_NULL_POINTER);
    const Shard never_opened;
    EXPECT_ERROR((void)never_opened.read_chunks({1}, span<std::uint8_t>()), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)never_opened.read_chunk_raw({1, 1}), SHARD_ERR_NULL_POINTER);
    CHECK(reads_as(s2, 1));
    Shard s3 = Shard::open(codec_end(), CountedIO(mem));
    CHECK(g_live == 2);
    s2 = std::move(s3); // closes s2's handle
    CHECK(g_live == 1 && reads_as(s2, 1));
    s1 = std::move(s3); // moved-from into moved-from
    CHECK(!s1 && !s3);
    s2 = Shard();
    CHECK(g_live == 0);

    // MemoryIO copies share one object.
    MemoryIO m1;
    MemoryIO m2 = m1;
    m2.set({1, 2, 3});
    CHECK(m1.exists() && m1.bytes().size() == 3 && m1.use_count() == 2);
}

static void test_concurrent_reads() {
    const Codec codec = codec_end();
    const auto shard = Shard::open(codec, written_shard(1));
    std::atomic<int> bad{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([&shard, &bad, t] {
            try {
                for (int round = 0; round < 25; round++) {
                    for (std::uint64_t i = 0; i < 16; i++) {
                        const std::uint64_t cy = (i + static_cast<std::uint64_t>(t)) % 4, cx = i / 4;
                        if (shard.read_chunk_as<std::uint16_t>({cy, cx}) != chunk_values(cy, cx, 1)) bad++;
                    }
                    // Errors on one thread carry that thread's message.
                    try {
                        (void)shard.read_chunk({7, 7});
                        bad++;
                    } catch (const Error &e) {
                        if (e.status() != SHARD_ERR_INVALID_ARGUMENT || e.message().empty()) bad++;
                    }
                }
            } catch (...) {
                bad++;
            }
        });
    }
    for (auto &th : threads) th.join();
    CHECK(bad == 0);
}

static void test_busy_write_from_two_threads() {
    const Codec codec = codec_end();
    struct BlockingIO {
        MemoryIO mem;
        std::shared_ptr<std::promise<void>> entered = std::make_shared<std::promise<void>>();
        std::shared_future<void> release;
        std::size_t read(std::uint64_t o, span<std::uint8_t> b) { return mem.read(o, b); }
        std::optional<std::uint64_t> size() { return mem.size(); }
        void write(std::uint64_t o, span<const std::uint8_t> d) {
            if (entered) {
                entered->set_value();
                entered.reset();
                release.wait();
            }
            mem.write(o, d);
        }
    };
    std::promise<void> release;
    BlockingIO io;
    io.release = release.get_future().share();
    auto entered = io.entered->get_future();
    auto shard = Shard::open(codec, io, Mode::WriteStreaming);
    std::thread writer([&shard] { shard.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 1)); });
    const bool in_write = entered.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
    CHECK(in_write);
    if (in_write) {
        auto e = EXPECT_ERROR(shard.write_chunk_as<std::uint16_t>({2, 2}, chunk_values(2, 2, 1)),
                              SHARD_ERR_BUSY);
        CHECK(e && !e->message().empty());
    }
    release.set_value();
    writer.join();
    shard.write_chunk_as<std::uint16_t>({2, 2}, chunk_values(2, 2, 1));
    CHECK(shard.finalize() > 0);
}

static void test_two_translation_units() {
    const Codec codec = codec_end();
    MemoryIO mem;
    const std::uint64_t size = tu2::write_shard(codec, mem, 7);
    CHECK(size > 0 && size == mem.bytes().size());
    CHECK(reads_as(Shard::open(codec, mem), 7));
    const Error e = tu2::failing_read(codec);
    CHECK(e.status() == SHARD_ERR_IO);
    CHECK(e.io_code() == zarrshard::io_code_exception);
    CHECK(e.host_message() == "boom from the second translation unit");
}

// ---- the zarr-python fixture --------------------------------------------------------------------

static void test_zarr_python_fixture() {
    const std::string dir = g_fixture + "/fixture.zarr";
    std::ifstream meta(dir + "/zarr.json");
    CHECK(meta.good());
    std::stringstream text;
    text << meta.rdbuf();
    const Codec codec = Codec::from_zarr_json(text.str());
    const auto raw = file_bytes(g_fixture + "/fixture.raw");
    CHECK(raw.size() == 64 * 64 * 2);
    CHECK(codec.array_shape() == (std::vector<std::uint64_t>{64, 64}));
    CHECK(codec.data_type() == "uint16");
    const auto grid = codec.grid_shape();
    const auto per = codec.chunks_per_shard();
    const auto inner = codec.inner_chunk_shape();
    const auto shard_shape = codec.shard_shape();
    CHECK(grid == (std::vector<std::uint64_t>{2, 2}) && per == (std::vector<std::uint64_t>{2, 2}));
    CHECK(inner == (std::vector<std::uint64_t>{16, 16}));
    if (raw.size() != 64 * 64 * 2 || grid.size() != 2) return;
    int compared = 0, mismatched = 0, empty = 0;
    for (std::uint64_t gy = 0; gy < grid[0]; gy++) {
        for (std::uint64_t gx = 0; gx < grid[1]; gx++) {
            const std::string key = codec.shard_key({gy, gx});
            CHECK(key == "c/" + std::to_string(gy) + "/" + std::to_string(gx));
            const auto shard = Shard::open(codec, LibraryIO::file(dir + "/" + key));
            for (std::uint64_t cy = 0; cy < per[0]; cy++) {
                for (std::uint64_t cx = 0; cx < per[1]; cx++) {
                    const auto got = shard.read_chunk_as<std::uint16_t>({cy, cx});
                    compared++;
                    if (shard.chunk_info({cy, cx}).empty) empty++;
                    bool same = got.size() == inner[0] * inner[1];
                    for (std::uint64_t r = 0; same && r < inner[0]; r++) {
                        for (std::uint64_t c = 0; c < inner[1]; c++) {
                            const std::uint64_t y = gy * shard_shape[0] + cy * inner[0] + r;
                            const std::uint64_t x = gx * shard_shape[1] + cx * inner[1] + c;
                            const std::size_t at = static_cast<std::size_t>((y * 64 + x) * 2);
                            const auto want = static_cast<std::uint16_t>(raw[at] | (raw[at + 1] << 8));
                            if (got[r * inner[1] + c] != want) {
                                same = false;
                                break;
                            }
                        }
                    }
                    if (!same) {
                        mismatched++;
                        std::cout << "    shard " << key << " inner chunk [" << cy << ", " << cx << "] differs\n";
                    }
                }
            }
        }
    }
    CHECK(compared == 16);
    CHECK(mismatched == 0);
    CHECK(empty == 4); // the top-left inner chunk of every shard is fill value, so not stored
    std::cout << "    fixture: " << compared << " inner chunks compared with fixture.raw, " << empty
              << " empty\n";
}

// ---- Array: regions over a store ----------------------------------------------------------------

using zarrshard::Array;
using zarrshard::Existing;
using zarrshard::Store;
using zarrshard::MemoryStore;
using zarrshard::StoreFlags;

static std::string read_text(const std::string &path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// The sub-array [start, start + shape) of a row-major 2-D array of `cols` columns.
template <class T>
static std::vector<T> sub2d(const std::vector<T> &all, std::size_t cols, std::uint64_t r0,
                            std::uint64_t c0, std::uint64_t rows, std::uint64_t ncols) {
    std::vector<T> v;
    for (std::uint64_t r = r0; r < r0 + rows; r++)
        for (std::uint64_t c = c0; c < c0 + ncols; c++) v.push_back(all[r * cols + c]);
    return v;
}

// Regions of the zarr-python fixture (64x64 uint16, 2x2 shards of 2x2 inner chunks) read
// through a directory store equal the same regions of fixture.raw.
static void test_array_fixture_regions() {
    const std::string dir = g_fixture + "/fixture.zarr";
    const auto raw = file_bytes(g_fixture + "/fixture.raw");
    CHECK(raw.size() == 64 * 64 * 2);
    if (raw.size() != 64 * 64 * 2) return;
    std::vector<std::uint16_t> want(64 * 64);
    for (std::size_t i = 0; i < want.size(); i++)
        want[i] = static_cast<std::uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
    const Array array = Array::open(Store::directory(dir)); // the root's zarr.json
    CHECK(array.shape() == (std::vector<std::uint64_t>{64, 64}));
    CHECK(array.codec().array_shape() == (std::vector<std::uint64_t>{64, 64}));
    CHECK(array.codec().data_type() == "uint16");
    // The whole array, as bytes (the host is little-endian, as fixture.raw).
    std::vector<std::uint8_t> all(raw.size());
    array.read_region({0, 0}, {64, 64}, all);
    CHECK(all == raw);
    struct R {
        std::uint64_t r0, c0, rows, cols;
    };
    const R regions[] = {
        {10, 20, 40, 30}, // across all four shards
        {0, 0, 16, 16},   // exactly the empty top-left inner chunk: all fill value
        {5, 3, 1, 1},     // one element
        {31, 0, 2, 64},   // two rows across the shard boundary
        {32, 48, 32, 16}, // one inner chunk column of a shard
        {63, 63, 1, 1},   // the last element
        {20, 7, 0, 5},    // empty
    };
    int compared = 0;
    for (const R &g : regions) {
        const auto got = array.read_region<std::uint16_t>({g.r0, g.c0}, {g.rows, g.cols});
        if (got != sub2d(want, 64, g.r0, g.c0, g.rows, g.cols)) {
            check_failed(__LINE__, "region at [" + std::to_string(g.r0) + ", " + std::to_string(g.c0) +
                                       "] differs from fixture.raw");
        }
        compared++;
    }
    CHECK(array.read_region<std::uint16_t>({0, 0}, {16, 16}) == std::vector<std::uint16_t>(256, 0));
    // Whatever the coalescing gap (only touching ranges, or whole spans), the same values.
    for (const std::uint64_t gap : {std::uint64_t{0}, std::uint64_t{1} << 30}) {
        array.set_coalesce_gap(gap);
        CHECK(array.read_region<std::uint16_t>({10, 20}, {40, 30}) == sub2d(want, 64, 10, 20, 40, 30));
    }
    // Many threads reading regions of one array at once.
    std::vector<std::future<bool>> readers;
    for (std::uint64_t t = 0; t < 4; t++)
        readers.push_back(std::async(std::launch::async, [&, t] {
            bool same = true;
            for (std::uint64_t i = 0; i < 8; i++) {
                const std::uint64_t r0 = (t * 13 + i * 7) % 48, c0 = (t * 5 + i * 11) % 40;
                same = same && array.read_region<std::uint16_t>({r0, c0}, {16, 24}) ==
                                   sub2d(want, 64, r0, c0, 16, 24);
            }
            return same;
        }));
    for (auto &r : readers) CHECK(r.get());
    std::cout << "    fixture: " << compared + 1 << " regions compared with fixture.raw\n";
}

// The reference set of the zarr-python fixture (4x4 inner chunks in 2x2 shards): every stored
// inner chunk is [URL/shard key, offset, nbytes] exactly as each shard's own index says (read
// here with Shard::chunk_info), every empty one is left out; version 1, a name and the v2 keys
// change what they must; a version that does not exist is refused.
static void test_array_kerchunk_refs() {
    const std::string dir = g_fixture + "/fixture.zarr";
    const Array array = Array::open(read_text(dir + "/zarr.json"), Store::directory(dir));
    const Codec codec = array.codec();
    const std::string v0 = array.kerchunk_refs("file:///data/fx", 0);
    CHECK(v0.rfind("{\"zarr.json\":", 0) == 0);
    int stored = 0, empty = 0;
    for (std::uint64_t i = 0; i < 4; i++) {
        for (std::uint64_t j = 0; j < 4; j++) {
            const std::string shard_key = "c/" + std::to_string(i / 2) + "/" + std::to_string(j / 2);
            const auto shard = Shard::open(codec, LibraryIO::file(dir + "/" + shard_key));
            const auto loc = shard.chunk_info({i % 2, j % 2});
            const std::string key = "\"c/" + std::to_string(i) + "/" + std::to_string(j) + "\":";
            if (loc.empty) {
                empty++;
                CHECK(v0.find(key) == std::string::npos);
            } else {
                stored++;
                const std::string entry = key + "[\"file:///data/fx/" + shard_key + "\"," +
                                          std::to_string(loc.offset) + "," +
                                          std::to_string(loc.nbytes) + "]";
                if (v0.find(entry) == std::string::npos)
                    check_failed(__LINE__, "missing " + entry);
            }
        }
    }
    CHECK(stored > 0 && empty > 0);
    const std::string v1 = array.kerchunk_refs("file:///data/fx");
    CHECK(v1.find("\"version\":1") != std::string::npos && v1.find("\"refs\":") != std::string::npos);
    CHECK(array.kerchunk_refs("file:///data/fx", 0, 3, "img").find("\"img/c/0/1\":") != std::string::npos);
    const std::string v2 = array.kerchunk_refs("file:///data/fx", 0, 2);
    CHECK(v2.find("\".zarray\":") != std::string::npos && v2.find("\"0.1\":") != std::string::npos);
    (void)EXPECT_ERROR((void)array.kerchunk_refs("file:///data/fx", 2), SHARD_ERR_INVALID_ARGUMENT);
    (void)EXPECT_ERROR((void)array.kerchunk_refs("file:///data/fx", 0, 4), SHARD_ERR_INVALID_ARGUMENT);
    std::cout << "    kerchunk refs: " << stored << " stored inner chunks at their index entries, "
              << empty << " empty left out\n";
}

// The Parquet reference set of the fixture (64x64 uint16, 16x16 inner chunks: 16 chunks)
// written through a MemoryStore: the objects are exactly NAME/refs.<n>.parq for the
// ceil(16 / record_size) files fsspec's record layout needs, each a Parquet file (PAR1 at both
// ends), and .zmetadata (written last) with that record size and NAME/.zarray. The set with
// record size 3 is also written to SCRATCH/refs-parquet, where run.sh reads it with fsspec's
// ReferenceFileSystem and zarr-python (tests/check_parquet_refs.py) and compares every value
// with fixture.raw. The store is borrowed (never copied or moved); errors of the arguments
// and of the store surface as Error with the library's status.
static void test_array_kerchunk_refs_parquet() {
    const std::string dir = g_fixture + "/fixture.zarr";
    const Array array = Array::open(read_text(dir + "/zarr.json"), Store::directory(dir));
    const Codec codec = array.codec();
    // Independent facts: the chunk count from the array and inner chunk shapes.
    const auto shape = codec.array_shape(), inner = codec.inner_chunk_shape();
    const std::uint64_t chunks = ((shape[0] + inner[0] - 1) / inner[0]) * ((shape[1] + inner[1] - 1) / inner[1]);
    CHECK(chunks == 16);
    const std::string url = "file://" + dir;
    // A store that records the keys it opens and counts copies and moves of itself.
    static int copies_and_moves;
    copies_and_moves = 0;
    struct LoggingStore {
        MemoryStore mem;
        std::vector<std::string> opened;
        LoggingStore() = default;
        LoggingStore(const LoggingStore &o) : mem(o.mem), opened(o.opened) { copies_and_moves++; }
        LoggingStore(LoggingStore &&o) noexcept : mem(o.mem), opened(o.opened) { copies_and_moves++; }
        MemoryIO open(std::string_view key) {
            opened.emplace_back(key);
            return mem.open(key);
        }
    };
    auto is_parquet = [](const std::vector<std::uint8_t> &b) {
        return b.size() > 8 && std::memcmp(b.data(), "PAR1", 4) == 0 &&
               std::memcmp(b.data() + b.size() - 4, "PAR1", 4) == 0;
    };
    for (const std::uint64_t record_size : {std::uint64_t{3}, std::uint64_t{5}, std::uint64_t{16},
                                            std::uint64_t{10000}}) {
        LoggingStore out;
        array.kerchunk_refs_parquet(out, url, "fixture", record_size);
        const std::uint64_t files = (chunks + record_size - 1) / record_size;
        std::vector<std::string> want{".zmetadata"};
        for (std::uint64_t n = 0; n < files; n++) want.push_back("fixture/refs." + std::to_string(n) + ".parq");
        std::sort(want.begin(), want.end());
        if (out.mem.keys() != want)
            check_failed(__LINE__, "record size " + std::to_string(record_size) + ": " +
                                       std::to_string(out.mem.keys().size()) + " objects, expected " +
                                       std::to_string(want.size()));
        CHECK(copies_and_moves == 0);                                        // borrowed
        CHECK(out.opened.size() == files + 1 && out.opened.back() == ".zmetadata"); // written last
        for (std::uint64_t n = 0; n < files; n++)
            CHECK(is_parquet(out.mem.open("fixture/refs." + std::to_string(n) + ".parq").bytes()));
        const auto zm = out.mem.open(".zmetadata").bytes();
        const std::string zmetadata(zm.begin(), zm.end());
        CHECK(contains(zmetadata, "\"record_size\":" + std::to_string(record_size)));
        CHECK(contains(zmetadata, "\"fixture/.zarray\"") && contains(zmetadata, "\".zgroup\""));
        CHECK(contains(zmetadata, "\"shape\":[64,64]") && contains(zmetadata, "\"chunks\":[16,16]"));
        if (record_size != 3) continue;
        // The set for run.sh's reader: SCRATCH/refs-parquet/{.zmetadata, fixture/refs.N.parq}.
        const std::string root = scratch("refs-parquet");
        ::mkdir(root.c_str(), 0755);
        ::mkdir((root + "/fixture").c_str(), 0755);
        for (const auto &key : out.mem.keys()) {
            const auto bytes = out.mem.open(key).bytes();
            std::ofstream f(root + "/" + key, std::ios::binary);
            f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
            CHECK(f.good());
        }
    }
    // Through a smart pointer and std::ref; a temporary store works too (it lives for the call).
    auto shared = std::make_shared<MemoryStore>();
    array.kerchunk_refs_parquet(shared, url, "fixture", 16);
    CHECK(shared->keys().size() == 2);
    MemoryStore by_ref;
    array.kerchunk_refs_parquet(std::ref(by_ref), url, "img", 8);
    CHECK(by_ref.keys() == (std::vector<std::string>{".zmetadata", "img/refs.0.parq", "img/refs.1.parq"}));
    array.kerchunk_refs_parquet(MemoryStore(), url, "fixture");
    array.kerchunk_refs_parquet(LoggingStore(), url, "fixture", 4); // a temporary: not moved either
    CHECK(copies_and_moves == 0);
    // Argument errors: the library's status and message; nothing written.
    MemoryStore none;
    auto e = EXPECT_ERROR(array.kerchunk_refs_parquet(none, url, "", 3), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "invalid array name"));
    e = EXPECT_ERROR(array.kerchunk_refs_parquet(none, url, "fixture", 0), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "record size must be at least 1"));
    EXPECT_ERROR(array.kerchunk_refs_parquet(none, url, "../up", 3), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(array.kerchunk_refs_parquet(none, url, ".zattrs", 3), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(none.keys().empty());
    EXPECT_ERROR(array.kerchunk_refs_parquet(std::shared_ptr<MemoryStore>(), url, "fixture"),
                 SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR(Array().kerchunk_refs_parquet(none, url, "fixture"), SHARD_ERR_NULL_POINTER);
    // A store whose open throws: SHARD_ERR_IO with its code and text.
    struct DeniedStore {
        MemoryIO open(std::string_view key) {
            throw zarrshard::IoError(EACCES, "no write access to " + std::string(key));
        }
    };
    e = EXPECT_ERROR(array.kerchunk_refs_parquet(DeniedStore{}, url, "fixture", 3), SHARD_ERR_IO);
    CHECK(e && e->io_code() == EACCES && e->host_message() == "no write access to fixture/refs.0.parq");
    // An I/O object without write cannot take a reference file.
    struct ReadOnlyStore {
        ReadOnlyIO open(std::string_view) { return ReadOnlyIO{MemoryIO()}; }
    };
    EXPECT_ERROR(array.kerchunk_refs_parquet(ReadOnlyStore{}, url, "fixture", 3), SHARD_ERR_UNSUPPORTED);
    // Not sharded: no reference set (inner chunks are not byte ranges of a shard).
    const std::string plain_json =
        R"({"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
            "codecs": [{"name": "bytes"}]})";
    EXPECT_ERROR(Array::open(plain_json, MemoryStore()).kerchunk_refs_parquet(none, url, "fixture"),
                 SHARD_ERR_INVALID_ARGUMENT);
    CHECK(none.keys().empty());
    std::cout << "    parquet refs: " << chunks << " chunks in record files of 3, 5, 16 and 10000 rows; "
              << "the set of 3 written to " << scratch("refs-parquet") << "\n";
}

// The Parquet reference set of the fixture written into a local directory
// (kerchunk_refs_parquet_dir, shard_array_refs_parquet_dir): for record sizes 3, 5, 16 and
// 10000, into a directory that does not exist yet (created with a missing parent) and into an
// existing empty one, the directory then holds exactly the objects kerchunk_refs_parquet wrote
// into a MemoryStore for the same arguments (no other file, no temporary, no other directory),
// each file byte for byte equal to its object. The path's native bytes reach the library
// (a name with a byte that is not UTF-8). A non-empty directory or a regular file is
// SHARD_ERR_INVALID_ARGUMENT and stays as it was; a path below a regular file is SHARD_ERR_IO
// with io_code ENOTDIR; name, record size, an empty path or one containing NUL are refused
// before anything is created; an empty Array is SHARD_ERR_NULL_POINTER. The set of record
// size 5 is left in SCRATCH/refs-parquet-dir, which run.sh reads back with fsspec and
// zarr-python (tests/check_parquet_refs.py) as it does SCRATCH/refs-parquet.
static void test_array_kerchunk_refs_parquet_dir() {
    namespace fs = std::filesystem;
    const std::string dir = g_fixture + "/fixture.zarr";
    const Array array = Array::open(read_text(dir + "/zarr.json"), Store::directory(dir));
    const std::string url = "file://" + dir;
    // Every entry below `root`, relative, directories marked with a trailing '/', sorted
    // ("(no directory)" when `root` is not one).
    auto listing = [](const fs::path &root) {
        std::vector<std::string> entries;
        std::error_code ec;
        if (!fs::is_directory(root, ec)) return std::vector<std::string>{"(no directory)"};
        for (const auto &e : fs::recursive_directory_iterator(root))
            entries.push_back(e.path().lexically_relative(root).generic_string() +
                              (e.is_directory() ? "/" : ""));
        std::sort(entries.begin(), entries.end());
        return entries;
    };
    // `root` holds exactly the store's objects, each file equal to its object.
    auto same_as_store = [&](const fs::path &root, MemoryStore &mem, const std::string &what) {
        std::vector<std::string> want{"fixture/"};
        for (const auto &key : mem.keys()) want.push_back(key);
        std::sort(want.begin(), want.end());
        const auto got = listing(root);
        if (got != want) {
            std::string names;
            for (const auto &g : got) names += " " + g;
            check_failed(__LINE__, what + ": the directory holds" + names);
            return false;
        }
        bool same = true;
        for (const auto &key : mem.keys()) {
            if (file_bytes((root / key).string()) != mem.open(key).bytes()) {
                check_failed(__LINE__, what + ": " + key + " differs from the store's object");
                same = false;
            }
        }
        return same;
    };
    int compared = 0;
    for (const std::uint64_t record_size : {std::uint64_t{3}, std::uint64_t{5}, std::uint64_t{16},
                                            std::uint64_t{10000}}) {
        MemoryStore mem;
        array.kerchunk_refs_parquet(mem, url, "fixture", record_size);
        CHECK(mem.keys().size() >= 2);
        const std::string rs = std::to_string(record_size);
        // A directory that does not exist yet, below a parent that does not exist either.
        const fs::path fresh = fs::path(scratch("parquet-dir-" + rs)) / "nested" / "set";
        CHECK(!fs::exists(fresh.parent_path()));
        array.kerchunk_refs_parquet_dir(fresh, url, "fixture", record_size);
        if (same_as_store(fresh, mem, "new directory, record size " + rs)) compared++;
        // An existing empty directory.
        const fs::path empty = scratch("parquet-dir-empty-" + rs);
        fs::create_directory(empty);
        array.kerchunk_refs_parquet_dir(empty, url, "fixture", record_size);
        if (same_as_store(empty, mem, "empty directory, record size " + rs)) compared++;
        if (record_size == 5) {
            // The set run.sh reads back: SCRATCH/refs-parquet-dir (as the tool writes it).
            array.kerchunk_refs_parquet_dir(scratch("refs-parquet-dir"), url, "fixture", 5);
            if (same_as_store(scratch("refs-parquet-dir"), mem, "refs-parquet-dir")) compared++;
        }
    }
    // The path's bytes as they are: a directory name with 0xff (not UTF-8) and a space.
    {
        MemoryStore mem;
        array.kerchunk_refs_parquet(mem, url, "fixture", 7);
        const std::string raw_name = scratch("parquet dir \xff");
        array.kerchunk_refs_parquet_dir(fs::path(raw_name), url, "fixture", 7);
        CHECK(file_exists(raw_name + "/.zmetadata"));
        if (same_as_store(raw_name, mem, "non-UTF-8 name")) compared++;
    }
    // A non-empty directory: refused before any shard is read, left as it was.
    const fs::path full = scratch("parquet-dir-full");
    fs::create_directory(full);
    std::ofstream(full / "keep.txt") << "mine";
    auto e = EXPECT_ERROR(array.kerchunk_refs_parquet_dir(full, url, "fixture", 3), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "not an empty directory") && e->io_code() == 0);
    CHECK(listing(full) == std::vector<std::string>{"keep.txt"});
    // A regular file as the directory: refused the same way, unchanged.
    const fs::path file = full / "keep.txt";
    e = EXPECT_ERROR(array.kerchunk_refs_parquet_dir(file, url, "fixture", 3), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "not an empty directory"));
    CHECK(read_text(file.string()) == "mine");
    // A path below a regular file cannot be created: SHARD_ERR_IO with the OS's ENOTDIR.
    e = EXPECT_ERROR(array.kerchunk_refs_parquet_dir(file / "sub", url, "fixture", 3), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOTDIR);
    CHECK(e && e->host_message().empty());
    CHECK(listing(full) == std::vector<std::string>{"keep.txt"});
    // Arguments refused before anything is created.
    const fs::path never = scratch("parquet-dir-never");
    e = EXPECT_ERROR(array.kerchunk_refs_parquet_dir(never, url, "", 3), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "invalid array name"));
    e = EXPECT_ERROR(array.kerchunk_refs_parquet_dir(never, url, "fixture", 0), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "record size must be at least 1"));
    EXPECT_ERROR(array.kerchunk_refs_parquet_dir(never, url, "../up", 3), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(array.kerchunk_refs_parquet_dir(fs::path(), url, "fixture", 3), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(array.kerchunk_refs_parquet_dir(fs::path(never.native() + std::string(1, '\0') + "x"),
                                                 url, "fixture", 3),
                 SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(Array().kerchunk_refs_parquet_dir(never, url, "fixture"), SHARD_ERR_NULL_POINTER);
    CHECK(!fs::exists(never));
    std::cout << "    parquet refs in a directory: " << compared
              << " directories equal to the MemoryStore sets file for file; the set of 5 written to "
              << scratch("refs-parquet-dir") << "\n";
}

// Regions written through a memory store read back equal to a model of the array kept here;
// every shard stored is also read chunk by chunk with Shard (the single-shard API), and shards
// left all fill value are removed.
static void test_array_write_regions_model() {
    MemoryStore store;
    Array array = Array::open(ZARR_JSON, store); // 32x32 uint16, 16x16 shards, 4x4 chunks
    const Codec codec = array.codec();
    std::vector<std::uint16_t> model(32 * 32, 0);
    CHECK(array.read_region<std::uint16_t>({0, 0}, {32, 32}) == model); // nothing stored
    CHECK(store.keys().empty());
    std::uint32_t rng = 12345;
    auto next = [&](std::uint32_t n) {
        rng = rng * 1103515245u + 12345u;
        return (rng >> 8) % n;
    };
    for (int round = 0; round < 40; round++) {
        const std::uint64_t r0 = next(32), c0 = next(32);
        const std::uint64_t rows = 1 + next(static_cast<std::uint32_t>(32 - r0));
        const std::uint64_t cols = 1 + next(static_cast<std::uint32_t>(32 - c0));
        std::vector<std::uint16_t> values(rows * cols);
        const bool zeros = round % 7 == 6; // sometimes the fill value
        for (std::size_t i = 0; i < values.size(); i++)
            values[i] = zeros ? 0 : static_cast<std::uint16_t>(1 + next(60000));
        array.write_region({r0, c0}, {rows, cols}, values);
        for (std::uint64_t r = 0; r < rows; r++)
            for (std::uint64_t c = 0; c < cols; c++) model[(r0 + r) * 32 + c0 + c] = values[r * cols + c];
        const std::uint64_t q0 = next(32), p0 = next(32);
        const std::uint64_t qr = 1 + next(static_cast<std::uint32_t>(32 - q0));
        const std::uint64_t qc = 1 + next(static_cast<std::uint32_t>(32 - p0));
        if (array.read_region<std::uint16_t>({q0, p0}, {qr, qc}) != sub2d(model, 32, q0, p0, qr, qc))
            check_failed(__LINE__, "round " + std::to_string(round) + ": region read differs");
    }
    CHECK(array.read_region<std::uint16_t>({0, 0}, {32, 32}) == model);
    // Each shard, read on its own with Shard, holds the model's values.
    for (std::uint64_t gy = 0; gy < 2; gy++) {
        for (std::uint64_t gx = 0; gx < 2; gx++) {
            const auto shard = Shard::open(codec, store.open(codec.shard_key({gy, gx})));
            for (std::uint64_t cy = 0; cy < 4; cy++)
                for (std::uint64_t cx = 0; cx < 4; cx++)
                    CHECK(shard.read_chunk_as<std::uint16_t>({cy, cx}) ==
                          sub2d(model, 32, gy * 16 + cy * 4, gx * 16 + cx * 4, 4, 4));
        }
    }
    // Filling a whole shard with the fill value removes it.
    array.write_region({0, 16}, {16, 16}, std::vector<std::uint16_t>(256, 0));
    const auto keys = store.keys();
    CHECK(std::find(keys.begin(), keys.end(), "c/0/1") == keys.end());
    CHECK(array.read_region<std::uint16_t>({0, 16}, {16, 16}) == std::vector<std::uint16_t>(256, 0));
    // A region covering whole shards is written without reading them: a store whose objects
    // fail every read still takes it.
    struct NoReads {
        MemoryStore inner;
        struct IO {
            MemoryIO mem;
            std::size_t read(std::uint64_t, span<std::uint8_t>) { throw zarrshard::IoError(77, "read"); }
            zarrshard::SuffixRead read_suffix(span<std::uint8_t>) { throw zarrshard::IoError(77, "read"); }
            std::optional<std::uint64_t> size() { throw zarrshard::IoError(77, "size"); }
            void write(std::uint64_t o, span<const std::uint8_t> d) { mem.write(o, d); }
            void truncate(std::uint64_t n) { mem.truncate(n); }
            void remove() { mem.remove(); }
        };
        IO open(std::string_view key) { return IO{inner.open(key)}; }
    };
    NoReads blind;
    Array writer = Array::open(ZARR_JSON, std::ref(blind));
    std::vector<std::uint16_t> whole(16 * 32);
    for (std::size_t i = 0; i < whole.size(); i++) whole[i] = static_cast<std::uint16_t>(i + 1);
    writer.write_region({16, 0}, {16, 32}, whole);
    CHECK(blind.inner.keys() == (std::vector<std::string>{"c/1/0", "c/1/1"}));
    auto e = EXPECT_ERROR(writer.write_region({16, 0}, {1, 1}, std::vector<std::uint16_t>{5}), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 77);
    CHECK(Array::open(ZARR_JSON, blind.inner).read_region<std::uint16_t>({16, 0}, {16, 32}) == whole);
}

static void test_array_errors() {
    MemoryStore store;
    Array array = Array::open(ZARR_JSON, store);
    std::vector<std::uint8_t> buf(8);
    auto e = EXPECT_ERROR(array.read_region({0, 0}, {2}, buf), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "start"));
    EXPECT_ERROR(array.read_region({0}, {4}, buf), SHARD_ERR_INVALID_ARGUMENT); // rank 1 of 2
    EXPECT_ERROR(array.read_region({30, 0}, {4, 1}, buf), SHARD_ERR_INVALID_ARGUMENT); // past the end
    EXPECT_ERROR(array.read_region({0, 0}, {2, 2}, span<std::uint8_t>(buf.data(), 7)), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR((void)array.read_region<std::uint8_t>({0, 0}, {2, 2}), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR((void)array.read_region<std::uint32_t>({0, 0}, {2, 2}), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR(array.write_region({0, 0}, {2, 2}, std::vector<std::uint8_t>(7)), SHARD_ERR_BUFFER_SIZE);
    EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {~0ull, ~0ull}), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR((void)Array::open("{not json", store), SHARD_ERR_INVALID_METADATA);
    // An array without sharding reads and writes regions too, but has no sharding codec.
    const std::string plain =
        R"({"zarr_format": 3, "node_type": "array", "shape": [8, 8], "data_type": "uint16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4, 4]}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": 3, "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]})";
    MemoryStore plain_store;
    Array unsharded = Array::open(plain, plain_store);
    EXPECT_ERROR((void)unsharded.codec(), SHARD_ERR_UNSUPPORTED);
    CHECK(unsharded.read_region<std::uint16_t>({1, 1}, {2, 2}) == std::vector<std::uint16_t>(4, 3));
    unsharded.write_region({3, 3}, {2, 2}, std::vector<std::uint16_t>{1, 2, 3, 4});
    CHECK(unsharded.read_region<std::uint16_t>({3, 3}, {2, 2}) == (std::vector<std::uint16_t>{1, 2, 3, 4}));
    // The chunk c/1/0 got only (4, 3) = 3, the fill value: it is not stored.
    CHECK(plain_store.keys() == (std::vector<std::string>{"c/0/0", "c/0/1", "c/1/1"}));
    // Moved from: empty, and every call reports SHARD_ERR_NULL_POINTER.
    Array moved = std::move(array);
    CHECK(!array && moved);
    EXPECT_ERROR(array.read_region({0, 0}, {1}, buf), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {1, 1}), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR(array.write_region({0, 0}, {1, 1}, std::vector<std::uint16_t>{1}), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)array.codec(), SHARD_ERR_NULL_POINTER);
    moved.close();
    CHECK(!moved);
}

// A store counted in and out: the array destroys its store exactly once (at close, or at a
// failed open), and a throwing store surfaces as Error(SHARD_ERR_IO) with its code and text.
static std::atomic<int> g_stores{0};

struct ThrowingStore {
    Kind kind = Kind::Runtime;
    bool throw_in_open = true; // else the object's read throws
    MemoryStore inner;
    ThrowingStore() { g_stores++; }
    ThrowingStore(const ThrowingStore &o) : kind(o.kind), throw_in_open(o.throw_in_open), inner(o.inner) { g_stores++; }
    ThrowingStore(ThrowingStore &&o) noexcept : kind(o.kind), throw_in_open(o.throw_in_open), inner(o.inner) { g_stores++; }
    ThrowingStore &operator=(const ThrowingStore &) = delete;
    ~ThrowingStore() { g_stores--; }
    ThrowingIO open(std::string_view key) {
        if (throw_in_open) ThrowingIO{MemoryIO(), "open", kind}.maybe_throw("open");
        return ThrowingIO{inner.open(key), "read", kind};
    }
};

static void test_array_throwing_store() {
    const int before = g_stores;
    {
        ThrowingStore s;
        s.kind = Kind::IoErr;
        Array array = Array::open(ZARR_JSON, std::move(s));
        auto e = EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {4, 4}), SHARD_ERR_IO);
        CHECK(e && e->io_code() == 4242 && e->host_message() == "host error in open");
        CHECK(e && contains(e->message(), "open_object") && contains(e->message(), "c/0/0"));
        ThrowingStore r;
        r.kind = Kind::Runtime;
        e = EXPECT_ERROR(Array::open(ZARR_JSON, std::ref(r)).write_region({0, 0}, {1, 1}, std::vector<std::uint16_t>{1}),
                         SHARD_ERR_IO);
        CHECK(e && e->io_code() == zarrshard::io_code_exception && e->host_message() == "boom in open");
        ThrowingStore i;
        i.kind = Kind::Int;
        e = EXPECT_ERROR((void)Array::open(ZARR_JSON, std::ref(i)).read_region<std::uint16_t>({0, 0}, {1, 1}),
                         SHARD_ERR_IO);
        CHECK(e && e->io_code() == zarrshard::io_code_unknown_exception);
        // A zarrshard::Error from open (as LibraryIO::file throws) keeps its I/O code.
        struct ErrorStore {
            MemoryIO open(std::string_view) {
                throw Error(SHARD_ERR_IO, "I/O error: cannot open c/0/0: Permission denied", EACCES);
            }
        };
        e = EXPECT_ERROR((void)Array::open(ZARR_JSON, ErrorStore{}).read_region<std::uint16_t>({0, 0}, {1, 1}),
                         SHARD_ERR_IO);
        CHECK(e && e->io_code() == EACCES && contains(e->host_message(), "Permission denied"));
        // The object's read throws: a stored shard (the write needs no read: it covers the shard).
        ThrowingStore reads;
        reads.throw_in_open = false;
        reads.kind = Kind::System;
        std::vector<std::uint16_t> sixteen(16);
        for (std::size_t k = 0; k < sixteen.size(); k++) sixteen[k] = static_cast<std::uint16_t>(k + 1);
        Array::open(ZARR_JSON, reads.inner).write_region({0, 0}, {4, 4}, sixteen);
        Array a2 = Array::open(ZARR_JSON, std::ref(reads));
        e = EXPECT_ERROR((void)a2.read_region<std::uint16_t>({0, 0}, {4, 4}), SHARD_ERR_IO);
        CHECK(e && e->io_code() == ENOSPC && contains(e->host_message(), "disk full"));
        // The next successful call reports no stale host message.
        e = EXPECT_ERROR((void)a2.read_region<std::uint16_t>({40, 0}, {1, 1}), SHARD_ERR_INVALID_ARGUMENT);
        CHECK(e && e->host_message().empty() && e->io_code() == 0);
    }
    CHECK(g_stores == before);
    // A failed open destroys the store it was given, once.
    EXPECT_ERROR((void)Array::open("{}", ThrowingStore()), SHARD_ERR_INVALID_METADATA);
    CHECK(g_stores == before);
}

// A store over a MemoryStore that counts, per key, the opens and the read, read_suffix and
// size calls of the objects it hands out; the objects of `fail_key` throw `fail_kind` from
// each of those calls when `failing` is set. Borrow it (std::ref): copies would count apart.
struct CountingStore {
    struct Counts {
        int opens = 0, reads = 0, suffix_reads = 0, sizes = 0;
    };
    struct IO {
        MemoryIO mem;
        Counts *counts;
        bool fails;
        Kind kind;
        void maybe_throw(const char *op) const {
            if (fails) ThrowingIO{MemoryIO(), op, kind}.maybe_throw(op);
        }
        std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) {
            counts->reads++;
            maybe_throw("read");
            return mem.read(offset, buf);
        }
        zarrshard::SuffixRead read_suffix(span<std::uint8_t> buf) {
            counts->suffix_reads++;
            maybe_throw("read_suffix");
            return mem.read_suffix(buf);
        }
        std::optional<std::uint64_t> size() {
            counts->sizes++;
            maybe_throw("size");
            return mem.size();
        }
    };
    MemoryStore inner;
    std::map<std::string, Counts> counts; // node-based: a Counts * stays valid
    std::string fail_key;
    Kind fail_kind = Kind::Runtime;
    bool failing = false;

    IO open(std::string_view key) {
        Counts &c = counts[std::string(key)];
        c.opens++;
        return IO{inner.open(key), &c, failing && key == fail_key, fail_kind};
    }
    // Index reads (read + read_suffix) of the objects at `keys`.
    int index_reads(std::initializer_list<const char *> keys) const {
        int n = 0;
        for (const char *k : keys) {
            const auto it = counts.find(k);
            if (it != counts.end()) n += it->second.reads + it->second.suffix_reads;
        }
        return n;
    }
};

// The C API's two-call copy (size query, then the copy into a buffer): the text
// Array::kerchunk_refs returned before it used shard_array_refs_write.
static std::string refs_by_copy(const Array &array, std::uint32_t format, std::uint32_t zarr_format,
                                const std::string &url, const std::string &name) {
    std::size_t n = 0, n2 = 0;
    if (shard_array_refs(array.get(), format, zarr_format, url.data(), url.size(), name.data(),
                         name.size(), nullptr, 0, &n) != SHARD_OK)
        return "(size query failed)";
    std::string text(n + 1, '\0');
    if (shard_array_refs(array.get(), format, zarr_format, url.data(), url.size(), name.data(),
                         name.size(), &text[0], text.size(), &n2) != SHARD_OK || n2 != n)
        return "(copy failed)";
    text.resize(n);
    return text;
}

// ZARR_JSON (32x32 uint16, 16x16 shards: keys c/0/0, c/0/1, c/1/0, c/1/1, index at the end)
// with one inner chunk written in shard c/0/0 and one in c/1/1, so two shard objects exist.
// One kerchunk_refs call opens each of the 4 shard keys once and reads each existing shard's
// index with exactly one read or read_suffix: 2 index reads in all (the two-call
// shard_array_refs made 4). A missing key costs the one attempt that finds it missing. The text equals the C API's two-call copy: JSON v0 with a 100 000-byte URL prefix
// (about 200 KB, so the library hands it over in several pieces of at most 64 KiB), v1 with
// v2 metadata under a name, and v0 through a ThreadSafe store (indexes read on worker threads,
// the sink still called on this one).
static void test_array_kerchunk_refs_one_read_per_shard() {
    CountingStore store;
    Array writer = Array::open(ZARR_JSON, store.inner);
    writer.write_region({0, 0}, {4, 4}, std::vector<std::uint16_t>(16, 7));
    writer.write_region({20, 24}, {4, 4}, std::vector<std::uint16_t>(16, 9));
    CHECK(store.inner.keys() == (std::vector<std::string>{"c/0/0", "c/1/1"}));
    const std::string url(100000, 'u');
    const Array plain = Array::open(ZARR_JSON, store.inner);
    const std::string want_v0 = refs_by_copy(plain, SHARD_REFS_JSON_V0, 3, url, "");
    const std::string want_v1 = refs_by_copy(plain, SHARD_REFS_JSON_V1, 2, "http://h/a", "img");
    CHECK(want_v0.size() > 3 * 65536 && want_v0.rfind("{\"zarr.json\":", 0) == 0);
    CHECK(contains(want_v0, "\"c/0/0\":[\"" + url + "/c/0/0\",") &&
          contains(want_v0, "\"c/5/6\":[\"" + url + "/c/1/1\","));

    const Array array = Array::open(ZARR_JSON, std::ref(store));
    const std::string v0 = array.kerchunk_refs(url, 0);
    CHECK(v0 == want_v0);
    int opens = 0, sizes = 0;
    for (const auto &kc : store.counts) {
        opens += kc.second.opens;
        sizes += kc.second.sizes;
        if (kc.second.opens != 1) check_failed(__LINE__, kc.first + " opened " + std::to_string(kc.second.opens) + " times");
    }
    CHECK(store.counts.size() == 4 && opens == 4);
    const int stored_reads = store.index_reads({"c/0/0", "c/1/1"});
    const int missing_reads = store.index_reads({"c/0/1", "c/1/0"});
    if (stored_reads != 2)
        check_failed(__LINE__, "index reads of the 2 stored shards: " + std::to_string(stored_reads) +
                                   ", expected 2 (one each)");
    CHECK(store.index_reads({"c/0/0"}) == 1 && store.index_reads({"c/1/1"}) == 1);
    // A missing shard: the one attempt that finds it missing (NotFound).
    CHECK(missing_reads == 2 && store.index_reads({"c/0/1"}) == 1 && store.index_reads({"c/1/0"}) == 1);
    CHECK(sizes == 0); // read_suffix gives the object's size with the index

    store.counts.clear();
    CHECK(array.kerchunk_refs("http://h/a", 1, 2, "img") == want_v1);
    CHECK(store.index_reads({"c/0/0", "c/1/1"}) == 2);
    CHECK(Array::open(ZARR_JSON, store.inner, zarrshard::StoreFlags::ThreadSafe).kerchunk_refs(url, 0) == want_v0);
    std::cout << "    one kerchunk_refs call: " << opens << " opens, " << stored_reads
              << " index reads of the 2 stored shards, " << missing_reads << " of the 2 missing ones, "
              << v0.size() << " bytes\n";
}

// An exception from the store during kerchunk_refs surfaces as Error(SHARD_ERR_IO) with the
// documented io_code() and host_message(), as for reads: from `open` (IoError), from an
// existing shard's index read (std::system_error, int, std::bad_alloc: still an Error with
// ENOMEM, not the bad_alloc itself, which only the sink's own failure rethrows), and from a
// missing shard's. The next call gives the whole text and no stale host message; an empty
// Array is SHARD_ERR_NULL_POINTER.
static void test_array_kerchunk_refs_store_errors() {
    CountingStore store;
    Array::open(ZARR_JSON, store.inner).write_region({0, 0}, {4, 4}, std::vector<std::uint16_t>(16, 7));
    Array::open(ZARR_JSON, store.inner).write_region({20, 24}, {4, 4}, std::vector<std::uint16_t>(16, 9));
    const std::string url = "s3://bucket/a.zarr";
    const std::string want = refs_by_copy(Array::open(ZARR_JSON, store.inner), SHARD_REFS_JSON_V1, 3, url, "");
    CHECK(contains(want, "\"version\":1"));

    ThrowingStore opens;
    opens.kind = Kind::IoErr;
    auto e = EXPECT_ERROR((void)Array::open(ZARR_JSON, std::ref(opens)).kerchunk_refs(url), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && e->host_message() == "host error in open");

    const Array array = Array::open(ZARR_JSON, std::ref(store));
    store.failing = true;
    store.fail_key = "c/1/1";
    store.fail_kind = Kind::System;
    e = EXPECT_ERROR((void)array.kerchunk_refs(url), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOSPC && contains(e->host_message(), "disk full"));
    store.fail_kind = Kind::Int;
    e = EXPECT_ERROR((void)array.kerchunk_refs(url, 0, 2), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_unknown_exception);
    store.fail_kind = Kind::BadAlloc;
    e = EXPECT_ERROR((void)array.kerchunk_refs(url), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOMEM && !e->host_message().empty());
    store.fail_key = "c/0/1"; // a missing shard: its read fails with a host code, not NotFound
    store.fail_kind = Kind::IoErr;
    e = EXPECT_ERROR((void)array.kerchunk_refs(url), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && contains(e->host_message(), "host error in"));

    store.failing = false;
    CHECK(array.kerchunk_refs(url) == want);
    e = EXPECT_ERROR((void)array.kerchunk_refs(url, 1, 4), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->host_message().empty() && e->io_code() == 0);
    EXPECT_ERROR((void)Array().kerchunk_refs(url), SHARD_ERR_NULL_POINTER);
}

// write_kerchunk_refs hands over the text of the C API's two-call copy (shard_array_refs),
// into a std::ostream and piece by piece to a callable (pieces of at most 64 KiB; a 100 000-byte
// URL prefix makes several); what the callable throws comes back as it was, and the library
// calls it no more; a failing stream throws std::ios_base::failure; a failing store throws
// Error with the store's code, after at most the text's first part.
static void test_array_write_kerchunk_refs() {
    CountingStore store;
    Array::open(ZARR_JSON, store.inner).write_region({0, 0}, {4, 4}, std::vector<std::uint16_t>(16, 7));
    Array::open(ZARR_JSON, store.inner).write_region({20, 24}, {4, 4}, std::vector<std::uint16_t>(16, 9));
    const Array array = Array::open(ZARR_JSON, std::ref(store));
    const std::string url = "s3://bucket/a.zarr", long_url(100000, 'u');

    std::ostringstream os;
    array.write_kerchunk_refs(os, url);
    CHECK(os.str() == refs_by_copy(array, SHARD_REFS_JSON_V1, 3, url, ""));
    std::ostringstream os2;
    array.write_kerchunk_refs(os2, url, 0, 2, "img");
    CHECK(os2.str() == refs_by_copy(array, SHARD_REFS_JSON_V0, 2, url, "img"));
    CHECK(contains(os2.str(), "\"img/0.0\":"));

    std::vector<std::string> pieces;
    array.write_kerchunk_refs([&](std::string_view p) { pieces.emplace_back(p); }, long_url, 0);
    std::string joined;
    std::size_t biggest = 0;
    for (const auto &p : pieces) {
        joined += p;
        biggest = std::max(biggest, p.size());
    }
    CHECK(joined == refs_by_copy(array, SHARD_REFS_JSON_V0, 3, long_url, ""));
    CHECK(joined.size() > 2 * 65536 && pieces.size() >= 3 && biggest <= 65536);

    struct Stop {};
    int calls = 0;
    try {
        array.write_kerchunk_refs([&](std::string_view) { calls++; throw Stop{}; }, long_url, 0);
        check_failed(__LINE__, "write_kerchunk_refs: no exception from the throwing callable");
    } catch (const Stop &) {
    }
    CHECK(calls == 1);

    std::ostringstream bad;
    bad.setstate(std::ios::badbit);
    try {
        array.write_kerchunk_refs(bad, url);
        check_failed(__LINE__, "write_kerchunk_refs: no exception from a bad stream");
    } catch (const std::ios_base::failure &e) {
        CHECK(contains(e.what(), "writing the kerchunk reference set"));
    }
    CHECK(bad.str().empty());

    const std::string want = refs_by_copy(array, SHARD_REFS_JSON_V1, 3, url, "");
    std::string got;
    store.failing = true;
    store.fail_key = "c/1/1";
    store.fail_kind = Kind::System;
    auto e = EXPECT_ERROR(array.write_kerchunk_refs([&](std::string_view p) { got += p; }, url),
                          SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOSPC && contains(e->host_message(), "disk full"));
    CHECK(want.compare(0, got.size(), got) == 0 && got.size() < want.size());
    store.failing = false;

    calls = 0;
    const auto count = [&](std::string_view) { calls++; };
    EXPECT_ERROR(array.write_kerchunk_refs(count, url, 2), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(array.write_kerchunk_refs(count, url, 1, 4), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(Array().write_kerchunk_refs(count, url), SHARD_ERR_NULL_POINTER);
    CHECK(calls == 0);
}

// ZARR_JSON with shards c/0/0 and c/1/1 written whole (every inner chunk stored, values
// 1.. and 1001..): the store and the array over it.
static Array verify_fixture(const MemoryStore &store) {
    Array array = Array::open(ZARR_JSON, store);
    std::vector<std::uint16_t> a(256), b(256);
    for (std::size_t i = 0; i < a.size(); i++) {
        a[i] = static_cast<std::uint16_t>(i + 1);
        b[i] = static_cast<std::uint16_t>(i + 1001);
    }
    array.write_region({0, 0}, {16, 16}, a);
    array.write_region({16, 16}, {16, 16}, b);
    return array;
}

// Flip the first encoded byte of inner chunk `coords` of the shard at `key`, found from the
// shard's index (Shard::chunk_info).
static void damage_chunk(MemoryStore &store, const Codec &codec, const std::string &key,
                         std::vector<std::uint64_t> coords) {
    MemoryIO io = store.open(key);
    const zarrshard::ChunkLocation loc = Shard::open(codec, io).chunk_info(coords);
    CHECK(!loc.empty && loc.nbytes > 0);
    std::vector<std::uint8_t> bytes = io.bytes();
    CHECK(loc.offset < bytes.size());
    if (loc.offset < bytes.size()) bytes[loc.offset] ^= 0xff;
    io.set(std::move(bytes));
}

// Array::verify (shard_array_verify): a clean array has no problem; one damaged inner chunk in
// each of two shards (damaged in the reverse order) gives exactly two problems in grid order
// with their shard keys, chunk coordinates, SHARD_ERR_CORRUPT (the zstd codec has no checksum)
// and the library's message; the streaming form sees the same, on the calling thread, also
// through a StoreFlags::ThreadSafe store (shards fetched on worker threads); a damaged index
// checksum is a problem without chunk coordinates; an empty Array is SHARD_ERR_NULL_POINTER.
static void test_array_verify() {
    MemoryStore store;
    const Array array = verify_fixture(store);
    CHECK(store.keys() == (std::vector<std::string>{"c/0/0", "c/1/1"}));
    CHECK(array.verify().empty());
    std::uint64_t calls = 0;
    CHECK(array.verify([&](const zarrshard::Problem &) { calls++; }) == 0 && calls == 0);

    const Codec codec = array.codec();
    damage_chunk(store, codec, "c/1/1", {1, 3});
    damage_chunk(store, codec, "c/0/0", {2, 1});
    const std::vector<zarrshard::Problem> problems = array.verify();
    CHECK(problems.size() == 2);
    if (problems.size() == 2) {
        CHECK(problems[0].key == "c/0/0" && problems[1].key == "c/1/1");
        CHECK(problems[0].chunk == (std::vector<std::uint64_t>{2, 1}));
        CHECK(problems[1].chunk == (std::vector<std::uint64_t>{1, 3}));
        CHECK(problems[0].status == SHARD_ERR_CORRUPT && problems[1].status == SHARD_ERR_CORRUPT);
        CHECK(problems[0].message.rfind("corrupt shard: inner chunk [2, 1]: ", 0) == 0);
        CHECK(problems[1].message.rfind("corrupt shard: inner chunk [1, 3]: ", 0) == 0);
        std::cout << "    problem: " << problems[0].key << " " << problems[0].message << "\n";
    }
    // Reading the damaged chunk fails with the status verify reported.
    EXPECT_ERROR((void)array.read_region<std::uint16_t>({8, 4}, {4, 4}), SHARD_ERR_CORRUPT);

    // Streaming, through a ThreadSafe store: the same problems, each on this thread.
    const Array threaded = Array::open(ZARR_JSON, store, zarrshard::StoreFlags::ThreadSafe);
    std::vector<std::string> seen;
    bool other_thread = false;
    const std::thread::id me = std::this_thread::get_id();
    const std::uint64_t n = threaded.verify([&](const zarrshard::Problem &p) {
        other_thread = other_thread || std::this_thread::get_id() != me;
        seen.push_back(p.key + " " + std::to_string(p.chunk.size()) + " " + p.message);
    });
    CHECK(n == 2 && seen.size() == 2 && !other_thread);
    if (problems.size() == 2 && seen.size() == 2) {
        CHECK(seen[0] == "c/0/0 2 " + problems[0].message);
        CHECK(seen[1] == "c/1/1 2 " + problems[1].message);
    }

    // The index's crc32c damaged (its last byte, the index being at the end): a problem of
    // the shard, not of one chunk.
    MemoryIO last = store.open("c/1/1");
    std::vector<std::uint8_t> bytes = last.bytes();
    bytes.back() ^= 0xff;
    last.set(std::move(bytes));
    const std::vector<zarrshard::Problem> again = array.verify();
    CHECK(again.size() == 2);
    if (again.size() == 2) {
        CHECK(again[0].key == "c/0/0" && again[0].chunk.size() == 2);
        CHECK(again[1].key == "c/1/1" && again[1].chunk.empty());
        CHECK(again[1].status == SHARD_ERR_CHECKSUM);
        CHECK(!again[1].message.empty());
        std::cout << "    index problem: " << again[1].key << " " << again[1].message << "\n";
    }
    EXPECT_ERROR((void)Array().verify(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Array().verify([](const zarrshard::Problem &) {}), SHARD_ERR_NULL_POINTER);
}

// What stops Array::verify: a streaming callable that throws on the first problem stops the
// check (called once) and its exception is rethrown as it was, not as an Error (a type of the
// test's own, std::bad_alloc); the next call works and carries no stale host message; a store
// throwing during the check is Error(SHARD_ERR_IO) with the store's code and message.
static void test_array_verify_stops() {
    MemoryStore store;
    const Array array = verify_fixture(store);
    const Codec codec = array.codec();
    damage_chunk(store, codec, "c/0/0", {0, 0});
    damage_chunk(store, codec, "c/1/1", {3, 3});

    struct Stop {
        std::string key;
    };
    int calls = 0;
    bool stopped = false;
    try {
        (void)array.verify([&](const zarrshard::Problem &p) {
            calls++;
            throw Stop{p.key};
        });
    } catch (const Stop &s) {
        stopped = s.key == "c/0/0";
    } catch (...) {
    }
    CHECK(stopped && calls == 1);

    calls = 0;
    bool bad_alloc = false;
    try {
        (void)array.verify([&](const zarrshard::Problem &) {
            calls++;
            throw std::bad_alloc();
        });
    } catch (const std::bad_alloc &) {
        bad_alloc = true;
    } catch (...) {
    }
    CHECK(bad_alloc && calls == 1);
    CHECK(array.verify().size() == 2);

    // A store whose objects throw during the check: Error(SHARD_ERR_IO), the store's code.
    CountingStore counting;
    counting.inner = store;
    const Array failing = Array::open(ZARR_JSON, std::ref(counting));
    CHECK(failing.verify().size() == 2);
    counting.failing = true;
    counting.fail_key = "c/1/1";
    counting.fail_kind = Kind::IoErr;
    auto e = EXPECT_ERROR((void)failing.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && contains(e->host_message(), "host error in"));
    calls = 0;
    e = EXPECT_ERROR((void)failing.verify([&](const zarrshard::Problem &) { calls++; }), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242);
    counting.fail_kind = Kind::Runtime;
    e = EXPECT_ERROR((void)failing.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && contains(e->host_message(), "boom in"));
    ThrowingStore opens;
    opens.kind = Kind::IoErr;
    e = EXPECT_ERROR((void)Array::open(ZARR_JSON, std::ref(opens)).verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && e->host_message() == "host error in open");
    counting.failing = false;
    CHECK(failing.verify().size() == 2);
}

// ---- tests: stores that list (shard_store_callbacks.list) ------------------------------------

// A 128x128 uint16 array of 2x2 shards (a 64x64 grid: 4096 positions) of 1x1 inner chunks
// (bytes + crc32c: 6 bytes each), the crc32c index at the end.
static constexpr const char SPARSE_JSON[] =
    R"({"zarr_format": 3, "node_type": "array", "shape": [128, 128], "data_type": "uint16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2, 2]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0,
        "codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [1, 1],
            "codecs": [)" ZS_BYTES_LE ", " ZS_CRC R"(],
            "index_codecs": [)" ZS_BYTES_LE ", " ZS_CRC R"(],
            "index_location": "end"}}]})";

// Three elements written into `store`: 7 at (0, 0), 8 at (10, 127), 9 at (127, 2), so exactly
// shards c/0/0, c/5/63 and c/63/1 are stored (inner chunks [0, 0], [0, 1], [1, 0]).
static void write_sparse(const MemoryStore &store) {
    Array array = Array::open(SPARSE_JSON, store);
    array.write_region({0, 0}, {1, 1}, std::vector<std::uint16_t>{7});
    array.write_region({10, 127}, {1, 1}, std::vector<std::uint16_t>{8});
    array.write_region({127, 2}, {1, 1}, std::vector<std::uint16_t>{9});
}

// The kerchunk JSON v0 text of the sparse array under URL prefix `mem://s`, hand-derived: one
// reference per stored inner chunk (its unsharded key is its element's coordinates), each the
// only chunk of its shard, so at offset 0, 6 bytes (2 of data + 4 of crc32c).
static bool sparse_refs_ok(const std::string &v0) {
    std::size_t refs = 0;
    for (std::size_t at = v0.find(",0,6]"); at != std::string::npos; at = v0.find(",0,6]", at + 1)) refs++;
    std::size_t urls = 0;
    for (std::size_t at = v0.find("\"mem://s/"); at != std::string::npos; at = v0.find("\"mem://s/", at + 1)) urls++;
    return v0.rfind("{\"zarr.json\":", 0) == 0 && refs == 3 && urls == 3 &&
           contains(v0, "\"c/0/0\":[\"mem://s/c/0/0\",0,6]") &&
           contains(v0, "\"c/10/127\":[\"mem://s/c/5/63\",0,6]") &&
           contains(v0, "\"c/127/2\":[\"mem://s/c/63/1\",0,6]");
}

// Damage two shards of the sparse array: the first byte of c/63/1 (its only inner chunk's data,
// at offset 0: the chunk's crc32c no longer matches) and the last byte of c/5/63 (the index's
// crc32c). verify then finds, in grid order, c/5/63 (index, no chunk) and c/63/1 chunk [1, 0],
// both SHARD_ERR_CHECKSUM.
static void damage_sparse(MemoryStore &store) {
    MemoryIO chunk = store.open("c/63/1");
    std::vector<std::uint8_t> bytes = chunk.bytes();
    bytes.front() ^= 0xff;
    chunk.set(std::move(bytes));
    MemoryIO index = store.open("c/5/63");
    bytes = index.bytes();
    bytes.back() ^= 0xff;
    index.set(std::move(bytes));
}

static bool damaged_sparse_problems_ok(const std::vector<zarrshard::Problem> &p) {
    return p.size() == 2 && p[0].key == "c/5/63" && p[0].chunk.empty() &&
           p[0].status == SHARD_ERR_CHECKSUM && p[1].key == "c/63/1" &&
           p[1].chunk == (std::vector<std::uint64_t>{1, 0}) && p[1].status == SHARD_ERR_CHECKSUM &&
           !p[0].message.empty() && !p[1].message.empty();
}

static bool same_problems(const std::vector<zarrshard::Problem> &a, const std::vector<zarrshard::Problem> &b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); i++)
        if (a[i].key != b[i].key || a[i].chunk != b[i].chunk || a[i].status != b[i].status ||
            a[i].message != b[i].message)
            return false;
    return true;
}

// A store over a MemoryStore without `list`: every walk asks each grid position (opens are
// counted by the MemoryStore).
struct UnlistedStore {
    MemoryStore inner;
    MemoryIO open(std::string_view key) { return inner.open(key); }
};

// A store whose `list` returns std::optional: the MemoryStore's keys plus `junk` (Lists),
// std::nullopt (CannotList), or throws `kind` (Throws); it records each prefix asked and the
// thread. Borrow it (std::ref) to read what it recorded.
struct ListingStore {
    enum class Mode { Lists, CannotList, Throws };
    MemoryStore inner;
    Mode mode = Mode::Lists;
    Kind kind = Kind::Runtime;
    std::vector<std::string> junk;
    std::vector<std::string> prefixes;
    std::vector<std::thread::id> threads;

    MemoryIO open(std::string_view key) { return inner.open(key); }
    std::optional<std::vector<std::string>> list(std::string_view prefix) {
        prefixes.emplace_back(prefix);
        threads.push_back(std::this_thread::get_id());
        if (mode == Mode::Throws) ThrowingIO{MemoryIO(), "list", kind}.maybe_throw("list");
        if (mode == Mode::CannotList) return std::nullopt;
        std::vector<std::string> keys = inner.list(prefix);
        keys.insert(keys.end(), junk.begin(), junk.end());
        return keys;
    }
};

// A key type whose conversion to std::string_view throws for the key "bad": an exception
// while the listing is handed over, after some keys went to the library.
struct TrickyKey {
    std::string s;
    operator std::string_view() const {
        if (s == "bad") throw zarrshard::IoError(77, "cannot spell key bad");
        return s;
    }
};
struct TrickyListingStore {
    MemoryStore inner;
    MemoryIO open(std::string_view key) { return inner.open(key); }
    std::vector<TrickyKey> list(std::string_view) const { return {{"c/0/0"}, {"bad"}, {"c/5/63"}}; }
};

// A store whose `list` throws an IoError carrying SHARD_STORE_CANNOT_LIST as its code.
struct CannotListCodeStore {
    MemoryStore inner;
    MemoryIO open(std::string_view key) { return inner.open(key); }
    std::vector<std::string> list(std::string_view) const {
        throw zarrshard::IoError(SHARD_STORE_CANNOT_LIST, "code collides with cannot-list");
    }
};

template <class S>
static shard_store_callbacks table_of(S &store) {
    zarrshard::detail::StoreAdapter<std::reference_wrapper<S>> adapter(std::ref(store));
    return adapter.table(0, /*owned=*/false);
}

// The sparse array (4096 grid positions, 3 shards stored) through a store that lists
// (MemoryStore's own list: a std::vector; ListingStore: a std::optional) and one that does
// not: verify() and kerchunk_refs open exactly the 3 stored shards when the store lists, all
// 4096 positions when it does not, with the same results (identical problems, identical
// text, also for v1 with v2 metadata, and through a ThreadSafe store, whose listing still runs
// on the calling thread); the listing is asked once per walk, for prefix "c/". The C table
// has `list` exactly for the stores with a `list` member.
static void test_store_list_sparse_opens() {
    MemoryStore store;
    write_sparse(store);
    CHECK(store.keys() == (std::vector<std::string>{"c/0/0", "c/5/63", "c/63/1"}));
    CHECK(store.list("c/") == store.keys() && store.list("") == store.keys());
    CHECK(store.list("c/6") == (std::vector<std::string>{"c/63/1"}) && store.list("d/").empty());
    UnlistedStore unlisted{store};
    ListingStore listing;
    listing.inner = store;
    CHECK(table_of(store).list != nullptr && table_of(listing).list != nullptr);
    CHECK(table_of(unlisted).list == nullptr && table_of(unlisted).version == SHARD_STORE_VERSION);

    const Array listed = Array::open(SPARSE_JSON, store);
    const Array unlisted_array = Array::open(SPARSE_JSON, std::ref(unlisted));
    const Array optional_array = Array::open(SPARSE_JSON, std::ref(listing));

    std::uint64_t before = store.opens();
    const std::vector<zarrshard::Problem> clean = listed.verify();
    CHECK(clean.empty() && store.opens() - before == 3);
    before = store.opens();
    CHECK(unlisted_array.verify().empty() && store.opens() - before == 4096);
    before = store.opens();
    CHECK(optional_array.verify().empty() && store.opens() - before == 3);
    CHECK(listing.prefixes == (std::vector<std::string>{"c/"}));

    before = store.opens();
    const std::string v0 = listed.kerchunk_refs("mem://s", 0);
    CHECK(store.opens() - before == 3 && sparse_refs_ok(v0));
    before = store.opens();
    CHECK(unlisted_array.kerchunk_refs("mem://s", 0) == v0 && store.opens() - before == 4096);
    before = store.opens();
    CHECK(optional_array.kerchunk_refs("mem://s", 0) == v0 && store.opens() - before == 3);
    before = store.opens();
    const std::string v1 = listed.kerchunk_refs("mem://s", 1, 2, "img");
    // kerchunk v1: the URL prefix as template `u`, the key in v2 spelling under `img/`.
    CHECK(store.opens() - before == 3 && contains(v1, "\"templates\":{\"u\":\"mem://s\"}") &&
          contains(v1, "\"img/10.127\":[\"{{u}}/c/5/63\",0,6]"));
    before = store.opens();
    CHECK(unlisted_array.kerchunk_refs("mem://s", 1, 2, "img") == v1 && store.opens() - before == 4096);
    CHECK(listing.prefixes.size() == 2);

    // ThreadSafe: shards on worker threads, the listing on this one.
    listing.threads.clear();
    const Array threaded = Array::open(SPARSE_JSON, std::ref(listing), zarrshard::StoreFlags::ThreadSafe);
    before = store.opens();
    CHECK(threaded.kerchunk_refs("mem://s", 0) == v0 && threaded.verify().empty());
    CHECK(store.opens() - before == 6);
    CHECK(listing.threads.size() == 2 &&
          std::all_of(listing.threads.begin(), listing.threads.end(),
                      [](std::thread::id t) { return t == std::this_thread::get_id(); }));

    // Damaged: the same two problems whether listed or not.
    damage_sparse(store);
    before = store.opens();
    const std::vector<zarrshard::Problem> damaged = listed.verify();
    CHECK(store.opens() - before == 3);
    CHECK(damaged_sparse_problems_ok(damaged));
    before = store.opens();
    const std::vector<zarrshard::Problem> damaged_unlisted = unlisted_array.verify();
    CHECK(store.opens() - before == 4096 && same_problems(damaged, damaged_unlisted));
    CHECK(same_problems(damaged, optional_array.verify()));
    std::cout << "    sparse 64x64 grid, 3 stored: verify and kerchunk_refs open 3 shards listed, 4096 not\n";
}

// A `list` returning std::nullopt (SHARD_STORE_CANNOT_LIST): the library asks every grid
// position, as without `list`, with the same results; it asked the listing once per walk.
static void test_store_list_cannot_list() {
    ListingStore store;
    write_sparse(store.inner);
    store.mode = ListingStore::Mode::CannotList;
    const Array array = Array::open(SPARSE_JSON, std::ref(store));
    std::uint64_t before = store.inner.opens();
    CHECK(array.verify().empty() && store.inner.opens() - before == 4096);
    before = store.inner.opens();
    const std::string v0 = array.kerchunk_refs("mem://s", 0);
    CHECK(store.inner.opens() - before == 4096 && sparse_refs_ok(v0));
    CHECK(store.prefixes == (std::vector<std::string>{"c/", "c/"}));
    damage_sparse(store.inner);
    before = store.inner.opens();
    CHECK(damaged_sparse_problems_ok(array.verify()) && store.inner.opens() - before == 4096);
    // Listing again: the same problems from the 3 listed shards.
    store.mode = ListingStore::Mode::Lists;
    before = store.inner.opens();
    CHECK(damaged_sparse_problems_ok(array.verify()) && store.inner.opens() - before == 3);
}

// A `list` that throws fails the walk with Error(SHARD_ERR_IO), the code and host_message()
// of the exception as for a throwing `open` (IoError: its code; std::runtime_error:
// io_code_exception; int: io_code_unknown_exception; std::system_error: its value;
// std::bad_alloc: ENOMEM), and the library's message naming the list callback and the prefix;
// no shard is opened and a streaming verify's callable is never called. An exception while
// the keys are handed over (a key's conversion) is the same; one whose code is
// SHARD_STORE_CANNOT_LIST gives io_code_exception, never a fallback to every position. The
// next call works and a later error carries no stale host message.
static void test_store_list_throws() {
    ListingStore store;
    write_sparse(store.inner);
    store.mode = ListingStore::Mode::Throws;
    store.kind = Kind::IoErr;
    const Array array = Array::open(SPARSE_JSON, std::ref(store));
    const std::uint64_t before = store.inner.opens();
    auto e = EXPECT_ERROR((void)array.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && e->host_message() == "host error in list");
    CHECK(e && contains(e->message(), "list") && contains(e->message(), "c/"));
    e = EXPECT_ERROR((void)array.kerchunk_refs("mem://s", 0), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && e->host_message() == "host error in list");
    int calls = 0;
    e = EXPECT_ERROR((void)array.verify([&](const zarrshard::Problem &) { calls++; }), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 4242 && calls == 0);
    store.kind = Kind::Runtime;
    e = EXPECT_ERROR((void)array.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && e->host_message() == "boom in list");
    store.kind = Kind::Int;
    e = EXPECT_ERROR((void)array.kerchunk_refs("mem://s"), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_unknown_exception && !e->host_message().empty());
    store.kind = Kind::System;
    e = EXPECT_ERROR((void)array.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOSPC && contains(e->host_message(), "disk full"));
    store.kind = Kind::BadAlloc;
    e = EXPECT_ERROR((void)array.kerchunk_refs("mem://s"), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOMEM && !e->host_message().empty());
    CHECK(store.inner.opens() == before); // no walk started
    CHECK(store.prefixes.size() == 7);

    // An IoError whose code is SHARD_STORE_CANNOT_LIST is still a failure, not "cannot list"
    // (which would walk every grid position): io_code_exception, its message kept.
    CannotListCodeStore collides{store.inner};
    const Array collides_array = Array::open(SPARSE_JSON, std::ref(collides));
    e = EXPECT_ERROR((void)collides_array.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception &&
          e->host_message() == "code collides with cannot-list");
    CHECK(store.inner.opens() == before);

    // Thrown while the keys are handed over.
    TrickyListingStore tricky{store.inner};
    const Array tricky_array = Array::open(SPARSE_JSON, std::ref(tricky));
    e = EXPECT_ERROR((void)tricky_array.verify(), SHARD_ERR_IO);
    CHECK(e && e->io_code() == 77 && e->host_message() == "cannot spell key bad");
    CHECK(store.inner.opens() == before);

    store.mode = ListingStore::Mode::Lists;
    CHECK(array.verify().empty() && store.inner.opens() - before == 3);
    e = EXPECT_ERROR((void)array.kerchunk_refs("mem://s", 2), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->host_message().empty() && e->io_code() == 0);
}

// A listing with keys that are not the array's shard keys (zarr.json; c/01/0, a spelling the
// array never writes; c/99/0, outside the 64x64 grid; c/0, of the wrong rank; a stored key
// twice) is harmless: still exactly the 3 stored shards opened, the same text and problems.
static void test_store_list_junk_keys() {
    ListingStore store;
    write_sparse(store.inner);
    store.junk = {"zarr.json", "c/01/0", "c/99/0", "c/0", "c/63/1"};
    const Array array = Array::open(SPARSE_JSON, std::ref(store));
    std::uint64_t before = store.inner.opens();
    CHECK(array.verify().empty() && store.inner.opens() - before == 3);
    before = store.inner.opens();
    CHECK(sparse_refs_ok(array.kerchunk_refs("mem://s", 0)) && store.inner.opens() - before == 3);
    damage_sparse(store.inner);
    before = store.inner.opens();
    CHECK(damaged_sparse_problems_ok(array.verify()) && store.inner.opens() - before == 3);
}

// The library's directory store over the sparse array's shards (files copied from a
// MemoryStore, beside files that are not shards): verify finds it clean and the reference set
// is the one a MemoryStore gives. A host store whose open returns the library's file I/O
// (LibraryIO::file) and that lists (from the MemoryStore's keys) opens only those 3 shards.
static void test_directory_store_walks() {
    MemoryStore mem;
    write_sparse(mem);
    const std::string root = scratch("list-dir");
    std::filesystem::remove_all(root);
    auto put = [](const std::string &path, const std::vector<std::uint8_t> &bytes) {
        std::filesystem::create_directories(std::filesystem::path(path).parent_path());
        std::ofstream f(path, std::ios::binary);
        f.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    };
    const std::vector<std::string> keys = mem.list("c/");
    CHECK(keys.size() == 3);
    for (const auto &key : keys) put(root + "/" + key, mem.open(key).bytes());
    put(root + "/c0", {0});
    put(root + "/other/x", {0});
    const std::string want = Array::open(SPARSE_JSON, mem).kerchunk_refs("mem://s", 0);
    const Array array = Array::open(SPARSE_JSON, Store::directory(root));
    CHECK(array.verify().empty());
    CHECK(array.kerchunk_refs("mem://s", 0) == want);

    struct CountingFiles {
        std::string root;
        MemoryStore keys;
        int opens = 0;
        LibraryIO open(std::string_view key) {
            opens++;
            return LibraryIO::file(root + "/" + std::string(key));
        }
        std::vector<std::string> list(std::string_view prefix) const { return keys.list(prefix); }
    };
    CountingFiles counting{root, mem};
    CHECK(table_of(counting).list != nullptr);
    const Array hosted = Array::open(SPARSE_JSON, std::ref(counting));
    CHECK(hosted.verify().empty() && counting.opens == 3);
    counting.opens = 0;
    CHECK(hosted.kerchunk_refs("mem://s", 0) == want && counting.opens == 3);
    std::filesystem::remove_all(root);
}

// ---- tests: the library's stores, create / open by path, append, resize, groups -------------

using zarrshard::ArraySpec;
using zarrshard::Group;

// `s` without blanks (the library may format JSON with or without them).
static std::string squeeze(std::string s) {
    s.erase(std::remove_if(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\n'; }), s.end());
    return s;
}

// Values i * 3 + 1 for a region of `n` elements.
static std::vector<std::uint16_t> ramp(std::size_t n, std::uint16_t from = 1) {
    std::vector<std::uint16_t> v(n);
    for (std::size_t i = 0; i < n; i++) v[i] = static_cast<std::uint16_t>(from + i * 3);
    return v;
}

// Store: copies share one table; arrays keep the store alive after every Store copy is gone;
// an empty Store is SHARD_ERR_NULL_POINTER everywhere; a directory root that is missing is an
// error naming it unless Directory::Create makes it; a root with NUL is refused naming it.
static void test_store_basics() {
    Store a = Store::memory();
    CHECK(static_cast<bool>(a) && a.get() != nullptr && a.get()->open_object != nullptr);
    {
        Array x = Array::create(a, "x", ZARR_JSON);
        x.write_region<std::uint16_t>({0, 0}, {8, 8}, ramp(64));
    }
    Store b = a;
    CHECK(b.get() == a.get());
    a = Store();
    CHECK(!a);
    CHECK(Array::open(b, "x").read_region<std::uint16_t>({0, 0}, {8, 8}) == ramp(64));
    Array kept;
    {
        Store scratch_store = Store::memory();
        kept = Array::create(scratch_store, "", ZARR_JSON);
    } // the Store is gone; the array holds the library's own reference
    kept.write_region<std::uint16_t>({20, 20}, {4, 4}, ramp(16, 9));
    CHECK(kept.read_region<std::uint16_t>({20, 20}, {4, 4}) == ramp(16, 9));

    const Store empty;
    auto e = EXPECT_ERROR((void)Array::open(empty, "x"), SHARD_ERR_NULL_POINTER);
    CHECK(e && e->message() == "`store` must not be NULL (an empty Store)");
    EXPECT_ERROR((void)Array::create(empty, "x", ZARR_JSON), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Array::create(empty, "x", ArraySpec({4}, {2}, "uint8")), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Array::open(ZARR_JSON, empty), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR(Group::create(empty, "g"), SHARD_ERR_NULL_POINTER);

    const std::string missing = scratch("no-such-root");
    std::filesystem::remove_all(missing);
    e = EXPECT_ERROR((void)Store::directory(missing), SHARD_ERR_IO);
    CHECK(e && contains(e->message(), "no-such-root") && !file_exists(missing));
    const Store made = Store::directory(missing + "/deeper", zarrshard::Directory::Create);
    CHECK(std::filesystem::is_directory(missing + "/deeper"));
    e = EXPECT_ERROR((void)Store::directory(std::string("ro\0ot", 5)), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message() == "invalid argument: root `ro?ot` contains a NUL byte");
    std::filesystem::remove_all(missing);
}

// Array::create (JSON) and Array::open by path in the library's memory and directory stores:
// nested paths, values read back through a fresh open, `zarr.json` where the path says; an
// existing node is refused ("`a/b` already holds an array") and replaced with Existing::Overwrite (its shards
// gone: fill value); a path reaching outside the store and an empty component are refused
// naming the path; opening where there is no array names the path.
static void test_array_create_open_paths() {
    const std::string root = scratch("paths");
    std::filesystem::remove_all(root);
    for (const Store &store : {Store::memory(), Store::directory(root, zarrshard::Directory::Create)}) {
        {
            Array a = Array::create(store, "a/b", ZARR_JSON);
            CHECK(a.shape() == (std::vector<std::uint64_t>{32, 32}));
            a.write_region<std::uint16_t>({0, 0}, {32, 32}, ramp(1024));
        }
        const Array back = Array::open(store, "a/b");
        CHECK(back.read_region<std::uint16_t>({0, 0}, {32, 32}) == ramp(1024));
        auto e = EXPECT_ERROR((void)Array::create(store, "a/b", ZARR_JSON), SHARD_ERR_INVALID_STATE);
        CHECK(e && contains(e->message(), "`a/b` already holds an array"));
        CHECK(Array::open(store, "a/b").read_region<std::uint16_t>({0, 0}, {32, 32}) == ramp(1024));
        {
            const Array fresh = Array::create(store, "a/b", ZARR_JSON, Existing::Overwrite);
            CHECK(fresh.read_region<std::uint16_t>({0, 0}, {32, 32}) == std::vector<std::uint16_t>(1024, 0));
        }
        for (const std::string bad : {"../x", "a/../b", "/abs", "a//b", "a\\b", "./a"}) {
            // The library names the path escaped (a backslash doubled).
            std::string named;
            for (char ch : bad) named += ch == '\\' ? std::string("\\\\") : std::string(1, ch);
            e = EXPECT_ERROR((void)Array::create(store, bad, ZARR_JSON), SHARD_ERR_INVALID_ARGUMENT);
            CHECK(e && contains(e->message(), "invalid node path `" + named + "`"));
            e = EXPECT_ERROR((void)Array::open(store, bad), SHARD_ERR_INVALID_ARGUMENT);
            CHECK(e && contains(e->message(), "invalid node path `" + named + "`"));
        }
        e = EXPECT_ERROR((void)Array::open(store, std::string("a\0b", 3)), SHARD_ERR_INVALID_ARGUMENT);
        CHECK(e && e->message() == "invalid argument: path `a?b` contains a NUL byte");
        e = EXPECT_ERROR((void)Array::open(store, "no/such"), SHARD_ERR_INVALID_METADATA);
        CHECK(e && contains(e->message(), "no zarr.json or .zarray at `no/such`"));
        e = EXPECT_ERROR((void)Array::create(store, "bad", R"({"zarr_format": 3})"), SHARD_ERR_INVALID_METADATA);
        CHECK(e && !e->message().empty());
    }
    CHECK(file_exists(root + "/a/b/zarr.json") && !file_exists(root + "/a/b/c/0/0"));
    // Opened at the root: the same array as its zarr.json text says.
    {
        Array top = Array::create(Store::directory(root), "", ZARR_JSON);
        top.write_region<std::uint16_t>({16, 0}, {16, 16}, ramp(256, 5));
    }
    CHECK(Array::open(Store::directory(root)).read_region<std::uint16_t>({16, 0}, {16, 16}) == ramp(256, 5));
    CHECK(Array::open(read_text(root + "/zarr.json"), Store::directory(root))
              .read_region<std::uint16_t>({16, 0}, {16, 16}) == ramp(256, 5));
    std::filesystem::remove_all(root);
}

// ArraySpec: its defaults are the library's (shard_array_spec_init); to_json names the codecs
// the fields ask for (sharding with a crc32c index, zstd, dimension names; none of sharding
// without a shard shape); a field whose length is not the rank is refused naming it, before
// the library reads past a vector; an unknown data type is refused naming it; an array created
// from a spec reads and writes.
static void test_array_spec() {
    shard_array_spec c;
    CHECK(shard_array_spec_init(&c) == SHARD_OK);
    const ArraySpec d;
    CHECK(c.version == SHARD_ARRAY_SPEC_VERSION);
    CHECK(d.compression_level == c.compression_level);
    CHECK(static_cast<std::uint32_t>(d.index_location) == c.index_location);
    CHECK(((d.index_checksum ? SHARD_CHECKSUM_INDEX : 0u) | (d.chunk_checksum ? SHARD_CHECKSUM_CHUNKS : 0u)) ==
          c.checksums);
    CHECK(c.compressor == nullptr ? d.compressor == "zstd" : d.compressor == c.compressor);
    CHECK(c.fill_value == nullptr && !d.fill_value && c.shard_shape == nullptr && !d.shard_shape);
    CHECK(c.dimension_names == nullptr && !d.dimension_names);

    ArraySpec spec({10, 12, 8}, {1, 6, 4}, "uint16");
    spec.shard_shape = std::vector<std::uint64_t>{2, 12, 8};
    spec.dimension_names = std::vector<std::optional<std::string>>{std::string("t"), std::nullopt, std::string("x")};
    const std::string json = squeeze(spec.to_json());
    CHECK(contains(json, "\"sharding_indexed\"") && contains(json, "\"crc32c\"") && contains(json, "\"zstd\""));
    CHECK(contains(json, "\"dimension_names\":[\"t\",null,\"x\"]"));
    CHECK(contains(json, "\"shape\":[10,12,8]") && contains(json, "\"uint16\""));
    ArraySpec plain({4, 4}, {2, 2}, "float32");
    plain.compressor = "none";
    const std::string plain_json = squeeze(plain.to_json());
    CHECK(!contains(plain_json, "sharding_indexed") && !contains(plain_json, "zstd") &&
          contains(plain_json, "\"float32\""));

    ArraySpec bad = spec;
    bad.chunk_shape = {1, 6};
    auto e = EXPECT_ERROR((void)bad.to_json(), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message() == "invalid argument: `chunk_shape` has 2 values, the shape 3");
    bad = spec;
    bad.shard_shape = std::vector<std::uint64_t>{2, 12, 8, 1};
    e = EXPECT_ERROR((void)Array::create(Store::memory(), "s", bad), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message() == "invalid argument: `shard_shape` has 4 values, the shape 3");
    bad = spec;
    bad.dimension_names = std::vector<std::optional<std::string>>{std::string("t")};
    e = EXPECT_ERROR((void)bad.to_json(), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "`dimension_names` has 1 values"));
    bad = spec;
    bad.data_type = "uint13";
    try {
        (void)bad.to_json();
        check_failed(__LINE__, "an unknown data type was accepted");
    } catch (const Error &err) {
        CHECK(err.status() != SHARD_OK && contains(err.message(), "uint13"));
    }

    const Store store = Store::memory();
    {
        Array a = Array::create(store, "spec", spec);
        CHECK(a.shape() == (std::vector<std::uint64_t>{10, 12, 8}));
        CHECK(a.codec().shard_shape() == (std::vector<std::uint64_t>{2, 12, 8}));
        CHECK(a.codec().inner_chunk_shape() == (std::vector<std::uint64_t>{1, 6, 4}));
        a.write_region<std::uint16_t>({3, 0, 0}, {2, 12, 8}, ramp(192));
    }
    CHECK(Array::open(store, "spec").read_region<std::uint16_t>({3, 0, 0}, {2, 12, 8}) == ramp(192));
}

// One frame (t, Y, X) of the acquisition: t * 1000 + y * 10 + x.
static std::vector<std::uint16_t> frame(std::uint64_t t, std::uint64_t ny, std::uint64_t nx) {
    std::vector<std::uint16_t> v;
    for (std::uint64_t y = 0; y < ny; y++)
        for (std::uint64_t x = 0; x < nx; x++) v.push_back(static_cast<std::uint16_t>(t * 1000 + y * 10 + x));
    return v;
}

// Array::append: frames grow the shape at once and read back at once; after flush a fresh open
// sees every frame (before it, at most the frames of complete shard layers); a block with the
// wrong value count or element size is refused with the binding's exact message, the wrong
// block shape or axis by the library, the shape unchanged. resize shrinks (cut frames read as
// fill when grown again, as does the cut part of a partial inner chunk) and grows; append goes
// on after it.
static void test_array_append_resize() {
    const Store store = Store::memory();
    ArraySpec spec({0, 8, 6}, {1, 4, 3}, "uint16");
    spec.shard_shape = std::vector<std::uint64_t>{2, 8, 6};
    Array a = Array::create(store, "acq", spec);
    CHECK(a.shape() == (std::vector<std::uint64_t>{0, 8, 6}));
    std::vector<std::uint16_t> all;
    for (std::uint64_t t = 0; t < 5; t++) {
        const auto f = frame(t, 8, 6);
        a.append<std::uint16_t>(0, {1, 8, 6}, f);
        all.insert(all.end(), f.begin(), f.end());
        CHECK(a.shape() == (std::vector<std::uint64_t>{t + 1, 8, 6}));
    }
    CHECK(a.read_region<std::uint16_t>({0, 0, 0}, {5, 8, 6}) == all);
    {
        const Array before_flush = Array::open(store, "acq");
        const std::uint64_t seen = before_flush.shape()[0];
        CHECK(seen <= 4);
        if (seen > 0) {
            const auto got = before_flush.read_region<std::uint16_t>({0, 0, 0}, {seen, 8, 6});
            CHECK(got == std::vector<std::uint16_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(seen * 48)));
        }
    }
    a.flush();
    CHECK(Array::open(store, "acq").shape() == (std::vector<std::uint64_t>{5, 8, 6}));
    CHECK(Array::open(store, "acq").read_region<std::uint16_t>({0, 0, 0}, {5, 8, 6}) == all);

    auto e = EXPECT_ERROR(a.append<std::uint16_t>(0, {1, 8, 6}, std::vector<std::uint16_t>(47)), SHARD_ERR_BUFFER_SIZE);
    CHECK(e && e->message() == "wrong buffer size: 47 values for a block of 48 elements");
    e = EXPECT_ERROR(a.append<std::uint32_t>(0, {1, 8, 6}, std::vector<std::uint32_t>(48)), SHARD_ERR_BUFFER_SIZE);
    CHECK(e && e->message() == "wrong buffer size: an element type of 4 bytes for a data type of 2 bytes");
    e = EXPECT_ERROR(a.append<std::uint16_t>(0, {1, 8, 5}, std::vector<std::uint16_t>(40)), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty());
    EXPECT_ERROR(a.append<std::uint16_t>(3, {1, 8, 6}, std::vector<std::uint16_t>(48)), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT_ERROR(a.append<std::uint16_t>(0, {0, 8, 6}, std::vector<std::uint16_t>()), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(a.shape() == (std::vector<std::uint64_t>{5, 8, 6}));

    // Shrink to 3 frames, grow back to 5: frames 3 and 4 are fill.
    a.resize({3, 8, 6});
    CHECK(a.shape() == (std::vector<std::uint64_t>{3, 8, 6}));
    a.resize({5, 8, 6});
    CHECK(a.read_region<std::uint16_t>({0, 0, 0}, {3, 8, 6}) ==
          std::vector<std::uint16_t>(all.begin(), all.begin() + 3 * 48));
    CHECK(a.read_region<std::uint16_t>({3, 0, 0}, {2, 8, 6}) == std::vector<std::uint16_t>(96, 0));
    // Shrink x to 4 (inside the second inner chunk column 3..5), grow back: x 4, 5 are fill.
    a.resize({5, 8, 4});
    a.resize({5, 8, 6});
    const auto grown = a.read_region<std::uint16_t>({0, 0, 0}, {1, 8, 6});
    bool edge_ok = true;
    for (std::uint64_t y = 0; y < 8; y++)
        for (std::uint64_t x = 0; x < 6; x++)
            edge_ok = edge_ok && grown[y * 6 + x] == (x < 4 ? static_cast<std::uint16_t>(y * 10 + x) : 0);
    CHECK(edge_ok);
    e = EXPECT_ERROR(a.resize({5, 8}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && !e->message().empty());
    // Appending goes on at the end.
    a.append<std::uint16_t>(0, {1, 8, 6}, frame(7, 8, 6));
    a.flush();
    const Array back = Array::open(store, "acq");
    CHECK(back.shape() == (std::vector<std::uint64_t>{6, 8, 6}));
    CHECK(back.read_region<std::uint16_t>({5, 0, 0}, {1, 8, 6}) == frame(7, 8, 6));
    // The byte form: the library checks the length.
    e = EXPECT_ERROR(a.append(0, {1, 8, 6}, span<const std::uint8_t>(std::vector<std::uint8_t>(95))),
                     SHARD_ERR_BUFFER_SIZE);
    CHECK(e && !e->message().empty());
}

// Attributes and groups: an array's attributes are `{}`, then what set_attributes gave (also
// after reopening); text that is not a JSON object is refused; a group is created with its
// attributes, refused a second time ("`img` already holds a group"), replaced with Overwrite; arrays below a
// group open by path. In a host MemoryStore the group's zarr.json is the object `g/zarr.json`.
static void test_attributes_and_groups() {
    const Store store = Store::memory();
    Group::create(store, "img", R"({"multiscales": [{"version": "0.5"}]})");
    auto e = EXPECT_ERROR(Group::create(store, "img"), SHARD_ERR_INVALID_STATE);
    CHECK(e && contains(e->message(), "`img` already holds a group"));
    e = EXPECT_ERROR(Group::create(store, "../img"), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "../img"));
    EXPECT_ERROR(Group::create(store, "g2", "[1, 2]"), SHARD_ERR_INVALID_METADATA);
    {
        Array a = Array::create(store, "img/0", ZARR_JSON);
        CHECK(squeeze(a.attributes()) == "{}");
        a.set_attributes(R"({"scale": [1.5, 2], "name": "zero"})");
        CHECK(squeeze(a.attributes()) == R"({"scale":[1.5,2],"name":"zero"})" ||
              squeeze(a.attributes()) == R"({"name":"zero","scale":[1.5,2]})");
        e = EXPECT_ERROR(a.set_attributes("[1]"), SHARD_ERR_INVALID_METADATA);
        CHECK(e && !e->message().empty());
    }
    const std::string reopened = squeeze(Array::open(store, "img/0").attributes());
    CHECK(contains(reopened, R"("scale":[1.5,2])") && contains(reopened, R"("name":"zero")"));
    Group::create(store, "img", "", Existing::Overwrite);
    EXPECT_ERROR((void)Array::open(store, "img/0"), SHARD_ERR_INVALID_METADATA);

    MemoryStore mem;
    Group::create(mem, "g", R"({"k": 1})");
    const auto keys = mem.keys();
    CHECK(keys == (std::vector<std::string>{"g/zarr.json"}));
    const auto text = squeeze(std::string(reinterpret_cast<const char *>(mem.open("g/zarr.json").bytes().data()),
                                          mem.open("g/zarr.json").bytes().size()));
    CHECK(contains(text, "\"node_type\":\"group\"") && contains(text, "\"k\":1"));
    e = EXPECT_ERROR(Group::create(mem, "g"), SHARD_ERR_INVALID_STATE);
    CHECK(e && contains(e->message(), "`g` already holds a group"));
}

// Create and open by path over a host store (a C++ MemoryStore): the metadata and shards are
// objects below the path; Overwrite removes the old shards; a spec works as JSON does.
static void test_host_store_create_open_path() {
    MemoryStore mem;
    {
        Array a = Array::create(mem, "x/y", ZARR_JSON);
        a.write_region<std::uint16_t>({0, 0}, {16, 16}, ramp(256));
    }
    CHECK(mem.keys() == (std::vector<std::string>{"x/y/c/0/0", "x/y/zarr.json"}));
    CHECK(Array::open(mem, "x/y").read_region<std::uint16_t>({0, 0}, {16, 16}) == ramp(256));
    auto e = EXPECT_ERROR((void)Array::create(mem, "x/y", ZARR_JSON), SHARD_ERR_INVALID_STATE);
    CHECK(e && contains(e->message(), "`x/y` already holds an array"));
    {
        const Array fresh = Array::create(std::ref(mem), "x/y", ZARR_JSON, Existing::Overwrite);
        CHECK(mem.list("x/y/c/").empty());
        CHECK(fresh.read_region<std::uint16_t>({0, 0}, {16, 16}) == std::vector<std::uint16_t>(256, 0));
    }
    e = EXPECT_ERROR((void)Array::open(mem, "x/z"), SHARD_ERR_INVALID_METADATA);
    CHECK(e && contains(e->message(), "no zarr.json or .zarray at `x/z`"));
    ArraySpec spec({6, 6}, {3, 3}, "int32");
    spec.fill_value = "-1";
    {
        Array s = Array::create(mem, "s", spec);
        s.write_region<std::int32_t>({0, 0}, {3, 3}, std::vector<std::int32_t>(9, 42));
    }
    const auto got = Array::open(mem, "s").read_region<std::int32_t>({0, 0}, {6, 6});
    CHECK(got[0] == 42 && got[2 * 6 + 2] == 42 && got[3] == -1 && got[35] == -1);
}

// compact: a shard updated in part holds the old chunk and index as dead bytes; compact
// rewrites it (1 shard) and frees exactly the bytes the file shrank by, the values unchanged;
// a second compact has nothing to do.
static void test_array_compact() {
    const std::string root = scratch("compact");
    std::filesystem::remove_all(root);
    const Store store = Store::directory(root, zarrshard::Directory::Create);
    Array a = Array::create(store, "", ZARR_JSON);
    a.write_region<std::uint16_t>({0, 0}, {16, 16}, ramp(256));
    a.write_region<std::uint16_t>({0, 0}, {4, 4}, ramp(16, 999));
    const auto want = a.read_region<std::uint16_t>({0, 0}, {32, 32});
    const auto before = file_bytes(root + "/c/0/0").size();
    const zarrshard::Compaction c = a.compact();
    const auto after = file_bytes(root + "/c/0/0").size();
    CHECK(c.shards_rewritten == 1);
    CHECK(after < before && c.bytes_freed == before - after);
    CHECK(a.read_region<std::uint16_t>({0, 0}, {32, 32}) == want);
    const zarrshard::Compaction again = a.compact(Flags::MortonOrder);
    CHECK(again.shards_rewritten == 0 && again.bytes_freed == 0);
    CHECK(Array::open(store).read_region<std::uint16_t>({0, 0}, {32, 32}) == want);
    EXPECT_ERROR((void)a.compact(Flags::StoreFillChunks), SHARD_ERR_INVALID_ARGUMENT);
    std::filesystem::remove_all(root);
}

// What run.sh has zarr-python read (tests/check_zarr_python.py SCRATCH/py.zarr): a group `img`
// with attributes; `img/frames`, from a spec (uint16, fill 7, dimension names t/y/x, shards of
// 4 frames, inner chunks 1x6x5), 10 frames appended (t * 1000 + y * 10 + x) and flushed;
// `img/json`, from ZARR_JSON, the whole array written (y * 32 + x) with attributes;
// `img/checked`, from a spec with every field away from its default (gzip 5, index at the
// start without checksum, a crc32c per chunk, fill 255), rows 0..3 written (y * 8 + x); and
// `img/resized`, int32 not sharded, 20x20 of y * 20 + x + 1, resized to 10x12 then 16x16.
static void test_write_for_zarr_python() {
    const std::string root = scratch("py.zarr");
    std::filesystem::remove_all(root);
    const Store store = Store::directory(root, zarrshard::Directory::Create);
    Group::create(store, "", R"({"written_by": "zarrshard C++"})");
    Group::create(store, "img", R"({"multiscales": [{"version": "0.5", "name": "cpp"}]})");
    ArraySpec spec({0, 12, 10}, {1, 6, 5}, "uint16");
    spec.shard_shape = std::vector<std::uint64_t>{4, 12, 10};
    spec.fill_value = "7";
    spec.dimension_names = std::vector<std::optional<std::string>>{std::string("t"), std::string("y"), std::string("x")};
    {
        Array frames = Array::create(store, "img/frames", spec);
        for (std::uint64_t t = 0; t < 10; t++) frames.append<std::uint16_t>(0, {1, 12, 10}, frame(t, 12, 10));
        frames.flush();
    }
    {
        Array json = Array::create(store, "img/json", ZARR_JSON);
        std::vector<std::uint16_t> v(32 * 32);
        for (std::size_t i = 0; i < v.size(); i++) v[i] = static_cast<std::uint16_t>(i);
        json.write_region<std::uint16_t>({0, 0}, {32, 32}, v);
        json.set_attributes(R"({"scale": [1.5, 2]})");
    }
    {
        // Every spec field away from its default.
        ArraySpec checked({8, 8}, {2, 4}, "uint8");
        checked.shard_shape = std::vector<std::uint64_t>{4, 8};
        checked.compressor = "gzip";
        checked.compression_level = 5;
        checked.index_location = zarrshard::IndexLocation::Start;
        checked.index_checksum = false;
        checked.chunk_checksum = true;
        checked.fill_value = "255";
        Array a = Array::create(store, "img/checked", checked);
        std::vector<std::uint8_t> v(32);
        for (std::size_t i = 0; i < v.size(); i++) v[i] = static_cast<std::uint8_t>(i);
        a.write_region<std::uint8_t>({0, 0}, {4, 8}, v); // rows 4..7 stay fill
    }
    {
        ArraySpec plain({20, 20}, {8, 8}, "int32");
        Array resized = Array::create(store, "img/resized", plain);
        std::vector<std::int32_t> v(400);
        for (std::size_t i = 0; i < v.size(); i++) v[i] = static_cast<std::int32_t>(i + 1);
        resized.write_region<std::int32_t>({0, 0}, {20, 20}, v);
        resized.resize({10, 12});
        resized.resize({16, 16});
    }
    CHECK(Array::open(store, "img/frames").shape() == (std::vector<std::uint64_t>{10, 12, 10}));
    CHECK(temporaries_below(root) == 0);
}

// ---- tests: review of the binding (each failed, crashed or was a sanitizer report before) ---

// An empty smart pointer given as the I/O object or the store, or returned by a store's open,
// is refused with SHARD_ERR_NULL_POINTER (the store's case as SHARD_ERR_IO from the call it
// fails); it was dereferenced inside the noexcept trampolines (UB, a crash).
static void test_empty_smart_pointers() {
    const Codec codec = codec_end();
    auto e = EXPECT_ERROR((void)Shard::open(codec, std::unique_ptr<MemoryIO>()), SHARD_ERR_NULL_POINTER);
    CHECK(e && contains(e->message(), "io"));
    EXPECT_ERROR((void)Shard::open(codec, std::shared_ptr<MemoryIO>(), Mode::WriteStreaming),
                 SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Array::open(ZARR_JSON, std::shared_ptr<MemoryStore>()), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)Array::open(ZARR_JSON, std::unique_ptr<MemoryStore>()), SHARD_ERR_NULL_POINTER);
    struct NullStore {
        std::unique_ptr<MemoryIO> open(std::string_view) { return nullptr; }
    };
    Array array = Array::open(ZARR_JSON, NullStore{});
    e = EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {2, 2}), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && contains(e->host_message(), "c/0/0"));
    e = EXPECT_ERROR(array.write_region({0, 0}, {1, 1}, std::vector<std::uint16_t>{1}), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception);
}

// Moved-from MemoryStore / MemoryIO: an Error with SHARD_ERR_NULL_POINTER from every member
// (MemoryStore dereferenced a null state: a crash; MemoryIO threw std::logic_error, no status).
static void test_moved_from_memory_objects() {
    MemoryStore a;
    MemoryStore b = std::move(a);
    EXPECT_ERROR((void)a.keys(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)a.opens(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)a.open("c/0/0"), SHARD_ERR_NULL_POINTER);
    CHECK(b.keys().empty() && b.opens() == 0);
    auto e = EXPECT_ERROR((void)Array::open(ZARR_JSON, std::ref(a)).read_region<std::uint16_t>({0, 0}, {1, 1}),
                          SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && contains(e->host_message(), "MemoryStore"));
    MemoryIO m1(std::vector<std::uint8_t>{1, 2});
    MemoryIO m2 = std::move(m1);
    EXPECT_ERROR((void)m1.exists(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR((void)m1.bytes(), SHARD_ERR_NULL_POINTER);
    EXPECT_ERROR(m1.set({3}), SHARD_ERR_NULL_POINTER);
    CHECK(m1.use_count() == 0 && m2.bytes() == (std::vector<std::uint8_t>{1, 2}));
    e = EXPECT_ERROR((void)Shard::open(codec_end(), std::move(m1)), SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && contains(e->host_message(), "MemoryIO"));
}

// write_region<T> with T of the wrong size was accepted whenever the byte counts matched
// (two uint32 for four uint16: silent garbage); a region past the array in read_region<T>
// allocated its vector first (2 TiB here: an ASan abort, std::bad_alloc without).
static void test_array_region_sizes() {
    MemoryStore store;
    Array array = Array::open(ZARR_JSON, store);
    auto e = EXPECT_ERROR(array.write_region<std::uint32_t>({0, 0}, {1, 4}, {0x00020001u, 0x00040003u}),
                          SHARD_ERR_BUFFER_SIZE);
    CHECK(e && contains(e->message(), "2 values"));
    EXPECT_ERROR(array.write_region<std::uint16_t>({0, 0}, {1, 4}, {1, 2, 3}), SHARD_ERR_BUFFER_SIZE);
    CHECK(store.keys().empty() && store.opens() == 0); // nothing written
    array.write_region<std::uint16_t>({0, 0}, {1, 4}, {1, 2, 3, 4});
    CHECK(array.read_region<std::uint16_t>({0, 0}, {1, 4}) == (std::vector<std::uint16_t>{1, 2, 3, 4}));
    const auto opens = store.opens();
    e = EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {1ull << 20, 1ull << 20}),
                     SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "past"));
    EXPECT_ERROR((void)array.read_region<std::uint16_t>({0, 0}, {1ull << 20}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(store.opens() == opens); // refused before any shard was opened
    CHECK(array.read_region<std::uint16_t>({5, 5}, {0, 3}).empty());
}

// A rank-0 shard has one chunk and no coordinates; shard_read_chunks takes it (`count`
// copies); the binding refused every read_chunks call on it (SHARD_ERR_INVALID_ARGUMENT).
static void test_rank0_read_chunks() {
    const Codec codec = Codec::from_config(
        R"({"chunk_shape": [], "codecs": [)" ZS_BYTES_LE R"(], "index_codecs": [)" ZS_BYTES_LE
        R"(, )" ZS_CRC R"(], "index_location": "end"})",
        "uint16", zarrshard::Coords(), "5");
    CHECK(codec.rank() == 0 && codec.inner_chunk_nbytes() == 2);
    MemoryIO mem;
    {
        auto w = Shard::open(codec, mem, Mode::WriteBuffered);
        w.write_chunk_as<std::uint16_t>(zarrshard::Coords(), std::vector<std::uint16_t>{0x0201});
        CHECK(w.finalize() > 0);
    }
    const auto r = Shard::open(codec, mem);
    CHECK(r.read_chunk_as<std::uint16_t>(zarrshard::Coords()) == std::vector<std::uint16_t>{0x0201});
    const auto two = r.read_chunks(std::vector<std::vector<std::uint64_t>>{{}, {}});
    CHECK(two.size() == 4 && two[0] == 1 && two[1] == 2 && two[2] == 1 && two[3] == 2);
    std::vector<std::uint8_t> three(6);
    r.read_chunks(zarrshard::Coords(), three);
    CHECK(three == (std::vector<std::uint8_t>{1, 2, 1, 2, 1, 2}));
    EXPECT_ERROR(r.read_chunks({0}, three), SHARD_ERR_INVALID_ARGUMENT);
    std::vector<std::uint8_t> odd(3);
    EXPECT_ERROR(r.read_chunks(zarrshard::Coords(), odd), SHARD_ERR_BUFFER_SIZE);
}

// The vector form of read_chunk_raw allocated whatever the index names: a hostile index
// entry of 2^62 bytes (index at the start, no checksum, an object without size) was an
// ASan abort (std::length_error / std::bad_alloc without ASan). The binding then held the size
// to the memory limit itself; now the library's size query does (docs/reliability.md), so
// read_chunk_raw_nbytes throws the library's own message and nothing is sized from the entry.
static void test_raw_chunk_hostile_size() {
    const Codec codec = Codec::from_config(
        R"({"chunk_shape": [4, 4], "codecs": [)" ZS_BYTES_LE R"(], "index_codecs": [)" ZS_BYTES_LE
        R"(], "index_location": "start"})",
        "uint16", {16, 16}, "0");
    MemoryIO mem;
    {
        auto w = Shard::open(codec, mem, Mode::WriteBuffered);
        w.write_chunk_as<std::uint16_t>({1, 1}, chunk_values(1, 1, 2));
        (void)w.finalize();
    }
    auto bytes = mem.bytes();
    const std::uint64_t huge = 1ull << 62;
    std::memcpy(&bytes[(1 * 4 + 1) * 16 + 8], &huge, 8); // entry (1, 1): nbytes
    const auto r = Shard::open(codec, ReadOnlyIO{MemoryIO(bytes)});
    // The library's message, with the entry's size and the limit in force.
    const std::string want = "memory limit: the encoded bytes of inner chunk [1, 1] needs " +
                             std::to_string(huge) + " bytes, more than the limit of " +
                             std::to_string(zarrshard::memory_limit());
    auto e = EXPECT_ERROR((void)r.read_chunk_raw_nbytes({1, 1}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message().rfind(want, 0) == 0);
    CHECK(e && contains(e->message(), "set_memory_limit or ZARRSHARD_MEMORY_LIMIT"));
    e = EXPECT_ERROR((void)r.read_chunk_raw({1, 1}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message().rfind(want, 0) == 0);
    std::vector<std::uint8_t> none; // the span form with an empty buffer asks the size too
    e = EXPECT_ERROR((void)r.read_chunk_raw({1, 1}, none), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message().rfind(want, 0) == 0);
    // Entries within the limit are still reported: the stored chunk next to it is readable.
    CHECK(r.read_chunk_raw_nbytes({0, 0}) == 0 && r.read_chunk_raw({0, 0}).empty());
    // A plausible size still reaches the library, which finds the entry past the object.
    const std::uint64_t mib = 1ull << 20;
    std::memcpy(&bytes[(1 * 4 + 1) * 16 + 8], &mib, 8);
    const auto plausible = Shard::open(codec, ReadOnlyIO{MemoryIO(bytes)});
    CHECK(plausible.read_chunk_raw_nbytes({1, 1}) == mib);
    EXPECT_ERROR((void)plausible.read_chunk_raw({1, 1}), SHARD_ERR_CORRUPT);
    // The limit is the library's, whoever set it: below 1 MiB, the same entry is refused by
    // the size query itself.
    zarrshard::set_memory_limit(mib / 2);
    CHECK(zarrshard::memory_limit() == mib / 2);
    e = EXPECT_ERROR((void)plausible.read_chunk_raw_nbytes({1, 1}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "needs 1048576 bytes, more than the limit of 524288"));
    e = EXPECT_ERROR((void)plausible.read_chunk_raw({1, 1}), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && e->message().rfind("memory limit: ", 0) == 0);
    zarrshard::set_memory_limit(0);
    if (std::getenv("ZARRSHARD_MEMORY_LIMIT") == nullptr)
        CHECK(zarrshard::memory_limit() == (std::uint64_t{4} << 30));
}

// io<T>() handed out a mutable T& to an object given as std::shared_ptr<const T> (writing
// through it is undefined behaviour for an object created const); only io<const T>() now.
static void test_io_const_object() {
    const Codec codec = codec_end();
    auto shard = Shard::open(codec, std::make_shared<const MemoryIO>(written_shard(1)));
    CHECK(shard.io<const MemoryIO>().exists());
    auto e = EXPECT_ERROR((void)shard.io<MemoryIO>(), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(e && contains(e->message(), "const"));
    CHECK(&shard.io<std::shared_ptr<const MemoryIO>>() != nullptr);
    auto plain = Shard::open(codec, std::make_shared<MemoryIO>(written_shard(1)));
    CHECK(plain.io<MemoryIO>().exists() && plain.io<const MemoryIO>().exists());
}

// A host store whose open returns the library's file I/O (LibraryIO::file): regions written
// through it are files below ROOT that the library's directory store reads back equal; a store
// returning an empty LibraryIO fails the call with SHARD_ERR_IO naming the key.
static void test_host_store_of_library_files() {
    const std::string root = scratch("filestore");
    std::filesystem::remove_all(root);
    for (const char *d : {"", "/c", "/c/0", "/c/1"}) ::mkdir((root + d).c_str(), 0755);
    struct FileStore {
        std::string root;
        LibraryIO open(std::string_view key) { return LibraryIO::file(root + "/" + std::string(key)); }
    };
    std::vector<std::uint16_t> values(20 * 24);
    for (std::size_t i = 0; i < values.size(); i++) values[i] = static_cast<std::uint16_t>(i * 3 + 1);
    {
        Array array = Array::open(ZARR_JSON, FileStore{root});
        array.write_region<std::uint16_t>({4, 2}, {20, 24}, values);
        CHECK(array.read_region<std::uint16_t>({4, 2}, {20, 24}) == values);
    }
    CHECK(file_exists(root + "/c/0/0") && file_exists(root + "/c/1/1"));
    const Array reader = Array::open(ZARR_JSON, Store::directory(root));
    CHECK(reader.read_region<std::uint16_t>({4, 2}, {20, 24}) == values);
    CHECK(reader.read_region<std::uint16_t>({0, 0}, {4, 32}) == std::vector<std::uint16_t>(128, 0));
    struct EmptyStore {
        LibraryIO open(std::string_view) { return LibraryIO(); }
    };
    auto e = EXPECT_ERROR((void)Array::open(ZARR_JSON, EmptyStore{}).read_region<std::uint16_t>({0, 0}, {1, 1}),
                          SHARD_ERR_IO);
    CHECK(e && e->io_code() == zarrshard::io_code_exception && contains(e->message(), "`c/0/0`") &&
          e->host_message() == "zarrshard: the store's open(\"c/0/0\") returned an empty LibraryIO");
}

// The library's directory store (Store::directory, made with Directory::Create) written
// through an Array opened on it with the zarr.json text: a region covering whole shards
// replaces their files through temporaries, file for file the bytes a MemoryStore holds after
// the same writes; a partial region updates a shard in place; a region
// of fill value over a whole shard deletes its file; and a whole-shard rewrite whose temporary
// cannot be written (RLIMIT_FSIZE below its size: EFBIG) fails with SHARD_ERR_IO and leaves the
// old file byte for byte. Every step reads back equal through a fresh store, and no temporary
// is left.
static void test_directory_store_writes() {
    const std::uint64_t n = 32;
    {
        const std::string root = scratch("dirstore");
        std::filesystem::remove_all(root);
        MemoryStore mem;
        Array disk = Array::open(ZARR_JSON, Store::directory(root, zarrshard::Directory::Create));
        Array memory = Array::open(ZARR_JSON, mem);
        std::vector<std::uint16_t> model(n * n);
        for (std::size_t i = 0; i < model.size(); i++)
            model[i] = static_cast<std::uint16_t>((i * 7 + i / n * 3) % 1000 + 1);
        auto write = [&](std::uint64_t r0, std::uint64_t c0, std::uint64_t rows, std::uint64_t cols,
                         std::uint16_t value) {
            std::vector<std::uint16_t> v(rows * cols);
            for (std::size_t i = 0; i < v.size(); i++)
                v[i] = value == 0 ? 0 : static_cast<std::uint16_t>(value + i % 17);
            disk.write_region<std::uint16_t>({r0, c0}, {rows, cols}, v);
            memory.write_region<std::uint16_t>({r0, c0}, {rows, cols}, v);
            for (std::uint64_t r = 0; r < rows; r++)
                for (std::uint64_t c = 0; c < cols; c++) model[(r0 + r) * n + c0 + c] = v[r * cols + c];
        };
        auto same = [&] {
            const Array fresh = Array::open(ZARR_JSON, Store::directory(root));
            bool ok = fresh.read_region<std::uint16_t>({0, 0}, {n, n}) == model &&
                      disk.read_region<std::uint16_t>({0, 0}, {n, n}) == model;
            for (const char *key : {"c/0/0", "c/0/1", "c/1/0", "c/1/1"}) {
                const MemoryIO object = mem.open(key);
                const std::string file = root + "/" + key;
                ok = ok && file_exists(file) == object.exists() &&
                     (!object.exists() || file_bytes(file) == object.bytes());
            }
            return ok && temporaries_below(root) == 0;
        };
        disk.write_region<std::uint16_t>({0, 0}, {n, n}, model);
        memory.write_region<std::uint16_t>({0, 0}, {n, n}, model);
        CHECK(same());
        write(3, 5, 20, 9, 400); // across all four shards, none whole: in place
        CHECK(same());
        write(16, 16, 16, 16, 0); // a whole shard of fill value: deleted
        CHECK(!file_exists(root + "/c/1/1") && same());
        write(16, 16, 16, 16, 900); // written again: a new file
        CHECK(same());

        // A whole-shard rewrite that cannot be written: the old shard file stays as it was.
        const auto before = file_bytes(root + "/c/0/0");
        struct rlimit old_limit;
        CHECK(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        struct rlimit small = old_limit;
        small.rlim_cur = before.size() / 2;
        void (*old_handler)(int) = std::signal(SIGXFSZ, SIG_IGN); // EFBIG, not the signal
        CHECK(::setrlimit(RLIMIT_FSIZE, &small) == 0);
        std::vector<std::uint16_t> other(16 * 16);
        for (std::size_t i = 0; i < other.size(); i++) other[i] = static_cast<std::uint16_t>(i * 31 + 5);
        auto e = EXPECT_ERROR(disk.write_region<std::uint16_t>({0, 0}, {16, 16}, other), SHARD_ERR_IO);
        CHECK(::setrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        std::signal(SIGXFSZ, old_handler);
        CHECK(e && e->io_code() == EFBIG);
        CHECK(file_bytes(root + "/c/0/0") == before && same());
    }
}

// Self-move (through an alias, as generic code does it) keeps the handle and the I/O object.
static void test_self_move() {
    Codec codec = codec_end();
    Codec &codec_alias = codec;
    codec = std::move(codec_alias);
    CHECK(codec && codec.rank() == 2);
    Shard shard = Shard::open(codec, CountedIO(written_shard(1)));
    Shard &shard_alias = shard;
    shard = std::move(shard_alias);
    CHECK(shard && g_live == 1 && reads_as(shard, 1));
    MemoryStore store;
    Array array = Array::open(ZARR_JSON, store);
    Array &array_alias = array;
    array = std::move(array_alias);
    CHECK(array && array.read_region<std::uint16_t>({0, 0}, {1, 1}) == std::vector<std::uint16_t>{0});
    shard.close();
    CHECK(g_live == 0);
}

// An append whose write fails and whose rollback (truncate) fails too: the Error has the
// write's code, and its host message was the truncate's text (the last exception overwrote
// the one the code belongs to). Now the message of the callback that returned io_code().
static void test_host_message_matches_io_code() {
    const Codec codec = codec_end();
    struct FailingAppend {
        MemoryIO mem;
        bool fail = false;
        std::size_t read(std::uint64_t o, span<std::uint8_t> b) { return mem.read(o, b); }
        zarrshard::SuffixRead read_suffix(span<std::uint8_t> b) { return mem.read_suffix(b); }
        std::optional<std::uint64_t> size() { return mem.size(); }
        void write(std::uint64_t o, span<const std::uint8_t> d) {
            if (fail) throw zarrshard::IoError(ENOSPC, "write: disk full");
            mem.write(o, d);
        }
        void truncate(std::uint64_t) { throw zarrshard::IoError(EIO, "truncate: device gone"); }
    };
    auto shard = Shard::open(codec, FailingAppend{written_shard(1)}, Mode::UpdateAppend);
    shard.io<FailingAppend>().fail = true;
    auto e = EXPECT_ERROR(shard.write_chunk_as<std::uint16_t>({2, 2}, chunk_values(2, 2, 7)), SHARD_ERR_IO);
    CHECK(e && e->io_code() == ENOSPC);
    CHECK(e && e->host_message() == "write: disk full");
    CHECK(e && !contains(e->what(), "device gone"));
    // The next failure reports only its own exception.
    e = EXPECT_ERROR(shard.write_chunk_as<std::uint16_t>({2, 2}, chunk_values(2, 2, 7)), SHARD_ERR_INVALID_STATE);
    CHECK(e && e->host_message().empty() && e->io_code() == 0);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        std::cerr << "usage: test_zarrshard FIXTURE_DIR SCRATCH_DIR\n";
        return 2;
    }
    g_fixture = argv[1];
    g_scratch = argv[2];
    RUN(test_version_and_span);
    RUN(test_codec_from_config_getters);
    RUN(test_codec_from_zarr_json_getters);
    RUN(test_codec_errors);
    RUN(test_codec_copies);
    RUN(test_threads_setting);
    RUN(test_release_memory);
    RUN(test_memory_round_trip_write_modes);
    RUN(test_memory_round_trip_update_modes);
    RUN(test_memory_index_at_start_and_read_chunks);
    RUN(test_raw_copy_and_chunk_info);
    RUN(test_file_round_trip_every_mode);
    RUN(test_file_abandoned_and_removed);
    RUN(test_memory_missing_object_reads_fill);
    RUN(test_shard_errors);
    RUN(test_corrupt_shards);
    RUN(test_host_io_error_code);
    RUN(test_contract_violation);
    RUN(test_missing_callbacks);
    RUN(test_throwing_adapter);
    RUN(test_new_objects);
    RUN(test_io_lifetime);
    RUN(test_move_semantics);
    RUN(test_concurrent_reads);
    RUN(test_busy_write_from_two_threads);
    RUN(test_two_translation_units);
    RUN(test_zarr_python_fixture);
    RUN(test_array_fixture_regions);
    RUN(test_array_write_regions_model);
    RUN(test_array_kerchunk_refs);
    RUN(test_array_kerchunk_refs_one_read_per_shard);
    RUN(test_array_kerchunk_refs_store_errors);
    RUN(test_array_write_kerchunk_refs);
    RUN(test_array_kerchunk_refs_parquet);
    RUN(test_array_kerchunk_refs_parquet_dir);
    RUN(test_array_verify);
    RUN(test_array_verify_stops);
    RUN(test_store_list_sparse_opens);
    RUN(test_store_list_cannot_list);
    RUN(test_store_list_throws);
    RUN(test_store_list_junk_keys);
    RUN(test_directory_store_walks);
    RUN(test_array_errors);
    RUN(test_array_throwing_store);
    RUN(test_empty_smart_pointers);
    RUN(test_moved_from_memory_objects);
    RUN(test_array_region_sizes);
    RUN(test_rank0_read_chunks);
    RUN(test_raw_chunk_hostile_size);
    RUN(test_io_const_object);
    RUN(test_host_store_of_library_files);
    RUN(test_directory_store_writes);
    RUN(test_store_basics);
    RUN(test_array_create_open_paths);
    RUN(test_array_spec);
    RUN(test_array_append_resize);
    RUN(test_attributes_and_groups);
    RUN(test_host_store_create_open_path);
    RUN(test_array_compact);
    RUN(test_write_for_zarr_python);
    RUN(test_self_move);
    RUN(test_host_message_matches_io_code);
    std::cout << g_passed << " passed, " << g_failed << " failed" << std::endl;
    return g_failed == 0 ? 0 : 1;
}
