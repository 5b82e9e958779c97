/*
 * test_nodes: the C API that needs no callbacks of the host's: the library's directory and
 * memory stores, arrays created at paths (from zarr.json text or a shard_array_spec), opened
 * by path, appended to frame by frame, flushed, resized, their attributes, compaction,
 * groups, and the library's file I/O for one shard (shard_io_file); and that the directory
 * store writes the same bytes as examples-c/posix_io.c's store mode.
 *
 * test_nodes [OUT_DIR]: with OUT_DIR, it also leaves there the hierarchy that
 * tests/c/check_nodes.py reads with zarr-python and tensorstore (a group `series` with
 * attributes, an appended uint16 array `series/raw` and a resized array `series/cut`).
 * Element values come from value() below, which the Python check computes the same way.
 * One line per test, then `N passed, M failed`.
 */
#define _XOPEN_SOURCE 700

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "posix_io.h"
#include "zarrshard.h"

#include "check.h"

/* Element (t, y, x) of the series: check_nodes.py computes the same. */
static uint16_t value(uint64_t t, uint64_t y, uint64_t x) {
    return (uint16_t)(t * 1000 + y * 10 + x + 1);
}

enum { FRAMES = 10, H = 6, W = 10 };

static void fill_frame(uint64_t t, uint16_t *frame) {
    for (uint64_t y = 0; y < H; y++)
        for (uint64_t x = 0; x < W; x++) frame[y * W + x] = value(t, y, x);
}

static char g_root[512];

/* A new empty directory under the test's root. */
static const char *fresh_dir(const char *name) {
    static char path[600];
    snprintf(path, sizeof path, "%s/%s", g_root, name);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) return NULL;
    return path;
}

static int file_exists(const char *dir, const char *key) {
    char path[800];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, key);
    return stat(path, &st) == 0;
}

/* A (t, y, x) uint16 spec: shards 4 x 4 x 8 of 2 x 2 x 4 inner chunks. */
static const uint64_t SHARD[3] = {4, 4, 8}, CHUNK[3] = {2, 2, 4};
static const char *const NAMES[3] = {"t", "y", "x"};
static void series_spec(shard_array_spec *spec, const uint64_t *shape) {
    EXPECT(shard_array_spec_init(spec), SHARD_OK);
    spec->rank = 3;
    spec->shape = shape;
    spec->shard_shape = SHARD;
    spec->chunk_shape = CHUNK;
    spec->data_type = "uint16";
    spec->compression_level = 1;
    spec->dimension_names = NAMES;
}

/* Append FRAMES frames one by one to `path` of a new directory store at `dir`, flush. */
static void write_series(const char *dir, const char *path) {
    shard_store_callbacks store;
    EXPECT(shard_store_directory(dir, SHARD_STORE_CREATE, &store), SHARD_OK);
    const uint64_t empty[3] = {0, H, W};
    shard_array_spec spec;
    series_spec(&spec, empty);
    shard_array *a = NULL;
    EXPECT(shard_array_create_spec(&store, path, &spec, 0, &a), SHARD_OK);
    /* The host's copy may go at once: the array keeps the store. */
    shard_store_release(&store);
    shard_store_release(&store); /* zeroed: harmless */
    uint16_t frame[H * W];
    const uint64_t block[3] = {1, H, W};
    for (uint64_t t = 0; t < FRAMES; t++) {
        fill_frame(t, frame);
        EXPECT(shard_array_append(a, 0, block, 3, (const uint8_t *)frame, sizeof frame), SHARD_OK);
    }
    uint64_t shape[3];
    EXPECT(shard_array_shape(a, shape, 3), SHARD_OK);
    CHECK(shape[0] == FRAMES && shape[1] == H && shape[2] == W);
    EXPECT(shard_array_flush(a), SHARD_OK);
    shard_array_close(a);
}

/* Read the whole series back from `path` of the directory store `dir`, value by value. */
static void check_series(const char *dir, const char *path, uint64_t frames) {
    shard_store_callbacks store;
    EXPECT(shard_store_directory(dir, 0, &store), SHARD_OK);
    shard_array *a = NULL;
    EXPECT(shard_array_open_path(&store, path, &a), SHARD_OK);
    shard_store_release(&store);
    if (a == NULL) return;
    uint64_t shape[3] = {0, 0, 0};
    EXPECT(shard_array_shape(a, shape, 3), SHARD_OK);
    CHECK(shape[0] == frames && shape[1] == H && shape[2] == W);
    size_t n = (size_t)frames * H * W;
    uint16_t *got = malloc(n * 2 + 1);
    const uint64_t start[3] = {0, 0, 0}, extent[3] = {frames, H, W};
    EXPECT(shard_array_read_region(a, start, extent, 3, (uint8_t *)got, n * 2), SHARD_OK);
    int bad = 0;
    for (uint64_t t = 0; t < frames; t++)
        for (uint64_t y = 0; y < H; y++)
            for (uint64_t x = 0; x < W; x++)
                bad += got[(t * H + y) * W + x] != value(t, y, x);
    CHECK(bad == 0);
    free(got);
    shard_array_close(a);
}

static void test_append_to_a_directory_and_read_back(void) {
    const char *dir = fresh_dir("append");
    write_series(dir, "acq/raw");
    check_series(dir, "acq/raw", FRAMES);
    CHECK(file_exists(dir, "acq/raw/zarr.json"));
    /* Frames 8 and 9 of layer 2 are stored as edge shards; shard (2, 1, 1) holds y 4..5. */
    CHECK(file_exists(dir, "acq/raw/c/2/1/1"));
    CHECK(!file_exists(dir, "acq/raw/c/3/0/0"));
}

static void test_no_dead_bytes_after_appending(void) {
    const char *dir = fresh_dir("dead");
    write_series(dir, "");
    shard_store_callbacks store;
    EXPECT(shard_store_directory(dir, 0, &store), SHARD_OK);
    shard_array *a = NULL;
    EXPECT(shard_array_open_path(&store, NULL, &a), SHARD_OK);
    uint64_t rewritten = 99, freed = 99;
    EXPECT(shard_array_compact(a, 0, &rewritten, &freed), SHARD_OK);
    CHECK(rewritten == 0 && freed == 0);
    /* A region update appends chunks (dead bytes), which compaction then reclaims. */
    uint16_t one = 7;
    const uint64_t at[3] = {1, 1, 1}, single[3] = {1, 1, 1};
    EXPECT(shard_array_write_region(a, at, single, 3, (const uint8_t *)&one, 2), SHARD_OK);
    EXPECT(shard_array_compact(a, SHARD_FLAG_MORTON_ORDER, &rewritten, &freed), SHARD_OK);
    CHECK(rewritten == 1 && freed > 0);
    EXPECT(shard_array_compact(a, 0, NULL, NULL), SHARD_OK);
    EXPECT(shard_array_compact(a, 4, NULL, NULL), SHARD_ERR_INVALID_ARGUMENT);
    uint16_t back = 0;
    EXPECT(shard_array_read_region(a, at, single, 3, (uint8_t *)&back, 2), SHARD_OK);
    CHECK(back == 7);
    shard_array_close(a);
    shard_store_release(&store);
}

static void test_reopened_partial_layer_is_completed(void) {
    const char *dir = fresh_dir("reopen");
    write_series(dir, "s"); /* 10 frames: layer 2 holds 2 of 4 */
    shard_store_callbacks store;
    EXPECT(shard_store_directory(dir, 0, &store), SHARD_OK);
    shard_array *a = NULL;
    EXPECT(shard_array_open_path(&store, "s", &a), SHARD_OK);
    uint16_t frame[H * W];
    const uint64_t block[3] = {1, H, W};
    for (uint64_t t = FRAMES; t < FRAMES + 3; t++) {
        fill_frame(t, frame);
        EXPECT(shard_array_append(a, 0, block, 3, (const uint8_t *)frame, sizeof frame), SHARD_OK);
    }
    shard_array_close(a); /* flushes */
    shard_store_release(&store);
    check_series(dir, "s", FRAMES + 3);
}

static void test_append_arguments_are_checked(void) {
    shard_store_callbacks store;
    EXPECT(shard_store_memory(&store), SHARD_OK);
    const uint64_t empty[3] = {0, H, W};
    shard_array_spec spec;
    series_spec(&spec, empty);
    shard_array *a = NULL;
    EXPECT(shard_array_create_spec(&store, "x", &spec, 0, &a), SHARD_OK);
    uint16_t frame[H * W] = {0};
    const uint64_t narrow[3] = {1, H, W - 1}, block[3] = {1, H, W};
    EXPECT(shard_array_append(a, 0, narrow, 3, (const uint8_t *)frame, 2 * H * (W - 1)),
           SHARD_ERR_INVALID_ARGUMENT);
    CHECK(strcmp(last_error(), "invalid argument: append along axis 0: the block's extent "
                               "along axis 2 is 9, the array's is 10") == 0);
    EXPECT(shard_array_append(a, 3, block, 3, (const uint8_t *)frame, sizeof frame),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_append(a, 0, block, 3, (const uint8_t *)frame, 10), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_array_append(a, 0, block, 2, (const uint8_t *)frame, sizeof frame),
           SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_append(NULL, 0, block, 3, (const uint8_t *)frame, sizeof frame),
           SHARD_ERR_NULL_POINTER);
    uint64_t shape[3];
    EXPECT(shard_array_shape(a, shape, 2), SHARD_ERR_INVALID_ARGUMENT);
    size_t rank = 0;
    EXPECT(shard_array_rank(a, &rank), SHARD_OK);
    CHECK(rank == 3);
    shard_array_close(a);
    shard_store_release(&store);
}

static void test_paths_and_existing_nodes(void) {
    shard_store_callbacks store;
    EXPECT(shard_store_memory(&store), SHARD_OK);
    const uint64_t shape[3] = {4, H, W};
    shard_array_spec spec;
    series_spec(&spec, shape);
    shard_array *a = NULL;
    const char *bad[] = {"..", "a/../b", "/abs", "a//b", "a/"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        EXPECT(shard_array_create_spec(&store, bad[i], &spec, 0, &a), SHARD_ERR_INVALID_ARGUMENT);
        CHECK(strstr(last_error(), "invalid node path") != NULL);
        EXPECT(shard_group_create(&store, bad[i], NULL, 0, 0), SHARD_ERR_INVALID_ARGUMENT);
    }
    CHECK(a == NULL);
    EXPECT(shard_array_open_path(&store, "nope/0", &a), SHARD_ERR_INVALID_METADATA);
    CHECK(strcmp(last_error(), "invalid metadata: no zarr.json or .zarray at `nope/0`") == 0);
    EXPECT(shard_array_create_spec(&store, "img", &spec, 0, &a), SHARD_OK);
    shard_array_close(a);
    a = NULL;
    EXPECT(shard_array_create_spec(&store, "img", &spec, 0, &a), SHARD_ERR_INVALID_STATE);
    CHECK(strcmp(last_error(), "invalid state: `img` already holds an array (zarr.json); "
                               "overwrite to replace it") == 0);
    EXPECT(shard_array_create_spec(&store, "img", &spec, 8, &a), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_array_create_spec(&store, "img", &spec, SHARD_CREATE_OVERWRITE, &a), SHARD_OK);
    shard_array_close(a);
    EXPECT(shard_array_create_spec(NULL, "img", &spec, 0, &a), SHARD_ERR_NULL_POINTER);
    shard_store_release(&store);
    shard_store_release(NULL);
}

static void test_directory_store_arguments(void) {
    shard_store_callbacks store;
    const char *dir = fresh_dir("missing");
    EXPECT(shard_store_directory(dir, 0, &store), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == ENOENT);
    CHECK(strstr(last_error(), "missing") != NULL);
    EXPECT(shard_store_directory(dir, 1, &store), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_store_directory("", 0, &store), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_store_directory(NULL, 0, &store), SHARD_ERR_NULL_POINTER);
    EXPECT(shard_store_directory(dir, SHARD_STORE_CREATE, &store), SHARD_OK);
    shard_store_release(&store);
    CHECK(store.open_object == NULL && store.userdata == NULL);
}

static void test_json_create_and_spec_json(void) {
    shard_store_callbacks store;
    EXPECT(shard_store_memory(&store), SHARD_OK);
    const uint64_t shape[1] = {100}, chunk[1] = {10};
    shard_array_spec spec;
    EXPECT(shard_array_spec_init(&spec), SHARD_OK);
    spec.rank = 1;
    spec.shape = shape;
    spec.chunk_shape = chunk;
    spec.data_type = "float32";
    spec.compressor = "none";
    spec.fill_value = "\"NaN\"";
    size_t need = 0;
    EXPECT(shard_array_spec_json(&spec, NULL, 0, &need), SHARD_OK);
    char *json = malloc(need + 1);
    EXPECT(shard_array_spec_json(&spec, json, need + 1, NULL), SHARD_OK);
    CHECK(strlen(json) == need);
    CHECK(strstr(json, "\"fill_value\":\"NaN\"") != NULL);
    CHECK(strstr(json, "sharding_indexed") == NULL); /* no shard_shape: unsharded */
    shard_array *a = NULL;
    EXPECT(shard_array_create(&store, "f", json, need, 0, &a), SHARD_OK);
    free(json);
    float back[100];
    const uint64_t start[1] = {0};
    EXPECT(shard_array_read_region(a, start, shape, 1, (uint8_t *)back, sizeof back), SHARD_OK);
    CHECK(back[0] != back[0] && back[99] != back[99]); /* NaN */
    shard_array_close(a);
    /* Errors name the field. */
    const uint64_t shard[1] = {15};
    spec.shard_shape = shard;
    EXPECT(shard_array_spec_json(&spec, NULL, 0, &need), SHARD_ERR_INVALID_METADATA);
    CHECK(strstr(last_error(), "chunk_shape") != NULL);
    spec.shard_shape = NULL;
    spec.compressor = "lzma";
    EXPECT(shard_array_spec_json(&spec, NULL, 0, &need), SHARD_ERR_INVALID_ARGUMENT);
    CHECK(strstr(last_error(), "unknown compressor `lzma`") != NULL);
    spec.compressor = NULL;
    spec.version = 7;
    EXPECT(shard_array_spec_json(&spec, NULL, 0, &need), SHARD_ERR_INVALID_ARGUMENT);
    spec.version = SHARD_ARRAY_SPEC_VERSION;
    spec.data_type = NULL;
    EXPECT(shard_array_spec_json(&spec, NULL, 0, &need), SHARD_ERR_NULL_POINTER);
    const char bad_json[] = "{\"zarr_format\": 3}";
    EXPECT(shard_array_create(&store, "g", bad_json, sizeof bad_json - 1, 0, &a),
           SHARD_ERR_INVALID_METADATA);
    shard_store_release(&store);
}

static void test_resize_shows_fill_after_shrinking(void) {
    shard_store_callbacks store;
    EXPECT(shard_store_memory(&store), SHARD_OK);
    const uint64_t shape[3] = {4, H, W};
    shard_array_spec spec;
    series_spec(&spec, shape);
    spec.fill_value = "9";
    shard_array *a = NULL;
    EXPECT(shard_array_create_spec(&store, NULL, &spec, 0, &a), SHARD_OK);
    uint16_t all[4 * H * W];
    for (uint64_t t = 0; t < 4; t++) fill_frame(t, all + t * H * W);
    const uint64_t zero[3] = {0, 0, 0};
    EXPECT(shard_array_write_region(a, zero, shape, 3, (const uint8_t *)all, sizeof all), SHARD_OK);
    const uint64_t small[3] = {4, 3, 3};
    EXPECT(shard_array_resize(a, small, 3), SHARD_OK);
    EXPECT(shard_array_resize(a, shape, 3), SHARD_OK);
    EXPECT(shard_array_resize(a, shape, 2), SHARD_ERR_INVALID_ARGUMENT);
    uint16_t got[4 * H * W];
    EXPECT(shard_array_read_region(a, zero, shape, 3, (uint8_t *)got, sizeof got), SHARD_OK);
    int bad = 0;
    for (uint64_t t = 0; t < 4; t++)
        for (uint64_t y = 0; y < H; y++)
            for (uint64_t x = 0; x < W; x++)
                bad += got[(t * H + y) * W + x] != (y < 3 && x < 3 ? value(t, y, x) : 9);
    CHECK(bad == 0);
    shard_array_close(a);
    /* Reopened through the store: zarr.json holds the new shape. */
    EXPECT(shard_array_open_path(&store, "", &a), SHARD_OK);
    uint64_t now[3];
    EXPECT(shard_array_shape(a, now, 3), SHARD_OK);
    CHECK(now[0] == 4 && now[1] == H && now[2] == W);
    shard_array_close(a);
    shard_store_release(&store);
}

static void test_attributes_and_groups(void) {
    shard_store_callbacks store;
    EXPECT(shard_store_memory(&store), SHARD_OK);
    const char group_attrs[] = "{\"ome\": {\"version\": \"0.5\"}}";
    EXPECT(shard_group_create(&store, "img", group_attrs, sizeof group_attrs - 1, 0), SHARD_OK);
    EXPECT(shard_group_create(&store, "img", NULL, 0, 0), SHARD_ERR_INVALID_STATE);
    EXPECT(shard_group_create(&store, "img", "[1]", 3, SHARD_CREATE_OVERWRITE),
           SHARD_ERR_INVALID_METADATA);
    const uint64_t shape[3] = {2, H, W};
    shard_array_spec spec;
    series_spec(&spec, shape);
    shard_array *a = NULL;
    EXPECT(shard_array_create_spec(&store, "img/0", &spec, 0, &a), SHARD_OK);
    size_t n = 99;
    EXPECT(shard_array_attributes(a, NULL, 0, &n), SHARD_OK);
    CHECK(n == 2);
    const char attrs[] = "{\"unit\": \"um\", \"n\": [1, 2]}";
    EXPECT(shard_array_set_attributes(a, attrs, sizeof attrs - 1), SHARD_OK);
    EXPECT(shard_array_set_attributes(a, "nope", 4), SHARD_ERR_INVALID_METADATA);
    char buf[100];
    EXPECT(shard_array_attributes(a, buf, sizeof buf, &n), SHARD_OK);
    CHECK(strcmp(buf, attrs) == 0 && n == strlen(attrs));
    EXPECT(shard_array_attributes(a, buf, 5, &n), SHARD_ERR_BUFFER_SIZE);
    shard_array_close(a);
    EXPECT(shard_array_open_path(&store, "img/0", &a), SHARD_OK);
    EXPECT(shard_array_attributes(a, buf, sizeof buf, &n), SHARD_OK);
    CHECK(strcmp(buf, attrs) == 0);
    /* The whole zarr.json as the store holds it: size query, copy, too small. */
    size_t meta_len = 0;
    EXPECT(shard_array_metadata(a, NULL, 0, &meta_len), SHARD_OK);
    char meta[2048];
    CHECK(meta_len > 0 && meta_len < sizeof meta);
    EXPECT(shard_array_metadata(a, meta, sizeof meta, &n), SHARD_OK);
    CHECK(n == meta_len && strlen(meta) == n);
    CHECK(strstr(meta, "\"node_type\": \"array\"") != NULL);
    CHECK(strstr(meta, "\"sharding_indexed\"") != NULL);
    CHECK(strstr(meta, attrs) != NULL);
    EXPECT(shard_array_metadata(a, meta, 10, &n), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_array_metadata(NULL, meta, sizeof meta, &n), SHARD_ERR_NULL_POINTER);
    shard_array_close(a);
    /* A group's attributes, read and replaced; the array below it stays. */
    /* (A group's attributes come back as compact JSON.) */
    EXPECT(shard_group_attributes(&store, "img", buf, sizeof buf, &n), SHARD_OK);
    CHECK(strcmp(buf, "{\"ome\":{\"version\":\"0.5\"}}") == 0 && n == strlen(buf));
    const char new_attrs[] = "{\"ome\": {\"version\": \"0.6\"}}";
    EXPECT(shard_group_set_attributes(&store, "img", new_attrs, sizeof new_attrs - 1), SHARD_OK);
    EXPECT(shard_group_attributes(&store, "img", buf, sizeof buf, &n), SHARD_OK);
    CHECK(strcmp(buf, "{\"ome\":{\"version\":\"0.6\"}}") == 0);
    EXPECT(shard_group_attributes(&store, "img", buf, 5, &n), SHARD_ERR_BUFFER_SIZE);
    EXPECT(shard_group_set_attributes(&store, "img", "[1]", 3), SHARD_ERR_INVALID_METADATA);
    /* An array is not a group; nor is a path where nothing is. */
    EXPECT(shard_group_attributes(&store, "img/0", buf, sizeof buf, &n), SHARD_ERR_INVALID_METADATA);
    EXPECT(shard_group_attributes(&store, "nothing", buf, sizeof buf, &n), SHARD_ERR_INVALID_METADATA);
    EXPECT(shard_group_set_attributes(&store, "nothing", "{}", 2), SHARD_ERR_INVALID_METADATA);
    EXPECT(shard_array_open_path(&store, "img/0", &a), SHARD_OK);
    EXPECT(shard_array_attributes(a, buf, sizeof buf, &n), SHARD_OK);
    CHECK(strcmp(buf, attrs) == 0);
    shard_array_close(a);
    shard_store_release(&store);
}

static void test_shard_io_file(void) {
    const char *dir = fresh_dir("one-file");
    mkdir(dir, 0755);
    char path[700];
    snprintf(path, sizeof path, "%s/sub/shard", dir);
    const char json[] =
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[8],\"data_type\":\"uint8\","
        "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[8]}},"
        "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
        "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[4],"
        "\"codecs\":[{\"name\":\"bytes\"}],\"index_codecs\":[{\"name\":\"bytes\","
        "\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]}}]}";
    shard_codec *codec = NULL;
    EXPECT(shard_codec_from_zarr_json(json, sizeof json - 1, &codec), SHARD_OK);
    shard_io_callbacks io;
    EXPECT(shard_io_file(path, 0, &io), SHARD_OK);
    shard_handle *w = NULL;
    EXPECT(shard_open(codec, &io, SHARD_MODE_WRITE_BUFFERED, &w), SHARD_OK);
    const uint8_t chunk[4] = {1, 2, 3, 4};
    const uint64_t c1[1] = {1};
    EXPECT(shard_write_chunk(w, c1, 1, chunk, 4), SHARD_OK);
    uint64_t size = 0;
    EXPECT(shard_finalize(w, &size), SHARD_OK);
    CHECK(size == 4 + 2 * 16 + 4);
    shard_close(w);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size == size);
    EXPECT(shard_io_file(path, 0, &io), SHARD_OK);
    shard_handle *r = NULL;
    EXPECT(shard_open(codec, &io, SHARD_MODE_READ, &r), SHARD_OK);
    uint8_t back[4] = {0};
    EXPECT(shard_read_chunk(r, c1, 1, back, 4), SHARD_OK);
    CHECK(memcmp(back, chunk, 4) == 0);
    const uint64_t c0[1] = {0};
    EXPECT(shard_read_chunk(r, c0, 1, back, 4), SHARD_OK);
    CHECK(back[0] == 0 && back[3] == 0);
    shard_close(r);
    /* A table not handed over is released by the host, once; twice is harmless. */
    EXPECT(shard_io_file(path, 0, &io), SHARD_OK);
    shard_io_release(&io);
    shard_io_release(&io);
    shard_io_release(NULL);
    /* A failure names the file and the cause (a file where a directory must be). */
    char under[800];
    snprintf(under, sizeof under, "%s/shard", path);
    EXPECT(shard_io_file(under, 0, &io), SHARD_OK);
    EXPECT(shard_open(codec, &io, SHARD_MODE_WRITE_BUFFERED, &w), SHARD_OK);
    EXPECT(shard_write_chunk(w, c1, 1, chunk, 4), SHARD_OK);
    EXPECT(shard_finalize(w, &size), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == ENOTDIR);
    CHECK(strstr(last_error(), "sub/shard/shard") != NULL);
    CHECK(strstr(last_error(), "host's") == NULL);
    shard_close(w);
    EXPECT(shard_io_file(path, 1, &io), SHARD_ERR_INVALID_ARGUMENT);
    EXPECT(shard_io_file(NULL, 0, &io), SHARD_ERR_NULL_POINTER);
    shard_codec_free(codec);
}

/* The bytes of file `dir/key` into `buf` (at most `cap`); its length, or -1 when missing. */
static long read_file(const char *dir, const char *key, uint8_t *buf, size_t cap) {
    char path[800];
    snprintf(path, sizeof path, "%s/%s", dir, key);
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    long n = (long)fread(buf, 1, cap, f);
    fclose(f);
    return n;
}

/* The library's directory store writes the bytes examples-c/posix_io.c's store mode writes,
 * through the same region writes: whole shards, updates in place, a shard left all fill
 * deleted. */
static void test_directory_store_writes_posix_io_bytes(void) {
    const char *json =
        "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[8,12],\"data_type\":\"uint16\","
        "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[4,4]}},"
        "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
        "\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2,2],"
        "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
        "{\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":false}}],"
        "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
        "{\"name\":\"crc32c\"}]}}]}";
    char lib_dir[700], posix_dir[700];
    snprintf(lib_dir, sizeof lib_dir, "%s", fresh_dir("same-bytes-library"));
    snprintf(posix_dir, sizeof posix_dir, "%s", fresh_dir("same-bytes-posix"));
    mkdir(posix_dir, 0755);
    shard_store_callbacks lib, host;
    EXPECT(shard_store_directory(lib_dir, SHARD_STORE_CREATE, &lib), SHARD_OK);
    CHECK(posix_store_open(posix_dir, 0, &host) == 0);
    shard_array *a = NULL, *b = NULL;
    EXPECT(shard_array_open(json, strlen(json), &lib, &a), SHARD_OK);
    EXPECT(shard_array_open(json, strlen(json), &host, &b), SHARD_OK);
    shard_store_release(&lib);
    uint16_t all[8 * 12], part[3 * 5], zero[4 * 4] = {0};
    for (int i = 0; i < 8 * 12; i++) all[i] = (uint16_t)(i * 7 + 1);
    for (int i = 0; i < 3 * 5; i++) part[i] = (uint16_t)(500 + i);
    const uint64_t o[2] = {0, 0}, whole[2] = {8, 12}, at[2] = {3, 2}, ext[2] = {3, 5};
    const uint64_t corner[2] = {4, 8}, shard[2] = {4, 4};
    shard_array *both[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        EXPECT(shard_array_write_region(both[k], o, whole, 2, (const uint8_t *)all, sizeof all),
               SHARD_OK);
        EXPECT(shard_array_write_region(both[k], at, ext, 2, (const uint8_t *)part, sizeof part),
               SHARD_OK);
        EXPECT(shard_array_write_region(both[k], corner, shard, 2, (const uint8_t *)zero,
                                        sizeof zero),
               SHARD_OK);
    }
    shard_array_close(a);
    shard_array_close(b);
    static uint8_t x[1 << 16], y[1 << 16];
    int compared = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) {
            char key[32];
            snprintf(key, sizeof key, "c/%d/%d", i, j);
            long nx = read_file(lib_dir, key, x, sizeof x);
            long ny = read_file(posix_dir, key, y, sizeof y);
            CHECK(nx == ny && (nx < 0 || memcmp(x, y, (size_t)nx) == 0));
            compared += nx > 0;
        }
    CHECK(compared == 5); /* c/1/2 is all fill: deleted by both */
}

/* The hierarchy check_nodes.py reads with zarr-python and tensorstore. */
static void write_for_peers(const char *out) {
    shard_store_callbacks store;
    EXPECT(shard_store_directory(out, SHARD_STORE_CREATE, &store), SHARD_OK);
    const char attrs[] = "{\"description\": \"test_nodes\"}";
    EXPECT(shard_group_create(&store, "series", attrs, sizeof attrs - 1, SHARD_CREATE_OVERWRITE),
           SHARD_OK);
    shard_store_release(&store);
    write_series(out, "series/raw");
    /* series/cut: 4 frames written whole, shrunk to 4 x 3 x 3, grown back to 4 x 6 x 10. */
    EXPECT(shard_store_directory(out, 0, &store), SHARD_OK);
    const uint64_t shape[3] = {4, H, W}, small[3] = {4, 3, 3}, zero[3] = {0, 0, 0};
    shard_array_spec spec;
    series_spec(&spec, shape);
    spec.fill_value = "9";
    shard_array *a = NULL;
    EXPECT(shard_array_create_spec(&store, "series/cut", &spec, SHARD_CREATE_OVERWRITE, &a),
           SHARD_OK);
    uint16_t all[4 * H * W];
    for (uint64_t t = 0; t < 4; t++) fill_frame(t, all + t * H * W);
    EXPECT(shard_array_write_region(a, zero, shape, 3, (const uint8_t *)all, sizeof all), SHARD_OK);
    EXPECT(shard_array_resize(a, small, 3), SHARD_OK);
    EXPECT(shard_array_resize(a, shape, 3), SHARD_OK);
    shard_array_close(a);
    shard_store_release(&store);
}

int main(int argc, char **argv) {
    snprintf(g_root, sizeof g_root, "%s/zarrshard-test-nodes-%ld",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (long)getpid());
    mkdir(g_root, 0755);
    RUN(test_append_to_a_directory_and_read_back);
    RUN(test_no_dead_bytes_after_appending);
    RUN(test_reopened_partial_layer_is_completed);
    RUN(test_append_arguments_are_checked);
    RUN(test_paths_and_existing_nodes);
    RUN(test_directory_store_arguments);
    RUN(test_json_create_and_spec_json);
    RUN(test_resize_shows_fill_after_shrinking);
    RUN(test_attributes_and_groups);
    RUN(test_shard_io_file);
    RUN(test_directory_store_writes_posix_io_bytes);
    if (argc > 1) {
        t_failures = 0;
        write_for_peers(argv[1]);
        if (t_failures == 0) {
            g_passed++;
            printf("ok write_for_peers %s\n", argv[1]);
        } else {
            g_failed++;
            printf("FAIL write_for_peers\n");
        }
    }
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) g_failed++;
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed != 0;
}
