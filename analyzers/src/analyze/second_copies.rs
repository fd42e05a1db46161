//! Which of a workload's framework series the detectors read. A trainer's own log (a
//! series that names no run) and its SDK (a series per run) often tell the same steps:
//! read both and one restart is two slowdowns, its lost time counted twice in the
//! workload's badput. The run's series is the one kept: it carries the run's identity and
//! its per-rank data.

use std::collections::BTreeMap;

use crate::symptoms::WorkloadKey;
use crate::symptoms::run::RunSeries;

/// The share of a run-less series' time span its workload's runs must cover for it to be
/// a copy of them: the same process logs and reports from its start to its end, so the two
/// coincide but for a few seconds at each end.
const COVERED: f64 = 0.8;

fn paced(run: &RunSeries) -> bool {
    run.pace_metric().is_some()
}

/// The first and last time of a series' points.
fn span(run: &RunSeries) -> Option<(i64, i64)> {
    let times = run
        .metrics
        .values()
        .flat_map(|ranks| ranks.values())
        .flat_map(|points| points.iter().map(|p| p.time_ns));
    times.fold(None, |acc, t| {
        Some(acc.map_or((t, t), |(lo, hi): (i64, i64)| (lo.min(t), hi.max(t))))
    })
}

/// The workloads that are members of another (a JobSet's child Jobs, the view
/// `workload_members`): (namespace, member) -> the whole.
pub type Members = BTreeMap<(Option<String>, String), String>;

/// Whether `key`'s series only repeats what another series tells:
/// - it reports no pace where another of the workload's series does (a trainer log's
///   progress beside an SDK's pace is not a second opinion);
/// - or it names no run and the paced series of the workload's runs cover [`COVERED`] of
///   its time span (a log of several runs is covered by them together);
/// - or its workload is a member of another (`members`: a JobSet's child Job, named by
///   the pod whose log it is) whose paced series cover it so (the JobSet's SDK).
pub fn repeats_another(
    key: &WorkloadKey,
    series: &BTreeMap<WorkloadKey, RunSeries>,
    members: &Members,
) -> bool {
    let Some(run) = series.get(key) else {
        return false;
    };
    // A workload's series are together in the map (its keys sort by workload first).
    let of = |workload: &Option<String>| -> Vec<(&WorkloadKey, &RunSeries)> {
        let first = WorkloadKey {
            namespace: key.namespace.clone(),
            workload: workload.clone(),
            run_id: None,
        };
        series
            .range(first..)
            .take_while(|(k, _)| k.namespace == key.namespace && k.workload == *workload)
            .filter(|(k, _)| *k != key)
            .collect()
    };
    let others = of(&key.workload);
    let whole = key
        .workload
        .as_ref()
        .and_then(|w| members.get(&(key.namespace.clone(), w.clone())))
        .map(|w| of(&Some(w.clone())))
        .unwrap_or_default();
    if !paced(run) {
        return others.iter().chain(&whole).any(|(_, r)| paced(r));
    }
    let Some((lo, hi)) = span(run) else {
        return false;
    };
    let mut runs: Vec<(i64, i64)> = whole
        .iter()
        .filter(|(_, r)| paced(r))
        .filter_map(|(_, r)| span(r))
        .collect();
    if key.run_id.is_none() {
        runs.extend(
            others
                .iter()
                .filter(|(k, r)| k.run_id.is_some() && paced(r))
                .filter_map(|(_, r)| span(r)),
        );
    }
    if hi == lo {
        return runs.iter().any(|&(a, b)| a <= lo && lo <= b);
    }
    // Runs of one workload follow each other: their overlaps with the span add up.
    let covered: i64 = runs
        .iter()
        .map(|&(a, b)| (hi.min(b) - lo.max(a)).max(0))
        .sum();
    covered as f64 >= COVERED * (hi - lo) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symptoms::Point;

    const MIN: i64 = 60_000_000_000;

    fn key(run: Option<&str>) -> WorkloadKey {
        WorkloadKey {
            namespace: Some("ml".into()),
            workload: Some("train".into()),
            run_id: run.map(str::to_string),
        }
    }

    /// A series of `metric` with a point a minute from minute `from` to minute `to`.
    fn series(metric: &str, from: i64, to: i64) -> RunSeries {
        let points = (from..=to)
            .map(|m| Point {
                time_ns: m * MIN,
                step: Some(m),
                value: 1.0,
            })
            .collect();
        let mut run = RunSeries::default();
        run.metrics
            .entry(metric.to_string())
            .or_default()
            .insert(None, points);
        run
    }

    #[test]
    fn a_log_telling_a_runs_steps_is_a_second_copy_and_the_run_is_kept() {
        let all = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("step_time_seconds", 0, 90)),
        ]);
        assert!(repeats_another(&key(None), &all, &Members::new()));
        assert!(!repeats_another(&key(Some("run1")), &all, &Members::new()));
    }

    #[test]
    fn a_log_its_runs_cover_together_is_a_copy_and_one_they_cover_in_part_is_read() {
        let two_runs = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("step_time_seconds", 0, 40)),
            (key(Some("run2")), series("step_time_seconds", 42, 90)),
        ]);
        assert!(repeats_another(&key(None), &two_runs, &Members::new()));
        // The SDK was on for the last 20 of the log's 90 minutes: the log alone tells the
        // first 70.
        let late_sdk = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("step_time_seconds", 70, 90)),
        ]);
        assert!(!repeats_another(&key(None), &late_sdk, &Members::new()));
        // A run elsewhere in time, or without a pace of its own, repeats nothing.
        let apart = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("step_time_seconds", 200, 290)),
        ]);
        assert!(!repeats_another(&key(None), &apart, &Members::new()));
        let unpaced_run = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("train_loss", 0, 90)),
        ]);
        assert!(!repeats_another(&key(None), &unpaced_run, &Members::new()));
        assert!(repeats_another(
            &key(Some("run1")),
            &unpaced_run,
            &Members::new()
        ));
    }

    #[test]
    fn another_workloads_run_repeats_nothing() {
        let mut other = key(Some("run1"));
        other.workload = Some("eval".into());
        let all = BTreeMap::from([
            (key(None), series("step_time_seconds", 0, 90)),
            (other, series("step_time_seconds", 0, 90)),
        ]);
        assert!(!repeats_another(&key(None), &all, &Members::new()));
    }

    #[test]
    fn a_member_jobs_log_its_wholes_run_covers_is_a_copy() {
        // A JobSet's SDK run and the log of its child Job's pod (named after the Job).
        let mut member = key(None);
        member.workload = Some("train-workers-0".into());
        let all = BTreeMap::from([
            (member.clone(), series("step_time_seconds", 0, 90)),
            (key(Some("run1")), series("step_time_seconds", 0, 90)),
        ]);
        assert!(!repeats_another(&member, &all, &Members::new()));
        let members = Members::from([(
            (Some("ml".to_string()), "train-workers-0".to_string()),
            "train".to_string(),
        )]);
        assert!(repeats_another(&member, &all, &members));
        // The whole's run itself is no copy of its member's log.
        assert!(!repeats_another(&key(Some("run1")), &all, &members));
    }
}
