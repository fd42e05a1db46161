//! Report generation benchmark over an existing store: opens a session, runs the analysis
//! and renders the JSON report, printing the store's row counts, each stage's time and the
//! total.
//!
//! With `--live`, it analyzes as the live analyzer of `whyslow stream` does (one thread,
//! the metric scan's segment folds and the sessions' runtime, with its cache of Parquet
//! footers, kept between analyses) three times over the same
//! store: the first reads every segment, the next two reuse the folds, as after a commit
//! that added nothing to the metrics; each with its stages' times.
//!
//! `cargo run --release -p whyslow-analyzers --example report_bench -- STORE [--live]`

use std::time::Instant;

use whyslow_analyzers::analyze::{SegmentFolds, analyze_keeping};
use whyslow_analyzers::report::{self, Format};
use whyslow_analyzers::{DetectorConfig, Selection, analyze};
use whyslow_schemas::Table;

fn main() {
    let Some(store) = std::env::args().nth(1) else {
        eprintln!("usage: report_bench STORE");
        std::process::exit(2);
    };
    let store = std::path::PathBuf::from(store);
    let live = std::env::args().nth(2).as_deref() == Some("--live");
    let rows = whyslow_store::Store::open(&store)
        .map(|s| [Table::Events, Table::Metrics].map(|t| (t.name(), s.rows(t))));
    match rows {
        Ok(r) => println!("store {}: {:?}", store.display(), r),
        Err(e) => {
            eprintln!("cannot open {}: {e}", store.display());
            std::process::exit(1);
        }
    }
    if live {
        live_analyses(&store);
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let started = Instant::now();
    let ctx = rt
        .block_on(whyslow_queries::open_session(&store))
        .expect("a session");
    let opened = started.elapsed().as_secs_f64();
    let a = rt
        .block_on(analyze(
            &ctx,
            &Selection::default(),
            &DetectorConfig::default(),
        ))
        .expect("the analysis");
    let analyzed = started.elapsed().as_secs_f64();
    let r = report::build::build(&a, &store.display().to_string(), chrono::Utc::now());
    let json = report::render(&r, &a, Format::Json).expect("the JSON report");
    let total = started.elapsed().as_secs_f64();
    println!("open session: {opened:.2} s");
    for (stage, secs) in &a.timings {
        println!("  {stage:<44} {secs:>8.2} s");
    }
    println!(
        "analysis: {:.2} s; render: {:.2} s; total: {total:.2} s",
        analyzed - opened,
        total - analyzed
    );
    println!(
        "{} slowdowns, {} workloads, {} bytes of JSON",
        r.slowdowns.len(),
        r.workloads.len(),
        json.len()
    );
}

/// Three analyses as the live analyzer runs them, the segment folds kept between them.
fn live_analyses(store: &std::path::Path) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let mut folds = SegmentFolds::default();
    let sessions = std::sync::Arc::new(datafusion::execution::runtime_env::RuntimeEnv::default());
    for round in 1..=3 {
        let started = Instant::now();
        let opened = whyslow_store::Store::open(store).expect("the store");
        let ctx = rt
            .block_on(whyslow_queries::session_over_runtime(
                &opened,
                sessions.clone(),
            ))
            .expect("a session");
        let a = rt
            .block_on(analyze_keeping(
                &ctx,
                &Selection::default(),
                &DetectorConfig::default(),
                Some(&mut folds),
            ))
            .expect("the analysis");
        let took = started.elapsed().as_secs_f64();
        let scan = folds.last_scan();
        println!(
            "live analysis {round}: {took:.2} s ({} metric segments read, {} reused), {} slowdowns",
            scan.read,
            scan.reused,
            a.findings.len()
        );
        for (stage, secs) in &a.timings {
            println!("  {stage:<44} {secs:>8.2} s");
        }
    }
}
