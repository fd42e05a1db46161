//! Regression and throughput-drop detection: a change point in a pace series (binary
//! segmentation, each split significant by Welch's t-test and above an effect size),
//! after which the pace stayed worse than the run's reference segment.

use super::stats::{mad_sigma, mean, median, segment};
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, plot_of, secs};

/// Which way is worse for the series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Worse {
    /// Step time: larger is worse.
    Higher,
    /// Throughput, utilization: smaller is worse.
    Lower,
}

/// One pace series to examine.
#[derive(Debug, Clone)]
pub struct PaceInput<'a> {
    pub key: &'a WorkloadKey,
    /// Samples sorted by time, already cleared of pauses and incidents.
    pub points: &'a [Point],
    pub metric: &'a str,
    pub worse: Worse,
    /// The symptom kind to report (`regression` or `throughput_drop`).
    pub kind: SymptomKind,
    /// The smallest relative change that counts.
    pub min_rel: f64,
    /// The shortest window that counts, in seconds.
    pub min_seconds: f64,
    /// When the data ends (a regression reaching it is ongoing).
    pub horizon_ns: i64,
}

/// The reference (normal) level of a series: the median of its first level segment.
pub fn reference(points: &[Point], cfg: &DetectorConfig, min_rel: f64) -> Option<f64> {
    let xs: Vec<f64> = points.iter().map(|p| p.value).collect();
    let bounds = bounds_of(
        &segment(&xs, cfg.min_segment, cfg.alpha, min_rel / 2.0),
        xs.len(),
    );
    let r = reference_segment(&xs, &bounds, cfg.min_segment, Worse::Higher, min_rel);
    median(&xs[bounds[r]..bounds[r + 1]])
}

/// The segments' boundaries: `0`, the cuts, `len`.
fn bounds_of(cuts: &[usize], len: usize) -> Vec<usize> {
    let mut bounds = vec![0];
    bounds.extend(cuts);
    bounds.push(len);
    bounds
}

/// Which segment of `xs` is the series' normal level: the first one of at least `min_seg`
/// points. A shorter piece before it (the edge a bump leaves, such as a run's partial
/// first bucket with its start-up) is no level to measure against; with no segment that
/// long, the first. But where that short piece and the segment after are both better by
/// `min_rel`, the first long segment is a bump the series entered soon after its data
/// began (its logs rotated, its scrapes started late): the normal level is the next long
/// segment.
fn reference_segment(
    xs: &[f64],
    bounds: &[usize],
    min_seg: usize,
    worse: Worse,
    min_rel: f64,
) -> usize {
    let long = |k: &usize| bounds[*k + 1] - bounds[*k] >= min_seg;
    let segments = bounds.len().saturating_sub(1);
    let Some(first) = (0..segments).find(long) else {
        return 0;
    };
    if first == 0 || first + 1 >= segments {
        return first;
    }
    let level = |k: usize| mean(&xs[bounds[k]..bounds[k + 1]]);
    let (Some(here), Some(before), Some(after)) =
        (level(first), level(first - 1), level(first + 1))
    else {
        return first;
    };
    let worse_than = |other: f64| match worse {
        Worse::Higher => here >= other * (1.0 + min_rel),
        Worse::Lower => here <= other * (1.0 - min_rel),
    };
    if worse_than(before) && worse_than(after) {
        return (first + 1..segments).find(long).unwrap_or(first);
    }
    first
}

/// The windows where the series stayed worse than its reference segment.
pub fn detect(input: &PaceInput<'_>, cfg: &DetectorConfig) -> Vec<Symptom> {
    let pts = input.points;
    let xs: Vec<f64> = pts.iter().map(|p| p.value).collect();
    // Split at half the effect size (a dip in the middle moves the mean of a side by less
    // than its depth); the segments are then held to the full effect size.
    let cuts = segment(&xs, cfg.min_segment, cfg.alpha, input.min_rel / 2.0);
    if cuts.is_empty() {
        return Vec::new();
    }
    let bounds = bounds_of(&cuts, xs.len());
    let r = reference_segment(&xs, &bounds, cfg.min_segment, input.worse, input.min_rel);
    let Some(base) = mean(&xs[bounds[r]..bounds[r + 1]]) else {
        return Vec::new();
    };
    let is_worse = |m: f64| match input.worse {
        Worse::Higher => m >= base * (1.0 + input.min_rel),
        Worse::Lower => m <= base * (1.0 - input.min_rel),
    };
    // Merge consecutive worse segments into windows of sample indices [lo, hi).
    let mut windows: Vec<(usize, usize)> = Vec::new();
    for (k, w) in bounds.windows(2).enumerate() {
        if k == r {
            continue;
        }
        let (lo, hi) = (w[0], w[1]);
        let Some(m) = mean(&xs[lo..hi]) else {
            continue;
        };
        if !is_worse(m) {
            continue;
        }
        match windows.last_mut() {
            Some(last) if last.1 == lo => last.1 = hi,
            _ => windows.push((lo, hi)),
        }
    }
    let base = widen(&mut windows, &xs, bounds[r]..bounds[r + 1], input).unwrap_or(base);
    let mut out = Vec::new();
    for (lo, hi) in windows {
        // The window starts where the last normal sample ended.
        let start_ns = pts[lo.saturating_sub(1)].time_ns;
        let end_ns = pts[hi - 1].time_ns;
        let duration = secs(end_ns - start_ns);
        if duration < input.min_seconds {
            continue;
        }
        let Some(observed) = mean(&xs[lo..hi]) else {
            continue;
        };
        let lost = match input.worse {
            Worse::Higher if observed > 0.0 => duration * (1.0 - base / observed),
            Worse::Lower if base > 0.0 => duration * (1.0 - observed / base),
            _ => 0.0,
        };
        let ongoing = hi == xs.len() && secs(input.horizon_ns - end_ns) < duration.max(60.0);
        let margin = (end_ns - start_ns).max(60_000_000_000);
        let around: Vec<Point> = pts
            .iter()
            .filter(|p| p.time_ns >= start_ns - margin && p.time_ns <= end_ns + margin)
            .copied()
            .collect();
        out.push(Symptom {
            key: input.key.clone(),
            kind: input.kind,
            start_ns,
            end_ns: if ongoing {
                input.horizon_ns.max(end_ns)
            } else {
                end_ns
            },
            ongoing,
            lost_seconds: lost.max(0.0),
            baseline: Some(base),
            observed: Some(observed),
            metric: Some(input.metric.to_string()),
            rank: None,
            plot: plot_of(&around, 400),
            restored: false,
            gpu: None,
        });
    }
    out
}

/// Binary segmentation cannot cut one or two points off a long segment (a t-test on two
/// points has no power), so a window's first or last buckets, slow as they are, can stay
/// in the segment beside it, the reference's included: a slowdown's onset then raises the
/// reference's mean and its end lowers the next segment's below the effect size, and the
/// window shrinks to its middle. Each window takes in the neighbouring points that are
/// themselves worse than the reference's median by the effect size and beyond three of
/// its robust deviations; windows that then meet are one. Returns the reference's mean
/// over the points left in it (the level the windows are measured against).
fn widen(
    windows: &mut Vec<(usize, usize)>,
    xs: &[f64],
    reference: std::ops::Range<usize>,
    input: &PaceInput<'_>,
) -> Option<f64> {
    let level = median(&xs[reference.clone()])?;
    let noise = 3.0 * mad_sigma(&xs[reference.clone()]).unwrap_or(0.0);
    let worse = |x: f64| match input.worse {
        Worse::Higher => x >= level * (1.0 + input.min_rel) && x > level + noise,
        Worse::Lower => x <= level * (1.0 - input.min_rel) && x < level - noise,
    };
    for k in 0..windows.len() {
        let floor = if k == 0 { 0 } else { windows[k - 1].1 };
        while windows[k].0 > floor && worse(xs[windows[k].0 - 1]) {
            windows[k].0 -= 1;
        }
        let ceiling = windows.get(k + 1).map_or(xs.len(), |w| w.0);
        while windows[k].1 < ceiling && worse(xs[windows[k].1]) {
            windows[k].1 += 1;
        }
    }
    windows.dedup_by(|later, earlier| {
        let meet = earlier.1 >= later.0;
        if meet {
            earlier.1 = earlier.1.max(later.1);
        }
        meet
    });
    // The reference's points taken into a window are no longer its level.
    let left: Vec<f64> = reference
        .filter(|i| !windows.iter().any(|w| (w.0..w.1).contains(i)))
        .map(|i| xs[i])
        .collect();
    mean(&left)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn series(levels: &[(usize, f64)]) -> Vec<Point> {
        let mut out = Vec::new();
        let mut t = 0i64;
        let mut x: u64 = 42;
        for &(n, level) in levels {
            for _ in 0..n {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let u = (x >> 11) as f64 / (1u64 << 53) as f64;
                let v = level * (1.0 + 0.04 * (u - 0.5));
                t += (v * 1e9) as i64;
                out.push(Point {
                    time_ns: t,
                    step: None,
                    value: v,
                });
            }
        }
        out
    }

    fn input<'a>(key: &'a WorkloadKey, pts: &'a [Point], worse: Worse) -> PaceInput<'a> {
        PaceInput {
            key,
            points: pts,
            metric: "step_time_seconds",
            worse,
            kind: SymptomKind::Regression,
            min_rel: 0.10,
            min_seconds: 30.0,
            horizon_ns: pts.last().unwrap().time_ns + 10 * S,
        }
    }

    /// Five-minute buckets of the given paces.
    fn buckets(values: &[f64]) -> Vec<Point> {
        values
            .iter()
            .enumerate()
            .map(|(i, &v)| Point {
                time_ns: (i as i64 + 1) * 300 * S,
                step: None,
                value: v,
            })
            .collect()
    }

    /// The settings the pace detector runs with on its buckets.
    fn bucket_cfg() -> DetectorConfig {
        DetectorConfig {
            min_segment: 2,
            alpha: 1e-2,
            ..DetectorConfig::default()
        }
    }

    #[test]
    fn a_bump_soon_after_the_data_began_is_measured_against_the_level_around_it() {
        // Five-minute buckets of a pace read from a trainer's log that begins 10 minutes
        // before the slowdown: one bucket at 0.44 s a step, four at ~0.60, then ~0.43.
        let mut values = vec![0.444, 0.602, 0.606, 0.606, 0.552];
        values.extend((0..17).map(|i| 0.426 + 0.001 * f64::from(i % 3)));
        let pts = buckets(&values);
        let key = WorkloadKey::default();
        let cfg = bucket_cfg();
        let found = detect(&input(&key, &pts, Worse::Higher), &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        // From the last normal bucket to the partly slow fifth, where the bump ended.
        assert_eq!((found[0].start_ns, found[0].end_ns), (300 * S, 1500 * S));
        assert!(found[0].baseline.is_some_and(|b| b < 0.44), "{found:?}");
        // A slower first bucket (a start-up) before the level is no bump.
        let mut started = values.clone();
        started[1..5].copy_from_slice(&[0.427; 4]);
        started[0] = 0.9;
        let pts: Vec<Point> = pts
            .iter()
            .zip(&started)
            .map(|(p, &v)| Point { value: v, ..*p })
            .collect();
        assert!(detect(&input(&key, &pts, Worse::Higher), &cfg).is_empty());
    }

    /// Five-minute buckets of a pace slowed by recompilations (one step in seventeen took
    /// 38 s more for 40 minutes; `recompilation` seed 5710000 in variation mode): the
    /// first two slow buckets are too few to cut off the normal level before them, the
    /// last four too few to cut off the normal level after. The window is all of them,
    /// measured against the normal buckets alone.
    #[test]
    fn a_window_takes_in_the_slow_buckets_its_neighbours_kept() {
        let values = [
            2.0899, 2.0514, 2.0577, 2.0596, 2.0494, 2.0572, 2.0505, 5.8536, 4.2261, 5.8569, 5.3306,
            5.5663, 3.3159, 4.1053, 3.3339, 2.3433, 2.0544, 2.0480, 2.0137,
        ];
        let pts = buckets(&values);
        let key = WorkloadKey::default();
        let cfg = bucket_cfg();
        let found = detect(&input(&key, &pts, Worse::Higher), &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].start_ns, found[0].end_ns),
            (7 * 300 * S, 16 * 300 * S)
        );
        let base = found[0].baseline.unwrap();
        assert!((base - 2.06).abs() < 0.02, "{base}");
    }

    #[test]
    fn step_time_regression_is_found_with_its_lost_time() {
        let pts = series(&[(300, 2.0), (200, 2.6)]);
        let key = WorkloadKey::default();
        let found = detect(
            &input(&key, &pts, Worse::Higher),
            &DetectorConfig::default(),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        let s = &found[0];
        let duration = secs(s.end_ns - s.start_ns);
        // 200 steps of ~2.6 s: ~520 s, of which 1 - 2.0/2.6 is lost (~120 s).
        assert!((duration - 520.0).abs() < 15.0, "{duration}");
        assert!((s.lost_seconds - 120.0).abs() < 8.0, "{}", s.lost_seconds);
        assert!(s.ongoing);
        assert!((s.observed.unwrap() / s.baseline.unwrap() - 1.3).abs() < 0.02);
    }

    /// A series whose first piece is shorter than a segment (a run's partial first bucket
    /// with its start-up, then a short first run, then a long slower one: the buckets of
    /// config-change seed 1910000 in variation mode): the short first run is the level,
    /// not the start-up piece the bump detection leaves before it.
    #[test]
    fn a_short_piece_before_the_level_is_not_the_reference() {
        let key = WorkloadKey::default();
        let pts = series(&[(1, 2.33), (5, 2.05), (31, 2.54)]);
        let cfg = bucket_cfg();
        let mut inp = input(&key, &pts, Worse::Higher);
        inp.min_seconds = 10.0;
        let found = detect(&inp, &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        let ratio = found[0].observed.unwrap() / found[0].baseline.unwrap();
        assert!((ratio - 2.54 / 2.05).abs() < 0.03, "{ratio}");
        assert!((reference(&pts, &cfg, 0.10).unwrap() - 2.05).abs() < 0.05);
    }

    #[test]
    fn jitter_and_improvements_are_not_regressions() {
        let key = WorkloadKey::default();
        let flat = series(&[(500, 2.0)]);
        assert!(
            detect(
                &input(&key, &flat, Worse::Higher),
                &DetectorConfig::default()
            )
            .is_empty()
        );
        let faster = series(&[(200, 2.0), (200, 1.5)]);
        assert!(
            detect(
                &input(&key, &faster, Worse::Higher),
                &DetectorConfig::default()
            )
            .is_empty()
        );
        let small = series(&[(200, 2.0), (200, 2.08)]);
        assert!(
            detect(
                &input(&key, &small, Worse::Higher),
                &DetectorConfig::default()
            )
            .is_empty()
        );
    }

    #[test]
    fn utilization_drop_that_recovers_is_a_closed_window() {
        let pts = series(&[(100, 90.0), (60, 60.0), (100, 90.0)]);
        let key = WorkloadKey::default();
        let mut inp = input(&key, &pts, Worse::Lower);
        inp.kind = SymptomKind::ThroughputDrop;
        inp.min_rel = 0.15;
        inp.min_seconds = 0.0;
        let found = detect(&inp, &DetectorConfig::default());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(!found[0].ongoing);
        let expected = secs(found[0].end_ns - found[0].start_ns) * (1.0 - 60.0 / 90.0);
        assert!((found[0].lost_seconds - expected).abs() / expected < 0.05);
    }
}
