/*
 * leak_control: a negative control for tests/c/run.sh. It leaks a codec and an open shard
 * handle (with its host context) on purpose, so ASan and valgrind must both report definite
 * leaks here; otherwise their clean results on the real tests would prove nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "mem_io.h"
#include "zarrshard.h"

int main(void) {
    static const uint64_t shape[2] = {16, 16};
    static const char cfg[] =
        "{\"chunk_shape\": [4, 4],"
        " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}],"
        " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}]}";
    shard_codec *c = NULL;
    shard_handle *h = NULL;
    shard_io_callbacks io;
    mem_io *m = mem_io_new(NULL, 0);
    if (shard_codec_from_config(cfg, strlen(cfg), "uint16", 6, shape, 2, "0", 1, &c) != SHARD_OK)
        return 2;
    mem_io_callbacks(m, &io);
    if (shard_open(c, &io, SHARD_MODE_READ, &h) != SHARD_OK) return 2;
    mem_io_release(m);
    /* Forget everything: no shard_close, no shard_codec_free. */
    c = NULL;
    h = NULL;
    return c == NULL && h == NULL ? 0 : 1;
}
