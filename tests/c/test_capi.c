/*
 * test_capi: the zarrshard C API from a C host's side.
 *
 * Every function with NULL arguments, malformed metadata, wrong buffer sizes, wrong handle
 * states, I/O failures injected at every callback of a whole write and a whole read, round
 * trips in every mode, raw chunk copies, chunk locations, the exact number of storage
 * requests, and the error-message buffer. Each test is one line, `ok NAME` or `FAIL NAME`
 * with the failed checks; the last line is `N passed, M failed`.
 *
 * Built with -Wall -Wextra -Werror -pedantic, and run under ASan/UBSan and valgrind by
 * tests/c/run.sh, which is where leaks and memory errors are caught.
 */
#define _XOPEN_SOURCE 700

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dirent.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem_io.h"
#include "posix_io.h"
#include "zarrshard.h"

/* ---- a tiny harness ----------------------------------------------------------------- */

static int g_passed, g_failed, t_failures;

static void check_failed(int line, const char *what) {
    if (t_failures++ < 8) printf("    line %d: %s\n", line, what);
}

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) check_failed(__LINE__, #cond);                                        \
    } while (0)

/* Expect a status; on a mismatch print both and the library's message. */
#define EXPECT(call, want) expect_status((call), (want), __LINE__, #call)

static int expect_status(shard_status got, shard_status want, int line, const char *call) {
    char msg[300], buf[600];
    size_t n;
    if (got == want) return 1;
    if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK) msg[0] = '\0';
    snprintf(buf, sizeof buf, "%s = %d (%s), expected %d (%s); last error: %s", call, (int)got,
             shard_status_str((uint32_t)got), (int)want, shard_status_str((uint32_t)want),
             got == SHARD_OK ? "-" : msg);
    check_failed(line, buf);
    return 0;
}

static void run(const char *name, void (*test)(void)) {
    t_failures = 0;
    test();
    if (t_failures == 0) {
        g_passed++;
        printf("ok %s\n", name);
    } else {
        g_failed++;
        printf("FAIL %s (%d failed checks)\n", name, t_failures);
    }
    fflush(stdout);
}

#define RUN(test) run(#test, test)

/* ---- fixtures ----------------------------------------------------------------------- */

#define BYTES_LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"
#define ZSTD1 "{\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}"
#define CRC "{\"name\": \"crc32c\"}"

/* 16x16 uint16 shards of 4x4 inner chunks: 16 chunks of 32 bytes, a 260-byte index. */
static const char CFG_ZSTD_END[] =
    "{\"chunk_shape\": [4, 4], \"codecs\": [" BYTES_LE ", " ZSTD1 "],"
    " \"index_codecs\": [" BYTES_LE ", " CRC "], \"index_location\": \"end\"}";
/* Uncompressed (fixed-size chunks), index first: updates in place overwrite exactly. */
static const char CFG_RAW_START[] =
    "{\"chunk_shape\": [4, 4], \"codecs\": [" BYTES_LE "],"
    " \"index_codecs\": [" BYTES_LE ", " CRC "], \"index_location\": \"start\"}";

/* A 40x32 array of 16x16 shards (a 3x2 grid; the last row of shards is partial). */
static const char ZARR_JSON[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [40, 32], \"data_type\": \"uint16\","
    " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 16]}},"
    " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0,"
    " \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [4, 4],"
    " \"codecs\": [" BYTES_LE ", " ZSTD1 "], \"index_codecs\": [" BYTES_LE ", " CRC "]}}]}";

#define PER 4            /* inner chunks per shard along each dimension */
#define NCHUNKS 16       /* inner chunks per shard */
#define CHUNK_ELEMS 16   /* elements per inner chunk */
#define CHUNK_NBYTES 32  /* bytes per inner chunk */
#define INDEX_NBYTES 260 /* 16 entries of 2 x uint64, + crc32c */

static const uint64_t SHARD_SHAPE[2] = {16, 16};

static shard_codec *codec_from(const char *cfg) {
    shard_codec *c = NULL;
    shard_status st = shard_codec_from_config(cfg, strlen(cfg), "uint16", 6, SHARD_SHAPE, 2,
                                              "0", 1, &c);
    if (st != SHARD_OK) {
        printf("fixture: shard_codec_from_config failed: %s\n", shard_status_str((uint32_t)st));
        exit(2);
    }
    return c;
}

static void coords_of(uint64_t i, uint64_t *c) {
    c[0] = i / PER;
    c[1] = i % PER;
}

/* The contents of chunk i written with `seed` (never all zero); seed 0 is the fill value. */
static void pattern(uint64_t i, unsigned seed, uint16_t *out) {
    unsigned j;
    for (j = 0; j < CHUNK_ELEMS; j++)
        out[j] = seed == 0 ? 0 : (uint16_t)(1 + (seed * 7919u + i * 131u + j * 3u) % 65000u);
}

/* A planned change to chunk `i`: write pattern `seed` (0 writes fill values), or erase. */
typedef struct {
    uint64_t i;
    unsigned seed;
    int erase;
} op;

/* Open `m` in `mode`, apply `ops`, finalize; close in any case. Returns the first failure.
 * `model[i]` (the seed chunk i must read back as) is updated for the ops that succeeded. */
static shard_status apply(const shard_codec *codec, mem_io *m, uint32_t mode, uint32_t flags,
                          const op *ops, size_t nops, unsigned *model, uint64_t *size_out) {
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t buf[CHUNK_ELEMS];
    uint64_t c[2];
    size_t k;
    shard_status st;
    mem_io_callbacks(m, &io);
    st = shard_open_ex(codec, &io, mode, flags, &h);
    if (st != SHARD_OK) {
        io.destroy(io.userdata); /* a failed open leaves userdata with us */
        return st;
    }
    for (k = 0; k < nops && st == SHARD_OK; k++) {
        coords_of(ops[k].i, c);
        if (ops[k].erase) {
            st = shard_erase_chunk(h, c, 2);
        } else {
            pattern(ops[k].i, ops[k].seed, buf);
            st = shard_write_chunk(h, c, 2, (const uint8_t *)buf, sizeof buf);
        }
        if (st == SHARD_OK && model != NULL) model[ops[k].i] = ops[k].erase ? 0 : ops[k].seed;
    }
    if (st == SHARD_OK) st = shard_finalize(h, size_out);
    shard_close(h);
    return st;
}

/* A full plan: every chunk with seed, every fifth (i % 5 == 3) fill values, chunk 6 erased
 * after it was written. */
static size_t full_plan(unsigned seed, op *ops) {
    size_t n = 0;
    uint64_t i;
    for (i = 0; i < NCHUNKS; i++) {
        ops[n].i = i;
        ops[n].seed = i % 5 == 3 ? 0 : seed;
        ops[n++].erase = 0;
    }
    ops[n].i = 6;
    ops[n].seed = 0;
    ops[n++].erase = 1;
    return n;
}

/* A read handle on `m`; NULL (and a failed check) when it does not open. */
static shard_handle *open_read(const shard_codec *codec, mem_io *m) {
    shard_io_callbacks io;
    shard_handle *h = NULL;
    mem_io_callbacks(m, &io);
    if (!EXPECT(shard_open(codec, &io, SHARD_MODE_READ, &h), SHARD_OK)) {
        io.destroy(io.userdata);
        return NULL;
    }
    return h;
}

/* Every chunk of `m` reads back as `model` says. */
static int verify(const shard_codec *codec, mem_io *m, const unsigned *model) {
    shard_handle *h = open_read(codec, m);
    uint16_t got[CHUNK_ELEMS], want[CHUNK_ELEMS];
    uint64_t i, c[2];
    int ok = h != NULL;
    for (i = 0; ok && i < NCHUNKS; i++) {
        shard_chunk_location loc;
        coords_of(i, c);
        ok = EXPECT(shard_read_chunk(h, c, 2, (uint8_t *)got, sizeof got), SHARD_OK) &&
             EXPECT(shard_chunk_info(h, c, 2, &loc), SHARD_OK);
        pattern(i, model[i], want);
        if (ok && memcmp(got, want, sizeof got) != 0) {
            char msg[64];
            snprintf(msg, sizeof msg, "chunk %lu: wrong values", (unsigned long)i);
            check_failed(__LINE__, msg);
            ok = 0;
        }
        if (ok && (loc.empty != (model[i] == 0))) {
            check_failed(__LINE__, "chunk_info.empty disagrees with the model");
            ok = 0;
        }
    }
    shard_close(h);
    return ok;
}

/* A shard written with full_plan(seed) in buffered mode. */
static mem_io *written_shard(const shard_codec *codec, unsigned seed, unsigned *model) {
    op ops[NCHUNKS + 1];
    size_t n = full_plan(seed, ops);
    mem_io *m = mem_io_new(NULL, 0);
    unsigned scratch[NCHUNKS] = {0};
    EXPECT(apply(codec, m, SHARD_MODE_WRITE_BUFFERED, 0, ops, n, model ? model : scratch, NULL),
           SHARD_OK);
    return m;
}

static int last_error_contains(const char *needle) {
    char msg[512];
    size_t n;
    if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK) return 0;
    return strstr(msg, needle) != NULL;
}

/* ---- tests -------------------------------------------------------------------------- */

static void test_version_and_status_strings(void) {
    uint32_t s;
    CHECK(shard_version() != NULL && strlen(shard_version()) >= 5);
    CHECK(strchr(shard_version(), '.') != NULL);
    for (s = 0; s <= SHARD_ERR_BUSY; s++) {
        CHECK(shard_status_str(s) != NULL && strlen(shard_status_str(s)) > 0);
        CHECK(strcmp(shard_status_str(s), "unknown status") != 0);
    }
    CHECK(strcmp(shard_status_str(13), "unknown status") == 0);
    CHECK(strcmp(shard_status_str(0xFFFFFFFFu), "unknown status") == 0);
    CHECK(strcmp(shard_status_str(SHARD_ERR_IO), shard_status_str(SHARD_ERR_CORRUPT)) != 0);
    CHECK(SHARD_IO_VERSION == 3 && SHARD_IO_NOT_FOUND == 2147483647);
    CHECK(SHARD_OK == 0 && SHARD_ERR_NULL_POINTER == 1 && SHARD_ERR_INVALID_METADATA == 2 &&
          SHARD_ERR_UNSUPPORTED_CODEC == 3 && SHARD_ERR_CORRUPT == 4 && SHARD_ERR_CHECKSUM == 5 &&
          SHARD_ERR_IO == 6 && SHARD_ERR_BUFFER_SIZE == 7 && SHARD_ERR_INVALID_ARGUMENT == 8 &&
          SHARD_ERR_INVALID_STATE == 9 && SHARD_ERR_UNSUPPORTED == 10 && SHARD_ERR_PANIC == 11 &&
          SHARD_ERR_BUSY == 12);
}

/* NULL for every pointer argument of every function; out-params stay untouched. */
static void test_null_arguments(void) {
    const shard_status NP = SHARD_ERR_NULL_POINTER;
    shard_codec *codec = codec_from(CFG_ZSTD_END), *sentinel_codec = (shard_codec *)&g_passed;
    shard_codec *out_codec = sentinel_codec, *array_codec = NULL;
    mem_io *m = written_shard(codec, 1, NULL), *mw = mem_io_new(NULL, 0);
    shard_io_callbacks io, iow;
    shard_handle *r = NULL, *w = NULL, *out_h = (shard_handle *)&g_failed;
    uint64_t c[2] = {0, 0}, shape[2] = {7, 7}, u64 = 7;
    uint8_t buf[CHUNK_NBYTES * 2];
    char text[64];
    size_t sz = 7;
    shard_chunk_location loc;
    const char *dt = "uint16";

    mem_io_callbacks(m, &io);
    mem_io_callbacks(mw, &iow);
    EXPECT(shard_open(codec, &io, SHARD_MODE_READ, &r), SHARD_OK);
    EXPECT(shard_open(codec, &iow, SHARD_MODE_WRITE_STREAMING, &w), SHARD_OK);
    memset(buf, 1, sizeof buf);

    /* errors */
    EXPECT(shard_last_error(NULL, 10, &sz), NP);
    /* An out-param that only reports a length may be NULL. */
    EXPECT(shard_last_error(text, sizeof text, NULL), SHARD_OK);
    EXPECT(shard_last_error(NULL, 0, NULL), SHARD_OK);

    /* process-wide settings */
    EXPECT(shard_get_threads(NULL), NP);
    EXPECT(shard_get_memory_limit(NULL), NP);

    /* codecs */
    EXPECT(shard_codec_from_zarr_json(NULL, 10, &out_codec), NP);
    EXPECT(shard_codec_from_zarr_json(ZARR_JSON, strlen(ZARR_JSON), NULL), NP);
    EXPECT(shard_codec_from_config(NULL, 5, dt, 6, SHARD_SHAPE, 2, "0", 1, &out_codec), NP);
    EXPECT(shard_codec_from_config(CFG_ZSTD_END, strlen(CFG_ZSTD_END), NULL, 6, SHARD_SHAPE, 2,
                                   "0", 1, &out_codec), NP);
    EXPECT(shard_codec_from_config(CFG_ZSTD_END, strlen(CFG_ZSTD_END), dt, 6, NULL, 2, "0", 1,
                                   &out_codec), NP);
    EXPECT(shard_codec_from_config(CFG_ZSTD_END, strlen(CFG_ZSTD_END), dt, 6, SHARD_SHAPE, 2,
                                   NULL, 1, &out_codec), NP);
    EXPECT(shard_codec_from_config(CFG_ZSTD_END, strlen(CFG_ZSTD_END), dt, 6, SHARD_SHAPE, 2,
                                   "0", 1, NULL), NP);
    CHECK(out_codec == sentinel_codec);
    EXPECT(shard_codec_rank(NULL, &sz), NP);
    EXPECT(shard_codec_rank(codec, NULL), NP);
    EXPECT(shard_codec_shard_shape(NULL, shape, 2), NP);
    EXPECT(shard_codec_shard_shape(codec, NULL, 2), NP);
    EXPECT(shard_codec_inner_chunk_shape(NULL, shape, 2), NP);
    EXPECT(shard_codec_inner_chunk_shape(codec, NULL, 2), NP);
    EXPECT(shard_codec_chunks_per_shard(NULL, shape, 2), NP);
    EXPECT(shard_codec_chunks_per_shard(codec, NULL, 2), NP);
    EXPECT(shard_codec_num_chunks(NULL, &u64), NP);
    EXPECT(shard_codec_num_chunks(codec, NULL), NP);
    EXPECT(shard_codec_inner_chunk_nbytes(NULL, &sz), NP);
    EXPECT(shard_codec_inner_chunk_nbytes(codec, NULL), NP);
    EXPECT(shard_codec_index_nbytes(NULL, &u64), NP);
    EXPECT(shard_codec_index_nbytes(codec, NULL), NP);
    EXPECT(shard_codec_element_nbytes(NULL, &sz), NP);
    EXPECT(shard_codec_element_nbytes(codec, NULL), NP);
    EXPECT(shard_codec_data_type(NULL, text, sizeof text, &sz), NP);
    EXPECT(shard_codec_data_type(codec, NULL, 5, &sz), NP);
    EXPECT(shard_codec_data_type(codec, text, sizeof text, NULL), SHARD_OK);
    CHECK(strcmp(text, "uint16") == 0);
    EXPECT(shard_codec_from_zarr_json(ZARR_JSON, strlen(ZARR_JSON), &array_codec), SHARD_OK);
    EXPECT(shard_codec_array_shape(NULL, shape, 2), NP);
    EXPECT(shard_codec_array_shape(array_codec, NULL, 2), NP);
    EXPECT(shard_codec_grid_shape(NULL, shape, 2), NP);
    EXPECT(shard_codec_grid_shape(array_codec, NULL, 2), NP);
    EXPECT(shard_codec_shard_key(NULL, c, 2, text, sizeof text, &sz), NP);
    EXPECT(shard_codec_shard_key(array_codec, NULL, 2, text, sizeof text, &sz), NP);
    EXPECT(shard_codec_shard_key(array_codec, c, 2, NULL, 5, &sz), NP);
    EXPECT(shard_codec_shard_key(array_codec, c, 2, text, sizeof text, NULL), SHARD_OK);
    CHECK(strcmp(text, "c/0/0") == 0);
    CHECK(u64 == 7 && sz == 7 && shape[0] == 7 && shape[1] == 7);

    /* handles */
    EXPECT(shard_open(NULL, &io, SHARD_MODE_READ, &out_h), NP);
    EXPECT(shard_open(codec, NULL, SHARD_MODE_READ, &out_h), NP);
    EXPECT(shard_open(codec, &io, SHARD_MODE_READ, NULL), NP);
    EXPECT(shard_open_ex(NULL, &io, SHARD_MODE_READ, 0, &out_h), NP);
    EXPECT(shard_open_ex(codec, NULL, SHARD_MODE_READ, 0, &out_h), NP);
    EXPECT(shard_open_ex(codec, &io, SHARD_MODE_READ, 0, NULL), NP);
    CHECK(out_h == (shard_handle *)&g_failed);
    EXPECT(shard_read_chunk(NULL, c, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunk(r, NULL, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunk(r, c, 2, NULL, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunks(NULL, c, 1, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunks(r, NULL, 1, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunks(r, c, 1, 2, NULL, CHUNK_NBYTES), NP);
    EXPECT(shard_read_chunk_raw(NULL, c, 2, buf, sizeof buf, &sz), NP);
    EXPECT(shard_read_chunk_raw(r, NULL, 2, buf, sizeof buf, &sz), NP);
    EXPECT(shard_read_chunk_raw(r, c, 2, NULL, sizeof buf, &sz), NP);
    EXPECT(shard_read_chunk_raw(r, c, 2, buf, sizeof buf, NULL), SHARD_OK);
    EXPECT(shard_read_chunk_raw(r, c, 2, NULL, 0, NULL), SHARD_OK);
    EXPECT(shard_chunk_info(NULL, c, 2, &loc), NP);
    EXPECT(shard_chunk_info(r, NULL, 2, &loc), NP);
    EXPECT(shard_chunk_info(r, c, 2, NULL), NP);
    EXPECT(shard_write_chunk(NULL, c, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_write_chunk(w, NULL, 2, buf, CHUNK_NBYTES), NP);
    EXPECT(shard_write_chunk(w, c, 2, NULL, CHUNK_NBYTES), NP);
    EXPECT(shard_write_chunk_raw(NULL, c, 2, buf, 8), NP);
    EXPECT(shard_write_chunk_raw(w, NULL, 2, buf, 8), NP);
    EXPECT(shard_write_chunk_raw(w, c, 2, NULL, 8), NP);
    EXPECT(shard_erase_chunk(NULL, c, 2), NP);
    EXPECT(shard_erase_chunk(w, NULL, 2), NP);
    EXPECT(shard_finalize(NULL, &u64), NP);
    CHECK(sz == 7 && u64 == 7);
    CHECK(last_error_contains("must not be NULL"));
    /* The NULL calls did nothing: the write handle is still usable and empty. */
    EXPECT(shard_finalize(w, NULL), SHARD_OK); /* size_out may be NULL */
    CHECK(!mem_io_exists(mw));

    /* No-ops. */
    shard_close(NULL);
    shard_codec_free(NULL);

    shard_close(r);
    shard_close(w);
    CHECK(mem_io_refs(m) == 1 && mem_io_refs(mw) == 1);
    mem_io_release(m);
    mem_io_release(mw);
    shard_codec_free(array_codec);
    shard_codec_free(codec);
}

/* Each bad zarr.json with the status the header documents, and a message. */
static void test_bad_metadata(void) {
#define HEAD                                                                               \
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [32, 32], \"data_type\": \"uint16\"," \
    " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [16, 16]}},"     \
    " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, "
#define SHARDING(inner, codecs, index)                                                     \
    "{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": " inner           \
    ", \"codecs\": " codecs ", \"index_codecs\": " index "}}"
    static const struct {
        const char *name, *json;
        shard_status want;
    } cases[] = {
        {"not JSON", "{not json", SHARD_ERR_INVALID_METADATA},
        {"trailing garbage", "{\"zarr_format\": 3} x", SHARD_ERR_INVALID_METADATA},
        {"empty", "", SHARD_ERR_INVALID_METADATA},
        {"not an object", "[1, 2]", SHARD_ERR_INVALID_METADATA},
        {"not UTF-8", "{\"a\": \"\xff\xfe\"}", SHARD_ERR_INVALID_ARGUMENT},
        {"zarr_format 2", "{\"zarr_format\": 2, \"shape\": [4]}", SHARD_ERR_INVALID_METADATA},
        {"not sharded", HEAD "\"codecs\": [" BYTES_LE "]}", SHARD_ERR_INVALID_METADATA},
        {"no fill_value",
         "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [32, 32], \"data_type\": "
         "\"uint16\", \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
         "[16, 16]}}, \"chunk_key_encoding\": {\"name\": \"default\"}, \"codecs\": [" SHARDING(
             "[4, 4]", "[" BYTES_LE "]", "[" BYTES_LE "]") "]}",
         SHARD_ERR_INVALID_METADATA},
        {"inner chunks do not divide the shard",
         HEAD "\"codecs\": [" SHARDING("[5, 4]", "[" BYTES_LE "]", "[" BYTES_LE "]") "]}",
         SHARD_ERR_INVALID_METADATA},
        {"inner chunk rank",
         HEAD "\"codecs\": [" SHARDING("[4]", "[" BYTES_LE "]", "[" BYTES_LE "]") "]}",
         SHARD_ERR_INVALID_METADATA},
        {"compressed index",
         HEAD "\"codecs\": [" SHARDING("[4, 4]", "[" BYTES_LE "]", "[" BYTES_LE ", " ZSTD1 "]") "]}",
         SHARD_ERR_INVALID_METADATA},
        {"no index codecs",
         HEAD "\"codecs\": [" SHARDING("[4, 4]", "[" BYTES_LE "]", "[]") "]}",
         SHARD_ERR_INVALID_METADATA},
        {"unknown inner codec",
         HEAD "\"codecs\": [" SHARDING("[4, 4]", "[" BYTES_LE ", {\"name\": \"nosuch\"}]",
                                       "[" BYTES_LE "]") "]}",
         SHARD_ERR_UNSUPPORTED_CODEC},
        {"a bytes-to-bytes codec after sharding",
         HEAD "\"codecs\": [" SHARDING("[4, 4]", "[" BYTES_LE "]", "[" BYTES_LE "]")
              ", {\"name\": \"gzip\", \"configuration\": {\"level\": 1}}]}",
         SHARD_ERR_UNSUPPORTED_CODEC},
    };
    size_t k;
    for (k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        shard_codec *c = (shard_codec *)&g_passed;
        size_t n = 0;
        shard_status st = shard_codec_from_zarr_json(cases[k].json, strlen(cases[k].json), &c);
        if (st != cases[k].want) {
            char msg[200];
            snprintf(msg, sizeof msg, "case \"%s\": status %d, expected %d", cases[k].name, (int)st,
                     (int)cases[k].want);
            check_failed(__LINE__, msg);
        }
        CHECK(c == (shard_codec *)&g_passed); /* not written on failure */
        CHECK(shard_last_error(NULL, 0, &n) == SHARD_OK && n > 0);
        CHECK(shard_last_io_code() == 0);
        if (st == SHARD_OK) shard_codec_free(c);
    }
    /* A length shorter than the text: only `json_len` bytes are read. */
    {
        shard_codec *c = NULL;
        EXPECT(shard_codec_from_zarr_json(ZARR_JSON, 40, &c), SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_zarr_json(NULL, 0, &c), SHARD_ERR_INVALID_METADATA);
    }
    /* shard_codec_from_config */
    {
        shard_codec *c = NULL;
        const uint64_t s3[3] = {16, 16, 16}, s17[2] = {17, 16};
        const size_t L = strlen(CFG_ZSTD_END);
        EXPECT(shard_codec_from_config("{", 1, "uint16", 6, SHARD_SHAPE, 2, "0", 1, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint17", 6, SHARD_SHAPE, 2, "0", 1, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, SHARD_SHAPE, 2, "\"abc\"", 5,
                                       &c), SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, SHARD_SHAPE, 2, "70000", 5,
                                       &c), SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, SHARD_SHAPE, 2, "zz", 2, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, s3, 3, "0", 1, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, s17, 2, "0", 1, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "uint16", 6, NULL, 0, "0", 1, &c),
               SHARD_ERR_INVALID_METADATA);
        EXPECT(shard_codec_from_config(CFG_ZSTD_END, L, "\xff", 1, SHARD_SHAPE, 2, "0", 1, &c),
               SHARD_ERR_INVALID_ARGUMENT);
        CHECK(c == NULL);
    }
#undef HEAD
#undef SHARDING
}

static void test_codec_getters(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END), *a = NULL;
    uint64_t shape[3] = {0, 0, 0}, u = 0, coords[2];
    size_t n = 0, rank = 0;
    char text[16];
    EXPECT(shard_codec_rank(c, &rank), SHARD_OK);
    CHECK(rank == 2);
    EXPECT(shard_codec_shard_shape(c, shape, 2), SHARD_OK);
    CHECK(shape[0] == 16 && shape[1] == 16);
    EXPECT(shard_codec_inner_chunk_shape(c, shape, 2), SHARD_OK);
    CHECK(shape[0] == 4 && shape[1] == 4);
    EXPECT(shard_codec_chunks_per_shard(c, shape, 2), SHARD_OK);
    CHECK(shape[0] == PER && shape[1] == PER);
    EXPECT(shard_codec_num_chunks(c, &u), SHARD_OK);
    CHECK(u == NCHUNKS);
    EXPECT(shard_codec_inner_chunk_nbytes(c, &n), SHARD_OK);
    CHECK(n == CHUNK_NBYTES);
    EXPECT(shard_codec_index_nbytes(c, &u), SHARD_OK);
    CHECK(u == INDEX_NBYTES);
    EXPECT(shard_codec_element_nbytes(c, &n), SHARD_OK);
    CHECK(n == 2);
    EXPECT(shard_codec_data_type(c, NULL, 0, &n), SHARD_OK);
    CHECK(n == 6);
    EXPECT(shard_codec_data_type(c, text, sizeof text, &n), SHARD_OK);
    CHECK(n == 6 && strcmp(text, "uint16") == 0);
    /* Wrong ranks are wrong buffer sizes. */
    EXPECT(shard_codec_shard_shape(c, shape, 1), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_codec_shard_shape(c, shape, 3), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_codec_inner_chunk_shape(c, shape, 3), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_codec_chunks_per_shard(c, shape, 1), SHARD_ERR_BUFFER_SIZE);
    /* A codec from a bare configuration knows no array. */
    EXPECT(shard_codec_array_shape(c, shape, 2), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_codec_grid_shape(c, shape, 2), SHARD_ERR_INVALID_STATE);
    coords[0] = coords[1] = 0;
    EXPECT(shard_codec_shard_key(c, coords, 2, text, sizeof text, &n), SHARD_ERR_INVALID_STATE);

    EXPECT(shard_codec_from_zarr_json(ZARR_JSON, strlen(ZARR_JSON), &a), SHARD_OK);
    EXPECT(shard_codec_array_shape(a, shape, 2), SHARD_OK);
    CHECK(shape[0] == 40 && shape[1] == 32);
    EXPECT(shard_codec_grid_shape(a, shape, 2), SHARD_OK);
    CHECK(shape[0] == 3 && shape[1] == 2);
    EXPECT(shard_codec_array_shape(a, shape, 3), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_codec_index_nbytes(a, &u), SHARD_OK);
    CHECK(u == INDEX_NBYTES);
    coords[0] = 2;
    coords[1] = 1;
    EXPECT(shard_codec_shard_key(a, coords, 2, NULL, 0, &n), SHARD_OK);
    CHECK(n == 5);
    EXPECT(shard_codec_shard_key(a, coords, 2, text, sizeof text, &n), SHARD_OK);
    CHECK(n == 5 && strcmp(text, "c/2/1") == 0);
    EXPECT(shard_codec_shard_key(a, coords, 2, text, 5, &n), SHARD_ERR_BUFFER_SIZE); /* no NUL room */
    EXPECT(shard_codec_shard_key(a, coords, 2, text, 6, &n), SHARD_OK);
    coords[0] = 3;
    EXPECT(shard_codec_shard_key(a, coords, 2, text, sizeof text, &n), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_codec_shard_key(a, coords, 1, text, sizeof text, &n), SHARD_ERR_INVALID_ARGUMENT);
    shard_codec_free(a);
    shard_codec_free(c);
}

static void test_wrong_buffer_sizes(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *m = written_shard(c, 1, NULL), *mw = mem_io_new(NULL, 0);
    shard_handle *r = open_read(c, m), *w = NULL;
    shard_io_callbacks io;
    uint8_t buf[CHUNK_NBYTES * 3];
    uint64_t coords[4] = {0, 0, 0, 1};
    size_t n = 0;
    memset(buf, 7, sizeof buf);
    mem_io_callbacks(mw, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_BUFFERED, &w), SHARD_OK);

    EXPECT(shard_read_chunk(r, coords, 2, buf, CHUNK_NBYTES - 1), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_read_chunk(r, coords, 2, buf, CHUNK_NBYTES + 1), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_read_chunk(r, coords, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_read_chunks(r, coords, 2, 2, buf, CHUNK_NBYTES), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_read_chunks(r, coords, 2, 2, buf, 3 * CHUNK_NBYTES), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_read_chunk_raw(r, coords, 2, NULL, 0, &n), SHARD_OK);
    CHECK(n > 1);
    EXPECT(shard_read_chunk_raw(r, coords, 2, buf, n - 1, &n), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_write_chunk(w, coords, 2, buf, CHUNK_NBYTES - 1), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_write_chunk(w, coords, 2, buf, CHUNK_NBYTES + 1), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_write_chunk(w, coords, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE);
    /* Nothing was stored by the refused calls. */
    EXPECT(shard_finalize(w, NULL), SHARD_OK);
    CHECK(!mem_io_exists(mw));
    shard_close(r);
    shard_close(w);
    mem_io_release(m);
    mem_io_release(mw);
    shard_codec_free(c);
}

static void test_bad_arguments(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *m = written_shard(c, 1, NULL);
    shard_io_callbacks io;
    shard_handle *h = NULL, *r;
    uint8_t buf[CHUNK_NBYTES];
    uint64_t far[2] = {PER, 0}, three[3] = {0, 0, 0};
    shard_chunk_location loc;
    size_t n;

    /* Refused opens leave userdata with the host: destroy is not called. */
    mem_io_reset_counters(m);
    mem_io_callbacks(m, &io);
    EXPECT(shard_open(c, &io, 5, &h), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_open(c, &io, 0xFFFFFFFFu, &h), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_open_ex(c, &io, SHARD_MODE_READ, 4, &h), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_open_ex(c, &io, SHARD_MODE_WRITE_BUFFERED, 0x80000000u, &h),
           SHARD_ERR_INVALID_ARGUMENT);
    io.version = 0;
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_ERR_INVALID_ARGUMENT);
    io.version = SHARD_IO_VERSION;
    io.read = NULL;
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_STREAMING, &h), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(h == NULL);
    CHECK(mem_io_refs(m) == 2); /* ours and the table's: no destroy */
    CHECK(mem_io_calls(m, MEM_IO_ANY) == 0);
    io.destroy(io.userdata);

    /* A table from a newer header (a higher version) is accepted. */
    mem_io_callbacks(m, &io);
    io.version = SHARD_IO_VERSION + 1;
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_OK);
    shard_close(h);

    /* The version-3 new-object callbacks go together: some but not all is refused. */
    mem_io_new_object_callbacks(m, &io);
    io.discard_new = NULL;
    h = NULL;
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_BUFFERED, &h), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(h == NULL);
    CHECK(last_error_contains("go together"));
    CHECK(mem_io_refs(m) == 2); /* no destroy */
    io.destroy(io.userdata);

    /* Thread counts past SHARD_MAX_THREADS are refused, the setting unchanged. */
    EXPECT(shard_set_threads(1), SHARD_OK);
    EXPECT(shard_set_threads(SHARD_MAX_THREADS + 1), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(last_error_contains("at most 1024"));
    EXPECT(shard_set_threads((size_t)-1), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_get_threads(&n), SHARD_OK);
    CHECK(n == 1);
    EXPECT(shard_set_threads(0), SHARD_OK);

    r = open_read(c, m);
    EXPECT(shard_read_chunk(r, far, 2, buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(last_error_contains("outside"));
    EXPECT(shard_read_chunk(r, three, 3, buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_read_chunk(r, three, 1, buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_read_chunk(r, NULL, 0, buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_read_chunks(r, far, 1, 2, buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_read_chunk_raw(r, far, 2, NULL, 0, &n), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_chunk_info(r, far, 2, &loc), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_chunk_info(r, three, 3, &loc), SHARD_ERR_INVALID_ARGUMENT);
    shard_close(r);
    CHECK(mem_io_refs(m) == 1);
    mem_io_release(m);
    shard_codec_free(c);
}

static void test_invalid_state(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *m = written_shard(c, 1, NULL), *mw = mem_io_new(NULL, 0);
    shard_handle *r = open_read(c, m), *w = NULL;
    shard_io_callbacks io;
    uint16_t buf[CHUNK_ELEMS];
    uint64_t cc[2] = {1, 1}, size = 0;
    size_t n;
    shard_chunk_location loc;
    uint8_t raw[64];

    mem_io_callbacks(mw, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_STREAMING, &w), SHARD_OK);
    pattern(5, 3, buf);

    /* reads on a write handle */
    EXPECT(shard_read_chunk(w, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_read_chunks(w, cc, 1, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_read_chunk_raw(w, cc, 2, NULL, 0, &n), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_read_chunk_raw(w, cc, 2, raw, sizeof raw, &n), SHARD_ERR_INVALID_STATE);
    /* writes on a read handle */
    EXPECT(shard_write_chunk(r, cc, 2, (const uint8_t *)buf, sizeof buf), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_write_chunk_raw(r, cc, 2, raw, 8), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_erase_chunk(r, cc, 2), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_finalize(r, &size), SHARD_ERR_INVALID_STATE);
    CHECK(last_error_contains("reading"));

    /* chunk_info works on both */
    EXPECT(shard_chunk_info(w, cc, 2, &loc), SHARD_OK);
    CHECK(loc.empty && loc.nbytes == 0);
    EXPECT(shard_write_chunk(w, cc, 2, (const uint8_t *)buf, sizeof buf), SHARD_OK);
    EXPECT(shard_chunk_info(w, cc, 2, &loc), SHARD_OK);
    CHECK(!loc.empty && loc.nbytes > 0 && loc.offset == 0); /* streaming: written at 0 */

    /* after finalize */
    EXPECT(shard_finalize(w, &size), SHARD_OK);
    CHECK(size == loc.nbytes + INDEX_NBYTES && size == mem_io_size(mw));
    mem_io_reset_counters(mw);
    EXPECT(shard_finalize(w, &size), SHARD_ERR_INVALID_STATE);
    CHECK(last_error_contains("finalized"));
    EXPECT(shard_write_chunk(w, cc, 2, (const uint8_t *)buf, sizeof buf), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_write_chunk_raw(w, cc, 2, raw, 8), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_erase_chunk(w, cc, 2), SHARD_ERR_INVALID_STATE);
    CHECK(mem_io_calls(mw, MEM_IO_ANY) == 0);
    CHECK(shard_last_io_code() == 0);

    shard_close(r);
    shard_close(w);
    mem_io_release(m);
    mem_io_release(mw);
    shard_codec_free(c);
}

/* Optional callbacks missing where a call needs them. */
static void test_unsupported(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *m = written_shard(c, 1, NULL);
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t buf[CHUNK_ELEMS];
    uint64_t cc[2] = {0, 0};
    unsigned model[NCHUNKS] = {0};

    /* A write handle without `write`. */
    mem_io_callbacks(m, &io);
    io.write = NULL;
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_STREAMING, &h), SHARD_OK);
    pattern(0, 1, buf);
    EXPECT(shard_write_chunk(h, cc, 2, (const uint8_t *)buf, sizeof buf), SHARD_ERR_UNSUPPORTED);
    shard_close(h);

    /* An existing shard that becomes empty, without `remove`. */
    mem_io_callbacks(m, &io);
    io.remove = NULL;
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_BUFFERED, &h), SHARD_OK);
    EXPECT(shard_finalize(h, NULL), SHARD_ERR_UNSUPPORTED);
    shard_close(h);
    CHECK(mem_io_exists(m));

    /* Index at the end needs read_suffix or size. */
    mem_io_callbacks(m, &io);
    io.read_suffix = NULL;
    io.size = NULL;
    h = NULL;
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_ERR_UNSUPPORTED);
    CHECK(h == NULL);
    io.destroy(io.userdata);

    /* Without read_suffix, size + read do it; the data still reads back. */
    mem_io_callbacks(m, &io);
    io.read_suffix = NULL;
    mem_io_reset_counters(m);
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_OK);
    CHECK(mem_io_calls(m, MEM_IO_SIZE) == 1 && mem_io_calls(m, MEM_IO_READ) == 1);
    shard_close(h);
    {
        op ops[NCHUNKS + 1];
        size_t n = full_plan(1, ops), k;
        for (k = 0; k < n; k++) model[ops[k].i] = ops[k].erase ? 0 : ops[k].seed;
        CHECK(verify(c, m, model));
    }
    CHECK(mem_io_refs(m) == 1);
    mem_io_release(m);
    shard_codec_free(c);
}

/* Morton code of inner chunk (c0, c1) in a 4x4 grid: dimension 0 takes the low bit. */
static unsigned morton(uint64_t c0, uint64_t c1) {
    unsigned z = 0, b;
    for (b = 0; b < 2; b++) z |= (unsigned)(((c0 >> b) & 1) << (2 * b) | ((c1 >> b) & 1) << (2 * b + 1));
    return z;
}

/* Write with every mode (updates start from an existing shard), plain and Morton; read back. */
static void test_round_trip_every_mode(void) {
    const char *cfgs[2];
    size_t ci;
    cfgs[0] = CFG_ZSTD_END;
    cfgs[1] = CFG_RAW_START;
    for (ci = 0; ci < 2; ci++) {
        shard_codec *c = codec_from(cfgs[ci]);
        uint32_t mode, flags;
        for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++) {
            for (flags = 0; flags <= SHARD_FLAG_MORTON_ORDER; flags++) {
                unsigned model[NCHUNKS] = {0};
                op ops[NCHUNKS + 1];
                size_t n;
                uint64_t size = 0, before = 0;
                mem_io *m;
                if (mode >= SHARD_MODE_UPDATE_APPEND) {
                    /* Start from a complete shard, then replace even chunks, erase chunk 1,
                     * store chunk 3 (fill before), and turn chunk 4 to fill values. */
                    m = written_shard(c, 1, model);
                    before = mem_io_size(m);
                    n = 0;
                    ops[n].i = 0, ops[n].seed = 2, ops[n++].erase = 0;
                    ops[n].i = 2, ops[n].seed = 2, ops[n++].erase = 0;
                    ops[n].i = 1, ops[n].seed = 0, ops[n++].erase = 1;
                    ops[n].i = 3, ops[n].seed = 2, ops[n++].erase = 0;
                    ops[n].i = 4, ops[n].seed = 0, ops[n++].erase = 0;
                    ops[n].i = 14, ops[n].seed = 3, ops[n++].erase = 0;
                } else {
                    m = mem_io_new(NULL, 0);
                    n = full_plan(1 + mode, ops);
                }
                {
                    uint8_t *old = (uint8_t *)malloc(before + 1);
                    mem_io_copy(m, old, before);
                    EXPECT(apply(c, m, mode, flags, ops, n, model, &size), SHARD_OK);
                    CHECK(size == mem_io_size(m) && size > INDEX_NBYTES);
                    if (mode == SHARD_MODE_UPDATE_APPEND) {
                        /* Nothing overwritten: the old object is a prefix of the new (after
                         * the index, when the index is at the start and must be rewritten). */
                        uint8_t *now = (uint8_t *)malloc(size);
                        size_t from = ci == 1 ? INDEX_NBYTES : 0;
                        mem_io_copy(m, now, size);
                        CHECK(size > before && memcmp(old + from, now + from, before - from) == 0);
                        free(now);
                    }
                    if (mode == SHARD_MODE_UPDATE_IN_PLACE && ci == 1) {
                        /* Fixed-size chunks rewritten in place, one new chunk (3) appended
                         * and the index rewritten at the start: the object grew by one chunk. */
                        CHECK(size == before + CHUNK_NBYTES);
                    }
                    free(old);
                }
                CHECK(verify(c, m, model));
                if (mode == SHARD_MODE_WRITE_BUFFERED) {
                    /* Stored chunks are laid out in C or Morton order. */
                    shard_handle *r = open_read(c, m);
                    uint64_t i, j, ci2[2], cj[2];
                    int ordered = 1;
                    for (i = 0; r != NULL && i < NCHUNKS; i++) {
                        for (j = 0; j < NCHUNKS; j++) {
                            shard_chunk_location li, lj;
                            unsigned ki, kj;
                            coords_of(i, ci2);
                            coords_of(j, cj);
                            if (shard_chunk_info(r, ci2, 2, &li) != SHARD_OK ||
                                shard_chunk_info(r, cj, 2, &lj) != SHARD_OK) {
                                ordered = 0;
                                continue;
                            }
                            if (li.empty || lj.empty) continue;
                            ki = flags ? morton(ci2[0], ci2[1]) : (unsigned)i;
                            kj = flags ? morton(cj[0], cj[1]) : (unsigned)j;
                            if ((ki < kj) != (li.offset < lj.offset)) ordered = 0;
                        }
                    }
                    CHECK(ordered);
                    shard_close(r);
                }
                CHECK(mem_io_refs(m) == 1);
                mem_io_release(m);
            }
        }
        shard_codec_free(c);
    }
}

/* Update modes on a missing object start a new shard. */
static void test_update_new_object(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    uint32_t mode;
    for (mode = SHARD_MODE_UPDATE_APPEND; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++) {
        unsigned model[NCHUNKS] = {0};
        op ops[NCHUNKS + 1];
        size_t n = full_plan(9, ops);
        mem_io *m = mem_io_new(NULL, 0);
        EXPECT(apply(c, m, mode, 0, ops, n, model, NULL), SHARD_OK);
        CHECK(verify(c, m, model));
        mem_io_release(m);
    }
    shard_codec_free(c);
}

/* Nothing stored: finalize removes the object (and an existing one), size 0. */
static void test_finalize_removes_empty_shard(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    uint32_t mode;
    for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++) {
        unsigned model[NCHUNKS] = {0};
        op ops[NCHUNKS];
        uint64_t i, size = 99;
        mem_io *m = written_shard(c, 1, model);
        for (i = 0; i < NCHUNKS; i++) {
            ops[i].i = i;
            ops[i].seed = 0;
            ops[i].erase = (int)(i % 2);
        }
        mem_io_reset_counters(m);
        EXPECT(apply(c, m, mode, 0, ops, NCHUNKS, model, &size), SHARD_OK);
        CHECK(size == 0 && !mem_io_exists(m));
        CHECK(mem_io_calls(m, MEM_IO_REMOVE) == 1);
        CHECK(verify(c, m, model)); /* a missing object reads as fill value */
        mem_io_release(m);
    }
    /* With SHARD_FLAG_STORE_FILL_CHUNKS fill chunks are stored. */
    {
        unsigned model[NCHUNKS] = {0};
        op ops[NCHUNKS];
        uint64_t i, size = 0;
        mem_io *m = mem_io_new(NULL, 0);
        shard_handle *r;
        for (i = 0; i < NCHUNKS; i++) ops[i].i = i, ops[i].seed = 0, ops[i].erase = 0;
        EXPECT(apply(c, m, SHARD_MODE_WRITE_STREAMING, SHARD_FLAG_STORE_FILL_CHUNKS, ops, NCHUNKS,
                     model, &size), SHARD_OK);
        CHECK(size > INDEX_NBYTES && mem_io_exists(m));
        r = open_read(c, m);
        for (i = 0; r != NULL && i < NCHUNKS; i++) {
            uint64_t cc[2];
            shard_chunk_location loc;
            coords_of(i, cc);
            EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
            CHECK(!loc.empty);
        }
        shard_close(r);
        mem_io_release(m);
    }
    shard_codec_free(c);
}

/* A missing object: every chunk is fill value, no chunk read. */
static void test_missing_object(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *m = mem_io_new(NULL, 0);
    shard_handle *r = open_read(c, m);
    uint16_t buf[CHUNK_ELEMS];
    uint64_t cc[2] = {2, 3};
    size_t n = 99;
    shard_chunk_location loc;
    CHECK(mem_io_reads(m) == 1);
    memset(buf, 0xAB, sizeof buf);
    EXPECT(shard_read_chunk(r, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK);
    CHECK(buf[0] == 0 && buf[CHUNK_ELEMS - 1] == 0);
    EXPECT(shard_read_chunk_raw(r, cc, 2, NULL, 0, &n), SHARD_OK);
    CHECK(n == 0);
    EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
    CHECK(loc.empty && loc.nbytes == 0);
    CHECK(mem_io_reads(m) == 1);
    shard_close(r);
    mem_io_release(m);
    shard_codec_free(c);
}

/* Damaged objects: the right status, never a crash. */
static void test_corrupt_objects(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    mem_io *m = written_shard(c, 1, model);
    size_t size = mem_io_size(m);
    uint8_t *good = (uint8_t *)malloc(size), *bad = (uint8_t *)malloc(size);
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t buf[CHUNK_ELEMS];
    uint64_t cc[2] = {0, 0};
    shard_chunk_location loc;

    mem_io_copy(m, good, size);
    /* A flipped bit in the index: its crc32c fails at open. */
    memcpy(bad, good, size);
    bad[size - INDEX_NBYTES + 3] ^= 1;
    mem_io_set(m, bad, size);
    mem_io_callbacks(m, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_ERR_CHECKSUM);
    io.destroy(io.userdata);
    /* Too short to hold the index. */
    mem_io_set(m, good, INDEX_NBYTES - 1);
    mem_io_callbacks(m, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_ERR_CORRUPT);
    io.destroy(io.userdata);
    /* Cut in the middle of the chunks: the index points past the end. */
    memcpy(bad, good + (size - INDEX_NBYTES), INDEX_NBYTES);
    mem_io_set(m, bad, INDEX_NBYTES);
    mem_io_callbacks(m, &io);
    {
        shard_status st = shard_open(c, &io, SHARD_MODE_READ, &h);
        if (st == SHARD_OK) {
            EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_CORRUPT);
            shard_close(h);
        } else {
            EXPECT(st, SHARD_ERR_CORRUPT); /* refused at open is fine too */
            io.destroy(io.userdata);
        }
    }
    /* Damaged chunk bytes: zstd refuses them. */
    memcpy(bad, good, size);
    mem_io_set(m, good, size);
    h = open_read(c, m);
    if (h != NULL) {
        EXPECT(shard_chunk_info(h, cc, 2, &loc), SHARD_OK);
        shard_close(h);
        memset(bad + loc.offset, 0x5A, (size_t)loc.nbytes);
        mem_io_set(m, bad, size);
        h = open_read(c, m);
        EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_CORRUPT);
        CHECK(shard_last_io_code() == 0);
        cc[1] = 1; /* the others are fine */
        EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK);
        shard_close(h);
    }
    free(good);
    free(bad);
    mem_io_release(m);
    shard_codec_free(c);
}

static void test_read_chunks(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    mem_io *m = written_shard(c, 4, model);
    shard_handle *r = open_read(c, m);
    uint16_t all[NCHUNKS * CHUNK_ELEMS], one[CHUNK_ELEMS];
    uint64_t coords[NCHUNKS * 2], i;
    for (i = 0; i < NCHUNKS; i++) coords_of(NCHUNKS - 1 - i, coords + 2 * i); /* reversed */
    mem_io_reset_counters(m);
    EXPECT(shard_read_chunks(r, coords, NCHUNKS, 2, (uint8_t *)all, sizeof all), SHARD_OK);
    {
        uint64_t stored = 0;
        for (i = 0; i < NCHUNKS; i++) stored += model[i] != 0;
        /* The stored chunks lie back to back: their ranges coalesce into one read. */
        CHECK(mem_io_reads(m) == (stored > 0 ? 1u : 0u));
    }
    for (i = 0; i < NCHUNKS; i++) {
        pattern(NCHUNKS - 1 - i, model[NCHUNKS - 1 - i], one);
        CHECK(memcmp(all + i * CHUNK_ELEMS, one, sizeof one) == 0);
    }
    EXPECT(shard_read_chunks(r, coords, 0, 2, NULL, 0), SHARD_OK);
    EXPECT(shard_read_chunks(r, coords, 1, 2, (uint8_t *)one, sizeof one), SHARD_OK);
    shard_close(r);
    mem_io_release(m);
    shard_codec_free(c);
}

/* Copy encoded chunks to another shard without recompressing. */
static void test_raw_copy(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    mem_io *src = written_shard(c, 5, model), *dst = mem_io_new(NULL, 0);
    shard_handle *r = open_read(c, src), *w = NULL;
    shard_io_callbacks io;
    uint64_t i, cc[2];
    uint8_t raw[256];
    mem_io_callbacks(dst, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_STREAMING, &w), SHARD_OK);
    for (i = 0; r != NULL && w != NULL && i < NCHUNKS; i++) {
        size_t need = 99, got = 0;
        shard_chunk_location loc;
        coords_of(i, cc);
        mem_io_reset_counters(src);
        EXPECT(shard_read_chunk_raw(r, cc, 2, NULL, 0, &need), SHARD_OK); /* size query */
        CHECK(mem_io_reads(src) == 0);
        EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
        CHECK(need == loc.nbytes && need <= sizeof raw);
        if (model[i] == 0) {
            CHECK(need == 0 && loc.empty);
            continue;
        }
        CHECK(need > 0);
        memset(raw, 0, sizeof raw);
        EXPECT(shard_read_chunk_raw(r, cc, 2, raw, sizeof raw, &got), SHARD_OK); /* larger: ok */
        CHECK(got == need && mem_io_reads(src) == 1);
        {
            /* The raw bytes are the object's bytes at the chunk's location. */
            uint8_t *obj = (uint8_t *)malloc(mem_io_size(src));
            mem_io_copy(src, obj, mem_io_size(src));
            CHECK(memcmp(obj + loc.offset, raw, got) == 0);
            free(obj);
        }
        EXPECT(shard_read_chunk_raw(r, cc, 2, raw, need, &got), SHARD_OK); /* exact: ok */
        EXPECT(shard_write_chunk_raw(w, cc, 2, raw, got), SHARD_OK);
    }
    EXPECT(shard_finalize(w, NULL), SHARD_OK);
    shard_close(w);
    shard_close(r);
    CHECK(verify(c, dst, model));
    CHECK(mem_io_size(dst) == mem_io_size(src)); /* same chunks, same order, no dead bytes */
    mem_io_release(src);
    mem_io_release(dst);
    shard_codec_free(c);
}

static void test_chunk_info(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    mem_io *m = written_shard(c, 6, model), *mw = mem_io_new(NULL, 0);
    shard_handle *r = open_read(c, m), *w = NULL;
    shard_io_callbacks io;
    uint64_t i, cc[2], end = 0, total = 0;
    uint16_t buf[CHUNK_ELEMS];
    for (i = 0; r != NULL && i < NCHUNKS; i++) {
        shard_chunk_location loc;
        coords_of(i, cc);
        EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
        if (model[i] == 0) {
            CHECK(loc.empty && loc.nbytes == 0);
        } else {
            CHECK(!loc.empty && loc.nbytes > 0);
            CHECK(loc.offset + loc.nbytes <= mem_io_size(m) - INDEX_NBYTES);
            if (loc.offset + loc.nbytes > end) end = loc.offset + loc.nbytes;
            total += loc.nbytes;
        }
    }
    CHECK(end == total && end + INDEX_NBYTES == mem_io_size(m)); /* packed, no dead bytes */
    shard_close(r);
    /* A buffered writer assigns offsets at finalize: 0 until then. */
    mem_io_callbacks(mw, &io);
    EXPECT(shard_open(c, &io, SHARD_MODE_WRITE_BUFFERED, &w), SHARD_OK);
    for (i = 0; w != NULL && i < 3; i++) {
        shard_chunk_location loc;
        coords_of(i, cc);
        pattern(i, 1, buf);
        EXPECT(shard_write_chunk(w, cc, 2, (const uint8_t *)buf, sizeof buf), SHARD_OK);
        EXPECT(shard_chunk_info(w, cc, 2, &loc), SHARD_OK);
        CHECK(!loc.empty && loc.offset == 0 && loc.nbytes > 0);
    }
    CHECK(mem_io_calls(mw, MEM_IO_WRITE) == 0);
    EXPECT(shard_finalize(w, NULL), SHARD_OK);
    CHECK(mem_io_calls(mw, MEM_IO_WRITE) == 1); /* the whole shard at once */
    shard_close(w);
    mem_io_release(m);
    mem_io_release(mw);
    shard_codec_free(c);
}

/* Storage requests: open = 1 (the index), cold chunk = 1 more, warm = 1, empty = 0. */
static void test_read_call_counts(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    mem_io *m = written_shard(c, 7, model);
    shard_handle *r;
    uint16_t buf[CHUNK_ELEMS], want[CHUNK_ELEMS];
    uint64_t cc[2] = {0, 0}, empty_cc[2];
    size_t raw_n;
    shard_chunk_location loc;
    CHECK(model[0] != 0 && model[1] != 0 && model[3] == 0);
    coords_of(3, empty_cc);
    mem_io_reset_counters(m);
    r = open_read(c, m);
    CHECK(mem_io_reads(m) == 1 && mem_io_calls(m, MEM_IO_READ_SUFFIX) == 1);
    CHECK(mem_io_bytes_read(m) == INDEX_NBYTES);
    EXPECT(shard_read_chunk(r, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK);
    EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
    CHECK(mem_io_reads(m) == 2); /* cold: index + chunk */
    CHECK(mem_io_bytes_read(m) == INDEX_NBYTES + loc.nbytes);
    CHECK(mem_io_calls(m, MEM_IO_SIZE) == 0);
    pattern(0, model[0], want);
    CHECK(memcmp(buf, want, sizeof buf) == 0);
    mem_io_reset_counters(m);
    cc[1] = 1;
    EXPECT(shard_read_chunk(r, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK);
    EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
    CHECK(mem_io_reads(m) == 1 && mem_io_bytes_read(m) == loc.nbytes); /* warm: exactly it */
    mem_io_reset_counters(m);
    EXPECT(shard_read_chunk(r, empty_cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK);
    EXPECT(shard_read_chunk_raw(r, cc, 2, NULL, 0, &raw_n), SHARD_OK);
    EXPECT(shard_chunk_info(r, cc, 2, &loc), SHARD_OK);
    CHECK(mem_io_calls(m, MEM_IO_ANY) == 0); /* empty chunk, size query, info: no I/O */
    shard_close(r);
    mem_io_release(m);
    shard_codec_free(c);
}

static void test_last_error_buffer(void) {
    char full[512], small[5];
    size_t n = 0, len = 0, w = 0;
    shard_codec *c = NULL;
    EXPECT(shard_codec_from_zarr_json("{nope", 5, &c), SHARD_ERR_INVALID_METADATA);
    EXPECT(shard_last_error(NULL, 0, &len), SHARD_OK); /* size query */
    CHECK(len > 10 && len < sizeof full);
    EXPECT(shard_last_error(full, sizeof full, &n), SHARD_OK);
    CHECK(n == len && strlen(full) == len);
    CHECK(strstr(full, "JSON") != NULL || strstr(full, "json") != NULL);
    memset(small, 'X', sizeof small);
    EXPECT(shard_last_error(small, sizeof small, &w), SHARD_OK);
    CHECK(w == sizeof small - 1 && small[w] == '\0' && memcmp(small, full, w) == 0);
    EXPECT(shard_last_error(full, len + 1, &w), SHARD_OK); /* exactly enough */
    CHECK(w == len && full[len] == '\0');
    EXPECT(shard_last_error(full, len, &w), SHARD_OK); /* one short: truncated by one */
    CHECK(w == len - 1 && full[len - 1] == '\0');
    EXPECT(shard_last_error(full, 1, &w), SHARD_OK);
    CHECK(w == 0 && full[0] == '\0');
    /* Reading the message does not change it; a later success does not clear it. */
    {
        size_t again = 0, rank = 0;
        shard_codec *ok = codec_from(CFG_ZSTD_END);
        EXPECT(shard_codec_rank(ok, &rank), SHARD_OK);
        EXPECT(shard_last_error(NULL, 0, &again), SHARD_OK);
        CHECK(again == len);
        shard_codec_free(ok);
    }
}

/* ---- I/O failures at every callback ------------------------------------------------- */

/* Run `job` once to count its callbacks, then again failing each one in turn with a distinct
 * code: the first non-OK status must be SHARD_ERR_IO carrying that code, the fault must have
 * fired once, and the handle must have released the back end. */
typedef shard_status (*job_fn)(const shard_codec *c, mem_io *m, const void *arg);

static void sweep(const char *what, const shard_codec *c, const uint8_t *initial,
                  size_t initial_len, job_fn job, const void *arg, int32_t code_base) {
    mem_io *m = mem_io_new(initial, initial_len);
    uint64_t total, k;
    char msg[200];
    EXPECT(job(c, m, arg), SHARD_OK);
    total = mem_io_calls(m, MEM_IO_ANY);
    mem_io_release(m);
    if (total == 0) {
        snprintf(msg, sizeof msg, "%s: no callbacks to fail", what);
        check_failed(__LINE__, msg);
    }
    for (k = 1; k <= total + 1; k++) {
        int32_t code = code_base + (int32_t)k;
        shard_status st;
        m = mem_io_new(initial, initial_len);
        mem_io_fail(m, MEM_IO_ANY, k, code);
        st = job(c, m, arg);
        if (k <= total && (st != SHARD_ERR_IO || shard_last_io_code() != code ||
                           mem_io_faults_fired(m) != 1)) {
            snprintf(msg, sizeof msg,
                     "%s: failing call %lu of %lu with %d gave status %d, io code %d, fired %d",
                     what, (unsigned long)k, (unsigned long)total, (int)code, (int)st,
                     (int)shard_last_io_code(), mem_io_faults_fired(m));
            check_failed(__LINE__, msg);
        }
        if (k == total + 1 && st != SHARD_OK) {
            snprintf(msg, sizeof msg, "%s: past the last call: status %d", what, (int)st);
            check_failed(__LINE__, msg);
        }
        if (mem_io_refs(m) != 1) {
            snprintf(msg, sizeof msg, "%s: call %lu: back end not released (%d refs)", what,
                     (unsigned long)k, mem_io_refs(m));
            check_failed(__LINE__, msg);
        }
        mem_io_release(m);
    }
    printf("    %s: each of %lu callbacks failed in turn\n", what, (unsigned long)total);
}

typedef struct {
    uint32_t mode, flags;
} write_job;

static shard_status job_write(const shard_codec *c, mem_io *m, const void *arg) {
    const write_job *j = (const write_job *)arg;
    op ops[NCHUNKS + 1];
    size_t n = full_plan(11, ops);
    return apply(c, m, j->mode, j->flags, ops, n, NULL, NULL);
}

typedef struct {
    int no_suffix; /* clear read_suffix: the index costs size + read */
} read_job;

static shard_status job_read(const shard_codec *c, mem_io *m, const void *arg) {
    const read_job *j = (const read_job *)arg;
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t buf[CHUNK_ELEMS];
    uint8_t raw[256];
    uint64_t i, cc[2], all[4] = {0, 1, 1, 0};
    size_t n;
    shard_status st;
    mem_io_callbacks(m, &io);
    if (j->no_suffix) io.read_suffix = NULL;
    if ((st = shard_open(c, &io, SHARD_MODE_READ, &h)) != SHARD_OK) {
        io.destroy(io.userdata);
        return st;
    }
    for (i = 0; i < NCHUNKS && st == SHARD_OK; i++) {
        coords_of(i, cc);
        st = shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf);
    }
    if (st == SHARD_OK) st = shard_read_chunk_raw(h, all, 2, raw, sizeof raw, &n);
    if (st == SHARD_OK) st = shard_read_chunks(h, all, 2, 2, raw, 2 * CHUNK_NBYTES);
    shard_close(h);
    return st;
}

static void test_io_failure_every_write_call(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END), *cs = codec_from(CFG_RAW_START);
    mem_io *existing = written_shard(c, 1, NULL), *existing_s = written_shard(cs, 1, NULL);
    size_t len = mem_io_size(existing), len_s = mem_io_size(existing_s);
    uint8_t *bytes = (uint8_t *)malloc(len), *bytes_s = (uint8_t *)malloc(len_s);
    write_job j;
    uint32_t mode;
    char name[64];
    mem_io_copy(existing, bytes, len);
    mem_io_copy(existing_s, bytes_s, len_s);
    for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++) {
        j.mode = mode;
        j.flags = mode == SHARD_MODE_WRITE_BUFFERED ? SHARD_FLAG_MORTON_ORDER : 0;
        snprintf(name, sizeof name, "write mode %u, new object", (unsigned)mode);
        sweep(name, c, NULL, 0, job_write, &j, 1000);
        snprintf(name, sizeof name, "write mode %u, over a shard", (unsigned)mode);
        sweep(name, c, bytes, len, job_write, &j, -1000);
        snprintf(name, sizeof name, "write mode %u, index first", (unsigned)mode);
        sweep(name, cs, bytes_s, len_s, job_write, &j, 5000);
    }
    free(bytes);
    free(bytes_s);
    mem_io_release(existing);
    mem_io_release(existing_s);
    shard_codec_free(c);
    shard_codec_free(cs);
}

static void test_io_failure_every_read_call(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END), *cs = codec_from(CFG_RAW_START);
    mem_io *existing = written_shard(c, 1, NULL), *existing_s = written_shard(cs, 1, NULL);
    size_t len = mem_io_size(existing), len_s = mem_io_size(existing_s);
    uint8_t *bytes = (uint8_t *)malloc(len), *bytes_s = (uint8_t *)malloc(len_s);
    read_job j;
    mem_io_copy(existing, bytes, len);
    mem_io_copy(existing_s, bytes_s, len_s);
    j.no_suffix = 0;
    sweep("read", c, bytes, len, job_read, &j, 2000);
    sweep("read, index first", cs, bytes_s, len_s, job_read, &j, 3000);
    j.no_suffix = 1;
    sweep("read without read_suffix", c, bytes, len, job_read, &j, -2000);
    free(bytes);
    free(bytes_s);
    mem_io_release(existing);
    mem_io_release(existing_s);
    shard_codec_free(c);
    shard_codec_free(cs);
}

/* The host's code comes back exactly, whatever its value; success clears nothing else. */
static void test_io_code_values(void) {
    static const int32_t codes[] = {1, -1, 5, 28, 2147483646, -2147483647 - 1};
    shard_codec *c = codec_from(CFG_ZSTD_END);
    mem_io *src = written_shard(c, 1, NULL);
    size_t len = mem_io_size(src), k;
    uint8_t *bytes = (uint8_t *)malloc(len);
    mem_io_copy(src, bytes, len);
    for (k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        mem_io *m = mem_io_new(bytes, len);
        shard_io_callbacks io;
        shard_handle *h = NULL;
        uint16_t buf[CHUNK_ELEMS];
        uint64_t cc[2] = {0, 0};
        mem_io_callbacks(m, &io);
        EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_OK);
        mem_io_fail(m, MEM_IO_READ, 1, codes[k]);
        EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_IO);
        CHECK(shard_last_io_code() == codes[k]);
        CHECK(last_error_contains("read"));
        EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_OK); /* recovers */
        /* A later non-I/O failure resets the code to 0. */
        cc[0] = 99;
        EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)buf, sizeof buf), SHARD_ERR_INVALID_ARGUMENT);
        CHECK(shard_last_io_code() == 0);
        shard_close(h);
        mem_io_release(m);
    }
    free(bytes);
    mem_io_release(src);
    shard_codec_free(c);
}

/* ---- posix_io ---------------------------------------------------------------------- */

/* Write `seed` (full_plan) or nothing (seed 0: every chunk fill) to PATH with posix_io;
 * commit only when `commit`. */
static shard_status posix_write(const shard_codec *c, const char *path, uint32_t mode,
                                unsigned seed, int commit, int finalize, unsigned *model) {
    shard_io_callbacks io;
    posix_io *ctx = NULL;
    shard_handle *h = NULL;
    uint16_t buf[CHUNK_ELEMS];
    uint64_t i, cc[2];
    shard_status st;
    int err = posix_io_open(path, mode >= SHARD_MODE_UPDATE_APPEND ? POSIX_IO_UPDATE : POSIX_IO_WRITE,
                            &io, &ctx);
    if (err != 0) return SHARD_ERR_IO;
    if ((st = shard_open(c, &io, mode, &h)) != SHARD_OK) {
        posix_io_discard(ctx);
        return st;
    }
    for (i = 0; i < NCHUNKS && st == SHARD_OK; i++) {
        if (mode >= SHARD_MODE_UPDATE_APPEND && i % 2 == 1) continue; /* update: even only */
        coords_of(i, cc);
        pattern(i, i % 5 == 3 ? 0 : seed, buf);
        st = shard_write_chunk(h, cc, 2, (const uint8_t *)buf, sizeof buf);
        if (st == SHARD_OK && model != NULL && commit && finalize)
            model[i] = i % 5 == 3 ? 0 : seed;
    }
    if (st == SHARD_OK && finalize) st = shard_finalize(h, NULL);
    if (st == SHARD_OK && finalize && commit && posix_io_commit(ctx) != 0) st = SHARD_ERR_IO;
    shard_close(h);
    return st;
}

/* Every chunk of the file at PATH reads back as `model` says. */
static int posix_verify(const shard_codec *c, const char *path, const unsigned *model) {
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t got[CHUNK_ELEMS], want[CHUNK_ELEMS];
    uint64_t i, cc[2];
    int ok;
    if (posix_io_open(path, POSIX_IO_READ, &io, NULL) != 0) return 0;
    if (!EXPECT(shard_open(c, &io, SHARD_MODE_READ, &h), SHARD_OK)) {
        io.destroy(io.userdata);
        return 0;
    }
    ok = 1;
    for (i = 0; ok && i < NCHUNKS; i++) {
        coords_of(i, cc);
        ok = EXPECT(shard_read_chunk(h, cc, 2, (uint8_t *)got, sizeof got), SHARD_OK);
        pattern(i, model[i], want);
        ok = ok && memcmp(got, want, sizeof got) == 0;
    }
    shard_close(h);
    return ok;
}

/* Files in DIR other than "." and ".." (the shard and any leftover temporary). */
static int count_files(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (d == NULL) return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static void test_posix_io(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    char dir[] = "/tmp/zarrshard-capi-XXXXXX", path[128], missing[160];
    unsigned model[NCHUNKS] = {0};
    shard_io_callbacks io;
    posix_io *ctx = NULL;
    struct stat st;
    uint32_t mode;
    if (mkdtemp(dir) == NULL) {
        check_failed(__LINE__, "mkdtemp");
        shard_codec_free(c);
        return;
    }
    snprintf(path, sizeof path, "%s/0.0", dir);
    /* A missing file reads as fill value. */
    CHECK(posix_verify(c, path, model));
    /* Written and committed in each mode. */
    for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++) {
        EXPECT(posix_write(c, path, mode, 10 + mode, 1, 1, model), SHARD_OK);
        CHECK(posix_verify(c, path, model));
        CHECK(count_files(dir) == 1); /* no temporary left */
    }
    /* Not committed (finalized or not): the previous shard is intact, the temporary gone. */
    EXPECT(posix_write(c, path, SHARD_MODE_WRITE_STREAMING, 30, 0, 1, model), SHARD_OK);
    EXPECT(posix_write(c, path, SHARD_MODE_WRITE_STREAMING, 31, 1, 0, model), SHARD_OK);
    EXPECT(posix_write(c, path, SHARD_MODE_UPDATE_APPEND, 32, 0, 0, model), SHARD_OK);
    CHECK(posix_verify(c, path, model));
    CHECK(count_files(dir) == 1);
    /* A shard that becomes all fill value: finalize removes, commit deletes PATH. */
    EXPECT(posix_write(c, path, SHARD_MODE_WRITE_STREAMING, 0, 1, 1, model), SHARD_OK);
    CHECK(stat(path, &st) != 0 && errno == ENOENT);
    CHECK(count_files(dir) == 0);
    CHECK(posix_verify(c, path, model));
    /* Commit misuse and open errors. */
    CHECK(posix_io_open(path, POSIX_IO_READ, &io, &ctx) == 0);
    CHECK(posix_io_commit(ctx) == EINVAL);
    posix_io_discard(ctx);
    snprintf(missing, sizeof missing, "%s/no/such/dir/0.0", dir);
    CHECK(posix_io_open(missing, POSIX_IO_WRITE, &io, &ctx) == ENOENT);
    CHECK(posix_io_open(NULL, POSIX_IO_WRITE, &io, &ctx) == EINVAL);
    CHECK(posix_io_open(path, (posix_io_mode)7, &io, &ctx) == EINVAL);
    CHECK(posix_io_open(path, POSIX_IO_WRITE, &io, &ctx) == 0);
    CHECK(count_files(dir) == 1); /* the temporary */
    posix_io_discard(ctx);        /* never opened: the host frees it */
    CHECK(count_files(dir) == 0);
    rmdir(dir);
    shard_codec_free(c);
}

/* The memory kept between calls is freed on request: after a zstd shard is written and
 * read back, at least one compressor and one decompressor are freed (on whichever threads
 * did the work: the calling thread's and the pool's are all reached); a second call right
 * after frees nothing; NULL outputs are allowed; and the next calls rebuild what they need. */
static void test_release_memory(void) {
    shard_codec *c = codec_from(CFG_ZSTD_END);
    unsigned model[NCHUNKS] = {0};
    uint64_t bytes = 1;
    size_t contexts = 0;
    mem_io *m = written_shard(c, 1, model);
    CHECK(verify(c, m, model));
    EXPECT(shard_release_memory(&bytes, &contexts), SHARD_OK);
    CHECK(contexts >= 2);
    EXPECT(shard_release_memory(&bytes, &contexts), SHARD_OK);
    CHECK(bytes == 0 && contexts == 0);
    EXPECT(shard_release_memory(NULL, NULL), SHARD_OK);
    CHECK(verify(c, m, model));
    EXPECT(shard_release_memory(NULL, &contexts), SHARD_OK);
    CHECK(contexts >= 1);
    mem_io_release(m);
    shard_codec_free(c);
}

int main(void) {
    printf("zarrshard %s C API tests\n", shard_version());
    RUN(test_version_and_status_strings);
    RUN(test_null_arguments);
    RUN(test_bad_metadata);
    RUN(test_codec_getters);
    RUN(test_wrong_buffer_sizes);
    RUN(test_bad_arguments);
    RUN(test_invalid_state);
    RUN(test_unsupported);
    RUN(test_round_trip_every_mode);
    RUN(test_update_new_object);
    RUN(test_finalize_removes_empty_shard);
    RUN(test_missing_object);
    RUN(test_corrupt_objects);
    RUN(test_read_chunks);
    RUN(test_raw_copy);
    RUN(test_chunk_info);
    RUN(test_read_call_counts);
    RUN(test_last_error_buffer);
    RUN(test_io_failure_every_write_call);
    RUN(test_io_failure_every_read_call);
    RUN(test_io_code_values);
    RUN(test_posix_io);
    RUN(test_release_memory);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed > 0 ? 1 : 0;
}
