//! Accuracy benchmark: generates every fixture scenario afresh with new seeds (not the
//! committed ones), ingests each into a temporary store, analyzes it and scores the report
//! against the scenario's truth. Prints detection recall, top-1 and top-3 accuracy per
//! cause family and overall, false positives on clean workloads and the median lost-time
//! error.
//!
//! `cargo run -p whyslow-analyzers --example accuracy -- [--seeds N] [--first-seed S] [SCENARIO...]`

use std::time::Instant;

use whyslow_analyzers::Selection;
use whyslow_analyzers::accuracy::{Outcome, Truth, score, tally};
use whyslow_analyzers::command::{analyze_store, ingest_dir};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut seeds = 5u64;
    let mut first = 1000u64;
    let mut only = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seeds" => seeds = it.next().and_then(|v| v.parse().ok()).unwrap_or(seeds),
            "--first-seed" => first = it.next().and_then(|v| v.parse().ok()).unwrap_or(first),
            other => only.push(other.to_string()),
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut outcomes: Vec<Outcome> = Vec::new();
    let mut false_positives = Vec::new();
    let mut misses = Vec::new();
    let mut clean_runs = 0;
    let started = Instant::now();
    for sc in whyslow_fixtures::scenarios() {
        if !only.is_empty() && !only.iter().any(|o| sc.name.contains(o.as_str())) {
            continue;
        }
        for seed in first..first + seeds {
            let tmp = tempfile::tempdir().expect("a temporary directory");
            let input = tmp.path().join("in");
            let spec = whyslow_fixtures::Spec {
                scenario: sc.name.to_string(),
                seed,
                size: whyslow_fixtures::Size::Small,
            };
            if let Err(e) = whyslow_fixtures::generate(&spec, &input) {
                eprintln!("{} seed {seed}: generation failed: {e}", sc.name);
                continue;
            }
            let truth: Truth =
                match std::fs::read(input.join("truth.json")).map(|b| serde_json::from_slice(&b)) {
                    Ok(Ok(t)) => t,
                    _ => {
                        eprintln!("{} seed {seed}: unreadable truth.json", sc.name);
                        continue;
                    }
                };
            let store = tmp.path().join("store");
            if let Err(e) = ingest_dir(&input, &store) {
                eprintln!("{} seed {seed}: ingest failed: {e}", sc.name);
                continue;
            }
            let report = match rt.block_on(analyze_store(&store, &Selection::default())) {
                Ok((r, _)) => r,
                Err(e) => {
                    eprintln!("{} seed {seed}: analysis failed: {e}", sc.name);
                    continue;
                }
            };
            let s = score(&report, &truth);
            if truth.incidents.is_empty() {
                clean_runs += 1;
                false_positives.extend(report.slowdowns.iter().map(|x| {
                    format!(
                        "{} seed {seed}: {} of {}",
                        sc.name,
                        x.kind,
                        x.workload.as_deref().unwrap_or("-")
                    )
                }));
            }
            false_positives.extend(
                s.false_positives
                    .iter()
                    .map(|f| format!("{} seed {seed}: {f}", sc.name)),
            );
            for o in &s.outcomes {
                if !o.top1 {
                    misses.push(format!(
                        "{} seed {seed}: {} -> {}",
                        sc.name,
                        o.cause,
                        if o.detected {
                            o.verdict.clone().unwrap_or_default()
                        } else {
                            "not detected".into()
                        }
                    ));
                }
            }
            outcomes.extend(s.outcomes);
        }
    }
    println!(
        "{:<40} {:>5} {:>7} {:>6} {:>6} {:>11}",
        "family", "n", "recall", "top1", "top3", "lost err p50"
    );
    for (family, t) in tally(&outcomes) {
        println!(
            "{:<40} {:>5} {:>7.3} {:>6.3} {:>6.3} {:>11}",
            family,
            t.incidents,
            t.recall(),
            t.top1 as f64 / t.incidents.max(1) as f64,
            t.top3 as f64 / t.incidents.max(1) as f64,
            t.median_lost_error()
                .map_or("-".to_string(), |e| format!("{:.1}%", 100.0 * e))
        );
    }
    println!(
        "clean scenario runs: {clean_runs}; false positives: {}",
        false_positives.len()
    );
    for f in &false_positives {
        println!("  FP {f}");
    }
    for m in &misses {
        println!("  MISS {m}");
    }
    println!("elapsed: {:.1} s", started.elapsed().as_secs_f64());
}
