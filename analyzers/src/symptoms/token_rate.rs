//! Drops of a training run's token throughput at an unchanged pace: an elastic job
//! re-formed on fewer nodes, or a smaller global batch, makes each step do less work, so
//! the step time says nothing while the tokens per second fall. The run's reported
//! `tokens_per_second` (its lowest rank's, as the pace is read) averaged per pace bucket,
//! fell by at least `drop_min_rel` and stayed down, as a utilization does
//! (`throughput::detect`); lost time is the share of each interval the lower rate did not
//! get done. Where the pace itself regressed over the same time, that regression is the
//! slowdown and this is not told.

use std::collections::BTreeMap;

use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, throughput};

/// The metric read.
pub const METRIC: &str = "tokens_per_second";

/// The token-throughput drops of one run, from its ranks' `tokens_per_second` points.
pub fn detect(
    key: &WorkloadKey,
    ranks: &BTreeMap<Option<i32>, Vec<Point>>,
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    let Some(points) = ranks.values().next() else {
        return Vec::new();
    };
    let series = bucket_means(points, (cfg.pace_bucket_seconds * 1e9) as i64);
    throughput::detect(key, METRIC, &series, cfg, horizon_ns)
}

/// The mean of the points in each bucket of `bucket_ns`, at the bucket's end.
fn bucket_means(points: &[Point], bucket_ns: i64) -> Vec<Point> {
    let mut sums: BTreeMap<i64, (f64, u32)> = BTreeMap::new();
    for p in points.iter().filter(|p| p.value.is_finite()) {
        let b = sums
            .entry(p.time_ns.div_euclid(bucket_ns.max(1)))
            .or_default();
        b.0 += p.value;
        b.1 += 1;
    }
    sums.into_iter()
        .map(|(b, (sum, n))| Point {
            time_ns: (b + 1) * bucket_ns,
            step: None,
            value: sum / f64::from(n),
        })
        .collect()
}

/// Whether `drop` is already told by a pace regression of its workload over at least
/// half of the shorter of the two.
pub fn shown_by_pace(drop: &Symptom, found: &[Symptom]) -> bool {
    found.iter().any(|o| {
        matches!(
            o.kind,
            SymptomKind::Regression | SymptomKind::ThroughputDrop
        ) && o.metric.as_deref() != Some(METRIC)
            && o.key.namespace == drop.key.namespace
            && o.key.workload == drop.key.workload
            && 2 * (o.end_ns.min(drop.end_ns) - o.start_ns.max(drop.start_ns))
                >= (o.end_ns - o.start_ns).min(drop.end_ns - drop.start_ns)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    /// Rank 0 reports every 3 s: 1.34M tokens/s (±1%) for two hours, then 25% fewer for
    /// two more at the same step time. One drop, from the change to the end of the data,
    /// a quarter of its time lost.
    fn series(drop_at_s: i64, end_s: i64) -> BTreeMap<Option<i32>, Vec<Point>> {
        let pts = (0..end_s / 3)
            .map(|i| {
                let t = i * 3;
                let level = if t < drop_at_s { 1.34e6 } else { 1.005e6 };
                Point {
                    time_ns: t * S,
                    step: Some(i),
                    value: level * (1.0 + ((i * 7) % 5) as f64 * 0.005 - 0.01),
                }
            })
            .collect();
        BTreeMap::from([(Some(0), pts)])
    }

    #[test]
    fn fewer_tokens_per_step_at_the_same_pace_is_a_drop() {
        let key = WorkloadKey::default();
        let cfg = DetectorConfig::default();
        let found = detect(&key, &series(7200, 14400), &cfg, 14400 * S);
        assert_eq!(found.len(), 1, "{found:?}");
        let d = &found[0];
        assert_eq!(d.kind, SymptomKind::ThroughputDrop);
        assert!(d.ongoing);
        assert!(
            (d.start_ns - 7200 * S).abs() <= 300 * S,
            "{}",
            d.start_ns / S
        );
        assert!(
            (d.lost_seconds - 0.25 * 7200.0).abs() < 0.1 * 1800.0,
            "{}",
            d.lost_seconds
        );
        // A steady rate is no drop.
        assert!(detect(&key, &series(99_999, 14400), &cfg, 14400 * S).is_empty());
    }

    #[test]
    fn a_drop_the_pace_already_tells_is_not_told_again() {
        let key = WorkloadKey::default();
        let drop = Symptom::bare(
            key.clone(),
            SymptomKind::ThroughputDrop,
            100 * S,
            1000 * S,
            50.0,
        );
        let mut pace = Symptom::bare(
            key.clone(),
            SymptomKind::Regression,
            200 * S,
            1100 * S,
            80.0,
        );
        pace.metric = Some("seconds_per_step".into());
        assert!(shown_by_pace(&drop, &[pace.clone()]));
        pace.start_ns = 950 * S;
        assert!(!shown_by_pace(&drop, &[pace]));
    }
}
