// The C headers from C++: included twice (include guards), extern "C" linkage (this links
// against the library and calls it), and no warnings under -Wall -Wextra -Werror.
#include "zarrshard.h"
#include "zarrshard.h"
#include "mem_io.h"
#include "posix_io.h"
#include "posix_io.h"

#include <cstring>
#include <type_traits>

static_assert(std::is_standard_layout<shard_io_callbacks>::value, "plain C struct");
static_assert(std::is_standard_layout<shard_chunk_location>::value, "plain C struct");
static_assert(SHARD_OK == 0 && SHARD_ERR_BUSY == 12, "fixed status numbers");

int main() {
    shard_io_callbacks io{};
    io.version = SHARD_IO_VERSION;
    shard_handle *h = nullptr;
    if (shard_open(nullptr, &io, SHARD_MODE_READ, &h) != SHARD_ERR_NULL_POINTER) return 1;
    shard_codec *codec = nullptr;
    shard_status st = shard_codec_from_zarr_json("{", 1, &codec);
    std::size_t n = 0;
    if (shard_last_error(nullptr, 0, &n) != SHARD_OK || n == 0) return 1;
    shard_close(nullptr);
    shard_codec_free(codec);
    return st == SHARD_ERR_INVALID_METADATA && std::strlen(shard_version()) > 0 ? 0 : 1;
}
