//! The file-system steps that make a write survive a crash: write and fsync a file, fsync
//! a directory (so the names in it are durable), rename, remove a directory in a way that
//! never leaves a half-deleted checkpoint under a checkpoint's name.

use std::fs::{self, File};
use std::io::Write;
use std::path::Path;

use super::error::{CheckpointError, io_error};

/// Writes `bytes` to a new file at `path` and fsyncs it.
pub(crate) fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), CheckpointError> {
    let mut file = File::create(path).map_err(io_error("create", path))?;
    file.write_all(bytes).map_err(io_error("write", path))?;
    file.sync_all().map_err(io_error("fsync", path))
}

/// Fsyncs an existing file.
pub(crate) fn sync_file(path: &Path) -> Result<(), CheckpointError> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(io_error("fsync", path))
}

/// Fsyncs a directory, making the creation, renaming and removal of its entries durable.
/// Only Unix can open a directory for this; elsewhere the rename is atomic but its
/// durability is left to the file system.
pub(crate) fn sync_dir(path: &Path) -> Result<(), CheckpointError> {
    if cfg!(unix) {
        File::open(path)
            .and_then(|d| d.sync_all())
            .map_err(io_error("fsync directory", path))?;
    }
    Ok(())
}

/// Removes `dir` by first renaming it to `trash` in the same parent (atomic), then
/// deleting it: a crash leaves a trash directory (cleaned on the next open), never a
/// checkpoint directory with some of its files gone.
pub(crate) fn remove_via_trash(dir: &Path, trash: &Path) -> Result<(), CheckpointError> {
    fs::rename(dir, trash).map_err(io_error("rename for removal", dir))?;
    if let Some(parent) = trash.parent() {
        sync_dir(parent)?;
    }
    fs::remove_dir_all(trash).map_err(io_error("remove", trash))
}
