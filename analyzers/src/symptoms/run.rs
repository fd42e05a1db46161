//! One run's own symptoms: stalls and restarts of its progress, its stragglers, and the
//! wall-clock pace between its progress samples (the input of the regression search);
//! with the per-run series and the framework's announcements they are read from.

use std::collections::BTreeMap;

use super::pace::PacePair;
use super::regression;
use super::stats::median;
use super::straggler::{self, RankSeries};
use super::{DetectorConfig, Pauses, Point, Symptom, WorkloadKey, progress, secs};

/// Per-run framework series: metric -> rank -> points, and rank -> (node, device).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct RunSeries {
    pub metrics: BTreeMap<String, BTreeMap<Option<i32>, Vec<Point>>>,
    pub placement: BTreeMap<Option<i32>, (Option<String>, Option<String>)>,
}

/// The metrics that give a run its pace, the one read first first.
pub const PACE_METRICS: [&str; 2] = ["step_time_seconds", "tokens_per_second"];

impl RunSeries {
    /// The first of [`PACE_METRICS`] the run reports, if any.
    pub fn pace_metric(&self) -> Option<&'static str> {
        PACE_METRICS
            .into_iter()
            .find(|m| self.metrics.contains_key(*m))
    }
}

/// What the framework announced about a workload: pauses, run starts and restores.
#[derive(Debug, Clone, Default)]
pub struct Marks {
    /// Evals and every announced save: not stalls.
    pub stall_pauses: Pauses,
    /// Evals alone: not part of the pace.
    pub evals: Pauses,
    /// Evals announced only as they ended (MaxText's eval metrics): each ran since the
    /// last progress before it.
    pub evals_ended: Vec<i64>,
    /// Saves announced only as they started, with no duration nor end (Hugging Face
    /// Trainer's `Saving model checkpoint to …`): each lasts until training goes on.
    pub saves_started: Vec<i64>,
    /// Evals announced as they started and never told to end (`Running validation …`
    /// with no end line): each lasts until training goes on, as such a save does.
    pub evals_started: Vec<i64>,
    pub run_starts: Vec<i64>,
    /// (end, seconds) of each restore that says how long it took, once however many
    /// ranks and sources told it (`checkpoint_ops`), in order.
    pub restores: Vec<(i64, f64)>,
    /// (end, seconds) of each save that says how long it took, once, in order.
    pub save_secs: Vec<(i64, f64)>,
    /// Run starts and checkpoint restores (told or timed), in order.
    pub restarts: Vec<i64>,
    /// Compilations (the first of a process and recompiles): (logged time, seconds where
    /// the line says). Compiling is work, not a stall; a recompile's cost is pace.
    pub compiles: Vec<(i64, Option<f64>)>,
}

impl Marks {
    /// The marks of one workload from its announcements `(time, kind, seconds)` in any
    /// order (`symptoms/pauses.sql`): evals from their start to their end, saves, restores,
    /// run starts and compilations.
    pub fn from_announcements(mut evs: Vec<(i64, String, Option<f64>)>) -> Marks {
        // (An eval's start before an end told at the same time: a line with no time of
        // its own takes the time of the line before it.)
        let order = |k: &str| (k != "eval_started") as u8;
        evs.sort_by(|a, b| {
            (a.0, order(&a.1), &a.1)
                .cmp(&(b.0, order(&b.1), &b.1))
                .then(a.2.unwrap_or(0.0).total_cmp(&b.2.unwrap_or(0.0)))
        });
        let mut intervals = Vec::new();
        let mut evals = Vec::new();
        let mut eval_from: Option<i64> = None;
        let mut m = Marks::default();
        for (t, k, s) in evs {
            match k.as_str() {
                // An eval under way when the run started again or restored never
                // finished: the process that ran it is gone.
                "run_started" => {
                    m.run_starts.push(t);
                    m.restarts.push(t);
                    eval_from = None;
                }
                "checkpoint_restored" => {
                    m.restarts.push(t);
                    eval_from = None;
                    if let Some(s) = s {
                        m.restores.push((t, s));
                    }
                }
                "eval_started" => eval_from = eval_from.or(Some(t)),
                // An end told far sooner after its start than the eval says it took was
                // dated by a line before it (a line with no time of its own takes the
                // time of the line before it, which may be the eval's start): it ended
                // when its start and duration say.
                "eval_finished" => match (eval_from.take(), s.filter(|s| *s > 0.0)) {
                    (Some(f), took) => {
                        let end = match took.map(|s| (s * 1e9) as i64) {
                            Some(took) if t - f < took / 2 => f + took,
                            _ => t,
                        };
                        intervals.push((f, end));
                        evals.push((f, end));
                    }
                    // An eval told twice (the SDK's events and the trainer's logged
                    // metrics) ends twice: the second end is no eval of its own.
                    (None, _)
                        if evals
                            .last()
                            .is_some_and(|&(_, end)| t - end <= SAME_EVAL_NS) => {}
                    (None, Some(s)) => {
                        intervals.push((t - (s * 1e9) as i64, t));
                        evals.push((t - (s * 1e9) as i64, t));
                    }
                    (None, None) => m.evals_ended.push(t),
                },
                "compile" => m.compiles.push((t, s)),
                "checkpoint_saved" => match s {
                    Some(s) => {
                        m.save_secs.push((t, s));
                        intervals.push((t - (s * 1e9) as i64, t));
                    }
                    None => m.saves_started.push(t),
                },
                _ => {}
            }
        }
        m.evals_started.extend(eval_from);
        m.stall_pauses = Pauses::new(intervals);
        m.evals = Pauses::new(evals);
        m
    }
}

/// How close two reports of an eval's end are taken to tell the same eval.
const SAME_EVAL_NS: i64 = 60 * 1_000_000_000;

/// The longest a compilation announced at its start (dynamo's `Recompiling function`)
/// is taken to last when no progress follows: longer silence is a stall.
const OPEN_COMPILE_MAX_NS: i64 = 30 * 60 * 1_000_000_000;
/// Progress lines this soon after a compilation's announcement still report the step
/// before it.
const ANNOUNCE_SKEW_NS: i64 = 1_000_000_000;

/// `pauses` with the compilations added: one that says how long it took was logged when
/// it ended; one announced at its start lasts until the step advances past where it was.
fn with_compiles(pauses: &Pauses, compiles: &[(i64, Option<f64>)], progress: &[Point]) -> Pauses {
    if compiles.is_empty() {
        return pauses.clone();
    }
    let mut intervals = pauses.intervals().to_vec();
    for &(t, seconds) in compiles {
        match seconds {
            Some(s) if s > 0.0 => intervals.push((t - (s * 1e9) as i64, t)),
            _ => {
                // Lines printed within a second of the announcement report work done
                // before it (a trainer logs a step after the next one began).
                let settled = t + ANNOUNCE_SKEW_NS;
                let reached = progress
                    .iter()
                    .filter(|p| p.time_ns <= settled)
                    .filter_map(|p| p.step)
                    .max();
                let next = progress
                    .iter()
                    .filter(|p| p.time_ns > settled)
                    .find(|p| p.step.is_some_and(|s| reached.is_none_or(|r| s > r)))
                    .map_or(t, |p| p.time_ns);
                intervals.push((t, next.min(t + OPEN_COMPILE_MAX_NS)));
            }
        }
    }
    Pauses::new(intervals)
}

/// The longest a save or eval announced at its start is taken to last when no progress
/// follows sooner (the restores' bound in `checkpoint_ops`).
const OPEN_PAUSE_MAX_NS: i64 = 2 * 3600 * 1_000_000_000;

/// `pauses` with the saves or evals announced only as they started (at `started`): each
/// until the first progress after it, less the run's usual time between progress records
/// (progress logged every N steps comes N steps after training went on). A save that took
/// longer than the workload's usual is a slower pace, as a save told with its duration is.
fn with_started(pauses: &Pauses, started: &[i64], progress: &[Point]) -> Pauses {
    if started.is_empty() || progress.len() < 2 {
        return pauses.clone();
    }
    // (The series are in time order: `analyze/read.rs` sorts them.)
    let usual = (progress::sampling_seconds(progress) * 1e9) as i64;
    let mut intervals = pauses.intervals().to_vec();
    for &t in started {
        let next = progress.partition_point(|p| p.time_ns <= t);
        if let Some(p) = progress.get(next)
            && p.time_ns - t <= OPEN_PAUSE_MAX_NS
        {
            let end = (p.time_ns - usual).max(t);
            if end > t {
                intervals.push((t, end));
            }
        }
    }
    Pauses::new(intervals)
}

/// `pauses` with the evals announced only as they ended (at `ended`): each from the last
/// progress before its end.
fn with_ended_evals(pauses: &Pauses, ended: &[i64], progress: &[Point]) -> Pauses {
    if ended.is_empty() {
        return pauses.clone();
    }
    let mut intervals = pauses.intervals().to_vec();
    for &t in ended {
        if let Some(last) = progress.iter().map(|p| p.time_ns).filter(|&p| p < t).max() {
            intervals.push((last, t));
        }
    }
    Pauses::new(intervals)
}

/// What says whether a run that stopped reporting has ended.
#[derive(Debug, Clone, Default)]
pub struct RunEnd {
    /// When the workload announced it finished (its runs, its Jobs), in order.
    pub finished: Vec<i64>,
    /// The workload's last record other than announcements of its end.
    pub last_alive_ns: Option<i64>,
    /// The last warning or error about it.
    pub last_warning_ns: Option<i64>,
    /// When another run of the workload first made progress after this run's last.
    pub superseded_ns: Option<i64>,
}

#[allow(clippy::too_many_arguments)]
pub fn detect_run(
    key: &WorkloadKey,
    run: &RunSeries,
    marks: &Marks,
    pace_out: &mut Vec<PacePair>,
    horizon: i64,
    end: &RunEnd,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let mut out = Vec::new();
    let pace_metric = run.pace_metric();
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
    // Where the step is coarse (a trainer's log shows the epoch to two decimals) several
    // samples repeat one step: the step was reached at the first of them, and the time
    // to the next step runs from there.
    let mut advances: Vec<Point> = Vec::with_capacity(progress_pts.len());
    for p in &progress_pts {
        if advances.last().is_none_or(|l| l.step != p.step) {
            advances.push(*p);
        }
    }
    // The counter is coarser than the reports where most reports repeat a step.
    let coarse = 2 * advances.len() < progress_pts.len();
    let evals = with_ended_evals(&marks.evals, &marks.evals_ended, &progress_pts);
    let evals = &with_started(&evals, &marks.evals_started, &progress_pts);
    let stall_pauses = with_ended_evals(&marks.stall_pauses, &marks.evals_ended, &progress_pts);
    let stall_pauses = with_started(&stall_pauses, &marks.saves_started, &progress_pts);
    let stall_pauses = with_started(&stall_pauses, &marks.evals_started, &progress_pts);
    let pauses = &with_compiles(&stall_pauses, &marks.compiles, &progress_pts);
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
        let per_step: Vec<f64> = advances
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
                finished: &end.finished,
                last_alive_ns: end.last_alive_ns,
                last_warning_ns: end.last_warning_ns,
                superseded_ns: end.superseded_ns,
                metric,
                own_step_time: metric == "step_time_seconds",
                restarts: &marks.restarts,
            },
            cfg,
        ));
    }
    // The wall-clock pace between progress samples, away from the run's own start and
    // incidents (and their warm-up: the first steps compile and fill caches) and
    // announced evals; saves stay in: they are part of the pace.
    let warmup = (baseline_step * 20.0 * 1e9) as i64;
    let began = advances.first().map_or(i64::MIN, |p| p.time_ns);
    // The workload's ends that another run followed (a trainer's log that names no run
    // goes on with the next Job's steps): from each to the next progress, a start.
    let between_runs: Vec<(i64, i64)> = end
        .finished
        .iter()
        .filter_map(|&f| {
            let next = advances.iter().find(|p| p.time_ns > f)?;
            Some((f, next.time_ns))
        })
        .collect();
    for w in advances.windows(2) {
        let (Some(s0), Some(s1)) = (w[0].step, w[1].step) else {
            continue;
        };
        let (t0, t1) = (w[0].time_ns, w[1].time_ns);
        if s1 <= s0
            || t0 < began.saturating_add(warmup)
            || out
                .iter()
                .any(|s| t1 >= s.start_ns && t0 <= s.end_ns + warmup)
            || between_runs
                .iter()
                .any(|&(f, next)| t1 >= f && t0 <= next.saturating_add(warmup))
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
            coarse,
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

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn ev(t: i64, kind: &str, seconds: Option<f64>) -> (i64, String, Option<f64>) {
        (t * S, kind.to_string(), seconds)
    }

    /// Progress records at `times` seconds, each its own step.
    fn progress_at(times: &[i64]) -> Vec<Point> {
        times
            .iter()
            .map(|&t| Point {
                time_ns: t * S,
                value: 1.0,
                step: Some(t),
            })
            .collect()
    }

    #[test]
    fn the_time_between_two_jobs_of_a_workload_is_neither_a_stall_nor_pace() {
        // A trainer's log (no run named): steps 0..=300 every 2 s, the Job completes at
        // 605 s, the next Job restores and goes on from step 290 at 900 s.
        let mut points: Vec<Point> = (0..=300)
            .map(|i| Point {
                time_ns: 2 * i * S,
                step: Some(i),
                value: 2.0,
            })
            .collect();
        points.extend((290..=600).map(|i| Point {
            time_ns: (900 + 2 * (i - 290)) * S,
            step: Some(i),
            value: 2.0,
        }));
        let mut run = RunSeries::default();
        run.metrics
            .entry("step_time_seconds".into())
            .or_default()
            .insert(None, points);
        let marks = Marks::from_announcements(vec![ev(890, "checkpoint_restored", None)]);
        let end = RunEnd {
            finished: vec![605 * S],
            last_alive_ns: Some(1520 * S),
            last_warning_ns: None,
            superseded_ns: None,
        };
        let mut pace = Vec::new();
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        let found = detect_run(&key, &run, &marks, &mut pace, 1520 * S, &end, &cfg);
        assert!(found.is_empty(), "{found:?}");
        assert!(!pace.is_empty());
        assert!(
            pace.iter().all(|p| p.time_ns - p.start_ns <= 2 * S),
            "{pace:?}"
        );
        // Unannounced, the gap is a stall.
        let end = RunEnd {
            finished: Vec::new(),
            ..end
        };
        let found = detect_run(&key, &run, &marks, &mut Vec::new(), 1520 * S, &end, &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
    }

    #[test]
    fn a_save_told_only_at_its_start_lasts_until_training_goes_on() {
        // Progress every 2 s to step 150 (300 s); a save announced at 300 s with no end;
        // progress again from 355 s (the save took 53 s, then the usual 2 s to a record).
        let mut points: Vec<Point> = (0..=150)
            .map(|i| Point {
                time_ns: 2 * i * S,
                step: Some(i),
                value: 1.0,
            })
            .collect();
        points.extend((151..=300).map(|i| Point {
            time_ns: (355 + 2 * (i - 151)) * S,
            step: Some(i),
            value: 1.0,
        }));
        let mut run = RunSeries::default();
        run.metrics
            .entry("train_loss".into())
            .or_default()
            .insert(None, points);
        // (Its last record is its last step, at 653 s.)
        let end = RunEnd {
            last_alive_ns: Some(653 * S),
            ..RunEnd::default()
        };
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        let detect =
            |marks: &Marks| detect_run(&key, &run, marks, &mut Vec::new(), 660 * S, &end, &cfg);
        let saved = Marks::from_announcements(vec![ev(300, "checkpoint_saved", None)]);
        assert_eq!(saved.saves_started, vec![300 * S]);
        assert!(detect(&saved).is_empty(), "{:?}", detect(&saved));
        // Unannounced, the 55 s gap is a stall.
        assert_eq!(detect(&Marks::default()).len(), 1);
    }

    #[test]
    fn an_eval_cut_short_by_a_restart_is_no_pause() {
        // An eval starts at 100 s; the pod is evicted, the run starts again at 200 s and
        // restores at 260 s; its own eval runs 400..480 s.
        let m = Marks::from_announcements(vec![
            ev(480, "eval_finished", None),
            ev(100, "eval_started", None),
            ev(200, "run_started", None),
            ev(260, "checkpoint_restored", Some(40.0)),
            ev(400, "eval_started", None),
        ]);
        assert_eq!(m.evals.intervals(), &[(400 * S, 480 * S)]);
        assert!(!m.stall_pauses.contains(150 * S));
        assert_eq!(m.restarts, vec![200 * S, 260 * S]);
        assert_eq!(m.restores, vec![(260 * S, 40.0)]);
        // An eval told only as it ends ran since the last progress before it; an eval told
        // twice (its start and end, then its end again) is one.
        let twice = Marks::from_announcements(vec![
            ev(300, "eval_started", None),
            ev(301, "eval_started", None),
            ev(400, "eval_finished", None),
            ev(402, "eval_finished", None),
        ]);
        assert!(twice.evals_ended.is_empty());
        let ended = Marks::from_announcements(vec![ev(900, "eval_finished", None)]);
        assert_eq!(ended.evals_ended, vec![900 * S]);
        let progress = progress_at(&[700, 800, 950]);
        let pauses = with_ended_evals(&ended.evals, &ended.evals_ended, &progress);
        assert_eq!(pauses.intervals(), &[(800 * S, 900 * S)]);
        // A save told with its duration pauses from its start.
        let saved = Marks::from_announcements(vec![ev(1000, "checkpoint_saved", Some(14.0))]);
        assert_eq!(saved.stall_pauses.intervals(), &[(986 * S, 1000 * S)]);
    }

    #[test]
    fn an_eval_told_at_its_start_or_with_its_duration_is_a_pause() {
        // `validation … took 93.8s` on a line of no time of its own, dated by the
        // `Running validation` line before it: the eval lasts the time it says.
        let m = Marks::from_announcements(vec![
            ev(100, "eval_started", None),
            ev(100, "eval_finished", Some(93.8)),
        ]);
        assert_eq!(m.evals.intervals(), &[(100 * S, 100 * S + 93_800_000_000)]);
        // Told only as it ends, with its duration: from its end less that.
        let m = Marks::from_announcements(vec![ev(500, "eval_finished", Some(60.0))]);
        assert_eq!(m.evals.intervals(), &[(440 * S, 500 * S)]);
        assert!(m.evals_ended.is_empty());
        // Told only as it starts: open until training goes on.
        let m = Marks::from_announcements(vec![
            ev(100, "eval_started", None),
            ev(200, "eval_started", None),
            ev(150, "run_started", None),
        ]);
        assert_eq!(m.evals_started, vec![200 * S]);
        let progress = progress_at(&[180, 190, 300, 310]);
        let pauses = with_started(&m.evals, &m.evals_started, &progress);
        assert_eq!(pauses.intervals(), &[(200 * S, 290 * S)]);
    }
}
