//! Straggler detection: one rank's `compute_seconds` persistently above its peers' in the
//! same steps — over a long stretch (segmentation of the rank's ratio to its peers) or in
//! a shorter episode (a burst of records far above the peers and above the rank's own
//! usual ratio). Lost time is the extra time of the job's steps: at each step the job
//! waits for its slowest rank, so the straggler costs what it takes beyond the slowest
//! peer, counted for every elapsed step (records may be sampled every N steps).

use std::collections::BTreeMap;

use super::peers::{Peers, leave_one_out};
use super::stats::{median, segment};
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, plot_of, secs};

/// Per-rank compute samples of one run.
#[derive(Debug, Clone)]
pub struct RankSeries {
    pub rank: i32,
    /// Samples with steps, sorted by time.
    pub points: Vec<Point>,
}

/// One rank's record of a step: its time, its compute seconds and what its peers computed
/// in that step (none without peers).
type Seen = (i64, f64, Option<Peers>);

/// One step as seen by a rank, compared with its peers.
struct StepView {
    time_ns: i64,
    /// Steps elapsed since the rank's previous record (the ones this record stands for).
    steps: f64,
    own: f64,
    peers_median: f64,
    peers_max: f64,
    peers_sigma: f64,
}

/// The stragglers of one run: at most one window per rank.
pub fn detect(
    key: &WorkloadKey,
    ranks: &[RankSeries],
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    if ranks.len() < 2 {
        return Vec::new();
    }
    // step -> rank -> (time, compute)
    let mut by_step: BTreeMap<i64, BTreeMap<i32, (i64, f64)>> = BTreeMap::new();
    for r in ranks {
        for p in &r.points {
            if let Some(s) = p.step {
                by_step
                    .entry(s)
                    .or_default()
                    .insert(r.rank, (p.time_ns, p.value));
            }
        }
    }
    // step -> rank -> (time, compute, what its peers computed in that step)
    let mut scratch = Vec::new();
    let by_step: BTreeMap<i64, BTreeMap<i32, Seen>> = by_step
        .into_iter()
        .map(|(step, m)| {
            let values: Vec<f64> = m.values().map(|v| v.1).collect();
            let peers = leave_one_out(&values, &mut scratch);
            let m = m.into_iter().zip(peers);
            (step, m.map(|((r, (t, v)), p)| (r, (t, v, p))).collect())
        })
        .collect();
    let mut out = Vec::new();
    for r in ranks {
        let mut prev_step: Option<i64> = None;
        let mut views: Vec<StepView> = by_step
            .iter()
            .filter_map(|(&step, m)| {
                let &(time_ns, own, peers) = m.get(&r.rank)?;
                let steps = prev_step.map_or(0.0, |p| (step - p).max(1) as f64);
                prev_step = Some(step);
                let p = peers?;
                Some(StepView {
                    time_ns,
                    steps,
                    own,
                    peers_median: p.median,
                    peers_max: p.max,
                    peers_sigma: p.mad_sigma.max(0.01 * p.median.abs()),
                })
            })
            .collect();
        if views.len() < cfg.straggler_min_steps.min(BURST_MIN_RECORDS) {
            continue;
        }
        // The first record stands for as many steps as the usual gap between records.
        let gaps: Vec<f64> = views.iter().skip(1).map(|v| v.steps).collect();
        let usual_gap = median(&gaps).unwrap_or(1.0);
        if let Some(first) = views.first_mut() {
            first.steps = usual_gap;
        }
        let ratios: Vec<f64> = views
            .iter()
            .map(|v| v.own / v.peers_median.max(1e-9))
            .collect();
        // A straggling segment holds a record both above the ratio and far outside the
        // peers' spread (its median ratio and 80% of its records say so: the two sets
        // overlap). A rank without such a record straggles in no segment, whatever the cuts:
        // its ratios need no segmentation (quadratic in its records).
        let far_above = |v: &StepView, r: f64| {
            r >= 1.0 + cfg.straggler_min_rel && (v.own - v.peers_median) / v.peers_sigma >= 3.0
        };
        let mut bounds = vec![0];
        if views.iter().zip(&ratios).any(|(v, &r)| far_above(v, r)) {
            bounds.extend(segment(
                &ratios,
                cfg.min_segment,
                cfg.alpha,
                cfg.straggler_min_rel / 2.0,
            ));
        }
        bounds.push(ratios.len());
        // The straggling segments: ratio high and far outside the peers' spread.
        let mut windows: Vec<(usize, usize)> = Vec::new();
        for w in bounds.windows(2) {
            let (lo, hi) = (w[0], w[1]);
            let seg = &views[lo..hi];
            let Some(ratio) = median(&ratios[lo..hi]) else {
                continue;
            };
            let z: Vec<f64> = seg
                .iter()
                .map(|v| (v.own - v.peers_median) / v.peers_sigma)
                .collect();
            let persistent =
                z.iter().filter(|&&z| z >= 3.0).count() as f64 >= 0.8 * seg.len() as f64;
            if ratio >= 1.0 + cfg.straggler_min_rel && persistent {
                match windows.last_mut() {
                    Some(last) if last.1 == lo => last.1 = hi,
                    _ => windows.push((lo, hi)),
                }
            }
        }
        for burst in bursts(&views, &ratios, cfg) {
            windows.push(burst);
        }
        windows.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::new();
        for (lo, hi) in windows {
            match merged.last_mut() {
                Some(last) if lo <= last.1 => last.1 = last.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        for (lo, hi) in merged {
            let seg = &views[lo..hi];
            let elapsed: f64 = seg.iter().map(|v| v.steps).sum();
            if elapsed < cfg.straggler_min_steps as f64 {
                continue;
            }
            let lost: f64 = seg
                .iter()
                .map(|v| (v.own - v.peers_max).max(0.0) * v.steps)
                .sum();
            let start_ns = views[lo.saturating_sub(1)].time_ns;
            let end_ns = seg[seg.len() - 1].time_ns;
            let ongoing = hi == views.len() && secs(horizon_ns - end_ns) < 60.0;
            let own: Vec<f64> = seg.iter().map(|v| v.own).collect();
            let peers: Vec<f64> = seg.iter().map(|v| v.peers_median).collect();
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
                baseline: median(&peers),
                observed: median(&own),
                metric: Some("compute_seconds".to_string()),
                rank: Some(r.rank),
                plot: plot_of(&r.points, 400),
                restored: false,
                gpu: None,
            });
        }
    }
    out
}

/// The fewest records far above the peers that make an episode.
const BURST_MIN_RECORDS: usize = 4;
/// How many records back at normal an episode may hold in a row.
const BURST_MAX_GAP: usize = 2;
/// The least share of an episode's records that are far above the peers.
const BURST_MIN_DENSITY: f64 = 0.7;

/// Episodes `[lo, hi)` of records where the rank computes far above its peers: its ratio
/// to their median at least `1 + straggler_min_rel` and half that above its own usual
/// ratio, and at least 3 of the peers' standard deviations above them. Records back at
/// normal inside an episode (up to [`BURST_MAX_GAP`] in a row) do not end it. Finds the
/// straggler of a few minutes in hours of records that segmentation averages away.
fn bursts(views: &[StepView], ratios: &[f64], cfg: &DetectorConfig) -> Vec<(usize, usize)> {
    let Some(usual) = median(ratios) else {
        return Vec::new();
    };
    let floor = (1.0 + cfg.straggler_min_rel).max(usual * (1.0 + cfg.straggler_min_rel / 2.0));
    let high: Vec<bool> = views
        .iter()
        .zip(ratios)
        .map(|(v, &r)| r >= floor && (v.own - v.peers_median) / v.peers_sigma >= 3.0)
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < high.len() {
        if !high[i] {
            i += 1;
            continue;
        }
        let (mut last, mut count) = (i, 1usize);
        let mut j = i + 1;
        while j < high.len() && j - last <= BURST_MAX_GAP + 1 {
            if high[j] {
                last = j;
                count += 1;
            }
            j += 1;
        }
        let span = last + 1 - i;
        if count >= BURST_MIN_RECORDS && count as f64 >= BURST_MIN_DENSITY * span as f64 {
            out.push((i, last + 1));
        }
        i = last + 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn ranks(n: i32, steps: i64, slow: Option<(i32, i64, f64)>) -> Vec<RankSeries> {
        (0..n)
            .map(|rank| RankSeries {
                rank,
                points: (0..steps)
                    .map(|s| {
                        let jitter = 0.01 * (((s * 7 + rank as i64 * 13) % 11) as f64 - 5.0);
                        let mut v = 1.5 + jitter;
                        if let Some((r, from, f)) = slow
                            && r == rank
                            && s >= from
                        {
                            v *= f;
                        }
                        Point {
                            time_ns: s * 2 * S,
                            step: Some(s),
                            value: v,
                        }
                    })
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn a_persistently_slow_rank_is_a_straggler() {
        let key = WorkloadKey::default();
        let rs = ranks(8, 200, Some((3, 100, 1.3)));
        let found = detect(&key, &rs, &DetectorConfig::default(), 400 * S);
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.rank, Some(3));
        assert!(((s.start_ns / S) - 198).abs() <= 4, "{}", s.start_ns / S);
        // ~100 steps, each ~0.45 s slower than the median peer and ~0.4 s beyond the max.
        assert!(
            s.lost_seconds > 30.0 && s.lost_seconds < 46.0,
            "{}",
            s.lost_seconds
        );
    }

    #[test]
    fn a_short_episode_in_sampled_records_is_found_and_costs_every_elapsed_step() {
        // Records every 10 steps for 3000 steps; rank 6 computes 1.6x for steps 1800..1940.
        let key = WorkloadKey::default();
        let rs: Vec<RankSeries> = (0..10)
            .map(|rank| RankSeries {
                rank,
                points: (0..300)
                    .map(|i| {
                        let s = 1 + i * 10;
                        let jitter = 0.02 * (((s * 7 + rank as i64 * 13) % 11) as f64 - 5.0);
                        let mut v = 1.0 + jitter;
                        // Two records of the episode are back at normal.
                        if rank == 6 && (1800..1940).contains(&s) && s != 1851 && s != 1901 {
                            v = 1.6;
                        }
                        Point {
                            time_ns: s * S,
                            step: Some(s),
                            value: v,
                        }
                    })
                    .collect(),
            })
            .collect();
        let found = detect(&key, &rs, &DetectorConfig::default(), 3000 * S);
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        assert_eq!(s.rank, Some(6));
        assert!(!s.ongoing);
        assert!(
            (1791..=1811).contains(&(s.start_ns / S)) && (1921..=1941).contains(&(s.end_ns / S)),
            "{}..{}",
            s.start_ns / S,
            s.end_ns / S
        );
        // 12 slow records of 10 steps each, ~0.5 s beyond the slowest peer per step.
        assert!(
            (50.0..=70.0).contains(&s.lost_seconds),
            "{}",
            s.lost_seconds
        );
    }

    #[test]
    fn a_rank_always_a_little_slower_is_no_episode() {
        let key = WorkloadKey::default();
        let mut rs = ranks(10, 300, None);
        for p in &mut rs[5].points {
            p.value *= 1.1;
        }
        // An occasional spike on top of it.
        rs[5].points[100].value *= 1.3;
        rs[5].points[140].value *= 1.3;
        assert!(detect(&key, &rs, &DetectorConfig::default(), 600 * S).is_empty());
    }

    #[test]
    fn balanced_ranks_have_no_straggler() {
        let key = WorkloadKey::default();
        let rs = ranks(8, 200, None);
        assert!(detect(&key, &rs, &DetectorConfig::default(), 400 * S).is_empty());
        // A short blip is not persistent.
        let mut rs = ranks(4, 200, None);
        rs[1].points[50].value *= 2.0;
        assert!(detect(&key, &rs, &DetectorConfig::default(), 400 * S).is_empty());
    }
}
