//! The store's tables as Delta Lake tables, written and read with delta-rs: one table per
//! table of `contracts/tables.md` under `<root>/<table>/`, partitioned by `date` as the
//! segments are. Each segment is an `add` action whose tags carry what the store needs
//! beside the rows (its dedupe-key file and key range, its time range); Kafka offsets are
//! application transactions (`txn`) in the same commit as the rows they produced.
//!
//! delta-rs is asynchronous; this store is called from plain threads (the batch runner),
//! from `spawn_blocking` (the stream worker) and from inside DataFusion sessions, so it
//! drives delta-rs on one runtime of its own ([`block_on`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, Field, Schema};
use deltalake_core::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake_core::kernel::{Action, Add, Remove, StructType};
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError};
use whyslow_schemas::Table;

use super::StoreError;
use super::location::Root;
use super::state::{SegmentEntry, is_inside_store};

/// The partition column: the UTC day of the table's time column, `YYYY-MM-DD`.
pub const PARTITION_COLUMN: &str = "date";

/// The directory of each table's Delta log.
pub const DELTA_LOG_DIR: &str = "_delta_log";

/// The directory, inside each table, of the segments' dedupe-key files. Names starting
/// with `_` are hidden from Delta: readers skip them and VACUUM leaves them alone.
pub const KEYS_DIR: &str = "_keys";

/// Tags of an `add` action (Delta keeps tags it does not know through checkpoints).
const TAG_KEYS: &str = "whyslow.keys";
const TAG_KEYS_BYTES: &str = "whyslow.keys_bytes";
const TAG_KEY_MIN: &str = "whyslow.key_min";
const TAG_KEY_MAX: &str = "whyslow.key_max";
const TAG_MIN_TIME_NS: &str = "whyslow.min_time_ns";
const TAG_MAX_TIME_NS: &str = "whyslow.max_time_ns";

/// How many times a commit that lost the race for its version retries on the newer one
/// (blind appends never conflict, so only the number of concurrent writers bounds this).
const MAX_COMMIT_RETRIES: usize = 100;

mod txn;

pub use txn::{application_transactions, parse_kafka_app_id};

/// How the application id of a Kafka topic partition's offsets begins.
const KAFKA_APP_PREFIX: &str = "whyslow.kafka/";

/// The application id of a Kafka topic partition's offsets.
pub fn kafka_app_id(topic: &str, partition: i32) -> String {
    format!("{KAFKA_APP_PREFIX}{topic}/{partition}")
}

/// The runtime delta-rs runs on, started on first use and kept for the process (a
/// runtime may not be dropped where a caller's runtime is running, so it never is).
fn runtime() -> Result<&'static tokio::runtime::Runtime, StoreError> {
    static RUNTIME: Mutex<Option<&'static tokio::runtime::Runtime>> = Mutex::new(None);
    let mut slot = RUNTIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(rt) = *slot {
        return Ok(rt);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("whyslow-delta")
        .enable_all()
        .build()
        .map_err(|e| StoreError::io("start the Delta runtime for", PathBuf::from("."), e))?;
    let rt: &'static tokio::runtime::Runtime = Box::leak(Box::new(rt));
    *slot = Some(rt);
    Ok(rt)
}

/// Runs `work` to completion on the Delta runtime. Called from inside another tokio
/// runtime (a DataFusion session, the stream worker's tasks), where blocking in the same
/// thread is refused, it runs on a scoped thread instead.
pub(crate) fn block_on<F>(work: F) -> Result<F::Output, StoreError>
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(rt.block_on(work));
    }
    Ok(std::thread::scope(|scope| {
        match scope.spawn(|| rt.block_on(work)).join() {
            Ok(out) => out,
            // The work panicked: the panic goes on in the caller's thread.
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }))
}

/// A delta-rs failure on the Delta table in `dir`, as the store reports it.
pub(crate) fn error(dir: &Path, source: DeltaTableError) -> StoreError {
    StoreError::Delta {
        path: dir.to_path_buf(),
        source: Box::new(source),
    }
}

/// The Delta log factory for buckets (`s3://`, `gs://`): delta-rs' default log store,
/// which commits with a put that fails when the commit file exists (S3 and GCS both honour
/// it), over the object store the store builds itself from the environment.
#[derive(Debug, Default)]
struct BucketLogStores;

impl deltalake_core::logstore::LogStoreFactory for BucketLogStores {
    fn with_options(
        &self,
        prefixed_store: deltalake_core::logstore::ObjectStoreRef,
        root_store: deltalake_core::logstore::ObjectStoreRef,
        location: &url::Url,
        options: &deltalake_core::logstore::StorageConfig,
    ) -> deltalake_core::DeltaResult<Arc<dyn deltalake_core::logstore::LogStore>> {
        Ok(deltalake_core::logstore::default_logstore(
            prefixed_store,
            root_store,
            location,
            options,
        ))
    }
}

/// Registers [`BucketLogStores`] for the bucket schemes, once per process.
fn register_bucket_schemes() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let factory = Arc::new(BucketLogStores);
        for scheme in ["s3://", "s3a://", "gs://"] {
            if let Ok(url) = url::Url::parse(scheme) {
                deltalake_core::logstore::logstore_factories().insert(url, factory.clone());
            }
        }
    });
}

/// Where `table`'s Delta table of the store at `root` is, as a path for messages.
pub(crate) fn table_dir(root: &Root, table: Table) -> PathBuf {
    root.display_path().join(table.name())
}

/// Whether `table` has a Delta table under `root` (a `_delta_log` with anything in it).
pub(crate) async fn is_table(root: &Root, table: Table) -> Result<bool, StoreError> {
    match root {
        Root::Local(dir) => Ok(dir.join(table.name()).join(DELTA_LOG_DIR).is_dir()),
        Root::Remote(remote) => {
            let rel = format!("{}/{DELTA_LOG_DIR}/", table.name());
            let prefix = remote.object(&rel);
            let mut listing = remote.store.list(Some(&prefix));
            match futures::TryStreamExt::try_next(&mut listing).await {
                Ok(first) => Ok(first.is_some()),
                Err(e) => Err(super::files::object_error(remote, "list", &rel, e)),
            }
        }
    }
}

/// `table`'s Delta table under `root` as its log says now; when `exists` is false, an
/// empty handle (the log is not read at all, which delta-rs would report as an error).
pub(crate) async fn load_table(
    root: &Root,
    table: Table,
    exists: bool,
) -> Result<DeltaTable, DeltaTableError> {
    let builder = match root {
        Root::Local(dir) => {
            let url = deltalake_core::ensure_table_uri(dir.join(table.name()).to_string_lossy())?;
            deltalake_core::DeltaTableBuilder::from_url(url)?
        }
        Root::Remote(remote) => {
            register_bucket_schemes();
            let text = format!(
                "{}/{}/",
                remote.url.as_str().trim_end_matches('/'),
                table.name()
            );
            let url = url::Url::parse(&text)
                .map_err(|e| DeltaTableError::InvalidTableLocation(format!("{text}: {e}")))?;
            deltalake_core::DeltaTableBuilder::from_url(url.clone())?
                .with_storage_backend(remote.store.clone(), url)
        }
    };
    if !exists {
        return builder.build();
    }
    builder.load().await
}

/// Opens `table`'s Delta table under `root`, creating it (schema, partition column) when
/// it does not exist yet; a table there with another schema is refused.
pub(crate) async fn open_or_create(table: Table, root: &Root) -> Result<DeltaTable, StoreError> {
    let dir = &table_dir(root, table);
    let err = |e| error(dir, e);
    if let Root::Local(_) = root {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create", dir, e))?;
    }
    let exists = is_table(root, table).await?;
    let existing = load_table(root, table, exists).await.map_err(err)?;
    let delta = if existing.version().is_some() {
        existing
    } else {
        match create(existing, table).await {
            Ok(created) => created,
            // Another writer may have created it first: read theirs, else the error.
            Err(e) => match load_table(root, table, true).await.map_err(err)? {
                theirs if theirs.version().is_some() => theirs,
                _ => return Err(err(e)),
            },
        }
    };
    check_schema(table, dir, &delta)?;
    Ok(delta)
}

/// Creates `table`'s Delta table (schema, partition column) at version 0 from the empty
/// handle `empty`; fails where another writer created it first. Not retried: delta-rs
/// retries a create that lost version 0 as a commit of its metadata on top of the winner's
/// table, and every writer whose snapshot is older then fails its next append with a
/// conflict (`MetadataChanged`), as three writers creating one bucket's tables at once did.
async fn create(empty: DeltaTable, table: Table) -> Result<DeltaTable, DeltaTableError> {
    let schema = delta_schema(table)?;
    let partitions: Vec<&str> = table
        .time_column()
        .map(|_| PARTITION_COLUMN)
        .into_iter()
        .collect();
    empty
        .create()
        .with_columns(schema.fields().cloned())
        .with_partition_columns(partitions)
        .with_save_mode(SaveMode::Ignore)
        .with_commit_properties(CommitProperties::default().with_max_retries(0))
        .await
}

/// Refuses a table whose columns or partitioning are not `table`'s.
pub(crate) fn check_schema(table: Table, dir: &Path, delta: &DeltaTable) -> Result<(), StoreError> {
    let err = |e| error(dir, e);
    let snapshot = delta.snapshot().map_err(err)?;
    let want = delta_schema(table).map_err(err)?;
    let found = snapshot.schema();
    let want_partitions: Vec<String> = table
        .time_column()
        .map(|_| PARTITION_COLUMN.to_string())
        .into_iter()
        .collect();
    let detail = if *found != want {
        let mismatch = want
            .fields()
            .zip(found.fields().map(Some).chain(std::iter::repeat(None)))
            .find(|(w, f)| Some(*w) != *f);
        match mismatch {
            Some((w, Some(f))) => format!(
                "column {} is {} where whyslow writes {} {}",
                f.name(),
                f.data_type(),
                w.name(),
                w.data_type()
            ),
            Some((w, None)) => format!("it has no column {}", w.name()),
            None => format!(
                "it has {} columns, whyslow writes {}",
                found.fields().len(),
                want.fields().len()
            ),
        }
    } else if snapshot.metadata().partition_columns() != want_partitions {
        format!(
            "it is partitioned by {:?}, whyslow by {want_partitions:?}",
            snapshot.metadata().partition_columns()
        )
    } else {
        return Ok(());
    };
    Err(StoreError::IncompatibleTable {
        path: dir.to_path_buf(),
        table,
        detail,
    })
}

/// How a commit changes one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// New rows only.
    Append,
    /// The same rows in fewer files (`data_change: false`: streaming readers skip it).
    Compact,
    /// Every row replaced (or removed).
    Overwrite,
}

/// Commits `removed` and `added` segments of `table` to `delta` as `change`, with
/// `txns` as application transactions; retries a lost race for the version on the newer
/// one. The handle's state moves to the new version; returns it.
pub(crate) async fn commit(
    delta: &mut DeltaTable,
    table: Table,
    change: Change,
    removed: &[SegmentEntry],
    added: &[SegmentEntry],
    txns: Vec<deltalake_core::kernel::Transaction>,
) -> Result<u64, DeltaTableError> {
    let data_change = change != Change::Compact;
    let now = chrono::Utc::now().timestamp_millis();
    let mut actions = Vec::with_capacity(removed.len() + added.len());
    for s in removed {
        let add = add_action(table, s, data_change, now);
        actions.push(Action::Remove(Remove {
            path: add.path,
            data_change,
            deletion_timestamp: Some(now),
            extended_file_metadata: Some(true),
            partition_values: Some(add.partition_values),
            size: Some(add.size),
            tags: add.tags,
            ..Remove::default()
        }));
    }
    for s in added {
        actions.push(Action::Add(add_action(table, s, data_change, now)));
    }
    let snapshot = delta.snapshot()?;
    let partition_by = Some(snapshot.metadata().partition_columns().to_vec());
    let operation = match change {
        Change::Append => DeltaOperation::Write {
            mode: SaveMode::Append,
            partition_by,
            predicate: None,
        },
        Change::Overwrite => DeltaOperation::Write {
            mode: SaveMode::Overwrite,
            partition_by,
            predicate: None,
        },
        Change::Compact => DeltaOperation::Optimize {
            predicate: None,
            target_size: added.iter().map(|s| s.bytes as i64).max().unwrap_or(0),
        },
    };
    // A compaction lands only on the version it was planned on: delta-rs' conflict check
    // lets two commits remove the same file when neither changes data, so a compaction
    // retried over another writer's compaction of the same segments would keep their
    // rows twice. One that loses the race is dropped; the next commit plans again.
    let retries = match change {
        Change::Compact => 0,
        Change::Append | Change::Overwrite => MAX_COMMIT_RETRIES,
    };
    let properties = CommitProperties::default()
        .with_application_transactions(txns)
        .with_create_checkpoint(false)
        .with_max_retries(retries);
    let done = CommitBuilder::from(properties)
        .with_actions(actions)
        .build(Some(snapshot), delta.log_store(), operation)
        .await?;
    delta.state = Some(done.snapshot());
    Ok(done.version())
}

/// Writes a checkpoint of `delta` at its loaded version, so that readers load one
/// Parquet file instead of replaying every commit.
pub(crate) async fn checkpoint(delta: &DeltaTable) -> Result<(), DeltaTableError> {
    deltalake_core::checkpoints::create_checkpoint(delta, None).await
}

/// The Delta schema of `table`: its Arrow schema, plus the partition column.
fn delta_schema(table: Table) -> Result<StructType, DeltaTableError> {
    let arrow = table.schema();
    let mut fields: Vec<Arc<Field>> = arrow.fields().iter().cloned().collect();
    if table.time_column().is_some() {
        fields.push(Arc::new(Field::new(PARTITION_COLUMN, DataType::Utf8, true)));
    }
    let schema = Schema::new(fields);
    Ok((&schema).try_into_kernel()?)
}

/// `rel` (relative to the store root) relative to `table`'s directory, as Delta names
/// files; `rel` always starts with the table's name (the writer names it so).
fn in_table(table: Table, rel: &str) -> String {
    rel.strip_prefix(table.name())
        .and_then(|r| r.strip_prefix('/'))
        .unwrap_or(rel)
        .to_string()
}

/// The key file of the segment at `path` (relative to its table directory):
/// `<KEYS_DIR>/<same directories>/<same name>.keys`.
pub(crate) fn keys_path_of(path: &str) -> String {
    let stem = path.strip_suffix(".parquet").unwrap_or(path);
    format!("{KEYS_DIR}/{stem}.keys")
}

fn add_action(table: Table, s: &SegmentEntry, data_change: bool, now_ms: i64) -> Add {
    let mut tags = HashMap::from([
        (TAG_KEYS.to_string(), Some(in_table(table, &s.keys_path))),
        (TAG_KEYS_BYTES.to_string(), Some(s.keys_bytes.to_string())),
        (TAG_KEY_MIN.to_string(), Some(s.key_min.to_string())),
        (TAG_KEY_MAX.to_string(), Some(s.key_max.to_string())),
    ]);
    if let (Some(lo), Some(hi)) = (s.min_time_ns, s.max_time_ns) {
        tags.insert(TAG_MIN_TIME_NS.to_string(), Some(lo.to_string()));
        tags.insert(TAG_MAX_TIME_NS.to_string(), Some(hi.to_string()));
    }
    // A partitioned table names its partition column in every file, null or not.
    let partition_values = match table.time_column() {
        Some(_) => [(PARTITION_COLUMN.to_string(), s.partition.clone())].into(),
        None => Default::default(),
    };
    Add {
        path: in_table(table, &s.path),
        partition_values,
        size: s.bytes as i64,
        modification_time: now_ms,
        data_change,
        stats: Some(format!("{{\"numRecords\":{}}}", s.rows)),
        tags: Some(tags),
        ..Add::default()
    }
}

/// The number of rows the `stats` JSON of an `add` action gives (`numRecords`).
fn num_records(stats: Option<&str>) -> u64 {
    #[derive(serde::Deserialize)]
    struct Stats {
        #[serde(rename = "numRecords")]
        num_records: Option<u64>,
    }
    stats
        .and_then(|s| serde_json::from_str::<Stats>(s).ok())
        .and_then(|s| s.num_records)
        .unwrap_or(0)
}

/// The segment an `add` action of `table` (in `dir`) describes, paths relative to the
/// store root; a path leaving the table is refused as corrupt.
pub(crate) fn segment_entry(
    table: Table,
    dir: &Path,
    add: &Add,
) -> Result<SegmentEntry, StoreError> {
    let tag = |name: &str| {
        add.tags
            .as_ref()
            .and_then(|t| t.get(name).cloned().flatten())
    };
    let number = |name: &str| tag(name).and_then(|v| v.parse::<i64>().ok());
    let keys = tag(TAG_KEYS).unwrap_or_else(|| keys_path_of(&add.path));
    for path in [&add.path, &keys] {
        if !is_inside_store(path) {
            return Err(StoreError::Corrupt {
                what: "Delta log",
                path: dir.join(DELTA_LOG_DIR),
                detail: format!("names the path '{path}', which is not inside the table"),
            });
        }
    }
    let name = table.name();
    Ok(SegmentEntry {
        table,
        path: format!("{name}/{}", add.path),
        keys_path: format!("{name}/{keys}"),
        partition: add
            .partition_values
            .get(PARTITION_COLUMN)
            .cloned()
            .flatten(),
        rows: num_records(add.stats.as_deref()),
        bytes: add.size.max(0) as u64,
        keys_bytes: number(TAG_KEYS_BYTES).unwrap_or(0).max(0) as u64,
        min_time_ns: number(TAG_MIN_TIME_NS),
        max_time_ns: number(TAG_MAX_TIME_NS),
        key_min: number(TAG_KEY_MIN).unwrap_or(i64::MIN),
        key_max: number(TAG_KEY_MAX).unwrap_or(i64::MAX),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_sit_under_the_hidden_keys_directory() {
        assert_eq!(
            keys_path_of("date=2026-11-29/0000000001-00001-ab.parquet"),
            "_keys/date=2026-11-29/0000000001-00001-ab.keys"
        );
        assert_eq!(keys_path_of("x.parquet"), "_keys/x.keys");
    }

    #[test]
    fn writers_creating_one_table_at_once_leave_one_metadata_commit() {
        // Eight writers that found no table create it at once, twenty times over: delta-rs
        // retried a create that lost version 0 as a commit on top of the winner's, and
        // then every append planned on version 0 failed (`MetadataChanged`).
        const WRITERS: usize = 8;
        let table = Table::Metrics;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(WRITERS)
            .enable_all()
            .build()
            .expect("a runtime");
        for round in 0..20 {
            let dir = tempfile::tempdir().expect("a temporary directory");
            let root = Root::Local(dir.path().to_path_buf());
            std::fs::create_dir_all(table_dir(&root, table)).expect("the table's directory");
            let created = rt.block_on(async {
                let mut empties = Vec::new();
                for _ in 0..WRITERS {
                    empties.push(
                        load_table(&root, table, false)
                            .await
                            .expect("an empty handle"),
                    );
                }
                let tasks: Vec<_> = empties
                    .into_iter()
                    .map(|empty| tokio::spawn(create(empty, table)))
                    .collect();
                let mut created = 0;
                for t in tasks {
                    if t.await.expect("a create task").is_ok() {
                        created += 1;
                    }
                }
                created
            });
            assert!(created >= 1, "round {round}: nobody created the table");
            let log = dir.path().join(table.name()).join(DELTA_LOG_DIR);
            let commits: Vec<String> = std::fs::read_dir(&log)
                .expect("the log")
                .flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(".json"))
                .collect();
            assert_eq!(
                commits,
                vec!["00000000000000000000.json".to_string()],
                "round {round}"
            );
        }
    }

    #[test]
    fn rows_come_from_the_stats() {
        assert_eq!(num_records(Some(r#"{"numRecords":42}"#)), 42);
        assert_eq!(num_records(Some("not json")), 0);
        assert_eq!(num_records(None), 0);
    }
}
