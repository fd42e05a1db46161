//! The report JSON of `contracts/report.md`, as serde structs in contract field order.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole report: one JSON object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// When the report was made (the only field that differs between runs on one store).
    pub generated_at: String,
    /// The store the report was read from, as given.
    pub store: String,
    /// The time window analyzed.
    pub window: Window,
    /// Per workload: observed and productive time, badput by cause.
    pub workloads: Vec<WorkloadSummary>,
    /// Every detected slowdown with its ranked causes.
    pub slowdowns: Vec<Slowdown>,
}

/// A closed time window, RFC 3339 UTC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub from: String,
    pub to: String,
}

/// Goodput accounting of one workload over the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkloadSummary {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
    /// Seconds from the workload's first to its last observation inside the window.
    pub observed_seconds: f64,
    /// `observed_seconds` minus the lost time of its slowdowns.
    pub productive_seconds: f64,
    /// Lost seconds by cause id (the verdict's and other causes' explained time, and
    /// `unknown` for what no cause explains).
    pub badput: BTreeMap<String, f64>,
}

/// One detected symptom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Slowdown {
    pub slowdown_id: String,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
    /// `stall`, `restart`, `regression`, `straggler`, `throughput_drop` or `pending`.
    pub kind: String,
    /// Whether it had not ended by the last data (its `end` is then that last time).
    pub ongoing: bool,
    pub nodes: Vec<String>,
    pub pods: Vec<String>,
    pub start: String,
    pub end: String,
    pub lost_seconds: f64,
    pub baseline: Option<f64>,
    pub observed: Option<f64>,
    /// The metric the symptom was seen in.
    pub metric: Option<String>,
    /// Ranked causes, highest confidence first; the first is the verdict.
    pub causes: Vec<CauseEntry>,
    /// The profiles captured during it (XProf, PyTorch profiler, Nsight), in time order,
    /// each url once; always present (empty when none). Absent from JSON written before
    /// it existed, which reads as empty.
    #[serde(default)]
    pub profiles: Vec<ProfileEntry>,
}

/// A profile to open: when its capture ended and where it can be opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileEntry {
    pub time: String,
    pub url: String,
}

/// One candidate cause of a slowdown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CauseEntry {
    /// A cause id of `contracts/causes.md`.
    pub cause: String,
    /// Its layer; null for `unknown`.
    pub layer: Option<String>,
    pub confidence: f64,
    pub explained_seconds: f64,
    pub node: Option<String>,
    pub device: Option<String>,
    pub summary: String,
    /// `event_id`s of the events that show it.
    pub evidence: Vec<String>,
    /// The causal chain from this cause to the symptom, oldest first.
    pub chain: Vec<ChainLink>,
}

/// One link of a causal chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainLink {
    pub time: String,
    pub layer: String,
    pub kind: String,
    pub summary: String,
}

#[cfg(test)]
impl Slowdown {
    /// A slowdown of ml/train for tests: `kind` from `start` to `end` (RFC 3339), `lost`
    /// seconds, `cause` its one cause (explaining all of it); the id is kind and start.
    pub(crate) fn for_test(kind: &str, cause: &str, start: &str, end: &str, lost: f64) -> Self {
        Slowdown {
            slowdown_id: format!("{kind}-{start}"),
            namespace: Some("ml".into()),
            workload: Some("train".into()),
            run_id: None,
            kind: kind.into(),
            ongoing: false,
            nodes: Vec::new(),
            pods: Vec::new(),
            start: start.into(),
            end: end.into(),
            lost_seconds: lost,
            baseline: Some(1.0),
            observed: None,
            metric: Some("step_time_seconds".into()),
            causes: vec![CauseEntry {
                cause: cause.into(),
                layer: None,
                confidence: 0.9,
                explained_seconds: lost,
                node: None,
                device: None,
                summary: String::new(),
                evidence: Vec::new(),
                chain: Vec::new(),
            }],
            profiles: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The contract's example parses into the model and prints back with the same keys in
    /// the same order.
    #[test]
    fn contract_example_round_trips() {
        let example = r#"{
  "generated_at": "2026-11-29T12:00:00Z",
  "store": "whyslow-data",
  "window": {"from": "2026-11-29T09:00:00Z", "to": "2026-11-29T12:00:00Z"},
  "workloads": [
    {"namespace": "llm", "workload": "finetune-gemma-l4", "run_id": "finetune-experiment",
     "observed_seconds": 10800.0, "productive_seconds": 9200.0,
     "badput": {"framework.checkpoint_save": 280.0, "orchestrator.preemption": 1320.0}}
  ],
  "slowdowns": [
    {"slowdown_id": "x", "namespace": "llm", "workload": "finetune-gemma-l4",
     "run_id": "finetune-experiment",
     "kind": "stall", "ongoing": false, "nodes": [], "pods": ["a", "b"],
     "start": "2026-11-29T10:02:11Z", "end": "2026-11-29T10:24:07Z",
     "lost_seconds": 1316.0,
     "baseline": 1.91, "observed": null, "metric": "step_time_seconds",
     "causes": [
       {"cause": "orchestrator.preemption", "layer": "orchestrator", "confidence": 0.94,
        "explained_seconds": 1316.0, "node": null, "device": null,
        "summary": "s", "evidence": ["e1", "e2"],
        "chain": [
          {"time": "2026-11-29T10:01:58Z", "layer": "orchestrator", "kind": "scaled", "summary": "tgi scaled 1→2"}
        ]}
     ],
     "profiles": [{"time": "2026-11-29T10:05:00Z", "url": "https://xprof.example/?run=ft"}]}
  ]
}"#;
        let parsed: Report = serde_json::from_str(example).unwrap();
        let printed: serde_json::Value = serde_json::to_value(&parsed).unwrap();
        let original: serde_json::Value = serde_json::from_str(example).unwrap();
        assert_eq!(printed, original);
        let text = serde_json::to_string(&parsed).unwrap();
        let keys = ["generated_at", "store", "window", "workloads", "slowdowns"];
        let pos: Vec<usize> = keys
            .iter()
            .map(|k| text.find(&format!("\"{k}\"")).unwrap())
            .collect();
        assert!(
            pos.windows(2).all(|w| w[0] < w[1]),
            "top-level keys keep contract order"
        );
    }
}
