//! A run that started late because its checkpoint restore was abnormally slow against the
//! workload's own earlier restores (never against its saves). Each restore comes once,
//! however many ranks and sources told it (`state/checkpoint_ops.sql`).

use super::run::{Marks, RunSeries};
use super::stats::median;
use super::{DetectorConfig, Symptom, SymptomKind, WorkloadKey, secs};

/// A run whose first step came long after it started because its checkpoint restore was
/// abnormally slow — over 3x (and a minute more than) the workload's own earlier restores:
/// a stall from the run's start to its first step, costing the restore's time beyond a
/// normal one. Restores are compared with restores, never with saves; a first restore
/// with no history is not abnormal.
pub fn startup_stall(
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
    let restores = &marks.restores;
    let slow = restores
        .iter()
        .filter(|(t, _)| *t >= start && *t <= first)
        .filter_map(|&(t, seconds)| {
            let earlier: Vec<f64> = restores
                .iter()
                .filter(|(h, _)| *h < t - 60_000_000_000)
                .map(|r| r.1)
                .collect();
            let normal = median(&earlier)?;
            (seconds > 3.0 * normal && seconds > normal + 60.0).then_some((seconds, normal))
        })
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let Some((restore, normal)) = slow else {
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
        gpu: None,
    }]
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
        assert!(startup_stall(&key, &run_from(5900), &marks, &cfg).is_empty());
        // Earlier restores of the same workload took ~22 s.
        marks.restores = vec![(1001 * S, 22.0), (3000 * S, 23.0), (5880 * S, 880.0)];
        let found = startup_stall(&key, &run_from(5900), &marks, &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (5000 * S, 5900 * S));
        assert!((found[0].lost_seconds - (880.0 - 22.5)).abs() < 1e-9);
    }
}
