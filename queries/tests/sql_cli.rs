//! `run_sql` (the `whyslow sql` command) over a real store directory of Parquet files:
//! every output format, bound parameters, named query files, refused statements.

mod fixture;

use std::path::Path;

use whyslow_queries::{QueryError, SqlCommand, run_sql};

fn sql(store: &Path, query: &str, format: &str, params: &[&str]) -> Result<String, QueryError> {
    let cmd = SqlCommand {
        store: store.to_path_buf(),
        query: Some(query.to_string()),
        file: None,
        params: params.iter().map(|p| p.to_string()).collect(),
        format: format.parse()?,
        memory_limit: None,
    };
    let mut out = Vec::new();
    run_sql(&cmd, &mut out)?;
    Ok(String::from_utf8(out).expect("output is UTF-8"))
}

fn store() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_store(dir.path());
    dir
}

const XIDS: &str = "SELECT node, device, reason, time FROM events WHERE kind = 'xid' ORDER BY time";

#[test]
fn table_format_prints_an_aligned_table_and_the_row_count() {
    let s = store();
    let out = sql(s.path(), XIDS, "table", &[]).unwrap();
    let expected = "\
+--------+--------+--------+----------------------+
| node   | device | reason | time                 |
+--------+--------+--------+----------------------+
| node-a | 0      | 79     | 2026-11-29T10:05:00Z |
| node-b | 3      | 48     | 2026-11-29T10:12:00Z |
| node-a | 0      | 79     | 2026-11-29T10:25:00Z |
+--------+--------+--------+----------------------+
(3 rows)
";
    assert_eq!(out, expected);
}

#[test]
fn csv_format_has_a_header_and_flattens_maps() {
    let s = store();
    let out = sql(s.path(), XIDS, "csv", &[]).unwrap();
    let mut lines = out.lines();
    assert_eq!(lines.next(), Some("node,device,reason,time"));
    assert_eq!(lines.next(), Some("node-a,0,79,2026-11-29T10:05:00Z"));
    assert_eq!(out.lines().count(), 4);
    let out = sql(
        s.path(),
        "SELECT event_id, attrs FROM events WHERE event_id = 'ev-xid-b3'",
        "csv",
        &[],
    )
    .unwrap();
    assert_eq!(out, "event_id,attrs\nev-xid-b3,{xid: 48}\n");
    // No rows: still the header.
    let out = sql(s.path(), "SELECT node FROM events WHERE false", "csv", &[]).unwrap();
    assert_eq!(out, "node\n");
}

#[test]
fn ndjson_format_is_one_object_per_line_with_every_column() {
    let s = store();
    let out = sql(
        s.path(),
        "SELECT event_id, node, attrs, time FROM events WHERE event_id IN ('ev-xid-b3', 'ev-admit-tgi') ORDER BY time",
        "ndjson",
        &[],
    )
    .unwrap();
    let rows: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["event_id"], "ev-admit-tgi");
    assert!(rows[0]["node"].is_null(), "explicit nulls: {out}");
    assert_eq!(rows[0]["attrs"]["priority"], "1000");
    assert_eq!(rows[1]["attrs"]["xid"], "48");
    assert_eq!(rows[1]["time"], "2026-11-29T10:12:00Z");
}

/// `json` is one array, as datafusion-cli and DuckDB print it; no rows, an empty one.
#[test]
fn json_format_is_one_array_of_the_same_objects() {
    let s = store();
    let q = "SELECT event_id, node, attrs, time FROM events WHERE event_id IN ('ev-xid-b3', 'ev-admit-tgi') ORDER BY time";
    let array: serde_json::Value =
        serde_json::from_str(&sql(s.path(), q, "json", &[]).unwrap()).unwrap();
    let lines: Vec<serde_json::Value> = sql(s.path(), q, "ndjson", &[])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(array, serde_json::Value::Array(lines));
    let none = sql(s.path(), "SELECT node FROM events WHERE false", "json", &[]).unwrap();
    assert_eq!(none, "[]\n");
}

#[test]
fn params_are_bound_as_typed_values() {
    let s = store();
    let q = "SELECT event_id FROM events WHERE node = $node AND time >= $from AND time < $to ORDER BY time";
    let out = sql(
        s.path(),
        q,
        "csv",
        &[
            "node=node-a",
            "from=2026-11-29T10:01:00Z",
            "to=2026-11-29T10:25:00Z",
        ],
    )
    .unwrap();
    assert_eq!(out, "event_id\nev-throttle-a1\nev-xid-a0\nev-ckpt-1200\n");
    // A quote in a value is data, not SQL.
    let out = sql(
        s.path(),
        "SELECT count(*) AS n FROM events WHERE node = $node",
        "csv",
        &["node=x' OR '1'='1"],
    )
    .unwrap();
    assert_eq!(out, "n\n0\n");
    let e = sql(s.path(), q, "csv", &["node=node-a"]).unwrap_err();
    assert!(e.is_usage());
    assert!(
        e.to_string()
            .contains("$from, $to but no --param from=VALUE, --param to=VALUE"),
        "{e}"
    );
    let e = sql(s.path(), "SELECT 1", "csv", &["nod=node-a"]).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("not used"), "{e}");
}

#[test]
fn named_queries_run_with_params() {
    let s = store();
    let cmd = SqlCommand {
        store: s.path().to_path_buf(),
        query: None,
        file: Some("preemptions".into()),
        params: vec![
            "from=2026-11-29T10:00:00Z".into(),
            "to=2026-11-29T11:00:00Z".into(),
        ],
        format: "csv".parse().unwrap(),
        memory_limit: None,
    };
    let mut out = Vec::new();
    run_sql(&cmd, &mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        "time,namespace,workload,kind,reason,preemption_reason,preemptor,priority,cluster_queue,node,pod,source"
    );
    assert_eq!(
        lines[1],
        "2026-11-29T10:10:00Z,llm,ft,evicted,Preempted,InClusterQueue,llm/tgi,100,cq-gpu,,,kueue"
    );
    assert_eq!(lines.len(), 3);

    // Any path works too, and a file may hold several statements.
    let file = s.path().join("two.sql");
    std::fs::write(&file, "-- two answers\nSELECT count(*) AS events FROM events;\nSELECT count(*) AS dl FROM dead_letters;\n")
        .unwrap();
    let cmd = SqlCommand {
        file: Some(file.display().to_string()),
        params: vec![],
        ..cmd
    };
    let mut out = Vec::new();
    run_sql(&cmd, &mut out).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "events\n12\ndl\n3\n");

    let cmd = SqlCommand {
        file: Some("no_such_query".into()),
        ..cmd
    };
    let e = run_sql(&cmd, &mut Vec::new()).unwrap_err();
    assert!(e.is_usage() && e.to_string().contains("node_window"), "{e}");
}

#[test]
fn writes_and_outside_reads_are_refused_as_usage_errors() {
    let s = store();
    let target = s.path().join("copy.parquet");
    for q in [
        format!("COPY events TO '{}'", target.display()),
        "CREATE EXTERNAL TABLE p (line VARCHAR) STORED AS CSV LOCATION '/etc/passwd'".to_string(),
        "INSERT INTO events SELECT * FROM events".to_string(),
        "SET datafusion.execution.target_partitions = 1".to_string(),
        "SELECT 1; DROP TABLE events".to_string(),
    ] {
        let e = sql(s.path(), &q, "table", &[]).unwrap_err();
        assert!(matches!(e, QueryError::Refused(_)), "{q}: {e}");
        assert!(e.is_usage());
        assert!(
            e.to_string().starts_with("whyslow sql is read-only: "),
            "{e}"
        );
    }
    assert!(!target.exists());
    let e = sql(s.path(), "SELEC 1", "table", &[]).unwrap_err();
    assert!(matches!(e, QueryError::Syntax(_)) && e.is_usage(), "{e}");
    let e = sql(s.path(), "SELECT nope FROM events", "table", &[]).unwrap_err();
    assert!(e.is_usage(), "{e}");
    let e = sql(s.path(), "SELECT 1", "xml", &[]).unwrap_err();
    assert!(e.is_usage(), "{e}");
}

#[test]
fn a_missing_store_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing-here");
    let out = sql(&missing, "SELECT count(*) AS n FROM events", "csv", &[]).unwrap();
    assert_eq!(out, "n\n0\n");
    let out = sql(&missing, "SELECT * FROM timeline", "csv", &[]).unwrap();
    assert_eq!(
        out.lines().next(),
        Some("time,layer,source,kind,severity,node,device,namespace,workload,pod,summary,event_id")
    );
    assert!(!missing.exists(), "reading must not create the store");
}
