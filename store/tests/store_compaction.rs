//! Compaction keeps every row exactly once with fewer segments, readers opened before and
//! after both see a consistent view, and derived tables are replaced atomically.

mod store_common;

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{Store, StoreWriter, WriterOptions};

fn manual() -> WriterOptions {
    WriterOptions {
        auto_compact_segments: 0,
        ..WriterOptions::default()
    }
}

#[test]
fn compaction_merges_small_segments_and_keeps_every_row_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_with(dir.path(), manual()).unwrap();
    for k in 0..20 {
        w.append(Table::Metrics, metrics(k * 500..(k + 1) * 500, BASE_NS))
            .unwrap();
        // Events of two days: two partitions per commit.
        w.append(
            Table::Events,
            events(k * 10..(k + 1) * 10, 900_000_000_000, BASE_NS),
        )
        .unwrap();
        w.commit(&[]).unwrap();
    }
    let before = Store::open(dir.path()).unwrap();
    assert_eq!(before.segments(Table::Metrics).len(), 20);
    let event_segments_before = before.segments(Table::Events).len();
    let want_metrics = rows(&[metrics(0..10_000, BASE_NS)]);
    let want_events = rows(&[events(0..200, 900_000_000_000, BASE_NS)]);

    let stats = w.compact().unwrap();
    assert!(stats.version.is_some());
    // Events at 15-minute spacing: 96 + 96 on the first two days, 8 on the third, which
    // arrived in one commit and so is a single segment that needs no merge.
    assert_eq!(stats.rows, 10_000 + 192);
    let after = Store::open(dir.path()).unwrap();
    assert_eq!(after.segments(Table::Metrics).len(), 1);
    let event_parts: Vec<_> = after
        .segments(Table::Events)
        .iter()
        .map(|s| s.partition.clone())
        .collect();
    assert_eq!(event_parts.len(), 3, "one segment per day: {event_parts:?}");
    assert!(event_segments_before > 3);
    assert_eq!(stats.segments_removed, 20 + event_segments_before - 1);
    assert_eq!(stats.segments_added, 1 + 2);

    // Both views read completely and agree (removed files outlive the retention period).
    assert_eq!(rows(&read_table(&after, Table::Metrics)), want_metrics);
    assert_eq!(rows(&read_table(&before, Table::Metrics)), want_metrics);
    assert_eq!(rows(&read_table(&after, Table::Events)), want_events);
    assert_eq!(rows(&read_table(&before, Table::Events)), want_events);

    // Merged segments keep deduplicating.
    w.append(Table::Metrics, metrics(9_000..11_000, BASE_NS))
        .unwrap();
    let s = w.commit(&[]).unwrap();
    assert_eq!(s.tables[&Table::Metrics].written, 1_000);
    assert_eq!(s.tables[&Table::Metrics].duplicates, 1_000);
    // Nothing left to merge in a partition with one small segment... until another arrives.
    assert_eq!(w.compact().unwrap().segments_removed, 2);
    assert_eq!(w.compact().unwrap().version, None);
}

#[test]
fn commits_compact_automatically_and_expired_files_are_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let opts = WriterOptions {
        auto_compact_segments: 4,
        retention: Duration::ZERO,
        ..WriterOptions::default()
    };
    let mut w = StoreWriter::open_with(dir.path(), opts).unwrap();
    let mut compactions = 0;
    for k in 0..30 {
        w.append(Table::Metrics, metrics(k * 100..(k + 1) * 100, BASE_NS))
            .unwrap();
        let s = w.commit(&[]).unwrap();
        compactions += usize::from(s.compaction.is_some());
        // Merged in size classes (powers of 4 rows): 100-row segments merge four at a
        // time into 400-row ones, four of those into 1600 rows. After a commit at most
        // one class (the one a merge just fed) holds four; the next commit merges it.
        let mut per_class = std::collections::BTreeMap::new();
        for seg in w.store().segments(Table::Metrics) {
            *per_class.entry(seg.rows.ilog(4)).or_insert(0) += 1;
        }
        assert!(per_class.values().all(|&n| n <= 4), "{per_class:?}");
        assert!(
            per_class.values().filter(|&&n| n == 4).count() <= 1,
            "{per_class:?}"
        );
    }
    // 100-row merges at commits 4, 8, … 28 (7), one 400-row merge after the fourth.
    assert_eq!(compactions, 8);
    let sizes: Vec<u64> = w
        .store()
        .segments(Table::Metrics)
        .iter()
        .map(|s| s.rows)
        .collect();
    assert_eq!(sizes.iter().sum::<u64>(), 3_000);
    assert!(sizes.len() <= 6, "{sizes:?}");
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        rows(&read_table(&store, Table::Metrics)),
        rows(&[metrics(0..3_000, BASE_NS)])
    );
    // With zero retention the merged-away files (rows and keys) are gone from disk.
    let live = store.segments(Table::Metrics);
    for dir in [live[0].path.parent(), live[0].keys_path.parent()] {
        let files = std::fs::read_dir(dir.unwrap()).unwrap().count();
        assert_eq!(files, live.len(), "{}", dir.unwrap().display());
    }
}

fn slowdowns(ids: &[&str]) -> RecordBatch {
    let n = ids.len();
    let ts = |ns: i64| -> ArrayRef {
        let v = whyslow_schemas::tables::ns_to_stored(ns);
        Arc::new(TimestampMicrosecondArray::from(vec![v; n]).with_timezone("UTC"))
    };
    let s = |v: Option<&str>| -> ArrayRef { Arc::new(StringArray::from(vec![v; n])) };
    let f = |v: f64| -> ArrayRef { Arc::new(Float64Array::from(vec![v; n])) };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(ids.to_vec())),
        s(Some("finetune")),
        s(Some("ml")),
        s(None),
        s(Some("stall")),
        ts(BASE_NS),
        ts(BASE_NS + 60_000_000_000),
        f(60.0),
        f(1.0),
        f(0.0),
        ts(BASE_NS + 120_000_000_000),
    ];
    RecordBatch::try_new(Table::Slowdowns.schema(), cols).unwrap()
}

#[test]
fn replacing_a_derived_table_swaps_all_its_rows_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open_with(dir.path(), manual()).unwrap();
    w.replace_table(
        Table::Slowdowns,
        vec![slowdowns(&["a", "b"]), slowdowns(&["c"])],
    )
    .unwrap();
    let first = Store::open(dir.path()).unwrap();
    let tc = w
        .replace_table(Table::Slowdowns, vec![slowdowns(&["d", "d", "e"])])
        .unwrap();
    assert_eq!((tc.written, tc.duplicates), (2, 1));
    let second = Store::open(dir.path()).unwrap();
    assert_eq!(
        rows(&read_table(&first, Table::Slowdowns)),
        rows(&[slowdowns(&["a", "b", "c"])])
    );
    assert_eq!(
        rows(&read_table(&second, Table::Slowdowns)),
        rows(&[slowdowns(&["d", "e"])])
    );
    w.replace_table(Table::Slowdowns, vec![]).unwrap();
    assert_eq!(Store::open(dir.path()).unwrap().rows(Table::Slowdowns), 0);
    // Several tables in one log entry.
    let v = w.store().version();
    let both = w
        .replace_tables(vec![
            (Table::Slowdowns, vec![slowdowns(&["x"])]),
            (Table::Causes, vec![]),
        ])
        .unwrap();
    assert_eq!(both[&Table::Slowdowns].written, 1);
    assert_eq!(w.store().version(), v + 1);
    w.replace_tables(vec![(Table::Slowdowns, vec![])]).unwrap();
    assert_eq!(Store::open(dir.path()).unwrap().rows(Table::Slowdowns), 0);
}

/// Files a compaction removed stay on disk for their retention across writer reopens
/// (their tombstones come back from the Delta log), are deleted by the first writer open
/// after it, and a later vacuum does not need them again.
#[test]
fn removed_files_outlive_a_reopen_until_their_retention_passes() {
    let dir = tempfile::tempdir().unwrap();
    let opts = WriterOptions {
        auto_compact_segments: 0,
        retention: Duration::from_millis(1_500),
        ..WriterOptions::default()
    };
    let mut w = StoreWriter::open_with(dir.path(), opts.clone()).unwrap();
    for k in 0..3 {
        w.append(Table::Metrics, metrics(k * 100..(k + 1) * 100, BASE_NS))
            .unwrap();
        w.commit(&[]).unwrap();
    }
    let before = w.store().segments(Table::Metrics);
    assert_eq!(w.compact().unwrap().segments_removed, 3);
    drop(w);
    let on_disk = |s: &whyslow_store::SegmentInfo| s.path.is_file() && s.keys_path.is_file();
    drop(StoreWriter::open_with(dir.path(), opts.clone()).unwrap());
    assert!(before.iter().all(on_disk), "kept for running readers");
    std::thread::sleep(Duration::from_millis(1_600));
    drop(StoreWriter::open_with(dir.path(), opts.clone()).unwrap());
    assert!(
        !before
            .iter()
            .any(|s| s.path.exists() || s.keys_path.exists())
    );
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        rows(&read_table(&store, Table::Metrics)),
        rows(&[metrics(0..300, BASE_NS)])
    );
    assert!(store.segments(Table::Metrics).iter().all(on_disk));
}
