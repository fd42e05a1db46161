//! Latency regressions of one serving replica against its peers: a replica whose p95
//! latency stands above the median of the other replicas' at the same minutes, by more
//! than the noise of that gap (and the relative floor), for a sustained time.
//!
//! The workload's own p95 pools every replica's requests (`latency.rs`): one slow replica
//! among four moves it late and little, or not at all, though that replica's users wait
//! from the minute its node got a neighbour or its GPU throttled. The gap to the peers
//! shows that replica from its onset, whatever the load does (the peers carry the same
//! load and the same daily cycle). A replica's usual gap (other hardware, another zone)
//! is its centre, not a regression; replicas that slow down together move no gap. The
//! gap is measured only where at least two peers reported, so a replica is never judged
//! against one other.

use std::collections::BTreeMap;

use super::latency::{MIN_ORDINARY, smoothed, sustained, threshold};
use super::stats::median;
use super::{DetectorConfig, Point};

/// The fewest peers a replica's latency is compared with at a minute.
const MIN_PEERS: usize = 2;
/// The fewest minutes with peers a replica is judged on.
const MIN_POINTS: usize = 12;

/// A time one replica stood above its peers.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaRun {
    pub pod: String,
    pub start_ns: i64,
    pub end_ns: i64,
    /// The buckets above the peers (by more than the replica's usual gap and the noise).
    pub above: Vec<i64>,
    /// The peers' median latency over the run, in the series' unit.
    pub baseline: f64,
    /// The replica's median latency over the run.
    pub observed: f64,
    /// The peers' median latency over the run against theirs in the [`BEFORE_NS`] before
    /// it (a ratio; `None` without peers then): near 1 where the replica alone slowed, as
    /// far above as the replica stands above them where every replica slowed and this one
    /// most (a surge).
    pub peers_rise: Option<f64>,
}

/// How far back the peers' latency before a run is read.
pub const BEFORE_NS: i64 = 30 * 60 * 1_000_000_000;

/// The runs of every replica in `by_pod` (one latency series per pod, one point per
/// bucket of `bucket_ns`) above the median of the others, in order of start.
pub fn detect(
    by_pod: &BTreeMap<String, Vec<Point>>,
    bucket_ns: i64,
    cfg: &DetectorConfig,
) -> Vec<ReplicaRun> {
    // Per bucket, each pod's ln latency.
    let mut at: BTreeMap<i64, Vec<(&str, f64)>> = BTreeMap::new();
    for (pod, pts) in by_pod {
        for p in pts.iter().filter(|p| p.value > 0.0 && p.value.is_finite()) {
            at.entry(p.time_ns).or_default().push((pod, p.value.ln()));
        }
    }
    let mut out = Vec::new();
    for pod in by_pod.keys() {
        // (time, the replica's ln latency, the peers' median ln latency)
        let mut pts: Vec<(i64, f64, f64)> = Vec::new();
        for (&t, row) in &at {
            let Some(&(_, own)) = row.iter().find(|(p, _)| p == pod) else {
                continue;
            };
            let peers: Vec<f64> = row
                .iter()
                .filter(|(p, _)| p != pod)
                .map(|(_, x)| *x)
                .collect();
            if peers.len() < MIN_PEERS {
                continue;
            }
            if let Some(m) = median(&peers) {
                pts.push((t, own, m));
            }
        }
        if pts.len() < MIN_POINTS {
            continue;
        }
        let raw: Vec<f64> = pts.iter().map(|(_, own, peers)| own - peers).collect();
        let gap = smoothed(&raw);
        let centre = median(&gap).unwrap_or(0.0);
        let limit = threshold(&raw, cfg);
        let above: Vec<bool> = gap.iter().map(|g| g - centre > limit).collect();
        if above.iter().filter(|a| !**a).count() < MIN_ORDINARY {
            continue;
        }
        let times: Vec<i64> = pts.iter().map(|p| p.0).collect();
        for g in sustained(&times, &above, bucket_ns, cfg) {
            let (Some(&first), Some(&last)) = (g.first(), g.last()) else {
                continue;
            };
            let own: Vec<f64> = g.iter().map(|&i| pts[i].1).collect();
            let peers: Vec<f64> = g.iter().map(|&i| pts[i].2).collect();
            let start_ns = pts[first].0;
            let before: Vec<f64> = pts[..first]
                .iter()
                .filter(|p| p.0 >= start_ns - BEFORE_NS)
                .map(|p| p.2)
                .collect();
            let peers_rise = median(&before)
                .zip(median(&peers))
                .map(|(b, d)| (d - b).exp());
            out.push(ReplicaRun {
                pod: pod.clone(),
                start_ns,
                end_ns: pts[last].0 + bucket_ns,
                above: g.iter().map(|&i| pts[i].0).collect(),
                baseline: median(&peers).unwrap_or(0.0).exp(),
                observed: median(&own).unwrap_or(0.0).exp(),
                peers_rise,
            });
        }
    }
    out.sort_by(|a, b| (a.start_ns, a.end_ns, &a.pod).cmp(&(b.start_ns, b.end_ns, &b.pod)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = 60_000_000_000;

    /// A deterministic wobble in -1..1, different per seed.
    fn wobble(i: i64, seed: i64) -> f64 {
        (((i + 31 * seed) * 7919 % 101) as f64 / 50.0) - 1.0
    }

    /// `pods` replicas over `minutes`, each latency `f(pod, minute)` with its own noise.
    fn replicas(
        pods: usize,
        minutes: i64,
        f: impl Fn(usize, i64) -> f64,
    ) -> BTreeMap<String, Vec<Point>> {
        (0..pods)
            .map(|p| {
                let pts = (0..minutes)
                    .map(|i| Point {
                        time_ns: i * M,
                        step: None,
                        value: f(p, i) * (1.0 + 0.05 * wobble(i, p as i64)),
                    })
                    .collect();
                (format!("vllm-{p}"), pts)
            })
            .collect()
    }

    fn diurnal(i: i64) -> f64 {
        0.2 * (1.5 - (i as f64 * std::f64::consts::TAU / 180.0).cos())
    }

    #[test]
    fn one_replica_slower_than_its_peers_is_found_from_its_onset() {
        // Replica 2 of four slows by 60% at minute 70, for 30 minutes, while the daily
        // load moves everyone's latency.
        let s = replicas(4, 150, |p, i| {
            let slow = if p == 2 && (70..100).contains(&i) {
                1.6
            } else {
                1.0
            };
            slow * diurnal(i)
        });
        let found = detect(&s, M, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        let r = &found[0];
        assert_eq!(r.pod, "vllm-2");
        assert_eq!((r.start_ns, r.end_ns), (70 * M, 100 * M));
        assert_eq!(r.above.len(), 30);
        let ratio = r.observed / r.baseline;
        assert!((1.45..1.75).contains(&ratio), "{ratio}");
        // The peers rose with the daily cycle, less than this replica stood above them.
        let rise = r.peers_rise.unwrap();
        assert!((1.0..1.45).contains(&rise), "{rise}");
    }

    #[test]
    fn a_replica_that_rose_most_when_all_rose_says_its_peers_rose_too() {
        // Everyone's latency triples at minute 70 (a surge); replica 1 takes the worst
        // of it.
        let s = replicas(4, 150, |p, i| {
            let surge = if (70..100).contains(&i) { 3.0 } else { 1.0 };
            let worst = if p == 1 && (70..100).contains(&i) {
                1.5
            } else {
                1.0
            };
            0.2 * surge * worst
        });
        let found = detect(&s, M, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pod, "vllm-1");
        let rise = found[0].peers_rise.unwrap();
        assert!((2.7..3.3).contains(&rise), "{rise}");
    }

    #[test]
    fn replicas_that_slow_down_together_or_differ_by_nature_are_not_regressions() {
        // All four slow together (a surge: the pooled detector's case), and replica 0 is
        // always 30% slower (other hardware).
        let s = replicas(4, 150, |p, i| {
            let all = if (70..100).contains(&i) { 2.0 } else { 1.0 };
            let nature = if p == 0 { 1.3 } else { 1.0 };
            all * nature * diurnal(i)
        });
        assert_eq!(detect(&s, M, &DetectorConfig::default()), Vec::new());
    }

    #[test]
    fn a_replica_is_never_judged_against_one_peer_nor_for_a_short_spike() {
        let slow_pair = replicas(2, 150, |p, i| {
            if p == 1 && (70..100).contains(&i) {
                2.0
            } else {
                0.2
            }
        });
        assert_eq!(
            detect(&slow_pair, M, &DetectorConfig::default()),
            Vec::new()
        );
        let spike = replicas(4, 150, |p, i| {
            if p == 1 && (70..73).contains(&i) {
                2.0
            } else {
                0.2
            }
        });
        assert_eq!(detect(&spike, M, &DetectorConfig::default()), Vec::new());
    }

    #[test]
    fn minutes_where_too_few_peers_reported_are_skipped() {
        // Replica 2 only joins at minute 60: before it, replica 0 had one peer and its
        // slow spell then (20 to 50) is not judged; the one from 90 to 120 is.
        let mut s = replicas(3, 150, |p, i| {
            if p == 0 && ((20..50).contains(&i) || (90..120).contains(&i)) {
                0.4
            } else {
                0.2
            }
        });
        if let Some(late) = s.get_mut("vllm-2") {
            late.retain(|p| p.time_ns >= 60 * M);
        }
        let found = detect(&s, M, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].pod, "vllm-0");
        assert_eq!((found[0].start_ns, found[0].end_ns), (90 * M, 120 * M));
    }
}
