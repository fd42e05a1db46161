//! Shared helpers of the store tests: deterministic rows of every raw table, and reading a
//! store back through the parquet crate as sorted, printable rows.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs::File;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use whyslow_schemas::builders::{EventRow, MetricRow, Scope};
use whyslow_schemas::{
    DeadLetter, DeadLetterBuilder, EventsBuilder, Layer, MetricsBuilder, Origin, Severity, Table,
};
use whyslow_store::Store;

/// 2026-11-29T00:00:00Z.
pub const BASE_NS: i64 = 1_795_910_400_000_000_000;
/// Series per scrape in the generated metrics.
pub const SERIES: usize = 64;
const SCRAPE_NS: i64 = 15_000_000_000;
const METRICS: [&str; 4] = [
    "gpu_util",
    "power_watts",
    "sm_clock_mhz",
    "gpu_temp_celsius",
];

/// Metric samples `range` of an endless deterministic dcgm-like scrape sequence (64 series,
/// one scrape every 15 s); each index is a distinct sample.
pub fn metrics(range: std::ops::Range<usize>, ingest_time_ns: i64) -> RecordBatch {
    let mut b = MetricsBuilder::new(ingest_time_ns);
    for i in range {
        let series = i % SERIES;
        let node = format!("node-{}", series / 8);
        let device = (series % 8).to_string();
        let uuid = format!("GPU-{series:04}");
        let row = MetricRow {
            time_ns: BASE_NS + (i / SERIES) as i64 * SCRAPE_NS,
            layer: Layer::Infrastructure,
            source: "dcgm",
            metric: METRICS[series % METRICS.len()],
            value: ((i * 7919) % 1000) as f64 / 10.0,
            scope: Scope {
                cluster: Some("c1"),
                node: Some(&node),
                device: Some(&device),
                ..Scope::default()
            },
            rank: None,
            step: None,
        };
        b.append(
            &row,
            [
                ("UUID", uuid.as_str()),
                ("modelName", "NVIDIA H100 80GB HBM3"),
            ],
        );
    }
    b.finish()
}

/// Events `range` of a deterministic sequence, one every `spacing_ns` from [`BASE_NS`].
pub fn events(range: std::ops::Range<usize>, spacing_ns: i64, ingest_time_ns: i64) -> RecordBatch {
    let mut b = EventsBuilder::new(ingest_time_ns);
    for i in range {
        let id = format!("uid-{i:08}");
        let pod = format!("trainer-{}", i % 5);
        let message = format!("event number {i}");
        let row = EventRow {
            time_ns: BASE_NS + i as i64 * spacing_ns,
            event_id: &id,
            layer: Layer::Orchestrator,
            source: "kubernetes",
            kind: if i % 3 == 0 { "preempted" } else { "scheduled" },
            severity: Severity::Info,
            scope: Scope {
                namespace: Some("ml"),
                pod: Some(&pod),
                ..Scope::default()
            },
            reason: Some("Preempted"),
            message: Some(&message),
        };
        b.append(&row, [("n", i.to_string())]);
    }
    b.finish()
}

/// Dead letters `range` of a deterministic sequence.
pub fn dead_letters(range: std::ops::Range<usize>, ingest_time_ns: i64) -> RecordBatch {
    let mut b = DeadLetterBuilder::new(ingest_time_ns);
    for i in range {
        let payload = format!("{{\"broken\": {i}");
        let origin = Origin::File {
            path: "input.jsonl",
            line: i as u64,
        };
        b.append(&DeadLetter::whole(
            origin,
            "envelope",
            "unexpected end of input",
            payload.as_bytes(),
        ));
    }
    b.finish()
}

/// Every row of `batches` printed as one line (columns joined by `|`), sorted.
pub fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("∅");
    let mut out = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for i in 0..b.num_rows() {
            let cells: Vec<String> = fmts.iter().map(|f| f.value(i).to_string()).collect();
            out.push(cells.join("|"));
        }
    }
    out.sort();
    out
}

/// Rows of `batches` without the `ingest_time` column (which differs between runs).
pub fn rows_without_ingest_time(batches: &[RecordBatch]) -> Vec<String> {
    let stripped: Vec<RecordBatch> = batches
        .iter()
        .map(|b| {
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| b.schema().field(i).name() != "ingest_time")
                .collect();
            b.project(&keep).unwrap()
        })
        .collect();
    rows(&stripped)
}

/// Reads every committed segment of `table` with the parquet crate; checks each file has
/// the table's schema and the row count the log recorded.
pub fn read_table(store: &Store, table: Table) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for seg in store.segments(table) {
        let reader = match store.object_store() {
            None => ParquetRecordBatchReaderBuilder::try_new(File::open(&seg.path).unwrap())
                .unwrap()
                .build()
                .unwrap(),
            Some(_) => ParquetRecordBatchReaderBuilder::try_new(read_object(store, &seg.path))
                .unwrap()
                .build()
                .unwrap(),
        };
        let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
        let n: usize = batches.iter().map(RecordBatch::num_rows).sum();
        assert_eq!(n as u64, seg.rows, "{}", seg.path.display());
        for b in &batches {
            assert_eq!(
                b.schema().fields(),
                table.schema().fields(),
                "{}",
                seg.path.display()
            );
        }
        out.extend(batches);
    }
    out
}

/// The whole object at `url` (`s3://bucket/key`) of the bucket `store` is in.
pub fn read_object(store: &Store, url: &std::path::Path) -> bytes::Bytes {
    use object_store::ObjectStoreExt;
    let (bucket, client) = store.object_store().expect("a bucket store");
    let key = url
        .to_str()
        .and_then(|u| u.strip_prefix(bucket.as_str().trim_end_matches('/')))
        .expect("an object of the store's bucket")
        .trim_start_matches('/');
    let key = object_store::path::Path::from(key);
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { client.get(&key).await?.bytes().await })
        .unwrap()
}

/// Every object under the bucket store's root, as `s3://bucket/key` paths.
pub fn list_objects(store: &Store) -> Vec<std::path::PathBuf> {
    use futures::TryStreamExt;
    let (bucket, client) = store.object_store().expect("a bucket store");
    let root = store.root().to_str().unwrap().to_string();
    let prefix = root
        .strip_prefix(bucket.as_str().trim_end_matches('/'))
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let prefix = object_store::path::Path::from(prefix);
    let metas: Vec<object_store::ObjectMeta> = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(client.list(Some(&prefix)).try_collect())
        .unwrap();
    metas
        .into_iter()
        .map(|m| {
            std::path::PathBuf::from(format!(
                "{}/{}",
                bucket.as_str().trim_end_matches('/'),
                m.location
            ))
        })
        .collect()
}

/// Counts per row line (a line appearing twice is a duplicate).
pub fn multiplicities(rows: &[String]) -> BTreeMap<&str, usize> {
    let mut m = BTreeMap::new();
    for r in rows {
        *m.entry(r.as_str()).or_insert(0) += 1;
    }
    m
}
pub mod s3;
