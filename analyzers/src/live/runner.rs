//! The live analyzer of `whyslow stream`: after each committed micro-batch it analyzes
//! the recent window of the store on its own thread (commits that land meanwhile are
//! taken together), turns the result into incident revisions, appends them to the
//! `incidents` table and publishes them (Kafka, `--on-incident`, Alertmanager).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use chrono::Utc;
use datafusion::execution::runtime_env::RuntimeEnv;
use tracing::{debug, info, warn};
use whyslow_ingest::stream::{CommitObserver, Committed};
use whyslow_schemas::Table;
use whyslow_store::{Leadership, Store, StoreWriter};

use super::alertmanager::{Alertmanager, RESEND};
use super::hook::{HookCall, HookRunner};
use super::message::{Outgoing, incidents_batch};
use super::metrics::LiveMetrics;
use super::publisher::{Incident, IncidentPublisher};
use super::standing::published_incidents;
use super::tracker::{Published, Sighting, Tracker};
use crate::analyze::{SegmentFolds, Selection, analyze_keeping};
use crate::symptoms::DetectorConfig;
use crate::{AnalyzeError, Result};

/// How the live analyzer runs.
pub struct LiveOptions {
    pub store: PathBuf,
    /// How far back from the newest data each analysis looks.
    pub window: Duration,
    /// Where revisions are produced, if anywhere.
    pub publisher: Option<IncidentPublisher>,
    /// A command run with the JSON of each incident that opens or changes verdict.
    pub on_incident: Option<String>,
    /// How long the command may run.
    pub on_incident_timeout: Duration,
    /// Where incidents fire and resolve as alerts, if anywhere.
    pub alertmanager: Option<Alertmanager>,
    /// The analyzer's own metrics.
    pub metrics: LiveMetrics,
    pub detectors: DetectorConfig,
    /// The most of the wall time the analyzer spends analyzing (0 < share ≤ 1): after an
    /// analysis of `d` it rests `d × (1/share − 1)`, taking the commits that land
    /// meanwhile together. Back to back (share 1) the analyzer of a busy stream takes a
    /// core; a smaller share leaves more of it to ingest, for later verdicts (see
    /// [`DEFAULT_BUSY_SHARE`]).
    pub busy_share: f64,
    /// The most memory what is kept per segment between analyses may take (the metric
    /// scan's folds, the framework series' rows, the progress times, the serving counts),
    /// in bytes (estimated; 0: none kept, every analysis reads its whole window).
    pub fold_budget_bytes: usize,
    /// Threads the analyses run on: 1, the analyzer's own thread (its queries' partitions
    /// take turns on it); more run them at once, on cores taken from ingest.
    pub threads: usize,
}

/// The default [`LiveOptions::busy_share`]: analyses back to back. Measured on a
/// 1000-node fleet streamed at 15k records/s on 2 cores (`bench/results/2026-12-05-fleet.md`),
/// half the share halves the analyzer's CPU (378 → 196 s) for verdicts ~1.5 s later
/// (p50 4.3 → 5.7 s); past what ingest sustains it does not drain the backlog.
pub const DEFAULT_BUSY_SHARE: f64 = 1.0;

/// How long the analyzer rests after an analysis that took `took`.
fn rest_after(took: Duration, busy_share: f64) -> Duration {
    if !(busy_share > 0.0 && busy_share < 1.0) {
        return Duration::ZERO;
    }
    took.mul_f64(1.0 / busy_share - 1.0)
}

impl LiveOptions {
    /// Defaults: a 24 h window, nothing published but the `incidents` table.
    pub fn new(store: PathBuf) -> Self {
        LiveOptions {
            store,
            window: Duration::from_secs(24 * 3600),
            publisher: None,
            on_incident: None,
            on_incident_timeout: Duration::from_secs(60),
            alertmanager: None,
            metrics: LiveMetrics::default(),
            detectors: DetectorConfig::default(),
            busy_share: DEFAULT_BUSY_SHARE,
            fold_budget_bytes: crate::analyze::DEFAULT_FOLD_BUDGET_BYTES,
            threads: 1,
        }
    }
}

/// What the live analyzer did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveSummary {
    pub analyses: u64,
    /// Commits left to another worker's analyzer, which held the store's lead.
    pub deferred: u64,
    pub failed_analyses: u64,
    pub revisions: u64,
}

/// A commit observer that runs the analyzers on a thread of its own.
pub struct LiveAnalyzer {
    metrics: LiveMetrics,
    /// Each commit with the store as it left it.
    tx: Option<Sender<(Store, Committed)>>,
    thread: Option<JoinHandle<LiveSummary>>,
    summary: LiveSummary,
}

impl LiveAnalyzer {
    /// Starts the analyzer thread.
    pub fn start(opts: LiveOptions) -> Result<LiveAnalyzer> {
        let (tx, rx) = mpsc::channel();
        let metrics = opts.metrics.clone();
        let thread = std::thread::Builder::new()
            .name(ANALYZER_THREAD.into())
            .spawn(move || serve(opts, rx))
            .map_err(AnalyzeError::Thread)?;
        Ok(LiveAnalyzer {
            metrics,
            tx: Some(tx),
            thread: Some(thread),
            summary: LiveSummary::default(),
        })
    }

    /// Waits for the pending analyses, publishes the final state of every incident and
    /// stops; returns what was done.
    pub fn stop(&mut self) -> LiveSummary {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            match t.join() {
                Ok(s) => self.summary = s,
                Err(_) => warn!("The live analyzer thread panicked."),
            }
        }
        self.summary
    }
}

impl CommitObserver for LiveAnalyzer {
    fn committed(&mut self, store: &Store, commit: &Committed) {
        if let Some(tx) = &self.tx {
            // The thread only stops after `stop`, so sending cannot fail before it.
            let _ = tx.send((store.clone(), *commit));
        }
    }

    fn finish(&mut self) {
        self.stop();
    }

    fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        self.metrics.register(registry);
    }
}

impl Drop for LiveAnalyzer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The analyzer thread: one analysis per wake-up, however many commits it covers.
fn serve(mut opts: LiveOptions, rx: Receiver<(Store, Committed)>) -> LiveSummary {
    let mut summary = LiveSummary::default();
    let built = if opts.threads > 1 {
        // Its workers carry the analyzer thread's name, as the CPU they take is its.
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(opts.threads)
            .thread_name(ANALYZER_THREAD)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match built {
        Ok(r) => r,
        Err(e) => {
            warn!("The live analyzer cannot start a runtime: {e}; no incidents.");
            return summary;
        }
    };
    let mut hook = opts
        .on_incident
        .clone()
        .map(|c| HookRunner::start(c, opts.on_incident_timeout));
    // Only one analyzer per store publishes: the one holding `_live.lock` (a file lock in a
    // directory, released when its process ends; a lease in a bucket, renewed at every
    // analysis), so another worker's analyzer takes over at its next commit.
    let mut leadership: Option<Leadership> = None;
    let mut tracker = Tracker::new();
    // The metric scan's folds of the segments earlier analyses read, reused by the next
    // (`analyze/segment_folds.rs`): an analysis decodes only what was committed since.
    let mut folds = SegmentFolds::with_budget(opts.fold_budget_bytes);
    // One DataFusion runtime for every analysis: its cache keeps the footers and page
    // indexes of the segments read, which the next analyses read again.
    let sessions = Arc::new(RuntimeEnv::default());
    let mut alerts = opts.alertmanager.take();
    let mut rest_until = std::time::Instant::now();
    loop {
        let (mut store, first) = match rx.recv_timeout(RESEND) {
            Ok(c) => c,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                // No commit for a while: firing alerts are sent again all the same.
                if let Some(am) = alerts.as_mut()
                    && let Err(e) = runtime.block_on(am.resend_due(now_ns()))
                {
                    warn!("Alerts could not be sent again: {e}.");
                }
                continue;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        let mut earliest = first.arrivals.map(|a| a.0);
        let mut written = first.rows_written;
        let mut absorb = |newer: Store, more: Committed| {
            // The store as the latest commit left it (every earlier commit is in it).
            store = newer;
            written += more.rows_written;
            if let Some((lo, _)) = more.arrivals {
                earliest = Some(earliest.map_or(lo, |e| e.min(lo)));
            }
        };
        // Resting after the last analysis (see `LiveOptions::busy_share`), the commits
        // that land are taken together; the end of the stream ends the rest.
        while let Some(left) = rest_until.checked_duration_since(std::time::Instant::now()) {
            match rx.recv_timeout(left) {
                Ok((newer, more)) => absorb(newer, more),
                Err(_) => break,
            }
        }
        while let Ok((newer, more)) = rx.try_recv() {
            absorb(newer, more);
        }
        if written == 0 {
            continue; // only redelivered or duplicate rows: nothing new to analyze
        }
        if let Some(held) = leadership.as_mut() {
            match held.renew() {
                Ok(true) => {}
                Ok(false) => {
                    warn!(
                        "The live analyzer's lease on {LEAD_FILE} was taken over; another worker publishes now."
                    );
                    leadership = None;
                }
                Err(e) => warn!("The live analyzer could not renew {LEAD_FILE}: {e}."),
            }
        }
        if leadership.is_none() {
            match Leadership::take(&opts.store, LEAD_FILE, LEASE) {
                Ok(Some(lock)) => {
                    leadership = Some(lock);
                    tracker = resumed_tracker(&runtime, &opts);
                }
                Ok(None) => {
                    summary.deferred += 1;
                    continue; // another worker's analyzer publishes for this store
                }
                Err(e) => {
                    warn!("The live analyzer cannot take {LEAD_FILE}: {e}.");
                    continue;
                }
            }
        }
        summary.analyses += 1;
        let started = std::time::Instant::now();
        let analyzed = runtime.block_on(analyze_window(&opts, &store, &sessions, &mut folds));
        let took = started.elapsed();
        opts.metrics.analysis_seconds.observe(took.as_secs_f64());
        rest_until = std::time::Instant::now() + rest_after(took, opts.busy_share);
        let revisions = match analyzed {
            Ok(Some((sightings, from, truncated))) => tracker.observe(sightings, from, truncated),
            Ok(None) => Vec::new(),
            Err(e) => {
                summary.failed_analyses += 1;
                opts.metrics.failed_analyses.inc();
                warn!("A live analysis failed: {e}.");
                continue;
            }
        };
        let arrived = earliest.and_then(|ms| ms.checked_mul(1_000_000));
        let out = emit(&opts, hook.as_ref(), revisions, arrived);
        if let (Some(first), Some(arrived)) = (out.first(), arrived) {
            let lag = (first.published_ns - arrived) as f64 / 1e9;
            opts.metrics.analysis_lag_seconds.set(lag.max(0.0));
        }
        summary.revisions += out.len() as u64;
        alert(&runtime, alerts.as_mut(), &out);
    }
    if leadership.is_some() {
        let out = emit(&opts, hook.as_ref(), tracker.settle(), None);
        summary.revisions += out.len() as u64;
        alert(&runtime, alerts.as_mut(), &out);
    }
    if let Some(h) = hook.as_mut() {
        h.finish();
    }
    if let Some(p) = &opts.publisher {
        p.flush(Duration::from_secs(10));
    }
    info!(
        analyses = summary.analyses,
        revisions = summary.revisions,
        "Live analyzer stopped."
    );
    summary
}

/// The name of the analyzer's thread (and of its runtime's workers).
const ANALYZER_THREAD: &str = "live-analyzer";

/// The file whose lock (or, in a bucket, lease) makes an analyzer the one that publishes
/// for a store.
const LEAD_FILE: &str = "_live.lock";

/// How long a lease in a bucket lasts without renewal (an analysis renews it): a worker
/// that died unannounced is replaced after this.
const LEASE: Duration = Duration::from_secs(30);

/// A tracker that carries on from what is already in the log (a restart, or taking over
/// from another worker's analyzer).
fn resumed_tracker(runtime: &tokio::runtime::Runtime, opts: &LiveOptions) -> Tracker {
    match runtime.block_on(resume_point(opts)) {
        Ok(published) => {
            info!(
                incidents = published.len(),
                "Live analyzer leads; resuming from the log."
            );
            Tracker::resume(published)
        }
        Err(e) => {
            warn!(
                "The incidents already published could not be read ({e}); revisions restart at 1."
            );
            Tracker::new()
        }
    }
}

/// The incidents already published that the current window still covers.
async fn resume_point(opts: &LiveOptions) -> Result<Vec<Published>> {
    let store = Store::open(&opts.store).map_err(|e| AnalyzeError::store(&opts.store, e))?;
    if store.rows(Table::Incidents) == 0 {
        return Ok(Vec::new());
    }
    let from = window_of(&store, opts.window).map_or(i64::MIN, |w| w.from);
    published_incidents(&opts.store, from).await
}

/// Where the analyzed window of a store starts.
struct WindowStart {
    from: i64,
    /// The window starts after the first data (older data is left out).
    truncated: bool,
}

/// The last `window` of the store's raw data (placed from the segments' time
/// statistics); `None` when it holds no data yet.
fn window_of(store: &Store, window: Duration) -> Option<WindowStart> {
    let (first, last) = data_extent(store)?;
    let window_ns = i64::try_from(window.as_nanos()).unwrap_or(i64::MAX);
    let from = last.saturating_sub(window_ns).max(first);
    Some(WindowStart {
        from,
        truncated: from > first,
    })
}

type Window = (Vec<Sighting>, i64, bool);

/// Analyzes the last `opts.window` of data of `store` (the store as the stream worker's
/// commit left it); `None` when it holds no data yet.
async fn analyze_window(
    opts: &LiveOptions,
    store: &Store,
    sessions: &Arc<RuntimeEnv>,
    folds: &mut SegmentFolds,
) -> Result<Option<Window>> {
    let Some(WindowStart { from, truncated }) = window_of(store, opts.window) else {
        return Ok(None);
    };
    let opened = std::time::Instant::now();
    let ctx = whyslow_queries::session_over_runtime(store, sessions.clone())
        .await
        .map_err(|e| AnalyzeError::store(&opts.store, e))?;
    let opened = opened.elapsed().as_secs_f64();
    let selection = Selection {
        from_ns: truncated.then_some(from),
        ..Selection::default()
    };
    let analysis = analyze_keeping(&ctx, &selection, &opts.detectors, Some(folds)).await?;
    let scan = folds.last_scan();
    let series = folds.last_series_read();
    let kept = folds.kept_bytes();
    let [_, _, (_, progress_kept_bytes), (_, serving_kept_bytes)] = kept;
    opts.metrics.scanned(scan);
    opts.metrics.kept(&kept);
    let built = std::time::Instant::now();
    let report =
        crate::report::build::build(&analysis, &opts.store.display().to_string(), Utc::now());
    let built = built.elapsed().as_secs_f64();
    opts.metrics.staged(&analysis.timings);
    opts.metrics
        .staged(&[("open session", opened), ("build report", built)]);
    // Each report slowdown with its finding's extent, paired by slowdown id.
    let extents: std::collections::HashMap<&str, (i64, i64)> = analysis
        .findings
        .iter()
        .map(|f| {
            let extent = (f.symptom.start_ns, f.symptom.end_ns);
            (f.slowdown_id.as_str(), extent)
        })
        .collect();
    let sightings = report
        .slowdowns
        .into_iter()
        .filter_map(|s| {
            let (start_ns, end_ns) = *extents.get(s.slowdown_id.as_str())?;
            Some(Sighting {
                slowdown: s,
                start_ns,
                end_ns,
            })
        })
        .collect();
    debug!(
        from,
        truncated,
        segments_read = scan.read,
        segments_reused = scan.reused,
        segments_stale = scan.stale,
        folds_kept_bytes = scan.kept_bytes,
        series_segments_read = series.read,
        series_segments_reused = series.reused,
        series_kept_bytes = series.kept_bytes,
        progress_kept_bytes,
        serving_kept_bytes,
        "Live analysis done."
    );
    Ok(Some((sightings, from, truncated)))
}

/// The first and last time of the raw data, from the segments' statistics.
fn data_extent(store: &Store) -> Option<(i64, i64)> {
    let segs = [Table::Events, Table::Metrics]
        .into_iter()
        .flat_map(|t| store.segments(t));
    let mut extent: Option<(i64, i64)> = None;
    for s in segs {
        if let (Some(lo), Some(hi)) = (s.min_time_ns, s.max_time_ns) {
            extent = Some(extent.map_or((lo, hi), |(a, b)| (a.min(lo), b.max(hi))));
        }
    }
    extent
}

/// Appends the revisions to the log, then publishes them; returns how many went out.
fn now_ns() -> i64 {
    Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// Fires and resolves the revisions' alerts; a failure is logged, the alerts that stay
/// firing are sent again at the next resend.
fn alert(runtime: &tokio::runtime::Runtime, am: Option<&mut Alertmanager>, out: &[Outgoing]) {
    if let Some(am) = am
        && let Err(e) = runtime.block_on(am.send(out, now_ns()))
    {
        warn!("Incidents could not be sent to Alertmanager: {e}.");
    }
}

/// Appends the revisions to the `incidents` table and publishes them (Kafka, the hook);
/// returns what went out.
fn emit(
    opts: &LiveOptions,
    hook: Option<&HookRunner>,
    revisions: Vec<super::tracker::Revision>,
    arrived_ns: Option<i64>,
) -> Vec<Outgoing> {
    if revisions.is_empty() {
        return Vec::new();
    }
    let now = now_ns();
    let mut out = Vec::with_capacity(revisions.len());
    for r in revisions {
        match Outgoing::new(r, now, arrived_ns) {
            Ok(o) => out.push(o),
            Err(e) => warn!("An incident could not be serialized: {e}."),
        }
    }
    if let Err(e) = append(opts, &out) {
        warn!("Incidents could not be appended to the log: {e}.");
    }
    for o in &out {
        let r = &o.revision;
        opts.metrics.published(r.status.as_str());
        info!(
            incident = %r.incident_id,
            revision = r.revision,
            status = r.status.as_str(),
            cause = r.slowdown.causes.first().map_or("", |c| c.cause.as_str()),
            "Incident."
        );
        if let Some(p) = &opts.publisher {
            p.publish(&Incident {
                key: r.incident_id.clone(),
                json: o.json.clone(),
            });
        }
        let opened = r.status == super::tracker::Status::Opened;
        if let Some(h) = hook
            && (opened || (r.verdict_changed && r.status != super::tracker::Status::Retracted))
        {
            h.call(HookCall {
                incident_id: r.incident_id.clone(),
                status: r.status.as_str().to_string(),
                cause: r
                    .slowdown
                    .causes
                    .first()
                    .map_or_else(String::new, |c| c.cause.clone()),
                json: o.json.clone(),
            });
        }
    }
    out
}

fn append(opts: &LiveOptions, out: &[Outgoing]) -> Result<()> {
    let err = |e| AnalyzeError::store(&opts.store, e);
    let batch = incidents_batch(out)?;
    let mut w = StoreWriter::open_waiting(&opts.store, Duration::from_secs(120)).map_err(err)?;
    w.append(Table::Incidents, batch).map_err(err)?;
    w.commit(&[]).map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_analyzer_rests_so_that_analyses_take_their_share_of_the_time() {
        let took = Duration::from_millis(600);
        assert_eq!(rest_after(took, 0.5), took);
        assert_eq!(rest_after(took, 0.25), Duration::from_millis(1800));
        // Back to back, and shares that make no sense, rest not at all.
        for share in [1.0, 0.0, -1.0, f64::NAN, 2.0] {
            assert_eq!(rest_after(took, share), Duration::ZERO, "{share}");
        }
    }
}
