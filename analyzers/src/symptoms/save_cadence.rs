//! Checkpoint cadence above the configured one: a run that saves more often than its own
//! `save_steps` (a callback saving every 10 steps instead of every 100) pays for saves
//! it did not ask for, from its first step on — no change point shows it. Lost time is
//! the extra saves' time: the saves made beyond those the configured interval asks for
//! over the same steps, at the run's own save time.

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

/// The stretches of one workload's saves (sorted by time) that came too soon.
pub fn detect(key: &WorkloadKey, saves: &[Save], cfg: &DetectorConfig) -> Vec<Symptom> {
    let soon: Vec<bool> = saves
        .windows(2)
        .map(|w| match (w[0].step, w[1].step, w[1].save_steps) {
            (Some(a), Some(b), Some(n)) if n > 0 && b > a => ((b - a) as f64) < TOO_SOON * n as f64,
            _ => false,
        })
        .collect();
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
            let (Some(s0), Some(s1), Some(n)) = (first.step, last.step, last.save_steps) else {
                i = j;
                continue;
            };
            let made = (j - i) as f64;
            let asked = (s1 - s0) as f64 / n as f64;
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
                    baseline: Some(n as f64),
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
        // No configured interval: nothing to compare with.
        let mut s = saves(10, 100, 20);
        for x in &mut s {
            x.save_steps = None;
        }
        assert!(detect(&key, &s, &cfg).is_empty());
    }
}
