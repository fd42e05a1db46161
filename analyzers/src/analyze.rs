//! The analysis of a store (or a window of it): state views, symptom detection over the
//! series pulled with SQL, the cause rules, attribution. The result feeds the report and
//! the derived tables. Everything is sorted so that the same data gives the same result.
//!
//! The window is explicit (`from`, `to`), so a streaming worker can run the same analysis
//! incrementally over a recent window after each committed batch.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use datafusion::prelude::SessionContext;
use whyslow_schemas::Cause;
use xxhash_rust::xxh3::xxh3_64;

use crate::Result;
use crate::attribution::{self, Attributed, EventInfo};
use crate::causes::{self, Candidate, ScopeRow, SymptomRow};
use crate::columns::Columns;
use crate::sql::{self, AFTERMATH, EVIDENCE, symptoms as q, ts_param};
use crate::symptoms::pending::{self, Lifecycle};
use crate::symptoms::regression::{self, PaceInput, Worse};
use crate::symptoms::stats::median;
use crate::symptoms::straggler::{self, RankSeries};
use crate::symptoms::{
    DetectorConfig, Pauses, Point, Symptom, SymptomKind, WorkloadKey, progress, secs, throughput,
};

/// How far before a symptom's onset the rules look for its cause.
pub const LOOKBACK_NS: i64 = 15 * 60 * 1_000_000_000;

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
}

/// A workload seen in the window.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadExtent {
    pub key: WorkloadKey,
    /// The runs its framework series name, sorted.
    pub run_ids: Vec<String>,
    pub first_ns: i64,
    pub last_ns: i64,
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
    // DataFusion 55's leaf-expression pushdown fails ("ambiguous reference
    // __datafusion_extracted_N") on rules that read a view with map lookups twice.
    sql::execute(
        ctx,
        sql::SqlFile {
            path: "(session settings)",
            text: "SET datafusion.optimizer.enable_leaf_expression_pushdown = false",
        },
    )
    .await?;
    let mut clock = Clock::new();
    crate::state::register(ctx).await?;
    let from = sel.from_ns.unwrap_or(0);
    let to = sel.to_ns.unwrap_or(i64::MAX / 2);
    let params = [("from", ts_param(from)), ("to", ts_param(to))];

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

    let series = read_framework_series(ctx, &params).await?;
    clock.lap("framework series");
    let pauses = read_pauses(ctx, &params).await?;
    let lifecycle = read_lifecycle(ctx, &params).await?;
    clock.lap("pauses and lifecycle");
    let util = read_utilization(ctx, &params).await?;
    clock.lap("utilization");
    let placements = read_placements(ctx, &params).await?;
    clock.lap("placements");

    let mut found: Vec<Symptom> = Vec::new();
    let mut paces: BTreeMap<WorkloadName, Vec<PacePair>> = BTreeMap::new();
    let mut with_sdk: BTreeSet<(Option<String>, Option<String>)> = BTreeSet::new();
    // Workloads whose SDK reports a pace: their trainer-log progress (another "run" with
    // no run id) is not a second opinion.
    let paced: BTreeSet<WorkloadName> = series
        .iter()
        .filter(|(_, r)| {
            r.metrics.contains_key("step_time_seconds")
                || r.metrics.contains_key("tokens_per_second")
        })
        .map(|(k, _)| (k.namespace.clone(), k.workload.clone()))
        .collect();
    for (key, run) in &series {
        with_sdk.insert((key.namespace.clone(), key.workload.clone()));
        let unpaced = !run.metrics.contains_key("step_time_seconds")
            && !run.metrics.contains_key("tokens_per_second");
        if unpaced && paced.contains(&(key.namespace.clone(), key.workload.clone())) {
            continue;
        }
        let wk = (key.namespace.clone(), key.workload.clone());
        let marks = pauses.get(&wk).cloned().unwrap_or_default();
        let (p, evals) = (marks.stall_pauses.clone(), marks.evals.clone());
        found.extend(startup_stall(key, run, &marks, cfg));
        let finished = lifecycle.get(&wk).and_then(|l| {
            l.iter()
                .filter(|e| matches!(e.kind.as_str(), "run_finished" | "finished" | "completed"))
                .map(|e| e.time_ns)
                .max()
        });
        let pace = paces.entry(wk).or_default();
        found.extend(detect_run(
            key, run, &p, &evals, pace, horizon, finished, cfg,
        ));
    }
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
    for (wk, samples) in &util {
        if with_sdk.contains(wk) {
            continue;
        }
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        for (metric, pts) in samples {
            let s = throughput::workload_series(pts.clone());
            found.extend(throughput::detect(&key, metric, &s, cfg, horizon));
        }
    }
    for (wk, events) in &lifecycle {
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        for s in pending::detect(&key, events, cfg, horizon) {
            // A stall of the same workload already accounts for the wait.
            let covered = found.iter().any(|o| {
                o.key.namespace == key.namespace
                    && o.key.workload == key.workload
                    && matches!(o.kind, SymptomKind::Stall | SymptomKind::Restart)
                    && o.start_ns <= s.end_ns
                    && s.start_ns <= o.end_ns
            });
            if !covered {
                found.push(s);
            }
        }
    }
    found.retain(|s| sel.wants(&s.key) && s.lost_seconds >= cfg.min_lost_seconds);
    found.sort_by(|a, b| {
        (a.start_ns, &a.key, a.kind, a.rank).cmp(&(b.start_ns, &b.key, b.kind, b.rank))
    });

    // The rules' view of the symptoms and their scope.
    let mut rows = Vec::new();
    let mut scope = Vec::new();
    let mut ids = Vec::new();
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
        });
        scope.extend(scope_of(&id, s, &placements, &series));
        ids.push(id);
    }
    scope.sort();
    scope.dedup();
    clock.lap("detectors");
    causes::register(ctx, &rows, &scope).await?;
    let candidates = causes::run_rules(ctx).await?;
    clock.lap("cause rules");
    let cited: BTreeSet<&str> = candidates
        .iter()
        .flat_map(|c| c.evidence.iter().map(String::as_str))
        .collect();
    let events = read_evidence(ctx, &cited).await?;
    let aftermath = read_aftermath(ctx).await?;
    clock.lap("evidence");

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
        let (nodes, pods) = nodes_and_pods(&id, &scope);
        findings.push(Finding {
            slowdown_id: id,
            symptom: s,
            nodes,
            pods,
            causes: ranked,
            marks,
        });
    }
    let findings = settle_kinds(findings);
    let mut workloads: Vec<WorkloadExtent> = extents
        .into_iter()
        .filter(|e| e.key.workload.is_some() && sel.wants(&e.key))
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
    Ok(Analysis {
        from_ns: window.0,
        to_ns: window.1,
        workloads,
        findings,
        timings: clock.done(),
    })
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

/// Causes whose mechanism is the workload's own process failing (it is restarted), as
/// opposed to being stopped from outside or hanging.
const CRASHES: &[Cause] = &[Cause::GpuFailure, Cause::GpuMemoryError, Cause::OomKilled];

/// Names each finding for what happened once its cause is known: a stop that ended in a
/// checkpoint restore because the process crashed is a `restart`; a job pace regression
/// and a straggler over the same time are one slowdown — a `straggler` when the rank
/// itself is the cause, else a `regression` of the job's pace.
fn settle_kinds(mut findings: Vec<Finding>) -> Vec<Finding> {
    let verdict = |f: &Finding| f.causes.first().map(|c| c.cause);
    for f in &mut findings {
        if f.symptom.kind == SymptomKind::Stall
            && f.symptom.restored
            && verdict(f).is_some_and(|c| CRASHES.contains(&c))
        {
            f.symptom.kind = SymptomKind::Restart;
        }
    }
    let mut dropped = BTreeSet::new();
    for i in 0..findings.len() {
        for j in 0..findings.len() {
            let (a, b) = (&findings[i].symptom, &findings[j].symptom);
            if a.kind != SymptomKind::Straggler || b.kind != SymptomKind::Regression {
                continue;
            }
            if a.key.namespace != b.key.namespace || a.key.workload != b.key.workload {
                continue;
            }
            let overlap = (a.end_ns.min(b.end_ns) - a.start_ns.max(b.start_ns)).max(0);
            let shorter = (a.end_ns - a.start_ns).min(b.end_ns - b.start_ns).max(1);
            if overlap * 2 < shorter {
                continue;
            }
            if verdict(&findings[i]) == Some(Cause::StragglerRank) {
                dropped.insert(j);
            } else {
                dropped.insert(i);
            }
        }
    }
    // A stop followed at once by a slower pace, for the same cause (a job scaled down
    // restarts on fewer GPUs): one regression from the stop on, costing both.
    for i in 0..findings.len() {
        for j in 0..findings.len() {
            if dropped.contains(&i) || dropped.contains(&j) {
                continue;
            }
            let (a, b) = (&findings[i].symptom, &findings[j].symptom);
            let stop = matches!(a.kind, SymptomKind::Stall | SymptomKind::Restart);
            let same = a.key.namespace == b.key.namespace && a.key.workload == b.key.workload;
            let follows = b.start_ns >= a.start_ns && b.start_ns <= a.end_ns + 600_000_000_000;
            if !(stop
                && b.kind == SymptomKind::Regression
                && same
                && follows
                && verdict(&findings[i]).is_some())
            {
                continue;
            }
            if verdict(&findings[i]) != verdict(&findings[j]) {
                continue;
            }
            let (start, lost, marks) = (a.start_ns, a.lost_seconds, findings[i].marks.clone());
            let r = &mut findings[j];
            r.symptom.start_ns = start;
            r.symptom.lost_seconds += lost;
            if let Some(v) = r.causes.first_mut() {
                v.explained_seconds = r.symptom.lost_seconds;
            }
            r.marks.extend(marks);
            r.marks
                .sort_by(|x, y| (x.time_ns, &x.event_id).cmp(&(y.time_ns, &y.event_id)));
            r.marks.dedup_by(|x, y| x.event_id == y.event_id);
            dropped.insert(i);
        }
    }
    findings
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dropped.contains(i))
        .map(|(_, f)| f)
        .collect()
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
    format!("{:016x}", xxh3_64(text.as_bytes()))
}

/// Per-run framework series: metric -> rank -> points, and rank -> (node, device).
#[derive(Debug, Default, Clone)]
pub struct RunSeries {
    pub metrics: BTreeMap<String, BTreeMap<Option<i32>, Vec<Point>>>,
    pub placement: BTreeMap<Option<i32>, (Option<String>, Option<String>)>,
}

/// A run whose first step came long after it started because its checkpoint restore was
/// abnormally slow (over 3x the workload's save time): a stall from the run's start to its
/// first step, costing the restore's time beyond a normal one.
fn startup_stall(
    key: &WorkloadKey,
    run: &RunSeries,
    marks: &Marks,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let Some(first) = run
        .metrics
        .values()
        .flat_map(|r| r.values())
        .filter_map(|v| v.first())
        .map(|p| p.time_ns)
        .min()
    else {
        return Vec::new();
    };
    let Some(&start) = marks.run_starts.iter().filter(|&&t| t <= first).max() else {
        return Vec::new();
    };
    let Some(normal) = marks.normal_save else {
        return Vec::new();
    };
    let slow: Vec<f64> = marks
        .restores
        .iter()
        .filter(|(t, s)| *t >= start && *t <= first && *s > 3.0 * normal)
        .map(|r| r.1)
        .collect();
    let Some(restore) = slow.iter().copied().reduce(f64::max) else {
        return Vec::new();
    };
    let lost = restore - normal;
    if lost < cfg.min_lost_seconds || secs(first - start) < cfg.stall_min_seconds {
        return Vec::new();
    }
    vec![Symptom {
        key: key.clone(),
        kind: SymptomKind::Stall,
        start_ns: start,
        end_ns: first,
        ongoing: false,
        lost_seconds: lost,
        baseline: Some(normal),
        observed: Some(restore),
        metric: Some("checkpoint_restore_seconds".to_string()),
        rank: None,
        plot: Vec::new(),
        restored: true,
    }]
}

/// Regressions of one workload's wall-clock pace (seconds per step), bucketed.
fn detect_regressions(
    wk: &WorkloadName,
    pairs: &[PacePair],
    saves: &[(i64, f64)],
    horizon: i64,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let per_step: Vec<f64> = pairs.iter().map(|p| p.seconds / p.steps as f64).collect();
    let Some(step) = median(&per_step) else {
        return Vec::new();
    };
    let seconds = spread_saves(pairs, saves);
    let bucket = ((cfg.pace_bucket_seconds.max(20.0 * step)) * 1e9) as i64;
    // bucket -> (seconds, steps)
    let mut buckets: BTreeMap<i64, (f64, i64)> = BTreeMap::new();
    for (p, sec) in pairs.iter().zip(&seconds) {
        let b = buckets
            .entry(p.time_ns.div_euclid(bucket))
            .or_insert((0.0, 0));
        b.0 += sec;
        b.1 += p.steps;
    }
    let series: Vec<Point> = buckets
        .iter()
        .filter(|(_, v)| v.1 >= 3)
        .map(|(b, v)| Point {
            time_ns: (b + 1) * bucket,
            step: None,
            value: v.0 / v.1 as f64,
        })
        .collect();
    if std::env::var_os("WHYSLOW_DEBUG_PACE").is_some() {
        eprintln!(
            "pace {wk:?}: {:?}",
            series
                .iter()
                .map(|p| (
                    p.time_ns / 1_000_000_000,
                    (p.value * 1000.0).round() / 1000.0
                ))
                .collect::<Vec<_>>()
        );
    }
    let bucket_cfg = DetectorConfig {
        min_segment: 2,
        alpha: 1e-2,
        ..cfg.clone()
    };
    let mut out = Vec::new();
    let key = WorkloadKey {
        namespace: wk.0.clone(),
        workload: wk.1.clone(),
        run_id: None,
    };
    for mut s in regression::detect(
        &PaceInput {
            key: &key,
            points: &series,
            metric: "seconds_per_step",
            worse: Worse::Higher,
            kind: SymptomKind::Regression,
            min_rel: cfg.regression_min_rel,
            min_seconds: 2.0 * bucket as f64 / 1e9,
            horizon_ns: horizon,
        },
        &bucket_cfg,
    ) {
        s.key.run_id = pairs
            .iter()
            .find(|p| p.time_ns > s.start_ns)
            .and_then(|p| p.run_id.clone());
        // Account on the steps themselves, not the buckets: the extra wall time of the
        // window's steps against the pooled pace of the steps before it.
        let prev_end = out.last().map_or(i64::MIN, |p: &Symptom| p.end_ns);
        let pooled = |f: &dyn Fn(&PacePair) -> bool| -> (f64, i64) {
            pairs
                .iter()
                .filter(|p| f(p))
                .fold((0.0, 0), |a, p| (a.0 + p.seconds, a.1 + p.steps))
        };
        // The window is known to a bucket: its neighbours' steps count too (normal ones
        // add nothing against the pooled pace, partly slow ones add their share).
        let (lo, hi) = (s.start_ns - bucket, s.end_ns + bucket);
        let (ref_s, ref_n) = pooled(&|p| p.time_ns <= lo && p.time_ns > prev_end);
        let (win_s, win_n) = pooled(&|p| p.time_ns > lo && p.time_ns <= hi);
        // Without SDK pace (progress read from a trainer's logs) the job's throughput
        // dropped: the contract's `throughput_drop`.
        if !pairs
            .iter()
            .any(|p| p.sdk && p.time_ns > s.start_ns && p.time_ns <= s.end_ns)
        {
            s.kind = SymptomKind::ThroughputDrop;
        }
        if ref_n > 0 && win_n > 0 {
            let base = ref_s / ref_n as f64;
            s.baseline = Some(base);
            s.observed = Some(win_s / win_n as f64);
            s.lost_seconds = (win_s - base * win_n as f64).max(0.0);
        }
        out.push(s);
    }
    out
}

/// The pairs' wall seconds with each save's time taken out of the interval it fell in and
/// spread over the steps of its cycle (since the previous save) instead: regular saves
/// then cost every step the same, while slower or more frequent saves still show.
fn spread_saves(pairs: &[PacePair], saves: &[(i64, f64)]) -> Vec<f64> {
    let mut out: Vec<f64> = pairs.iter().map(|p| p.seconds).collect();
    let mut prev_end = i64::MIN;
    for &(end, secs_) in saves {
        let start = end - (secs_ * 1e9) as i64;
        // Pairs are sorted by end time; those overlapping [start, end] lose the overlap.
        let first = pairs.partition_point(|p| p.time_ns <= start);
        for (i, p) in pairs.iter().enumerate().skip(first) {
            if p.start_ns >= end {
                break;
            }
            let overlap = (p.time_ns.min(end) - p.start_ns.max(start)).max(0);
            out[i] -= overlap as f64 / 1e9;
        }
        // Its cycle's steps share its time.
        let lo = pairs.partition_point(|p| p.time_ns <= prev_end);
        let hi = pairs.partition_point(|p| p.time_ns <= end);
        let steps: i64 = pairs[lo..hi].iter().map(|p| p.steps).sum();
        if steps > 0 {
            for i in lo..hi {
                out[i] += secs_ * pairs[i].steps as f64 / steps as f64;
            }
        }
        prev_end = end;
    }
    for v in &mut out {
        *v = v.max(0.0);
    }
    out
}

/// Wall time spent on some steps of a run, ending at `time_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct PacePair {
    /// The interval's start (the previous progress sample).
    pub start_ns: i64,
    pub time_ns: i64,
    pub seconds: f64,
    pub steps: i64,
    pub run_id: Option<String>,
    /// Whether the pace came from SDK step metrics (else from a trainer's logged progress).
    pub sdk: bool,
}

#[allow(clippy::too_many_arguments)]
fn detect_run(
    key: &WorkloadKey,
    run: &RunSeries,
    pauses: &Pauses,
    evals: &Pauses,
    pace_out: &mut Vec<PacePair>,
    horizon: i64,
    finished: Option<i64>,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let mut out = Vec::new();
    let pace_metric = ["step_time_seconds", "tokens_per_second"]
        .into_iter()
        .find(|m| run.metrics.contains_key(*m));
    // The pace rank: the lowest rank that reports (rank 0, or the only one).
    let pace: Option<(&str, &Vec<Point>)> = pace_metric.and_then(|m| {
        run.metrics
            .get(m)
            .and_then(|ranks| ranks.values().find(|v| !v.is_empty()).map(|v| (m, v)))
    });
    let progress_pts: Vec<Point> = match pace {
        Some((_, pts)) if pts.iter().any(|p| p.step.is_some()) => {
            pts.iter().filter(|p| p.step.is_some()).copied().collect()
        }
        _ => run
            .metrics
            .values()
            .filter_map(|r| r.values().next())
            .find(|v| v.iter().any(|p| p.step.is_some()))
            .map(|v| v.iter().filter(|p| p.step.is_some()).copied().collect())
            .unwrap_or_default(),
    };
    let baseline_step = match pace {
        Some(("step_time_seconds", pts)) => {
            let clean: Vec<Point> = pts
                .iter()
                .filter(|p| !pauses.contains(p.time_ns))
                .copied()
                .collect();
            regression::reference(&clean, cfg, cfg.regression_min_rel)
        }
        _ => None,
    }
    .or_else(|| {
        let per_step: Vec<f64> = progress_pts
            .windows(2)
            .filter_map(|w| {
                let ds = w[1].step? - w[0].step?;
                (ds > 0).then(|| (w[1].time_ns - w[0].time_ns) as f64 / 1e9 / ds as f64)
            })
            .collect();
        median(&per_step)
    });
    let Some(baseline_step) = baseline_step else {
        return out;
    };
    if progress_pts.len() >= 2 {
        let metric = pace.map_or("step", |p| p.0);
        out.extend(progress::detect(
            &progress::ProgressInput {
                key,
                points: &progress_pts,
                baseline_step_seconds: baseline_step,
                pauses,
                horizon_ns: horizon,
                finished_ns: finished,
                metric,
                own_step_time: metric == "step_time_seconds",
            },
            cfg,
        ));
    }
    // The wall-clock pace between progress samples, away from incidents (and their
    // warm-up) and announced evals; saves stay in: they are part of the pace.
    let warmup = (baseline_step * 20.0 * 1e9) as i64;
    for w in progress_pts.windows(2) {
        let (Some(s0), Some(s1)) = (w[0].step, w[1].step) else {
            continue;
        };
        let (t0, t1) = (w[0].time_ns, w[1].time_ns);
        if s1 <= s0
            || out
                .iter()
                .any(|s| t1 >= s.start_ns && t0 <= s.end_ns + warmup)
        {
            continue;
        }
        let dt = secs(t1 - t0) - evals.overlap_seconds(t0, t1);
        pace_out.push(PacePair {
            start_ns: t0,
            time_ns: t1,
            seconds: dt.max(0.0),
            steps: s1 - s0,
            run_id: key.run_id.clone(),
            sdk: pace.is_some(),
        });
    }
    if let Some(ranks) = run.metrics.get("compute_seconds") {
        let rs: Vec<RankSeries> = ranks
            .iter()
            .filter_map(|(r, pts)| {
                r.map(|rank| RankSeries {
                    rank,
                    points: pts.clone(),
                })
            })
            .collect();
        let stragglers = straggler::detect(key, &rs, cfg, horizon);
        out.extend(stragglers);
    }
    out
}

fn scope_of(
    id: &str,
    s: &Symptom,
    placements: &[Placement],
    series: &BTreeMap<WorkloadKey, RunSeries>,
) -> Vec<ScopeRow> {
    let from = s.start_ns - LOOKBACK_NS;
    let mut rows = Vec::new();
    let focus = s.rank.and_then(|r| {
        series
            .get(&s.key)
            .and_then(|run| run.placement.get(&Some(r)).cloned())
            .and_then(|(n, d)| n.map(|n| (n, d)))
    });
    for p in placements {
        if p.namespace != s.key.namespace
            || p.workload != s.key.workload
            || p.since > s.end_ns
            || p.until < from
        {
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

type Params = [(&'static str, datafusion::scalar::ScalarValue); 2];

async fn read_extents(ctx: &SessionContext, params: &Params) -> Result<Vec<WorkloadExtent>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, q::EXTENT, params).await? {
        let c = Columns::new(&b, q::EXTENT.path);
        let (ns, w, t0, t1) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.times("first_time")?,
            c.times("last_time")?,
        );
        for i in 0..b.num_rows() {
            if let (Some(first_ns), Some(last_ns)) = (t0[i], t1[i]) {
                let key = WorkloadKey {
                    namespace: ns[i].clone(),
                    workload: w[i].clone(),
                    run_id: None,
                };
                out.push(WorkloadExtent {
                    key,
                    run_ids: Vec::new(),
                    first_ns,
                    last_ns,
                });
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

async fn read_framework_series(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadKey, RunSeries>> {
    let mut out: BTreeMap<WorkloadKey, RunSeries> = BTreeMap::new();
    let file = q::FRAMEWORK_SERIES.path;
    for b in sql::collect(ctx, q::FRAMEWORK_SERIES, params).await? {
        let c = Columns::new(&b, file);
        let (ns, w, run, metric) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("run_id")?,
            c.strings("metric")?,
        );
        let (rank, time, step, value) = (
            c.ints("rank")?,
            c.times("time")?,
            c.ints("step")?,
            c.floats("value")?,
        );
        let (node, device) = (c.strings("node")?, c.strings("device")?);
        for i in 0..b.num_rows() {
            let (Some(m), Some(t), Some(v)) = (&metric[i], time[i], value[i]) else {
                continue;
            };
            let key = WorkloadKey {
                namespace: ns[i].clone(),
                workload: w[i].clone(),
                run_id: run[i].clone(),
            };
            let r = rank[i].map(|r| r as i32);
            // A trainer's fractional epoch is progress where nothing reports steps.
            let step_i = match (m.as_str(), step[i]) {
                ("epoch", None) => Some((v * 1e4).round() as i64),
                (_, s) => s,
            };
            let entry = out.entry(key).or_default();
            entry
                .metrics
                .entry(m.clone())
                .or_default()
                .entry(r)
                .or_default()
                .push(Point {
                    time_ns: t,
                    step: step_i,
                    value: v,
                });
            if node[i].is_some() {
                entry
                    .placement
                    .entry(r)
                    .or_insert_with(|| (node[i].clone(), device[i].clone()));
            }
        }
    }
    for run in out.values_mut() {
        for ranks in run.metrics.values_mut() {
            for pts in ranks.values_mut() {
                pts.sort_by(|a, b| {
                    (a.time_ns, a.step)
                        .cmp(&(b.time_ns, b.step))
                        .then(a.value.total_cmp(&b.value))
                });
            }
        }
    }
    Ok(out)
}

type WorkloadName = (Option<String>, Option<String>);

/// What the framework announced about a workload: pauses, run starts and restores.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// Evals and every announced save: not stalls.
    pub stall_pauses: Pauses,
    /// Evals alone: not part of the pace.
    pub evals: Pauses,
    pub run_starts: Vec<i64>,
    /// (time, seconds) of restores that say how long they took.
    pub restores: Vec<(i64, f64)>,
    /// The median seconds of a save.
    pub normal_save: Option<f64>,
    /// When each save ended, in order.
    pub saves: Vec<i64>,
    /// (end, seconds) of the saves that say how long they took, in order.
    pub save_secs: Vec<(i64, f64)>,
}

async fn read_pauses(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, Marks>> {
    let mut raw: BTreeMap<WorkloadName, Vec<(i64, String, Option<f64>)>> = BTreeMap::new();
    for b in sql::collect(ctx, q::PAUSES, params).await? {
        let c = Columns::new(&b, q::PAUSES.path);
        let (ns, w, kind, time, secs) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("kind")?,
            c.times("time")?,
            c.floats("seconds")?,
        );
        for i in 0..b.num_rows() {
            let (Some(k), Some(t)) = (&kind[i], time[i]) else {
                continue;
            };
            raw.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .push((t, k.clone(), secs[i]));
        }
    }
    let mut out = BTreeMap::new();
    for (wk, mut evs) in raw {
        evs.sort_by(|a, b| {
            (a.0, &a.1)
                .cmp(&(b.0, &b.1))
                .then(a.2.unwrap_or(0.0).total_cmp(&b.2.unwrap_or(0.0)))
        });
        let mut intervals = Vec::new();
        let mut evals = Vec::new();
        let mut eval_from: Option<i64> = None;
        let mut m = Marks::default();
        let saves: Vec<f64> = evs
            .iter()
            .filter(|e| e.1 == "checkpoint_saved")
            .filter_map(|e| e.2)
            .collect();
        m.normal_save = median(&saves);
        for (t, k, s) in &evs {
            match k.as_str() {
                "run_started" => m.run_starts.push(*t),
                "checkpoint_restored" => {
                    if let Some(s) = s {
                        m.restores.push((*t, *s));
                    }
                }
                "eval_started" => eval_from = eval_from.or(Some(*t)),
                "eval_finished" => {
                    if let Some(f) = eval_from.take() {
                        intervals.push((f, *t));
                        evals.push((f, *t));
                    }
                }
                "checkpoint_saved" => {
                    // One save is often told twice (the trainer's log line, the SDK
                    // event): one cycle boundary per two minutes at most.
                    if m.saves.last().is_none_or(|l| t - l > 120_000_000_000) {
                        m.saves.push(*t);
                    }
                    if let Some(s) = s {
                        m.save_secs.push((*t, *s));
                        intervals.push((t - (*s * 1e9) as i64, *t));
                    }
                }
                _ => {}
            }
        }
        m.stall_pauses = Pauses::new(intervals);
        m.evals = Pauses::new(evals);
        out.insert(wk, m);
    }
    Ok(out)
}

async fn read_lifecycle(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, Vec<Lifecycle>>> {
    let mut out: BTreeMap<WorkloadName, Vec<Lifecycle>> = BTreeMap::new();
    for b in sql::collect(ctx, q::LIFECYCLE, params).await? {
        let c = Columns::new(&b, q::LIFECYCLE.path);
        let (ns, w, kind, time) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("kind")?,
            c.times("time")?,
        );
        for i in 0..b.num_rows() {
            let (Some(k), Some(t)) = (&kind[i], time[i]) else {
                continue;
            };
            out.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .push(Lifecycle {
                    time_ns: t,
                    kind: k.clone(),
                });
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (a.time_ns, &a.kind).cmp(&(b.time_ns, &b.kind)));
    }
    Ok(out)
}

async fn read_utilization(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, BTreeMap<String, Vec<(String, Point)>>>> {
    let mut out: BTreeMap<WorkloadName, BTreeMap<String, Vec<(String, Point)>>> = BTreeMap::new();
    for b in sql::collect(ctx, q::UTILIZATION, params).await? {
        let c = Columns::new(&b, q::UTILIZATION.path);
        let (ns, w, metric, time, value) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("metric")?,
            c.times("time")?,
            c.floats("value")?,
        );
        let (node, device) = (c.strings("node")?, c.strings("device")?);
        for i in 0..b.num_rows() {
            let (Some(m), Some(t), Some(v)) = (&metric[i], time[i], value[i]) else {
                continue;
            };
            out.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .entry(m.clone())
                .or_default()
                .push((
                    format!(
                        "{}/{}",
                        node[i].as_deref().unwrap_or("-"),
                        device[i].as_deref().unwrap_or("-")
                    ),
                    Point {
                        time_ns: t,
                        step: None,
                        value: v,
                    },
                ));
        }
    }
    Ok(out)
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

async fn read_placements(ctx: &SessionContext, params: &Params) -> Result<Vec<Placement>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, q::PLACEMENTS, params).await? {
        let c = Columns::new(&b, q::PLACEMENTS.path);
        let (ns, w, pod, node, device) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("pod")?,
            c.strings("node")?,
            c.strings("device")?,
        );
        let (since, until) = (c.times("since")?, c.times("until")?);
        for i in 0..b.num_rows() {
            let (Some(n), Some(s)) = (&node[i], since[i]) else {
                continue;
            };
            out.push(Placement {
                namespace: ns[i].clone(),
                workload: w[i].clone(),
                pod: pod[i].clone(),
                node: n.clone(),
                device: device[i].clone(),
                since: s,
                until: until[i].unwrap_or(i64::MAX),
            });
        }
    }
    Ok(out)
}

fn event_info(c: &Columns<'_>, n: usize) -> Result<Vec<(Option<String>, EventInfo)>> {
    let ids = c.strings("event_id")?;
    let time = c.times("time")?;
    let (layer, kind) = (c.strings("layer")?, c.strings("kind")?);
    let (ns, w, pod, node, device) = (
        c.strings("namespace")?,
        c.strings("workload")?,
        c.strings("pod")?,
        c.strings("node")?,
        c.strings("device")?,
    );
    let (reason, message, step, seconds) = (
        c.strings("reason")?,
        c.strings("message")?,
        c.strings("step")?,
        c.strings("seconds")?,
    );
    let sid = if c.has("slowdown_id") {
        c.strings("slowdown_id")?
    } else {
        vec![None; n]
    };
    let mut out = Vec::new();
    for i in 0..n {
        let (Some(id), Some(t), Some(k)) = (&ids[i], time[i], &kind[i]) else {
            continue;
        };
        let who = match (&w[i], &pod[i], &node[i]) {
            (Some(w), _, _) => format!("{}/{}", ns[i].as_deref().unwrap_or("-"), w),
            (None, Some(p), _) => p.clone(),
            (None, None, Some(n)) => match &device[i] {
                Some(d) => format!("{n} GPU {d}"),
                None => n.clone(),
            },
            _ => String::from("cluster"),
        };
        let what = if k == "checkpoint_restored" {
            let mut s = String::from("restored from checkpoint");
            if let Some(st) = &step[i] {
                s.push_str(&format!(" at step {st}"));
            }
            if let Some(sec) = &seconds[i] {
                s.push_str(&format!(" in {sec} s"));
            }
            s
        } else {
            let text = message[i]
                .clone()
                .or_else(|| reason[i].clone())
                .unwrap_or_else(|| k.replace('_', " "));
            let mut text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.chars().count() > 160 {
                text = text.chars().take(157).collect::<String>() + "…";
            }
            match &reason[i] {
                Some(r) if message[i].is_some() && !text.contains(r.as_str()) => {
                    format!("{r}: {text}")
                }
                _ => text,
            }
        };
        out.push((
            sid[i].clone(),
            EventInfo {
                event_id: id.clone(),
                time_ns: t,
                layer: layer[i].clone().unwrap_or_default(),
                kind: k.clone(),
                summary: format!("{who}: {what}"),
            },
        ));
    }
    Ok(out)
}

async fn read_evidence(
    ctx: &SessionContext,
    cited: &BTreeSet<&str>,
) -> Result<HashMap<String, EventInfo>> {
    use arrow::array::{RecordBatch, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![Field::new(
        "event_id",
        DataType::Utf8,
        false,
    )]));
    let ids = StringArray::from(cited.iter().copied().collect::<Vec<&str>>());
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)]).map_err(|source| {
        crate::AnalyzeError::Arrow {
            what: "cited",
            source,
        }
    })?;
    let table =
        datafusion::datasource::MemTable::try_new(schema, vec![vec![batch]]).map_err(|source| {
            crate::AnalyzeError::Sql {
                file: "(cited)",
                source,
            }
        })?;
    let _ = ctx.deregister_table("cited");
    ctx.register_table("cited", Arc::new(table))
        .map_err(|source| crate::AnalyzeError::Sql {
            file: "(cited)",
            source,
        })?;
    let mut out = HashMap::new();
    for b in sql::collect(ctx, EVIDENCE, &[]).await? {
        let c = Columns::new(&b, EVIDENCE.path);
        for (_, e) in event_info(&c, b.num_rows())? {
            out.insert(e.event_id.clone(), e);
        }
    }
    Ok(out)
}

async fn read_aftermath(ctx: &SessionContext) -> Result<HashMap<String, Vec<EventInfo>>> {
    let mut out: HashMap<String, Vec<EventInfo>> = HashMap::new();
    for b in sql::collect(ctx, AFTERMATH, &[]).await? {
        let c = Columns::new(&b, AFTERMATH.path);
        for (sid, e) in event_info(&c, b.num_rows())? {
            if let Some(sid) = sid {
                out.entry(sid).or_default().push(e);
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (a.time_ns, &a.event_id).cmp(&(b.time_ns, &b.event_id)));
    }
    Ok(out)
}
