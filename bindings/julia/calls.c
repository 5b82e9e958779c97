/*
 * calls.c: the C calls ZarrShard.jl's example makes, made from C against the real library.
 *
 * No Julia runtime is available where this project is built, so bindings/julia/check proves
 * statically that every ccall matches the header, and this program proves that the sequence
 * of calls the Julia example (ZarrShard/example/example.jl) makes works against the built
 * libzarrshard and reads what zarr-python wrote: EXACTLY the same C calls, in the same order,
 * with the same argument types and values, through callbacks that do what the Julia ShardIO
 * implementations do (MemoryShardIO; ShardFile is the library's own file I/O), and the same column-major index
 * transform the Julian layer applies (Julia A[x, y] is C element [y-1][x-1]).
 *
 *     calls FIXTURE_DIR [EXAMPLE_JL]   (FIXTURE_DIR/fixture.zarr and fixture.raw from
 *                                       bindings/make_fixture.py; EXAMPLE_JL: example.jl, to
 *                                       compare its CONFIG3 literal with ours)
 *
 * Each example line [n] maps to its C calls in the comments below, "julia: ... -> C: ...".
 * Prints one line per check and ends with "N passed, M failed"; exit status 1 on failure.
 *
 * Beyond the Julia example it also counts callback invocations, to check the contract the
 * binding relies on (one read_suffix at open, one read per stored chunk, none for an empty
 * one, destroy exactly once per successful open, called from shard_close), and, after the
 * example's kerchunk_refs ([38g]), makes calls the example does not (marked "Not in the
 * example"): the copying shard_array_refs it replaced, for the same text after twice the
 * index reads, and a failing sink, for the status and code its ZarrShardError is built from;
 * after verify found the damaged chunk ([43c]), a failing problem callback, likewise; and
 * with the listing store ([45]-[49]), listings with extra keys and leaving the shard out.
 * Every store table is version 2 and its list does what cb_store_list does for the store's
 * list_keys method (counted: list calls and the prefix).
 */
#define _XOPEN_SOURCE 700

#include "zarrshard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (ok) passed++;
    else failed++;
}

/* A fatal problem: the rest cannot run. */
static void die(const char *what) {
    printf("FAIL %s\n", what);
    failed++;
    printf("%d passed, %d failed\n", passed, failed);
    exit(1);
}

/* ZarrShardError(status): what the Julian layer's @check does on failure, call for call:
 * shard_last_error size query, the copy (only when non-empty), then shard_last_io_code. */
typedef struct {
    shard_status status;
    char message[512];
    int32_t io_code;
} zs_error;

static zs_error zarrshard_error(shard_status status) {
    zs_error e;
    size_t n = 0;
    e.status = status;
    e.message[0] = '\0';
    if (shard_last_error(NULL, 0, &n) == SHARD_OK && n > 0) {
        char *buf = (char *)malloc(n + 1);
        if (buf != NULL && shard_last_error(buf, n + 1, &n) == SHARD_OK) {
            snprintf(e.message, sizeof e.message, "%s", buf);
        }
        free(buf);
    }
    e.io_code = shard_last_io_code();
    return e;
}

/* @check: a failing status in the example is a test failure. */
#define CHECK_OK(call, what)                                                                 \
    do {                                                                                     \
        shard_status st_ = (call);                                                           \
        if (st_ != SHARD_OK) {                                                               \
            zs_error e_ = zarrshard_error(st_);                                              \
            printf("FAIL %s: status %d: %s (io code %d)\n", what, (int)st_, e_.message,      \
                   (int)e_.io_code);                                                         \
            failed++;                                                                        \
        } else {                                                                             \
            passed++;                                                                        \
        }                                                                                    \
    } while (0)

/* read_region (the allocating form) first calls shard_array_read_region with (NULL, 0): the
 * library checks rank and bounds, then refuses the empty buffer (SHARD_ERR_BUFFER_SIZE)
 * without reading; only then is the array allocated. WANT is the status the probe must give. */
#define CHECK_PROBE(call, want, what)                                                        \
    do {                                                                                     \
        shard_status st_ = (call);                                                           \
        if (st_ != (want)) {                                                                 \
            zs_error e_ = zarrshard_error(st_);                                              \
            printf("FAIL %s: status %d, expected %d: %s\n", what, (int)st_, (int)(want),     \
                   e_.message);                                                              \
            failed++;                                                                        \
        } else {                                                                             \
            passed++;                                                                        \
        }                                                                                    \
    } while (0)

/* ---- callback counters (not part of the Julia example) ---------------------------------- */

enum { K_READ, K_READ_SUFFIX, K_SIZE, K_WRITE, K_TRUNCATE, K_REMOVE, K_DESTROY, K_KINDS };
static unsigned long calls_of[K_KINDS];
static unsigned long reads(void) { return calls_of[K_READ] + calls_of[K_READ_SUFFIX]; }

/* ---- ShardFile(path), in C: the library's file I/O for one object (shard_io_file) ----------
 * The Julian layer fills a table with shard_io_file(path, 0, &table) and hands it to
 * shard_open_ex (or, from a store function, copies it into open_object's io_out); a failed
 * open gives it back with shard_io_release. Here each of the library's callbacks is reached
 * through a forwarder that counts it first (calls_of, not part of the example), so the checks
 * below can count what the library calls on its own file I/O: same arguments, same order. */
typedef struct {
    shard_io_callbacks lib; /* what shard_io_file filled */
} file_io;

static int32_t file_cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    file_io *f = (file_io *)ud;
    calls_of[K_READ]++;
    return f->lib.read(f->lib.userdata, offset, len, buf, read_out);
}

static int32_t file_cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                                   uint64_t *object_size_out) {
    file_io *f = (file_io *)ud;
    calls_of[K_READ_SUFFIX]++;
    return f->lib.read_suffix(f->lib.userdata, len, buf, read_out, object_size_out);
}

static int32_t file_cb_size(void *ud, uint64_t *size_out) {
    file_io *f = (file_io *)ud;
    calls_of[K_SIZE]++;
    return f->lib.size(f->lib.userdata, size_out);
}

static int32_t file_cb_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    file_io *f = (file_io *)ud;
    calls_of[K_WRITE]++;
    return f->lib.write(f->lib.userdata, offset, buf, len);
}

static int32_t file_cb_truncate(void *ud, uint64_t len) {
    file_io *f = (file_io *)ud;
    calls_of[K_TRUNCATE]++;
    return f->lib.truncate(f->lib.userdata, len);
}

static int32_t file_cb_remove(void *ud) {
    file_io *f = (file_io *)ud;
    calls_of[K_REMOVE]++;
    return f->lib.remove(f->lib.userdata);
}

/* destroy, and the Julian layer's shard_io_release after a failed open: the library's own
 * destroy through shard_io_release (which zeroes the table). */
static void file_cb_destroy(void *ud) {
    file_io *f = (file_io *)ud;
    calls_of[K_DESTROY]++;
    shard_io_release(&f->lib);
    if (f->lib.read != NULL || f->lib.destroy != NULL) check(0, "shard_io_release zeroes the table");
    free(f);
}

/* One counted read per range, as the host callbacks count them. */
static int32_t file_cb_read_vectored(void *ud, size_t count, const uint64_t *offsets,
                                     const size_t *lens, uint8_t *const *bufs, size_t *read_outs) {
    file_io *f = (file_io *)ud;
    calls_of[K_READ] += count;
    return f->lib.read_vectored(f->lib.userdata, count, offsets, lens, bufs, read_outs);
}

static int32_t file_cb_create_new(void *ud, void **new_out) {
    file_io *f = (file_io *)ud;
    return f->lib.create_new(f->lib.userdata, new_out);
}

static int32_t file_cb_write_new(void *ud, void *new_object, uint64_t offset, const uint8_t *buf,
                                 size_t len) {
    file_io *f = (file_io *)ud;
    calls_of[K_WRITE]++;
    return f->lib.write_new(f->lib.userdata, new_object, offset, buf, len);
}

static int32_t file_cb_commit_new(void *ud, void *new_object, uint64_t len) {
    file_io *f = (file_io *)ud;
    return f->lib.commit_new(f->lib.userdata, new_object, len);
}

static void file_cb_discard_new(void *ud, void *new_object) {
    file_io *f = (file_io *)ud;
    f->lib.discard_new(f->lib.userdata, new_object);
}

/* ShardFile(path): shard_io_file(path, 0, &table). A missing file is no object (it reads as
 * the fill value), not an error. */
static file_io *file_io_open(const char *path) {
    file_io *f = (file_io *)calloc(1, sizeof *f);
    shard_status st;
    if (f == NULL) die("out of memory");
    st = shard_io_file(path, 0, &f->lib);
    if (st != SHARD_OK) {
        zs_error e = zarrshard_error(st);
        printf("FAIL shard_io_file(%s): status %d: %s\n", path, (int)st, e.message);
        die("shard_io_file");
    }
    return f;
}

/* The forwarding table: each callback the library's table has, counted. */
static shard_io_callbacks file_table(file_io *f) {
    shard_io_callbacks t;
    const shard_io_callbacks *l = &f->lib;
    memset(&t, 0, sizeof t);
    t.version = l->version;
    t.userdata = f;
    t.read = l->read ? file_cb_read : NULL;
    t.read_suffix = l->read_suffix ? file_cb_read_suffix : NULL;
    t.size = l->size ? file_cb_size : NULL;
    t.write = l->write ? file_cb_write : NULL;
    t.truncate = l->truncate ? file_cb_truncate : NULL;
    t.remove = l->remove ? file_cb_remove : NULL;
    t.destroy = file_cb_destroy;
    t.read_vectored = l->read_vectored ? file_cb_read_vectored : NULL;
    t.create_new = l->create_new ? file_cb_create_new : NULL;
    t.write_new = l->write_new ? file_cb_write_new : NULL;
    t.commit_new = l->commit_new ? file_cb_commit_new : NULL;
    t.discard_new = l->discard_new ? file_cb_discard_new : NULL;
    return t;
}

/* ---- MemoryShardIO, in C -------------------------------------------------------------------
 * data == NULL && !exists: no object. release! does nothing (the host keeps the object). */
typedef struct {
    uint8_t *data;
    size_t len;
    int exists;
} mem_io;

static int32_t mem_cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    mem_io *m = (mem_io *)ud;
    size_t n = 0;
    calls_of[K_READ]++;
    if (!m->exists) return SHARD_IO_NOT_FOUND;
    if (offset < m->len) n = (m->len - (size_t)offset) < len ? m->len - (size_t)offset : len;
    if (n > 0) memcpy(buf, m->data + offset, n);
    *read_out = n;
    return 0;
}

static int32_t mem_cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                                  uint64_t *object_size_out) {
    mem_io *m = (mem_io *)ud;
    size_t n;
    calls_of[K_READ_SUFFIX]++;
    if (!m->exists) return SHARD_IO_NOT_FOUND;
    n = m->len < len ? m->len : len;
    if (n > 0) memcpy(buf, m->data + (m->len - n), n);
    *read_out = n;
    *object_size_out = m->len;
    return 0;
}

static int32_t mem_cb_size(void *ud, uint64_t *size_out) {
    mem_io *m = (mem_io *)ud;
    calls_of[K_SIZE]++;
    if (!m->exists) return SHARD_IO_NOT_FOUND;
    *size_out = m->len;
    return 0;
}

static int mem_resize(mem_io *m, size_t len) {
    uint8_t *d = (uint8_t *)realloc(m->data, len > 0 ? len : 1);
    if (d == NULL) return ENOMEM;
    if (len > m->len) memset(d + m->len, 0, len - m->len);
    m->data = d;
    m->len = len;
    return 0;
}

static int32_t mem_cb_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    mem_io *m = (mem_io *)ud;
    size_t stop = (size_t)offset + len;
    calls_of[K_WRITE]++;
    if (!m->exists) m->len = 0;
    if (stop > m->len && mem_resize(m, stop) != 0) return ENOMEM;
    if (len > 0) memcpy(m->data + offset, buf, len);
    m->exists = 1;
    return 0;
}

static int32_t mem_cb_truncate(void *ud, uint64_t len) {
    mem_io *m = (mem_io *)ud;
    calls_of[K_TRUNCATE]++;
    if (!m->exists) m->len = 0;
    if (mem_resize(m, (size_t)len) != 0) return ENOMEM;
    m->exists = 1;
    return 0;
}

static int32_t mem_cb_remove(void *ud) {
    mem_io *m = (mem_io *)ud;
    calls_of[K_REMOVE]++;
    free(m->data);
    m->data = NULL;
    m->len = 0;
    m->exists = 0;
    return 0;
}

static void mem_cb_destroy(void *ud) {
    (void)ud; /* release!(::MemoryShardIO) does nothing */
    calls_of[K_DESTROY]++;
}

/* callback_table(io, pointer_from_objref(io), write) for a MemoryShardIO: objectsize,
 * truncate_object! and remove_object! exist, so write modes get every callback. */
static int32_t mem_cb_read_vectored(void *ud, size_t count, const uint64_t *offsets,
                                    const size_t *lens, uint8_t *const *bufs, size_t *read_outs) {
    size_t k;
    for (k = 0; k < count; k++) {
        int32_t rc = mem_cb_read(ud, offsets[k], lens[k], bufs[k], &read_outs[k]);
        if (rc != 0) return rc;
    }
    return 0;
}

static shard_io_callbacks mem_table(mem_io *m, int write) {
    shard_io_callbacks t;
    t.version = SHARD_IO_VERSION;
    t.userdata = m;
    t.read = mem_cb_read;
    t.read_suffix = mem_cb_read_suffix;
    t.size = mem_cb_size;
    t.write = write ? mem_cb_write : NULL;
    t.truncate = write ? mem_cb_truncate : NULL;
    t.remove = write ? mem_cb_remove : NULL;
    t.destroy = mem_cb_destroy;
    t.read_vectored = mem_cb_read_vectored;
    return t;
}

/* ---- stores: ShardArray's key -> ShardIO function, in C -----------------------------------
 * cb_store_open_object calls the function and fills the table with callback_table(io, ...,
 * write = true), which leaves out write callbacks when the io is not writable (a read
 * ShardFile: the library's table as is). cb_store_destroy does nothing (the ShardArray holds the function). */
static unsigned long store_opens, store_destroys;

static void store_destroy(void *ud) {
    (void)ud;
    store_destroys++;
}

/* key -> ShardFile(joinpath(array, key)): shard_io_file into io_out (here through the
 * counting forwarder); userdata: the array's directory. */
static int32_t file_store_open_object(void *ud, const char *key, shard_io_callbacks *io_out) {
    char path[4096];
    store_opens++;
    snprintf(path, sizeof path, "%s/%s", (const char *)ud, key);
    *io_out = file_table(file_io_open(path));
    return 0;
}

/* key -> get!(MemoryShardIO, objects, key): a Dict of MemoryShardIOs. */
typedef struct {
    char key[32];
    mem_io io;
} mem_entry;
typedef struct {
    mem_entry e[8];
    size_t n;
} mem_store;

static int32_t mem_store_open_object(void *ud, const char *key, shard_io_callbacks *io_out) {
    mem_store *s = (mem_store *)ud;
    size_t i;
    store_opens++;
    for (i = 0; i < s->n && strcmp(s->e[i].key, key) != 0; i++) {
    }
    if (i == s->n) {
        if (s->n == 8 || strlen(key) >= sizeof s->e[0].key) die("memory store: too many keys");
        memset(&s->e[i], 0, sizeof s->e[i]); /* MemoryShardIO(): no object yet */
        snprintf(s->e[i].key, sizeof s->e[i].key, "%s", key);
        s->n++;
    }
    *io_out = mem_table(&s->e[i].io, 1);
    return 0;
}

/* cb_store_list: list_keys(store.open, unsafe_string(prefix)); `nothing` returns
 * SHARD_STORE_CANNOT_LIST, else on_key(list_state, key, sizeof(key)) per key, then 0; an
 * exception returns its code. One C function per list_keys method; all count their calls and
 * keep the last prefix. */
static unsigned long store_lists;
static char list_prefix[64];

static void list_called(const char *prefix) {
    store_lists++;
    snprintf(list_prefix, sizeof list_prefix, "%s", prefix);
}

/* list_keys(store, prefix) = nothing: the default, for a plain function (key -> ShardFile,
 * key -> get!(MemoryShardIO, objects, key), key -> sparse(key)). */
static int32_t plain_store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    (void)ud;
    (void)on_key;
    (void)list_state;
    list_called(prefix);
    return SHARD_STORE_CANNOT_LIST;
}

/* store_table(pointer_from_objref(StoreFunction(f))): version 2, list always cb_store_list. */
static shard_store_callbacks store_table(void *userdata,
                                         int32_t (*open_object)(void *, const char *, shard_io_callbacks *),
                                         int32_t (*list)(void *, const char *, shard_key_fn, void *)) {
    shard_store_callbacks t;
    t.version = SHARD_STORE_VERSION;
    t.flags = 0;
    t.userdata = userdata;
    t.open_object = open_object;
    t.destroy = store_destroy;
    t.list = list;
    return t;
}

/* DictStore: the mem_store's open_object (get!), and list_keys(s::MemoryStore, prefix): the
 * keys under prefix whose object exists (sorted in Julia; order does not matter to C). */
static int32_t memory_store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    mem_store *s = (mem_store *)ud;
    size_t i;
    list_called(prefix);
    for (i = 0; i < s->n; i++)
        if (s->e[i].io.exists && strncmp(s->e[i].key, prefix, strlen(prefix)) == 0)
            on_key(list_state, s->e[i].key, strlen(s->e[i].key));
    return 0;
}

/* RefusingListing: list_keys throws (error("listing refused")): _callback_failed returns
 * IO_CODE_EXCEPTION. */
static int32_t refusing_store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    (void)ud;
    (void)on_key;
    (void)list_state;
    list_called(prefix);
    return 0x4A4C4558; /* IO_CODE_EXCEPTION, "JLEX" */
}

/* Not in the example: a list_keys that lists more than the stored shards (other objects, a
 * position outside the 2x2 grid, a spelling no array writes, bytes that are not UTF-8, the
 * shard twice): all ignored but the shard. */
static int32_t extra_store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    static const char bad_utf8[] = {'c', '/', (char)0xff, '/', '1'};
    int32_t rc = memory_store_list(ud, prefix, on_key, list_state);
    on_key(list_state, "zarr.json", 9);
    on_key(list_state, "c/5/5", 5);
    on_key(list_state, "c/00/1", 6);
    on_key(list_state, bad_utf8, sizeof bad_utf8);
    on_key(list_state, "c/0/1", 5);
    return rc;
}

/* Not in the example: a list_keys that lists nothing: the stored shard is left out, so it is
 * treated as missing (not checked, not referenced). */
static int32_t empty_store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    (void)ud;
    (void)on_key;
    (void)list_state;
    list_called(prefix);
    return 0;
}

/* ShardArray(json, store): shard_array_open, then shard_array_codec and the Codec(ptr)
 * constructor's calls (rank, data type twice, inner chunk shape, inner chunk bytes). */
static shard_array *array_open(const char *json, size_t json_len, shard_store_callbacks *table,
                               shard_codec **codec_out, const char *what) {
    shard_array *arr = NULL;
    size_t r = 0, n = 0, nb = 0;
    uint64_t inner[2];
    char dt[32];
    CHECK_OK(shard_array_open(json, json_len, table, &arr), what);
    if (arr == NULL) die("shard_array_open failed");
    CHECK_OK(shard_array_codec(arr, codec_out), what);
    CHECK_OK(shard_codec_rank(*codec_out, &r), what);
    CHECK_OK(shard_codec_data_type(*codec_out, NULL, 0, &n), what);
    CHECK_OK(shard_codec_data_type(*codec_out, dt, n + 1 <= sizeof dt ? n + 1 : sizeof dt, &n), what);
    CHECK_OK(shard_codec_inner_chunk_shape(*codec_out, inner, r), what);
    CHECK_OK(shard_codec_inner_chunk_nbytes(*codec_out, &nb), what);
    check(r == 2 && strcmp(dt, "uint16") == 0 && nb == 512, "%s: the array's codec is 2-d uint16, 16x16 chunks", what);
    return arr;
}

/* ---- the sink: cb_sink appending to kerchunk_refs's IOBuffer, in C ------------------------
 * kerchunk_refs passes CB_SINK[] and pointer_from_objref(out), out = IOBuffer(); cb_sink
 * appends each piece (unsafe_write) and returns 0, or, when appending threw, the exception's
 * code (fail here); String(take!(out[])) is the text. Also counts the pieces and the largest
 * (not part of the example). */
typedef struct {
    char *data;
    size_t len, cap;
    unsigned long pieces;
    size_t biggest;
    int32_t fail; /* non-zero: return this instead of appending */
} text_sink;

/* refs_json: the text kerchunk_refs returned at [38g] for the url g_refs_url, compared at
 * [38i]. */
static char *g_refs_json;
static size_t g_refs_json_len;
static char g_refs_url[2 * 4096 + 16];

static int32_t sink_append(void *ud, const uint8_t *data, size_t len) {
    text_sink *t = (text_sink *)ud;
    t->pieces++;
    if (len > t->biggest) t->biggest = len;
    if (t->fail != 0) return t->fail;
    if (t->len + len + 1 > t->cap) {
        size_t cap = t->cap > 0 ? t->cap : 4096;
        char *d;
        while (cap < t->len + len + 1) cap *= 2;
        if ((d = (char *)realloc(t->data, cap)) == NULL) return ENOMEM;
        t->data = d;
        t->cap = cap;
    }
    memcpy(t->data + t->len, data, len);
    t->len += len;
    t->data[t->len] = '\0'; /* for strstr below; the text itself has no NUL */
    return 0;
}

/* ---- problems: cb_problem pushing onto verify's Vector{Problem}, in C ---------------------
 * verify passes CB_PROBLEM[] and pointer_from_objref(problems), problems = Problem[];
 * cb_problem copies the key and message (unsafe_string) and the chunk coordinates, reversed
 * and 1-based (Julia order: C [i][j] is [j+1, i+1]; NULL and 0, a problem of the whole shard,
 * an empty vector), pushes Problem(key, chunk, status, message) and returns 0, or, when that
 * threw, the exception's code. Kept here: the first 8, as the Julian layer would see them. */
typedef struct {
    char key[32];
    uint64_t chunk[4]; /* Julia order, 1-based */
    size_t rank;
    shard_status status;
    char message[512];
} problem;
typedef struct {
    problem p[8];
    size_t n;   /* problems kept */
    size_t seen; /* calls */
    int32_t fail; /* non-zero: return this instead of pushing (push! threw) */
} problem_list;

static int32_t problem_push(void *ud, const char *key, const uint64_t *chunk, size_t chunk_rank,
                            shard_status status, const char *message) {
    problem_list *l = (problem_list *)ud;
    problem *p;
    size_t i;
    l->seen++;
    if (l->fail != 0) return l->fail;
    if (l->n == 8 || chunk_rank > 4 || (chunk_rank > 0 && chunk == NULL)) return 0x4A4C4558; /* "JLEX" */
    p = &l->p[l->n++];
    memset(p, 0, sizeof *p);
    snprintf(p->key, sizeof p->key, "%s", key);
    for (i = 0; i < chunk_rank; i++) p->chunk[i] = chunk[chunk_rank - 1 - i] + 1;
    p->rank = chunk_rank;
    p->status = status;
    snprintf(p->message, sizeof p->message, "%s", message);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------ */

static uint8_t *read_file(const char *path, size_t *len_out) {
    FILE *fp = fopen(path, "rb");
    uint8_t *buf;
    long n;
    if (fp == NULL) return NULL;
    if (fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return NULL;
    }
    buf = (uint8_t *)malloc((size_t)n + 1);
    if (buf != NULL && fread(buf, 1, (size_t)n, fp) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(fp);
    if (buf != NULL) buf[n] = 0;
    *len_out = (size_t)n;
    return buf;
}

/* The names in directory PATH, "." and ".." left out (the first MAX kept); its number of
 * entries, or -1 when it cannot be listed. */
static int list_dir(const char *path, char names[][256], int max) {
    DIR *d = opendir(path);
    struct dirent *ent;
    int n = 0;
    if (d == NULL) return -1;
    while ((ent = readdir(d)) != NULL) {
        if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0) continue;
        if (n < max) snprintf(names[n], 256, "%s", ent->d_name);
        n++;
    }
    closedir(d);
    return n;
}

/* Whether NAME is among the first N of NAMES. */
static int listed(char names[][256], int n, const char *name) {
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0) return 1;
    return 0;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

/* shard_key(codec, coords): size query, then the copy into n + 1 bytes. */
static char *shard_key(const shard_codec *codec, const uint64_t *cc, size_t rank) {
    size_t n = 0;
    char *buf;
    CHECK_OK(shard_codec_shard_key(codec, cc, rank, NULL, 0, &n), "shard_codec_shard_key (size)");
    buf = (char *)malloc(n + 1);
    if (buf == NULL) die("out of memory");
    CHECK_OK(shard_codec_shard_key(codec, cc, rank, buf, n + 1, &n), "shard_codec_shard_key");
    return buf;
}

/* Rank-3 data: C element [i][j][k] of the shard = 10000 i + 100 j + k. */
static int32_t value3(size_t i, size_t j, size_t k) { return (int32_t)(10000 * i + 100 * j + k); }

/* part(c) for C chunk (ci, cj, ck) of the [4][6][10] shard with [2][3][5] chunks, C order. */
static void part3(size_t ci, size_t cj, size_t ck, int32_t *out) {
    size_t a, b, c;
    for (a = 0; a < 2; a++)
        for (b = 0; b < 3; b++)
            for (c = 0; c < 5; c++) out[(a * 3 + b) * 5 + c] = value3(ci * 2 + a, cj * 3 + b, ck * 5 + c);
}

/* ---- the library's stores: what the Julian layer's stores.jl calls, in C -------------------
 * _wrap_array(ptr, store): shard_array_codec, then Codec(c): rank, data type (size query and
 * copy), inner chunk shape, inner chunk bytes. WANT_DT is the data type expected. */
static shard_codec *wrap_array(shard_array *arr, const char *want_dt, const char *what) {
    shard_codec *c = NULL;
    size_t r = 0, n = 0, nb = 0;
    uint64_t inner[8];
    char dt[32];
    CHECK_OK(shard_array_codec(arr, &c), what);
    if (c == NULL) die("shard_array_codec gave no codec");
    CHECK_OK(shard_codec_rank(c, &r), what);
    if (r > 8) die("rank above 8");
    CHECK_OK(shard_codec_data_type(c, NULL, 0, &n), what);
    CHECK_OK(shard_codec_data_type(c, dt, n + 1 <= sizeof dt ? n + 1 : sizeof dt, &n), what);
    CHECK_OK(shard_codec_inner_chunk_shape(c, inner, r), what);
    CHECK_OK(shard_codec_inner_chunk_nbytes(c, &nb), what);
    check(strcmp(dt, want_dt) == 0, "%s: the array's data type is %s (want %s)", what, dt, want_dt);
    return c;
}

/* close(a::ShardArray): shard_array_close, then close(codec): shard_codec_free. */
static void close_array(shard_array *arr, shard_codec *c) {
    shard_array_close(arr);
    shard_codec_free(c);
}

/* size(a): shard_array_rank, then shard_array_shape (C order; Julia reverses it). */
static int array_size_is(shard_array *arr, const uint64_t *want, size_t want_rank, const char *what) {
    size_t r = 0, k;
    uint64_t got[8] = {0};
    int same;
    CHECK_OK(shard_array_rank(arr, &r), what);
    if (r != want_rank || r > 8) {
        check(0, "%s: rank %zu, want %zu", what, r, want_rank);
        return 0;
    }
    CHECK_OK(shard_array_shape(arr, got, r), what);
    same = 1;
    for (k = 0; k < r; k++)
        if (got[k] != want[k]) same = 0;
    check(same, "%s: C shape [%llu][%llu]%s == the expected one", what, (unsigned long long)got[0],
          (unsigned long long)(r > 1 ? got[1] : 0), r > 2 ? "[..]" : "");
    return same;
}

/* read_region(a, start, shape): the (NULL, 0) probe, then the read. */
static void read_region_c(shard_array *arr, const uint64_t *start, const uint64_t *shape, size_t rank,
                          void *buf, size_t len, const char *what) {
    CHECK_PROBE(shard_array_read_region(arr, start, shape, rank, NULL, 0), SHARD_ERR_BUFFER_SIZE, what);
    CHECK_OK(shard_array_read_region(arr, start, shape, rank, (uint8_t *)buf, len), what);
}

/* frame(t)[x+1, y+1] = 1000 t + 10 y + x: C element [y][x] of a 24x40 frame. */
static uint16_t stack_value(size_t t, size_t y, size_t x) { return (uint16_t)(1000 * t + 10 * y + x); }
static void stack_frame(size_t t, uint16_t *out) {
    size_t x, y;
    for (y = 0; y < 24; y++)
        for (x = 0; x < 40; x++) out[y * 40 + x] = stack_value(t, y, x);
}

/* Whether FILE, whitespace removed, contains NEEDLE. */
static int file_contains(const char *path, const char *needle) {
    size_t len = 0, i, j = 0;
    char *text = (char *)read_file(path, &len);
    int found;
    if (text == NULL) return 0;
    for (i = 0; i < len; i++)
        if (text[i] != ' ' && text[i] != '\n' && text[i] != '\t' && text[i] != '\r') text[j++] = text[i];
    text[j] = '\0';
    found = strstr(text, needle) != NULL;
    free(text);
    return found;
}

int main(int argc, char **argv) {
    char path[4096];
    const char *dir = argc > 1 ? argv[1] : "fixture";
    const char *example_path = argc > 2 ? argv[2] : NULL;
    uint8_t *raw;
    size_t raw_len = 0, json_len = 0;
    char *json;
    shard_codec *codec = NULL;
    size_t rank = 0, n = 0, nbytes = 0;
    char *dtype;
    uint64_t inner_c[2], shape_c[2], grid_c[2], per_shard_c[2], shard_c[2], inner2_c[2];
    uint64_t gi, gj, ci, cj;
    unsigned long checked = 0;

    snprintf(path, sizeof path, "%s/fixture.raw", dir);
    raw = read_file(path, &raw_len);
    if (raw == NULL || raw_len != 64 * 64 * 2) die("fixture.raw: missing or not 64x64 uint16");

    /* julia: println("libzarrshard ", ZarrShard.version())                       [1]
     * C:     shard_version()                                                         */
    printf("libzarrshard %s\n", shard_version());

    /* julia: set_threads!(2)                                                         [1a]
     * C:     shard_set_threads(2)
     * julia: threads() == 2                                                          [1b]
     * C:     shard_get_threads(&n)                                                   */
    {
        size_t n = 0;
        CHECK_OK(shard_set_threads(2), "[1a] shard_set_threads");
        CHECK_OK(shard_get_threads(&n), "[1b] shard_get_threads");
        check(n == 2, "[1b] threads() == 2 (got %zu)", n);
    }

    /* julia: codec = Codec(read(joinpath(array, "zarr.json"), String))           [2]
     * C:     shard_codec_from_zarr_json(json, sizeof(json), &codec)
     *        shard_codec_rank(codec, &rank)
     *        shard_codec_data_type(codec, NULL, 0, &n)
     *        shard_codec_data_type(codec, buf, n + 1, &n)
     *        shard_codec_inner_chunk_shape(codec, shape, rank)
     *        shard_codec_inner_chunk_nbytes(codec, &nbytes)                           */
    snprintf(path, sizeof path, "%s/fixture.zarr/zarr.json", dir);
    json = (char *)read_file(path, &json_len);
    if (json == NULL) die("fixture.zarr/zarr.json: missing");
    CHECK_OK(shard_codec_from_zarr_json(json, json_len, &codec), "[2] shard_codec_from_zarr_json");
    if (codec == NULL) die("no codec");
    CHECK_OK(shard_codec_rank(codec, &rank), "[2] shard_codec_rank");
    check(rank == 2, "[2] rank %zu == 2", rank);
    if (rank != 2) die("the fixture must be 2-d");
    CHECK_OK(shard_codec_data_type(codec, NULL, 0, &n), "[2] shard_codec_data_type (size)");
    dtype = (char *)malloc(n + 1);
    if (dtype == NULL) die("out of memory");
    CHECK_OK(shard_codec_data_type(codec, dtype, n + 1, &n), "[2] shard_codec_data_type");
    check(strcmp(dtype, "uint16") == 0, "[2] data type %s == uint16 (Julia eltype UInt16)", dtype);
    CHECK_OK(shard_codec_inner_chunk_shape(codec, inner_c, rank), "[2] shard_codec_inner_chunk_shape");
    CHECK_OK(shard_codec_inner_chunk_nbytes(codec, &nbytes), "[2] shard_codec_inner_chunk_nbytes");
    check(nbytes == inner_c[0] * inner_c[1] * sizeof(uint16_t),
          "[2] inner chunk bytes %zu == prod(shape) * sizeof(UInt16)", nbytes);

    /* julia: shape = array_shape(codec)                                            [3]
     * C:     shard_codec_array_shape(codec, v, 2)         (Julia: reverse(v))           */
    CHECK_OK(shard_codec_array_shape(codec, shape_c, rank), "[3] shard_codec_array_shape");
    /* julia: grid = grid_shape(codec)                                              [4] */
    CHECK_OK(shard_codec_grid_shape(codec, grid_c, rank), "[4] shard_codec_grid_shape");
    /* julia: per_shard = chunks_per_shard(codec)                                   [5] */
    CHECK_OK(shard_codec_chunks_per_shard(codec, per_shard_c, rank), "[5] shard_codec_chunks_per_shard");
    /* julia: shard_dims = shard_shape(codec)                                       [6] */
    CHECK_OK(shard_codec_shard_shape(codec, shard_c, rank), "[6] shard_codec_shard_shape");
    /* julia: inner = inner_chunk_shape(codec)                                      [7] */
    CHECK_OK(shard_codec_inner_chunk_shape(codec, inner2_c, rank), "[7] shard_codec_inner_chunk_shape");
    check(shape_c[0] == 64 && shape_c[1] == 64 && grid_c[0] == 2 && grid_c[1] == 2 &&
              per_shard_c[0] == 2 && per_shard_c[1] == 2 && shard_c[0] == 32 && shard_c[1] == 32 &&
              inner2_c[0] == 16 && inner2_c[1] == 16,
          "[3-7] array 64x64, grid 2x2, 2x2 chunks per shard, shards 32x32, chunks 16x16");

    /* julia: expected = reshape(ltoh.(reinterpret(UInt16, read(fixture.raw))), shape)
     *        -> expected[a, b] (1-based, Julia order) == raw[(a-1) + (b-1)*64]: row b-1, col a-1
     *
     * julia: for s in CartesianIndices(grid)           (s[1] fastest: C's last index)
     *            key = shard_key(codec, s)                                         [8]
     *            open(codec, ShardFile(joinpath(array, key))) do shard              [9]
     *                for c in CartesianIndices(per_shard)
     *                    A = read_chunk(shard, c)                                  [10]
     *                    A == expected[origin .+ (1:16, 1:16)]
     *                end
     *            end                                                              [11]
     * C:     s = (gj+1, gi+1) -> cc = {gi, gj}; c = (cj+1, ci+1) -> {ci, cj}
     *        [8]  shard_codec_shard_key(codec, cc, 2, NULL, 0, &n); (..., buf, n + 1, &n)
     *        [9]  shard_io_file(path, 0, &io); shard_open_ex(codec, &io, SHARD_MODE_READ, 0, &h)
     *             (a failed open: shard_io_release(&io))
     *        [10] shard_read_chunk(h, {ci, cj}, 2, (uint8_t *)A, 512)
     *        [11] shard_close(h)                                                          */
    for (gi = 0; gi < grid_c[0]; gi++) {
        for (gj = 0; gj < grid_c[1]; gj++) {
            uint64_t cc[2];
            char *key;
            file_io *f;
            shard_io_callbacks io;
            shard_handle *h = NULL;
            shard_status st;
            cc[0] = gi;
            cc[1] = gj;
            key = shard_key(codec, cc, rank);                                          /* [8] */
            snprintf(path, sizeof path, "%s/fixture.zarr/%s", dir, key);
            f = file_io_open(path);
            io = file_table(f);
            memset(calls_of, 0, sizeof calls_of);
            st = shard_open_ex(codec, &io, SHARD_MODE_READ, 0, &h);                     /* [9] */
            if (st != SHARD_OK) {
                zs_error e = zarrshard_error(st);
                file_cb_destroy(f); /* a failed open leaves the table with us: shard_io_release */
                printf("FAIL [9] shard_open_ex %s: %s\n", key, e.message);
                failed++;
                free(key);
                continue;
            }
            passed++;
            check(reads() == 1, "[9] %s: open read the index with %lu read call(s) (read_suffix %lu)",
                  key, reads(), calls_of[K_READ_SUFFIX]);
            for (ci = 0; ci < per_shard_c[0]; ci++) {
                for (cj = 0; cj < per_shard_c[1]; cj++) {
                    uint16_t A[16 * 16]; /* Julia Array{UInt16}(undef, 16, 16): A[x, y] = A[(x-1) + (y-1)*16] */
                    uint64_t chunk[2];
                    unsigned long before = calls_of[K_READ];
                    /* origin = (s .- 1) .* shard_dims .+ (c .- 1) .* inner, Julia order */
                    uint64_t o1 = gj * shard_c[1] + cj * inner_c[1]; /* along Julia dim 1 = C columns */
                    uint64_t o2 = gi * shard_c[0] + ci * inner_c[0]; /* along Julia dim 2 = C rows */
                    int julia_ok = 1, c_ok = 1, stored;
                    size_t x, y, i, j;
                    chunk[0] = ci;
                    chunk[1] = cj;
                    CHECK_OK(shard_read_chunk(h, chunk, rank, (uint8_t *)A, sizeof A), "[10] shard_read_chunk"); /* [10] */
                    /* The Julia comparison: A[x, y] == expected[o1 + x, o2 + y]. */
                    for (x = 1; x <= 16; x++)
                        for (y = 1; y <= 16; y++) {
                            size_t a = (size_t)o1 + x, b = (size_t)o2 + y;
                            if (A[(x - 1) + (y - 1) * 16] != le16(raw + 2 * ((a - 1) + (b - 1) * 64))) julia_ok = 0;
                        }
                    /* The same bytes read the C way: C element [i][j] = value(row, col). */
                    for (i = 0; i < 16; i++)
                        for (j = 0; j < 16; j++) {
                            size_t row = (size_t)o2 + i, col = (size_t)o1 + j;
                            uint16_t want = (row % 32 < 16 && col % 32 < 16) ? 0 : (uint16_t)((row * 64 + col) * 7 % 65536);
                            if (A[i * 16 + j] != want) c_ok = 0;
                        }
                    stored = !(ci == 0 && cj == 0);
                    check(julia_ok && c_ok,
                          "[10] %s chunk C [%llu][%llu] = Julia (%llu, %llu): A[x, y] == expected[%llu + x, %llu + y] "
                          "and A[(x-1) + 16(y-1)] == C element [y-1][x-1]",
                          key, (unsigned long long)ci, (unsigned long long)cj, (unsigned long long)cj + 1,
                          (unsigned long long)ci + 1, (unsigned long long)o1, (unsigned long long)o2);
                    check(calls_of[K_READ] - before == (unsigned long)stored,
                          "[10] %s chunk [%llu][%llu]: %lu read callback(s) for a %s chunk", key,
                          (unsigned long long)ci, (unsigned long long)cj, calls_of[K_READ] - before,
                          stored ? "stored" : "empty");
                    checked++;
                }
            }
            shard_close(h);                                                            /* [11] */
            check(calls_of[K_DESTROY] == 1, "[11] %s: destroy called once by shard_close", key);
            free(key);
        }
    }
    check(checked == 16, "checked %lu inner chunks of 4 shards against fixture.raw", checked);

    /* julia: open(codec, ShardFile(joinpath(array, shard_key(codec, (2, 1))))) do shard [12]
     * C:     shard_codec_shard_key(codec, {0, 1}, 2, NULL, 0, &n); (..., buf, n + 1, &n)
     *        shard_io_file(path, 0, &io); shard_open_ex(codec, &io, SHARD_MODE_READ, 0, &h) */
    {
        uint64_t cc[2] = {0, 1};
        char *key = shard_key(codec, cc, rank);
        file_io *f;
        shard_io_callbacks io;
        shard_handle *h = NULL;
        shard_status st;
        check(strcmp(key, "c/0/1") == 0, "[12] shard_key(codec, (2, 1)) == \"%s\" (c/0/1)", key);
        snprintf(path, sizeof path, "%s/fixture.zarr/%s", dir, key);
        f = file_io_open(path);
        io = file_table(f);
        st = shard_open_ex(codec, &io, SHARD_MODE_READ, 0, &h);
        if (st != SHARD_OK) {
            file_cb_destroy(f);
            die("[12] shard_open_ex c/0/1");
        }
        passed++;
        {
            /* julia: A = read_chunk(shard, (2, 1))                                     [13]
             * C:     shard_read_chunk(h, {0, 1}, 2, A, 512)                               */
            uint16_t A[16 * 16];
            uint64_t chunk[2] = {0, 1};
            shard_chunk_location info;
            CHECK_OK(shard_read_chunk(h, chunk, rank, (uint8_t *)A, sizeof A), "[13] shard_read_chunk");
            /* julia: A[2, 1] == UInt16((0 * 64 + 49) * 7): A[2, 1] is A[(2-1) + (1-1)*16] */
            check(A[(2 - 1) + (1 - 1) * 16] == (0 * 64 + 49) * 7, "[13] A[2, 1] = %u == C element [0][1] = 343",
                  (unsigned)A[1]);
            printf("     A[1:4, 1:3] (Julia) = C [0..2][0..3] of shard c/0/1, chunk [0][1]:\n");
            {
                int x, y;
                for (x = 1; x <= 4; x++) {
                    printf("      ");
                    for (y = 1; y <= 3; y++) printf(" %6u", (unsigned)A[(x - 1) + (y - 1) * 16]);
                    printf("\n");
                }
            }
            /* julia: info = chunk_info(shard, (1, 1))                                  [14]
             * C:     shard_chunk_info(h, {0, 0}, 2, &info)                                */
            chunk[0] = 0;
            chunk[1] = 0;
            CHECK_OK(shard_chunk_info(h, chunk, rank, &info), "[14] shard_chunk_info");
            check(info.empty, "[14] the top-left inner chunk is not stored (empty)");
            /* julia: read_chunk(shard, (3, 1)) -> ZarrShardError                       [15]
             * C:     shard_read_chunk(h, {0, 2}, 2, A, 512) -> SHARD_ERR_INVALID_ARGUMENT,
             *        then shard_last_error(NULL, 0, &n), shard_last_error(buf, n + 1, &n),
             *        shard_last_io_code()                                                 */
            chunk[0] = 0;
            chunk[1] = 2;
            st = shard_read_chunk(h, chunk, rank, (uint8_t *)A, sizeof A);
            {
                zs_error e = zarrshard_error(st);
                check(e.status == SHARD_ERR_INVALID_ARGUMENT && e.message[0] != '\0' && e.io_code == 0,
                      "[15] out-of-range chunk: status %d (SHARD_ERR_INVALID_ARGUMENT), io code %d, \"%s\"",
                      (int)e.status, (int)e.io_code, e.message);
            }
        }
        /* julia: end of do-block -> close(shard)                                      [16]
         * C:     shard_close(h)                                                           */
        shard_close(h);
        free(key);
    }

    /* julia: open(codec, MemoryShardIO()) do shard                                 [17]
     *            read_chunk(shard, (1, 1))                                          [18]
     *        end                                                                   [19]
     * C:     shard_open_ex(codec, &mem table (read mode), SHARD_MODE_READ, 0, &h)
     *        shard_read_chunk(h, {0, 0}, 2, A, 512); shard_close(h)                       */
    {
        mem_io m = {NULL, 0, 0};
        shard_io_callbacks io = mem_table(&m, 0);
        shard_handle *h = NULL;
        uint16_t A[16 * 16];
        uint64_t chunk[2] = {0, 0};
        size_t k;
        int zero = 1;
        CHECK_OK(shard_open_ex(codec, &io, SHARD_MODE_READ, 0, &h), "[17] shard_open_ex (missing object)");
        if (h == NULL) die("[17] no handle");
        CHECK_OK(shard_read_chunk(h, chunk, rank, (uint8_t *)A, sizeof A), "[18] shard_read_chunk");
        for (k = 0; k < 256; k++)
            if (A[k] != 0) zero = 0;
        check(zero, "[18] a missing object (SHARD_IO_NOT_FOUND) reads as the fill value");
        shard_close(h);                                                                /* [19] */
    }

    /* julia: codec3 = Codec(config, "int32", (10, 6, 4), "-1")                        [20]
     * C:     shard_codec_from_config(config, sizeof(config), "int32", 5, {4, 6, 10}, 3,
     *                                "-1", 2, &codec3), then as [2]: rank, data_type x2,
     *                                inner_chunk_shape, inner_chunk_nbytes                */
    {
        /* CONFIG3 of the example, byte for byte. */
        static const char config[] =
            "{\"chunk_shape\":[2,3,5],\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
            "{\"name\":\"zstd\",\"configuration\":{\"level\":1,\"checksum\":false}}],\"index_codecs\":[{\"name\":"
            "\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}],\"index_location\":\"end\"}";
        /* julia c_shape((10, 6, 4)) = UInt64[4, 6, 10] */
        uint64_t shard3[3] = {4, 6, 10};
        shard_codec *codec3 = NULL;
        size_t rank3 = 0, n3 = 0, nb3 = 0, elsize = 0;
        char dt3[16];
        uint64_t inner3[3], inner3b[3], per3[3];
        int32_t fill = 0;
        mem_io m = {NULL, 0, 0};
        shard_io_callbacks io;
        shard_handle *h = NULL;
        uint64_t size_out = 0;
        size_t ci3, cj3, ck3;

        if (example_path != NULL) {
            /* The Julia literal, so that both sides pass byte for byte the same JSON. */
            size_t ex_len = 0;
            char *ex = (char *)read_file(example_path, &ex_len);
            const char *marker = "const CONFIG3 = \"\"\"";
            const char *start = ex != NULL ? strstr(ex, marker) : NULL;
            const char *body = start != NULL ? start + strlen(marker) : NULL;
            const char *end = body != NULL ? strstr(body, "\"\"\"") : NULL;
            check(end != NULL && (size_t)(end - body) == sizeof config - 1 &&
                      memcmp(body, config, sizeof config - 1) == 0,
                  "[20] the configuration text is example.jl's CONFIG3, byte for byte");
            free(ex);
        }
        CHECK_OK(shard_codec_from_config(config, sizeof config - 1, "int32", 5, shard3, 3, "-1", 2, &codec3),
                 "[20] shard_codec_from_config");
        if (codec3 == NULL) die("[20] no codec");
        CHECK_OK(shard_codec_rank(codec3, &rank3), "[20] shard_codec_rank");
        CHECK_OK(shard_codec_data_type(codec3, NULL, 0, &n3), "[20] shard_codec_data_type (size)");
        if (n3 + 1 > sizeof dt3) die("[20] data type name too long");
        CHECK_OK(shard_codec_data_type(codec3, dt3, n3 + 1, &n3), "[20] shard_codec_data_type");
        CHECK_OK(shard_codec_inner_chunk_shape(codec3, inner3, rank3), "[20] shard_codec_inner_chunk_shape");
        CHECK_OK(shard_codec_inner_chunk_nbytes(codec3, &nb3), "[20] shard_codec_inner_chunk_nbytes");
        check(rank3 == 3 && strcmp(dt3, "int32") == 0 && nb3 == 2 * 3 * 5 * 4,
              "[20] rank 3, int32, %zu-byte inner chunks == prod(shape) * sizeof(Int32)", nb3);

        /* julia: fill_value(codec3) == Int32(-1)                                      [21]
         * C:     shard_codec_element_nbytes(codec3, &n); shard_codec_fill_value(codec3, buf, n) */
        CHECK_OK(shard_codec_element_nbytes(codec3, &elsize), "[21] shard_codec_element_nbytes");
        if (elsize != sizeof fill) die("[21] int32 elements are 4 bytes");
        CHECK_OK(shard_codec_fill_value(codec3, (uint8_t *)&fill, elsize), "[21] shard_codec_fill_value");
        check(fill == -1, "[21] fill value %d == -1", (int)fill);
        /* julia: inner3 = inner_chunk_shape(codec3)   -> (5, 3, 2)                     [22] */
        CHECK_OK(shard_codec_inner_chunk_shape(codec3, inner3b, rank3), "[22] shard_codec_inner_chunk_shape");
        /* julia: per3 = chunks_per_shard(codec3)      -> (2, 2, 2)                     [23] */
        CHECK_OK(shard_codec_chunks_per_shard(codec3, per3, rank3), "[23] shard_codec_chunks_per_shard");
        check(inner3b[0] == 2 && inner3b[1] == 3 && inner3b[2] == 5 && per3[0] == 2 && per3[1] == 2 &&
                  per3[2] == 2,
              "[22-23] C inner chunk [2][3][5] (Julia (5, 3, 2)), 2x2x2 chunks per shard");

        /* julia: open(codec3, mem; mode = :buffered) do shard                          [24]
         *            for c in CartesianIndices(per3); write_chunk(shard, c, part(c)); end [25]
         *            erase_chunk(shard, (2, 1, 1))                                      [26]
         *            nbytes = finalize_shard!(shard)                                    [27]
         *        end                                                                   [28]
         * C:     shard_open_ex(codec3, &mem table (every callback), SHARD_MODE_WRITE_BUFFERED, 0, &h)
         *        8 x shard_write_chunk(h, {ci, cj, ck}, 3, part, 120)   (c = (ck+1, cj+1, ci+1))
         *        shard_erase_chunk(h, {0, 0, 1}, 3)
         *        shard_finalize(h, &size)      (then commit!(::MemoryShardIO): nothing)
         *        shard_close(h)                (the do-block: already finalized, so only close) */
        io = mem_table(&m, 1);
        memset(calls_of, 0, sizeof calls_of);
        CHECK_OK(shard_open_ex(codec3, &io, SHARD_MODE_WRITE_BUFFERED, 0, &h), "[24] shard_open_ex (buffered)");
        if (h == NULL) die("[24] no handle");
        for (ci3 = 0; ci3 < 2; ci3++)
            for (cj3 = 0; cj3 < 2; cj3++)
                for (ck3 = 0; ck3 < 2; ck3++) {
                    int32_t part[30];
                    uint64_t cc[3];
                    cc[0] = ci3;
                    cc[1] = cj3;
                    cc[2] = ck3;
                    part3(ci3, cj3, ck3, part);
                    CHECK_OK(shard_write_chunk(h, cc, 3, (const uint8_t *)part, sizeof part), "[25] shard_write_chunk");
                }
        {
            uint64_t cc[3] = {0, 0, 1};
            CHECK_OK(shard_erase_chunk(h, cc, 3), "[26] shard_erase_chunk");
        }
        CHECK_OK(shard_finalize(h, &size_out), "[27] shard_finalize");
        check(m.exists && size_out == m.len && calls_of[K_WRITE] >= 1,
              "[27] wrote a rank-3 shard of %llu bytes in memory (%lu write callback(s))",
              (unsigned long long)size_out, calls_of[K_WRITE]);
        shard_close(h);                                                                /* [28] */
        check(calls_of[K_DESTROY] == 1, "[28] destroy called once by shard_close");

        /* julia: open(codec3, mem) do shard                                           [29]
         *            A = read_chunk(shard, c) for each c                              [30]
         *            read_chunk_raw(shard, (2, 1, 1))                                  [31]
         *            read_chunks(shard, [(1, 1, 1), (2, 2, 2)])                       [32]
         *        end                                                                   [33]
         * C:     shard_open_ex(codec3, &mem table (read mode), SHARD_MODE_READ, 0, &h)
         *        8 x shard_read_chunk(h, {ci, cj, ck}, 3, A, 120)
         *        shard_read_chunk_raw(h, {0, 0, 1}, 3, NULL, 0, &n)    (n == 0: no copy call;
         *                                          the library holds n to its memory limit)
         *        shard_read_chunks(h, {0, 0, 0, 1, 1, 1}, 2, 3, both, 240)
         *        shard_close(h)                                                           */
        io = mem_table(&m, 0);
        h = NULL;
        CHECK_OK(shard_open_ex(codec3, &io, SHARD_MODE_READ, 0, &h), "[29] shard_open_ex (read)");
        if (h == NULL) die("[29] no handle");
        for (ci3 = 0; ci3 < 2; ci3++)
            for (cj3 = 0; cj3 < 2; cj3++)
                for (ck3 = 0; ck3 < 2; ck3++) {
                    int32_t A[30], want[30];
                    uint64_t cc[3];
                    int julia_ok = 1, c_ok = 1;
                    size_t a, b, c, k;
                    int erased = ci3 == 0 && cj3 == 0 && ck3 == 1;
                    cc[0] = ci3;
                    cc[1] = cj3;
                    cc[2] = ck3;
                    CHECK_OK(shard_read_chunk(h, cc, 3, (uint8_t *)A, sizeof A), "[30] shard_read_chunk");
                    /* julia: A == part(c): A[k, j, i] (1-based) is A[(k-1) + 5(j-1) + 15(i-1)]
                     * and part(c)[k, j, i] = data[(ck)*5 + k, (cj)*3 + j, (ci)*2 + i]
                     *                      = 10000 (2ci + i-1) + 100 (3cj + j-1) + (5ck + k-1) */
                    for (k = 1; k <= 5; k++)
                        for (b = 1; b <= 3; b++)
                            for (a = 1; a <= 2; a++) {
                                int32_t w = erased ? -1 : value3(ci3 * 2 + a - 1, cj3 * 3 + b - 1, ck3 * 5 + k - 1);
                                if (A[(k - 1) + 5 * (b - 1) + 15 * (a - 1)] != w) julia_ok = 0;
                            }
                    /* The C view: element [a][b][c] at (a*3 + b)*5 + c. */
                    if (erased)
                        for (k = 0; k < 30; k++) want[k] = -1;
                    else
                        part3(ci3, cj3, ck3, want);
                    for (a = 0; a < 2; a++)
                        for (b = 0; b < 3; b++)
                            for (c = 0; c < 5; c++)
                                if (A[(a * 3 + b) * 5 + c] != want[(a * 3 + b) * 5 + c]) c_ok = 0;
                    check(julia_ok && c_ok,
                          "[30] rank-3 chunk C [%zu][%zu][%zu] = Julia (%zu, %zu, %zu)%s: A[k, j, i] == C[i-1][j-1][k-1]",
                          ci3, cj3, ck3, ck3 + 1, cj3 + 1, ci3 + 1, erased ? " (erased: fill -1)" : "");
                }
        {
            uint64_t cc[3] = {0, 0, 1};
            size_t raw_n = 99;
            /* julia: @check L.shard_read_chunk_raw(s, cc, 3, C_NULL, 0, n); isempty(buf) */
            CHECK_OK(shard_read_chunk_raw(h, cc, 3, NULL, 0, &raw_n), "[31] shard_read_chunk_raw (size)");
            check(raw_n == 0, "[31] the erased chunk has no encoded bytes (%zu)", raw_n);
        }
        {
            uint64_t cc[6] = {0, 0, 0, 1, 1, 1};
            int32_t both[60], want[30];
            /* julia: both[:, :, :, 2] == part((2, 2, 2)); both[5, 3, 2, 1] printed */
            CHECK_OK(shard_read_chunks(h, cc, 2, 3, (uint8_t *)both, sizeof both), "[32] shard_read_chunks");
            part3(1, 1, 1, want);
            check(memcmp(both + 30, want, sizeof want) == 0, "[32] read_chunks: chunk 2 is C [1][1][1]");
            check(both[(5 - 1) + 5 * (3 - 1) + 15 * (2 - 1) + 30 * (1 - 1)] == 10204,
                  "[32] both[5, 3, 2, 1] = %d == C [1][2][4] of chunk [0][0][0] = 10204",
                  (int)both[4 + 10 + 15]);
        }
        shard_close(h);                                                                /* [33] */

        /* julia: close(codec3)                                                         [34] */
        shard_codec_free(codec3);
        free(m.data);
    }
    /* julia: close(codec)                                                              [35] */
    shard_codec_free(codec);

    /* julia: arr = ShardArray(json, key -> ShardFile(joinpath(array, key)))             [36]
     * C:     shard_array_open(json, sizeof(json), &{2, 0, store, open_object, destroy, list}, &arr)
     *        shard_array_codec(arr, &c), then Codec(c): rank, data type (twice), inner chunk
     *        shape, inner chunk bytes                                                         */
    {
        char root[4096];
        shard_store_callbacks table;
        shard_codec *acodec = NULL;
        shard_array *arr;
        uint16_t R[30 * 40], R2[30 * 40], Z[16 * 16];
        uint64_t start[2] = {10, 20}, shape[2] = {40, 30};
        uint64_t start0[2] = {0, 0}, shape0[2] = {16, 16};
        size_t x, y, k;
        int same = 1, zero = 1;
        snprintf(root, sizeof root, "%s/fixture.zarr", dir);
        table = store_table(root, file_store_open_object, plain_store_list);
        arr = array_open(json, json_len, &table, &acodec, "[36] ShardArray(json, key -> ShardFile)");

        /* julia: R = read_region(arr, (21, 11), (30, 40))                                  [37]
         * C:     shard_array_read_region(arr, {10, 20}, {40, 30}, 2, NULL, 0) -> BUFFER_SIZE
         *        shard_array_read_region(arr, {10, 20}, {40, 30}, 2, (uint8_t *)R, 2400)
         *        R[x, y] == expected[20 + x, 10 + y]: C row 9 + y, column 19 + x           */
        store_opens = 0;
        memset(calls_of, 0, sizeof calls_of);
        CHECK_PROBE(shard_array_read_region(arr, start, shape, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE,
                    "[37] shard_array_read_region (NULL, 0) probe");
        check(store_opens == 0, "[37] the probe opens no object (%lu)", store_opens);
        CHECK_OK(shard_array_read_region(arr, start, shape, 2, (uint8_t *)R, sizeof R), "[37] shard_array_read_region");
        for (x = 1; x <= 30; x++)
            for (y = 1; y <= 40; y++)
                if (R[(x - 1) + (y - 1) * 30] != le16(raw + 2 * ((20 + x - 1) + (10 + y - 1) * 64))) same = 0;
        check(same, "[37] read_region(arr, (21, 11), (30, 40)) == expected[21:50, 11:50] (C rows 10..49, columns 20..49)");
        check(store_opens == 4 && calls_of[K_DESTROY] == 4,
              "[37] the region touches 4 shards: %lu open_object, %lu destroy", store_opens, calls_of[K_DESTROY]);

        /* julia: set_coalesce_gap!(arr, 0)                                               [37a]
         * C:     shard_array_set_coalesce_gap(arr, 0)
         * julia: read_region(arr, (21, 11), (30, 40)) == R                                 [37b]
         * C:     shard_array_read_region(arr, {10, 20}, {40, 30}, 2, NULL, 0) -> BUFFER_SIZE
         *        shard_array_read_region(arr, {10, 20}, {40, 30}, 2, (uint8_t *)R2, 2400)    */
        CHECK_OK(shard_array_set_coalesce_gap(arr, 0), "[37a] shard_array_set_coalesce_gap");
        CHECK_PROBE(shard_array_read_region(arr, start, shape, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE,
                    "[37b] shard_array_read_region (NULL, 0) probe");
        CHECK_OK(shard_array_read_region(arr, start, shape, 2, (uint8_t *)R2, sizeof R2), "[37b] shard_array_read_region");
        check(memcmp(R, R2, sizeof R) == 0, "[37b] the region reads the same with the coalescing gap at 0");

        /* julia: all(iszero, read_region(arr, (1, 1), (16, 16)))                          [38]
         * C:     shard_array_read_region(arr, {0, 0}, {16, 16}, 2, NULL, 0) -> BUFFER_SIZE
         *        shard_array_read_region(arr, {0, 0}, {16, 16}, 2, buf, 512)                 */
        CHECK_PROBE(shard_array_read_region(arr, start0, shape0, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE,
                    "[38] shard_array_read_region (NULL, 0) probe");
        CHECK_OK(shard_array_read_region(arr, start0, shape0, 2, (uint8_t *)Z, sizeof Z), "[38] shard_array_read_region");
        for (k = 0; k < 16 * 16; k++)
            if (Z[k] != 0) zero = 0;
        check(zero, "[38] the top-left inner chunk (not stored) reads as the fill value 0");

        /* julia: read_region(arr, (1, 1), (2^20, 2^20)) -> ZarrShardError                  [38a]
         * C:     shard_array_read_region(arr, {0, 0}, {1 << 20, 1 << 20}, 2, NULL, 0)
         *        -> SHARD_ERR_INVALID_ARGUMENT (past the array), before anything is allocated */
        {
            uint64_t huge[2] = {(uint64_t)1 << 20, (uint64_t)1 << 20};
            zs_error e;
            shard_status st;
            store_opens = 0;
            st = shard_array_read_region(arr, start0, huge, 2, NULL, 0);
            e = zarrshard_error(st);
            check(st == SHARD_ERR_INVALID_ARGUMENT && e.message[0] != '\0' && store_opens == 0,
                  "[38a] a region past the array: status %d (want %d), \"%s\", %lu objects opened",
                  (int)st, (int)SHARD_ERR_INVALID_ARGUMENT, e.message, store_opens);
        }

        /* julia: refs = Dict{String,MemoryShardIO}(); url = "file://" * abspath(array)
         *        kerchunk_refs_parquet(arr, key -> get!(MemoryShardIO, refs, key), url;      [38b]
         *                              name = "fixture", record_size = 3)
         * C:     (StoreFunction + store_table: no C call)
         *        shard_array_refs_parquet(arr, url, sizeof(url), "fixture", 7, 3,
         *                                 &{2, 0, sf, open_object, destroy, list})
         *        -> the array's store opens the 4 shards (index reads); the borrowed store's
         *        open_object once per object, each filled by callback_table(io, ..., true)
         *        (a MemoryShardIO: every callback) and destroyed (release!) within the call;
         *        the borrowed store's destroy is never called.
         * julia: the keys are .zmetadata and fixture/refs.0..5.parq; each .parq starts with
         *        PAR1; .zmetadata holds "record_size":3
         * julia: kerchunk_refs_parquet(arr, ..., url; name = "") -> ZarrShardError     [38c]
         * C:     shard_array_refs_parquet(arr, url, sizeof(url), "", 0, 10000, &table)
         *        -> SHARD_ERR_INVALID_ARGUMENT; ZarrShardError(status): shard_last_error
         *        (size, copy), shard_last_io_code                                             */
        {
            static mem_store refs;
            shard_store_callbacks out;
            char url[2 * 4096 + 16], cwd[4096];
            const char *names[7] = {".zmetadata", "fixture/refs.0.parq", "fixture/refs.1.parq",
                                    "fixture/refs.2.parq", "fixture/refs.3.parq",
                                    "fixture/refs.4.parq", "fixture/refs.5.parq"};
            int names_ok = 1, parquet_ok = 1, zmeta_ok = 0;
            size_t i, j;
            zs_error e;
            shard_status st;
            /* abspath(array): the path as given when absolute, else under the working directory */
            if (root[0] == '/') snprintf(url, sizeof url, "file://%s", root);
            else if (getcwd(cwd, sizeof cwd) != NULL) snprintf(url, sizeof url, "file://%s/%s", cwd, root);
            else die("getcwd");
            out = store_table(&refs, mem_store_open_object, plain_store_list);
            store_opens = 0;
            store_destroys = 0;
            memset(calls_of, 0, sizeof calls_of);
            CHECK_OK(shard_array_refs_parquet(arr, url, strlen(url), "fixture", 7, 3, &out),
                     "[38b] shard_array_refs_parquet");
            /* julia: sort!(collect(keys(refs))) == [".zmetadata"; ["fixture/refs.$n.parq" ...]] */
            for (i = 0; i < 7; i++) {
                for (j = 0; j < refs.n && strcmp(refs.e[j].key, names[i]) != 0; j++) {
                }
                if (j == refs.n || !refs.e[j].io.exists || refs.e[j].io.len == 0) {
                    names_ok = 0;
                    continue;
                }
                if (i == 0) {
                    /* julia: occursin("\"record_size\":3", String(contents(refs[".zmetadata"]))) */
                    char *text = (char *)malloc(refs.e[j].io.len + 1);
                    if (text == NULL) die("out of memory");
                    memcpy(text, refs.e[j].io.data, refs.e[j].io.len);
                    text[refs.e[j].io.len] = '\0';
                    zmeta_ok = strstr(text, "\"record_size\":3") != NULL &&
                               strstr(text, "\"fixture/.zarray\"") != NULL;
                    free(text);
                } else if (refs.e[j].io.len < 8 || memcmp(refs.e[j].io.data, "PAR1", 4) != 0 ||
                           memcmp(refs.e[j].io.data + refs.e[j].io.len - 4, "PAR1", 4) != 0) {
                    parquet_ok = 0; /* julia: contents(refs[k])[1:4] == b"PAR1" */
                }
            }
            check(names_ok && refs.n == 7, "[38b] the reference objects are .zmetadata and fixture/refs.0..5.parq (%zu objects)", refs.n);
            check(parquet_ok, "[38b] every fixture/refs.<n>.parq is a Parquet file (PAR1 ... PAR1)");
            check(zmeta_ok, "[38b] .zmetadata holds \"record_size\":3 and fixture/.zarray");
            /* 4 shard objects of the array + 7 written objects, each released once; the
             * borrowed store's own destroy is not called. */
            check(store_opens == 4 + 7 && calls_of[K_DESTROY] == 4 + 7 && store_destroys == 0,
                  "[38b] %lu open_object (4 shards read, 7 objects written), %lu destroy, %lu store destroy",
                  store_opens, calls_of[K_DESTROY], store_destroys);
            check(calls_of[K_WRITE] == 7, "[38b] each object written with one write (%lu)", calls_of[K_WRITE]);
            st = shard_array_refs_parquet(arr, url, strlen(url), "", 0, 10000, &out);      /* [38c] */
            e = zarrshard_error(st);
            check(st == SHARD_ERR_INVALID_ARGUMENT && strstr(e.message, "invalid array name") != NULL &&
                      refs.n == 7 && store_destroys == 0,
                  "[38c] an empty name: status %d (want %d), \"%s\"; nothing written",
                  (int)st, (int)SHARD_ERR_INVALID_ARGUMENT, e.message);

            /* julia: pdir = joinpath(mktempdir(), "refs")   (mktempdir: TMPDIR or /tmp, jl_XXXXXX)
             *        kerchunk_refs_parquet(arr, pdir, url; name = "fixture", record_size = 3)  [38d]
             * C:     (String(dir): no C call)
             *        shard_array_refs_parquet_dir(arr, url, sizeof(url), "fixture", 7, 3,
             *                                     pdir, sizeof(pdir))
             *        -> the array's store opens the 4 shards (index reads); the library creates
             *        pdir and writes the files itself (no host write callback)
             * julia: readdir(pdir) == [".zmetadata", "fixture"] &&
             *        readdir(joinpath(pdir, "fixture")) == ["refs.$n.parq" for n in 0:5]
             *        all(k -> read(joinpath(pdir, k)) == contents(refs[k]), keys(refs))
             *        (the objects [38b] wrote through the borrowed store, byte for byte)
             * julia: kerchunk_refs_parquet(arr, pdir, url; name = "fixture", record_size = 3)
             *        -> ZarrShardError                                                        [38e]
             * C:     the same call -> SHARD_ERR_INVALID_ARGUMENT (pdir is not empty), before any
             *        shard is read; ZarrShardError(status): shard_last_error (size, copy),
             *        shard_last_io_code
             * julia: kerchunk_refs_parquet(arr, joinpath(dir, "fixture.raw", "refs"), url;
             *                              name = "fixture") -> ZarrShardError           [38f]
             * C:     shard_array_refs_parquet_dir(arr, url, sizeof(url), "fixture", 7, 10000,
             *                                     path, sizeof(path))
             *        -> SHARD_ERR_IO, shard_last_io_code ENOTDIR (fixture.raw is a file),
             *        found before any shard is read
             * (Not in the example: the temporary directory is removed here; Julia removes
             * mktempdir's at exit.)                                                           */
            {
                char tmp[4096], pdir[4096 + 16], sub[4096 + 32], file[4096 + 64], bad[4096 + 32];
                static char top[8][256], inner[16][256];
                const char *tmpdir = getenv("TMPDIR");
                int ntop, ninner, same_bytes = 1, cleaned = 1;
                if (tmpdir == NULL || tmpdir[0] == '\0') tmpdir = "/tmp";
                snprintf(tmp, sizeof tmp, "%s/jl_XXXXXX", tmpdir);
                if (mkdtemp(tmp) == NULL) die("mkdtemp");
                snprintf(pdir, sizeof pdir, "%s/refs", tmp);
                snprintf(sub, sizeof sub, "%s/fixture", pdir);
                store_opens = 0;
                store_destroys = 0;
                memset(calls_of, 0, sizeof calls_of);
                CHECK_OK(shard_array_refs_parquet_dir(arr, url, strlen(url), "fixture", 7, 3, pdir, strlen(pdir)),
                         "[38d] shard_array_refs_parquet_dir");
                check(store_opens == 4 && calls_of[K_DESTROY] == 4 && calls_of[K_WRITE] == 0 && store_destroys == 0,
                      "[38d] only the array's 4 shards opened (%lu open_object, %lu destroy), no host write (%lu)",
                      store_opens, calls_of[K_DESTROY], calls_of[K_WRITE]);
                /* julia: readdir(pdir), readdir(joinpath(pdir, "fixture")): exactly these */
                ntop = list_dir(pdir, top, 8);
                ninner = list_dir(sub, inner, 16);
                check(ntop == 2 && listed(top, ntop, ".zmetadata") && listed(top, ntop, "fixture"),
                      "[38d] %s holds exactly .zmetadata and fixture/ (%d entries)", pdir, ntop);
                {
                    int all_there = ninner == 6;
                    for (i = 0; i < 6; i++) {
                        char want[64];
                        snprintf(want, sizeof want, "refs.%zu.parq", i);
                        if (!listed(inner, ninner < 0 ? 0 : ninner > 16 ? 16 : ninner, want)) all_there = 0;
                    }
                    check(all_there, "[38d] %s holds exactly refs.0..5.parq (%d entries)", sub, ninner);
                }
                /* julia: read(joinpath(pdir, k)) == contents(refs[k]) for every k in keys(refs) */
                for (i = 0; i < refs.n; i++) {
                    size_t flen = 0;
                    uint8_t *bytes;
                    snprintf(file, sizeof file, "%s/%s", pdir, refs.e[i].key);
                    bytes = read_file(file, &flen);
                    if (bytes == NULL || flen != refs.e[i].io.len ||
                        memcmp(bytes, refs.e[i].io.data, flen) != 0) {
                        printf("     %s: %s\n", refs.e[i].key, bytes == NULL ? "missing" : "differs");
                        same_bytes = 0;
                    }
                    free(bytes);
                }
                check(same_bytes && refs.n == 7,
                      "[38d] each of the 7 files equals, byte for byte, the object shard_array_refs_parquet wrote ([38b])");

                /* [38e]: the same call into the now non-empty directory */
                store_opens = 0;
                st = shard_array_refs_parquet_dir(arr, url, strlen(url), "fixture", 7, 3, pdir, strlen(pdir));
                e = zarrshard_error(st);
                check(st == SHARD_ERR_INVALID_ARGUMENT && strstr(e.message, "not an empty directory") != NULL &&
                          e.io_code == 0 && store_opens == 0,
                      "[38e] a directory that is not empty: status %d (want %d), io code %d, \"%s\", "
                      "%lu objects opened (checked before any shard is read)",
                      (int)st, (int)SHARD_ERR_INVALID_ARGUMENT, (int)e.io_code, e.message, store_opens);
                check(list_dir(pdir, top, 8) == 2 && list_dir(sub, inner, 16) == 6,
                      "[38e] the directory is left as it was");

                /* [38f]: a path under a regular file */
                snprintf(bad, sizeof bad, "%s/fixture.raw/refs", dir);
                store_opens = 0;
                st = shard_array_refs_parquet_dir(arr, url, strlen(url), "fixture", 7, 10000, bad, strlen(bad));
                e = zarrshard_error(st);
                check(st == SHARD_ERR_IO && e.io_code == ENOTDIR && store_opens == 0,
                      "[38f] a path under a regular file: status %d (want %d), io code %d (want ENOTDIR %d), "
                      "\"%s\", %lu objects opened",
                      (int)st, (int)SHARD_ERR_IO, (int)e.io_code, (int)ENOTDIR, e.message, store_opens);

                /* Not in the example: remove the temporary directory. */
                for (i = 0; i < refs.n; i++) {
                    snprintf(file, sizeof file, "%s/%s", pdir, refs.e[i].key);
                    if (unlink(file) != 0) cleaned = 0;
                }
                if (rmdir(sub) != 0 || rmdir(pdir) != 0 || rmdir(tmp) != 0) cleaned = 0;
                if (!cleaned) printf("     (could not remove all of %s)\n", tmp);
            }
            for (i = 0; i < refs.n; i++) free(refs.e[i].io.data);

            /* julia: refs_json = kerchunk_refs(arr, url)                                    [38g]
             * C:     out = Ref{IO}(IOBuffer()) (no C call)
             *        shard_array_refs_write(arr, SHARD_REFS_JSON_V1, 3, url, sizeof(url), "", 0,
             *                               CB_SINK[], pointer_from_objref(out))
             *        -> the array's store opens the 4 shards, one index read each; cb_sink
             *        appends each piece (at most 64 KiB) to out[]; String(take!(out[]))
             * julia: startswith(refs_json, "{\"version\":1,") &&
             *        occursin("\"u\":\"$url\"", refs_json) && count("[\"{{u}}/c/", refs_json) == 12
             *        (version 1: the url is the template "u"; the 12 stored inner chunks, each
             *        shard's top-left one being empty)                                        */
            {
                text_sink t, u;
                char *copy = NULL;
                size_t want_n = 0, n2 = 0;
                unsigned long write_opens, write_reads, pair_reads;
                const char *p;
                char tmpl[sizeof url + 16];
                int nrefs = 0;
                memset(&t, 0, sizeof t);
                store_opens = 0;
                memset(calls_of, 0, sizeof calls_of);
                CHECK_OK(shard_array_refs_write(arr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0,
                                                sink_append, &t),
                         "[38g] shard_array_refs_write");
                write_opens = store_opens;
                write_reads = reads();
                /* julia: String(take!(out[])), then the example's three tests */
                snprintf(tmpl, sizeof tmpl, "\"u\":\"%s\"", url);
                for (p = t.data; p != NULL && (p = strstr(p, "[\"{{u}}/c/")) != NULL; p++) nrefs++;
                check(t.data != NULL && strncmp(t.data, "{\"version\":1,", 13) == 0 &&
                          strstr(t.data, tmpl) != NULL && nrefs == 12,
                      "[38g] kerchunk_refs(arr, url): version 1, the url as template u, %d references "
                      "[\"{{u}}/c/... (want 12), %zu bytes",
                      nrefs, t.len);
                check(write_opens == 4 && calls_of[K_DESTROY] == 4 && write_reads == 4,
                      "[38g] one index read per shard: %lu open_object, %lu read(s), %lu destroy",
                      write_opens, write_reads, calls_of[K_DESTROY]);
                check(t.data != NULL && t.pieces >= 1 && t.biggest <= 65536 && memchr(t.data, '\0', t.len) == NULL,
                      "[38g] %lu piece(s) of at most 64 KiB (largest %zu), no NUL", t.pieces, t.biggest);

                /* Not in the example: what kerchunk_refs replaced (shard_array_refs' size query,
                 * then the copy) gives the same text after twice the index reads. */
                memset(calls_of, 0, sizeof calls_of);
                CHECK_OK(shard_array_refs(arr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0, NULL, 0, &want_n),
                         "shard_array_refs (size query)");
                copy = (char *)malloc(want_n + 1);
                if (copy == NULL) die("out of memory");
                CHECK_OK(shard_array_refs(arr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0, copy, want_n + 1, &n2),
                         "shard_array_refs (copy)");
                pair_reads = reads();
                check(n2 == want_n && t.len == want_n && memcmp(t.data, copy, want_n) == 0,
                      "[38g] shard_array_refs_write's text == shard_array_refs' (%zu bytes)", want_n);
                check(pair_reads == 2 * write_reads,
                      "[38g] the size query and the copy read %lu times, shard_array_refs_write %lu: half",
                      pair_reads, write_reads);
                free(copy);

                /* Not in the example: cb_sink returning a code (appending threw) stops the call
                 * with SHARD_ERR_IO and that code in shard_last_io_code, which ZarrShardError
                 * reads to find the exception (its cause); the sink is not called again after
                 * it failed; kerchunk_refs drops the text. */
                memset(&u, 0, sizeof u);
                u.fail = 0x4A4C4558; /* IO_CODE_EXCEPTION, "JLEX" */
                st = shard_array_refs_write(arr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0, sink_append, &u);
                e = zarrshard_error(st);
                check(st == SHARD_ERR_IO && e.io_code == 0x4A4C4558 && u.pieces == 1,
                      "[38g] a failing sink: status %d (want %d), io code %d, %lu call(s), \"%s\"",
                      (int)st, (int)SHARD_ERR_IO, (int)e.io_code, u.pieces, e.message);
                g_refs_json = t.data; /* refs_json and url, for [38i] */
                g_refs_json_len = t.len;
                memcpy(g_refs_url, url, sizeof g_refs_url);
                free(u.data);
            }
        }

        /* julia: isempty(verify(arr))                                                      [38h]
         * C:     problems = Problem[] (no C call)
         *        shard_array_verify(arr, CB_PROBLEM[], pointer_from_objref(problems), &n)
         *        -> the store opens the 4 shards, each object read once; no problem          */
        {
            static problem_list pl;
            uint64_t n = 99;
            memset(&pl, 0, sizeof pl);
            store_opens = 0;
            store_lists = 0;
            list_prefix[0] = '\0';
            memset(calls_of, 0, sizeof calls_of);
            CHECK_OK(shard_array_verify(arr, problem_push, &pl, &n), "[38h] shard_array_verify");
            check(store_lists == 1 && strcmp(list_prefix, "c/") == 0,
                  "[38h] the store's list called once, prefix \"%s\" (key -> ShardFile cannot list: "
                  "SHARD_STORE_CANNOT_LIST, every grid position asked)", list_prefix);
            check(n == 0 && pl.seen == 0, "[38h] verify(arr): the fixture is clean (%lu problems, %zu callback calls)",
                  (unsigned long)n, pl.seen);
            check(store_opens == 4 && calls_of[K_DESTROY] == 4,
                  "[38h] every shard checked: %lu open_object, %lu destroy", store_opens, calls_of[K_DESTROY]);
        }

        /* julia: streamed = IOBuffer() (no C call)
         *        kerchunk_refs(streamed, arr, url)                                         [38i]
         * C:     box = Ref{IO}(streamed) (no C call)
         *        shard_array_refs_stream(arr, SHARD_REFS_JSON_V1, 3, url, sizeof(url), "", 0,
         *                                CB_SINK[], pointer_from_objref(box))
         *        -> the store listed once, the 4 shards opened, one index read each; cb_sink
         *        writes each piece (at most 64 KiB) to streamed
         * julia: String(take!(streamed)) == refs_json                                      */
        {
            text_sink t;
            memset(&t, 0, sizeof t);
            store_opens = 0;
            store_lists = 0;
            memset(calls_of, 0, sizeof calls_of);
            CHECK_OK(shard_array_refs_stream(arr, SHARD_REFS_JSON_V1, 3, g_refs_url,
                                             strlen(g_refs_url), "", 0, sink_append, &t),
                     "[38i] shard_array_refs_stream");
            check(g_refs_json != NULL && t.len == g_refs_json_len &&
                      memcmp(t.data, g_refs_json, t.len) == 0,
                  "[38i] kerchunk_refs(streamed, arr, url) wrote refs_json ([38g]'s %zu bytes): %zu bytes",
                  g_refs_json_len, t.len);
            check(store_lists == 1 && store_opens == 4 && reads() == 4 && calls_of[K_DESTROY] == 4,
                  "[38i] one listing, one index read per shard: %lu list, %lu open_object, %lu read(s)",
                  store_lists, store_opens, reads());
            check(t.pieces >= 1 && t.biggest <= 65536, "[38i] %lu piece(s) of at most 64 KiB",
                  t.pieces);
            free(t.data);
            free(g_refs_json);
            g_refs_json = NULL;
        }

        /* julia: close(arr)                                                                [39]
         * C:     shard_codec_free(c); shard_array_close(arr) -> destroy(store) once          */
        store_destroys = 0;
        shard_codec_free(acodec);
        shard_array_close(arr);
        check(store_destroys == 1, "[39] shard_array_close called the store's destroy once (%lu)", store_destroys);

        /* julia: open(ShardArray, json, key -> get!(MemoryShardIO, objects, key)) do marr  [40]
         *            write_region(marr, (21, 11), R)                                       [41]
         *            write_region(marr, (1, 33), fill(UInt16(9), 64, 32))                  [42]
         *            read_region(marr, (1, 1), (64, 64)) == model                          [43]
         *        end                                                                       [44]
         * C:     [41] shard_array_write_region(marr, {10, 20}, {40, 30}, 2, R, 2400)
         *        [42] shard_array_write_region(marr, {32, 0}, {32, 64}, 2, nines, 4096)
         *        [43] shard_array_read_region(marr, {0, 0}, {64, 64}, 2, NULL, 0) -> BUFFER_SIZE,
         *             shard_array_read_region(marr, {0, 0}, {64, 64}, 2, all, 8192)
         *        [44] shard_codec_free(c); shard_array_close(marr)                           */
        {
            static mem_store objects;
            static uint16_t nines[64 * 32], all[64 * 64];
            uint64_t s9[2] = {32, 0}, sh9[2] = {32, 64}, sall[2] = {64, 64};
            shard_array *marr;
            size_t row, col;
            int model_ok = 1;
            unsigned long stored = 0;
            table = store_table(&objects, mem_store_open_object, plain_store_list);
            arr = NULL;
            acodec = NULL;
            marr = array_open(json, json_len, &table, &acodec, "[40] ShardArray(json, key -> get!(MemoryShardIO, objects, key))");
            CHECK_OK(shard_array_write_region(marr, start, shape, 2, (const uint8_t *)R, sizeof R), "[41] shard_array_write_region");
            for (k = 0; k < 64 * 32; k++) nines[k] = 9;
            CHECK_OK(shard_array_write_region(marr, s9, sh9, 2, (const uint8_t *)nines, sizeof nines), "[42] shard_array_write_region");
            CHECK_PROBE(shard_array_read_region(marr, start0, sall, 2, NULL, 0), SHARD_ERR_BUFFER_SIZE,
                        "[43] shard_array_read_region (NULL, 0) probe");
            CHECK_OK(shard_array_read_region(marr, start0, sall, 2, (uint8_t *)all, sizeof all), "[43] shard_array_read_region");
            /* model[x, y] for C row y-1, column x-1: 9 in rows 32..63, else the fixture in the
             * first region, else the fill value. */
            for (row = 0; row < 64; row++)
                for (col = 0; col < 64; col++) {
                    uint16_t want = row >= 32 ? 9
                                    : (row >= 10 && row < 50 && col >= 20 && col < 50) ? le16(raw + 2 * (row * 64 + col))
                                                                                        : 0;
                    if (all[col + row * 64] != want) model_ok = 0;
                }
            check(model_ok, "[43] read_region(marr, (1, 1), (64, 64)) == the model of both writes");
            for (k = 0; k < objects.n; k++) stored += objects.e[k].io.exists ? 1 : 0;
            check(stored == 4, "[43] 4 shard objects stored in memory (%lu)", stored);

            /* julia: isempty(verify(marr))                                                  [43a]
             * C:     shard_array_verify(marr, CB_PROBLEM[], pointer_from_objref(problems), &n)
             * julia: info = open(s -> chunk_info(s, (2, 1)), ZarrShard.codec(marr), objects["c/0/0"])  [43b]
             * C:     shard_open_ex(c, &mem table (read: no write callbacks), SHARD_MODE_READ, 0, &h)
             *        shard_chunk_info(h, {0, 1}, 2, &info); shard_close(h)
             * julia: d = contents(objects["c/0/0"]); d[info.offset + 1] xor= 0xff
             *        objects["c/0/0"] = MemoryShardIO(d)     (the chunk's first byte, in memory)
             * julia: problems = verify(marr)                                                [43c]
             *        p = only(problems)  (one problem)
             *        p.key == "c/0/0" && p.chunk == [2, 1] &&
             *        p.status == SHARD_ERR_CORRUPT && startswith(p.message, "corrupt shard: inner chunk [0, 1]: ")
             * C:     shard_array_verify(marr, CB_PROBLEM[], pointer_from_objref(problems), &n) */
            {
                static problem_list pl;
                uint64_t n = 99, c01[2] = {0, 1};
                mem_io *m00 = NULL;
                shard_io_callbacks io;
                shard_handle *h = NULL;
                shard_chunk_location info;
                shard_status vst;
                zs_error ve;
                memset(&pl, 0, sizeof pl);
                CHECK_OK(shard_array_verify(marr, problem_push, &pl, &n), "[43a] shard_array_verify");
                check(n == 0 && pl.seen == 0, "[43a] verify(marr): the written array is clean (%lu problems)",
                      (unsigned long)n);
                for (k = 0; k < objects.n; k++)
                    if (strcmp(objects.e[k].key, "c/0/0") == 0) m00 = &objects.e[k].io;
                if (m00 == NULL || !m00->exists) die("[43b] no object c/0/0");
                io = mem_table(m00, 0);
                CHECK_OK(shard_open_ex(acodec, &io, SHARD_MODE_READ, 0, &h), "[43b] shard_open_ex c/0/0");
                if (h == NULL) die("[43b] shard_open_ex c/0/0");
                CHECK_OK(shard_chunk_info(h, c01, 2, &info), "[43b] shard_chunk_info");
                shard_close(h);
                check(!info.empty && info.nbytes > 0 && info.offset < m00->len,
                      "[43b] C inner chunk [0][1] of c/0/0 is stored: offset %lu, %lu bytes",
                      (unsigned long)info.offset, (unsigned long)info.nbytes);
                m00->data[info.offset] ^= 0xff;
                memset(&pl, 0, sizeof pl);
                n = 99;
                CHECK_OK(shard_array_verify(marr, problem_push, &pl, &n), "[43c] shard_array_verify");
                check(n == 1 && pl.n == 1 && pl.seen == 1, "[43c] verify(marr) after the damage: one problem (%lu, %zu calls)",
                      (unsigned long)n, pl.seen);
                check(pl.n == 1 && strcmp(pl.p[0].key, "c/0/0") == 0 && pl.p[0].rank == 2 && pl.p[0].chunk[0] == 2 &&
                          pl.p[0].chunk[1] == 1,
                      "[43c] the problem is c/0/0, inner chunk [2, 1] (Julia; C [0][1]): %s [%lu, %lu], rank %zu",
                      pl.n ? pl.p[0].key : "", (unsigned long)pl.p[0].chunk[0], (unsigned long)pl.p[0].chunk[1], pl.p[0].rank);
                check(pl.n == 1 && pl.p[0].status == SHARD_ERR_CORRUPT &&
                          strncmp(pl.p[0].message, "corrupt shard: inner chunk [0, 1]: ", 35) == 0,
                      "[43c] status %d (want SHARD_ERR_CORRUPT %d), message \"%s\"", pl.n ? (int)pl.p[0].status : -1,
                      (int)SHARD_ERR_CORRUPT, pl.n ? pl.p[0].message : "");

                /* Not in the example: cb_problem returning a code (push! threw) stops the check
                 * with SHARD_ERR_IO and that code in shard_last_io_code, which ZarrShardError
                 * reads to find the exception (its cause); verify drops the problems. */
                memset(&pl, 0, sizeof pl);
                pl.fail = 0x4A4C4558; /* IO_CODE_EXCEPTION, "JLEX" */
                vst = shard_array_verify(marr, problem_push, &pl, &n);
                ve = zarrshard_error(vst);
                check(vst == SHARD_ERR_IO && ve.io_code == 0x4A4C4558 && pl.seen == 1,
                      "[43c] a failing problem callback: status %d (want %d), io code %d, %zu call(s), \"%s\"",
                      (int)vst, (int)SHARD_ERR_IO, (int)ve.io_code, pl.seen, ve.message);
            }
            store_destroys = 0;
            shard_codec_free(acodec);
            shard_array_close(marr);
            check(store_destroys == 1, "[44] shard_array_close called the store's destroy once");
            for (k = 0; k < objects.n; k++) free(objects.e[k].io.data);
        }

        /* julia: sparse = DictStore()   (no C call)
         *        open(ShardArray, json, sparse) do sarr                                    [45]
         * C:     shard_array_open(json, sizeof(json), &{2, 0, sf, open_object, destroy, list}, &sarr),
         *        then Codec(c) as in [36]; list is cb_store_list, calling list_keys(::DictStore)
         * julia: write_region(sarr, (49, 1), fill(UInt16(5), 16, 16))                      [46]
         * C:     shard_array_write_region(sarr, {0, 48}, {16, 16}, 2, fives, 512)
         *        -> C rows 0..15, columns 48..63: inner chunk [0][1] of c/0/1, 1 open_object
         * julia: list_keys(sparse, "c/") == ["c/0/1"]   (no C call)
         * julia: isempty(verify(sarr))                                                     [47]
         * C:     shard_array_verify(sarr, CB_PROBLEM[], pointer_from_objref(problems), &n)
         *        -> list("c/") once, on_key("c/0/1"); 1 open_object (not 4), no problem
         * julia: count("[\"{{u}}/c/", kerchunk_refs(sarr, url)) == 1                        [48]
         * C:     shard_array_refs_write(sarr, V1, 3, url, sizeof(url), "", 0, CB_SINK[], out)
         *        -> list once, 1 open_object, 1 reference
         * julia: end                                                                       [49]
         * C:     shard_codec_free(c); shard_array_close(sarr) -> destroy(store) once
         * julia: open(ShardArray, json, key -> sparse(key)) do parr                        [50]
         * C:     shard_array_open with the same objects; list_keys(::Function) is nothing
         * julia: isempty(verify(parr))                                                     [51]
         * C:     shard_array_verify(parr, ...) -> list returns SHARD_STORE_CANNOT_LIST;
         *        4 open_object (every grid position), no problem
         * julia: end                                                                       [52]
         * julia: open(ShardArray, json, RefusingListing(sparse)) do rarr                   [53]
         * julia: verify(rarr) throws                                                       [54]
         * C:     shard_array_verify(rarr, ...) -> list returns IO_CODE_EXCEPTION: SHARD_ERR_IO,
         *        then ZarrShardError(status): shard_last_error (size, copy), shard_last_io_code
         *        == IO_CODE_EXCEPTION; no open_object
         * julia: end                                                                       [55] */
        {
            static mem_store sparse;
            static uint16_t fives[16 * 16];
            static problem_list pl;
            uint64_t s5[2] = {0, 48}, sh5[2] = {16, 16}, n = 99;
            char url[2 * 4096 + 16], cwd[4096];
            shard_array *sarr;
            text_sink t;
            const char *p;
            int nrefs = 0;
            unsigned long stored = 0;
            shard_status st;
            zs_error e;
            if (root[0] == '/') snprintf(url, sizeof url, "file://%s", root);
            else if (getcwd(cwd, sizeof cwd) != NULL) snprintf(url, sizeof url, "file://%s/%s", cwd, root);
            else die("getcwd");

            table = store_table(&sparse, mem_store_open_object, memory_store_list);
            acodec = NULL;
            store_opens = 0;
            store_lists = 0;
            sarr = array_open(json, json_len, &table, &acodec, "[45] ShardArray(json, DictStore())");
            for (k = 0; k < 16 * 16; k++) fives[k] = 5;
            CHECK_OK(shard_array_write_region(sarr, s5, sh5, 2, (const uint8_t *)fives, sizeof fives),
                     "[46] shard_array_write_region");
            for (k = 0; k < sparse.n; k++) stored += sparse.e[k].io.exists ? 1 : 0;
            check(store_opens == 1 && sparse.n == 1 && stored == 1 && strcmp(sparse.e[0].key, "c/0/1") == 0 &&
                      store_lists == 0,
                  "[46] the write opened only c/0/1 (%lu open_object, %zu object(s), %lu stored, %lu list call(s))",
                  store_opens, sparse.n, stored, store_lists);

            memset(&pl, 0, sizeof pl);
            store_opens = 0;
            store_lists = 0;
            list_prefix[0] = '\0';
            memset(calls_of, 0, sizeof calls_of);
            CHECK_OK(shard_array_verify(sarr, problem_push, &pl, &n), "[47] shard_array_verify");
            check(n == 0 && pl.seen == 0, "[47] verify(sarr): clean (%lu problems)", (unsigned long)n);
            check(store_lists == 1 && strcmp(list_prefix, "c/") == 0 && store_opens == 1 && calls_of[K_DESTROY] == 1,
                  "[47] one listing (prefix \"%s\", %lu call(s)), then only the listed shard: %lu open_object "
                  "(4 without listing), %lu destroy",
                  list_prefix, store_lists, store_opens, calls_of[K_DESTROY]);

            memset(&t, 0, sizeof t);
            store_opens = 0;
            store_lists = 0;
            CHECK_OK(shard_array_refs_write(sarr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0, sink_append, &t),
                     "[48] shard_array_refs_write");
            for (p = t.data; p != NULL && (p = strstr(p, "[\"{{u}}/c/")) != NULL; p++) nrefs++;
            check(nrefs == 1 && t.data != NULL && strstr(t.data, "[\"{{u}}/c/0/1\",") != NULL,
                  "[48] kerchunk_refs(sarr, url): %d reference(s) (want 1, into c/0/1)", nrefs);
            check(store_lists == 1 && store_opens == 1,
                  "[48] one listing, %lu open_object (want 1; %lu list call(s))", store_opens, store_lists);
            free(t.data);

            /* Not in the example: list_keys listing more than the shard (other objects, c/5/5
             * outside the grid, c/00/1, bytes that are not UTF-8, c/0/1 twice): ignored. */
            table = store_table(&sparse, mem_store_open_object, extra_store_list);
            {
                shard_codec *c2 = NULL;
                shard_array *xarr = array_open(json, json_len, &table, &c2, "ShardArray over a listing with extra keys");
                memset(&pl, 0, sizeof pl);
                store_opens = 0;
                store_lists = 0;
                CHECK_OK(shard_array_verify(xarr, problem_push, &pl, &n), "shard_array_verify (extra keys)");
                check(n == 0 && store_lists == 1 && store_opens == 1,
                      "extra listed keys are ignored: %lu open_object (want 1), %lu problems",
                      store_opens, (unsigned long)n);
                shard_codec_free(c2);
                shard_array_close(xarr);
            }
            /* Not in the example: list_keys leaving the stored shard out: it is treated as
             * missing, neither checked nor referenced (the contract the docstring states). */
            table = store_table(&sparse, mem_store_open_object, empty_store_list);
            {
                shard_codec *c2 = NULL;
                shard_array *earr = array_open(json, json_len, &table, &c2, "ShardArray over a listing leaving c/0/1 out");
                memset(&pl, 0, sizeof pl);
                memset(&t, 0, sizeof t);
                store_opens = 0;
                store_lists = 0;
                CHECK_OK(shard_array_verify(earr, problem_push, &pl, &n), "shard_array_verify (c/0/1 left out)");
                CHECK_OK(shard_array_refs_write(earr, SHARD_REFS_JSON_V1, 3, url, strlen(url), "", 0, sink_append, &t),
                         "shard_array_refs_write (c/0/1 left out)");
                check(store_lists == 2 && store_opens == 0 && t.data != NULL && strstr(t.data, "[\"{{u}}/c/") == NULL,
                      "a shard left out of the listing is missing: %lu open_object, no reference (%lu list calls)",
                      store_opens, store_lists);
                free(t.data);
                shard_codec_free(c2);
                shard_array_close(earr);
            }

            store_destroys = 0;
            shard_codec_free(acodec);
            shard_array_close(sarr);                                                       /* [49] */
            check(store_destroys == 1, "[49] shard_array_close called the store's destroy once");

            table = store_table(&sparse, mem_store_open_object, plain_store_list);
            acodec = NULL;
            sarr = array_open(json, json_len, &table, &acodec, "[50] ShardArray(json, key -> sparse(key))");
            memset(&pl, 0, sizeof pl);
            store_opens = 0;
            store_lists = 0;
            memset(calls_of, 0, sizeof calls_of);
            CHECK_OK(shard_array_verify(sarr, problem_push, &pl, &n), "[51] shard_array_verify");
            check(n == 0 && store_lists == 1 && store_opens == 4 && calls_of[K_DESTROY] == 4,
                  "[51] cannot list (SHARD_STORE_CANNOT_LIST): every grid position asked, %lu open_object "
                  "(want 4), %lu destroy, %lu problems",
                  store_opens, calls_of[K_DESTROY], (unsigned long)n);
            shard_codec_free(acodec);
            shard_array_close(sarr);                                                       /* [52] */

            table = store_table(&sparse, mem_store_open_object, refusing_store_list);
            acodec = NULL;
            sarr = array_open(json, json_len, &table, &acodec, "[53] ShardArray(json, RefusingListing(sparse))");
            memset(&pl, 0, sizeof pl);
            store_opens = 0;
            store_lists = 0;
            st = shard_array_verify(sarr, problem_push, &pl, &n);                          /* [54] */
            e = zarrshard_error(st);
            check(st == SHARD_ERR_IO && e.io_code == 0x4A4C4558 && store_lists == 1 && store_opens == 0 && pl.seen == 0,
                  "[54] a failing listing: status %d (want %d), io code %d (IO_CODE_EXCEPTION), %lu open_object, \"%s\"",
                  (int)st, (int)SHARD_ERR_IO, (int)e.io_code, store_opens, e.message);
            shard_codec_free(acodec);
            shard_array_close(sarr);                                                       /* [55] */
            for (k = 0; k < sparse.n; k++) free(sparse.e[k].io.data);
        }
    }
    {
        uint64_t freed_bytes = 1;
        size_t contexts = 0;
        shard_status st = shard_release_memory(&freed_bytes, &contexts);                                /* [56] */
        check(st == SHARD_OK && contexts >= 2,
              "[56] release_memory: status %d, %lu codec contexts freed (want >= 2: the example encoded and decoded)",
              (int)st, (unsigned long)contexts);
        st = shard_release_memory(&freed_bytes, &contexts);                                /* [57] */
        check(st == SHARD_OK && freed_bytes == 0 && contexts == 0,
              "[57] a second release_memory: status %d, %lu bytes and %lu contexts (want 0 and 0)",
              (int)st, (unsigned long)freed_bytes, (unsigned long)contexts);
    }

    /* ---- the library's stores (stores.jl) ------------------------------------------------ */
    {
        char root[4096], stack_root[4096], jpath[4200];
        shard_store_callbacks fx, st, mem;
        shard_array *arr = NULL;
        shard_codec *c = NULL;
        shard_status rc;
        static uint16_t R[40 * 30], F[24 * 40], G[8 * 24 * 40], M[8 * 24 * 40];
        size_t t, x, y, k;
        int same;

        /* julia: fx = DirectoryStore(array)                                               [58]
         * C:     shard_store_directory(root, 0, &fx)                                          */
        snprintf(root, sizeof root, "%s/fixture.zarr", dir);
        CHECK_OK(shard_store_directory(root, 0, &fx), "[58] shard_store_directory");
        check((fx.flags & SHARD_STORE_THREAD_SAFE) != 0 && fx.version == SHARD_STORE_VERSION,
              "[58] the library's store table is version %u, thread-safe", (unsigned)fx.version);
        /* julia: open(fx) do farr                                                         [59]
         * C:     shard_array_open_path(&fx, "", &arr), then _wrap_array's calls              */
        CHECK_OK(shard_array_open_path(&fx, "", &arr), "[59] shard_array_open_path(fixture, \"\")");
        if (arr == NULL) die("[59] no array");
        c = wrap_array(arr, "uint16", "[59] open(fx)");
        {
            /* julia: size(farr) == (64, 64)                                               [60] */
            uint64_t want[2] = {64, 64};
            uint64_t start[2] = {10, 20}, shape[2] = {40, 30};
            array_size_is(arr, want, 2, "[60] size(farr)");
            /* julia: read_region(farr, (21, 11), (30, 40)) == expected[21:50, 11:50]      [61] */
            read_region_c(arr, start, shape, 2, R, sizeof R, "[61] read_region(farr)");
            same = 1;
            for (x = 1; x <= 30; x++)
                for (y = 1; y <= 40; y++)
                    if (R[(x - 1) + (y - 1) * 30] != le16(raw + 2 * ((20 + x - 1) + (10 + y - 1) * 64))) same = 0;
            check(same, "[61] the fixture by path in a DirectoryStore: the region equals fixture.raw's");
        }
        close_array(arr, c);                                                             /* [62] */
        /* julia: close(fx)                                                                [63]
         * C:     shard_store_release(&fx)                                                     */
        shard_store_release(&fx);
        check(fx.userdata == NULL && fx.open_object == NULL, "[63] shard_store_release zeroed the table");
        shard_store_release(&fx); /* Not in the example: a second release of the zeroed table is a no-op */
        shard_store_release(NULL);

        /* julia: store = DirectoryStore(root; create = true)                              [64]
         * C:     shard_store_directory(stack_root, SHARD_STORE_CREATE, &st)
         *        (run.sh makes a fresh fixture directory: nothing to remove first)           */
        snprintf(stack_root, sizeof stack_root, "%s/stack.zarr", dir);
        CHECK_OK(shard_store_directory(stack_root, SHARD_STORE_CREATE, &st), "[64] shard_store_directory(CREATE)");
        /* julia: create_group(store; attributes = """{"description":"frames"}""")        [65]
         * C:     shard_group_create(&st, "", json, 26, 0)                                     */
        {
            static const char gattrs[] = "{\"description\":\"frames\"}";
            CHECK_OK(shard_group_create(&st, "", gattrs, strlen(gattrs), 0), "[65] shard_group_create");
        }
        /* julia: stack = create(store, "0"; shape = (40, 24, 0), chunks = (20, 8, 2),       [66]
         *                       shards = (40, 24, 4), dtype = UInt16,
         *                       dimension_names = ("x", "y", "t"))
         * C:     with_spec: shard_array_spec_init(&init), then the spec, C order:
         *        {init.version, 3, {0, 24, 40}, {4, 24, 40}, {2, 8, 20}, "uint16", NULL, NULL,
         *         init.compression_level, init.index_location, init.checksums, {"t", "y", "x"}}
         *        shard_array_create_spec(&st, "0", &spec, 0, &arr), then _wrap_array's calls   */
        {
            shard_array_spec init, spec;
            uint64_t shape[3] = {0, 24, 40}, shards[3] = {4, 24, 40}, chunks[3] = {2, 8, 20};
            /* namebuf "t\0y\0x\0" and pointers into it, as with_spec builds them */
            static const char namebuf[] = "t\0y\0x";
            const char *names[3];
            names[0] = namebuf;
            names[1] = namebuf + 2;
            names[2] = namebuf + 4;
            CHECK_OK(shard_array_spec_init(&init), "[66] shard_array_spec_init");
            check(init.version == SHARD_ARRAY_SPEC_VERSION && init.shape == NULL && init.data_type == NULL,
                  "[66] shard_array_spec_init: version %u, pointers NULL", (unsigned)init.version);
            spec = init;
            spec.rank = 3;
            spec.shape = shape;
            spec.shard_shape = shards;
            spec.chunk_shape = chunks;
            spec.data_type = "uint16";
            spec.fill_value = NULL;
            spec.compressor = NULL;
            spec.dimension_names = names;
            arr = NULL;
            CHECK_OK(shard_array_create_spec(&st, "0", &spec, 0, &arr), "[66] shard_array_create_spec");
            if (arr == NULL) die("[66] no array");
            c = wrap_array(arr, "uint16", "[66] create(store, \"0\"; ...)");
        }
        /* julia: for t in 0:4: append!(stack, frame(t))                                   [67]
         * C:     ndims: shard_array_rank(arr, &r); then, a frame (40, 24) made (40, 24, 1):
         *        shard_array_append(arr, 3 - 3 = 0, {1, 24, 40}, 3, frame, 1920)              */
        for (t = 0; t <= 4; t++) {
            size_t r = 0;
            uint64_t block[3] = {1, 24, 40};
            CHECK_OK(shard_array_rank(arr, &r), "[67] shard_array_rank");
            stack_frame(t, F);
            CHECK_OK(shard_array_append(arr, r - 3, block, r, (const uint8_t *)F, sizeof F), "[67] shard_array_append");
        }
        {
            /* julia: size(stack) == (40, 24, 5)                                           [68] */
            uint64_t want[3] = {5, 24, 40};
            uint64_t start[3] = {4, 0, 0}, shape[3] = {1, 24, 40};
            array_size_is(arr, want, 3, "[68] size(stack) after 5 frames");
            /* Not in the example: zarr.json does not cover pending frames until a flush. */
            snprintf(jpath, sizeof jpath, "%s/0/zarr.json", stack_root);
            check(!file_contains(jpath, "\"shape\":[5,24,40]"), "[68] before flush, zarr.json's shape is not [5,24,40]");
            /* julia: read_region(stack, (1, 1, 5), (40, 24, 1)) == frame(4)               [69] */
            read_region_c(arr, start, shape, 3, F, sizeof F, "[69] read_region(stack, frame 4)");
            same = 1;
            for (y = 0; y < 24; y++)
                for (x = 0; x < 40; x++)
                    if (F[y * 40 + x] != stack_value(4, y, x)) same = 0;
            check(same, "[69] the pending frame 4 reads back");
        }
        /* julia: flush(stack)                                                             [70] */
        CHECK_OK(shard_array_flush(arr), "[70] shard_array_flush");
        check(file_contains(jpath, "\"shape\":[5,24,40]"), "[70] after flush, zarr.json's shape is [5,24,40]");
        /* julia: set_attributes!(stack, """{"unit":"ms"}""")                              [71]
         * julia: attributes(stack) == """{"unit":"ms"}"""                                 [72]
         * C:     shard_array_set_attributes(arr, json, 13);
         *        shard_array_attributes(arr, NULL, 0, &n); (arr, buf, n + 1, &n)              */
        {
            static const char attrs[] = "{\"unit\":\"ms\"}";
            size_t n = 0;
            char buf[64];
            CHECK_OK(shard_array_set_attributes(arr, attrs, strlen(attrs)), "[71] shard_array_set_attributes");
            CHECK_OK(shard_array_attributes(arr, NULL, 0, &n), "[72] shard_array_attributes (size)");
            if (n + 1 > sizeof buf) die("[72] attributes too long");
            CHECK_OK(shard_array_attributes(arr, buf, n + 1, &n), "[72] shard_array_attributes");
            check(n == strlen(attrs) && strcmp(buf, attrs) == 0, "[72] attributes(stack) == %s (got %s)", attrs, buf);
            check(file_contains(jpath, "\"attributes\":{\"unit\":\"ms\"}"), "[71] zarr.json holds the attributes");
        }
        /* julia: for t in 5:9: append!(stack, frame(t))                                   [73] */
        for (t = 5; t <= 9; t++) {
            size_t r = 0;
            uint64_t block[3] = {1, 24, 40};
            CHECK_OK(shard_array_rank(arr, &r), "[73] shard_array_rank");
            stack_frame(t, F);
            CHECK_OK(shard_array_append(arr, r - 3, block, r, (const uint8_t *)F, sizeof F), "[73] shard_array_append");
        }
        {
            /* julia: resize!(stack, (40, 24, 7)); resize!(stack, (40, 24, 8))          [74] [75]
             * C:     shard_array_resize(arr, {7, 24, 40}, 3); (arr, {8, 24, 40}, 3)          */
            uint64_t s7[3] = {7, 24, 40}, s8[3] = {8, 24, 40};
            uint64_t start[3] = {7, 0, 0}, shape[3] = {1, 24, 40};
            CHECK_OK(shard_array_resize(arr, s7, 3), "[74] shard_array_resize to 7 frames");
            CHECK_OK(shard_array_resize(arr, s8, 3), "[75] shard_array_resize to 8 frames");
            check(file_contains(jpath, "\"shape\":[8,24,40]"), "[75] zarr.json's shape is [8,24,40]");
            /* julia: all(iszero, read_region(stack, (1, 1, 8), (40, 24, 1)))              [76] */
            read_region_c(arr, start, shape, 3, F, sizeof F, "[76] read_region(stack, frame 7)");
            same = 1;
            for (k = 0; k < 24 * 40; k++)
                if (F[k] != 0) same = 0;
            check(same, "[76] frame 7, cut by the shrink and regrown, reads as the fill value (not frame 7's old data)");
        }
        {
            /* julia: write_region(stack, (1, 1, 2), fill(UInt16(7), 20, 8, 1))           [77]
             * C:     shard_array_write_region(arr, {1, 0, 0}, {1, 8, 20}, 3, data, 320)      */
            uint64_t start[3] = {1, 0, 0}, shape[3] = {1, 8, 20};
            uint16_t sevens[8 * 20];
            uint64_t rewritten = 0, freed = 0;
            for (k = 0; k < 8 * 20; k++) sevens[k] = 7;
            CHECK_OK(shard_array_write_region(arr, start, shape, 3, (const uint8_t *)sevens, sizeof sevens),
                     "[77] shard_array_write_region");
            /* julia: c = compact!(stack)                                                  [78]
             * C:     shard_array_compact(arr, 0, &rewritten, &freed)                         */
            CHECK_OK(shard_array_compact(arr, 0, &rewritten, &freed), "[78] shard_array_compact");
            check(rewritten == 1 && freed > 0, "[78] compact!: %llu shard(s) rewritten, %llu bytes freed",
                  (unsigned long long)rewritten, (unsigned long long)freed);
            /* Not in the example: a second compaction has nothing left to free. */
            CHECK_OK(shard_array_compact(arr, 0, &rewritten, &freed), "[78] shard_array_compact again");
            check(rewritten == 0 && freed == 0, "[78] compacted again: %llu shard(s), %llu bytes",
                  (unsigned long long)rewritten, (unsigned long long)freed);
        }
        close_array(arr, c);                                                             /* [79] */
        /* the model: frames 0..6, frame 7 fill, C [1][0..7][0..19] = 7 */
        for (t = 0; t < 8; t++)
            for (y = 0; y < 24; y++)
                for (x = 0; x < 40; x++)
                    M[(t * 24 + y) * 40 + x] = t == 7 ? 0 : (t == 1 && y < 8 && x < 20) ? 7 : stack_value(t, y, x);
        /* julia: open(store, "0") do s2                                                   [80]
         * C:     shard_array_open_path(&st, "0", &arr), then _wrap_array's calls             */
        arr = NULL;
        CHECK_OK(shard_array_open_path(&st, "0", &arr), "[80] shard_array_open_path(store, \"0\")");
        if (arr == NULL) die("[80] no array");
        c = wrap_array(arr, "uint16", "[80] open(store, \"0\")");
        {
            uint64_t want[3] = {8, 24, 40}, start[3] = {0, 0, 0};
            array_size_is(arr, want, 3, "[81] size(s2)");                                /* [81] */
            read_region_c(arr, start, want, 3, G, sizeof G, "[82] read_region(s2, all)"); /* [82] */
            check(memcmp(G, M, sizeof G) == 0, "[82] the stack opened by path equals the model");
        }
        close_array(arr, c);                                                             /* [83] */
        /* julia: create(store, "0"; shape = (1,), chunks = (1,), dtype = UInt8) -> INVALID_STATE,
         *        the same at "../x" -> INVALID_ARGUMENT                                  [84]
         * C:     shard_array_spec_init(&init); shard_array_create_spec(&st, path, &spec, 0, &a),
         *        then ZarrShardError(status)                                                  */
        {
            const char *paths[2] = {"0", "../x"};
            shard_status want[2] = {SHARD_ERR_INVALID_STATE, SHARD_ERR_INVALID_ARGUMENT};
            int i;
            for (i = 0; i < 2; i++) {
                shard_array_spec spec;
                uint64_t one[1] = {1};
                shard_array *a = NULL;
                zs_error e;
                CHECK_OK(shard_array_spec_init(&spec), "[84] shard_array_spec_init");
                spec.rank = 1;
                spec.shape = one;
                spec.shard_shape = NULL;
                spec.chunk_shape = one;
                spec.data_type = "uint8";
                rc = shard_array_create_spec(&st, paths[i], &spec, 0, &a);
                e = zarrshard_error(rc);
                check(rc == want[i] && a == NULL && strstr(e.message, paths[i]) != NULL,
                      "[84] create at \"%s\": status %d (want %d), \"%s\"", paths[i], (int)rc, (int)want[i], e.message);
            }
        }
        /* julia: open(store, "1") -> SHARD_ERR_INVALID_METADATA                           [85] */
        {
            shard_array *a = NULL;
            zs_error e;
            rc = shard_array_open_path(&st, "1", &a);
            e = zarrshard_error(rc);
            check(rc == SHARD_ERR_INVALID_METADATA && a == NULL && strstr(e.message, "`1`") != NULL,
                  "[85] open of a missing array: status %d (want %d), \"%s\"", (int)rc,
                  (int)SHARD_ERR_INVALID_METADATA, e.message);
        }
        shard_store_release(&st);                                                        /* [86] */

        /* julia: mem = MemoryStore()                                                      [87]
         * C:     shard_store_memory(&mem)                                                     */
        CHECK_OK(shard_store_memory(&mem), "[87] shard_store_memory");
        {
            /* julia: meta = metadata_json(; shape = (8, 4), chunks = (4, 2), shards = (8, 4),
             *                             dtype = Int32, fill_value = -1)              [88]
             * C:     shard_array_spec_init(&spec); spec: rank 2, {4, 8}, {4, 8}, {2, 4},
             *        "int32", "-1"; shard_array_spec_json(&spec, NULL, 0, &n), (..., buf, n + 1, &n) */
            shard_array_spec spec;
            uint64_t shape[2] = {4, 8}, chunks[2] = {2, 4};
            size_t n = 0;
            char *meta;
            int32_t data[4] = {1, 3, 2, 4}; /* Julia Int32[1 2; 3 4], column-major */
            int32_t W[4 * 8], want[4 * 8];
            uint64_t start[2] = {2, 4}, shape2[2] = {2, 2}, all0[2] = {0, 0}, all[2] = {4, 8};
            shard_array *m = NULL;
            shard_codec *mc;
            CHECK_OK(shard_array_spec_init(&spec), "[88] shard_array_spec_init");
            spec.rank = 2;
            spec.shape = shape;
            spec.shard_shape = shape;
            spec.chunk_shape = chunks;
            spec.data_type = "int32";
            spec.fill_value = "-1";
            CHECK_OK(shard_array_spec_json(&spec, NULL, 0, &n), "[88] shard_array_spec_json (size)");
            meta = (char *)malloc(n + 1);
            if (meta == NULL) die("out of memory");
            CHECK_OK(shard_array_spec_json(&spec, meta, n + 1, &n), "[88] shard_array_spec_json");
            check(strlen(meta) == n && strstr(meta, "\"sharding_indexed\"") != NULL && strstr(meta, "\"int32\"") != NULL,
                  "[88] metadata_json: %zu bytes of zarr.json, sharded int32", n);
            /* julia: m = create(mem, "a", meta)                                            [89]
             * C:     shard_array_create(&mem, "a", meta, n, 0, &m), then _wrap_array's calls */
            CHECK_OK(shard_array_create(&mem, "a", meta, n, 0, &m), "[89] shard_array_create");
            if (m == NULL) die("[89] no array");
            mc = wrap_array(m, "int32", "[89] create(mem, \"a\", meta)");
            /* julia: write_region(m, (5, 3), Int32[1 2; 3 4])                             [90]
             * C:     shard_array_write_region(m, {2, 4}, {2, 2}, 2, {1, 3, 2, 4}, 16)        */
            CHECK_OK(shard_array_write_region(m, start, shape2, 2, (const uint8_t *)data, sizeof data),
                     "[90] shard_array_write_region");
            for (k = 0; k < 32; k++) want[k] = -1;
            want[2 * 8 + 4] = 1; /* Julia want[5, 3] */
            want[2 * 8 + 5] = 3; /* want[6, 3] */
            want[3 * 8 + 4] = 2; /* want[5, 4] */
            want[3 * 8 + 5] = 4; /* want[6, 4] */
            /* julia: read_region(m, (1, 1), (8, 4)) == want                                [91] */
            read_region_c(m, all0, all, 2, W, sizeof W, "[91] read_region(m)");
            check(memcmp(W, want, sizeof W) == 0, "[91] the memory array reads back, fill value -1 elsewhere");
            close_array(m, mc);                                                          /* [92] */
            /* julia: open(mem, "a") do m2 ... end                                   [93]-[95] */
            m = NULL;
            CHECK_OK(shard_array_open_path(&mem, "a", &m), "[93] shard_array_open_path(mem, \"a\")");
            if (m == NULL) die("[93] no array");
            mc = wrap_array(m, "int32", "[93] open(mem, \"a\")");
            memset(W, 0, sizeof W);
            read_region_c(m, all0, all, 2, W, sizeof W, "[94] read_region(m2)");
            check(memcmp(W, want, sizeof W) == 0, "[94] the memory array by path reads the same");
            close_array(m, mc);                                                          /* [95] */
            free(meta);
        }
        shard_store_release(&mem);                                                       /* [96] */

        /* julia: host = HostStore(DictStore())     (no C call)                          [97]
         * with_table(host): store_table(&hs, open_object = cb_store_open_object, list =
         * cb_store_list over list_keys(::DictStore)), built for each call                     */
        {
            static mem_store hs;
            shard_store_callbacks ht = store_table(&hs, mem_store_open_object, memory_store_list);
            shard_array_spec spec;
            uint64_t shape[2] = {4, 4}, chunks[2] = {2, 2}, origin[2] = {0, 0};
            /* Julia UInt8[1 2 3 4; 5 6 7 8; ...] in column-major memory: C element [r][c] is
             * small[c+1, r+1] = 4c + r + 1 */
            static const uint8_t small[16] = {1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15, 4, 8, 12, 16};
            uint8_t back[16];
            shard_array *h = NULL;
            shard_codec *hc;
            const char *want_keys[3] = {"img/0/c/0/0", "img/0/zarr.json", "img/zarr.json"};
            int found = 0, stored = 0, i;
            /* julia: create_group(host, "img")                                            [98]
             * C:     shard_group_create(&ht, "img", "", 0, 0)                                */
            store_destroys = 0;
            CHECK_OK(shard_group_create(&ht, "img", "", 0, 0), "[98] shard_group_create (host store)");
            check(store_destroys == 0, "[98] shard_group_create never takes a host table over (%lu destroy)", store_destroys);
            /* julia: h = create(host, "img/0"; shape = (4, 4), chunks = (2, 2),
             *                   shards = (4, 4), dtype = UInt8)                            [99]
             * C:     shard_array_spec_init(&spec); shard_array_create_spec(&ht, "img/0", &spec, 0, &h) */
            CHECK_OK(shard_array_spec_init(&spec), "[99] shard_array_spec_init");
            spec.rank = 2;
            spec.shape = shape;
            spec.shard_shape = shape;
            spec.chunk_shape = chunks;
            spec.data_type = "uint8";
            CHECK_OK(shard_array_create_spec(&ht, "img/0", &spec, 0, &h), "[99] shard_array_create_spec (host store)");
            if (h == NULL) die("[99] no array");
            hc = wrap_array(h, "uint8", "[99] create(host, \"img/0\"; ...)");
            /* julia: write_region(h, (1, 1), small)                                      [100]
             * C:     shard_array_write_region(h, {0, 0}, {4, 4}, 2, small, 16)              */
            CHECK_OK(shard_array_write_region(h, origin, shape, 2, small, sizeof small), "[100] shard_array_write_region");
            close_array(h, hc);                                                          /* [101] */
            check(store_destroys == 1, "[101] the array took the host table over: destroy once at close (%lu)", store_destroys);
            /* julia: open(host, "img/0") do h2                                           [102]
             *            read_region(h2, (1, 1), (4, 4)) == small                        [103]
             *        end                                                                 [104] */
            h = NULL;
            CHECK_OK(shard_array_open_path(&ht, "img/0", &h), "[102] shard_array_open_path (host store)");
            if (h == NULL) die("[102] no array");
            hc = wrap_array(h, "uint8", "[102] open(host, \"img/0\")");
            read_region_c(h, origin, shape, 2, back, sizeof back, "[103] read_region(h2)");
            check(memcmp(back, small, sizeof small) == 0, "[103] the host store's array reads back");
            close_array(h, hc);                                                          /* [104] */
            /* julia: open(host, "img/0") do h2                                           [105]
             *            occursin("\"node_type\": \"array\"", metadata(h2))              [106]
             *            set_index_cache!(forget_cached_indexes!(h2), 0)                 [107]
             *        end                                                                 [108]
             * C:     shard_array_metadata (size query, then copy), then
             *        shard_array_forget_cached_indexes, shard_array_set_index_cache(h, 0)   */
            {
                size_t meta_len = 0, got = 0;
                char *meta;
                h = NULL;
                CHECK_OK(shard_array_open_path(&ht, "img/0", &h), "[105] shard_array_open_path (host store)");
                if (h == NULL) die("[105] no array");
                hc = wrap_array(h, "uint8", "[105] open(host, \"img/0\")");
                CHECK_OK(shard_array_metadata(h, NULL, 0, &meta_len), "[106] shard_array_metadata (size)");
                meta = malloc(meta_len + 1);
                if (meta == NULL) die("[106] out of memory");
                CHECK_OK(shard_array_metadata(h, meta, meta_len + 1, &got), "[106] shard_array_metadata");
                check(got == meta_len && strstr(meta, "\"node_type\": \"array\"") != NULL,
                      "[106] metadata(h2) is the array's zarr.json (%lu bytes)", (unsigned long)got);
                free(meta);
                CHECK_OK(shard_array_forget_cached_indexes(h), "[107] shard_array_forget_cached_indexes");
                CHECK_OK(shard_array_set_index_cache(h, 0), "[107] shard_array_set_index_cache");
                close_array(h, hc);                                                      /* [108] */
            }
            /* julia: set_group_attributes!(host, "img", "{\"kind\":\"image\"}")          [109]
             *        group_attributes(host, "img") == "{\"kind\":\"image\"}"             [110]
             * C:     shard_group_set_attributes, shard_group_attributes (size, then copy)    */
            {
                const char kind[] = "{\"kind\":\"image\"}";
                char got_attrs[64];
                size_t n = 0;
                CHECK_OK(shard_group_set_attributes(&ht, "img", kind, sizeof kind - 1), "[109] shard_group_set_attributes");
                CHECK_OK(shard_group_attributes(&ht, "img", NULL, 0, &n), "[110] shard_group_attributes (size)");
                CHECK_OK(shard_group_attributes(&ht, "img", got_attrs, sizeof got_attrs, &n), "[110] shard_group_attributes");
                check(n == sizeof kind - 1 && strcmp(got_attrs, kind) == 0, "[110] group_attributes(host, \"img\") is %s", got_attrs);
            }
            /* julia: list_keys(host.open, "img/") == [the three keys]                          */
            for (i = 0; i < 3; i++) {
                size_t e;
                for (e = 0; e < hs.n; e++)
                    if (hs.e[e].io.exists && strcmp(hs.e[e].key, want_keys[i]) == 0) found++;
            }
            for (k = 0; k < hs.n; k++) stored += hs.e[k].io.exists ? 1 : 0;
            check(found == 3 && stored == 3,
                  "[104] the host store holds img/zarr.json, img/0/zarr.json, img/0/c/0/0 and nothing else (%d of 3, %d objects)",
                  found, stored);
            for (k = 0; k < hs.n; k++) free(hs.e[k].io.data);
        }
    }

    free(dtype);
    free(json);
    free(raw);
    printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
