/*
 * write_array: write a complete sharded Zarr v3 array from C with zarrshard, then read it
 * back the way a viewer would, counting the storage requests.
 *
 *     write_array OUT_DIR [SIZE]
 *
 * The array is a SIZE x SIZE uint16 image (default 2048): a smooth gradient plus a little
 * deterministic noise, in 2 x 2 shards of SIZE/2 (1024) with inner chunks of SIZE/16 (128),
 * compressed with zstd level 1, the shard index at the end protected by crc32c. The lower
 * right shard is all fill value (0), so it is not stored, and some inner chunks elsewhere are
 * fill value too, so they take no space. tests/c/check_zarr.py recomputes the same image.
 *
 * What the host does (and the library does not): write zarr.json, make directories, turn
 * shard keys into file paths, and commit each shard file after shard_finalize (posix_io).
 */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "posix_io.h"
#include "zarrshard.h"

/* ---- the image ---------------------------------------------------------------------- */

typedef struct {
    uint64_t size;  /* image side */
    uint64_t shard; /* shard side: size / 2 */
    uint64_t inner; /* inner chunk side: size / 16 */
} geometry;

/* The value at row y, column x. Keep in sync with tests/c/check_zarr.py. */
static uint16_t pixel(const geometry *g, uint64_t y, uint64_t x) {
    uint32_t h;
    if (y >= g->shard && x >= g->shard) return 0;                /* one shard all fill */
    if ((y / g->inner + 2 * (x / g->inner)) % 13 == 5) return 0; /* some inner chunks */
    h = ((uint32_t)y * 73856093u) ^ ((uint32_t)x * 19349663u);
    return (uint16_t)(1000 + (y + x) * 16384 / g->size + ((h >> 13) & 15));
}

/* Inner chunk (cy, cx) of shard (sy, sx), C order, native byte order. */
static void fill_chunk(const geometry *g, uint64_t sy, uint64_t sx, uint64_t cy, uint64_t cx,
                       uint16_t *out) {
    uint64_t y0 = sy * g->shard + cy * g->inner, x0 = sx * g->shard + cx * g->inner;
    uint64_t r, c;
    for (r = 0; r < g->inner; r++)
        for (c = 0; c < g->inner; c++) out[r * g->inner + c] = pixel(g, y0 + r, x0 + c);
}

/* ---- errors ------------------------------------------------------------------------- */

/* Print a failed library call with the library's own message; returns 1 for `return`. */
static int lib_error(const char *what, shard_status st) {
    char msg[512];
    size_t n = 0;
    if (shard_last_error(msg, sizeof msg, &n) != SHARD_OK) msg[0] = '\0';
    fprintf(stderr, "write_array: %s: %s: %s\n", what, shard_status_str((uint32_t)st), msg);
    return 1;
}

static int sys_error(const char *what, const char *path, int err) {
    fprintf(stderr, "write_array: %s %s: %s\n", what, path, strerror(err));
    return 1;
}

/* ---- a counting wrapper around any callback table ----------------------------------- */

/* Counts the storage requests a handle makes. The handle owns it (destroy frees it and the
 * wrapped table's userdata); the host borrows it to read the counters until shard_close.
 * The counters are plain integers: this demo reads from one thread. */
typedef struct {
    shard_io_callbacks inner;
    unsigned long reads; /* read + read_suffix calls */
    unsigned long sizes; /* size calls */
    unsigned long long bytes;
} counting_io;

static int count_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    counting_io *c = (counting_io *)ud;
    int rc = c->inner.read(c->inner.userdata, offset, len, buf, read_out);
    c->reads++;
    if (rc == 0) c->bytes += *read_out;
    return rc;
}

static int count_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                             uint64_t *object_size_out) {
    counting_io *c = (counting_io *)ud;
    int rc = c->inner.read_suffix(c->inner.userdata, len, buf, read_out, object_size_out);
    c->reads++;
    if (rc == 0) c->bytes += *read_out;
    return rc;
}

static int count_size(void *ud, uint64_t *size_out) {
    counting_io *c = (counting_io *)ud;
    c->sizes++;
    return c->inner.size(c->inner.userdata, size_out);
}

static void count_destroy(void *ud) {
    counting_io *c = (counting_io *)ud;
    if (c->inner.destroy != NULL) c->inner.destroy(c->inner.userdata);
    free(c);
}

/* Wrap a read-side table. On success the wrapper owns `inner`'s userdata. */
static int counting_wrap(const shard_io_callbacks *inner, shard_io_callbacks *out,
                         counting_io **ctx_out) {
    counting_io *c = (counting_io *)calloc(1, sizeof *c);
    if (c == NULL) return ENOMEM;
    c->inner = *inner;
    memset(out, 0, sizeof *out);
    out->version = SHARD_IO_VERSION;
    out->userdata = c;
    out->read = count_read;
    out->read_suffix = inner->read_suffix != NULL ? count_read_suffix : NULL;
    out->size = inner->size != NULL ? count_size : NULL;
    out->destroy = count_destroy;
    *ctx_out = c;
    return 0;
}

/* ---- the host's side of a Zarr store ------------------------------------------------ */

/* mkdir -p for the directories of `path` up to its last '/' (the file itself excluded). */
static int make_parents(const char *path) {
    char buf[4096];
    size_t i, n = strlen(path);
    if (n >= sizeof buf) return ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    for (i = 1; i < n; i++) {
        if (buf[i] != '/') continue;
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return errno;
        buf[i] = '/';
    }
    return 0;
}

/* Write `text` to `path` through a temporary and a rename. */
static int write_file(const char *path, const char *text) {
    char tmp[4096];
    FILE *f;
    int ok;
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp) return ENAMETOOLONG;
    if ((f = fopen(tmp, "wb")) == NULL) return errno;
    ok = fputs(text, f) >= 0;
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) != 0) {
        int err = errno ? errno : EIO;
        remove(tmp);
        return err;
    }
    return 0;
}

static int shard_path(const shard_codec *codec, const char *dir, uint64_t sy, uint64_t sx,
                      char *path, size_t cap) {
    uint64_t coords[2];
    char key[256];
    size_t n = 0;
    shard_status st;
    coords[0] = sy;
    coords[1] = sx;
    st = shard_codec_shard_key(codec, coords, 2, key, sizeof key, &n);
    if (st != SHARD_OK) return lib_error("shard_codec_shard_key", st);
    if ((size_t)snprintf(path, cap, "%s/%s", dir, key) >= cap) {
        fprintf(stderr, "write_array: path too long\n");
        return 1;
    }
    return 0;
}

/* ---- writing ------------------------------------------------------------------------ */

typedef struct {
    unsigned long chunks_stored, chunks_empty, shards_stored, shards_removed;
    unsigned long long bytes_stored;
} write_stats;

/* Stream every inner chunk of shard (sy, sx) into PATH.tmp.<pid>, finalize, commit. */
static int write_shard(const shard_codec *codec, const geometry *g, const char *path,
                       uint64_t sy, uint64_t sx, uint16_t *chunk, size_t chunk_nbytes,
                       write_stats *stats) {
    shard_io_callbacks io;
    posix_io *ctx = NULL;
    shard_handle *h = NULL;
    shard_status st;
    uint64_t per = g->shard / g->inner, c[2], size = 0;
    unsigned long stored = 0;
    int err, rc = 1;

    if ((err = make_parents(path)) != 0) return sys_error("cannot create directories for", path, err);
    if ((err = posix_io_open(path, POSIX_IO_WRITE, &io, &ctx)) != 0)
        return sys_error("cannot open", path, err);
    st = shard_open(codec, &io, SHARD_MODE_WRITE_STREAMING, &h);
    if (st != SHARD_OK) {
        posix_io_discard(ctx); /* the library did not take it */
        return lib_error("shard_open", st);
    }
    for (c[0] = 0; c[0] < per; c[0]++) {
        for (c[1] = 0; c[1] < per; c[1]++) {
            shard_chunk_location loc;
            fill_chunk(g, sy, sx, c[0], c[1], chunk);
            st = shard_write_chunk(h, c, 2, (const uint8_t *)chunk, chunk_nbytes);
            if (st != SHARD_OK) {
                lib_error("shard_write_chunk", st);
                goto done;
            }
            if ((st = shard_chunk_info(h, c, 2, &loc)) != SHARD_OK) {
                lib_error("shard_chunk_info", st);
                goto done;
            }
            if (!loc.empty) stored++;
        }
    }
    if ((st = shard_finalize(h, &size)) != SHARD_OK) {
        lib_error("shard_finalize", st);
        goto done;
    }
    /* Only now may the new shard replace the old one. */
    if ((err = posix_io_commit(ctx)) != 0) {
        sys_error("cannot commit", path, err);
        goto done;
    }
    stats->chunks_stored += stored;
    stats->chunks_empty += per * per - stored;
    if (size == 0) {
        stats->shards_removed++;
        printf("  %s: all %lu inner chunks are fill value: not stored\n", path,
               (unsigned long)(per * per));
    } else {
        stats->shards_stored++;
        stats->bytes_stored += size;
        printf("  %s: %lu of %lu inner chunks stored, %llu bytes\n", path, stored,
               (unsigned long)(per * per), (unsigned long long)size);
    }
    rc = 0;
done:
    shard_close(h); /* frees ctx; deletes the temporary unless committed */
    return rc;
}

/* ---- reading ------------------------------------------------------------------------ */

/* Open PATH for reading through a counting wrapper. */
static int open_counted(const shard_codec *codec, const char *path, shard_handle **h_out,
                        counting_io **count_out) {
    shard_io_callbacks file_io, io;
    posix_io *ctx;
    shard_status st;
    int err;
    if ((err = posix_io_open(path, POSIX_IO_READ, &file_io, &ctx)) != 0)
        return sys_error("cannot open", path, err);
    if ((err = counting_wrap(&file_io, &io, count_out)) != 0) {
        posix_io_discard(ctx);
        return sys_error("cannot wrap", path, err);
    }
    if ((st = shard_open(codec, &io, SHARD_MODE_READ, h_out)) != SHARD_OK) {
        io.destroy(io.userdata); /* the wrapper and the file context */
        return lib_error("shard_open", st);
    }
    return 0;
}

/* Decode every inner chunk of shard (sy, sx) and compare with the image. */
static int verify_shard(const shard_codec *codec, const geometry *g, const char *path,
                        uint64_t sy, uint64_t sx, uint16_t *got, uint16_t *want,
                        size_t chunk_nbytes, unsigned long *reads_out) {
    shard_handle *h = NULL;
    counting_io *count;
    uint64_t per = g->shard / g->inner, c[2];
    shard_status st;
    int rc = 1;
    if (open_counted(codec, path, &h, &count) != 0) return 1;
    for (c[0] = 0; c[0] < per; c[0]++) {
        for (c[1] = 0; c[1] < per; c[1]++) {
            if ((st = shard_read_chunk(h, c, 2, (uint8_t *)got, chunk_nbytes)) != SHARD_OK) {
                lib_error("shard_read_chunk", st);
                goto done;
            }
            fill_chunk(g, sy, sx, c[0], c[1], want);
            if (memcmp(got, want, chunk_nbytes) != 0) {
                fprintf(stderr, "write_array: %s inner chunk [%lu, %lu]: wrong values\n", path,
                        (unsigned long)c[0], (unsigned long)c[1]);
                goto done;
            }
        }
    }
    *reads_out = count->reads + count->sizes;
    rc = 0;
done:
    shard_close(h);
    return rc;
}

/* Move c to the first inner chunk of shard (0, 1) at or after it (C order) that is stored. */
static void next_stored(const geometry *g, uint64_t per, uint64_t *c) {
    uint64_t i, n = per * per, at = c[0] * per + c[1];
    for (i = 0; i < n; i++, at = (at + 1) % n)
        if (pixel(g, (at / per) * g->inner, g->shard + (at % per) * g->inner) != 0) break;
    c[0] = at / per;
    c[1] = at % per;
}

/* A viewer's access: open a shard, read one inner chunk (cold), then its neighbour (warm). */
static int cold_warm(const shard_codec *codec, const geometry *g, const char *path,
                     uint16_t *got, uint16_t *want, size_t chunk_nbytes) {
    shard_handle *h = NULL;
    counting_io *count;
    uint64_t per = g->shard / g->inner, c[2];
    unsigned long reads;
    unsigned long long bytes;
    shard_status st;
    int rc = 1;
    if (open_counted(codec, path, &h, &count) != 0) return 1;
    c[0] = 3 % per;
    c[1] = 5 % per;
    next_stored(g, per, c);
    if ((st = shard_read_chunk(h, c, 2, (uint8_t *)got, chunk_nbytes)) != SHARD_OK) {
        lib_error("shard_read_chunk", st);
        goto done;
    }
    fill_chunk(g, 0, 1, c[0], c[1], want);
    printf("cold read of inner chunk [%lu, %lu] of %s: %lu reads, %llu bytes (index + chunk)\n",
           (unsigned long)c[0], (unsigned long)c[1], path, count->reads + count->sizes,
           count->bytes);
    if (count->reads + count->sizes != 2 || memcmp(got, want, chunk_nbytes) != 0) {
        fprintf(stderr, "write_array: expected 2 reads and the written values\n");
        goto done;
    }
    reads = count->reads + count->sizes;
    bytes = count->bytes;
    c[1] = (c[1] + 1) % per; /* the next stored chunk on: an empty one needs no read */
    next_stored(g, per, c);
    if ((st = shard_read_chunk(h, c, 2, (uint8_t *)got, chunk_nbytes)) != SHARD_OK) {
        lib_error("shard_read_chunk", st);
        goto done;
    }
    fill_chunk(g, 0, 1, c[0], c[1], want);
    printf("warm read of inner chunk [%lu, %lu]: %lu read, %llu bytes\n", (unsigned long)c[0],
           (unsigned long)c[1], count->reads + count->sizes - reads, count->bytes - bytes);
    if (count->reads + count->sizes - reads != 1 || memcmp(got, want, chunk_nbytes) != 0) {
        fprintf(stderr, "write_array: expected 1 read and the written values\n");
        goto done;
    }
    rc = 0;
done:
    shard_close(h);
    return rc;
}

/* ---- main --------------------------------------------------------------------------- */

static const char ZARR_JSON[] =
    "{\n"
    "  \"zarr_format\": 3,\n"
    "  \"node_type\": \"array\",\n"
    "  \"shape\": [%lu, %lu],\n"
    "  \"data_type\": \"uint16\",\n"
    "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [%lu, %lu]}},\n"
    "  \"chunk_key_encoding\": {\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}},\n"
    "  \"fill_value\": 0,\n"
    "  \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": {\n"
    "    \"chunk_shape\": [%lu, %lu],\n"
    "    \"codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},\n"
    "               {\"name\": \"zstd\", \"configuration\": {\"level\": 1, \"checksum\": false}}],\n"
    "    \"index_codecs\": [{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}},\n"
    "                     {\"name\": \"crc32c\"}],\n"
    "    \"index_location\": \"end\"}}],\n"
    "  \"dimension_names\": [\"y\", \"x\"],\n"
    "  \"attributes\": {\"description\": \"zarrshard C demo image (examples-c/write_array.c)\"}\n"
    "}\n";

int main(int argc, char **argv) {
    const char *dir;
    geometry g;
    char json[4096], path[4096];
    shard_codec *codec = NULL;
    shard_status st;
    size_t chunk_nbytes = 0;
    uint64_t grid[2], sy, sx;
    uint16_t *a = NULL, *b = NULL;
    write_stats stats;
    unsigned long reads, total_reads = 0;
    int err, rc = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: write_array OUT_DIR [SIZE]   (SIZE: image side, a multiple of 32; default 2048)\n");
        return 2;
    }
    dir = argv[1];
    g.size = argc == 3 ? strtoull(argv[2], NULL, 10) : 2048;
    if (g.size < 32 || g.size % 32 != 0 || g.size > 65536) {
        fprintf(stderr, "write_array: SIZE must be a multiple of 32 in [32, 65536]\n");
        return 2;
    }
    g.shard = g.size / 2;
    g.inner = g.size / 16;
    memset(&stats, 0, sizeof stats);
    printf("zarrshard %s: writing %s, a %lux%lu uint16 image in %lux%lu shards of %lux%lu "
           "inner chunks (zstd 1, crc32c index at the end)\n",
           shard_version(), dir, (unsigned long)g.size, (unsigned long)g.size,
           (unsigned long)g.shard, (unsigned long)g.shard, (unsigned long)g.inner,
           (unsigned long)g.inner);

    /* zarr.json is the host's to write; the library only reads it. */
    if ((size_t)snprintf(path, sizeof path, "%s/zarr.json", dir) >= sizeof path)
        return sys_error("path too long:", dir, ENAMETOOLONG);
    if ((err = make_parents(path)) != 0) return sys_error("cannot create", dir, err);
    snprintf(json, sizeof json, ZARR_JSON, (unsigned long)g.size, (unsigned long)g.size,
             (unsigned long)g.shard, (unsigned long)g.shard, (unsigned long)g.inner,
             (unsigned long)g.inner);
    if ((err = write_file(path, json)) != 0) return sys_error("cannot write", path, err);
    if ((st = shard_codec_from_zarr_json(json, strlen(json), &codec)) != SHARD_OK)
        return lib_error("shard_codec_from_zarr_json", st);
    if ((st = shard_codec_grid_shape(codec, grid, 2)) != SHARD_OK ||
        (st = shard_codec_inner_chunk_nbytes(codec, &chunk_nbytes)) != SHARD_OK) {
        lib_error("codec getters", st);
        goto done;
    }
    a = (uint16_t *)malloc(chunk_nbytes);
    b = (uint16_t *)malloc(chunk_nbytes);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "write_array: out of memory\n");
        goto done;
    }

    for (sy = 0; sy < grid[0]; sy++)
        for (sx = 0; sx < grid[1]; sx++)
            if (shard_path(codec, dir, sy, sx, path, sizeof path) != 0 ||
                write_shard(codec, &g, path, sy, sx, a, chunk_nbytes, &stats) != 0)
                goto done;

    /* Read everything back; the unstored shard reads as fill value without a file. */
    for (sy = 0; sy < grid[0]; sy++) {
        for (sx = 0; sx < grid[1]; sx++) {
            if (shard_path(codec, dir, sy, sx, path, sizeof path) != 0 ||
                verify_shard(codec, &g, path, sy, sx, a, b, chunk_nbytes, &reads) != 0)
                goto done;
            total_reads += reads;
        }
    }
    printf("read back all %lu inner chunks: values match (%lu reads)\n",
           stats.chunks_stored + stats.chunks_empty, total_reads);

    if (shard_path(codec, dir, 0, 1, path, sizeof path) != 0 ||
        cold_warm(codec, &g, path, a, b, chunk_nbytes) != 0)
        goto done;

    printf("summary: %lu shards stored, %lu not stored (all fill); %lu inner chunks stored, %lu "
           "empty; %llu bytes on disk for %llu bytes of image (%.1fx)\n",
           stats.shards_stored, stats.shards_removed, stats.chunks_stored, stats.chunks_empty,
           stats.bytes_stored, (unsigned long long)(g.size * g.size * 2),
           stats.bytes_stored ? (double)(g.size * g.size * 2) / (double)stats.bytes_stored : 0.0);
    rc = 0;
done:
    free(a);
    free(b);
    shard_codec_free(codec);
    return rc;
}
