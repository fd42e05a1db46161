//! Streaming and batch agree: every committed fixture scenario is ingested in several
//! commits with the live analyzer observing them, and the incidents that stand at the end
//! (the latest revision of each, retractions dropped, read back from the `incidents`
//! table) must be exactly the slowdowns of the batch report (the goldens that
//! `tests/scenarios.rs` checks `whyslow report` against).

use std::path::{Path, PathBuf};

use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions, standing_incidents};
use whyslow_analyzers::report::{Report, Slowdown};
use whyslow_ingest::run::{IngestOptions, ingest};
use whyslow_ingest::store::Store;
use whyslow_ingest::stream::{CommitObserver, Committed};

fn scenarios() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(whyslow_fixtures::committed_scenarios_dir())
        .expect("fixtures/scenarios")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("truth.json").exists())
        .collect();
    dirs.sort();
    dirs
}

/// The scenario's inputs in the order a cluster's sources would reach whyslow in chunks:
/// orchestrator objects, then node telemetry, then the workload's own logs and metrics.
fn chunks(dir: &Path) -> Vec<Vec<String>> {
    let p = |rel: &str| dir.join(rel);
    let groups: [&[&str]; 4] = [
        &[
            "k8s-events.jsonl",
            "kueue-workloads.jsonl",
            "inventory.json",
        ],
        &["dcgm", "kernel"],
        &["pods"],
        &["sdk.jsonl.gz"],
    ];
    groups
        .iter()
        .map(|g| {
            g.iter()
                .map(|r| p(r))
                .filter(|p| p.exists())
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
        })
        .filter(|g| !g.is_empty())
        .collect()
}

/// The incidents that stand at the end (read with SQL through `incidents_latest`).
fn standing(store: &Path) -> Vec<Slowdown> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(standing_incidents(store)).unwrap()
}

fn golden(name: &str) -> Vec<Slowdown> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("golden/{name}.json"));
    let r: Report = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut s = r.slowdowns;
    s.sort_by(|a, b| (&a.start, &a.slowdown_id).cmp(&(&b.start, &b.slowdown_id)));
    s
}

#[test]
fn final_streamed_incidents_equal_the_batch_report_for_every_scenario() {
    let mut failures = Vec::new();
    let mut revisions = 0u64;
    for dir in scenarios() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("store");
        let mut live = LiveAnalyzer::start(LiveOptions::new(store.clone())).unwrap();
        for paths in chunks(&dir) {
            let opts = IngestOptions::new(&store, paths, whyslow_ingest::Format::Auto);
            let s = ingest(&opts).unwrap();
            let commit = Committed {
                rows_written: s.total().written.total(),
                arrivals: None,
            };
            live.committed(&Store::open(&store).unwrap(), &commit);
        }
        live.finish();
        let summary = live.stop();
        revisions += summary.revisions;
        assert_eq!(summary.failed_analyses, 0, "{name}");
        let (got, want) = (standing(&store), golden(&name));
        if got != want {
            failures.push(format!(
                "{name}: streamed {:?}\n  batch {:?}",
                got.iter()
                    .map(|s| (
                        &s.kind,
                        &s.start,
                        s.lost_seconds,
                        s.causes.first().map(|c| &c.cause)
                    ))
                    .collect::<Vec<_>>(),
                want.iter()
                    .map(|s| (
                        &s.kind,
                        &s.start,
                        s.lost_seconds,
                        s.causes.first().map(|c| &c.cause)
                    ))
                    .collect::<Vec<_>>()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(revisions > 0);
}
