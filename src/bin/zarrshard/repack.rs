//! `repack`: rewrite an array's shards into a new layout (see `zarrshard::array::repack`), into a new
//! directory or in place.

use crate::args::uint_list;
use crate::progress::{bar, Unit};
use crate::OrderArg;
use clap::{Args, ValueEnum};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use zarrshard::{CodecChain, Error, FsStore, IndexLocation, RepackOptions};

#[derive(Args)]
pub struct RepackArgs {
    /// The array to repack (any form ARRAY_DIR takes in the other commands).
    src_dir: PathBuf,
    /// Where to write the repacked array: a directory that does not exist or is empty.
    /// Without it, SRC_DIR is replaced: the new array is written to SRC_DIR.repack-tmp, then
    /// SRC_DIR is renamed to SRC_DIR.repack-old, the new one into place, and the old one
    /// removed (after a crash, one of the two names holds a complete array). Before anything
    /// is written, the directory holding SRC_DIR and every directory of the array must be
    /// writable by the user, or the repack is refused naming the one that is not. The new
    /// array's files get the permission bits all old files share (a 0600 shard makes them all
    /// 0600), its directories those all old directories share, and the old directory's owner
    /// and group where permitted.
    dst_dir: Option<PathBuf>,
    /// New shard shape (the chunk grid's chunk shape), comma-separated; a multiple of the
    /// inner chunk shape.
    ///
    /// Example: zarrshard repack a.zarr b.zarr --shard-shape 128,128
    #[arg(long, value_name = "A,B,..")]
    shard_shape: Option<String>,
    /// New inner chunk shape, comma-separated (chunks are then re-encoded).
    ///
    /// Example: zarrshard repack a.zarr b.zarr --inner-chunk-shape 16,16
    #[arg(long, value_name = "A,B,..")]
    inner_chunk_shape: Option<String>,
    /// New codecs of each inner chunk, as a Zarr v3 codec list (chunks are then re-encoded).
    ///
    /// Example: zarrshard repack a.zarr b.zarr --inner-codecs '[{"name":"bytes","configuration":{"endian":"little"}},{"name":"zstd","configuration":{"level":3,"checksum":false}}]'
    #[arg(long, value_name = "JSON")]
    inner_codecs: Option<String>,
    /// Where the shard index goes.
    ///
    /// Example: zarrshard repack a.zarr --index-location start
    #[arg(long, value_enum)]
    index_location: Option<LocationArg>,
    /// Order of inner chunks in the new shards.
    ///
    /// Example: zarrshard repack a.zarr b.zarr --order morton
    #[arg(long, value_enum, default_value_t = OrderArg::C)]
    order: OrderArg,
}

#[derive(Clone, Copy, ValueEnum)]
enum LocationArg {
    Start,
    End,
}

pub fn run(args: RepackArgs) -> zarrshard::Result<ExitCode> {
    let src = crate::open(&args.src_dir)?;
    let shape = |s: &Option<String>| {
        s.as_deref()
            .map(uint_list)
            .transpose()
            .map_err(Error::InvalidArgument)
    };
    let inner_codecs = match &args.inner_codecs {
        None => None,
        Some(text) => {
            let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
                Error::InvalidArgument(format!("--inner-codecs is not valid JSON: {e}"))
            })?;
            Some(CodecChain::from_json(&v, "--inner-codecs")?)
        }
    };
    let options = RepackOptions {
        shard_shape: shape(&args.shard_shape)?,
        inner_chunk_shape: shape(&args.inner_chunk_shape)?,
        inner_codecs,
        index_location: args.index_location.map(|l| match l {
            LocationArg::Start => IndexLocation::Start,
            LocationArg::End => IndexLocation::End,
        }),
        order: args.order.into(),
    };
    let target = zarrshard::repacked_metadata(src.metadata(), &options)?;
    let in_place = args.dst_dir.is_none();
    let mut src_dir = args.src_dir.clone();
    let dst = match &args.dst_dir {
        Some(d) => d.clone(),
        None => {
            if !args.src_dir.join("zarr.json").is_file() && !args.src_dir.join(".zarray").is_file()
            {
                return Err(Error::InvalidArgument(
                    "in-place repack needs an array directory; give DST_DIR".into(),
                ));
            }
            src_dir =
                std::fs::canonicalize(&args.src_dir).map_err(|e| Error::io_at(&args.src_dir, e))?;
            sibling(&src_dir, ".repack-tmp")
        }
    };
    // In place, everything the swap needs is checked before anything is written: the
    // directory that holds SRC_DIR (for the new and old names) and every directory of the old
    // array (to remove it afterwards).
    let kept = match in_place {
        true => Some(check_replaceable(&src_dir)?),
        false => None,
    };
    let created = prepare_empty_dir(&dst)?;
    let shards = crate::saturating_product(&target.grid_shape());
    let progress = bar("repack", shards, Unit::Shards);
    let result = zarrshard::repack(&src, FsStore::new(&dst), target, options.order, &|n| {
        progress.inc(n)
    });
    progress.finish_and_clear();
    let report = match result {
        Ok((_, report)) => report,
        Err(e) => {
            // Only what this run wrote: `prepare_empty_dir` made sure the directory was empty.
            let _ = std::fs::remove_dir_all(&dst);
            if !created {
                let _ = std::fs::create_dir(&dst);
            }
            return Err(e);
        }
    };
    if in_place {
        let old = sibling(&src_dir, ".repack-old");
        if old.exists() {
            return Err(Error::InvalidArgument(format!(
                "{} exists; the repacked array is in {}",
                old.display(),
                dst.display()
            )));
        }
        if let Some(kept) = &kept {
            kept.apply(&dst)?;
        }
        std::fs::rename(&src_dir, &old).map_err(|e| Error::io_at(&src_dir, e))?;
        std::fs::rename(&dst, &src_dir).map_err(|e| Error::io_at(&dst, e))?;
        std::fs::remove_dir_all(&old).map_err(|e| Error::io_at(&old, e))?;
    }
    writeln!(
        std::io::stdout().lock(),
        "shards written: {}, bytes: {}, chunks copied: {}, chunks re-encoded: {}",
        report.shards_written,
        report.bytes_written,
        report.chunks_copied,
        report.chunks_reencoded
    )?;
    Ok(ExitCode::SUCCESS)
}

/// `DIR` + `suffix` next to `DIR` (`a.zarr` → `a.zarr.repack-tmp`).
fn sibling(dir: &Path, suffix: &str) -> PathBuf {
    let mut name = dir
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_else(|| ".".into());
    name.push(suffix);
    dir.with_file_name(name)
}

/// Create `dir` (true), or accept it when it exists and is empty (false); anything else is
/// refused, so a repack never mixes its shards with older objects.
fn prepare_empty_dir(dir: &Path) -> zarrshard::Result<bool> {
    let with_path = |e: std::io::Error| Error::io_at(dir, e);
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(Error::InvalidArgument(format!(
                    "{} exists and is not empty",
                    dir.display()
                )));
            }
            Ok(false)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(with_path)?;
            Ok(true)
        }
        Err(e) => Err(with_path(e)),
    }
}

/// What an in-place repack gives the new array so that replacing the old one widens no
/// permission: the permission bits every old directory has, those every old file has (a
/// 0600 shard among 0644 ones makes every new file 0600), and the old directory's owner and
/// group (applied where this process may: root both, else a group it is in).
struct Kept {
    dir_mode: u32,
    file_mode: u32,
    owner: (u32, u32),
}

/// Before an in-place repack of `src` (canonical): refuse, naming the path, when `src`'s
/// parent or a directory of `src` is not writable by this process (the old array could
/// not be renamed or removed), and collect what the new array keeps ([`Kept`]). Symbolic
/// links inside `src` are not followed (removing the old array removes the links only).
#[cfg(unix)]
fn check_replaceable(src: &Path) -> zarrshard::Result<Kept> {
    use std::os::unix::fs::MetadataExt;
    let parent = src.parent().unwrap_or(Path::new("/"));
    writable(parent)?;
    let root = std::fs::metadata(src).map_err(|e| Error::io_at(src, e))?;
    let mut kept = Kept {
        dir_mode: 0o7777,
        file_mode: 0o7777,
        owner: (root.uid(), root.gid()),
    };
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        writable(&dir)?;
        let m = std::fs::symlink_metadata(&dir).map_err(|e| Error::io_at(&dir, e))?;
        kept.dir_mode &= m.mode() & 0o7777;
        for entry in std::fs::read_dir(&dir).map_err(|e| Error::io_at(&dir, e))? {
            let entry = entry.map_err(|e| Error::io_at(&dir, e))?;
            let path = entry.path();
            let m = std::fs::symlink_metadata(&path).map_err(|e| Error::io_at(&path, e))?;
            if m.is_dir() {
                dirs.push(path);
            } else if m.is_file() {
                kept.file_mode &= m.mode() & 0o7777;
            }
        }
    }
    Ok(kept)
}

/// `dir` writable by this process (`access(W_OK)`), else an error naming it.
#[cfg(unix)]
fn writable(dir: &Path) -> zarrshard::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let refused = |e: std::io::Error| Error::Io {
        code: e.raw_os_error().unwrap_or(-1),
        message: format!("{}: {e}: {NOT_IN_PLACE}", dir.display()),
    };
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| refused(std::io::Error::new(std::io::ErrorKind::InvalidInput, e)))?;
    // SAFETY: `c` is a NUL-terminated path that outlives the call.
    match unsafe { libc::access(c.as_ptr(), libc::W_OK) } {
        0 => Ok(()),
        _ => Err(refused(std::io::Error::last_os_error())),
    }
}

/// Why an in-place repack was refused, after the path and its error.
#[cfg(unix)]
const NOT_IN_PLACE: &str = "an in-place repack must rename and remove the array (give DST_DIR to write a new one); nothing was written";

/// Elsewhere no permission is checked or carried over (the renames report what fails).
#[cfg(not(unix))]
fn check_replaceable(_: &Path) -> zarrshard::Result<Kept> {
    Ok(Kept {
        dir_mode: 0,
        file_mode: 0,
        owner: (0, 0),
    })
}

#[cfg(not(unix))]
impl Kept {
    fn apply(&self, _: &Path) -> zarrshard::Result<()> {
        let _ = (self.dir_mode, self.file_mode, self.owner);
        Ok(())
    }
}

#[cfg(unix)]
impl Kept {
    /// Give every directory and file below `dst` (the new array, written by this process)
    /// the old array's modes, owner and group: files first, then directories from the
    /// deepest up, so none loses access before its entries are done.
    fn apply(&self, dst: &Path) -> zarrshard::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let (mut dirs, mut files) = (vec![dst.to_path_buf()], Vec::new());
        let mut k = 0;
        while let Some(dir) = dirs.get(k).cloned() {
            k += 1;
            for entry in std::fs::read_dir(&dir).map_err(|e| Error::io_at(&dir, e))? {
                let path = entry.map_err(|e| Error::io_at(&dir, e))?.path();
                match path.is_dir() {
                    true => dirs.push(path),
                    false => files.push(path),
                }
            }
        }
        let files = files.into_iter().map(|f| (f, self.file_mode));
        let dirs = dirs.into_iter().rev().map(|d| (d, self.dir_mode));
        for (path, mode) in files.chain(dirs) {
            let (uid, gid) = self.owner;
            if std::os::unix::fs::chown(&path, Some(uid), Some(gid)).is_err() {
                let _ = std::os::unix::fs::chown(&path, None, Some(gid));
            }
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| Error::io_at(&path, e))?;
        }
        Ok(())
    }
}
