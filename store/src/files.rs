//! The store's files by their path relative to the root, whichever the root is: a local
//! directory (files synced and renamed into place by the writer, see `fsio`) or an object
//! store bucket, where each file is one object put whole, read whole and listed by prefix.

use std::path::PathBuf;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::location::{Remote, Root};
use super::{StoreError, delta, fsio};

/// A file of the store found by listing, with when it was last written.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    /// Path relative to the store root.
    pub rel: String,
    /// Last modification (ms since the epoch).
    pub modified_ms: i64,
}

pub(crate) fn object_error(
    remote: &Remote,
    op: &'static str,
    rel: &str,
    e: object_store::Error,
) -> StoreError {
    StoreError::Object {
        op,
        path: PathBuf::from(remote.url.as_str()).join(rel),
        source: Box::new(e),
    }
}

/// Puts `bytes` as the object `rel` of a bucket store.
pub(crate) fn put(remote: &Remote, rel: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
    let path = remote.object(rel);
    delta::block_on(remote.store.put(&path, PutPayload::from(bytes)))?
        .map_err(|e| object_error(remote, "write", rel, e))?;
    Ok(())
}

/// The whole content of the file `rel`.
pub(crate) fn read(root: &Root, rel: &str) -> Result<Bytes, StoreError> {
    match root {
        Root::Local(dir) => {
            let path = dir.join(rel);
            std::fs::read(&path)
                .map(Bytes::from)
                .map_err(|e| StoreError::io("read", path, e))
        }
        Root::Remote(remote) => {
            let path = remote.object(rel);
            delta::block_on(async { remote.store.get(&path).await?.bytes().await })?
                .map_err(|e| object_error(remote, "read", rel, e))
        }
    }
}

/// Deletes the file `rel`; one that does not exist is not an error.
pub(crate) fn delete(root: &Root, rel: &str) -> Result<(), StoreError> {
    match root {
        Root::Local(dir) => fsio::remove_if_exists(&dir.join(rel)),
        Root::Remote(remote) => {
            let path = remote.object(rel);
            match delta::block_on(remote.store.delete(&path))? {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(object_error(remote, "delete", rel, e)),
            }
        }
    }
}

/// Every object under `rel/` of a bucket store, at any depth.
pub(crate) fn list(remote: &Remote, rel: &str) -> Result<Vec<Listed>, StoreError> {
    let prefix = remote.object(rel);
    let metas: Vec<object_store::ObjectMeta> =
        delta::block_on(remote.store.list(Some(&prefix)).try_collect())?
            .map_err(|e| object_error(remote, "list", rel, e))?;
    Ok(metas
        .into_iter()
        .filter_map(|m| {
            Some(Listed {
                rel: remote.relative(&m.location)?.to_string(),
                modified_ms: m.last_modified.timestamp_millis(),
            })
        })
        .collect())
}

/// The text of the small file `rel`, `None` when it does not exist or cannot be read.
pub(crate) fn read_text(root: &Root, rel: &str) -> Option<String> {
    let bytes = read(root, rel).ok()?;
    String::from_utf8(bytes.to_vec()).ok()
}

/// Writes the small file `rel` (not synced: it only ever saves work, never data).
pub(crate) fn write_text(root: &Root, rel: &str, text: &str) -> Result<(), StoreError> {
    match root {
        Root::Local(dir) => {
            let path = dir.join(rel);
            std::fs::write(&path, text).map_err(|e| StoreError::io("write", path, e))
        }
        Root::Remote(remote) => put(remote, rel, text.as_bytes().to_vec()),
    }
}
