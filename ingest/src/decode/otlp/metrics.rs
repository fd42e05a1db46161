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
use opentelemetry_proto::tonic::metrics::v1::{Metric, number_data_point};

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

/// Feeds every data point of `metric` to the Prometheus decoder.
pub fn decode_metric(
    metric: &Metric,
    resource: &[(&'static str, String)],
    prom: &mut PrometheusDecoder,
    hints: &Hints,
    out: &mut Output,
    tally: &mut Tally,
) {
    let mut emit = |p: Point<'_>| {
        let r = prom.decode_sample(|s| fill(s, &metric.name, &p, resource), hints, out);
        match r {
            Ok(()) => tally.rows += 1,
            Err(e) => tally.failed.push((exposition(prom.sample()), e)),
        }
    };
    let number = |v: Option<number_data_point::Value>| match v {
        Some(number_data_point::Value::AsDouble(d)) => Some(d),
        Some(number_data_point::Value::AsInt(i)) => Some(i as f64),
        None => None,
    };
    let Some(data) = &metric.data else {
        return;
    };
    let skip = |flags: u32| flags & NO_RECORDED_VALUE != 0;
    let mut skipped = 0;
    match data {
        Data::Gauge(g) => {
            for dp in &g.data_points {
                match number(dp.value).filter(|_| !skip(dp.flags)) {
                    Some(value) => emit(plain("", value, dp.time_unix_nano, &dp.attributes)),
                    None => skipped += 1,
                }
            }
        }
        Data::Sum(s) => {
            for dp in &s.data_points {
                match number(dp.value).filter(|_| !skip(dp.flags)) {
                    Some(value) => emit(plain("", value, dp.time_unix_nano, &dp.attributes)),
                    None => skipped += 1,
                }
            }
        }
        Data::Histogram(h) => {
            for dp in &h.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                let mut cumulative = 0u64;
                for (i, &bound) in dp.explicit_bounds.iter().enumerate() {
                    cumulative += dp.bucket_counts.get(i).copied().unwrap_or(0);
                    emit(Point {
                        suffix: "_bucket",
                        extra: Some(("le", Cow::Owned(le(bound)))),
                        value: cumulative as f64,
                        time_unix_nano: t,
                        attributes: a,
                    });
                }
                emit(Point {
                    suffix: "_bucket",
                    extra: Some(("le", Cow::Borrowed("+Inf"))),
                    value: dp.count as f64,
                    time_unix_nano: t,
                    attributes: a,
                });
                if let Some(sum) = dp.sum {
                    emit(plain("_sum", sum, t, a));
                }
                emit(plain("_count", dp.count as f64, t, a));
            }
        }
        Data::ExponentialHistogram(h) => {
            for dp in &h.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                if let Some(sum) = dp.sum {
                    emit(plain("_sum", sum, t, a));
                }
                emit(plain("_count", dp.count as f64, t, a));
            }
        }
        Data::Summary(s) => {
            for dp in &s.data_points {
                if skip(dp.flags) {
                    skipped += 1;
                    continue;
                }
                let (t, a) = (dp.time_unix_nano, dp.attributes.as_slice());
                for q in &dp.quantile_values {
                    emit(Point {
                        suffix: "",
                        extra: Some(("quantile", Cow::Owned(le(q.quantile)))),
                        value: q.value,
                        time_unix_nano: t,
                        attributes: a,
                    });
                }
                emit(plain("_sum", dp.sum, t, a));
                emit(plain("_count", dp.count as f64, t, a));
            }
        }
    }
    tally.skipped += skipped;
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
    if p.suffix.is_empty() {
        s.set_name(name);
    } else {
        s.set_name(&format!("{name}{}", p.suffix));
    }
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
