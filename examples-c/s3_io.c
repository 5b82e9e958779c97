/*
 * s3_io: an S3 bucket as a zarrshard store over libcurl (see s3_io.h for the contract).
 *
 * Every callback builds its request in a `req`, sends it on a curl easy handle of its own
 * (no state shared between threads but the client's counters, under a mutex) and maps the
 * answer to 0, SHARD_IO_NOT_FOUND or an error code. libcurl signs each request (SigV4) from
 * the URL and the headers; it takes the `x-amz-content-sha256` header we set, UNSIGNED-PAYLOAD
 * (which S3 requires on every request), as the payload's hash instead of hashing the body.
 *
 * Build: cc -std=c99 -pthread -Iinclude -Iexamples-c s3_io.c ... -lcurl
 */
#define _POSIX_C_SOURCE 200809L

#include "s3_io.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct s3_client {
    char *endpoint; /* without a trailing slash */
    char *bucket;
    char *userpwd; /* ACCESS_KEY:SECRET_KEY, as CURLOPT_USERPWD wants it */
    char *sigv4;   /* aws:amz:REGION:s3, as CURLOPT_AWS_SIGV4 wants it */
    pthread_mutex_t lock; /* guards everything below */
    size_t part_size;
    s3_counts counts;
    unsigned fail_part_in; /* UploadParts until the injected failure; 0: none */
    unsigned list_page;    /* max-keys of a ListObjectsV2 page; 0: the server's (1000) */
};

/* What a request is, for the counters. */
typedef enum {
    OP_OBJECT,
    OP_LIST,
    OP_CREATE_MPU,
    OP_UPLOAD_PART,
    OP_COMPLETE_MPU,
    OP_ABORT_MPU
} op_kind;

/* Error bodies are kept up to this size: enough for S3's <Code>. */
#define ERR_KEEP 1024

/* One HTTP request and what came back. */
typedef struct {
    CURL *easy;
    const char *method; /* GET, HEAD, PUT, POST or DELETE */
    op_kind op;
    char *url; /* owned */
    char range[48]; /* CURLOPT_RANGE ("A-B" or "-N"), empty for none */
    const uint8_t *body; /* PUT/POST body, `body_len` bytes (NULL: none) */
    size_t body_len;
    const char *content_type;
    struct curl_slist *headers;
    /* A 2xx body goes into `buf` (`cap` bytes, the caller's) or, when `grow`, into a malloc'd
     * buffer of at most `grow_limit` bytes. */
    uint8_t *buf;
    size_t cap, len;
    int grow;
    size_t grow_limit;
    uint64_t skip;  /* body bytes to drop first (a 200 to a ranged read: the whole object) */
    int keep_tail;  /* keep the last `cap` bytes rather than the first (a 200 to a suffix) */
    int first_body; /* whether the body's first bytes are yet to come */
    uint64_t range_first; /* the range's first byte, for `skip` */
    int oom;
    long status;
    uint64_t total; /* the object's size from Content-Range, UINT64_MAX when absent */
    uint64_t seen;  /* 2xx body bytes received (past `skip`), kept or not */
    char etag[256];
    char err[ERR_KEEP + 1]; /* the start of a non-2xx body, NUL-terminated */
    size_t err_len;
} req;

/* ---- small helpers -------------------------------------------------------------------- */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

/* printf into a new malloc'd string (NULL when out of memory). */
static char *fmt(const char *format, ...) {
    va_list ap;
    va_start(ap, format);
    int n = vsnprintf(NULL, 0, format, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *s = malloc((size_t)n + 1);
    if (s == NULL) return NULL;
    va_start(ap, format);
    vsnprintf(s, (size_t)n + 1, format, ap);
    va_end(ap);
    return s;
}

/* Percent-encode `s` for a URL: unreserved characters stay, and `/` too when `keep_slash`
 * (an object key in the path keeps its separators; a query value does not). */
static char *url_encode(const char *s, int keep_slash) {
    size_t n = strlen(s);
    char *out = malloc(3 * n + 1), *o = out;
    if (out == NULL) return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            *p == '-' || *p == '.' || *p == '_' || *p == '~' || (keep_slash && *p == '/')) {
            *o++ = (char)*p;
        } else {
            sprintf(o, "%%%02X", *p);
            o += 3;
        }
    }
    *o = '\0';
    return out;
}

/* The URL of object KEY (a full key), with `query` ("" for none). */
static char *object_url(const s3_client *c, const char *key, const char *query) {
    char *k = url_encode(key, 1);
    if (k == NULL) return NULL;
    char *u = fmt("%s/%s/%s%s%s", c->endpoint, c->bucket, k, *query ? "?" : "", query);
    free(k);
    return u;
}

/* Whether `text` (`len` bytes, not NUL-terminated) contains `what`. */
static int contains(const uint8_t *text, size_t len, const char *what) {
    size_t wl = strlen(what);
    for (size_t i = 0; i + wl <= len; i++)
        if (memcmp(text + i, what, wl) == 0) return 1;
    return 0;
}

/* The text between the next `<tag>` and `</tag>` at or after `*pos` of `xml`; moves `*pos`
 * past it. A minimal reader for the few fields S3's answers carry: no attributes, no CDATA. */
static int xml_next(const char *xml, size_t len, size_t *pos, const char *tag, const char **val,
                    size_t *val_len) {
    char open[64], close[64];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    size_t ol = strlen(open), cl = strlen(close);
    for (size_t i = *pos; i + ol <= len; i++) {
        if (memcmp(xml + i, open, ol) != 0) continue;
        for (size_t j = i + ol; j + cl <= len; j++) {
            if (memcmp(xml + j, close, cl) == 0) {
                *val = xml + i + ol;
                *val_len = j - (i + ol);
                *pos = j + cl;
                return 1;
            }
        }
        return 0;
    }
    return 0;
}

/* XML text to a new NUL-terminated string: the five predefined entities and `&#N;`/`&#xN;`
 * (ASCII only, which is what S3 escapes in keys; others stay as written). */
static char *xml_unescape(const char *s, size_t n) {
    char *out = malloc(n + 1), *o = out;
    if (out == NULL) return NULL;
    static const struct { const char *name; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    for (size_t i = 0; i < n;) {
        size_t e, done = 0;
        if (s[i] == '&') {
            for (e = 0; e < sizeof ents / sizeof ents[0]; e++) {
                size_t el = strlen(ents[e].name);
                if (i + el <= n && memcmp(s + i, ents[e].name, el) == 0) {
                    *o++ = ents[e].c;
                    i += el;
                    done = 1;
                    break;
                }
            }
            if (!done && i + 3 < n && s[i + 1] == '#') {
                int hex = s[i + 2] == 'x';
                char *end;
                unsigned long v = strtoul(s + i + 2 + hex, &end, hex ? 16 : 10);
                if ((size_t)(end - s) < n && *end == ';' && v > 0 && v < 128) {
                    *o++ = (char)v;
                    i = (size_t)(end - s) + 1;
                    done = 1;
                }
            }
        }
        if (!done) *o++ = s[i++];
    }
    *o = '\0';
    return out;
}

/* ---- one request ------------------------------------------------------------------------ */

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
    req *r = userdata;
    size_t got = size * n, off = 0;
    if (r->status == 0) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status < 200 || r->status >= 300) { /* an error body: keep its start for <Code> */
        size_t take = got < ERR_KEEP - r->err_len ? got : ERR_KEEP - r->err_len;
        memcpy(r->err + r->err_len, data, take);
        r->err_len += take;
        r->err[r->err_len] = '\0';
        return got;
    }
    if (r->first_body) {
        r->first_body = 0;
        /* A server that ignored the range sends the whole object: drop what precedes ours. */
        if (r->status == 200 && r->range[0] != '\0' && r->range[0] != '-') r->skip = r->range_first;
        if (r->status == 200 && r->range[0] == '-') r->keep_tail = 1;
    }
    if (r->skip > 0) {
        off = r->skip < got ? (size_t)r->skip : got;
        r->skip -= off;
    }
    data += off;
    got -= off;
    r->seen += got;
    if (r->grow) {
        if (r->len + got > r->cap) {
            size_t cap = r->cap ? r->cap : 4096;
            while (cap < r->len + got) cap *= 2;
            if (r->len + got > r->grow_limit) {
                r->oom = 1; /* bigger than any answer we expect: give up, not grow forever */
                return 0;
            }
            uint8_t *b = realloc(r->buf, cap);
            if (b == NULL) {
                r->oom = 1;
                return 0;
            }
            r->buf = b;
            r->cap = cap;
        }
        memcpy(r->buf + r->len, data, got);
        r->len += got;
    } else if (r->keep_tail && r->len + got > r->cap) {
        /* Only the last `cap` bytes are wanted: slide the window. */
        if (got >= r->cap) {
            memcpy(r->buf, data + got - r->cap, r->cap);
        } else {
            size_t drop = r->len + got - r->cap;
            memmove(r->buf, r->buf + drop, r->len - drop);
            memcpy(r->buf + r->len - drop, data, got);
        }
        r->len = r->cap;
    } else {
        size_t room = r->cap - r->len, take = got < room ? got : room;
        memcpy(r->buf + r->len, data, take);
        r->len += take;
    }
    return size * n;
}

/* Whether header line `line` (`len` bytes) is `name:` (case-insensitively); its value then. */
static const char *header_value(const char *line, size_t len, const char *name, size_t *vlen) {
    size_t nl = strlen(name);
    if (len <= nl || line[nl] != ':') return NULL;
    for (size_t i = 0; i < nl; i++) {
        char a = line[i], b = name[i];
        if (a >= 'A' && a <= 'Z') a = (char)(a - 'A' + 'a');
        if (a != b) return NULL;
    }
    const char *v = line + nl + 1, *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ')) end--;
    *vlen = (size_t)(end - v);
    return v;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata) {
    req *r = userdata;
    size_t len = size * n, vlen;
    const char *v;
    if ((v = header_value(data, len, "content-range", &vlen)) != NULL) {
        /* bytes FIRST-LAST/TOTAL, or bytes * /TOTAL on a 416 */
        const char *slash = memchr(v, '/', vlen);
        if (slash != NULL && slash + 1 < v + vlen && slash[1] != '*') {
            char num[32];
            size_t nl = (size_t)(v + vlen - slash - 1);
            if (nl < sizeof num) {
                memcpy(num, slash + 1, nl);
                num[nl] = '\0';
                r->total = strtoull(num, NULL, 10);
            }
        }
    } else if ((v = header_value(data, len, "etag", &vlen)) != NULL && vlen < sizeof r->etag) {
        memcpy(r->etag, v, vlen);
        r->etag[vlen] = '\0';
    }
    return len;
}

static int32_t setup(const s3_client *c, req *r) {
    CURL *e = r->easy;
    r->first_body = 1;
    r->total = UINT64_MAX;
    curl_easy_setopt(e, CURLOPT_URL, r->url);
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, c->sigv4);
    curl_easy_setopt(e, CURLOPT_USERPWD, c->userpwd);
    /* No signals (libcurl's SIGALRM for name-lookup timeouts): unsafe in a threaded host, and
     * the callbacks run on the library's worker threads. */
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    /* A dead server fails the call instead of hanging it. */
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, 60L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, r);
    if (r->range[0] != '\0') curl_easy_setopt(e, CURLOPT_RANGE, r->range);
    if (strcmp(r->method, "HEAD") == 0) {
        curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    } else if (strcmp(r->method, "GET") != 0) {
        curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r->method);
        if (r->body != NULL || strcmp(r->method, "DELETE") != 0) {
            /* The body from memory, in one piece (an empty one for a bodiless POST/PUT). */
            curl_easy_setopt(e, CURLOPT_POSTFIELDS, r->body != NULL ? (const char *)r->body : "");
            curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body_len);
        }
    }
    const char *hdrs[3] = {"x-amz-content-sha256: UNSIGNED-PAYLOAD",
                           /* no `Expect: 100-continue` round trip before large bodies */
                           "Expect:", NULL};
    char ct[96];
    if (r->content_type != NULL) {
        snprintf(ct, sizeof ct, "Content-Type: %s", r->content_type);
        hdrs[2] = ct;
    }
    for (size_t i = 0; i < 3; i++) {
        if (hdrs[i] == NULL) continue;
        struct curl_slist *l = curl_slist_append(r->headers, hdrs[i]);
        if (l == NULL) return ENOMEM;
        r->headers = l;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, r->headers);
    return 0;
}

static void count(s3_client *c, const req *r) {
    pthread_mutex_lock(&c->lock);
    s3_counts *k = &c->counts;
    switch (r->method[0]) {
    case 'G': k->get++; break;
    case 'H': k->head++; break;
    case 'D': k->del++; break;
    default: *(r->method[1] == 'U' ? &k->put : &k->post) += 1; break;
    }
    switch (r->op) {
    case OP_LIST: k->list++; break;
    case OP_CREATE_MPU: k->create_multipart++; break;
    case OP_UPLOAD_PART: k->upload_part++; break;
    case OP_COMPLETE_MPU: k->complete_multipart++; break;
    case OP_ABORT_MPU: k->abort_multipart++; break;
    case OP_OBJECT: break;
    }
    pthread_mutex_unlock(&c->lock);
}

/* After the transfer: 0 for a 2xx, SHARD_IO_NOT_FOUND for a missing key, else a code. */
static int32_t finish(s3_client *c, req *r, CURLcode cc) {
    count(c, r);
    if (r->oom) return ENOMEM;
    if (cc != CURLE_OK) return S3_IO_CURL_BASE + (int32_t)cc;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->status >= 200 && r->status < 300) return 0;
    /* A missing key, not a missing bucket: that must not read as an array of fill values.
     * HEAD has no body to tell them apart; a bucket that exists is the usual case. */
    if (r->status == 404 &&
        (strcmp(r->method, "HEAD") == 0 || strstr(r->err, "<Code>NoSuchKey</Code>") != NULL))
        return SHARD_IO_NOT_FOUND;
    return r->status > 0 ? (int32_t)r->status : S3_IO_BAD_RESPONSE;
}

static void req_free(req *r) {
    curl_slist_free_all(r->headers);
    r->headers = NULL;
    if (r->easy != NULL) curl_easy_cleanup(r->easy);
    r->easy = NULL;
    free(r->url);
    r->url = NULL;
    if (r->grow) {
        free(r->buf);
        r->buf = NULL;
    }
}

/* Send `r` (its url set) and wait for the answer. */
static int32_t perform(s3_client *c, req *r) {
    if (r->url == NULL) return ENOMEM;
    r->easy = curl_easy_init();
    if (r->easy == NULL) return ENOMEM;
    int32_t rc = setup(c, r);
    if (rc != 0) return rc;
    return finish(c, r, curl_easy_perform(r->easy));
}

/* ---- objects ---------------------------------------------------------------------------- */

/* An object table's userdata: the client and the object's full key. */
typedef struct {
    s3_client *client;
    char *key;
} s3_object;

/* A new object being written, `total` bytes so far: bytes [0, first_len) held until commit
 * (part 1), bytes [cur_start, cur_start + cur_len) of the part being filled (cur_start starts
 * at part_size: part 2), and between them the parts already uploaded. */
typedef struct {
    size_t part_size;
    uint64_t total;
    uint8_t *first;
    size_t first_len;
    uint8_t *cur;
    uint64_t cur_start;
    size_t cur_len;
    char *upload_id; /* NULL until the multipart upload is created */
    char **etags;    /* etags[k] of part k + 1; etags[0] is part 1's, set at commit */
    size_t parts;    /* the highest part number uploaded (0: none) */
} new_object;

static int32_t obj_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    s3_object *o = ud;
    if (len == 0) { /* a zero-length range cannot be written as bytes=A-B */
        *read_out = 0;
        return 0;
    }
    req r = {0};
    r.method = "GET";
    r.url = object_url(o->client, o->key, "");
    snprintf(r.range, sizeof r.range, "%" PRIu64 "-%" PRIu64, offset, offset + len - 1);
    r.range_first = offset;
    r.buf = buf;
    r.cap = len;
    int32_t rc = perform(o->client, &r);
    if (rc == 0 || r.status == 416) *read_out = r.len; /* 416: the range starts past the end */
    if (r.status == 416) rc = 0;
    req_free(&r);
    return rc;
}

static int32_t obj_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                               uint64_t *size_out) {
    s3_object *o = ud;
    if (len == 0) {
        *read_out = 0;
        return 0;
    }
    req r = {0};
    r.method = "GET";
    r.url = object_url(o->client, o->key, "");
    snprintf(r.range, sizeof r.range, "-%zu", len);
    r.buf = buf;
    r.cap = len;
    int32_t rc = perform(o->client, &r);
    if (rc == 0) {
        *read_out = r.len;
        if (r.total != UINT64_MAX) *size_out = r.total;
        else if (r.status == 200) *size_out = r.seen; /* the whole object came: its length */
    } else if (r.status == 416) { /* an empty object has no last bytes */
        *read_out = 0;
        *size_out = 0;
        rc = 0;
    }
    req_free(&r);
    return rc;
}

static int32_t obj_size(void *ud, uint64_t *size_out) {
    s3_object *o = ud;
    req r = {0};
    r.method = "HEAD";
    r.url = object_url(o->client, o->key, "");
    int32_t rc = perform(o->client, &r);
    if (rc == 0) {
        curl_off_t n = -1;
        curl_easy_getinfo(r.easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &n);
        if (n < 0) rc = S3_IO_BAD_RESPONSE;
        else *size_out = (uint64_t)n;
    }
    req_free(&r);
    return rc;
}

/* All ranges at once, one GET each on a curl multi handle: a remote store's latency is
 * paid once per call rather than once per range. */
static int32_t obj_read_vectored(void *ud, size_t count_, const uint64_t *offsets,
                                 const size_t *lens, uint8_t *const *bufs, size_t *read_outs) {
    s3_object *o = ud;
    if (count_ == 0) return 0;
    req *rs = calloc(count_, sizeof *rs);
    CURLM *m = curl_multi_init();
    int32_t rc = (rs == NULL || m == NULL) ? ENOMEM : 0;
    for (size_t k = 0; rc == 0 && k < count_; k++) {
        read_outs[k] = 0;
        if (lens[k] == 0) continue; /* nothing to ask for */
        req *r = &rs[k];
        r->method = "GET";
        r->url = object_url(o->client, o->key, "");
        snprintf(r->range, sizeof r->range, "%" PRIu64 "-%" PRIu64, offsets[k],
                 offsets[k] + lens[k] - 1);
        r->range_first = offsets[k];
        r->buf = bufs[k];
        r->cap = lens[k];
        if (r->url == NULL || (r->easy = curl_easy_init()) == NULL) rc = ENOMEM;
        if (rc == 0) rc = setup(o->client, r);
        if (rc == 0) curl_easy_setopt(r->easy, CURLOPT_PRIVATE, (char *)r);
        if (rc == 0 && curl_multi_add_handle(m, r->easy) != CURLM_OK) rc = ENOMEM;
    }
    int running = 1;
    while (rc == 0 && running > 0) {
        CURLMcode mc = curl_multi_perform(m, &running);
        if (mc == CURLM_OK && running > 0) mc = curl_multi_poll(m, NULL, 0, 1000, NULL);
        if (mc != CURLM_OK) rc = S3_IO_CURL_BASE; /* the multi handle itself failed */
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE) continue;
        char *p;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &p);
        req *r = (req *)p;
        int32_t one = finish(o->client, r, msg->data.result);
        if (one == 0 || r->status == 416) {
            read_outs[r - rs] = r->len;
            one = 0;
        }
        /* The first error wins; a missing object is missing for every range. */
        if (rc == 0 && one != 0) rc = one;
    }
    for (size_t k = 0; rs != NULL && k < count_; k++) {
        if (rs[k].easy != NULL) curl_multi_remove_handle(m, rs[k].easy);
        req_free(&rs[k]);
    }
    if (m != NULL) curl_multi_cleanup(m);
    free(rs);
    return rc;
}

static int32_t obj_remove(void *ud) {
    s3_object *o = ud;
    req r = {0};
    r.method = "DELETE";
    r.url = object_url(o->client, o->key, "");
    int32_t rc = perform(o->client, &r);
    req_free(&r);
    return rc; /* S3 answers 204 for a missing key too */
}

static void obj_destroy(void *ud) {
    s3_object *o = ud;
    free(o->key);
    free(o);
}

static int32_t obj_create_new(void *ud, void **new_out) {
    s3_object *o = ud;
    new_object *n = calloc(1, sizeof *n);
    if (n == NULL) return ENOMEM;
    pthread_mutex_lock(&o->client->lock);
    n->part_size = o->client->part_size;
    pthread_mutex_unlock(&o->client->lock);
    n->cur_start = n->part_size;
    *new_out = n;
    return 0;
}

static void new_free(new_object *n) {
    for (size_t k = 0; n->etags != NULL && k < n->parts; k++) free(n->etags[k]);
    free(n->etags);
    free(n->first);
    free(n->cur);
    free(n->upload_id);
    free(n);
}

static int32_t create_multipart(s3_object *o, new_object *n) {
    req r = {0};
    r.method = "POST";
    r.op = OP_CREATE_MPU;
    r.url = object_url(o->client, o->key, "uploads");
    r.content_type = "application/octet-stream"; /* the object's, once complete */
    r.grow = 1;
    r.grow_limit = 1 << 16;
    int32_t rc = perform(o->client, &r);
    const char *v;
    size_t vl, pos = 0;
    if (rc == 0 && !xml_next((const char *)r.buf, r.len, &pos, "UploadId", &v, &vl))
        rc = S3_IO_BAD_RESPONSE;
    if (rc == 0 && (n->upload_id = xml_unescape(v, vl)) == NULL) rc = ENOMEM;
    req_free(&r);
    return rc;
}

/* UploadPart `number` of `len` bytes; its ETag into n->etags[number - 1]. */
static int32_t upload_part(s3_object *o, new_object *n, size_t number, const uint8_t *data,
                           size_t len) {
    s3_client *c = o->client;
    pthread_mutex_lock(&c->lock);
    int inject = c->fail_part_in > 0 && --c->fail_part_in == 0;
    pthread_mutex_unlock(&c->lock);
    if (inject) return S3_IO_INJECTED;
    if (number > n->parts) { /* room for its ETag */
        char **e = realloc(n->etags, number * sizeof *e);
        if (e == NULL) return ENOMEM;
        for (size_t k = n->parts; k < number; k++) e[k] = NULL;
        n->etags = e;
        n->parts = number;
    }
    char *id = url_encode(n->upload_id, 0);
    char *q = id ? fmt("partNumber=%zu&uploadId=%s", number, id) : NULL;
    req r = {0};
    r.method = "PUT";
    r.op = OP_UPLOAD_PART;
    r.url = q ? object_url(c, o->key, q) : NULL;
    r.body = data;
    r.body_len = len;
    r.content_type = "application/octet-stream";
    free(id);
    free(q);
    int32_t rc = perform(c, &r);
    if (rc == 0 && r.etag[0] == '\0') rc = S3_IO_BAD_RESPONSE;
    if (rc == 0) {
        free(n->etags[number - 1]);
        if ((n->etags[number - 1] = dup_str(r.etag)) == NULL) rc = ENOMEM;
    }
    req_free(&r);
    return rc;
}

static int32_t abort_multipart(s3_object *o, new_object *n) {
    char *id = url_encode(n->upload_id, 0), *q = id ? fmt("uploadId=%s", id) : NULL;
    req r = {0};
    r.method = "DELETE";
    r.op = OP_ABORT_MPU;
    r.url = q ? object_url(o->client, o->key, q) : NULL;
    free(id);
    free(q);
    int32_t rc = perform(o->client, &r);
    req_free(&r);
    return rc;
}

/* Append `len` bytes at the end of the new object: into part 1 while it is not full, then
 * into the current part, which goes up (the upload created first) each time it fills. */
static int32_t new_append(s3_object *o, new_object *n, const uint8_t *buf, size_t len) {
    while (len > 0) {
        uint8_t **dst = n->first_len < n->part_size ? &n->first : &n->cur;
        size_t *dlen = dst == &n->first ? &n->first_len : &n->cur_len;
        if (*dst == NULL && (*dst = malloc(n->part_size)) == NULL) return ENOMEM;
        size_t take = n->part_size - *dlen < len ? n->part_size - *dlen : len;
        memcpy(*dst + *dlen, buf, take);
        *dlen += take;
        n->total += take;
        buf += take;
        len -= take;
        if (dst == &n->cur && n->cur_len == n->part_size) {
            int32_t rc = 0;
            if (n->upload_id == NULL) rc = create_multipart(o, n);
            size_t number = (size_t)(n->cur_start / n->part_size) + 1;
            if (rc == 0) rc = upload_part(o, n, number, n->cur, n->cur_len);
            if (rc != 0) return rc;
            n->cur_start += n->cur_len;
            n->cur_len = 0;
        }
    }
    return 0;
}

static int32_t obj_write_new(void *ud, void *new_object_, uint64_t offset, const uint8_t *buf,
                             size_t len) {
    s3_object *o = ud;
    new_object *n = new_object_;
    /* A shard with its index at the start is written from past the index, which comes last,
     * at 0: the bytes skipped are held as zeros until then (in part 1, unless the index is
     * larger than a part, which then fails below as a write into an uploaded part). */
    static const uint8_t zeros[4096];
    while (n->total < offset) {
        uint64_t gap = offset - n->total;
        int32_t rc = new_append(o, n, zeros, gap < sizeof zeros ? (size_t)gap : sizeof zeros);
        if (rc != 0) return rc;
    }
    uint64_t end = n->total;
    /* Bytes already written are rewritten where they are still held (the index, written last
     * at offset 0 when it is at the start, lands in part 1); an uploaded part cannot change. */
    while (len > 0 && offset < end) {
        size_t take;
        if (offset < n->first_len) {
            take = n->first_len - (size_t)offset < len ? n->first_len - (size_t)offset : len;
            memcpy(n->first + offset, buf, take);
        } else if (offset >= n->cur_start) { /* below `end`, so inside the current part */
            size_t at = (size_t)(offset - n->cur_start);
            take = n->cur_len - at < len ? n->cur_len - at : len;
            memcpy(n->cur + at, buf, take);
        } else {
            return EINVAL;
        }
        offset += take;
        buf += take;
        len -= take;
    }
    return new_append(o, n, buf, len);
}

static void obj_discard_new(void *ud, void *new_object_) {
    new_object *n = new_object_;
    /* The parts uploaded so far are S3's storage until aborted; a failed abort leaves them to
     * the bucket's lifecycle rule for incomplete uploads. */
    if (n->upload_id != NULL) (void)abort_multipart(ud, n);
    new_free(n);
}

static int32_t obj_commit_new(void *ud, void *new_object_, uint64_t len) {
    s3_object *o = ud;
    new_object *n = new_object_;
    int32_t rc = len == n->total ? 0 : EINVAL;
    req r = {0};
    if (rc == 0 && n->upload_id == NULL && n->cur_len == 0) {
        /* Small: one PUT, which S3 makes visible whole. */
        r.method = "PUT";
        r.url = object_url(o->client, o->key, "");
        r.body = n->first != NULL ? n->first : (const uint8_t *)"";
        r.body_len = n->first_len;
        r.content_type = "application/octet-stream";
        rc = perform(o->client, &r);
        req_free(&r);
        new_free(n);
        return rc;
    }
    if (rc == 0 && n->upload_id == NULL) rc = create_multipart(o, n);
    if (rc == 0 && n->cur_len > 0) /* the last part, which may be short */
        rc = upload_part(o, n, (size_t)(n->cur_start / n->part_size) + 1, n->cur, n->cur_len);
    if (rc == 0) rc = upload_part(o, n, 1, n->first, n->first_len);
    /* CompleteMultipartUpload lists every part with its ETag, in order. */
    char *xml = rc == 0 ? dup_str("<CompleteMultipartUpload>") : NULL;
    size_t xml_len = 0;
    for (size_t k = 1; xml != NULL && k <= n->parts + 1; k++) {
        char *next = k <= n->parts
                         ? fmt("%s<Part><PartNumber>%zu</PartNumber><ETag>%s</ETag></Part>", xml, k,
                               n->etags[k - 1])
                         : fmt("%s</CompleteMultipartUpload>", xml);
        free(xml);
        xml = next;
    }
    if (rc == 0 && xml == NULL) rc = ENOMEM;
    if (rc == 0) xml_len = strlen(xml);
    char *id = rc == 0 ? url_encode(n->upload_id, 0) : NULL;
    char *q = id ? fmt("uploadId=%s", id) : NULL;
    if (rc == 0 && q == NULL) rc = ENOMEM;
    if (rc == 0) {
        r.method = "POST";
        r.op = OP_COMPLETE_MPU;
        r.url = object_url(o->client, o->key, q);
        r.body = (const uint8_t *)xml;
        r.body_len = xml_len;
        r.content_type = "application/xml";
        r.grow = 1;
        r.grow_limit = 1 << 16;
        rc = perform(o->client, &r);
        /* S3 may answer 200 and still fail, with an <Error> in the body. */
        if (rc == 0 && (r.len == 0 || contains(r.buf, r.len, "<Error>"))) rc = S3_IO_BAD_RESPONSE;
        req_free(&r);
    }
    free(id);
    free(q);
    free(xml);
    if (rc != 0 && n->upload_id != NULL) (void)abort_multipart(o, n); /* the old object stays */
    new_free(n);
    return rc;
}

/* ---- the store ------------------------------------------------------------------------- */

typedef struct {
    s3_client *client;
    char *prefix; /* "" or "PREFIX/" */
} s3_store;

static int32_t store_open_object(void *ud, const char *key, shard_io_callbacks *io) {
    s3_store *s = ud;
    s3_object *o = malloc(sizeof *o);
    if (o == NULL) return ENOMEM;
    o->client = s->client;
    o->key = fmt("%s%s", s->prefix, key);
    if (o->key == NULL) {
        free(o);
        return ENOMEM;
    }
    memset(io, 0, sizeof *io);
    io->version = SHARD_IO_VERSION;
    io->userdata = o;
    io->read = obj_read;
    io->read_suffix = obj_read_suffix;
    io->size = obj_size;
    /* No write and no truncate: S3 has no writes at an offset (see s3_io.h). */
    io->remove = obj_remove;
    io->destroy = obj_destroy;
    io->read_vectored = obj_read_vectored;
    io->create_new = obj_create_new;
    io->write_new = obj_write_new;
    io->commit_new = obj_commit_new;
    io->discard_new = obj_discard_new;
    return 0;
}

static int32_t store_list(void *ud, const char *prefix, shard_key_fn on_key, void *state) {
    s3_store *s = ud;
    char *full = fmt("%s%s", s->prefix, prefix), *enc = full ? url_encode(full, 0) : NULL;
    char *token = NULL;
    int32_t rc = enc == NULL ? ENOMEM : 0;
    size_t strip = strlen(s->prefix);
    char page[32] = "";
    pthread_mutex_lock(&s->client->lock);
    if (s->client->list_page > 0) snprintf(page, sizeof page, "&max-keys=%u", s->client->list_page);
    pthread_mutex_unlock(&s->client->lock);
    for (int more = 1; rc == 0 && more;) {
        char *tok = token ? url_encode(token, 0) : NULL;
        char *u = token && tok == NULL ? NULL
                  : fmt("%s/%s?list-type=2&prefix=%s%s%s%s", s->client->endpoint,
                        s->client->bucket, enc, page, tok ? "&continuation-token=" : "",
                        tok ? tok : "");
        free(tok);
        req r = {0};
        r.method = "GET";
        r.op = OP_LIST;
        r.url = u;
        r.grow = 1;
        r.grow_limit = 64 << 20; /* one page is at most 1000 keys of at most 1 KiB each */
        rc = perform(s->client, &r);
        const char *xml = (const char *)r.buf, *v;
        size_t pos = 0, vl;
        while (rc == 0 && xml_next(xml, r.len, &pos, "Key", &v, &vl)) {
            char *key = xml_unescape(v, vl);
            if (key == NULL) rc = ENOMEM;
            else if (strlen(key) >= strip) on_key(state, key + strip, strlen(key) - strip);
            free(key);
        }
        pos = 0;
        more = rc == 0 && xml_next(xml, r.len, &pos, "IsTruncated", &v, &vl) && vl == 4 &&
               memcmp(v, "true", 4) == 0;
        free(token);
        token = NULL;
        pos = 0;
        if (more && xml_next(xml, r.len, &pos, "NextContinuationToken", &v, &vl)) {
            if ((token = xml_unescape(v, vl)) == NULL) rc = ENOMEM;
        } else if (more) {
            rc = S3_IO_BAD_RESPONSE; /* truncated without a way on: not a complete listing */
        }
        req_free(&r);
    }
    free(token);
    free(enc);
    free(full);
    return rc;
}

static void store_destroy(void *ud) {
    s3_store *s = ud;
    free(s->prefix);
    free(s);
}

int s3_store_open(s3_client *client, const char *prefix, uint32_t flags,
                  shard_store_callbacks *store_out) {
    if (client == NULL || store_out == NULL) return EINVAL;
    s3_store *s = malloc(sizeof *s);
    if (s == NULL) return ENOMEM;
    s->client = client;
    s->prefix = prefix != NULL && *prefix ? fmt("%s/", prefix) : dup_str("");
    if (s->prefix == NULL) {
        free(s);
        return ENOMEM;
    }
    memset(store_out, 0, sizeof *store_out);
    store_out->version = SHARD_STORE_VERSION;
    store_out->flags = flags;
    store_out->userdata = s;
    store_out->open_object = store_open_object;
    store_out->destroy = store_destroy;
    store_out->list = store_list;
    return 0;
}

void s3_store_discard(shard_store_callbacks *store) {
    if (store == NULL || store->userdata == NULL) return;
    store_destroy(store->userdata);
    store->userdata = NULL;
}

/* ---- the client ------------------------------------------------------------------------- */

int s3_client_new(const char *endpoint, const char *region, const char *access_key,
                  const char *secret_key, const char *bucket, s3_client **client_out) {
    if (endpoint == NULL || region == NULL || access_key == NULL || secret_key == NULL ||
        bucket == NULL || client_out == NULL || !*endpoint || !*region || !*access_key ||
        !*bucket || strchr(access_key, ':') != NULL)
        return EINVAL;
    s3_client *c = calloc(1, sizeof *c);
    if (c == NULL) return ENOMEM;
    size_t el = strlen(endpoint);
    while (el > 0 && endpoint[el - 1] == '/') el--;
    c->endpoint = fmt("%.*s", (int)el, endpoint);
    c->bucket = dup_str(bucket);
    c->userpwd = fmt("%s:%s", access_key, secret_key);
    c->sigv4 = fmt("aws:amz:%s:s3", region);
    c->part_size = S3_DEFAULT_PART_SIZE;
    int locked = 0;
    if (c->endpoint == NULL || c->bucket == NULL || c->userpwd == NULL || c->sigv4 == NULL ||
        !(locked = pthread_mutex_init(&c->lock, NULL) == 0) ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        if (locked) pthread_mutex_destroy(&c->lock);
        free(c->endpoint);
        free(c->bucket);
        free(c->userpwd);
        free(c->sigv4);
        free(c);
        return ENOMEM;
    }
    *client_out = c;
    return 0;
}

void s3_client_free(s3_client *c) {
    if (c == NULL) return;
    pthread_mutex_destroy(&c->lock);
    free(c->endpoint);
    free(c->bucket);
    free(c->userpwd);
    free(c->sigv4);
    free(c);
    curl_global_cleanup(); /* balances s3_client_new's curl_global_init */
}

int s3_client_set_part_size(s3_client *c, size_t bytes) {
    if (c == NULL || bytes < S3_MIN_PART_SIZE) return EINVAL;
    pthread_mutex_lock(&c->lock);
    c->part_size = bytes;
    pthread_mutex_unlock(&c->lock);
    return 0;
}

void s3_client_counts(s3_client *c, s3_counts *out) {
    pthread_mutex_lock(&c->lock);
    *out = c->counts;
    pthread_mutex_unlock(&c->lock);
}

void s3_client_reset_counts(s3_client *c) {
    pthread_mutex_lock(&c->lock);
    memset(&c->counts, 0, sizeof c->counts);
    pthread_mutex_unlock(&c->lock);
}

void s3_client_fail_upload_part(s3_client *c, unsigned n) {
    pthread_mutex_lock(&c->lock);
    c->fail_part_in = n;
    pthread_mutex_unlock(&c->lock);
}

void s3_client_set_list_page(s3_client *c, unsigned max_keys) {
    pthread_mutex_lock(&c->lock);
    c->list_page = max_keys;
    pthread_mutex_unlock(&c->lock);
}

int32_t s3_create_bucket(s3_client *c) {
    req r = {0};
    r.method = "PUT";
    r.url = fmt("%s/%s", c->endpoint, c->bucket);
    int32_t rc = perform(c, &r);
    /* 409 BucketAlreadyOwnedByYou: it is there, and ours. */
    if (r.status == 409 && strstr(r.err, "BucketAlreadyOwnedByYou") != NULL) rc = 0;
    req_free(&r);
    return rc;
}

int32_t s3_get_object(s3_client *c, const char *key, uint8_t **data_out, size_t *len_out) {
    req r = {0};
    r.method = "GET";
    r.url = object_url(c, key, "");
    r.grow = 1;
    r.grow_limit = SIZE_MAX / 2;
    int32_t rc = perform(c, &r);
    if (rc == 0) {
        *data_out = r.buf; /* handed over: not freed below */
        *len_out = r.len;
        r.buf = NULL;
    }
    req_free(&r);
    return rc;
}
