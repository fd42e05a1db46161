//! OTLP metric data points as the Prometheus samples they stand for, read by the
//! Prometheus decoder (names, scope labels, DCGM events and all): gauges and sums one
//! sample per point; histograms `_bucket` (cumulative, with `le`), `_sum` and `_count`;
//! summaries one sample per quantile (with `quantile`), `_sum` and `_count`; exponential
//! histograms `_sum` and `_count`. A point flagged as having no recorded value (the
//! staleness marker) is skipped.
//!
//! Labels are the point's attributes, then the resource attributes of
//! [`RESOURCE_LABELS`] under their Prometheus names where the point has no label of that
//! name. The point's time is its `timeUnixNano`; one of 0 takes the hints' default.

use std::borrow::Cow;
use std::fmt::Write;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use opentelemetry_proto::tonic::metrics::v1::{Gauge, Metric, Sum, number_data_point};

use super::attrs::{self, RESOURCE_LABELS};
use crate::decode::prometheus::PrometheusDecoder;
use crate::decode::prometheus::text::Sample;
use crate::decode::{Hints, Output};

/// `DataPointFlags.FLAG_NO_RECORDED_VALUE`.
const NO_RECORDED_VALUE: u32 = 1;

/// The resource's scope labels, under their Prometheus names.
pub fn resource_labels(resource: &[KeyValue]) -> Vec<(&'static str, String)> {
    RESOURCE_LABELS
        .iter()
        .filter_map(|&(key, label)| attrs::text_of(resource, key).map(|v| (label, v.into_owned())))
        .collect()
}

/// One sample to emit: the metric name's suffix, an extra label, the value and time.
struct Point<'a> {
    suffix: &'static str,
    extra: Option<(&'static str, Cow<'a, str>)>,
    value: f64,
    time_unix_nano: u64,
    attributes: &'a [KeyValue],
}

/// Tallies of one request's data points.
#[derive(Debug, Default)]
pub struct Tally {
    /// Samples that became rows.
    pub rows: u64,
    /// Points skipped (no recorded value).
    pub skipped: u64,
    /// Samples that could not be read: (the sample in exposition format, why).
    pub failed: Vec<(String, String)>,
}

/// Where the samples of one request go, and their tallies.
pub struct Sink<'a> {
    pub prom: &'a mut PrometheusDecoder,
    pub hints: &'a Hints,
    pub out: &'a mut Output,
    pub tally: Tally,
    /// The resource's scope labels (see [`resource_labels`]).
    pub resource: Vec<(&'static str, String)>,
    /// The sample's name (the metric's and a suffix), reused.
    name: String,
}

impl<'a> Sink<'a> {
    pub fn new(prom: &'a mut PrometheusDecoder, hints: &'a Hints, out: &'a mut Output) -> Self {
        Sink {
            prom,
            hints,
            out,
            tally: Tally::default(),
            resource: Vec::new(),
            name: String::new(),
        }
    }

    fn emit(&mut self, metric: &str, p: Point<'_>) {
        self.name.clear();
        self.name.push_str(metric);
        self.name.push_str(p.suffix);
        let (name, resource) = (&self.name, &self.resource);
        let r = self
            .prom
            .decode_sample(|s| fill(s, name, &p, resource), self.hints, self.out);
        match r {
            Ok(()) => self.tally.rows += 1,
            Err(e) => self.tally.failed.push((exposition(self.prom.sample()), e)),
        }
    }

    /// A point (or metric) that could not be read at all.
    fn unreadable(&mut self, metric: &str, what: &str) {
        self.tally.failed.push((
            metric.to_string(),
            format!(
                "{what} of metric '{metric}' could not be read (a NaN or Infinity written as \
                 a string is not taken by the OTLP/JSON reader)"
            ),
        ));
    }
}

/// Feeds every data point of `metric` to the Prometheus decoder.
pub fn decode_metric(metric: &Metric, sink: &mut Sink<'_>) {
    let name = metric.name.as_str();
    let number = |v: Option<number_data_point::Value>| match v {
        Some(number_data_point::Value::AsDouble(d)) => Some(d),
        Some(number_data_point::Value::AsInt(i)) => Some(i as f64),
        None => None,
    };
    let skip = |flags: u32| flags & NO_RECORDED_VALUE != 0;
    let mut skipped = 0;
    match &metric.data {
        // Named but holding no data the reader could take.
        None => sink.unreadable(name, "the data"),
        Some(Data::Gauge(Gauge { data_points }) | Data::Sum(Sum { data_points, .. })) => {
            for dp in data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                match number(dp.value) {
                    Some(value) => {
                        sink.emit(name, plain("", value, dp.time_unix_nano, &dp.attributes))
                    }
                    None => sink.unreadable(name, "a point's value"),
                }
            }
        }
        Some(Data::Histogram(h)) => {
            for dp in &h.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                // Buckets only when the counts match the bounds (one more count, for +Inf).
                if dp.bucket_counts.len() == dp.explicit_bounds.len() + 1 {
                    let mut cumulative = 0u64;
                    for (&bound, &count) in dp.explicit_bounds.iter().zip(&dp.bucket_counts) {
                        cumulative = cumulative.saturating_add(count);
                        sink.emit(
                            name,
                            Point {
                                suffix: "_bucket",
                                extra: Some(("le", Cow::Owned(le(bound)))),
                                value: cumulative as f64,
                                time_unix_nano: t,
                                attributes: a,
                            },
                        );
                    }
                    sink.emit(
                        name,
                        Point {
                            suffix: "_bucket",
                            extra: Some(("le", Cow::Borrowed("+Inf"))),
                            value: dp.count as f64,
                            time_unix_nano: t,
                            attributes: a,
                        },
                    );
                }
                if let Some(sum) = dp.sum {
                    sink.emit(name, plain("_sum", sum, t, a));
                }
                sink.emit(name, plain("_count", dp.count as f64, t, a));
            }
        }
        Some(Data::ExponentialHistogram(h)) => {
            for dp in &h.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                if let Some(sum) = dp.sum {
                    sink.emit(name, plain("_sum", sum, t, a));
                }
                sink.emit(name, plain("_count", dp.count as f64, t, a));
            }
        }
        Some(Data::Summary(s)) => {
            for dp in &s.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                for q in &dp.quantile_values {
                    sink.emit(
                        name,
                        Point {
                            suffix: "",
                            extra: Some(("quantile", Cow::Owned(le(q.quantile)))),
                            value: q.value,
                            time_unix_nano: t,
                            attributes: a,
                        },
                    );
                }
                sink.emit(name, plain("_sum", dp.sum, t, a));
                sink.emit(name, plain("_count", dp.count as f64, t, a));
            }
        }
    }
    sink.tally.skipped += skipped;
}

fn plain<'a>(suffix: &'static str, value: f64, t: u64, attributes: &'a [KeyValue]) -> Point<'a> {
    Point {
        suffix,
        extra: None,
        value,
        time_unix_nano: t,
        attributes,
    }
}

/// A bound as Prometheus client libraries write `le` and `quantile` (`0.25`, `1`,
/// `+Inf`).
fn le(bound: f64) -> String {
    if bound == f64::INFINITY {
        "+Inf".into()
    } else if bound == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        bound.to_string()
    }
}

fn fill(s: &mut Sample, name: &str, p: &Point<'_>, resource: &[(&'static str, String)]) {
    s.set_name(name);
    for kv in p.attributes {
        if let Some(v) = attrs::inner(kv.value.as_ref()).and_then(attrs::text) {
            s.push_label(&kv.key, &v);
        }
    }
    if let Some((k, v)) = &p.extra {
        s.push_label(k, v);
    }
    for (label, value) in resource {
        if !p.attributes.iter().any(|kv| kv.key == *label) {
            s.push_label(label, value);
        }
    }
    s.value = p.value;
    s.timestamp = (p.time_unix_nano > 0)
        .then(|| i64::try_from(p.time_unix_nano).ok())
        .flatten();
}

/// A sample in the text exposition format, for a dead letter the Prometheus decoder can
/// read again (`whyslow replay`, with `--time` where the point had none).
fn exposition(s: &Sample) -> String {
    let mut line = s.name().to_string();
    let mut labels = s.labels().peekable();
    if labels.peek().is_some() {
        line.push('{');
        for (i, (k, v)) in labels.enumerate() {
            if i > 0 {
                line.push(',');
            }
            let v = v
                .replace('\\', "\\\\")
                .replace('"', "\\\"")
                .replace('\n', "\\n");
            let _ = write!(line, "{k}=\"{v}\"");
        }
        line.push('}');
    }
    let _ = write!(line, " {}", le(s.value));
    if let Some(ns) = s.timestamp {
        let _ = write!(line, " {}", ns / 1_000_000);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_and_samples_read_as_prometheus_writes_them() {
        assert_eq!(le(0.25), "0.25");
        assert_eq!(le(5.0), "5");
        assert_eq!(le(f64::INFINITY), "+Inf");
        let mut s = Sample::default();
        s.set_name("up");
        s.push_label("job", "a\"b");
        s.value = 1.0;
        s.timestamp = Some(1_500_000_000);
        assert_eq!(exposition(&s), r#"up{job="a\"b"} 1 1500"#);
    }
}
