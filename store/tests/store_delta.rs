//! The store's tables are Delta tables: what the writer commits comes back from their
//! logs as it went in (paths, partitions, rows, dedupe-key files, time ranges), Kafka
//! offsets come back as the `events` table's application transactions, and outside Delta
//! readers (Python `deltalake`, Polars) count the same rows and sums as the store. The Python part needs `deltalake`
//! and `polars` from PyPI; set `WHYSLOW_SKIP_PYTHON=1` to skip it.

mod store_common;

use std::process::Command;

use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{KafkaOffset, Store, StoreWriter, WriterOptions};

const SCRIPT: &str = r#"
import sys, json
from deltalake import DeltaTable
import polars as pl
t = DeltaTable(sys.argv[1])
a = t.to_pyarrow_table()
df = pl.read_delta(sys.argv[1])
print(json.dumps({
    "version": t.version(),
    "partitions": t.metadata().partition_columns,
    "deltalake_rows": a.num_rows,
    "deltalake_value_sum": round(sum(a.column("value").to_pylist()), 6),
    "polars_rows": df.height,
    "polars_value_sum": round(df["value"].sum(), 6),
    "polars_days": sorted(df["date"].unique().to_list()),
}))
"#;

fn offset(topic: &str, partition: i32, next_offset: i64) -> KafkaOffset {
    KafkaOffset {
        topic: topic.into(),
        partition,
        next_offset,
    }
}

fn sorted(mut segments: Vec<whyslow_store::SegmentInfo>) -> Vec<whyslow_store::SegmentInfo> {
    segments.sort_by(|a, b| a.path.cmp(&b.path));
    segments
}

/// Runs the outside readers on a Delta table directory; their JSON answer.
fn outside_readers(table_dir: &std::path::Path) -> Option<serde_json::Value> {
    if std::env::var("WHYSLOW_SKIP_PYTHON").is_ok_and(|v| v == "1") {
        eprintln!("outside readers skipped: WHYSLOW_SKIP_PYTHON=1");
        return None;
    }
    let out = Command::new("python3")
        .arg("-c")
        .arg(SCRIPT)
        .arg(table_dir)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "python deltalake/polars failed (pip install deltalake polars): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// A writer that never compacts on its own and checkpoints every `checkpoint_interval`
/// versions of a table.
fn writer(root: &std::path::Path, checkpoint_interval: u64) -> StoreWriter {
    StoreWriter::open_with(
        root,
        WriterOptions {
            auto_compact_segments: 0,
            checkpoint_interval,
            ..WriterOptions::default()
        },
    )
    .unwrap()
}

/// The versions of the checkpoints in a Delta log directory.
fn checkpoints(log: &std::path::Path) -> Vec<u64> {
    let mut out: Vec<u64> = std::fs::read_dir(log)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".checkpoint.parquet")?.parse().ok()
        })
        .collect();
    out.sort();
    out
}

/// A compaction is one `OPTIMIZE` commit and checkpoints are written as the log grows:
/// a fresh reader gets the writer's segments back (tags intact through the checkpoint),
/// the merged-away files stay on disk for running readers, and outside readers count
/// every row once right after the compaction.
#[test]
fn a_compaction_and_a_checkpoint_keep_every_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), 3);
    for i in 0..4 {
        w.append(Table::Metrics, metrics(i * 1_000..(i + 1) * 1_000, BASE_NS))
            .unwrap();
        w.commit(&[]).unwrap();
    }
    let before = sorted(w.store().segments(Table::Metrics));
    assert!(before.len() >= 4, "{before:#?}");
    for s in &before {
        let keys = s.keys_path.to_string_lossy();
        assert!(keys.contains("/metrics/_keys/date="), "{keys}");
        assert!(s.keys_path.is_file(), "{keys}");
    }
    assert!(w.compact().unwrap().segments_removed >= 2);
    let after = sorted(w.store().segments(Table::Metrics));
    assert!(after.len() < before.len(), "{after:#?}");
    assert!(before.iter().all(|s| s.path.is_file()), "kept for readers");
    let log = dir.path().join("metrics/_delta_log");
    assert!(
        !checkpoints(&log).is_empty(),
        "a checkpoint every 3 versions"
    );
    let last = std::fs::read_to_string(log.join(format!("{:020}.json", 5))).unwrap();
    assert!(last.contains("\"OPTIMIZE\""), "{last}");
    drop(w);

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(sorted(store.segments(Table::Metrics)), after);
    let rows = store.rows(Table::Metrics);
    assert_eq!(rows, 4_000);
    let Some(v) = outside_readers(&dir.path().join("metrics")) else {
        return;
    };
    assert_eq!(v["version"], 5, "{v}");
    assert_eq!(v["deltalake_rows"], rows, "{v}");
    assert_eq!(v["polars_rows"], rows, "{v}");
}

/// Rows and offsets committed together come back from a fresh reader; the same offsets
/// again with no new rows commit nothing; outside readers agree on rows, sums and days.
#[test]
fn segments_and_offsets_round_trip_through_the_delta_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Metrics, metrics(0..6_000, BASE_NS))
        .unwrap();
    w.append(Table::Events, events(0..200, 3_600_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[offset("dcgm", 0, 100)]).unwrap();
    w.append(Table::Metrics, metrics(6_000..9_000, BASE_NS))
        .unwrap();
    w.commit(&[offset("dcgm", 0, 250), offset("dcgm", 1, 7)])
        .unwrap();
    let version = w.store().version();
    // The same batch again (a worker that re-read it after a crash): nothing committed.
    w.append(Table::Metrics, metrics(6_000..9_000, BASE_NS))
        .unwrap();
    let again = w.commit(&[offset("dcgm", 0, 250)]).unwrap();
    assert_eq!((again.version, again.written()), (None, 0));
    let segments = sorted(w.store().segments(Table::Metrics));
    drop(w);

    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.version(), version);
    assert_eq!(sorted(store.segments(Table::Metrics)), segments);
    let want: std::collections::BTreeMap<(String, i32), i64> =
        [(("dcgm".to_string(), 0), 250), (("dcgm".to_string(), 1), 7)]
            .into_iter()
            .collect();
    assert_eq!(store.kafka_offsets(), want);
    assert!(store.segments(Table::Causes).is_empty());
    assert!(
        !dir.path().join("causes").exists(),
        "no table before its first rows"
    );

    let Some(v) = outside_readers(&dir.path().join("metrics")) else {
        return;
    };
    let rows = store.rows(Table::Metrics);
    let sum = value_sum(&read_table(&store, Table::Metrics));
    assert_eq!(v["partitions"], serde_json::json!(["date"]), "{v}");
    assert_eq!(v["deltalake_rows"], rows, "{v}");
    assert_eq!(v["polars_rows"], rows, "{v}");
    for reader in ["deltalake_value_sum", "polars_value_sum"] {
        let got = v[reader].as_f64().unwrap();
        assert!(
            (got - sum).abs() < 1e-6 * sum.abs().max(1.0),
            "{reader}: {v}"
        );
    }
    let days: Vec<String> = segments
        .iter()
        .filter_map(|s| s.partition.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(v["polars_days"], serde_json::json!(days), "{v}");
}

fn value_sum(batches: &[arrow::array::RecordBatch]) -> f64 {
    let mut sum = 0.0;
    for b in batches {
        let col = b
            .column_by_name("value")
            .expect("metrics have a value column");
        let values = col
            .as_any()
            .downcast_ref::<arrow::array::Float64Array>()
            .expect("value is Float64");
        sum += values.iter().flatten().sum::<f64>();
    }
    (sum * 1e6).round() / 1e6
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every topic partition's offset comes back from the log at once, from a checkpoint and
/// the commits after it (the newest value wins), also when the commits before the
/// checkpoint are gone (as Delta's log cleanup leaves it) and when the store is opened
/// from inside a tokio runtime (a DataFusion session, a stream task).
#[test]
fn every_offset_comes_back_across_a_checkpoint_and_from_async_code() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = writer(dir.path(), 3);
    w.append(Table::Events, events(0..50, 3_600_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[
        offset("kmsg", 0, 10),
        offset("kmsg", 1, 20),
        offset("k8s.events", 0, 5),
    ])
    .unwrap();
    w.commit(&[offset("kmsg", 1, 35)]).unwrap();
    let log = dir.path().join("events/_delta_log");
    let checkpoint = *checkpoints(&log).last().expect("a checkpoint at version 2");
    assert_eq!(checkpoint, 2);
    // `k8s.events` was only ever in commit 1: it must now come from the checkpoint.
    for v in 0..checkpoint {
        std::fs::remove_file(log.join(format!("{v:020}.json"))).unwrap();
    }
    drop(w);
    let mut w = writer(dir.path(), 3);
    w.commit(&[offset("kmsg", 0, 12), offset("dcgm", 3, 1)])
        .unwrap();
    drop(w);
    let want: std::collections::BTreeMap<(String, i32), i64> = [
        (("dcgm".to_string(), 3), 1),
        (("k8s.events".to_string(), 0), 5),
        (("kmsg".to_string(), 0), 12),
        (("kmsg".to_string(), 1), 35),
    ]
    .into_iter()
    .collect();
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.kafka_offsets(), want);
    assert_eq!(store.rows(Table::Events), 50);

    let (offsets, rows) = runtime().block_on(async {
        let store = Store::open(dir.path()).unwrap();
        (store.kafka_offsets(), store.rows(Table::Events))
    });
    assert_eq!((offsets, rows), (want, 50));
}

/// A Delta table written by another tool where the store's table belongs, with columns
/// of its own, is refused in one sentence naming it, by readers and by the writer;
/// nothing is committed to it.
#[test]
fn a_table_of_another_schema_is_refused_and_left_alone() {
    use deltalake_core::kernel::{DataType as DeltaType, StructField};
    let dir = tempfile::tempdir().unwrap();
    let table_dir = dir.path().join(Table::Events.name());
    std::fs::create_dir_all(&table_dir).unwrap();
    runtime().block_on(async {
        let url = deltalake_core::ensure_table_uri(table_dir.to_string_lossy()).unwrap();
        deltalake_core::DeltaTable::try_from_url(url)
            .await
            .unwrap()
            .create()
            .with_columns([
                StructField::new("id", DeltaType::LONG, false),
                StructField::new("payload", DeltaType::STRING, true),
            ])
            .await
            .unwrap();
    });
    let log = table_dir.join("_delta_log");
    let before = std::fs::read_dir(&log).unwrap().count();
    for err in [
        Store::open(dir.path()).unwrap_err().to_string(),
        StoreWriter::open(dir.path())
            .err()
            .expect("refused")
            .to_string(),
    ] {
        assert!(err.contains(&table_dir.display().to_string()), "{err}");
        assert!(err.contains("cannot hold whyslow's events table"), "{err}");
        assert!(err.contains("nothing was written"), "{err}");
    }
    assert_eq!(std::fs::read_dir(&log).unwrap().count(), before);
}

/// A Delta log naming a file outside its table (tampered, or written by a broken tool)
/// is refused as corrupt, naming the log, instead of being read and later vacuumed.
#[test]
fn a_log_naming_a_path_outside_the_table_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Events, events(0..5, 3_600_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    drop(w);
    let log = dir.path().join("events/_delta_log");
    let add = serde_json::json!({"add": {
        "path": "../../etc/passwd", "partitionValues": {"date": "2026-11-29"},
        "size": 1, "modificationTime": 0, "dataChange": true,
        "stats": "{\"numRecords\":1}"
    }});
    std::fs::write(log.join(format!("{:020}.json", 2)), format!("{add}\n")).unwrap();
    let err = Store::open(dir.path()).unwrap_err().to_string();
    assert!(err.contains("not inside the table"), "{err}");
    assert!(err.contains("_delta_log"), "{err}");
}
