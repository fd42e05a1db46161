//! Segment files: how rows are ordered, partitioned by day and encoded in Parquet, and how
//! segments are read back.
//!
//! Rows are sorted so that equal values sit together (compression) and row-group / page
//! statistics prune scans: `metrics` by (metric, node, device, series, time), `events` by
//! time, `dead_letters` by ingest time, `slowdowns` by start, `causes` by (slowdown, rank).

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;

use arrow::array::{
    Array, Int32Array, RecordBatch, RecordBatchOptions, StringArray, TimestampMicrosecondArray,
    new_null_array,
};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use whyslow_schemas::Table;

use super::StoreError;
use super::keys::Key;

/// Nanoseconds per UTC day.
pub const DAY_NS: i64 = 86_400 * 1_000_000_000;

/// Rows per Parquet row group: large enough for good compression, small enough that the
/// statistics of a row group prune a time-range scan.
pub const ROW_GROUP_ROWS: usize = 1 << 20;

/// The bloom filter of `metrics.metric` is sized for this many names, then folded to what
/// the row group holds (a dozen names: 47 bytes in a segment of the `full` bench store).
const METRIC_NAMES_BLOOM_NDV: u64 = 1_024;
/// Its false-positive rate: a query for a metric a segment lacks reads it once in 100.
const METRIC_NAMES_BLOOM_FPP: f64 = 0.01;

/// The UTC day number of a time.
pub fn day_of(time_ns: i64) -> i64 {
    time_ns.div_euclid(DAY_NS)
}

/// `YYYY-MM-DD` of a UTC day number.
pub fn day_name(day: i64) -> String {
    let t = chrono::DateTime::from_timestamp_nanos(day.saturating_mul(DAY_NS));
    t.format("%Y-%m-%d").to_string()
}

fn column(name: &str) -> ColumnPath {
    ColumnPath::from(name)
}

/// Writer settings of a table: zstd, page statistics, dictionaries for the repetitive
/// strings, delta encoding for counters. Times and floats are dictionary-coded while a
/// row group's distinct values fit the dictionary page (scrapes share timestamps across
/// series; gauges such as utilization, clocks or temperatures take few values), and fall
/// back to delta encoding (times) or byte-stream-split (floats) past it.
pub fn writer_properties(table: Table) -> WriterProperties {
    // Level 3 is zstd's default; the constructor only fails outside 1..=22.
    let zstd = ZstdLevel::try_new(3).map_or(Compression::SNAPPY, Compression::ZSTD);
    let mut b = WriterProperties::builder()
        .set_compression(zstd)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        // Lists and maps with the Parquet spec's names and logical types, which Spark,
        // Trino and BigQuery expect (the schemas already use those names).
        .set_coerce_types(true)
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "whyslow.table".to_string(),
            table.name().to_string(),
        )]));
    if table == Table::Metrics {
        // A query for a few metrics (the framework series, the serving samples) reads the
        // pages whose min/max name them, and in every segment the page where two metrics
        // meet names each metric in between. The bloom filter of the names tells a reader
        // that a segment holds none of them, so the whole segment is skipped.
        let metric = column("metric");
        b = b
            .set_column_bloom_filter_enabled(metric.clone(), true)
            .set_column_bloom_filter_max_ndv(metric.clone(), METRIC_NAMES_BLOOM_NDV)
            .set_column_bloom_filter_fpp(metric, METRIC_NAMES_BLOOM_FPP);
    }
    let schema = table.schema();
    for f in schema.fields() {
        use arrow::datatypes::DataType as D;
        let path = column(f.name());
        // With the dictionary on, the column's encoding is the fallback past its page.
        match f.data_type() {
            D::Timestamp(..) if f.name() != "ingest_time" => {
                b = b.set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            D::Int64 => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            D::Float64 => {
                b = b.set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT);
            }
            _ => {}
        }
    }
    b.build()
}

/// The position of a row in storage order; compared as a tuple.
pub type SortKey = (u64, u64, u64, u64);

/// Maps an `i64` to a `u64` with the same order.
fn ordered(v: i64) -> u64 {
    (v as u64) ^ (1 << 63)
}

/// For one string column over all `batches`: each row's rank among the column's distinct
/// values (0 = null), so that rows sort by comparing integers instead of strings.
fn string_ranks(batches: &[RecordBatch], name: &str) -> Vec<Vec<u32>> {
    let mut ids: HashMap<&str, u32> = HashMap::new();
    let mut out: Vec<Vec<u32>> = Vec::with_capacity(batches.len());
    for b in batches {
        let Some(a) = b
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        else {
            out.push(vec![0; b.num_rows()]);
            continue;
        };
        let mut col = Vec::with_capacity(a.len());
        let mut last: Option<(&str, u32)> = None;
        for i in 0..a.len() {
            if a.is_null(i) {
                col.push(u32::MAX);
                continue;
            }
            let v = a.value(i);
            let id = match last {
                Some((lv, id)) if lv == v => id,
                _ => {
                    let next = ids.len() as u32;
                    *ids.entry(v).or_insert(next)
                }
            };
            last = Some((v, id));
            col.push(id);
        }
        out.push(col);
    }
    let mut distinct: Vec<(&str, u32)> = ids.into_iter().collect();
    distinct.sort_unstable();
    let mut rank_of = vec![0u32; distinct.len()];
    for (rank, (_, id)) in distinct.iter().enumerate() {
        rank_of[*id as usize] = rank as u32 + 1;
    }
    for col in &mut out {
        for v in col.iter_mut() {
            *v = if *v == u32::MAX {
                0
            } else {
                rank_of[*v as usize]
            };
        }
    }
    out
}

/// The storage-order sort key of every row of `batches` (rows of `table` whose keys are
/// `keys`, batch by batch); keys are part of it, so no two distinct rows tie.
pub fn sort_keys(table: Table, batches: &[RecordBatch], keys: &[Vec<Key>]) -> Vec<Vec<SortKey>> {
    match table {
        Table::Metrics => {
            let metric = string_ranks(batches, "metric");
            let node = string_ranks(batches, "node");
            let device = string_ranks(batches, "device");
            (0..batches.len())
                .map(|b| {
                    (0..batches[b].num_rows())
                        .map(|r| {
                            let k = keys[b][r];
                            let a = (u64::from(metric[b][r]) << 32) | u64::from(node[b][r]);
                            (a, u64::from(device[b][r]), k.hash, ordered(k.lead))
                        })
                        .collect()
                })
                .collect()
        }
        Table::Causes => {
            let id = string_ranks(batches, "slowdown_id");
            (0..batches.len())
                .map(|b| {
                    let rank = batches[b]
                        .column_by_name("rank")
                        .and_then(|c| c.as_any().downcast_ref::<Int32Array>());
                    (0..batches[b].num_rows())
                        .map(|r| {
                            let k = keys[b][r];
                            let rk = rank.map_or(0, |a| (a.value(r) as u32) ^ (1 << 31));
                            let a = (u64::from(id[b][r]) << 32) | u64::from(rk);
                            (a, ordered(k.lead), k.hash, 0)
                        })
                        .collect()
                })
                .collect()
        }
        _ => (0..batches.len())
            .map(|b| {
                let t = table
                    .time_column()
                    .and_then(|c| batches[b].column_by_name(c))
                    .and_then(|c| c.as_any().downcast_ref::<TimestampMicrosecondArray>());
                (0..batches[b].num_rows())
                    .map(|r| {
                        let k = keys[b][r];
                        (
                            t.map_or(0, |t| ordered(t.value(r))),
                            ordered(k.lead),
                            k.hash,
                            0,
                        )
                    })
                    .collect()
            })
            .collect(),
    }
}

/// Writes `batch` as a Parquet file at `path` (fsync'd); returns the file size.
pub fn write_parquet(table: Table, batch: &RecordBatch, path: &Path) -> Result<u64, StoreError> {
    let file = File::create(path).map_err(|e| StoreError::io("create", path, e))?;
    let file = write_parquet_to(table, batch, file, path)?;
    file.sync_all()
        .map_err(|e| StoreError::io("fsync", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
    Ok(len)
}

/// `batch` as the bytes of a Parquet file (for an object store, which takes files whole);
/// `path` names it in errors.
pub fn encode_parquet(
    table: Table,
    batch: &RecordBatch,
    path: &Path,
) -> Result<Vec<u8>, StoreError> {
    write_parquet_to(table, batch, Vec::new(), path)
}

fn write_parquet_to<W: std::io::Write + Send>(
    table: Table,
    batch: &RecordBatch,
    out: W,
    path: &Path,
) -> Result<W, StoreError> {
    let pq = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let mut w =
        ArrowWriter::try_new(out, table.schema(), Some(writer_properties(table))).map_err(pq)?;
    w.write(batch).map_err(pq)?;
    w.into_inner().map_err(pq)
}

/// Reads every row of a Parquet segment of `table`, in the table's schema of today: a
/// column added since the segment was written (nullable, by the schema's rule) reads as
/// nulls.
pub fn read_parquet(table: Table, path: &Path) -> Result<Vec<RecordBatch>, StoreError> {
    let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    read_parquet_from(table, file, path)
}

/// Reads every row of a Parquet segment of `table` held in memory (fetched whole from an
/// object store); `path` names it in errors.
pub fn read_parquet_bytes(
    table: Table,
    bytes: bytes::Bytes,
    path: &Path,
) -> Result<Vec<RecordBatch>, StoreError> {
    read_parquet_from(table, bytes, path)
}

fn read_parquet_from<R: parquet::file::reader::ChunkReader + 'static>(
    table: Table,
    source: R,
    path: &Path,
) -> Result<Vec<RecordBatch>, StoreError> {
    let pq = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let arrow = |source| StoreError::Arrow {
        path: path.to_path_buf(),
        source,
    };
    let reader = ParquetRecordBatchReaderBuilder::try_new(source)
        .map_err(pq)?
        .with_batch_size(256 * 1024)
        .build()
        .map_err(pq)?;
    let schema = table.schema();
    reader
        .map(|b| conform(&schema, b.map_err(arrow)?).map_err(arrow))
        .collect()
}

/// `batch` in `schema`: its columns by name, a nullable column it lacks as nulls.
fn conform(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch, ArrowError> {
    if batch.schema().fields() == schema.fields() {
        return Ok(batch);
    }
    let columns = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) => Ok(c.clone()),
            None if f.is_nullable() => Ok(new_null_array(f.data_type(), batch.num_rows())),
            None => Err(ArrowError::SchemaError(format!(
                "the segment has no column {} (not nullable)",
                f.name()
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(schema.clone(), columns, &options)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment written before a nullable column was added reads in today's schema.
    #[test]
    fn an_older_segment_reads_with_the_new_columns_null() {
        use std::sync::Arc;

        use arrow::array::{BinaryArray, StringArray, TimestampMicrosecondArray};
        use arrow::datatypes::Schema;

        let today = Table::DeadLetters.schema();
        let old: Vec<_> = today.fields().iter().take(5).cloned().collect();
        let old = Arc::new(Schema::new(old));
        let batch = RecordBatch::try_new(
            old.clone(),
            vec![
                Arc::new(TimestampMicrosecondArray::from(vec![1]).with_timezone("UTC")),
                Arc::new(StringArray::from(vec!["a.log:3"])),
                Arc::new(StringArray::from(vec!["kmsg"])),
                Arc::new(StringArray::from(vec!["bad"])),
                Arc::new(BinaryArray::from(vec![&b"x"[..]])),
            ],
        )
        .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.parquet");
        let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), old, None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let read = read_parquet(Table::DeadLetters, &path).unwrap();
        assert_eq!(read[0].schema(), today);
        assert_eq!(read[0].num_rows(), 1);
        assert!(read[0].column_by_name("source_path").unwrap().is_null(0));
        let error = read[0].column_by_name("error").unwrap();
        let error = error.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(error.value(0), "bad");
    }

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_name(day_of(0)), "1970-01-01");
        assert_eq!(day_name(day_of(-1)), "1969-12-31");
        let t = 1_780_000_000_000_000_000; // 2026-05-28T20:26:40Z
        assert_eq!(day_name(day_of(t)), "2026-05-28");
    }
}
