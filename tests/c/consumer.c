/*
 * consumer: a program built against an installed zarrshard (tests/c/run.sh builds it with
 * `pkg-config --cflags --libs zarrshard` and with CMake's find_package(zarrshard)). It uses
 * only the installed header and library: a one-shard array written through a minimal
 * in-memory back end, then read back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zarrshard.h>

typedef struct {
    uint8_t data[4096];
    size_t len;
    int exists;
} object;

static int obj_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    object *o = (object *)ud;
    size_t n = 0;
    if (!o->exists) return SHARD_IO_NOT_FOUND;
    if (offset < o->len) n = o->len - (size_t)offset < len ? o->len - (size_t)offset : len;
    if (n > 0) memcpy(buf, o->data + offset, n);
    *read_out = n;
    return 0;
}

static int obj_size(void *ud, uint64_t *size_out) {
    object *o = (object *)ud;
    if (!o->exists) return SHARD_IO_NOT_FOUND;
    *size_out = o->len;
    return 0;
}

static int obj_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    object *o = (object *)ud;
    if (offset + len > sizeof o->data) return 27; /* EFBIG */
    memcpy(o->data + offset, buf, len);
    if (offset + len > o->len) o->len = (size_t)(offset + len);
    o->exists = 1;
    return 0;
}

static int fail(const char *what, shard_status st) {
    char msg[256];
    size_t n;
    shard_last_error(msg, sizeof msg, &n);
    fprintf(stderr, "consumer: %s: %s: %s\n", what, shard_status_str((uint32_t)st), msg);
    return 1;
}

int main(void) {
    static const char json[] =
        "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8, 8], \"data_type\": \"int32\","
        " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [8, 8]}},"
        " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": -1,"
        " \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [4, 4],"
        " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
        " {\"name\": \"zstd\", \"configuration\": {\"level\": 3, \"checksum\": true}}],"
        " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
        " {\"name\": \"crc32c\"}]}}]}";
    object *obj = (object *)calloc(1, sizeof *obj);
    shard_codec *codec = NULL;
    shard_handle *h = NULL;
    shard_io_callbacks io;
    shard_status st;
    int32_t in[16], out[16];
    uint64_t c[2] = {1, 0}, size = 0;
    char key[32];
    size_t n, i;

    if (obj == NULL) return 1;
    for (i = 0; i < 16; i++) in[i] = (int32_t)(i * i) - 7;
    if ((st = shard_codec_from_zarr_json(json, strlen(json), &codec)) != SHARD_OK)
        return fail("shard_codec_from_zarr_json", st);
    memset(&io, 0, sizeof io);
    io.version = SHARD_IO_VERSION;
    io.userdata = obj; /* the host frees it: no destroy */
    io.read = obj_read;
    io.size = obj_size;
    io.write = obj_write;
    if ((st = shard_open(codec, &io, SHARD_MODE_WRITE_BUFFERED, &h)) != SHARD_OK ||
        (st = shard_write_chunk(h, c, 2, (const uint8_t *)in, sizeof in)) != SHARD_OK ||
        (st = shard_finalize(h, &size)) != SHARD_OK)
        return fail("write", st);
    shard_close(h);
    if ((st = shard_open(codec, &io, SHARD_MODE_READ, &h)) != SHARD_OK ||
        (st = shard_read_chunk(h, c, 2, (uint8_t *)out, sizeof out)) != SHARD_OK)
        return fail("read", st);
    if (memcmp(in, out, sizeof in) != 0) {
        fprintf(stderr, "consumer: values differ\n");
        return 1;
    }
    c[1] = 1; /* never written: the fill value */
    if ((st = shard_read_chunk(h, c, 2, (uint8_t *)out, sizeof out)) != SHARD_OK)
        return fail("read", st);
    if (out[0] != -1 || out[15] != -1) {
        fprintf(stderr, "consumer: expected the fill value\n");
        return 1;
    }
    shard_close(h);
    c[0] = c[1] = 0;
    if ((st = shard_codec_shard_key(codec, c, 2, key, sizeof key, &n)) != SHARD_OK)
        return fail("shard_codec_shard_key", st);
    printf("consumer: zarrshard %s, shard %s of %lu bytes written and read back\n",
           shard_version(), key, (unsigned long)size);
    shard_codec_free(codec);
    free(obj);
    return 0;
}
