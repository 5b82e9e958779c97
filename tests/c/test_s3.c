/*
 * test_s3: arrays in an S3 bucket through the C API and examples-c/s3_io.c, against the
 * S3-compatible server tests/s3/server.py starts (moto):
 *
 *     python tests/s3/server.py run -- target/c/plain/test_s3
 *
 * S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_DEFAULT_REGION come from the
 * environment (server.py sets them). Besides every callback of s3_io's tables, compared with
 * plain GETs, and its listing over several pages: shards written whole and partly, appended
 * frames, multipart uploads (one failing part way), and the requests a region read costs cold
 * and warm. The test makes the bucket `zarrshard-c` and leaves there, under `c/`, the arrays
 * tests/c/check_s3.py reads back with zarr-python through s3fs: `image` (2-D), `patched` (the
 * image partly rewritten), `frames` (3-D, appended), `big` and `big-start` (one shard past the
 * multipart threshold, its index at the end and at the start). Element values come from the
 * value functions below, which check_s3.py computes the same way. One line per test, then
 * `N passed, M failed`.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3_io.h"
#include "zarrshard.h"

#include "check.h"

#define BUCKET "zarrshard-c"

static s3_client *g_client;

/* ---- the arrays' values (check_s3.py has the same) ------------------------------------- */

/* image: 64 x 96 uint16, shards 32 x 32 of 16 x 16 chunks (a 2 x 3 grid of shards). */
enum { IH = 64, IW = 96 };
static uint16_t image_value(uint64_t y, uint64_t x) { return (uint16_t)(y * 131 + x * 7 + 3); }

/* frames: (t, y, x) uint16, 20 x 24 frames, shards 4 x 20 x 24 of 2 x 10 x 12 chunks. */
enum { FRAMES = 10, FH = 20, FW = 24 };
static uint16_t frame_value(uint64_t t, uint64_t y, uint64_t x) {
    return (uint16_t)(t * 1000 + y * 30 + x + 1);
}

/* big: 2048 x 3072 uint16 uncompressed, one shard of 12 MiB (3 parts of 5 MiB at most) of
 * 256 x 256 chunks; `gen` tells the versions written over each other apart. */
enum { BH = 2048, BW = 3072 };
static uint16_t big_value(uint64_t y, uint64_t x, unsigned gen) {
    return (uint16_t)(y * 7 + x * 13 + (y * x >> 3) + gen * 101);
}

/* ---- helpers ------------------------------------------------------------------------------ */

/* A store over the bucket, its keys under `c/`; the library will own its userdata. */
static shard_store_callbacks store(void) {
    shard_store_callbacks s;
    memset(&s, 0, sizeof s);
    CHECK(s3_store_open(g_client, "c", SHARD_STORE_THREAD_SAFE, &s) == 0);
    return s;
}

/* A uint16 array spec of the given rank and extents (the arrays read by pointer later). */
static void uint16_spec(shard_array_spec *spec, size_t rank, const uint64_t *shape,
                        const uint64_t *shard, const uint64_t *chunk) {
    EXPECT(shard_array_spec_init(spec), SHARD_OK);
    spec->rank = rank;
    spec->shape = shape;
    spec->shard_shape = shard;
    spec->chunk_shape = chunk;
    spec->data_type = "uint16";
}

/* Create the array at `path` from `spec` (overwriting), or NULL after a failed check. */
static shard_array *create(const char *path, const shard_array_spec *spec) {
    shard_store_callbacks s = store();
    shard_array *a = NULL;
    shard_status st = shard_array_create_spec(&s, path, spec, SHARD_CREATE_OVERWRITE, &a);
    EXPECT(st, SHARD_OK);
    if (st != SHARD_OK) s3_store_discard(&s);
    return a;
}

static shard_array *open_path(const char *path) {
    shard_store_callbacks s = store();
    shard_array *a = NULL;
    shard_status st = shard_array_open_path(&s, path, &a);
    EXPECT(st, SHARD_OK);
    if (st != SHARD_OK) s3_store_discard(&s);
    return a;
}

/* The image's region [y0, y0 + h) x [x0, x0 + w), C order. */
static uint16_t *image_region(uint64_t y0, uint64_t x0, uint64_t h, uint64_t w) {
    uint16_t *b = malloc(h * w * sizeof *b);
    for (uint64_t y = 0; b != NULL && y < h; y++)
        for (uint64_t x = 0; x < w; x++) b[y * w + x] = image_value(y0 + y, x0 + x);
    return b;
}

/* Whether `got` (h x w at (y0, x0)) holds the image's values, or `fill` where x >= fill_from. */
static int image_equal(const uint16_t *got, uint64_t y0, uint64_t x0, uint64_t h, uint64_t w,
                       uint64_t fill_from, uint16_t fill) {
    for (uint64_t y = 0; y < h; y++)
        for (uint64_t x = 0; x < w; x++) {
            uint16_t want = x0 + x >= fill_from ? fill : image_value(y0 + y, x0 + x);
            if (got[y * w + x] != want) {
                printf("    (%llu, %llu): %u, expected %u\n", (unsigned long long)(y0 + y),
                       (unsigned long long)(x0 + x), got[y * w + x], want);
                return 0;
            }
        }
    return 1;
}

typedef struct {
    char keys[16][128];
    size_t n;
} key_list;

static void collect_key(void *state, const char *key, size_t len) {
    key_list *l = state;
    if (l->n < 16 && len < sizeof l->keys[0]) {
        memcpy(l->keys[l->n], key, len);
        l->keys[l->n][len] = '\0';
    }
    l->n++;
}

/* The keys the store lists under `prefix` of `c/`, through its own `list` callback. */
static int32_t list_keys(const char *prefix, key_list *out) {
    shard_store_callbacks s = store();
    memset(out, 0, sizeof *out);
    int32_t rc = s.list(s.userdata, prefix, collect_key, out);
    s3_store_discard(&s);
    return rc;
}

/* ---- tests -------------------------------------------------------------------------------- */

/* A 2-D array written shard-aligned, first in part (the rest reads as fill value, from
 * shards S3 answers 404 NoSuchKey for), then whole; regions read back equal. */
static void test_image(void) {
    const uint64_t shape[2] = {IH, IW}, shard[2] = {32, 32}, chunk[2] = {16, 16};
    shard_array_spec spec;
    uint16_spec(&spec, 2, shape, shard, chunk);
    spec.fill_value = "7";
    shard_array *a = create("image", &spec);
    if (a == NULL) return;

    /* Columns [0, 64): four of the six shards, each covered whole. */
    const uint64_t z[2] = {0, 0}, left[2] = {IH, 64};
    uint16_t *data = image_region(0, 0, IH, 64), *got = malloc(IH * IW * sizeof *got);
    EXPECT(shard_array_write_region(a, z, left, 2, (const uint8_t *)data, IH * 64 * 2), SHARD_OK);
    EXPECT(shard_array_read_region(a, z, shape, 2, (uint8_t *)got, IH * IW * 2), SHARD_OK);
    CHECK(image_equal(got, 0, 0, IH, IW, 64, 7));
    uint64_t stored = 0;
    EXPECT(shard_array_stored_shards(a, &stored), SHARD_OK); /* through `list` */
    CHECK(stored == 4);
    free(data);

    /* The rest, then the whole array and an unaligned region across shards. */
    const uint64_t at[2] = {0, 64}, right[2] = {IH, 32};
    data = image_region(0, 64, IH, 32);
    EXPECT(shard_array_write_region(a, at, right, 2, (const uint8_t *)data, IH * 32 * 2), SHARD_OK);
    EXPECT(shard_array_read_region(a, z, shape, 2, (uint8_t *)got, IH * IW * 2), SHARD_OK);
    CHECK(image_equal(got, 0, 0, IH, IW, UINT64_MAX, 0));
    const uint64_t s5[2] = {5, 7}, e5[2] = {40, 70};
    EXPECT(shard_array_read_region(a, s5, e5, 2, (uint8_t *)got, 40 * 70 * 2), SHARD_OK);
    CHECK(image_equal(got, 5, 7, 40, 70, UINT64_MAX, 0));
    EXPECT(shard_array_stored_shards(a, &stored), SHARD_OK);
    CHECK(stored == 6);
    free(data);
    free(got);
    shard_array_close(a);

    /* The bucket holds exactly zarr.json and the six shards, no temporary objects. */
    key_list keys;
    CHECK(list_keys("image/", &keys) == 0);
    CHECK(keys.n == 7);
    CHECK(strcmp(keys.keys[keys.n > 0 ? keys.n - 1 : 0], "image/zarr.json") == 0);
}

/* The object table of `key` under `c/`, through a store's open_object; its userdata is the
 * caller's to destroy. */
static shard_io_callbacks object(const char *key) {
    shard_store_callbacks s = store();
    shard_io_callbacks io;
    memset(&io, 0, sizeof io);
    CHECK(s.open_object(s.userdata, key, &io) == 0);
    s3_store_discard(&s);
    return io;
}

/* Write `key` under `c/` as a new object through the table, in two write_new calls. */
static int32_t put_object(const char *key, const char *text) {
    shard_io_callbacks io = object(key);
    void *n = NULL;
    size_t len = strlen(text), half = len / 2;
    int32_t rc = io.create_new(io.userdata, &n);
    if (rc == 0) rc = io.write_new(io.userdata, n, 0, (const uint8_t *)text, half);
    if (rc == 0) rc = io.write_new(io.userdata, n, half, (const uint8_t *)text + half, len - half);
    if (rc == 0) rc = io.commit_new(io.userdata, n, len);
    else if (n != NULL) io.discard_new(io.userdata, n);
    io.destroy(io.userdata);
    return rc;
}

/* Whether `key` (a full key) holds `text` exactly. */
static int object_is(const char *key, const char *text) {
    uint8_t *got = NULL;
    size_t len = 0;
    int same = s3_get_object(g_client, key, &got, &len) == 0 && len == strlen(text) &&
               (len == 0 || memcmp(got, text, len) == 0);
    free(got);
    return same;
}

/* Every callback of an object table on a stored shard, compared with a plain GET of the whole
 * object; on a missing object; and new objects committed and discarded. */
static void test_object_table(void) {
    uint8_t *whole = NULL;
    size_t len = 0;
    CHECK(s3_get_object(g_client, "c/image/c/0/0", &whole, &len) == 0);
    if (whole == NULL || len < 64) return;
    shard_io_callbacks io = object("image/c/0/0");
    uint8_t buf[256];
    size_t got = 0;
    uint64_t size = 0;
    s3_counts n;
    s3_client_reset_counts(g_client);
    CHECK(io.read(io.userdata, 3, 100, buf, &got) == 0 && got == 100 &&
          memcmp(buf, whole + 3, 100) == 0);
    CHECK(io.read(io.userdata, len - 10, 100, buf, &got) == 0 && got == 10 &&
          memcmp(buf, whole + len - 10, 10) == 0);                      /* short: the end */
    CHECK(io.read(io.userdata, len + 5, 10, buf, &got) == 0 && got == 0); /* past the end */
    CHECK(io.read_suffix(io.userdata, 20, buf, &got, &size) == 0 && got == 20 && size == len &&
          memcmp(buf, whole + len - 20, 20) == 0);
    CHECK(io.size(io.userdata, &size) == 0 && size == len);
    uint8_t b0[16], b1[16], b2[4];
    uint8_t *const bufs[3] = {b0, b1, b2};
    const uint64_t offs[3] = {0, len - 8, len + 100};
    const size_t lens[3] = {16, 16, 4};
    size_t outs[3] = {99, 99, 99};
    CHECK(io.read_vectored(io.userdata, 3, offs, lens, bufs, outs) == 0);
    CHECK(outs[0] == 16 && outs[1] == 8 && outs[2] == 0);
    CHECK(memcmp(b0, whole, 16) == 0 && memcmp(b1, whole + len - 8, 8) == 0);
    s3_client_counts(g_client, &n);
    CHECK(n.get == 7 && n.head == 1); /* one request per range */
    io.destroy(io.userdata);
    free(whole);

    /* A missing key reads as missing from every callback; removing it succeeds. */
    io = object("image/c/9/9");
    CHECK(io.read(io.userdata, 0, 10, buf, &got) == SHARD_IO_NOT_FOUND);
    CHECK(io.read_suffix(io.userdata, 10, buf, &got, &size) == SHARD_IO_NOT_FOUND);
    CHECK(io.size(io.userdata, &size) == SHARD_IO_NOT_FOUND);
    CHECK(io.read_vectored(io.userdata, 1, offs, lens, bufs, outs) == SHARD_IO_NOT_FOUND);
    CHECK(io.remove(io.userdata) == 0);
    io.destroy(io.userdata);

    /* New objects: committed whole, or discarded leaving the old one; then removed. */
    CHECK(put_object("obj/a", "hello world") == 0);
    CHECK(object_is("c/obj/a", "hello world"));
    io = object("obj/a");
    void *nw = NULL;
    CHECK(io.create_new(io.userdata, &nw) == 0);
    CHECK(io.write_new(io.userdata, nw, 0, (const uint8_t *)"other", 5) == 0);
    io.discard_new(io.userdata, nw);
    CHECK(object_is("c/obj/a", "hello world"));
    CHECK(io.create_new(io.userdata, &nw) == 0);
    CHECK(io.write_new(io.userdata, nw, 0, (const uint8_t *)"other", 5) == 0);
    CHECK(io.commit_new(io.userdata, nw, 4) == EINVAL); /* not the length written */
    CHECK(object_is("c/obj/a", "hello world"));
    CHECK(io.remove(io.userdata) == 0);
    CHECK(io.size(io.userdata, &size) == SHARD_IO_NOT_FOUND);
    io.destroy(io.userdata);
}

/* A listing over several pages (continuation tokens), keys with characters XML escapes. */
static void test_listing(void) {
    static const char *const names[5] = {"list/a&b", "list/c<d>", "list/e'f\"", "list/g h",
                                         "list/sub/i"};
    for (size_t k = 0; k < 5; k++) CHECK(put_object(names[k], names[k]) == 0);
    s3_client_set_list_page(g_client, 2);
    s3_client_reset_counts(g_client);
    key_list keys;
    CHECK(list_keys("list/", &keys) == 0);
    s3_counts n;
    s3_client_counts(g_client, &n);
    CHECK(n.list == 3); /* 2 + 2 + 1 */
    CHECK(keys.n == 5);
    for (size_t k = 0; k < 5 && k < keys.n; k++) CHECK(strcmp(keys.keys[k], names[k]) == 0);
    CHECK(list_keys("list/sub/", &keys) == 0 && keys.n == 1);
    CHECK(list_keys("nothing/", &keys) == 0 && keys.n == 0);
    s3_client_set_list_page(g_client, 0);
}

/* `patched`: the image, then a region covering six shards partly rewritten with these. */
static uint16_t patch_value(uint64_t y, uint64_t x) { return (uint16_t)(y * 3 + x * 5 + 40000); }
enum { PY = 10, PX = 20, PH = 40, PW = 50 };

static int patched_equal(const uint16_t *got) {
    for (uint64_t y = 0; y < IH; y++)
        for (uint64_t x = 0; x < IW; x++) {
            int in = y >= PY && y < PY + PH && x >= PX && x < PX + PW;
            if (got[y * IW + x] != (in ? patch_value(y, x) : image_value(y, x))) return 0;
        }
    return 1;
}

/* A region write covering shards partly, over a store without `write`: each such shard is
 * read, updated and written whole as a new object (no write in place exists on S3). */
static void test_partial_write(void) {
    const uint64_t shape[2] = {IH, IW}, shard[2] = {32, 32}, chunk[2] = {16, 16};
    shard_array_spec spec;
    uint16_spec(&spec, 2, shape, shard, chunk);
    shard_array *a = create("patched", &spec);
    if (a == NULL) return;
    const uint64_t z[2] = {0, 0}, at[2] = {PY, PX}, ext[2] = {PH, PW};
    uint16_t *data = image_region(0, 0, IH, IW), *got = malloc(IH * IW * sizeof *got);
    uint16_t *patch = malloc(PH * PW * sizeof *patch);
    for (uint64_t y = 0; y < PH; y++)
        for (uint64_t x = 0; x < PW; x++) patch[y * PW + x] = patch_value(PY + y, PX + x);
    EXPECT(shard_array_write_region(a, z, shape, 2, (const uint8_t *)data, IH * IW * 2), SHARD_OK);
    EXPECT(shard_array_write_region(a, at, ext, 2, (const uint8_t *)patch, PH * PW * 2), SHARD_OK);
    EXPECT(shard_array_read_region(a, z, shape, 2, (uint8_t *)got, IH * IW * 2), SHARD_OK);
    CHECK(patched_equal(got));
    shard_array_close(a);
    /* And through a new handle, which has nothing cached. */
    a = open_path("patched");
    memset(got, 0, IH * IW * sizeof *got);
    if (a != NULL)
        EXPECT(shard_array_read_region(a, z, shape, 2, (uint8_t *)got, IH * IW * 2), SHARD_OK);
    CHECK(patched_equal(got));
    shard_array_close(a);
    free(data);
    free(patch);
    free(got);
}

/* Frames appended one at a time to a 3-D array (the last shard layer flushed partial), then
 * read back through a new handle. */
static void test_frames(void) {
    const uint64_t empty[3] = {0, FH, FW}, shard[3] = {4, FH, FW}, chunk[3] = {2, 10, 12};
    static const char *const names[3] = {"t", "y", "x"};
    shard_array_spec spec;
    uint16_spec(&spec, 3, empty, shard, chunk);
    spec.compression_level = 1;
    spec.dimension_names = names;
    shard_array *a = create("frames", &spec);
    if (a == NULL) return;
    uint16_t frame[FH * FW];
    const uint64_t block[3] = {1, FH, FW};
    for (uint64_t t = 0; t < FRAMES; t++) {
        for (uint64_t y = 0; y < FH; y++)
            for (uint64_t x = 0; x < FW; x++) frame[y * FW + x] = frame_value(t, y, x);
        EXPECT(shard_array_append(a, 0, block, 3, (const uint8_t *)frame, sizeof frame), SHARD_OK);
    }
    EXPECT(shard_array_flush(a), SHARD_OK);
    shard_array_close(a);

    a = open_path("frames");
    if (a == NULL) return;
    uint64_t shape[3] = {0};
    EXPECT(shard_array_shape(a, shape, 3), SHARD_OK);
    CHECK(shape[0] == FRAMES && shape[1] == FH && shape[2] == FW);
    static uint16_t all[FRAMES * FH * FW];
    const uint64_t z[3] = {0, 0, 0}, full[3] = {FRAMES, FH, FW};
    EXPECT(shard_array_read_region(a, z, full, 3, (uint8_t *)all, sizeof all), SHARD_OK);
    size_t bad = 0;
    for (uint64_t t = 0; t < FRAMES; t++)
        for (uint64_t y = 0; y < FH; y++)
            for (uint64_t x = 0; x < FW; x++)
                bad += all[(t * FH + y) * FW + x] != frame_value(t, y, x);
    CHECK(bad == 0);
    shard_array_close(a);
}

static uint16_t *big_data(unsigned gen) {
    uint16_t *b = malloc((size_t)BH * BW * sizeof *b);
    for (uint64_t y = 0; b != NULL && y < BH; y++)
        for (uint64_t x = 0; x < BW; x++) b[y * BW + x] = big_value(y, x, gen);
    return b;
}

static size_t big_mismatches(const shard_array *a, unsigned gen) {
    uint16_t *got = malloc((size_t)BH * BW * sizeof *got);
    const uint64_t z[2] = {0, 0}, shape[2] = {BH, BW};
    if (got == NULL) return SIZE_MAX;
    EXPECT(shard_array_read_region(a, z, shape, 2, (uint8_t *)got, (size_t)BH * BW * 2), SHARD_OK);
    size_t bad = 0;
    for (uint64_t y = 0; y < BH; y++)
        for (uint64_t x = 0; x < BW; x++) bad += got[y * BW + x] != big_value(y, x, gen);
    free(got);
    return bad;
}

/* A 12 MiB shard goes up as a multipart upload of 5 MiB parts; one failing part leaves the
 * stored object as it was, byte for byte, and no other object; a retry then replaces it. */
static void test_multipart(void) {
    const uint64_t shape[2] = {BH, BW}, chunk[2] = {256, 256};
    shard_array_spec spec;
    uint16_spec(&spec, 2, shape, shape, chunk); /* one shard */
    spec.compressor = "none";
    CHECK(s3_client_set_part_size(g_client, S3_MIN_PART_SIZE - 1) == EINVAL);
    CHECK(s3_client_set_part_size(g_client, S3_MIN_PART_SIZE) == 0);
    shard_array *a = create("big", &spec);
    if (a == NULL) return;
    const uint64_t z[2] = {0, 0};
    uint16_t *v1 = big_data(1), *v2 = big_data(2);
    const size_t bytes = (size_t)BH * BW * 2;

    s3_client_reset_counts(g_client);
    EXPECT(shard_array_write_region(a, z, shape, 2, (const uint8_t *)v1, bytes), SHARD_OK);
    s3_counts n;
    s3_client_counts(g_client, &n);
    printf("    first write: %llu CreateMultipartUpload, %llu UploadPart, %llu Complete, "
           "%llu PUT\n",
           (unsigned long long)n.create_multipart, (unsigned long long)n.upload_part,
           (unsigned long long)n.complete_multipart, (unsigned long long)n.put);
    /* 12 MiB and the index in 5 MiB parts: 3 parts; the shard is the only PUT besides them. */
    CHECK(n.create_multipart == 1 && n.upload_part == 3 && n.complete_multipart == 1);
    CHECK(n.abort_multipart == 0 && n.put == n.upload_part);
    CHECK(big_mismatches(a, 1) == 0);

    uint8_t *before = NULL, *after = NULL;
    size_t before_len = 0, after_len = 0;
    CHECK(s3_get_object(g_client, "c/big/c/0/0", &before, &before_len) == 0);
    CHECK(before_len > (size_t)2 * S3_MIN_PART_SIZE);

    /* The second part fails: the write fails, the upload is aborted, the object unchanged. */
    s3_client_reset_counts(g_client);
    s3_client_fail_upload_part(g_client, 2);
    EXPECT(shard_array_write_region(a, z, shape, 2, (const uint8_t *)v2, bytes), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == S3_IO_INJECTED);
    s3_client_counts(g_client, &n);
    CHECK(n.create_multipart == 1 && n.upload_part == 1 && n.abort_multipart == 1);
    CHECK(n.complete_multipart == 0);
    CHECK(s3_get_object(g_client, "c/big/c/0/0", &after, &after_len) == 0);
    CHECK(after_len == before_len && before != NULL && after != NULL &&
          memcmp(before, after, before_len) == 0);
    key_list keys;
    CHECK(list_keys("big/", &keys) == 0);
    CHECK(keys.n == 2 && strcmp(keys.keys[0], "big/c/0/0") == 0 &&
          strcmp(keys.keys[1], "big/zarr.json") == 0);
    CHECK(big_mismatches(a, 1) == 0);

    /* Without the failure the same write goes through. */
    EXPECT(shard_array_write_region(a, z, shape, 2, (const uint8_t *)v2, bytes), SHARD_OK);
    CHECK(big_mismatches(a, 2) == 0);
    free(before);
    free(after);
    free(v1);
    free(v2);
    shard_array_close(a);
    CHECK(s3_client_set_part_size(g_client, S3_DEFAULT_PART_SIZE) == 0);
}

/* With the index at the start, the library writes it last, at offset 0: into the first part,
 * which s3_io holds back until the commit for that reason. */
static void test_multipart_index_at_start(void) {
    const uint64_t shape[2] = {BH, BW}, chunk[2] = {256, 256};
    shard_array_spec spec;
    uint16_spec(&spec, 2, shape, shape, chunk);
    spec.compressor = "none";
    spec.index_location = SHARD_INDEX_AT_START;
    CHECK(s3_client_set_part_size(g_client, S3_MIN_PART_SIZE) == 0);
    shard_array *a = create("big-start", &spec);
    if (a == NULL) return;
    const uint64_t z[2] = {0, 0};
    uint16_t *v3 = big_data(3);
    s3_client_reset_counts(g_client);
    EXPECT(shard_array_write_region(a, z, shape, 2, (const uint8_t *)v3, (size_t)BH * BW * 2),
           SHARD_OK);
    s3_counts n;
    s3_client_counts(g_client, &n);
    CHECK(n.create_multipart == 1 && n.upload_part == 3 && n.complete_multipart == 1);
    CHECK(big_mismatches(a, 3) == 0);
    free(v3);
    shard_array_close(a);
    CHECK(s3_client_set_part_size(g_client, S3_DEFAULT_PART_SIZE) == 0);
}

/* The requests of reading the image's inner chunk at (y, x) through `a`, whose values it
 * checks; -1 when they differ. */
static long long chunk_gets(const shard_array *a, const char *what, uint64_t y, uint64_t x) {
    uint16_t got[16 * 16];
    const uint64_t at[2] = {y, x}, one[2] = {16, 16};
    s3_counts n;
    s3_client_reset_counts(g_client);
    EXPECT(shard_array_read_region(a, at, one, 2, (uint8_t *)got, sizeof got), SHARD_OK);
    s3_client_counts(g_client, &n);
    printf("    %s: %llu GET, %llu HEAD\n", what, (unsigned long long)n.get,
           (unsigned long long)n.head);
    CHECK(n.head == 0 && n.put == 0 && n.post == 0 && n.del == 0);
    return image_equal(got, y, x, 16, 16, UINT64_MAX, 0) ? (long long)n.get : -1;
}

/* Requests of region reads of one inner chunk through a handle opened by path: a cold read
 * is two GETs (the shard index, by a suffix range, and the chunk), nothing else; a warm one,
 * of another chunk of the same shard, one GET (the handle keeps the shard's index, until told
 * to forget it or to cache nothing). */
static void test_request_counts(void) {
    shard_array *a = open_path("image");
    if (a == NULL) return;
    CHECK(chunk_gets(a, "cold", 16, 32) == 2);
    CHECK(chunk_gets(a, "warm", 0, 48) == 1);
    /* Forgotten, the index is read again once; with the cache off, every time. */
    EXPECT(shard_array_forget_cached_indexes(a), SHARD_OK);
    CHECK(chunk_gets(a, "forgotten", 16, 48) == 2);
    CHECK(chunk_gets(a, "warm again", 16, 32) == 1);
    EXPECT(shard_array_set_index_cache(a, 0), SHARD_OK);
    CHECK(chunk_gets(a, "no cache", 0, 32) == 2);
    CHECK(chunk_gets(a, "no cache", 0, 48) == 2);
    shard_array_close(a);
}

typedef struct {
    const shard_array *array;
    int ok;
} reader_arg;

static void *read_whole_image(void *p) {
    reader_arg *r = p;
    uint16_t *got = malloc(IH * IW * sizeof *got);
    const uint64_t z[2] = {0, 0}, shape[2] = {IH, IW};
    r->ok = got != NULL;
    for (int k = 0; r->ok && k < 3; k++) {
        shard_status st = shard_array_read_region(r->array, z, shape, 2, (uint8_t *)got,
                                                  IH * IW * 2);
        r->ok = st == SHARD_OK && image_equal(got, 0, 0, IH, IW, UINT64_MAX, 0);
        /* Cold every time, so that requests run on every thread at once. */
        shard_array_forget_cached_indexes(r->array);
    }
    free(got);
    return NULL;
}

/* Four threads read one handle at once; the store's callbacks also run on the library's
 * worker threads (SHARD_STORE_THREAD_SAFE): every read equal, every request counted. */
static void test_concurrent_reads(void) {
    shard_array *a = open_path("image");
    if (a == NULL) return;
    pthread_t t[4];
    reader_arg args[4];
    s3_client_reset_counts(g_client);
    for (int k = 0; k < 4; k++) {
        args[k].array = a;
        args[k].ok = 0;
        CHECK(pthread_create(&t[k], NULL, read_whole_image, &args[k]) == 0);
    }
    for (int k = 0; k < 4; k++) {
        pthread_join(t[k], NULL);
        CHECK(args[k].ok);
    }
    s3_counts n;
    s3_client_counts(g_client, &n);
    /* Each whole read: the chunks of each of the six shards (one coalesced range each) and
     * the indexes not cached by then (the threads share the handle's cache): 6 to 12 GETs,
     * and nothing but GETs. */
    printf("    12 whole reads: %llu GET\n", (unsigned long long)n.get);
    CHECK(n.get >= 4 * 3 * 6 && n.get <= 4 * 3 * 12);
    CHECK(n.head == 0 && n.put == 0 && n.post == 0 && n.del == 0);
    shard_array_close(a);
}

/* A missing bucket is an error (HTTP 404, NoSuchBucket), not an array of fill values. */
static void test_missing_bucket(void) {
    s3_client *other = NULL;
    const char *endpoint = getenv("S3_ENDPOINT");
    CHECK(s3_client_new(endpoint, getenv("AWS_DEFAULT_REGION"), getenv("AWS_ACCESS_KEY_ID"),
                        getenv("AWS_SECRET_ACCESS_KEY"), "no-such-bucket", &other) == 0);
    if (other == NULL) return;
    shard_store_callbacks s;
    CHECK(s3_store_open(other, "c", 0, &s) == 0);
    shard_io_callbacks io;
    CHECK(s.open_object(s.userdata, "image/c/0/0", &io) == 0);
    uint8_t buf[16];
    size_t got = 0;
    CHECK(io.read(io.userdata, 0, sizeof buf, buf, &got) == 404);
    io.destroy(io.userdata);
    shard_array *a = NULL;
    EXPECT(shard_array_open_path(&s, "image", &a), SHARD_ERR_IO);
    CHECK(shard_last_io_code() == 404);
    s3_store_discard(&s);
    s3_client_free(other);
}

int main(void) {
    const char *endpoint = getenv("S3_ENDPOINT"), *key = getenv("AWS_ACCESS_KEY_ID"),
               *secret = getenv("AWS_SECRET_ACCESS_KEY"), *region = getenv("AWS_DEFAULT_REGION");
    if (endpoint == NULL || key == NULL || secret == NULL || region == NULL) {
        fprintf(stderr, "test_s3: run it through tests/s3/server.py run -- test_s3 "
                        "(S3_ENDPOINT and the AWS_* variables are not set)\n");
        return 2;
    }
    if (s3_client_new(endpoint, region, key, secret, BUCKET, &g_client) != 0 ||
        s3_create_bucket(g_client) != 0) {
        fprintf(stderr, "test_s3: cannot create the bucket %s at %s\n", BUCKET, endpoint);
        s3_client_free(g_client);
        return 2;
    }
    RUN(test_image);
    RUN(test_object_table);
    RUN(test_listing);
    RUN(test_partial_write);
    RUN(test_frames);
    RUN(test_multipart);
    RUN(test_multipart_index_at_start);
    RUN(test_request_counts);
    RUN(test_concurrent_reads);
    RUN(test_missing_bucket);
    s3_client_free(g_client);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
