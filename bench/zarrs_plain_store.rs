//! zarrs' filesystem store without fsync, shared by the harness (`benches/compare.rs`) and the
//! separately built zarrs peer (`zarrs-shipped/`), so both time zarrs over the same store.
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use zarrs::filesystem::FilesystemStore;
use zarrs::storage::byte_range::ByteRangeIterator;
use zarrs::storage::{
    Bytes, MaybeBytesIterator, OffsetBytesIterator, ReadableStorageTraits, StorageError,
    StoreKey, StorePrefix, WritableStorageTraits,
};

/// zarrs' own `FilesystemStore` for reads; writes with plain `std::fs::write` / `pwrite`
/// and no fsync (zarrs' `FilesystemStore` calls `sync_all` on every write; zarrshard's
/// `FsStore`, zarr-python's `LocalStore` and tensorstore with `file_io_sync: false` do
/// not), so write timings compare encoding and layout rather than the disk's flush.
pub struct PlainFsStore {
    root: PathBuf,
    read: FilesystemStore,
}

impl PlainFsStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        let root = root.into();
        let read = FilesystemStore::new(&root).expect("valid path");
        PlainFsStore { root, read }
    }
    fn path(&self, key: &StoreKey) -> PathBuf {
        self.root.join(key.as_str())
    }
}

impl ReadableStorageTraits for PlainFsStore {
    fn get_partial_many<'a>(
        &'a self,
        key: &StoreKey,
        byte_ranges: ByteRangeIterator<'a>,
    ) -> Result<MaybeBytesIterator<'a>, StorageError> {
        self.read.get_partial_many(key, byte_ranges)
    }
    fn size_key(&self, key: &StoreKey) -> Result<Option<u64>, StorageError> {
        self.read.size_key(key)
    }
    fn supports_get_partial(&self) -> bool {
        true
    }
}

impl WritableStorageTraits for PlainFsStore {
    fn set(&self, key: &StoreKey, value: Bytes) -> Result<(), StorageError> {
        let p = self.path(key);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(p, &value)?;
        Ok(())
    }
    fn set_partial_many(
        &self,
        key: &StoreKey,
        offset_values: OffsetBytesIterator,
    ) -> Result<(), StorageError> {
        let p = self.path(key);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(p)?;
        for (offset, bytes) in offset_values {
            f.write_all_at(&bytes, offset)?;
        }
        Ok(())
    }
    fn erase(&self, key: &StoreKey) -> Result<(), StorageError> {
        match std::fs::remove_file(self.path(key)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
    fn erase_prefix(&self, prefix: &StorePrefix) -> Result<(), StorageError> {
        match std::fs::remove_dir_all(self.root.join(prefix.as_str())) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
    fn supports_set_partial(&self) -> bool {
        true
    }
}
