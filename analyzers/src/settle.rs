//! Naming each finding for what happened once its cause is known: a stop ended by a
//! crash's restore is a `restart`; a pace regression and a straggler over the same time
//! are one slowdown; a GPU that held the others back for a cause of its own is where the
//! job's throughput dropped; a serving latency that rose while its workload was short of
//! replicas has the shortfall's cause (`shortfall.rs`).

mod shortfall;

use std::collections::BTreeSet;

use whyslow_schemas::Cause;

use crate::analyze::Finding;
use crate::symptoms::SymptomKind;

pub use shortfall::explain_latency_by_shortfall;

/// How far apart a straggler's onset and a pace regression's may be and still be one
/// onset: a pace regression found in buckets knows its onset only to the attribution's
/// grace ([`crate::attribution::score::PACE_GRACE_S`]).
const PACE_ONSET_PRECISION_NS: i64 = crate::attribution::score::PACE_GRACE_S as i64 * 1_000_000_000;

/// Causes whose mechanism is the workload's own process failing (it is restarted), as
/// opposed to being stopped from outside or hanging.
const CRASHES: &[Cause] = &[Cause::GpuFailure, Cause::GpuMemoryError, Cause::OomKilled];

/// Names each finding for what happened once its cause is known: a stop that ended in a
/// checkpoint restore because the process crashed is a `restart`; a job pace regression
/// and a straggler over the same time are one slowdown — a `straggler` when the rank
/// itself is the cause, else a `regression` of the job's pace.
pub fn settle_kinds(mut findings: Vec<Finding>) -> Vec<Finding> {
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
    let merged_into_pace = |i: usize, findings: &[Finding]| {
        let a = &findings[i].symptom;
        findings.iter().any(|b| {
            let b = &b.symptom;
            matches!(
                b.kind,
                SymptomKind::Regression | SymptomKind::ThroughputDrop
            ) && a.key.namespace == b.key.namespace
                && a.key.workload == b.key.workload
                && a.start_ns <= b.end_ns
                && b.start_ns <= a.end_ns
        })
    };
    // A GPU that held the others back for a cause of its own (a throttle, a neighbour):
    // the job's throughput dropped, the GPU is where.
    for i in 0..findings.len() {
        if findings[i].symptom.kind == SymptomKind::Straggler
            && findings[i].symptom.gpu.is_some()
            && verdict(&findings[i]).is_some_and(|c| c != Cause::StragglerRank)
            && !merged_into_pace(i, &findings)
        {
            findings[i].symptom.kind = SymptomKind::ThroughputDrop;
        }
    }
    for i in 0..findings.len() {
        for j in 0..findings.len() {
            let (a, b) = (&findings[i].symptom, &findings[j].symptom);
            if a.kind != SymptomKind::Straggler
                || !matches!(
                    b.kind,
                    SymptomKind::Regression | SymptomKind::ThroughputDrop
                )
            {
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
                // The rank explains the job's pace only where it held the others back
                // over most of it: a short episode inside a longer regression is part of
                // that slowdown, not its cause.
                if overlap * 2 >= (b.end_ns - b.start_ns).max(1) {
                    // One slowdown: the rank's, over the job's pace window, costing what
                    // the steps measured (GPU activity only estimates the wait).
                    let (start, end, ongoing, lost) =
                        (b.start_ns, b.end_ns, b.ongoing, b.lost_seconds);
                    let f = &mut findings[i];
                    f.symptom.start_ns = f.symptom.start_ns.min(start);
                    f.symptom.end_ns = f.symptom.end_ns.max(end);
                    f.symptom.ongoing |= ongoing;
                    f.symptom.lost_seconds = lost;
                    if let Some(v) = f.causes.first_mut() {
                        v.explained_seconds = lost;
                    }
                    dropped.insert(j);
                } else {
                    dropped.insert(i);
                }
            } else {
                // The job's pace is the slowdown; the straggler's own attribution looked
                // at the rank's GPU and node, where a rank-local cause sits: it names the
                // cause of the pace regression too, unless it found nothing, or it is only
                // a later part of the regression (it began past the pace onset's
                // precision and spans less than half of it): its causes were looked for
                // around its own onset and cannot see what started the slowdown, unless
                // the regression found nothing itself.
                let same_onset = (a.start_ns - b.start_ns).abs() <= PACE_ONSET_PRECISION_NS;
                let spans = overlap * 2 >= (b.end_ns - b.start_ns).max(1);
                let pace_unexplained = verdict(&findings[j]).is_none_or(|c| c == Cause::Unknown);
                if verdict(&findings[i]).is_some_and(|c| c != Cause::Unknown)
                    && verdict(&findings[j]) != verdict(&findings[i])
                    && (same_onset || spans || pace_unexplained)
                {
                    let lost = findings[j].symptom.lost_seconds;
                    let mut causes = findings[i].causes.clone();
                    for (k, c) in causes.iter_mut().enumerate() {
                        c.explained_seconds = if k == 0 { lost } else { 0.0 };
                    }
                    let mut marks = findings[i].marks.clone();
                    marks.extend(findings[j].marks.iter().cloned());
                    marks.sort_by(|x, y| (x.time_ns, &x.event_id).cmp(&(y.time_ns, &y.event_id)));
                    marks.dedup_by(|x, y| x.event_id == y.event_id);
                    let (nodes, pods) = (findings[i].nodes.clone(), findings[i].pods.clone());
                    let r = &mut findings[j];
                    r.causes = causes;
                    r.marks = marks;
                    r.nodes = nodes;
                    r.pods = pods;
                }
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
            // (The pace onset is placed to a step: it may fall a moment before the stop.)
            let follows = b.start_ns >= a.start_ns - 60_000_000_000
                && b.start_ns <= a.end_ns + 600_000_000_000;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attribution::Attributed;
    use crate::symptoms::{Symptom, WorkloadKey};

    const MIN: i64 = 60_000_000_000;

    /// A finding with one cause (confidence 0.8) on GPU 0 of n1; also `shortfall.rs`'s.
    pub(super) fn finding(
        kind: SymptomKind,
        from_min: i64,
        to_min: i64,
        lost: f64,
        cause: Cause,
    ) -> Finding {
        Finding {
            slowdown_id: format!("{}-{from_min}", kind.as_str()),
            symptom: Symptom {
                gpu: Some(("n1".into(), Some("0".into()))),
                ..Symptom::bare(
                    WorkloadKey::default(),
                    kind,
                    from_min * MIN,
                    to_min * MIN,
                    lost,
                )
            },
            nodes: Vec::new(),
            pods: Vec::new(),
            causes: vec![Attributed {
                cause,
                layer: cause.layer(),
                confidence: 0.8,
                explained_seconds: lost,
                node: None,
                device: None,
                summary: String::new(),
                evidence: Vec::new(),
                chain: Vec::new(),
                consequence: false,
            }],
            marks: Vec::new(),
            profiles: Vec::new(),
        }
    }

    #[test]
    fn a_rank_that_held_the_job_back_over_its_regression_is_the_slowdown() {
        let out = settle_kinds(vec![
            finding(SymptomKind::Regression, 40, 160, 1500.0, Cause::Unknown),
            finding(
                SymptomKind::Straggler,
                50,
                140,
                1200.0,
                Cause::StragglerRank,
            ),
        ]);
        assert_eq!(out.len(), 1, "{out:?}");
        let s = &out[0].symptom;
        assert_eq!(s.kind, SymptomKind::Straggler);
        // The job's pace window and the cost its steps measured.
        assert_eq!((s.start_ns, s.end_ns), (40 * MIN, 160 * MIN));
        assert_eq!(s.lost_seconds, 1500.0);
        assert_eq!(out[0].causes[0].explained_seconds, 1500.0);
    }

    #[test]
    fn a_short_straggler_inside_a_longer_regression_is_part_of_it() {
        // Five minutes of one GPU less idle than the rest inside a 45-minute input stall.
        let out = settle_kinds(vec![
            finding(
                SymptomKind::Regression,
                45,
                90,
                900.0,
                Cause::DataloaderStall,
            ),
            finding(SymptomKind::Straggler, 71, 76, 70.0, Cause::StragglerRank),
        ]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].symptom.kind, SymptomKind::Regression);
        assert_eq!(out[0].causes[0].cause, Cause::DataloaderStall);
    }

    #[test]
    fn a_later_straggler_fragment_does_not_rename_the_regression_it_is_part_of() {
        // A neighbour slowed the whole node from minute 40; a three-minute episode of one
        // of its GPUs from minute 61, whose own look-back found a power-cap blip there.
        let out = settle_kinds(vec![
            finding(SymptomKind::Regression, 40, 75, 900.0, Cause::NoisyNeighbor),
            finding(SymptomKind::Straggler, 61, 64, 60.0, Cause::PowerThrottle),
        ]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].symptom.kind, SymptomKind::Regression);
        assert_eq!(out[0].causes[0].cause, Cause::NoisyNeighbor);
    }

    #[test]
    fn a_straggler_that_began_with_the_regression_or_spans_it_names_its_cause() {
        for (from, to, pace) in [
            (41, 50, Cause::NoisyNeighbor),
            (55, 74, Cause::NoisyNeighbor),
            (61, 64, Cause::Unknown),
        ] {
            let out = settle_kinds(vec![
                finding(SymptomKind::Regression, 40, 75, 900.0, pace),
                finding(
                    SymptomKind::Straggler,
                    from,
                    to,
                    60.0,
                    Cause::ThermalThrottle,
                ),
            ]);
            assert_eq!(out.len(), 1, "{from}-{to}: {out:?}");
            assert_eq!(out[0].symptom.kind, SymptomKind::Regression);
            assert_eq!(
                out[0].causes[0].cause,
                Cause::ThermalThrottle,
                "{from}-{to} over {pace:?}"
            );
            assert_eq!(out[0].causes[0].explained_seconds, 900.0);
        }
    }
}
