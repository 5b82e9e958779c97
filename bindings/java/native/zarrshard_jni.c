/*
 * zarrshard_jni: the JNI glue of the Java binding (package io.zarrshard), a thin shim over
 * the stable C ABI in include/zarrshard.h. It owns no logic of its own: it converts Java
 * arguments, calls one shard_* function, and turns the result into a return value or a Java
 * exception. The only state it keeps is the JavaVM, cached classes and method IDs, and one
 * per-thread slot for the exception a host ShardIO threw during the current call.
 *
 * Rules every entry point follows (the model is libsignal's JNI bridge):
 *  - a failed shard_* call becomes a ShardException (status, library message, host I/O code,
 *    and as cause the Java exception a ShardIO callback threw during the call, if any);
 *  - a failure of the shim itself (out of memory, a NULL array, a heap ByteBuffer) becomes a
 *    standard Java exception; nothing ever aborts the JVM;
 *  - no JNI function is called while an exception is pending, except the ones JNI allows
 *    (DeleteLocalRef, DeleteGlobalRef, ExceptionCheck/Occurred/Clear);
 *  - no Get*Critical: the library calls back into Java during a call, which a critical
 *    region forbids. Java arrays are copied through malloc'd buffers; direct ByteBuffers are
 *    used in place.
 *
 * Handles are passed to Java as jlong (the shard_codec / shard_handle / shard_array pointer,
 * or a malloc'd copy of a library store table, io.zarrshard.Store). The Java side guarantees
 * a handle is not freed while a call is using it.
 */
#include <jni.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarrshard.h"

/* The host I/O code zarrshard records (shard_last_io_code) when a ShardIO method threw;
 * io.zarrshard.ShardException.IO_JAVA_EXCEPTION. */
#define IO_JAVA_EXCEPTION (-1)
/* ... when the callback could not get a JNIEnv (attach failed); ShardException.IO_NO_JVM. */
#define IO_NO_JVM (-2)
/* The largest buffer handed to Java in one piece (a ByteBuffer's capacity is an int). */
#define MAX_PIECE ((size_t)0x7FFFF000)
/* Capability bits Java passes to shardOpen: which optional ShardIO methods the host
 * overrides (only those become callbacks, so the library's fallbacks apply to the rest). */
#define CAP_READ_SUFFIX 1
#define CAP_TRUNCATE 2
#define CAP_REMOVE 4
#define CAP_NEW_OBJECTS 8 /* beginNew, writeNew, commitNew, discardNew: all four */

static JavaVM *g_vm;

static jclass g_ShardException, g_NotFound, g_NullPointerException, g_IllegalArgumentException,
    g_IllegalStateException, g_OutOfMemoryError, g_ByteBuffer;
static jclass g_Capabilities, g_Listing;
static jmethodID g_OutputStream_write;
static jmethodID g_store_open, g_store_release, g_Capabilities_of, g_Listing_of;
static jmethodID g_ShardException_fromNative, g_io_read, g_io_readSuffix, g_io_size, g_io_write,
    g_io_truncate, g_io_remove, g_io_beginNew, g_io_writeNew, g_io_commitNew, g_io_discardNew,
    g_ByteBuffer_asReadOnlyBuffer, g_ByteBuffer_position;

/* ---- per-thread record of a ShardIO exception --------------------------------------- */

/* The first exception a ShardIO method threw on this thread during the current entry point
 * (a global ref), and how many entry points are active on this thread (a ShardIO may itself
 * use another Shard, so scopes nest). The library calls callbacks on the thread that called
 * it, so the thread that sees the exception is the one that reports the error. */
static _Thread_local jobject t_pending;
static _Thread_local int t_depth;

typedef struct {
    jobject saved;
} scope;

static void scope_begin(scope *s) {
    s->saved = t_pending;
    t_pending = NULL;
    t_depth++;
}

/* Leave the scope; returns the exception remembered in it as a local ref, or NULL. */
static jthrowable scope_end(JNIEnv *env, scope *s) {
    jobject g = t_pending;
    jthrowable local = NULL;
    t_pending = s->saved;
    t_depth--;
    if (g != NULL) {
        local = (jthrowable)(*env)->NewLocalRef(env, g);
        (*env)->DeleteGlobalRef(env, g);
    }
    return local;
}

/* ---- throwing ------------------------------------------------------------------------ */

static void throw_new(JNIEnv *env, jclass cls, const char *msg) {
    if (!(*env)->ExceptionCheck(env)) (*env)->ThrowNew(env, cls, msg);
}

static void throw_oom(JNIEnv *env) { throw_new(env, g_OutOfMemoryError, "zarrshard_jni: malloc failed"); }

/* Throw the ShardException for `st`, which the library just returned on this thread: its
 * message and I/O code are read first, before anything else can touch them. */
static void throw_status(JNIEnv *env, shard_status st, jthrowable cause) {
    size_t len = 0, written = 0;
    char *msg = NULL;
    int32_t io_code = shard_last_io_code();
    jbyteArray jmsg;
    jobject exc;
    if (shard_last_error(NULL, 0, &len) == SHARD_OK) {
        msg = (char *)malloc(len + 1);
        if (msg != NULL && shard_last_error(msg, len + 1, &written) != SHARD_OK) written = 0;
    }
    if ((*env)->ExceptionCheck(env)) goto out;
    jmsg = (*env)->NewByteArray(env, (jsize)written);
    if (jmsg == NULL) goto out;
    if (written > 0) (*env)->SetByteArrayRegion(env, jmsg, 0, (jsize)written, (const jbyte *)msg);
    exc = (*env)->CallStaticObjectMethod(env, g_ShardException, g_ShardException_fromNative,
                                         (jint)st, jmsg, (jint)io_code, cause);
    /* If building the exception failed, that failure (e.g. OutOfMemoryError) is pending. */
    if (!(*env)->ExceptionCheck(env) && exc != NULL) (*env)->Throw(env, (jthrowable)exc);
    (*env)->DeleteLocalRef(env, jmsg);
    if (exc != NULL) (*env)->DeleteLocalRef(env, exc);
out:
    free(msg);
}

/* The end of every library call: leaves the scope and turns a failure into a pending
 * ShardException. Returns 1 on SHARD_OK. */
static int finish(JNIEnv *env, scope *s, shard_status st) {
    jthrowable cause = scope_end(env, s);
    int ok = st == SHARD_OK;
    if (!ok) throw_status(env, st, cause);
    if (cause != NULL) (*env)->DeleteLocalRef(env, cause);
    return ok;
}

/* ---- argument conversion ------------------------------------------------------------- */

#define INLINE_COORDS 8

typedef struct {
    uint64_t *v;
    size_t n;
    uint64_t inline_v[INLINE_COORDS];
} coords_buf;

/* Copy a long[] (coordinates, a shape) into c; throws and returns 0 on failure. */
static int get_coords(JNIEnv *env, jlongArray arr, coords_buf *c) {
    jsize n;
    c->v = c->inline_v;
    c->n = 0;
    if (arr == NULL) {
        throw_new(env, g_NullPointerException, "coordinates");
        return 0;
    }
    n = (*env)->GetArrayLength(env, arr);
    if (n > INLINE_COORDS) {
        c->v = (uint64_t *)malloc((size_t)n * sizeof(uint64_t));
        if (c->v == NULL) {
            c->v = c->inline_v;
            throw_oom(env);
            return 0;
        }
    }
    c->n = (size_t)n;
    /* jlong and uint64_t have the same size; negative values become huge and are refused by
     * the library as out of range. */
    if (n > 0) (*env)->GetLongArrayRegion(env, arr, 0, n, (jlong *)c->v);
    return 1;
}

static void free_coords(coords_buf *c) {
    if (c->v != c->inline_v) free(c->v);
}

/* Copy a byte[] into a new malloc'd buffer (1 byte for an empty array); NULL and an
 * exception on failure. */
static uint8_t *get_bytes(JNIEnv *env, jbyteArray arr, size_t *len_out) {
    jsize n;
    uint8_t *buf;
    if (arr == NULL) {
        throw_new(env, g_NullPointerException, "byte array");
        return NULL;
    }
    n = (*env)->GetArrayLength(env, arr);
    buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1);
    if (buf == NULL) {
        throw_oom(env);
        return NULL;
    }
    if (n > 0) (*env)->GetByteArrayRegion(env, arr, 0, n, (jbyte *)buf);
    *len_out = (size_t)n;
    return buf;
}

/* The bytes [pos, pos + len) of a direct ByteBuffer; NULL and an exception otherwise. */
static uint8_t *direct_range(JNIEnv *env, jobject buffer, jint pos, jint len) {
    uint8_t *addr;
    jlong cap;
    if (buffer == NULL) {
        throw_new(env, g_NullPointerException, "buffer");
        return NULL;
    }
    addr = (uint8_t *)(*env)->GetDirectBufferAddress(env, buffer);
    cap = (*env)->GetDirectBufferCapacity(env, buffer);
    if (addr == NULL || cap < 0) {
        throw_new(env, g_IllegalArgumentException, "the ByteBuffer must be direct");
        return NULL;
    }
    if (pos < 0 || len < 0 || (jlong)pos + (jlong)len > cap) {
        throw_new(env, g_IllegalArgumentException, "range outside the ByteBuffer");
        return NULL;
    }
    /* A zero-length range of an empty buffer may have no address; never dereferenced. */
    return addr + pos;
}

static jbyteArray new_bytes(JNIEnv *env, const void *data, size_t len) {
    jbyteArray arr;
    if (len > (size_t)INT32_MAX) {
        throw_new(env, g_IllegalArgumentException, "result larger than a Java array");
        return NULL;
    }
    arr = (*env)->NewByteArray(env, (jsize)len);
    if (arr != NULL && len > 0) (*env)->SetByteArrayRegion(env, arr, 0, (jsize)len, (const jbyte *)data);
    return arr;
}

static jlongArray new_longs(JNIEnv *env, const uint64_t *v, size_t n) {
    jlongArray arr = (*env)->NewLongArray(env, (jsize)n);
    if (arr != NULL && n > 0) (*env)->SetLongArrayRegion(env, arr, 0, (jsize)n, (const jlong *)v);
    return arr;
}

static const shard_codec *CODEC(jlong p) { return (const shard_codec *)(uintptr_t)p; }
static const shard_handle *SHARD(jlong p) { return (const shard_handle *)(uintptr_t)p; }

/* A closed or never-opened handle reaching native code is a bug in the Java layer; refuse
 * it instead of passing NULL on (which the library would report as SHARD_ERR_NULL_POINTER). */
static int live(JNIEnv *env, jlong p) {
    if (p == 0) throw_new(env, g_IllegalStateException, "zarrshard: handle is closed");
    return p != 0;
}

/* ---- the ShardIO trampolines ---------------------------------------------------------- */

/* A ShardArray's store userdata: the host's ShardStore, kept alive by a global ref that the
 * array handle owns from a successful open until its destroy (shard_array_close). */
typedef struct {
    jobject store;
} jni_store;

/* The callbacks' userdata: the host's ShardIO, kept alive by a global ref that the handle
 * owns from a successful open until destroy; `store` is the ShardStore that handed it out
 * (its release(io) runs at destroy), NULL for a Shard's own ShardIO. */
typedef struct {
    jobject io;
    const jni_store *store;
} jni_io;

/* The JNIEnv of the thread the library calls back on. Threads that call in from Java are
 * attached already; a thread the JVM does not know is attached for the duration of the
 * callback (and detached again by cb_leave), never one that was attached before. */
static JNIEnv *cb_enter(int *attached) {
    JNIEnv *env = NULL;
    jint rc = (*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8);
    *attached = 0;
    if (rc == JNI_OK) return env;
    if (rc != JNI_EDETACHED) return NULL;
    if ((*g_vm)->AttachCurrentThreadAsDaemon(g_vm, (void **)&env, NULL) != JNI_OK) return NULL;
    *attached = 1;
    return env;
}

static void cb_leave(int attached) {
    if (attached) (*g_vm)->DetachCurrentThread(g_vm);
}

/* After a call into the host's ShardIO: 0 when it returned normally. Otherwise the exception
 * is cleared (it must never escape into the library) and becomes the callback's return code:
 * SHARD_IO_NOT_FOUND for ShardIO.NotFound where the contract allows it, else
 * IO_JAVA_EXCEPTION, and the exception is remembered for the entry point to chain as cause.
 * Outside any entry point (a native thread) there is nobody to hand it to; it is dropped and
 * the caller gets the code alone. */
static int32_t cb_exception(JNIEnv *env, int not_found_ok) {
    jthrowable exc;
    if (!(*env)->ExceptionCheck(env)) return 0;
    exc = (*env)->ExceptionOccurred(env);
    (*env)->ExceptionClear(env);
    if (exc == NULL) return IO_JAVA_EXCEPTION;
    if (not_found_ok && (*env)->IsInstanceOf(env, exc, g_NotFound)) {
        (*env)->DeleteLocalRef(env, exc);
        return SHARD_IO_NOT_FOUND;
    }
    if (t_depth > 0 && t_pending == NULL) t_pending = (*env)->NewGlobalRef(env, exc);
    /* NewGlobalRef can only fail by running out of memory; the code is still reported. */
    if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
    (*env)->DeleteLocalRef(env, exc);
    return IO_JAVA_EXCEPTION;
}

/* A ShardIO method returned a value the contract forbids: remember an
 * IllegalStateException saying so and report a contract violation. */
static int32_t cb_contract(JNIEnv *env, const char *what, jlong got, size_t asked) {
    char msg[160];
    snprintf(msg, sizeof msg, "ShardIO.%s returned %lld for a %zu-byte buffer", what,
             (long long)got, asked);
    (*env)->ThrowNew(env, g_IllegalStateException, msg);
    cb_exception(env, 0);
    return SHARD_IO_CONTRACT_VIOLATION;
}

/* A direct ByteBuffer over library memory, valid only during the callback (the host must
 * not keep it). */
static jobject cb_buffer(JNIEnv *env, const uint8_t *buf, size_t len, int read_only) {
    jobject bb = (*env)->NewDirectByteBuffer(env, (void *)buf, (jlong)len);
    jobject ro;
    if (bb == NULL || !read_only) return bb;
    ro = (*env)->CallObjectMethod(env, bb, g_ByteBuffer_asReadOnlyBuffer);
    if ((*env)->ExceptionCheck(env)) ro = NULL; /* the caller reports the pending exception */
    (*env)->DeleteLocalRef(env, bb);
    return ro;
}

static int32_t cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    size_t got = 0;
    int32_t rc = 0;
    if (env == NULL) return IO_NO_JVM;
    if ((*env)->PushLocalFrame(env, 4) != 0) {
        rc = cb_exception(env, 0);
        cb_leave(attached);
        return rc != 0 ? rc : IO_JAVA_EXCEPTION;
    }
    /* A Java object ends before byte Long.MAX_VALUE (sizes and offsets are longs): the bytes
     * past it do not exist, so a read reaching there is short, and ShardIO.read never sees an
     * offset that would be negative as a long (a corrupt index can ask for one). */
    if (offset >= (uint64_t)INT64_MAX) len = 0;
    else if (len > (uint64_t)INT64_MAX - offset) len = (size_t)((uint64_t)INT64_MAX - offset);
    /* One call per piece of at most MAX_PIECE bytes; a short piece ends the object. */
    while (got < len) {
        size_t piece = len - got < MAX_PIECE ? len - got : MAX_PIECE;
        jobject bb = cb_buffer(env, buf + got, piece, 0);
        jint n;
        if (bb == NULL) {
            rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
            break;
        }
        n = (*env)->CallIntMethod(env, io->io, g_io_read, (jlong)(offset + got), bb);
        (*env)->DeleteLocalRef(env, bb);
        if ((rc = cb_exception(env, 1)) != 0) break;
        if (n < 0 || (size_t)n > piece) {
            rc = cb_contract(env, "read", n, piece);
            break;
        }
        got += (size_t)n;
        if ((size_t)n < piece) break;
    }
    (*env)->PopLocalFrame(env, NULL);
    if (rc == 0) *read_out = got;
    cb_leave(attached);
    return rc;
}

static int32_t cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                              uint64_t *object_size_out) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc = 0;
    jobject bb;
    jlong size = 0;
    jint got = 0;
    if (env == NULL) return IO_NO_JVM;
    if ((*env)->PushLocalFrame(env, 4) != 0) {
        rc = cb_exception(env, 0);
        cb_leave(attached);
        return rc != 0 ? rc : IO_JAVA_EXCEPTION;
    }
    if (len > MAX_PIECE) {
        /* An index this large does not fit one ByteBuffer; the contract allows no fallback
         * from inside the callback, so say so. */
        (*env)->ThrowNew(env, g_IllegalArgumentException,
                         "zarrshard: suffix read larger than a ByteBuffer");
        rc = cb_exception(env, 0);
    } else if ((bb = cb_buffer(env, buf, len, 0)) == NULL) {
        rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
    } else {
        size = (*env)->CallLongMethod(env, io->io, g_io_readSuffix, bb);
        rc = cb_exception(env, 1);
        if (rc == 0 && size < 0) rc = SHARD_IO_NOT_FOUND;
        if (rc == 0) {
            /* The bytes the host put: exactly min(len, size), or the contract is broken. */
            got = (*env)->CallIntMethod(env, bb, g_ByteBuffer_position);
            rc = cb_exception(env, 0);
            if (rc == 0 && (uint64_t)got != ((uint64_t)size < (uint64_t)len ? (uint64_t)size : len))
                rc = cb_contract(env, "readSuffix (bytes put)", got, len);
        }
        (*env)->DeleteLocalRef(env, bb);
    }
    (*env)->PopLocalFrame(env, NULL);
    if (rc == 0) {
        *read_out = (size_t)got;
        *object_size_out = (uint64_t)size;
    }
    cb_leave(attached);
    return rc;
}

static int32_t cb_size(void *ud, uint64_t *size_out) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc;
    jlong size;
    if (env == NULL) return IO_NO_JVM;
    size = (*env)->CallLongMethod(env, io->io, g_io_size);
    rc = cb_exception(env, 1);
    if (rc == 0 && size < 0) rc = SHARD_IO_NOT_FOUND;
    if (rc == 0) *size_out = (uint64_t)size;
    cb_leave(attached);
    return rc;
}

/* A write or truncate that would reach past Long.MAX_VALUE cannot be expressed to a ShardIO
 * (its offsets and lengths are longs): fail it with an IllegalArgumentException as cause,
 * before the host sees a negative number. */
static int32_t cb_past_long(JNIEnv *env, const char *what, uint64_t offset, uint64_t len) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "zarrshard: %s (offset %llu, length %llu) reaches past Long.MAX_VALUE", what,
             (unsigned long long)offset, (unsigned long long)len);
    (*env)->ThrowNew(env, g_IllegalArgumentException, msg);
    return cb_exception(env, 0);
}

/* `method` (ShardIO.write or writeNew) over `len` bytes at `offset`, in pieces of MAX_PIECE. */
static int32_t write_pieces(void *ud, jmethodID method, const char *what, uint64_t offset,
                            const uint8_t *buf, size_t len) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    size_t done = 0;
    int32_t rc = 0;
    if (env == NULL) return IO_NO_JVM;
    if (offset > (uint64_t)INT64_MAX || (uint64_t)len > (uint64_t)INT64_MAX - offset) {
        rc = cb_past_long(env, what, offset, len);
        cb_leave(attached);
        return rc;
    }
    if ((*env)->PushLocalFrame(env, 4) != 0) {
        rc = cb_exception(env, 0);
        cb_leave(attached);
        return rc != 0 ? rc : IO_JAVA_EXCEPTION;
    }
    do {
        size_t piece = len - done < MAX_PIECE ? len - done : MAX_PIECE;
        /* Read-only: the host must not scribble on the library's buffer. */
        jobject bb = cb_buffer(env, buf + done, piece, 1);
        if (bb == NULL) {
            rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
            break;
        }
        (*env)->CallVoidMethod(env, io->io, method, (jlong)(offset + done), bb);
        (*env)->DeleteLocalRef(env, bb);
        if ((rc = cb_exception(env, 0)) != 0) break;
        done += piece;
    } while (done < len);
    (*env)->PopLocalFrame(env, NULL);
    cb_leave(attached);
    return rc;
}

static int32_t cb_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    return write_pieces(ud, g_io_write, "write", offset, buf, len);
}

/* The version-3 new-object callbacks: ShardIO.beginNew, writeNew, commitNew, discardNew. The
 * new object's handle is the jni_io itself (one new object per ShardIO at a time). */
static int32_t cb_create_new(void *ud, void **new_out) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc;
    if (env == NULL) return IO_NO_JVM;
    (*env)->CallVoidMethod(env, io->io, g_io_beginNew);
    rc = cb_exception(env, 0);
    if (rc == 0) *new_out = ud;
    cb_leave(attached);
    return rc;
}

static int32_t cb_write_new(void *ud, void *new_object, uint64_t offset, const uint8_t *buf,
                            size_t len) {
    (void)new_object;
    return write_pieces(ud, g_io_writeNew, "writeNew", offset, buf, len);
}

static int32_t cb_commit_new(void *ud, void *new_object, uint64_t len) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc;
    (void)new_object;
    if (env == NULL) return IO_NO_JVM;
    if (len > (uint64_t)INT64_MAX) {
        rc = cb_past_long(env, "commitNew", 0, len);
        cb_leave(attached);
        return rc;
    }
    (*env)->CallVoidMethod(env, io->io, g_io_commitNew, (jlong)len);
    rc = cb_exception(env, 0);
    cb_leave(attached);
    return rc;
}

/* Returns nothing: an exception is remembered like a callback's (as the cause of a call that
 * fails for another reason) and otherwise dropped. */
static void cb_discard_new(void *ud, void *new_object) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    (void)new_object;
    if (env == NULL) return;
    (*env)->CallVoidMethod(env, io->io, g_io_discardNew);
    cb_exception(env, 0);
    cb_leave(attached);
}

static int32_t cb_truncate(void *ud, uint64_t len) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc;
    if (env == NULL) return IO_NO_JVM;
    if (len > (uint64_t)INT64_MAX) {
        rc = cb_past_long(env, "truncate", 0, len);
        cb_leave(attached);
        return rc;
    }
    (*env)->CallVoidMethod(env, io->io, g_io_truncate, (jlong)len);
    rc = cb_exception(env, 0);
    cb_leave(attached);
    return rc;
}

static int32_t cb_remove(void *ud) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc;
    if (env == NULL) return IO_NO_JVM;
    (*env)->CallVoidMethod(env, io->io, g_io_remove);
    /* Removing a missing object succeeds; NotFound is allowed by the contract. */
    rc = cb_exception(env, 1);
    cb_leave(attached);
    return rc;
}

/* Called once from shard_close: the handle no longer needs the host's ShardIO. */
static void cb_destroy(void *ud) {
    jni_io *io = (jni_io *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    /* Without a JNIEnv the global ref leaks (a ShardIO object stays reachable); nothing else
     * can be done safely. */
    if (env != NULL) {
        if (io->store != NULL) {
            /* ShardStore.release(io): an exception here cannot fail the call any more (destroy
             * returns nothing); it is remembered like a callback's, as the cause of a call
             * that fails for another reason, and otherwise dropped. */
            (*env)->CallVoidMethod(env, io->store->store, g_store_release, io->io);
            cb_exception(env, 0);
        }
        (*env)->DeleteGlobalRef(env, io->io);
    }
    free(io);
    cb_leave(attached);
}

/* The callback table over `io`; `caps` says which optional ShardIO methods to offer. */
static void io_table(shard_io_callbacks *cb, jni_io *io, jint caps) {
    memset(cb, 0, sizeof *cb);
    cb->version = SHARD_IO_VERSION;
    cb->userdata = io;
    cb->read = cb_read;
    cb->read_suffix = (caps & CAP_READ_SUFFIX) ? cb_read_suffix : NULL;
    cb->size = cb_size;
    cb->write = cb_write;
    cb->truncate = (caps & CAP_TRUNCATE) ? cb_truncate : NULL;
    cb->remove = (caps & CAP_REMOVE) ? cb_remove : NULL;
    if (caps & CAP_NEW_OBJECTS) {
        cb->create_new = cb_create_new;
        cb->write_new = cb_write_new;
        cb->commit_new = cb_commit_new;
        cb->discard_new = cb_discard_new;
    }
    cb->destroy = cb_destroy;
}

/* ---- the ShardStore trampolines --------------------------------------------------------- */

/* shard_store_callbacks.open_object: ShardStore.open(key), then the ShardIO's table. The
 * store is opened without SHARD_STORE_THREAD_SAFE, so this runs on the Java thread of the
 * ShardArray call (attached already; cb_enter covers the general case). */
static int32_t store_open_object(void *ud, const char *key, shard_io_callbacks *io_out) {
    jni_store *store = (jni_store *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc = 0;
    jstring jkey;
    jobject host = NULL;
    jint caps = 0;
    jni_io *io;
    if (env == NULL) return IO_NO_JVM;
    if ((*env)->PushLocalFrame(env, 4) != 0) {
        rc = cb_exception(env, 0);
        cb_leave(attached);
        return rc != 0 ? rc : IO_JAVA_EXCEPTION;
    }
    /* Keys are ASCII (a chunk key encoding's prefix, separators and digits), where modified
     * UTF-8 and UTF-8 agree. */
    jkey = (*env)->NewStringUTF(env, key);
    if (jkey == NULL) {
        rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
    } else {
        host = (*env)->CallObjectMethod(env, store->store, g_store_open, jkey);
        rc = cb_exception(env, 0);
    }
    if (rc == 0 && host == NULL) {
        (*env)->ThrowNew(env, g_NullPointerException, "ShardStore.open returned null");
        rc = cb_exception(env, 0);
    }
    if (rc == 0) {
        caps = (*env)->CallStaticIntMethod(env, g_Capabilities, g_Capabilities_of, host);
        rc = cb_exception(env, 0);
    }
    if (rc == 0) {
        if ((io = (jni_io *)calloc(1, sizeof *io)) == NULL) {
            (*env)->ThrowNew(env, g_OutOfMemoryError, "zarrshard_jni: malloc failed");
            rc = cb_exception(env, 0);
        } else if ((io->io = (*env)->NewGlobalRef(env, host)) == NULL) {
            free(io);
            (*env)->ThrowNew(env, g_OutOfMemoryError, "zarrshard_jni: NewGlobalRef failed");
            rc = cb_exception(env, 0);
        } else {
            /* From here the library owns io (cb_destroy). */
            io->store = store;
            io_table(io_out, io, caps);
        }
    }
    (*env)->PopLocalFrame(env, NULL);
    cb_leave(attached);
    return rc;
}

/* shard_store_callbacks.list: ShardStore.list(prefix) through Listing.of, which decodes the
 * prefix from UTF-8 and returns null (the store cannot list) or the keys as
 * {byte[] UTF-8 of every key concatenated, int[] byte length of each}: encoded by Java's own
 * UTF-8 encoder (JNI's modified UTF-8 is not UTF-8 for supplementary characters), and two
 * local references however many keys there are. Runs on the thread of the ShardArray call
 * (the library always lists there); an exception from list becomes IO_JAVA_EXCEPTION and the
 * call's cause, exactly as from ShardStore.open. on_key is the library's and makes no JNI call,
 * so the arrays' elements are held across it. */
static int32_t store_list(void *ud, const char *prefix, shard_key_fn on_key, void *list_state) {
    jni_store *store = (jni_store *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    int32_t rc = 0;
    size_t prefix_len = strlen(prefix);
    jbyteArray jprefix;
    jobjectArray result = NULL;
    jbyteArray keys = NULL;
    jintArray lens = NULL;
    jbyte *key_bytes = NULL;
    jint *key_lens = NULL;
    jsize count = 0, total = 0, i;
    size_t at = 0;
    if (env == NULL) return IO_NO_JVM;
    if ((*env)->PushLocalFrame(env, 8) != 0) {
        rc = cb_exception(env, 0);
        cb_leave(attached);
        return rc != 0 ? rc : IO_JAVA_EXCEPTION;
    }
    if (prefix_len > (size_t)INT32_MAX) {
        (*env)->ThrowNew(env, g_IllegalArgumentException, "zarrshard_jni: list prefix too long");
        rc = cb_exception(env, 0);
        goto out;
    }
    if ((jprefix = (*env)->NewByteArray(env, (jsize)prefix_len)) == NULL) {
        rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
        goto out;
    }
    if (prefix_len > 0)
        (*env)->SetByteArrayRegion(env, jprefix, 0, (jsize)prefix_len, (const jbyte *)prefix);
    result = (jobjectArray)(*env)->CallStaticObjectMethod(env, g_Listing, g_Listing_of,
                                                          store->store, jprefix);
    if ((rc = cb_exception(env, 0)) != 0) goto out;
    if (result == NULL) {
        rc = SHARD_STORE_CANNOT_LIST;
        goto out;
    }
    keys = (jbyteArray)(*env)->GetObjectArrayElement(env, result, 0);
    if ((rc = cb_exception(env, 0)) != 0) goto out;
    lens = (jintArray)(*env)->GetObjectArrayElement(env, result, 1);
    if ((rc = cb_exception(env, 0)) != 0) goto out;
    if (keys == NULL || lens == NULL) { /* Listing.of never does this */
        rc = IO_JAVA_EXCEPTION;
        goto out;
    }
    count = (*env)->GetArrayLength(env, lens);
    total = (*env)->GetArrayLength(env, keys);
    /* Get<Type>ArrayElements, not the critical variants: copies at worst. JNI_ABORT below:
     * nothing is written back. */
    if (count > 0 && (key_lens = (*env)->GetIntArrayElements(env, lens, NULL)) == NULL) {
        rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
        goto out;
    }
    if (total > 0 && (key_bytes = (*env)->GetByteArrayElements(env, keys, NULL)) == NULL) {
        rc = (*env)->ExceptionCheck(env) ? cb_exception(env, 0) : IO_JAVA_EXCEPTION;
        goto out;
    }
    for (i = 0; i < count; i++) {
        size_t len = (size_t)key_lens[i];
        /* Listing.of never does this; were it to, a listing cut short would pass stored shards
         * over as missing, so the call fails instead. */
        if (key_lens[i] < 0 || len > (size_t)total - at) {
            rc = IO_JAVA_EXCEPTION;
            break;
        }
        on_key(list_state, key_bytes != NULL ? (const char *)key_bytes + at : "", len);
        at += len;
    }
out:
    if (key_bytes != NULL) (*env)->ReleaseByteArrayElements(env, keys, key_bytes, JNI_ABORT);
    if (key_lens != NULL) (*env)->ReleaseIntArrayElements(env, lens, key_lens, JNI_ABORT);
    (*env)->PopLocalFrame(env, NULL);
    cb_leave(attached);
    return rc;
}

/* shard_store_callbacks.destroy, from shard_array_close. */
static void store_destroy(void *ud) {
    jni_store *store = (jni_store *)ud;
    int attached;
    JNIEnv *env = cb_enter(&attached);
    if (env != NULL) (*env)->DeleteGlobalRef(env, store->store);
    free(store);
    cb_leave(attached);
}

/* The C table over `store` (version 2, with list: store_list), without
 * SHARD_STORE_THREAD_SAFE (every callback on the calling Java thread). `owned`: the library
 * owns `store` (store_destroy at shard_array_close); otherwise it is borrowed for one call and
 * the library calls no destroy. */
static shard_store_callbacks store_table(jni_store *store, int owned) {
    shard_store_callbacks cb;
    memset(&cb, 0, sizeof cb);
    cb.version = SHARD_STORE_VERSION;
    cb.flags = 0;
    cb.userdata = store;
    cb.open_object = store_open_object;
    cb.destroy = owned ? store_destroy : NULL;
    cb.list = store_list;
    return cb;
}

/* ---- library ---------------------------------------------------------------------------- */

static jclass global_class(JNIEnv *env, const char *name) {
    jclass local = (*env)->FindClass(env, name);
    jclass global;
    if (local == NULL) return NULL;
    global = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return global;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    JNIEnv *env;
    jclass io;
    (void)reserved;
    g_vm = vm;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    if ((g_ShardException = global_class(env, "io/zarrshard/ShardException")) == NULL ||
        (g_NotFound = global_class(env, "io/zarrshard/ShardIO$NotFound")) == NULL ||
        (g_NullPointerException = global_class(env, "java/lang/NullPointerException")) == NULL ||
        (g_IllegalArgumentException = global_class(env, "java/lang/IllegalArgumentException")) ==
            NULL ||
        (g_IllegalStateException = global_class(env, "java/lang/IllegalStateException")) == NULL ||
        (g_OutOfMemoryError = global_class(env, "java/lang/OutOfMemoryError")) == NULL ||
        (g_ByteBuffer = global_class(env, "java/nio/ByteBuffer")) == NULL)
        return JNI_ERR;
    g_ShardException_fromNative =
        (*env)->GetStaticMethodID(env, g_ShardException, "fromNative",
                                  "(I[BILjava/lang/Throwable;)Lio/zarrshard/ShardException;");
    if (g_ShardException_fromNative == NULL) return JNI_ERR;
    g_ByteBuffer_asReadOnlyBuffer =
        (*env)->GetMethodID(env, g_ByteBuffer, "asReadOnlyBuffer", "()Ljava/nio/ByteBuffer;");
    if (g_ByteBuffer_asReadOnlyBuffer == NULL) return JNI_ERR;
    g_ByteBuffer_position = (*env)->GetMethodID(env, g_ByteBuffer, "position", "()I");
    if (g_ByteBuffer_position == NULL) return JNI_ERR;
    if ((io = (*env)->FindClass(env, "io/zarrshard/ShardIO")) == NULL) return JNI_ERR;
    g_io_read = (*env)->GetMethodID(env, io, "read", "(JLjava/nio/ByteBuffer;)I");
    if (g_io_read != NULL)
        g_io_readSuffix = (*env)->GetMethodID(env, io, "readSuffix", "(Ljava/nio/ByteBuffer;)J");
    if (g_io_readSuffix != NULL) g_io_size = (*env)->GetMethodID(env, io, "size", "()J");
    if (g_io_size != NULL)
        g_io_write = (*env)->GetMethodID(env, io, "write", "(JLjava/nio/ByteBuffer;)V");
    if (g_io_write != NULL) g_io_truncate = (*env)->GetMethodID(env, io, "truncate", "(J)V");
    if (g_io_truncate != NULL) g_io_remove = (*env)->GetMethodID(env, io, "remove", "()V");
    if (g_io_remove != NULL) g_io_beginNew = (*env)->GetMethodID(env, io, "beginNew", "()V");
    if (g_io_beginNew != NULL)
        g_io_writeNew = (*env)->GetMethodID(env, io, "writeNew", "(JLjava/nio/ByteBuffer;)V");
    if (g_io_writeNew != NULL) g_io_commitNew = (*env)->GetMethodID(env, io, "commitNew", "(J)V");
    if (g_io_commitNew != NULL) g_io_discardNew = (*env)->GetMethodID(env, io, "discardNew", "()V");
    (*env)->DeleteLocalRef(env, io);
    if (g_io_discardNew == NULL) return JNI_ERR;
    if ((g_Capabilities = global_class(env, "io/zarrshard/Capabilities")) == NULL) return JNI_ERR;
    g_Capabilities_of =
        (*env)->GetStaticMethodID(env, g_Capabilities, "of", "(Lio/zarrshard/ShardIO;)I");
    if (g_Capabilities_of == NULL) return JNI_ERR;
    if ((io = (*env)->FindClass(env, "io/zarrshard/ShardStore")) == NULL) return JNI_ERR;
    g_store_open =
        (*env)->GetMethodID(env, io, "open", "(Ljava/lang/String;)Lio/zarrshard/ShardIO;");
    if (g_store_open != NULL)
        g_store_release = (*env)->GetMethodID(env, io, "release", "(Lio/zarrshard/ShardIO;)V");
    (*env)->DeleteLocalRef(env, io);
    if (g_store_release == NULL) return JNI_ERR;
    if ((io = (*env)->FindClass(env, "java/io/OutputStream")) == NULL) return JNI_ERR;
    g_OutputStream_write = (*env)->GetMethodID(env, io, "write", "([BII)V");
    (*env)->DeleteLocalRef(env, io);
    if (g_OutputStream_write == NULL) return JNI_ERR;
    if ((g_Listing = global_class(env, "io/zarrshard/Listing")) == NULL) return JNI_ERR;
    g_Listing_of = (*env)->GetStaticMethodID(env, g_Listing, "of",
                                             "(Lio/zarrshard/ShardStore;[B)[Ljava/lang/Object;");
    return g_Listing_of != NULL ? JNI_VERSION_1_8 : JNI_ERR;
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_version(JNIEnv *env, jclass cls) {
    const char *v = shard_version();
    (void)cls;
    return new_bytes(env, v, strlen(v));
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_statusString(JNIEnv *env, jclass cls,
                                                                   jint status) {
    const char *s = shard_status_str((uint32_t)status);
    (void)cls;
    return new_bytes(env, s, strlen(s));
}

/* ---- codec ------------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_codecFromZarrJson(JNIEnv *env, jclass cls,
                                                                   jbyteArray json) {
    size_t len = 0;
    uint8_t *buf = get_bytes(env, json, &len);
    shard_codec *codec = NULL;
    shard_status st;
    scope s;
    (void)cls;
    if (buf == NULL) return 0;
    scope_begin(&s);
    st = shard_codec_from_zarr_json((const char *)buf, len, &codec);
    free(buf);
    return finish(env, &s, st) ? (jlong)(uintptr_t)codec : 0;
}

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_codecFromConfig(JNIEnv *env, jclass cls,
                                                                 jbyteArray config,
                                                                 jbyteArray data_type,
                                                                 jlongArray shape,
                                                                 jbyteArray fill) {
    size_t config_len = 0, dt_len = 0, fill_len = 0;
    uint8_t *config_buf = NULL, *dt_buf = NULL, *fill_buf = NULL;
    coords_buf c;
    shard_codec *codec = NULL;
    shard_status st;
    scope s;
    jlong result = 0;
    (void)cls;
    if (!get_coords(env, shape, &c)) return 0;
    if ((config_buf = get_bytes(env, config, &config_len)) == NULL ||
        (dt_buf = get_bytes(env, data_type, &dt_len)) == NULL ||
        (fill_buf = get_bytes(env, fill, &fill_len)) == NULL)
        goto out;
    scope_begin(&s);
    st = shard_codec_from_config((const char *)config_buf, config_len, (const char *)dt_buf,
                                 dt_len, c.v, c.n, (const char *)fill_buf, fill_len, &codec);
    if (finish(env, &s, st)) result = (jlong)(uintptr_t)codec;
out:
    free(config_buf);
    free(dt_buf);
    free(fill_buf);
    free_coords(&c);
    return result;
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_codecFree(JNIEnv *env, jclass cls, jlong codec) {
    (void)env;
    (void)cls;
    shard_codec_free((shard_codec *)(uintptr_t)codec);
}

/* Scalar getters, by number (Native.CODEC_*). */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_codecLong(JNIEnv *env, jclass cls, jlong codec,
                                                           jint which) {
    size_t z = 0;
    uint64_t u = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, codec)) return 0;
    scope_begin(&s);
    switch (which) {
    case 0: st = shard_codec_rank(CODEC(codec), &z); break;
    case 1: st = shard_codec_num_chunks(CODEC(codec), &u); break;
    case 2: st = shard_codec_inner_chunk_nbytes(CODEC(codec), &z); break;
    case 3: st = shard_codec_index_nbytes(CODEC(codec), &u); break;
    case 4: st = shard_codec_element_nbytes(CODEC(codec), &z); break;
    default:
        scope_end(env, &s);
        throw_new(env, g_IllegalArgumentException, "codecLong: unknown getter");
        return 0;
    }
    if (!finish(env, &s, st)) return 0;
    return which == 1 || which == 3 ? (jlong)u : (jlong)z;
}

/* Shape getters, by number (Native.SHAPE_*). */
JNIEXPORT jlongArray JNICALL Java_io_zarrshard_Native_codecShape(JNIEnv *env, jclass cls,
                                                                 jlong codec, jint which,
                                                                 jint rank) {
    uint64_t *v;
    shard_status st;
    scope s;
    jlongArray result = NULL;
    (void)cls;
    if (!live(env, codec)) return NULL;
    if (rank < 0) {
        throw_new(env, g_IllegalArgumentException, "negative rank");
        return NULL;
    }
    if ((v = (uint64_t *)malloc((size_t)rank * sizeof(uint64_t) + 1)) == NULL) {
        throw_oom(env);
        return NULL;
    }
    scope_begin(&s);
    switch (which) {
    case 0: st = shard_codec_shard_shape(CODEC(codec), v, (size_t)rank); break;
    case 1: st = shard_codec_inner_chunk_shape(CODEC(codec), v, (size_t)rank); break;
    case 2: st = shard_codec_chunks_per_shard(CODEC(codec), v, (size_t)rank); break;
    case 3: st = shard_codec_array_shape(CODEC(codec), v, (size_t)rank); break;
    case 4: st = shard_codec_grid_shape(CODEC(codec), v, (size_t)rank); break;
    default:
        scope_end(env, &s);
        free(v);
        throw_new(env, g_IllegalArgumentException, "codecShape: unknown getter");
        return NULL;
    }
    if (finish(env, &s, st)) result = new_longs(env, v, (size_t)rank);
    free(v);
    return result;
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_codecFillValue(JNIEnv *env, jclass cls,
                                                                     jlong codec, jint nbytes) {
    uint8_t *v;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (!live(env, codec)) return NULL;
    if (nbytes < 0) {
        throw_new(env, g_IllegalArgumentException, "negative size");
        return NULL;
    }
    if ((v = (uint8_t *)malloc((size_t)nbytes + 1)) == NULL) {
        throw_oom(env);
        return NULL;
    }
    scope_begin(&s);
    st = shard_codec_fill_value(CODEC(codec), v, (size_t)nbytes);
    if (finish(env, &s, st)) result = new_bytes(env, v, (size_t)nbytes);
    free(v);
    return result;
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_codecDataType(JNIEnv *env, jclass cls,
                                                                    jlong codec) {
    size_t len = 0, written = 0;
    char *buf;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (!live(env, codec)) return NULL;
    scope_begin(&s);
    st = shard_codec_data_type(CODEC(codec), NULL, 0, &len);
    if (!finish(env, &s, st)) return NULL;
    if ((buf = (char *)malloc(len + 1)) == NULL) {
        throw_oom(env);
        return NULL;
    }
    scope_begin(&s);
    st = shard_codec_data_type(CODEC(codec), buf, len + 1, &written);
    if (finish(env, &s, st)) result = new_bytes(env, buf, written);
    free(buf);
    return result;
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_codecShardKey(JNIEnv *env, jclass cls,
                                                                    jlong codec,
                                                                    jlongArray coords) {
    size_t len = 0, written = 0;
    char *buf;
    coords_buf c;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (!live(env, codec) || !get_coords(env, coords, &c)) return NULL;
    scope_begin(&s);
    st = shard_codec_shard_key(CODEC(codec), c.v, c.n, NULL, 0, &len);
    if (finish(env, &s, st)) {
        if ((buf = (char *)malloc(len + 1)) == NULL) {
            throw_oom(env);
        } else {
            scope_begin(&s);
            st = shard_codec_shard_key(CODEC(codec), c.v, c.n, buf, len + 1, &written);
            if (finish(env, &s, st)) result = new_bytes(env, buf, written);
            free(buf);
        }
    }
    free_coords(&c);
    return result;
}

/* ---- shard --------------------------------------------------------------------------- */

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_shardOpen(JNIEnv *env, jclass cls, jlong codec,
                                                           jobject host, jint mode, jint flags,
                                                           jint caps) {
    shard_io_callbacks cb;
    shard_handle *handle = NULL;
    jni_io *io;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, codec)) return 0;
    if (host == NULL) {
        throw_new(env, g_NullPointerException, "io");
        return 0;
    }
    if ((io = (jni_io *)calloc(1, sizeof *io)) == NULL) {
        throw_oom(env);
        return 0;
    }
    if ((io->io = (*env)->NewGlobalRef(env, host)) == NULL) {
        free(io);
        throw_oom(env);
        return 0;
    }
    io_table(&cb, io, caps);
    scope_begin(&s);
    st = shard_open_ex(CODEC(codec), &cb, (uint32_t)mode, (uint32_t)flags, &handle);
    if (st != SHARD_OK) {
        /* A failed open leaves userdata with us: release the ShardIO here. */
        (*env)->DeleteGlobalRef(env, io->io);
        free(io);
    }
    return finish(env, &s, st) ? (jlong)(uintptr_t)handle : 0;
}

/* Returns the first exception a ShardIO callback threw during the close (the rollback of an
 * unfinished UPDATE_APPEND update calls truncate/remove), or NULL: shard_close returns nothing,
 * so without this a failed rollback, which leaves the object with the bytes the update
 * appended, would go unnoticed. */
JNIEXPORT jthrowable JNICALL Java_io_zarrshard_Native_shardClose(JNIEnv *env, jclass cls,
                                                                jlong shard) {
    scope s;
    (void)cls;
    scope_begin(&s);
    /* destroy (cb_destroy) runs in here, on this thread. */
    shard_close((shard_handle *)(uintptr_t)shard);
    return scope_end(env, &s);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_readChunk(JNIEnv *env, jclass cls, jlong shard,
                                                          jlongArray coords, jbyteArray out) {
    coords_buf c;
    uint8_t *buf;
    jsize n;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    if (out == NULL) {
        throw_new(env, g_NullPointerException, "out");
        goto out;
    }
    n = (*env)->GetArrayLength(env, out);
    if ((buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1)) == NULL) {
        throw_oom(env);
        goto out;
    }
    scope_begin(&s);
    st = shard_read_chunk(SHARD(shard), c.v, c.n, buf, (size_t)n);
    if (finish(env, &s, st) && n > 0) (*env)->SetByteArrayRegion(env, out, 0, n, (jbyte *)buf);
    free(buf);
out:
    free_coords(&c);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_readChunkDirect(JNIEnv *env, jclass cls,
                                                                jlong shard, jlongArray coords,
                                                                jobject buffer, jint pos,
                                                                jint len) {
    coords_buf c;
    uint8_t *addr;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    if ((addr = direct_range(env, buffer, pos, len)) != NULL) {
        scope_begin(&s);
        st = shard_read_chunk(SHARD(shard), c.v, c.n, addr, (size_t)len);
        finish(env, &s, st);
    }
    free_coords(&c);
}

/* coords holds count * rank values; out receives count chunks. The count is passed, not
 * derived from the coordinates: a rank-0 shard has count chunks and no coordinate. */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_readChunks(JNIEnv *env, jclass cls, jlong shard,
                                                           jlongArray coords, jint count,
                                                           jint rank, jobject buffer, jint pos,
                                                           jint len) {
    coords_buf c;
    uint8_t *addr;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    if (count < 0 || rank < 0 || (uint64_t)c.n != (uint64_t)count * (uint64_t)rank) {
        throw_new(env, g_IllegalArgumentException, "coordinates are not count x rank values");
    } else if ((addr = direct_range(env, buffer, pos, len)) != NULL) {
        scope_begin(&s);
        st = shard_read_chunks(SHARD(shard), c.v, (size_t)count, (size_t)rank, addr,
                               (size_t)len);
        finish(env, &s, st);
    }
    free_coords(&c);
}

/* gap >= 0 (Shard.setCoalesceGap checks); write handles: SHARD_ERR_INVALID_STATE. */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_setCoalesceGap(JNIEnv *env, jclass cls,
                                                              jlong shard, jlong gap) {
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard)) return;
    scope_begin(&s);
    st = shard_set_coalesce_gap(SHARD(shard), (uint64_t)gap);
    (void)finish(env, &s, st);
}

JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_readChunkRaw(JNIEnv *env, jclass cls,
                                                                   jlong shard,
                                                                   jlongArray coords) {
    coords_buf c;
    size_t size = 0, got = 0;
    uint8_t *buf;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return NULL;
    /* The size query: the library holds the size the index names to its memory limit
     * (SHARD_ERR_INVALID_ARGUMENT past it, a ShardException here), so a damaged entry never
     * reaches malloc. What remains ours is the Java array limit. */
    scope_begin(&s);
    st = shard_read_chunk_raw(SHARD(shard), c.v, c.n, NULL, 0, &size);
    if (!finish(env, &s, st)) goto out;
    if (size == 0) {
        result = (*env)->NewByteArray(env, 0);
        goto out;
    }
    if (size > (size_t)INT32_MAX) {
        throw_new(env, g_IllegalArgumentException, "encoded chunk larger than a Java array");
        goto out;
    }
    if ((buf = (uint8_t *)malloc(size)) == NULL) {
        throw_oom(env);
        goto out;
    }
    scope_begin(&s);
    st = shard_read_chunk_raw(SHARD(shard), c.v, c.n, buf, size, &got);
    if (finish(env, &s, st)) result = new_bytes(env, buf, got);
    free(buf);
out:
    free_coords(&c);
    return result;
}

/* {offset, nbytes, empty ? 1 : 0} */
JNIEXPORT jlongArray JNICALL Java_io_zarrshard_Native_chunkInfo(JNIEnv *env, jclass cls,
                                                                jlong shard, jlongArray coords) {
    coords_buf c;
    shard_chunk_location loc;
    shard_status st;
    scope s;
    jlongArray result = NULL;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return NULL;
    scope_begin(&s);
    st = shard_chunk_info(SHARD(shard), c.v, c.n, &loc);
    if (finish(env, &s, st)) {
        uint64_t v[3];
        v[0] = loc.offset;
        v[1] = loc.nbytes;
        v[2] = loc.empty ? 1 : 0;
        result = new_longs(env, v, 3);
    }
    free_coords(&c);
    return result;
}

typedef shard_status (*write_fn)(const shard_handle *, const uint64_t *, size_t, const uint8_t *,
                                 size_t);

static void write_bytes(JNIEnv *env, write_fn fn, jlong shard, jlongArray coords,
                        jbyteArray data) {
    coords_buf c;
    uint8_t *buf;
    size_t len = 0;
    shard_status st;
    scope s;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    if ((buf = get_bytes(env, data, &len)) != NULL) {
        scope_begin(&s);
        st = fn(SHARD(shard), c.v, c.n, buf, len);
        finish(env, &s, st);
        free(buf);
    }
    free_coords(&c);
}

static void write_direct(JNIEnv *env, write_fn fn, jlong shard, jlongArray coords,
                         jobject buffer, jint pos, jint len) {
    coords_buf c;
    uint8_t *addr;
    shard_status st;
    scope s;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    if ((addr = direct_range(env, buffer, pos, len)) != NULL) {
        scope_begin(&s);
        st = fn(SHARD(shard), c.v, c.n, addr, (size_t)len);
        finish(env, &s, st);
    }
    free_coords(&c);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_writeChunk(JNIEnv *env, jclass cls, jlong shard,
                                                           jlongArray coords, jbyteArray data) {
    (void)cls;
    write_bytes(env, shard_write_chunk, shard, coords, data);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_writeChunkDirect(JNIEnv *env, jclass cls,
                                                                 jlong shard, jlongArray coords,
                                                                 jobject buffer, jint pos,
                                                                 jint len) {
    (void)cls;
    write_direct(env, shard_write_chunk, shard, coords, buffer, pos, len);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_writeChunkRaw(JNIEnv *env, jclass cls,
                                                              jlong shard, jlongArray coords,
                                                              jbyteArray data) {
    (void)cls;
    write_bytes(env, shard_write_chunk_raw, shard, coords, data);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_writeChunkRawDirect(JNIEnv *env, jclass cls,
                                                                    jlong shard,
                                                                    jlongArray coords,
                                                                    jobject buffer, jint pos,
                                                                    jint len) {
    (void)cls;
    write_direct(env, shard_write_chunk_raw, shard, coords, buffer, pos, len);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_eraseChunk(JNIEnv *env, jclass cls, jlong shard,
                                                           jlongArray coords) {
    coords_buf c;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard) || !get_coords(env, coords, &c)) return;
    scope_begin(&s);
    st = shard_erase_chunk(SHARD(shard), c.v, c.n);
    finish(env, &s, st);
    free_coords(&c);
}

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_finalizeShard(JNIEnv *env, jclass cls,
                                                               jlong shard) {
    uint64_t size = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, shard)) return 0;
    scope_begin(&s);
    st = shard_finalize(SHARD(shard), &size);
    return finish(env, &s, st) ? (jlong)size : 0;
}

/* ---- array ---------------------------------------------------------------------------- */

static const shard_array *ARRAY(jlong p) { return (const shard_array *)(uintptr_t)p; }

/* The store table is opened without SHARD_STORE_THREAD_SAFE: every ShardStore and ShardIO
 * callback then runs on the calling Java thread (a valid JNIEnv, the per-thread cause slot). */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_arrayOpen(JNIEnv *env, jclass cls,
                                                           jbyteArray json, jobject host) {
    shard_store_callbacks cb;
    shard_array *array = NULL;
    jni_store *store;
    uint8_t *buf;
    size_t len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (host == NULL) {
        throw_new(env, g_NullPointerException, "store");
        return 0;
    }
    if ((buf = get_bytes(env, json, &len)) == NULL) return 0;
    if ((store = (jni_store *)calloc(1, sizeof *store)) == NULL) {
        free(buf);
        throw_oom(env);
        return 0;
    }
    if ((store->store = (*env)->NewGlobalRef(env, host)) == NULL) {
        free(store);
        free(buf);
        throw_oom(env);
        return 0;
    }
    cb = store_table(store, 1);
    scope_begin(&s);
    st = shard_array_open((const char *)buf, len, &cb, &array);
    free(buf);
    if (st != SHARD_OK) {
        /* A failed open leaves userdata with us. */
        (*env)->DeleteGlobalRef(env, store->store);
        free(store);
    }
    return finish(env, &s, st) ? (jlong)(uintptr_t)array : 0;
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayClose(JNIEnv *env, jclass cls, jlong array) {
    (void)env;
    (void)cls;
    /* store_destroy runs in here, on this thread. */
    shard_array_close((shard_array *)(uintptr_t)array);
}

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_arrayCodec(JNIEnv *env, jclass cls,
                                                            jlong array) {
    shard_codec *codec = NULL;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return 0;
    scope_begin(&s);
    st = shard_array_codec(ARRAY(array), &codec);
    return finish(env, &s, st) ? (jlong)(uintptr_t)codec : 0;
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arraySetCoalesceGap(JNIEnv *env, jclass cls,
                                                                   jlong array, jlong gap) {
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return;
    scope_begin(&s);
    st = shard_array_set_coalesce_gap(ARRAY(array), (uint64_t)gap);
    (void)finish(env, &s, st);
}

/* The shim's own receivers of library output (shard_sink_fn for arrayRefs, shard_problem_fn
 * for arrayVerify) gather it natively, calling no JNI, and stop the call with one of these
 * codes (the library then reports SHARD_ERR_IO with it; the shim throws OutOfMemoryError or
 * IllegalArgumentException instead, and no ShardException). What they gather stays within a
 * Java array's length, RECEIVED_MAX elements. */
#define RECEIVER_OOM (-3)
#define RECEIVER_TOO_LARGE (-4)
#define RECEIVED_MAX ((size_t)INT32_MAX - 8)

/* Room for `add` more elements of `elem` bytes after `len` in *p (capacity *cap, doubling from
 * `first`, capped at RECEIVED_MAX); 0, RECEIVER_TOO_LARGE or RECEIVER_OOM. */
static int32_t receiver_grow(void **p, size_t *cap, size_t len, size_t add, size_t elem,
                             size_t first) {
    size_t need, c;
    void *grown;
    if (add > RECEIVED_MAX - len) return RECEIVER_TOO_LARGE;
    need = len + add;
    if (need <= *cap) return 0;
    c = *cap > 0 ? *cap : first;
    while (c < need) c = c > RECEIVED_MAX / 2 ? RECEIVED_MAX : c * 2;
    if ((grown = realloc(*p, c * elem)) == NULL) return RECEIVER_OOM;
    *p = grown;
    *cap = c;
    return 0;
}

/* After a library call a receiver stopped with `failed` (not 0): the shim's own failure, not
 * the store's, so an exception the scope holds is not what the call failed for and is dropped;
 * throws OutOfMemoryError, or IllegalArgumentException(too_large). */
static void receiver_failed(JNIEnv *env, scope *s, int32_t failed, const char *too_large) {
    jthrowable cause = scope_end(env, s);
    if (cause != NULL) (*env)->DeleteLocalRef(env, cause);
    if (failed == RECEIVER_OOM)
        throw_oom(env);
    else
        throw_new(env, g_IllegalArgumentException, too_large);
}

/* The kerchunk reference set as shard_array_refs_write hands it over: the pieces appended to
 * a malloc'd buffer that grows as they come (the library builds the whole set, one index read
 * per shard, before the first piece). */
typedef struct {
    char *data;
    size_t len, cap;
    int32_t failed; /* 0, or the code the sink returned: RECEIVER_OOM or RECEIVER_TOO_LARGE */
} refs_text;

/* shard_sink_fn: runs on the thread of arrayRefs, inside the library call; calls no JNI. */
static int32_t refs_sink(void *ud, const uint8_t *data, size_t len) {
    refs_text *t = (refs_text *)ud;
    /* Doubling from one 64 KiB piece. */
    int32_t rc = receiver_grow((void **)&t->data, &t->cap, t->len, len, 1, 65536);
    if (rc != 0) {
        t->failed = rc;
        return rc;
    }
    if (len > 0) memcpy(t->data + t->len, data, len);
    t->len += len;
    return 0;
}

/* The kerchunk reference set as UTF-8 bytes, from one shard_array_refs_write call (each shard
 * index read once). name NULL is the root, (NULL, 0); format and zarr_format go to the library
 * as given, which refuses what it does not know (a negative int is a huge uint32_t). */
JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_arrayRefs(JNIEnv *env, jclass cls,
                                                                jlong array, jint format,
                                                                jint zarr_format, jbyteArray url,
                                                                jbyteArray name) {
    uint8_t *url_buf = NULL, *name_buf = NULL;
    size_t url_len = 0, name_len = 0;
    refs_text text;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    memset(&text, 0, sizeof text);
    if (!live(env, array)) return NULL;
    if ((url_buf = get_bytes(env, url, &url_len)) == NULL) return NULL;
    if (name != NULL && (name_buf = get_bytes(env, name, &name_len)) == NULL) goto out;
    scope_begin(&s);
    st = shard_array_refs_write(ARRAY(array), (uint32_t)format, (uint32_t)zarr_format,
                                (const char *)url_buf, url_len, (const char *)name_buf, name_len,
                                refs_sink, &text);
    if (text.failed != 0) {
        /* No ShardIO failed: the set was whole before the first piece. */
        receiver_failed(env, &s, text.failed, "reference set larger than a Java array");
        goto out;
    }
    if (finish(env, &s, st)) result = new_bytes(env, text.data, text.len);
out:
    free(text.data);
    free(url_buf);
    free(name_buf);
    return result;
}

/* The kerchunk reference set as shard_array_refs_stream hands it over, as the shards are read:
 * each piece copied into one reused Java array and written with out.write(buf, 0, n). */
#define REFS_PIECE 65536
typedef struct {
    JNIEnv *env;
    jobject out;
    jbyteArray buf;   /* REFS_PIECE bytes */
    jthrowable threw; /* what out.write threw (a global ref), or NULL */
    int failed;       /* out.write threw (`threw` NULL: keeping it ran out of memory) */
} refs_stream;

/* shard_sink_fn: runs on the thread of arrayRefsStream, inside the library call (the library
 * calls its sink there), so that thread's JNIEnv is the one to use. An exception from
 * out.write is cleared (it must not stay pending while the library runs) and kept; the
 * non-zero return stops the call and the library calls the sink no more. */
static int32_t refs_stream_sink(void *ud, const uint8_t *data, size_t len) {
    refs_stream *t = (refs_stream *)ud;
    JNIEnv *env = t->env;
    while (len > 0) {
        jsize n = (jsize)(len < REFS_PIECE ? len : REFS_PIECE);
        jthrowable exc;
        (*env)->SetByteArrayRegion(env, t->buf, 0, n, (const jbyte *)data);
        if (!(*env)->ExceptionCheck(env))
            (*env)->CallVoidMethod(env, t->out, g_OutputStream_write, t->buf, (jint)0, (jint)n);
        if ((*env)->ExceptionCheck(env)) {
            exc = (*env)->ExceptionOccurred(env);
            (*env)->ExceptionClear(env);
            if (exc != NULL) {
                t->threw = (jthrowable)(*env)->NewGlobalRef(env, exc);
                (*env)->DeleteLocalRef(env, exc);
            }
            if ((*env)->ExceptionCheck(env)) (*env)->ExceptionClear(env);
            t->failed = 1;
            return IO_JAVA_EXCEPTION;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The kerchunk reference set written to `out` as the shards are read (one
 * shard_array_refs_stream call). What out.write threw is rethrown as it was; when NewGlobalRef
 * could not keep it, an OutOfMemoryError. Other failures: ShardException, as arrayRefs. */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayRefsStream(JNIEnv *env, jclass cls,
                                                               jlong array, jint format,
                                                               jint zarr_format, jbyteArray url,
                                                               jbyteArray name, jobject out) {
    uint8_t *url_buf = NULL, *name_buf = NULL;
    size_t url_len = 0, name_len = 0;
    refs_stream t;
    shard_status st;
    scope s;
    jthrowable cause;
    (void)cls;
    memset(&t, 0, sizeof t);
    if (!live(env, array)) return;
    if ((url_buf = get_bytes(env, url, &url_len)) == NULL) return;
    if (name != NULL && (name_buf = get_bytes(env, name, &name_len)) == NULL) goto out;
    if ((t.buf = (*env)->NewByteArray(env, REFS_PIECE)) == NULL) goto out;
    t.env = env;
    t.out = out;
    scope_begin(&s);
    st = shard_array_refs_stream(ARRAY(array), (uint32_t)format, (uint32_t)zarr_format,
                                 (const char *)url_buf, url_len, (const char *)name_buf, name_len,
                                 refs_stream_sink, &t);
    if (t.failed) {
        /* The sink stopped the call: no ShardIO failed after it. */
        cause = scope_end(env, &s);
        if (cause != NULL) (*env)->DeleteLocalRef(env, cause);
        if (t.threw != NULL)
            (*env)->Throw(env, t.threw);
        else
            throw_oom(env);
    } else {
        finish(env, &s, st);
    }
out:
    if (t.threw != NULL) (*env)->DeleteGlobalRef(env, t.threw);
    if (t.buf != NULL) (*env)->DeleteLocalRef(env, t.buf);
    free(url_buf);
    free(name_buf);
}

/* The Parquet reference set written through the host store `out`, borrowed for the call: a
 * table over it without SHARD_STORE_THREAD_SAFE (every callback on this thread, as for
 * arrayOpen's store) and without destroy (the library never calls it for `out`; the global
 * ref is deleted here). record_size >= 0 (ShardArray checks). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayRefsParquet(JNIEnv *env, jclass cls,
                                                                jlong array, jbyteArray url,
                                                                jbyteArray name,
                                                                jlong record_size,
                                                                jobject out) {
    uint8_t *url_buf = NULL, *name_buf = NULL;
    size_t url_len = 0, name_len = 0;
    shard_store_callbacks cb;
    jni_store store;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return;
    if (out == NULL) {
        throw_new(env, g_NullPointerException, "out");
        return;
    }
    if ((url_buf = get_bytes(env, url, &url_len)) == NULL) return;
    if ((name_buf = get_bytes(env, name, &name_len)) == NULL) goto done;
    if ((store.store = (*env)->NewGlobalRef(env, out)) == NULL) {
        throw_oom(env);
        goto done;
    }
    cb = store_table(&store, 0);
    scope_begin(&s);
    st = shard_array_refs_parquet(ARRAY(array), (const char *)url_buf, url_len,
                                  (const char *)name_buf, name_len, (uint64_t)record_size, &cb);
    /* Every object table the library opened was destroyed (released) before it returned. */
    (*env)->DeleteGlobalRef(env, store.store);
    finish(env, &s, st);
done:
    free(url_buf);
    free(name_buf);
}

/* The Parquet reference set written by the library into the local directory `dir`: the bytes
 * of a path (ShardArray passes the UTF-8 of the absolute path's String; the library refuses
 * an empty one or one with NUL). The array's own store is read during the call, on this
 * thread, so a ShardIO's exception is the cause as for every array call; a failure to create
 * or write `dir` is SHARD_ERR_IO with the OS error number as the I/O code and no cause.
 * record_size >= 0 (ShardArray checks). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayRefsParquetDir(JNIEnv *env, jclass cls,
                                                                   jlong array, jbyteArray url,
                                                                   jbyteArray name,
                                                                   jlong record_size,
                                                                   jbyteArray dir) {
    uint8_t *url_buf = NULL, *name_buf = NULL, *dir_buf = NULL;
    size_t url_len = 0, name_len = 0, dir_len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return;
    if ((url_buf = get_bytes(env, url, &url_len)) == NULL) return;
    if ((name_buf = get_bytes(env, name, &name_len)) == NULL) goto done;
    if ((dir_buf = get_bytes(env, dir, &dir_len)) == NULL) goto done;
    scope_begin(&s);
    st = shard_array_refs_parquet_dir(ARRAY(array), (const char *)url_buf, url_len,
                                      (const char *)name_buf, name_len, (uint64_t)record_size,
                                      (const char *)dir_buf, dir_len);
    finish(env, &s, st);
done:
    free(url_buf);
    free(name_buf);
    free(dir_buf);
}

/* The problems shard_array_verify reports, gathered natively as they come (the callback makes
 * no JNI call; Java objects are built after the call): per problem, 4 ints in `meta` (status,
 * key length, message length, chunk rank), the key's then the message's bytes appended to
 * `text`, and the rank coordinates appended to `chunks`. */
typedef struct {
    uint8_t *text;
    int32_t *meta;
    int64_t *chunks;
    size_t text_len, text_cap, meta_len, meta_cap, chunks_len, chunks_cap;
    int32_t failed; /* 0, or the code the callback returned: RECEIVER_OOM or RECEIVER_TOO_LARGE */
} verify_list;

/* shard_problem_fn: runs on the thread of arrayVerify, inside the library call; calls no JNI. */
static int32_t verify_problem(void *ud, const char *key, const uint64_t *chunk, size_t rank,
                              shard_status status, const char *message) {
    verify_list *l = (verify_list *)ud;
    size_t key_len = strlen(key), msg_len = strlen(message);
    int32_t rc;
    if (chunk == NULL) rank = 0;
    if (key_len > RECEIVED_MAX || msg_len > RECEIVED_MAX - key_len)
        rc = RECEIVER_TOO_LARGE;
    else if ((rc = receiver_grow((void **)&l->meta, &l->meta_cap, l->meta_len, 4,
                                 sizeof *l->meta, 64)) == 0 &&
             (rc = receiver_grow((void **)&l->text, &l->text_cap, l->text_len, key_len + msg_len,
                                 1, 64)) == 0)
        rc = receiver_grow((void **)&l->chunks, &l->chunks_cap, l->chunks_len, rank,
                           sizeof *l->chunks, 64);
    if (rc != 0) {
        l->failed = rc;
        return rc;
    }
    l->meta[l->meta_len++] = (int32_t)status;
    l->meta[l->meta_len++] = (int32_t)key_len;
    l->meta[l->meta_len++] = (int32_t)msg_len;
    l->meta[l->meta_len++] = (int32_t)rank;
    memcpy(l->text + l->text_len, key, key_len);
    if (msg_len > 0) memcpy(l->text + l->text_len + key_len, message, msg_len);
    l->text_len += key_len + msg_len;
    if (rank > 0) memcpy(l->chunks + l->chunks_len, chunk, rank * sizeof *chunk);
    l->chunks_len += rank;
    return 0;
}

/* Every stored shard checked (shard_array_verify, the array's store read on this thread): the
 * problems as {int[] meta, byte[] text, long[] chunks} (see verify_list), decoded by
 * ShardArray.verify. A store's exception is the cause of the ShardException, as for every
 * array call. */
JNIEXPORT jobjectArray JNICALL Java_io_zarrshard_Native_arrayVerify(JNIEnv *env, jclass cls,
                                                                    jlong array) {
    verify_list list;
    uint64_t count = 0;
    shard_status st;
    scope s;
    jobjectArray result = NULL;
    jclass object_class;
    jintArray meta = NULL;
    jbyteArray text = NULL;
    jlongArray chunks = NULL;
    (void)cls;
    memset(&list, 0, sizeof list);
    if (!live(env, array)) return NULL;
    scope_begin(&s);
    st = shard_array_verify(ARRAY(array), verify_problem, &list, &count);
    if (list.failed != 0) {
        receiver_failed(env, &s, list.failed, "more problems than Java arrays hold");
        goto out;
    }
    if (!finish(env, &s, st)) goto out;
    if ((meta = (*env)->NewIntArray(env, (jsize)list.meta_len)) == NULL) goto out;
    if (list.meta_len > 0)
        (*env)->SetIntArrayRegion(env, meta, 0, (jsize)list.meta_len, (const jint *)list.meta);
    if ((text = new_bytes(env, list.text, list.text_len)) == NULL) goto out;
    if ((chunks = (*env)->NewLongArray(env, (jsize)list.chunks_len)) == NULL) goto out;
    if (list.chunks_len > 0)
        (*env)->SetLongArrayRegion(env, chunks, 0, (jsize)list.chunks_len,
                                   (const jlong *)list.chunks);
    if ((object_class = (*env)->FindClass(env, "java/lang/Object")) == NULL) goto out;
    result = (*env)->NewObjectArray(env, 3, object_class, NULL);
    (*env)->DeleteLocalRef(env, object_class);
    if (result == NULL) goto out;
    (*env)->SetObjectArrayElement(env, result, 0, meta);
    (*env)->SetObjectArrayElement(env, result, 1, text);
    (*env)->SetObjectArrayElement(env, result, 2, chunks);
out:
    if (meta != NULL) (*env)->DeleteLocalRef(env, meta);
    if (text != NULL) (*env)->DeleteLocalRef(env, text);
    if (chunks != NULL) (*env)->DeleteLocalRef(env, chunks);
    free(list.meta);
    free(list.text);
    free(list.chunks);
    return result;
}

/* threads >= 0 (Threads.set checks); the library refuses more than SHARD_MAX_THREADS. */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_setThreads(JNIEnv *env, jclass cls,
                                                           jint threads) {
    scope s;
    (void)cls;
    scope_begin(&s);
    (void)finish(env, &s, shard_set_threads((size_t)threads));
}

JNIEXPORT jint JNICALL Java_io_zarrshard_Native_getThreads(JNIEnv *env, jclass cls) {
    size_t n = 0;
    scope s;
    (void)cls;
    scope_begin(&s);
    if (!finish(env, &s, shard_get_threads(&n))) return 0;
    return n > (size_t)INT32_MAX ? INT32_MAX : (jint)n;
}

/* bytes >= 0 (MemoryLimit.set checks). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_setMemoryLimit(JNIEnv *env, jclass cls,
                                                               jlong bytes) {
    scope s;
    (void)cls;
    scope_begin(&s);
    (void)finish(env, &s, shard_set_memory_limit((uint64_t)bytes));
}

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_getMemoryLimit(JNIEnv *env, jclass cls) {
    uint64_t n = 0;
    scope s;
    (void)cls;
    scope_begin(&s);
    if (!finish(env, &s, shard_get_memory_limit(&n))) return 0;
    return n > (uint64_t)INT64_MAX ? (jlong)INT64_MAX : (jlong)n;
}

/* {bytes, contexts} freed; NULL with an exception pending otherwise. */
JNIEXPORT jlongArray JNICALL Java_io_zarrshard_Native_releaseMemory(JNIEnv *env, jclass cls) {
    uint64_t bytes = 0;
    size_t contexts = 0;
    jlong both[2];
    jlongArray out;
    scope s;
    (void)cls;
    scope_begin(&s);
    if (!finish(env, &s, shard_release_memory(&bytes, &contexts))) return NULL;
    both[0] = bytes > (uint64_t)INT64_MAX ? (jlong)INT64_MAX : (jlong)bytes;
    both[1] = contexts > (size_t)INT64_MAX ? (jlong)INT64_MAX : (jlong)contexts;
    if ((out = (*env)->NewLongArray(env, 2)) == NULL) return NULL;
    (*env)->SetLongArrayRegion(env, out, 0, 2, both);
    return out;
}

/* start and shape as two long[] of one rank; 0 and an exception otherwise. */
static int get_region(JNIEnv *env, jlongArray start, jlongArray shape, coords_buf *a,
                      coords_buf *b) {
    if (!get_coords(env, start, a)) return 0;
    if (!get_coords(env, shape, b)) {
        free_coords(a);
        return 0;
    }
    if (a->n != b->n) {
        throw_new(env, g_IllegalArgumentException, "start and shape differ in length");
        free_coords(a);
        free_coords(b);
        return 0;
    }
    return 1;
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayReadRegion(JNIEnv *env, jclass cls,
                                                                jlong array, jlongArray start,
                                                                jlongArray shape,
                                                                jbyteArray out) {
    coords_buf a, b;
    uint8_t *buf;
    jsize n;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return;
    if (out == NULL) {
        throw_new(env, g_NullPointerException, "out");
        return;
    }
    if (!get_region(env, start, shape, &a, &b)) return;
    n = (*env)->GetArrayLength(env, out);
    if ((buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1)) == NULL) {
        throw_oom(env);
    } else {
        scope_begin(&s);
        st = shard_array_read_region(ARRAY(array), a.v, b.v, a.n, buf, (size_t)n);
        if (finish(env, &s, st) && n > 0)
            (*env)->SetByteArrayRegion(env, out, 0, n, (jbyte *)buf);
        free(buf);
    }
    free_coords(&a);
    free_coords(&b);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayWriteRegion(JNIEnv *env, jclass cls,
                                                                 jlong array, jlongArray start,
                                                                 jlongArray shape,
                                                                 jbyteArray data) {
    coords_buf a, b;
    uint8_t *buf;
    size_t len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || !get_region(env, start, shape, &a, &b)) return;
    if ((buf = get_bytes(env, data, &len)) != NULL) {
        scope_begin(&s);
        st = shard_array_write_region(ARRAY(array), a.v, b.v, a.n, buf, len);
        finish(env, &s, st);
        free(buf);
    }
    free_coords(&a);
    free_coords(&b);
}

/* Read (write == 0) or write the region from [pos, pos + len) of a direct ByteBuffer. */
static void region_direct(JNIEnv *env, jlong array, jlongArray start, jlongArray shape,
                          jobject buffer, jint pos, jint len, int write) {
    coords_buf a, b;
    uint8_t *addr;
    shard_status st;
    scope s;
    if (!live(env, array) || !get_region(env, start, shape, &a, &b)) return;
    if ((addr = direct_range(env, buffer, pos, len)) != NULL) {
        scope_begin(&s);
        st = write ? shard_array_write_region(ARRAY(array), a.v, b.v, a.n, addr, (size_t)len)
                   : shard_array_read_region(ARRAY(array), a.v, b.v, a.n, addr, (size_t)len);
        finish(env, &s, st);
    }
    free_coords(&a);
    free_coords(&b);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayReadRegionDirect(
    JNIEnv *env, jclass cls, jlong array, jlongArray start, jlongArray shape, jobject buffer,
    jint pos, jint len) {
    (void)cls;
    region_direct(env, array, start, shape, buffer, pos, len, 0);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayWriteRegionDirect(
    JNIEnv *env, jclass cls, jlong array, jlongArray start, jlongArray shape, jobject buffer,
    jint pos, jint len) {
    (void)cls;
    region_direct(env, array, start, shape, buffer, pos, len, 1);
}

/* ---- the library's stores, arrays by path, groups (issue 35) ---------------------------- */

/* A copy of a Java byte[] that the Java side checked holds no NUL, NUL-terminated (a C
 * string for the library); NULL and an exception on failure. */
static char *get_cstr(JNIEnv *env, jbyteArray arr) {
    size_t len = 0;
    uint8_t *bytes = get_bytes(env, arr, &len);
    char *s;
    if (bytes == NULL) return NULL;
    if ((s = (char *)malloc(len + 1)) == NULL) {
        free(bytes);
        throw_oom(env);
        return NULL;
    }
    if (len > 0) memcpy(s, bytes, len);
    s[len] = '\0';
    free(bytes);
    return s;
}

static const shard_store_callbacks *STORE(jlong p) {
    return (const shard_store_callbacks *)(uintptr_t)p;
}

/* A library store (the table behind io.zarrshard.Store) in a malloc'd block the Java object
 * owns; 0 and an exception on failure. */
static jlong store_new(JNIEnv *env, scope *s, shard_status st, shard_store_callbacks *cb) {
    shard_store_callbacks *heap;
    if (!finish(env, s, st)) return 0;
    if ((heap = (shard_store_callbacks *)malloc(sizeof *heap)) == NULL) {
        shard_store_release(cb);
        throw_oom(env);
        return 0;
    }
    *heap = *cb;
    return (jlong)(uintptr_t)heap;
}

/* shard_store_directory(path, flags): flags is SHARD_STORE_CREATE or 0 (Store checks). */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_storeDirectory(JNIEnv *env, jclass cls,
                                                                jbyteArray path, jint flags) {
    shard_store_callbacks cb;
    char *p;
    shard_status st;
    scope s;
    (void)cls;
    if ((p = get_cstr(env, path)) == NULL) return 0;
    memset(&cb, 0, sizeof cb);
    scope_begin(&s);
    st = shard_store_directory(p, (uint32_t)flags, &cb);
    free(p);
    return store_new(env, &s, st, &cb);
}

JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_storeMemory(JNIEnv *env, jclass cls) {
    shard_store_callbacks cb;
    shard_status st;
    scope s;
    (void)cls;
    memset(&cb, 0, sizeof cb);
    scope_begin(&s);
    st = shard_store_memory(&cb);
    return store_new(env, &s, st, &cb);
}

/* The host's copy of the table given back (arrays opened on it keep the store alive). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_storeRelease(JNIEnv *env, jclass cls,
                                                            jlong store) {
    shard_store_callbacks *cb = (shard_store_callbacks *)(uintptr_t)store;
    (void)env;
    (void)cls;
    shard_store_release(cb);
    free(cb);
}

/* The store of an array/group call: the library's table `lib`, or a table over the host's
 * ShardStore `host` (exactly one of them). `owned`: a successful open hands the host table to
 * the array (store_destroy at shard_array_close). */
typedef struct {
    shard_store_callbacks cb;
    const shard_store_callbacks *use;
    jni_store *host;
    int owned;
} store_arg;

static int store_arg_get(JNIEnv *env, jlong lib, jobject host, int owned, store_arg *a) {
    memset(a, 0, sizeof *a);
    a->owned = owned;
    if (host == NULL) {
        if (!live(env, lib)) return 0;
        a->use = STORE(lib);
        return 1;
    }
    if ((a->host = (jni_store *)calloc(1, sizeof *a->host)) == NULL) {
        throw_oom(env);
        return 0;
    }
    if ((a->host->store = (*env)->NewGlobalRef(env, host)) == NULL) {
        free(a->host);
        a->host = NULL;
        throw_oom(env);
        return 0;
    }
    a->cb = store_table(a->host, owned);
    a->use = &a->cb;
    return 1;
}

/* After the call: a host table the library did not take (a failed open, or a borrowed one)
 * is ours to free. */
static void store_arg_done(JNIEnv *env, store_arg *a, shard_status st) {
    if (a->host != NULL && !(a->owned && st == SHARD_OK)) {
        (*env)->DeleteGlobalRef(env, a->host->store);
        free(a->host);
    }
    a->host = NULL;
}

/* shard_array_create with the zarr.json text; flags 0 or SHARD_CREATE_OVERWRITE. */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_arrayCreate(JNIEnv *env, jclass cls,
                                                             jlong lib, jobject host,
                                                             jbyteArray path, jbyteArray json,
                                                             jint flags) {
    store_arg a;
    shard_array *array = NULL;
    char *p = NULL;
    uint8_t *buf = NULL;
    size_t len = 0;
    shard_status st;
    scope s;
    jlong result = 0;
    (void)cls;
    if ((p = get_cstr(env, path)) == NULL) return 0;
    if ((buf = get_bytes(env, json, &len)) == NULL) goto out;
    if (!store_arg_get(env, lib, host, 1, &a)) goto out;
    scope_begin(&s);
    st = shard_array_create(a.use, p, (const char *)buf, len, (uint32_t)flags, &array);
    store_arg_done(env, &a, st);
    if (finish(env, &s, st)) result = (jlong)(uintptr_t)array;
out:
    free(p);
    free(buf);
    return result;
}

/* A shard_array_spec over Java's arguments (ArraySpec.nativeArgs), with the buffers it points
 * into; 0 and an exception on failure (spec_free either way). */
typedef struct {
    shard_array_spec spec;
    coords_buf shape, shard_shape, chunk_shape;
    char *data_type, *fill_value, *compressor;
    char **names;
    size_t names_len;
    int have_shard_shape;
} spec_buf;

static void spec_free(spec_buf *b) {
    size_t i;
    free_coords(&b->shape);
    if (b->have_shard_shape) free_coords(&b->shard_shape);
    free_coords(&b->chunk_shape);
    free(b->data_type);
    free(b->fill_value);
    free(b->compressor);
    for (i = 0; i < b->names_len; i++) free(b->names[i]);
    free(b->names);
}

static int spec_get(JNIEnv *env, spec_buf *b, jlongArray shape, jlongArray shard_shape,
                    jlongArray chunk_shape, jbyteArray data_type, jbyteArray fill_value,
                    jbyteArray compressor, jint level, jint index_location, jint checksums,
                    jobjectArray names) {
    memset(b, 0, sizeof *b);
    b->shape.v = b->shape.inline_v;
    b->shard_shape.v = b->shard_shape.inline_v;
    b->chunk_shape.v = b->chunk_shape.inline_v;
    if (shard_array_spec_init(&b->spec) != SHARD_OK) {
        throw_new(env, g_IllegalStateException, "shard_array_spec_init failed");
        return 0;
    }
    if (!get_coords(env, shape, &b->shape) || !get_coords(env, chunk_shape, &b->chunk_shape))
        return 0;
    if (shard_shape != NULL) {
        if (!get_coords(env, shard_shape, &b->shard_shape)) return 0;
        b->have_shard_shape = 1;
    }
    /* The library reads rank values behind each pointer: lengths must agree (ArraySpec
     * checks; this keeps a bug there from reading past a buffer). */
    if (b->chunk_shape.n != b->shape.n || (b->have_shard_shape && b->shard_shape.n != b->shape.n)) {
        throw_new(env, g_IllegalArgumentException, "spec shapes differ in rank");
        return 0;
    }
    if ((b->data_type = get_cstr(env, data_type)) == NULL) return 0;
    if (fill_value != NULL && (b->fill_value = get_cstr(env, fill_value)) == NULL) return 0;
    if (compressor != NULL && (b->compressor = get_cstr(env, compressor)) == NULL) return 0;
    if (names != NULL) {
        jsize n = (*env)->GetArrayLength(env, names), i;
        if ((size_t)n != b->shape.n) {
            throw_new(env, g_IllegalArgumentException, "dimension names differ from the rank");
            return 0;
        }
        if ((b->names = (char **)calloc(n > 0 ? (size_t)n : 1, sizeof *b->names)) == NULL) {
            throw_oom(env);
            return 0;
        }
        b->names_len = (size_t)n;
        for (i = 0; i < n; i++) {
            jbyteArray name = (jbyteArray)(*env)->GetObjectArrayElement(env, names, i);
            if ((*env)->ExceptionCheck(env)) return 0;
            if (name == NULL) continue; /* an unnamed dimension */
            b->names[i] = get_cstr(env, name);
            (*env)->DeleteLocalRef(env, name);
            if (b->names[i] == NULL) return 0;
        }
        b->spec.dimension_names = (const char *const *)b->names;
    }
    b->spec.rank = b->shape.n;
    b->spec.shape = b->shape.v;
    b->spec.shard_shape = b->have_shard_shape ? b->shard_shape.v : NULL;
    b->spec.chunk_shape = b->chunk_shape.v;
    b->spec.data_type = b->data_type;
    b->spec.fill_value = b->fill_value;
    b->spec.compressor = b->compressor;
    b->spec.compression_level = (int32_t)level;
    b->spec.index_location = (uint32_t)index_location;
    b->spec.checksums = (uint32_t)checksums;
    return 1;
}

/* The zarr.json text shard_array_spec_json makes of the spec. */
JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_specJson(
    JNIEnv *env, jclass cls, jlongArray shape, jlongArray shard_shape, jlongArray chunk_shape,
    jbyteArray data_type, jbyteArray fill_value, jbyteArray compressor, jint level,
    jint index_location, jint checksums, jobjectArray names) {
    spec_buf b;
    size_t len = 0, written = 0;
    char *buf;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (spec_get(env, &b, shape, shard_shape, chunk_shape, data_type, fill_value, compressor,
                 level, index_location, checksums, names)) {
        scope_begin(&s);
        st = shard_array_spec_json(&b.spec, NULL, 0, &len);
        if (finish(env, &s, st)) {
            if ((buf = (char *)malloc(len + 1)) == NULL) {
                throw_oom(env);
            } else {
                scope_begin(&s);
                st = shard_array_spec_json(&b.spec, buf, len + 1, &written);
                if (finish(env, &s, st)) result = new_bytes(env, buf, written);
                free(buf);
            }
        }
    }
    spec_free(&b);
    return result;
}

/* shard_array_create_spec: the spec as for specJson. */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_arrayCreateSpec(
    JNIEnv *env, jclass cls, jlong lib, jobject host, jbyteArray path, jlongArray shape,
    jlongArray shard_shape, jlongArray chunk_shape, jbyteArray data_type, jbyteArray fill_value,
    jbyteArray compressor, jint level, jint index_location, jint checksums, jobjectArray names,
    jint flags) {
    spec_buf b;
    store_arg a;
    shard_array *array = NULL;
    char *p;
    shard_status st;
    scope s;
    jlong result = 0;
    (void)cls;
    if ((p = get_cstr(env, path)) == NULL) return 0;
    if (spec_get(env, &b, shape, shard_shape, chunk_shape, data_type, fill_value, compressor,
                 level, index_location, checksums, names) &&
        store_arg_get(env, lib, host, 1, &a)) {
        scope_begin(&s);
        st = shard_array_create_spec(a.use, p, &b.spec, (uint32_t)flags, &array);
        store_arg_done(env, &a, st);
        if (finish(env, &s, st)) result = (jlong)(uintptr_t)array;
    }
    spec_free(&b);
    free(p);
    return result;
}

/* shard_array_open_path: the node at `path` of the store (zarr.json, .zarray, v3 draft). */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_arrayOpenPath(JNIEnv *env, jclass cls,
                                                               jlong lib, jobject host,
                                                               jbyteArray path) {
    store_arg a;
    shard_array *array = NULL;
    char *p;
    shard_status st;
    scope s;
    jlong result = 0;
    (void)cls;
    if ((p = get_cstr(env, path)) == NULL) return 0;
    if (store_arg_get(env, lib, host, 1, &a)) {
        scope_begin(&s);
        st = shard_array_open_path(a.use, p, &array);
        store_arg_done(env, &a, st);
        if (finish(env, &s, st)) result = (jlong)(uintptr_t)array;
    }
    free(p);
    return result;
}

/* shard_group_create: the host table is borrowed for the call (the library never owns it). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_groupCreate(JNIEnv *env, jclass cls, jlong lib,
                                                            jobject host, jbyteArray path,
                                                            jbyteArray attributes, jint flags) {
    store_arg a;
    char *p;
    uint8_t *buf = NULL;
    size_t len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if ((p = get_cstr(env, path)) == NULL) return;
    if (attributes != NULL && (buf = get_bytes(env, attributes, &len)) == NULL) goto out;
    if (store_arg_get(env, lib, host, 0, &a)) {
        scope_begin(&s);
        st = shard_group_create(a.use, p, (const char *)buf, len, (uint32_t)flags);
        store_arg_done(env, &a, st);
        finish(env, &s, st);
    }
out:
    free(p);
    free(buf);
}

/* The array's shape (rank values, read with shard_array_rank first). */
JNIEXPORT jlongArray JNICALL Java_io_zarrshard_Native_arrayShape(JNIEnv *env, jclass cls,
                                                                 jlong array) {
    size_t rank = 0;
    uint64_t *v;
    shard_status st;
    scope s;
    jlongArray result = NULL;
    (void)cls;
    if (!live(env, array)) return NULL;
    scope_begin(&s);
    st = shard_array_rank(ARRAY(array), &rank);
    if (!finish(env, &s, st)) return NULL;
    if (rank > (size_t)INT32_MAX || (v = (uint64_t *)malloc(rank * sizeof *v + 1)) == NULL) {
        throw_oom(env);
        return NULL;
    }
    scope_begin(&s);
    st = shard_array_shape(ARRAY(array), v, rank);
    if (finish(env, &s, st)) result = new_longs(env, v, rank);
    free(v);
    return result;
}

static shard_array *MUT_ARRAY(jlong p) { return (shard_array *)(uintptr_t)p; }

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayResize(JNIEnv *env, jclass cls,
                                                            jlong array, jlongArray shape) {
    coords_buf c;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || !get_coords(env, shape, &c)) return;
    scope_begin(&s);
    st = shard_array_resize(MUT_ARRAY(array), c.v, c.n);
    finish(env, &s, st);
    free_coords(&c);
}

/* axis >= 0 (ShardArray checks). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayAppend(JNIEnv *env, jclass cls,
                                                            jlong array, jint axis,
                                                            jlongArray block, jbyteArray data) {
    coords_buf c;
    uint8_t *buf;
    size_t len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || !get_coords(env, block, &c)) return;
    if ((buf = get_bytes(env, data, &len)) != NULL) {
        scope_begin(&s);
        st = shard_array_append(MUT_ARRAY(array), (size_t)axis, c.v, c.n, buf, len);
        finish(env, &s, st);
        free(buf);
    }
    free_coords(&c);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayAppendDirect(JNIEnv *env, jclass cls,
                                                                  jlong array, jint axis,
                                                                  jlongArray block,
                                                                  jobject buffer, jint pos,
                                                                  jint len) {
    coords_buf c;
    uint8_t *addr;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || !get_coords(env, block, &c)) return;
    if ((addr = direct_range(env, buffer, pos, len)) != NULL) {
        scope_begin(&s);
        st = shard_array_append(MUT_ARRAY(array), (size_t)axis, c.v, c.n, addr, (size_t)len);
        finish(env, &s, st);
    }
    free_coords(&c);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayFlush(JNIEnv *env, jclass cls,
                                                           jlong array) {
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return;
    scope_begin(&s);
    st = shard_array_flush(MUT_ARRAY(array));
    finish(env, &s, st);
}

JNIEXPORT void JNICALL Java_io_zarrshard_Native_arraySetAttributes(JNIEnv *env, jclass cls,
                                                                   jlong array,
                                                                   jbyteArray json) {
    uint8_t *buf;
    size_t len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || (buf = get_bytes(env, json, &len)) == NULL) return;
    scope_begin(&s);
    st = shard_array_set_attributes(MUT_ARRAY(array), (const char *)buf, len);
    finish(env, &s, st);
    free(buf);
}

/* The attributes as JSON object text, UTF-8 (a size query, then the text). */
JNIEXPORT jbyteArray JNICALL Java_io_zarrshard_Native_arrayAttributes(JNIEnv *env, jclass cls,
                                                                      jlong array) {
    size_t len = 0, written = 0;
    char *buf;
    shard_status st;
    scope s;
    jbyteArray result = NULL;
    (void)cls;
    if (!live(env, array)) return NULL;
    scope_begin(&s);
    st = shard_array_attributes(ARRAY(array), NULL, 0, &len);
    if (!finish(env, &s, st)) return NULL;
    if ((buf = (char *)malloc(len + 1)) == NULL) {
        throw_oom(env);
        return NULL;
    }
    scope_begin(&s);
    st = shard_array_attributes(ARRAY(array), buf, len + 1, &written);
    if (finish(env, &s, st)) result = new_bytes(env, buf, written);
    free(buf);
    return result;
}

/* {shards rewritten, bytes freed}; flags 0 or SHARD_FLAG_MORTON_ORDER. */
JNIEXPORT jlongArray JNICALL Java_io_zarrshard_Native_arrayCompact(JNIEnv *env, jclass cls,
                                                                   jlong array, jint flags) {
    uint64_t v[2] = {0, 0};
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array)) return NULL;
    scope_begin(&s);
    st = shard_array_compact(MUT_ARRAY(array), (uint32_t)flags, &v[0], &v[1]);
    if (!finish(env, &s, st)) return NULL;
    return new_longs(env, v, 2);
}

/* The Parquet reference set written through a library store (see arrayRefsParquet). */
JNIEXPORT void JNICALL Java_io_zarrshard_Native_arrayRefsParquetStore(JNIEnv *env, jclass cls,
                                                                     jlong array, jbyteArray url,
                                                                     jbyteArray name,
                                                                     jlong record_size,
                                                                     jlong out) {
    uint8_t *url_buf = NULL, *name_buf = NULL;
    size_t url_len = 0, name_len = 0;
    shard_status st;
    scope s;
    (void)cls;
    if (!live(env, array) || !live(env, out)) return;
    if ((url_buf = get_bytes(env, url, &url_len)) == NULL) return;
    if ((name_buf = get_bytes(env, name, &name_len)) != NULL) {
        scope_begin(&s);
        st = shard_array_refs_parquet(ARRAY(array), (const char *)url_buf, url_len,
                                      (const char *)name_buf, name_len, (uint64_t)record_size,
                                      STORE(out));
        finish(env, &s, st);
    }
    free(url_buf);
    free(name_buf);
}

/* One shard object as a file (shard_io_file), opened with codec's layout: the table is handed
 * to the handle (destroy at shard_close); a failed open leaves it with us to release. */
JNIEXPORT jlong JNICALL Java_io_zarrshard_Native_shardOpenFile(JNIEnv *env, jclass cls,
                                                               jlong codec, jbyteArray path,
                                                               jint mode, jint flags) {
    shard_io_callbacks cb;
    shard_handle *handle = NULL;
    char *p;
    shard_status st;
    scope s;
    int open_failed = 0;
    jlong result;
    (void)cls;
    if (!live(env, codec) || (p = get_cstr(env, path)) == NULL) return 0;
    memset(&cb, 0, sizeof cb);
    scope_begin(&s);
    st = shard_io_file(p, 0, &cb);
    free(p);
    if (st == SHARD_OK) {
        st = shard_open_ex(CODEC(codec), &cb, (uint32_t)mode, (uint32_t)flags, &handle);
        open_failed = st != SHARD_OK;
    }
    /* The error is read (finish) before the release can run any code of the library. */
    result = finish(env, &s, st) ? (jlong)(uintptr_t)handle : 0;
    if (open_failed) shard_io_release(&cb);
    return result;
}

/* ---- test hook ------------------------------------------------------------------------ */

/* Read one chunk on a fresh native thread that the JVM does not know, so the ShardIO
 * callbacks have to attach it (and detach it again). Returns the status; io_out[0] receives
 * shard_last_io_code of that thread. Used by the tests only. */

typedef struct {
    const shard_handle *shard;
    coords_buf *coords;
    uint8_t *buf;
    size_t len;
    shard_status st;
    int32_t io_code;
} native_read;

static void *native_read_main(void *arg) {
    native_read *r = (native_read *)arg;
    r->st = shard_read_chunk(r->shard, r->coords->v, r->coords->n, r->buf, r->len);
    r->io_code = r->st == SHARD_OK ? 0 : shard_last_io_code();
    return NULL;
}

JNIEXPORT jint JNICALL Java_io_zarrshard_Native_readChunkOnNativeThread(
    JNIEnv *env, jclass cls, jlong shard, jlongArray coords, jbyteArray out, jintArray io_out) {
    coords_buf c;
    native_read r;
    pthread_t t;
    jsize n;
    jint io_code;
    (void)cls;
    if (out == NULL || io_out == NULL) {
        throw_new(env, g_NullPointerException, "out");
        return -1;
    }
    if (!live(env, shard) || !get_coords(env, coords, &c)) return -1;
    n = (*env)->GetArrayLength(env, out);
    memset(&r, 0, sizeof r);
    r.shard = SHARD(shard);
    r.coords = &c;
    r.len = (size_t)n;
    if ((r.buf = (uint8_t *)malloc(n > 0 ? (size_t)n : 1)) == NULL) {
        free_coords(&c);
        throw_oom(env);
        return -1;
    }
    if (pthread_create(&t, NULL, native_read_main, &r) != 0) {
        free(r.buf);
        free_coords(&c);
        throw_new(env, g_IllegalStateException, "pthread_create failed");
        return -1;
    }
    pthread_join(t, NULL);
    if (r.st == SHARD_OK && n > 0) (*env)->SetByteArrayRegion(env, out, 0, n, (jbyte *)r.buf);
    io_code = r.io_code;
    if (!(*env)->ExceptionCheck(env)) (*env)->SetIntArrayRegion(env, io_out, 0, 1, &io_code);
    free(r.buf);
    free_coords(&c);
    return (jint)r.st;
}
