//! Real data no one here wrote: the Alibaba PAI v2020 per-worker mini-batch times
//! (`fixtures/samples/cluster-traces/`, see its SOURCES.md) as the SDK records of two
//! synchronous jobs running side by side. Job 1's worker 6 straggles for ~130 iterations
//! in the middle of training; job 2 is steady (one worker always ~10% slower) and runs on
//! after job 1 ends. The report must find the straggler episode, name worker 6 as the
//! rank, count its lost time per elapsed step (records are sampled every 10 iterations),
//! and see neither a slowdown on job 2 nor a stall at either job's end.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::DateTime;
use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};
use whyslow_analyzers::report::Report;

/// The window's start: 2026-11-29T09:00:00Z.
const T0: f64 = 1_764_406_800.0;
/// The normalised mini-batch times (0–1000) as seconds.
const NORM_PER_SECOND: f64 = 500.0;

fn samples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/samples/cluster-traces")
}

/// iteration -> worker -> normalised mini-batch time.
fn read_trace(file: &str) -> BTreeMap<i64, BTreeMap<i64, f64>> {
    let text = std::fs::read_to_string(samples().join(file)).expect("the PAI sample");
    let mut out: BTreeMap<i64, BTreeMap<i64, f64>> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let (Ok(worker), Ok(iteration), Ok(norm)) = (
            f[1].parse::<i64>(),
            f[3].parse::<i64>(),
            f[4].parse::<f64>(),
        ) else {
            panic!("unexpected PAI line {line:?}");
        };
        out.entry(iteration).or_default().insert(worker, norm);
    }
    out
}

/// Envelope records of one synchronous job: at each sampled iteration every worker
/// reports the job's pace (the slowest worker's time) as `step_time_seconds` and its own
/// time as `compute_seconds`; the wall clock advances by the pace times the iterations
/// since the previous sample. Returns the records and the time of the last one.
fn job_records(name: &str, trace: &BTreeMap<i64, BTreeMap<i64, f64>>) -> (Vec<String>, f64) {
    let mut out = Vec::new();
    let mut t = T0;
    let mut prev: Option<i64> = None;
    for (&iteration, workers) in trace {
        let pace = workers.values().copied().fold(0.0, f64::max) / NORM_PER_SECOND;
        t += pace * (iteration - prev.unwrap_or(iteration - 1)) as f64;
        prev = Some(iteration);
        for (&w, &norm) in workers {
            for (metric, value) in [
                ("step_time_seconds", pace),
                ("compute_seconds", norm / NORM_PER_SECOND),
            ] {
                out.push(format!(
                    r#"{{"time":{t:.3},"layer":"framework","source":"sdk","metric":"{metric}","value":{value:.4},"namespace":"pai","workload":"{name}","run_id":"{name}-run","rank":{w},"step":{iteration},"node":"{name}-worker-{w}","device":"0"}}"#
                ));
            }
        }
    }
    (out, t)
}

fn secs(t: &str) -> f64 {
    DateTime::parse_from_rfc3339(t).map_or(f64::NAN, |d| d.timestamp_millis() as f64 / 1e3)
}

fn analyze(input: &Path) -> Report {
    let store = tempfile::tempdir().unwrap();
    ingest_dir(input, store.path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(analyze_store(store.path(), &Selection::default()))
        .unwrap()
        .0
}

#[test]
fn pai_straggler_found_steady_job_clean_and_job_ends_are_not_stalls() {
    let job1 = read_trace("alibaba-pai-v2020-minibatch-time-job1-straggler.csv");
    let job2 = read_trace("alibaba-pai-v2020-minibatch-time-job2.csv");
    let (mut lines, end1) = job_records("pai-job-1", &job1);
    let (lines2, end2) = job_records("pai-job-2", &job2);
    lines.extend(lines2);
    // Job 2 goes on for a long while after job 1 ends.
    assert!(end2 - end1 > 600.0, "{end1} {end2}");
    let dir = tempfile::tempdir().unwrap();
    let mut f = std::fs::File::create(dir.path().join("sdk.jsonl")).unwrap();
    for l in &lines {
        writeln!(f, "{l}").unwrap();
    }
    drop(f);
    let r = analyze(dir.path());
    let summary: Vec<String> = r
        .slowdowns
        .iter()
        .map(|s| {
            format!(
                "{} {} {}..{} lost {} ongoing {} verdict {}",
                s.workload.as_deref().unwrap_or("-"),
                s.kind,
                s.start,
                s.end,
                s.lost_seconds,
                s.ongoing,
                s.causes.first().map_or("-", |c| c.cause.as_str())
            )
        })
        .collect();
    // Exactly one slowdown: job 1's straggler.
    assert_eq!(r.slowdowns.len(), 1, "{summary:#?}");
    let s = &r.slowdowns[0];
    assert_eq!(s.workload.as_deref(), Some("pai-job-1"), "{summary:#?}");
    assert_eq!(s.kind, "straggler", "{summary:#?}");
    assert!(!s.ongoing, "{summary:#?}");
    let verdict = &s.causes[0];
    assert_eq!(verdict.cause, "framework.straggler_rank", "{summary:#?}");
    assert!(
        verdict.summary.contains("Rank 6") && s.nodes == ["pai-job-1-worker-6"],
        "{:?} {:?}",
        verdict.summary,
        s.nodes
    );
    // The episode: iterations ~1801..1941, about three minutes of wall time.
    let dur = secs(&s.end) - secs(&s.start);
    assert!((100.0..=300.0).contains(&dur), "{dur} s: {summary:#?}");
    // Lost time per elapsed step: worker 6's time beyond its slowest peer, summed over
    // every iteration of the episode (each record stands for the 10 since the last).
    let mut truth = 0.0;
    let mut prev = 0;
    for (&it, w) in &job1 {
        let own = w[&6];
        let peers = w
            .iter()
            .filter(|(k, _)| **k != 6)
            .map(|(_, v)| *v)
            .fold(0.0, f64::max);
        if (1801..=1941).contains(&it) {
            truth += ((own - peers) / NORM_PER_SECOND).max(0.0) * (it - prev) as f64;
        }
        prev = it;
    }
    let err = (s.lost_seconds - truth).abs() / truth;
    // The figures, for `-- --nocapture`.
    println!(
        "{summary:#?}\nepisode {dur} s; lost {} s against {truth:.1} s in the data",
        s.lost_seconds
    );
    assert!(err < 0.25, "lost {} against {truth}", s.lost_seconds);
}
