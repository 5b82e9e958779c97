//! The boundary: every exported body runs in `guard`, which catches panics, maps errors to a
//! status, and records the message in a thread-local the caller copies out with
//! `shard_last_error` (nothing the caller must free).

use super::status::shard_status;
use crate::error::Error;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    static LAST: RefCell<(String, i32)> = const { RefCell::new((String::new(), 0)) };
}

/// Record the message (and host I/O code) of the last failure on this thread. Never panics:
/// during thread teardown (a call from a pthread key destructor, after the thread-local was
/// destroyed) the message is dropped, and a slot already borrowed is left as it is.
pub(crate) fn set_last(message: String, io_code: i32) {
    let _ = LAST.try_with(|l| {
        if let Ok(mut slot) = l.try_borrow_mut() {
            *slot = (message, io_code);
        }
    });
}

/// The last failure's message on this thread (empty when none, or during thread teardown).
pub(crate) fn last_message() -> String {
    LAST.try_with(|l| l.try_borrow().map(|s| s.0.clone()).unwrap_or_default())
        .unwrap_or_default()
}

/// The last failure's host I/O code on this thread (0 when none, or during thread teardown).
pub(crate) fn last_io_code() -> i32 {
    LAST.try_with(|l| l.try_borrow().map(|s| s.1).unwrap_or(0))
        .unwrap_or(0)
}

/// The failure of an exported call, before it becomes a status.
pub(crate) enum Failure {
    Null(&'static str),
    Busy,
    Core(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Core(e)
    }
}

pub(crate) type FfiResult<T = ()> = Result<T, Failure>;

/// Run an exported function's body: `Ok` is `SHARD_OK`; an error or a panic becomes its
/// status with the message recorded for `shard_last_error`. Nothing after the body may
/// unwind across the C boundary: the reporting runs under a second `catch_unwind` too, and a
/// payload it cannot drop safely is leaked.
pub(crate) fn guard(body: impl FnOnce() -> FfiResult) -> shard_status {
    let outcome = catch_unwind(AssertUnwindSafe(body));
    match catch_unwind(AssertUnwindSafe(move || report(outcome))) {
        Ok(status) => status,
        Err(payload) => {
            std::mem::forget(payload);
            shard_status::SHARD_ERR_PANIC
        }
    }
}

/// The status of a body's outcome, its message recorded.
fn report(outcome: std::thread::Result<FfiResult>) -> shard_status {
    match outcome {
        Ok(Ok(())) => shard_status::SHARD_OK,
        Ok(Err(Failure::Null(what))) => {
            set_last(format!("`{what}` must not be NULL"), 0);
            shard_status::SHARD_ERR_NULL_POINTER
        }
        Ok(Err(Failure::Busy)) => {
            set_last(
                "the handle is in use by another thread; writes need exclusive use".into(),
                0,
            );
            shard_status::SHARD_ERR_BUSY
        }
        Ok(Err(Failure::Core(e))) => {
            let code = match &e {
                Error::Io { code, .. } => *code,
                _ => 0,
            };
            set_last(e.to_string(), code);
            shard_status::from(&e)
        }
        Err(panic) => {
            let msg = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            // The payload's own drop could panic: not here.
            std::mem::forget(panic);
            set_last(format!("internal error: {msg}"), 0);
            shard_status::SHARD_ERR_PANIC
        }
    }
}
