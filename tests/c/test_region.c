/*
 * test_region: the array-level C API (shard_array_*) over a host store.
 *
 * A memory store (one mem_io per key) checks region writes and reads against a model kept
 * here, the storage requests a region costs, every argument error, a failing store, and that
 * a second concurrent writer is refused with SHARD_ERR_BUSY. A read-only directory store
 * (posix_io) reads the zarr-python fixture (bindings/make_fixture.py) region by region, equal
 * to its expected values, when its path is given, and writes its Parquet reference set
 * equal to `zarrshard refs`' files: test_region [FIXTURE_DIR [PARQUET_DIR]]. The directory
 * store of examples-c/posix_io.c (posix_store_open) writes files byte for byte the memory
 * store's objects, and a failing whole-shard rewrite leaves the old file.
 * One line per test, then `N passed, M failed`.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "mem_io.h"
#include "posix_io.h"
#include "check.h"
#include "zarrshard.h"

/* ---- a memory store: key -> mem_io ----------------------------------------------------- */

#define MAX_OBJECTS 64
typedef struct {
    char keys[MAX_OBJECTS][32];
    mem_io *objects[MAX_OBJECTS];
    int count;
    int32_t fail_open; /* non-zero: open_object fails with this code */
    int destroyed;
    /* Busy test: open_object waits here until released. */
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int hold, holding;
    int vectored; /* non-zero: object tables get store_read_vectored */
    int new_objects; /* non-zero: object tables get the version-3 new-object callbacks */
    int opens;    /* open_object calls */
    /* Listing test: list calls, the last prefix, and what list returns after its keys. */
    int list_calls;
    char list_prefix[32];
    int32_t list_code;
} mem_store;

/* read_vectored over the objects' own read (every object's table has the same one). */
static int32_t (*g_object_read)(void *, uint64_t, size_t, uint8_t *, size_t *);
static int g_vectored_calls;
static int32_t store_read_vectored(void *ud, size_t count, const uint64_t *offsets,
                                   const size_t *lens, uint8_t *const *bufs, size_t *outs) {
    size_t k;
    g_vectored_calls++;
    for (k = 0; k < count; k++) {
        int32_t rc = g_object_read(ud, offsets[k], lens[k], bufs[k], &outs[k]);
        if (rc != 0) return rc;
    }
    return 0;
}

static int32_t store_open(void *ud, const char *key, shard_io_callbacks *io) {
    mem_store *s = ud;
    int i;
    pthread_mutex_lock(&s->lock);
    if (s->hold) {
        s->holding = 1;
        pthread_cond_broadcast(&s->cond);
        while (s->hold) pthread_cond_wait(&s->cond, &s->lock);
    }
    s->opens++;
    pthread_mutex_unlock(&s->lock);
    if (s->fail_open) return s->fail_open;
    for (i = 0; i < s->count; i++)
        if (strcmp(s->keys[i], key) == 0) break;
    if (i == s->count) {
        if (s->count == MAX_OBJECTS || strlen(key) >= sizeof s->keys[0]) return 28; /* ENOSPC */
        strcpy(s->keys[i], key);
        s->objects[i] = mem_io_new(NULL, 0);
        s->count++;
    }
    if (s->new_objects)
        mem_io_new_object_callbacks(s->objects[i], io);
    else
        mem_io_callbacks(s->objects[i], io);
    if (s->vectored) {
        g_object_read = io->read;
        io->read_vectored = store_read_vectored;
    }
    return 0;
}

static void store_destroy(void *ud) { ((mem_store *)ud)->destroyed++; }

/* `list`: every object that exists under `prefix`, plus keys that are no shard's (a metadata
 * document, a key that is not UTF-8, one outside the grid); then returns `list_code`. */
static int32_t store_list(void *ud, const char *prefix, shard_key_fn on_key, void *state) {
    static const char *junk[] = {"zarr.json", "c/\xff/0", "c/3/0", "c/0/0/0"};
    mem_store *s = ud;
    int i;
    s->list_calls++;
    snprintf(s->list_prefix, sizeof s->list_prefix, "%s", prefix);
    for (i = 0; i < s->count; i++)
        if (mem_io_exists(s->objects[i]) && strncmp(s->keys[i], prefix, strlen(prefix)) == 0)
            on_key(state, s->keys[i], strlen(s->keys[i]));
    for (i = 0; i < 4; i++) on_key(state, junk[i], strlen(junk[i]));
    return s->list_code;
}

static void store_init(mem_store *s) {
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->cond, NULL);
}

static void store_free(mem_store *s) {
    int i;
    for (i = 0; i < s->count; i++) {
        CHECK(mem_io_refs(s->objects[i]) == 1); /* every object table was destroyed */
        mem_io_release(s->objects[i]);
    }
    pthread_mutex_destroy(&s->lock);
    pthread_cond_destroy(&s->cond);
}

static shard_store_callbacks store_table(mem_store *s) {
    shard_store_callbacks t;
    memset(&t, 0, sizeof t);
    t.version = SHARD_STORE_VERSION;
    t.userdata = s;
    t.open_object = store_open;
    t.destroy = store_destroy;
    return t;
}

static uint64_t store_reads(mem_store *s) {
    uint64_t n = 0;
    int i;
    for (i = 0; i < s->count; i++) n += mem_io_reads(s->objects[i]);
    return n;
}

static void store_reset(mem_store *s) {
    int i;
    for (i = 0; i < s->count; i++) mem_io_reset_counters(s->objects[i]);
}

/* 20x12 uint16, shards 8x8 of 4x4 inner chunks, zstd, index at the end, fill value 7. */
static const char ZARR_JSON[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [20, 12], \"data_type\": \"uint16\","
    " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [8, 8]}},"
    " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 7,"
    " \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [4, 4],"
    " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}],"
    " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"crc32c\"}]}}]}";

#define ROWS 20
#define COLS 12
static uint16_t model[ROWS][COLS];

static void model_reset(void) {
    int r, c;
    for (r = 0; r < ROWS; r++)
        for (c = 0; c < COLS; c++) model[r][c] = 7;
}

static shard_array *open_array(mem_store *s) {
    shard_store_callbacks t = store_table(s);
    shard_array *a = NULL;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &a), SHARD_OK);
    return a;
}

/* Write the region with values v(r, c) = seed + r * 31 + c, into the model too. */
static void write_box(shard_array *a, uint64_t r0, uint64_t c0, uint64_t h, uint64_t w,
                      unsigned seed) {
    uint64_t start[2] = {r0, c0}, shape[2] = {h, w}, r, c;
    uint16_t *buf = malloc(h * w * 2 + 1);
    for (r = 0; r < h; r++)
        for (c = 0; c < w; c++) {
            buf[r * w + c] = (uint16_t)(seed + (r0 + r) * 31 + (c0 + c));
            model[r0 + r][c0 + c] = buf[r * w + c];
        }
    EXPECT(shard_array_write_region(a, start, shape, 2, (const uint8_t *)buf, h * w * 2),
           SHARD_OK);
    free(buf);
}

static int box_matches(shard_array *a, uint64_t r0, uint64_t c0, uint64_t h, uint64_t w) {
    uint64_t start[2] = {r0, c0}, shape[2] = {h, w}, r, c;
    uint16_t *buf = malloc(h * w * 2 + 1);
    int ok = shard_array_read_region(a, start, shape, 2, (uint8_t *)buf, h * w * 2) == SHARD_OK;
    for (r = 0; ok && r < h; r++)
        for (c = 0; c < w; c++)
            if (buf[r * w + c] != model[r0 + r][c0 + c]) ok = 0;
    free(buf);
    return ok;
}

static void test_regions_match_the_model(void) {
    mem_store s;
    shard_array *a;
    uint64_t r0, c0, h, w;
    store_init(&s);
    model_reset();
    a = open_array(&s);
    CHECK(box_matches(a, 0, 0, ROWS, COLS)); /* nothing stored: all fill */
    write_box(a, 3, 2, 9, 7, 100);          /* across 4 shards, partial chunks */
    write_box(a, 0, 0, 8, 8, 200);          /* exactly one shard */
    write_box(a, 17, 11, 3, 1, 300);        /* the edge shard, past the array's edge */
    write_box(a, 5, 5, 1, 1, 7);            /* one element */
    for (r0 = 0; r0 < ROWS; r0 += 3)
        for (c0 = 0; c0 < COLS; c0 += 5)
            for (h = 1; r0 + h <= ROWS; h += 4)
                for (w = 1; c0 + w <= COLS; w += 3) CHECK(box_matches(a, r0, c0, h, w));
    shard_array_close(a);
    CHECK(s.destroyed == 1);
    store_free(&s);
}

/* 16x16384 uint16, uncompressed: two rows of shards 8x16384, each two rows of sixteen 4x1024
 * inner chunks of 8 KiB. A region one inner chunk wide wants chunks 0 and 16 of each shard,
 * 120 KiB apart: two ranges per shard, past the 64 KiB coalescing gap. */
static const char WIDE_JSON[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [16, 16384],"
    " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\","
    " \"configuration\": {\"chunk_shape\": [8, 16384]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
    " \"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {"
    "\"chunk_shape\": [4, 1024], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}],"
    " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"crc32c\"}]}}]}";

/* One thread, so each row of shards is fetched into the buffers of the row before, through
 * plain reads (the model's regions) and through read_vectored (ranges too far apart to merge):
 * the same values; and the array's coalescing gap decides which. */
static void test_regions_on_one_thread_reuse_buffers(void) {
    mem_store s;
    shard_store_callbacks t;
    shard_array *a = NULL;
    uint64_t start[2] = {0, 0}, whole[2] = {16, 16384}, narrow[2] = {16, 1024}, r, c;
    uint16_t *data = malloc(16 * 16384 * 2), *got = malloc(16 * 1024 * 2);
    int same = 1;
    EXPECT(shard_set_threads(1), SHARD_OK);
    test_regions_match_the_model();
    store_init(&s);
    s.vectored = 1;
    t = store_table(&s);
    EXPECT(shard_array_open(WIDE_JSON, strlen(WIDE_JSON), &t, &a), SHARD_OK);
    for (r = 0; r < 16; r++)
        for (c = 0; c < 16384; c++) data[r * 16384 + c] = (uint16_t)(r * 7919 + c * 31);
    EXPECT(shard_array_write_region(a, start, whole, 2, (const uint8_t *)data, 16 * 16384 * 2),
           SHARD_OK);
    g_vectored_calls = 0;
    for (start[1] = 0; start[1] < 16384; start[1] += 5 * 1024) {
        EXPECT(shard_array_read_region(a, start, narrow, 2, (uint8_t *)got, 16 * 1024 * 2),
               SHARD_OK);
        for (r = 0; r < 16; r++)
            for (c = 0; c < 1024; c++)
                if (got[r * 1024 + c] != data[r * 16384 + start[1] + c]) same = 0;
    }
    CHECK(same);
    CHECK(g_vectored_calls == 8); /* 4 regions x 2 rows of shards */
    /* With the array's coalescing gap above 120 KiB, each shard's two chunks are one range
     * (one plain read: no vectored call), the bytes between them read and dropped. */
    EXPECT(shard_array_set_coalesce_gap(a, 1 << 20), SHARD_OK);
    g_vectored_calls = 0;
    start[1] = 3 * 1024;
    EXPECT(shard_array_read_region(a, start, narrow, 2, (uint8_t *)got, 16 * 1024 * 2), SHARD_OK);
    for (r = 0; r < 16; r++)
        for (c = 0; c < 1024; c++)
            if (got[r * 1024 + c] != data[r * 16384 + start[1] + c]) same = 0;
    CHECK(same);
    CHECK(g_vectored_calls == 0);
    shard_array_close(a);
    store_free(&s);
    EXPECT(shard_set_threads(0), SHARD_OK);
    free(data);
    free(got);
}

/* 1024x1024 uint16 in one shard of 64x64 inner chunks, uncompressed: a 2 MiB shard. */
static const char BIG_JSON[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [1024, 1024],"
    " \"data_type\": \"uint16\", \"chunk_grid\": {\"name\": \"regular\","
    " \"configuration\": {\"chunk_shape\": [1024, 1024]}}, \"chunk_key_encoding\": {\"name\": \"default\"},"
    " \"fill_value\": 0, \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {"
    "\"chunk_shape\": [64, 64], \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}],"
    " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"crc32c\"}]}}]}";

/* Write the whole BIG_JSON array from `data` through `s` (thread-safe); the status. */
static shard_status write_big(mem_store *s, const uint16_t *data) {
    shard_store_callbacks t = store_table(s);
    shard_array *a = NULL;
    uint64_t start[2] = {0, 0}, whole[2] = {1024, 1024};
    shard_status st;
    t.flags = SHARD_STORE_THREAD_SAFE;
    EXPECT(shard_array_open(BIG_JSON, strlen(BIG_JSON), &t, &a), SHARD_OK);
    st = shard_array_write_region(a, start, whole, 2, (const uint8_t *)data, 1024 * 1024 * 2);
    shard_array_close(a);
    return st;
}

/* The version-3 new-object callbacks through a thread-safe store, two threads: one shard
 * goes to a new object in several pieces while it encodes and is swapped in at the commit,
 * byte for byte what the in-place path writes; a failed piece or commit leaves the old shard,
 * and the new object is discarded (or released by the failed commit). */
static void test_new_objects(void) {
    mem_store s, ref;
    mem_io *m;
    size_t k, n = 1024 * 1024;
    uint16_t *data = malloc(n * 2), *got = malloc(n * 2);
    uint8_t *bytes = malloc(3 << 20), *want = malloc(3 << 20);
    size_t len, want_len;
    shard_store_callbacks t;
    shard_array *a = NULL;
    uint64_t start[2] = {0, 0}, whole[2] = {1024, 1024};
    EXPECT(shard_set_threads(2), SHARD_OK);
    for (k = 0; k < n; k++) data[k] = (uint16_t)((k * 2654435761u) >> 16);
    store_init(&ref);
    EXPECT(write_big(&ref, data), SHARD_OK);
    CHECK(ref.count == 1 && mem_io_calls(ref.objects[0], MEM_IO_CREATE_NEW) == 0);
    want_len = mem_io_copy(ref.objects[0], want, 3 << 20);

    store_init(&s);
    s.new_objects = 1;
    EXPECT(write_big(&s, data), SHARD_OK);
    CHECK(s.count == 1);
    m = s.objects[0];
    CHECK(mem_io_calls(m, MEM_IO_CREATE_NEW) == 1);
    CHECK(mem_io_calls(m, MEM_IO_COMMIT_NEW) == 1);
    CHECK(mem_io_calls(m, MEM_IO_DISCARD_NEW) == 0);
    CHECK(mem_io_calls(m, MEM_IO_WRITE) == 0);
    /* Pieces, not one write at the end: how many depends on the threads' timing (a thread
     * writing while the other encodes the rest leaves more for the end), at least two. */
    CHECK(mem_io_calls(m, MEM_IO_WRITE_NEW) >= 2);
    len = mem_io_copy(m, bytes, 3 << 20);
    CHECK(len == want_len && memcmp(bytes, want, len) == 0);
    t = store_table(&s);
    EXPECT(shard_array_open(BIG_JSON, strlen(BIG_JSON), &t, &a), SHARD_OK);
    EXPECT(shard_array_read_region(a, start, whole, 2, (uint8_t *)got, n * 2), SHARD_OK);
    CHECK(memcmp(got, data, n * 2) == 0);
    shard_array_close(a);

    /* Another version of the shard, failing at the first piece (written while the rest
     * encode), then at the commit. */
    for (k = 0; k < n; k++) data[k] ^= 0x5555;
    mem_io_reset_counters(m);
    mem_io_fail(m, MEM_IO_WRITE_NEW, 1, 61);
    EXPECT(write_big(&s, data), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 61);
    CHECK(mem_io_calls(m, MEM_IO_DISCARD_NEW) == 1 && mem_io_calls(m, MEM_IO_COMMIT_NEW) == 0);
    CHECK(mem_io_copy(m, bytes, 3 << 20) == want_len && memcmp(bytes, want, want_len) == 0);
    CHECK(!mem_io_new_object_live(m));
    mem_io_reset_counters(m);
    mem_io_fail(m, MEM_IO_COMMIT_NEW, 1, 62);
    EXPECT(write_big(&s, data), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 62);
    CHECK(mem_io_calls(m, MEM_IO_DISCARD_NEW) == 0 && mem_io_calls(m, MEM_IO_COMMIT_NEW) == 1);
    CHECK(mem_io_copy(m, bytes, 3 << 20) == want_len && memcmp(bytes, want, want_len) == 0);
    CHECK(!mem_io_new_object_live(m));
    mem_io_fail(m, MEM_IO_COMMIT_NEW, 0, 0);

    store_free(&s);
    store_free(&ref);
    EXPECT(shard_set_threads(0), SHARD_OK);
    free(data);
    free(got);
    free(bytes);
    free(want);
}

static void test_requests_per_region(void) {
    mem_store s;
    shard_array *a;
    store_init(&s);
    model_reset();
    a = open_array(&s);
    write_box(a, 0, 0, ROWS, COLS, 1);
    store_reset(&s);
    /* Rows 4..8, cols 0..8: shard (0, 0)'s inner chunks (1, 0) and (1, 1), adjacent in the
     * object: one index read and one run. */
    CHECK(box_matches(a, 4, 0, 4, 8));
    CHECK(store_reads(&s) == 2);
    store_reset(&s);
    /* Rows 6..10, cols 6..10: four shards, one chunk each: 3 index reads (shard (0, 0)'s is in
     * the handle's cache since the read before) + 4 chunk reads. */
    CHECK(box_matches(a, 6, 6, 4, 4));
    CHECK(store_reads(&s) == 7);
    store_reset(&s);
    /* Again: every index is cached, one read per chunk. */
    CHECK(box_matches(a, 6, 6, 4, 4));
    CHECK(store_reads(&s) == 4);
    /* Without the cache, every shard's index again. */
    EXPECT(shard_array_set_index_cache(a, 0), SHARD_OK);
    store_reset(&s);
    CHECK(box_matches(a, 6, 6, 4, 4));
    CHECK(store_reads(&s) == 8);
    EXPECT(shard_array_set_index_cache(a, 8 << 20), SHARD_OK);
    store_reset(&s);
    /* Writing exactly inner chunk (0, 1) of shard (1, 0) reads only its index. */
    write_box(a, 8, 4, 4, 4, 9);
    CHECK(store_reads(&s) == 1);
    shard_array_close(a);
    store_free(&s);
}

static void test_argument_errors(void) {
    mem_store s;
    shard_store_callbacks t;
    shard_array *a, *sentinel = (shard_array *)&g_passed, *out = sentinel;
    shard_codec *codec = NULL;
    uint64_t start[2] = {0, 0}, shape[2] = {2, 2}, far[2] = {19, 0};
    uint8_t buf[8];
    uint64_t n = 0;
    store_init(&s);
    t = store_table(&s);
    EXPECT(shard_array_open(NULL, 3, &t, &out), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), NULL, &out), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_open("{", 1, &t, &out), SHARD_ERR_INVALID_METADATA);
    t.version = 0;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &out), SHARD_ERR_INVALID_ARGUMENT);
    t = store_table(&s);
    t.open_object = NULL;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &out), SHARD_ERR_INVALID_ARGUMENT);
    t = store_table(&s);
    t.flags = 0x10;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &out), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(out == sentinel && s.destroyed == 0); /* failed opens keep userdata with the host */
    a = open_array(&s);
    EXPECT(shard_array_read_region(NULL, start, shape, 2, buf, 8), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_set_coalesce_gap(NULL, 0), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_read_region(a, NULL, shape, 2, buf, 8), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_read_region(a, start, shape, 2, NULL, 8), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_read_region(a, start, shape, 1, buf, 8), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_read_region(a, far, shape, 2, buf, 8), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_read_region(a, start, shape, 2, buf, 7), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_array_write_region(a, start, shape, 2, buf, 9), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_array_codec(a, &codec), SHARD_OK);
    EXPECT(shard_codec_num_chunks(codec, &n), SHARD_OK);
    CHECK(n == 4);
    shard_codec_free(codec);
    /* A failing store: the code comes back as the I/O code. */
    s.fail_open = 5;
    EXPECT(shard_array_read_region(a, start, shape, 2, buf, 8), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 5);
    EXPECT(shard_array_write_region(a, start, shape, 2, buf, 8), SHARD_ERR_IO);
    shard_array_close(a);
    shard_array_close(NULL);
    CHECK(s.destroyed == 1);
    store_free(&s);
}

typedef struct {
    shard_array *a;
    shard_status st;
} writer_arg;

static void *write_in_thread(void *p) {
    writer_arg *w = p;
    uint64_t start[2] = {0, 0}, shape[2] = {1, 1};
    uint16_t v = 1;
    w->st = shard_array_write_region(w->a, start, shape, 2, (const uint8_t *)&v, 2);
    return NULL;
}

static void test_second_writer_is_refused(void) {
    mem_store s;
    writer_arg w;
    pthread_t th;
    uint64_t start[2] = {9, 9}, shape[2] = {1, 1};
    uint16_t v = 2;
    store_init(&s);
    w.a = open_array(&s);
    s.hold = 1; /* the first writer stops inside open_object */
    pthread_create(&th, NULL, write_in_thread, &w);
    pthread_mutex_lock(&s.lock);
    while (!s.holding) pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);
    EXPECT(shard_array_write_region(w.a, start, shape, 2, (const uint8_t *)&v, 2),
           SHARD_ERR_BUSY);
    pthread_mutex_lock(&s.lock);
    s.hold = 0;
    pthread_cond_broadcast(&s.cond);
    pthread_mutex_unlock(&s.lock);
    pthread_join(th, NULL);
    CHECK(w.st == SHARD_OK);
    shard_array_close(w.a);
    store_free(&s);
}

/* ---- posix_store: a directory read and written through the store table ----------------- */

/* The bytes of the file at `path` (NULL when missing) and its length. */
static uint8_t *file_contents(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long n;
    if (f == NULL) return NULL;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0) {
        fclose(f);
        return NULL;
    }
    rewind(f);
    data = malloc((size_t)n + 1);
    if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
        free(data);
        data = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return data;
}

/* Whether every shard key's file under ROOT holds exactly the memory store's object (or both
 * are missing), and no file under ROOT/c holds ".tmp." (a temporary left behind). */
static int same_as_memory(const char *root, mem_store *s) {
    static const char *keys[] = {"c/0/0", "c/0/1", "c/1/0", "c/1/1", "c/2/0", "c/2/1"};
    char path[4096];
    size_t k, len = 0;
    int i, same = 1;
    for (k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        mem_io *m = NULL;
        uint8_t *file;
        for (i = 0; i < s->count; i++)
            if (strcmp(s->keys[i], keys[k]) == 0) m = s->objects[i];
        snprintf(path, sizeof path, "%s/%s", root, keys[k]);
        file = file_contents(path, &len);
        if (m == NULL || !mem_io_exists(m)) {
            same = same && file == NULL;
        } else {
            uint8_t *want = malloc(mem_io_size(m) + 1);
            size_t n = mem_io_copy(m, want, mem_io_size(m));
            same = same && file != NULL && len == n && memcmp(file, want, n) == 0;
            free(want);
        }
        free(file);
    }
    for (k = 0; k < 3; k++) {
        DIR *d;
        struct dirent *e;
        snprintf(path, sizeof path, "%s/c/%d", root, (int)k);
        if ((d = opendir(path)) == NULL) continue;
        while ((e = readdir(d)) != NULL) same = same && strstr(e->d_name, ".tmp.") == NULL;
        closedir(d);
    }
    return same;
}

static void count_key(void *state, const char *key, size_t len) {
    (void)key;
    (void)len;
    (*(int *)state)++;
}

/* Both arrays get the same region of `value` (model too). */
static void write_both(shard_array *disk, shard_array *mem, uint64_t r0, uint64_t c0, uint64_t h,
                       uint64_t w, unsigned value) {
    uint64_t start[2] = {r0, c0}, shape[2] = {h, w}, r, c;
    uint16_t *buf = malloc(h * w * 2 + 1);
    for (r = 0; r < h; r++)
        for (c = 0; c < w; c++)
            model[r0 + r][c0 + c] = buf[r * w + c] =
                (uint16_t)(value == 7 ? 7 : value + (r0 + r) * 31 + c0 + c);
    EXPECT(shard_array_write_region(disk, start, shape, 2, (const uint8_t *)buf, h * w * 2),
           SHARD_OK);
    EXPECT(shard_array_write_region(mem, start, shape, 2, (const uint8_t *)buf, h * w * 2),
           SHARD_OK);
    free(buf);
}

/* posix_store (examples-c/posix_io.c), with one thread's callbacks and declared thread-safe:
 * writes leave every shard file byte for byte the memory store's object after the same writes
 * (a whole-array write, a region across four shards updated in place, a fill-value shard
 * deleted and written again), no temporary behind, and the array reads back equal to the
 * model through the store and through a fresh one; `list` names the stored shards; and a
 * whole-shard rewrite whose temporary cannot be written (RLIMIT_FSIZE below its size) fails
 * with SHARD_ERR_IO and EFBIG and leaves the old file byte for byte. */
static void test_posix_store_writes(void) {
    uint32_t flags[2] = {0, SHARD_STORE_THREAD_SAFE};
    int f;
    for (f = 0; f < 2; f++) {
        char root[] = "/tmp/zarrshard-store-XXXXXX", path[4096], cmd[4200];
        mem_store s;
        shard_store_callbacks t, fresh;
        shard_array *disk = NULL, *again = NULL, *mem;
        uint8_t *before, *after;
        size_t before_len = 0, after_len = 0;
        uint16_t other[64];
        uint64_t start[2] = {0, 0}, shape[2] = {8, 8};
        struct rlimit old_limit, small;
        void (*old_handler)(int);
        int listed = 0, i;
        CHECK(mkdtemp(root) != NULL);
        store_init(&s);
        model_reset();
        mem = open_array(&s);
        EXPECT(posix_store_open(root, flags[f], &t) == 0 ? SHARD_OK : SHARD_ERR_IO, SHARD_OK);
        EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &disk), SHARD_OK);
        write_both(disk, mem, 0, 0, ROWS, COLS, 1000);
        CHECK(box_matches(disk, 0, 0, ROWS, COLS) && same_as_memory(root, &s));
        write_both(disk, mem, 3, 5, 9, 6, 2000); /* four shards, none whole: in place */
        CHECK(box_matches(disk, 0, 0, ROWS, COLS) && same_as_memory(root, &s));
        write_both(disk, mem, 8, 0, 8, 8, 7); /* shard c/1/0 all fill: deleted */
        snprintf(path, sizeof path, "%s/c/1/0", root);
        CHECK(access(path, F_OK) != 0 && same_as_memory(root, &s));
        CHECK(t.list(t.userdata, "c/", count_key, &listed) == 0 && listed == 5);
        write_both(disk, mem, 8, 0, 8, 8, 3000); /* and written again */
        CHECK(box_matches(disk, 0, 0, ROWS, COLS) && same_as_memory(root, &s));

        /* A whole-shard rewrite that cannot be written: the old file stays as it was. */
        snprintf(path, sizeof path, "%s/c/0/0", root);
        before = file_contents(path, &before_len);
        for (i = 0; i < 64; i++) other[i] = (uint16_t)(i * 37 + 11);
        CHECK(getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        small = old_limit;
        small.rlim_cur = before_len / 2;
        old_handler = signal(SIGXFSZ, SIG_IGN); /* EFBIG, not the signal */
        CHECK(setrlimit(RLIMIT_FSIZE, &small) == 0);
        EXPECT(shard_array_write_region(disk, start, shape, 2, (const uint8_t *)other,
                                        sizeof other),
               SHARD_ERR_IO);
        CHECK(setrlimit(RLIMIT_FSIZE, &old_limit) == 0);
        signal(SIGXFSZ, old_handler);
        CHECK(shard_last_io_code() == EFBIG);
        after = file_contents(path, &after_len);
        CHECK(before != NULL && after != NULL && before_len == after_len &&
              memcmp(before, after, before_len) == 0);
        CHECK(same_as_memory(root, &s));
        free(before);
        free(after);

        /* A fresh store over the directory reads what the first one wrote. */
        EXPECT(posix_store_open(root, 0, &fresh) == 0 ? SHARD_OK : SHARD_ERR_IO, SHARD_OK);
        EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &fresh, &again), SHARD_OK);
        CHECK(box_matches(again, 0, 0, ROWS, COLS));
        shard_array_close(again);
        shard_array_close(disk);
        shard_array_close(mem);
        store_free(&s);
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
        CHECK(system(cmd) == 0);
    }
}

/* ---- the zarr-python fixture through a read-only directory store ----------------------- */

static const char *g_fixture;

static int32_t dir_open(void *ud, const char *key, shard_io_callbacks *io) {
    char path[4096];
    snprintf(path, sizeof path, "%s/fixture.zarr/%s", (const char *)ud, key);
    return posix_io_open(path, POSIX_IO_READ, io, NULL);
}

/* The whole file at `path` in a new buffer (one spare byte) and its length in `*len`; NULL when
 * it cannot be read. */
static char *read_whole_file(const char *path, long *len) {
    FILE *f = fopen(path, "rb");
    char *data = NULL;
    if (!f) return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0) {
        rewind(f);
        data = malloc((size_t)*len + 1);
        if (data && fread(data, 1, (size_t)*len, f) != (size_t)*len) {
            free(data);
            data = NULL;
        }
    }
    fclose(f);
    return data;
}

static void test_zarr_python_fixture(void) {
    char path[4096], *json;
    FILE *f;
    long len;
    uint16_t *want, *got;
    shard_store_callbacks t;
    shard_array *a = NULL;
    uint64_t start[2], shape[2], r, c;
    snprintf(path, sizeof path, "%s/fixture.zarr/zarr.json", g_fixture);
    json = read_whole_file(path, &len);
    CHECK(json != NULL);
    if (!json) return;
    snprintf(path, sizeof path, "%s/fixture.raw", g_fixture);
    f = fopen(path, "rb");
    want = malloc(64 * 64 * 2);
    got = malloc(64 * 64 * 2);
    CHECK(f != NULL && fread(want, 2, 64 * 64, f) == 64 * 64);
    if (f) fclose(f);
    memset(&t, 0, sizeof t);
    t.version = SHARD_STORE_VERSION;
    t.flags = SHARD_STORE_THREAD_SAFE; /* pread-based: safe from the library's threads */
    t.userdata = (void *)g_fixture;
    t.open_object = dir_open;
    EXPECT(shard_array_open(json, (size_t)len, &t, &a), SHARD_OK);
    /* Regions of every alignment, including ones over the empty top-left chunks. */
    for (start[0] = 0; start[0] < 64; start[0] += 13)
        for (start[1] = 0; start[1] < 64; start[1] += 11)
            for (shape[0] = 1; start[0] + shape[0] <= 64; shape[0] += 17)
                for (shape[1] = 1; start[1] + shape[1] <= 64; shape[1] += 19) {
                    int same = 1;
                    EXPECT(shard_array_read_region(a, start, shape, 2, (uint8_t *)got,
                                                   shape[0] * shape[1] * 2),
                           SHARD_OK);
                    for (r = 0; r < shape[0]; r++)
                        for (c = 0; c < shape[1]; c++)
                            if (got[r * shape[1] + c] != want[(start[0] + r) * 64 + start[1] + c])
                                same = 0;
                    CHECK(same);
                }
    shard_array_close(a);
    free(json);
    free(want);
    free(got);
}

/* Where inner chunk (i, j) of the stored object `key` is, read through a shard handle. */
static shard_chunk_location chunk_at(mem_store *s, shard_codec *codec, const char *key,
                                     uint64_t i, uint64_t j) {
    shard_chunk_location loc = {UINT64_MAX, 0, true};
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint64_t coords[2] = {i, j};
    int k;
    for (k = 0; k < s->count; k++)
        if (strcmp(s->keys[k], key) == 0) break;
    CHECK(k < s->count);
    if (k == s->count) return loc;
    memset(&io, 0, sizeof io);
    mem_io_callbacks(s->objects[k], &io);
    EXPECT(shard_open(codec, &io, SHARD_MODE_READ, &h), SHARD_OK);
    EXPECT(shard_chunk_info(h, coords, 2, &loc), SHARD_OK);
    shard_close(h);
    return loc;
}

/* The reference set over the memory store: exactly the stored inner chunks, at the offsets and
 * sizes their shards' indexes give; the size query; every argument error. */
static void test_reference_set(void) {
    mem_store s;
    shard_array *a;
    shard_codec *codec = NULL;
    shard_chunk_location l1, l2;
    char want[256], *buf;
    size_t n = 0, n2 = 0;
    const char *url = "http://h/a";
    store_init(&s);
    model_reset();
    a = open_array(&s);
    write_box(a, 0, 0, 4, 4, 100);   /* inner chunk (0, 0) of shard c/0/0 */
    write_box(a, 16, 8, 4, 4, 200);  /* inner chunk (0, 0) of shard c/2/1: chunk (4, 2) */
    EXPECT(shard_array_codec(a, &codec), SHARD_OK);
    l1 = chunk_at(&s, codec, "c/0/0", 0, 0);
    l2 = chunk_at(&s, codec, "c/2/1", 0, 0);
    CHECK(l1.offset != UINT64_MAX && l2.offset != UINT64_MAX);

    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, url, strlen(url), NULL, 0, NULL, 0, &n),
           SHARD_OK);
    buf = malloc(n + 1);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, url, strlen(url), NULL, 0, buf, n, &n2),
           SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, url, strlen(url), NULL, 0, buf, n + 1, &n2),
           SHARD_OK);
    CHECK(n2 == n && strlen(buf) == n);
    snprintf(want, sizeof want, "\"c/0/0\":[\"http://h/a/c/0/0\",%llu,%llu]",
             (unsigned long long)l1.offset, (unsigned long long)l1.nbytes);
    CHECK(strstr(buf, want) != NULL);
    snprintf(want, sizeof want, "\"c/4/2\":[\"http://h/a/c/2/1\",%llu,%llu]}",
             (unsigned long long)l2.offset, (unsigned long long)l2.nbytes);
    CHECK(strstr(buf, want) != NULL); /* the last entry: nothing else is referenced */
    CHECK(strncmp(buf, "{\"zarr.json\":", 13) == 0);
    {   /* exactly two references */
        const char *p = buf;
        int refs = 0;
        while ((p = strstr(p, "[\"http://h/a/")) != NULL) refs++, p++;
        CHECK(refs == 2);
    }
    free(buf);

    /* Version 1 under a name, Zarr v2 metadata. */
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V1, 2, url, strlen(url), "img", 3, NULL, 0, &n),
           SHARD_OK);
    buf = malloc(n + 1);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V1, 2, url, strlen(url), "img", 3, buf, n + 1, &n2),
           SHARD_OK);
    CHECK(strncmp(buf, "{\"version\":1,\"templates\":{\"u\":\"http://h/a\"},\"refs\":{\"img/.zarray\":", 66) == 0);
    snprintf(want, sizeof want, "\"img/4.2\":[\"{{u}}/c/2/1\",%llu,%llu]}}",
             (unsigned long long)l2.offset, (unsigned long long)l2.nbytes);
    CHECK(strstr(buf, want) != NULL);
    free(buf);

    EXPECT(shard_array_refs(NULL, 0, 3, url, strlen(url), NULL, 0, NULL, 0, &n),
           SHARD_ERR_NULL_POINTER);
    /* `written_out` only reports a length: NULL is accepted. */
    EXPECT(shard_array_refs(a, 0, 3, url, strlen(url), NULL, 0, NULL, 0, NULL), SHARD_OK);
    EXPECT(shard_array_refs(a, 0, 3, NULL, 5, NULL, 0, NULL, 0, &n), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_refs(a, 2, 3, url, strlen(url), NULL, 0, NULL, 0, &n),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs(a, 0, 4, url, strlen(url), NULL, 0, NULL, 0, &n),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs(a, 0, 3, "\xff", 1, NULL, 0, NULL, 0, &n),
           SHARD_ERR_INVALID_ARGUMENT);
    shard_codec_free(codec);
    shard_array_close(a);
    store_free(&s);
}

/* Flip one byte of the object at `key`. */
static void flip_byte(mem_store *s, const char *key, uint64_t offset) {
    int k;
    size_t n;
    uint8_t *data;
    for (k = 0; k < s->count; k++)
        if (strcmp(s->keys[k], key) == 0) break;
    CHECK(k < s->count);
    if (k == s->count) return;
    n = mem_io_size(s->objects[k]);
    data = malloc(n);
    mem_io_copy(s->objects[k], data, n);
    data[offset] ^= 0xff;
    CHECK(mem_io_set(s->objects[k], data, n) == 0);
    free(data);
}

/* The problems shard_array_verify reports, as one line each, and how to answer. */
typedef struct {
    char lines[8][256];
    int calls, fail_at;
} problems_seen;

static int32_t on_problem(void *userdata, const char *key, const uint64_t *chunk, size_t rank,
                          shard_status status, const char *message) {
    problems_seen *p = (problems_seen *)userdata;
    int n = p->calls++;
    if (n < 8)
        snprintf(p->lines[n], sizeof p->lines[n], "%s %zu [%llu, %llu] %d %.64s", key, rank,
                 rank == 2 ? (unsigned long long)chunk[0] : 99ULL,
                 rank == 2 ? (unsigned long long)chunk[1] : 99ULL, (int)status, message);
    return p->fail_at == n + 1 ? -9 : 0;
}

/* shard_array_verify: a clean array has no problem; two damaged chunks (their zstd frames'
 * first byte flipped) are reported in grid order with their shard key, chunk coordinates,
 * status and message; NULL counts only; a callback's non-zero return stops the check with
 * its code; a failing store is SHARD_ERR_IO with the store's code. */
static void test_verify(void) {
    mem_store s;
    shard_array *a;
    shard_codec *codec = NULL;
    shard_chunk_location l1, l2;
    problems_seen p;
    uint64_t n = 99;
    store_init(&s);
    model_reset();
    a = open_array(&s);
    /* Nothing stored yet: it reads as all fill value, and the count says so. */
    EXPECT(shard_array_stored_shards(a, &n), SHARD_OK);
    CHECK(n == 0);
    write_box(a, 0, 0, 4, 4, 100);   /* inner chunk (0, 0) of shard c/0/0 */
    write_box(a, 16, 8, 4, 4, 200);  /* inner chunk (0, 0) of shard c/2/1 */
    EXPECT(shard_array_stored_shards(a, &n), SHARD_OK);
    CHECK(n == 2);
    EXPECT(shard_array_stored_shards(a, NULL), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_stored_shards(NULL, &n), SHARD_ERR_NULL_POINTER);
    n = 99;
    EXPECT(shard_array_codec(a, &codec), SHARD_OK);
    l1 = chunk_at(&s, codec, "c/0/0", 0, 0);
    l2 = chunk_at(&s, codec, "c/2/1", 0, 0);

    memset(&p, 0, sizeof p);
    EXPECT(shard_array_verify(a, on_problem, &p, &n), SHARD_OK);
    CHECK(n == 0 && p.calls == 0);

    flip_byte(&s, "c/2/1", l2.offset);
    flip_byte(&s, "c/0/0", l1.offset);
    EXPECT(shard_array_verify(a, on_problem, &p, &n), SHARD_OK);
    CHECK(n == 2 && p.calls == 2);
    CHECK(strncmp(p.lines[0], "c/0/0 2 [0, 0] 4 corrupt shard: inner chunk [0, 0]: ", 52) == 0);
    CHECK(strncmp(p.lines[1], "c/2/1 2 [0, 0] 4 corrupt shard: inner chunk [0, 0]: ", 52) == 0);
    CHECK(SHARD_ERR_CORRUPT == 4);

    n = 99;
    EXPECT(shard_array_verify(a, NULL, NULL, &n), SHARD_OK);
    CHECK(n == 2);

    memset(&p, 0, sizeof p);
    p.fail_at = 1;
    n = 99;
    EXPECT(shard_array_verify(a, on_problem, &p, &n), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == -9 && p.calls == 1 && n == 99);

    mem_io_reset_counters(s.objects[1]);
    mem_io_fail(s.objects[1], MEM_IO_ANY, 1, 5);
    EXPECT(shard_array_verify(a, NULL, NULL, &n), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 5);
    mem_io_fail(s.objects[1], MEM_IO_ANY, 0, 0);

    EXPECT(shard_array_verify(NULL, NULL, NULL, &n), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_verify(a, NULL, NULL, NULL), SHARD_ERR_NULL_POINTER);
    shard_codec_free(codec);
    shard_array_close(a);
    store_free(&s);
}

/* A sink that appends to a growing buffer, or fails with `fail` once `fail_after` pieces
 * have arrived. */
typedef struct {
    char *data;
    size_t len, biggest;
    int pieces, calls, fail_after;
    int32_t fail;
} text_sink;

static int32_t sink_append(void *userdata, const uint8_t *data, size_t len) {
    text_sink *t = (text_sink *)userdata;
    t->calls++;
    if (t->fail != 0 && t->pieces == t->fail_after) return t->fail;
    t->data = realloc(t->data, t->len + len + 1);
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = '\0';
    t->pieces++;
    if (len > t->biggest) t->biggest = len;
    return 0;
}

/* The calls that hand the JSON text to a sink. */
typedef shard_status (*refs_to_sink_fn)(const shard_array *, uint32_t, uint32_t, const char *,
                                        size_t, const char *, size_t, shard_sink_fn, void *);

/* `call` (shard_array_refs_write or shard_array_refs_stream) hands over the same text
 * shard_array_refs copies, after one index read per shard where the size query and the copy
 * take two; in pieces of at most 64 KiB; a failing sink stops the call with its code; a store
 * failing before any piece is complete never reaches the sink; argument errors. */
static void reference_set_to_a_sink(refs_to_sink_fn call) {
    mem_store s;
    shard_array *a;
    text_sink t;
    char *buf, *url;
    size_t n = 0, n2 = 0, url_len = 100000;
    uint64_t one_call;
    store_init(&s);
    model_reset();
    a = open_array(&s);
    write_box(a, 0, 0, 4, 4, 100);
    write_box(a, 16, 8, 4, 4, 200);
    /* A URL prefix so long that the set (two references and the prefix in each) passes 64 KiB. */
    url = malloc(url_len + 1);
    memset(url, 'u', url_len);
    url[url_len] = '\0';

    store_reset(&s);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, NULL, 0, &n),
           SHARD_OK);
    one_call = store_reads(&s);
    CHECK(one_call >= 2); /* both stored shards' indexes */
    buf = malloc(n + 1);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, buf, n + 1, &n2),
           SHARD_OK);
    CHECK(store_reads(&s) == 2 * one_call);

    memset(&t, 0, sizeof t);
    store_reset(&s);
    EXPECT(call(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, sink_append, &t), SHARD_OK);
    CHECK(store_reads(&s) == one_call);
    CHECK(t.len == n && memcmp(t.data, buf, n) == 0);
    CHECK(n > 2 * 65536 && t.pieces >= 3 && t.biggest <= 65536);
    free(t.data);

    /* Version 1 and v2 metadata under a name: the same text as the copying call. */
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V1, 2, "http://h/a", 10, "img", 3, NULL, 0, &n),
           SHARD_OK);
    buf = realloc(buf, n + 1);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V1, 2, "http://h/a", 10, "img", 3, buf, n + 1, &n2),
           SHARD_OK);
    memset(&t, 0, sizeof t);
    EXPECT(call(a, SHARD_REFS_JSON_V1, 2, "http://h/a", 10, "img", 3, sink_append, &t), SHARD_OK);
    CHECK(t.len == n && memcmp(t.data, buf, n) == 0 && t.pieces == 1);
    free(t.data);

    /* The sink's failure: SHARD_ERR_IO with its code, after the pieces before it. */
    memset(&t, 0, sizeof t);
    t.fail = -77;
    t.fail_after = 1;
    EXPECT(call(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, sink_append, &t),
           SHARD_ERR_IO);
    CHECK(shard_last_io_code() == -77 && t.pieces == 1);
    CHECK(t.calls == 2); /* never called again after it refused a piece */
    free(t.data);
    /* The same with a set smaller than one piece (the one piece refused). */
    memset(&t, 0, sizeof t);
    t.fail = -78;
    EXPECT(call(a, SHARD_REFS_JSON_V1, 2, "http://h/a", 10, "img", 3, sink_append, &t),
           SHARD_ERR_IO);
    CHECK(shard_last_io_code() == -78 && t.calls == 1 && t.pieces == 0);
    free(t.data);

    /* A failing store: an error before any piece. */
    memset(&t, 0, sizeof t);
    mem_io_reset_counters(s.objects[0]);
    mem_io_fail(s.objects[0], MEM_IO_ANY, 1, 5);
    EXPECT(call(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, sink_append, &t),
           SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 5 && t.calls == 0 && t.data == NULL);
    mem_io_fail(s.objects[0], MEM_IO_ANY, 0, 0);

    /* Argument errors, before any read or piece. */
    store_reset(&s);
    EXPECT(call(a, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, NULL, &t), SHARD_ERR_NULL_POINTER);
    EXPECT(call(NULL, SHARD_REFS_JSON_V0, 3, url, url_len, NULL, 0, sink_append, &t),
           SHARD_ERR_NULL_POINTER);
    EXPECT(call(a, 2, 3, url, url_len, NULL, 0, sink_append, &t), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(call(a, 0, 4, url, url_len, NULL, 0, sink_append, &t), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(call(a, 0, 3, "\xff", 1, NULL, 0, sink_append, &t), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(t.calls == 0 && store_reads(&s) == 0);
    free(buf);
    free(url);
    shard_array_close(a);
    store_free(&s);
}

static void test_reference_set_to_a_sink(void) { reference_set_to_a_sink(shard_array_refs_write); }

/* 3x32768 uint8, shards 1x32768 of 1x1 inner chunks, uncompressed: 32768 references a shard,
 * so the library reads the indexes two shards at a time (65 536 references) and has the first
 * row's text complete, and handed over when streaming, before it reads the third shard. */
static const char ROWS_JSON[] =
    "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [3, 32768], \"data_type\": \"uint8\","
    " \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [1, 32768]}},"
    " \"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0,"
    " \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\"chunk_shape\": [1, 1],"
    " \"codecs\": [{\"name\": \"bytes\"}],"
    " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    " {\"name\": \"crc32c\"}]}}]}";

static mem_io *object_at(mem_store *s, const char *key) {
    int i;
    for (i = 0; i < s->count; i++)
        if (strcmp(s->keys[i], key) == 0) return s->objects[i];
    return NULL;
}

/* shard_array_refs_stream as shard_array_refs_write above; and a store failing at the third
 * shard leaves the host most of the first row's references, a prefix of the whole text
 * (shard_array_refs_write, in the same state, hands over nothing). */
static void test_reference_set_streamed(void) {
    mem_store s;
    shard_array *a = NULL;
    text_sink t;
    char *whole;
    size_t n = 0, n2 = 0, row1;
    uint64_t start[2] = {0, 0}, shape[2] = {3, 32768};
    shard_store_callbacks table;
    uint8_t *values;
    mem_io *third;
    reference_set_to_a_sink(shard_array_refs_stream);

    /* Three rows of shards, every chunk stored; the third shard's reads fail. */
    store_init(&s);
    table = store_table(&s);
    EXPECT(shard_array_open(ROWS_JSON, strlen(ROWS_JSON), &table, &a), SHARD_OK);
    values = malloc(3 * 32768);
    for (n2 = 0; n2 < 3 * 32768; n2++) values[n2] = (uint8_t)(n2 % 251 + 1);
    EXPECT(shard_array_write_region(a, start, shape, 2, values, 3 * 32768), SHARD_OK);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, "m", 1, NULL, 0, NULL, 0, &n), SHARD_OK);
    whole = malloc(n + 1);
    EXPECT(shard_array_refs(a, SHARD_REFS_JSON_V0, 3, "m", 1, NULL, 0, whole, n + 1, &n2),
           SHARD_OK);
    third = object_at(&s, "c/2/0");
    CHECK(third != NULL && strstr(whole, ",\"c/1/0\"") != NULL);
    if (third != NULL && strstr(whole, ",\"c/1/0\"") != NULL) {
        mem_io_reset_counters(third);
        mem_io_fail(third, MEM_IO_ANY, 1, 5);
        memset(&t, 0, sizeof t);
        EXPECT(shard_array_refs_stream(a, SHARD_REFS_JSON_V0, 3, "m", 1, NULL, 0, sink_append,
                                       &t),
               SHARD_ERR_IO);
        CHECK(shard_last_io_code() == 5 && mem_io_faults_fired(third) == 1);
        /* A prefix of the text: the pieces full before the failure, so all of the first
         * row's text but its last 64 KiB at most, nothing of the second row's. */
        row1 = (size_t)(strstr(whole, ",\"c/1/0\"") - whole);
        CHECK(t.data != NULL && memcmp(t.data, whole, t.len) == 0 && t.biggest <= 65536);
        CHECK(t.len <= row1 && t.len + 65536 > row1 && t.len > 65536);
        free(t.data);

        /* shard_array_refs_write keeps its promise: no piece at all. */
        mem_io_reset_counters(third);
        mem_io_fail(third, MEM_IO_ANY, 1, 5);
        memset(&t, 0, sizeof t);
        EXPECT(shard_array_refs_write(a, SHARD_REFS_JSON_V0, 3, "m", 1, NULL, 0, sink_append, &t),
               SHARD_ERR_IO);
        CHECK(shard_last_io_code() == 5 && mem_io_faults_fired(third) == 1);
        CHECK(t.calls == 0 && t.data == NULL);
        mem_io_fail(third, MEM_IO_ANY, 0, 0);
    }
    free(values);
    free(whole);
    shard_array_close(a);
    store_free(&s);
}

/* The Parquet reference set written through a host store equals, object for object, the
 * files `zarrshard refs --format parquet` wrote for the same array (which tests/refs checks
 * with fsspec and zarr-python): argv[2], made by tests/c/run.sh with --name fixture
 * --record-size 3 --url-prefix http://example/fixture.zarr. */
/* A `list` a version-1 table carries past its end: the library must not call it. */
static int g_stray_list_calls;
static int32_t stray_list(void *ud, const char *prefix, shard_key_fn on_key, void *state) {
    (void)ud, (void)prefix, (void)on_key, (void)state;
    g_stray_list_calls++;
    return 0;
}

/* A store with `list` (version 2): verify and the reference set open only the two stored
 * shards of the 3x2 grid (without `list`, all six positions); junk keys are ignored;
 * SHARD_STORE_CANNOT_LIST falls back to the six; another code fails the call with it before
 * any object is opened; a version-1 table's bytes past `destroy` are never read as `list`. */
static void test_listing_store(void) {
    mem_store s;
    shard_array *a, *b;
    shard_store_callbacks t;
    text_sink listed, asked;
    uint64_t n = 99;
    store_init(&s);
    model_reset();
    a = open_array(&s); /* no list */
    write_box(a, 0, 0, 4, 4, 100);  /* shard c/0/0 */
    write_box(a, 16, 8, 4, 4, 200); /* shard c/2/1 */
    s.opens = 0;
    EXPECT(shard_array_verify(a, NULL, NULL, &n), SHARD_OK);
    CHECK(n == 0 && s.opens == 6 && s.list_calls == 0);

    t = store_table(&s);
    t.destroy = NULL;
    t.list = store_list;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &b), SHARD_OK);
    s.opens = 0;
    n = 99;
    EXPECT(shard_array_verify(b, NULL, NULL, &n), SHARD_OK);
    CHECK(n == 0 && s.opens == 2 && s.list_calls == 1);
    CHECK(strcmp(s.list_prefix, "c/") == 0);

    memset(&listed, 0, sizeof listed);
    memset(&asked, 0, sizeof asked);
    s.opens = 0;
    EXPECT(shard_array_refs_write(b, SHARD_REFS_JSON_V1, 3, "u", 1, NULL, 0, sink_append,
                                  &listed),
           SHARD_OK);
    CHECK(s.opens == 2 && s.list_calls == 2);
    s.opens = 0;
    EXPECT(shard_array_refs_write(a, SHARD_REFS_JSON_V1, 3, "u", 1, NULL, 0, sink_append, &asked),
           SHARD_OK);
    CHECK(s.opens == 6);
    CHECK(listed.len > 0 && listed.len == asked.len &&
          memcmp(listed.data, asked.data, listed.len) == 0);
    free(listed.data);
    free(asked.data);

    s.list_code = SHARD_STORE_CANNOT_LIST;
    s.opens = 0;
    EXPECT(shard_array_verify(b, NULL, NULL, &n), SHARD_OK);
    CHECK(n == 0 && s.opens == 6 && s.list_calls == 3);

    s.list_code = 77;
    s.opens = 0;
    n = 99;
    EXPECT(shard_array_verify(b, NULL, NULL, &n), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 77 && s.opens == 0 && n == 99);
    /* Not found is an error too, not an empty listing: a clean verify must mean checked. */
    s.list_code = SHARD_IO_NOT_FOUND;
    EXPECT(shard_array_verify(b, NULL, NULL, &n), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == SHARD_IO_NOT_FOUND && s.opens == 0 && n == 99);
    shard_array_close(b);

    /* Version 1 ends after `destroy`; what follows is not a field. */
    t.version = 1;
    t.list = stray_list;
    EXPECT(shard_array_open(ZARR_JSON, strlen(ZARR_JSON), &t, &b), SHARD_OK);
    s.opens = 0;
    EXPECT(shard_array_verify(b, NULL, NULL, &n), SHARD_OK);
    CHECK(n == 0 && s.opens == 6 && g_stray_list_calls == 0);
    shard_array_close(b);
    shard_array_close(a);
    store_free(&s);
}

static const char *g_parquet_expected;

static int same_as_file(mem_store *s, const char *key) {
    char path[4096];
    int i;
    long len;
    uint8_t *want, *got;
    int same;
    for (i = 0; i < s->count; i++)
        if (strcmp(s->keys[i], key) == 0) break;
    if (i == s->count) return 0;
    snprintf(path, sizeof path, "%s/%s", g_parquet_expected, key);
    want = (uint8_t *)read_whole_file(path, &len);
    if (!want) return 0;
    got = malloc((size_t)len + 1);
    same = mem_io_size(s->objects[i]) == (size_t)len &&
           mem_io_copy(s->objects[i], got, (size_t)len) == (size_t)len &&
           memcmp(want, got, (size_t)len) == 0;
    free(want);
    free(got);
    return same;
}

static void test_parquet_reference_set(void) {
    char path[4096], *json, key[64];
    long len;
    shard_store_callbacks in, out_t;
    shard_array *a = NULL;
    mem_store out;
    const char *url = "http://example/fixture.zarr";
    int n;
    snprintf(path, sizeof path, "%s/fixture.zarr/zarr.json", g_fixture);
    json = read_whole_file(path, &len);
    CHECK(json != NULL);
    if (!json) return;
    memset(&in, 0, sizeof in);
    in.version = SHARD_STORE_VERSION;
    in.userdata = (void *)g_fixture;
    in.open_object = dir_open;
    EXPECT(shard_array_open(json, (size_t)len, &in, &a), SHARD_OK);
    store_init(&out);
    out_t = store_table(&out);
    EXPECT(shard_array_refs_parquet(a, url, strlen(url), "fixture", 7, 3, &out_t), SHARD_OK);
    CHECK(out.destroyed == 0); /* borrowed, not owned */
    /* 64x64 of 16x16 chunks: 16 records, 3 per file: files 0..5 and .zmetadata. */
    CHECK(out.count == 7);
    CHECK(same_as_file(&out, ".zmetadata"));
    for (n = 0; n < 6; n++) {
        snprintf(key, sizeof key, "fixture/refs.%d.parq", n);
        CHECK(same_as_file(&out, key));
    }
    EXPECT(shard_array_refs_parquet(a, url, strlen(url), "", 0, 3, &out_t),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs_parquet(a, url, strlen(url), "fixture", 7, 0, &out_t),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs_parquet(a, url, strlen(url), "fixture", 7, 3, NULL),
           SHARD_ERR_NULL_POINTER);
    out.fail_open = 28;
    EXPECT(shard_array_refs_parquet(a, url, strlen(url), "fixture", 7, 3, &out_t), SHARD_ERR_IO);
    shard_array_close(a);
    store_free(&out);
    free(json);
}

/* Whether `dir/key` holds the same bytes as the expected file of that key. */
static int same_files(const char *dir, const char *key) {
    char path[4096];
    long want_len = -1, got_len = -2;
    char *want, *got;
    int same;
    snprintf(path, sizeof path, "%s/%s", g_parquet_expected, key);
    want = read_whole_file(path, &want_len);
    snprintf(path, sizeof path, "%s/%s", dir, key);
    got = read_whole_file(path, &got_len);
    same = want && got && want_len == got_len && memcmp(want, got, (size_t)want_len) == 0;
    free(want);
    free(got);
    return same;
}

/* Entries of a directory other than . and .. (-1 when it cannot be listed). */
static int entries(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static int32_t open_fails(void *ud, const char *key, shard_io_callbacks *io) {
    (void)ud;
    (void)key;
    (void)io;
    return 99;
}

/* shard_array_refs_parquet_dir writes the files of `zarrshard refs --format parquet` (argv[2])
 * into a new directory, missing parents too, and nothing else; a non-empty directory, an empty
 * or NUL-holding path and a path below a regular file (ENOTDIR) are refused before any shard
 * is read (an array whose store fails would say SHARD_ERR_IO with its code otherwise). */
static void test_parquet_reference_set_to_a_directory(void) {
    char path[4400], base[] = "/tmp/zarrshard-parquet-XXXXXX", dir[256], sub[512], key[64];
    char *json;
    long len;
    shard_store_callbacks in, failing;
    shard_array *a = NULL, *b = NULL;
    const char *url = "http://example/fixture.zarr";
    FILE *f;
    int n;
    snprintf(path, sizeof path, "%s/fixture.zarr/zarr.json", g_fixture);
    json = read_whole_file(path, &len);
    CHECK(json != NULL && mkdtemp(base) != NULL);
    if (!json) return;
    memset(&in, 0, sizeof in);
    in.version = SHARD_STORE_VERSION;
    in.userdata = (void *)g_fixture;
    in.open_object = dir_open;
    failing = in;
    failing.open_object = open_fails;
    EXPECT(shard_array_open(json, (size_t)len, &in, &a), SHARD_OK);
    EXPECT(shard_array_open(json, (size_t)len, &failing, &b), SHARD_OK);

    snprintf(dir, sizeof dir, "%s/out/refs", base);
    EXPECT(shard_array_refs_parquet_dir(a, url, strlen(url), "fixture", 7, 3, dir, strlen(dir)),
           SHARD_OK);
    CHECK(entries(dir) == 2); /* .zmetadata and fixture/ */
    CHECK(same_files(dir, ".zmetadata"));
    snprintf(sub, sizeof sub, "%s/fixture", dir);
    CHECK(entries(sub) == 6); /* refs.0..5.parq, no temporaries */
    for (n = 0; n < 6; n++) {
        snprintf(key, sizeof key, "fixture/refs.%d.parq", n);
        CHECK(same_files(dir, key));
    }

    /* Not empty now: refused before reading (b's store would fail). */
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, dir, strlen(dir)),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, dir, 0),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, "/tmp\0x", 6),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, NULL, 4),
           SHARD_ERR_NULL_POINTER);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "", 0, 3, dir, strlen(dir)),
           SHARD_ERR_INVALID_ARGUMENT);

    /* The store fails: its code; the new directory is left without a .zmetadata. */
    snprintf(dir, sizeof dir, "%s/second", base);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, dir, strlen(dir)),
           SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 99);
    snprintf(path, sizeof path, "%s/.zmetadata", dir);
    CHECK(access(path, F_OK) != 0);

    /* Below a regular file: ENOTDIR, before any shard is read (b's store would say 99). */
    snprintf(path, sizeof path, "%s/file", base);
    f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    snprintf(dir, sizeof dir, "%s/file/deeper/refs", base);
    EXPECT(shard_array_refs_parquet_dir(b, url, strlen(url), "fixture", 7, 3, dir, strlen(dir)),
           SHARD_ERR_IO);
    CHECK(shard_last_io_code() == ENOTDIR);

    snprintf(path, sizeof path, "rm -rf '%s'", base);
    CHECK(system(path) == 0);
    shard_array_close(a);
    shard_array_close(b);
    free(json);
}

int main(int argc, char **argv) {
    RUN(test_regions_match_the_model);
    RUN(test_regions_on_one_thread_reuse_buffers);
    RUN(test_requests_per_region);
    RUN(test_argument_errors);
    RUN(test_second_writer_is_refused);
    RUN(test_reference_set);
    RUN(test_reference_set_to_a_sink);
    RUN(test_reference_set_streamed);
    RUN(test_verify);
    RUN(test_listing_store);
    RUN(test_new_objects);
    RUN(test_posix_store_writes);
    if (argc > 1) {
        g_fixture = argv[1];
        RUN(test_zarr_python_fixture);
    }
    if (argc > 2) {
        g_parquet_expected = argv[2];
        RUN(test_parquet_reference_set);
        RUN(test_parquet_reference_set_to_a_directory);
    }
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed != 0;
}
