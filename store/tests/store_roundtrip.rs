//! Store round trip, idempotence, Kafka offsets and the writer lock, on real Parquet files.

mod store_common;

use std::fs::File;

use arrow::array::Array;
use parquet::basic::Compression;
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::serialized_reader::ReadOptionsBuilder;
use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{KafkaOffset, Store, StoreError, StoreWriter};

const DAY_NS: i64 = 86_400_000_000_000;

#[test]
fn round_trip_keeps_every_row_and_partitions_by_day() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("store");
    let m = metrics(0..5_000, BASE_NS);
    // Events spread over three UTC days: one segment per day partition.
    let e = events(0..300, DAY_NS / 100, BASE_NS);
    let d = dead_letters(0..10, BASE_NS);
    let mut w = StoreWriter::open(&root).unwrap();
    w.append(Table::Metrics, m.clone()).unwrap();
    w.append(Table::Events, e.clone()).unwrap();
    w.append(Table::DeadLetters, d.clone()).unwrap();
    let stats = w.commit(&[]).unwrap();
    // Three tables created (version 0) and committed to (version 1).
    assert_eq!(stats.version, Some(3));
    assert_eq!(stats.tables[&Table::Metrics].written, 5_000);
    assert_eq!(stats.tables[&Table::Events].written, 300);
    assert_eq!(stats.tables[&Table::DeadLetters].written, 10);
    assert_eq!(stats.duplicates(), 0);
    drop(w);

    let store = Store::open(&root).unwrap();
    assert_eq!(rows(&read_table(&store, Table::Metrics)), rows(&[m]));
    assert_eq!(rows(&read_table(&store, Table::Events)), rows(&[e]));
    assert_eq!(rows(&read_table(&store, Table::DeadLetters)), rows(&[d]));

    let event_segs = store.segments(Table::Events);
    let parts: Vec<_> = event_segs
        .iter()
        .map(|s| s.partition.clone().unwrap())
        .collect();
    assert_eq!(parts, ["2026-11-29", "2026-11-30", "2026-12-01"]);
    for s in &event_segs {
        assert!(s.path.is_absolute());
        let dir = s.path.parent().unwrap();
        assert_eq!(
            dir.file_name().unwrap().to_str().unwrap(),
            format!("date={}", s.partition.as_ref().unwrap())
        );
        assert_eq!(dir.parent().unwrap().file_name().unwrap(), "events");
        let (lo, hi) = (s.min_time_ns.unwrap(), s.max_time_ns.unwrap());
        assert!(lo <= hi && lo.div_euclid(DAY_NS) == hi.div_euclid(DAY_NS));
        assert_eq!(s.bytes, std::fs::metadata(&s.path).unwrap().len());
    }
    // Range pruning by the recorded time ranges.
    let day2 = store.segments_in_range(Table::Events, BASE_NS + DAY_NS, BASE_NS + 2 * DAY_NS - 1);
    assert_eq!(day2.len(), 1);
    assert_eq!(day2[0].partition.as_deref(), Some("2026-11-30"));

    // Storage order of metrics: by metric, then node, then device (then series, time).
    let stored = read_table(&store, Table::Metrics);
    let b = &stored[0];
    let col = |n: &str| {
        let a = b.column_by_name(n).unwrap();
        let a = a
            .as_any()
            .downcast_ref::<arrow::array::StringArray>()
            .unwrap();
        (0..a.len())
            .map(|i| a.value(i).to_string())
            .collect::<Vec<_>>()
    };
    let (metric, node, device) = (col("metric"), col("node"), col("device"));
    let order: Vec<(&str, &str, &str)> = (0..metric.len())
        .map(|i| (metric[i].as_str(), node[i].as_str(), device[i].as_str()))
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "metrics not in storage order"
    );

    // Plain Parquet: zstd, statistics, UTC nanosecond timestamps.
    let seg = &store.segments(Table::Metrics)[0];
    let reader = SerializedFileReader::new(File::open(&seg.path).unwrap()).unwrap();
    let meta = reader.metadata();
    for rg in meta.row_groups() {
        for c in rg.columns() {
            assert!(
                matches!(c.compression(), Compression::ZSTD(_)),
                "{}",
                c.column_path()
            );
        }
        let time = rg.column(0);
        assert!(time.statistics().is_some());
    }
    let time_type = meta.file_metadata().schema_descr().column(0);
    let lt = format!("{:?}", time_type.logical_type_ref());
    assert!(
        lt.contains("is_adjusted_to_u_t_c: true") && lt.contains("MICROS"),
        "{lt}"
    );

    // A bloom filter of the metric names, small, that holds every name the segment has:
    // what lets a query for other metrics skip the segment.
    let options = ReadOptionsBuilder::new()
        .with_reader_properties(
            ReaderProperties::builder()
                .set_read_bloom_filter(true)
                .build(),
        )
        .build();
    let reader =
        SerializedFileReader::new_with_options(File::open(&seg.path).unwrap(), options).unwrap();
    let names = reader.metadata().file_metadata().schema_descr();
    let at = (0..names.num_columns())
        .find(|&i| names.column(i).path().string() == "metric")
        .unwrap();
    let rg = reader.get_row_group(0).unwrap();
    let sbbf = rg
        .get_column_bloom_filter(at)
        .expect("a bloom filter on metric");
    for m in [
        "gpu_util",
        "power_watts",
        "sm_clock_mhz",
        "gpu_temp_celsius",
    ] {
        assert!(sbbf.check(m), "{m} missing from the bloom filter");
    }
    let absent = ["step_time_seconds", "request_seconds", "tokens_per_second"];
    assert!(absent.iter().any(|m| !sbbf.check(*m)));
    let len = reader
        .metadata()
        .row_group(0)
        .column(at)
        .bloom_filter_length();
    assert!(len.is_some_and(|l| l <= 1_024), "{len:?}");
    // The other columns carry none.
    assert!(rg.get_column_bloom_filter(0).is_none());
}

#[test]
fn recommitting_the_same_rows_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Metrics, metrics(0..2_000, BASE_NS))
        .unwrap();
    w.append(Table::Events, events(0..100, 1_000_000, BASE_NS))
        .unwrap();
    let first = w.commit(&[]).unwrap();
    assert_eq!(first.written(), 2_100);

    // The same input ingested again later: a different ingest_time, same identities.
    w.append(
        Table::Metrics,
        metrics(0..2_000, BASE_NS + 3_600_000_000_000),
    )
    .unwrap();
    w.append(
        Table::Events,
        events(0..100, 1_000_000, BASE_NS + 3_600_000_000_000),
    )
    .unwrap();
    let second = w.commit(&[]).unwrap();
    assert_eq!(second.written(), 0);
    assert_eq!(second.tables[&Table::Metrics].duplicates, 2_000);
    assert_eq!(second.tables[&Table::Events].duplicates, 100);
    assert_eq!(second.version, None, "nothing new: no log entry");
    assert_eq!(w.store().rows(Table::Metrics), 2_000);
}

#[test]
fn an_overlapping_batch_writes_exactly_its_new_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Metrics, metrics(0..3_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    // Overlaps the tail of the first batch in time and adds 1_000 new samples.
    w.append(Table::Metrics, metrics(2_000..4_000, BASE_NS))
        .unwrap();
    let s = w.commit(&[]).unwrap();
    assert_eq!(s.tables[&Table::Metrics].written, 1_000);
    assert_eq!(s.tables[&Table::Metrics].duplicates, 1_000);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        rows(&read_table(&store, Table::Metrics)),
        rows(&[metrics(0..4_000, BASE_NS)])
    );
}

#[test]
fn duplicates_inside_one_commit_are_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Events, events(0..50, 1_000, BASE_NS))
        .unwrap();
    w.append(Table::Events, events(25..75, 1_000, BASE_NS))
        .unwrap();
    w.append(Table::DeadLetters, dead_letters(0..5, BASE_NS))
        .unwrap();
    w.append(Table::DeadLetters, dead_letters(0..5, BASE_NS + 1))
        .unwrap();
    let s = w.commit(&[]).unwrap();
    assert_eq!(s.tables[&Table::Events].written, 75);
    assert_eq!(s.tables[&Table::Events].duplicates, 25);
    assert_eq!(s.tables[&Table::DeadLetters].written, 5);
    assert_eq!(s.tables[&Table::DeadLetters].duplicates, 5);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        rows(&read_table(&store, Table::Events)),
        rows(&[events(0..75, 1_000, BASE_NS)])
    );
}

#[test]
fn dead_letters_dedupe_across_days_of_ingest() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::DeadLetters, dead_letters(0..20, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    // Re-ingested three days later: partitioned under another date, still the same records.
    w.append(
        Table::DeadLetters,
        dead_letters(10..30, BASE_NS + 3 * DAY_NS),
    )
    .unwrap();
    let s = w.commit(&[]).unwrap();
    assert_eq!(s.tables[&Table::DeadLetters].written, 10);
    assert_eq!(s.tables[&Table::DeadLetters].duplicates, 10);
    assert_eq!(w.store().rows(Table::DeadLetters), 30);
}

#[test]
fn a_metric_series_keeps_one_sample_per_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    let a = metrics(0..10, BASE_NS);
    w.append(Table::Metrics, a.clone()).unwrap();
    w.commit(&[]).unwrap();
    // Same series and times with other values: the first sample stays.
    let mut cols = a.columns().to_vec();
    let value_idx = a.schema().index_of("value").unwrap();
    cols[value_idx] = std::sync::Arc::new(arrow::array::Float64Array::from(vec![-1.0; 10]));
    let b = arrow::array::RecordBatch::try_new(a.schema(), cols).unwrap();
    w.append(Table::Metrics, b).unwrap();
    assert_eq!(
        w.commit(&[]).unwrap().tables[&Table::Metrics].duplicates,
        10
    );
    assert_eq!(rows(&read_table(w.store(), Table::Metrics)), rows(&[a]));
}

#[test]
fn kafka_offsets_round_trip_with_their_commits() {
    let dir = tempfile::tempdir().unwrap();
    let off = |t: &str, p: i32, o: i64| KafkaOffset {
        topic: t.into(),
        partition: p,
        next_offset: o,
    };
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Events, events(0..10, 1_000, BASE_NS))
        .unwrap();
    w.commit(&[
        off("k8s-events", 0, 10),
        off("k8s-events", 1, 7),
        off("dcgm", 0, 3),
    ])
    .unwrap();
    // Offsets alone (every message was a duplicate) are still recorded.
    w.append(Table::Events, events(0..10, 1_000, BASE_NS))
        .unwrap();
    let s = w.commit(&[off("k8s-events", 0, 20)]).unwrap();
    assert_eq!(s.written(), 0);
    // `events` went from version 1 to 2, the only table.
    assert_eq!(s.version, Some(2));
    drop(w);
    let store = Store::open(dir.path()).unwrap();
    let got = store.kafka_offsets();
    let want = [
        (("dcgm".to_string(), 0), 3),
        (("k8s-events".to_string(), 0), 20),
        (("k8s-events".to_string(), 1), 7),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
}

#[test]
fn a_missing_directory_is_an_empty_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("nothing-here")).unwrap();
    assert_eq!(store.version(), 0);
    for t in Table::ALL {
        assert!(store.segments(t).is_empty());
    }
    assert!(store.kafka_offsets().is_empty());
}

#[test]
fn a_second_writer_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let _w = StoreWriter::open(dir.path()).unwrap();
    let err = StoreWriter::open(dir.path())
        .err()
        .expect("second writer must fail");
    assert!(matches!(err, StoreError::Locked { .. }), "{err}");
    assert!(
        err.to_string().contains(&dir.path().display().to_string()),
        "{err}"
    );
    // Readers need no lock.
    assert!(Store::open(dir.path()).is_ok());
}

#[test]
fn a_batch_of_another_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    let err = w
        .append(Table::Metrics, events(0..3, 1, BASE_NS))
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            StoreError::Schema {
                table: Table::Metrics,
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(w.pending_rows(), 0);
}

#[test]
fn many_versions_checkpoint_and_still_replay() {
    let dir = tempfile::tempdir().unwrap();
    let mut w = StoreWriter::open(dir.path()).unwrap();
    for i in 0..80 {
        w.append(
            Table::Events,
            events(i * 10..i * 10 + 10, 1_000_000_000, BASE_NS),
        )
        .unwrap();
        let off = KafkaOffset {
            topic: "t".into(),
            partition: 0,
            next_offset: i as i64 + 1,
        };
        w.commit(&[off]).unwrap();
    }
    let expected_segments = w.store().segments(Table::Events).len();
    drop(w);
    let log = dir.path().join("events/_delta_log");
    let checkpoints = std::fs::read_dir(&log)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".checkpoint.parquet")
        })
        .count();
    assert!(checkpoints >= 1);
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(store.segments(Table::Events).len(), expected_segments);
    assert_eq!(store.rows(Table::Events), 800);
    assert_eq!(store.kafka_offsets()[&("t".to_string(), 0)], 80);
    assert_eq!(
        rows(&read_table(&store, Table::Events)),
        rows(&[events(0..800, 1_000_000_000, BASE_NS)])
    );
}
