//! Stall and restart detection on a run's progress (its step counter over time). A gap
//! across which the workload announced its end (its Job completed, its run finished)
//! separates two runs of it: no stall.
//!
//! Lost time of both (report.md): from the last progress until the step reached before
//! the incident is reached again — downtime plus replayed steps — less announced pauses
//! and less the baseline time of any steps gained beyond that step.

use super::{DetectorConfig, Pauses, Point, Symptom, SymptomKind, WorkloadKey, plot_of, secs};

/// What the progress detector needs about one run.
#[derive(Debug, Clone)]
pub struct ProgressInput<'a> {
    pub key: &'a WorkloadKey,
    /// Progress samples of the pace rank, sorted by time, each with a step.
    pub points: &'a [Point],
    /// The run's normal seconds per step.
    pub baseline_step_seconds: f64,
    pub pauses: &'a Pauses,
    /// The last time anything was observed (the end of an ongoing stall).
    pub horizon_ns: i64,
    /// When the workload announced it finished (its Job completed, its run finished), in
    /// order.
    pub finished: &'a [i64],
    /// The last record of the workload other than announcements of its end (pods,
    /// GPU samples, logs, Kueue events): a sign it is still there.
    pub last_alive_ns: Option<i64>,
    /// The last warning or error about the workload.
    pub last_warning_ns: Option<i64>,
    /// The metric the progress came from.
    pub metric: &'a str,
    /// Whether each point's value is the wall time of its step (`step_time_seconds`).
    pub own_step_time: bool,
    /// When the run started again or restored a checkpoint: a gap holding one is a
    /// restart by its own evidence, however coarse the progress samples are.
    pub restarts: &'a [i64],
    /// When another run of the workload first made progress after this run's last (a Job
    /// deleted and created again, with a new run id): this run ended there.
    pub superseded_ns: Option<i64>,
}

/// A run's usual time between progress records (the median gap between its points with a
/// step, in time order), in seconds; 0 with fewer than two.
pub fn sampling_seconds(points: &[Point]) -> f64 {
    let times: Vec<i64> = points
        .iter()
        .filter(|p| p.step.is_some())
        .map(|p| p.time_ns)
        .collect();
    let gaps: Vec<f64> = times.windows(2).map(|w| secs(w[1] - w[0])).collect();
    super::stats::median(&gaps).unwrap_or(0.0)
}

/// The stalls and restarts of one run, in time order.
pub fn detect(input: &ProgressInput<'_>, cfg: &DetectorConfig) -> Vec<Symptom> {
    let pts: Vec<(i64, i64)> = input
        .points
        .iter()
        .filter_map(|p| p.step.map(|s| (p.time_ns, s)))
        .collect();
    let values: Vec<f64> = input
        .points
        .iter()
        .filter(|p| p.step.is_some())
        .map(|p| p.value)
        .collect();
    let base = input.baseline_step_seconds.max(1e-3);
    // A run that reports every N steps (or minutes) is not stalled between reports.
    let sampling = sampling_seconds(input.points);
    let restart_threshold = (cfg.stall_factor * base).max(cfg.stall_min_seconds);
    let threshold = restart_threshold.max(3.0 * sampling);
    let mut out = Vec::new();
    let mut j = 1;
    while j < pts.len() {
        let (t_prev, s_prev) = pts[j - 1];
        let (t, s) = pts[j];
        // Time inside the step that ends the gap is pace, not a stall (a recompile, a slow
        // step): only the rest of the gap is idle.
        let own = if input.own_step_time { values[j] } else { 0.0 };
        let gap = secs(t - t_prev) - input.pauses.overlap_seconds(t_prev, t) - own;
        // A restart inside the gap: the time beyond the steps it advanced was lost, even
        // where the samples are too far apart for the gap alone to say so.
        let restart_inside = input.restarts.iter().any(|&r| r > t_prev && r <= t);
        // The workload announced its end as its progress stopped: what follows is another
        // run of it (a trainer's log names no run; a Job resubmitted resumes the same
        // steps), and the time between two runs is nobody's stall.
        let ended_inside = input
            .finished
            .iter()
            .any(|&f| f < t && (f - t_prev).abs() <= (threshold * 1e9) as i64);
        let stalled = gap > threshold
            || (restart_inside && gap - (s - s_prev).max(0) as f64 * base > restart_threshold);
        let went_back = s < s_prev;
        if ended_inside || (!stalled && !went_back) {
            j += 1;
            continue;
        }
        // The step reached before the incident and when it was last advanced.
        let s_start = pts[..j].iter().map(|p| p.1).max().unwrap_or(s_prev);
        let t_start = t_prev;
        let kind = if stalled {
            SymptomKind::Stall
        } else {
            SymptomKind::Restart
        };
        let recovered = pts[j..]
            .iter()
            .position(|p| p.1 >= s_start && p.0 > t_start)
            .map(|k| k + j);
        let (t_end, s_end, ongoing) = match recovered {
            Some(k) => (pts[k].0, pts[k].1, false),
            None => (input.horizon_ns.max(pts[pts.len() - 1].0), s_start, true),
        };
        let lost = secs(t_end - t_start)
            - input.pauses.overlap_seconds(t_start, t_end)
            - (s_end - s_start).max(0) as f64 * base;
        let restored = pts[j..]
            .iter()
            .take_while(|p| p.0 <= t_end)
            .any(|p| p.1 < s_start)
            || input.restarts.iter().any(|&r| r > t_start && r <= t_end);
        out.push(symptom(
            input,
            kind,
            restored,
            t_start,
            t_end,
            ongoing,
            lost.max(0.0),
            base,
        ));
        j = recovered.map_or(pts.len(), |k| k + 1);
    }
    // Progress that stopped and never came back before the last data. A run that stops
    // reporting has finished unless something says otherwise: the workload is still
    // there well after its last step (pods, GPU samples, logs, queue events), or a
    // warning or error about it came after.
    if let Some(&(t_last, _)) = pts.last() {
        let threshold_ns = (threshold * 1e9) as i64;
        // Announced soon after the last progress, or after announced work only (a last
        // save and eval before the end is told). The first announcement after the last
        // progress counts (a trainer's own end, then its Job's completion a minute later).
        let first_after = input.finished.iter().find(|&&f| f >= t_last);
        let finished = first_after.or(input.finished.last()).is_some_and(|&f| {
            f <= t_last + threshold_ns
                || secs(f - t_last) - input.pauses.overlap_seconds(t_last, f) <= threshold
        });
        let already = out.last().is_some_and(|s| s.ongoing);
        // Another run of the workload took over: this one stopped where it stopped, and
        // the workload made no progress until the next run did (unless this run announced
        // its end: then the time between runs is nobody's).
        if let Some(next) = input.superseded_ns.filter(|&n| n > t_last) {
            let gap = secs(next - t_last) - input.pauses.overlap_seconds(t_last, next);
            if gap > threshold && !finished && !already {
                out.push(symptom(
                    input,
                    SymptomKind::Stall,
                    input.restarts.iter().any(|&r| r > t_last && r <= next),
                    t_last,
                    next,
                    false,
                    gap,
                    base,
                ));
            }
            return out;
        }
        let quiet = secs(input.horizon_ns - t_last)
            - input.pauses.overlap_seconds(t_last, input.horizon_ns);
        let still_there = input
            .last_alive_ns
            .is_some_and(|a| a > t_last + threshold_ns)
            || input.last_warning_ns.is_some_and(|w| w > t_last);
        if quiet > threshold && !finished && still_there && !already {
            out.push(symptom(
                input,
                SymptomKind::Stall,
                false,
                t_last,
                input.horizon_ns,
                true,
                quiet,
                base,
            ));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn symptom(
    input: &ProgressInput<'_>,
    kind: SymptomKind,
    restored: bool,
    start_ns: i64,
    end_ns: i64,
    ongoing: bool,
    lost_seconds: f64,
    baseline: f64,
) -> Symptom {
    let margin = (end_ns - start_ns).max(60_000_000_000);
    let around: Vec<Point> = input
        .points
        .iter()
        .filter(|p| p.time_ns >= start_ns - margin && p.time_ns <= end_ns + margin)
        .copied()
        .collect();
    Symptom {
        key: input.key.clone(),
        kind,
        start_ns,
        end_ns,
        ongoing,
        lost_seconds,
        baseline: Some(baseline),
        observed: None,
        metric: Some(input.metric.to_string()),
        rank: None,
        plot: plot_of(&around, 400),
        restored,
        gpu: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn run(steps: impl IntoIterator<Item = (i64, i64)>) -> Vec<Point> {
        steps
            .into_iter()
            .map(|(t, s)| Point {
                time_ns: t * S,
                step: Some(s),
                value: 2.0,
            })
            .collect()
    }

    fn input<'a>(
        key: &'a WorkloadKey,
        pts: &'a [Point],
        pauses: &'a Pauses,
        horizon: i64,
    ) -> ProgressInput<'a> {
        ProgressInput {
            key,
            points: pts,
            baseline_step_seconds: 2.0,
            pauses,
            horizon_ns: horizon * S,
            finished: &[],
            last_alive_ns: Some(horizon * S),
            superseded_ns: None,
            last_warning_ns: None,
            metric: "step_time_seconds",
            own_step_time: false,
            restarts: &[],
        }
    }

    #[test]
    fn steady_progress_has_no_symptom() {
        let key = WorkloadKey::default();
        let pts = run((0..500).map(|i| (i * 2, i)));
        let p = Pauses::default();
        assert!(detect(&input(&key, &pts, &p, 1000), &DetectorConfig::default()).is_empty());
    }

    #[test]
    fn preemption_stall_with_restore_counts_downtime_and_replay() {
        // Steps 0..=100 every 2 s, then nothing for 1000 s, then a restore to step 80
        // and steps again every 2 s: step 100 is regained 40 s after the restart.
        let mut steps: Vec<(i64, i64)> = (0..=100).map(|i| (i * 2, i)).collect();
        steps.extend((80..=150).map(|s| (1200 + (s - 80) * 2, s)));
        let pts = run(steps);
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let found = detect(&input(&key, &pts, &p, 1340), &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.kind, SymptomKind::Stall);
        assert_eq!(s.start_ns, 200 * S);
        assert_eq!(s.end_ns, 1240 * S);
        assert!((s.lost_seconds - 1040.0).abs() < 1e-9, "{}", s.lost_seconds);
        assert!(!s.ongoing);
    }

    #[test]
    fn announced_eval_pause_is_not_a_stall() {
        let mut steps: Vec<(i64, i64)> = (0..=100).map(|i| (i * 2, i)).collect();
        steps.extend((101..=200).map(|s| (500 + (s - 101) * 2, s)));
        let pts = run(steps);
        let key = WorkloadKey::default();
        let p = Pauses::new(vec![(201 * S, 499 * S)]);
        assert!(detect(&input(&key, &pts, &p, 700), &DetectorConfig::default()).is_empty());
    }

    #[test]
    fn quick_crash_and_restore_is_a_restart() {
        let mut steps: Vec<(i64, i64)> = (0..=100).map(|i| (i * 2, i)).collect();
        steps.extend((90..=150).map(|s| (210 + (s - 90) * 2, s)));
        let pts = run(steps);
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let found = detect(&input(&key, &pts, &p, 330), &DetectorConfig::default());
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, SymptomKind::Restart);
        // From step 100 at 200 s to step 100 again at 230 s.
        assert!(
            (found[0].lost_seconds - 30.0).abs() < 1e-9,
            "{}",
            found[0].lost_seconds
        );
    }

    #[test]
    fn a_run_that_stops_reporting_with_nothing_after_has_finished() {
        let pts = run((0..=100).map(|i| (i * 2, i)));
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let cfg = DetectorConfig::default();
        // Other workloads' data runs on to 900 s; this one's last record is its last step.
        let mut quiet = input(&key, &pts, &p, 900);
        quiet.last_alive_ns = Some(200 * S);
        assert!(detect(&quiet, &cfg).is_empty());
        // A warning about it after its last step: stopped, not finished.
        quiet.last_warning_ns = Some(230 * S);
        assert_eq!(detect(&quiet, &cfg).len(), 1);
    }

    #[test]
    fn an_end_told_after_a_last_save_and_eval_is_an_end() {
        // Last step at 200 s; a save from 200 s to 300 s and an eval from 300 s to 400 s,
        // then the run says it finished at 402 s. Its pods and logs go on to 900 s.
        let pts = run((0..=100).map(|i| (i * 2, i)));
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        let p = Pauses::new(vec![(200 * S, 300 * S), (300 * S, 400 * S)]);
        let finished = [402 * S];
        let mut told = input(&key, &pts, &p, 900);
        told.finished = &finished;
        assert!(detect(&told, &cfg).is_empty());
        // The same end told after 200 s of silence the announcements do not cover: the
        // run hung before it ended.
        let unexplained = Pauses::new(vec![(200 * S, 250 * S)]);
        let mut hung = input(&key, &pts, &unexplained, 900);
        hung.finished = &finished;
        assert_eq!(detect(&hung, &cfg).len(), 1);
        // The trainer told its end 20 s after its last step, its Job completed 70 s
        // after it: the first end after the last progress is the one that counts.
        let none = Pauses::new(Vec::new());
        let both = [220 * S, 290 * S];
        let mut two = input(&key, &pts, &none, 900);
        two.finished = &both;
        assert!(detect(&two, &cfg).is_empty());
    }

    #[test]
    fn progress_that_never_resumes_is_an_ongoing_stall() {
        let pts = run((0..=100).map(|i| (i * 2, i)));
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let found = detect(&input(&key, &pts, &p, 900), &DetectorConfig::default());
        assert_eq!(found.len(), 1);
        assert!(found[0].ongoing);
        assert_eq!(found[0].end_ns, 900 * S);
        assert!((found[0].lost_seconds - 700.0).abs() < 1e-9);
    }

    #[test]
    fn a_run_another_run_took_over_stalled_until_the_other_progressed() {
        // Steps 0..=100 every 2 s, then silence; the workload's data goes on to 900 s (its
        // next run's). That run first progressed at 500 s: this one stalled until then.
        let pts = run((0..=100).map(|i| (i * 2, i)));
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let taken_over = ProgressInput {
            superseded_ns: Some(500 * S),
            ..input(&key, &pts, &p, 900)
        };
        let found = detect(&taken_over, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(!found[0].ongoing);
        assert_eq!((found[0].start_ns, found[0].end_ns), (200 * S, 500 * S));
        assert!((found[0].lost_seconds - 300.0).abs() < 1e-9);
        // Had this run announced its end, the time between runs is nobody's.
        let finished = [201 * S];
        let announced = ProgressInput {
            finished: &finished,
            ..taken_over
        };
        assert!(detect(&announced, &DetectorConfig::default()).is_empty());
    }

    #[test]
    fn the_gap_after_the_workload_announced_its_end_is_between_two_runs() {
        // Steps 0..=100 every 2 s; the Job completes 5 s after the last one; 400 s later a
        // new Job of the workload resumes from step 90 (a log that names no run).
        let mut steps: Vec<(i64, i64)> = (0..=100).map(|i| (i * 2, i)).collect();
        steps.extend((90..=200).map(|s| (600 + (s - 90) * 2, s)));
        let pts = run(steps);
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let restarts = [590 * S];
        let unannounced = ProgressInput {
            restarts: &restarts,
            ..input(&key, &pts, &p, 820)
        };
        let found = detect(&unannounced, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].start_ns, 200 * S);
        // Announced: no stall, and the new run's own later stalls are still seen.
        let finished = [205 * S];
        let announced = ProgressInput {
            finished: &finished,
            ..unannounced.clone()
        };
        assert!(detect(&announced, &DetectorConfig::default()).is_empty());
        let mut later = pts.clone();
        for p in later.iter_mut().filter(|p| p.time_ns > 700 * S) {
            p.time_ns += 300 * S;
        }
        let stalled = ProgressInput {
            points: &later,
            horizon_ns: 1120 * S,
            last_alive_ns: Some(1120 * S),
            superseded_ns: None,
            ..announced
        };
        let found = detect(&stalled, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, SymptomKind::Stall);
        assert!(found[0].start_ns >= 700 * S - 2 * S, "{found:?}");
    }

    #[test]
    fn a_restart_between_coarse_samples_is_a_stall_by_its_own_evidence() {
        // A trainer logging every 50 steps (100 s at 2 s a step); one gap is 235 s: less
        // than three samples apart, so the gap alone says nothing.
        let mut steps: Vec<(i64, i64)> = (0..=20).map(|i| (i * 100, i * 50)).collect();
        steps.extend((21..=40).map(|i| (2235 + (i - 21) * 100, i * 50)));
        let pts = run(steps);
        let key = WorkloadKey::default();
        let p = Pauses::default();
        let quiet = input(&key, &pts, &p, 4200);
        assert!(detect(&quiet, &DetectorConfig::default()).is_empty());
        // The process restarted inside it (a restore was told at 2100 s): 135 s lost
        // beyond the 50 steps' 100 s of work.
        let restarts = [2100 * S];
        let told = ProgressInput {
            restarts: &restarts,
            ..input(&key, &pts, &p, 4200)
        };
        let found = detect(&told, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, SymptomKind::Stall);
        assert!(found[0].restored);
        assert_eq!((found[0].start_ns, found[0].end_ns), (2000 * S, 2235 * S));
        assert!(
            (found[0].lost_seconds - 135.0).abs() < 1e-9,
            "{}",
            found[0].lost_seconds
        );
    }
}
