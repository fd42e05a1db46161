//! Shared test support: a real Kafka-compatible broker, scenarios produced to it, signals.

// Each test binary uses a different part of it.
#![allow(dead_code)]

pub mod broker;
pub mod produce;
#[path = "../../store/tests/store_common/s3.rs"]
pub mod s3;
pub mod scenario;

/// Sends `sig` (e.g. `-TERM`, `-KILL`) to a child process.
pub fn signal(child: &std::process::Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} failed");
}

/// The inputs of a committed scenario (its answer key and README are not inputs), sorted.
pub fn scenario_inputs(name: &str) -> Vec<std::path::PathBuf> {
    let dir = whyslow_fixtures::committed_scenarios_dir().join(name);
    whyslow_analyzers::command::scenario_inputs(&dir).expect("a committed scenario")
}
