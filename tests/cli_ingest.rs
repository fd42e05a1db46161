//! `whyslow ingest` as a user runs it: the real binary on stdin (plain and gzip), bad
//! usage and unreadable inputs with their exit codes, a SIGKILL mid-ingest followed by a
//! re-run that ends with exactly the input's rows, and pyarrow/duckdb reading the
//! committed Parquet files and agreeing on counts and sums.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use whyslow_schemas::Table;
use whyslow_store::Store;

fn whyslow(store: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    c.arg("--store").arg(store).env_remove("WHYSLOW_STORE");
    c
}

fn run_with_stdin(mut c: Command, stdin: &[u8]) -> Output {
    let mut child = c
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One metric line per (series, second) and an event every 50 lines; returns the
/// content, the metric and event counts and the sum of the metric values.
fn generate(lines: usize, offset: usize) -> (String, u64, u64, f64) {
    let (mut s, mut metrics, mut events, mut sum) = (String::new(), 0, 0, 0.0);
    for i in offset..offset + lines {
        if i % 50 == 49 {
            s.push_str(&format!(
                "{{\"time\":{},\"kind\":\"recompile\",\"node\":\"n{}\",\"attrs\":{{\"i\":\"{i}\"}}}}\n",
                1_795_947_300 + i / 64,
                i % 64
            ));
            events += 1;
        } else {
            let value = (i % 1000) as f64 / 8.0;
            s.push_str(&format!(
                "{{\"time\":{},\"metric\":\"gpu_util\",\"value\":{value},\"node\":\"n{}\",\"device\":\"{}\"}}\n",
                1_795_947_300 + i / 64,
                i % 64 / 8,
                i % 8
            ));
            metrics += 1;
            sum += value;
        }
    }
    (s, metrics, events, sum)
}

#[test]
fn stdin_plain_and_gzip() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let (input, metrics, events, _) = generate(200, 0);
    let mut c = whyslow(&store);
    c.args(["ingest", "--format", "envelope", "--no-progress", "-"]);
    let out = run_with_stdin(c, input.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("records: 200 read = 200 produced + 0 skipped + 0 rejected"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "rows: 200 = 200 written ({events} events, {metrics} metrics, 0 dead letters)"
        )),
        "{stdout}"
    );

    // The same records gzip-compressed on stdin, then more: only the new ones are written.
    let (more, m2, e2, _) = generate(100, 200);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(input.as_bytes()).unwrap();
    gz.write_all(more.as_bytes()).unwrap();
    let mut c = whyslow(&store);
    c.args(["ingest", "--format", "envelope", "-"]);
    let out = run_with_stdin(c, &gz.finish().unwrap());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("rows: 300 = 100 written"), "{stdout}");
    assert!(stdout.contains("+ 200 duplicates skipped"), "{stdout}");
    let s = Store::open(&store).unwrap();
    assert_eq!(s.rows(Table::Metrics), metrics + m2);
    assert_eq!(s.rows(Table::Events), events + e2);
}

#[test]
fn bad_usage_exits_2_and_unreadable_inputs_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    for args in [
        vec!["ingest", "--format", "xml", "x.jsonl"],
        vec![
            "ingest",
            "--format",
            "envelope",
            "--time",
            "yesterday",
            "x.jsonl",
        ],
        vec![
            "ingest",
            "--format",
            "envelope",
            "--boot-time",
            "-2x",
            "x.jsonl",
        ],
    ] {
        let out = whyslow(&store).args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let err = text(&out.stderr);
        assert_eq!(err.lines().count(), 1, "one sentence: {err}");
        assert!(err.starts_with("whyslow: "), "{err}");
    }

    let good = dir.path().join("good.jsonl");
    std::fs::write(&good, generate(10, 0).0).unwrap();
    let missing = dir.path().join("missing.jsonl");
    let out = whyslow(&store)
        .args(["ingest", "--format", "envelope"])
        .arg(&missing)
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("cannot read {}", missing.display())),
        "{err}"
    );
    assert!(
        text(&out.stdout).contains("records: 10 read"),
        "the other input was ingested"
    );
    assert_eq!(
        Store::open(&store).unwrap().rows(Table::Metrics)
            + Store::open(&store).unwrap().rows(Table::Events),
        10
    );
}

/// A store URL of a kind the store cannot use (HDFS), or a bucket it cannot reach, is
/// refused in one sentence by every command, and nothing is created: no local `s3:` or
/// `hdfs:` directory.
#[test]
fn a_store_url_it_cannot_use_or_reach_is_refused_and_nothing_is_created() {
    let cwd = tempfile::tempdir().unwrap();
    let input = cwd.path().join("in.jsonl");
    std::fs::write(&input, generate(10, 0).0).unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (location, why) in [
        ("s3://bucket/prefix", "cannot list"),
        ("hdfs://nn/x", "URL"),
    ] {
        for args in [
            vec!["ingest", "--format", "envelope", "in.jsonl"],
            vec!["sql", "SELECT count(*) FROM events"],
            vec!["report"],
            vec!["replay"],
        ] {
            let out = whyslow(Path::new(location))
                .args(&args)
                .current_dir(cwd.path())
                .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{closed}"))
                .env("AWS_ALLOW_HTTP", "true")
                .env("AWS_ACCESS_KEY_ID", "x")
                .env("AWS_SECRET_ACCESS_KEY", "y")
                .env("AWS_REGION", "us-east-1")
                .output()
                .unwrap();
            let err = text(&out.stderr);
            assert!(!out.status.success(), "{location} {args:?}: {err}");
            assert_eq!(err.lines().count(), 1, "one sentence: {err}");
            assert!(err.contains(location), "{err}");
            assert!(err.contains(why), "says why: {err}");
            let left: Vec<_> = std::fs::read_dir(cwd.path())
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            assert_eq!(
                left,
                [std::ffi::OsString::from("in.jsonl")],
                "{location} {args:?}"
            );
        }
    }
}

/// Stores whyslow must not write into: a Delta table of another schema where one of its
/// tables belongs (made by Python `deltalake`, as another tool would), and a store of the
/// layout before Delta tables (`_log/`). Every command refuses in one sentence naming
/// what is wrong, exits non-zero and writes nothing.
#[test]
fn a_foreign_delta_table_or_an_old_layout_is_refused_and_nothing_is_written() {
    if std::env::var("WHYSLOW_SKIP_PYTHON").is_ok_and(|v| v == "1") {
        println!("SKIPPED: WHYSLOW_SKIP_PYTHON=1");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, generate(100, 0).0).unwrap();
    let foreign = dir.path().join("foreign");
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, pyarrow as pa; from deltalake import write_deltalake; \
             write_deltalake(sys.argv[1], pa.table({'id': [1, 2], 'payload': ['a', 'b']}))",
        ])
        .arg(foreign.join("events"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python deltalake: {}",
        text(&out.stderr)
    );
    let old = dir.path().join("old");
    std::fs::create_dir_all(old.join("_log")).unwrap();
    let listing = |store: &Path| -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![store.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p.clone());
                }
                let rel = p.strip_prefix(store).unwrap().display().to_string();
                // The writer's lock file aside.
                if rel != "_lock" {
                    out.push(rel);
                }
            }
        }
        out.sort();
        out
    };
    for (store, says) in [
        (&foreign, "cannot hold whyslow's events table"),
        (&old, "older whyslow"),
    ] {
        for args in [
            vec!["ingest", "--format", "envelope", "--no-progress"],
            vec!["sql", "SELECT count(*) FROM events"],
            vec!["report"],
            vec!["replay"],
        ] {
            let before = listing(store);
            let mut c = whyslow(store);
            c.args(&args);
            if args[0] == "ingest" {
                c.arg(&input);
            }
            let out = c.output().unwrap();
            let err = text(&out.stderr);
            assert!(!out.status.success(), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
            assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
            assert_eq!(
                listing(store),
                before,
                "{args:?} wrote into {}",
                store.display()
            );
        }
    }
}

/// Commits of rows to the `events` Delta table (its creation, version 0, left out).
fn log_entries(store: &Path) -> usize {
    std::fs::read_dir(store.join("events/_delta_log"))
        .map(|rd| {
            rd.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.ends_with(".json") && name != "00000000000000000000.json"
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn killed_mid_ingest_then_rerun_has_exactly_the_input_rows() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let inputs = dir.path().join("in");
    std::fs::create_dir(&inputs).unwrap();
    let (files, per_file) = (24, 25_000);
    let (mut metrics, mut events) = (0, 0);
    for f in 0..files {
        let (s, m, e, _) = generate(per_file, f * per_file);
        std::fs::write(inputs.join(format!("part-{f:02}.jsonl")), s).unwrap();
        metrics += m;
        events += e;
    }

    let mut child = whyslow(&store)
        .args(["ingest", "--format", "envelope", "--no-progress"])
        .arg(&inputs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while log_entries(&store) < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the ingest finished before it could be killed"
    );
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = Store::open(&store).unwrap();
    let kept = before.rows(Table::Metrics) + before.rows(Table::Events);
    assert!(
        kept > 0 && kept < metrics + events,
        "killed mid-way: {kept} rows committed"
    );

    let out = whyslow(&store)
        .args(["ingest", "--format", "envelope"])
        .arg(&inputs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let total = (files * per_file) as u64;
    assert!(
        stdout.contains(&format!("records: {total} read = {total} produced")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("+ {kept} duplicates skipped")),
        "{stdout}"
    );
    let after = Store::open(&store).unwrap();
    assert_eq!(after.rows(Table::Metrics), metrics);
    assert_eq!(after.rows(Table::Events), events);
}

fn python_has_duckdb_and_pyarrow() -> bool {
    Command::new("python3")
        .args(["-c", "import duckdb, pyarrow"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

const CHECK_PY: &str = r#"
import json, sys
import duckdb, pyarrow.compute as pc, pyarrow.parquet as pq
con = duckdb.connect()
files = json.loads(sys.argv[1])
out = {}
for table, paths in files.items():
    t = pq.ParquetDataset(paths).read() if paths else None
    out[table] = {"pyarrow_rows": t.num_rows if t is not None else 0}
    if paths:
        out[table]["duckdb_rows"] = con.execute(f"select count(*) from read_parquet({paths!r})").fetchone()[0]
    if table == "metrics" and paths:
        out[table]["pyarrow_sum"] = pc.sum(t["value"]).as_py()
        out[table]["duckdb_sum"] = con.execute(f"select sum(value) from read_parquet({paths!r})").fetchone()[0]
        out[table]["duckdb_distinct_nodes"] = con.execute(f"select count(distinct node) from read_parquet({paths!r})").fetchone()[0]
print(json.dumps(out))
"#;

fn segment_paths(store: &Path, table: Table) -> Vec<PathBuf> {
    Store::open(store)
        .unwrap()
        .segments(table)
        .into_iter()
        .map(|s| s.path)
        .collect()
}

#[test]
fn pyarrow_and_duckdb_agree_on_counts_and_sums() {
    if !python_has_duckdb_and_pyarrow() {
        println!(
            "SKIPPED: python3 with duckdb and pyarrow is not installed (`pip install duckdb pyarrow`); .ci/run installs them"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("store");
    let file = dir.path().join("in.jsonl");
    let (input, metrics, events, sum) = generate(30_000, 0);
    std::fs::write(&file, input).unwrap();
    let out = whyslow(&store)
        .args(["ingest", "--format", "envelope"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));

    let files = serde_json::json!({
        "metrics": segment_paths(&store, Table::Metrics),
        "events": segment_paths(&store, Table::Events),
    });
    let out = Command::new("python3")
        .args(["-c", CHECK_PY, &files.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &got["metrics"];
    assert_eq!(m["pyarrow_rows"], metrics);
    assert_eq!(m["duckdb_rows"], metrics);
    assert_eq!(m["duckdb_distinct_nodes"], 8);
    for k in ["pyarrow_sum", "duckdb_sum"] {
        let s = m[k].as_f64().unwrap();
        assert!((s - sum).abs() < 1e-6 * sum, "{k}: {s} vs {sum}");
    }
    assert_eq!(got["events"]["pyarrow_rows"], events);
    assert_eq!(got["events"]["duckdb_rows"], events);

    // And `whyslow sql` over the same store, once that command is built.
    let out = whyslow(&store)
        .args([
            "sql",
            "--format",
            "csv",
            "select count(*) as n, sum(value) as s from metrics",
        ])
        .output()
        .unwrap();
    if text(&out.stderr).contains("not built yet") {
        println!(
            "note: `whyslow sql` is not built yet; compared with the input's own counts and sums only"
        );
        return;
    }
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    let row = csv
        .lines()
        .nth(1)
        .unwrap_or_else(|| panic!("no data row: {csv}"));
    let (n, s) = row.split_once(',').unwrap();
    assert_eq!(n.trim().parse::<u64>().unwrap(), metrics, "{csv}");
    assert!(
        (s.trim().parse::<f64>().unwrap() - sum).abs() < 1e-6 * sum,
        "{csv}"
    );
}
