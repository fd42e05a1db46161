//! Checkpoint cadence above the configured one: a run that saves more often than its own
//! `save_steps` (a callback saving every 10 steps instead of every 100) pays for saves
//! it did not ask for, from its first step on — no change point shows it. Where no
//! configuration says the interval (no SDK), the workload's own cadence does: the median
//! of at least three earlier intervals judged normal. Lost time is the extra saves' time:
//! the saves made beyond those the expected interval asks for over the same steps, at
//! the run's own save time.

use super::stats::median;
use super::{DetectorConfig, Symptom, SymptomKind, WorkloadKey};

/// One checkpoint save (told once), with the interval configured when it was made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Save {
    /// When the save began, ns since the epoch.
    pub began_ns: i64,
    pub step: Option<i64>,
    pub seconds: Option<f64>,
    /// The configured steps between saves.
    pub save_steps: Option<i64>,
}

/// A save this much sooner than configured (in steps) is too soon.
const TOO_SOON: f64 = 0.67;
/// The fewest consecutive too-soon saves that make a symptom.
const MIN_SAVES: usize = 3;
/// The fewest normal intervals that make a workload's own cadence, where none is
/// configured.
const MIN_USUAL: usize = 3;

/// The stretches of one workload's saves (sorted by time) that came too soon.
pub fn detect(key: &WorkloadKey, saves: &[Save], cfg: &DetectorConfig) -> Vec<Symptom> {
    // Per interval (save k to k+1): the steps expected between them, and whether it came
    // too soon.
    let mut usual: Vec<f64> = Vec::new();
    let (expected, soon): (Vec<Option<f64>>, Vec<bool>) = saves
        .windows(2)
        .map(|w| {
            let configured = w[1].save_steps.filter(|n| *n > 0).map(|n| n as f64);
            let learned = (usual.len() >= MIN_USUAL).then(|| median(&usual)).flatten();
            let expect = configured.or(learned);
            let (Some(a), Some(b)) = (w[0].step, w[1].step) else {
                return (expect, false);
            };
            if b <= a {
                // A restart from an earlier checkpoint: no interval.
                return (expect, false);
            }
            let gap = (b - a) as f64;
            let too_soon = expect.is_some_and(|n| gap < TOO_SOON * n);
            if !too_soon {
                usual.push(gap);
            }
            (expect, too_soon)
        })
        .unzip();
    let secs_: Vec<f64> = saves.iter().filter_map(|s| s.seconds).collect();
    let Some(save_s) = median(&secs_) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < soon.len() {
        if !soon[i] {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < soon.len() && soon[j] {
            j += 1;
        }
        // Saves i+1 ..= j came too soon after their predecessor.
        if j - i >= MIN_SAVES {
            let (first, last) = (&saves[i], &saves[j]);
            let (Some(s0), Some(s1), Some(n)) = (first.step, last.step, expected[j - 1]) else {
                i = j;
                continue;
            };
            let made = (j - i) as f64;
            let asked = (s1 - s0) as f64 / n;
            let lost = (made - asked).max(0.0) * save_s;
            let gaps: Vec<f64> = saves[i..=j]
                .windows(2)
                .filter_map(|w| Some((w[1].step? - w[0].step?) as f64))
                .collect();
            let end_ns = last.began_ns + (last.seconds.unwrap_or(save_s) * 1e9) as i64;
            if lost >= cfg.min_lost_seconds {
                out.push(Symptom {
                    key: key.clone(),
                    kind: SymptomKind::Regression,
                    start_ns: first.began_ns,
                    end_ns,
                    ongoing: false,
                    lost_seconds: lost,
                    baseline: Some(n),
                    observed: median(&gaps),
                    metric: Some("steps_per_checkpoint".to_string()),
                    rank: None,
                    plot: saves[i..=j]
                        .windows(2)
                        .filter_map(|w| Some((w[1].began_ns, (w[1].step? - w[0].step?) as f64)))
                        .collect(),
                    restored: false,
                    gpu: None,
                });
            }
        }
        i = j;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn saves(every: i64, configured: i64, n: i64) -> Vec<Save> {
        (1..=n)
            .map(|k| Save {
                began_ns: k * every * 3 * S,
                step: Some(k * every),
                seconds: Some(14.0),
                save_steps: Some(configured),
            })
            .collect()
    }

    #[test]
    fn saving_ten_times_as_often_as_configured_is_a_symptom() {
        let found = detect(
            &WorkloadKey::default(),
            &saves(10, 100, 50),
            &DetectorConfig::default(),
        );
        assert_eq!(found.len(), 1, "{found:?}");
        // 49 saves over 490 steps where 4.9 were asked for: ~44 extra saves of 14 s.
        assert!((found[0].lost_seconds - (49.0 - 4.9) * 14.0).abs() < 1e-6);
        assert_eq!(found[0].observed, Some(10.0));
    }

    #[test]
    fn saving_as_configured_is_nothing() {
        let cfg = DetectorConfig::default();
        let key = WorkloadKey::default();
        assert!(detect(&key, &saves(100, 100, 20), &cfg).is_empty());
        // No configured interval and no earlier cadence: nothing to compare with.
        let mut s = saves(10, 100, 20);
        for x in &mut s {
            x.save_steps = None;
        }
        assert!(detect(&key, &s, &cfg).is_empty());
    }

    #[test]
    fn without_a_configured_interval_the_own_cadence_is_the_baseline() {
        let cfg = DetectorConfig::default();
        let key = WorkloadKey::default();
        // Every 100 steps for 8 saves, then every 10 steps for 40 saves, then 100 again.
        let mut steps: Vec<i64> = (1..=8).map(|k| k * 100).collect();
        steps.extend((1..=40).map(|k| 800 + k * 10));
        steps.extend((1..=5).map(|k| 1200 + k * 100));
        let s: Vec<Save> = steps
            .iter()
            .enumerate()
            .map(|(k, &step)| Save {
                began_ns: (k as i64 + 1) * 60 * S,
                step: Some(step),
                seconds: Some(14.0),
                save_steps: None,
            })
            .collect();
        let found = detect(&key, &s, &cfg);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].baseline, found[0].observed),
            (Some(100.0), Some(10.0))
        );
        // 40 saves over 400 steps where 4 were asked for.
        assert!((found[0].lost_seconds - 36.0 * 14.0).abs() < 1e-6);
        // A restart from an earlier checkpoint (steps going back) is no interval.
        let mut back = s[..8].to_vec();
        back.push(Save {
            step: Some(300),
            ..s[8]
        });
        assert!(detect(&key, &back, &cfg).is_empty());
    }
}
