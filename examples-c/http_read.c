/* http_read: read inner chunks of a sharded array served over HTTP, with byte-range requests
 * through libcurl. Each read callback is one HTTP request: a cold chunk read is 2 (the index,
 * by a suffix range, then the chunk), a warm one 1.
 *
 *   http_read ARRAY_URL SHARD OUT_FILE CHUNK...
 *   http_read http://127.0.0.1:8080/image.zarr 0,1 chunks.bin 2,3 0,0
 *
 * For each CHUNK (inner chunk coordinates in shard SHARD) it opens the shard (cold), reads the
 * chunk, reads it again on the same handle (warm), prints the requests and bytes of each, and
 * appends the decoded chunk (C order, native byte order) to OUT_FILE.
 *
 * Build: cc -std=c99 http_read.c -Iinclude target/release/libzarrshard.a -lcurl -lpthread -ldl -lm
 * One thread: the curl handle in the I/O context is not shared between threads. */
#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrshard.h"

#define MAX_RANK 16

/* What the host did for the reads of one step: every read callback is one request. */
typedef struct {
    unsigned requests;
    uint64_t bytes;
} traffic;

typedef struct {
    CURL *curl;
    char *url;
    traffic *count;
} http_io;

/* A response body written into a caller buffer; the part past `cap` is dropped. */
typedef struct {
    uint8_t *buf;
    size_t cap, len;
    uint64_t skip;       /* bytes to drop first (a server that ignored the range sent all) */
    uint64_t total_size; /* from Content-Range, UINT64_MAX if absent */
} sink;

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
    sink *s = userdata;
    size_t got = size * n, off = 0;
    if (s->skip > 0) {
        off = s->skip < got ? (size_t)s->skip : got;
        s->skip -= off;
    }
    size_t room = s->cap - s->len, take = got - off < room ? got - off : room;
    memcpy(s->buf + s->len, data + off, take);
    s->len += take;
    return got;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata) {
    sink *s = userdata;
    size_t len = size * n;
    char line[256];
    if (len < sizeof line) {
        memcpy(line, data, len);
        line[len] = '\0';
        /* Content-Range: bytes FIRST-LAST/TOTAL */
        const char *slash = strchr(line, '/');
        if (slash != NULL && (strncmp(line, "Content-Range:", 14) == 0 || strncmp(line, "content-range:", 14) == 0))
            s->total_size = strtoull(slash + 1, NULL, 10);
    }
    return len;
}

/* One GET with an optional Range header; 0, SHARD_IO_NOT_FOUND, or the HTTP status / curl
 * error as the host's error code. `*status_out` gets the HTTP status. */
static int32_t get(http_io *io, const char *range, sink *s, long *status_out) {
    curl_easy_setopt(io->curl, CURLOPT_URL, io->url);
    curl_easy_setopt(io->curl, CURLOPT_RANGE, range);
    curl_easy_setopt(io->curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(io->curl, CURLOPT_WRITEDATA, s);
    curl_easy_setopt(io->curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(io->curl, CURLOPT_HEADERDATA, s);
    CURLcode rc = curl_easy_perform(io->curl);
    if (io->count != NULL) io->count->requests++;
    if (rc != CURLE_OK) return 1000 + (int32_t)rc;
    curl_easy_getinfo(io->curl, CURLINFO_RESPONSE_CODE, status_out);
    if (io->count != NULL) io->count->bytes += s->len;
    if (*status_out == 404) return SHARD_IO_NOT_FOUND;
    return 0;
}

static int32_t http_read_at(void *userdata, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    http_io *io = userdata;
    char range[64];
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
    sink s = {buf, len, 0, 0, UINT64_MAX};
    long status = 0;
    int32_t rc = get(io, range, &s, &status);
    if (rc != 0) return rc;
    if (status == 416) { /* the range starts past the end: a short (empty) read */
        *read_out = 0;
        return 0;
    }
    if (status == 200 && offset > 0) { /* range ignored: the whole object came; take ours */
        s.len = 0;
        s.skip = offset;
        rc = get(io, NULL, &s, &status);
        if (rc != 0) return rc;
    }
    if (status != 200 && status != 206) return (int32_t)status;
    *read_out = s.len;
    return 0;
}

static int32_t http_read_suffix(void *userdata, size_t len, uint8_t *buf, size_t *read_out, uint64_t *size_out) {
    http_io *io = userdata;
    char range[64];
    snprintf(range, sizeof range, "-%zu", len);
    sink s = {buf, len, 0, 0, UINT64_MAX};
    long status = 0;
    int32_t rc = get(io, range, &s, &status);
    if (rc != 0) return rc;
    if (status != 206) return (int32_t)status; /* keep it simple: servers here honour ranges */
    *read_out = s.len;
    if (s.total_size != UINT64_MAX) *size_out = s.total_size;
    return 0;
}

static void http_destroy(void *userdata) {
    http_io *io = userdata;
    free(io->url);
    free(io);
}

/* The whole object at `url` (malloc'd, NUL-terminated), or NULL. */
static char *fetch(CURL *curl, const char *url, size_t *len_out) {
    size_t cap = 1 << 20;
    uint8_t *buf = malloc(cap + 1);
    if (buf == NULL) return NULL;
    http_io io = {curl, (char *)url, NULL};
    sink s = {buf, cap, 0, 0, UINT64_MAX};
    long status = 0;
    if (get(&io, NULL, &s, &status) != 0 || status != 200) {
        free(buf);
        return NULL;
    }
    buf[s.len] = '\0';
    *len_out = s.len;
    return (char *)buf;
}

static size_t parse_coords(const char *text, uint64_t *out) {
    size_t n = 0;
    const char *p = text;
    while (*p != '\0' && n < MAX_RANK) {
        char *end;
        out[n++] = strtoull(p, &end, 10);
        if (end == p) return 0;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

static void fail(const char *what, shard_status st) {
    char msg[512];
    size_t n = 0;
    shard_last_error(msg, sizeof msg, &n);
    fprintf(stderr, "http_read: %s: %s (%s)\n", what, msg, shard_status_str(st));
    exit(1);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s ARRAY_URL SHARD OUT_FILE CHUNK...\n", argv[0]);
        return 2;
    }
    const char *base = argv[1];
    curl_global_init(CURL_GLOBAL_DEFAULT);
    CURL *curl = curl_easy_init();
    if (curl == NULL) return 1;
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);

    char url[4096];
    snprintf(url, sizeof url, "%s/zarr.json", base);
    size_t json_len = 0;
    char *json = fetch(curl, url, &json_len);
    if (json == NULL) {
        fprintf(stderr, "http_read: cannot GET %s\n", url);
        return 1;
    }
    shard_codec *codec = NULL;
    shard_status st = shard_codec_from_zarr_json(json, json_len, &codec);
    free(json);
    if (st != SHARD_OK) fail("zarr.json", st);

    uint64_t shard_coords[MAX_RANK];
    size_t rank = parse_coords(argv[2], shard_coords);
    char key[256];
    size_t key_len = 0;
    st = shard_codec_shard_key(codec, shard_coords, rank, key, sizeof key, &key_len);
    if (st != SHARD_OK) fail("shard key", st);
    key[key_len] = '\0';
    size_t nbytes = 0;
    shard_codec_inner_chunk_nbytes(codec, &nbytes);
    uint8_t *cold = malloc(nbytes), *warm = malloc(nbytes);
    FILE *out = fopen(argv[3], "wb");
    if (cold == NULL || warm == NULL || out == NULL) return 1;

    for (int a = 4; a < argc; a++) {
        uint64_t chunk[MAX_RANK];
        size_t chunk_rank = parse_coords(argv[a], chunk);
        traffic t = {0, 0};
        http_io *io = malloc(sizeof *io);
        char *shard_url = malloc(strlen(base) + key_len + 2);
        if (io == NULL || shard_url == NULL) return 1;
        sprintf(shard_url, "%s/%s", base, key);
        *io = (http_io){curl, shard_url, &t};
        /* Designated initializers: fields a later header appends stay NULL. */
        shard_io_callbacks cb = {.version = SHARD_IO_VERSION,
                                 .userdata = io,
                                 .read = http_read_at,
                                 .read_suffix = http_read_suffix,
                                 .destroy = http_destroy};
        shard_handle *shard = NULL;
        st = shard_open(codec, &cb, SHARD_MODE_READ, &shard);
        if (st != SHARD_OK) {
            http_destroy(io);
            fail("open", st);
        }
        st = shard_read_chunk(shard, chunk, chunk_rank, cold, nbytes);
        if (st != SHARD_OK) fail("read", st);
        printf("%s chunk %s: cold read: %u requests, %" PRIu64 " bytes\n", key, argv[a], t.requests, t.bytes);
        t = (traffic){0, 0};
        st = shard_read_chunk(shard, chunk, chunk_rank, warm, nbytes);
        if (st != SHARD_OK) fail("read", st);
        printf("%s chunk %s: warm read: %u requests, %" PRIu64 " bytes\n", key, argv[a], t.requests, t.bytes);
        if (memcmp(cold, warm, nbytes) != 0) {
            fprintf(stderr, "http_read: cold and warm reads differ\n");
            return 1;
        }
        fwrite(cold, 1, nbytes, out);
        shard_close(shard);
    }
    fclose(out);
    free(cold);
    free(warm);
    shard_codec_free(codec);
    curl_easy_cleanup(curl);
    curl_global_cleanup();
    return 0;
}
