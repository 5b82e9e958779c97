/* mem_io: see mem_io.h. */
#define _XOPEN_SOURCE 700

#include "mem_io.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct mem_io {
    pthread_mutex_t lock;
    int refs;
    int exists;
    uint8_t *data;
    size_t len, cap;
    uint64_t calls[MEM_IO_KINDS];
    uint64_t bytes_read;
    mem_io_kind fail_kind;
    uint64_t fail_nth;
    int32_t fail_code;
    int fired;
    /* The new object (mem_io_new_object_callbacks): its bytes, and whether it is live. */
    uint8_t *next;
    size_t next_len;
    int next_live;
};

mem_io *mem_io_new(const uint8_t *initial, size_t len) {
    mem_io *m = (mem_io *)calloc(1, sizeof *m);
    if (m == NULL) return NULL;
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return NULL;
    }
    m->refs = 1;
    if (initial != NULL && mem_io_set(m, initial, len) != 0) {
        pthread_mutex_destroy(&m->lock);
        free(m);
        return NULL;
    }
    return m;
}

void mem_io_release(mem_io *m) {
    int last;
    if (m == NULL) return;
    pthread_mutex_lock(&m->lock);
    last = --m->refs == 0;
    pthread_mutex_unlock(&m->lock);
    if (!last) return;
    pthread_mutex_destroy(&m->lock);
    free(m->data);
    free(m->next);
    free(m);
}

int mem_io_refs(mem_io *m) {
    int r;
    pthread_mutex_lock(&m->lock);
    r = m->refs;
    pthread_mutex_unlock(&m->lock);
    return r;
}

/* Grow to hold `need` bytes (locked). */
static int reserve(mem_io *m, size_t need) {
    size_t cap = m->cap ? m->cap : 64;
    uint8_t *d;
    if (need <= m->cap) return 0;
    while (cap < need) cap = cap > ((size_t)-1) / 2 ? need : cap * 2;
    d = (uint8_t *)realloc(m->data, cap);
    if (d == NULL) return ENOMEM;
    m->data = d;
    m->cap = cap;
    return 0;
}

int mem_io_set(mem_io *m, const uint8_t *data, size_t len) {
    int rc = 0;
    pthread_mutex_lock(&m->lock);
    if (data == NULL) {
        m->exists = 0;
        m->len = 0;
    } else if ((rc = reserve(m, len)) == 0) {
        if (len > 0) memcpy(m->data, data, len);
        m->len = len;
        m->exists = 1;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int mem_io_exists(mem_io *m) {
    int e;
    pthread_mutex_lock(&m->lock);
    e = m->exists;
    pthread_mutex_unlock(&m->lock);
    return e;
}

size_t mem_io_size(mem_io *m) {
    size_t n;
    pthread_mutex_lock(&m->lock);
    n = m->len;
    pthread_mutex_unlock(&m->lock);
    return n;
}

size_t mem_io_copy(mem_io *m, uint8_t *buf, size_t cap) {
    size_t n;
    pthread_mutex_lock(&m->lock);
    n = m->len;
    if (buf != NULL && n > 0) memcpy(buf, m->data, n < cap ? n : cap);
    pthread_mutex_unlock(&m->lock);
    return n;
}

uint64_t mem_io_calls(mem_io *m, mem_io_kind kind) {
    uint64_t n;
    pthread_mutex_lock(&m->lock);
    n = kind < MEM_IO_KINDS ? m->calls[kind] : 0;
    pthread_mutex_unlock(&m->lock);
    return n;
}

uint64_t mem_io_reads(mem_io *m) {
    uint64_t n;
    pthread_mutex_lock(&m->lock);
    n = m->calls[MEM_IO_READ] + m->calls[MEM_IO_READ_SUFFIX];
    pthread_mutex_unlock(&m->lock);
    return n;
}

uint64_t mem_io_bytes_read(mem_io *m) {
    uint64_t n;
    pthread_mutex_lock(&m->lock);
    n = m->bytes_read;
    pthread_mutex_unlock(&m->lock);
    return n;
}

void mem_io_reset_counters(mem_io *m) {
    pthread_mutex_lock(&m->lock);
    memset(m->calls, 0, sizeof m->calls);
    m->bytes_read = 0;
    pthread_mutex_unlock(&m->lock);
}

void mem_io_fail(mem_io *m, mem_io_kind kind, uint64_t nth, int32_t code) {
    pthread_mutex_lock(&m->lock);
    m->fail_kind = kind;
    m->fail_nth = nth;
    m->fail_code = code;
    m->fired = 0;
    pthread_mutex_unlock(&m->lock);
}

int mem_io_faults_fired(mem_io *m) {
    int f;
    pthread_mutex_lock(&m->lock);
    f = m->fired;
    pthread_mutex_unlock(&m->lock);
    return f;
}

/* Count a call of `kind` (locked); returns the injected code when this call must fail. */
static int32_t enter(mem_io *m, mem_io_kind kind) {
    uint64_t mine = ++m->calls[kind];
    uint64_t any = ++m->calls[MEM_IO_ANY];
    if (m->fail_nth != 0 && !m->fired &&
        ((m->fail_kind == kind && mine == m->fail_nth) ||
         (m->fail_kind == MEM_IO_ANY && any == m->fail_nth))) {
        m->fired = 1;
        return m->fail_code;
    }
    return 0;
}

static int cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_READ)) == 0) {
        if (!m->exists) {
            rc = SHARD_IO_NOT_FOUND;
        } else {
            size_t n = 0;
            if (offset < m->len) {
                n = m->len - (size_t)offset;
                if (n > len) n = len;
                memcpy(buf, m->data + offset, n);
            }
            *read_out = n;
            m->bytes_read += n;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                          uint64_t *object_size_out) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_READ_SUFFIX)) == 0) {
        if (!m->exists) {
            rc = SHARD_IO_NOT_FOUND;
        } else {
            size_t n = m->len < len ? m->len : len;
            if (n > 0) memcpy(buf, m->data + (m->len - n), n);
            *read_out = n;
            *object_size_out = m->len;
            m->bytes_read += n;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_size(void *ud, uint64_t *size_out) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_SIZE)) == 0) {
        if (!m->exists)
            rc = SHARD_IO_NOT_FOUND;
        else
            *size_out = m->len;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

/* Set the length to `len`, zero-filling a gap (locked). */
static int32_t resize(mem_io *m, uint64_t len) {
    if (len > (uint64_t)((size_t)-1)) return EFBIG;
    if (reserve(m, (size_t)len) != 0) return ENOMEM;
    if ((size_t)len > m->len) memset(m->data + m->len, 0, (size_t)len - m->len);
    m->len = (size_t)len;
    m->exists = 1;
    return 0;
}

static int cb_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_WRITE)) == 0) {
        uint64_t end = offset + len;
        if (end < offset) {
            rc = EFBIG;
        } else if (end > m->len || !m->exists) {
            rc = resize(m, end > m->len ? end : m->len);
        } else {
            m->exists = 1;
        }
        if (rc == 0 && len > 0) memcpy(m->data + offset, buf, len);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_truncate(void *ud, uint64_t len) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_TRUNCATE)) == 0) rc = resize(m, len);
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_remove(void *ud) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_REMOVE)) == 0) {
        m->exists = 0;
        m->len = 0;
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static void cb_destroy(void *ud) { mem_io_release((mem_io *)ud); }

/* The new object's handle is the mem_io itself: one at a time per object. */
static int cb_create_new(void *ud, void **new_out) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_CREATE_NEW)) == 0) {
        if (m->next_live) {
            rc = EBUSY;
        } else {
            m->next_live = 1;
            m->next_len = 0;
            *new_out = m;
        }
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_write_new(void *ud, void *new_object, uint64_t offset, const uint8_t *buf,
                        size_t len) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_WRITE_NEW)) == 0) {
        uint64_t end = offset + len;
        if (new_object != m || !m->next_live) {
            rc = EINVAL;
        } else if (end < offset || end > (uint64_t)((size_t)-1)) {
            rc = EFBIG;
        } else if ((size_t)end > m->next_len) {
            uint8_t *d = (uint8_t *)realloc(m->next, (size_t)end);
            if (d == NULL) {
                rc = ENOMEM;
            } else {
                m->next = d;
                memset(d + m->next_len, 0, (size_t)end - m->next_len);
                m->next_len = (size_t)end;
            }
        }
        if (rc == 0 && len > 0) memcpy(m->next + offset, buf, len);
    }
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cb_commit_new(void *ud, void *new_object, uint64_t len) {
    mem_io *m = (mem_io *)ud;
    int32_t rc;
    pthread_mutex_lock(&m->lock);
    if ((rc = enter(m, MEM_IO_COMMIT_NEW)) == 0) {
        if (new_object != m || !m->next_live || len != m->next_len) {
            rc = EINVAL;
        } else {
            /* Swap: the new bytes become the object's (holding exactly `len`); the old buffer
             * is grown again by the next new object's writes. */
            uint8_t *old = m->data;
            m->data = m->next;
            m->len = m->cap = m->next_len;
            m->exists = 1;
            m->next = old;
        }
    }
    /* Released whether or not the commit succeeded, as the contract says. */
    m->next_live = 0;
    m->next_len = 0;
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static void cb_discard_new(void *ud, void *new_object) {
    mem_io *m = (mem_io *)ud;
    pthread_mutex_lock(&m->lock);
    (void)enter(m, MEM_IO_DISCARD_NEW);
    if (new_object == m) {
        m->next_live = 0;
        m->next_len = 0;
    }
    pthread_mutex_unlock(&m->lock);
}

void mem_io_new_object_callbacks(mem_io *m, shard_io_callbacks *io) {
    mem_io_callbacks(m, io);
    io->create_new = cb_create_new;
    io->write_new = cb_write_new;
    io->commit_new = cb_commit_new;
    io->discard_new = cb_discard_new;
}

int mem_io_new_object_live(mem_io *m) {
    int live;
    pthread_mutex_lock(&m->lock);
    live = m->next_live;
    pthread_mutex_unlock(&m->lock);
    return live;
}

void mem_io_callbacks(mem_io *m, shard_io_callbacks *io) {
    pthread_mutex_lock(&m->lock);
    m->refs++;
    pthread_mutex_unlock(&m->lock);
    memset(io, 0, sizeof *io);
    io->version = SHARD_IO_VERSION;
    io->userdata = m;
    io->read = cb_read;
    io->read_suffix = cb_read_suffix;
    io->size = cb_size;
    io->write = cb_write;
    io->truncate = cb_truncate;
    io->remove = cb_remove;
    io->destroy = cb_destroy;
}
