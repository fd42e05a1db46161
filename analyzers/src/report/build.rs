//! From an [`Analysis`] to the report model: RFC 3339 times, rounded figures, badput and
//! productive time per workload, everything in a stable order.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};

use super::model::{
    CauseEntry, ChainLink, ProfileEntry, Report, Slowdown, Window, WorkloadSummary,
};
use crate::analyze::{Analysis, Finding};

/// RFC 3339 UTC, whole seconds (`2026-11-29T10:02:11Z`).
pub fn rfc3339(ns: i64) -> String {
    DateTime::<Utc>::from_timestamp_nanos(ns).to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// RFC 3339 with milliseconds (incident publication and evidence times, from which
/// latencies are measured).
pub fn rfc3339_millis(ns: i64) -> String {
    DateTime::<Utc>::from_timestamp_nanos(ns).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Seconds to one decimal.
pub fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round_sig(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return x;
    }
    let digits = 4 - x.abs().log10().ceil() as i32;
    let f = 10f64.powi(digits.clamp(0, 12));
    (x * f).round() / f
}

/// The report of an analysis. `generated_at` is the only field that depends on the clock.
pub fn build(analysis: &Analysis, store: &str, generated_at: DateTime<Utc>) -> Report {
    let slowdowns: Vec<Slowdown> = analysis.findings.iter().map(slowdown).collect();
    let mut workloads = Vec::new();
    for w in &analysis.workloads {
        let mine: Vec<&Slowdown> = slowdowns
            .iter()
            .filter(|s| s.namespace == w.key.namespace && s.workload == w.key.workload)
            .collect();
        let observed = round1((w.last_ns - w.first_ns) as f64 / 1e9);
        let lost: f64 = mine.iter().map(|s| s.lost_seconds).sum();
        let mut badput: BTreeMap<String, f64> = BTreeMap::new();
        for s in &mine {
            let explained: f64 = s.causes.iter().map(|c| c.explained_seconds).sum();
            for c in &s.causes {
                if c.explained_seconds > 0.0 {
                    *badput.entry(c.cause.clone()).or_default() += c.explained_seconds;
                }
            }
            if s.lost_seconds - explained > 0.05 {
                *badput.entry("unknown".to_string()).or_default() += s.lost_seconds - explained;
            }
        }
        for v in badput.values_mut() {
            *v = round1(*v);
        }
        workloads.push(WorkloadSummary {
            namespace: w.key.namespace.clone(),
            workload: w.key.workload.clone(),
            run_id: (w.run_ids.len() == 1).then(|| w.run_ids[0].clone()),
            observed_seconds: observed,
            productive_seconds: round1((observed - lost).max(0.0)),
            badput,
        });
    }
    Report {
        generated_at: generated_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        store: store.to_string(),
        window: Window {
            from: rfc3339(analysis.from_ns),
            to: rfc3339(analysis.to_ns),
        },
        workloads,
        slowdowns,
    }
}

fn slowdown(f: &Finding) -> Slowdown {
    let s = &f.symptom;
    let lost = round1(s.lost_seconds);
    let mut causes: Vec<CauseEntry> = f
        .causes
        .iter()
        .map(|a| CauseEntry {
            cause: a.cause.id().to_string(),
            layer: a.layer.map(|l| l.as_str().to_string()),
            confidence: a.confidence,
            explained_seconds: round1(a.explained_seconds).min(lost),
            node: a.node.clone(),
            device: a.device.clone(),
            summary: a.summary.clone(),
            evidence: a.evidence.clone(),
            chain: a
                .chain
                .iter()
                .map(|l| ChainLink {
                    time: rfc3339(l.time_ns),
                    layer: l.layer.clone(),
                    kind: l.kind.clone(),
                    summary: l.summary.clone(),
                })
                .collect(),
        })
        .collect();
    // Rounding must not let the explained time exceed the lost time.
    let mut left = lost;
    for c in &mut causes {
        c.explained_seconds = round1(c.explained_seconds.min(left));
        left = (left - c.explained_seconds).max(0.0);
    }
    Slowdown {
        slowdown_id: f.slowdown_id.clone(),
        namespace: s.key.namespace.clone(),
        workload: s.key.workload.clone(),
        run_id: s.key.run_id.clone(),
        kind: s.kind.as_str().to_string(),
        ongoing: s.ongoing,
        nodes: f.nodes.clone(),
        pods: f.pods.clone(),
        start: rfc3339(s.start_ns),
        end: rfc3339(s.end_ns),
        lost_seconds: lost,
        baseline: s.baseline.map(round_sig),
        observed: s.observed.map(round_sig),
        metric: s.metric.clone(),
        causes,
        profiles: f
            .profiles
            .iter()
            .map(|p| ProfileEntry {
                time: rfc3339(p.time_ns),
                url: p.url.clone(),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_figures_are_stable() {
        assert_eq!(rfc3339(1_795_946_531_500_000_000), "2026-11-29T10:02:11Z");
        assert_eq!(round1(1316.04), 1316.0);
        assert_eq!(round_sig(1.912345), 1.912);
        assert_eq!(round_sig(1234.567), 1235.0);
    }
}
