//! Segment files: how rows are ordered, partitioned by day and encoded in Parquet, and how
//! segments are read back.
//!
//! Rows are sorted so that equal values sit together (compression) and row-group / page
//! statistics prune scans: `metrics` by (metric, node, device, series, time), `events` by
//! time, `dead_letters` by ingest time, `slowdowns` by start, `causes` by (slowdown, rank).

use std::cmp::Ordering;
use std::fs::File;
use std::path::Path;

use arrow::array::{
    Array, Int32Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt32Array,
};
use arrow::compute::take_record_batch;
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
/// strings, delta encoding for times and counters, byte-stream-split for floats.
pub fn writer_properties(table: Table) -> WriterProperties {
    // Level 3 is zstd's default; the constructor only fails outside 1..=22.
    let zstd = ZstdLevel::try_new(3).map_or(Compression::SNAPPY, Compression::ZSTD);
    let mut b = WriterProperties::builder()
        .set_compression(zstd)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "whyslow.table".to_string(),
            table.name().to_string(),
        )]));
    let schema = table.schema();
    for f in schema.fields() {
        use arrow::datatypes::DataType as D;
        let path = column(f.name());
        match f.data_type() {
            D::Timestamp(..) if f.name() != "ingest_time" => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            D::Int64 => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            D::Float64 => {
                b = b
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::BYTE_STREAM_SPLIT);
            }
            _ => {}
        }
    }
    b.build()
}

fn strs<'a>(b: &'a RecordBatch, name: &str) -> Option<&'a StringArray> {
    b.column_by_name(name)?
        .as_any()
        .downcast_ref::<StringArray>()
}

fn opt(a: &StringArray, i: usize) -> Option<&str> {
    a.is_valid(i).then(|| a.value(i))
}

fn cmp_str(a: Option<&StringArray>, x: usize, y: usize) -> Ordering {
    match a {
        Some(a) => opt(a, x).cmp(&opt(a, y)),
        None => Ordering::Equal,
    }
}

/// The storage order of `batch` (rows of `table` whose keys are `keys`).
fn order(table: Table, batch: &RecordBatch, keys: &[Key]) -> Vec<u32> {
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    let by_key = |x: usize, y: usize| keys[x].cmp(&keys[y]);
    match table {
        Table::Metrics => {
            let (metric, node, device) = (
                strs(batch, "metric"),
                strs(batch, "node"),
                strs(batch, "device"),
            );
            idx.sort_unstable_by(|&x, &y| {
                let (x, y) = (x as usize, y as usize);
                cmp_str(metric, x, y)
                    .then_with(|| cmp_str(node, x, y))
                    .then_with(|| cmp_str(device, x, y))
                    .then_with(|| keys[x].hash.cmp(&keys[y].hash))
                    .then_with(|| keys[x].lead.cmp(&keys[y].lead))
            });
        }
        Table::Causes => {
            let id = strs(batch, "slowdown_id");
            let rank = batch
                .column_by_name("rank")
                .and_then(|c| c.as_any().downcast_ref::<Int32Array>());
            idx.sort_unstable_by(|&x, &y| {
                let (x, y) = (x as usize, y as usize);
                cmp_str(id, x, y)
                    .then_with(|| match rank {
                        Some(r) => r.value(x).cmp(&r.value(y)),
                        None => Ordering::Equal,
                    })
                    .then_with(|| by_key(x, y))
            });
        }
        _ => {
            let t = table
                .time_column()
                .and_then(|c| batch.column_by_name(c))
                .and_then(|c| c.as_any().downcast_ref::<TimestampNanosecondArray>());
            idx.sort_unstable_by(|&x, &y| {
                let (x, y) = (x as usize, y as usize);
                let by_time = t.map_or(Ordering::Equal, |t| t.value(x).cmp(&t.value(y)));
                by_time.then_with(|| by_key(x, y))
            });
        }
    }
    idx
}

/// Reorders `batch` into the table's storage order.
pub fn sort_for_storage(
    table: Table,
    batch: &RecordBatch,
    keys: &[Key],
    path: &Path,
) -> Result<RecordBatch, StoreError> {
    let idx = UInt32Array::from(order(table, batch, keys));
    take_record_batch(batch, &idx).map_err(|source| StoreError::Arrow {
        path: path.to_path_buf(),
        source,
    })
}

/// Writes `batch` as a Parquet file at `path` (fsync'd); returns the file size.
pub fn write_parquet(table: Table, batch: &RecordBatch, path: &Path) -> Result<u64, StoreError> {
    let pq = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let file = File::create(path).map_err(|e| StoreError::io("create", path, e))?;
    let mut w =
        ArrowWriter::try_new(file, table.schema(), Some(writer_properties(table))).map_err(pq)?;
    w.write(batch).map_err(pq)?;
    let file = w.into_inner().map_err(pq)?;
    file.sync_all()
        .map_err(|e| StoreError::io("fsync", path, e))?;
    let len = file
        .metadata()
        .map_err(|e| StoreError::io("stat", path, e))?
        .len();
    Ok(len)
}

/// Reads every row of a Parquet segment.
pub fn read_parquet(path: &Path) -> Result<Vec<RecordBatch>, StoreError> {
    let pq = |source| StoreError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(pq)?
        .with_batch_size(64 * 1024)
        .build()
        .map_err(pq)?;
    reader
        .map(|b| {
            b.map_err(|source| StoreError::Arrow {
                path: path.to_path_buf(),
                source,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_are_utc_dates() {
        assert_eq!(day_name(day_of(0)), "1970-01-01");
        assert_eq!(day_name(day_of(-1)), "1969-12-31");
        let t = 1_780_000_000_000_000_000; // 2026-05-28T20:26:40Z
        assert_eq!(day_name(day_of(t)), "2026-05-28");
    }
}
