/*
 * mem_io: an in-memory back end for zarrshard's shard_io_callbacks, for tests.
 *
 * One mem_io is one object (a growable byte buffer that may also not exist). It counts the
 * calls of every kind and the bytes read, and can fail the N-th call of a kind with a chosen
 * code. All functions and callbacks are thread-safe (one mutex), so a read handle may be
 * used from many threads.
 *
 * Ownership is reference counted, so a test can look at the object after the handle that
 * wrote it is closed, and can check that the library called destroy exactly once:
 *
 *     mem_io *m = mem_io_new(NULL, 0);              // refs 1 (the test's)
 *     shard_io_callbacks io;
 *     mem_io_callbacks(m, &io);                     // refs 2: one for the table
 *     if (shard_open(codec, &io, mode, &h) != SHARD_OK)
 *         io.destroy(io.userdata);                  // a failed open leaves it with us
 *     ...
 *     shard_close(h);                               // destroy: refs 1
 *     mem_io_release(m);                            // refs 0: freed
 */
#ifndef MEM_IO_H
#define MEM_IO_H

#include <stddef.h>
#include <stdint.h>

#include "zarrshard.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Call kinds, for counters and fault injection. */
typedef enum {
    MEM_IO_READ = 0,
    MEM_IO_READ_SUFFIX,
    MEM_IO_SIZE,
    MEM_IO_WRITE,
    MEM_IO_TRUNCATE,
    MEM_IO_REMOVE,
    MEM_IO_CREATE_NEW, /* the new-object callbacks (mem_io_new_object_callbacks) */
    MEM_IO_WRITE_NEW,
    MEM_IO_COMMIT_NEW,
    MEM_IO_DISCARD_NEW, /* counted; a discard cannot fail */
    MEM_IO_ANY,         /* every kind above, counted together */
    MEM_IO_KINDS
} mem_io_kind;

typedef struct mem_io mem_io;

/**
 * A new object holding a copy of `initial` (`len` bytes). `initial == NULL` means the object
 * does not exist (reads return SHARD_IO_NOT_FOUND) until it is written. The caller holds one
 * reference. NULL when out of memory.
 */
mem_io *mem_io_new(const uint8_t *initial, size_t len);

/** Drop one reference; the last frees the object. NULL is a no-op. */
void mem_io_release(mem_io *m);

/** The number of references (1 once every handle using it was closed). */
int mem_io_refs(mem_io *m);

/**
 * Fill `*io` with a complete table for `m` (every callback) and take a reference for it,
 * which the table's destroy drops. Tests may clear optional callbacks afterwards.
 */
void mem_io_callbacks(mem_io *m, shard_io_callbacks *io);

/**
 * mem_io_callbacks plus the version-3 new-object callbacks: a whole object is built aside
 * (create_new, write_new) and swapped in at commit_new, so readers see the old bytes until
 * then, and discard_new drops it. One new object at a time per mem_io (a second create_new
 * before the first is committed or discarded fails with EBUSY); commit_new of a length other
 * than the end of the writes fails with EINVAL and keeps the old bytes.
 */
void mem_io_new_object_callbacks(mem_io *m, shard_io_callbacks *io);

/** Whether a new object is being written (created, neither committed nor discarded yet). */
int mem_io_new_object_live(mem_io *m);

/** Whether the object exists, and a copy of its bytes. */
int mem_io_exists(mem_io *m);
size_t mem_io_size(mem_io *m);
/** Copy up to `cap` bytes into `buf`; returns the object's size. */
size_t mem_io_copy(mem_io *m, uint8_t *buf, size_t cap);
/** Replace the object's contents (`data == NULL`: it no longer exists). 0, or ENOMEM. */
int mem_io_set(mem_io *m, const uint8_t *data, size_t len);

/** Calls of `kind` since the last reset (MEM_IO_ANY: all kinds). */
uint64_t mem_io_calls(mem_io *m, mem_io_kind kind);
/** Calls of read and read_suffix together, the storage requests a reader makes. */
uint64_t mem_io_reads(mem_io *m);
/** Bytes returned by read and read_suffix since the last reset. */
uint64_t mem_io_bytes_read(mem_io *m);
/** Zero the counters (the fault's call number counts from here too). */
void mem_io_reset_counters(mem_io *m);

/**
 * Fail the `nth` (1-based, counted from the last reset) call of `kind` with `code` (any
 * non-zero value; the call does nothing else). `nth == 0` disarms. One fault at a time.
 */
void mem_io_fail(mem_io *m, mem_io_kind kind, uint64_t nth, int32_t code);
/** How many calls the armed fault has failed (0 or 1). */
int mem_io_faults_fired(mem_io *m);

#ifdef __cplusplus
}
#endif

#endif /* MEM_IO_H */
