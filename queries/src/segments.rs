//! The committed Parquet segments a session reads, as the store's manifest lists them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use whyslow_schemas::Table;

/// One committed Parquet file of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Absolute path of the `.parquet` file.
    pub path: PathBuf,
    /// Rows in the file.
    pub rows: u64,
    /// Size of the file in bytes.
    pub bytes: u64,
    /// Smallest value of the table's time column in the file, in ns since the epoch.
    pub min_time_ns: Option<i64>,
    /// Largest value of the table's time column in the file.
    pub max_time_ns: Option<i64>,
}

/// Anything that knows a table's committed segments: the store, or a fixed list in tests.
///
/// Only committed segments may be returned: temporary or orphaned files next to them are
/// never read, which is why sessions never list the directory themselves.
pub trait SegmentSource {
    /// The committed segments of `table`, in any order.
    fn segments(&self, table: Table) -> Vec<Segment>;

    /// The object store bucket the segments are in (`s3://bucket` and its client), when
    /// they are not local files.
    fn object_store(
        &self,
    ) -> Option<(
        datafusion::execution::object_store::ObjectStoreUrl,
        std::sync::Arc<dyn datafusion::object_store::ObjectStore>,
    )> {
        None
    }
}

/// A fixed list of segments per table.
#[derive(Debug, Clone, Default)]
pub struct SegmentList(pub BTreeMap<Table, Vec<Segment>>);

impl SegmentList {
    /// Adds a segment of `table`.
    pub fn push(&mut self, table: Table, segment: Segment) {
        self.0.entry(table).or_default().push(segment);
    }
}

impl SegmentSource for SegmentList {
    fn segments(&self, table: Table) -> Vec<Segment> {
        self.0.get(&table).cloned().unwrap_or_default()
    }
}
