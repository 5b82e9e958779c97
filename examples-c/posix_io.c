/* posix_io: see posix_io.h. */
#define _XOPEN_SOURCE 700

#include "posix_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

struct posix_io {
    posix_io_mode mode;
    char *path;
    char *tmp_path; /* NULL in read mode */
    int fd;         /* -1: PATH is missing (read mode) */
    /* Write modes: whether the object logically exists. The temporary file is created at
     * open so that errors (no directory, no permission) surface there, but until something
     * is written it stands for "no object", as an absent file does. */
    int exists;
    int committed; /* the temporary is now PATH: destroy must not delete it */
};

/* errno, never 0: callbacks must not report success by accident. */
static int err_code(void) { return errno != 0 ? errno : EIO; }

static int full_pread(int fd, uint8_t *buf, size_t len, uint64_t offset, size_t *got_out) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, buf + got, len - got, (off_t)(offset + got));
        if (n < 0) {
            if (errno == EINTR) continue;
            return err_code();
        }
        if (n == 0) break; /* end of file: a short read means the object ends here */
        got += (size_t)n;
    }
    *got_out = got;
    return 0;
}

static int full_pwrite(int fd, const uint8_t *buf, size_t len, uint64_t offset) {
    size_t done = 0;
    while (done < len) {
        ssize_t n = pwrite(fd, buf + done, len - done, (off_t)(offset + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return err_code();
        }
        if (n == 0) return EIO;
        done += (size_t)n;
    }
    return 0;
}

static int absent(const posix_io *p) { return p->fd < 0 || (p->tmp_path != NULL && !p->exists); }

static int cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    posix_io *p = (posix_io *)ud;
    if (absent(p)) return SHARD_IO_NOT_FOUND;
    return full_pread(p->fd, buf, len, offset, read_out);
}

static int file_size(const posix_io *p, uint64_t *size_out) {
    struct stat st;
    if (fstat(p->fd, &st) != 0) return err_code();
    *size_out = (uint64_t)st.st_size;
    return 0;
}

static int cb_read_suffix(void *ud, size_t len, uint8_t *buf, size_t *read_out,
                          uint64_t *object_size_out) {
    posix_io *p = (posix_io *)ud;
    uint64_t size = 0;
    size_t n;
    int rc;
    if (absent(p)) return SHARD_IO_NOT_FOUND;
    if ((rc = file_size(p, &size)) != 0) return rc;
    n = size < (uint64_t)len ? (size_t)size : len;
    if ((rc = full_pread(p->fd, buf, n, size - n, read_out)) != 0) return rc;
    *object_size_out = size;
    return 0;
}

static int cb_size(void *ud, uint64_t *size_out) {
    posix_io *p = (posix_io *)ud;
    if (absent(p)) return SHARD_IO_NOT_FOUND;
    return file_size(p, size_out);
}

static int cb_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    posix_io *p = (posix_io *)ud;
    int rc = full_pwrite(p->fd, buf, len, offset);
    if (rc == 0) {
        p->exists = 1;
    }
    return rc;
}

static int cb_truncate(void *ud, uint64_t len) {
    posix_io *p = (posix_io *)ud;
    while (ftruncate(p->fd, (off_t)len) != 0) {
        if (errno != EINTR) return err_code();
    }
    p->exists = 1;
    return 0;
}

/* The temporary is emptied, not unlinked, so that a later write needs no reopen; commit of
 * an absent object deletes PATH. */
static int cb_remove(void *ud) {
    posix_io *p = (posix_io *)ud;
    while (ftruncate(p->fd, 0) != 0) {
        if (errno != EINTR) return err_code();
    }
    p->exists = 0;
    return 0;
}

static void cb_destroy(void *ud) { posix_io_discard((posix_io *)ud); }

void posix_io_discard(posix_io *p) {
    if (p == NULL) return;
    if (p->fd >= 0) close(p->fd);
    if (p->tmp_path != NULL && !p->committed) unlink(p->tmp_path);
    free(p->tmp_path);
    free(p->path);
    free(p);
}

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = (char *)malloc(n);
    if (d != NULL) memcpy(d, s, n);
    return d;
}

/* Copy PATH into the temporary (update mode). Sets *copied when PATH exists. */
static int copy_existing(posix_io *p, int *copied) {
    uint8_t buf[1 << 16];
    uint64_t offset = 0;
    int src = open(p->path, O_RDONLY | O_CLOEXEC);
    int rc = 0;
    *copied = 0;
    if (src < 0) return errno == ENOENT ? 0 : err_code();
    for (;;) {
        size_t got = 0;
        if ((rc = full_pread(src, buf, sizeof buf, offset, &got)) != 0) break;
        if (got == 0) break;
        if ((rc = full_pwrite(p->fd, buf, got, offset)) != 0) break;
        offset += got;
    }
    close(src);
    if (rc == 0) *copied = 1;
    return rc;
}

int posix_io_open(const char *path, posix_io_mode mode, shard_io_callbacks *callbacks_out,
                  posix_io **ctx_out) {
    posix_io *p;
    int rc = 0;
    if (path == NULL || callbacks_out == NULL ||
        (mode != POSIX_IO_READ && mode != POSIX_IO_WRITE && mode != POSIX_IO_UPDATE))
        return EINVAL;
    p = (posix_io *)calloc(1, sizeof *p);
    if (p == NULL) return ENOMEM;
    p->mode = mode;
    p->fd = -1;
    p->path = dup_str(path);
    if (p->path == NULL) {
        posix_io_discard(p);
        return ENOMEM;
    }
    if (mode == POSIX_IO_READ) {
        p->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->fd < 0 && errno != ENOENT) rc = err_code();
    } else {
        size_t n = strlen(path) + 32;
        p->tmp_path = (char *)malloc(n);
        if (p->tmp_path == NULL) {
            posix_io_discard(p);
            return ENOMEM;
        }
        snprintf(p->tmp_path, n, "%s.tmp.%ld", path, (long)getpid());
        p->fd = open(p->tmp_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (p->fd < 0) {
            rc = err_code();
            free(p->tmp_path); /* nothing was created: do not unlink another's file */
            p->tmp_path = NULL;
        } else if (mode == POSIX_IO_UPDATE) {
            rc = copy_existing(p, &p->exists);
        }
    }
    if (rc != 0) {
        posix_io_discard(p);
        return rc;
    }
    memset(callbacks_out, 0, sizeof *callbacks_out);
    callbacks_out->version = SHARD_IO_VERSION;
    callbacks_out->userdata = p;
    callbacks_out->read = cb_read;
    callbacks_out->read_suffix = cb_read_suffix;
    callbacks_out->size = cb_size;
    if (mode != POSIX_IO_READ) {
        callbacks_out->write = cb_write;
        callbacks_out->truncate = cb_truncate;
        callbacks_out->remove = cb_remove;
    }
    callbacks_out->destroy = cb_destroy;
    if (ctx_out != NULL) *ctx_out = p;
    return 0;
}

/* fsync the directory holding `path`, so a rename or unlink survives a crash. Some file
 * systems refuse fsync on directories (EINVAL); that is not an error here. */
static int sync_parent(const char *path) {
    const char *slash = strrchr(path, '/');
    char *dir;
    int fd, rc = 0;
    if (slash == NULL) {
        dir = dup_str(".");
    } else {
        size_t n = slash == path ? 1 : (size_t)(slash - path);
        dir = (char *)malloc(n + 1);
        if (dir != NULL) {
            memcpy(dir, path, n);
            dir[n] = '\0';
        }
    }
    if (dir == NULL) return ENOMEM;
    fd = open(dir, O_RDONLY | O_CLOEXEC);
    free(dir);
    if (fd < 0) return err_code();
    if (fsync(fd) != 0 && errno != EINVAL) rc = err_code();
    close(fd);
    return rc;
}

int posix_io_commit(posix_io *p) {
    if (p == NULL || p->mode == POSIX_IO_READ || p->committed) return EINVAL;
    if (!p->exists) {
        /* Finalize removed the shard (nothing stored): no object at PATH either. */
        if (unlink(p->path) != 0 && errno != ENOENT) return err_code();
    } else {
        if (fsync(p->fd) != 0) return err_code();
        if (rename(p->tmp_path, p->path) != 0) return err_code();
    }
    /* Either way the temporary is gone (renamed, or deleted here): destroy must not
     * unlink a name that may by now belong to another writer. */
    if (!p->exists) unlink(p->tmp_path);
    p->committed = 1;
    return sync_parent(p->path);
}
