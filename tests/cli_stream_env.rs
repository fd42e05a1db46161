//! `whyslow stream` configured from the environment alone, as a Kubernetes Deployment
//! sets it: every flag has a `WHYSLOW_*` variable, `--help` names them, and a worker
//! given only variables reads them (here: it gives up on the unreachable broker they
//! name after the retry budget they set, exit 1, naming the broker, its logs JSON); the
//! manifests of `deploy/kubernetes/` are valid and set only variables the worker reads.

#[path = "../store/tests/store_common/s3.rs"]
mod s3;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const VARIABLES: [&str; 13] = [
    "WHYSLOW_BROKERS",
    "WHYSLOW_GROUP",
    "WHYSLOW_TOPICS",
    "WHYSLOW_INCIDENTS_TOPIC",
    "WHYSLOW_FLUSH_INTERVAL",
    "WHYSLOW_MAX_BATCH_ROWS",
    "WHYSLOW_METRICS_ADDR",
    "WHYSLOW_RETRY_BUDGET",
    "WHYSLOW_ON_INCIDENT",
    "WHYSLOW_ANALYSIS_WINDOW",
    "WHYSLOW_KAFKA_PROPERTIES",
    "WHYSLOW_KAFKA_CONFIG",
    "WHYSLOW_ALERTMANAGER",
];

/// Variables every command reads.
const GLOBAL_VARIABLES: [&str; 2] = ["WHYSLOW_STORE", "WHYSLOW_LOG_FORMAT"];

fn stream_help() -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args(["stream", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A loopback port nobody listens on, and one for the worker's `/metrics`: picked below
/// the ephemeral range, where no outgoing connection can be given it meanwhile.
fn free_port() -> u16 {
    s3::free_port()
}

#[test]
fn help_names_every_variable() {
    let help = stream_help();
    for v in VARIABLES.iter().chain(&GLOBAL_VARIABLES) {
        assert!(
            help.contains(&format!("env: {v}")),
            "{v} missing from:\n{help}"
        );
    }
}

#[test]
fn a_worker_configured_by_variables_alone_reads_them() {
    let store = tempfile::tempdir().unwrap();
    let broker = format!("127.0.0.1:{}", free_port());
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_whyslow"));
    cmd.arg("stream");
    for v in VARIABLES.iter().chain(&GLOBAL_VARIABLES) {
        cmd.env_remove(v);
    }
    cmd.env("WHYSLOW_STORE", store.path())
        .env("WHYSLOW_BROKERS", &broker)
        .env("WHYSLOW_GROUP", "env-only")
        .env("WHYSLOW_TOPICS", "a=envelope,b=kmsg")
        .env("WHYSLOW_RETRY_BUDGET", "2s")
        .env("WHYSLOW_METRICS_ADDR", format!("127.0.0.1:{}", free_port()))
        .env("WHYSLOW_ANALYSIS_WINDOW", "off")
        .env("WHYSLOW_LOG_FORMAT", "json")
        .env(
            "WHYSLOW_KAFKA_PROPERTIES",
            "client.id=env-only;socket.timeout.ms=5000",
        );
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&broker), "{stderr}");
    // Log lines are JSON objects (the last line is the exit sentence).
    let logs: Vec<serde_json::Value> = stderr
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect();
    assert!(
        logs.iter().any(|l| l["level"] == "WARN"),
        "no JSON warning in:\n{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the 2 s retry budget from the environment was not used: {:?}",
        started.elapsed()
    );
}

/// A bad `-X` is a usage error (exit 2) naming it.
#[test]
fn a_bad_kafka_property_is_a_usage_error() {
    let store = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args(["--store", store.path().to_str().unwrap(), "stream"])
        .args(["--brokers", "127.0.0.1:1", "--group", "g", "--topic", "t"])
        .args(["-X", "no-value"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no-value"), "{stderr}");
}

/// `deploy/kubernetes/`: every manifest validates against the Kubernetes schemas
/// (PyPI's kubernetes-validate, strict; scripts/test installs it); the monitoring
/// resources (custom kinds it has no schema for) scrape the workers' `metrics` port; the
/// ConfigMap sets only variables `whyslow stream` reads.
#[test]
fn deploy_manifests_are_valid_and_set_real_variables() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/kubernetes");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() >= 8, "{files:?}");
    let out = Command::new("kubernetes-validate")
        .arg("--strict")
        .args(&files)
        .output()
        .expect("kubernetes-validate runs (scripts/test installs it from PyPI)");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{report}");
    let help = stream_help();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let doc: serde_json::Value = serde_norway::from_str(&text).unwrap();
        let name = f.file_name().unwrap().to_string_lossy();
        match doc["kind"].as_str().unwrap() {
            "PodMonitoring" | "ServiceMonitor" => {
                let labels = &doc["spec"]["selector"]["matchLabels"];
                assert_eq!(labels["app.kubernetes.io/component"], "stream", "{name}");
                assert_eq!(doc["spec"]["endpoints"][0]["port"], "metrics", "{name}");
                assert_eq!(doc["spec"]["endpoints"][0]["path"], "/metrics", "{name}");
            }
            kind => assert!(
                report.contains(&format!("{name} passed")),
                "{name} ({kind}) was not validated:\n{report}"
            ),
        }
        if doc["kind"] == "ConfigMap" {
            for key in doc["data"].as_object().unwrap().keys() {
                assert!(
                    help.contains(&format!("env: {key}")),
                    "{name}: {key} is no variable of whyslow stream"
                );
            }
        }
    }
}
