//! A straggler found without per-rank data: in synchronous training the ranks that wait
//! for a slow one sit in collectives, whose NCCL kernels spin (so `gpu_util` stays high
//! everywhere) but do no SM or tensor work. The straggler is the one GPU whose SM (or
//! tensor pipe) activity stays at its usual level while its peers' drops, or the one node
//! whose GPUs all do (a whole host slowed: each bucket then names one of its GPUs by
//! noise, and the episode is the node's, its device unnamed). Lost time is the
//! share of wall time the peers spent waiting: over each minute of the episode, one minus
//! the peers' activity relative to their usual level.
//!
//! The peers' usual level is unclear when the episode covers most of the window, or when
//! the whole job's activity moves (evals, saves, restores): so a GPU also counts as kept
//! where its activity against its peers' median rose by the drop's share above its own
//! usual ratio (that ratio in the calmest buckets, where the GPUs' levels are closest:
//! GPUs of a synchronous job do the same work, one always busier than the rest is no
//! change, and a GPU that waited through a long episode elsewhere is not busier after).

use std::collections::BTreeMap;

use super::peers::PeerMedians;
use super::stats::median;
use super::{DetectorConfig, Symptom, SymptomKind, WorkloadKey, secs};

/// One GPU of a workload: its activity per time bucket.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSeries {
    pub node: String,
    pub device: Option<String>,
    /// `(bucket start, mean activity)`, sorted by time.
    pub points: Vec<(i64, f64)>,
}

/// The GPU's own level counts as kept when it is at least this share of its usual.
const KEPT: f64 = 0.9;
/// The most unmarked buckets in a row inside one episode.
const MAX_UNMARKED: i64 = 2;
/// The power metric, read where no profiling field is collected.
pub const POWER: &str = "power_watts";
/// The fewest marked buckets an episode on power spans.
const MIN_POWER_BUCKETS: usize = 10;
/// The fewest buckets an episode spans.
const MIN_BUCKETS: usize = 3;
/// The quantile of a GPU's own values taken as its usual level (an episode may cover a
/// good part of the window, so not the median).
const USUAL_QUANTILE: f64 = 0.8;

/// A GPU's usual ratio to its peers is read in the calmest tenth of the buckets...
const CALM_SHARE: usize = 10;
/// ...and in at least this many.
const MIN_CALM: usize = 3;

/// In one bucket: the GPU that kept its level, its level and its median peer's (both
/// relative to their usual; for a GPU marked by its ratio to its peers, the peers' level
/// is that ratio's usual over its current value).
type Mark = (usize, f64, f64);

fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    if xs.is_empty() {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let i = ((v.len() - 1) as f64 * q).round() as usize;
    Some(v[i.min(v.len() - 1)])
}

/// The straggler episodes of one workload's GPUs, bucketed `bucket_ns` apart.
pub fn detect(
    key: &WorkloadKey,
    gpus: &[GpuSeries],
    bucket_ns: i64,
    metric: &str,
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    if gpus.len() < 2 || bucket_ns <= 0 {
        return Vec::new();
    }
    let usual: Vec<f64> = gpus
        .iter()
        .map(|g| {
            let vals: Vec<f64> = g.points.iter().map(|p| p.1).collect();
            quantile(&vals, USUAL_QUANTILE).unwrap_or(0.0)
        })
        .collect();
    // bucket -> per GPU level (GPUs with no usual level left out)
    let mut raw: BTreeMap<i64, Vec<Option<f64>>> = BTreeMap::new();
    for (i, g) in gpus.iter().enumerate() {
        if usual[i] <= 1e-6 {
            continue;
        }
        for &(t, v) in &g.points {
            raw.entry(t).or_insert_with(|| vec![None; gpus.len()])[i] = Some(v);
        }
    }
    // A GPU's level against its peers' median in one bucket.
    let ratio = |levels: &[Option<f64>], peers: &PeerMedians, i: usize| -> Option<f64> {
        let p = peers.excluding(levels[i]).filter(|p| *p > 1e-6)?;
        Some(levels[i]? / p)
    };
    // The calmest buckets: where the GPUs' levels (against their own usual) are closest
    // together. Whoever straggles, and however long, the job was calm at some point:
    // there each GPU's ratio to its peers is its usual one (a busier rank 0 stays busier).
    let spread = |levels: &[Option<f64>]| -> Option<f64> {
        let rel: Vec<f64> = levels
            .iter()
            .zip(&usual)
            .filter_map(|(v, u)| v.filter(|_| *u > 1e-6).map(|v| v / u))
            .collect();
        let (lo, hi) = rel
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &x| {
                (lo.min(x), hi.max(x))
            });
        (rel.len() >= 2).then_some(hi - lo)
    };
    let mut calm: Vec<(f64, &Vec<Option<f64>>)> = raw
        .values()
        .filter_map(|l| spread(l).map(|s| (s, l)))
        .collect();
    calm.sort_by(|a, b| a.0.total_cmp(&b.0));
    calm.truncate((calm.len() / CALM_SHARE).max(MIN_CALM));
    let mut scratch = Vec::with_capacity(gpus.len());
    let calm: Vec<(&Vec<Option<f64>>, PeerMedians)> = calm
        .into_iter()
        .map(|(_, l)| {
            (
                l,
                PeerMedians::new(l.iter().flatten().copied(), &mut scratch),
            )
        })
        .collect();
    let usual_ratio: Vec<Option<f64>> = (0..gpus.len())
        .map(|i| {
            let rs: Vec<f64> = calm.iter().filter_map(|(l, p)| ratio(l, p, i)).collect();
            median(&rs)
        })
        .collect();
    // Per bucket: the GPU that keeps its level while the median peer drops, if one.
    let floor = 1.0 - cfg.drop_min_rel;
    let marks: Vec<(i64, Option<Mark>)> = raw
        .iter()
        .map(|(&t, levels)| {
            // Each GPU's level relative to its usual.
            let rel: Vec<Option<f64>> = levels
                .iter()
                .zip(&usual)
                .map(|(v, u)| v.map(|v| v / u))
                .collect();
            let rel_peers = PeerMedians::new(rel.iter().flatten().copied(), &mut scratch);
            let level_peers = PeerMedians::new(levels.iter().flatten().copied(), &mut scratch);
            let best = (0..gpus.len())
                .filter_map(|i| {
                    let own = rel[i]?;
                    let p = rel_peers.excluding(rel[i])?;
                    if own >= KEPT && p <= floor && own - p >= cfg.drop_min_rel {
                        return Some((i, own, p));
                    }
                    // Against its peers: their level relative to its own usual ratio.
                    let by_ratio = usual_ratio[i]
                        .zip(ratio(levels, &level_peers, i))
                        .filter(|(u, r)| *u > 1e-6 && *r > 1e-6)
                        .map(|(u, r)| u / r)?;
                    // Its own level may wander with the job's (it is the pace), but it
                    // stays near its usual: a GPU that dropped with the rest and is only
                    // a little less idle than they are kept nothing.
                    (own >= floor && by_ratio <= floor).then_some((i, own, by_ratio))
                })
                .max_by(|a, b| (a.1 - a.2).total_cmp(&(b.1 - b.2)).then(b.0.cmp(&a.0)));
            (t, best)
        })
        .collect();
    let mut out = Vec::new();
    let mut k = 0;
    while k < marks.len() {
        let Some((first, _, _)) = marks[k].1 else {
            k += 1;
            continue;
        };
        // Consecutive buckets (up to two missing or unmarked buckets in a row tolerated:
        // a sample's noise flickers a mark) naming a GPU of this node. When the whole node
        // is slow (a neighbour on its host, its NIC), all its GPUs keep their level while
        // the other nodes' wait, and which of them a bucket names is noise: the episode
        // is the node's, not a run of short ones per GPU.
        let node = &gpus[first].node;
        let on_node = |g: usize| gpus[g].node == *node;
        let mut last = k;
        let mut j = k + 1;
        while j < marks.len() && marks[j].0 - marks[last].0 <= (MAX_UNMARKED + 1) * bucket_ns {
            // A bucket naming a GPU of another node counts as unmarked: the episode ends
            // only when this node stays unnamed for longer than the tolerance.
            if let Some((g, _, _)) = marks[j].1
                && on_node(g)
            {
                last = j;
            }
            j += 1;
        }
        let episode: Vec<(usize, f64, f64)> = marks[k..=last]
            .iter()
            .filter_map(|(_, m)| m.filter(|m| on_node(m.0)))
            .collect();
        // The GPU named by most of the episode's buckets, if one is: else the node is.
        let mut named: BTreeMap<usize, usize> = BTreeMap::new();
        for e in &episode {
            *named.entry(e.0).or_default() += 1;
        }
        let gpu = named
            .iter()
            .find(|(_, n)| **n * 2 > episode.len())
            .map(|(g, _)| *g);
        let start_ns = marks[k].0;
        let end_ns = marks[last].0 + bucket_ns;
        // Power has an idle floor and moves with clocks and temperature too: only a
        // persistent episode counts on it.
        let min_buckets = if metric == POWER {
            MIN_POWER_BUCKETS
        } else {
            MIN_BUCKETS
        };
        if episode.len() >= min_buckets && secs(end_ns - start_ns) >= cfg.drop_min_seconds {
            let lost: f64 = episode
                .iter()
                .map(|&(_, _, peers)| secs(bucket_ns) * (1.0 - peers).clamp(0.0, 1.0))
                .sum::<f64>()
                // A bucket tolerated inside the episode costs like its neighbours.
                * (last + 1 - k) as f64
                / episode.len() as f64;
            let peers: Vec<f64> = episode.iter().map(|e| e.2).collect();
            // The GPU's own level against its usual (the node's GPUs' levels, each
            // against its usual, for a node).
            let observed = match gpu {
                Some(g) => {
                    let own: Vec<f64> = episode.iter().map(|e| e.1 * usual[g]).collect();
                    median(&own).map(|o| o / usual[g].max(1e-9))
                }
                None => median(&episode.iter().map(|e| e.1).collect::<Vec<_>>()),
            };
            let ongoing = last + 1 == marks.len() && secs(horizon_ns - end_ns) < 60.0;
            let g = &gpus[gpu.unwrap_or(first)];
            out.push(Symptom {
                key: key.clone(),
                kind: SymptomKind::Straggler,
                start_ns,
                end_ns: if ongoing {
                    horizon_ns.max(end_ns)
                } else {
                    end_ns
                },
                ongoing,
                lost_seconds: lost,
                // The peers' activity relative to their usual level, and the GPU's own.
                baseline: median(&peers),
                observed,
                metric: Some(metric.to_string()),
                rank: None,
                plot: g.points.clone(),
                restored: false,
                gpu: Some((g.node.clone(), gpu.and_then(|_| g.device.clone()))),
            });
        }
        k = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const MIN: i64 = 60 * S;

    /// The detector over two hours of one-minute SM activity buckets.
    fn detect_sm(gpus: &[GpuSeries]) -> Vec<Symptom> {
        detect(
            &WorkloadKey::default(),
            gpus,
            MIN,
            "sm_active",
            &DetectorConfig::default(),
            120 * MIN,
        )
    }

    /// Eight GPUs at ~0.8 SM activity for 120 minutes; from minute 60 to 75 GPU 3 is slow
    /// and the others drop to `peers` while it keeps its level.
    fn fleet(peers: f64) -> Vec<GpuSeries> {
        fleet_over(peers, 60..75)
    }

    /// [`fleet`] with the episode over `minutes`.
    fn fleet_over(peers: f64, minutes: std::ops::Range<i64>) -> Vec<GpuSeries> {
        fleet_waiting(peers, minutes, |d| d != 3)
    }

    /// Eight GPUs (four on n0, four on n1) at ~0.8 SM activity for 120 minutes; over
    /// `minutes` the GPUs `waits` picks (by index 0..8) drop to `peers`.
    fn fleet_waiting(
        peers: f64,
        minutes: std::ops::Range<i64>,
        waits: impl Fn(i64) -> bool,
    ) -> Vec<GpuSeries> {
        (0..8)
            .map(|d| GpuSeries {
                node: format!("n{}", d / 4),
                device: Some((d % 4).to_string()),
                points: (0..120)
                    .map(|m| {
                        let jitter = 0.01 * (((m * 7 + d * 13) % 5) as f64 - 2.0);
                        let v = if minutes.contains(&m) && waits(d) {
                            peers
                        } else {
                            0.8
                        };
                        (m * MIN, v + jitter)
                    })
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn the_gpu_that_keeps_working_while_its_peers_wait_is_the_straggler() {
        let found = detect_sm(&fleet(0.5));
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.gpu, Some(("n0".to_string(), Some("3".to_string()))));
        assert_eq!((s.start_ns, s.end_ns), (60 * MIN, 75 * MIN));
        // 15 minutes at ~0.62 of the usual level: ~38% of 900 s lost.
        assert!(
            (300.0..=380.0).contains(&s.lost_seconds),
            "{}",
            s.lost_seconds
        );
    }

    /// The episode covers most of the window and the whole job's activity wanders: the
    /// peers' own usual level is their episode level, but against the straggler they
    /// dropped.
    #[test]
    fn a_straggler_over_most_of_the_window_is_found_against_its_peers() {
        let gpus: Vec<GpuSeries> = (0..4)
            .map(|d| GpuSeries {
                node: format!("n{}", d / 2),
                device: Some((d % 2).to_string()),
                points: (0..120)
                    .map(|m| {
                        // The job's level wanders between 0.6 and 0.7 (evals, saves).
                        let job = 0.65 + 0.05 * ((m as f64) / 9.0).sin();
                        let v = if m >= 30 && d != 2 { job * 0.78 } else { job };
                        (m * MIN, v)
                    })
                    .collect(),
            })
            .collect();
        let found = detect_sm(&gpus);
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.gpu, Some(("n1".to_string(), Some("0".to_string()))));
        assert_eq!(s.start_ns, 30 * MIN);
        assert!(s.ongoing);
        // 90 minutes with the peers at 0.78 of the straggler's pace: ~22% lost.
        assert!(
            (1000.0..=1300.0).contains(&s.lost_seconds),
            "{}",
            s.lost_seconds
        );
        // One GPU always 20% busier than the rest (rank 0's extra work) is no change.
        let mut busy = gpus.clone();
        for g in &mut busy {
            for p in &mut g.points {
                let job = 0.65 + 0.05 * ((p.0 / MIN) as f64 / 9.0).sin();
                p.1 = if g.node == "n1" && g.device.as_deref() == Some("0") {
                    job
                } else {
                    job * 0.8
                };
            }
        }
        assert!(detect_sm(&busy).is_empty());
    }

    #[test]
    fn the_waiting_peers_of_a_long_episode_are_no_stragglers_after_it() {
        // GPU 3 straggles for 45 of 120 minutes: its peers wait (0.6) that long; after the
        // episode they work as before, which is no rise above their usual.
        let gpus = fleet_over(0.6, 40..85);
        let found = detect_sm(&gpus);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            found[0].gpu,
            Some(("n0".to_string(), Some("3".to_string())))
        );
        assert_eq!((found[0].start_ns, found[0].end_ns), (40 * MIN, 85 * MIN));
    }

    #[test]
    fn steady_gpus_and_a_job_wide_dip_are_no_straggler() {
        assert!(detect_sm(&fleet(0.8)).is_empty());
        // Every GPU drops together (an input stall): nobody kept working.
        let mut all = fleet(0.5);
        for p in &mut all[3].points {
            if (60 * MIN..75 * MIN).contains(&p.0) {
                p.1 = 0.5;
            }
        }
        assert!(detect_sm(&all).is_empty());
        // Every GPU drops (an input stall), one a little less than the rest: the GPUs
        // differ by noise while idle, and the least idle one is no straggler.
        let mut uneven = fleet(0.45);
        for p in &mut uneven[3].points {
            if (60 * MIN..75 * MIN).contains(&p.0) {
                p.1 = 0.6;
            }
        }
        assert!(detect_sm(&uneven).is_empty());
    }

    #[test]
    fn a_whole_node_that_keeps_working_is_one_straggler_episode_of_the_node() {
        // From minute 40 to 75 the four GPUs of n0 keep their level (each a little busier
        // in turn, by noise) while n1's four wait: one episode, the node's.
        let gpus = fleet_waiting(0.6, 40..75, |d| d >= 4);
        let found = detect_sm(&gpus);
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.gpu, Some(("n0".to_string(), None)));
        assert_eq!((s.start_ns, s.end_ns), (40 * MIN, 75 * MIN));
        // 35 minutes with the peers at ~0.75 of their usual: ~25% of 2100 s lost.
        assert!(
            (420.0..=630.0).contains(&s.lost_seconds),
            "{}",
            s.lost_seconds
        );
    }
}
