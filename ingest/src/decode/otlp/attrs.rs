//! OTLP attribute values read as text (labels, hints) or written as JSON (a structured
//! log body handed on to the decoder of its own format), and the resource attributes of
//! the OpenTelemetry semantic conventions that name a Kubernetes scope.

use std::borrow::Cow;
use std::io::Write;

use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value::Value};

/// The value of attribute `key`, if set.
pub fn find<'a>(attrs: &'a [KeyValue], key: &str) -> Option<&'a Value> {
    attrs
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

/// The non-empty string value of attribute `key` (a number is written as text).
pub fn text_of<'a>(attrs: &'a [KeyValue], key: &str) -> Option<Cow<'a, str>> {
    find(attrs, key).and_then(text).filter(|t| !t.is_empty())
}

/// A value as label text: strings as they are, numbers and booleans as written in JSON,
/// bytes as lossy UTF-8, arrays and maps as JSON.
pub fn text(v: &Value) -> Option<Cow<'_, str>> {
    Some(match v {
        Value::StringValue(s) => Cow::Borrowed(s.as_str()),
        Value::BoolValue(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        Value::IntValue(i) => Cow::Owned(i.to_string()),
        Value::DoubleValue(d) => Cow::Owned(d.to_string()),
        Value::BytesValue(b) => String::from_utf8_lossy(b),
        Value::ArrayValue(_) | Value::KvlistValue(_) => {
            let mut buf = Vec::new();
            write_json(Some(v), &mut buf);
            // Written from `&str`s and `String`s and ASCII punctuation only.
            Cow::Owned(String::from_utf8(buf).ok()?)
        }
        // An index into a profile's string table: nothing outside profiles uses it.
        Value::StringValueStrindex(_) => return None,
    })
}

/// Writes a value as JSON: maps as objects, arrays as arrays, bytes as an array of byte
/// values (journald's own way of writing a field that is not UTF-8), a missing value as
/// `null`, and a double that JSON cannot hold (`NaN`, `±Inf`) as a string.
pub fn write_json(v: Option<&Value>, out: &mut Vec<u8>) {
    // Writing into a Vec cannot fail, and a `&str` always serializes.
    let _ = write(v, out);
}

fn write(v: Option<&Value>, out: &mut Vec<u8>) -> std::io::Result<()> {
    match v {
        None | Some(Value::StringValueStrindex(_)) => out.extend_from_slice(b"null"),
        Some(Value::StringValue(s)) => serde_json::to_writer(&mut *out, s.as_str())?,
        Some(Value::BoolValue(b)) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Some(Value::IntValue(i)) => write!(out, "{i}")?,
        Some(Value::DoubleValue(d)) if d.is_finite() => serde_json::to_writer(&mut *out, d)?,
        Some(Value::DoubleValue(d)) => write!(out, "\"{d}\"")?,
        Some(Value::BytesValue(b)) => serde_json::to_writer(&mut *out, b)?,
        Some(Value::ArrayValue(a)) => {
            out.push(b'[');
            for (i, item) in a.values.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write(item.value.as_ref(), out)?;
            }
            out.push(b']');
        }
        Some(Value::KvlistValue(kv)) => {
            out.push(b'{');
            for (i, pair) in kv.values.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                serde_json::to_writer(&mut *out, pair.key.as_str())?;
                out.push(b':');
                write(pair.value.as_ref().and_then(|v| v.value.as_ref()), out)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// The value inside an `AnyValue`.
pub fn inner(v: Option<&AnyValue>) -> Option<&Value> {
    v.and_then(|v| v.value.as_ref())
}

/// Resource attributes of the semantic conventions that name what a Prometheus scrape's
/// target labels would (the node, pod and workload a metric was read on), with the label
/// the Prometheus decoder reads them from. A data point's own attributes come first and
/// win: a dcgm-exporter sample's `pod` is the GPU's pod, the resource's
/// `k8s.pod.name` the exporter's own (Prometheus would rename it `exported_pod`).
pub const RESOURCE_LABELS: [(&str, &str); 11] = [
    ("k8s.cluster.name", "cluster"),
    ("k8s.node.name", "kubernetes_node"),
    ("host.name", "hostname"),
    ("k8s.namespace.name", "namespace"),
    ("k8s.pod.name", "pod"),
    ("k8s.container.name", "container"),
    ("k8s.job.name", "job_name"),
    ("k8s.deployment.name", "deployment"),
    ("k8s.statefulset.name", "statefulset"),
    ("service.name", "job"),
    ("service.instance.id", "instance"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn kv(key: &str, v: Value) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(v) }),
            ..Default::default()
        }
    }

    #[test]
    fn values_become_json_and_text() {
        let map = Value::KvlistValue(KeyValueList {
            values: vec![
                kv("MESSAGE", Value::StringValue("NVRM: Xid \"79\"".into())),
                kv("n", Value::IntValue(-3)),
                kv("d", Value::DoubleValue(f64::NAN)),
                kv("b", Value::BytesValue(vec![0xff, 0x41])),
                kv(
                    "a",
                    Value::ArrayValue(ArrayValue {
                        values: vec![
                            AnyValue {
                                value: Some(Value::BoolValue(true)),
                            },
                            AnyValue { value: None },
                        ],
                    }),
                ),
            ],
        });
        let mut buf = Vec::new();
        write_json(Some(&map), &mut buf);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            r#"{"MESSAGE":"NVRM: Xid \"79\"","n":-3,"d":"NaN","b":[255,65],"a":[true,null]}"#
        );
        let attrs = [
            kv("k8s.pod.name", Value::StringValue("trainer-0".into())),
            kv("empty", Value::StringValue(String::new())),
            kv("count", Value::IntValue(7)),
        ];
        assert_eq!(
            text_of(&attrs, "k8s.pod.name").as_deref(),
            Some("trainer-0")
        );
        assert_eq!(text_of(&attrs, "count").as_deref(), Some("7"));
        assert_eq!(text_of(&attrs, "empty"), None);
        assert_eq!(text_of(&attrs, "missing"), None);
    }
}
