//! Regressions of a workload's wall-clock pace (seconds per step) across its runs, in
//! buckets long enough to hold its regular saves, with lost time accounted on the steps
//! themselves; without SDK pace (progress from a trainer's logs) a throughput drop.

use std::collections::BTreeMap;

use super::regression::{self, PaceInput, Worse};
use super::stats::median;
use super::{DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, WorkloadName};

/// Regressions of one workload's wall-clock pace (seconds per step), bucketed.
pub fn detect_regressions(
    wk: &WorkloadName,
    pairs: &[PacePair],
    saves: &[(i64, f64)],
    horizon: i64,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let per_step: Vec<f64> = pairs.iter().map(|p| p.seconds / p.steps as f64).collect();
    let Some(step) = median(&per_step) else {
        return Vec::new();
    };
    let seconds = spread_saves(pairs, saves);
    // Where progress comes in coarse advances (a trainer's epoch printed to two decimals
    // moves in hundredths, one advance every few log lines) an interval's time is known
    // only to a log line, and a bucket's edge cuts an interval: a bucket then spans as
    // many intervals as keep that error below the smallest regression reported (ten at
    // 10%). A step counter that moves at every report measures each interval exactly.
    let coarse = 2 * pairs.iter().filter(|p| p.coarse).count() > pairs.len();
    let per_pair: Vec<f64> = pairs.iter().map(|p| p.seconds).collect();
    let pair = if coarse {
        median(&per_pair).unwrap_or(0.0)
    } else {
        0.0
    };
    let intervals = 1.0 / cfg.regression_min_rel.max(0.01);
    let bucket = ((cfg
        .pace_bucket_seconds
        .max(20.0 * step)
        .max(intervals * pair))
        * 1e9) as i64;
    // bucket -> (seconds, steps)
    let mut buckets: BTreeMap<i64, (f64, i64)> = BTreeMap::new();
    for (p, sec) in pairs.iter().zip(&seconds) {
        let b = buckets
            .entry(p.time_ns.div_euclid(bucket))
            .or_insert((0.0, 0));
        b.0 += sec;
        b.1 += p.steps;
    }
    let series: Vec<Point> = buckets
        .iter()
        .filter(|(_, v)| v.1 >= 3)
        .map(|(b, v)| Point {
            time_ns: (b + 1) * bucket,
            step: None,
            value: v.0 / v.1 as f64,
        })
        .collect();
    tracing::trace!(
        workload = ?wk,
        points = series.len(),
        "pace series (seconds per step by bucket): {:?}",
        series
            .iter()
            .map(|p| (p.time_ns / 1_000_000_000, p.value))
            .collect::<Vec<_>>()
    );
    let bucket_cfg = DetectorConfig {
        min_segment: 2,
        alpha: 1e-2,
        ..cfg.clone()
    };
    let mut out = Vec::new();
    let key = WorkloadKey {
        namespace: wk.0.clone(),
        workload: wk.1.clone(),
        run_id: None,
    };
    for mut s in regression::detect(
        &PaceInput {
            key: &key,
            points: &series,
            metric: "seconds_per_step",
            worse: Worse::Higher,
            kind: SymptomKind::Regression,
            min_rel: cfg.regression_min_rel,
            min_seconds: 2.0 * bucket as f64 / 1e9,
            horizon_ns: horizon,
        },
        &bucket_cfg,
    ) {
        s.key.run_id = pairs
            .iter()
            .find(|p| p.time_ns > s.start_ns)
            .and_then(|p| p.run_id.clone());
        // Account on the steps themselves, not the buckets: the extra wall time of the
        // window's steps against the pooled pace of the steps before it.
        let prev_end = out.last().map_or(i64::MIN, |p: &Symptom| p.end_ns);
        // The seconds with the saves' time spread over their cycles, as in the series:
        // the pairs themselves are cleared of announced pauses, slow saves included.
        let pooled = |f: &dyn Fn(&PacePair) -> bool| -> (f64, i64) {
            pairs
                .iter()
                .zip(&seconds)
                .filter(|(p, _)| f(p))
                .fold((0.0, 0), |a, (p, sec)| (a.0 + sec, a.1 + p.steps))
        };
        // The window is known to a bucket: its neighbours' steps count too (normal ones
        // add nothing against the pooled pace, partly slow ones add their share).
        let (lo, hi) = (s.start_ns - bucket, s.end_ns + bucket);
        let (ref_s, ref_n) = pooled(&|p| p.time_ns <= lo && p.time_ns > prev_end);
        let (win_s, win_n) = pooled(&|p| p.time_ns > lo && p.time_ns <= hi);
        // Without SDK pace (progress read from a trainer's logs) the job's throughput
        // dropped: the contract's `throughput_drop`.
        if !pairs
            .iter()
            .any(|p| p.sdk && p.time_ns > s.start_ns && p.time_ns <= s.end_ns)
        {
            s.kind = SymptomKind::ThroughputDrop;
        }
        if ref_n > 0 && win_n > 0 {
            let base = ref_s / ref_n as f64;
            s.baseline = Some(base);
            s.observed = Some(win_s / win_n as f64);
            s.lost_seconds = (win_s - base * win_n as f64).max(0.0);
        }
        // The buckets place the change to a bucket; the steps place it to a step.
        let min_rel = cfg.regression_min_rel;
        if let Some(t) = refine(pairs, &seconds, s.start_ns, bucket, true, min_rel) {
            s.start_ns = t;
        }
        if !s.ongoing
            && let Some(t) = refine(pairs, &seconds, s.end_ns, bucket, false, min_rel)
            && t > s.start_ns
        {
            s.end_ns = t;
        }
        out.push(s);
    }
    out
}

/// Where, within a bucket either side of `around`, the per-step pace changes most — for
/// the worse (`worse_after`, an onset) or for the better (an end): the end time of the
/// last interval before the change, if the change is at least `min_rel` of the pace on
/// the normal side.
fn refine(
    pairs: &[PacePair],
    seconds: &[f64],
    around: i64,
    bucket: i64,
    worse_after: bool,
    min_rel: f64,
) -> Option<i64> {
    let idx: Vec<usize> = (0..pairs.len())
        .filter(|&i| pairs[i].time_ns > around - bucket && pairs[i].time_ns <= around + bucket)
        .collect();
    if idx.len() < 4 {
        return None;
    }
    let per: Vec<f64> = idx
        .iter()
        .map(|&i| seconds[i] / pairs[i].steps.max(1) as f64)
        .collect();
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let mut best: Option<(usize, f64)> = None;
    for k in 2..=per.len() - 2 {
        let (a, b) = (mean(&per[..k]), mean(&per[k..]));
        let d = if worse_after { b - a } else { a - b };
        if d > 0.0 && best.is_none_or(|(_, bd)| d > bd) {
            best = Some((k, d));
        }
    }
    let (k, d) = best?;
    let normal = if worse_after {
        mean(&per[..k])
    } else {
        mean(&per[k..])
    };
    (d >= min_rel * normal).then(|| pairs[idx[k - 1]].time_ns)
}

/// The pairs' wall seconds with each save's time taken out of the interval it fell in and
/// spread over the steps of its cycle (since the previous save) instead: regular saves
/// then cost every step the same, while slower or more frequent saves still show.
pub fn spread_saves(pairs: &[PacePair], saves: &[(i64, f64)]) -> Vec<f64> {
    let mut out: Vec<f64> = pairs.iter().map(|p| p.seconds).collect();
    let mut prev_end = i64::MIN;
    for &(end, secs_) in saves {
        let start = end - (secs_ * 1e9) as i64;
        // Pairs are sorted by end time; those overlapping [start, end] lose the overlap.
        let first = pairs.partition_point(|p| p.time_ns <= start);
        for (i, p) in pairs.iter().enumerate().skip(first) {
            if p.start_ns >= end {
                break;
            }
            let overlap = (p.time_ns.min(end) - p.start_ns.max(start)).max(0);
            out[i] -= overlap as f64 / 1e9;
        }
        // Its cycle's steps share its time.
        let lo = pairs.partition_point(|p| p.time_ns <= prev_end);
        let hi = pairs.partition_point(|p| p.time_ns <= end);
        let steps: i64 = pairs[lo..hi].iter().map(|p| p.steps).sum();
        if steps > 0 {
            for i in lo..hi {
                out[i] += secs_ * pairs[i].steps as f64 / steps as f64;
            }
        }
        prev_end = end;
    }
    for v in &mut out {
        *v = v.max(0.0);
    }
    out
}

/// Wall time spent on some steps of a run, ending at `time_ns`.
#[derive(Debug, Clone, PartialEq)]
pub struct PacePair {
    /// The interval's start (the previous progress sample).
    pub start_ns: i64,
    pub time_ns: i64,
    pub seconds: f64,
    pub steps: i64,
    pub run_id: Option<String>,
    /// Whether the pace came from SDK step metrics (else from a trainer's logged progress).
    pub sdk: bool,
    /// Whether the run's step counter was coarser than its progress reports (most of
    /// them repeated the step before: a trainer's epoch printed to two decimals).
    pub coarse: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn the_onset_is_placed_at_the_step_not_the_bucket_edge() {
        // 2 s per step until t = 1000 s, then 3 s per step.
        let mut pairs = Vec::new();
        let mut t = 0;
        while t < 2000 {
            let dt = if t < 1000 { 2 } else { 3 };
            pairs.push(PacePair {
                start_ns: t * S,
                time_ns: (t + dt) * S,
                seconds: dt as f64,
                steps: 1,
                run_id: None,
                sdk: true,
                coarse: false,
            });
            t += dt;
        }
        let seconds: Vec<f64> = pairs.iter().map(|p| p.seconds).collect();
        let at = refine(&pairs, &seconds, 1200 * S, 300 * S, true, 0.1).unwrap();
        assert_eq!(at, 1000 * S);
        // No change near there: the edge stays where the buckets put it.
        assert_eq!(refine(&pairs, &seconds, 500 * S, 300 * S, true, 0.1), None);
    }

    /// A trainer's logged dicts every 50 steps (about 39 s, a save every 50 logs) whose
    /// progress is its epoch printed to two decimals (`testdata/hf_epoch_progress.csv`:
    /// seconds from the first log, epoch; a DPO run of independent set 8a, written by
    /// other hands). At its steady pace the counter moves by one hundredth (100 units)
    /// every third log line or so: a five-minute bucket holds two or three advances and
    /// its pace is off by up to a third. The buckets span ten advances instead, and the
    /// steady pace is no regression.
    #[test]
    fn coarse_advances_of_a_steady_pace_are_no_regression() {
        let mut pairs = Vec::new();
        let mut last: Option<(f64, i64)> = None;
        for line in include_str!("testdata/hf_epoch_progress.csv").lines() {
            let (t, epoch) = line.split_once(',').expect("seconds,epoch");
            let t: f64 = t.parse().expect("seconds");
            let units = (epoch.parse::<f64>().expect("epoch") * 1e4).round() as i64;
            match last {
                Some((t0, u0)) if units > u0 => {
                    pairs.push(PacePair {
                        start_ns: (t0 * 1e9) as i64,
                        time_ns: (t * 1e9) as i64,
                        seconds: t - t0,
                        steps: units - u0,
                        run_id: None,
                        sdk: false,
                        coarse: true,
                    });
                    last = Some((t, units));
                }
                Some(_) => {}
                None => last = Some((t, units)),
            }
        }
        assert!(pairs.len() > 80, "{}", pairs.len());
        let wk = (Some("ml".to_string()), Some("dpo".to_string()));
        let horizon = pairs.last().map_or(0, |p| p.time_ns);
        let found = detect_regressions(&wk, &pairs, &[], horizon, &DetectorConfig::default());
        assert!(found.is_empty(), "{found:?}");
    }
}
