//! Scoring reports against a scenario's ground truth (`truth.json` of the fixtures):
//! whether each injected incident was detected, whether its cause is the verdict (top-1)
//! or among the first three, how far the lost time is off, and which slowdowns were
//! reported on workloads the truth declares clean.

use std::collections::BTreeMap;

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
/// overlapping its window (a minute of slack each side).
pub fn score(report: &Report, truth: &Truth) -> Score {
    let mut out = Score::default();
    for inc in &truth.incidents {
        let found = report.slowdowns.iter().find(|s| {
            s.namespace.as_deref() == Some(inc.namespace.as_str())
                && s.workload.as_deref() == Some(inc.workload.as_str())
                && secs(&s.start) <= secs(&inc.end) + 60
                && secs(&inc.start) <= secs(&s.end) + 60
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
                top1: s.causes.first().is_some_and(|c| c.cause == inc.cause),
                top3: s.causes.iter().take(3).any(|c| c.cause == inc.cause),
                lost_error: Some(
                    (s.lost_seconds - inc.lost_seconds).abs() / inc.lost_seconds.max(1.0),
                ),
                verdict: s.causes.first().map(|c| c.cause.clone()),
            },
        });
    }
    let overlaps = |s: &crate::report::Slowdown, inc: &TruthIncident| {
        s.namespace.as_deref() == Some(inc.namespace.as_str())
            && s.workload.as_deref() == Some(inc.workload.as_str())
            && secs(&s.start) <= secs(&inc.end) + 60
            && secs(&inc.start) <= secs(&s.end) + 60
    };
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
