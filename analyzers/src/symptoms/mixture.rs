//! The p95 latency of a serving workload's requests taken together, from its replicas'
//! own quantiles: what Prometheus gives from the replicas' histogram buckets summed
//! (`histogram_quantile(0.95, sum by (le) (…))`), computed from the p50, p95 and p99 the
//! decoder kept. Each replica's latency distribution is interpolated through its quantiles
//! on a log-normal scale (straight lines between them on a normal probability plot of the
//! log latency: a log-normal when they are in line), the replicas are mixed in proportion
//! to the requests each served, and the mixture's 95th percentile is solved for. One slow
//! replica of three then moves the workload's p95 as it moves its users' tail, where a
//! mean of the replicas' p95 would divide its rise by three.

use std::collections::BTreeMap;

use statrs::distribution::{ContinuousCDF, Normal};

use super::Point;
use super::serving::ReplicaSample;

/// Φ⁻¹(0.95) and Φ⁻¹(0.99): where the p95 and p99 stand on the normal scale (the p50 at 0).
const Z95: f64 = 1.644_853_626_951_472_2;
const Z99: f64 = 2.326_347_874_040_840_8;
/// The least rise (in ln) between a replica's consecutive quantiles: a histogram with all
/// its requests in one bucket can give a p95 equal to its p50, and a flat step has no
/// inverse.
const MIN_STEP: f64 = 1e-3;
/// Bisection steps: the bracket of the replicas' p95s (in ln) halved this often is far
/// below any latency's precision.
const STEPS: usize = 64;

/// One replica's latency quantiles in one bucket and the requests they were measured on.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReplicaQuantiles {
    pub p50: Option<f64>,
    pub p95: Option<f64>,
    pub p99: Option<f64>,
    pub requests: Option<f64>,
}

fn usable(x: Option<f64>) -> Option<f64> {
    x.filter(|v| v.is_finite() && *v > 0.0)
}

/// One replica's distribution: knots `(z, ln latency)` rising in both.
struct Curve {
    knots: Vec<(f64, f64)>,
    weight: f64,
}

impl Curve {
    fn new(r: &ReplicaQuantiles, weight: f64) -> Option<Curve> {
        let (p50, p95) = (usable(r.p50)?, usable(r.p95)?);
        let mut knots = vec![(0.0, p50.ln()), (Z95, p95.ln())];
        if let Some(p99) = usable(r.p99) {
            knots.push((Z99, p99.ln()));
        }
        for k in 1..knots.len() {
            knots[k].1 = knots[k].1.max(knots[k - 1].1 + MIN_STEP);
        }
        Some(Curve { knots, weight })
    }

    /// Where `l` (ln latency) stands on the normal scale: linear between the knots, the
    /// end segments carried on beyond them.
    fn z(&self, l: f64) -> f64 {
        let n = self.knots.len();
        let k = self.knots[1..n - 1]
            .iter()
            .take_while(|(_, lk)| l > *lk)
            .count();
        let ((z0, l0), (z1, l1)) = (self.knots[k], self.knots[k + 1]);
        z0 + (l - l0) * (z1 - z0) / (l1 - l0)
    }
}

/// The p95 of the replicas' requests together. `None` when no replica has a p95; a lone
/// replica's own p95; the mean of the p95s where a replica has no p50 to shape its
/// distribution. Replicas weigh by their requests where all report them, else equally.
pub fn pooled_p95(replicas: &[ReplicaQuantiles]) -> Option<f64> {
    let with_p95: Vec<&ReplicaQuantiles> = replicas
        .iter()
        .filter(|r| usable(r.p95).is_some())
        .collect();
    let p95s: Vec<f64> = with_p95.iter().filter_map(|r| usable(r.p95)).collect();
    match p95s.len() {
        0 => return None,
        1 => return Some(p95s[0]),
        _ => {}
    }
    let by_requests = with_p95.iter().all(|r| usable(r.requests).is_some());
    let curves: Option<Vec<Curve>> = with_p95
        .iter()
        .map(|r| {
            let w = if by_requests {
                usable(r.requests).unwrap_or(1.0)
            } else {
                1.0
            };
            Curve::new(r, w)
        })
        .collect();
    let Some(curves) = curves else {
        let mut xs = p95s;
        // One order whatever order the replicas came in: the same bits.
        xs.sort_by(f64::total_cmp);
        return Some(xs.iter().sum::<f64>() / xs.len() as f64);
    };
    let total: f64 = curves.iter().map(|c| c.weight).sum();
    let normal = Normal::standard();
    let share_below = |l: f64| {
        curves
            .iter()
            .map(|c| c.weight * normal.cdf(c.z(l)))
            .sum::<f64>()
            / total
    };
    // The mixture's p95 lies between the replicas' own: each holds 95% below its p95.
    let (mut lo, mut hi) = p95s.iter().fold((f64::MAX, f64::MIN), |(lo, hi), x| {
        (lo.min(x.ln()), hi.max(x.ln()))
    });
    for _ in 0..STEPS {
        let mid = 0.5 * (lo + hi);
        if share_below(mid) < 0.95 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Some((0.5 * (lo + hi)).exp())
}

/// The workload's p95 per bucket of `bucket_ns` from its replicas' per-bucket p50, p95,
/// p99 and requests (any order; two rows of one replica in one bucket are averaged), one
/// point per bucket in which any replica has a p95.
pub fn pool(
    p50: &[ReplicaSample],
    p95: &[ReplicaSample],
    p99: &[ReplicaSample],
    requests: &[ReplicaSample],
    bucket_ns: i64,
) -> Vec<Point> {
    type Slot = [(f64, u32); 4];
    let mut slots: BTreeMap<(i64, Option<&str>), Slot> = BTreeMap::new();
    for (i, rows) in [p50, p95, p99, requests].into_iter().enumerate() {
        for s in rows.iter().filter(|s| s.value.is_finite()) {
            let slot = slots
                .entry((s.time_ns.div_euclid(bucket_ns), s.pod.as_deref()))
                .or_default();
            slot[i].0 += s.value;
            slot[i].1 += 1;
        }
    }
    let mean = |(sum, n): (f64, u32)| (n > 0).then(|| sum / f64::from(n));
    let mut by_bucket: BTreeMap<i64, Vec<ReplicaQuantiles>> = BTreeMap::new();
    for ((b, _), slot) in slots {
        by_bucket.entry(b).or_default().push(ReplicaQuantiles {
            p50: mean(slot[0]),
            p95: mean(slot[1]),
            p99: mean(slot[2]),
            requests: mean(slot[3]),
        });
    }
    by_bucket
        .into_iter()
        .filter_map(|(b, replicas)| {
            pooled_p95(&replicas).map(|value| Point {
                time_ns: b * bucket_ns,
                step: None,
                value,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(p50: f64, p95: f64, p99: f64, requests: f64) -> ReplicaQuantiles {
        ReplicaQuantiles {
            p50: Some(p50),
            p95: Some(p95),
            p99: Some(p99),
            requests: Some(requests),
        }
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * b.abs()
    }

    #[test]
    fn equal_replicas_pool_to_their_own_p95() {
        let r = q(0.1, 0.3, 0.5, 40.0);
        let p = pooled_p95(&[r, r, r]).unwrap();
        assert!(close(p, 0.3, 1e-9), "{p}");
    }

    #[test]
    fn a_lone_replica_is_its_own_p95_and_none_is_none() {
        assert_eq!(pooled_p95(&[q(0.1, 0.3, 0.5, 4.0)]), Some(0.3));
        assert_eq!(pooled_p95(&[]), None);
        let no_p95 = ReplicaQuantiles {
            p50: Some(0.1),
            ..Default::default()
        };
        assert_eq!(pooled_p95(&[no_p95]), None);
    }

    #[test]
    fn one_slow_replica_of_three_lifts_the_pool_more_than_the_mean() {
        // Log-normal replicas (σ = ln 3 / 1.645); one 1.8× slower, equal traffic.
        let fast = q(0.1, 0.3, 0.3 * 3f64.powf((Z99 - Z95) / Z95), 100.0);
        let slow = q(0.18, 0.54, 0.54 * 3f64.powf((Z99 - Z95) / Z95), 100.0);
        let pooled = pooled_p95(&[fast, fast, slow]).unwrap();
        let mean = (0.3 + 0.3 + 0.54) / 3.0;
        // (2 Φ((l - ln 0.1)/σ) + Φ((l - ln 0.18)/σ)) / 3 = 0.95, solved apart from this
        // code (Python, math.erf, bisection): l = ln 0.40365.
        assert!(close(pooled, 0.40365, 1e-3), "{pooled}");
        assert!(pooled > mean + 0.02, "{pooled} vs mean {mean}");
        // Within the replicas' p95s, as any mixture's.
        assert!((0.3..=0.54).contains(&pooled));
    }

    #[test]
    fn replicas_weigh_by_the_requests_they_served() {
        let fast = q(0.1, 0.3, 0.4, 1000.0);
        let slow = q(0.2, 0.6, 0.8, 10.0);
        let pooled = pooled_p95(&[fast, slow]).unwrap();
        assert!(
            pooled < 0.32,
            "a replica with 1% of the requests barely counts: {pooled}"
        );
        let unweighted = pooled_p95(&[
            ReplicaQuantiles {
                requests: None,
                ..fast
            },
            slow,
        ])
        .unwrap();
        assert!(
            unweighted > 0.4,
            "equal weights without every count: {unweighted}"
        );
    }

    #[test]
    fn without_a_p50_the_replicas_p95s_are_averaged() {
        let r = ReplicaQuantiles {
            p95: Some(0.2),
            ..Default::default()
        };
        let s = ReplicaQuantiles {
            p95: Some(0.4),
            ..Default::default()
        };
        assert!(close(pooled_p95(&[r, s]).unwrap(), 0.3, 1e-12));
    }

    #[test]
    fn flat_quantiles_do_not_break_the_curve() {
        // All requests of a bucket in one histogram bucket: p50 = p95 = p99.
        let flat = q(0.5, 0.5, 0.5, 10.0);
        let other = q(0.1, 0.3, 0.4, 10.0);
        let p = pooled_p95(&[flat, other]).unwrap();
        assert!(p.is_finite() && (0.3..=0.5).contains(&p), "{p}");
    }

    #[test]
    fn pool_buckets_rows_per_replica_and_bucket() {
        let m = 60_000_000_000;
        let s = |pod: &str, t: i64, v: f64| ReplicaSample {
            pod: Some(pod.into()),
            time_ns: t,
            value: v,
        };
        let p50 = [s("a", 0, 0.1), s("b", 0, 0.1), s("a", m, 0.1)];
        let p95 = [
            s("a", 0, 0.3),
            s("b", 10, 0.3),
            s("a", m, 0.2),
            s("a", m + 5, 0.4),
        ];
        let p99 = [s("a", 0, 0.5), s("b", 0, 0.5)];
        let req = [s("a", 0, 10.0), s("b", 0, 10.0)];
        let pts = pool(&p50, &p95, &p99, &req, m);
        assert_eq!(pts.len(), 2);
        assert_eq!(pts[0].time_ns, 0);
        assert!(close(pts[0].value, 0.3, 1e-9), "{}", pts[0].value);
        // Bucket 1: replica a alone, its two rows averaged.
        assert_eq!((pts[1].time_ns, pts[1].value), (m, 0.30000000000000004));
    }
}
