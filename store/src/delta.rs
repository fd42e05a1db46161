//! The store's tables as Delta Lake tables, written and read with delta-rs: one table per
//! table of `contracts/tables.md` under `<root>/<table>/`, partitioned by `date` as the
//! segments are; each committed segment is an `add` action whose tags carry what the
//! store needs beside the rows (its dedupe-key file, row count and time range), and Kafka
//! offsets are application transactions (`txn`) in the same commit as their rows.
//!
//! delta-rs is asynchronous; this store is called from plain threads (the batch runner)
//! and from `spawn_blocking` (the stream worker), so it drives delta-rs on a runtime of
//! its own.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use deltalake_core::kernel::engine::arrow_conversion::TryIntoKernel;
use deltalake_core::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake_core::kernel::{Action, Add, Remove, StructType, Transaction};
use deltalake_core::protocol::{DeltaOperation, SaveMode};
use deltalake_core::{DeltaTable, DeltaTableError};
use whyslow_schemas::Table;

use super::{KafkaOffset, SegmentInfo, StoreError};

/// The partition column: the UTC day of the table's time column, `YYYY-MM-DD`.
pub const PARTITION_COLUMN: &str = "date";

/// Tags of an `add` action (Delta keeps tags it does not know through checkpoints).
const TAG_KEYS: &str = "whyslow.keys";
const TAG_KEYS_BYTES: &str = "whyslow.keys_bytes";
const TAG_MIN_TIME_NS: &str = "whyslow.min_time_ns";
const TAG_MAX_TIME_NS: &str = "whyslow.max_time_ns";

/// How many times a commit that lost the race for its version retries on the newer one
/// (blind appends never conflict, so only the number of concurrent writers bounds this).
const MAX_COMMIT_RETRIES: usize = 100;

mod txn;

pub use txn::parse_kafka_app_id;

/// How the application id of a Kafka topic partition's offsets begins.
const KAFKA_APP_PREFIX: &str = "whyslow.kafka/";

/// The application id of a Kafka topic partition's offsets.
pub fn kafka_app_id(topic: &str, partition: i32) -> String {
    format!("{KAFKA_APP_PREFIX}{topic}/{partition}")
}

/// The Delta tables of one store directory.
pub struct DeltaTables {
    root: PathBuf,
    runtime: tokio::runtime::Runtime,
}

impl DeltaTables {
    /// The tables under `root` (nothing is read or created yet).
    pub fn new(root: &Path) -> Result<DeltaTables, StoreError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::io("start the Delta runtime for", root, e))?;
        Ok(DeltaTables {
            root: root.to_path_buf(),
            runtime,
        })
    }

    /// Runs `work` to completion on this store's runtime. Called from inside another tokio
    /// runtime (a DataFusion session, the stream worker's tasks), where blocking on a
    /// second runtime in the same thread is refused, it runs on a scoped thread instead.
    fn block_on<F>(&self, work: F) -> F::Output
    where
        F: std::future::Future + Send,
        F::Output: Send,
    {
        if tokio::runtime::Handle::try_current().is_err() {
            return self.runtime.block_on(work);
        }
        std::thread::scope(|scope| {
            match scope.spawn(|| self.runtime.block_on(work)).join() {
                Ok(out) => out,
                // The work panicked: the panic goes on in the caller's thread.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    }

    /// The directory of `table`'s Delta table.
    pub fn table_dir(&self, table: Table) -> PathBuf {
        self.root.join(table.name())
    }

    fn error(&self, table: Table, source: DeltaTableError) -> StoreError {
        StoreError::Delta {
            path: self.table_dir(table),
            source: Box::new(source),
        }
    }

    /// Opens `table`, creating it (schema, partition column) when it does not exist yet;
    /// a table there with another schema (written by another tool) is refused.
    fn open_or_create(&self, table: Table) -> Result<DeltaTable, StoreError> {
        let dir = self.table_dir(table);
        std::fs::create_dir_all(&dir).map_err(|e| StoreError::io("create", &dir, e))?;
        let delta = self.load_or_create(table, &dir)?;
        self.check_schema(table, &delta)?;
        Ok(delta)
    }

    /// Refuses a table whose columns or partitioning are not `table`'s.
    fn check_schema(&self, table: Table, delta: &DeltaTable) -> Result<(), StoreError> {
        let err = |e| self.error(table, e);
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
                    "column {} is {:?} where whyslow writes {} {:?}",
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
            path: self.table_dir(table),
            table,
            detail,
        })
    }

    fn load_or_create(&self, table: Table, dir: &Path) -> Result<DeltaTable, StoreError> {
        let err = |e| self.error(table, e);
        self.block_on(async {
            let existing = load_table(dir).await.map_err(err)?;
            if existing.version().is_some() {
                return Ok(existing);
            }
            let schema = delta_schema(table).map_err(err)?;
            let partitions: Vec<&str> = table
                .time_column()
                .map(|_| PARTITION_COLUMN)
                .into_iter()
                .collect();
            let created = existing
                .create()
                .with_columns(schema.fields().cloned())
                .with_partition_columns(partitions)
                .with_save_mode(SaveMode::Ignore)
                .await;
            match created {
                Ok(created) => Ok(created),
                // Another writer may have created it first: read theirs, else the error.
                Err(e) => match load_table(dir).await.map_err(err)? {
                    theirs if theirs.version().is_some() => Ok(theirs),
                    _ => Err(err(e)),
                },
            }
        })
    }

    /// Commits `segments` (already written under the table's directory) to `table` in one
    /// Delta commit, with `offsets` as application transactions; returns the new version.
    /// `None` when the table already records every one of `offsets` at or past it: the
    /// batch was committed before (a worker re-reading after a crash or a rebalance), so
    /// nothing is committed again. A concurrent commit of the same offsets fails with
    /// delta-rs' transaction conflict.
    pub fn commit(
        &self,
        table: Table,
        segments: &[SegmentInfo],
        offsets: &[KafkaOffset],
    ) -> Result<Option<u64>, StoreError> {
        let delta = self.open_or_create(table)?;
        let dir = self.table_dir(table);
        let mut actions = Vec::with_capacity(segments.len());
        for s in segments {
            actions.push(Action::Add(add_action(&dir, s)?));
        }
        let txns = offsets
            .iter()
            .map(|o| Transaction::new(kafka_app_id(&o.topic, o.partition), o.next_offset))
            .collect();
        let err = |e| self.error(table, e);
        self.block_on(async {
            let snapshot = delta.snapshot().map_err(err)?;
            let mut recorded = !offsets.is_empty();
            for o in offsets {
                let app = kafka_app_id(&o.topic, o.partition);
                let at = snapshot
                    .transaction_version(delta.log_store().as_ref(), app)
                    .await
                    .map_err(err)?;
                recorded &= at.is_some_and(|v| v >= o.next_offset);
            }
            if recorded {
                return Ok(None);
            }
            let operation = DeltaOperation::Write {
                mode: SaveMode::Append,
                partition_by: Some(snapshot.metadata().partition_columns().to_vec()),
                predicate: None,
            };
            let properties = CommitProperties::default().with_application_transactions(txns);
            commit_actions(&delta, actions, operation, properties)
                .await
                .map(Some)
                .map_err(err)
        })
    }

    /// Commits a compaction of `table`: `removed` segments give way to `added` ones holding
    /// the same rows, in one commit (`data_change: false`, so streaming readers of the
    /// table skip it); returns the new version. One compactor per table: delta-rs does not
    /// detect two compactions removing the same file.
    pub fn compact(
        &self,
        table: Table,
        removed: &[SegmentInfo],
        added: &[SegmentInfo],
    ) -> Result<u64, StoreError> {
        let delta = self.open_or_create(table)?;
        let dir = self.table_dir(table);
        let now = chrono::Utc::now().timestamp_millis();
        let mut actions = Vec::with_capacity(removed.len() + added.len());
        for s in removed {
            let add = add_action(&dir, s)?;
            actions.push(Action::Remove(Remove {
                path: add.path,
                data_change: false,
                deletion_timestamp: Some(now),
                extended_file_metadata: Some(true),
                partition_values: Some(add.partition_values),
                size: Some(add.size),
                tags: add.tags,
                ..Remove::default()
            }));
        }
        for s in added {
            let mut add = add_action(&dir, s)?;
            add.data_change = false;
            actions.push(Action::Add(add));
        }
        let target_size = added.iter().map(|s| s.bytes as i64).max().unwrap_or(0);
        let err = |e| self.error(table, e);
        let operation = DeltaOperation::Optimize {
            predicate: None,
            target_size,
        };
        self.block_on(commit_actions(
            &delta,
            actions,
            operation,
            CommitProperties::default(),
        ))
        .map_err(err)
    }

    /// Writes a checkpoint of `table` at its current version, so that readers load one
    /// Parquet file instead of replaying every commit.
    pub fn checkpoint(&self, table: Table) -> Result<(), StoreError> {
        let Some(delta) = self.open(table)? else {
            return Ok(());
        };
        self.block_on(deltalake_core::checkpoints::create_checkpoint(&delta, None))
            .map_err(|e| self.error(table, e))
    }

    /// The segments `table` holds now, as its Delta log says (empty when it has no table).
    pub fn segments(&self, table: Table) -> Result<Vec<SegmentInfo>, StoreError> {
        let Some(delta) = self.open(table)? else {
            return Ok(Vec::new());
        };
        let dir = self.table_dir(table);
        let snapshot = delta.snapshot().map_err(|e| self.error(table, e))?;
        let mut out = Vec::new();
        for file in snapshot.log_data() {
            // The tags are only reachable through the whole action in delta-rs 1.1.
            #[allow(deprecated)]
            let add = file.add_action();
            out.push(segment_info(&dir, table, &add)?);
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// The next offset of a Kafka topic partition recorded in `table`, if any.
    pub fn offset(
        &self,
        table: Table,
        topic: &str,
        partition: i32,
    ) -> Result<Option<i64>, StoreError> {
        let Some(delta) = self.open(table)? else {
            return Ok(None);
        };
        let err = |e| self.error(table, e);
        self.block_on(async {
            let snapshot = delta.snapshot().map_err(err)?;
            snapshot
                .transaction_version(delta.log_store().as_ref(), kafka_app_id(topic, partition))
                .await
                .map_err(err)
        })
    }

    /// Every Kafka topic partition's next offset recorded in `table` (empty when it has no
    /// table); application ids of other writers are left out.
    pub fn offsets(&self, table: Table) -> Result<BTreeMap<(String, i32), i64>, StoreError> {
        let Some(delta) = self.open(table)? else {
            return Ok(BTreeMap::new());
        };
        let all = self
            .block_on(txn::application_transactions(&delta))
            .map_err(|e| self.error(table, e))?;
        Ok(all
            .into_iter()
            .filter_map(|(app, next)| Some((parse_kafka_app_id(&app)?, next)))
            .collect())
    }

    fn open(&self, table: Table) -> Result<Option<DeltaTable>, StoreError> {
        let dir = self.table_dir(table);
        if !dir.join("_delta_log").is_dir() {
            return Ok(None);
        }
        let err = |e| self.error(table, e);
        let t = self.block_on(load_table(&dir)).map_err(err)?;
        Ok(t.version().is_some().then_some(t))
    }
}

/// The Delta table in `dir` as its log says now (no state when there is no table yet).
async fn load_table(dir: &Path) -> Result<DeltaTable, DeltaTableError> {
    let url = deltalake_core::ensure_table_uri(dir.to_string_lossy())?;
    DeltaTable::try_from_url(url).await
}

/// Commits `actions` to `delta` as `operation` on its current snapshot, retrying a lost
/// race for the version on the newer one; the new version.
async fn commit_actions(
    delta: &DeltaTable,
    actions: Vec<Action>,
    operation: DeltaOperation,
    properties: CommitProperties,
) -> Result<u64, DeltaTableError> {
    let done = CommitBuilder::from(properties.with_max_retries(MAX_COMMIT_RETRIES))
        .with_actions(actions)
        .build(Some(delta.snapshot()?), delta.log_store(), operation)
        .await?;
    Ok(done.version())
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

/// `path` relative to the table directory `dir`, as Delta names files.
fn relative(dir: &Path, path: &Path) -> Result<String, StoreError> {
    path.strip_prefix(dir)
        .ok()
        .and_then(Path::to_str)
        .map(str::to_string)
        .ok_or_else(|| StoreError::Corrupt {
            what: "segment",
            path: path.to_path_buf(),
            detail: format!("is not inside its table directory {}", dir.display()),
        })
}

fn add_action(dir: &Path, s: &SegmentInfo) -> Result<Add, StoreError> {
    let mut tags = HashMap::from([
        (TAG_KEYS.to_string(), Some(relative(dir, &s.keys_path)?)),
        (TAG_KEYS_BYTES.to_string(), Some(s.keys_bytes.to_string())),
    ]);
    if let (Some(lo), Some(hi)) = (s.min_time_ns, s.max_time_ns) {
        tags.insert(TAG_MIN_TIME_NS.to_string(), Some(lo.to_string()));
        tags.insert(TAG_MAX_TIME_NS.to_string(), Some(hi.to_string()));
    }
    let partition_values = s
        .partition
        .iter()
        .map(|day| (PARTITION_COLUMN.to_string(), Some(day.clone())))
        .collect();
    Ok(Add {
        path: relative(dir, &s.path)?,
        partition_values,
        size: s.bytes as i64,
        modification_time: chrono::Utc::now().timestamp_millis(),
        data_change: true,
        stats: Some(format!("{{\"numRecords\":{}}}", s.rows)),
        tags: Some(tags),
        ..Add::default()
    })
}

fn segment_info(dir: &Path, table: Table, add: &Add) -> Result<SegmentInfo, StoreError> {
    let tag = |name: &str| {
        add.tags
            .as_ref()
            .and_then(|t| t.get(name).cloned().flatten())
    };
    let number = |name: &str| tag(name).and_then(|v| v.parse::<i64>().ok());
    let rows = add
        .stats
        .as_deref()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(s).ok())
        .and_then(|v| v.get("numRecords").and_then(serde_json::Value::as_u64))
        .unwrap_or(0);
    let keys = tag(TAG_KEYS).unwrap_or_default();
    if !super::log::is_inside_store(&add.path)
        || (!keys.is_empty() && !super::log::is_inside_store(&keys))
    {
        return Err(StoreError::Corrupt {
            what: "Delta log",
            path: dir.join("_delta_log"),
            detail: format!(
                "names the path '{}', which is not inside the table",
                add.path
            ),
        });
    }
    Ok(SegmentInfo {
        path: dir.join(&add.path),
        table,
        rows,
        bytes: add.size.max(0) as u64,
        min_time_ns: number(TAG_MIN_TIME_NS),
        max_time_ns: number(TAG_MAX_TIME_NS),
        partition: add
            .partition_values
            .get(PARTITION_COLUMN)
            .cloned()
            .flatten(),
        keys_path: dir.join(keys),
        keys_bytes: number(TAG_KEYS_BYTES).unwrap_or(0).max(0) as u64,
    })
}
