//! Streaming and batch agree: every committed fixture scenario is ingested in several
//! commits with the live analyzer observing them, and the incidents that stand at the end
//! (the latest revision of each, retractions dropped, read back from the `incidents`
//! table) must be exactly the slowdowns of the batch report (the goldens that
//! `tests/scenarios.rs` checks `whyslow report` against).

use std::path::{Path, PathBuf};

use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions, standing_incidents};
use whyslow_analyzers::report::{Report, Slowdown};
use whyslow_ingest::run::{IngestOptions, ingest};
use whyslow_ingest::stream::{CommitObserver, Committed};
use whyslow_store::Store;

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
        &["dcgm", "kernel", "serving"],
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
                took: Default::default(),
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
            // Where the outlines agree, the first slowdown that differs in full.
            if let Some((g, w)) = got.iter().zip(&want).find(|(g, w)| g != w) {
                failures.push(format!(
                    "  first difference:\n  streamed {g:?}\n  batch    {w:?}"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(revisions > 0);
}

/// Every revision in the store, as (incident, revision) pairs.
fn revisions(store: &Path) -> Vec<(String, i64)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        use arrow::array::AsArray;
        use arrow::datatypes::Int64Type;
        let ctx = whyslow_queries::open_session(store).await.unwrap();
        let batches = ctx
            .sql("SELECT incident_id, revision FROM incidents ORDER BY incident_id, revision")
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let mut out = Vec::new();
        for b in &batches {
            // The store's strings come as views.
            let id = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Utf8).unwrap();
            let id = id.as_string::<i32>();
            let rev = b.column(1).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                out.push((id.value(i).to_string(), rev.value(i)));
            }
        }
        out
    })
}

#[test]
fn a_restarted_analyzer_carries_on_from_the_log() {
    let dir = whyslow_fixtures::committed_scenarios_dir().join("seed-preemption");
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let chunks = chunks(&dir);
    let (first, last) = chunks.split_at(chunks.len() - 1);
    let run = |paths: &[Vec<String>]| {
        let mut live = LiveAnalyzer::start(LiveOptions::new(store.clone())).unwrap();
        for p in paths {
            let opts = IngestOptions::new(&store, p.clone(), whyslow_ingest::Format::Auto);
            let s = ingest(&opts).unwrap();
            let commit = Committed {
                rows_written: s.total().written.total().max(1),
                arrivals: None,
                took: Default::default(),
            };
            live.committed(&Store::open(&store).unwrap(), &commit);
        }
        live.stop()
    };
    run(first);
    let before = revisions(&store);
    assert!(!before.is_empty());
    // A restart with no new data publishes nothing: the same incidents, the same state.
    run(&[]);
    let mut again = LiveAnalyzer::start(LiveOptions::new(store.clone())).unwrap();
    again.committed(
        &Store::open(&store).unwrap(),
        &Committed {
            rows_written: 1,
            arrivals: None,
            took: Default::default(),
        },
    );
    again.stop();
    assert_eq!(
        revisions(&store),
        before,
        "nothing republished after a restart"
    );
    // New data after a restart: revisions continue per incident, never restart at 1.
    run(last);
    let after = revisions(&store);
    let mut seen: std::collections::BTreeMap<&str, i64> = Default::default();
    for (id, rev) in &after {
        let prev = seen.insert(id, *rev).unwrap_or(0);
        assert_eq!(*rev, prev + 1, "{id}: revisions {after:?}");
    }
    assert_eq!(standing(&store), golden("seed-preemption"));
}

#[test]
fn one_analyzer_per_store_publishes_and_another_takes_over() {
    let dir = whyslow_fixtures::committed_scenarios_dir().join("seed-preemption");
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("store");
    let chunks = chunks(&dir);
    let commit = Committed {
        rows_written: 1,
        arrivals: None,
        took: Default::default(),
    };
    let ingest_chunk = |paths: &Vec<String>| {
        ingest(&IngestOptions::new(
            &store,
            paths.clone(),
            whyslow_ingest::Format::Auto,
        ))
        .unwrap();
    };
    // Two workers' analyzers on one store: the first to analyze leads, the other defers.
    let mut a = LiveAnalyzer::start(LiveOptions::new(store.clone())).unwrap();
    let mut b = LiveAnalyzer::start(LiveOptions::new(store.clone())).unwrap();
    ingest_chunk(&chunks[0]);
    a.committed(&Store::open(&store).unwrap(), &commit);
    std::thread::sleep(std::time::Duration::from_millis(500));
    for c in &chunks[1..chunks.len() - 1] {
        ingest_chunk(c);
        b.committed(&Store::open(&store).unwrap(), &commit);
        a.committed(&Store::open(&store).unwrap(), &commit);
    }
    // The leader stops; the other takes over at its next commit and carries on.
    let sa = a.stop();
    ingest_chunk(chunks.last().unwrap());
    b.committed(&Store::open(&store).unwrap(), &commit);
    let sb = b.stop();
    assert!(
        sa.analyses > 0 && sb.deferred > 0 && sb.analyses > 0,
        "{sa:?} {sb:?}"
    );
    let all = revisions(&store);
    let mut seen: std::collections::BTreeMap<&str, i64> = Default::default();
    for (id, rev) in &all {
        let prev = seen.insert(id, *rev).unwrap_or(0);
        assert_eq!(*rev, prev + 1, "{id}: one sequence of revisions, {all:?}");
    }
    assert_eq!(standing(&store), golden("seed-preemption"));
}
