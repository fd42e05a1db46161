//! Latency regressions of a serving workload: its p95 latency (time to first token,
//! between tokens, whole request) above what its own data says that latency is at the
//! same request rate per replica, by more than its noise, for a sustained time.
//!
//! The expected latency at a load is fitted as `ln latency = a + b ln rate` (Theil–Sen),
//! the rate per replica where the replicas are known: a scale-up or down moves each
//! engine's share and the expectation with it, while a replica lost in a capacity
//! shortfall still counts (its share, carried by the others, is the slowdown). It is
//! fitted away from the times the latency stood out from its plain level (an incident that
//! coincides with a busier hour must not teach the fit that load costs that much), with
//! the slope kept in `0..=1` (a busier engine is not faster, and below saturation its
//! latency grows no faster than its load), and on the load's ordinary range only (within
//! three robust deviations of its median), so a surge far past anything ordinary is not
//! explained by itself. Each minute's excess is read as the median of the five around it. A
//! diurnal rise in traffic thus moves the expected latency with it; a surge, a throttled
//! GPU, a full KV cache or a neighbour do not. `lost_seconds` is the time the latency
//! spent above the expectation by more than the noise (`contracts/report.md`).

use std::collections::BTreeMap;

use super::stats::{mad_sigma, median};
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, plot_of};

/// The latency series whyslow derives, with the name the report gives them (the p95 of
/// each). TGI's mean time per output token stands for the time between tokens where an
/// engine reports no gaps of its own.
pub const LATENCIES: [(&str, &str); 4] = [
    ("ttft_seconds_p95", "ttft_seconds"),
    ("inter_token_seconds_p95", "inter_token_seconds"),
    ("time_per_output_token_seconds_p95", "inter_token_seconds"),
    ("request_seconds_p95", "request_seconds"),
];

/// The load series, most direct first: requests arriving (TGI), requests finished (vLLM),
/// tokens.
pub const LOADS: [&str; 4] = [
    "requests_per_second",
    "requests_succeeded_per_second",
    "prompt_tokens_per_second",
    "generation_tokens_per_second",
];

/// The name of a load's series per replica (the analysis derives it from the replicas
/// counting, `serving::Combine::Count`), which the expectation reads where the series has
/// it: each engine serves its share of the load, so a Deployment scaled from two replicas
/// to three answers faster at the same total.
pub fn per_replica(load: &str) -> String {
    format!("{load}_per_replica")
}

/// The fewest points the load relation is fitted on, and the fewest ordinary points a
/// regression is measured against.
const MIN_FIT: usize = 12;
pub(super) const MIN_ORDINARY: usize = 10;
/// Pairs of points closer in load than this (in ln) say nothing about the slope.
const MIN_PAIR_SPREAD: f64 = 0.1;
/// The load spread (10th to 90th percentile, in ln) below which the load is taken as
/// constant.
const MIN_LOAD_SPREAD: f64 = 0.15;
/// The points the slope's pairs are drawn from at most (evenly spaced).
const MAX_FIT_POINTS: usize = 300;
/// The floor of the noise (in ln): no series is quieter than 2%.
const MIN_NOISE: f64 = 0.02;
/// The buckets a load's level is read over where the plain level asks whether the load
/// stayed level (a quarter of an hour of one-minute buckets).
const LOAD_LEVEL: usize = 15;
/// The points each point's smoothed residual is the median of.
const SMOOTH: usize = 5;
/// The standard deviation of the median of [`SMOOTH`] normal samples, in theirs
/// (1.2533 / sqrt(5)).
const SMOOTHED_NOISE: f64 = 0.56;

/// A regression of one latency series, before the series of a workload are merged.
#[derive(Debug, Clone, PartialEq)]
struct Run {
    metric: &'static str,
    start_ns: i64,
    end_ns: i64,
    /// The buckets above the expectation.
    above: Vec<i64>,
    baseline: f64,
    observed: f64,
}

/// `ln latency = a + b ln load` fitted on the ordinary load range.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Fit {
    a: f64,
    b: f64,
    /// The median ln load, for points without a load of their own.
    typical_z: f64,
}

impl Fit {
    fn expected(&self, z: Option<f64>) -> f64 {
        self.a + self.b * z.unwrap_or(self.typical_z)
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn fit(points: &[(f64, Option<f64>)]) -> Fit {
    let mut zs: Vec<f64> = points.iter().filter_map(|(_, z)| *z).collect();
    zs.sort_by(f64::total_cmp);
    let all_x: Vec<f64> = points.iter().map(|(x, _)| *x).collect();
    if zs.len() < MIN_FIT {
        return Fit {
            a: median(&all_x).unwrap_or(0.0),
            b: 0.0,
            typical_z: 0.0,
        };
    }
    let typical_z = median(&zs).unwrap_or(0.0);
    // The ordinary load: within three robust deviations of the median. A surge far past
    // it is an outlier of the load's own distribution; a daily cycle is not.
    let reach = (3.0 * mad_sigma(&zs).unwrap_or(0.0)).max(MIN_PAIR_SPREAD);
    let (lo, hi) = (typical_z - reach, typical_z + reach);
    let ordinary: Vec<(f64, f64)> = points
        .iter()
        .filter_map(|&(x, z)| z.filter(|z| *z >= lo && *z <= hi).map(|z| (x, z)))
        .collect();
    let mut oz: Vec<f64> = ordinary.iter().map(|(_, z)| *z).collect();
    oz.sort_by(f64::total_cmp);
    let spread = if oz.is_empty() {
        0.0
    } else {
        quantile(&oz, 0.9) - quantile(&oz, 0.1)
    };
    let mut b = 0.0;
    if ordinary.len() >= MIN_FIT && spread >= MIN_LOAD_SPREAD {
        let step = ordinary.len().div_ceil(MAX_FIT_POINTS);
        let picked: Vec<(f64, f64)> = ordinary.iter().step_by(step).copied().collect();
        let mut slopes = Vec::new();
        for (i, p) in picked.iter().enumerate() {
            for q in &picked[i + 1..] {
                let dz = q.1 - p.1;
                if dz.abs() >= MIN_PAIR_SPREAD {
                    slopes.push((q.0 - p.0) / dz);
                }
            }
        }
        if slopes.len() >= MIN_FIT {
            b = median(&slopes).unwrap_or(0.0).clamp(0.0, 1.0);
        }
    }
    let rest: Vec<f64> = if ordinary.len() >= MIN_FIT {
        ordinary.iter().map(|(x, z)| x - b * z).collect()
    } else {
        points
            .iter()
            .map(|(x, z)| x - b * z.unwrap_or(typical_z))
            .collect()
    };
    Fit {
        a: median(&rest).unwrap_or(0.0),
        b,
        typical_z,
    }
}

/// The runs of points whose latency stands above `f`'s expectation by more than the
/// noise (and the relative floor) for a sustained time, with the residuals' centre; the
/// centre is read from the `quiet` points where given. `None` when too few
/// points are ordinary to measure against.
#[allow(clippy::type_complexity)]
fn excess(
    pts: &[(i64, f64, Option<f64>)],
    f: &Fit,
    quiet: Option<&[bool]>,
    bucket_ns: i64,
    cfg: &DetectorConfig,
) -> Option<(Vec<Vec<usize>>, f64)> {
    let raw: Vec<f64> = pts.iter().map(|(_, x, z)| x - f.expected(*z)).collect();
    let resid = smoothed(&raw);
    let reference: Vec<f64> = match quiet {
        Some(q) if q.iter().filter(|q| **q).count() >= MIN_ORDINARY => resid
            .iter()
            .zip(q)
            .filter(|(_, q)| **q)
            .map(|(r, _)| *r)
            .collect(),
        _ => resid.clone(),
    };
    let centre = median(&reference).unwrap_or(0.0);
    let threshold = threshold(&raw, cfg);
    let above: Vec<bool> = resid.iter().map(|r| r - centre > threshold).collect();
    if above.iter().filter(|a| !**a).count() < MIN_ORDINARY {
        return None;
    }
    let times: Vec<i64> = pts.iter().map(|p| p.0).collect();
    Some((sustained(&times, &above, bucket_ns, cfg), centre))
}

/// A minute's p95 of few requests is noisy: each point of `raw` read as the median of the
/// five around it (a step keeps its place; a lone spike goes).
pub(super) fn smoothed(raw: &[f64]) -> Vec<f64> {
    (0..raw.len())
        .map(|i| {
            let lo = i.saturating_sub(SMOOTH / 2);
            let hi = (i + SMOOTH / 2 + 1).min(raw.len());
            median(&raw[lo..hi]).unwrap_or(raw[i])
        })
        .collect()
}

/// How far (in ln) a smoothed point of `raw` must stand above its centre to count: the
/// relative floor, or the noise from one minute to the next (a long incident or a daily
/// cycle shifts the level, not the differences) as the smoothed series carries it, times
/// `latency_noise_k`.
pub(super) fn threshold(raw: &[f64], cfg: &DetectorConfig) -> f64 {
    let steps: Vec<f64> = raw.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let minute_noise = 1.4826 * median(&steps).unwrap_or(0.0) / std::f64::consts::SQRT_2;
    let noise = (SMOOTHED_NOISE * minute_noise).max(MIN_NOISE);
    (1.0 + cfg.latency_min_rel)
        .ln()
        .max(cfg.latency_noise_k * noise)
}

/// The longest gap between two buckets above the expectation that still joins them in
/// one slowdown.
fn bridge_ns(bucket_ns: i64, cfg: &DetectorConfig) -> i64 {
    ((cfg.latency_min_seconds * 1e9) as i64).max(3 * bucket_ns)
}

/// The sustained runs of the points `above` (indices into `times`, ascending): a dip back
/// shorter than a sustained regression (or a few missing buckets) does not end one (the
/// workload stayed slower); a run lasts three points and `latency_min_seconds` at least.
pub(super) fn sustained(
    times: &[i64],
    above: &[bool],
    bucket_ns: i64,
    cfg: &DetectorConfig,
) -> Vec<Vec<usize>> {
    let bridge = bridge_ns(bucket_ns, cfg);
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for i in (0..times.len()).filter(|&i| above[i]) {
        match groups.last_mut() {
            Some(g)
                if g.last()
                    .is_some_and(|&last| times[i] - times[last] <= bridge) =>
            {
                g.push(i)
            }
            _ => groups.push(vec![i]),
        }
    }
    groups.retain(|g| {
        let (Some(&first), Some(&last)) = (g.first(), g.last()) else {
            return false;
        };
        let span = (times[last] + bucket_ns - times[first]) as f64;
        g.len() >= 3 && span >= cfg.latency_min_seconds * 1e9
    });
    groups
}

/// The plain level of a latency series (in ln) where it is not its median, against which
/// the first pass finds where it stood out. Where the load stayed level (the 10th to 90th
/// percentile of its level over [`LOAD_LEVEL`] buckets within [`MIN_LOAD_SPREAD`]),
/// nothing the load did explains a lasting step, and a step that lasted past half the
/// window would be the median itself (a rollout to a slower configuration, at the same
/// traffic): there, the series' first level segment (as the pace regressions read their
/// reference level), where it lies below the median by more than the relative floor.
fn plain_level(pts: &[(i64, f64, Option<f64>)], xs: &[f64], cfg: &DetectorConfig) -> Option<f64> {
    let mid = median(xs)?;
    // (The load's own level over a quarter of an hour: a minute's rate of a few requests
    // per replica is noisy, a daily cycle or a surge moves it still.)
    let raw: Vec<f64> = pts.iter().filter_map(|(_, _, z)| *z).collect();
    let mut zs: Vec<f64> = (0..raw.len())
        .filter_map(|i| {
            let (lo, hi) = (
                i.saturating_sub(LOAD_LEVEL / 2),
                (i + LOAD_LEVEL / 2 + 1).min(raw.len()),
            );
            median(&raw[lo..hi])
        })
        .collect();
    zs.sort_by(f64::total_cmp);
    if zs.len() < MIN_FIT || quantile(&zs, 0.9) - quantile(&zs, 0.1) >= MIN_LOAD_SPREAD {
        return None;
    }
    let latencies: Vec<Point> = pts
        .iter()
        .map(|&(time_ns, x, _)| Point {
            time_ns,
            step: None,
            value: x.exp(),
        })
        .collect();
    let floor = (1.0 + cfg.latency_min_rel).ln();
    super::regression::reference(&latencies, cfg, cfg.latency_min_rel)
        .filter(|r| *r > 0.0)
        .map(f64::ln)
        .filter(|r| *r < mid - floor)
}

/// The regressions of one latency series, `latency` and `load` one point per bucket of
/// `bucket_ns` (`load` may miss buckets or be empty).
fn runs(
    metric: &'static str,
    latency: &[Point],
    load: &BTreeMap<i64, f64>,
    bucket_ns: i64,
    cfg: &DetectorConfig,
) -> Vec<Run> {
    let pts: Vec<(i64, f64, Option<f64>)> = latency
        .iter()
        .filter(|p| p.value > 0.0 && p.value.is_finite())
        .map(|p| {
            let z = load
                .get(&p.time_ns)
                .filter(|r| **r > 0.0 && r.is_finite())
                .map(|r| r.ln());
            (p.time_ns, p.value.ln(), z)
        })
        .collect();
    if pts.len() < MIN_FIT {
        return Vec::new();
    }
    // First the level alone: where the latency stood out at all. Then the load relation,
    // fitted away from those times (an incident that coincides with a busier hour would
    // otherwise teach the fit that load costs that much), and the excess read again.
    let xs: Vec<f64> = pts.iter().map(|(_, x, _)| *x).collect();
    let plain = plain_level(&pts, &xs, cfg);
    let level = Fit {
        a: plain.or_else(|| median(&xs)).unwrap_or(0.0),
        b: 0.0,
        typical_z: 0.0,
    };
    // (Measured from the points at the plain level, where it is not the median.)
    let near = (1.0 + cfg.latency_min_rel).ln();
    let at_plain: Option<Vec<bool>> = plain.map(|a| xs.iter().map(|x| x - a <= near).collect());
    let Some((first, _)) = excess(&pts, &level, at_plain.as_deref(), bucket_ns, cfg) else {
        return Vec::new();
    };
    let mut quiet = vec![true; pts.len()];
    for g in &first {
        let (Some(&a), Some(&b)) = (g.first(), g.last()) else {
            continue;
        };
        for q in &mut quiet[a.saturating_sub(SMOOTH)..(b + SMOOTH + 1).min(pts.len())] {
            *q = false;
        }
    }
    let fit_on: Vec<(f64, Option<f64>)> = pts
        .iter()
        .zip(&quiet)
        .filter(|(_, q)| **q)
        .map(|((_, x, z), _)| (*x, *z))
        .collect();
    let f = if fit_on.len() >= MIN_FIT {
        fit(&fit_on)
    } else {
        fit(&pts.iter().map(|(_, x, z)| (*x, *z)).collect::<Vec<_>>())
    };
    let Some((groups, centre)) = excess(&pts, &f, Some(&quiet), bucket_ns, cfg) else {
        return Vec::new();
    };
    tracing::trace!(
        metric,
        points = pts.len(),
        quiet = quiet.iter().filter(|q| **q).count(),
        a = f.a,
        b = f.b,
        typical_load = f.typical_z.exp(),
        centre,
        runs = groups.len(),
        "latency expectation"
    );
    let mut out = Vec::new();
    for g in groups {
        let (Some(&first), Some(&last)) = (g.first(), g.last()) else {
            continue;
        };
        let (start_ns, end_ns) = (pts[first].0, pts[last].0 + bucket_ns);
        let zs: Vec<f64> = g.iter().filter_map(|&i| pts[i].2).collect();
        let z = median(&zs);
        let xs: Vec<f64> = g.iter().map(|&i| pts[i].1).collect();
        out.push(Run {
            metric,
            start_ns,
            end_ns,
            above: g.iter().map(|&i| pts[i].0).collect(),
            baseline: (f.expected(z) + centre).exp(),
            observed: median(&xs).unwrap_or(0.0).exp(),
        });
    }
    out
}

/// The latency regressions of one serving workload from its combined series (whyslow
/// names, one point per bucket of `bucket_ns`): one symptom per time the workload was
/// slow, however many of its latencies show it, named by the latency that rose most.
pub fn detect(
    key: &WorkloadKey,
    series: &BTreeMap<String, Vec<Point>>,
    bucket_ns: i64,
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    let load: BTreeMap<i64, f64> = LOADS
        .iter()
        .filter_map(|m| series.get(&per_replica(m)).or_else(|| series.get(*m)))
        .find(|pts| 2 * pts.iter().filter(|p| p.value > 0.0).count() >= pts.len().max(1))
        .map(|pts| pts.iter().map(|p| (p.time_ns, p.value)).collect())
        .unwrap_or_default();
    let mut all: Vec<Run> = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    for (engine, name) in LATENCIES {
        // The time between tokens once, from the engine's own gaps where it has them.
        let Some(pts) = series.get(engine) else {
            continue;
        };
        if named.contains(&name) {
            continue;
        }
        named.push(name);
        all.extend(runs(name, pts, &load, bucket_ns, cfg));
    }
    all.sort_by_key(|r| (r.start_ns, r.end_ns, r.metric));
    // Runs of different latencies that overlap, or that a gap no longer than one
    // latency's own bridge parts, are one slowdown (the time to first token of a
    // shortfall's first minutes, then its whole requests as the queue moves to decode).
    let bridge = bridge_ns(bucket_ns, cfg);
    let mut merged: Vec<Vec<Run>> = Vec::new();
    for r in all {
        match merged.last_mut() {
            Some(g)
                if g.iter()
                    .any(|o| r.start_ns - (o.end_ns - bucket_ns) <= bridge) =>
            {
                g.push(r)
            }
            _ => merged.push(vec![r]),
        }
    }
    let mut out = Vec::new();
    for g in merged {
        let Some(lead) = g.iter().max_by(|a, b| {
            (a.observed / a.baseline)
                .total_cmp(&(b.observed / b.baseline))
                .then(b.metric.cmp(a.metric))
        }) else {
            continue;
        };
        let start_ns = g.iter().map(|r| r.start_ns).min().unwrap_or(lead.start_ns);
        let end_ns = g.iter().map(|r| r.end_ns).max().unwrap_or(lead.end_ns);
        let mut above: Vec<i64> = g.iter().flat_map(|r| r.above.iter().copied()).collect();
        above.sort_unstable();
        above.dedup();
        let ongoing = end_ns + 2 * bucket_ns >= horizon_ns;
        let engine = LATENCIES
            .iter()
            .find(|(e, n)| *n == lead.metric && series.contains_key(*e))
            .map(|(e, _)| *e);
        let plot = engine
            .and_then(|e| series.get(e))
            .map(|pts| plot_around(pts, start_ns, end_ns))
            .unwrap_or_default();
        out.push(Symptom {
            key: key.clone(),
            kind: SymptomKind::LatencyRegression,
            start_ns,
            end_ns: end_ns.min(horizon_ns.max(start_ns)),
            ongoing,
            lost_seconds: above.len() as f64 * bucket_ns as f64 / 1e9,
            baseline: Some(lead.baseline),
            observed: Some(lead.observed),
            metric: Some(lead.metric.to_string()),
            rank: None,
            plot,
            restored: false,
            gpu: None,
        });
    }
    out
}

/// A latency's plot around a regression: from an hour before to half an hour after.
pub fn plot_around(pts: &[Point], start_ns: i64, end_ns: i64) -> Vec<(i64, f64)> {
    let near: Vec<Point> = pts
        .iter()
        .filter(|p| {
            p.time_ns >= start_ns - 3_600_000_000_000 && p.time_ns <= end_ns + 1_800_000_000_000
        })
        .copied()
        .collect();
    plot_of(&near, 400)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = 60_000_000_000;

    /// A deterministic wobble in -1..1.
    fn wobble(i: i64) -> f64 {
        ((i * 7919 % 101) as f64 / 50.0) - 1.0
    }

    fn series(
        minutes: i64,
        load: impl Fn(i64) -> f64,
        latency: impl Fn(i64, f64) -> f64,
    ) -> BTreeMap<String, Vec<Point>> {
        let mut out: BTreeMap<String, Vec<Point>> = BTreeMap::new();
        for i in 0..minutes {
            let r = load(i);
            let p = |v| Point {
                time_ns: i * M,
                step: None,
                value: v,
            };
            out.entry("requests_succeeded_per_second".into())
                .or_default()
                .push(p(r));
            out.entry("ttft_seconds_p95".into())
                .or_default()
                .push(p(latency(i, r)));
        }
        out
    }

    /// The regressions of `s` over its `minutes`, with the default thresholds.
    fn run(s: &BTreeMap<String, Vec<Point>>, minutes: i64) -> Vec<Symptom> {
        detect(
            &WorkloadKey::default(),
            s,
            M,
            &DetectorConfig::default(),
            minutes * M,
        )
    }

    fn diurnal(i: i64) -> f64 {
        // From 4 to 12 requests/s and back over 3 hours, with noise.
        8.0 - 4.0 * (i as f64 * std::f64::consts::TAU / 180.0).cos() + 0.3 * wobble(i)
    }

    #[test]
    fn latency_that_follows_the_daily_load_is_not_a_regression() {
        let s = series(180, diurnal, |i, r| {
            0.08 * (r / 4.0).powf(0.8) * (1.0 + 0.04 * wobble(i + 3))
        });
        let found = run(&s, 180);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_slower_gpu_at_the_same_load_is_a_regression() {
        let s = series(180, diurnal, |i, r| {
            let slow = if (100..130).contains(&i) { 1.8 } else { 1.0 };
            slow * 0.08 * (r / 4.0).powf(0.8) * (1.0 + 0.04 * wobble(i + 3))
        });
        let found = run(&s, 180);
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!(f.kind, SymptomKind::LatencyRegression);
        assert_eq!(f.metric.as_deref(), Some("ttft_seconds"));
        assert_eq!((f.start_ns, f.end_ns), (100 * M, 130 * M));
        assert_eq!(f.lost_seconds, 1800.0);
        let ratio = f.observed.unwrap() / f.baseline.unwrap();
        assert!((1.6..2.0).contains(&ratio), "{ratio}");
    }

    #[test]
    fn latencies_that_take_over_from_each_other_are_one_slowdown() {
        // The time to first token is slow for minutes 100..106, then whole requests for
        // 107..120: one slowdown from 100 to 120, its lost time the minutes either was
        // slow.
        let mut s = series(180, diurnal, |i, r| {
            let slow = if (100..106).contains(&i) { 1.8 } else { 1.0 };
            slow * 0.08 * (r / 4.0).powf(0.8) * (1.0 + 0.04 * wobble(i + 3))
        });
        let request: Vec<Point> = s["ttft_seconds_p95"]
            .iter()
            .map(|p| {
                let i = p.time_ns / M;
                let slow = if (107..120).contains(&i) { 1.6 } else { 1.0 };
                Point {
                    value: slow * 4.0 * (1.0 + 0.03 * wobble(i + 5)),
                    ..*p
                }
            })
            .collect();
        s.insert("request_seconds_p95".into(), request);
        let found = run(&s, 180);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (100 * M, 120 * M));
        assert_eq!(found[0].lost_seconds, 19.0 * 60.0);
    }

    #[test]
    fn a_step_at_the_same_load_lasting_most_of_the_window_is_a_regression() {
        // Steady load with noise; from minute 80 of 190 every request takes 1.7 times as
        // long and stays so (a rollout to a slower configuration): the slow level is
        // most of the window, so its median, but not the plain level.
        let steady = |i: i64| 0.8 * (1.0 + 0.3 * wobble(i));
        let s = series(190, steady, |i, _| {
            let slow = if i >= 80 { 1.7 } else { 1.0 };
            slow * 9.0 * (1.0 + 0.05 * wobble(i + 3))
        });
        let found = run(&s, 190);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].start_ns, 80 * M);
        assert!(found[0].ongoing);
        // A step that lasts less than half the window was found already, the same way.
        let s = series(190, steady, |i, _| {
            let slow = if (80..150).contains(&i) { 1.7 } else { 1.0 };
            slow * 9.0 * (1.0 + 0.05 * wobble(i + 3))
        });
        let found = run(&s, 190);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (80 * M, 150 * M));
    }

    #[test]
    fn a_surge_past_the_ordinary_load_is_a_regression() {
        // Steady load, then three times as many requests queue up for 25 minutes.
        let load = |i: i64| {
            let base = 6.0 + 0.4 * wobble(i);
            if (90..115).contains(&i) {
                3.0 * base
            } else {
                base
            }
        };
        let s = series(180, load, |i, r| {
            let queue = if r > 10.0 { 4.0 } else { 1.0 };
            queue * 0.1 * (1.0 + 0.05 * wobble(i + 11))
        });
        let found = run(&s, 180);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (90 * M, 115 * M));
    }

    /// A Deployment of `replicas(i)` engines sharing a total load that cycles (and is 15%
    /// higher from minute 70, which a scale-up then answers): each engine's latency follows
    /// its share (`ln latency` grows by half the ln share), times `extra(i)`.
    fn shared(
        replicas: impl Fn(i64) -> f64,
        extra: impl Fn(i64) -> f64,
    ) -> BTreeMap<String, Vec<Point>> {
        let total = |i: i64| {
            let busier = if i < 70 { 1.0 } else { 1.15 };
            busier * (8.0 + 2.0 * (i as f64 * std::f64::consts::TAU / 120.0).sin())
                + 0.3 * wobble(i)
        };
        let mut s = series(240, total, |i, r| {
            extra(i) * 0.04 * (r / replicas(i)).sqrt() * (1.0 + 0.02 * wobble(i + 5))
        });
        let share = (0..240)
            .map(|i| Point {
                time_ns: i * M,
                step: None,
                value: total(i) / replicas(i),
            })
            .collect();
        s.insert(per_replica("requests_succeeded_per_second"), share);
        s
    }

    #[test]
    fn a_scale_up_is_measured_at_each_replicas_share() {
        // Two replicas for the first 70 minutes, three after: each engine answers faster
        // at a higher total. Against the total, the first 70 minutes read as slow.
        let two_then_three = |i: i64| if i < 70 { 2.0 } else { 3.0 };
        let s = shared(two_then_three, |_| 1.0);
        assert!(run(&s, 240).is_empty(), "{:?}", run(&s, 240));
        let mut total_only = s.clone();
        total_only.remove(&per_replica("requests_succeeded_per_second"));
        assert!(!run(&total_only, 240).is_empty());
        // A replica lost for 40 minutes: queueing on the two left costs far more than
        // their larger share explains.
        let lost = |i: i64| if (150..190).contains(&i) { 2.0 } else { 3.0 };
        let queue = |i: i64| if (150..190).contains(&i) { 1.8 } else { 1.0 };
        let found = run(&shared(lost, queue), 240);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (150 * M, 190 * M));
    }

    #[test]
    fn a_short_spike_is_not_sustained() {
        let s = series(
            120,
            |i| 6.0 + 0.3 * wobble(i),
            |i, _| {
                if (60..63).contains(&i) {
                    0.5
                } else {
                    0.1 * (1.0 + 0.03 * wobble(i))
                }
            },
        );
        assert!(run(&s, 120).is_empty());
    }

    #[test]
    fn overlapping_latencies_are_one_slowdown() {
        let mut s = series(
            150,
            |i| 6.0 + 0.3 * wobble(i),
            |i, _| {
                if (80..110).contains(&i) {
                    0.3
                } else {
                    0.1 * (1.0 + 0.03 * wobble(i))
                }
            },
        );
        let e2e: Vec<Point> = (0..150)
            .map(|i| Point {
                time_ns: i * M,
                step: None,
                value: if (85..112).contains(&i) {
                    9.0
                } else {
                    2.0 + 0.05 * wobble(i)
                },
            })
            .collect();
        s.insert("request_seconds_p95".into(), e2e);
        let found = run(&s, 150);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].metric.as_deref(), Some("request_seconds"));
        assert_eq!((found[0].start_ns, found[0].end_ns), (80 * M, 112 * M));
        assert_eq!(found[0].lost_seconds, 32.0 * 60.0);
    }
}
