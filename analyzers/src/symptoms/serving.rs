//! A serving workload's series from its replicas' per-minute values: a latency averaged over
//! the replicas that report it (where `mixture` cannot pool their quantiles), request and
//! token rates and queues summed, the KV cache's
//! fullest replica, how many replicas count (a load's share per replica); a replica
//! scraped less often than every minute counts with its last value for a while, so a sum
//! does not dip whenever one scrape falls in the next minute.

use std::collections::BTreeMap;

use super::Point;

/// How a replica's last value keeps counting in later minutes without a scrape of its own.
pub const CARRY_BUCKETS: i64 = 2;

/// One replica's value of one series in one bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaSample {
    pub pod: Option<String>,
    /// The bucket's start, ns since the epoch.
    pub time_ns: i64,
    pub value: f64,
}

/// How the replicas of one series make the workload's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Combine {
    /// A latency without the quantiles `mixture` pools: the mean of the replicas that
    /// reported in the bucket.
    Mean,
    /// Rates and queues: the sum over replicas, each carried for [`CARRY_BUCKETS`].
    Sum,
    /// Cache use: the fullest replica, each carried for [`CARRY_BUCKETS`].
    Max,
    /// How many replicas count, each carried for [`CARRY_BUCKETS`] as in [`Combine::Sum`]:
    /// each engine of a balanced Deployment serves the sum's share.
    Count,
}

impl Combine {
    /// How the whyslow series `metric` combines across replicas.
    pub fn of(metric: &str) -> Combine {
        match metric {
            "kv_cache_usage" => Combine::Max,
            m if m.ends_with("_per_second")
                || m == "requests_waiting"
                || m == "requests_running" =>
            {
                Combine::Sum
            }
            _ => Combine::Mean,
        }
    }
}

/// The workload's series from its replicas' samples (any order), one point per bucket of
/// `bucket_ns` from the first to the last bucket any replica reported in; buckets where
/// no replica counts are left out.
pub fn combine(samples: &[ReplicaSample], how: Combine, bucket_ns: i64) -> Vec<Point> {
    let mut by_bucket: BTreeMap<i64, Vec<(&Option<String>, f64)>> = BTreeMap::new();
    for s in samples {
        if s.value.is_finite() {
            by_bucket
                .entry(s.time_ns.div_euclid(bucket_ns))
                .or_default()
                .push((&s.pod, s.value));
        }
    }
    let (Some(&first), Some(&last)) = (by_bucket.keys().next(), by_bucket.keys().next_back())
    else {
        return Vec::new();
    };
    // Each replica's latest value and the bucket it came from.
    let mut latest: BTreeMap<&Option<String>, (i64, f64)> = BTreeMap::new();
    let mut out = Vec::new();
    for b in first..=last {
        let here = by_bucket.get(&b);
        let value = match how {
            Combine::Mean => here.map(|v| {
                let mut xs: Vec<f64> = v.iter().map(|(_, x)| *x).collect();
                // One order whatever order the rows came in: the same bits.
                xs.sort_by(f64::total_cmp);
                xs.iter().sum::<f64>() / xs.len() as f64
            }),
            Combine::Sum | Combine::Max | Combine::Count => {
                for (pod, x) in here.into_iter().flatten() {
                    let e = latest.entry(pod).or_insert((b, *x));
                    if e.0 == b && e.1 != *x {
                        // Two rows of one replica in one bucket: their mean.
                        e.1 = (e.1 + x) / 2.0;
                    } else {
                        *e = (b, *x);
                    }
                }
                let live: Vec<f64> = latest
                    .values()
                    .filter(|(at, _)| b - at <= CARRY_BUCKETS)
                    .map(|(_, x)| *x)
                    .collect();
                (!live.is_empty()).then(|| match how {
                    Combine::Max => live.iter().copied().fold(f64::MIN, f64::max),
                    Combine::Count => live.len() as f64,
                    _ => live.iter().sum(),
                })
            }
        };
        if let Some(value) = value {
            out.push(Point {
                time_ns: b * bucket_ns,
                step: None,
                value,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = 60_000_000_000;

    fn s(pod: &str, minute: i64, value: f64) -> ReplicaSample {
        ReplicaSample {
            pod: Some(pod.to_string()),
            time_ns: minute * M,
            value,
        }
    }

    #[test]
    fn rates_sum_over_replicas_and_carry_a_missed_scrape() {
        // b is scraped every 90 s: it misses minute 1 and minute 4.
        let rows = vec![
            s("a", 0, 10.0),
            s("b", 0, 5.0),
            s("a", 1, 10.0),
            s("a", 2, 12.0),
            s("b", 2, 5.0),
            s("a", 3, 10.0),
            s("b", 3, 6.0),
        ];
        let out = combine(&rows, Combine::Sum, M);
        let v: Vec<f64> = out.iter().map(|p| p.value).collect();
        assert_eq!(v, vec![15.0, 15.0, 17.0, 16.0]);
    }

    #[test]
    fn a_replica_gone_stops_counting_after_the_carry() {
        let mut rows: Vec<ReplicaSample> = (0..6).map(|m| s("a", m, 4.0)).collect();
        rows.push(s("b", 0, 4.0));
        let out = combine(&rows, Combine::Sum, M);
        let v: Vec<f64> = out.iter().map(|p| p.value).collect();
        assert_eq!(v, vec![8.0, 8.0, 8.0, 4.0, 4.0, 4.0]);
    }

    #[test]
    fn replicas_count_as_the_sum_counts_them() {
        // b carried through its missed minute 1; c joins at minute 2; a and b leave after
        // minute 2 and stop counting after the carry.
        let mut rows = vec![
            s("a", 0, 6.0),
            s("b", 0, 4.0),
            s("a", 1, 6.0),
            s("a", 2, 3.0),
            s("b", 2, 3.0),
            s("c", 2, 3.0),
        ];
        rows.extend((3..6).map(|m| s("c", m, 9.0)));
        let v: Vec<f64> = combine(&rows, Combine::Count, M)
            .iter()
            .map(|p| p.value)
            .collect();
        assert_eq!(v, vec![2.0, 2.0, 3.0, 3.0, 3.0, 1.0]);
    }

    #[test]
    fn latency_is_the_mean_of_reporting_replicas_and_cache_the_fullest() {
        let rows = vec![s("a", 0, 0.2), s("b", 0, 0.4), s("a", 1, 0.3)];
        let mean: Vec<f64> = combine(&rows, Combine::Mean, M)
            .iter()
            .map(|p| p.value)
            .collect();
        assert!((mean[0] - 0.3).abs() < 1e-12 && mean[1] == 0.3);
        let max: Vec<f64> = combine(&rows, Combine::Max, M)
            .iter()
            .map(|p| p.value)
            .collect();
        assert_eq!(max, vec![0.4, 0.4]);
        assert_eq!(Combine::of("kv_cache_usage"), Combine::Max);
        assert_eq!(Combine::of("requests_waiting"), Combine::Sum);
        assert_eq!(Combine::of("ttft_seconds_p95"), Combine::Mean);
    }
}
