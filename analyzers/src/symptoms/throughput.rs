//! Throughput drops for workloads without SDK pace data: the accelerator utilization
//! (DCGM `gpu_util`, TPU `duty_cycle`) averaged over the workload's devices, with scrape
//! gaps inside its lifetime read as idle, fell by at least 15% and stayed down.

use super::regression::{self, PaceInput, Worse};
use std::collections::BTreeMap;

use super::stats::median;
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey};

/// One workload's utilization series from per-device samples `(device key, sample)`: the
/// mean over devices per scrape interval (the median interval of the devices' own
/// series), with intervals where no device reported inside its lifetime read as idle.
pub fn workload_series(mut samples: Vec<(String, Point)>) -> Vec<Point> {
    // Sums in one order whatever order the rows came in: the same data, the same bits.
    samples.sort_by(|a, b| {
        (a.1.time_ns, &a.0)
            .cmp(&(b.1.time_ns, &b.0))
            .then(a.1.value.total_cmp(&b.1.value))
    });
    let mut by_device: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    for (d, p) in &samples {
        by_device.entry(d.clone()).or_default().push(p.time_ns);
    }
    let mut dts = Vec::new();
    for ts in by_device.values_mut() {
        ts.sort_unstable();
        dts.extend(
            ts.windows(2)
                .map(|w| (w[1] - w[0]) as f64)
                .filter(|d| *d > 0.0),
        );
    }
    let Some(interval) = median(&dts).map(|d| d as i64).filter(|d| *d > 0) else {
        let mut pts: Vec<Point> = samples.into_iter().map(|(_, p)| p).collect();
        pts.sort_by_key(|p| p.time_ns);
        return pts;
    };
    let mut buckets: BTreeMap<i64, (f64, usize)> = BTreeMap::new();
    for (_, p) in &samples {
        let b = buckets
            .entry(p.time_ns.div_euclid(interval))
            .or_insert((0.0, 0));
        b.0 += p.value;
        b.1 += 1;
    }
    let (Some(&first), Some(&last)) = (buckets.keys().next(), buckets.keys().next_back()) else {
        return Vec::new();
    };
    (first..=last)
        .map(|b| {
            let value = buckets.get(&b).map_or(0.0, |(sum, n)| sum / *n as f64);
            Point {
                time_ns: (b + 1) * interval,
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
    fn devices_are_averaged_and_gaps_read_as_idle() {
        let mut samples = Vec::new();
        for t in 0..10 {
            // Two devices scraped 3 s apart every 15 s.
            samples.push((
                "a".to_string(),
                Point {
                    time_ns: t * 15 * S,
                    step: None,
                    value: 80.0,
                },
            ));
            samples.push((
                "b".to_string(),
                Point {
                    time_ns: t * 15 * S + 3 * S,
                    step: None,
                    value: 100.0,
                },
            ));
        }
        samples.push((
            "a".to_string(),
            Point {
                time_ns: 300 * S,
                step: None,
                value: 90.0,
            },
        ));
        let s = workload_series(samples);
        assert_eq!(s[0].value, 90.0);
        let zeros = s.iter().filter(|p| p.value == 0.0).count();
        assert_eq!(
            zeros, 10,
            "150 s .. 300 s at 15 s is 10 empty intervals: {s:?}"
        );
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
