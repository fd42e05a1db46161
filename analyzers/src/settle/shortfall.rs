//! A serving workload's latency that rose while it was short of replicas: the shortfall's
//! cause (the replica's quota wait, its node's loss, its preemption…) explains the latency
//! too, where it covers the latency's time and is better supported than what the
//! latency's own candidates found. The shortfall often begins after the latency did (the
//! load rose, the autoscaler asked for a replica, the replica waited): the two ending
//! together — the latency recovered when the replica came — is what ties them.

use crate::analyze::Finding;
use crate::symptoms::SymptomKind;
use whyslow_schemas::Cause;

/// How far apart the two ends may be and still be "together": the latency is read per
/// minute, and a new replica warms its cache for a minute or two.
const ENDS_TOGETHER_NS: i64 = 3 * 60 * 1_000_000_000;

/// Whether shortfall `s` explains latency regression `l`'s time: it covers half of it, or
/// a third of it and they end together.
fn covers(l: &Finding, s: &Finding) -> bool {
    let (a, b) = (&l.symptom, &s.symptom);
    let overlap = (a.end_ns.min(b.end_ns) - a.start_ns.max(b.start_ns)).max(0);
    let span = (a.end_ns - a.start_ns).max(1);
    let together = (a.end_ns - b.end_ns).abs() <= ENDS_TOGETHER_NS;
    2 * overlap >= span || (together && 3 * overlap >= span)
}

/// Gives each latency regression its workload's overlapping capacity shortfall's verdict
/// where that shortfall covers it ([`covers`]) and its verdict is more confident than the
/// regression's own; the regression's other candidates follow it (one the same cause at
/// the same place is that verdict).
pub fn explain_latency_by_shortfall(findings: &mut [Finding]) {
    for i in 0..findings.len() {
        let l = &findings[i];
        if l.symptom.kind != SymptomKind::LatencyRegression {
            continue;
        }
        let own = l.causes.first().map_or(0.0, |c| c.confidence);
        let best = findings
            .iter()
            .filter(|s| {
                s.symptom.kind == SymptomKind::CapacityShortfall
                    && s.symptom.key.namespace == l.symptom.key.namespace
                    && s.symptom.key.workload == l.symptom.key.workload
                    && covers(l, s)
            })
            .filter_map(|s| s.causes.first().map(|c| (s, c)))
            .filter(|(_, c)| c.cause != Cause::Unknown && c.confidence > own)
            .max_by(|x, y| {
                x.1.confidence
                    .total_cmp(&y.1.confidence)
                    .then_with(|| y.0.slowdown_id.cmp(&x.0.slowdown_id))
            });
        let Some((s, c)) = best else {
            continue;
        };
        let mut verdict = c.clone();
        verdict.summary = format!(
            "{}; the latency rose while the workload was short of replicas (capacity shortfall {})",
            verdict.summary, s.slowdown_id
        );
        verdict.explained_seconds = l.symptom.lost_seconds;
        verdict.consequence = false;
        let marks = s.marks.clone();
        let l = &mut findings[i];
        let others: Vec<_> = l
            .causes
            .drain(..)
            .filter(|o| {
                (o.cause, &o.node, &o.device) != (verdict.cause, &verdict.node, &verdict.device)
            })
            .map(|mut o| {
                o.explained_seconds = 0.0;
                o
            })
            .collect();
        l.causes = std::iter::once(verdict).chain(others).collect();
        l.marks.extend(marks);
        l.marks
            .sort_by(|x, y| (x.time_ns, &x.event_id).cmp(&(y.time_ns, &y.event_id)));
        l.marks.dedup_by(|x, y| x.event_id == y.event_id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000_000;

    /// `settle.rs`'s test finding, `from_s`..`to_s` (seconds), with this confidence.
    fn finding(kind: SymptomKind, from_s: i64, to_s: i64, cause: Cause, conf: f64) -> Finding {
        let lost = (to_s - from_s) as f64;
        let mut f = crate::settle::tests::finding(kind, 0, 0, lost, cause);
        f.slowdown_id = format!("{}-{from_s}", kind.as_str());
        (f.symptom.start_ns, f.symptom.end_ns) = (from_s * 1_000_000_000, to_s * 1_000_000_000);
        f.causes[0].confidence = conf;
        f
    }

    fn verdict(f: &Finding) -> Cause {
        f.causes[0].cause
    }

    #[test]
    fn a_latency_that_recovered_with_the_replica_has_the_replicas_cause() {
        // Latency up from minute 15 (the load rising), the replica the autoscaler asked for
        // at 38 waited for quota until 60:57, the latency back at 61: half of the latency's
        // time less three seconds, ending together.
        let m = MIN / 1_000_000_000;
        let mut f = vec![
            finding(
                SymptomKind::LatencyRegression,
                15 * m,
                61 * m,
                Cause::NetworkDegraded,
                0.54,
            ),
            finding(
                SymptomKind::CapacityShortfall,
                38 * m,
                60 * m + 57,
                Cause::QuotaWait,
                0.91,
            ),
        ];
        explain_latency_by_shortfall(&mut f);
        assert_eq!(verdict(&f[0]), Cause::QuotaWait);
        assert_eq!(f[0].causes[0].explained_seconds, f[0].symptom.lost_seconds);
        assert!(f[0].causes[0].summary.contains("short of replicas"));
        assert_eq!(f[0].causes[1].cause, Cause::NetworkDegraded);
        assert_eq!(f[0].causes[1].explained_seconds, 0.0);
        // The shortfall keeps its own.
        assert_eq!(verdict(&f[1]), Cause::QuotaWait);
    }

    #[test]
    fn a_shortfall_over_little_of_the_latency_or_less_sure_or_elsewhere_does_not() {
        let m = MIN / 1_000_000_000;
        let latency = || {
            finding(
                SymptomKind::LatencyRegression,
                0,
                90 * m,
                Cause::KvCachePressure,
                0.6,
            )
        };
        // A fifth of the latency's time, ending with it.
        let mut f = vec![
            latency(),
            finding(
                SymptomKind::CapacityShortfall,
                72 * m,
                90 * m,
                Cause::QuotaWait,
                0.9,
            ),
        ];
        explain_latency_by_shortfall(&mut f);
        assert_eq!(verdict(&f[0]), Cause::KvCachePressure);
        // All of it, but less sure than the latency's own verdict, or unknown.
        for (cause, conf) in [(Cause::QuotaWait, 0.5), (Cause::Unknown, 0.9)] {
            let mut f = vec![
                latency(),
                finding(SymptomKind::CapacityShortfall, 0, 90 * m, cause, conf),
            ];
            explain_latency_by_shortfall(&mut f);
            assert_eq!(verdict(&f[0]), Cause::KvCachePressure);
        }
        // Another workload's shortfall.
        let mut other = finding(
            SymptomKind::CapacityShortfall,
            0,
            90 * m,
            Cause::QuotaWait,
            0.9,
        );
        other.symptom.key.workload = Some("vllm".into());
        let mut f = vec![latency(), other];
        explain_latency_by_shortfall(&mut f);
        assert_eq!(verdict(&f[0]), Cause::KvCachePressure);
    }
}
