//! The segments are plain Parquet: pyarrow and DuckDB read them and agree with what was
//! written (row counts, sums, UTC microsecond timestamps, map columns). Needs `python3` with
//! `pyarrow` and `duckdb` (installed by `.ci/run`); set `WHYSLOW_SKIP_PYTHON=1` to skip.

mod store_common;

use std::process::Command;

use store_common::*;
use whyslow_schemas::Table;
use whyslow_store::{Store, StoreWriter};

const SCRIPT: &str = r#"
import sys, json
import pyarrow.parquet as pq
import duckdb
metrics = [p for p in sys.argv[1].split(",") if p]
events = [p for p in sys.argv[2].split(",") if p]
t = pq.read_table(metrics)
out = {
    "pyarrow_rows": t.num_rows,
    "pyarrow_time_type": str(t.schema.field("time").type),
    "pyarrow_value_sum": round(sum(v for v in t.column("value").to_pylist()), 6),
    # The Parquet schema itself, as Spark and Trino see it: spec names for the map.
    "parquet_label_paths": sorted({c.path for c in pq.ParquetFile(metrics[0]).schema
                                   if c.path.startswith("labels")}),
    "parquet_time_unit": str(pq.ParquetFile(metrics[0]).schema.column(0).logical_type),
}
con = duckdb.connect()
m = "read_parquet([" + ",".join("'" + p + "'" for p in metrics) + "])"
e = "read_parquet([" + ",".join("'" + p + "'" for p in events) + "])"
n, s, lo = con.execute(f"select count(*), sum(value), epoch_ns(min(time)) from {m}").fetchone()
out["duckdb_rows"] = n
out["duckdb_value_sum"] = round(s, 6)
out["duckdb_min_time_ns"] = lo
out["duckdb_uuid_labels"] = con.execute(f"select count(*) from {m} where labels['UUID'] is not null").fetchone()[0]
out["duckdb_events"] = con.execute(f"select count(distinct event_id) from {e}").fetchone()[0]
print(json.dumps(out))
"#;

#[test]
fn pyarrow_and_duckdb_read_the_segments() {
    if std::env::var("WHYSLOW_SKIP_PYTHON").is_ok_and(|v| v == "1") {
        eprintln!("skipped: WHYSLOW_SKIP_PYTHON=1");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let m = metrics(0..6_000, BASE_NS);
    let e = events(0..200, 3_600_000_000_000, BASE_NS);
    let mut w = StoreWriter::open(dir.path()).unwrap();
    w.append(Table::Metrics, m.clone()).unwrap();
    w.append(Table::Events, e).unwrap();
    w.commit(&[]).unwrap();
    w.append(Table::Metrics, metrics(6_000..9_000, BASE_NS))
        .unwrap();
    w.commit(&[]).unwrap();
    drop(w);
    let store = Store::open(dir.path()).unwrap();
    let paths = |t: Table| -> String {
        store
            .segments(t)
            .iter()
            .map(|s| s.path.display().to_string())
            .collect::<Vec<_>>()
            .join(",")
    };
    let out = Command::new("python3")
        .args(["-c", SCRIPT, &paths(Table::Metrics), &paths(Table::Events)])
        .output()
        .expect("python3 must be installed (or set WHYSLOW_SKIP_PYTHON=1)");
    assert!(
        out.status.success(),
        "python failed: {}",
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
