//! Every committed fixture scenario (`fixtures/scenarios/*`) ingested into a fresh store
//! and analyzed: the reports must equal the goldens in `analyzers/golden/` (JSON and
//! Markdown; `UPDATE_GOLDEN=1` rewrites them), each truth incident must be found with its
//! cause as the verdict, and the seed scenario's verdict is the preemption.

use std::path::{Path, PathBuf};

use whyslow_analyzers::Selection;
use whyslow_analyzers::accuracy::{Truth, score};
use whyslow_analyzers::command::{analyze_store, ingest_dir};
use whyslow_analyzers::report::{self, Format, Report};

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

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("golden")
}

fn report_of(dir: &Path) -> (Report, String, String) {
    let tmp = tempfile::tempdir().unwrap();
    ingest_dir(dir, tmp.path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (mut r, a) = rt
        .block_on(analyze_store(tmp.path(), &Selection::default()))
        .unwrap();
    let name = dir.file_name().unwrap().to_string_lossy().to_string();
    r.generated_at = "1970-01-01T00:00:00Z".into();
    r.store = name;
    let json = report::render(&r, &a, Format::Json).unwrap();
    let md = report::render(&r, &a, Format::Markdown).unwrap();
    (r, json, md)
}

/// The truth problems of one report, as sentences.
fn problems(r: &Report, truth: &Truth) -> Vec<String> {
    let sc = score(r, truth);
    let mut out = Vec::new();
    for o in &sc.outcomes {
        if !o.detected {
            out.push(format!("missed {}", o.cause));
            continue;
        }
        if !o.top1 {
            out.push(format!(
                "verdict {}, truth {}",
                o.verdict.as_deref().unwrap_or("-"),
                o.cause
            ));
        }
        if !o.kind_right {
            out.push(format!("{}: wrong slowdown kind", o.cause));
        }
        if o.lost_error.is_some_and(|e| e > 0.10) {
            out.push(format!(
                "{}: lost time off by {:.0}%",
                o.cause,
                100.0 * o.lost_error.unwrap_or(0.0)
            ));
        }
    }
    out.extend(
        sc.false_positives
            .iter()
            .map(|f| format!("false positive: {f}")),
    );
    out
}

#[test]
fn committed_scenarios_match_goldens_and_truth() {
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let only = std::env::var("SCENARIO").ok();
    std::fs::create_dir_all(golden_dir()).unwrap();
    let mut failures = Vec::new();
    let mut truth_problems = Vec::new();
    for dir in scenarios() {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let (r, json, md) = report_of(&dir);
        let truth: Truth =
            serde_json::from_slice(&std::fs::read(dir.join("truth.json")).unwrap()).unwrap();
        for p in problems(&r, &truth) {
            truth_problems.push(format!("{name}: {p}"));
        }
        for (ext, text) in [("json", &json), ("md", &md)] {
            let path = golden_dir().join(format!("{name}.{ext}"));
            if update {
                std::fs::write(&path, text).unwrap();
            } else {
                match std::fs::read_to_string(&path) {
                    Ok(g) if g == *text => {}
                    Ok(_) => failures.push(format!(
                        "{} differs (UPDATE_GOLDEN=1 rewrites)",
                        path.display()
                    )),
                    Err(_) => failures.push(format!(
                        "{} missing (UPDATE_GOLDEN=1 writes)",
                        path.display()
                    )),
                }
            }
        }
    }
    println!("truth check: {} problem(s)", truth_problems.len());
    for p in &truth_problems {
        println!("  {p}");
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn seed_verdict_is_preemption_by_the_inference_deployment() {
    let dir = whyslow_fixtures::committed_scenarios_dir().join("seed-preemption");
    let (r, _, _) = report_of(&dir);
    let stall = r
        .slowdowns
        .iter()
        .find(|s| s.workload.as_deref() == Some("finetune-gemma-l4") && s.kind == "stall")
        .expect("the fine-tuning Job's stall");
    let v = &stall.causes[0];
    assert_eq!(v.cause, "orchestrator.preemption");
    assert!(v.summary.contains("tgi-gemma-deployment"), "{}", v.summary);
    assert!(
        v.summary.contains("priority 30") && v.summary.contains("priority 20"),
        "{}",
        v.summary
    );
    assert!(v.summary.contains("cluster-queue"), "{}", v.summary);
    // Told from the other side too: the replica the preemption made room for did not wait
    // (and the inference Deployment has no slowdown, below).
    assert!(
        v.summary.contains("(that pod did not wait)"),
        "{}",
        v.summary
    );
    assert!(
        (stall.lost_seconds - 1754.6).abs() / 1754.6 < 0.02,
        "{}",
        stall.lost_seconds
    );
    assert!(
        r.slowdowns
            .iter()
            .all(|s| s.workload.as_deref() != Some("tgi-gemma-deployment"))
    );
}

#[test]
fn same_store_same_report() {
    let dir = whyslow_fixtures::committed_scenarios_dir().join("seed-preemption");
    let (_, a, ma) = report_of(&dir);
    let (_, b, mb) = report_of(&dir);
    assert_eq!(a, b);
    assert_eq!(ma, mb);
}
