//! Straggler detection: one rank's `compute_seconds` persistently above its peers' in the
//! same steps. Lost time is the extra time of the job's steps: at each step the job waits
//! for its slowest rank, so the straggler costs what it takes beyond the slowest peer.

use std::collections::BTreeMap;

use super::stats::{mad_sigma, median, segment};
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, plot_of, secs};

/// Per-rank compute samples of one run.
#[derive(Debug, Clone)]
pub struct RankSeries {
    pub rank: i32,
    /// Samples with steps, sorted by time.
    pub points: Vec<Point>,
}

/// One step as seen by a rank, compared with its peers.
struct StepView {
    time_ns: i64,
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
    let mut out = Vec::new();
    for r in ranks {
        let views: Vec<StepView> = by_step
            .values()
            .filter_map(|m| {
                let &(time_ns, own) = m.get(&r.rank)?;
                let peers: Vec<f64> = m
                    .iter()
                    .filter(|(k, _)| **k != r.rank)
                    .map(|(_, v)| v.1)
                    .collect();
                let peers_median = median(&peers)?;
                Some(StepView {
                    time_ns,
                    own,
                    peers_median,
                    peers_max: peers.iter().copied().fold(f64::MIN, f64::max),
                    peers_sigma: mad_sigma(&peers)
                        .unwrap_or(0.0)
                        .max(0.01 * peers_median.abs()),
                })
            })
            .collect();
        if views.len() < cfg.straggler_min_steps {
            continue;
        }
        let ratios: Vec<f64> = views
            .iter()
            .map(|v| v.own / v.peers_median.max(1e-9))
            .collect();
        let mut bounds = vec![0];
        bounds.extend(segment(
            &ratios,
            cfg.min_segment,
            cfg.alpha,
            cfg.straggler_min_rel / 2.0,
        ));
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
        for (lo, hi) in windows {
            if hi - lo < cfg.straggler_min_steps {
                continue;
            }
            let seg = &views[lo..hi];
            let lost: f64 = seg.iter().map(|v| (v.own - v.peers_max).max(0.0)).sum();
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
            });
        }
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
