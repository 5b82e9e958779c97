/* Fault injection through the C callback table (SQLite-style): a back end that, at its N-th
 * call, fails with an error code, returns a short read, or writes half its bytes and then
 * fails — for every N over a whole write (each mode, with the temporary-then-commit pattern)
 * and a whole read (with and without read_suffix). Each fault must give a non-OK status
 * (SHARD_ERR_IO with the host's code for failed calls; SHARD_ERR_CORRUPT or SHARD_ERR_IO for a
 * short read), the back end must be destroyed exactly once, and the committed shard must stay
 * the previous one, readable and byte-identical. Run plain, under ASan+UBSan and valgrind
 * (tests/c/run.sh): zero errors, zero leaks. Ends with `N passed, M failed`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrshard.h"

enum fault { F_CODE, F_SHORT, F_PARTIAL };
static const char *fault_name[] = {"error code", "short read", "partial write"};
#define CODE 4242

typedef struct {
    uint8_t *data;
    size_t len;
    int exists;
    unsigned long calls, fail_at;
    enum fault fault;
    int fired, destroyed;
} obj;

static int g_passed, g_failed;
#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (cond) {                                                                          \
            g_passed++;                                                                      \
        } else {                                                                             \
            g_failed++;                                                                      \
            printf("FAIL line %d: ", __LINE__);                                              \
            printf(__VA_ARGS__);                                                             \
            printf("\n");                                                                    \
        }                                                                                    \
    } while (0)

/* Count a call; non-zero when this one is to fail. */
static int hit(obj *o) {
    if (++o->calls != o->fail_at) return 0;
    o->fired++;
    return 1;
}

static int grow(obj *o, size_t end) {
    if (end > o->len) {
        uint8_t *p = (uint8_t *)realloc(o->data, end ? end : 1);
        if (!p) return 12;
        memset(p + o->len, 0, end - o->len);
        o->data = p;
        o->len = end;
    }
    o->exists = 1;
    return 0;
}

static int32_t cb_read(void *ud, uint64_t off, size_t len, uint8_t *buf, size_t *got) {
    obj *o = (obj *)ud;
    size_t start, n;
    int h = hit(o);
    if (h && o->fault != F_SHORT) return CODE;
    if (!o->exists) return SHARD_IO_NOT_FOUND;
    start = off < o->len ? (size_t)off : o->len;
    n = len < o->len - start ? len : o->len - start;
    if (h) n /= 2;
    memcpy(buf, o->data + start, n);
    *got = n;
    return 0;
}

static int32_t cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *got, uint64_t *size) {
    obj *o = (obj *)ud;
    size_t n;
    int h = hit(o);
    if (h && o->fault != F_SHORT) return CODE;
    if (!o->exists) return SHARD_IO_NOT_FOUND;
    n = len < o->len ? len : o->len;
    memcpy(buf, o->data + o->len - n, n);
    *got = h ? n / 2 : n;
    *size = o->len;
    return 0;
}

static int32_t cb_size(void *ud, uint64_t *size) {
    obj *o = (obj *)ud;
    if (hit(o)) return CODE;
    if (!o->exists) return SHARD_IO_NOT_FOUND;
    *size = o->len;
    return 0;
}

static int32_t cb_write(void *ud, uint64_t off, const uint8_t *buf, size_t len) {
    obj *o = (obj *)ud;
    int h = hit(o), rc;
    size_t n = len;
    if (h && o->fault != F_PARTIAL) return CODE;
    if (h) n = len / 2;
    if ((rc = grow(o, (size_t)off + n)) != 0) return rc;
    memcpy(o->data + off, buf, n);
    return h ? CODE : 0;
}

static int32_t cb_truncate(void *ud, uint64_t len) {
    obj *o = (obj *)ud;
    if (hit(o)) return CODE;
    if (len > o->len) return grow(o, (size_t)len);
    o->len = (size_t)len;
    o->exists = 1;
    return 0;
}

static int32_t cb_remove(void *ud) {
    obj *o = (obj *)ud;
    if (hit(o)) return CODE;
    o->exists = 0;
    o->len = 0;
    return 0;
}

static void cb_destroy(void *ud) { ((obj *)ud)->destroyed++; }

static shard_io_callbacks table(obj *o, int with_suffix) {
    shard_io_callbacks io;
    memset(&io, 0, sizeof io);
    io.version = SHARD_IO_VERSION;
    io.userdata = o;
    io.read = cb_read;
    io.read_suffix = with_suffix ? cb_read_suffix : NULL;
    io.size = cb_size;
    io.write = cb_write;
    io.truncate = cb_truncate;
    io.remove = cb_remove;
    io.destroy = cb_destroy;
    return io;
}

static void obj_copy(obj *dst, const obj *src) {
    memset(dst, 0, sizeof *dst);
    dst->exists = src->exists;
    dst->len = src->len;
    dst->data = (uint8_t *)malloc(src->len ? src->len : 1);
    if (src->len) memcpy(dst->data, src->data, src->len);
}

#define NCHUNKS 16
#define CHUNK_BYTES 8 /* 2x2 uint16 */

static void chunk_of(int version, unsigned i, uint8_t *out) {
    unsigned k;
    for (k = 0; k < CHUNK_BYTES / 2; k++) {
        uint16_t v = (uint16_t)(i == 5 ? 0 : version * 1000 + i * 10 + k);
        memcpy(out + 2 * k, &v, 2);
    }
}

/* Write version `version` of every chunk into `o` in `mode`: the first non-OK status. The
 * handle is always closed. */
static int g_opened; /* whether the last write_all / read_all opened its handle */

static shard_status write_all(const shard_codec *c, obj *o, uint32_t mode, int version) {
    shard_io_callbacks io = table(o, 1);
    shard_handle *h = NULL;
    uint8_t buf[CHUNK_BYTES];
    unsigned i;
    shard_status st = shard_open(c, &io, mode, &h);
    g_opened = st == SHARD_OK;
    if (st != SHARD_OK) return st;
    for (i = 0; i < NCHUNKS && st == SHARD_OK; i++) {
        uint64_t cc[2] = {i / 4, i % 4};
        chunk_of(version, i, buf);
        st = shard_write_chunk(h, cc, 2, buf, sizeof buf);
    }
    if (st == SHARD_OK) st = shard_finalize(h, NULL);
    shard_close(h);
    return st;
}

/* Read every chunk (one by one, then all at once) and compare with `version`: the first
 * non-OK status; wrong data is a failed check and SHARD_ERR_CORRUPT. */
static shard_status read_all(const shard_codec *c, obj *o, int with_suffix, int version) {
    shard_io_callbacks io = table(o, with_suffix);
    shard_handle *h = NULL;
    uint8_t buf[CHUNK_BYTES], want[CHUNK_BYTES], all[NCHUNKS * CHUNK_BYTES];
    uint64_t coords[2 * NCHUNKS];
    unsigned i;
    shard_status st = shard_open(c, &io, SHARD_MODE_READ, &h);
    g_opened = st == SHARD_OK;
    if (st != SHARD_OK) return st;
    for (i = 0; i < NCHUNKS && st == SHARD_OK; i++) {
        coords[2 * i] = i / 4;
        coords[2 * i + 1] = i % 4;
        st = shard_read_chunk(h, coords + 2 * i, 2, buf, sizeof buf);
        chunk_of(version, i, want);
        if (st == SHARD_OK && memcmp(buf, want, sizeof buf) != 0) {
            CHECK(0, "chunk %u read as other data", i);
            st = SHARD_ERR_CORRUPT;
        }
    }
    if (st == SHARD_OK) st = shard_read_chunks(h, coords, NCHUNKS, 2, all, sizeof all);
    for (i = 0; i < NCHUNKS && st == SHARD_OK; i++) {
        chunk_of(version, i, want);
        if (memcmp(all + i * CHUNK_BYTES, want, CHUNK_BYTES) != 0) {
            CHECK(0, "chunk %u read (many) as other data", i);
            st = SHARD_ERR_CORRUPT;
        }
    }
    shard_close(h);
    return st;
}

static const char *CONFIGS[] = {
    "{\"chunk_shape\": [2, 2], \"codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}, {\"name\": \"zstd\", \"configuration\": {\"level\": 1}}], "
    "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
    "{\"name\": \"crc32c\"}], \"index_location\": \"end\"}",
    "{\"chunk_shape\": [2, 2], \"codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}], \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
    "{\"endian\": \"little\"}}], \"index_location\": \"start\"}",
};

static shard_codec *codec(const char *cfg) {
    shard_codec *c = NULL;
    const uint64_t shape[2] = {8, 8};
    shard_status st =
        shard_codec_from_config(cfg, strlen(cfg), "uint16", 6, shape, 2, "0", 1, &c);
    CHECK(st == SHARD_OK, "codec: status %d", (int)st);
    return c;
}

/* Every call of a whole write in `mode`, failed in turn with `fault`, with the
 * temporary-then-commit pattern over a committed version 1. */
static unsigned long sweep_write(const shard_codec *c, uint32_t mode, enum fault f) {
    obj committed, tmp;
    unsigned long n, total, faults = 0;
    memset(&committed, 0, sizeof committed);
    CHECK(write_all(c, &committed, SHARD_MODE_WRITE_BUFFERED, 1) == SHARD_OK, "version 1");
    committed.calls = 0;
    /* A clean run counts the calls. */
    obj_copy(&tmp, &committed);
    CHECK(write_all(c, &tmp, mode, 2) == SHARD_OK, "mode %u clean run", (unsigned)mode);
    total = tmp.calls;
    CHECK(read_all(c, &tmp, 1, 2) == SHARD_OK, "mode %u: version 2 reads back", (unsigned)mode);
    free(tmp.data);
    for (n = 1; n <= total; n++) {
        shard_status st;
        /* Updates start from a copy of the committed shard; the others from nothing. */
        if (mode == SHARD_MODE_UPDATE_APPEND || mode == SHARD_MODE_UPDATE_IN_PLACE) {
            obj_copy(&tmp, &committed);
        } else {
            memset(&tmp, 0, sizeof tmp);
        }
        tmp.fail_at = n;
        tmp.fault = f;
        st = write_all(c, &tmp, mode, 2);
        /* The handle destroys the back end once; a failed open leaves it with the host. */
        CHECK(tmp.destroyed == g_opened, "destroyed %d times (opened %d)", tmp.destroyed,
              g_opened);
        if (tmp.fired) {
            faults++;
            CHECK(st != SHARD_OK, "mode %u %s at call %lu of %lu: SHARD_OK", (unsigned)mode,
                  fault_name[f], n, total);
            if (f == F_CODE || f == F_PARTIAL) {
                CHECK(st == SHARD_ERR_IO && shard_last_io_code() == CODE,
                      "mode %u %s at call %lu: status %d code %d", (unsigned)mode,
                      fault_name[f], n, (int)st, (int)shard_last_io_code());
            } else {
                CHECK(st == SHARD_ERR_CORRUPT || st == SHARD_ERR_IO,
                      "mode %u short read at call %lu: status %d", (unsigned)mode, n, (int)st);
            }
            /* Not committed: the previous shard is as it was and reads as version 1. */
            CHECK(read_all(c, &committed, 1, 1) == SHARD_OK, "previous shard unreadable");
        } else {
            CHECK(st == SHARD_OK, "mode %u: call %lu not a fault yet status %d", (unsigned)mode,
                  n, (int)st);
        }
        free(tmp.data);
    }
    free(committed.data);
    return faults;
}

static unsigned long sweep_read(const shard_codec *c, int with_suffix, enum fault f) {
    obj o;
    unsigned long n, total, faults = 0;
    memset(&o, 0, sizeof o);
    CHECK(write_all(c, &o, SHARD_MODE_WRITE_BUFFERED, 1) == SHARD_OK, "version 1");
    o.calls = 0;
    CHECK(read_all(c, &o, with_suffix, 1) == SHARD_OK, "clean read");
    total = o.calls;
    for (n = 1; n <= total; n++) {
        shard_status st;
        o.calls = 0;
        o.fired = 0;
        o.destroyed = 0;
        o.fail_at = n;
        o.fault = f;
        st = read_all(c, &o, with_suffix, 1);
        CHECK(o.fired == 1, "read call %lu: fired %d", n, o.fired);
        CHECK(o.destroyed == g_opened, "destroyed %d times (opened %d)", o.destroyed, g_opened);
        if (f == F_SHORT) {
            CHECK(st == SHARD_ERR_CORRUPT || st == SHARD_ERR_IO,
                  "short read at call %lu of %lu: status %d", n, total, (int)st);
        } else {
            CHECK(st == SHARD_ERR_IO && shard_last_io_code() == CODE,
                  "failed read call %lu of %lu: status %d code %d", n, total, (int)st,
                  (int)shard_last_io_code());
        }
        faults++;
    }
    free(o.data);
    return faults;
}

int main(void) {
    unsigned long writes = 0, reads = 0;
    unsigned k;
    uint32_t mode;
    int f;
    shard_set_threads(1);
    for (k = 0; k < sizeof CONFIGS / sizeof CONFIGS[0]; k++) {
        shard_codec *c = codec(CONFIGS[k]);
        for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++)
            for (f = F_CODE; f <= F_PARTIAL; f++) writes += sweep_write(c, mode, (enum fault)f);
        for (f = F_CODE; f <= F_SHORT; f++) {
            reads += sweep_read(c, 1, (enum fault)f);
            reads += sweep_read(c, 0, (enum fault)f);
        }
        shard_codec_free(c);
    }
    printf("faults injected: %lu in writes, %lu in reads\n", writes, reads);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed == 0 ? 0 : 1;
}
