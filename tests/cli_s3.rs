//! `--store s3://bucket/prefix` as a user runs it, on SeaweedFS on loopback: `ingest`
//! in many small runs (compacted as they come), then again (nothing new is stored), `sql`
//! agreeing with the input and with Python `deltalake`, Polars and DuckDB's `delta`
//! extension reading the same Delta tables from the bucket; refused
//! credentials and an unknown scheme fail in one sentence, exit non-zero, nothing written.

#[path = "../store/tests/store_common/s3.rs"]
mod s3;

use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Output, Stdio};

fn whyslow(store: &str, env: &[(String, String)]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    c.arg("--store")
        .arg(store)
        .env_remove("WHYSLOW_STORE")
        .envs(env.iter().map(|(k, v)| (k, v)));
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

/// Metric lines 5 s apart (a day or two) and an event every 40 lines: (content, metrics, events, sum).
fn generate(lines: usize) -> (String, u64, u64, f64) {
    let (mut s, mut metrics, mut events, mut sum) = (String::new(), 0, 0, 0.0);
    for i in 0..lines {
        let time = 1_795_947_300 + i * 5;
        if i % 40 == 39 {
            s.push_str(&format!(
                "{{\"time\":{time},\"kind\":\"recompile\",\"node\":\"n{}\",\"attrs\":{{\"i\":\"{i}\"}}}}\n",
                i % 16
            ));
            events += 1;
        } else {
            let value = (i % 1000) as f64 / 4.0;
            s.push_str(&format!(
                "{{\"time\":{time},\"metric\":\"gpu_util\",\"value\":{value},\"node\":\"n{}\",\"device\":\"{}\"}}\n",
                i % 16,
                i % 8
            ));
            metrics += 1;
            sum += value;
        }
    }
    (s, metrics, events, sum)
}

fn sql(store: &str, env: &[(String, String)], query: &str) -> Vec<String> {
    let out = whyslow(store, env)
        .args(["sql", "--format", "csv", query])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout)
        .lines()
        .skip(1)
        .map(str::to_string)
        .collect()
}

/// Python reads the bucket's tables with `deltalake` and Polars: rows of metrics and
/// events and the sum of metric values, per reader.
const READERS_PY: &str = r#"
import json, sys
from deltalake import DeltaTable
import polars as pl
root, opts = sys.argv[1], json.loads(sys.argv[2])
out = {}
for t in ["metrics", "events"]:
    dt = DeltaTable(f"{root}/{t}", storage_options=opts).to_pyarrow_table()
    pf = pl.read_delta(f"{root}/{t}", storage_options=opts)
    out[t] = {"deltalake": dt.num_rows, "polars": pf.height,
              "files": len(DeltaTable(f"{root}/{t}", storage_options=opts).file_uris())}
    if t == "metrics":
        out[t]["deltalake_sum"] = sum(v for v in dt.column("value").to_pylist() if v is not None)
        out[t]["polars_sum"] = pf["value"].sum()
print(json.dumps(out))
"#;

/// DuckDB's `delta` extension reads the bucket through its `httpfs` extension (both from
/// PyPI, for DuckDB 1.5.5 in `$WHYSLOW_DUCKDB_DELTA`) with an S3 secret made from the
/// same variables: rows of metrics and events and the sum of metric values.
const DUCKDB_PY: &str = r#"
import glob, json, os, sys
from urllib.parse import urlparse
import duckdb, duckdb_extension_delta, duckdb_extension_httpfs
root, env = sys.argv[1], json.loads(sys.argv[2])
def extension(module, name):
    return glob.glob(os.path.dirname(module.__file__) + f"/extensions/*/{name}.duckdb_extension")[0]
con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
con.execute(f"LOAD '{extension(duckdb_extension_httpfs, 'httpfs')}'")
con.execute(f"LOAD '{extension(duckdb_extension_delta, 'delta')}'")
endpoint = urlparse(env["AWS_ENDPOINT_URL"])
con.execute("CREATE SECRET bucket (TYPE S3, KEY_ID ?, SECRET ?, REGION ?, ENDPOINT ?, URL_STYLE 'path', USE_SSL ?)",
            [env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env.get("AWS_REGION", "us-east-1"),
             endpoint.netloc, endpoint.scheme == "https"])
m, s = con.execute(f"select count(*), sum(value) from delta_scan('{root}/metrics')").fetchone()
e = con.execute(f"select count(*) from delta_scan('{root}/events')").fetchone()[0]
print(json.dumps({"version": duckdb.__version__, "metrics": m, "events": e, "sum": s}))
"#;

#[test]
fn ingest_compact_and_sql_on_a_bucket_agree_with_external_readers() {
    let server = s3::S3Server::start();
    let env = server.env();
    let store = server.url("cli");
    let (input, metrics, events, sum) = generate(6_000);

    // In 20 runs (20 commits of small segments: the writer compacts them), then all of
    // it again: nothing new is stored.
    let lines: Vec<&str> = input.lines().collect();
    for part in lines.chunks(lines.len().div_ceil(20)) {
        let mut c = whyslow(&store, &env);
        c.args(["ingest", "--format", "envelope", "--no-progress", "-"]);
        let out = run_with_stdin(c, (part.join("\n") + "\n").as_bytes());
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let mut c = whyslow(&store, &env);
    c.args(["ingest", "--format", "envelope", "--no-progress", "-"]);
    let out = run_with_stdin(c, input.as_bytes());
    assert!(out.status.success(), "{}", text(&out.stderr));

    let got = sql(
        &store,
        &env,
        "select (select count(*) from metrics) as m, (select count(*) from events) as e, \
         (select sum(value) from metrics) as s",
    );
    let fields: Vec<&str> = got[0].split(',').collect();
    assert_eq!(fields[0], metrics.to_string(), "{got:?}");
    assert_eq!(fields[1], events.to_string(), "{got:?}");
    let s: f64 = fields[2].parse().unwrap();
    assert!((s - sum).abs() < 1e-6, "{s} vs {sum}");

    // A report over the bucket: the analysis reads the samples straight from the
    // bucket's segments (`whyslow_queries::dictionary_scan`). The window opens at the
    // first sample (events begin 39 lines later): the samples were read.
    let out = whyslow(&store, &env)
        .args(["report", "--format", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["window"]["from"], "2026-11-29T10:15:00Z",
        "{}",
        report["window"]
    );

    let opts: serde_json::Map<String, serde_json::Value> = env
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
        .collect();
    let out = Command::new("python3")
        .args([
            "-c",
            READERS_PY,
            &store,
            &serde_json::Value::Object(opts).to_string(),
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success() || !out.stdout.is_empty(),
        "{}",
        text(&out.stderr)
    );
    let readers: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)));
    // 20 small commits were compacted: fewer files than commits.
    let files = readers["metrics"]["files"].as_u64().unwrap();
    assert!(files < 20, "{files} metric files: not compacted");
    for reader in ["deltalake", "polars"] {
        assert_eq!(readers["metrics"][reader], metrics, "{readers}");
        assert_eq!(readers["events"][reader], events, "{readers}");
        let s = readers["metrics"][format!("{reader}_sum")]
            .as_f64()
            .unwrap();
        assert!((s - sum).abs() < 1e-6, "{reader}: {s} vs {sum}");
    }

    let duckdb_delta = std::env::var("WHYSLOW_DUCKDB_DELTA").unwrap_or_else(|_| {
        format!(
            "{}/.cache/whyslow/duckdb-delta-1.5.5",
            std::env::var("HOME").unwrap_or_default()
        )
    });
    let out = Command::new("python3")
        .env("PYTHONPATH", &duckdb_delta)
        .args([
            "-c",
            DUCKDB_PY,
            &store,
            &serde_json::to_string(&env.iter().cloned().collect::<BTreeMap<_, _>>()).unwrap(),
        ])
        .output()
        .unwrap();
    let duck: serde_json::Value = serde_json::from_str(text(&out.stdout).trim())
        .unwrap_or_else(|e| panic!("{e}: {} {}", text(&out.stdout), text(&out.stderr)));
    assert_eq!(duck["version"], "1.5.5", "{duck}");
    assert_eq!(duck["metrics"], metrics, "{duck}");
    assert_eq!(duck["events"], events, "{duck}");
    let s = duck["sum"].as_f64().unwrap();
    assert!((s - sum).abs() < 1e-6, "duckdb: {s} vs {sum}");
}

#[test]
fn refused_credentials_and_unknown_schemes_fail_in_one_sentence_writing_nothing() {
    let server = s3::S3Server::start();
    let store = server.url("refused");
    let mut wrong = server.env();
    for (k, v) in wrong.iter_mut() {
        if k == "AWS_SECRET_ACCESS_KEY" {
            *v = "wrong".into();
        }
    }
    let (input, ..) = generate(100);
    let mut c = whyslow(&store, &wrong);
    c.args(["ingest", "--format", "envelope", "--no-progress", "-"]);
    let out = run_with_stdin(c, input.as_bytes());
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains(&store), "{err}");
    let out = whyslow(&store, &wrong)
        .args(["sql", "select count(*) from events"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains(&store), "{}", text(&out.stderr));
    // Nothing under the prefix, as the right credentials see it.
    let rows = sql(&store, &server.env(), "select count(*) from events");
    assert_eq!(rows, ["0"]);

    let out = whyslow("hdfs://namenode/whyslow", &[])
        .args(["sql", "select 1"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(err.contains("hdfs://") && err.contains("s3://"), "{err}");
}
