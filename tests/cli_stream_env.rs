//! `whyslow stream` configured from the environment alone, as a Kubernetes Deployment
//! sets it: every flag has a `WHYSLOW_*` variable, `--help` names them, and a worker
//! given only variables reads them (here: it gives up on the unreachable broker they
//! name after the retry budget they set, exit 1, naming the broker).

use std::process::Command;
use std::time::{Duration, Instant};

const VARIABLES: [&str; 10] = [
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
];

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn help_names_every_variable() {
    let out = Command::new(env!("CARGO_BIN_EXE_whyslow"))
        .args(["stream", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{help}");
    for v in VARIABLES.iter().chain(&["WHYSLOW_STORE"]) {
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
    for v in VARIABLES {
        cmd.env_remove(v);
    }
    cmd.env("WHYSLOW_STORE", store.path())
        .env("WHYSLOW_BROKERS", &broker)
        .env("WHYSLOW_GROUP", "env-only")
        .env("WHYSLOW_TOPICS", "a=envelope,b=kmsg")
        .env("WHYSLOW_RETRY_BUDGET", "2s")
        .env("WHYSLOW_METRICS_ADDR", format!("127.0.0.1:{}", free_port()))
        .env("WHYSLOW_ANALYSIS_WINDOW", "off");
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&broker), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the 2 s retry budget from the environment was not used: {:?}",
        started.elapsed()
    );
}
