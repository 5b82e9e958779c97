/*
 * stream: the zarrshard side of the acquire-zarr comparison (bench/acquire/compare.py). Streams
 * T frames of Y x X uint16 into a new sharded array at OUT_DIR through the C API's own
 * directory store, one shard_array_append per frame, and prints how long that took.
 *
 *     stream OUT_DIR T Y X CT CY CX ST SY SX CODEC THREADS
 *
 * CT CY CX: the inner chunk shape; ST SY SX: the shard shape (elements). CODEC is
 * `blosc-zstd` (blosc 1 with zstd level 1 and byte shuffle: the codec acquire-zarr writes,
 * given as zarr.json to shard_array_create) or `zstd` (zstd level 1, through
 * shard_array_create_spec). THREADS goes to shard_set_threads.
 *
 * The frames are computed before the clock starts (frame() below; compare.py has the same
 * formula), so the time is the library's: store, create, T appends, flush, close. Prints one
 * line: `seconds=S cpu_seconds=C frames=T bytes=B` (C: the process's CPU time over the same
 * span, all threads; B: the frames' raw bytes).
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarrshard.h"

/* Frame t's value at (y, x). Keep in sync with frames() in compare.py. */
static uint16_t frame(uint64_t t, uint64_t y, uint64_t x) {
    uint32_t h = ((uint32_t)y * 73856093u) ^ ((uint32_t)x * 19349663u) ^ ((uint32_t)t * 83492791u);
    return (uint16_t)(1000 + ((x + 2 * y + 7 * t) & 2047) + ((h >> 11) & 63));
}

static int lib_error(const char *what, shard_status st) {
    char msg[512];
    size_t n = 0;
    if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK) msg[0] = '\0';
    fprintf(stderr, "stream: %s: %s: %s\n", what, shard_status_str((uint32_t)st), msg);
    return 1;
}

static double now(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    static const char *const dims[3] = {"t", "y", "x"};
    uint64_t n[3], chunk[3], shard[3], shape[3], block[3], t, y, x;
    const char *codec;
    size_t frame_len, threads;
    uint16_t *frames;
    shard_store_callbacks store;
    shard_array *array = NULL;
    shard_status st;
    double t0, t1, c0, c1;
    int i, rc = 1;

    if (argc != 13) {
        fprintf(stderr, "usage: stream OUT_DIR T Y X CT CY CX ST SY SX blosc-zstd|zstd THREADS\n");
        return 2;
    }
    for (i = 0; i < 3; i++) {
        n[i] = strtoull(argv[2 + i], NULL, 10);
        chunk[i] = strtoull(argv[5 + i], NULL, 10);
        shard[i] = strtoull(argv[8 + i], NULL, 10);
    }
    for (i = 0; i < 3; i++)
        if (n[i] == 0 || chunk[i] == 0 || shard[i] == 0 || n[i] > 65536) {
            fprintf(stderr, "stream: sizes must be 1..65536, chunk and shard shapes nonzero\n");
            return 2;
        }
    codec = argv[11];
    threads = (size_t)strtoull(argv[12], NULL, 10);
    if (strcmp(codec, "blosc-zstd") != 0 && strcmp(codec, "zstd") != 0) {
        fprintf(stderr, "stream: CODEC must be blosc-zstd or zstd\n");
        return 2;
    }
    if ((st = shard_set_threads(threads)) != SHARD_OK) return lib_error("shard_set_threads", st);

    frame_len = (size_t)(n[1] * n[2]);
    frames = (uint16_t *)malloc((size_t)n[0] * frame_len * sizeof(uint16_t));
    if (frames == NULL) {
        fprintf(stderr, "stream: out of memory\n");
        return 1;
    }
    for (t = 0; t < n[0]; t++)
        for (y = 0; y < n[1]; y++)
            for (x = 0; x < n[2]; x++) frames[(t * n[1] + y) * n[2] + x] = frame(t, y, x);

    shape[0] = 0; /* appends grow it, as acquire-zarr's unbounded first dimension */
    shape[1] = n[1];
    shape[2] = n[2];
    block[0] = 1;
    block[1] = n[1];
    block[2] = n[2];

    t0 = now(CLOCK_MONOTONIC);
    c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    st = shard_store_directory(argv[1], SHARD_STORE_CREATE, &store);
    if (st != SHARD_OK) {
        free(frames);
        return lib_error("shard_store_directory", st);
    }
    if (strcmp(codec, "zstd") == 0) {
        shard_array_spec spec;
        if ((st = shard_array_spec_init(&spec)) != SHARD_OK) {
            lib_error("shard_array_spec_init", st);
            goto done;
        }
        spec.rank = 3;
        spec.shape = shape;
        spec.shard_shape = shard;
        spec.chunk_shape = chunk;
        spec.data_type = "uint16";
        spec.compressor = "zstd";
        spec.compression_level = 1;
        spec.dimension_names = dims;
        st = shard_array_create_spec(&store, "", &spec, SHARD_CREATE_OVERWRITE, &array);
        if (st != SHARD_OK) {
            lib_error("shard_array_create_spec", st);
            goto done;
        }
    } else {
        /* acquire-zarr's codecs, as its zarr.json names them. */
        char json[2048];
        int len = snprintf(
            json, sizeof json,
            "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [0, %llu, %llu], "
            "\"data_type\": \"uint16\", \"fill_value\": 0, "
            "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
            "{\"chunk_shape\": [%llu, %llu, %llu]}}, "
            "\"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}, "
            "\"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {"
            "\"chunk_shape\": [%llu, %llu, %llu], "
            "\"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
            "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"zstd\", \"clevel\": 1, "
            "\"shuffle\": \"shuffle\", \"typesize\": 2, \"blocksize\": 0}}], "
            "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
            "{\"name\": \"crc32c\"}], \"index_location\": \"end\"}}], "
            "\"dimension_names\": [\"t\", \"y\", \"x\"], \"attributes\": {}}",
            (unsigned long long)n[1], (unsigned long long)n[2], (unsigned long long)shard[0],
            (unsigned long long)shard[1], (unsigned long long)shard[2],
            (unsigned long long)chunk[0], (unsigned long long)chunk[1],
            (unsigned long long)chunk[2]);
        if (len < 0 || (size_t)len >= sizeof json) {
            fprintf(stderr, "stream: metadata too long\n");
            goto done;
        }
        st = shard_array_create(&store, "", json, (size_t)len, SHARD_CREATE_OVERWRITE, &array);
        if (st != SHARD_OK) {
            lib_error("shard_array_create", st);
            goto done;
        }
    }
    for (t = 0; t < n[0]; t++) {
        st = shard_array_append(array, 0, block, 3, (const uint8_t *)(frames + t * frame_len),
                                frame_len * sizeof(uint16_t));
        if (st != SHARD_OK) {
            lib_error("shard_array_append", st);
            goto done;
        }
    }
    if ((st = shard_array_flush(array)) != SHARD_OK) {
        lib_error("shard_array_flush", st);
        goto done;
    }
    shard_array_close(array);
    array = NULL;
    shard_store_release(&store);
    t1 = now(CLOCK_MONOTONIC);
    c1 = now(CLOCK_PROCESS_CPUTIME_ID);
    printf("seconds=%.6f cpu_seconds=%.6f frames=%llu bytes=%llu\n", t1 - t0, c1 - c0,
           (unsigned long long)n[0],
           (unsigned long long)(n[0] * frame_len * sizeof(uint16_t)));
    rc = 0;

done:
    shard_array_close(array);
    shard_store_release(&store);
    free(frames);
    return rc;
}
