//! Throughput drops for workloads without SDK pace data: the accelerator utilization
//! (DCGM `gpu_util`, TPU `duty_cycle`) averaged over the workload's devices per scrape
//! interval (summed by `analyze/utilization.rs`), with scrape gaps inside its lifetime
//! read as idle, fell by at least 15% and stayed down.

use super::regression::{self, PaceInput, Worse};
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey};

/// One scrape interval of a workload's utilization, as `analyze/utilization.rs`
/// returns it: the sum of every device's samples in it, and how many there were.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bucket {
    /// The sample times divided by the interval (the times themselves without one).
    pub index: i64,
    pub sum: f64,
    pub samples: u64,
}

/// One workload's utilization series from its buckets (ascending): the mean over its
/// devices per scrape interval, with intervals where no device reported inside its
/// lifetime read as idle. Without an interval (no device reported twice) each bucket
/// is one sample time.
pub fn workload_series(interval_ns: Option<i64>, buckets: &[Bucket]) -> Vec<Point> {
    let mean = |b: &Bucket| b.sum / b.samples.max(1) as f64;
    let Some(interval) = interval_ns.filter(|i| *i > 0) else {
        return buckets
            .iter()
            .map(|b| Point {
                time_ns: b.index,
                step: None,
                value: mean(b),
            })
            .collect();
    };
    let (Some(first), Some(last)) = (buckets.first(), buckets.last()) else {
        return Vec::new();
    };
    let mut next = buckets.iter().peekable();
    (first.index..=last.index)
        .map(|index| {
            let value = match next.peek() {
                Some(b) if b.index == index => next.next().map_or(0.0, mean),
                _ => 0.0,
            };
            Point {
                time_ns: (index + 1) * interval,
                step: None,
                value,
            }
        })
        .collect()
}

/// The throughput drops of one workload's utilization series.
pub fn detect(
    key: &WorkloadKey,
    metric: &str,
    series: &[Point],
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    regression::detect(
        &PaceInput {
            key,
            points: series,
            metric,
            worse: Worse::Lower,
            kind: SymptomKind::ThroughputDrop,
            min_rel: cfg.drop_min_rel,
            min_seconds: cfg.drop_min_seconds,
            horizon_ns,
        },
        cfg,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn buckets_are_averaged_and_gaps_read_as_idle() {
        let b = |index, sum, samples| Bucket {
            index,
            sum,
            samples,
        };
        // Two devices every 15 s (buckets 0..9), nothing from 150 s to 300 s, then one.
        let mut buckets: Vec<Bucket> = (0..10).map(|i| b(i, 180.0, 2)).collect();
        buckets.push(b(20, 90.0, 1));
        let s = workload_series(Some(15 * S), &buckets);
        assert_eq!(s.len(), 21);
        assert_eq!((s[0].time_ns, s[0].value), (15 * S, 90.0));
        assert_eq!((s[20].time_ns, s[20].value), (315 * S, 90.0));
        let zeros = s.iter().filter(|p| p.value == 0.0).count();
        assert_eq!(
            zeros, 10,
            "150 s .. 300 s at 15 s is 10 empty intervals: {s:?}"
        );
        // Without an interval each bucket is a sample time.
        let single = workload_series(None, &[b(7 * S, 50.0, 2)]);
        assert_eq!((single[0].time_ns, single[0].value), (7 * S, 25.0));
        assert!(workload_series(Some(S), &[]).is_empty());
    }

    #[test]
    fn sustained_drop_is_found_and_small_dip_is_not() {
        let key = WorkloadKey::default();
        let mk = |levels: &[(i64, f64)]| -> Vec<Point> {
            let mut out = Vec::new();
            let mut t = 0;
            for &(n, v) in levels {
                for i in 0..n {
                    out.push(Point {
                        time_ns: t * 15 * S,
                        step: None,
                        value: v + ((i * 7) % 5) as f64 - 2.0,
                    });
                    t += 1;
                }
            }
            out
        };
        let drop = mk(&[(60, 92.0), (40, 70.0)]);
        let found = detect(
            &key,
            "gpu_util",
            &drop,
            &DetectorConfig::default(),
            1500 * S,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].kind, SymptomKind::ThroughputDrop);
        let dip = mk(&[(60, 92.0), (40, 85.0)]);
        assert!(detect(&key, "gpu_util", &dip, &DetectorConfig::default(), 1500 * S).is_empty());
    }
}
