//! Scoring reports against a scenario's ground truth (`truth.json` of the fixtures):
//! whether each injected incident was detected, whether its cause is the verdict (top-1)
//! or among the first three, how far the lost time is off, and which slowdowns were
//! reported on workloads the truth declares clean.

use std::collections::{BTreeMap, BTreeSet};

use chrono::DateTime;
use serde::Deserialize;

use crate::report::Report;

/// A scenario's `truth.json`.
#[derive(Debug, Clone, Deserialize)]
pub struct Truth {
    pub incidents: Vec<TruthIncident>,
    #[serde(default)]
    pub clean_workloads: Vec<CleanWorkload>,
}

/// One injected incident.
#[derive(Debug, Clone, Deserialize)]
pub struct TruthIncident {
    pub cause: String,
    pub namespace: String,
    pub workload: String,
    pub slowdown: String,
    pub start: String,
    pub end: String,
    pub lost_seconds: f64,
}

/// A workload with nothing injected.
#[derive(Debug, Clone, Deserialize)]
pub struct CleanWorkload {
    pub namespace: String,
    pub workload: String,
}

/// How one incident fared.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub cause: String,
    pub detected: bool,
    pub kind_right: bool,
    pub top1: bool,
    pub top3: bool,
    /// |reported − true| / true lost time, when detected.
    pub lost_error: Option<f64>,
    pub verdict: Option<String>,
}

/// The score of one report.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Score {
    pub outcomes: Vec<Outcome>,
    /// Slowdowns reported on clean workloads: (workload, kind, start).
    pub false_positives: Vec<String>,
    /// Other slowdowns that match no incident of the truth (a workload the truth does not
    /// name, or an incident's workload at another time).
    pub unmatched: Vec<String>,
}

fn secs(t: &str) -> i64 {
    DateTime::parse_from_rfc3339(t).map_or(0, |d| d.timestamp())
}

/// Scores `report` against `truth`: an incident is detected by a slowdown of its workload
/// overlapping its window (a minute of slack each side): the first in the report's order
/// of the incident's kind, else the first. Its lost time is that slowdown's, plus, where
/// its verdict is the incident's cause, that of the other overlapping slowdowns with that
/// verdict that match no incident of the truth themselves: one incident may be reported
/// in parts (a stall, then the slower pace after it), whose costs add up; each slowdown
/// counts once.
pub fn score(report: &Report, truth: &Truth) -> Score {
    let mut out = Score::default();
    let overlaps = |s: &crate::report::Slowdown, inc: &TruthIncident| {
        s.namespace.as_deref() == Some(inc.namespace.as_str())
            && s.workload.as_deref() == Some(inc.workload.as_str())
            && secs(&s.start) <= secs(&inc.end) + 60
            && secs(&inc.start) <= secs(&s.end) + 60
    };
    let overlapping = |inc: &TruthIncident| -> Vec<usize> {
        (0..report.slowdowns.len())
            .filter(|&i| overlaps(&report.slowdowns[i], inc))
            .collect()
    };
    let matched: Vec<Option<usize>> = truth
        .incidents
        .iter()
        .map(|inc| {
            let o = overlapping(inc);
            o.iter()
                .copied()
                .find(|&i| report.slowdowns[i].kind == inc.slowdown)
                .or(o.first().copied())
        })
        .collect();
    let mut counted: BTreeSet<usize> = matched.iter().flatten().copied().collect();
    for (inc, found) in truth.incidents.iter().zip(&matched) {
        let verdict_is_cause =
            |s: &crate::report::Slowdown| s.causes.first().is_some_and(|c| c.cause == inc.cause);
        let found = found.map(|i| &report.slowdowns[i]);
        let lost = found.map(|s| {
            let mut lost = s.lost_seconds;
            if verdict_is_cause(s) {
                for i in overlapping(inc) {
                    if verdict_is_cause(&report.slowdowns[i]) && counted.insert(i) {
                        lost += report.slowdowns[i].lost_seconds;
                    }
                }
            }
            lost
        });
        out.outcomes.push(match found {
            None => Outcome {
                cause: inc.cause.clone(),
                detected: false,
                kind_right: false,
                top1: false,
                top3: false,
                lost_error: None,
                verdict: None,
            },
            Some(s) => Outcome {
                cause: inc.cause.clone(),
                detected: true,
                kind_right: s.kind == inc.slowdown,
                top1: verdict_is_cause(s),
                top3: s.causes.iter().take(3).any(|c| c.cause == inc.cause),
                lost_error: lost.map(|l| (l - inc.lost_seconds).abs() / inc.lost_seconds.max(1.0)),
                verdict: s.causes.first().map(|c| c.cause.clone()),
            },
        });
    }
    for s in &report.slowdowns {
        let clean = truth.clean_workloads.iter().any(|c| {
            s.namespace.as_deref() == Some(c.namespace.as_str())
                && s.workload.as_deref() == Some(c.workload.as_str())
        });
        if !clean && !truth.incidents.iter().any(|i| overlaps(s, i)) {
            out.unmatched.push(format!(
                "{} of {}/{} at {}",
                s.kind,
                s.namespace.as_deref().unwrap_or("-"),
                s.workload.as_deref().unwrap_or("-"),
                s.start
            ));
        }
    }
    for c in &truth.clean_workloads {
        for s in report.slowdowns.iter().filter(|s| {
            s.namespace.as_deref() == Some(c.namespace.as_str())
                && s.workload.as_deref() == Some(c.workload.as_str())
        }) {
            out.false_positives.push(format!(
                "{} of {}/{} at {}",
                s.kind, c.namespace, c.workload, s.start
            ));
        }
    }
    out
}

/// Figures over many scores, per cause family and overall.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tally {
    pub incidents: usize,
    pub detected: usize,
    pub top1: usize,
    pub top3: usize,
    pub lost_errors: Vec<f64>,
}

impl Tally {
    fn add(&mut self, o: &Outcome) {
        self.incidents += 1;
        self.detected += o.detected as usize;
        self.top1 += o.top1 as usize;
        self.top3 += o.top3 as usize;
        self.lost_errors.extend(o.lost_error);
    }

    /// Share of incidents detected.
    pub fn recall(&self) -> f64 {
        self.detected as f64 / self.incidents.max(1) as f64
    }

    /// Median relative lost-time error of the detected ones.
    pub fn median_lost_error(&self) -> Option<f64> {
        crate::symptoms::stats::median(&self.lost_errors)
    }
}

/// Per cause (and `all`) tallies of many outcomes.
pub fn tally<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> BTreeMap<String, Tally> {
    let mut t: BTreeMap<String, Tally> = BTreeMap::new();
    for o in outcomes {
        t.entry(o.cause.clone()).or_default().add(o);
        t.entry("all".to_string()).or_default().add(o);
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Slowdown;

    fn slowdown(kind: &str, start: &str, end: &str, lost: f64, cause: &str) -> Slowdown {
        Slowdown::for_test(kind, cause, start, end, lost)
    }

    fn truth(lost: f64) -> Truth {
        Truth {
            incidents: vec![TruthIncident {
                cause: "orchestrator.scale_change".into(),
                namespace: "ml".into(),
                workload: "train".into(),
                slowdown: "regression".into(),
                start: "2026-11-29T09:50:00Z".into(),
                end: "2026-11-29T11:00:00Z".into(),
                lost_seconds: lost,
            }],
            clean_workloads: Vec::new(),
        }
    }

    fn report(slowdowns: Vec<Slowdown>) -> Report {
        Report {
            generated_at: String::new(),
            store: String::new(),
            window: crate::report::Window {
                from: "2026-11-29T09:00:00Z".into(),
                to: "2026-11-29T12:00:00Z".into(),
            },
            workloads: Vec::new(),
            slowdowns,
        }
    }

    #[test]
    fn an_incident_reported_in_parts_costs_their_sum_with_its_cause_only() {
        let mut report = report(vec![
            slowdown(
                "stall",
                "2026-11-29T09:49:54Z",
                "2026-11-29T09:53:00Z",
                180.0,
                "orchestrator.scale_change",
            ),
            slowdown(
                "throughput_drop",
                "2026-11-29T09:50:00Z",
                "2026-11-29T11:00:00Z",
                3000.0,
                "orchestrator.scale_change",
            ),
            // Overlapping, but another verdict: not part of the incident's cost.
            slowdown(
                "straggler",
                "2026-11-29T10:30:00Z",
                "2026-11-29T10:40:00Z",
                500.0,
                "unknown",
            ),
        ]);
        let o = &score(&report, &truth(3200.0)).outcomes[0];
        assert!(o.detected && o.top1 && !o.kind_right, "{o:?}");
        let err = o.lost_error.expect("detected");
        assert!((err - 20.0 / 3200.0).abs() < 1e-9, "{err}");

        // The first overlapping slowdown names another cause: its own cost only.
        report.slowdowns[0].causes[0].cause = "unknown".into();
        let o = &score(&report, &truth(3200.0)).outcomes[0];
        assert!(o.detected && !o.top1, "{o:?}");
        let err = o.lost_error.expect("detected");
        assert!((err - 3020.0 / 3200.0).abs() < 1e-9, "{err}");
    }

    #[test]
    fn two_incidents_of_one_cause_each_match_the_slowdown_of_their_kind_once() {
        let mut t = truth(1300.0);
        t.incidents[0].cause = "orchestrator.preemption".into();
        t.incidents[0].slowdown = "capacity_shortfall".into();
        let mut latency = t.incidents[0].clone();
        latency.slowdown = "latency_regression".into();
        latency.lost_seconds = 1500.0;
        t.incidents.push(latency);
        let report = report(vec![
            slowdown(
                "capacity_shortfall",
                "2026-11-29T09:50:00Z",
                "2026-11-29T10:12:00Z",
                1320.0,
                "orchestrator.preemption",
            ),
            slowdown(
                "latency_regression",
                "2026-11-29T09:52:00Z",
                "2026-11-29T10:12:00Z",
                1200.0,
                "orchestrator.preemption",
            ),
        ]);
        let sc = score(&report, &t);
        assert!(
            sc.outcomes
                .iter()
                .all(|o| o.detected && o.top1 && o.kind_right),
            "{sc:?}"
        );
        let errs: Vec<f64> = sc.outcomes.iter().filter_map(|o| o.lost_error).collect();
        assert_eq!(errs.len(), 2);
        assert!((errs[0] - 20.0 / 1300.0).abs() < 1e-9, "{errs:?}");
        assert!((errs[1] - 300.0 / 1500.0).abs() < 1e-9, "{errs:?}");
    }
}
