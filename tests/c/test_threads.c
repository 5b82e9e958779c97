/*
 * test_threads: zarrshard handles under concurrent use (pthreads).
 *
 * * One read handle, 8 threads each decoding every inner chunk many times and checking the
 *   values, with the codec freed before they start (handles keep their own reference). The
 *   storage requests add up exactly: one per stored chunk read, none for empty chunks.
 * * Error messages are per thread: each thread provokes its own error and finds its own text.
 * * 8 threads opening, reading and closing their own handles on one back end at once.
 * * Two threads hammering one write handle (every write mode): each call returns SHARD_OK or
 *   SHARD_ERR_BUSY, nothing else; afterwards the shard holds what the successful calls wrote.
 * * Two threads racing to finalize: exactly one succeeds.
 *
 * ZS_THREAD_ITERS scales the loops (default 100; run.sh lowers it under valgrind).
 * Prints one line per test and `N passed, M failed` last.
 */
#define _XOPEN_SOURCE 700

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem_io.h"
#include "zarrshard.h"

static int g_passed, g_failed;
static int g_iters = 100;

/* Checks may fail on any thread: count under a lock, print the first few. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int t_failures;

static void check_failed(int line, const char *what) {
    pthread_mutex_lock(&g_lock);
    if (t_failures++ < 8) printf("    line %d: %s\n", line, what);
    pthread_mutex_unlock(&g_lock);
}

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) check_failed(__LINE__, #cond);                                        \
    } while (0)

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

/* 64x64 uint16 shards of 8x8 inner chunks: 64 chunks of 128 bytes. */
static const char CFG[] =
    "{\"chunk_shape\": [8, 8],"
    " \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    "            {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}],"
    " \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},"
    "                  {\"name\": \"crc32c\"}], \"index_location\": \"end\"}";
#define PER 8
#define NCHUNKS 64
#define ELEMS 64
#define NTHREADS 8

static shard_codec *make_codec(void) {
    static const uint64_t shape[2] = {64, 64};
    shard_codec *c = NULL;
    if (shard_codec_from_config(CFG, strlen(CFG), "uint16", 6, shape, 2, "0", 1, &c) !=
        SHARD_OK) {
        printf("fixture: shard_codec_from_config failed\n");
        exit(2);
    }
    return c;
}

static void coords_of(uint64_t i, uint64_t *c) {
    c[0] = i / PER;
    c[1] = i % PER;
}

/* Chunk i written with `seed`; seed 0 is the fill value. */
static void pattern(uint64_t i, unsigned seed, uint16_t *out) {
    unsigned j;
    for (j = 0; j < ELEMS; j++)
        out[j] = seed == 0 ? 0 : (uint16_t)(1 + (seed * 7919u + i * 257u + j * 5u) % 65000u);
}

/* The stored seed of chunk i in the shared read fixture: every seventh chunk is empty. */
static unsigned fixture_seed(uint64_t i) { return i % 7 == 2 ? 0 : 1 + (unsigned)(i % 3); }

static mem_io *fixture_shard(const shard_codec *c) {
    mem_io *m = mem_io_new(NULL, 0);
    shard_io_callbacks io;
    shard_handle *h = NULL;
    uint16_t buf[ELEMS];
    uint64_t i, cc[2];
    mem_io_callbacks(m, &io);
    if (shard_open(c, &io, SHARD_MODE_WRITE_BUFFERED, &h) != SHARD_OK) {
        printf("fixture: shard_open failed\n");
        exit(2);
    }
    for (i = 0; i < NCHUNKS; i++) {
        coords_of(i, cc);
        pattern(i, fixture_seed(i), buf);
        if (shard_write_chunk(h, cc, 2, (const uint8_t *)buf, sizeof buf) != SHARD_OK) exit(2);
    }
    if (shard_finalize(h, NULL) != SHARD_OK) exit(2);
    shard_close(h);
    return m;
}

/* ---- many readers, one read handle -------------------------------------------------- */

typedef struct {
    const shard_handle *h;
    mem_io *m;
    int id;
    unsigned long reads_done; /* stored chunks this thread decoded */
} reader_arg;

static void *reader(void *p) {
    reader_arg *a = (reader_arg *)p;
    uint16_t got[ELEMS], want[ELEMS], all[NCHUNKS * ELEMS];
    uint64_t cc[2], allc[NCHUNKS * 2];
    int it;
    uint64_t k;
    for (k = 0; k < NCHUNKS; k++) coords_of(k, allc + 2 * k);
    for (it = 0; it < g_iters; it++) {
        for (k = 0; k < NCHUNKS; k++) {
            /* Each thread walks the chunks in its own order. */
            uint64_t i = (k * 5 + (uint64_t)a->id * 11 + (uint64_t)it) % NCHUNKS;
            shard_status st;
            coords_of(i, cc);
            st = shard_read_chunk(a->h, cc, 2, (uint8_t *)got, sizeof got);
            if (st != SHARD_OK) {
                check_failed(__LINE__, shard_status_str((uint32_t)st));
                return NULL;
            }
            pattern(i, fixture_seed(i), want);
            if (memcmp(got, want, sizeof got) != 0) {
                check_failed(__LINE__, "wrong values");
                return NULL;
            }
            if (fixture_seed(i) != 0) a->reads_done++;
        }
        if (it % 10 == 0) { /* the batch call too */
            int batch_stored = 0;
            if (shard_read_chunks(a->h, allc, NCHUNKS, 2, (uint8_t *)all, sizeof all) != SHARD_OK) {
                check_failed(__LINE__, "shard_read_chunks");
                return NULL;
            }
            for (k = 0; k < NCHUNKS; k++) {
                pattern(k, fixture_seed(k), want);
                if (memcmp(all + k * ELEMS, want, sizeof want) != 0) {
                    check_failed(__LINE__, "wrong values from shard_read_chunks");
                    return NULL;
                }
                if (fixture_seed(k) != 0) batch_stored = 1;
            }
            a->reads_done += (unsigned long)batch_stored;
        }
    }
    return NULL;
}

static void test_many_readers_one_handle(void) {
    shard_codec *c = make_codec();
    mem_io *m = fixture_shard(c);
    shard_io_callbacks io;
    shard_handle *h = NULL;
    pthread_t t[NTHREADS];
    reader_arg a[NTHREADS];
    unsigned long total = 0;
    int i;
    mem_io_callbacks(m, &io);
    mem_io_reset_counters(m);
    CHECK(shard_open(c, &io, SHARD_MODE_READ, &h) == SHARD_OK);
    shard_codec_free(c); /* the handle keeps the layout alive */
    for (i = 0; i < NTHREADS; i++) {
        a[i].h = h;
        a[i].m = m;
        a[i].id = i;
        a[i].reads_done = 0;
        CHECK(pthread_create(&t[i], NULL, reader, &a[i]) == 0);
    }
    for (i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        total += a[i].reads_done;
    }
    /* One request for the index, then exactly one per stored chunk decoded alone, and one per
     * batch (its chunks lie back to back, so their ranges coalesce into one read). */
    CHECK(mem_io_reads(m) == 1 + (uint64_t)total);
    CHECK(mem_io_calls(m, MEM_IO_SIZE) == 0);
    shard_close(h);
    CHECK(mem_io_refs(m) == 1);
    mem_io_release(m);
}

/* ---- per-thread error messages ------------------------------------------------------ */

typedef struct {
    const shard_handle *h;
    int id;
} err_arg;

static void *error_maker(void *p) {
    err_arg *a = (err_arg *)p;
    uint16_t buf[ELEMS];
    char msg[256], mine[32];
    size_t n;
    int it;
    snprintf(mine, sizeof mine, "[%d, 0]", 100 + a->id);
    for (it = 0; it < g_iters; it++) {
        uint64_t bad[2], good[2] = {1, 1};
        bad[0] = 100 + (uint64_t)a->id;
        bad[1] = 0;
        if (shard_read_chunk(a->h, bad, 2, (uint8_t *)buf, sizeof buf) != SHARD_ERR_INVALID_ARGUMENT)
            check_failed(__LINE__, "expected SHARD_ERR_INVALID_ARGUMENT");
        /* Successful calls on this thread, and failures on others, leave the message. */
        if (shard_read_chunk(a->h, good, 2, (uint8_t *)buf, sizeof buf) != SHARD_OK)
            check_failed(__LINE__, "read failed");
        if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK || strstr(msg, mine) == NULL) {
            check_failed(__LINE__, "another thread's message");
            return NULL;
        }
    }
    return NULL;
}

static void test_error_messages_per_thread(void) {
    shard_codec *c = make_codec();
    mem_io *m = fixture_shard(c);
    shard_io_callbacks io;
    shard_handle *h = NULL;
    pthread_t t[NTHREADS];
    err_arg a[NTHREADS];
    int i;
    mem_io_callbacks(m, &io);
    CHECK(shard_open(c, &io, SHARD_MODE_READ, &h) == SHARD_OK);
    for (i = 0; i < NTHREADS; i++) {
        a[i].h = h;
        a[i].id = i;
        CHECK(pthread_create(&t[i], NULL, error_maker, &a[i]) == 0);
    }
    for (i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    shard_close(h);
    mem_io_release(m);
    shard_codec_free(c);
}

/* ---- many handles at once ----------------------------------------------------------- */

typedef struct {
    const shard_codec *c;
    mem_io *m;
} open_arg;

static void *opener(void *p) {
    open_arg *a = (open_arg *)p;
    int it;
    for (it = 0; it < g_iters; it++) {
        shard_io_callbacks io;
        shard_handle *h = NULL;
        uint16_t got[ELEMS], want[ELEMS];
        uint64_t i = (uint64_t)it % NCHUNKS, cc[2];
        mem_io_callbacks(a->m, &io);
        if (shard_open(a->c, &io, SHARD_MODE_READ, &h) != SHARD_OK) {
            io.destroy(io.userdata);
            check_failed(__LINE__, "shard_open");
            return NULL;
        }
        coords_of(i, cc);
        if (shard_read_chunk(h, cc, 2, (uint8_t *)got, sizeof got) != SHARD_OK)
            check_failed(__LINE__, "shard_read_chunk");
        pattern(i, fixture_seed(i), want);
        if (memcmp(got, want, sizeof got) != 0) check_failed(__LINE__, "wrong values");
        shard_close(h);
    }
    return NULL;
}

static void test_many_handles_one_codec(void) {
    shard_codec *c = make_codec();
    mem_io *m = fixture_shard(c);
    pthread_t t[NTHREADS];
    open_arg a;
    int i;
    a.c = c;
    a.m = m;
    for (i = 0; i < NTHREADS; i++) CHECK(pthread_create(&t[i], NULL, opener, &a) == 0);
    for (i = 0; i < NTHREADS; i++) pthread_join(t[i], NULL);
    CHECK(mem_io_refs(m) == 1); /* every handle destroyed its userdata once */
    mem_io_release(m);
    shard_codec_free(c);
}

/* ---- two writers, one write handle -------------------------------------------------- */

typedef struct {
    const shard_handle *h;
    pthread_barrier_t *start;
    int id;                  /* 0 or 1: writes even or odd chunks */
    unsigned model[NCHUNKS]; /* what this thread's successful calls left in its chunks */
    unsigned long ok, busy;
} writer_arg;

static void *writer(void *p) {
    writer_arg *a = (writer_arg *)p;
    uint16_t buf[ELEMS];
    int it;
    pthread_barrier_wait(a->start);
    for (it = 0; it < g_iters * 20; it++) {
        uint64_t i = (uint64_t)((it * 2 + a->id) % NCHUNKS), cc[2];
        unsigned seed = (unsigned)(it % 5); /* 0: fill values, which leave the chunk empty */
        int erase = it % 7 == 6;
        shard_chunk_location loc;
        shard_status st;
        coords_of(i, cc);
        if (erase) {
            st = shard_erase_chunk(a->h, cc, 2);
        } else {
            pattern(i, seed, buf);
            st = shard_write_chunk(a->h, cc, 2, (const uint8_t *)buf, sizeof buf);
        }
        if (st == SHARD_OK) {
            a->ok++;
            a->model[i] = erase ? 0 : seed;
        } else if (st == SHARD_ERR_BUSY) {
            a->busy++;
        } else {
            check_failed(__LINE__, shard_status_str((uint32_t)st));
            return NULL;
        }
        st = shard_chunk_info(a->h, cc, 2, &loc);
        if (st == SHARD_OK) {
            a->ok++;
        } else if (st == SHARD_ERR_BUSY) {
            a->busy++;
        } else {
            check_failed(__LINE__, shard_status_str((uint32_t)st));
            return NULL;
        }
    }
    return NULL;
}

static void hammer(uint32_t mode) {
    shard_codec *c = make_codec();
    mem_io *m = mode >= SHARD_MODE_UPDATE_APPEND ? fixture_shard(c) : mem_io_new(NULL, 0);
    shard_io_callbacks io;
    shard_handle *h = NULL, *r = NULL;
    pthread_t t[2];
    pthread_barrier_t start;
    writer_arg *a = (writer_arg *)calloc(2, sizeof *a);
    uint64_t i, cc[2];
    int k;
    mem_io_callbacks(m, &io);
    CHECK(shard_open(c, &io, mode, &h) == SHARD_OK);
    pthread_barrier_init(&start, NULL, 2);
    for (k = 0; k < 2; k++) {
        a[k].h = h;
        a[k].start = &start;
        a[k].id = k;
        for (i = 0; i < NCHUNKS; i++) /* untouched chunks keep what the shard held */
            a[k].model[i] = mode >= SHARD_MODE_UPDATE_APPEND ? fixture_seed(i) : 0;
        CHECK(pthread_create(&t[k], NULL, writer, &a[k]) == 0);
    }
    for (k = 0; k < 2; k++) pthread_join(t[k], NULL);
    pthread_barrier_destroy(&start);
    printf("    mode %u: %lu calls returned SHARD_OK, %lu SHARD_ERR_BUSY (thread 0: %lu/%lu)\n",
           (unsigned)mode, a[0].ok + a[1].ok, a[0].busy + a[1].busy, a[0].ok, a[0].busy);
    CHECK(shard_finalize(h, NULL) == SHARD_OK);
    shard_close(h);
    /* Each chunk holds what its thread's last successful call wrote. */
    mem_io_callbacks(m, &io);
    CHECK(shard_open(c, &io, SHARD_MODE_READ, &r) == SHARD_OK);
    for (i = 0; r != NULL && i < NCHUNKS; i++) {
        uint16_t got[ELEMS], want[ELEMS];
        coords_of(i, cc);
        CHECK(shard_read_chunk(r, cc, 2, (uint8_t *)got, sizeof got) == SHARD_OK);
        pattern(i, a[i % 2].model[i], want);
        CHECK(memcmp(got, want, sizeof got) == 0);
    }
    shard_close(r);
    CHECK(mem_io_refs(m) == 1);
    mem_io_release(m);
    free(a);
    shard_codec_free(c);
}

static void test_two_writers_one_handle(void) {
    uint32_t mode;
    for (mode = SHARD_MODE_WRITE_BUFFERED; mode <= SHARD_MODE_UPDATE_IN_PLACE; mode++)
        hammer(mode);
}

/* ---- racing finalize ---------------------------------------------------------------- */

typedef struct {
    const shard_handle *h;
    pthread_barrier_t *start;
    shard_status st;
} fin_arg;

static void *finalizer(void *p) {
    fin_arg *a = (fin_arg *)p;
    pthread_barrier_wait(a->start);
    a->st = shard_finalize(a->h, NULL);
    return NULL;
}

static void test_racing_finalize(void) {
    shard_codec *c = make_codec();
    int it;
    for (it = 0; it < g_iters; it++) {
        mem_io *m = mem_io_new(NULL, 0);
        shard_io_callbacks io;
        shard_handle *h = NULL;
        pthread_t t[2];
        pthread_barrier_t start;
        fin_arg a[2];
        uint16_t buf[ELEMS];
        uint64_t cc[2] = {0, 0};
        int k, ok = 0;
        mem_io_callbacks(m, &io);
        CHECK(shard_open(c, &io, SHARD_MODE_WRITE_STREAMING, &h) == SHARD_OK);
        pattern(0, 1, buf);
        CHECK(shard_write_chunk(h, cc, 2, (const uint8_t *)buf, sizeof buf) == SHARD_OK);
        pthread_barrier_init(&start, NULL, 2);
        for (k = 0; k < 2; k++) {
            a[k].h = h;
            a[k].start = &start;
            CHECK(pthread_create(&t[k], NULL, finalizer, &a[k]) == 0);
        }
        for (k = 0; k < 2; k++) pthread_join(t[k], NULL);
        pthread_barrier_destroy(&start);
        for (k = 0; k < 2; k++) {
            ok += a[k].st == SHARD_OK;
            CHECK(a[k].st == SHARD_OK || a[k].st == SHARD_ERR_BUSY ||
                  a[k].st == SHARD_ERR_INVALID_STATE);
        }
        CHECK(ok == 1);
        shard_close(h);
        mem_io_release(m);
    }
    shard_codec_free(c);
}

int main(void) {
    const char *iters = getenv("ZS_THREAD_ITERS");
    if (iters != NULL && atoi(iters) > 0) g_iters = atoi(iters);
    printf("zarrshard %s thread tests (%d iterations)\n", shard_version(), g_iters);
    RUN(test_many_readers_one_handle);
    RUN(test_error_messages_per_thread);
    RUN(test_many_handles_one_codec);
    RUN(test_two_writers_one_handle);
    RUN(test_racing_finalize);
    printf("%d passed, %d failed\n", g_passed, g_failed);
    return g_failed > 0 ? 1 : 0;
}
