//! Pointer plumbing in one place: opaque handles tied to their Rust type by one trait (so no
//! function casts raw pointers by hand), and NULL-checked argument borrowing.

use super::error::{Failure, FfiResult};
use std::ffi::c_char;

/// Ties an opaque C handle type to the Rust value it stands for.
pub(crate) trait Handle: Sized {
    type Rust;

    /// Box `value` and give the caller ownership as an opaque pointer.
    fn into_ptr(value: Self::Rust) -> *mut Self {
        Box::into_raw(Box::new(value)).cast()
    }

    /// Borrow the value behind a handle the caller passed in.
    ///
    /// # Safety
    /// `p` is NULL or a pointer from `into_ptr` not yet given to `free`.
    unsafe fn borrow<'a>(p: *const Self, name: &'static str) -> FfiResult<&'a Self::Rust> {
        // SAFETY: per the contract, a non-NULL `p` points at a live `Self::Rust`.
        unsafe { p.cast::<Self::Rust>().as_ref() }.ok_or(Failure::Null(name))
    }

    /// Take back ownership and drop the value; NULL is a no-op.
    ///
    /// # Safety
    /// `p` is NULL or a pointer from `into_ptr` not yet freed.
    unsafe fn free(p: *mut Self) {
        if !p.is_null() {
            // SAFETY: per the contract, `p` came from `Box::into_raw` of a `Self::Rust`.
            drop(unsafe { Box::from_raw(p.cast::<Self::Rust>()) });
        }
    }
}

/// A required out-parameter; written only on success by the caller of this helper.
///
/// # Safety
/// `p` is NULL or valid for writes of one `T` for `'a`.
pub(crate) unsafe fn out<'a, T>(p: *mut T, name: &'static str) -> FfiResult<&'a mut T> {
    // SAFETY: per the contract.
    unsafe { p.as_mut() }.ok_or(Failure::Null(name))
}

/// An optional out-parameter that only reports a length: `None` for NULL, which every such
/// parameter accepts (the caller did not ask for the length).
///
/// # Safety
/// `p` is NULL or valid for one write of `T`.
pub(crate) unsafe fn optional_out<'a, T>(p: *mut T) -> Option<&'a mut T> {
    // SAFETY: per the contract.
    unsafe { p.as_mut() }
}

/// `len` elements of `T` as a slice length: at most `isize::MAX` bytes, as a slice must be (a
/// hostile or mistaken count would otherwise make `from_raw_parts` undefined behaviour).
fn slice_len<T>(len: usize, name: &'static str) -> FfiResult<usize> {
    match len.checked_mul(std::mem::size_of::<T>()) {
        Some(bytes) if bytes <= isize::MAX as usize => Ok(len),
        _ => Err(Failure::Core(crate::Error::InvalidArgument(format!(
            "`{name}`: {len} elements of {} bytes exceed the address space",
            std::mem::size_of::<T>()
        )))),
    }
}

/// An input buffer of `len` elements. `(NULL, 0)` is the empty buffer; NULL with a length is
/// an error, and so is a length whose byte size exceeds `isize::MAX` (invalid argument).
///
/// # Safety
/// A non-NULL `p` is valid for reads of `len` elements for `'a`.
pub(crate) unsafe fn bytes<'a, T>(
    p: *const T,
    len: usize,
    name: &'static str,
) -> FfiResult<&'a [T]> {
    if p.is_null() {
        return if len == 0 {
            Ok(&[])
        } else {
            Err(Failure::Null(name))
        };
    }
    let len = slice_len::<T>(len, name)?;
    // SAFETY: per the contract; the byte size fits `isize`.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// An output buffer the caller owns. `(NULL, 0)` is the empty buffer; as [`bytes`] for NULL
/// and lengths past `isize::MAX`.
///
/// # Safety
/// A non-NULL `p` is valid for writes of `len` bytes for `'a` and not aliased.
pub(crate) unsafe fn bytes_mut<'a>(
    p: *mut u8,
    len: usize,
    name: &'static str,
) -> FfiResult<&'a mut [u8]> {
    if p.is_null() {
        return if len == 0 {
            Ok(&mut [])
        } else {
            Err(Failure::Null(name))
        };
    }
    let len = slice_len::<u8>(len, name)?;
    // SAFETY: per the contract; the byte size fits `isize`.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, len) })
}

/// Text given as pointer + length, which must be UTF-8.
///
/// # Safety
/// As [`bytes`].
pub(crate) unsafe fn text<'a>(
    p: *const c_char,
    len: usize,
    name: &'static str,
) -> FfiResult<&'a str> {
    // SAFETY: per the contract.
    let b = unsafe { bytes(p.cast::<u8>(), len, name) }?;
    std::str::from_utf8(b).map_err(|e| {
        Failure::Core(crate::Error::InvalidArgument(format!(
            "`{name}` is not UTF-8: {e}"
        )))
    })
}

/// A local path from `len` bytes at `p`: the bytes as they are on Unix, UTF-8 elsewhere; not
/// empty, without NUL (the OS would cut the path there).
///
/// # Safety
/// As `bytes` requires.
pub(crate) unsafe fn path(
    p: *const c_char,
    len: usize,
    name: &'static str,
) -> FfiResult<std::path::PathBuf> {
    // SAFETY: per the caller's contract.
    let raw = unsafe { bytes(p.cast::<u8>(), len, name) }?;
    if raw.is_empty() || raw.contains(&0) {
        return Err(
            crate::Error::InvalidArgument(format!("`{name}` is empty or contains NUL")).into(),
        );
    }
    #[cfg(unix)]
    let path = std::path::PathBuf::from(
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(raw),
    );
    #[cfg(not(unix))]
    let path = std::path::PathBuf::from(unsafe { text(p, len, name) }?);
    Ok(path)
}

/// Copy `s` into a caller buffer as a NUL-terminated string, truncating to fit; returns the
/// bytes written, NUL excluded.
pub(crate) fn copy_cstr(s: &str, buf: &mut [u8]) -> usize {
    if buf.is_empty() {
        return 0;
    }
    let mut n = s.len().min(buf.len() - 1);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    buf[..n].copy_from_slice(&s.as_bytes()[..n]);
    buf[n] = 0;
    n
}
