//! The analysis of a store (or a window of it): read the series and marks with SQL, detect
//! symptoms, run the cause rules, attribute and settle. The result feeds the report and
//! the derived tables. Everything is sorted so that the same data gives the same result.
//!
//! The window is explicit (`from`, `to`), so a streaming worker can run the same analysis
//! incrementally over a recent window after each committed batch.

mod bucket_means;
mod metric_scan;
pub mod profiles;
mod read;
mod second_copies;
mod segment_folds;
mod segment_rows;
mod serving;
mod utilization;
mod workload_names;

use std::collections::{BTreeMap, BTreeSet};

use datafusion::prelude::SessionContext;
use whyslow_schemas::Table;
use xxhash_rust::xxh3::xxh3_64;

use crate::Result;
use crate::attribution::{self, Attributed, EventInfo};
use crate::causes::{self, Candidate, ScopeRow, SymptomRow};
use crate::settle::{explain_latency_by_shortfall, settle_kinds};
use crate::sql::{self, ts_param};
use crate::symptoms::gpu_straggler;
use crate::symptoms::pace::{PacePair, detect_regressions};
use crate::symptoms::pending;
use crate::symptoms::restore::startup_stall;
use crate::symptoms::run::{RunEnd, detect_run};
use crate::symptoms::save_cadence;
use crate::symptoms::token_rate;
use crate::symptoms::{
    DetectorConfig, Symptom, SymptomKind, WorkloadKey, WorkloadName, throughput,
};
use read::*;

pub use metric_scan::Scanned;
pub use read::{read_framework_series, scan_metrics, scan_metrics_keeping};
pub use segment_folds::{
    DEFAULT_BUDGET_BYTES as DEFAULT_FOLD_BUDGET_BYTES, LastScan, SegmentFolds,
};
pub use segment_rows::LastRead;

pub use crate::symptoms::run::{Marks, RunSeries};

/// How far before a symptom's onset the rules look for its cause.
pub const LOOKBACK_NS: i64 = 15 * 60 * 1_000_000_000;
/// The buckets of the GPU activity series (folded from the samples by `analyze/metric_scan.rs`).
const ACTIVITY_BUCKET_NS: i64 = 60 * 1_000_000_000;

/// The most `events` rows the analysis decodes once and keeps in memory. A day of a
/// 1000-node fleet logs ~20k, ~0.7 KB each in memory (pyarrow's count over the `full`
/// bench store): 250k rows are ~175 MB. A larger table is read from its segments by each
/// query, pruned by time, as before.
const EVENTS_IN_MEMORY_ROWS: u64 = 250_000;

/// How far either side of a latency regression the serving rules read its serving samples
/// (`causes/serving_around.sql`): the analysis keeps them that far around its window.
pub(crate) const SERVING_AROUND_NS: i64 = 60 * 60 * 1_000_000_000;

/// The bins the serving samples bin raw request samples into (`state/serving_samples.sql`).
const SERVING_BIN_NS: i64 = 60 * 1_000_000_000;

/// State views that several symptom queries and cause rules read (some more than once
/// each): the analysis computes each once, as a table of its rows in its session. (The
/// workloads' members are read by the placements, the members' series and every
/// symptom's events: one scan of the events instead of three.)
const MATERIALIZED_VIEWS: &[&str] = &["checkpoint_ops", "workload_members"];

/// What to analyze: workloads and a time window (all optional).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
    /// Window start, ns since the epoch; default: the first data.
    pub from_ns: Option<i64>,
    /// Window end; default: the last data.
    pub to_ns: Option<i64>,
}

impl Selection {
    fn wants(&self, key: &WorkloadKey) -> bool {
        let ok = |want: &Option<String>, have: &Option<String>| want.is_none() || want == have;
        // A symptom or workload that names no run matches any run asked for.
        let run = self.run_id.is_none() || key.run_id.is_none() || self.run_id == key.run_id;
        ok(&self.namespace, &key.namespace) && ok(&self.workload, &key.workload) && run
    }
}

/// One slowdown with everything the report says about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub slowdown_id: String,
    pub symptom: Symptom,
    pub nodes: Vec<String>,
    pub pods: Vec<String>,
    /// Ranked; the first is the verdict.
    pub causes: Vec<Attributed>,
    /// Every cited event, for timelines.
    pub marks: Vec<EventInfo>,
    /// The profiles captured during it, in time order (`analyze/profiles.rs`).
    pub profiles: Vec<profiles::ProfileRef>,
}

/// A workload seen in the window.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadExtent {
    pub key: WorkloadKey,
    /// The runs its framework series name, sorted.
    pub run_ids: Vec<String>,
    pub first_ns: i64,
    pub last_ns: i64,
    /// The last record that is not an announcement of the workload's end.
    pub alive_ns: Option<i64>,
    /// The last warning or error about it.
    pub warned_ns: Option<i64>,
}

/// The result of one analysis.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub from_ns: i64,
    pub to_ns: i64,
    pub workloads: Vec<WorkloadExtent>,
    pub findings: Vec<Finding>,
    /// Seconds each stage took (for benchmarks; not part of any output).
    pub timings: Vec<(&'static str, f64)>,
}

/// Runs the whole analysis on a session that has `events` and `metrics` registered.
pub async fn analyze(
    ctx: &SessionContext,
    sel: &Selection,
    cfg: &DetectorConfig,
) -> Result<Analysis> {
    analyze_keeping(ctx, sel, cfg, None).await
}

/// [`analyze`], where the scan of the metric samples reuses the folds of the segments
/// an earlier analysis kept in `kept` and keeps this one's there (the live analyzer's,
/// between commits: `analyze/segment_folds.rs`). The result is the same as
/// [`analyze`]'s.
pub async fn analyze_keeping(
    ctx: &SessionContext,
    sel: &Selection,
    cfg: &DetectorConfig,
    mut kept: Option<&mut SegmentFolds>,
) -> Result<Analysis> {
    let mut clock = Clock::new();
    let from = sel.from_ns.unwrap_or(0);
    let to = sel.to_ns.unwrap_or(i64::MAX / 2);
    let params = [("from", ts_param(from)), ("to", ts_param(to))];

    // Most queries below read `events`, several of them more than once: decoded once.
    whyslow_queries::segment_table::keep_in_memory(ctx, Table::Events, EVENTS_IN_MEMORY_ROWS)
        .await
        .map_err(|source| crate::AnalyzeError::Segments { source })?;
    clock.lap("events in memory");
    // The live analyzer keeps the workloads' progress times per segment: the view
    // `checkpoint_ops` reads those instead of every framework sample of the store.
    if let Some(k) = kept.as_deref_mut()
        && let Some((schema, rows)) = k.progress_rows(ctx).await?
    {
        // (Once per time, as the view gives them: a time may recur in two segments' rows.)
        let err = |source| crate::AnalyzeError::Sql {
            file: sql::symptoms::PROGRESS_TIMES.path,
            source,
        };
        let rows = match rows.is_empty() {
            true => rows,
            false => {
                let df = ctx.read_batches(rows).and_then(|df| df.distinct());
                df.map_err(err)?.collect().await.map_err(err)?
            }
        };
        sql::replace_table(ctx, "workload_progress", schema, rows)?;
        // (A view is bound to what it read when it was defined: defined again.)
        let view = sql::state::CHECKPOINT_OPS;
        whyslow_queries::session::register_sql(ctx, view.text()?)
            .await
            .map_err(|e| crate::AnalyzeError::Sql {
                file: view.path,
                source: datafusion::error::DataFusionError::External(Box::new(e)),
            })?;
        clock.lap("progress times");
    }
    // Where the segments around the window hold no serving sample, the serving samples
    // are none: the side task need not read them (the binned minutes of the widened
    // window lie within a minute of it).
    let near = (
        from.saturating_sub(SERVING_AROUND_NS + SERVING_BIN_NS),
        to.saturating_add(SERVING_AROUND_NS + SERVING_BIN_NS),
    );
    let no_serving = match kept.as_deref_mut() {
        Some(k) => {
            let samples = k.serving_samples_in(ctx, near).await?;
            clock.lap("serving presence");
            samples == Some(0)
        }
        None => false,
    };
    // Two branches at once: the tables read by name below that need no scan of the samples
    // (the serving samples, the checkpoint operations) are built on a task of their own
    // while the framework series and the scan run, and take the cores those leave idle
    // (the series' single-partition sort, the scan's waits for batches).
    // (A JoinSet: were the analysis to stop early, dropping it stops that task too.)
    let mut side = tokio::task::JoinSet::new();
    side.spawn(side_tables(ctx.clone(), from, to, no_serving));
    // The window below is the data inside these bounds, so what is read with them is what
    // the window holds. The framework series name the straggler candidates (the workloads
    // without per-rank compute times) whose GPU activity the one scan of the samples folds,
    // with every series' first and last sample (for the extents and the placements) and
    // the utilization.
    let series = read_framework_series(ctx, &params, kept.as_deref_mut()).await?;
    clock.lap("framework series");
    let scanned = scan_metrics_keeping(ctx, &params, &straggler_candidates(&series), kept).await?;
    sql::replace_table(
        ctx,
        "series_extents",
        scanned.extents.schema(),
        vec![scanned.extents],
    )?;
    clock.lap("metric scan");
    let side = match side.join_next().await {
        Some(Ok(done)) => done?,
        // A panic on that task is a bug: it goes on here as it would have on this task.
        Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Some(Err(e)) => {
            return Err(crate::AnalyzeError::Sql {
                file: SIDE_TABLES,
                source: datafusion::error::DataFusionError::ExecutionJoin(Box::new(e)),
            });
        }
        // The set holds the one task spawned above until it is joined here.
        None => Vec::new(),
    };
    clock.lap("serving samples and checkpoint operations (after the scan)");
    clock.laps.extend(side);
    let extents = read_extents(ctx, &params).await?;
    clock.lap("extent");
    let (Some(data_from), Some(data_to)) = (
        extents.iter().map(|e| e.first_ns).min(),
        extents.iter().map(|e| e.last_ns).max(),
    ) else {
        return Ok(Analysis {
            from_ns: from,
            to_ns: sel.to_ns.unwrap_or(from),
            workloads: Vec::new(),
            findings: Vec::new(),
            timings: Vec::new(),
        });
    };
    let window = (
        sel.from_ns.unwrap_or(data_from),
        sel.to_ns.unwrap_or(data_to),
    );
    let horizon = data_to.min(window.1);
    let params = [("from", ts_param(window.0)), ("to", ts_param(window.1))];

    let pauses = read_pauses(ctx, &params).await?;
    let lifecycle = read_lifecycle(ctx, &params).await?;
    clock.lap("pauses and lifecycle");
    let util = scanned.utilization;
    let placements = read_placements(ctx, &params).await?;
    let members = read_members(ctx).await?;
    let names = workload_names::WorkloadNames::new(&members);
    clock.lap("placements");
    let activity = scanned.activity;
    let saves = read_saves(ctx, &params).await?;
    clock.lap("saves");
    let serving_workloads = serving::read_serving_workloads(ctx, &params).await?;
    let serving = serving::read_serving_series(ctx, &params).await?;
    clock.lap("serving series");

    let mut found: Vec<Symptom> = Vec::new();
    let mut paces: BTreeMap<WorkloadName, Vec<PacePair>> = BTreeMap::new();
    let mut with_sdk: BTreeSet<(Option<String>, Option<String>)> = BTreeSet::new();
    // Each run's detectors on their own (in parallel: a fleet has hundreds of runs), their
    // symptoms and paces then taken in the series' order.
    let mut runs = Vec::new();
    for (key, run) in &series {
        with_sdk.insert((key.namespace.clone(), key.workload.clone()));
        // A trainer log's copy of what a run's SDK series tell is not a second opinion.
        if second_copies::repeats_another(key, &series, &members) {
            continue;
        }
        let wk = (key.namespace.clone(), key.workload.clone());
        let mut finished: Vec<i64> = lifecycle.get(&wk).map_or(Vec::new(), |l| {
            l.iter()
                .filter(|e| is_end(&e.kind))
                .map(|e| e.time_ns)
                .collect()
        });
        finished.sort_unstable();
        let extent = extents
            .iter()
            .find(|e| e.key.namespace == key.namespace && e.key.workload == key.workload);
        let end = RunEnd {
            finished,
            last_alive_ns: extent.and_then(|e| e.alive_ns),
            last_warning_ns: extent.and_then(|e| e.warned_ns),
            superseded_ns: superseded(key, &series),
        };
        runs.push((key, run, wk, end));
    }
    let none = Marks::default();
    let detected = in_parallel(&runs, |(key, run, wk, end)| {
        let marks = pauses.get(wk).unwrap_or(&none);
        let mut symptoms = startup_stall(key, run, marks, &end.finished, cfg);
        let mut pace = Vec::new();
        symptoms.extend(detect_run(key, run, marks, &mut pace, horizon, end, cfg));
        vec![(symptoms, pace)]
    });
    // (One result per run, in the runs' order.)
    for ((_, _, wk, _), (symptoms, pace)) in runs.iter().zip(detected) {
        found.extend(symptoms);
        paces.entry(wk.clone()).or_default().extend(pace);
    }
    clock.lap("detect: runs");
    // Regressions: the wall-clock pace of each workload across its runs (a run started
    // with a new configuration is compared with the previous one), in buckets long enough
    // to hold its regular saves.
    for (wk, pairs) in &mut paces {
        pairs.sort_by(|a, b| {
            (a.time_ns, &a.run_id, a.start_ns)
                .cmp(&(b.time_ns, &b.run_id, b.start_ns))
                .then(a.seconds.total_cmp(&b.seconds))
        });
        let saves = pauses
            .get(wk)
            .map(|m| m.save_secs.clone())
            .unwrap_or_default();
        found.extend(detect_regressions(wk, pairs, &saves, horizon, cfg));
    }
    clock.lap("detect: regressions");
    // Token throughput that fell at an unchanged pace (each step doing less work).
    for (key, run, _, _) in &runs {
        if let Some(ranks) = run.metrics.get(token_rate::METRIC) {
            for d in token_rate::detect(key, ranks, cfg, horizon) {
                if !token_rate::shown_by_pace(&d, &found) {
                    found.push(d);
                }
            }
        }
    }
    clock.lap("detect: token rate");
    // Saves more often than configured, where no pace change already shows them.
    for (wk, list) in &saves {
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        for s in save_cadence::detect(&key, list, cfg) {
            let shown = found.iter().any(|o| {
                matches!(
                    o.kind,
                    SymptomKind::Regression | SymptomKind::ThroughputDrop
                ) && o.key.namespace == s.key.namespace
                    && o.key.workload == s.key.workload
                    && 2 * (o.end_ns.min(s.end_ns) - o.start_ns.max(s.start_ns))
                        >= (o.end_ns - o.start_ns).min(s.end_ns - s.start_ns)
            });
            if !shown {
                found.push(s);
            }
        }
    }
    clock.lap("detect: saves");
    for (wk, samples) in &util {
        // A serving workload's utilization follows its traffic: its latency says how it
        // does.
        if with_sdk.contains(wk) || serving_workloads.contains(wk) {
            continue;
        }
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        for (metric, (interval_ns, buckets)) in samples {
            let s = throughput::workload_series(*interval_ns, buckets);
            found.extend(throughput::detect(&key, metric, &s, cfg, horizon));
        }
    }
    clock.lap("detect: throughput");
    // Stragglers of jobs without per-rank compute times, from their GPUs' SM activity
    // (read for those jobs only). Power only where no profiling field is collected: it has
    // an idle floor, so it moves less than activity, but a waiting GPU draws less.
    let jobs: Vec<(WorkloadKey, &'static str, &[gpu_straggler::GpuSeries])> = activity
        .iter()
        .filter_map(|(wk, metrics)| {
            let (metric, gpus) = ["sm_active", "tensor_active", "power_watts"]
                .into_iter()
                .find_map(|m| metrics.get(m).map(|g| (m, g)))?;
            let key = WorkloadKey {
                namespace: wk.0.clone(),
                workload: wk.1.clone(),
                run_id: None,
            };
            Some((key, metric, gpus.as_slice()))
        })
        .collect();
    found.extend(in_parallel(&jobs, |(key, metric, gpus)| {
        gpu_straggler::detect(key, gpus, ACTIVITY_BUCKET_NS, metric, cfg, horizon)
    }));
    clock.lap("detect: gpu stragglers");
    for (wk, events) in &lifecycle {
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        // A serving workload that waits for a replica runs short of capacity, from the
        // loss of the replica it replaces; a job's lost pods are its stall's.
        let serves = serving_workloads.contains(wk);
        let waits = if serves {
            pending::detect_shortfalls(&key, events, cfg, horizon)
        } else {
            let events: Vec<pending::Lifecycle> = events
                .iter()
                .filter(|e| !pending::serving_only(&e.kind))
                .cloned()
                .collect();
            pending::detect(&key, &events, cfg, horizon)
        };
        // (A member's wait is its whole's: a JobSet's child Job, a Slurm job by its id.)
        let whole =
            wk.1.as_ref()
                .and_then(|w| members.get(&(wk.0.clone(), w.clone())));
        for s in waits {
            // A stall of the same workload already accounts for the wait.
            let covered = found.iter().any(|o| {
                o.key.namespace == key.namespace
                    && (o.key.workload == key.workload
                        || (whole.is_some() && o.key.workload.as_ref() == whole))
                    && matches!(o.kind, SymptomKind::Stall | SymptomKind::Restart)
                    && o.start_ns <= s.end_ns
                    && s.start_ns <= o.end_ns
            });
            if !covered {
                found.push(s);
            }
        }
    }
    clock.lap("detect: pending");
    let mut short: BTreeMap<WorkloadName, Vec<(i64, i64)>> = BTreeMap::new();
    for s in found
        .iter()
        .filter(|s| s.kind == SymptomKind::CapacityShortfall)
    {
        short
            .entry((s.key.namespace.clone(), s.key.workload.clone()))
            .or_default()
            .push((s.start_ns, s.end_ns));
    }
    for (mut s, pod) in serving::detect_latency(&serving, &short, cfg, horizon) {
        // One replica stood out: the node it ran on is the slowdown's focus.
        if let Some(pod) = pod {
            s.gpu = placements
                .iter()
                .find(|p| {
                    p.pod.as_deref() == Some(pod.as_str()) && p.holds(&s.key, s.start_ns, s.end_ns)
                })
                .map(|p| (p.node.clone(), None));
        }
        found.push(s);
    }
    found.retain(|s| names.wanted(sel, &s.key) && s.lost_seconds >= cfg.min_lost_seconds);
    found.sort_by(|a, b| {
        (a.start_ns, &a.key, a.kind, a.rank).cmp(&(b.start_ns, &b.key, b.kind, b.rank))
    });
    let found = one_per_id(found);

    clock.lap("detect: serving latency");
    // The rules' view of the symptoms and their scope.
    let mut rows = Vec::new();
    let mut scope = Vec::new();
    let mut ids = Vec::new();
    // (Read only where there is a symptom to place: most of a live analyzer's analyses
    // have none.)
    let event_pods = match found.is_empty() {
        true => Vec::new(),
        false => read_event_pods(ctx, &params).await?,
    };
    let placed_pods: BTreeSet<(Option<&str>, &str)> = placements
        .iter()
        .filter_map(|p| Some((p.namespace.as_deref(), p.pod.as_deref()?)))
        .collect();
    for s in &found {
        let id = slowdown_id(s);
        rows.push(SymptomRow {
            slowdown_id: id.clone(),
            namespace: s.key.namespace.clone(),
            workload: s.key.workload.clone(),
            run_id: s.key.run_id.clone(),
            kind: s.kind.as_str(),
            metric: s.metric.clone(),
            rank: s.rank,
            start_ns: s.start_ns,
            end_ns: s.end_ns,
            onset_from_ns: s.start_ns - LOOKBACK_NS,
            baseline: s.baseline,
            observed: s.observed,
            unplaced: unplaced(&s.key, s.start_ns, &placements, &placed_pods, &event_pods),
        });
        scope.extend(scope_of(&id, s, &placements, &series));
        ids.push(id);
    }
    scope.sort();
    scope.dedup();
    clock.lap("symptom scope");
    // With no symptom there is nothing to explain: the cause views and rules (about half of
    // an analysis of a fleet) would join nothing, and are not run.
    let (candidates, events, aftermath) = if rows.is_empty() {
        Default::default()
    } else {
        causes::register(ctx, &rows, &scope, |table| clock.lap(table)).await?;
        // A lap per rule: where a rule's cost goes is what a slow report needs told.
        let candidates = causes::run_rules(ctx, &rows, |rule| clock.lap(rule)).await?;
        let cited: BTreeSet<&str> = candidates
            .iter()
            .flat_map(|c| c.evidence.iter().map(String::as_str))
            .collect();
        let events = read_evidence(ctx, &cited).await?;
        let aftermath = read_aftermath(ctx).await?;
        clock.lap("evidence");
        (candidates, events, aftermath)
    };

    let mut findings = Vec::new();
    for (s, id) in found.into_iter().zip(ids) {
        let mine: Vec<&Candidate> = candidates.iter().filter(|c| c.slowdown_id == id).collect();
        let after: Vec<EventInfo> = aftermath.get(&id).cloned().unwrap_or_default();
        let ranked = attribution::attribute(&s, &mine, &events, &after, sql::CAUSE_RULES.len());
        let mut marks: Vec<EventInfo> = mine
            .iter()
            .flat_map(|c| c.evidence.iter())
            .filter_map(|e| events.get(e).cloned())
            .collect();
        marks.extend(after);
        marks.sort_by(|a, b| (a.time_ns, &a.event_id).cmp(&(b.time_ns, &b.event_id)));
        marks.dedup_by(|a, b| a.event_id == b.event_id);
        let (nodes, mut pods) = nodes_and_pods(&id, &scope);
        if pods.is_empty() {
            let workload = (s.key.namespace.clone(), s.key.workload.clone());
            pods = serving::replicas_during(&serving.replicas, &workload, s.start_ns, s.end_ns);
        }
        findings.push(Finding {
            slowdown_id: id,
            symptom: s,
            nodes,
            pods,
            causes: ranked,
            marks,
            profiles: Vec::new(),
        });
    }
    let mut findings = settle_kinds(findings);
    explain_latency_by_shortfall(&mut findings);
    clock.lap("attribution");
    let findings = profiles::attach(ctx, &params, findings).await?;
    clock.lap("profiles");
    let mut workloads: Vec<WorkloadExtent> = extents
        .into_iter()
        .filter(|e| e.key.workload.is_some() && names.wanted(sel, &e.key))
        .collect();
    for w in &mut workloads {
        w.run_ids = series
            .keys()
            .filter(|k| k.namespace == w.key.namespace && k.workload == w.key.workload)
            .filter_map(|k| k.run_id.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
    }
    // Workloads by the names their users know them by (the analysis ran on what the
    // records name: Slurm job ids, a JobSet's child Jobs).
    let mut findings = findings;
    names.name_findings(&mut findings);
    let workloads = names.name_workloads(workloads);
    Ok(Analysis {
        from_ns: window.0,
        to_ns: window.1,
        workloads,
        findings,
        timings: clock.done(),
    })
}

/// How long after a symptom's onset a pod's records still tell that it ran then: a pod
/// that died with its GPU says so (a CUDA error, its agent's exit) just after.
const DIED_WITHIN_NS: i64 = 2 * 60 * 1_000_000_000;

/// Whether the hardware `key`'s workload ran on at `onset` may be nowhere in its scope:
/// nothing placed the workload in the look-back before, or one of its pods that its events
/// name then (up to [`DIED_WITHIN_NS`] after) was never placed on a node (its scheduling
/// events missing, its GPUs' samples unlabelled). `placed_pods`: every pod `placements`
/// names.
fn unplaced(
    key: &WorkloadKey,
    onset: i64,
    placements: &[Placement],
    placed_pods: &BTreeSet<(Option<&str>, &str)>,
    pods: &[EventPod],
) -> bool {
    let from = onset - LOOKBACK_NS;
    if !placements.iter().any(|p| p.holds(key, from, onset)) {
        return true;
    }
    pods.iter()
        .filter(|e| {
            e.namespace == key.namespace
                && key.workload.as_deref() == Some(e.workload.as_str())
                && e.first_ns <= onset + DIED_WITHIN_NS
                && e.last_ns >= from
        })
        .any(|e| !placed_pods.contains(&(e.namespace.as_deref(), e.pod.as_str())))
}

/// Announcements that a workload's run ended: the SDK's, Kueue's Finished, the job
/// controller's Completed and a Job's (JobSet's) Complete condition, a Slurm job cancelled
/// by its user. (Not slurmctld's `_job_complete: … done`: it is logged at a requeue too.)
fn is_end(kind: &str) -> bool {
    matches!(
        kind,
        "run_finished" | "finished" | "completed" | "job_completed" | "job_cancelled"
    )
}

/// When another run of `key`'s workload first made progress after `key`'s run last did
/// (a Job deleted and created again under a new run id), if one did.
fn superseded(key: &WorkloadKey, series: &BTreeMap<WorkloadKey, RunSeries>) -> Option<i64> {
    // The first and last progress of a run (each series is in time order: its first and
    // last points with a step).
    let span = |run: &RunSeries| {
        let ends = run
            .metrics
            .values()
            .flat_map(|ranks| ranks.values())
            .filter_map(|pts| {
                let first = pts.iter().find(|p| p.step.is_some())?.time_ns;
                let last = pts.iter().rev().find(|p| p.step.is_some())?.time_ns;
                Some((first, last))
            });
        ends.reduce(|(a, b), (c, d)| (a.min(c), b.max(d)))
    };
    let (_, last) = span(series.get(key)?)?;
    series
        .iter()
        .filter(|(k, _)| {
            k.namespace == key.namespace && k.workload == key.workload && k.run_id != key.run_id
        })
        .filter_map(|(_, run)| span(run).map(|(first, _)| first))
        .filter(|&first| first > last)
        .min()
}

/// The workloads whose GPU activity the straggler detector reads: training runs (a
/// framework series: steps, loss, epochs; a serving deployment's replicas each go at
/// their own pace) without per-rank compute times (those find their stragglers by rank).
fn straggler_candidates(series: &BTreeMap<WorkloadKey, RunSeries>) -> BTreeSet<WorkloadName> {
    let per_rank: BTreeSet<WorkloadName> = series
        .iter()
        .filter(|(_, r)| {
            r.metrics
                .get("compute_seconds")
                .is_some_and(|m| m.len() >= 2)
        })
        .map(|(k, _)| (k.namespace.clone(), k.workload.clone()))
        .collect();
    series
        .keys()
        .map(|k| (k.namespace.clone(), k.workload.clone()))
        .filter(|wk| !per_rank.contains(wk))
        .collect()
}

/// `f` of every job, on as many threads as the machine has cores, in the jobs' order
/// (a fleet's workloads are independent: a day of 1000 nodes' GPU activity is 11M
/// GPU-minutes to go through).
fn in_parallel<J: Sync, T: Send>(jobs: &[J], f: impl Fn(&J) -> Vec<T> + Sync) -> Vec<T> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    if threads <= 1 || jobs.len() <= 1 {
        return jobs.iter().flat_map(&f).collect();
    }
    // Every `threads`-th job to each thread: the big and small ones spread evenly.
    let mut done: Vec<(usize, Vec<T>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let f = &f;
                scope.spawn(move || {
                    (t..jobs.len())
                        .step_by(threads)
                        .map(|i| (i, f(&jobs[i])))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            // A detector's panic is a bug: it goes on as it would on one thread.
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().flat_map(|(_, out)| out).collect()
}

/// What [`side_tables`] builds, as its errors name it.
const SIDE_TABLES: &str = "symptoms/serving_window.sql and the state views";

/// The tables the analysis reads by name that need no scan of the samples: the serving
/// samples over the window (`from`, `to`) and the hour on either side of it, and the state
/// views computed once. Returns how long each took, as stages of the analysis' clock.
async fn side_tables(
    ctx: SessionContext,
    from: i64,
    to: i64,
    no_serving: bool,
) -> Result<Vec<(&'static str, f64)>> {
    let mut clock = Clock::new();
    let around = [
        ("from", ts_param(from.saturating_sub(SERVING_AROUND_NS))),
        ("to", ts_param(to.saturating_add(SERVING_AROUND_NS))),
    ];
    let file = sql::symptoms::SERVING_WINDOW;
    if no_serving {
        let view =
            ctx.table("serving_samples")
                .await
                .map_err(|source| crate::AnalyzeError::Sql {
                    file: file.path,
                    source,
                })?;
        let schema = std::sync::Arc::new(view.schema().as_arrow().clone());
        sql::replace_table(&ctx, "serving_samples", schema, Vec::new())?;
    } else {
        sql::register(&ctx, "serving_samples", file, &around).await?;
    }
    clock.lap("  serving samples (beside the scan)");
    for view in MATERIALIZED_VIEWS {
        sql::materialize(&ctx, view).await?;
    }
    clock.lap("  checkpoint operations and members (beside the scan)");
    Ok(clock.done())
}

/// Stage timings of one analysis.
struct Clock {
    last: std::time::Instant,
    laps: Vec<(&'static str, f64)>,
}

impl Clock {
    fn new() -> Self {
        Clock {
            last: std::time::Instant::now(),
            laps: Vec::new(),
        }
    }

    fn lap(&mut self, stage: &'static str) {
        let now = std::time::Instant::now();
        self.laps.push((stage, (now - self.last).as_secs_f64()));
        self.last = now;
    }

    fn done(self) -> Vec<(&'static str, f64)> {
        self.laps
    }
}

/// One symptom per slowdown id: a slowdown that detectors gave twice (the same workload,
/// run, kind, onset, rank and focus) is one, the longer of the two (the rules join the
/// symptoms by id, and a report names each slowdown once). The order is kept.
fn one_per_id(found: Vec<Symptom>) -> Vec<Symptom> {
    let mut out: Vec<Symptom> = Vec::with_capacity(found.len());
    let mut at: BTreeMap<String, usize> = BTreeMap::new();
    for s in found {
        let id = slowdown_id(&s);
        match at.get(&id) {
            Some(&i) => {
                tracing::debug!(id, kind = s.kind.as_str(), "a slowdown given twice");
                let kept = &mut out[i];
                if (s.lost_seconds, s.end_ns) > (kept.lost_seconds, kept.end_ns) {
                    *kept = s;
                }
            }
            None => {
                at.insert(id, out.len());
                out.push(s);
            }
        }
    }
    out
}

/// A stable id: a hash of what identifies the symptom.
pub fn slowdown_id(s: &Symptom) -> String {
    let text = format!(
        "{}|{}|{}|{}|{}|{}",
        s.key.namespace.as_deref().unwrap_or(""),
        s.key.workload.as_deref().unwrap_or(""),
        s.key.run_id.as_deref().unwrap_or(""),
        s.kind.as_str(),
        s.start_ns,
        s.rank.map(|r| r.to_string()).unwrap_or_default()
    );
    let text = match &s.gpu {
        Some((node, device)) => format!("{text}|{node}|{}", device.as_deref().unwrap_or("")),
        None => text,
    };
    format!("{:016x}", xxh3_64(text.as_bytes()))
}

fn scope_of(
    id: &str,
    s: &Symptom,
    placements: &[Placement],
    series: &BTreeMap<WorkloadKey, RunSeries>,
) -> Vec<ScopeRow> {
    let from = s.start_ns - LOOKBACK_NS;
    let mut rows = Vec::new();
    let focus = s.gpu.clone().or_else(|| {
        s.rank.and_then(|r| {
            series
                .get(&s.key)
                .and_then(|run| run.placement.get(&Some(r)).cloned())
                .and_then(|(n, d)| n.map(|n| (n, d)))
        })
    });
    for p in placements {
        if !p.holds(&s.key, from, s.end_ns) {
            continue;
        }
        let level = match &focus {
            Some((n, _)) if *n != p.node => "workload",
            _ => "focus",
        };
        let device = match &focus {
            Some((n, Some(d))) if *n == p.node && p.device.is_none() => Some(d.clone()),
            _ => p.device.clone(),
        };
        rows.push(ScopeRow {
            slowdown_id: id.to_string(),
            node: p.node.clone(),
            device,
            pod: p.pod.clone(),
            level,
        });
    }
    if let Some((n, d)) = focus {
        rows.push(ScopeRow {
            slowdown_id: id.to_string(),
            node: n,
            device: d,
            pod: None,
            level: "focus",
        });
    }
    rows
}

fn nodes_and_pods(id: &str, scope: &[ScopeRow]) -> (Vec<String>, Vec<String>) {
    let mine = scope.iter().filter(|r| r.slowdown_id == id);
    let nodes: BTreeSet<String> = mine
        .clone()
        .filter(|r| r.level == "focus")
        .map(|r| r.node.clone())
        .collect();
    let pods: BTreeSet<String> = mine.filter_map(|r| r.pod.clone()).collect();
    (nodes.into_iter().collect(), pods.into_iter().collect())
}

/// Where a workload ran: a pod on a node (and GPU) for a while.
#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub pod: Option<String>,
    pub node: String,
    pub device: Option<String>,
    pub since: i64,
    pub until: i64,
}

impl Placement {
    /// Whether this is a placement of `key`'s workload at some time in `[from, to]`.
    fn holds(&self, key: &WorkloadKey, from: i64, to: i64) -> bool {
        self.namespace == key.namespace
            && self.workload == key.workload
            && self.since <= to
            && self.until >= from
    }
}

#[cfg(test)]
mod tests {
    use super::{in_parallel, one_per_id, slowdown_id};
    use crate::symptoms::{Symptom, SymptomKind, WorkloadKey};

    fn symptom(start_ns: i64, end_ns: i64) -> Symptom {
        let key = WorkloadKey {
            namespace: Some("serve".into()),
            workload: Some("chat".into()),
            run_id: None,
        };
        let lost = (end_ns - start_ns) as f64 / 1e9;
        Symptom::bare(key, SymptomKind::LatencyRegression, start_ns, end_ns, lost)
    }

    #[test]
    fn a_slowdown_given_twice_is_one_the_longer() {
        let found = vec![symptom(0, 60), symptom(0, 120), symptom(200, 260)];
        let one = one_per_id(found);
        assert_eq!(one, vec![symptom(0, 120), symptom(200, 260)]);
        assert_ne!(slowdown_id(&one[0]), slowdown_id(&one[1]));
        // Another focus is another slowdown.
        let mut on_gpu = symptom(0, 60);
        on_gpu.gpu = Some(("node-a".into(), Some("3".into())));
        assert_eq!(one_per_id(vec![symptom(0, 60), on_gpu]).len(), 2);
    }

    #[test]
    fn jobs_run_in_parallel_give_their_results_in_the_jobs_order() {
        let jobs: Vec<u64> = (0..101).collect();
        // Uneven work: the result of each job is as many copies of it as it is odd.
        let f = |j: &u64| vec![*j; (*j % 2) as usize + 1];
        let serial: Vec<u64> = jobs.iter().flat_map(f).collect();
        assert_eq!(in_parallel(&jobs, f), serial);
        assert!(in_parallel(&[] as &[u64], f).is_empty());
    }
}
