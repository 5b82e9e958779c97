//! Output files of `export` and JSON `refs`: a regular file is written to `OUT.partial` and
//! renamed into place, so a failure never leaves a truncated OUT that looks complete. Anything
//! else that already exists — a FIFO, a character device such as `/dev/null`, a terminal,
//! `/dev/stdout` — is written into directly: renaming over it would replace the device or
//! pipe with a regular file (or fail on `/dev/OUT.partial`). A symbolic link is followed, as
//! `cp` and a shell's `>` follow it: the file it names is replaced (the partial file sits next
//! to that file, on its file system) and the link stays. Every error names the path.

use std::fs::File;
use std::path::{Path, PathBuf};
use zarrshard::{Error, Result};

/// True when OUT must be written in place: it exists and is not a regular file (after
/// following symbolic links), or it is a name for an open file descriptor (`/dev/stdout`,
/// `/dev/fd/N`, `/proc/self/fd/N`: their directory resolves into `/dev` or `/proc`).
fn in_place(out: &Path) -> bool {
    if let Ok(m) = std::fs::metadata(out) {
        if !m.is_file() {
            return true;
        }
    }
    let parent = match out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    std::fs::canonicalize(parent)
        .map(|p| p == Path::new("/dev") || p.starts_with("/proc"))
        .unwrap_or(false)
}

/// The most links followed before giving up, as Linux's `ELOOP` does.
const MAX_LINKS: usize = 40;

/// OUT with symbolic links followed to the file they name, which need not exist yet (a
/// dangling link is how one asks for a file elsewhere). A relative target is relative to the
/// link's directory.
fn link_target(out: &Path) -> Result<PathBuf> {
    let mut path = out.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&path).map_err(|e| Error::io_at(&path, e))?;
                path = match path.parent() {
                    Some(dir) if target.is_relative() => dir.join(target),
                    _ => target,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(Error::io_at(
        out,
        std::io::Error::from_raw_os_error(libc::ELOOP),
    ))
}

/// Run `write` on the file that becomes OUT, then make it durable and put it in place.
pub fn write_output<T>(out: &Path, write: impl FnOnce(&mut File) -> Result<T>) -> Result<T> {
    // A name for a descriptor (`/dev/stdout` → `/proc/self/fd/1` → `pipe:[…]`) is a link
    // too, but one that must not be followed: such OUTs are written in place first.
    let direct = in_place(out);
    let target = if direct {
        out.to_path_buf()
    } else {
        link_target(out)?
    };
    if direct || in_place(&target) {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(out)
            .map_err(|e| Error::io_at(out, e))?;
        let value = write(&mut file).map_err(|e| name_output(e, out))?;
        // fsync means nothing for a pipe or device (and fails with EINVAL on some).
        if file.metadata().map(|m| m.is_file()).unwrap_or(false) {
            file.sync_all().map_err(|e| Error::io_at(out, e))?;
        }
        return Ok(value);
    }
    let out = &target;
    let tmp = partial(out);
    let result = (|| {
        let mut file = File::create(&tmp).map_err(|e| Error::io_at(&tmp, e))?;
        let value = write(&mut file).map_err(|e| name_output(e, out))?;
        file.sync_all().map_err(|e| Error::io_at(&tmp, e))?;
        std::fs::rename(&tmp, out).map_err(|e| Error::io_at(out, e))?;
        Ok(value)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// An error of writing OUT that does not name it yet (the writer of the data knows no path):
/// the file too large for `ulimit -f` (`EFBIG`; the tool ignores `SIGXFSZ`), no space left,
/// over quota. Reading shards never fails with those, and names its own paths.
fn name_output(e: Error, out: &Path) -> Error {
    match e {
        Error::Io { code, message }
            if is_full(code) && !message.contains(&*out.to_string_lossy()) =>
        {
            Error::Io {
                code,
                message: format!("{}: {message}", out.display()),
            }
        }
        other => other,
    }
}

/// `EFBIG`, `ENOSPC`, `EDQUOT`: the file or the file system is full.
fn is_full(code: i32) -> bool {
    #[cfg(unix)]
    return [libc::EFBIG, libc::ENOSPC, libc::EDQUOT].contains(&code);
    #[cfg(not(unix))]
    return [libc::EFBIG, libc::ENOSPC].contains(&code);
}

/// `OUT.partial`, next to OUT.
fn partial(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}
