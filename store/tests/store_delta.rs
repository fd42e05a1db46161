//! Segments committed to a table's Delta log come back from it as they went in (paths,
//! partitions, rows, dedupe-key files, time ranges), Kafka offsets come back as the
//! table's application transactions, and outside Delta readers (Python `deltalake`,
//! Polars) count the same rows and sums as the store. The Python part needs `deltalake`
//! and `polars` from PyPI; set `WHYSLOW_SKIP_PYTHON=1` to skip it.

mod store_common;

use std::process::Command;

use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::delta::DeltaTables;
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

/// A compaction the store made, committed to the Delta log as one `OPTIMIZE`, then a
/// checkpoint: the log gives the compacted segments (tags intact through the checkpoint)
/// and outside readers count every row once right after it.
#[test]
fn a_compaction_and_a_checkpoint_keep_every_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_with(
        dir.path(),
        WriterOptions {
            auto_compact_segments: 0,
            ..WriterOptions::default()
        },
    )
    .unwrap();
    let delta = DeltaTables::new(dir.path()).unwrap();
    for i in 0..4 {
        w.append(Table::Metrics, metrics(i * 1_000..(i + 1) * 1_000, BASE_NS))
            .unwrap();
        w.commit(&[]).unwrap();
        let committed: Vec<_> = w.store().segments(Table::Metrics);
        let known = delta.segments(Table::Metrics).unwrap();
        let new: Vec<_> = committed
            .into_iter()
            .filter(|s| !known.contains(s))
            .collect();
        delta.commit(Table::Metrics, &new, &[]).unwrap();
    }
    let before = sorted(w.store().segments(Table::Metrics));
    assert!(before.len() >= 4, "{before:#?}");
    assert!(w.compact().unwrap().segments_removed >= 2);
    let after = sorted(w.store().segments(Table::Metrics));
    let removed: Vec<_> = before
        .iter()
        .filter(|s| !after.contains(s))
        .cloned()
        .collect();
    let added: Vec<_> = after
        .iter()
        .filter(|s| !before.contains(s))
        .cloned()
        .collect();
    assert!(!removed.is_empty() && !added.is_empty());
    let version = delta.compact(Table::Metrics, &removed, &added).unwrap();
    delta.checkpoint(Table::Metrics).unwrap();
    assert!(
        delta
            .table_dir(Table::Metrics)
            .join(format!("_delta_log/{version:020}.checkpoint.parquet"))
            .is_file()
    );
    assert_eq!(sorted(delta.segments(Table::Metrics).unwrap()), after);

    let store = Store::open(dir.path()).unwrap();
    let Some(v) = outside_readers(&delta.table_dir(Table::Metrics)) else {
        return;
    };
    let rows = store.rows(Table::Metrics);
    assert_eq!(rows, 4_000);
    assert_eq!(v["version"], version, "{v}");
    assert_eq!(v["deltalake_rows"], rows, "{v}");
    assert_eq!(v["polars_rows"], rows, "{v}");
}

#[test]
fn segments_and_offsets_round_trip_through_the_delta_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Metrics, metrics(0..6_000, BASE_NS))
        .unwrap();
    w.append(Table::Events, events(0..200, 3_600_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    w.append(Table::Metrics, metrics(6_000..9_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    drop(w);
    let store = Store::open(dir.path()).unwrap();
    let delta = DeltaTables::new(dir.path()).unwrap();

    let mut segments = store.segments(Table::Metrics);
    assert!(segments.len() >= 2, "{segments:#?}");
    let (first, rest) = segments.split_at(1);
    let v0 = delta
        .commit(Table::Metrics, first, &[offset("dcgm", 0, 100)])
        .unwrap()
        .expect("committed");
    let v1 = delta
        .commit(
            Table::Metrics,
            rest,
            &[offset("dcgm", 0, 250), offset("dcgm", 1, 7)],
        )
        .unwrap()
        .expect("committed");
    assert_eq!(v1, v0 + 1);
    // The same batch again (a worker that re-read it after a crash): nothing committed.
    assert_eq!(
        delta
            .commit(Table::Metrics, first, &[offset("dcgm", 0, 100)])
            .unwrap(),
        None
    );
    let mut back = delta.segments(Table::Metrics).unwrap();
    segments.sort_by(|a, b| a.path.cmp(&b.path));
    back.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(back, segments);
    assert_eq!(delta.offset(Table::Metrics, "dcgm", 0).unwrap(), Some(250));
    assert_eq!(delta.offset(Table::Metrics, "dcgm", 1).unwrap(), Some(7));
    assert_eq!(delta.offset(Table::Metrics, "dcgm", 2).unwrap(), None);
    // A table never committed to Delta has neither segments nor offsets.
    assert_eq!(delta.segments(Table::Causes).unwrap(), []);
    assert_eq!(delta.offset(Table::Causes, "dcgm", 0).unwrap(), None);

    let Some(v) = outside_readers(&delta.table_dir(Table::Metrics)) else {
        return;
    };
    let rows = store.rows(Table::Metrics);
    let sum = value_sum(&read_table(&store, Table::Metrics));
    assert_eq!(v["version"], v1, "{v}");
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

/// A segment as a writer would describe it (the log test needs no file behind it).
fn fake_segment(root: &std::path::Path, writer: usize, i: usize) -> whyslow_store::SegmentInfo {
    let dir = root.join("metrics/date=2026-11-29");
    whyslow_store::SegmentInfo {
        path: dir.join(format!("w{writer}-{i}.parquet")),
        table: Table::Metrics,
        rows: 10,
        bytes: 1_000,
        min_time_ns: Some(BASE_NS),
        max_time_ns: Some(BASE_NS + 1),
        partition: Some("2026-11-29".into()),
        keys_path: dir.join(format!("w{writer}-{i}.keys")),
        keys_bytes: 100,
    }
}

/// Writers that commit to one table at the same moment (each its own delta-rs handle, as
/// stream workers on different hosts would) take turns by Delta's optimistic concurrency:
/// every commit lands once, each writer's offsets are its own transaction.
#[test]
fn concurrent_writers_each_commit_once() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    // The table exists before the race (creation races are a separate, rarer case).
    DeltaTables::new(&root)
        .unwrap()
        .commit(Table::Metrics, &[], &[])
        .unwrap();
    const WRITERS: usize = 4;
    const COMMITS: usize = 10;
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(WRITERS));
    let handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (root, barrier) = (root.clone(), barrier.clone());
            std::thread::spawn(move || {
                let delta = DeltaTables::new(&root).unwrap();
                barrier.wait();
                for i in 0..COMMITS {
                    delta
                        .commit(
                            Table::Metrics,
                            &[fake_segment(&root, w, i)],
                            &[offset("dcgm", w as i32, (i + 1) as i64)],
                        )
                        .unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let delta = DeltaTables::new(&root).unwrap();
    let mut got: Vec<_> = delta
        .segments(Table::Metrics)
        .unwrap()
        .into_iter()
        .map(|s| s.path)
        .collect();
    got.sort();
    let mut want: Vec<_> = (0..WRITERS)
        .flat_map(|w| (0..COMMITS).map(move |i| (w, i)))
        .map(|(w, i)| fake_segment(&root, w, i).path)
        .collect();
    want.sort();
    assert_eq!(got, want);
    for w in 0..WRITERS {
        assert_eq!(
            delta.offset(Table::Metrics, "dcgm", w as i32).unwrap(),
            Some(COMMITS as i64)
        );
    }
}

/// A store holding `n` events (committed by the writer), and its Delta tables.
fn store_with_events(root: &std::path::Path, n: usize) -> (Store, DeltaTables) {
    let mut w = StoreWriter::open(root).unwrap();
    w.append(Table::Events, events(0..n, 3_600_000_000_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    drop(w);
    (Store::open(root).unwrap(), DeltaTables::new(root).unwrap())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Every topic partition's offset comes back from the log at once, from a checkpoint and
/// the commits after it (the newest value wins, other applications' ids are left out),
/// and also when asked from inside a tokio runtime (a DataFusion session, a stream task).
#[test]
fn every_offset_comes_back_across_a_checkpoint_and_from_async_code() {
    let dir = tempfile::tempdir().unwrap();
    let (store, delta) = store_with_events(dir.path(), 50);
    let segments = store.segments(Table::Events);
    delta
        .commit(
            Table::Events,
            &segments,
            &[
                offset("kmsg", 0, 10),
                offset("kmsg", 1, 20),
                offset("k8s.events", 0, 5),
            ],
        )
        .unwrap()
        .expect("committed");
    delta
        .commit(Table::Events, &[], &[offset("kmsg", 1, 35)])
        .unwrap()
        .expect("committed");
    delta.checkpoint(Table::Events).unwrap();
    // Log cleanup deletes the commits before a checkpoint: their offsets (`k8s.events`
    // only ever in commit 1) must now come from the checkpoint.
    let log = delta.table_dir(Table::Events).join("_delta_log");
    let checkpoint = std::fs::read_dir(&log)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".checkpoint.parquet")?
                .parse::<u64>()
                .ok()
        })
        .max()
        .expect("a checkpoint");
    for v in 0..checkpoint {
        std::fs::remove_file(log.join(format!("{v:020}.json"))).unwrap();
    }
    delta
        .commit(
            Table::Events,
            &[],
            &[offset("kmsg", 0, 12), offset("dcgm", 3, 1)],
        )
        .unwrap()
        .expect("committed");
    let want: std::collections::BTreeMap<(String, i32), i64> = [
        (("dcgm".to_string(), 3), 1),
        (("k8s.events".to_string(), 0), 5),
        (("kmsg".to_string(), 0), 12),
        (("kmsg".to_string(), 1), 35),
    ]
    .into_iter()
    .collect();
    assert_eq!(delta.offsets(Table::Events).unwrap(), want);
    for ((topic, partition), next) in &want {
        assert_eq!(
            delta.offset(Table::Events, topic, *partition).unwrap(),
            Some(*next)
        );
    }
    assert!(delta.offsets(Table::Causes).unwrap().is_empty());

    let runtime = runtime();
    let (offsets, back) = runtime.block_on(async {
        (
            delta.offsets(Table::Events).unwrap(),
            delta.segments(Table::Events).unwrap(),
        )
    });
    assert_eq!(offsets, want);
    assert_eq!(sorted(back), sorted(segments));
}

/// A Delta table written by another tool where the store's table belongs, with columns
/// of its own, is refused in one sentence naming it; nothing is committed to it.
#[test]
fn a_table_of_another_schema_is_refused_and_left_alone() {
    use deltalake_core::kernel::{DataType as DeltaType, StructField};
    let dir = tempfile::tempdir().unwrap();
    let table_dir = dir.path().join(Table::Events.name());
    std::fs::create_dir_all(&table_dir).unwrap();
    let runtime = runtime();
    runtime.block_on(async {
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

    let (store, delta) = store_with_events(dir.path(), 10);
    let err = delta
        .commit(
            Table::Events,
            &store.segments(Table::Events),
            &[offset("kmsg", 0, 10)],
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains(&table_dir.display().to_string()), "{err}");
    assert!(err.contains("cannot hold whyslow's events table"), "{err}");
    assert!(err.contains("nothing was written"), "{err}");
    assert_eq!(std::fs::read_dir(&log).unwrap().count(), before, "{err}");
}
