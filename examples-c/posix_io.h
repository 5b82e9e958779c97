/*
 * posix_io: a POSIX file back end for zarrshard's shard_io_callbacks, and a directory as a
 * store (posix_store_open, at the end).
 *
 * One shard object is one file. Reads use pread (thread-safe, no seek state); writes use
 * pwrite. Callbacks return 0, SHARD_IO_NOT_FOUND for a missing file (it then reads as the
 * fill value), or errno.
 *
 * Crash safety. A write handle never touches PATH: it writes PATH.tmp.<pid>, and the host
 * makes the result visible with posix_io_commit only after shard_finalize returned SHARD_OK.
 * If anything fails, the host just closes the handle: destroy deletes the temporary and the
 * previous shard at PATH is intact.
 *
 *     shard_io_callbacks io;
 *     posix_io *ctx;
 *     int err = posix_io_open(path, POSIX_IO_WRITE, &io, &ctx);    // ctx: owned by `io`
 *     if (err) ...                                                // nothing to free
 *     shard_handle *h;
 *     if (shard_open(codec, &io, SHARD_MODE_WRITE_STREAMING, &h) != SHARD_OK) {
 *         posix_io_discard(ctx);        // a failed open leaves ctx with the host
 *         ...
 *     }
 *     // from here the handle owns ctx; `ctx` stays valid (borrowed) until shard_close(h)
 *     ... shard_write_chunk(h, ...) ...
 *     shard_status st = shard_finalize(h, NULL);
 *     if (st == SHARD_OK) err = posix_io_commit(ctx);   // fsync + rename (or unlink, below)
 *     shard_close(h);                   // frees ctx; deletes the temporary unless committed
 *
 * When nothing is stored, shard_finalize removes the shard (the `remove` callback): the
 * temporary is deleted and posix_io_commit then deletes PATH instead of renaming over it,
 * so an all-fill shard leaves no file, as the sharding specification expects.
 *
 * Update modes (SHARD_MODE_UPDATE_APPEND / _IN_PLACE) read the existing shard and change it:
 * open them with POSIX_IO_UPDATE, which starts the temporary as a copy of PATH (a missing
 * PATH is a new, empty shard). POSIX_IO_WRITE starts from nothing, for the buffered and
 * streaming modes, which replace the whole object. The copy costs one pass over the old
 * shard; it is what makes an update all-or-nothing. (Appending to PATH itself would not be:
 * a reader finds the index at the end of the object, so a torn append hides the old index.)
 *
 * One write context per PATH per process at a time (the temporary's name holds the pid only).
 * Requires POSIX.1-2008.
 *
 * Concurrency (the contract zarrshard's FsStore and `zarrshard import` keep too). Writers
 * of one PATH that each write a new object (POSIX_IO_WRITE / POSIX_IO_UPDATE contexts in
 * different processes, and whole objects of POSIX_IO_STORE through the new-object callbacks)
 * need no lock: PATH ends as the complete object of the one that renamed last, never a mix
 * (an update based on an older copy then drops the other's changes). Writes POSIX_IO_STORE
 * makes in place (a region write's append to a shard it covers in part) take no lock: one
 * such writer per PATH at a time, and no other writer beside it; a host that needs more
 * serializes them itself (flock(2) on PATH, say). New files are created 0644 less the
 * umask: unlike FsStore, this example does not give a new object the replaced file's mode,
 * owner and group (fchmod/fchown of the temporary before the rename would) nor follow a
 * symbolic link at PATH (the rename replaces the link).
 */
#ifndef POSIX_IO_H
#define POSIX_IO_H

#include "zarrshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/** How posix_io_open opens PATH. */
typedef enum {
    /** Read PATH in place. A missing PATH reads as SHARD_IO_NOT_FOUND (all fill value). */
    POSIX_IO_READ = 0,
    /** Write a new object to PATH.tmp.<pid>; PATH is replaced by posix_io_commit. */
    POSIX_IO_WRITE = 1,
    /** As POSIX_IO_WRITE, but the temporary starts as a copy of PATH (for update modes). */
    POSIX_IO_UPDATE = 2,
    /**
     * PATH as an object of a store (posix_store_open): read in place; whole objects written
     * through the version-3 new-object callbacks (a temporary PATH.tmp.<pid>.<n> renamed over
     * PATH at commit_new, deleted on any failure, so PATH holds the old object or the new one
     * whole); partial updates (appends, a new index) written to PATH in place; `remove`
     * deletes PATH. Missing parent directories are made. No commit by the host, and no fsync
     * (a power loss may leave either version, or on some file systems neither).
     */
    POSIX_IO_STORE = 3
} posix_io_mode;

/** The back end's context (the callbacks' userdata). Opaque. */
typedef struct posix_io posix_io;

/**
 * Open PATH (copied) in `mode` and fill `*callbacks_out` with a complete table
 * (SHARD_IO_VERSION, userdata = the new context, every callback including destroy).
 * `*ctx_out`, when `ctx_out` is not NULL, receives the same context for posix_io_commit and
 * posix_io_discard; the host only borrows it once shard_open succeeded.
 *
 * Returns 0, or an errno value (nothing allocated, outputs untouched): EINVAL for a NULL
 * argument or unknown mode, the error of open(2) (a missing PATH is not an error in read or
 * update mode), or of copying PATH in update mode.
 */
int posix_io_open(const char *path, posix_io_mode mode, shard_io_callbacks *callbacks_out,
                  posix_io **ctx_out);

/**
 * Make a successful write visible: fsync the temporary, rename it over PATH and fsync the
 * directory; or, when the shard was removed (nothing stored), delete PATH. Call once, after
 * shard_finalize returned SHARD_OK and before shard_close. Returns 0 or an errno value
 * (EINVAL: a read context, or already committed); after an error the temporary is still
 * deleted at shard_close.
 */
int posix_io_commit(posix_io *ctx);

/**
 * Fill `*store_out` with a store (shard_store_callbacks, SHARD_STORE_VERSION) over the
 * directory ROOT (copied): the object at key `c/0/1` is the file ROOT/c/0/1, opened with
 * POSIX_IO_STORE, so shard_array_write_region replaces a shard it covers entirely as one
 * rename, updates the others in place, and deletes a shard left all fill value; `list` walks
 * the directory part of the prefix (following symbolic links, at most 64 levels deep, so a
 * link loop ends). The host writes zarr.json itself. `flags` are SHARD_STORE_* flags
 * (SHARD_STORE_THREAD_SAFE is safe: each object is a file read with pread). The table's
 * userdata is owned by the array once shard_array_open succeeded (its destroy frees it);
 * after a failed open call posix_store_discard.
 *
 * Returns 0, or an errno value (nothing allocated): EINVAL for a NULL argument, ENOMEM.
 */
int posix_store_open(const char *root, uint32_t flags, shard_store_callbacks *store_out);

/** Free a store table's userdata the library never took (shard_array_open failed). */
void posix_store_discard(shard_store_callbacks *store);

/**
 * Free a context the library never took: after shard_open failed (or was never called).
 * Deletes an uncommitted temporary. Same as the table's destroy. NULL is a no-op.
 */
void posix_io_discard(posix_io *ctx);

#ifdef __cplusplus
}
#endif

#endif /* POSIX_IO_H */
