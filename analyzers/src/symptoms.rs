//! Symptom detectors: statistics over metric series (pulled with SQL) that find stalls,
//! restarts, regressions, stragglers, throughput drops and pending workloads, and a serving
//! workload's latency regressions and capacity shortfalls, each with
//! its window, baseline, observed value and lost time as `contracts/report.md` defines.

pub mod gpu_straggler;
pub mod latency;
pub mod mixture;
pub mod pace;
mod peers;
pub mod pending;
pub mod progress;
pub mod regression;
pub mod replica_latency;
pub mod restore;
pub mod run;
pub mod save_cadence;
pub mod serving;
pub mod stats;
pub mod straggler;
pub mod throughput;
pub mod token_rate;

use std::fmt;

/// A workload by namespace and name.
pub type WorkloadName = (Option<String>, Option<String>);

/// Which workload (and run) a series or symptom belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WorkloadKey {
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
}

impl fmt::Display for WorkloadKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.namespace.as_deref().unwrap_or("-");
        let w = self.workload.as_deref().unwrap_or("-");
        write!(f, "{ns}/{w}")?;
        if let Some(r) = &self.run_id {
            write!(f, " (run {r})")?;
        }
        Ok(())
    }
}

/// The slowdown kinds of `contracts/report.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SymptomKind {
    Stall,
    Restart,
    Regression,
    Straggler,
    ThroughputDrop,
    Pending,
    /// A serving workload answers slower than its own baseline at comparable load.
    LatencyRegression,
    /// A serving workload runs fewer ready replicas than it asked for.
    CapacityShortfall,
}

impl SymptomKind {
    /// Every kind, in the order of `contracts/report.md`.
    pub const ALL: &'static [SymptomKind] = &[
        SymptomKind::Stall,
        SymptomKind::Restart,
        SymptomKind::Regression,
        SymptomKind::Straggler,
        SymptomKind::ThroughputDrop,
        SymptomKind::Pending,
        SymptomKind::LatencyRegression,
        SymptomKind::CapacityShortfall,
    ];

    /// The id used in tables and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            SymptomKind::Stall => "stall",
            SymptomKind::Restart => "restart",
            SymptomKind::Regression => "regression",
            SymptomKind::Straggler => "straggler",
            SymptomKind::ThroughputDrop => "throughput_drop",
            SymptomKind::Pending => "pending",
            SymptomKind::LatencyRegression => "latency_regression",
            SymptomKind::CapacityShortfall => "capacity_shortfall",
        }
    }
}

impl fmt::Display for SymptomKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One sample of a series: time, the training step where known, and the value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    /// Nanoseconds since the Unix epoch, UTC.
    pub time_ns: i64,
    pub step: Option<i64>,
    pub value: f64,
}

/// A detected symptom.
#[derive(Debug, Clone, PartialEq)]
pub struct Symptom {
    pub key: WorkloadKey,
    pub kind: SymptomKind,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Not ended by the last data; `end_ns` is then that last time.
    pub ongoing: bool,
    pub lost_seconds: f64,
    pub baseline: Option<f64>,
    pub observed: Option<f64>,
    /// The metric the symptom was seen in.
    pub metric: Option<String>,
    /// The rank concerned (a straggler), if one.
    pub rank: Option<i32>,
    /// The symptom metric over time around the window, for timelines.
    pub plot: Vec<(i64, f64)>,
    /// Whether progress resumed from an earlier step (a checkpoint restore).
    pub restored: bool,
    /// The node and GPU concerned, where the symptom is one GPU's (a straggler found in
    /// DCGM activity, without per-rank data).
    pub gpu: Option<(String, Option<String>)>,
}

#[cfg(test)]
impl Symptom {
    /// A symptom for tests: `kind` of `key` over `start_ns..end_ns` with `lost_seconds`,
    /// nothing else known (no baseline, metric, rank, plot or focus).
    pub(crate) fn bare(
        key: WorkloadKey,
        kind: SymptomKind,
        start_ns: i64,
        end_ns: i64,
        lost_seconds: f64,
    ) -> Symptom {
        Symptom {
            key,
            kind,
            start_ns,
            end_ns,
            ongoing: false,
            lost_seconds,
            baseline: None,
            observed: None,
            metric: None,
            rank: None,
            plot: Vec::new(),
            restored: false,
            gpu: None,
        }
    }
}

/// Time intervals the framework announced as expected pauses (evals, normal checkpoint
/// saves): not slowdowns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pauses(Vec<(i64, i64)>);

impl Pauses {
    /// Pauses from `(start_ns, end_ns)` intervals, in any order, overlapping or not.
    pub fn new(mut intervals: Vec<(i64, i64)>) -> Self {
        intervals.retain(|(a, b)| b > a);
        intervals.sort_unstable();
        let mut merged: Vec<(i64, i64)> = Vec::with_capacity(intervals.len());
        for (a, b) in intervals {
            match merged.last_mut() {
                Some(last) if a <= last.1 => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        Pauses(merged)
    }

    /// Seconds of `[from_ns, to_ns]` covered by pauses.
    pub fn overlap_seconds(&self, from_ns: i64, to_ns: i64) -> f64 {
        let ns: i64 = self
            .0
            .iter()
            .map(|&(a, b)| (b.min(to_ns) - a.max(from_ns)).max(0))
            .sum();
        ns as f64 / 1e9
    }

    /// The merged `(start_ns, end_ns)` intervals, in order.
    pub fn intervals(&self) -> &[(i64, i64)] {
        &self.0
    }

    /// Whether `t_ns` lies inside a pause.
    pub fn contains(&self, t_ns: i64) -> bool {
        self.0.iter().any(|&(a, b)| a <= t_ns && t_ns <= b)
    }
}

/// Thresholds of the detectors.
#[derive(Debug, Clone, PartialEq)]
pub struct DetectorConfig {
    /// A gap in progress longer than this many baseline step times is a stall...
    pub stall_factor: f64,
    /// ...and never one shorter than this many seconds.
    pub stall_min_seconds: f64,
    /// Significance level of a change point.
    pub alpha: f64,
    /// The smallest relative change in pace that is a regression.
    pub regression_min_rel: f64,
    /// The fewest samples on each side of a change point.
    pub min_segment: usize,
    /// A rank whose compute time is this much above its peers' median is straggling.
    pub straggler_min_rel: f64,
    /// The fewest steps a straggler must persist.
    pub straggler_min_steps: usize,
    /// The relative drop of utilization that is a throughput drop (ML Diagnostics: 15%).
    pub drop_min_rel: f64,
    /// The shortest throughput drop, in seconds.
    pub drop_min_seconds: f64,
    /// The shortest pending time worth reporting, in seconds beyond the normal start.
    pub pending_min_seconds: f64,
    /// The longest start taken as normal where the workload has no other start to compare
    /// it with: its wait is a slowdown only beyond this many seconds.
    pub pending_unknown_normal_seconds: f64,
    /// Symptoms that cost less than this many seconds are not reported.
    pub min_lost_seconds: f64,
    /// The shortest bucket of the wall-clock pace series regressions are found in.
    pub pace_bucket_seconds: f64,
    /// The smallest relative rise of a serving latency above its expectation that is a
    /// latency regression...
    pub latency_min_rel: f64,
    /// ...and never within this many times its noise (robust standard deviations)...
    pub latency_noise_k: f64,
    /// ...sustained at least this many seconds.
    pub latency_min_seconds: f64,
}

impl Default for DetectorConfig {
    fn default() -> Self {
        DetectorConfig {
            stall_factor: 10.0,
            stall_min_seconds: 30.0,
            alpha: 1e-6,
            regression_min_rel: 0.10,
            min_segment: 8,
            straggler_min_rel: 0.15,
            straggler_min_steps: 10,
            drop_min_rel: 0.15,
            drop_min_seconds: 120.0,
            pending_min_seconds: 60.0,
            pending_unknown_normal_seconds: 300.0,
            min_lost_seconds: 20.0,
            pace_bucket_seconds: 300.0,
            latency_min_rel: 0.10,
            latency_noise_k: 4.0,
            latency_min_seconds: 300.0,
        }
    }
}

/// Downsamples `points` to at most `max` (time, value) pairs for a timeline, keeping
/// each bucket's extreme so spikes and gaps stay visible.
pub fn plot_of(points: &[Point], max: usize) -> Vec<(i64, f64)> {
    if points.len() <= max || max == 0 {
        return points.iter().map(|p| (p.time_ns, p.value)).collect();
    }
    let per = points.len().div_ceil(max);
    points
        .chunks(per)
        .map(|c| {
            let hi = c
                .iter()
                .fold(c[0], |a, p| if p.value > a.value { *p } else { a });
            (hi.time_ns, hi.value)
        })
        .collect()
}

/// Nanoseconds to seconds.
pub fn secs(ns: i64) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_merge_and_measure_overlap() {
        let p = Pauses::new(vec![(10, 20), (15, 30), (50, 60), (5, 5)]);
        assert_eq!(p.0, vec![(10, 30), (50, 60)]);
        assert!((p.overlap_seconds(0, 55) * 1e9 - 25.0).abs() < 1e-6);
        assert!(p.contains(25) && !p.contains(40));
    }

    #[test]
    fn plot_keeps_peaks() {
        let pts: Vec<Point> = (0..1000)
            .map(|i| Point {
                time_ns: i,
                step: None,
                value: if i == 500 { 9.0 } else { 1.0 },
            })
            .collect();
        let plot = plot_of(&pts, 100);
        assert!(plot.len() <= 100);
        assert!(plot.iter().any(|&(_, v)| v == 9.0));
    }
}
