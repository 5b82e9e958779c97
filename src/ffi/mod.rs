//! The C ABI: the only module with `unsafe` and `extern "C"` (besides the blosc binding).
//!
//! Modelled on rustls-ffi: one module per concept (`codec`, `shard`, `array`, `io`), infrastructure in
//! `status` (the status enum), `error` (panic boundary, thread-local message) and `handle`
//! (pointer casts and NULL checks). Every exported function runs inside `guard`, returns a
//! `shard_status`, writes its `*_out` parameters only on success, and checks every pointer.
//! `include/zarrshard.h` is generated from these doc comments by cbindgen.
//!
//! # Safety
//!
//! Every exported function has the same contract: pointer arguments are NULL or valid for the
//! lengths passed with them; handles come from this library and are not used after being
//! freed.

#![allow(non_camel_case_types)]
// One safety contract covers every exported function, stated here rather than on each: pointer
// arguments are NULL or valid for the lengths passed with them; handles come from this
// library's constructors and are not used after being freed; a write handle is not freed while
// another thread uses it.
#![allow(clippy::missing_safety_doc)]

pub mod array;
pub mod codec;
pub mod error;
pub mod handle;
pub mod io;
pub mod node;
pub mod shard;
pub mod status;
pub mod store;

use handle::{bytes_mut, copy_cstr, optional_out, out};
use status::shard_status;
use std::ffi::c_char;

/// The library version, a static NUL-terminated string such as `"0.1.0"`. Never free it.
/// Thread-safe.
#[no_mangle]
pub extern "C" fn shard_version() -> *const c_char {
    static VERSION: &std::ffi::CStr = match std::ffi::CStr::from_bytes_with_nul(
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes(),
    ) {
        Ok(v) => v,
        Err(_) => c"unknown",
    };
    VERSION.as_ptr()
}

/// A static NUL-terminated description of `status` (any `uint32_t`; unknown values give
/// `"unknown status"`). Never free it. Thread-safe.
#[no_mangle]
pub extern "C" fn shard_status_str(status: u32) -> *const c_char {
    use shard_status::*;
    let all = [
        SHARD_OK,
        SHARD_ERR_NULL_POINTER,
        SHARD_ERR_INVALID_METADATA,
        SHARD_ERR_UNSUPPORTED_CODEC,
        SHARD_ERR_CORRUPT,
        SHARD_ERR_CHECKSUM,
        SHARD_ERR_IO,
        SHARD_ERR_BUFFER_SIZE,
        SHARD_ERR_INVALID_ARGUMENT,
        SHARD_ERR_INVALID_STATE,
        SHARD_ERR_UNSUPPORTED,
        SHARD_ERR_PANIC,
        SHARD_ERR_BUSY,
    ];
    all.iter()
        .find(|s| **s as u32 == status)
        .map_or(c"unknown status".as_ptr(), |s| s.describe().as_ptr())
}

/// Copy the message of the last failed call on this thread into `buf` as a NUL-terminated
/// string, truncated to `len` bytes; `*written_out` receives the bytes written without the
/// NUL: at most `len - 1` bytes, cut at a UTF-8 character boundary, then the NUL. With
/// `(NULL, 0)` only the full length is stored (a size query). `written_out` may be NULL (as
/// every `*_out` that only reports a length). The message is empty
/// when no call has failed on this thread. The caller owns `buf`; nothing is allocated for it.
/// Thread-safe (the message is per thread). Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`.
#[no_mangle]
pub unsafe extern "C" fn shard_last_error(
    buf: *mut c_char,
    len: usize,
    written_out: *mut usize,
) -> shard_status {
    // Not through `guard`: it would overwrite the message being read.
    // SAFETY: per the documented contract.
    let Ok(buf) = (unsafe { bytes_mut(buf.cast(), len, "buf") }) else {
        return shard_status::SHARD_ERR_NULL_POINTER;
    };
    let msg = error::last_message();
    let written = if buf.is_empty() {
        msg.len()
    } else {
        copy_cstr(&msg, buf)
    };
    // SAFETY: NULL or valid for one write, per the documented contract.
    if let Some(w) = unsafe { optional_out(written_out) } {
        *w = written;
    }
    shard_status::SHARD_OK
}

/// The most threads `shard_set_threads` accepts.
pub const SHARD_MAX_THREADS: usize = 1024;
// A literal for cbindgen, which does not follow paths; held equal to the core's.
const _: () = assert!(SHARD_MAX_THREADS == crate::runtime::threads::MAX_THREADS);

/// Set the number of threads the library uses to encode and decode inner chunks in parallel:
/// 0 = one per core (the default, or the `ZARRSHARD_THREADS` environment variable), 1 = only
/// the calling thread (for hosts that manage their own threads). The calling thread counts:
/// a call that decodes or encodes one shard's chunks runs them on the calling thread and
/// `threads - 1` of the library's. Process-wide; takes effect for calls that start afterwards.
/// On Linux a library thread that finds itself queued on the CPU of the call's other thread
/// moves off it by narrowing its own CPU affinity and restoring it at once; the affinity of
/// the host's threads is never changed, and the calling thread at most yields once per call.
/// The library's threads call the host's callbacks only for array stores flagged
/// `SHARD_STORE_THREAD_SAFE`. At most `SHARD_MAX_THREADS` (1024; `ZARRSHARD_THREADS` and the
/// core count are capped there too). Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_INVALID_ARGUMENT` (more than `SHARD_MAX_THREADS`, or the threads could not be
/// started; the setting is unchanged), `SHARD_ERR_PANIC`.
#[no_mangle]
pub extern "C" fn shard_set_threads(threads: usize) -> shard_status {
    error::guard(|| crate::runtime::threads::set_threads(threads).map_err(Into::into))
}

/// Store the number of threads the library encodes and decodes with in `*threads_out`.
/// Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_get_threads(threads_out: *mut usize) -> shard_status {
    error::guard(|| {
        // SAFETY: per the documented contract.
        *unsafe { out(threads_out, "threads_out") }? = crate::runtime::threads::threads();
        Ok(())
    })
}

/// Set the memory limit: the most bytes one buffer the library allocates for data (a decoded
/// inner chunk or shard, one inner chunk's encoded bytes, a whole object read through callbacks
/// without `size`) may take; a larger one is refused with `SHARD_ERR_INVALID_ARGUMENT` before it
/// is allocated. The size query of `shard_read_chunk_raw`, from which hosts size their own
/// buffers, is held to the same limit. 0 restores the default (the `ZARRSHARD_MEMORY_LIMIT`
/// environment variable in bytes, else 4 GiB). Process-wide; takes effect for calls that start
/// afterwards. Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub extern "C" fn shard_set_memory_limit(bytes: u64) -> shard_status {
    error::guard(|| {
        crate::runtime::limits::set_memory_limit(bytes);
        Ok(())
    })
}

/// Store the memory limit in bytes (see `shard_set_memory_limit`) in `*bytes_out`.
/// Thread-safe. Returns `SHARD_OK`, `SHARD_ERR_NULL_POINTER`, `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_get_memory_limit(bytes_out: *mut u64) -> shard_status {
    error::guard(|| {
        // SAFETY: per the documented contract.
        *unsafe { out(bytes_out, "bytes_out") }? = crate::runtime::limits::memory_limit();
        Ok(())
    })
}

/// Free the memory the library keeps between calls so that no inner chunk allocates: the
/// free list of encode segments (up to 4 MiB per library thread), the buffers region reads
/// fetched shards into (up to 8 MiB per library thread, 64 MiB in all) and the codec contexts
/// (zstd, gzip) and scratch chunk of the calling thread and of every library thread; while
/// `shard_set_threads(1)` is in force, the library's threads (which only sleep then) are ended
/// too. For a host done writing or reading for a while; later calls rebuild what they need,
/// once per thread. Other host threads keep theirs until they exit or call this themselves.
/// Memory in use by a call in progress on another thread is not touched; waits until each
/// library thread has finished the inner chunk or task it is running.
///
/// `bytes_out` (may be NULL) receives the bytes of the library's own buffers freed (segments,
/// read buffers and scratch chunks, exact); `contexts_out` (may be NULL) the number of codec
/// contexts freed (counted: libdeflate does not report its size). A second call right after reports
/// 0 and 0 unless other threads worked in between. Thread-safe. Returns `SHARD_OK`,
/// `SHARD_ERR_PANIC`.
#[no_mangle]
pub unsafe extern "C" fn shard_release_memory(
    bytes_out: *mut u64,
    contexts_out: *mut usize,
) -> shard_status {
    error::guard(|| {
        let released = crate::runtime::memory::release_memory();
        // SAFETY: per the documented contract (NULL or valid for one write each).
        if let Some(b) = unsafe { bytes_out.as_mut() } {
            *b = released.bytes;
        }
        // SAFETY: as above.
        if let Some(c) = unsafe { contexts_out.as_mut() } {
            *c = released.contexts;
        }
        Ok(())
    })
}

/// The host's own error code from the last `SHARD_ERR_IO` on this thread (what the failing
/// callback returned), 0 when the last failure was not an I/O error. Thread-safe.
#[no_mangle]
pub extern "C" fn shard_last_io_code() -> i32 {
    error::last_io_code()
}
