//! The `whyslow report` and `whyslow demo` commands as library calls: the binary only
//! parses flags and hands them here.

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::Utc;
use datafusion::prelude::SessionContext;

use crate::analyze::{Analysis, Selection, analyze};
use crate::report::{self, Format, Report};
use crate::symptoms::DetectorConfig;
use crate::{AnalyzeError, Result};

/// What `whyslow report` was asked for.
#[derive(Debug, Clone)]
pub struct ReportRequest {
    pub store: PathBuf,
    pub selection: Selection,
    pub format: Format,
    /// Write here instead of stdout.
    pub output: Option<PathBuf>,
    /// Save the result into the store's `slowdowns` and `causes` (the whole store only;
    /// written only when they changed). Otherwise the report only reads.
    pub persist: bool,
}

/// A SQL session over the store at `store` (tables and views registered).
pub(crate) async fn open(store: &Path) -> Result<SessionContext> {
    whyslow_queries::open_session(store)
        .await
        .map_err(|e| AnalyzeError::store(store, e))
}

/// Analyzes a store and builds its report (and the analysis, for the HTML timelines).
pub async fn analyze_store(store: &Path, selection: &Selection) -> Result<(Report, Analysis)> {
    let ctx = open(store).await?;
    let a = analyze(&ctx, selection, &DetectorConfig::default()).await?;
    let r = report::build::build(&a, &store.display().to_string(), Utc::now());
    Ok((r, a))
}

/// `whyslow report`.
pub async fn run_report(req: &ReportRequest) -> Result<()> {
    // A location that is no directory (a URL) is refused by the store when opened.
    if whyslow_store::local_root(&req.store).is_ok_and(|root| !root.exists()) {
        return Err(AnalyzeError::NoStore {
            path: req.store.display().to_string(),
        });
    }
    if req.persist && req.selection != Selection::default() {
        return Err(AnalyzeError::Usage(
            "--persist saves the analysis of the whole store: drop the selection \
             (--workload, --namespace, --run, --from, --to)"
                .into(),
        ));
    }
    let ctx = open(&req.store).await?;
    let a = analyze(&ctx, &req.selection, &DetectorConfig::default()).await?;
    let r = report::build::build(&a, &req.store.display().to_string(), Utc::now());
    let text = report::render(&r, &a, req.format)?;
    match &req.output {
        Some(path) => std::fs::write(path, text)?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    if req.persist {
        // A read-only store (a snapshot, a shared mount) still gets its report; only the
        // copy of the verdicts in its `slowdowns`/`causes` tables is not refreshed.
        match crate::replay::save_derived(&ctx, &req.store, &a).await {
            Err(AnalyzeError::ReadOnlyStore { path, source }) => eprintln!(
                "whyslow report: the store {path} is read-only, so its slowdowns and causes \
                 tables were not updated ({source})."
            ),
            other => {
                other?;
            }
        }
    }
    Ok(())
}

/// Writes the embedded seed scenario's files under `dir`.
pub fn write_seed(dir: &Path) -> Result<()> {
    for (rel, bytes) in whyslow_fixtures::seed_scenario() {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(path, bytes)?;
    }
    Ok(())
}

/// The inputs of a scenario directory, sorted: every entry but its answer key
/// (`truth.json`) and its `README.md`.
pub fn scenario_inputs(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let p = entry?.path();
        if !p
            .file_name()
            .is_some_and(|n| n == "truth.json" || n == "README.md")
        {
            paths.push(p);
        }
    }
    paths.sort();
    Ok(paths)
}

/// Ingests every file under `input` into the store at `store` (format detected per file).
pub fn ingest_dir(input: &Path, store: &Path) -> Result<()> {
    use whyslow_ingest::run::{IngestOptions, ingest};
    let paths = scenario_inputs(input)?
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let opts = IngestOptions::new(store, paths, whyslow_ingest::Format::Auto);
    ingest(&opts).map_err(|e| AnalyzeError::store(store, e))?;
    Ok(())
}

/// `whyslow demo`: the seed scenario ingested into a temporary store, its report as
/// Markdown on `out`.
pub async fn run_demo(out: &mut dyn Write) -> Result<()> {
    let tmp = tempfile::tempdir()?;
    let input = tmp.path().join("seed-preemption");
    let store = tmp.path().join("store");
    write_seed(&input)?;
    ingest_dir(&input, &store)?;
    let (r, _) = analyze_store(&store, &Selection::default()).await?;
    let mut r = r;
    r.store = "(temporary store of the bundled seed-preemption scenario)".into();
    writeln!(out, "{}", headline(&r))?;
    out.write_all(report::markdown::render(&r).as_bytes())?;
    Ok(())
}

/// One paragraph with the verdict of each slowdown, for the top of the demo.
pub fn headline(r: &Report) -> String {
    let mut lines = Vec::new();
    for s in &r.slowdowns {
        if let Some(c) = s.causes.first() {
            lines.push(format!(
                "> {} of {}/{}: **{}** — {} lost. {}",
                s.kind,
                s.namespace.as_deref().unwrap_or("-"),
                s.workload.as_deref().unwrap_or("-"),
                c.cause,
                report::markdown::human_seconds(s.lost_seconds),
                c.summary
            ));
        }
    }
    if lines.is_empty() {
        lines.push("> No slowdown found.".into());
    }
    lines.join("\n>\n") + "\n"
}
