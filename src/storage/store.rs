//! A store maps keys (`zarr.json`, `c/0/1`, …) to objects. The array layer uses it to find the
//! metadata and each shard's [`ShardIo`], and to list what is stored, so that it never deals
//! with paths or handles itself and a host's own storage (the C API's store table) plugs in
//! the same way as a directory or memory.

use crate::error::{Error, Result};
use crate::storage::io::{ByteRange, CountingIo, FileIo, MemoryIo, ShardIo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Key → object storage for one array.
pub trait Store: Send + Sync {
    /// The I/O of the object at `key` (which need not exist yet).
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>>;

    /// The whole object at `key`, `None` when missing.
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self
            .shard_io(key)?
            .read(ByteRange::FromStart(0, None))?
            .map(|o| o.data))
    }

    /// Replace the object at `key` with `value`.
    fn set(&self, key: &str, value: &[u8]) -> Result<()>;

    /// Remove the object at `key` (no error when missing).
    fn delete(&self, key: &str) -> Result<()> {
        self.shard_io(key)?.delete()
    }

    /// The keys of the stored objects whose keys start with `prefix`, in any order, or `None`
    /// when this store cannot list (the default).
    ///
    /// The walks over an array's stored shards ([`Array::verify`](crate::Array::verify),
    /// `repair`, `compact`, reference sets, [`Array::stored_shards`](crate::Array::stored_shards))
    /// list once and then read only the shards listed, instead of asking every position of the
    /// chunk grid; on a sparse grid over a remote store that is one listing instead of a
    /// request per position. A store that lists must list every stored object: one it leaves
    /// out is treated as missing (not checked, not referenced). Keys that are not the array's
    /// shard keys are ignored.
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let _ = prefix;
        Ok(None)
    }

    /// True when the store's I/O must run on the thread that called the library (a host's
    /// callbacks that are not thread-safe, or that need the caller's thread, as a JVM's do).
    /// Region reads and writes then do their I/O shard by shard on the calling thread and
    /// only decode and encode in parallel.
    fn io_on_caller_thread(&self) -> bool {
        false
    }

    /// True when a shard the store fails to read is a problem of that shard for
    /// [`Array::verify`](crate::Array::verify) (the walk goes on), false when it ends the walk
    /// with the store's error (the default: a host's store reports its own failures, with
    /// their codes, to its caller). [`FsStore`] says true: a directory or a loop of links
    /// where a shard file would be is damage in the array, not a failing store.
    fn unreadable_shard_is_problem(&self) -> bool {
        false
    }
}

/// A directory on the local file system; key `a/b` is the file `ROOT/a/b`.
///
/// Writes: [`Store::set`] and every whole-object write of its [`FileIo`]s write a temporary
/// sibling (`NAME.tmp-PID-N`) and rename it over the file, keeping the replaced file's mode
/// and, where permitted, owner and group; a symbolic link at a key is followed (the file it
/// names is replaced, the link stays; see [`FileIo::target`]). Concurrency: writers of one
/// key through new objects (`set`, buffered writes, and streaming and updates through
/// [`crate::Array::write_shard_with`] and [`crate::Array::import`]) need no lock: each
/// object ends as one writer's complete version (the last rename), never a mix. A
/// [`crate::ShardWriter`] with a streaming or update strategy given a [`FileIo`] itself
/// writes into the file: one such writer per file at a time, and nothing else writing it.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    /// The directory `root` (created on the first write when missing).
    pub fn new(root: impl AsRef<Path>) -> Self {
        FsStore {
            root: root.as_ref().to_path_buf(),
        }
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `key`; keys that would leave the root (`..`, absolute) are refused.
    pub fn path(&self, key: &str) -> Result<PathBuf> {
        let mut p = self.root.clone();
        for part in key.split('/') {
            if part.is_empty() || part == "." || part == ".." || part.contains('\\') {
                return Err(Error::InvalidArgument(format!("invalid store key `{key}`")));
            }
            p.push(part);
        }
        Ok(p)
    }
}

impl Store for FsStore {
    fn unreadable_shard_is_problem(&self) -> bool {
        true
    }

    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(FileIo::new(self.path(key)?)))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        // Temporary sibling + rename: readers never see a half-written object.
        FileIo::new(self.path(key)?).put(value)
    }

    /// Removes the file at `key`; a directory there (which [`Store::list_prefix`] lists) is
    /// removed when empty, so that deleting every listed key, deepest first, removes a node.
    fn delete(&self, key: &str) -> Result<()> {
        let path = self.path(key)?;
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir(&path).map_err(|e| Error::io_at(&path, e)),
            _ => FileIo::new(path).delete(),
        }
    }

    /// The files below the directory part of `prefix`, as `/`-separated keys. Symbolic links
    /// are followed (a linked directory's files are keys under the link's name, as reading
    /// them by key would find them), except a link back to a directory the walk is inside, so
    /// a loop ends. The entries where no object can be read are listed too: each directory
    /// (whose files are listed below it) and each loop of links, so that a walk over an
    /// array's shards (`verify`) reports a directory or a loop where a shard would be, which
    /// reading it fails on (`EISDIR`, `ELOOP`), instead of passing it over as missing; keys
    /// that are not the array's shard keys are ignored there. A missing directory lists
    /// nothing; names that are not UTF-8 are skipped (no key names them), and so are dangling
    /// links (they read as missing). Other failures (a directory that cannot be read) are
    /// errors.
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let dir = prefix.rfind('/').map_or("", |end| &prefix[..=end]);
        let start = match dir.strip_suffix('/') {
            Some(d) => self.path(d)?,
            None => self.root.clone(),
        };
        let mut keys = Vec::new();
        list_files(&start, dir, prefix, &mut Vec::new(), &mut keys)?;
        Ok(Some(keys))
    }
}

/// The files below `dir` (keyed `key_prefix` + their path below it) whose keys start with
/// `prefix`, into `keys`; `inside` holds the resolved directories the walk is in.
fn list_files(
    dir: &Path,
    key_prefix: &str,
    prefix: &str,
    inside: &mut Vec<PathBuf>,
    keys: &mut Vec<String>,
) -> Result<()> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        // No directory (or a file where it would be): no object below it.
        Err(e) if is_no_object(&e) => return Ok(()),
        Err(e) => return Err(Error::io_at(dir, e)),
    };
    let resolved = std::fs::canonicalize(dir).map_err(|e| Error::io_at(dir, e))?;
    if inside.contains(&resolved) {
        return Ok(()); // a link back up the walk: its files are listed already
    }
    inside.push(resolved);
    for entry in entries {
        let entry = entry.map_err(|e| Error::io_at(dir, e))?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        let key = format!("{key_prefix}{name}");
        // `metadata` follows a symbolic link; a dangling one (or a loop of links) is no
        // object. Any other failure is an error: skipping it would pass a stored shard over.
        let kind = match std::fs::metadata(entry.path()) {
            Ok(kind) => kind,
            Err(e) if is_loop(&e) => {
                if key.starts_with(prefix) {
                    keys.push(key);
                }
                continue;
            }
            Err(e) if is_no_object(&e) => continue,
            Err(e) => return Err(Error::io_at(&entry.path(), e)),
        };
        if kind.is_dir() {
            if key.starts_with(prefix) {
                keys.push(key.clone());
                list_files(&entry.path(), &format!("{key}/"), prefix, inside, keys)?;
            }
        } else if key.starts_with(prefix) {
            keys.push(key);
        }
    }
    inside.pop();
    Ok(())
}

/// Whether a file system error means that no object is there: nothing at the path, a file
/// where a directory would be, or links that never reach a file.
fn is_no_object(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::{NotADirectory, NotFound};
    matches!(e.kind(), NotFound | NotADirectory) || is_loop(e)
}

/// Whether a file system error is a loop of symbolic links (`ELOOP`).
fn is_loop(e: &std::io::Error) -> bool {
    #[cfg(unix)]
    return e.raw_os_error() == Some(libc::ELOOP);
    #[cfg(not(unix))]
    return false;
}

/// Objects in memory, each a [`MemoryIo`] wrapped in a [`CountingIo`] so tests and
/// benchmarks can see the reads every access costs. Cloning shares the objects.
#[derive(Debug, Clone, Default)]
pub struct MemoryStore {
    objects: Arc<Mutex<BTreeMap<String, Arc<CountingIo<MemoryIo>>>>>,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn object(&self, key: &str) -> Arc<CountingIo<MemoryIo>> {
        let mut map = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        map.entry(key.to_string())
            .or_insert_with(|| Arc::new(CountingIo::new(MemoryIo::new())))
            .clone()
    }

    /// Keys of the objects that exist, sorted.
    pub fn keys(&self) -> Vec<String> {
        let map = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .filter(|(_, o)| o.inner.bytes().is_some())
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Read calls and bytes read over all objects since the last [`MemoryStore::reset_counts`].
    pub fn read_counts(&self) -> (u64, u64) {
        let map = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        map.values()
            .fold((0, 0), |(r, b), o| (r + o.reads(), b + o.bytes_read()))
    }

    /// Zero the read counters of every object.
    pub fn reset_counts(&self) {
        let map = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        map.values().for_each(|o| o.reset());
    }
}

impl Store for MemoryStore {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(self.object(key)))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.object(key).put(value)
    }

    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let mut keys = self.keys();
        keys.retain(|k| k.starts_with(prefix));
        Ok(Some(keys))
    }
}

/// Forward [`Store`] through a pointer: a borrowed store (an array opened for a moment on a
/// store the caller keeps) and a shared one (what the C API holds, so that arrays and groups
/// opened on one of the library's stores share it).
macro_rules! forward_store {
    ($($ptr:ty),*) => {$(
        impl<T: Store + ?Sized> Store for $ptr {
            fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
                (**self).shard_io(key)
            }
            fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
                (**self).get(key)
            }
            fn set(&self, key: &str, value: &[u8]) -> Result<()> {
                (**self).set(key, value)
            }
            fn delete(&self, key: &str) -> Result<()> {
                (**self).delete(key)
            }
            fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
                (**self).list_prefix(prefix)
            }
            fn io_on_caller_thread(&self) -> bool {
                (**self).io_on_caller_thread()
            }
            fn unreadable_shard_is_problem(&self) -> bool {
                (**self).unreadable_shard_is_problem()
            }
        }
    )*};
}
forward_store!(&T, Arc<T>);

/// A node path in a hierarchy (`""` for the store's root, `a/b` for a nested node), checked so
/// that no key made from it leaves the node: `..`, `.`, empty parts (a leading `/`: absolute
/// paths), `\` and NUL are refused with [`Error::InvalidArgument`] naming the path.
pub fn node_path(path: &str) -> Result<&str> {
    if path.is_empty() {
        return Ok(path);
    }
    let bad = path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == ".." || part.contains(['\\', '\0']));
    if bad {
        return Err(Error::InvalidArgument(format!(
            "invalid node path `{}`: use `/`-separated names without `.`, `..`, empty parts, a leading `/`, `\\` or NUL (\"\" is the store's root)",
            path.escape_debug()
        )));
    }
    Ok(path)
}

/// A node path as messages show it: `` `a/b` ``, or "the store's root" for `""`.
pub(crate) fn shown_path(path: &str) -> String {
    match path {
        "" => "the store's root".to_string(),
        p => format!("`{}`", p.escape_debug()),
    }
}

/// A store seen from one node of its hierarchy: key `k` is the inner store's `PATH/k`, so an
/// array at `a/b` finds `a/b/zarr.json` and its shards under `a/b/`. With an empty path it is
/// the inner store itself.
#[derive(Debug, Clone)]
pub struct Prefixed<S> {
    inner: S,
    /// `PATH/`, or empty at the root.
    prefix: String,
}

impl<S: Store> Prefixed<S> {
    /// `inner` seen from node `path` (checked by [`node_path`]).
    pub fn new(inner: S, path: &str) -> Result<Self> {
        let path = node_path(path)?;
        let prefix = match path {
            "" => String::new(),
            p => format!("{p}/"),
        };
        Ok(Prefixed { inner, prefix })
    }

    /// The node's path (`""` at the root).
    pub fn path(&self) -> &str {
        self.prefix.strip_suffix('/').unwrap_or("")
    }

    /// The store the node lives in.
    pub fn inner(&self) -> &S {
        &self.inner
    }

    /// The store the node lives in, given back.
    pub fn into_inner(self) -> S {
        self.inner
    }

    fn key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }
}

impl<S: Store> Store for Prefixed<S> {
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        self.inner.shard_io(&self.key(key))
    }
    fn get(&self, key: &str) -> Result<Option<Vec<u8>>> {
        self.inner.get(&self.key(key))
    }
    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        self.inner.set(&self.key(key), value)
    }
    fn delete(&self, key: &str) -> Result<()> {
        self.inner.delete(&self.key(key))
    }
    fn list_prefix(&self, prefix: &str) -> Result<Option<Vec<String>>> {
        let listed = self.inner.list_prefix(&self.key(prefix))?;
        Ok(listed.map(|keys| {
            keys.into_iter()
                .filter_map(|k| k.strip_prefix(&self.prefix).map(str::to_string))
                .collect()
        }))
    }
    fn io_on_caller_thread(&self) -> bool {
        self.inner.io_on_caller_thread()
    }
    fn unreadable_shard_is_problem(&self) -> bool {
        self.inner.unreadable_shard_is_problem()
    }
}
