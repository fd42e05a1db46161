//! Throughput drops for workloads without SDK pace data: the accelerator utilization
//! (DCGM `gpu_util`, TPU `duty_cycle`) averaged over the workload's devices, with scrape
//! gaps inside its lifetime read as idle, fell by at least 15% and stayed down.

use super::regression::{self, PaceInput, Worse};
use super::stats::median;
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey};

/// Averages samples that share a timestamp (one per device) into one series point, and
/// fills scrape gaps longer than 2.5 intervals with zero-valued points at the interval.
pub fn workload_series(mut samples: Vec<Point>) -> Vec<Point> {
    samples.sort_by_key(|p| p.time_ns);
    let mut merged: Vec<Point> = Vec::new();
    let mut count = 0usize;
    for p in samples {
        match merged.last_mut() {
            Some(last) if last.time_ns == p.time_ns => {
                count += 1;
                last.value += (p.value - last.value) / count as f64;
            }
            _ => {
                merged.push(Point { step: None, ..p });
                count = 1;
            }
        }
    }
    let dts: Vec<f64> = merged
        .windows(2)
        .map(|w| (w[1].time_ns - w[0].time_ns) as f64)
        .collect();
    let Some(interval) = median(&dts).filter(|d| *d > 0.0) else {
        return merged;
    };
    let interval = interval as i64;
    let mut out = Vec::with_capacity(merged.len());
    for (i, p) in merged.iter().enumerate() {
        if i > 0 {
            let prev = merged[i - 1].time_ns;
            if p.time_ns - prev > interval * 5 / 2 {
                let mut t = prev + interval;
                while t < p.time_ns - interval / 2 {
                    out.push(Point {
                        time_ns: t,
                        step: None,
                        value: 0.0,
                    });
                    t += interval;
                }
            }
        }
        out.push(*p);
    }
    out
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
            for (d, v) in [(0, 80.0), (1, 100.0)] {
                let _ = d;
                samples.push(Point {
                    time_ns: t * 15 * S,
                    step: None,
                    value: v,
                });
            }
        }
        samples.push(Point {
            time_ns: 300 * S,
            step: None,
            value: 90.0,
        });
        let s = workload_series(samples);
        assert_eq!(s[0].value, 90.0);
        let zeros = s.iter().filter(|p| p.value == 0.0).count();
        assert_eq!(zeros, 10, "135 s .. 300 s at 15 s is 10 missing scrapes");
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
