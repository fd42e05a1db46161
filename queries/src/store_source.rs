//! Opening a session over a store (a directory or a bucket), through the store's manifest.

use std::path::Path;
use std::sync::Arc;

use datafusion::execution::context::SessionContext;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::object_store::ObjectStore;
use whyslow_schemas::Table;
use whyslow_store::Store;

use crate::error::QueryError;
use crate::segments::{Segment, SegmentSource};
use crate::session::session_over_limited;

impl SegmentSource for Store {
    fn segments(&self, table: Table) -> Vec<Segment> {
        Store::segments(self, table)
            .into_iter()
            .map(|s| Segment {
                path: s.path,
                rows: s.rows,
                bytes: s.bytes,
                min_time_ns: s.min_time_ns,
                max_time_ns: s.max_time_ns,
            })
            .collect()
    }

    fn object_store(&self) -> Option<(ObjectStoreUrl, Arc<dyn ObjectStore>)> {
        let (url, store) = Store::object_store(self)?;
        // A bucket URL (`scheme://bucket`) is always a valid object store URL.
        let url = ObjectStoreUrl::parse(url.as_str()).ok()?;
        Some((url, store))
    }
}

/// A session over the committed state of the store at `store_root` (a missing directory
/// is an empty store): tables `events`, `metrics`, `dead_letters`, `slowdowns`, `causes`
/// and the views of `queries/sql/views/`.
pub async fn open_session(store_root: &Path) -> Result<SessionContext, QueryError> {
    open_session_limited(store_root, None).await
}

/// [`open_session`] with a memory pool of `memory_limit` bytes (`None`: no limit).
pub async fn open_session_limited(
    store_root: &Path,
    memory_limit: Option<usize>,
) -> Result<SessionContext, QueryError> {
    let store_err = |source| QueryError::Store {
        path: store_root.display().to_string(),
        source,
    };
    let store = Store::open(store_root).map_err(store_err)?;
    session_over_limited(&store, memory_limit).await
}
