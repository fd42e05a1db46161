//! Durable filesystem steps of the store: fsync'd writes, renames and directory syncs.

use std::fs::{self, File};
use std::path::Path;

use super::StoreError;

/// Flushes a directory's entries (new, renamed or removed names) to disk.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    let d = File::open(dir).map_err(|e| StoreError::io("open directory", dir, e))?;
    d.sync_all()
        .map_err(|e| StoreError::io("fsync directory", dir, e))
}

/// Creates `dir` and its missing parents, syncing each parent whose entries changed.
pub fn create_dir_durable(dir: &Path) -> Result<(), StoreError> {
    if dir.is_dir() {
        return Ok(());
    }
    if let Some(parent) = dir.parent() {
        create_dir_durable(parent)?;
    }
    match fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => return Ok(()),
        Err(e) => return Err(StoreError::io("create directory", dir, e)),
    }
    match dir.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => sync_dir(parent),
        _ => Ok(()),
    }
}

/// Moves a finished file into place (same filesystem) and syncs the target directory.
pub fn rename_durable(from: &Path, to: &Path) -> Result<(), StoreError> {
    fs::rename(from, to).map_err(|e| StoreError::io("rename into place", to, e))?;
    match to.parent() {
        Some(dir) => sync_dir(dir),
        None => Ok(()),
    }
}

/// Removes a file; one that is already gone is fine.
pub fn remove_if_exists(path: &Path) -> Result<(), StoreError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io("remove", path, e)),
    }
}
