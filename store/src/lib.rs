//! The append-only event log: one Delta Lake table per table of `contracts/tables.md`,
//! partitioned Parquet segments made visible atomically by Delta commits, with cheap
//! idempotent re-ingest (sorted row identities beside each segment) and compaction of
//! small segments.
//!
//! Layout of a store directory (Spark, Trino, DuckDB, Polars and delta-rs read each
//! `<root>/<table>` as the Delta table it is):
//!
//! ```text
//! <root>/<table>/_delta_log/                       the table's Delta log (commits, checkpoints)
//! <root>/<table>/date=YYYY-MM-DD/<id>.parquet      rows (zstd; sorted; row-group and page statistics)
//! <root>/<table>/_keys/date=YYYY-MM-DD/<id>.keys   sorted row identities of that segment (dedupe)
//! <root>/_lock                                     held (flock) by the single writer (directories)
//! <root>/_tmp/                                     files being written; removed by the writer on open
//! <root>/_vacuumed_until                           time up to which removed files are deleted
//! ```
//!
//! The root is a local directory, or a prefix in an S3 or GCS bucket (`s3://bucket/prefix`).
//! A directory has one writer at a time (the lock); a bucket has any number, on any hosts,
//! committing with Delta's optimistic concurrency (a put that fails if the commit file
//! exists, then a retry on the newer version), each naming its files uniquely.
//!
//! A segment is visible exactly when its table's log adds it and no later commit removes
//! it; Kafka offsets are `txn` actions of the `events` table's commits. A crash at any
//! point leaves each table at its last commit, and files no log references are orphans the
//! writer deletes (in a bucket, only once they are older than a grace period, since another
//! writer may be about to commit them).

pub mod delta;
mod files;
mod fsio;
mod keys;
mod lease;
mod location;
pub mod segment;
mod sidecar;
mod state;
mod writer;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use whyslow_schemas::Table;

pub use lease::Leadership;
pub use location::{Remote, Root, local_root};
pub use state::KafkaOffset;
pub use writer::{CommitStats, CompactStats, StoreWriter, TableCommit, WriterOptions};

/// What went wrong in the store; every message names the file or directory involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A filesystem operation failed.
    #[error("cannot {op} {path}: {source}")]
    Io {
        /// What was being done (`read`, `create`, `rename`, …).
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// Writing or reading a Parquet segment failed.
    #[error("parquet segment {path}: {source}")]
    Parquet {
        /// The segment file.
        path: PathBuf,
        /// The parquet crate's error.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// An Arrow operation (concatenate, sort, take) on rows bound for a file failed.
    #[error("arrow error for {path}: {source}")]
    Arrow {
        /// The store file or directory concerned.
        path: PathBuf,
        /// The arrow crate's error.
        #[source]
        source: arrow::error::ArrowError,
    },
    /// A store file does not hold what the format says it must.
    #[error("corrupt {what} {path}: {detail}")]
    Corrupt {
        /// Which kind of file (`Delta log`, `key file`).
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The store was written by an older whyslow whose column types differ.
    #[error(
        "store {path} was written by an older whyslow ({detail}): this version keeps \
         each table as a Delta Lake table; ingest into a new store (nothing was changed \
         in this one)"
    )]
    OldLayout {
        /// The store root.
        path: PathBuf,
        /// What marks it as older.
        detail: String,
    },
    /// The store location is a URL of a kind this store cannot keep its files in.
    #[error(
        "store location '{location}' is a {scheme}:// URL, which this store cannot use: give \
         a directory, s3://bucket/prefix or gs://bucket/prefix (nothing was created)"
    )]
    UnsupportedLocation {
        /// The location as given.
        location: String,
        /// Its URL scheme.
        scheme: String,
    },
    /// An object store URL that names no usable bucket, or whose client cannot be built
    /// from the environment.
    #[error("store location '{location}' cannot be used: {detail} (nothing was created)")]
    BadLocation {
        /// The location as given.
        location: String,
        /// What is wrong.
        detail: String,
    },
    /// A request to the object store failed (unreachable, refused credentials, …).
    #[error("cannot {op} {path}: {source}")]
    Object {
        /// What was being done (`write`, `read`, `list`, `delete`).
        op: &'static str,
        /// The object (as a URL).
        path: PathBuf,
        /// object_store's error.
        #[source]
        source: Box<object_store::Error>,
    },
    /// A writer took so long between writing a segment and committing it that another
    /// writer may already have deleted it as an orphan: nothing was committed.
    #[error(
        "store {path}: {secs} s passed between writing segments and committing them, more \
         than half the orphan grace period (WriterOptions::orphan_grace); nothing was \
         committed (append the rows again)"
    )]
    Stale {
        /// The store root.
        path: PathBuf,
        /// Seconds between the first segment written and the commit.
        secs: u64,
    },
    /// delta-rs failed to read or commit a table's Delta log.
    #[error("Delta table {path}: {source}")]
    Delta {
        /// The table directory.
        path: PathBuf,
        /// delta-rs' error.
        #[source]
        source: Box<deltalake_core::DeltaTableError>,
    },
    /// A Delta table in the store's place has columns or partitioning other than the
    /// table's (written by another tool, or a different version of the contract).
    #[error(
        "Delta table {path} cannot hold whyslow's {table} table: {detail} (nothing was \
         written)"
    )]
    IncompatibleTable {
        /// The table directory.
        path: PathBuf,
        /// The table whyslow meant to write.
        table: Table,
        /// The first difference found.
        detail: String,
    },
    /// Another process holds the writer lock.
    #[error("store {path} is locked by another writer (lock file {path}/_lock)")]
    Locked {
        /// The store root.
        path: PathBuf,
    },
    /// A batch given to the writer does not have the table's schema.
    #[error("store {path}: batch for table {table} does not match its schema: {detail}")]
    Schema {
        /// The store root.
        path: PathBuf,
        /// The table the batch was meant for.
        table: Table,
        /// The first difference found.
        detail: String,
    },
}

impl StoreError {
    /// Whether the store cannot be written at all (a read-only filesystem or no write
    /// permission), as opposed to a failure of one write.
    pub fn is_read_only(&self) -> bool {
        matches!(self, StoreError::Io { source, .. }
            if matches!(source.kind(), std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem))
    }

    /// Whether the same write may succeed if tried again later: the object store or a
    /// Delta commit did not answer (a server restarting, a network fault, conflicts past
    /// the retries), the lock was held, the commit came too late, or the disk was full or
    /// timed out. Bad rows, damaged files and a table of the wrong shape never pass.
    pub fn may_pass(&self) -> bool {
        use std::io::ErrorKind as K;
        match self {
            StoreError::Object { .. }
            | StoreError::Delta { .. }
            | StoreError::Locked { .. }
            | StoreError::Stale { .. } => true,
            StoreError::Io { source, .. } => matches!(
                source.kind(),
                K::TimedOut
                    | K::Interrupted
                    | K::WouldBlock
                    | K::StorageFull
                    | K::ConnectionRefused
                    | K::ConnectionReset
                    | K::ConnectionAborted
                    | K::NotConnected
                    | K::BrokenPipe
                    | K::UnexpectedEof
            ),
            StoreError::Parquet { .. }
            | StoreError::Arrow { .. }
            | StoreError::Corrupt { .. }
            | StoreError::OldLayout { .. }
            | StoreError::UnsupportedLocation { .. }
            | StoreError::BadLocation { .. }
            | StoreError::IncompatibleTable { .. }
            | StoreError::Schema { .. } => false,
        }
    }

    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StoreError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// One committed Parquet segment of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SegmentInfo {
    /// Absolute path of the Parquet file.
    pub path: PathBuf,
    /// The table whose rows it holds.
    pub table: Table,
    /// Number of rows.
    pub rows: u64,
    /// Size of the Parquet file in bytes.
    pub bytes: u64,
    /// Smallest value of the table's time column (`None` for tables without one).
    pub min_time_ns: Option<i64>,
    /// Largest value of the table's time column.
    pub max_time_ns: Option<i64>,
    /// The partition directory's value (`YYYY-MM-DD`, UTC day of the time column).
    pub partition: Option<String>,
    /// Absolute path of the segment's sorted row-identity file.
    pub keys_path: PathBuf,
    /// Size of the row-identity file in bytes.
    pub keys_bytes: u64,
}

/// A read-only view of the committed state of a store directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    location: location::Root,
    state: state::State,
}

impl Store {
    /// Reads the committed state of the store at `root`; a missing directory is an empty store.
    pub fn open(root: &Path) -> Result<Store, StoreError> {
        Store::load(root, false)
    }

    /// Reads the store at `root`, with the removed files still on disk when `tombstones`
    /// (for the writer, which deletes them once their retention has passed).
    fn load(root: &Path, tombstones: bool) -> Result<Store, StoreError> {
        Store::load_at(location::Root::parse(root)?, tombstones)
    }

    /// Reads the committed state of the store at `root` (built with options of its own,
    /// see [`Root::parse_with`]).
    pub fn open_root(root: Root) -> Result<Store, StoreError> {
        Store::load_at(root, false)
    }

    /// Reads the store at `location` like [`load`](Self::load).
    fn load_at(location: location::Root, tombstones: bool) -> Result<Store, StoreError> {
        let state = state::State::load(&location, tombstones)?;
        Ok(Store {
            root: location.display_path(),
            location,
            state,
        })
    }

    /// The store's root directory (absolute), or its URL (`s3://bucket/prefix`) as a path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The bucket of a store kept in an object store (`scheme://bucket` and its client),
    /// for readers that fetch the segments themselves; `None` for a local directory.
    pub fn object_store(&self) -> Option<(url::Url, Arc<dyn object_store::ObjectStore>)> {
        self.location
            .remote()
            .map(|r| (r.bucket_url.clone(), r.store.clone()))
    }

    /// The version this view reflects: the sum of the tables' Delta versions (0 = nothing
    /// committed yet; every commit to a table raises it by one).
    pub fn version(&self) -> u64 {
        self.state.version()
    }

    /// The committed segments of `table`, oldest first.
    pub fn segments(&self, table: Table) -> Vec<SegmentInfo> {
        self.state
            .segments_of(table)
            .map(|s| s.info(&self.root))
            .collect()
    }

    /// The committed segments of `table` whose time range meets `[start_ns, end_ns]`
    /// (segments of tables without a time column are always included).
    pub fn segments_in_range(&self, table: Table, start_ns: i64, end_ns: i64) -> Vec<SegmentInfo> {
        self.state
            .segments_of(table)
            .filter(|s| match (s.min_time_ns, s.max_time_ns) {
                (Some(lo), Some(hi)) => lo <= end_ns && start_ns <= hi,
                _ => true,
            })
            .map(|s| s.info(&self.root))
            .collect()
    }

    /// Number of committed rows of `table`.
    pub fn rows(&self, table: Table) -> u64 {
        self.state.segments_of(table).map(|s| s.rows).sum()
    }

    /// The next offset to read per (topic, partition), as committed with the segments that
    /// hold the messages before it.
    pub fn kafka_offsets(&self) -> BTreeMap<(String, i32), i64> {
        self.state.offsets.clone()
    }
}
