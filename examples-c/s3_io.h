/*
 * s3_io: an S3 bucket as a zarrshard store (shard_store_callbacks), over libcurl with its
 * built-in AWS SigV4 signing (CURLOPT_AWS_SIGV4, libcurl >= 7.75).
 *
 * An array at PATH of the store lives under the object keys PREFIX/PATH/zarr.json,
 * PREFIX/PATH/c/0/1, ..., addressed path-style: ENDPOINT/BUCKET/PREFIX/PATH/c/0/1.
 *
 *     s3_client *c;
 *     s3_client_new("http://127.0.0.1:9000", "us-east-1", key, secret, "bucket", &c);
 *     shard_store_callbacks store;
 *     s3_store_open(c, "data", SHARD_STORE_THREAD_SAFE, &store);
 *     shard_array *a;
 *     if (shard_array_open_path(&store, "image", &a) != SHARD_OK)
 *         s3_store_discard(&store);      // a failed open leaves the table with us
 *     ... shard_array_read_region(a, ...) ...
 *     shard_array_close(a);              // frees the table's userdata, not the client
 *     s3_client_free(c);                 // after every array over it is closed
 *
 * What each object callback sends (one HTTP request each unless said otherwise):
 *   read          GET with `Range: bytes=A-B`; 404 NoSuchKey -> SHARD_IO_NOT_FOUND (it reads
 *                 as fill value); 416 (the range starts past the end) -> 0 bytes
 *   read_suffix   GET with `Range: bytes=-N`; the object's size from `Content-Range`
 *   size          HEAD
 *   read_vectored one ranged GET per range, all at once through a curl multi handle
 *   remove        DELETE
 *   new objects   create_new buffers in memory; up to the part size (8 MiB, see
 *                 s3_client_set_part_size) commit_new sends one PUT. Past it the object goes
 *                 up as a multipart upload: CreateMultipartUpload once the second part
 *                 fills, an UploadPart per full part, and at commit_new the last part, the
 *                 first part (held back, because a shard whose index is at the start writes
 *                 it last, at offset 0) and CompleteMultipartUpload. S3 shows the object
 *                 only when complete, so readers see the old one until then; discard_new
 *                 (or a failed commit) sends AbortMultipartUpload and the old object stays.
 *   list          ListObjectsV2 (prefix, continuation tokens), keys relative to the store
 *
 * There is no `write` nor `truncate` (S3 cannot change an object in place): the library then
 * writes whole shards only, through the new-object callbacks; a region write that covers a
 * stored shard partly reads it, updates a copy and writes that whole (see shard_io_callbacks
 * in zarrshard.h for what a table without `write` can do).
 *
 * Threads: every request uses its own curl easy handle and the client's shared state is
 * under a mutex, so all callbacks are thread-safe (pass SHARD_STORE_THREAD_SAFE). Call
 * s3_client_new before other threads use libcurl (it calls curl_global_init).
 *
 * Error codes the callbacks return (the library reports them as SHARD_ERR_IO and keeps the
 * code, shard_last_io_code): an HTTP status (300-599) the request got; S3_IO_CURL_BASE + a
 * CURLcode when the transfer failed; S3_IO_BAD_RESPONSE when S3's answer is not what it
 * should be; S3_IO_INJECTED for the test hook; ENOMEM or EINVAL (errno values) for local
 * failures.
 *
 * Not for production: no retries of throttled (503) or failed requests, no TLS options
 * beyond libcurl's defaults, the whole of a multipart upload's part in memory. moto, the
 * test server, checks no signatures, so the tests do not prove that real S3 accepts them.
 */
#ifndef S3_IO_H
#define S3_IO_H

#include <stddef.h>
#include <stdint.h>

#include "zarrshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Error code base: S3_IO_CURL_BASE + CURLcode when a transfer failed. */
#define S3_IO_CURL_BASE 1000
/** Error code: a response S3 should not give (no UploadId, an error in a 200 body). */
#define S3_IO_BAD_RESPONSE 2001
/** Error code: the UploadPart that s3_client_fail_upload_part chose (nothing was sent). */
#define S3_IO_INJECTED 2002

/** S3's smallest part of a multipart upload (but the last): 5 MiB. */
#define S3_MIN_PART_SIZE ((size_t)5 << 20)
/** The default part size, and the size past which an object goes up in parts: 8 MiB. */
#define S3_DEFAULT_PART_SIZE ((size_t)8 << 20)

/** Requests sent since the client was made or its counts reset. */
typedef struct {
    /** By HTTP method. */
    uint64_t get, head, put, post, del;
    /** Of which multipart operations: CreateMultipartUpload (POST), UploadPart (PUT),
     *  CompleteMultipartUpload (POST), AbortMultipartUpload (DELETE). */
    uint64_t create_multipart, upload_part, complete_multipart, abort_multipart;
    /** Of which ListObjectsV2 pages (GET). */
    uint64_t list;
} s3_counts;

/** One bucket's connection settings and request counters. Opaque. */
typedef struct s3_client s3_client;

/**
 * A new client for BUCKET at ENDPOINT (e.g. `http://127.0.0.1:9000`, no trailing slash
 * needed), signing with REGION, ACCESS_KEY and SECRET_KEY (all copied). Returns 0, EINVAL (a
 * NULL or empty argument, a `:` in the access key) or ENOMEM; `*client_out` is set on 0 only.
 */
int s3_client_new(const char *endpoint, const char *region, const char *access_key,
                  const char *secret_key, const char *bucket, s3_client **client_out);

/** Free the client. Every array and store over it must be closed first. NULL is a no-op. */
void s3_client_free(s3_client *client);

/**
 * Set the part size of multipart uploads, which is also the size past which a new object
 * goes up in parts; at least S3_MIN_PART_SIZE. Affects objects created after the call.
 * Returns 0 or EINVAL.
 */
int s3_client_set_part_size(s3_client *client, size_t bytes);

/** Copy the request counters into `*out`. Thread-safe. */
void s3_client_counts(s3_client *client, s3_counts *out);

/** Set the request counters to zero. Thread-safe. */
void s3_client_reset_counts(s3_client *client);

/**
 * Test hook: the `n`-th UploadPart from now (1 = the next) fails with S3_IO_INJECTED without
 * being sent; 0 turns it off. Thread-safe.
 */
void s3_client_fail_upload_part(s3_client *client, unsigned n);

/**
 * Test hook: ask for ListObjectsV2 pages of at most `max_keys` keys (0: the server's default,
 * 1000), so that a test can make a listing take several pages. Thread-safe.
 */
void s3_client_set_list_page(s3_client *client, unsigned max_keys);

/** Create the client's bucket (PUT); one the client already owns is fine. Returns 0 or an
 *  error code as above. */
int32_t s3_create_bucket(s3_client *client);

/**
 * GET the whole object KEY (a full key, no store prefix added) into a new malloc'd buffer
 * `*data_out` (free it; NULL for an empty object) of `*len_out` bytes. For tests that
 * compare objects. Returns 0, SHARD_IO_NOT_FOUND, or an error code as above.
 */
int32_t s3_get_object(s3_client *client, const char *key, uint8_t **data_out, size_t *len_out);

/**
 * Fill `*store_out` with a store (SHARD_STORE_VERSION, `list` included) over the client's
 * bucket, its keys under PREFIX (copied; NULL or "" for the bucket's root, else names joined
 * by `/`, without a leading or trailing one). `flags`: SHARD_STORE_* (SHARD_STORE_THREAD_SAFE
 * is safe). The table's userdata borrows the client, which must outlive it; the array owns
 * the userdata once shard_array_open* / shard_array_create* succeeded, otherwise free it with
 * s3_store_discard. Returns 0, EINVAL or ENOMEM.
 */
int s3_store_open(s3_client *client, const char *prefix, uint32_t flags,
                  shard_store_callbacks *store_out);

/** Free a store table's userdata the library never took. */
void s3_store_discard(shard_store_callbacks *store);

#ifdef __cplusplus
}
#endif

#endif /* S3_IO_H */
