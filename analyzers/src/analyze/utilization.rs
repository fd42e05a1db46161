//! Accelerator utilization per workload, folded from its samples as they stream
//! (`analyze/metric_scan.rs` passes them named): each workload's scrape interval and,
//! per interval-long bucket, the sum and count of its devices' samples — what the
//! throughput detector reads. Memory is bounded by workloads × scrape times plus the
//! times of 16 devices per workload, not by samples.
//!
//! The scrape interval is the median gap between consecutive samples of one device, read
//! from the workload's first 16 devices by node and device (one scrape configuration
//! serves them all). Without a positive gap (one sample per device) there is no interval
//! and the buckets are the samples' own times. Sums are of values in millionths as
//! integers: the same bits whatever order the samples come in.
//!
//! One scan of the samples replaces a query that read them three times (per pod and
//! time, the distinct devices, the sampled devices' samples joined back on six columns
//! and windowed): 1000 nodes × a day, 3.3 s and a 0.9 GB window sort (see
//! `bench/results/`).

use std::collections::{BTreeMap, HashMap};

use crate::symptoms::WorkloadName;
use crate::symptoms::throughput::Bucket;

/// How many devices of a workload and metric give its scrape interval.
const SAMPLED_DEVICES: usize = 16;

/// Per workload and utilization metric: its scrape interval and its buckets, ascending.
pub type Utilization = BTreeMap<WorkloadName, BTreeMap<String, (Option<i64>, Vec<Bucket>)>>;

/// A device: its node and its index or id, either possibly unknown (`None` sorts first).
type Device = (Option<String>, Option<String>);

/// One workload's samples of one metric.
#[derive(Default, Clone)]
struct Series {
    /// Per scrape time: the sum of the values in millionths (`None` while every value
    /// was missing) and the number of samples.
    per_time: HashMap<i64, (Option<i64>, u64)>,
    /// The sample times of the first devices by node and device, at most
    /// [`SAMPLED_DEVICES`] of them (a device met later that sorts before them takes the
    /// last one's place: a device once left out never comes back in).
    sampled: BTreeMap<Device, Vec<i64>>,
}

/// The fold: samples in, [`Utilization`] out.
#[derive(Default, Clone)]
pub struct UtilizationFold {
    series: BTreeMap<(WorkloadName, String), Series>,
}

/// The samples of one device in a row, as a run of rows of a batch gives them.
pub struct DeviceRun<'a, I> {
    pub namespace: Option<&'a str>,
    pub workload: &'a str,
    pub metric: &'a str,
    pub node: Option<&'a str>,
    pub device: Option<&'a str>,
    /// `(time ns, value)` of each sample.
    pub samples: I,
}

impl UtilizationFold {
    /// Adds a run of samples of one device.
    pub fn push<I: Iterator<Item = (i64, Option<f64>)>>(&mut self, run: DeviceRun<'_, I>) {
        let key = (
            (
                run.namespace.map(str::to_string),
                Some(run.workload.to_string()),
            ),
            run.metric.to_string(),
        );
        let series = self.series.entry(key).or_default();
        let device: Device = (run.node.map(str::to_string), run.device.map(str::to_string));
        let keep_times = series.sampled.len() < SAMPLED_DEVICES
            || series.sampled.contains_key(&device)
            || series
                .sampled
                .last_key_value()
                .is_some_and(|(k, _)| &device < k);
        let mut times = Vec::new();
        for (t, value) in run.samples {
            let entry = series.per_time.entry(t).or_insert((None, 0));
            entry.1 += 1;
            if let Some(m) = value.and_then(millionths) {
                entry.0 = Some(entry.0.unwrap_or(0).saturating_add(m));
            }
            if keep_times {
                times.push(t);
            }
        }
        if keep_times {
            series.sampled.entry(device).or_default().extend(times);
            if series.sampled.len() > SAMPLED_DEVICES {
                series.sampled.pop_last();
            }
        }
    }

    /// Adds another fold's samples: the same as folding them here. The first devices of
    /// both are the first of the union (a device among the first of all is among the
    /// first of every part it appears in), with every time either kept of them.
    pub fn merge(&mut self, other: &UtilizationFold) {
        for (key, theirs) in &other.series {
            let mine = self.series.entry(key.clone()).or_default();
            for (&t, &(sum, n)) in &theirs.per_time {
                let entry = mine.per_time.entry(t).or_insert((None, 0));
                entry.1 += n;
                if let Some(s) = sum {
                    entry.0 = Some(entry.0.unwrap_or(0).saturating_add(s));
                }
            }
            for (device, times) in &theirs.sampled {
                mine.sampled
                    .entry(device.clone())
                    .or_default()
                    .extend_from_slice(times);
            }
            while mine.sampled.len() > SAMPLED_DEVICES {
                mine.sampled.pop_last();
            }
        }
    }

    /// About how many bytes the fold holds (entries and sampled times; keys at 64 bytes).
    pub fn approx_bytes(&self) -> usize {
        self.series
            .values()
            .map(|s| {
                let times: usize = s.sampled.values().map(|t| 64 + 8 * t.capacity()).sum();
                64 + s.per_time.capacity() * 32 + times
            })
            .sum()
    }

    /// Each workload's interval and buckets.
    pub fn finish(self) -> Utilization {
        let mut out = Utilization::new();
        for ((wk, metric), series) in self.series {
            let interval = scrape_interval(series.sampled);
            let mut buckets: BTreeMap<i64, (Option<i64>, u64)> = BTreeMap::new();
            for (t, (sum, n)) in series.per_time {
                // Integer division truncates towards zero, as SQL's.
                let index = interval.map_or(t, |iv| t / iv);
                let b = buckets.entry(index).or_insert((None, 0));
                if let Some(s) = sum {
                    b.0 = Some(b.0.unwrap_or(0).saturating_add(s));
                }
                b.1 += n;
            }
            let buckets = buckets
                .into_iter()
                // A bucket whose samples all lack a value has no sum: nothing to read.
                .filter_map(|(index, (sum, samples))| {
                    sum.map(|s| Bucket {
                        index,
                        sum: s as f64 / 1e6,
                        samples,
                    })
                })
                .collect();
            out.entry(wk)
                .or_default()
                .insert(metric, (interval, buckets));
        }
        out
    }
}

/// A value in millionths, rounded half away from zero; `None` where it does not fit.
pub(super) fn millionths(v: f64) -> Option<i64> {
    let m = (v * 1e6).round();
    // (i64::MAX as f64 rounds up to 2^63, which does not fit: hence the strict bound.)
    (m.is_finite() && m >= i64::MIN as f64 && m < i64::MAX as f64).then_some(m as i64)
}

/// The median positive gap between consecutive samples of each sampled device
/// (the mean of the two middle gaps where their number is even, truncated to whole
/// nanoseconds); `None` without a positive gap.
fn scrape_interval(sampled: BTreeMap<Device, Vec<i64>>) -> Option<i64> {
    let mut gaps: Vec<i64> = Vec::new();
    for (_, mut times) in sampled {
        times.sort_unstable();
        gaps.extend(times.windows(2).map(|w| w[1] - w[0]).filter(|g| *g > 0));
    }
    if gaps.is_empty() {
        return None;
    }
    gaps.sort_unstable();
    let mid = gaps.len() / 2;
    let median = if gaps.len() % 2 == 1 {
        gaps[mid] as f64
    } else {
        (gaps[mid - 1] as f64 + gaps[mid] as f64) / 2.0
    };
    Some(median as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn run<'a>(
        workload: &'a str,
        metric: &'a str,
        node: &'a str,
        device: &'a str,
        samples: &'a [(i64, f64)],
    ) -> DeviceRun<'a, impl Iterator<Item = (i64, Option<f64>)> + 'a> {
        DeviceRun {
            namespace: Some("ml"),
            workload,
            metric,
            node: Some(node),
            device: Some(device),
            samples: samples.iter().map(|&(t, v)| (t, Some(v))),
        }
    }

    fn wk(w: &str) -> WorkloadName {
        (Some("ml".into()), Some(w.into()))
    }

    #[test]
    fn samples_fold_into_interval_long_buckets_of_the_median_gap() {
        // GPU 0 reports at 300, 600 and 1200 s; GPU 1 at 360 and 660 s (gaps 300, 600,
        // 300: the interval is 300 s); GPU 3 once at 660 s, summed with GPU 1's scrape;
        // the TPU workload once (no interval: the bucket is the sample's time).
        let mut fold = UtilizationFold::default();
        fold.push(run(
            "train",
            "gpu_util",
            "node-a",
            "0",
            &[(300 * S, 95.5), (600 * S, 85.0), (1200 * S, 75.0)],
        ));
        fold.push(run(
            "train",
            "gpu_util",
            "node-a",
            "1",
            &[(360 * S, 90.0), (660 * S, 80.0)],
        ));
        fold.push(run("train", "gpu_util", "node-a", "3", &[(660 * S, 60.0)]));
        fold.push(run("tpu", "duty_cycle", "node-t", "0", &[(420 * S, 70.0)]));
        let out = fold.finish();
        let (interval, buckets) = &out[&wk("train")]["gpu_util"];
        assert_eq!(*interval, Some(300 * S));
        let got: Vec<_> = buckets
            .iter()
            .map(|b| (b.index, (b.sum * 1e6).round() as i64, b.samples))
            .collect();
        assert_eq!(
            got,
            vec![(1, 185_500_000, 2), (2, 225_000_000, 3), (4, 75_000_000, 1)]
        );
        let (interval, buckets) = &out[&wk("tpu")]["duty_cycle"];
        assert_eq!(*interval, None);
        assert_eq!(buckets.len(), 1);
        assert_eq!((buckets[0].index, buckets[0].samples), (420 * S, 1));
    }

    #[test]
    fn the_interval_comes_from_the_first_sixteen_devices_in_any_order_of_arrival() {
        // 20 devices: the last four by node and device scrape every 10 s, the first 16
        // every 60 s. They arrive in reverse order, each in two runs, times unordered.
        let mut fold = UtilizationFold::default();
        for d in (0..20).rev() {
            let step = if d < 16 { 60 } else { 10 };
            let late: Vec<(i64, f64)> = (5..10).map(|k| (k * step * S, 1.0)).collect();
            let early: Vec<(i64, f64)> = (0..5).map(|k| (k * step * S, 1.0)).collect();
            let dev = format!("{d:02}");
            fold.push(run("w", "gpu_util", "node-a", &dev, &late));
            fold.push(run("w", "gpu_util", "node-a", &dev, &early));
        }
        let out = fold.finish();
        assert_eq!(out[&wk("w")]["gpu_util"].0, Some(60 * S));
    }

    #[test]
    fn an_even_number_of_gaps_takes_the_mean_of_the_middle_two_and_missing_values_count_no_sum() {
        let mut fold = UtilizationFold::default();
        fold.push(run(
            "w",
            "gpu_util",
            "n",
            "0",
            &[(0, 1.0), (10 * S, 1.0), (30 * S, 1.0)],
        ));
        fold.push(run("w", "gpu_util", "n", "2", &[(0, 1.0), (40 * S, 1.0)]));
        // A sample without a value counts as a sample of its scrape but adds nothing; a
        // scrape of such samples only is no bucket.
        fold.push(DeviceRun {
            namespace: Some("ml"),
            workload: "w",
            metric: "gpu_util",
            node: Some("n"),
            device: Some("1"),
            samples: [(10 * S, None), (100 * S, None)].into_iter(),
        });
        let out = fold.finish();
        let (interval, buckets) = &out[&wk("w")]["gpu_util"];
        // Gaps 10 and 20 s (device 0), 90 s (device 1), 40 s (device 2): the median is
        // the mean of 20 and 40 s.
        assert_eq!(*interval, Some(30 * S));
        let got: Vec<_> = buckets
            .iter()
            .map(|b| (b.index, b.sum, b.samples))
            .collect();
        assert_eq!(got, vec![(0, 3.0, 4), (1, 2.0, 2)]);
        assert_eq!(millionths(f64::NAN), None);
        assert_eq!(millionths(f64::INFINITY), None);
        assert_eq!(millionths(-0.0000005), Some(-1));
    }
}
