//! Helpers shared by the ingest integration tests: run an ingest into a real store and
//! read its committed Parquet segments back as plain Rust values.
#![allow(dead_code)]

use std::fs::File;
use std::path::Path;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::{Float64Type, Int32Type, Int64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use whyslow_ingest::Format;
use whyslow_ingest::run::{IngestOptions, IngestSummary, ingest};
use whyslow_schemas::Table;
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_store::Store;

/// Ingests `paths` into the store at `store` and checks that the summary balances.
pub fn run(store: &Path, paths: &[&Path], format: Format) -> IngestSummary {
    let paths = paths.iter().map(|p| p.display().to_string()).collect();
    let summary = ingest(&IngestOptions::new(store, paths, format)).expect("ingest runs");
    summary
        .check()
        .unwrap_or_else(|e| panic!("summary does not balance: {e}\n{}", summary.render()));
    summary
}

/// Every committed row of `table`, in one batch.
pub fn read(store: &Path, table: Table) -> RecordBatch {
    let s = Store::open(store).expect("store opens");
    let mut batches = Vec::new();
    for seg in s.segments(table) {
        let f = File::open(&seg.path).expect("segment opens");
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .expect("parquet footer")
            .build()
            .expect("reader");
        for b in reader {
            batches.push(b.expect("batch reads"));
        }
    }
    concat_batches(&table.schema(), &batches).expect("same schema")
}

pub fn strs(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b
        .column_by_name(col)
        .unwrap_or_else(|| panic!("no column {col}"));
    let a = a.as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

pub fn str_at(b: &RecordBatch, col: &str, row: usize) -> Option<String> {
    strs(b, col).swap_remove(row)
}

/// A time column as nanoseconds since the epoch.
pub fn times(b: &RecordBatch, col: &str) -> Vec<i64> {
    b.column_by_name(col)
        .unwrap()
        .as_primitive::<StoredTime>()
        .values()
        .iter()
        .map(|&v| stored_to_ns(v))
        .collect()
}

pub fn f64s(b: &RecordBatch, col: &str) -> Vec<f64> {
    b.column_by_name(col)
        .unwrap()
        .as_primitive::<Float64Type>()
        .values()
        .to_vec()
}

pub fn i32s(b: &RecordBatch, col: &str) -> Vec<Option<i32>> {
    let a = b.column_by_name(col).unwrap().as_primitive::<Int32Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

pub fn i64s(b: &RecordBatch, col: &str) -> Vec<Option<i64>> {
    let a = b.column_by_name(col).unwrap().as_primitive::<Int64Type>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i)))
        .collect()
}

pub fn binaries(b: &RecordBatch, col: &str) -> Vec<Vec<u8>> {
    let a = b.column_by_name(col).unwrap().as_binary::<i32>();
    (0..a.len()).map(|i| a.value(i).to_vec()).collect()
}

/// A `map<string,string>` column as sorted (key, value) lists.
pub fn maps(b: &RecordBatch, col: &str) -> Vec<Vec<(String, String)>> {
    let m = b.column_by_name(col).unwrap().as_map();
    (0..m.len())
        .map(|i| {
            let entries = m.value(i);
            let (k, v) = (
                entries.column(0).as_string::<i32>(),
                entries.column(1).as_string::<i32>(),
            );
            let mut kv: Vec<(String, String)> = (0..k.len())
                .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                .collect();
            kv.sort();
            kv
        })
        .collect()
}

/// The row index whose `col` equals `value`; panics unless exactly one matches.
pub fn row_where(b: &RecordBatch, col: &str, value: &str) -> usize {
    let hits: Vec<usize> = strs(b, col)
        .iter()
        .enumerate()
        .filter(|(_, v)| v.as_deref() == Some(value))
        .map(|(i, _)| i)
        .collect();
    assert_eq!(hits.len(), 1, "rows with {col} = {value}: {hits:?}");
    hits[0]
}

pub fn pairs(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = kv
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    v.sort();
    v
}
