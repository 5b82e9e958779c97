//! A store maps keys (`zarr.json`, `c/0/1`, …) to objects. The array layer uses it to find the
//! metadata and each shard's [`ShardIo`].

use crate::error::{Error, Result};
use crate::io::{ByteRange, FileIo, ShardIo};
use std::path::{Path, PathBuf};

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
}

/// A directory on the local file system; key `a/b` is the file `ROOT/a/b`.
#[derive(Debug, Clone)]
pub struct FsStore {
    root: PathBuf,
}

impl FsStore {
    pub fn new(root: impl AsRef<Path>) -> Self {
        FsStore {
            root: root.as_ref().to_path_buf(),
        }
    }

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
    fn shard_io(&self, key: &str) -> Result<Box<dyn ShardIo>> {
        Ok(Box::new(FileIo::new(self.path(key)?)))
    }

    fn set(&self, key: &str, value: &[u8]) -> Result<()> {
        // Temporary sibling + rename: readers never see a half-written object.
        FileIo::new(self.path(key)?).put(value)
    }
}
