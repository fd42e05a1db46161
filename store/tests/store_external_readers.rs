//! The store's tables are Delta tables that outside engines read as they are: pyarrow
//! (through Python `deltalake`) and DuckDB (through its `delta` extension) agree with
//! what was written (row counts, sums, UTC microsecond timestamps, map columns), right
//! after a compaction too, when the replaced files are still on disk. Needs `python3` with
//! `pyarrow` and `deltalake`, and DuckDB 1.5.5 with `duckdb-extension-delta` in the
//! directory `$WHYSLOW_DUCKDB_DELTA` (all installed by `scripts/test`); set
//! `WHYSLOW_SKIP_PYTHON=1` to skip.

mod store_common;

use std::process::Command;

use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{StoreWriter, WriterOptions};

const SCRIPT: &str = r#"
import sys, json, glob, os
import pyarrow.parquet as pq
from deltalake import DeltaTable
import duckdb, duckdb_extension_delta
metrics, events = sys.argv[1], sys.argv[2]
dt = DeltaTable(metrics)
t = dt.to_pyarrow_table()
first = dt.file_uris()[0].removeprefix("file://")
out = {
    "pyarrow_rows": t.num_rows,
    "pyarrow_time_type": str(t.schema.field("time").type),
    "pyarrow_value_sum": round(sum(v for v in t.column("value").to_pylist()), 6),
    # The Parquet schema itself, as Spark and Trino see it: spec names for the map.
    "parquet_label_paths": sorted({c.path for c in pq.ParquetFile(first).schema
                                   if c.path.startswith("labels")}),
    "parquet_time_unit": str(pq.ParquetFile(first).schema.column(0).logical_type),
    "files_on_disk": len(glob.glob(metrics + "/date=*/*.parquet")),
    "files_in_table": len(dt.file_uris()),
}
ext = glob.glob(os.path.dirname(duckdb_extension_delta.__file__) + "/extensions/*/delta.duckdb_extension")[0]
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{ext}'")
m = f"delta_scan('{metrics}')"
e = f"delta_scan('{events}')"
n, s, lo = con.execute(f"select count(*), sum(value), epoch_ns(min(time)) from {m}").fetchone()
out["duckdb_version"] = duckdb.__version__
out["duckdb_rows"] = n
out["duckdb_value_sum"] = round(s, 6)
out["duckdb_min_time_ns"] = lo
out["duckdb_uuid_labels"] = con.execute(f"select count(*) from {m} where labels['UUID'] is not null").fetchone()[0]
out["duckdb_events"] = con.execute(f"select count(distinct event_id) from {e}").fetchone()[0]
print(json.dumps(out))
"#;

#[test]
fn pyarrow_and_duckdb_read_the_delta_tables_right_after_a_compaction() {
    if std::env::var("WHYSLOW_SKIP_PYTHON").is_ok_and(|v| v == "1") {
        eprintln!("skipped: WHYSLOW_SKIP_PYTHON=1");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = metrics(0..6_000, BASE_NS);
    let e = events(0..200, 3_600_000_000_000, BASE_NS);
    let options = WriterOptions {
        auto_compact_segments: 0,
        ..WriterOptions::default()
    };
    let mut w = StoreWriter::open_with(dir.path(), options).unwrap();
    w.append(Table::Metrics, m.clone()).unwrap();
    w.append(Table::Events, e).unwrap();
    w.commit(&[]).unwrap();
    w.append(Table::Metrics, metrics(6_000..9_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    // The merged-away files stay on disk for running readers (ten minutes by default).
    assert!(w.compact().unwrap().segments_removed >= 2);
    drop(w);
    let duckdb_delta = std::env::var("WHYSLOW_DUCKDB_DELTA").unwrap_or_else(|_| {
        format!(
            "{}/.cache/whyslow/duckdb-delta-1.5.5",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let table = |t: Table| dir.path().join(t.name()).display().to_string();
    let out = Command::new("python3")
        .args(["-c", SCRIPT, &table(Table::Metrics), &table(Table::Events)])
        .env("PYTHONPATH", &duckdb_delta)
        .output()
        .expect("python3 must be installed (or set WHYSLOW_SKIP_PYTHON=1)");
    assert!(
        out.status.success(),
        "python failed (scripts/test installs deltalake and DuckDB's delta extension into \
         $WHYSLOW_DUCKDB_DELTA={duckdb_delta}): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();

    let all = metrics(0..9_000, BASE_NS);
    let values = all.column_by_name("value").unwrap();
    let values = values
        .as_any()
        .downcast_ref::<arrow::array::Float64Array>()
        .unwrap();
    let sum: f64 = values.values().iter().sum();
    let sum = (sum * 1e6).round() / 1e6;
    // A glob would find the replaced files too; the Delta readers only the live ones.
    let (on_disk, live) = (
        got["files_on_disk"].as_u64(),
        got["files_in_table"].as_u64(),
    );
    assert!(on_disk > live, "{got}");
    assert_eq!(got["duckdb_version"], "1.5.5");
    assert_eq!(got["pyarrow_rows"], 9_000);
    assert_eq!(got["duckdb_rows"], 9_000);
    assert_eq!(got["pyarrow_time_type"], "timestamp[us, tz=UTC]");
    assert!(
        (got["pyarrow_value_sum"].as_f64().unwrap() - sum).abs() < 1e-6,
        "{got}"
    );
    assert!(
        (got["duckdb_value_sum"].as_f64().unwrap() - sum).abs() < 1e-6,
        "{got}"
    );
    assert_eq!(got["duckdb_min_time_ns"], BASE_NS);
    assert_eq!(
        got["parquet_label_paths"],
        serde_json::json!(["labels.key_value.key", "labels.key_value.value"])
    );
    assert!(
        got["parquet_time_unit"]
            .as_str()
            .is_some_and(|t| t.contains("isAdjustedToUTC=true") && t.contains("microseconds")),
        "{got}"
    );
    assert_eq!(got["duckdb_uuid_labels"], 9_000);
    assert_eq!(got["duckdb_events"], 200);
}
