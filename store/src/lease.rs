//! Leadership among processes sharing a store, e.g. the one live analyzer of a consumer
//! group that publishes incidents: in a directory, an exclusive lock on a file (released
//! when the process ends); in a bucket, a lease object taken with a put that fails if it
//! exists, renewed with a put that fails unless its ETag is still the holder's, and taken
//! over once its expiry has passed.

use std::path::Path;
use std::time::Duration;

use object_store::{ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion};

use super::files::object_error;
use super::location::{Remote, Root};
use super::{StoreError, delta};

/// Held leadership of a store; given up when dropped.
pub struct Leadership {
    held: Held,
}

enum Held {
    File(#[allow(dead_code)] std::fs::File),
    Lease {
        remote: std::sync::Arc<Remote>,
        rel: String,
        holder: String,
        ttl: Duration,
        version: UpdateVersion,
    },
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Leadership {
    /// Takes the leadership `name` of the store at `store` if nobody holds it: `None` when
    /// another process does. In a bucket the lease lasts `ttl` unless renewed.
    pub fn take(store: &Path, name: &str, ttl: Duration) -> Result<Option<Leadership>, StoreError> {
        Leadership::take_at(Root::parse(store)?, name, ttl)
    }

    /// [`take`](Self::take) for a store root built with options of its own.
    pub fn take_at(
        root: Root,
        name: &str,
        ttl: Duration,
    ) -> Result<Option<Leadership>, StoreError> {
        match root {
            Root::Local(dir) => take_file(&dir, name),
            Root::Remote(remote) => take_lease(remote, name, ttl),
        }
    }

    /// Extends a lease by its time to live; `false` when it was lost (another process
    /// took it over after it expired). A file lock never needs renewing.
    pub fn renew(&mut self) -> Result<bool, StoreError> {
        let Held::Lease {
            remote,
            rel,
            holder,
            ttl,
            version,
        } = &mut self.held
        else {
            return Ok(true);
        };
        match put(remote, rel, holder, *ttl, PutMode::Update(version.clone()))? {
            Some(v) => {
                *version = v;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

impl Drop for Leadership {
    fn drop(&mut self) {
        if let Held::Lease {
            remote,
            rel,
            holder,
            ..
        } = &self.held
        {
            // Given up so another process need not wait for the expiry; only if it is
            // still ours (a lease taken over in between is left alone).
            let path = remote.object(rel);
            let _ = delta::block_on(async {
                let current = remote.store.get(&path).await?.bytes().await?;
                if current.starts_with(holder.as_bytes()) {
                    remote.store.delete(&path).await?;
                }
                Ok::<_, object_store::Error>(())
            });
        }
    }
}

fn take_file(dir: &Path, name: &str) -> Result<Option<Leadership>, StoreError> {
    std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create", dir, e))?;
    let path = dir.join(name);
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StoreError::io("open", &path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(Some(Leadership {
            held: Held::File(file),
        })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(StoreError::io("lock", &path, e)),
    }
}

fn take_lease(
    remote: std::sync::Arc<Remote>,
    name: &str,
    ttl: Duration,
) -> Result<Option<Leadership>, StoreError> {
    let holder = format!("{}-{}-{:x}", std::process::id(), now_ms(), {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new()
            .build_hasher()
            .finish()
    });
    let rel = name.to_string();
    let lease = |version| Leadership {
        held: Held::Lease {
            remote: remote.clone(),
            rel: rel.clone(),
            holder: holder.clone(),
            ttl,
            version,
        },
    };
    if let Some(v) = put(&remote, &rel, &holder, ttl, PutMode::Create)? {
        return Ok(Some(lease(v)));
    }
    // Held: taken over only when its expiry has passed, and only if nobody renewed or
    // took it in between (the put names the ETag read).
    let path = remote.object(&rel);
    let current = delta::block_on(async {
        let got = remote.store.get(&path).await?;
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        Ok::<_, object_store::Error>((version, got.bytes().await?))
    })?;
    let (version, body) = match current {
        Ok(c) => c,
        // Released in between: try again next time.
        Err(object_store::Error::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(object_error(&remote, "read", &rel, e)),
    };
    let expires = std::str::from_utf8(&body)
        .ok()
        .and_then(|t| t.lines().nth(1))
        .and_then(|l| l.trim().parse::<i64>().ok())
        .unwrap_or(i64::MIN);
    if expires > now_ms() {
        return Ok(None);
    }
    Ok(put(&remote, &rel, &holder, ttl, PutMode::Update(version))?.map(lease))
}

/// Puts the lease `rel` for `holder` until now + `ttl` with `mode`; the new version, or
/// `None` when the condition failed (it exists, or changed).
fn put(
    remote: &Remote,
    rel: &str,
    holder: &str,
    ttl: Duration,
    mode: PutMode,
) -> Result<Option<UpdateVersion>, StoreError> {
    let body = format!("{holder}\n{}\n", now_ms() + ttl.as_millis() as i64);
    let path = remote.object(rel);
    let opts = PutOptions {
        mode,
        ..PutOptions::default()
    };
    match delta::block_on(remote.store.put_opts(&path, PutPayload::from(body), opts))? {
        Ok(r) => Ok(Some(UpdateVersion {
            e_tag: r.e_tag,
            version: r.version,
        })),
        Err(
            object_store::Error::AlreadyExists { .. } | object_store::Error::Precondition { .. },
        ) => Ok(None),
        Err(e) => Err(object_error(remote, "write", rel, e)),
    }
}
