/* posix_io: see posix_io.h. */
#define _XOPEN_SOURCE 700

#include "posix_io.h"

#include <dirent.h>
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
    int rw_fd;     /* store mode: PATH opened for in-place writes by the first one, or -1 */
    int reopen_err; /* store mode: errno of reopening PATH after a commit (reads report it) */
};

/* Store mode's new object: a temporary beside PATH, between create_new and commit/discard. */
typedef struct {
    int fd;
    char *path;
} posix_new;

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

/* ftruncate(2), retried on EINTR; 0 or an errno value. */
static int full_ftruncate(int fd, uint64_t len) {
    while (ftruncate(fd, (off_t)len) != 0) {
        if (errno != EINTR) return err_code();
    }
    return 0;
}

static int absent(const posix_io *p) { return p->fd < 0 || (p->tmp_path != NULL && !p->exists); }

static char *dup_str(const char *s);

/* Make the directories above `path` (mkdir -p of its dirname). */
static int make_parents(const char *path) {
    char *dir = dup_str(path);
    char *s;
    int rc = 0;
    if (dir == NULL) return ENOMEM;
    for (s = dir + 1; *s != '\0' && rc == 0; s++) {
        if (*s != '/') continue;
        *s = '\0';
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) rc = err_code();
        *s = '/';
    }
    free(dir);
    return rc;
}

/* open(2) of `path` with `flags` (mode 0644), making its directories when they are missing.
 * Returns the descriptor, or -1 with errno set. */
static int open_making_parents(const char *path, int flags) {
    int fd = open(path, flags, 0644);
    if (fd < 0 && errno == ENOENT) {
        int rc = make_parents(path);
        if (rc != 0) {
            errno = rc;
            return -1;
        }
        fd = open(path, flags, 0644);
    }
    return fd;
}

/* What a read of an absent object returns: missing, unless PATH could not be opened again
 * after a commit (store mode), which must not pass for a missing object. */
static int absent_code(const posix_io *p) {
    return p->reopen_err != 0 ? p->reopen_err : SHARD_IO_NOT_FOUND;
}

static int cb_read(void *ud, uint64_t offset, size_t len, uint8_t *buf, size_t *read_out) {
    posix_io *p = (posix_io *)ud;
    if (absent(p)) return absent_code(p);
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
    if (absent(p)) return absent_code(p);
    if ((rc = file_size(p, &size)) != 0) return rc;
    n = size < (uint64_t)len ? (size_t)size : len;
    if ((rc = full_pread(p->fd, buf, n, size - n, read_out)) != 0) return rc;
    *object_size_out = size;
    return 0;
}

static int cb_size(void *ud, uint64_t *size_out) {
    posix_io *p = (posix_io *)ud;
    if (absent(p)) return absent_code(p);
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
    int rc = full_ftruncate(p->fd, len);
    if (rc == 0) p->exists = 1;
    return rc;
}

/* The temporary is emptied, not unlinked, so that a later write needs no reopen; commit of
 * an absent object deletes PATH. */
static int cb_remove(void *ud) {
    posix_io *p = (posix_io *)ud;
    int rc = full_ftruncate(p->fd, 0);
    if (rc == 0) p->exists = 0;
    return rc;
}

/* ---- store mode: PATH changed in place, whole objects as new files renamed over it ---- */

/* PATH opened for in-place writes (created, with its directories, when missing); the read
 * descriptor opened too once the file exists. */
static int store_rw(posix_io *p, int *fd_out) {
    if (p->rw_fd < 0) {
        p->rw_fd = open_making_parents(p->path, O_RDWR | O_CREAT | O_CLOEXEC);
        if (p->rw_fd < 0) return err_code();
        if (p->fd < 0) p->fd = open(p->path, O_RDONLY | O_CLOEXEC);
        if (p->fd < 0) return err_code();
        p->reopen_err = 0;
    }
    *fd_out = p->rw_fd;
    return 0;
}

static int store_write(void *ud, uint64_t offset, const uint8_t *buf, size_t len) {
    int fd, rc = store_rw((posix_io *)ud, &fd);
    return rc != 0 ? rc : full_pwrite(fd, buf, len, offset);
}

static int store_truncate(void *ud, uint64_t len) {
    int fd, rc = store_rw((posix_io *)ud, &fd);
    return rc != 0 ? rc : full_ftruncate(fd, len);
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static int store_remove(void *ud) {
    posix_io *p = (posix_io *)ud;
    if (unlink(p->path) != 0 && errno != ENOENT) return err_code();
    close_fd(&p->fd);
    close_fd(&p->rw_fd);
    p->reopen_err = 0; /* missing now */
    return 0;
}

static void free_new(posix_new *n) {
    close_fd(&n->fd);
    free(n->path);
    free(n);
}

static int store_create_new(void *ud, void **new_out) {
    posix_io *p = (posix_io *)ud;
    size_t len = strlen(p->path) + 64;
    posix_new *n = (posix_new *)calloc(1, sizeof *n);
    int attempt;
    if (n == NULL) return ENOMEM;
    n->fd = -1;
    n->path = (char *)malloc(len);
    if (n->path == NULL) {
        free_new(n);
        return ENOMEM;
    }
    /* Unique among this process's new objects (their addresses differ; no shared counter, so
     * threads need no lock); a name left by a crashed process with the same pid is skipped. */
    for (attempt = 0; attempt < 100; attempt++) {
        snprintf(n->path, len, "%s.tmp.%ld.%lx.%d", p->path, (long)getpid(),
                 (unsigned long)(uintptr_t)n, attempt);
        n->fd = open_making_parents(n->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC);
        if (n->fd >= 0 || errno != EEXIST) break;
    }
    if (n->fd < 0) {
        int rc = err_code();
        free_new(n); /* nothing was created: nothing to unlink */
        return rc;
    }
    *new_out = n;
    return 0;
}

static int store_write_new(void *ud, void *new_object, uint64_t offset, const uint8_t *buf,
                           size_t len) {
    (void)ud;
    return full_pwrite(((posix_new *)new_object)->fd, buf, len, offset);
}

static void store_discard_new(void *ud, void *new_object) {
    posix_new *n = (posix_new *)new_object;
    (void)ud;
    unlink(n->path);
    free_new(n);
}

/* The new object's size must be `len`; then one rename puts it in place of PATH. On any
 * failure the temporary is deleted and PATH stays as it was. */
static int store_commit_new(void *ud, void *new_object, uint64_t len) {
    posix_io *p = (posix_io *)ud;
    posix_new *n = (posix_new *)new_object;
    struct stat st;
    int rc = 0;
    if (fstat(n->fd, &st) != 0) {
        rc = err_code();
    } else if ((uint64_t)st.st_size != len) {
        rc = EIO;
    } else if (rename(n->path, p->path) != 0) {
        rc = err_code();
    }
    if (rc != 0) {
        store_discard_new(ud, n);
        return rc;
    }
    free_new(n);
    /* The descriptors are the replaced file's: read the new one from now on. The commit is
     * done either way; a failure to reopen is reported by later reads, not as a commit's. */
    close_fd(&p->rw_fd);
    close_fd(&p->fd);
    p->fd = open(p->path, O_RDONLY | O_CLOEXEC);
    p->reopen_err = p->fd < 0 ? err_code() : 0;
    return 0;
}

static void cb_destroy(void *ud) { posix_io_discard((posix_io *)ud); }

void posix_io_discard(posix_io *p) {
    if (p == NULL) return;
    close_fd(&p->fd);
    close_fd(&p->rw_fd);
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
        (mode != POSIX_IO_READ && mode != POSIX_IO_WRITE && mode != POSIX_IO_UPDATE &&
         mode != POSIX_IO_STORE))
        return EINVAL;
    p = (posix_io *)calloc(1, sizeof *p);
    if (p == NULL) return ENOMEM;
    p->mode = mode;
    p->fd = -1;
    p->rw_fd = -1;
    p->path = dup_str(path);
    if (p->path == NULL) {
        posix_io_discard(p);
        return ENOMEM;
    }
    if (mode == POSIX_IO_READ || mode == POSIX_IO_STORE) {
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
    if (mode == POSIX_IO_WRITE || mode == POSIX_IO_UPDATE) {
        callbacks_out->write = cb_write;
        callbacks_out->truncate = cb_truncate;
        callbacks_out->remove = cb_remove;
    } else if (mode == POSIX_IO_STORE) {
        callbacks_out->write = store_write;
        callbacks_out->truncate = store_truncate;
        callbacks_out->remove = store_remove;
        callbacks_out->create_new = store_create_new;
        callbacks_out->write_new = store_write_new;
        callbacks_out->commit_new = store_commit_new;
        callbacks_out->discard_new = store_discard_new;
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
    if (p == NULL || p->mode == POSIX_IO_READ || p->mode == POSIX_IO_STORE || p->committed)
        return EINVAL;
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

/* ---- posix_store: a directory as a store --------------------------------------------- */

static int32_t store_open_object(void *ud, const char *key, shard_io_callbacks *io_out) {
    const char *root = (const char *)ud;
    size_t len = strlen(root) + strlen(key) + 2;
    char *path = (char *)malloc(len);
    int rc;
    if (path == NULL) return ENOMEM;
    snprintf(path, len, "%s/%s", root, key);
    rc = posix_io_open(path, POSIX_IO_STORE, io_out, NULL);
    free(path);
    return rc;
}

/* Report the regular files below ROOT/`dir` (a key prefix ending in '/', or "") whose keys
 * start with `prefix`; `depth` levels are left (a link loop ends there). */
static int list_below(const char *root, const char *dir, const char *prefix, int depth,
                      shard_key_fn on_key, void *state) {
    size_t root_len = strlen(root), dir_len = strlen(dir), pre_len = strlen(prefix);
    char *path = (char *)malloc(root_len + dir_len + 2);
    DIR *d;
    struct dirent *e;
    int rc = 0;
    if (path == NULL) return ENOMEM;
    snprintf(path, root_len + dir_len + 2, "%s/%s", root, dir);
    d = opendir(path);
    free(path);
    if (d == NULL) return errno == ENOENT || errno == ENOTDIR ? 0 : err_code();
    while (rc == 0) {
        size_t name_len, key_len;
        char *key;
        struct stat st;
        errno = 0;
        e = readdir(d);
        if (e == NULL) {
            if (errno != 0) rc = err_code();
            break;
        }
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        name_len = strlen(e->d_name);
        key_len = dir_len + name_len;
        key = (char *)malloc(root_len + key_len + 3);
        if (key == NULL) {
            rc = ENOMEM;
            break;
        }
        /* ROOT/KEY then KEY alone, in one buffer. */
        snprintf(key, root_len + key_len + 3, "%s/%s%s", root, dir, e->d_name);
        if (stat(key, &st) == 0) {
            const char *k = key + root_len + 1;
            size_t common = key_len < pre_len ? key_len : pre_len;
            if (S_ISDIR(st.st_mode) && depth > 0 && strncmp(k, prefix, common) == 0) {
                /* Only directories that can hold keys with the prefix. */
                key[root_len + 1 + key_len] = '/';
                key[root_len + 2 + key_len] = '\0';
                rc = list_below(root, k, prefix, depth - 1, on_key, state);
            } else if (S_ISREG(st.st_mode) && key_len >= pre_len &&
                       strncmp(k, prefix, pre_len) == 0) {
                on_key(state, k, key_len);
            }
        } /* else a dangling link or a file gone meanwhile: no object */
        free(key);
    }
    closedir(d);
    return rc;
}

static int32_t store_list(void *ud, const char *prefix, shard_key_fn on_key, void *state) {
    const char *slash = strrchr(prefix, '/');
    size_t dir_len = slash == NULL ? 0 : (size_t)(slash - prefix) + 1;
    char *dir = (char *)malloc(dir_len + 1);
    int rc;
    if (dir == NULL) return ENOMEM;
    memcpy(dir, prefix, dir_len);
    dir[dir_len] = '\0';
    rc = list_below((const char *)ud, dir, prefix, 64, on_key, state);
    free(dir);
    return rc;
}

static void store_destroy(void *ud) { free(ud); }

int posix_store_open(const char *root, uint32_t flags, shard_store_callbacks *store_out) {
    char *r;
    if (root == NULL || store_out == NULL) return EINVAL;
    r = dup_str(root);
    if (r == NULL) return ENOMEM;
    memset(store_out, 0, sizeof *store_out);
    store_out->version = SHARD_STORE_VERSION;
    store_out->flags = flags;
    store_out->userdata = r;
    store_out->open_object = store_open_object;
    store_out->destroy = store_destroy;
    store_out->list = store_list;
    return 0;
}

void posix_store_discard(shard_store_callbacks *store) {
    if (store == NULL) return;
    free(store->userdata);
    store->userdata = NULL;
}
