//! A run that started late because its checkpoint restore was abnormally slow against the
//! workload's own earlier restores (never against its saves). Each restore comes once,
//! however many ranks and sources told it (`state/checkpoint_ops.sql`).

use super::run::{Marks, RunSeries};
use super::stats::median;
use super::{DetectorConfig, Symptom, SymptomKind, WorkloadKey, secs};

/// A run whose first step came long after it started because its checkpoint restore was
/// abnormally slow — over 3x (and a minute more than) the workload's own earlier restores:
/// a stall from the run's start (else the restore's) to its first step, costing the
/// restore's time beyond a normal one. Restores are compared with restores, never with
/// saves; a first restore with no history is not abnormal.
///
/// A run's start is the series' first (nothing before it to see a stall in), or a start
/// after the workload announced its previous run's end (`finished`): a trainer's log
/// that names no run goes on with the next Job's steps, and the progress detector takes
/// the time between two runs for nobody's. A restore after progress that no end
/// announcement closed is the progress detector's (a stall or restart it sees).
pub fn startup_stall(
    key: &WorkloadKey,
    run: &RunSeries,
    marks: &Marks,
    finished: &[i64],
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    // Each series is in time order (`analyze/read.rs`): the progress around a time is a
    // binary search in each, read only for a restore that was slow.
    let series: Vec<&[super::Point]> = run
        .metrics
        .values()
        .flat_map(|r| r.values())
        .map(Vec::as_slice)
        .collect();
    let restores = &marks.restores;
    let mut out: Vec<Symptom> = Vec::new();
    for &(done, seconds) in restores {
        let began = done - (seconds * 1e9) as i64;
        let earlier: Vec<f64> = restores
            .iter()
            .filter(|(h, _)| *h < began - 60_000_000_000)
            .map(|r| r.1)
            .collect();
        let Some(normal) = median(&earlier) else {
            continue;
        };
        if !(seconds > 3.0 * normal && seconds > normal + 60.0) {
            continue;
        }
        // The run's first progress after the restore began, and the progress before it.
        let at = |pts: &[super::Point]| pts.partition_point(|p| p.time_ns < began);
        let Some(first) = series
            .iter()
            .filter_map(|pts| Some(pts.get(at(pts))?.time_ns))
            .min()
        else {
            continue;
        };
        let before = series
            .iter()
            .filter_map(|pts| Some(pts.get(at(pts).checked_sub(1)?)?.time_ns))
            .max();
        let between_runs = before.is_none_or(|b| finished.iter().any(|&f| f >= b && f <= began));
        if !between_runs {
            continue;
        }
        let start = marks
            .run_starts
            .iter()
            .copied()
            .filter(|&t| t <= began && before.is_none_or(|b| t >= b))
            .max()
            .unwrap_or(began);
        let lost = seconds - normal;
        if lost < cfg.min_lost_seconds
            || secs(first - start) < cfg.stall_min_seconds
            || out.iter().any(|o| o.start_ns == start)
        {
            continue;
        }
        out.push(Symptom {
            key: key.clone(),
            kind: SymptomKind::Stall,
            start_ns: start,
            end_ns: first,
            ongoing: false,
            lost_seconds: lost,
            baseline: Some(normal),
            observed: Some(seconds),
            metric: Some("checkpoint_restore_seconds".to_string()),
            rank: None,
            plot: Vec::new(),
            restored: true,
            gpu: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symptoms::Point;

    const S: i64 = 1_000_000_000;

    fn run_from(first_step_s: i64) -> RunSeries {
        let mut run = RunSeries::default();
        run.metrics
            .entry("step_time_seconds".into())
            .or_default()
            .insert(
                Some(0),
                vec![Point {
                    time_ns: first_step_s * S,
                    step: Some(4000),
                    value: 2.0,
                }],
            );
        run
    }

    #[test]
    fn a_slow_restore_is_judged_against_earlier_restores_only() {
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        // Saves take 14 s; the first restore in memory takes 880 s: no history, nothing.
        let mut marks = Marks {
            run_starts: vec![5000 * S],
            restores: vec![(5880 * S, 880.0)],
            save_secs: vec![(1000 * S, 14.0), (2000 * S, 14.0), (3000 * S, 14.0)],
            ..Marks::default()
        };
        assert!(startup_stall(&key, &run_from(5900), &marks, &[], &cfg).is_empty());
        // Earlier restores of the same workload took ~22 s.
        marks.restores = vec![(1001 * S, 22.0), (3000 * S, 23.0), (5880 * S, 880.0)];
        let found = startup_stall(&key, &run_from(5900), &marks, &[], &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (5000 * S, 5900 * S));
        assert!((found[0].lost_seconds - (880.0 - 22.5)).abs() < 1e-9);
    }

    #[test]
    fn a_later_jobs_slow_restore_is_judged_where_the_last_job_announced_its_end() {
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        // One series (a trainer log that names no run): a Job's steps to 2000 s, its end
        // announced at 2010 s; the next Job restores from 2100 s for 900 s and steps on.
        let mut run = RunSeries::default();
        let steps: Vec<Point> = (0..=20)
            .map(|i| (i * 100, i))
            .chain((0..=10).map(|i| (3000 + i * 100, 20 + i)))
            .map(|(t, s)| Point {
                time_ns: t * S,
                step: Some(s),
                value: 1.0,
            })
            .collect();
        run.metrics
            .entry("train_loss".into())
            .or_default()
            .insert(None, steps);
        let marks = Marks {
            run_starts: vec![2090 * S],
            restores: vec![(122 * S, 22.0), (3000 * S, 900.0)],
            ..Marks::default()
        };
        let found = startup_stall(&key, &run, &marks, &[2010 * S], &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (2090 * S, 3000 * S));
        assert!((found[0].lost_seconds - (900.0 - 22.0)).abs() < 1e-9);
        // Unannounced, the gap is the progress detector's.
        assert!(startup_stall(&key, &run, &marks, &[], &cfg).is_empty());
    }
}
