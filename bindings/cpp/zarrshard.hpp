// zarrshard.hpp: a header-only C++17 binding of the zarrshard C API (include/zarrshard.h).
//
//     #include <zarrshard.hpp>      // installed: scripts/install.sh PREFIX, then
//     // c++ -std=c++17 app.cpp $(pkg-config --cflags --libs zarrshard)
//
//     auto codec = zarrshard::Codec::from_zarr_json(zarr_json_text);
//     auto shard = zarrshard::Shard::open(codec, zarrshard::LibraryIO::file(path));
//     std::vector<uint16_t> chunk = shard.read_chunk_as<uint16_t>({0, 1});
//
//     auto store = zarrshard::Store::directory(dir);          // the library's file store
//     auto array = zarrshard::Array::open(store, "image");    // image/zarr.json
//     std::vector<uint16_t> region = array.read_region<uint16_t>({10, 20}, {40, 30});
//
// Design (after wasmtime's C++ headers):
// * one class per C handle (`Codec`, `Shard`, `Array`), owning it through a `std::unique_ptr`
//   with a custom deleter; a moved-from object holds nothing, is safe to destroy, and its
//   calls throw `Error` with `SHARD_ERR_NULL_POINTER`. `Shard` and `Array` are move-only;
//   `Codec` (immutable in C) is also copyable, a copy being another reference
//   (`shard_codec_clone`);
// * files are the library's: `Store` (a `shard_store_directory` / `shard_store_memory` table,
//   copyable, copies sharing it) and `LibraryIO` (a `shard_io_file` table, move-only, handed to
//   the shard that opens it); the binding has no file code of its own. Arrays are created,
//   opened by path, resized and appended to through them (`Array::create`, `ArraySpec`,
//   `Group::create`);
// * every status is checked: a failure throws `zarrshard::Error` with the status, the
//   library's message (`shard_last_error`) and the host's I/O code (`shard_last_io_code`);
// * host storage is any C++ object with `read(offset, span<uint8_t>)` (see "The I/O concept"
//   below); it is adapted into a `shard_io_callbacks` table whose trampolines are `noexcept`
//   and turn every exception into an error code, so nothing thrown ever crosses into C.
// * a host's store is any object with `open(key)` returning such an I/O object, and
//   optionally `list(prefix)` returning its keys (so walks over the stored shards open only
//   those); its `open_object` and `list` trampolines are `noexcept` too.
//   `Array::kerchunk_refs_parquet` writes
//   through such a store, borrowed for the call; `Array::kerchunk_refs_parquet_dir` writes
//   the same files into a local directory.
//
// Threads: a `Codec` may be used from any number of threads at once (const calls). A `Shard`
// opened for reading may be read from many threads at once (its const read calls), and then
// the I/O object's `read`, `read_suffix` and `size` must be thread-safe. Write calls need
// exclusive use of the `Shard`; the library refuses a concurrent write with
// `SHARD_ERR_BUSY`. Destroying or moving a `Codec`/`Shard` must not race with its use.
#ifndef ZARRSHARD_HPP
#define ZARRSHARD_HPP

#include "zarrshard.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>


namespace zarrshard {

// ---- span -------------------------------------------------------------------------------

/// A non-owning view of `size()` contiguous `T`s (a minimal `std::span` for C++17).
///
/// Converts implicitly from `std::vector`, `std::array`, C arrays, `std::initializer_list`
/// (so `{0, 1}` works as coordinates; the list lives until the end of the full expression)
/// and `span<U>` when `U*` converts to `T*` (non-const to const). Borrowed: the viewed
/// storage must outlive the span. Never throws.
template <class T>
class span {
  public:
    using element_type = T;
    using value_type = std::remove_cv_t<T>;
    using size_type = std::size_t;
    using pointer = T *;
    using iterator = T *;

    constexpr span() noexcept = default;
    constexpr span(T *data, std::size_t size) noexcept : data_(data), size_(size) {}
    template <std::size_t N>
    constexpr span(T (&array)[N]) noexcept : data_(array), size_(N) {}
    template <class U, std::size_t N,
              std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value, int> = 0>
    constexpr span(std::array<U, N> &array) noexcept : data_(array.data()), size_(N) {}
    template <class U, std::size_t N,
              std::enable_if_t<std::is_convertible<const U (*)[], T (*)[]>::value, int> = 0>
    constexpr span(const std::array<U, N> &array) noexcept : data_(array.data()), size_(N) {}
    template <class U, class A,
              std::enable_if_t<std::is_convertible<U (*)[], T (*)[]>::value, int> = 0>
    span(std::vector<U, A> &v) noexcept : data_(v.data()), size_(v.size()) {}
    template <class U, class A,
              std::enable_if_t<std::is_convertible<const U (*)[], T (*)[]>::value, int> = 0>
    span(const std::vector<U, A> &v) noexcept : data_(v.data()), size_(v.size()) {}
    // As C++26's std::span (P2447): for arguments, where the list outlives the call. Never
    // keep such a span in a variable (`Coords c = {0, 1};` dangles).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
#endif
    template <class U = T, std::enable_if_t<std::is_const<U>::value, int> = 0>
    constexpr span(std::initializer_list<value_type> list) noexcept
        : data_(list.begin()), size_(list.size()) {}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    template <class U, std::enable_if_t<!std::is_same<U, T>::value &&
                                            std::is_convertible<U (*)[], T (*)[]>::value,
                                        int> = 0>
    constexpr span(span<U> other) noexcept : data_(other.data()), size_(other.size()) {}

    [[nodiscard]] constexpr T *data() const noexcept { return data_; }
    [[nodiscard]] constexpr std::size_t size() const noexcept { return size_; }
    [[nodiscard]] constexpr std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
    [[nodiscard]] constexpr bool empty() const noexcept { return size_ == 0; }
    constexpr T *begin() const noexcept { return data_; }
    constexpr T *end() const noexcept { return data_ + size_; }
    /// Element `i`; unchecked, like `std::span`.
    constexpr T &operator[](std::size_t i) const noexcept { return data_[i]; }

  private:
    T *data_ = nullptr;
    std::size_t size_ = 0;
};

/// Coordinates (inner chunk or shard grid), one value per dimension.
using Coords = span<const std::uint64_t>;

/// The bytes of `s` (for trivially copyable `T`). Never throws.
template <class T>
[[nodiscard]] span<const std::uint8_t> as_bytes(span<T> s) noexcept {
    static_assert(std::is_trivially_copyable<std::remove_cv_t<T>>::value,
                  "as_bytes needs a trivially copyable element type");
    return {reinterpret_cast<const std::uint8_t *>(s.data()), s.size_bytes()};
}

/// The writable bytes of `s` (for trivially copyable, non-const `T`). Never throws.
template <class T>
[[nodiscard]] span<std::uint8_t> as_writable_bytes(span<T> s) noexcept {
    static_assert(!std::is_const<T>::value, "as_writable_bytes needs a mutable span");
    static_assert(std::is_trivially_copyable<T>::value,
                  "as_writable_bytes needs a trivially copyable element type");
    return {reinterpret_cast<std::uint8_t *>(s.data()), s.size_bytes()};
}

// ---- errors -----------------------------------------------------------------------------

/// The I/O code a callback returns when the C++ I/O object threw a `std::exception` that is
/// neither `IoError`, `NotFound`, `std::system_error` nor `std::bad_alloc` (which gives
/// `ENOMEM`), or a `zarrshard::Error` without an I/O code (one with a code gives that code).
/// Negative, so it never collides with an `errno` value.
inline constexpr std::int32_t io_code_exception = -1;
/// The I/O code a callback returns when the C++ I/O object threw something that is not a
/// `std::exception` (`throw 42`).
inline constexpr std::int32_t io_code_unknown_exception = -2;

/// A failed zarrshard call.
///
/// `status()` is the C status (never `SHARD_OK`), `message()` the library's own message,
/// `io_code()` the host's I/O code for `SHARD_ERR_IO` (what the failing callback returned;
/// `io_code_exception` / `io_code_unknown_exception` when the C++ I/O object threw) and 0
/// otherwise, `host_message()` the `what()` of the exception the I/O object threw in the
/// callback that returned `io_code()` (the first such, when the library went on after it, e.g.
/// to roll back), if any.
/// `what()` is "zarrshard: " + the message (or the status name when there is none) + the
/// host message. Copyable without throwing; its accessors never throw.
class Error : public std::runtime_error {
  public:
    /// An error with the given parts. Throws `std::bad_alloc` only.
    Error(shard_status status, std::string message, std::int32_t io_code = 0,
          std::string host_message = {})
        : std::runtime_error(describe(status, message, host_message)), status_(status),
          io_code_(io_code), message_(std::make_shared<const Parts>(
                                 Parts{std::move(message), std::move(host_message)})) {}

    /// The C status of the failed call.
    [[nodiscard]] shard_status status() const noexcept { return status_; }
    /// The library's message for the failed call (from `shard_last_error`), or the binding's.
    [[nodiscard]] const std::string &message() const noexcept { return message_->message; }
    /// The host's code for `SHARD_ERR_IO` (`shard_last_io_code`), 0 for other statuses.
    [[nodiscard]] std::int32_t io_code() const noexcept { return io_code_; }
    /// What the C++ I/O object's exception said in the callback that returned `io_code()`;
    /// empty otherwise.
    [[nodiscard]] const std::string &host_message() const noexcept { return message_->host; }

  private:
    struct Parts {
        std::string message;
        std::string host;
    };

    static std::string describe(shard_status status, const std::string &message,
                                const std::string &host) {
        // The library's messages name their kind ("invalid metadata: ..."); the status name
        // stands in only when there is no message.
        std::string s = "zarrshard: ";
        s += message.empty() ? shard_status_str(static_cast<std::uint32_t>(status)) : message;
        if (!host.empty()) s += " (host exception: " + host + ")";
        return s;
    }

    shard_status status_;
    std::int32_t io_code_;
    std::shared_ptr<const Parts> message_; // shared: copying an exception must not throw
};

/// Thrown by an I/O object's `read`, `read_suffix` or `size` to say the object does not
/// exist; the library then reads the shard as all fill value (`SHARD_IO_NOT_FOUND`).
/// Thrown from `remove`, it means "already gone", which is success.
struct NotFound : std::exception {
    /// A fixed text. Never throws.
    const char *what() const noexcept override { return "zarrshard: object not found"; }
};

/// Thrown by an I/O object to fail a callback with a chosen host code (e.g. an `errno`
/// value); the failing zarrshard call throws `Error` with `SHARD_ERR_IO` and `io_code() ==
/// code()`. A code of 0 is replaced by `EIO` (0 would mean success).
class IoError : public std::runtime_error {
  public:
    /// An error with host code `code` (0 becomes `EIO`) and text `what`. Throws
    /// `std::bad_alloc` only.
    IoError(std::int32_t code, const std::string &what)
        : std::runtime_error(what), code_(code != 0 ? code : EIO) {}
    /// The host code the callback returns (never 0). Never throws.
    [[nodiscard]] std::int32_t code() const noexcept { return code_; }

  private:
    std::int32_t code_;
};

namespace detail {

/// One exception an I/O object threw during the current zarrshard call on this thread: the
/// code its callback returned and the exception's `what()`.
struct HostFailure {
    std::int32_t code;
    std::string message;
};

/// The exceptions thrown during the current call on this thread, in order (callbacks run on
/// the thread of the zarrshard call that makes them). More than one when the library goes on
/// after a failure, e.g. a failed append `write` followed by a failed `truncate` rollback.
inline std::vector<HostFailure> &host_failures() noexcept {
    static thread_local std::vector<HostFailure> failures;
    return failures;
}

/// Forget the failures of earlier calls. Never throws.
inline void clear_host_failures() noexcept { host_failures().clear(); }

/// Remember a failure (the first 8 per call); returns `code`. Never throws: out of memory,
/// the code alone must do.
inline std::int32_t record_host_failure(std::int32_t code, const char *what) noexcept {
    try {
        auto &v = host_failures();
        if (v.size() < 8) v.push_back(HostFailure{code, what});
    } catch (...) {
    }
    return code;
}

/// Give the last recorded failure, when its code is `from`, the code `to` instead; returns
/// `to`. Never throws.
inline std::int32_t relabel_last_host_failure(std::int32_t from, std::int32_t to) noexcept {
    auto &v = host_failures();
    if (!v.empty() && v.back().code == from) v.back().code = to;
    return to;
}

/// The message of the first failure whose callback returned `code` (the library reports the
/// first failing callback's code; later failures, e.g. of a rollback, are secondary), or
/// empty; the failures are then forgotten. Never throws.
inline std::string take_host_message(std::int32_t code) noexcept {
    std::string m;
    for (auto &f : host_failures())
        if (f.code == code) {
            m.swap(f.message);
            break;
        }
    clear_host_failures();
    return m;
}

/// The I/O code for the exception being handled. Call only inside a `catch` block.
inline std::int32_t current_exception_code() noexcept {
    try {
        throw;
    } catch (const NotFound &) {
        return SHARD_IO_NOT_FOUND;
    } catch (const IoError &e) {
        return record_host_failure(e.code(), e.what());
    } catch (const std::system_error &e) {
        const int v = e.code().value();
        return record_host_failure(v != 0 ? static_cast<std::int32_t>(v) : EIO, e.what());
    } catch (const std::bad_alloc &e) {
        return record_host_failure(ENOMEM, e.what());
    } catch (const Error &e) {
        // A zarrshard call (e.g. `LibraryIO::file` in a store's open) failed: keep its code.
        return record_host_failure(e.io_code() != 0 ? e.io_code() : io_code_exception, e.what());
    } catch (const std::exception &e) {
        return record_host_failure(io_code_exception, e.what());
    } catch (...) {
        return record_host_failure(io_code_unknown_exception,
                                   "an exception that is not a std::exception");
    }
}

/// The library's message for the last failure on this thread.
inline std::string last_error_message() {
    std::size_t n = 0;
    if (shard_last_error(nullptr, 0, &n) != SHARD_OK || n == 0) return {};
    std::string s(n + 1, '\0');
    std::size_t written = 0;
    if (shard_last_error(&s[0], s.size(), &written) != SHARD_OK) return {};
    s.resize(written < n ? written : n);
    return s;
}

/// Throw `Error` for a failed status, with the library's message and I/O code.
inline void check(shard_status status) {
    if (status == SHARD_OK) {
        clear_host_failures();
        return;
    }
    const std::int32_t io = status == SHARD_ERR_IO ? shard_last_io_code() : 0;
    std::string host = status == SHARD_ERR_IO ? take_host_message(io) : std::string();
    clear_host_failures();
    throw Error(status, last_error_message(), io, std::move(host));
}

/// Run a C call and check its status. The host message of an earlier call is dropped first,
/// so an `Error` only ever reports an exception from its own call.
template <class F>
void call(F &&f) {
    clear_host_failures();
    check(std::forward<F>(f)());
}

/// A vector of `n` value-initialized `T`s; a size that cannot be allocated throws `Error`
/// (`SHARD_ERR_INVALID_ARGUMENT`) instead of `std::length_error` / `std::bad_alloc`.
template <class T>
std::vector<T> allocate(std::size_t n, const char *what) {
    try {
        return std::vector<T>(n);
    } catch (const std::exception &) { // length_error, bad_alloc
        throw Error(SHARD_ERR_INVALID_ARGUMENT,
                    std::string("invalid argument: ") + what + " of " + std::to_string(n) + " x " +
                        std::to_string(sizeof(T)) + " bytes does not fit in memory");
    }
}

// Detection idiom: which optional members an I/O object has.
template <class, template <class> class, class = void>
struct detect : std::false_type {};
template <class T, template <class> class Op>
struct detect<T, Op, std::void_t<Op<T>>> : std::true_type {};

template <class T>
using read_op = decltype(std::declval<T &>().read(std::uint64_t{}, span<std::uint8_t>{}));
template <class T>
using read_suffix_op = decltype(std::declval<T &>().read_suffix(span<std::uint8_t>{}));
template <class T>
using size_op = decltype(std::declval<T &>().size());
template <class T>
using write_op =
    decltype(std::declval<T &>().write(std::uint64_t{}, span<const std::uint8_t>{}));
template <class T>
using truncate_op = decltype(std::declval<T &>().truncate(std::uint64_t{}));
template <class T>
using remove_op = decltype(std::declval<T &>().remove());
// The new-object members (C `create_new` … `discard_new`): all four, or the table has none.
template <class T>
using begin_new_op = decltype(std::declval<T &>().begin_new());
template <class T>
using write_new_op =
    decltype(std::declval<T &>().write_new(std::uint64_t{}, span<const std::uint8_t>{}));
template <class T>
using commit_new_op = decltype(std::declval<T &>().commit_new(std::uint64_t{}));
template <class T>
using discard_new_op = decltype(std::declval<T &>().discard_new());
template <class T>
inline constexpr bool has_new_objects_v =
    detect<T, begin_new_op>::value && detect<T, write_new_op>::value &&
    detect<T, commit_new_op>::value && detect<T, discard_new_op>::value;

// Smart pointers and reference_wrapper are looked through: the I/O object is what they point at.
// `is_null` says whether a smart pointer holds nothing: such an object is refused before any
// callback could dereference it.
template <class T>
struct pointee {
    using type = T;
    static T &get(T &t) noexcept { return t; }
    static bool is_null(const T &) noexcept { return false; }
};
template <class T, class D>
struct pointee<std::unique_ptr<T, D>> {
    using type = T;
    static T &get(std::unique_ptr<T, D> &p) noexcept { return *p; }
    static bool is_null(const std::unique_ptr<T, D> &p) noexcept { return !p; }
};
template <class T>
struct pointee<std::shared_ptr<T>> {
    using type = T;
    static T &get(std::shared_ptr<T> &p) noexcept { return *p; }
    static bool is_null(const std::shared_ptr<T> &p) noexcept { return !p; }
};
template <class T>
struct pointee<std::reference_wrapper<T>> {
    using type = T;
    static T &get(std::reference_wrapper<T> &r) noexcept { return r.get(); }
    static bool is_null(const std::reference_wrapper<T> &) noexcept { return false; }
};

/// The heap object a `Shard` owns as its callbacks' `userdata`.
struct AdapterBase {
    virtual ~AdapterBase() = default;
    /// The I/O object when it is a `T`, else nullptr; also nullptr when `writable` is asked of
    /// an object held through a pointer to const (`std::shared_ptr<const T>`).
    virtual void *object(const std::type_info &type, bool writable) noexcept = 0;
};

} // namespace detail

/// What an I/O object's `read_suffix` returns: the bytes stored at the front of the buffer
/// and, when known, the object's size.
struct SuffixRead {
    std::size_t nbytes = 0;
    std::optional<std::uint64_t> object_size;
};

/// Whether `T` satisfies the I/O concept (has `read(uint64_t, span<uint8_t>) -> size_t`).
template <class T>
inline constexpr bool is_io_object_v =
    detail::detect<typename detail::pointee<std::decay_t<T>>::type, detail::read_op>::value;

namespace detail {

// The noexcept trampolines for an I/O object of type IO (the stored type: maybe a pointer).
template <class IO>
struct Adapter final : AdapterBase {
    using Object = typename pointee<IO>::type;
    static_assert(detect<Object, read_op>::value,
                  "an I/O object needs read(uint64_t offset, zarrshard::span<uint8_t>) -> size_t");
    static_assert(std::is_convertible<read_op<Object>, std::size_t>::value,
                  "an I/O object's read must return the number of bytes read (size_t)");

    template <class... A>
    explicit Adapter(A &&...args) : io(std::forward<A>(args)...) {}

    IO io; // the host's object (or a pointer to it)

    void *object(const std::type_info &type, bool writable) noexcept override {
        // const_cast: a pointee may be const (std::shared_ptr<const T>); io<const T>() restores
        // it, and io<T>() (writable) is refused for it (typeid ignores const).
        if (type == typeid(IO)) return const_cast<void *>(static_cast<const void *>(&io));
        if (type == typeid(Object) && !(writable && std::is_const<Object>::value))
            return const_cast<void *>(static_cast<const void *>(&obj()));
        return nullptr;
    }

    Object &obj() noexcept { return pointee<IO>::get(io); }
    static Adapter &self(void *ud) noexcept {
        return static_cast<Adapter &>(*static_cast<AdapterBase *>(ud));
    }

    static std::int32_t read(void *ud, std::uint64_t offset, std::size_t len, std::uint8_t *buf,
                             std::size_t *read_out) noexcept {
        try {
            *read_out = static_cast<std::size_t>(
                self(ud).obj().read(offset, span<std::uint8_t>(buf, len)));
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t read_suffix(void *ud, std::size_t len, std::uint8_t *buf,
                                    std::size_t *read_out,
                                    std::uint64_t *object_size_out) noexcept {
        try {
            using R = read_suffix_op<Object>;
            if constexpr (std::is_convertible<R, SuffixRead>::value) {
                SuffixRead r = self(ud).obj().read_suffix(span<std::uint8_t>(buf, len));
                *read_out = r.nbytes;
                if (r.object_size) *object_size_out = *r.object_size;
            } else {
                *read_out =
                    static_cast<std::size_t>(self(ud).obj().read_suffix(span<std::uint8_t>(buf, len)));
            }
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t size(void *ud, std::uint64_t *size_out) noexcept {
        try {
            std::optional<std::uint64_t> s = self(ud).obj().size();
            if (!s) return SHARD_IO_NOT_FOUND;
            *size_out = *s;
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t write(void *ud, std::uint64_t offset, const std::uint8_t *buf,
                              std::size_t len) noexcept {
        try {
            self(ud).obj().write(offset, span<const std::uint8_t>(buf, len));
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t truncate(void *ud, std::uint64_t len) noexcept {
        try {
            self(ud).obj().truncate(len);
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t remove(void *ud) noexcept {
        try {
            self(ud).obj().remove();
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    // The new object's handle is the adapter itself: one new object per I/O object at a time.
    static std::int32_t create_new(void *ud, void **new_out) noexcept {
        try {
            self(ud).obj().begin_new();
            *new_out = ud;
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t write_new(void *ud, void *, std::uint64_t offset, const std::uint8_t *buf,
                                  std::size_t len) noexcept {
        try {
            self(ud).obj().write_new(offset, span<const std::uint8_t>(buf, len));
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    static std::int32_t commit_new(void *ud, void *, std::uint64_t len) noexcept {
        try {
            self(ud).obj().commit_new(len);
            return 0;
        } catch (...) {
            return current_exception_code();
        }
    }

    // Nothing to report to: an exception is swallowed.
    static void discard_new(void *ud, void *) noexcept {
        try {
            self(ud).obj().discard_new();
        } catch (...) {
        }
    }

    static void destroy(void *ud) noexcept { delete static_cast<AdapterBase *>(ud); }

    /// The table for this adapter; `userdata` is `this` as an `AdapterBase *`.
    shard_io_callbacks table() noexcept {
        shard_io_callbacks t;
        std::memset(&t, 0, sizeof t);
        t.version = SHARD_IO_VERSION;
        t.userdata = static_cast<AdapterBase *>(this);
        t.read = &Adapter::read;
        if constexpr (detect<Object, read_suffix_op>::value) t.read_suffix = &Adapter::read_suffix;
        if constexpr (detect<Object, size_op>::value) t.size = &Adapter::size;
        if constexpr (detect<Object, write_op>::value) t.write = &Adapter::write;
        if constexpr (detect<Object, truncate_op>::value) t.truncate = &Adapter::truncate;
        if constexpr (detect<Object, remove_op>::value) t.remove = &Adapter::remove;
        if constexpr (has_new_objects_v<Object>) {
            t.create_new = &Adapter::create_new;
            t.write_new = &Adapter::write_new;
            t.commit_new = &Adapter::commit_new;
            t.discard_new = &Adapter::discard_new;
        }
        t.destroy = &Adapter::destroy;
        return t;
    }
};

struct CodecDeleter {
    void operator()(shard_codec *c) const noexcept { shard_codec_free(c); }
};
struct ShardDeleter {
    void operator()(shard_handle *h) const noexcept { shard_close(h); }
};

} // namespace detail

// ---- Codec ------------------------------------------------------------------------------

/// How `Shard::open` opens a shard (`shard_mode`).
enum class Mode : std::uint32_t {
    /// Read: the index is read at open; `read_*` and `chunk_info`.
    Read = SHARD_MODE_READ,
    /// Write, buffered in memory; `finalize` writes the whole object at once.
    WriteBuffered = SHARD_MODE_WRITE_BUFFERED,
    /// Write, each chunk as given; the index at `finalize`.
    WriteStreaming = SHARD_MODE_WRITE_STREAMING,
    /// Update an existing shard, appending new chunks and a new index.
    UpdateAppend = SHARD_MODE_UPDATE_APPEND,
    /// Update an existing shard, rewriting chunks in place where they fit.
    UpdateInPlace = SHARD_MODE_UPDATE_IN_PLACE,
};

/// `Shard::open` flags (`SHARD_FLAG_*`); combine with `|`.
enum class Flags : std::uint32_t {
    None = 0,
    /// Lay out buffered shards in Morton order.
    MortonOrder = SHARD_FLAG_MORTON_ORDER,
    /// Store inner chunks equal to the fill value instead of leaving them empty.
    StoreFillChunks = SHARD_FLAG_STORE_FILL_CHUNKS,
};

/// Both flags' bits. Never throws.
constexpr Flags operator|(Flags a, Flags b) noexcept {
    return static_cast<Flags>(static_cast<std::uint32_t>(a) | static_cast<std::uint32_t>(b));
}

/// The library version, e.g. "0.1.0". Thread-safe; never throws.
[[nodiscard]] inline const char *version() noexcept { return shard_version(); }

/// Set the library's memory limit (`shard_set_memory_limit`): the most bytes one buffer the
/// library allocates for data may take; the library also holds `read_chunk_raw`'s size query
/// to it, so the vector `Shard::read_chunk_raw(coords)` sizes from an index entry is bounded
/// too. 0 restores the default (`ZARRSHARD_MEMORY_LIMIT`, else 4 GiB). Process-wide; takes
/// effect for calls that start afterwards; thread-safe. Throws `Error` (`SHARD_ERR_PANIC` only).
inline void set_memory_limit(std::uint64_t bytes) { detail::check(shard_set_memory_limit(bytes)); }

/// The library's memory limit in bytes (`shard_get_memory_limit`; see `set_memory_limit`), for
/// hosts that size their own buffers or report the setting. Thread-safe; never throws (4 GiB,
/// the default, if the library cannot report it, which only a caught panic could cause).
[[nodiscard]] inline std::uint64_t memory_limit() noexcept {
    std::uint64_t n = 0;
    return shard_get_memory_limit(&n) == SHARD_OK ? n : std::uint64_t{4} << 30;
}

/// What `release_memory` freed.
struct Released {
    /// Bytes of the library's own buffers freed (encode segments, read buffers, scratch
    /// chunks); exact.
    std::uint64_t bytes = 0;
    /// Codec contexts freed (zstd, libdeflate): counted, since libdeflate does not report
    /// its size.
    std::size_t contexts = 0;
};

/// Free the memory the library keeps between calls so that no inner chunk allocates
/// (`shard_release_memory`): the free list of encode segments (up to 4 MiB per library
/// thread), the buffers region reads fetched shards into (up to 8 MiB per library thread, 64 MiB in all) and
/// the codec contexts and scratch chunk of the calling thread and of every library
/// thread; with `set_threads(1)` in force, the library's threads (which only sleep then) are
/// ended too. For a host done writing or reading for a while; later calls rebuild what they
/// need.
/// Other host threads keep theirs until they exit or call this themselves. Memory in use by a
/// call in progress is not touched; waits until each library thread has finished its current
/// inner chunk or task. Thread-safe. Throws `Error` (`SHARD_ERR_PANIC` only).
inline Released release_memory() {
    Released r;
    detail::check(shard_release_memory(&r.bytes, &r.contexts));
    return r;
}

/// The most threads `set_threads` accepts (`SHARD_MAX_THREADS`).
inline constexpr std::size_t max_threads = SHARD_MAX_THREADS;

/// Set the library's worker threads for encoding and decoding inner chunks
/// (`shard_set_threads`): 0 = one per core (the default, or `ZARRSHARD_THREADS`), 1 = the
/// calling thread only, for hosts that run their own pool. Process-wide; takes effect for
/// calls that start afterwards. Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT`
/// above `max_threads` or when the threads cannot be started; the setting is unchanged).
inline void set_threads(std::size_t threads) { detail::check(shard_set_threads(threads)); }

/// The number of threads encoding and decoding uses now (the default resolved: at least 1;
/// `shard_get_threads`). Thread-safe. Throws `Error` (`SHARD_ERR_PANIC` only).
[[nodiscard]] inline std::size_t threads() {
    std::size_t n = 0;
    detail::check(shard_get_threads(&n));
    return n;
}

/// A shard layout: the sharding codec bound to one shard shape, data type and fill value.
///
/// Owns one reference to a `shard_codec` (freed by the destructor). The C codec is immutable
/// and shared, so a `Codec` is copyable like a `std::shared_ptr`: a copy is another reference
/// to the same codec (`shard_codec_clone`, no deep copy), with its own lifetime, usable on
/// any thread while the original is destroyed. A moved-from `Codec` is empty (`!codec`), safe
/// to destroy, copy and assign to, and its getters throw `Error` (`SHARD_ERR_NULL_POINTER`).
/// Every const member is thread-safe. Shards opened with a codec keep their own reference: the
/// `Codec` may be destroyed while they are open. Destroying, assigning or moving one `Codec`
/// object must not race with other calls on that same object (copies are separate objects).
class Codec {
  public:
    /// An empty codec (holds nothing). Never throws.
    Codec() noexcept = default;

    /// Take ownership of `codec` (from `shard_codec_from_*`; may be null). Never throws.
    explicit Codec(shard_codec *codec) noexcept : ptr_(codec) {}

    /// Another reference to `other`'s codec (`shard_codec_clone`: a reference count, not a
    /// copy of the layout); empty when `other` is empty. The two are independent: either may
    /// be destroyed first, and they may be used from different threads. Thread-safe with
    /// const calls on `other`. Throws `Error` (`SHARD_ERR_PANIC` only, when the library
    /// cannot make the reference).
    Codec(const Codec &other) : ptr_(clone(other.get())) {}
    /// Take `other`'s reference; `other` is left empty. Never throws.
    Codec(Codec &&other) noexcept = default;
    /// Release this reference, then hold another to `other`'s codec (as the copy
    /// constructor). Self-assignment keeps the reference. Strong guarantee: if the clone
    /// throws (`Error`, `SHARD_ERR_PANIC` only), this codec is unchanged.
    Codec &operator=(const Codec &other) {
        if (this != &other) ptr_.reset(clone(other.get())); // clone first: strong guarantee
        return *this;
    }
    /// Release this reference, then take `other`'s; self-move keeps the reference. Never throws.
    Codec &operator=(Codec &&other) noexcept = default;
    /// Releases this reference (`shard_codec_free`). Never throws.
    ~Codec() = default;

    /// Build a codec from a Zarr v3 array `zarr.json` text (its `codecs` must hold
    /// `sharding_indexed`). Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_METADATA`,
    /// `SHARD_ERR_UNSUPPORTED_CODEC`, `SHARD_ERR_INVALID_ARGUMENT`, ...).
    [[nodiscard]] static Codec from_zarr_json(std::string_view zarr_json) {
        shard_codec *c = nullptr;
        detail::call([&] {
            return shard_codec_from_zarr_json(zarr_json.data(), zarr_json.size(), &c);
        });
        return Codec(c);
    }

    /// Build a codec from a bare `sharding_indexed` configuration object (JSON), a data type
    /// name (`"uint16"`), the shard shape and the fill value as JSON (`"0"`, `"\"NaN\""`).
    /// Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_METADATA`, `SHARD_ERR_INVALID_ARGUMENT`,
    /// `SHARD_ERR_UNSUPPORTED_CODEC`, ...).
    [[nodiscard]] static Codec from_config(std::string_view config_json, std::string_view data_type,
                                           Coords shard_shape, std::string_view fill_value_json) {
        shard_codec *c = nullptr;
        detail::call([&] {
            return shard_codec_from_config(config_json.data(), config_json.size(),
                                           data_type.data(), data_type.size(), shard_shape.data(),
                                           shard_shape.size(), fill_value_json.data(),
                                           fill_value_json.size(), &c);
        });
        return Codec(c);
    }

    /// Whether this holds a codec. Never throws.
    explicit operator bool() const noexcept { return ptr_ != nullptr; }
    /// The C handle, borrowed (still owned by this object); null when empty. Never throws.
    [[nodiscard]] const shard_codec *get() const noexcept { return ptr_.get(); }
    /// Give up ownership of the C handle (free it with `shard_codec_free`). Never throws.
    [[nodiscard]] shard_codec *release() noexcept { return ptr_.release(); }

    /// Number of dimensions of a shard. Throws `Error`.
    [[nodiscard]] std::size_t rank() const {
        std::size_t r = 0;
        detail::call([&] { return shard_codec_rank(get(), &r); });
        return r;
    }
    /// Elements per dimension of a shard. Throws `Error`.
    [[nodiscard]] std::vector<std::uint64_t> shard_shape() const {
        return shape(&shard_codec_shard_shape);
    }
    /// Elements per dimension of an inner chunk. Throws `Error`.
    [[nodiscard]] std::vector<std::uint64_t> inner_chunk_shape() const {
        return shape(&shard_codec_inner_chunk_shape);
    }
    /// Inner chunks per shard along each dimension. Throws `Error`.
    [[nodiscard]] std::vector<std::uint64_t> chunks_per_shard() const {
        return shape(&shard_codec_chunks_per_shard);
    }
    /// Array shape (codecs from `zarr.json` only; else `Error` with
    /// `SHARD_ERR_INVALID_STATE`).
    [[nodiscard]] std::vector<std::uint64_t> array_shape() const {
        return shape(&shard_codec_array_shape);
    }
    /// Shards per dimension (codecs from `zarr.json` only; else `Error` with
    /// `SHARD_ERR_INVALID_STATE`).
    [[nodiscard]] std::vector<std::uint64_t> grid_shape() const {
        return shape(&shard_codec_grid_shape);
    }
    /// Inner chunks per shard. Throws `Error`.
    [[nodiscard]] std::uint64_t num_chunks() const {
        std::uint64_t n = 0;
        detail::call([&] { return shard_codec_num_chunks(get(), &n); });
        return n;
    }
    /// Decoded bytes of one inner chunk (what `read_chunk`/`write_chunk` take). Throws `Error`.
    [[nodiscard]] std::size_t inner_chunk_nbytes() const {
        std::size_t n = 0;
        detail::call([&] { return shard_codec_inner_chunk_nbytes(get(), &n); });
        return n;
    }
    /// Encoded bytes of the shard index. Throws `Error`.
    [[nodiscard]] std::uint64_t index_nbytes() const {
        std::uint64_t n = 0;
        detail::call([&] { return shard_codec_index_nbytes(get(), &n); });
        return n;
    }
    /// Bytes of one element. Throws `Error`.
    [[nodiscard]] std::size_t element_nbytes() const {
        std::size_t n = 0;
        detail::call([&] { return shard_codec_element_nbytes(get(), &n); });
        return n;
    }
    /// The fill value: one element, native byte order. Throws `Error`.
    [[nodiscard]] std::vector<std::uint8_t> fill_value() const {
        std::vector<std::uint8_t> v(element_nbytes());
        detail::call([&] { return shard_codec_fill_value(get(), v.data(), v.size()); });
        return v;
    }
    /// The Zarr v3 data type name (`"uint16"`). Throws `Error`.
    [[nodiscard]] std::string data_type() const {
        std::size_t n = 0;
        detail::call([&] { return shard_codec_data_type(get(), nullptr, 0, &n); });
        std::string s(n + 1, '\0');
        std::size_t written = 0;
        detail::call([&] { return shard_codec_data_type(get(), &s[0], s.size(), &written); });
        s.resize(written);
        return s;
    }
    /// The storage key of the shard at grid coordinates `coords` (`"c/0/1"`; codecs from
    /// `zarr.json` only). Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` outside the grid,
    /// `SHARD_ERR_INVALID_STATE`).
    [[nodiscard]] std::string shard_key(Coords coords) const {
        std::size_t n = 0;
        detail::call([&] {
            return shard_codec_shard_key(get(), coords.data(), coords.size(), nullptr, 0, &n);
        });
        std::string s(n + 1, '\0');
        std::size_t written = 0;
        detail::call([&] {
            return shard_codec_shard_key(get(), coords.data(), coords.size(), &s[0], s.size(),
                                         &written);
        });
        s.resize(written);
        return s;
    }

  private:
    // A new reference to `c`, or null for null.
    static shard_codec *clone(const shard_codec *c) {
        if (c == nullptr) return nullptr;
        shard_codec *out = nullptr;
        detail::call([&] { return shard_codec_clone(c, &out); });
        return out;
    }

    using ShapeFn = shard_status (*)(const shard_codec *, std::uint64_t *, std::size_t);
    std::vector<std::uint64_t> shape(ShapeFn fn) const {
        std::vector<std::uint64_t> v(rank());
        detail::call([&] { return fn(get(), v.data(), v.size()); });
        return v;
    }

    std::unique_ptr<shard_codec, detail::CodecDeleter> ptr_;
};

// ---- LibraryIO: the library's own I/O for one shard object ----------------------------

namespace detail {

/// The native bytes of `path` as the C API takes them (any bytes but NUL on POSIX; UTF-8,
/// from `u8string()`, on Windows).
inline std::string path_bytes(const std::filesystem::path &path) {
#ifdef _WIN32
    const auto utf8 = path.u8string(); // std::string in C++17, std::u8string in C++20
    return std::string(utf8.begin(), utf8.end());
#else
    return path.native();
#endif
}

/// `text` as a NUL-terminated string for a C call taking `const char *`; a NUL inside would
/// cut it short without the library seeing it, so it is refused here with
/// `SHARD_ERR_INVALID_ARGUMENT` naming `what` (`"path"`) and the text.
inline std::string c_string(std::string_view text, const char *what) {
    if (text.find('\0') != std::string_view::npos) {
        std::string shown(text);
        std::replace(shown.begin(), shown.end(), '\0', '?');
        throw Error(SHARD_ERR_INVALID_ARGUMENT, std::string("invalid argument: ") + what + " `" +
                                                    shown + "` contains a NUL byte");
    }
    return std::string(text);
}

} // namespace detail

/// A shard object served by the library's own I/O (`shard_io_callbacks` filled by the
/// library), e.g. `LibraryIO::file(path)` (`shard_io_file`): the binding writes no file
/// code of its own.
///
/// Owns the table (released with `shard_io_release`, which calls its `destroy`, by the
/// destructor) until it is handed over: `Shard::open(codec, std::move(io), ...)` gives it to
/// the shard, which releases it when it closes, and a host store's `open(key)` may return one
/// (see `Array`), which the library then owns. Move-only (the table has one owner); a
/// moved-from or default `LibraryIO` is empty (`!io`), and opening a shard on it throws
/// `SHARD_ERR_NULL_POINTER`. Thread-safety is the table's: `file`'s reads may run on many
/// threads at once.
class LibraryIO {
  public:
    /// An empty object (holds no table). Never throws.
    LibraryIO() noexcept { std::memset(&t_, 0, sizeof t_); }

    /// The file at `path` as one shard object (`shard_io_file`): reads with `pread` (a
    /// missing file reads as all fill value); what the library writes whole (a buffered
    /// finalize) goes to a temporary beside the file, renamed over it when complete, so a
    /// reader or a crash sees the old shard or the new one whole; the update modes and
    /// streaming writes change the file in place; a shard left empty deletes the file.
    /// Nothing is opened yet. Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` for an
    /// empty path or one containing NUL, naming it).
    [[nodiscard]] static LibraryIO file(const std::filesystem::path &path) {
        const std::string c = detail::c_string(detail::path_bytes(path), "path");
        LibraryIO io;
        detail::call([&] { return shard_io_file(c.c_str(), 0, &io.t_); });
        return io;
    }

    /// Take `other`'s table; `other` is left empty. Never throws.
    LibraryIO(LibraryIO &&other) noexcept : t_(other.t_) { std::memset(&other.t_, 0, sizeof t_); }
    /// Release this table, then take `other`'s; self-move keeps the table. Never throws.
    LibraryIO &operator=(LibraryIO &&other) noexcept {
        if (this != &other) {
            reset();
            t_ = other.t_;
            std::memset(&other.t_, 0, sizeof t_);
        }
        return *this;
    }
    LibraryIO(const LibraryIO &) = delete;
    LibraryIO &operator=(const LibraryIO &) = delete;
    /// Releases the table when it was not handed over (`shard_io_release`). Never throws.
    ~LibraryIO() { reset(); }

    /// Whether this holds a table. Never throws.
    explicit operator bool() const noexcept { return t_.version != 0; }
    /// The table, borrowed (still owned by this object). Never throws.
    [[nodiscard]] const shard_io_callbacks *get() const noexcept { return &t_; }
    /// Give up ownership of the table: the caller hands it to a C call that takes it (or
    /// releases it with `shard_io_release`); this object is left empty. Never throws.
    [[nodiscard]] shard_io_callbacks release() noexcept {
        shard_io_callbacks t = t_;
        std::memset(&t_, 0, sizeof t_);
        return t;
    }

  private:
    void reset() noexcept {
        if (t_.version != 0) shard_io_release(&t_);
        std::memset(&t_, 0, sizeof t_);
    }

    shard_io_callbacks t_;
};

// ---- Shard ------------------------------------------------------------------------------

/// Where an inner chunk is stored (`shard_chunk_location`).
struct ChunkLocation {
    /// Byte offset in the shard object (meaningless when `empty`).
    std::uint64_t offset = 0;
    /// Encoded size in bytes (0 when `empty`).
    std::uint64_t nbytes = 0;
    /// True when the chunk is not stored (it reads as the fill value).
    bool empty = true;
};

/// One open shard object.
///
/// Owns a `shard_handle` (closed by the destructor or `close()`) and, through it, the I/O
/// object given to `open` (destroyed when the handle closes). Move-only; a moved-from or
/// closed `Shard` is empty (`!shard`), safe to destroy, and its calls throw `Error`
/// (`SHARD_ERR_NULL_POINTER`).
///
/// Threads: const members (the read calls) may run from many threads at once on a read
/// shard. Non-const members need exclusive use; a concurrent write call is refused with
/// `SHARD_ERR_BUSY`.
class Shard {
  public:
    /// An empty shard (holds nothing). Never throws.
    Shard() noexcept = default;
    /// Take `other`'s handle (and I/O object); `other` is left empty. Never throws.
    Shard(Shard &&other) noexcept
        : ptr_(std::move(other.ptr_)), io_(std::exchange(other.io_, nullptr)),
          rank_(other.rank_), chunk_nbytes_(other.chunk_nbytes_),
          element_nbytes_(other.element_nbytes_) {}
    /// Close this shard's handle (as `close()`), then take `other`'s; `other` is left empty.
    /// Self-move is a no-op. Never throws. Not thread-safe with other calls on either shard.
    Shard &operator=(Shard &&other) noexcept {
        if (this != &other) {
            ptr_ = std::move(other.ptr_); // closes the handle this held
            io_ = std::exchange(other.io_, nullptr);
            rank_ = other.rank_;
            chunk_nbytes_ = other.chunk_nbytes_;
            element_nbytes_ = other.element_nbytes_;
        }
        return *this;
    }
    Shard(const Shard &) = delete;
    Shard &operator=(const Shard &) = delete;
    /// Closes the handle (as `close()`). Never throws.
    ~Shard() = default;

    /// Open the shard object behind `io` with `codec`'s layout in `mode`.
    ///
    /// `io` is any object with `read(uint64_t offset, span<uint8_t> buf) -> size_t` (bytes
    /// stored at `buf`'s front; fewer than `buf.size()` only at the object's end) and
    /// optionally `size() -> std::optional<uint64_t>`, `read_suffix(span<uint8_t>) ->
    /// SuffixRead`, `write(uint64_t, span<const uint8_t>)`, `truncate(uint64_t)` and
    /// `remove()` (write modes need `write`; an index at the end needs `read_suffix` or
    /// `size`). It signals a missing object by throwing `NotFound` (or `size()` returning
    /// `nullopt`), a host error by throwing `IoError(code, ...)`; any other exception fails
    /// the call too (see `io_code_exception`).
    ///
    /// Ownership: `io` is moved (or copied) into a heap adapter the handle owns; it lives until
    /// the shard closes, and `io<T>()` borrows it. Pass a `std::shared_ptr<T>`,
    /// `std::unique_ptr<T>` or `std::ref(t)` to keep it elsewhere (with `std::ref`, `t` must
    /// outlive the shard; an empty smart pointer throws `SHARD_ERR_NULL_POINTER`). If `open`
    /// throws, the shard keeps nothing: the adapter and the object moved into it are already
    /// destroyed (an empty `codec` fails before the move). The object's destructor runs in
    /// `close` and must not throw. Thread-safe. Throws `Error` (`SHARD_ERR_IO`,
    /// `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED`,
    /// `SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_NULL_POINTER`, ...).
    template <class IO>
    [[nodiscard]] static Shard open(const Codec &codec, IO &&io, Mode mode = Mode::Read,
                                    Flags flags = Flags::None) {
        using Stored = std::decay_t<IO>;
        static_assert(!std::is_same<Stored, LibraryIO>::value,
                      "a LibraryIO is handed over: pass it as an rvalue (std::move(io))");
        static_assert(is_io_object_v<Stored>,
                      "an I/O object needs read(uint64_t offset, zarrshard::span<uint8_t>)");
        Shard s;
        s.rank_ = codec.rank(); // also rejects an empty codec before anything is built
        s.chunk_nbytes_ = codec.inner_chunk_nbytes();
        s.element_nbytes_ = codec.element_nbytes();
        if (detail::pointee<Stored>::is_null(io))
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`io` must not be NULL (an empty smart pointer was given as the I/O object)");
        auto adapter = std::make_unique<detail::Adapter<Stored>>(std::forward<IO>(io));
        const shard_io_callbacks table = adapter->table();
        shard_handle *h = nullptr;
        detail::call([&] {
            return shard_open_ex(codec.get(), &table, static_cast<std::uint32_t>(mode),
                                 static_cast<std::uint32_t>(flags), &h);
        });
        // From here the handle owns the adapter (its destroy callback deletes it).
        s.io_ = adapter.release();
        s.ptr_.reset(h);
        return s;
    }

    /// Open the shard object behind the library's own I/O `io` (e.g. `LibraryIO::file(path)`)
    /// with `codec`'s layout in `mode`. On success the shard owns the table (released when it
    /// closes) and `io` is left empty; if `open` throws, `io` still owns it. `io<T>()` has no
    /// C++ object to borrow on such a shard. Thread-safe. Throws `Error` as the other `open`
    /// (`SHARD_ERR_NULL_POINTER` for an empty `io`).
    [[nodiscard]] static Shard open(const Codec &codec, LibraryIO &&io, Mode mode = Mode::Read,
                                    Flags flags = Flags::None) {
        Shard s;
        s.rank_ = codec.rank(); // also rejects an empty codec
        s.chunk_nbytes_ = codec.inner_chunk_nbytes();
        s.element_nbytes_ = codec.element_nbytes();
        if (!io) throw Error(SHARD_ERR_NULL_POINTER, "`io` must not be NULL (an empty LibraryIO)");
        shard_handle *h = nullptr;
        detail::call([&] {
            return shard_open_ex(codec.get(), io.get(), static_cast<std::uint32_t>(mode),
                                 static_cast<std::uint32_t>(flags), &h);
        });
        (void)io.release(); // the handle owns the table now (destroy, at close)
        s.ptr_.reset(h);
        return s;
    }

    /// Whether this holds an open handle. Never throws.
    explicit operator bool() const noexcept { return ptr_ != nullptr; }
    /// The C handle, borrowed; null when empty. Never throws.
    [[nodiscard]] const shard_handle *get() const noexcept { return ptr_.get(); }
    /// Rank of the codec the shard was opened with. Never throws.
    [[nodiscard]] std::size_t rank() const noexcept { return rank_; }
    /// Decoded bytes of one inner chunk. Never throws.
    [[nodiscard]] std::size_t inner_chunk_nbytes() const noexcept { return chunk_nbytes_; }

    /// Close the handle now: a write shard not finalized is discarded; the I/O object is
    /// destroyed. Idempotent. Not thread-safe with other calls on this shard. Never throws.
    void close() noexcept {
        io_ = nullptr;
        ptr_.reset();
    }

    /// Borrow the I/O object given to `open` when it is a `T` (or points at one, for smart
    /// pointers and `std::ref`); valid until the shard closes. E.g.
    /// `shard.io<MemoryIO>().bytes()`. An object given through a pointer to const
    /// (`std::shared_ptr<const T>`) is borrowed only as `io<const T>()`. Throws `Error`
    /// (`SHARD_ERR_NULL_POINTER` when empty, `SHARD_ERR_INVALID_ARGUMENT` for another type or a
    /// non-const `T` of a const object).
    template <class T>
    [[nodiscard]] T &io() const {
        if (!ptr_) throw Error(SHARD_ERR_NULL_POINTER, "`shard` must not be NULL (closed or moved from)");
        if (io_ == nullptr)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: the shard's I/O is the library's (LibraryIO), with no "
                        "C++ object to borrow");
        void *p = io_->object(typeid(T), !std::is_const<T>::value);
        if (p == nullptr)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: the I/O object is not a " +
                            std::string(std::is_const<T>::value ? "const " : "") +
                            typeid(T).name() + " (or is const)");
        return *static_cast<T *>(p);
    }

    /// Decode inner chunk `coords` into `out` (`inner_chunk_nbytes()` bytes, C order, native
    /// byte order; the fill value when the chunk is empty). Read shards only. Thread-safe.
    /// Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`,
    /// `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`, `SHARD_ERR_INVALID_STATE`).
    void read_chunk(Coords coords, span<std::uint8_t> out) const {
        detail::call([&] {
            return shard_read_chunk(get(), coords.data(), coords.size(), out.data(), out.size());
        });
    }

    /// Decode inner chunk `coords` into a new vector. As `read_chunk(coords, out)`.
    [[nodiscard]] std::vector<std::uint8_t> read_chunk(Coords coords) const {
        std::vector<std::uint8_t> v(chunk_nbytes_);
        read_chunk(coords, v);
        return v;
    }

    /// Decode inner chunk `coords` as elements of `T` (trivially copyable, `sizeof(T)` equal
    /// to the data type's size, e.g. `uint16_t` for `"uint16"`). Thread-safe. Throws `Error`
    /// (`SHARD_ERR_BUFFER_SIZE` when `sizeof(T)` does not match, and as `read_chunk`).
    template <class T>
    [[nodiscard]] std::vector<T> read_chunk_as(Coords coords) const {
        static_assert(std::is_trivially_copyable<T>::value, "T must be trivially copyable");
        check_element<T>();
        std::vector<T> v(chunk_nbytes_ / sizeof(T));
        read_chunk(coords, as_writable_bytes(span<T>(v)));
        return v;
    }

    /// Set the gap (bytes) below which the byte ranges of the chunks one `read_chunks` call
    /// wants are fetched as one read (`shard_set_coalesce_gap`; 0: only touching ranges;
    /// large: the whole span). Default `SHARD_DEFAULT_COALESCE_GAP` (65536). Read shards
    /// only; thread-safe (takes effect for calls that start afterwards). Throws `Error`
    /// (`SHARD_ERR_INVALID_STATE` on a write shard, `SHARD_ERR_NULL_POINTER` when empty).
    void set_coalesce_gap(std::uint64_t gap) const {
        detail::call([&] { return shard_set_coalesce_gap(get(), gap); });
    }

    /// Decode several inner chunks in one call: `flat_coords` holds `count * rank()` values,
    /// chunk after chunk; `out` receives `count * inner_chunk_nbytes()` bytes. A rank-0 shard
    /// has one chunk and no coordinates: `flat_coords` is then empty and `count` is
    /// `out.size() / inner_chunk_nbytes()`. Thread-safe. Throws `Error` (as `read_chunk`;
    /// `SHARD_ERR_INVALID_ARGUMENT` when `flat_coords` is not a multiple of the rank). On error
    /// `out`'s contents are unspecified.
    void read_chunks(Coords flat_coords, span<std::uint8_t> out) const {
        read_chunks_n(flat_coords, chunk_count(flat_coords.size(), out.size()), out);
    }

    /// Decode the inner chunks at `coords` (one coordinate vector each) into one vector, the
    /// chunks one after another. Thread-safe. Throws `Error` as `read_chunks(flat, out)`.
    [[nodiscard]] std::vector<std::uint8_t>
    read_chunks(const std::vector<std::vector<std::uint64_t>> &coords) const {
        require_open();
        std::vector<std::uint64_t> flat;
        flat.reserve(coords.size() * rank_);
        for (const auto &c : coords) {
            if (c.size() != rank_)
                throw Error(SHARD_ERR_INVALID_ARGUMENT,
                            "invalid argument: chunk coordinates have " +
                                std::to_string(c.size()) +
                                " values, the shard has rank " + std::to_string(rank_));
            flat.insert(flat.end(), c.begin(), c.end());
        }
        if (chunk_nbytes_ != 0 && coords.size() > SIZE_MAX / chunk_nbytes_)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: " + std::to_string(coords.size()) +
                            " chunks do not fit in memory");
        auto v = detail::allocate<std::uint8_t>(coords.size() * chunk_nbytes_, "chunks");
        read_chunks_n(flat, coords.size(), v); // the count is explicit: rank 0 works too
        return v;
    }

    /// Encoded size of inner chunk `coords` from the index, without reading (0 when empty).
    /// The library holds it to its memory limit (`memory_limit()`; 4 GiB by default): an index
    /// entry naming more, which a damaged or hostile shard may hold (2^62 bytes), throws
    /// `SHARD_ERR_INVALID_ARGUMENT` (message `memory limit: the encoded bytes of inner chunk
    /// ...`) instead of being reported as a size to allocate. Read shards only. Thread-safe.
    /// Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` for bad coordinates or past the limit,
    /// `SHARD_ERR_INVALID_STATE` on a write shard, `SHARD_ERR_NULL_POINTER` when empty).
    [[nodiscard]] std::size_t read_chunk_raw_nbytes(Coords coords) const {
        std::size_t n = 0;
        detail::call([&] {
            return shard_read_chunk_raw(get(), coords.data(), coords.size(), nullptr, 0, &n);
        });
        return n;
    }

    /// Copy the encoded bytes of inner chunk `coords` into `out` (at least
    /// `read_chunk_raw_nbytes(coords)` bytes); returns their number (0 for an empty chunk).
    /// Thread-safe. Throws `Error` (`SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`, ...).
    [[nodiscard]] std::size_t read_chunk_raw(Coords coords, span<std::uint8_t> out) const {
        std::size_t n = 0;
        if (out.empty()) {
            // The C call would take an empty buffer as a size query and copy nothing.
            n = read_chunk_raw_nbytes(coords);
            if (n != 0)
                throw Error(SHARD_ERR_BUFFER_SIZE, "wrong buffer size: expected at least " +
                                                       std::to_string(n) + " bytes, got 0");
            return 0;
        }
        detail::call([&] {
            return shard_read_chunk_raw(get(), coords.data(), coords.size(), out.data(),
                                        out.size(), &n);
        });
        return n;
    }

    /// The encoded bytes of inner chunk `coords` (empty for an empty chunk), e.g. for
    /// `write_chunk_raw` into a shard with the same inner codecs: the size query
    /// (`read_chunk_raw_nbytes`), a vector of that size, then the copy. The size comes from
    /// the index, which a damaged or hostile shard may fill with anything; the library's size
    /// query refuses one past its memory limit, so such an entry throws
    /// `SHARD_ERR_INVALID_ARGUMENT` before anything is allocated (a size under the limit that
    /// still cannot be allocated throws `SHARD_ERR_INVALID_ARGUMENT` too). Thread-safe. Throws
    /// `Error` (as `read_chunk_raw_nbytes`; `SHARD_ERR_CORRUPT` for an entry past the object,
    /// `SHARD_ERR_IO`).
    [[nodiscard]] std::vector<std::uint8_t> read_chunk_raw(Coords coords) const {
        const std::size_t n = read_chunk_raw_nbytes(coords); // held to the memory limit
        auto v = detail::allocate<std::uint8_t>(n, "an encoded chunk");
        if (v.empty()) return v;
        v.resize(read_chunk_raw(coords, v));
        return v;
    }

    /// Where inner chunk `coords` is stored (read shards: from the index; write shards: the
    /// chunks written so far). Thread-safe on read shards. Throws `Error`
    /// (`SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_BUSY`).
    [[nodiscard]] ChunkLocation chunk_info(Coords coords) const {
        shard_chunk_location loc{};
        detail::call(
            [&] { return shard_chunk_info(get(), coords.data(), coords.size(), &loc); });
        return ChunkLocation{loc.offset, loc.nbytes, loc.empty};
    }

    /// Encode inner chunk `coords` from `data` (`inner_chunk_nbytes()` bytes, C order, native
    /// byte order) and write it per the mode. A chunk equal to the fill value is left empty
    /// unless `Flags::StoreFillChunks`. Write shards only; exclusive use. `data` is borrowed
    /// for the call. Throws `Error` (`SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`,
    /// `SHARD_ERR_INVALID_STATE`, `SHARD_ERR_BUSY`, `SHARD_ERR_UNSUPPORTED`, ...).
    void write_chunk(Coords coords, span<const std::uint8_t> data) {
        detail::call([&] {
            return shard_write_chunk(get(), coords.data(), coords.size(), data.data(),
                                     data.size());
        });
    }

    /// `write_chunk` from elements of `T` (`sizeof(T)` equal to the data type's size).
    /// Throws `Error` (`SHARD_ERR_BUFFER_SIZE` when `sizeof(T)` does not match, and as
    /// `write_chunk`).
    template <class T>
    void write_chunk_as(Coords coords, span<const T> values) {
        check_element<T>();
        write_chunk(coords, as_bytes(values));
    }

    /// Write inner chunk `coords` from already-encoded bytes, stored as given (no
    /// re-encoding). Write shards only; exclusive use. Throws `Error` as `write_chunk`.
    void write_chunk_raw(Coords coords, span<const std::uint8_t> encoded) {
        detail::call([&] {
            return shard_write_chunk_raw(get(), coords.data(), coords.size(), encoded.data(),
                                         encoded.size());
        });
    }

    /// Mark inner chunk `coords` empty (it then reads as the fill value). Write shards only;
    /// exclusive use. Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_INVALID_STATE`,
    /// `SHARD_ERR_BUSY`).
    void erase_chunk(Coords coords) {
        detail::call([&] { return shard_erase_chunk(get(), coords.data(), coords.size()); });
    }

    /// Write the index (and, buffered, the chunks): the shard is complete when this returns.
    /// Returns the object's size, or 0 when nothing is stored and the object was removed.
    /// Later write calls throw `SHARD_ERR_INVALID_STATE`; the shard should be closed.
    /// Exclusive use. Throws `Error` (`SHARD_ERR_IO`, `SHARD_ERR_INVALID_STATE`, `SHARD_ERR_UNSUPPORTED`, `SHARD_ERR_BUSY`).
    [[nodiscard]] std::uint64_t finalize() {
        std::uint64_t size = 0;
        detail::call([&] { return shard_finalize(get(), &size); });
        return size;
    }

  private:
    // The binding's own argument checks come after this, so that an empty shard always
    // reports SHARD_ERR_NULL_POINTER, as the C calls do.
    void require_open() const {
        if (!ptr_) throw Error(SHARD_ERR_NULL_POINTER, "`shard` must not be NULL (empty Shard)");
    }

    template <class T>
    void check_element() const {
        require_open();
        if (sizeof(T) != element_nbytes_)
            throw Error(SHARD_ERR_BUFFER_SIZE,
                        "wrong buffer size: an element type of " + std::to_string(sizeof(T)) +
                            " bytes for a data type of " + std::to_string(element_nbytes_) +
                            " bytes");
    }

    // The number of chunks `n` coordinate values name; rank 0: as many as fit in `out_len`.
    std::size_t chunk_count(std::size_t n, std::size_t out_len) const {
        require_open();
        if (rank_ == 0) {
            if (n != 0)
                throw Error(SHARD_ERR_INVALID_ARGUMENT,
                            "invalid argument: " + std::to_string(n) +
                                " coordinate values for a rank-0 shard (it takes none)");
            return chunk_nbytes_ == 0 ? 0 : out_len / chunk_nbytes_;
        }
        if (n % rank_ != 0)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: " + std::to_string(n) +
                            " coordinate values are not a multiple of rank " +
                            std::to_string(rank_));
        return n / rank_;
    }

    void read_chunks_n(Coords flat_coords, std::size_t count, span<std::uint8_t> out) const {
        detail::call([&] {
            return shard_read_chunks(get(), flat_coords.data(), count, rank_, out.data(),
                                     out.size());
        });
    }

    std::unique_ptr<shard_handle, detail::ShardDeleter> ptr_;
    detail::AdapterBase *io_ = nullptr; // owned by the handle (destroy callback)
    std::size_t rank_ = 0;
    std::size_t chunk_nbytes_ = 0;
    std::size_t element_nbytes_ = 0;
};

// ---- ready-made I/O objects ---------------------------------------------------------------

/// One in-memory object (a byte vector that may also not exist), for tests and caches.
///
/// Copies share the same object (a `std::shared_ptr` to it), so a test can keep one copy,
/// give another to `Shard::open`, and inspect the bytes after the shard is closed. Every
/// member is thread-safe (one mutex). A moved-from `MemoryIO` is empty: its members throw
/// `Error` with `SHARD_ERR_NULL_POINTER` (surfacing as `SHARD_ERR_IO`, `io_code_exception`,
/// through a shard), except `use_count()`, which is 0.
class MemoryIO {
  public:
    /// A new object that does not exist yet (reads as all fill value until written).
    MemoryIO() : s_(std::make_shared<State>()) {}
    /// A new object holding `bytes`.
    explicit MemoryIO(std::vector<std::uint8_t> bytes) : s_(std::make_shared<State>()) {
        s_->data = std::move(bytes);
        s_->exists = true;
    }

    /// Whether the object exists.
    [[nodiscard]] bool exists() const {
        auto l = lock();
        return s_->exists;
    }
    /// A copy of the object's bytes (empty when it does not exist).
    [[nodiscard]] std::vector<std::uint8_t> bytes() const {
        auto l = lock();
        return s_->data;
    }
    /// Replace the object's bytes (it then exists).
    void set(std::vector<std::uint8_t> bytes) {
        auto l = lock();
        s_->data = std::move(bytes);
        s_->exists = true;
    }
    /// How many `MemoryIO` copies (including those inside open shards) share the object.
    [[nodiscard]] long use_count() const noexcept { return s_.use_count(); }

    // The I/O concept.

    /// Copy up to `buf.size()` bytes at `offset`; returns the count. Throws `NotFound`.
    [[nodiscard]] std::size_t read(std::uint64_t offset, span<std::uint8_t> buf) const {
        auto l = lock();
        if (!s_->exists) throw NotFound();
        const auto &d = s_->data;
        if (offset >= d.size()) return 0;
        const std::size_t n = std::min<std::size_t>(buf.size(), d.size() - offset);
        if (n) std::memcpy(buf.data(), d.data() + offset, n);
        return n;
    }
    /// The last `buf.size()` bytes (or all) and the object's size. Throws `NotFound`.
    [[nodiscard]] SuffixRead read_suffix(span<std::uint8_t> buf) const {
        auto l = lock();
        if (!s_->exists) throw NotFound();
        const auto &d = s_->data;
        const std::size_t n = std::min<std::size_t>(buf.size(), d.size());
        if (n) std::memcpy(buf.data(), d.data() + (d.size() - n), n);
        return SuffixRead{n, d.size()};
    }
    /// The object's size; `nullopt` when it does not exist.
    [[nodiscard]] std::optional<std::uint64_t> size() const {
        auto l = lock();
        if (!s_->exists) return std::nullopt;
        return s_->data.size();
    }
    /// Write `data` at `offset`, growing (zero-filled) as needed; the object then exists.
    void write(std::uint64_t offset, span<const std::uint8_t> data) {
        auto l = lock();
        auto &d = s_->data;
        if (!s_->exists) d.clear();
        const std::uint64_t end = offset + data.size();
        if (end < offset || end > d.max_size()) throw IoError(EFBIG, "object too large");
        if (end > d.size()) d.resize(static_cast<std::size_t>(end));
        if (!data.empty()) std::memcpy(d.data() + offset, data.data(), data.size());
        s_->exists = true;
    }
    /// Set the size to `len` (zero-filling); the object then exists.
    void truncate(std::uint64_t len) {
        auto l = lock();
        if (!s_->exists) s_->data.clear();
        if (len > s_->data.max_size()) throw IoError(EFBIG, "object too large");
        s_->data.resize(static_cast<std::size_t>(len));
        s_->exists = true;
    }
    /// Remove the object (it no longer exists).
    void remove() {
        auto l = lock();
        s_->data.clear();
        s_->exists = false;
    }

  private:
    struct State {
        mutable std::mutex mutex;
        std::vector<std::uint8_t> data;
        bool exists = false;
    };

    std::unique_lock<std::mutex> lock() const {
        if (!s_)
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`MemoryIO` must not be empty (moved from): it holds no object");
        return std::unique_lock<std::mutex>(s_->mutex);
    }

    std::shared_ptr<State> s_;
};


// ---- Array: regions of a whole array over a host store ------------------------------------

/// `Array::open` flags for the store (`SHARD_STORE_*`).
enum class StoreFlags : std::uint32_t {
    /// Every store and I/O callback runs on the thread of the `Array` call that needs it.
    None = 0,
    /// The store's `open` and the I/O objects it returns are thread-safe: the library may call
    /// them from its worker threads to fetch several shards at once (a store's `list` still
    /// runs on the calling thread). Host messages of
    /// exceptions thrown on a worker thread are then not reported (`host_message()` is empty;
    /// the code is).
    ThreadSafe = SHARD_STORE_THREAD_SAFE,
};

namespace detail {

template <class S>
using store_open_op = decltype(std::declval<S &>().open(std::string_view{}));
template <class S>
using store_list_op = decltype(std::declval<S &>().list(std::string_view{}));

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

/// What a store's `list` returns, looked through: `Keys` is the iterable of keys (the
/// optional's value type when `list` returns a `std::optional`, which may be `nullopt`).
template <class R, bool = is_optional<std::decay_t<R>>::value>
struct listing {
    using Keys = std::remove_reference_t<R>;
};
template <class R>
struct listing<R, true> {
    using Keys = std::remove_reference_t<decltype(*std::declval<R &>())>;
};
template <class C>
using listing_key = decltype(*std::begin(std::declval<C &>()));
template <class C, class = void>
struct is_key_listing : std::false_type {};
template <class C>
struct is_key_listing<C, std::void_t<decltype(std::end(std::declval<C &>())), listing_key<C>>>
    : std::is_convertible<listing_key<C>, std::string_view> {};
/// Whether `S` has no `list`, or one returning what `StoreAdapter::list` can hand over.
template <class S, bool = detect<S, store_list_op>::value>
struct store_list_ok : std::true_type {};
template <class S>
struct store_list_ok<S, true> : is_key_listing<typename listing<store_list_op<S>>::Keys> {};

/// The heap object an `Array` owns as its store callbacks' `userdata`.
template <class Store>
struct StoreAdapter {
    using Object = typename pointee<Store>::type;
    static_assert(detect<Object, store_open_op>::value,
                  "a store needs open(std::string_view key) returning an I/O object");
    using IO = std::decay_t<store_open_op<Object>>;
    static constexpr bool library_io = std::is_same<IO, LibraryIO>::value;
    static_assert(is_io_object_v<IO> || library_io,
                  "a store's open(key) must return an I/O object "
                  "(read(uint64_t offset, zarrshard::span<uint8_t>)) or a zarrshard::LibraryIO");
    static_assert(store_list_ok<Object>::value,
                  "a store's list(std::string_view prefix) must return an iterable of keys "
                  "convertible to std::string_view (e.g. std::vector<std::string>), or a "
                  "std::optional of one (std::nullopt: cannot list)");

    template <class... A>
    explicit StoreAdapter(A &&...args) : store(std::forward<A>(args)...) {}

    Store store;

    static std::int32_t open_object(void *ud, const char *key, shard_io_callbacks *io_out) noexcept {
        try {
            auto &self = *static_cast<StoreAdapter *>(ud);
            if constexpr (library_io) {
                // The library's own table: handed over as it is (the library releases it).
                LibraryIO io = pointee<Store>::get(self.store).open(std::string_view(key));
                if (!io)
                    throw Error(SHARD_ERR_NULL_POINTER, "the store's open(\"" + std::string(key) +
                                                            "\") returned an empty LibraryIO");
                *io_out = io.release();
                return 0;
            } else {
                auto io = std::make_unique<Adapter<IO>>(pointee<Store>::get(self.store).open(
                    std::string_view(key)));
                if (pointee<IO>::is_null(io->io))
                    throw Error(SHARD_ERR_NULL_POINTER,
                                "the store's open(\"" + std::string(key) +
                                    "\") returned an empty pointer, not an I/O object");
                *io_out = io->table();
                io.release(); // the library owns it now (its destroy callback deletes it)
                return 0;
            }
        } catch (...) {
            return current_exception_code();
        }
    }

    // The store's `list(prefix)`, when it has one: each key goes to `on_key`; `nullopt`
    // (a `std::optional` result) is SHARD_STORE_CANNOT_LIST; an exception (also from iterating
    // the result) is the code `open_object` would return for it, its message kept for
    // `host_message()` (`list` always runs on the thread of the call). An exception whose code
    // is SHARD_STORE_CANNOT_LIST itself would read as "cannot list" and turn a failure into a
    // walk over every grid position, so it is io_code_exception instead.
    static std::int32_t list(void *ud, const char *prefix, shard_key_fn on_key,
                             void *list_state) noexcept {
        try {
            auto &self = *static_cast<StoreAdapter *>(ud);
            auto &&result = pointee<Store>::get(self.store).list(
                std::string_view(prefix != nullptr ? prefix : ""));
            using R = store_list_op<Object>;
            if constexpr (is_optional<std::decay_t<R>>::value) {
                if (!result) return SHARD_STORE_CANNOT_LIST;
                emit_keys(*result, on_key, list_state);
            } else {
                emit_keys(result, on_key, list_state);
            }
            return 0;
        } catch (...) {
            const std::int32_t code = current_exception_code();
            return code == SHARD_STORE_CANNOT_LIST ? relabel_last_host_failure(code, io_code_exception)
                                                   : code;
        }
    }

    template <class Keys>
    static void emit_keys(Keys &keys, shard_key_fn on_key, void *list_state) {
        for (auto &&key : keys) {
            const std::string_view k(key);
            if (on_key != nullptr) on_key(list_state, k.data(), k.size());
        }
    }

    static void destroy(void *ud) noexcept { delete static_cast<StoreAdapter *>(ud); }

    // The C table over this adapter. `owned`: the library owns the adapter (its `destroy`
    // deletes it); otherwise it is borrowed for one call and the library calls no `destroy`.
    shard_store_callbacks table(std::uint32_t flags, bool owned) noexcept {
        shard_store_callbacks t;
        std::memset(&t, 0, sizeof t);
        t.version = SHARD_STORE_VERSION;
        t.flags = flags;
        t.userdata = this;
        t.open_object = &StoreAdapter::open_object;
        t.destroy = owned ? &StoreAdapter::destroy : nullptr;
        if constexpr (detect<Object, store_list_op>::value) t.list = &StoreAdapter::list;
        return t;
    }
};

struct ArrayDeleter {
    void operator()(shard_array *a) const noexcept { shard_array_close(a); }
};

/// The exception a host receiver's `noexcept` trampoline caught (a `shard_sink_fn`, a
/// `shard_problem_fn`): the trampoline keeps it with `keep()` and returns a non-zero code
/// (`ENOMEM` for `std::bad_alloc`, as `current_exception_code`), which stops the C call with
/// `SHARD_ERR_IO`; `call_with_receiver` then rethrows the kept exception itself. Used on one
/// thread (the library calls a receiver on the thread of the call).
struct Receiver {
    std::exception_ptr error;

    /// Keep the exception being handled; returns the code for the trampoline to return. Call
    /// only inside a `catch` block. Never throws.
    std::int32_t keep() noexcept {
        error = std::current_exception();
        return current_exception_code();
    }
};

/// A `shard_sink_fn` target that appends the library's pieces to a `std::string` (e.g. of
/// `shard_array_refs_write`); what appending throws (`std::bad_alloc`, `std::length_error`)
/// is kept as a `Receiver`'s.
struct StringSink : Receiver {
    std::string text;

    static std::int32_t write(void *ud, const std::uint8_t *data, std::size_t len) noexcept {
        auto &self = *static_cast<StringSink *>(ud);
        try {
            if (len != 0) self.text.append(reinterpret_cast<const char *>(data), len);
            return 0;
        } catch (...) {
            return self.keep();
        }
    }
};

/// A `shard_sink_fn` target that hands each piece to the caller's `piece(std::string_view)`;
/// what it throws is kept as a `Receiver`'s (and stops the call).
template <class Piece>
struct CallableSink : Receiver {
    Piece &piece;

    explicit CallableSink(Piece &p) noexcept : piece(p) {}

    static std::int32_t write(void *ud, const std::uint8_t *data, std::size_t len) noexcept {
        auto &self = *static_cast<CallableSink *>(ud);
        try {
            self.piece(std::string_view(reinterpret_cast<const char *>(data), len));
            return 0;
        } catch (...) {
            return self.keep();
        }
    }
};

/// `call` for a C call that hands its output to `receiver`: when the receiver failed (the
/// call then returns `SHARD_ERR_IO` with the receiver's code), the exception it caught is
/// rethrown as it was, not reported as an `Error`; any other failure throws `Error` as `call`
/// does.
template <class F>
void call_with_receiver(Receiver &receiver, F &&f) {
    clear_host_failures();
    const shard_status status = std::forward<F>(f)();
    if (status != SHARD_OK && receiver.error) {
        clear_host_failures(); // the receiver's record: the exception itself is what surfaces
        std::rethrow_exception(receiver.error);
    }
    check(status);
}

/// Elements in a region of extent `shape` (checked against overflow).
inline std::size_t region_elements(Coords start, Coords shape) {
    if (start.size() != shape.size())
        throw Error(SHARD_ERR_INVALID_ARGUMENT,
                    "invalid argument: start has " + std::to_string(start.size()) +
                        " values, shape " + std::to_string(shape.size()));
    std::size_t n = 1;
    for (std::uint64_t e : shape) {
        if (e != 0 && n > SIZE_MAX / e)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: the region has more elements than fit in memory");
        n *= static_cast<std::size_t>(e);
    }
    return n;
}

} // namespace detail

/// One problem `Array::verify` found in a stored shard (a `shard_problem_fn` call's
/// arguments, copied).
struct Problem {
    /// The shard object's key (`"c/0/1"`).
    std::string key;
    /// The coordinates of the inner chunk within the shard when the problem concerns one;
    /// empty when it does not (e.g. a damaged index).
    std::vector<std::uint64_t> chunk;
    /// The status reading it would fail with (`SHARD_ERR_CHECKSUM`, `SHARD_ERR_CORRUPT`, ...).
    shard_status status = SHARD_OK;
    /// The library's error text, as `zarrshard verify` prints it.
    std::string message;
};

namespace detail {

/// A `shard_problem_fn` target that hands each problem, as a `Problem`, to `fn`; what
/// building it or `fn` throws is kept as a `Receiver`'s.
template <class F>
struct ProblemReceiver : Receiver {
    explicit ProblemReceiver(F &f) noexcept : fn(f) {}
    F &fn;

    static std::int32_t report(void *ud, const char *key, const std::uint64_t *chunk,
                               std::size_t chunk_rank, shard_status status,
                               const char *message) noexcept {
        auto &self = *static_cast<ProblemReceiver *>(ud);
        try {
            Problem p;
            p.key = key != nullptr ? key : "";
            if (chunk != nullptr) p.chunk.assign(chunk, chunk + chunk_rank);
            p.status = status;
            p.message = message != nullptr ? message : "";
            const Problem &view = p;
            self.fn(view);
            return 0;
        } catch (...) {
            return self.keep();
        }
    }
};

} // namespace detail

// ---- the library's stores, array specs ---------------------------------------------------

/// How `Store::directory` treats a missing root directory.
enum class Directory : std::uint32_t {
    /// The root must exist (`SHARD_ERR_IO` otherwise).
    MustExist = 0,
    /// Make the root (and its parents) when it is missing (`SHARD_STORE_CREATE`).
    Create = SHARD_STORE_CREATE,
};

/// What `Array::create` and `Group::create` do where a node already exists at the path.
enum class Existing : std::uint32_t {
    /// Refuse: `SHARD_ERR_INVALID_STATE` ("`a/b` already holds an array (zarr.json); overwrite
    /// to replace it"); nothing is changed.
    Refuse = 0,
    /// Replace it, its shards or children removed (`SHARD_CREATE_OVERWRITE`).
    Overwrite = SHARD_CREATE_OVERWRITE,
};

/// One of the library's own stores (a `shard_store_callbacks` table the library filled):
/// `Store::directory(root)` (files below a directory: whole objects written as a temporary
/// renamed into place, updates in place, parent directories made, shards left all fill value
/// deleted) or `Store::memory()` (objects in the library's memory, for tests and scratch).
/// The binding holds no file code of its own: everything goes through the C ABI.
///
/// Copyable: copies share the one table (like a `std::shared_ptr`), which is released
/// (`shard_store_release`) when the last copy is destroyed. An `Array` opened or created on it
/// holds its own reference inside the library, so the `Store` may be destroyed while arrays
/// are open; a memory store's objects live as long as any copy or array does. A default or
/// moved-from `Store` is empty (`!store`); calls given one throw `SHARD_ERR_NULL_POINTER`. The
/// library's stores are thread-safe (`SHARD_STORE_THREAD_SAFE`): any number of arrays on any
/// threads may use one store at once. Destroying or assigning one `Store` object must not race
/// with other calls on that same object (copies are separate objects).
class Store {
  public:
    /// An empty store. Never throws.
    Store() noexcept = default;

    /// The directory `root` as a store (`shard_store_directory`): key `a/b/c/0/1` is the file
    /// `root/a/b/c/0/1`. A relative `root` is relative to the current directory. Thread-safe.
    /// Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` for an empty `root` or one containing NUL,
    /// `SHARD_ERR_IO` with the OS error as `io_code()` when `root` is missing (without
    /// `Directory::Create`), not a directory or cannot be made; the message names `root`).
    [[nodiscard]] static Store directory(const std::filesystem::path &root,
                                         Directory mode = Directory::MustExist) {
        const std::string c = detail::c_string(detail::path_bytes(root), "root");
        return make([&](shard_store_callbacks *t) {
            return shard_store_directory(c.c_str(), static_cast<std::uint32_t>(mode), t);
        });
    }

    /// A new, empty store in memory (`shard_store_memory`). Thread-safe. Throws `Error`
    /// (`SHARD_ERR_PANIC` only).
    [[nodiscard]] static Store memory() {
        return make([](shard_store_callbacks *t) { return shard_store_memory(t); });
    }

    /// Whether this holds a store. Never throws.
    explicit operator bool() const noexcept { return t_ != nullptr; }
    /// The table, borrowed (for C calls that take a store); null when empty. Never throws.
    [[nodiscard]] const shard_store_callbacks *get() const noexcept { return t_.get(); }

  private:
    struct Release {
        void operator()(shard_store_callbacks *t) const noexcept {
            shard_store_release(t);
            delete t;
        }
    };

    template <class F>
    static Store make(F &&fill) {
        auto t = std::make_unique<shard_store_callbacks>();
        std::memset(t.get(), 0, sizeof *t);
        detail::call([&] { return fill(t.get()); });
        Store s;
        s.t_ = std::shared_ptr<shard_store_callbacks>(t.release(), Release());
        return s;
    }

    std::shared_ptr<shard_store_callbacks> t_;
};

/// Where a shard's index is stored (`SHARD_INDEX_AT_*`).
enum class IndexLocation : std::uint32_t {
    /// After the chunks (zarr-python's default).
    End = SHARD_INDEX_AT_END,
    /// Before the chunks.
    Start = SHARD_INDEX_AT_START,
};

/// An array described field by field instead of as `zarr.json` text (`shard_array_spec`):
/// `Array::create(store, path, spec)` turns it into metadata, `to_json()` shows that metadata.
///
/// The defaults are the library's (`shard_array_spec_init`): sharded when `shard_shape` is
/// set, else one object per chunk; fill value 0; zstd at level 3; the index at the end with a
/// crc32c checksum (a damaged index would otherwise send reads to wrong offsets); inner chunks
/// without a checksum (zstd frames detect most damage, and a checksum per chunk costs a pass
/// over every chunk written and read); no dimension names. `shape`, `chunk_shape` and
/// `shard_shape` (when set) must have the same length, the rank, as must `dimension_names`.
struct ArraySpec {
    /// The array's shape.
    std::vector<std::uint64_t> shape;
    /// The shard shape (a multiple of `chunk_shape` per dimension); `nullopt`: not sharded.
    std::optional<std::vector<std::uint64_t>> shard_shape;
    /// The inner chunk shape (the chunk shape when not sharded). Required.
    std::vector<std::uint64_t> chunk_shape;
    /// The Zarr v3 data type (`"uint16"`, `"float32"`, ...). Required.
    std::string data_type;
    /// The fill value as JSON text (`"0"`, `"\"NaN\""`); `nullopt`: 0.
    std::optional<std::string> fill_value;
    /// `"zstd"`, `"gzip"`, `"blosc"` or `"none"`.
    std::string compressor = "zstd";
    /// The compressor's level.
    std::int32_t compression_level = 3;
    /// Where the shard index is stored.
    IndexLocation index_location = IndexLocation::End;
    /// A crc32c checksum after the shard index.
    bool index_checksum = true;
    /// A crc32c checksum after each inner chunk.
    bool chunk_checksum = false;
    /// One name per dimension (an entry may be `nullopt`); `nullopt`: none.
    std::optional<std::vector<std::optional<std::string>>> dimension_names;

    /// An empty spec (defaults only). Never throws.
    ArraySpec() = default;
    /// A spec with the required fields, everything else at its default.
    ArraySpec(std::vector<std::uint64_t> shape_, std::vector<std::uint64_t> chunk_shape_,
              std::string data_type_)
        : shape(std::move(shape_)), chunk_shape(std::move(chunk_shape_)),
          data_type(std::move(data_type_)) {}

    /// The array's `zarr.json` text as `Array::create` would write it (`shard_array_spec_json`).
    /// Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` naming the field: lengths that
    /// differ from the rank, an unknown data type or compressor, a shard shape that is not a
    /// multiple of the chunk shape, a fill value the data type cannot hold, ...).
    [[nodiscard]] std::string to_json() const;

    /// Run `fn(const shard_array_spec &)` with the C view of this spec (valid during the call).
    /// Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT` naming the field whose length is not the
    /// rank, or a string containing NUL), or what `fn` throws.
    template <class F>
    decltype(auto) with_c_spec(F &&fn) const {
        const std::size_t rank = shape.size();
        const auto same_rank = [&](std::size_t n, const char *field) {
            if (n != rank)
                throw Error(SHARD_ERR_INVALID_ARGUMENT,
                            std::string("invalid argument: `") + field + "` has " +
                                std::to_string(n) + " values, the shape " +
                                std::to_string(rank));
        };
        same_rank(chunk_shape.size(), "chunk_shape");
        if (shard_shape) same_rank(shard_shape->size(), "shard_shape");
        if (dimension_names) same_rank(dimension_names->size(), "dimension_names");
        const std::string dtype = detail::c_string(data_type, "data_type");
        const std::string comp = detail::c_string(compressor, "compressor");
        std::optional<std::string> fill;
        if (fill_value) fill = detail::c_string(*fill_value, "fill_value");
        std::vector<std::string> names;
        std::vector<const char *> name_ptrs;
        if (dimension_names) {
            names.reserve(rank);
            for (const auto &n : *dimension_names)
                names.push_back(n ? detail::c_string(*n, "dimension_names") : std::string());
            for (std::size_t i = 0; i < rank; i++)
                name_ptrs.push_back((*dimension_names)[i] ? names[i].c_str() : nullptr);
        }
        shard_array_spec c;
        detail::call([&] { return shard_array_spec_init(&c); });
        c.rank = rank;
        c.shape = shape.data();
        c.shard_shape = shard_shape ? shard_shape->data() : nullptr;
        c.chunk_shape = chunk_shape.data();
        c.data_type = dtype.c_str();
        c.fill_value = fill ? fill->c_str() : nullptr;
        c.compressor = comp.c_str();
        c.compression_level = compression_level;
        c.index_location = static_cast<std::uint32_t>(index_location);
        c.checksums = (index_checksum ? SHARD_CHECKSUM_INDEX : 0u) |
                      (chunk_checksum ? SHARD_CHECKSUM_CHUNKS : 0u);
        c.dimension_names = dimension_names ? name_ptrs.data() : nullptr;
        const shard_array_spec &view = c;
        return fn(view);
    }
};

/// What `Array::compact` did.
struct Compaction {
    /// Shards rewritten without their dead bytes.
    std::uint64_t shards_rewritten = 0;
    /// Bytes the store holds less.
    std::uint64_t bytes_freed = 0;
};

namespace detail {

/// Whether `S` (decayed) is a host store for the templates: not the library's `Store`.
template <class S>
inline constexpr bool is_host_store_v =
    !std::is_same<std::decay_t<S>, Store>::value &&
    detect<typename pointee<std::decay_t<S>>::type, store_open_op>::value;

/// A JSON text query (`fn(buf, len, &written)` with the size query `(NULL, 0)` first), as a
/// string.
template <class F>
std::string query_text(F &&fn) {
    std::size_t n = 0;
    call([&] { return fn(nullptr, 0, &n); });
    std::string s(n + 1, '\0');
    std::size_t written = 0;
    call([&] { return fn(&s[0], s.size(), &written); });
    s.resize(written < n ? written : n);
    return s;
}

} // namespace detail

inline std::string ArraySpec::to_json() const {
    return with_c_spec([](const shard_array_spec &c) {
        return detail::query_text([&](char *buf, std::size_t len, std::size_t *written) {
            return shard_array_spec_json(&c, buf, len, written);
        });
    });
}

/// A whole Zarr v3 array in a store: created, opened by path, resized, appended to, and read
/// and written by hyper-rectangle (region), across shards and inner chunks, with the fill value
/// where nothing is stored.
///
/// The store is either the library's own (`Store::directory`, `Store::memory`: `create`,
/// `open(store, path)`) or a host store: any object with `open(std::string_view key)`
/// returning an I/O object (see `Shard::open`; e.g. `MemoryIO`) or a `LibraryIO` for the
/// object at `key` (`"c/0/1"`, per the array's `chunk_key_encoding`, below the array's path).
/// The object need not exist: its reads then throw `NotFound` and it reads as the fill value.
/// The store is called once per shard a call touches; the I/O object it returns is destroyed
/// before that call returns. Exceptions from `open` or from the I/O object are caught at the
/// C boundary (as in `Shard::open`) and surface as `Error` with `SHARD_ERR_IO`, `io_code()`
/// and `host_message()`.
///
/// Listing. The store may also have `list(std::string_view prefix)` returning the keys of the
/// stored objects that start with `prefix` (`"c/"`), as anything iterable whose elements
/// convert to `std::string_view` (e.g. `std::vector<std::string>`), or a `std::optional` of
/// one. Found at compile time (like the I/O object's optional members), it becomes the C
/// table's `list` (`SHARD_STORE_VERSION` 2; NULL without it). The walks over the stored
/// shards (`verify`, `kerchunk_refs`, `kerchunk_refs_parquet`, `kerchunk_refs_parquet_dir`)
/// then call it once and open only the shards it lists, instead of every position of the
/// chunk grid: on a sparse grid over a remote store, one listing instead of a request per
/// position. Listing more keys is harmless (anything that is not one of the array's shard
/// keys, e.g. `zarr.json`, is ignored); listing fewer is not: **a stored shard left out is
/// treated as missing** (not checked by `verify`, not referenced). Returning `std::nullopt`
/// means "cannot list after all" (`SHARD_STORE_CANNOT_LIST`): the library asks every grid
/// position, as without `list`. An exception from `list` (or from iterating its result) is
/// caught at the C boundary as one from `open` is, and fails the call with `SHARD_ERR_IO`,
/// `io_code()` and `host_message()` (`list` always runs on the thread of the call, also
/// with `StoreFlags::ThreadSafe`, so its message is always reported); an exception whose code
/// would be `SHARD_STORE_CANNOT_LIST` reports `io_code_exception`, so that a failed listing
/// never passes for "cannot list". `MemoryStore` lists, and so do the library's stores.
///
/// Owns a `shard_array` (closed by the destructor; an array appended to is flushed then, its
/// errors lost: call `flush()`) and, through it, a host store (destroyed when the array closes)
/// or a reference to a library `Store` (released then). Move-only; a moved-from `Array` is empty (`!array`), safe to destroy,
/// and its calls throw `Error` (`SHARD_ERR_NULL_POINTER`).
///
/// Threads: `read_region` may run on many threads at once (then the store and its I/O objects
/// must be thread-safe). `write_region` needs exclusive use; a concurrent writer is refused
/// with `SHARD_ERR_BUSY`; so do `append`, `flush`, `resize`, `set_attributes` and `compact`.
/// Without `StoreFlags::ThreadSafe` every callback of a host store runs on the thread of the
/// call that needs it; the library's stores are thread-safe.
class Array {
  public:
    /// An empty array (holds nothing). Never throws.
    Array() noexcept = default;
    /// Take the other array's handle; it is left empty. Never throws.
    Array(Array &&) noexcept = default;
    /// Close this array's handle (and store), then take the other's; self-move keeps the
    /// handle. Never throws.
    Array &operator=(Array &&) noexcept = default;
    Array(const Array &) = delete;
    Array &operator=(const Array &) = delete;
    /// Closes the handle (and destroys the store). Never throws.
    ~Array() = default;

    /// Open the array described by the Zarr v3 `zarr.json` text over `store`. Nothing is read
    /// yet. `store` is moved (or copied) into a heap adapter the handle owns; pass a
    /// `std::shared_ptr<S>`, `std::unique_ptr<S>` or `std::ref(s)` to keep it elsewhere (an
    /// empty smart pointer throws `SHARD_ERR_NULL_POINTER`; a store whose `open` returns an
    /// empty smart pointer fails that call with `SHARD_ERR_IO`, `io_code_exception`). If
    /// `open` throws, the adapter and the store moved into it are already destroyed.
    /// Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_METADATA`, `SHARD_ERR_UNSUPPORTED_CODEC`,
    /// `SHARD_ERR_INVALID_ARGUMENT`).
    template <class HostStore, std::enable_if_t<!std::is_same<std::decay_t<HostStore>, Store>::value, int> = 0>
    [[nodiscard]] static Array open(std::string_view zarr_json, HostStore &&store,
                                    StoreFlags flags = StoreFlags::None) {
        return with_host_store(std::forward<HostStore>(store), flags,
                               [&](const shard_store_callbacks *table, shard_array **a) {
                                   return shard_array_open(zarr_json.data(), zarr_json.size(),
                                                           table, a);
                               });
    }

    /// Open the array described by the `zarr.json` text over one of the library's stores
    /// (`shard_array_open`; keys are the array's own, from the store's root). The array holds
    /// its own reference to the store. Thread-safe. Throws `Error` as the other `open`
    /// (`SHARD_ERR_NULL_POINTER` for an empty `store`).
    [[nodiscard]] static Array open(std::string_view zarr_json, const Store &store) {
        return adopt(store, [&](shard_array **a) {
            return shard_array_open(zarr_json.data(), zarr_json.size(), store.get(), a);
        });
    }

    /// Open the array at `path` in `store` (`shard_array_open_path`): `""` is the store's root,
    /// `"a/b"` a nested node whose metadata is `a/b/zarr.json` (or Zarr v2 `.zarray`, or the v3
    /// draft layout). The array holds its own reference to the store. Thread-safe. Throws
    /// `Error` (`SHARD_ERR_INVALID_METADATA` naming the path when there is no array there
    /// (`no zarr.json or .zarray at `a/b``) or its metadata is bad; `SHARD_ERR_INVALID_ARGUMENT`
    /// naming the path for `..`, `.`, an empty component, an absolute path, a backslash or NUL;
    /// `SHARD_ERR_IO` reading the metadata; `SHARD_ERR_NULL_POINTER` for an empty `store`).
    [[nodiscard]] static Array open(const Store &store, std::string_view path = {}) {
        const std::string p = detail::c_string(path, "path");
        return adopt(store, [&](shard_array **a) {
            return shard_array_open_path(store.get(), p.c_str(), a);
        });
    }

    /// `open(store, path)` over a host store (see `Array`): its `open(key)` is asked for
    /// `path/zarr.json` (and the other metadata keys) and then the array's shards. Ownership
    /// of `store` as for `open(zarr_json, store)`: the handle owns it on success. Throws `Error`
    /// as `open(store, path)`.
    template <class HostStore, std::enable_if_t<detail::is_host_store_v<HostStore>, int> = 0>
    [[nodiscard]] static Array open(HostStore &&store, std::string_view path,
                                    StoreFlags flags = StoreFlags::None) {
        const std::string p = detail::c_string(path, "path");
        return with_host_store(std::forward<HostStore>(store), flags,
                               [&](const shard_store_callbacks *table, shard_array **a) {
                                   return shard_array_open_path(table, p.c_str(), a);
                               });
    }

    /// Create the array described by the Zarr v3 `zarr.json` text at `path` in `store`
    /// (`shard_array_create`): the metadata is validated, then written atomically; with
    /// `Existing::Overwrite` an existing node there is replaced and its shards removed.
    /// Returns the new array, open for writing. Thread-safe. Throws `Error`
    /// (`SHARD_ERR_INVALID_METADATA` / `SHARD_ERR_UNSUPPORTED_CODEC` naming the field;
    /// `SHARD_ERR_INVALID_STATE` ("`a/b` already holds an array (zarr.json); ...") for a node
    /// at `path` with `Existing::Refuse`; `SHARD_ERR_INVALID_ARGUMENT` for a bad path, naming it;
    /// `SHARD_ERR_IO`; `SHARD_ERR_NULL_POINTER` for an empty `store`).
    [[nodiscard]] static Array create(const Store &store, std::string_view path,
                                      std::string_view zarr_json,
                                      Existing existing = Existing::Refuse) {
        const std::string p = detail::c_string(path, "path");
        return adopt(store, [&](shard_array **a) {
            return shard_array_create(store.get(), p.c_str(), zarr_json.data(), zarr_json.size(),
                                      static_cast<std::uint32_t>(existing), a);
        });
    }

    /// `create` from an `ArraySpec` instead of JSON text (`shard_array_create_spec`). Throws
    /// `Error` as `create` and as `ArraySpec::to_json` (a bad field named).
    [[nodiscard]] static Array create(const Store &store, std::string_view path,
                                      const ArraySpec &spec,
                                      Existing existing = Existing::Refuse) {
        const std::string p = detail::c_string(path, "path");
        return spec.with_c_spec([&](const shard_array_spec &c) {
            return adopt(store, [&](shard_array **a) {
                return shard_array_create_spec(store.get(), p.c_str(), &c,
                                               static_cast<std::uint32_t>(existing), a);
            });
        });
    }

    /// `create` in a host store (see `Array`); ownership of `store` as for
    /// `open(zarr_json, store)`: the handle owns it on success. Throws `Error` as `create`.
    template <class HostStore, std::enable_if_t<detail::is_host_store_v<HostStore>, int> = 0>
    [[nodiscard]] static Array create(HostStore &&store, std::string_view path,
                                      std::string_view zarr_json,
                                      Existing existing = Existing::Refuse,
                                      StoreFlags flags = StoreFlags::None) {
        const std::string p = detail::c_string(path, "path");
        return with_host_store(std::forward<HostStore>(store), flags,
                               [&](const shard_store_callbacks *table, shard_array **a) {
                                   return shard_array_create(table, p.c_str(), zarr_json.data(),
                                                             zarr_json.size(),
                                                             static_cast<std::uint32_t>(existing),
                                                             a);
                               });
    }

    /// `create` from an `ArraySpec` in a host store. Throws `Error` as `create`.
    template <class HostStore, std::enable_if_t<detail::is_host_store_v<HostStore>, int> = 0>
    [[nodiscard]] static Array create(HostStore &&store, std::string_view path,
                                      const ArraySpec &spec,
                                      Existing existing = Existing::Refuse,
                                      StoreFlags flags = StoreFlags::None) {
        const std::string p = detail::c_string(path, "path");
        return spec.with_c_spec([&](const shard_array_spec &c) {
            return with_host_store(std::forward<HostStore>(store), flags,
                                   [&](const shard_store_callbacks *table, shard_array **a) {
                                       return shard_array_create_spec(
                                           table, p.c_str(), &c,
                                           static_cast<std::uint32_t>(existing), a);
                                   });
        });
    }

    /// Whether this holds an open array. Never throws.
    explicit operator bool() const noexcept { return ptr_ != nullptr; }
    /// The C handle, borrowed; null when empty. Never throws.
    [[nodiscard]] const shard_array *get() const noexcept { return ptr_.get(); }
    /// Close the array now (destroys the store). Idempotent. Never throws.
    void close() noexcept { ptr_.reset(); }

    /// A codec for the array's sharding layout and metadata (shape, data type, fill value,
    /// shard keys), e.g. to open single shards with `Shard::open`. Thread-safe. Throws `Error`
    /// (`SHARD_ERR_UNSUPPORTED` when the array is not sharded, `SHARD_ERR_NULL_POINTER`).
    [[nodiscard]] Codec codec() const {
        shard_codec *c = nullptr;
        detail::call([&] { return shard_array_codec(get(), &c); });
        return Codec(c);
    }

    /// Set the gap (bytes) below which the byte ranges of inner chunks one `read_region` call
    /// wants from a shard are fetched as one range (0: only touching ranges; large: the
    /// whole span, fewer requests to a high-latency store). Default 65536. Thread-safe.
    /// Throws `Error` (`SHARD_ERR_NULL_POINTER` when empty).
    void set_coalesce_gap(std::uint64_t gap) const {
        require_open();
        detail::call([&] { return shard_array_set_coalesce_gap(get(), gap); });
    }

    /// The array's kerchunk reference set as JSON text (the text of `shard_array_refs`, what
    /// `zarrshard refs` writes): `version` 0 or 1 (kerchunk's JSON v0 / v1), `zarr_format` 3
    /// (the array described unsharded by a `zarr.json`, chunk keys `c/i/j`) or 2 (`.zarray`,
    /// keys `i.j`); each stored inner chunk is `[url_prefix/SHARD_KEY, offset, nbytes]`, under
    /// `name/` when `name` is not empty. Reads each shard's index once (`shard_array_refs_write`,
    /// whose pieces are appended to the returned string by a `noexcept` sink); only the listed
    /// shards when the store lists (see `Array`), else every grid position is asked.
    /// Thread-safe (not while another thread writes the array). Throws `Error`
    /// (`SHARD_ERR_INVALID_ARGUMENT` for a version other than 0 or 1, another `zarr_format`,
    /// an array that is not sharded or has a codec after sharding;
    /// `SHARD_ERR_UNSUPPORTED_CODEC` for what v2 metadata cannot express; `SHARD_ERR_IO`
    /// (the store's `list`, `open` or I/O object threw: `io_code()` and `host_message()` as
    /// for `Array::open`), `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM` reading an index;
    /// `SHARD_ERR_NULL_POINTER` when empty), or what growing the string threw
    /// (`std::bad_alloc`, `std::length_error`), rethrown once the C call has returned.
    [[nodiscard]] std::string kerchunk_refs(std::string_view url_prefix, int version = 1,
                                            std::uint32_t zarr_format = 3,
                                            std::string_view name = {}) const {
        require_open();
        const std::uint32_t format = refs_format(version);
        detail::StringSink sink;
        detail::call_with_receiver(sink, [&] {
            return shard_array_refs_write(get(), format, zarr_format, url_prefix.data(),
                                          url_prefix.size(), name.data(), name.size(),
                                          &detail::StringSink::write, &sink);
        });
        return std::move(sink.text);
    }

    /// The same JSON text as `kerchunk_refs`, handed to `piece(std::string_view)` as the shards
    /// are read (`shard_array_refs_stream`): pieces of at most 64 KiB, in order, on the calling
    /// thread, each valid only during the call. Holds a batch of shard indexes, never the text,
    /// so sets too large for a string fit; but a failure part way (the store, a damaged index,
    /// `piece` throwing) leaves `piece` having received the text's first part: write to a
    /// temporary and keep it only when this returns. Thread-safe (not while another thread
    /// writes the array). Throws what `kerchunk_refs` throws, or what `piece` threw (rethrown
    /// as it was once the C call has returned; the library calls `piece` no more after it).
    template <class Piece,
              std::enable_if_t<std::is_invocable_v<Piece &, std::string_view>, int> = 0>
    void write_kerchunk_refs(Piece &&piece, std::string_view url_prefix, int version = 1,
                             std::uint32_t zarr_format = 3, std::string_view name = {}) const {
        require_open();
        const std::uint32_t format = refs_format(version);
        detail::CallableSink<std::remove_reference_t<Piece>> sink(piece);
        detail::call_with_receiver(sink, [&] {
            return shard_array_refs_stream(get(), format, zarr_format, url_prefix.data(),
                                           url_prefix.size(), name.data(), name.size(),
                                           &decltype(sink)::write, &sink);
        });
    }

    /// `write_kerchunk_refs` into `out`: each piece written with `out.write`. A stream that
    /// fails (`badbit`/`failbit` after a write) stops the call with `std::ios_base::failure`,
    /// as does one whose `exceptions()` make it throw; what reached `out` before is the text's
    /// first part, which the caller discards.
    void write_kerchunk_refs(std::ostream &out, std::string_view url_prefix, int version = 1,
                             std::uint32_t zarr_format = 3, std::string_view name = {}) const {
        write_kerchunk_refs(
            [&out](std::string_view piece) {
                out.write(piece.data(), static_cast<std::streamsize>(piece.size()));
                if (!out)
                    throw std::ios_base::failure(
                        "writing the kerchunk reference set: the stream failed");
            },
            url_prefix, version, zarr_format, name);
    }

    /// Write the array's kerchunk reference set in the Parquet layout of fsspec's
    /// `LazyReferenceMapper` (`shard_array_refs_parquet`, what `zarrshard refs --format
    /// parquet` writes) as objects of the store `out`: `name/refs.<n>.parq`, file `n` holding
    /// the chunks numbered `n * record_size ..` of the unsharded chunk grid in C order, one row
    /// each (`path`, `offset`, `size`, `raw`; an empty chunk's row carries the encoded fill
    /// chunk in `raw`), then, last, `.zmetadata` (Zarr v2 metadata, the only kind fsspec reads
    /// in this layout, and `record_size`). Each reference is `url_prefix/SHARD_KEY`. Reads
    /// each shard's index once through the array's store.
    ///
    /// `out` is a store as for `Array::open` (any object with `open(std::string_view key)`
    /// returning an I/O object, or a smart pointer or `std::ref` to one), but **borrowed** for
    /// the call: it is neither copied, moved nor kept, so pass the store itself (e.g. a
    /// `MemoryStore`, whose `keys()` then lists what was written); a temporary lives long
    /// enough. Its `open` is called once per object; each I/O object it returns is written with
    /// one `write` (plus `truncate`) and destroyed before the call returns, so it needs
    /// `write`, and `truncate` (or `size`) where an existing object may be longer; to write the
    /// set into a local directory use `kerchunk_refs_parquet_dir`. Every callback runs on the
    /// calling thread. `name` must not be empty (and not start with `.z` or contain `..`);
    /// `record_size` is at least 1 (fsspec's default, 10000).
    ///
    /// Thread-safe (not while another thread writes the array; `out` is used by this call
    /// only). Throws `Error`: `SHARD_ERR_INVALID_ARGUMENT` (empty or invalid `name`,
    /// `record_size` 0, an array that is not sharded, has a codec after sharding or a data
    /// type Zarr v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC` (what v2 metadata cannot
    /// express), `SHARD_ERR_NULL_POINTER` (an empty `Array`, an empty smart pointer as `out`),
    /// `SHARD_ERR_IO` (reading the array, or `out`'s `open` or I/O object threw: `io_code()`
    /// and `host_message()` as for `Array::open`), `SHARD_ERR_UNSUPPORTED` (an I/O object of
    /// `out` without `write`), `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`. After an error some
    /// objects may already be written (`.zmetadata`, written last, then is not).
    template <class HostStore,
              std::enable_if_t<!std::is_same<std::decay_t<HostStore>, Store>::value, int> = 0>
    void kerchunk_refs_parquet(HostStore &&out, std::string_view url_prefix, std::string_view name,
                               std::uint64_t record_size = 10000) const {
        using Stored = std::decay_t<HostStore>;
        using Object = typename detail::pointee<Stored>::type;
        static_assert(!std::is_const<std::remove_reference_t<HostStore>>::value,
                      "kerchunk_refs_parquet writes through the store: pass a non-const store");
        require_open();
        if (detail::pointee<Stored>::is_null(out))
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`out` must not be NULL (an empty smart pointer was given as the store)");
        // Borrowed: the adapter refers to the caller's store and lives on this frame; the
        // library calls no `destroy` for `out`.
        using Adapter = detail::StoreAdapter<std::reference_wrapper<Object>>;
        Adapter adapter(std::ref(detail::pointee<Stored>::get(out)));
        // Flags 0: every callback on this thread (host messages are reported).
        const shard_store_callbacks table = adapter.table(0, /*owned=*/false);
        detail::call([&] {
            return shard_array_refs_parquet(get(), url_prefix.data(), url_prefix.size(),
                                            name.data(), name.size(), record_size, &table);
        });
    }

    /// `kerchunk_refs_parquet` into one of the library's stores (e.g. `Store::memory()`, then
    /// opened or read through the library). Throws `Error` as the host-store version
    /// (`SHARD_ERR_NULL_POINTER` for an empty `out`).
    void kerchunk_refs_parquet(const Store &out, std::string_view url_prefix,
                               std::string_view name, std::uint64_t record_size = 10000) const {
        require_open();
        if (!out) throw Error(SHARD_ERR_NULL_POINTER, "`out` must not be NULL (an empty Store)");
        detail::call([&] {
            return shard_array_refs_parquet(get(), url_prefix.data(), url_prefix.size(),
                                            name.data(), name.size(), record_size, out.get());
        });
    }

    /// Write the array's Parquet reference set, the files of `kerchunk_refs_parquet` with the
    /// same arguments byte for byte, into the local directory `dir`
    /// (`shard_array_refs_parquet_dir`, what `zarrshard refs --format parquet -o DIR` writes):
    /// `dir/name/refs.<n>.parq`, then, last, `dir/.zmetadata`. `dir` must not exist (it is
    /// created, with missing parents) or be an empty directory; a relative path is relative
    /// to the current directory. The path's native bytes are passed as they are (any bytes
    /// but NUL on POSIX; UTF-8, from `u8string()`, on Windows). Each file is written to a
    /// temporary sibling and renamed, so a reader never sees a partial file. `name`,
    /// `record_size` and `dir` are checked before any shard is read; `name` must not be empty
    /// (and not start with `.z` or contain `..`), `record_size` is at least 1 (fsspec's
    /// default, 10000). A separate name, not an overload of `kerchunk_refs_parquet`: its
    /// forwarding `Store &&` would take a path (or a string) as the store.
    ///
    /// Ownership: `dir` is read during the call only; nothing is kept, and the files written
    /// belong to the caller. Thread-safe (not while another thread writes the array, or
    /// another call or process writes `dir`). Throws `Error`: `SHARD_ERR_INVALID_ARGUMENT`
    /// (empty or invalid `name`, `record_size` 0, `dir` empty, containing NUL or naming
    /// something other than an empty directory, an array that is not sharded, has a codec
    /// after sharding or a data type Zarr v2 cannot name), `SHARD_ERR_UNSUPPORTED_CODEC`
    /// (what v2 metadata cannot express), `SHARD_ERR_NULL_POINTER` (an empty `Array`),
    /// `SHARD_ERR_IO` (reading the array: `io_code()` and `host_message()` as for
    /// `Array::open`; creating or writing `dir`: `io_code()` is the OS error number, e.g.
    /// `ENOTDIR` for a path below a regular file, `EACCES`), `SHARD_ERR_CORRUPT`,
    /// `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED` (a library built without the `parquet`
    /// feature); on Windows what converting the path throws (`std::bad_alloc`,
    /// `std::system_error`). After an error part way some files may already be written, but
    /// no `.zmetadata`.
    void kerchunk_refs_parquet_dir(const std::filesystem::path &dir, std::string_view url_prefix,
                                   std::string_view name,
                                   std::uint64_t record_size = 10000) const {
        require_open();
        const std::string bytes = detail::path_bytes(dir);
        detail::call([&] {
            return shard_array_refs_parquet_dir(get(), url_prefix.data(), url_prefix.size(),
                                                name.data(), name.size(), record_size,
                                                bytes.data(), bytes.size());
        });
    }

    /// Check every stored shard, as `zarrshard verify` does (`shard_array_verify`): the index
    /// (checksum, every entry within the object) and that every inner chunk decodes. Returns
    /// the problems found, in C order of the chunk grid and of each shard's chunks; empty when
    /// the array is clean. A damaged shard is a problem, not an error. Each whole shard object
    /// is read once; a store that lists (see `Array`) is listed once and only the listed
    /// shards are opened, else every grid position is asked; shards are fetched on worker
    /// threads with `StoreFlags::ThreadSafe`, one after another on the calling thread
    /// otherwise.
    ///
    /// Thread-safe (not while another thread writes the array). Throws `Error`:
    /// `SHARD_ERR_IO` (the store's `list` threw; or its `open` or I/O object threw, the first
    /// such shard in grid order: `io_code()` and `host_message()` as for `Array::open`),
    /// `SHARD_ERR_INVALID_ARGUMENT` (a shard object larger than the memory limit),
    /// `SHARD_ERR_NULL_POINTER` (an empty `Array`); or what growing the vector threw
    /// (`std::bad_alloc`), rethrown once the C call has returned.
    [[nodiscard]] std::vector<Problem> verify() const {
        std::vector<Problem> problems;
        (void)verify([&](const Problem &p) { problems.push_back(p); });
        return problems;
    }

    /// `verify()` streaming: each problem goes to `on_problem(const Problem &)` as it is found
    /// (in the same order, as each batch of shards is done), always on the calling thread,
    /// even with `StoreFlags::ThreadSafe`; the `Problem` is valid during the call only.
    /// Returns how many there were (0: the array is clean). The call must not write the array.
    ///
    /// Thread-safe as `verify()`. Throws what `verify()` throws, or what `on_problem` threw:
    /// the check stops at once (`on_problem` is not called again) and that exception is
    /// rethrown as it was, once the C call has returned (never across the C boundary).
    template <class F>
    std::uint64_t verify(F &&on_problem) const {
        static_assert(std::is_invocable<F &, const Problem &>::value,
                      "verify(on_problem): on_problem must be callable as on_problem(const Problem &)");
        require_open();
        using Fn = std::remove_reference_t<F>;
        detail::ProblemReceiver<Fn> receiver(on_problem);
        std::uint64_t n = 0;
        detail::call_with_receiver(receiver, [&] {
            return shard_array_verify(get(), &detail::ProblemReceiver<Fn>::report, &receiver, &n);
        });
        return n;
    }

    /// Read the region of extent `shape` at `start` (array coordinates) into `out`: exactly
    /// the region's element count × the element size, C order, native byte order; the fill
    /// value where nothing is stored. Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT`
    /// for a rank mismatch or a region past the array, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_IO`,
    /// `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED`). On error `out`'s
    /// contents are unspecified.
    void read_region(Coords start, Coords shape, span<std::uint8_t> out) const {
        require_open();
        (void)detail::region_elements(start, shape);
        detail::call([&] {
            return shard_array_read_region(get(), start.data(), shape.data(), start.size(),
                                           out.data(), out.size());
        });
    }

    /// The region of extent `shape` at `start` as a new vector of `T` (trivially copyable,
    /// `sizeof(T)` equal to the data type's size, else `SHARD_ERR_BUFFER_SIZE`). As
    /// `read_region(start, shape, out)`.
    /// The region is checked by the library (rank, bounds) before the vector is allocated, so
    /// a region past the array never allocates; one that cannot be allocated throws
    /// `SHARD_ERR_INVALID_ARGUMENT`.
    template <class T>
    [[nodiscard]] std::vector<T> read_region(Coords start, Coords shape) const {
        static_assert(std::is_trivially_copyable<T>::value, "T must be trivially copyable");
        require_open();
        const std::size_t n = detail::region_elements(start, shape);
        if (n != 0) {
            // (NULL, 0): the library checks rank and bounds, then refuses the empty buffer
            // with SHARD_ERR_BUFFER_SIZE, reading nothing.
            detail::clear_host_failures();
            const shard_status probe = shard_array_read_region(get(), start.data(), shape.data(),
                                                               start.size(), nullptr, 0);
            if (probe != SHARD_ERR_BUFFER_SIZE) detail::check(probe);
        }
        std::vector<T> v = detail::allocate<T>(n, "a region");
        read_region(start, shape, as_writable_bytes(span<T>(v)));
        return v;
    }

    /// Write `data` (the region's element count × the element size, C order, native byte
    /// order) to the region of extent `shape` at `start`, with the minimum read-modify-write:
    /// shards covered entirely are written whole without being read; in the others only the
    /// index and the partly covered inner chunks are read, and the touched chunks and a new
    /// index are appended. Chunks equal to the fill value are not stored; a shard left empty is
    /// removed (the I/O object needs `remove`). Not atomic across shards. Exclusive use.
    /// Throws `Error` (`SHARD_ERR_INVALID_ARGUMENT`, `SHARD_ERR_BUFFER_SIZE`, `SHARD_ERR_BUSY`,
    /// `SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`, `SHARD_ERR_CHECKSUM`, `SHARD_ERR_UNSUPPORTED`).
    void write_region(Coords start, Coords shape, span<const std::uint8_t> data) {
        require_open();
        (void)detail::region_elements(start, shape);
        detail::call([&] {
            return shard_array_write_region(get(), start.data(), shape.data(), start.size(),
                                            data.data(), data.size());
        });
    }

    /// `write_region` from elements of `T`: `values` holds exactly the region's element count
    /// (`sizeof(T)` must equal the data type's size). Throws `Error` (`SHARD_ERR_BUFFER_SIZE`
    /// for another count or element size, and as `write_region`).
    template <class T>
    void write_region(Coords start, Coords shape, const std::vector<T> &values) {
        static_assert(std::is_trivially_copyable<T>::value, "T must be trivially copyable");
        require_open();
        const std::size_t n = detail::region_elements(start, shape);
        if (values.size() != n)
            throw Error(SHARD_ERR_BUFFER_SIZE,
                        "wrong buffer size: " + std::to_string(values.size()) +
                            " values for a region of " + std::to_string(n) + " elements");
        write_region(start, shape, as_bytes(span<const T>(values)));
    }

    /// The array's shape now (`shard_array_shape`): after `append` and `resize`, the new one.
    /// Thread-safe. Throws `Error` (`SHARD_ERR_NULL_POINTER` when empty).
    [[nodiscard]] std::vector<std::uint64_t> shape() const {
        require_open();
        std::size_t rank = 0;
        detail::call([&] { return shard_array_rank(get(), &rank); });
        std::vector<std::uint64_t> v(rank);
        detail::call([&] { return shard_array_shape(get(), v.data(), v.size()); });
        return v;
    }

    /// Grow or shrink the array to `shape` (`shard_array_resize`): `zarr.json` replaced
    /// atomically; shards and inner chunks wholly outside the new shape deleted; the part of a
    /// partial inner chunk past a shrunken edge reset to the fill value (growing again shows
    /// fill, never old data). Pending appended frames are flushed first. Exclusive use. Throws
    /// `Error` (`SHARD_ERR_INVALID_ARGUMENT` for a rank mismatch, `SHARD_ERR_IO`,
    /// `SHARD_ERR_BUSY`, `SHARD_ERR_NULL_POINTER` when empty).
    void resize(Coords shape) {
        require_open();
        detail::call([&] { return shard_array_resize(ptr_.get(), shape.data(), shape.size()); });
    }

    /// Append the block `data` of extent `block_shape` at the end of `axis`
    /// (`shard_array_append`), growing the shape: `block_shape[axis] >= 1`, the other extents
    /// equal to the array's; `data` is the block's elements, C order, native byte order. Frames
    /// are gathered per layer of shards along `axis` and each shard is written once, whole,
    /// when its layer is complete; they read back at once through `read_region`. `zarr.json`'s
    /// shape covers only written layers until `flush()` (or the destructor, which flushes and
    /// loses errors: call `flush()` to see them). Exclusive use. Throws `Error`
    /// (`SHARD_ERR_INVALID_ARGUMENT` for a bad axis or block shape, `SHARD_ERR_BUFFER_SIZE`,
    /// `SHARD_ERR_IO`, `SHARD_ERR_BUSY`, `SHARD_ERR_NULL_POINTER` when empty).
    void append(std::size_t axis, Coords block_shape, span<const std::uint8_t> data) {
        require_open();
        detail::call([&] {
            return shard_array_append(ptr_.get(), axis, block_shape.data(), block_shape.size(),
                                      data.data(), data.size());
        });
    }

    /// `append` from elements of `T` (trivially copyable): `values` must hold exactly the
    /// block's element count, and `sizeof(T)` must equal the data type's size (checked for
    /// sharded arrays, whose codec names it), else `SHARD_ERR_BUFFER_SIZE` before anything is
    /// written. Throws `Error` as `append`.
    template <class T>
    void append(std::size_t axis, Coords block_shape, span<const T> values) {
        static_assert(std::is_trivially_copyable<T>::value, "T must be trivially copyable");
        require_open();
        const std::size_t n = detail::region_elements(block_shape, block_shape);
        if (values.size() != n)
            throw Error(SHARD_ERR_BUFFER_SIZE,
                        "wrong buffer size: " + std::to_string(values.size()) +
                            " values for a block of " + std::to_string(n) + " elements");
        const std::size_t element = element_nbytes();
        if (element != 0 && element != sizeof(T))
            throw Error(SHARD_ERR_BUFFER_SIZE,
                        "wrong buffer size: an element type of " + std::to_string(sizeof(T)) +
                            " bytes for a data type of " + std::to_string(element) + " bytes");
        append(axis, block_shape, as_bytes(values));
    }

    /// `append` from a vector of `T`. As `append(axis, block_shape, span<const T>)`.
    template <class T>
    void append(std::size_t axis, Coords block_shape, const std::vector<T> &values) {
        append(axis, block_shape, span<const T>(values));
    }

    /// Write the pending appended frames (a partial layer as edge shards, rewritten whole when
    /// later frames complete it) and the shape in `zarr.json` (`shard_array_flush`). Nothing
    /// pending: nothing written. Exclusive use. Throws `Error` (`SHARD_ERR_IO`,
    /// `SHARD_ERR_BUSY`, `SHARD_ERR_NULL_POINTER` when empty).
    void flush() {
        require_open();
        detail::call([&] { return shard_array_flush(ptr_.get()); });
    }

    /// Replace the array's attributes with the JSON object `json`
    /// (`shard_array_set_attributes`; `zarr.json` rewritten atomically). Exclusive use. Throws
    /// `Error` (`SHARD_ERR_INVALID_METADATA` for text that is not a JSON object,
    /// `SHARD_ERR_IO`, `SHARD_ERR_NULL_POINTER` when empty).
    void set_attributes(std::string_view json) {
        require_open();
        detail::call([&] {
            return shard_array_set_attributes(ptr_.get(), json.data(), json.size());
        });
    }

    /// The array's attributes as JSON object text (`shard_array_attributes`; `{}` when none).
    /// Thread-safe. Throws `Error` (`SHARD_ERR_NULL_POINTER` when empty).
    [[nodiscard]] std::string attributes() const {
        require_open();
        return detail::query_text([&](char *buf, std::size_t len, std::size_t *written) {
            return shard_array_attributes(get(), buf, len, written);
        });
    }

    /// Rewrite every stored shard that holds dead bytes (chunks replaced by later writes)
    /// without them, as `zarrshard compact` does (`shard_array_compact`); `Flags::MortonOrder`
    /// lays the chunks out in Morton order (other flags: `SHARD_ERR_INVALID_ARGUMENT`).
    /// Exclusive use. Throws `Error` (`SHARD_ERR_IO`, `SHARD_ERR_CORRUPT`,
    /// `SHARD_ERR_CHECKSUM`, `SHARD_ERR_BUSY`, `SHARD_ERR_NULL_POINTER` when empty).
    Compaction compact(Flags flags = Flags::None) {
        require_open();
        Compaction c;
        detail::call([&] {
            return shard_array_compact(ptr_.get(), static_cast<std::uint32_t>(flags),
                                       &c.shards_rewritten, &c.bytes_freed);
        });
        return c;
    }

  private:
    // Open or create over a library store: the array holds its own reference to it.
    template <class F>
    static Array adopt(const Store &store, F &&make) {
        if (!store)
            throw Error(SHARD_ERR_NULL_POINTER, "`store` must not be NULL (an empty Store)");
        shard_array *a = nullptr;
        detail::call([&] { return make(&a); });
        Array array;
        array.ptr_.reset(a);
        return array;
    }

    // Open or create over a host store moved into a heap adapter the handle owns on success
    // (its destroy, at close); when the call fails the adapter is deleted here.
    template <class HostStore, class F>
    static Array with_host_store(HostStore &&store, StoreFlags flags, F &&make) {
        using Adapter = detail::StoreAdapter<std::decay_t<HostStore>>;
        if (detail::pointee<std::decay_t<HostStore>>::is_null(store))
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`store` must not be NULL (an empty smart pointer was given as the store)");
        auto adapter = std::make_unique<Adapter>(std::forward<HostStore>(store));
        const shard_store_callbacks table =
            adapter->table(static_cast<std::uint32_t>(flags), /*owned=*/true);
        shard_array *a = nullptr;
        detail::call([&] { return make(&table, &a); });
        adapter.release(); // the handle owns it now (destroy, at close)
        Array array;
        array.ptr_.reset(a);
        return array;
    }

    // The data type's size from the codec (sharded arrays); 0 when the array is not sharded.
    // Asked once: the data type of an open array never changes.
    std::size_t element_nbytes() const {
        if (element_nbytes_ == unknown_size) {
            shard_codec *c = nullptr;
            detail::clear_host_failures();
            element_nbytes_ =
                shard_array_codec(get(), &c) == SHARD_OK ? Codec(c).element_nbytes() : 0;
        }
        return element_nbytes_;
    }

    static constexpr std::size_t unknown_size = SIZE_MAX;

    // An empty array always reports SHARD_ERR_NULL_POINTER, before the binding's own checks.
    void require_open() const {
        if (!ptr_) throw Error(SHARD_ERR_NULL_POINTER, "`array` must not be NULL (empty Array)");
    }

    // The C format of kerchunk's JSON version 0 or 1; `Error` for another.
    static std::uint32_t refs_format(int version) {
        if (version != 0 && version != 1)
            throw Error(SHARD_ERR_INVALID_ARGUMENT,
                        "invalid argument: kerchunk reference set version " +
                            std::to_string(version) + " (0 or 1)");
        return version == 0 ? SHARD_REFS_JSON_V0 : SHARD_REFS_JSON_V1;
    }

    std::unique_ptr<shard_array, detail::ArrayDeleter> ptr_;
    mutable std::size_t element_nbytes_ = unknown_size; // see element_nbytes()
};

/// A store in memory: key → `MemoryIO`, for tests and caches. Copies share the same objects,
/// so a test can keep one copy, give another to `Array::open`, and inspect the objects later.
/// Thread-safe (one mutex for the map; each `MemoryIO` has its own). A moved-from
/// `MemoryStore` is empty: its members throw `Error` with `SHARD_ERR_NULL_POINTER` (through an
/// array: `SHARD_ERR_IO`, `io_code_exception`).
class MemoryStore {
  public:
    /// A new, empty store. Throws `std::bad_alloc` only.
    MemoryStore() : s_(std::make_shared<State>()) {}

    /// The object at `key` (created, not existing, on first use). Throws `Error`
    /// (`SHARD_ERR_NULL_POINTER` when moved from).
    [[nodiscard]] MemoryIO open(std::string_view key) {
        std::lock_guard<std::mutex> l(state().mutex);
        s_->opens++;
        return s_->objects[std::string(key)];
    }
    /// The keys of the objects that exist, sorted. Throws `Error` (`SHARD_ERR_NULL_POINTER`
    /// when moved from).
    [[nodiscard]] std::vector<std::string> keys() const {
        std::lock_guard<std::mutex> l(state().mutex);
        std::vector<std::string> k;
        for (const auto &o : s_->objects)
            if (o.second.exists()) k.push_back(o.first);
        return k;
    }
    /// The keys of the objects that exist and start with `prefix`, sorted: the store's
    /// listing, with which walks over the stored shards (`Array::verify`, the
    /// `kerchunk_refs*` calls) open only those instead of every grid position. Not counted by
    /// `opens()`. Throws `Error` (`SHARD_ERR_NULL_POINTER` when moved from).
    [[nodiscard]] std::vector<std::string> list(std::string_view prefix) const {
        std::lock_guard<std::mutex> l(state().mutex);
        std::vector<std::string> k;
        for (auto it = s_->objects.lower_bound(prefix); it != s_->objects.end(); ++it) {
            if (it->first.compare(0, prefix.size(), prefix) != 0) break; // past the prefix
            if (it->second.exists()) k.push_back(it->first);
        }
        return k;
    }
    /// How many times `open` was called (one per shard a call touches). Throws `Error`
    /// (`SHARD_ERR_NULL_POINTER` when moved from).
    [[nodiscard]] std::uint64_t opens() const {
        std::lock_guard<std::mutex> l(state().mutex);
        return s_->opens;
    }

  private:
    struct State {
        mutable std::mutex mutex;
        std::map<std::string, MemoryIO, std::less<>> objects; // less<>: lower_bound(string_view)
        std::uint64_t opens = 0;
    };
    State &state() const {
        if (!s_)
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`MemoryStore` must not be empty (moved from): it holds no objects");
        return *s_;
    }
    std::shared_ptr<State> s_;
};

/// Zarr v3 groups (`shard_group_create`): enough, with `Array::create` below them, for an
/// OME-Zarr image (a group with `multiscales` attributes and arrays `0`, `1`, ...).
class Group {
  public:
    Group() = delete;

    /// Create a group at `path` in `store` with the attributes `attributes_json` (a JSON
    /// object; empty: `{}`): `path/zarr.json` with `node_type` `group`, written atomically.
    /// Thread-safe. Throws `Error` (`SHARD_ERR_INVALID_STATE` ("`a/b` already holds a group
    /// (zarr.json); ...") for a node at `path` with `Existing::Refuse`;
    /// `SHARD_ERR_INVALID_METADATA` for attributes that are not a JSON object; `SHARD_ERR_INVALID_ARGUMENT` for a bad path, naming it;
    /// `SHARD_ERR_IO`; `SHARD_ERR_NULL_POINTER` for an empty `store`).
    static void create(const Store &store, std::string_view path,
                       std::string_view attributes_json = {},
                       Existing existing = Existing::Refuse) {
        if (!store)
            throw Error(SHARD_ERR_NULL_POINTER, "`store` must not be NULL (an empty Store)");
        create_in(store.get(), path, attributes_json, existing);
    }

    /// `create` in a host store (see `Array`), **borrowed** for the call: neither copied,
    /// moved nor kept (the library never owns a store given to `shard_group_create`); every
    /// callback runs on the calling thread. Throws `Error` as `create`.
    template <class HostStore, std::enable_if_t<detail::is_host_store_v<HostStore>, int> = 0>
    static void create(HostStore &&store, std::string_view path,
                       std::string_view attributes_json = {},
                       Existing existing = Existing::Refuse) {
        using Stored = std::decay_t<HostStore>;
        using Object = typename detail::pointee<Stored>::type;
        if (detail::pointee<Stored>::is_null(store))
            throw Error(SHARD_ERR_NULL_POINTER,
                        "`store` must not be NULL (an empty smart pointer was given as the store)");
        detail::StoreAdapter<std::reference_wrapper<Object>> adapter(
            std::ref(detail::pointee<Stored>::get(store)));
        const shard_store_callbacks table = adapter.table(0, /*owned=*/false);
        create_in(&table, path, attributes_json, existing);
    }

  private:
    static void create_in(const shard_store_callbacks *table, std::string_view path,
                          std::string_view attributes_json, Existing existing) {
        const std::string p = detail::c_string(path, "path");
        detail::call([&] {
            return shard_group_create(table, p.c_str(),
                                      attributes_json.empty() ? nullptr : attributes_json.data(),
                                      attributes_json.size(),
                                      static_cast<std::uint32_t>(existing));
        });
    }
};

} // namespace zarrshard

#endif // ZARRSHARD_HPP
