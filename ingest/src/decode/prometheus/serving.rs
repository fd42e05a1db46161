//! Derived rows of the serving engines' (vLLM, TGI) counters and histograms, per scrape
//! interval: a counter becomes a rate per second, a latency histogram becomes its p50,
//! p95 and p99 (interpolated within the bucket from the bucket deltas, as Prometheus'
//! `histogram_quantile` does), its mean (sum delta / count delta) and its number of
//! observations, and a tokens-per-request histogram the rate of its sum.
//!
//! Each series (its scope, its engine family name and its labels without `le`)
//! remembers its previous scrape within one input or stream. A histogram's scrape is
//! complete once its `+Inf` bucket, `_sum` and `_count` of one time have been read (in
//! any order); a scrape that never gets its `_sum`/`_count` is closed, with what it
//! has, by the series' next scrape. The first scrape of a series derives nothing; a
//! counter or bucket that drops (the engine restarted) starts the series over with no
//! row for that interval; an interval with no new observations gives only
//! `<base>_observations` = 0 (no quantile, no mean); an interval of zero or negative
//! length gives nothing. Derived rows are dated at the newer scrape.

use std::collections::HashMap;

use whyslow_schemas::builders::{MetricRow, MetricsBuilder, Scope};

use super::names::{Derive, Part, ServingName};
use super::text::{Sample, parse_value};

/// The series kept per stream at most; past it the memory starts over (an interval is
/// then missed, never invented).
const MAX_SERIES: usize = 200_000;

/// The buckets one histogram scrape keeps at most; past it the scrape is dropped.
const MAX_BUCKETS: usize = 1_024;

/// The quantiles derived from a latency histogram, with their name suffixes.
const QUANTILES: [(f64, &str); 3] = [(0.5, "_p50"), (0.95, "_p95"), (0.99, "_p99")];

/// One histogram scrape: cumulative buckets (upper bound, count), sum and count.
#[derive(Debug, Default, Clone)]
struct Scrape {
    time: i64,
    buckets: Vec<(f64, f64)>,
    sum: Option<f64>,
    count: Option<f64>,
    /// Too many buckets or an unreadable `le`: derives nothing.
    broken: bool,
}

impl Scrape {
    fn has_inf(&self) -> bool {
        self.buckets.iter().any(|(le, _)| *le == f64::INFINITY)
    }

    fn complete(&self) -> bool {
        self.has_inf() && self.sum.is_some() && self.count.is_some()
    }
}

#[derive(Debug)]
enum Series {
    Counter {
        time: i64,
        value: f64,
    },
    Histogram {
        /// The scrape being read, and whether it was already closed.
        current: Scrape,
        closed: bool,
        previous: Option<Scrape>,
    },
}

/// What a sample needs for the derived rows: its time, scope and source.
#[derive(Debug, Clone, Copy)]
pub struct Context<'a> {
    pub time_ns: i64,
    pub scope: Scope<'a>,
    pub layer: whyslow_schemas::Layer,
    pub source: &'a str,
}

/// The previous scrape of every serving series seen in one stream.
#[derive(Debug, Default)]
pub struct ServingMemory {
    series: HashMap<String, Series>,
    key: String,
    order: Vec<usize>,
}

impl ServingMemory {
    /// Forgets everything (end of an input).
    pub fn clear(&mut self) {
        self.series.clear();
    }

    /// Records one sample of a serving metric and appends the rows it derives.
    /// `kept` are the labels the sample's row keeps (without scope labels).
    pub fn observe<'k>(
        &mut self,
        name: ServingName,
        sample: &Sample,
        cx: Context<'_>,
        kept: impl Iterator<Item = (&'k str, &'k str)> + Clone,
        out: &mut MetricsBuilder,
    ) {
        if matches!(name.part, Part::Gauge) || !sample.value.is_finite() {
            return;
        }
        self.series_key(name, sample, &cx.scope);
        let labels = kept
            .filter(|(k, _)| *k != "le")
            .chain(std::iter::once(("__name__", name.engine)));
        let emit = Emit {
            cx,
            labels,
            out,
            name,
        };
        if self.series.len() >= MAX_SERIES && !self.series.contains_key(self.key.as_str()) {
            self.series.clear();
        }
        match name.part {
            Part::Gauge => {}
            Part::Counter => self.counter(cx.time_ns, sample.value, emit),
            Part::Bucket | Part::Sum | Part::Count => {
                let le = match name.part {
                    Part::Bucket => Some(
                        sample
                            .labels()
                            .find(|(k, _)| *k == "le")
                            .and_then(|(_, v)| parse_value(v.trim()))
                            .unwrap_or(f64::NAN),
                    ),
                    _ => None,
                };
                self.histogram(cx.time_ns, name.part, le, sample.value, emit)
            }
        }
    }

    /// The series key: scope, engine family and the labels but `le`, sorted by name.
    fn series_key(&mut self, name: ServingName, sample: &Sample, scope: &Scope<'_>) {
        self.key.clear();
        self.key.push_str(name.engine);
        for part in [scope.cluster, scope.node, scope.namespace, scope.pod] {
            self.key.push('\u{1f}');
            self.key.push_str(part.unwrap_or(""));
        }
        self.order.clear();
        self.order.extend(0..sample.label_count());
        self.order
            .sort_by(|&a, &b| sample.label(a).0.cmp(sample.label(b).0));
        for &i in &self.order {
            let (k, v) = sample.label(i);
            if k == "le" {
                continue;
            }
            self.key.push('\u{1e}');
            self.key.push_str(k);
            self.key.push('\u{1f}');
            self.key.push_str(v);
        }
    }

    fn counter<'k, L>(&mut self, time: i64, value: f64, mut emit: Emit<'_, '_, L>)
    where
        L: Iterator<Item = (&'k str, &'k str)> + Clone,
    {
        let Some(Series::Counter {
            time: t0,
            value: v0,
        }) = self.series.get_mut(self.key.as_str())
        else {
            self.series
                .insert(self.key.clone(), Series::Counter { time, value });
            return;
        };
        if time == *t0 {
            return;
        }
        let (dt, dv) = (secs(time - *t0), value - *v0);
        (*t0, *v0) = (time, value);
        if let (Some(dt), Derive::Rate(rate)) = (dt, emit.name.derive)
            && dv >= 0.0
        {
            emit.row(rate, dv / dt);
        }
    }

    fn histogram<'k, L>(
        &mut self,
        time: i64,
        part: Part,
        le: Option<f64>,
        value: f64,
        mut emit: Emit<'_, '_, L>,
    ) where
        L: Iterator<Item = (&'k str, &'k str)> + Clone,
    {
        let series = match self.series.get_mut(self.key.as_str()) {
            Some(s @ Series::Histogram { .. }) => s,
            _ => {
                self.series.insert(
                    self.key.clone(),
                    Series::Histogram {
                        current: Scrape {
                            time,
                            ..Scrape::default()
                        },
                        closed: false,
                        previous: None,
                    },
                );
                match self.series.get_mut(self.key.as_str()) {
                    Some(s) => s,
                    None => return,
                }
            }
        };
        let Series::Histogram {
            current,
            closed,
            previous,
        } = series
        else {
            return;
        };
        // A new scrape starts: another time, the last one closed, or a part read twice.
        let repeated = match part {
            Part::Bucket => current.buckets.iter().any(|(b, _)| Some(*b) == le),
            Part::Sum => current.sum.is_some(),
            _ => current.count.is_some(),
        };
        if current.time != time || *closed || repeated {
            if !*closed && current.has_inf() {
                // The last scrape never got its sum or count: close it with what it has.
                let (done, prev) = (std::mem::take(current), previous.take());
                *previous = close(done, prev, &mut emit);
            }
            *current = Scrape {
                time,
                ..Scrape::default()
            };
            *closed = false;
        }
        match (part, le) {
            (Part::Bucket, Some(le)) if le.is_nan() || current.buckets.len() >= MAX_BUCKETS => {
                current.broken = true;
            }
            (Part::Bucket, Some(le)) => current.buckets.push((le, value)),
            (Part::Sum, _) => current.sum = Some(value),
            _ => current.count = Some(value),
        }
        if current.complete() {
            let (done, prev) = (std::mem::take(current), previous.take());
            *previous = close(done, prev, &mut emit);
            current.time = time;
            *closed = true;
        }
    }
}

/// Nanoseconds as seconds, when positive.
fn secs(ns: i64) -> Option<f64> {
    (ns > 0).then(|| ns as f64 / 1e9)
}

/// Closes a scrape: derives the interval's rows from the previous scrape and returns
/// the scrape to remember (none when it is broken).
fn close<'k, L>(
    mut done: Scrape,
    prev: Option<Scrape>,
    emit: &mut Emit<'_, '_, L>,
) -> Option<Scrape>
where
    L: Iterator<Item = (&'k str, &'k str)> + Clone,
{
    if done.broken {
        return None;
    }
    done.buckets
        .sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    if done.count.is_none() {
        done.count = done.buckets.last().map(|(_, c)| *c);
    }
    if let Some(prev) = prev
        && let Some(dt) = secs(done.time - prev.time)
        && let Some(delta) = interval(&prev, &done)
    {
        derive(&delta, dt, emit);
    }
    Some(done)
}

/// One interval of a histogram: bucket deltas, sum delta, count delta.
#[derive(Debug, Clone, PartialEq)]
pub struct Interval {
    pub buckets: Vec<(f64, f64)>,
    pub sum: Option<f64>,
    pub count: f64,
}

/// The interval between two scrapes of one histogram; `None` when it was reset (a count
/// or bucket dropped) or its buckets changed.
fn interval(prev: &Scrape, now: &Scrape) -> Option<Interval> {
    let (c0, c1) = (prev.count?, now.count?);
    if c1 < c0 || prev.buckets.len() != now.buckets.len() {
        return None;
    }
    let mut buckets = Vec::with_capacity(now.buckets.len());
    for (&(le0, n0), &(le1, n1)) in prev.buckets.iter().zip(&now.buckets) {
        if le0 != le1 || n1 < n0 {
            return None;
        }
        buckets.push((le1, n1 - n0));
    }
    let sum = match (prev.sum, now.sum) {
        (Some(a), Some(b)) => Some(b - a),
        _ => None,
    };
    Some(Interval {
        buckets,
        sum,
        count: c1 - c0,
    })
}

fn derive<'k, L>(d: &Interval, dt: f64, emit: &mut Emit<'_, '_, L>)
where
    L: Iterator<Item = (&'k str, &'k str)> + Clone,
{
    let base = emit.name.base;
    match emit.name.derive {
        Derive::Quantiles => {
            let named = |suffix: &str| format!("{base}{suffix}");
            emit.row(&named("_observations"), d.count);
            if d.count <= 0.0 {
                return;
            }
            for (q, suffix) in QUANTILES {
                let v = histogram_quantile(q, &d.buckets);
                if v.is_finite() {
                    emit.row(&named(suffix), v);
                }
            }
            if let Some(sum) = d.sum {
                emit.row(&named("_mean"), sum / d.count);
            }
        }
        Derive::SumRate(rate) => {
            if let Some(sum) = d.sum.filter(|s| *s >= 0.0) {
                emit.row(rate, sum / dt);
            }
        }
        Derive::Rate(_) | Derive::Nothing => {}
    }
}

/// The `q` quantile of cumulative buckets (upper bound, count; sorted, `+Inf` last), as
/// Prometheus' `histogram_quantile` computes it: linear interpolation within the bucket
/// the rank falls in (the first bucket starting at 0); a rank in the `+Inf` bucket gives
/// the highest finite bound. NaN when there are no observations or no `+Inf` bucket.
pub fn histogram_quantile(q: f64, buckets: &[(f64, f64)]) -> f64 {
    if q.is_nan() || buckets.len() < 2 || buckets.last().map(|b| b.0) != Some(f64::INFINITY) {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    // Counts made monotonic, as Prometheus does for buckets scraped at slightly
    // different moments.
    let mut cum = Vec::with_capacity(buckets.len());
    let mut max = 0.0f64;
    for &(le, c) in buckets {
        max = max.max(c);
        cum.push((le, max));
    }
    let observations = cum[cum.len() - 1].1;
    if observations <= 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let last = cum.len() - 1;
    let b = cum[..last]
        .iter()
        .position(|&(_, c)| c >= rank)
        .unwrap_or(last);
    if b == last {
        return cum[last - 1].0;
    }
    if b == 0 && cum[0].0 <= 0.0 {
        return cum[0].0;
    }
    let (mut start, end, mut count) = (0.0, cum[b].0, cum[b].1);
    if b > 0 {
        start = cum[b - 1].0;
        count -= cum[b - 1].1;
        rank -= cum[b - 1].1;
    }
    if count <= 0.0 {
        return end;
    }
    start + (end - start) * (rank / count)
}

/// Where derived rows go, and what they carry from the sample.
struct Emit<'o, 'c, L> {
    cx: Context<'c>,
    labels: L,
    out: &'o mut MetricsBuilder,
    name: ServingName,
}

impl<'k, L> Emit<'_, '_, L>
where
    L: Iterator<Item = (&'k str, &'k str)> + Clone,
{
    fn row(&mut self, metric: &str, value: f64) {
        let row = MetricRow {
            time_ns: self.cx.time_ns,
            layer: self.cx.layer,
            source: self.cx.source,
            metric,
            value,
            scope: self.cx.scope,
            rank: None,
            step: None,
        };
        self.out.append(&row, self.labels.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INF: f64 = f64::INFINITY;

    fn close_to(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn interpolates_within_the_bucket() {
        // 10 observations: 2 in (0, 0.1], 6 in (0.1, 0.5], 2 in (0.5, 1].
        let b = [(0.1, 2.0), (0.5, 8.0), (1.0, 10.0), (INF, 10.0)];
        // p50: rank 5, 3 into the 6 of (0.1, 0.5] → 0.1 + 0.4 * 3/6.
        assert!(close_to(histogram_quantile(0.5, &b), 0.3));
        // p95: rank 9.5, 1.5 into the 2 of (0.5, 1] → 0.5 + 0.5 * 0.75.
        assert!(close_to(histogram_quantile(0.95, &b), 0.875));
        // p10: rank 1 in the first bucket, which starts at 0 → 0.1 * 1/2.
        assert!(close_to(histogram_quantile(0.1, &b), 0.05));
    }

    #[test]
    fn a_rank_in_the_inf_bucket_gives_the_highest_bound() {
        let b = [(0.1, 1.0), (0.5, 2.0), (INF, 10.0)];
        assert_eq!(histogram_quantile(0.99, &b), 0.5);
    }

    #[test]
    fn no_observations_or_no_inf_bucket_is_nan() {
        assert!(histogram_quantile(0.5, &[(0.1, 0.0), (INF, 0.0)]).is_nan());
        assert!(histogram_quantile(0.5, &[(0.1, 1.0), (0.5, 2.0)]).is_nan());
        assert!(histogram_quantile(0.5, &[(INF, 3.0)]).is_nan());
        assert_eq!(
            histogram_quantile(-0.1, &[(0.1, 1.0), (INF, 1.0)]),
            f64::NEG_INFINITY
        );
    }

    #[test]
    fn non_monotonic_counts_are_evened_out() {
        // The 0.5 bucket reads less than the 0.1 one: treated as 4.
        let b = [(0.1, 4.0), (0.5, 3.0), (1.0, 8.0), (INF, 8.0)];
        // rank 4 → the first bucket holding >= 4 is 0.1 → 0.1 * 4/4.
        assert!(close_to(histogram_quantile(0.5, &b), 0.1));
    }

    #[test]
    fn intervals_subtract_buckets_and_refuse_resets() {
        let a = Scrape {
            time: 0,
            buckets: vec![(0.1, 2.0), (INF, 4.0)],
            sum: Some(1.0),
            count: Some(4.0),
            broken: false,
        };
        let mut b = a.clone();
        b.buckets = vec![(0.1, 5.0), (INF, 10.0)];
        b.sum = Some(2.5);
        b.count = Some(10.0);
        assert_eq!(
            interval(&a, &b),
            Some(Interval {
                buckets: vec![(0.1, 3.0), (INF, 6.0)],
                sum: Some(1.5),
                count: 6.0
            })
        );
        assert_eq!(interval(&b, &a), None);
    }
}
