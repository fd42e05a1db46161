//! What an OTLP log record carries, written out for the decoder of its own format:
//! - a map body (the `journald` receiver's journal fields, the `k8sobjects` receiver's
//!   Event or watch event, a structured application log) as a JSON object, told apart
//!   by its keys as `auto` tells JSON lines apart;
//! - a `k8sevents` receiver record (body = the Event's message, the Event in
//!   `k8s.event.*` and `k8s.object.*` attributes) as the Event object it came from;
//! - a text body (a `filelog` receiver's line: container output, a kernel line, a
//!   slurmctld line) as that line, read by content.
//!
//! The Kubernetes scope of the resource and record attributes (`k8s.node.name` or
//! `host.name`, `k8s.namespace.name`, `k8s.pod.name`, `k8s.cluster.name`, `log.file.path`)
//! and the record's time (`timeUnixNano`, else `observedTimeUnixNano`) become the hints
//! the line is read with: a line that carries its own time and pod keeps them.

use std::borrow::Cow;

use opentelemetry_proto::tonic::common::v1::KeyValue;
use opentelemetry_proto::tonic::common::v1::any_value::Value;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use serde::Serialize;

use super::attrs::{self, text_of};
use crate::decode::auto::detect_record_strict;
use crate::decode::{Format, Hints};
use whyslow_schemas::time::{self, Nanos};

/// The hints of one resource: its node, namespace, pod and cluster over `base`.
pub fn resource_hints(resource: &[KeyValue], base: &Hints) -> Hints {
    let owned = |key| text_of(resource, key).map(Cow::into_owned);
    let mut h = base.clone();
    h.node = owned("k8s.node.name")
        .or_else(|| owned("host.name"))
        .or(h.node);
    h.namespace = owned("k8s.namespace.name").or(h.namespace);
    h.pod = owned("k8s.pod.name").or(h.pod);
    h.cluster = owned("k8s.cluster.name").or(h.cluster);
    // The file the request was read from says nothing of its records.
    h.path = None;
    h
}

/// Whether the record is a container's output, by the metadata the Collector adds to it
/// (the `filelog` receiver's `log.iostream`, a pod log path, the `k8sattributes`
/// processor's container): its text then goes to container-log whatever it looks like
/// (a Python logging line can look like a kernel one).
fn from_a_container(r: &LogRecord, resource: &[KeyValue]) -> bool {
    attrs::find(&r.attributes, "log.iostream").is_some()
        || attrs::find(resource, "k8s.container.name").is_some()
        || attrs::find(&r.attributes, "k8s.container.name").is_some()
        || text_of(&r.attributes, "log.file.path").is_some_and(|p| {
            p.starts_with("/var/log/pods/") || p.starts_with("/var/log/containers/")
        })
}

/// The record's own time: `timeUnixNano`, else when the collector saw it.
pub fn record_time(r: &LogRecord) -> Option<Nanos> {
    [r.time_unix_nano, r.observed_time_unix_nano]
        .into_iter()
        .find(|&t| t > 0)
        .and_then(|t| Nanos::try_from(t).ok())
}

/// Sets the per-record hints (time, file path, a record-level namespace or pod) on the
/// resource's `hints`, restoring what the previous record changed from `resource`.
pub fn record_hints(r: &LogRecord, resource: &Hints, hints: &mut Hints) {
    hints.record_time_ns = record_time(r);
    let path = text_of(&r.attributes, "log.file.path");
    if path.as_deref() != hints.path.as_deref() {
        hints.path = path.map(Cow::into_owned).or_else(|| resource.path.clone());
    }
    let ns = text_of(&r.attributes, "k8s.namespace.name");
    if ns.is_some() || hints.namespace != resource.namespace {
        hints.namespace = ns
            .map(Cow::into_owned)
            .or_else(|| resource.namespace.clone());
    }
    let pod = text_of(&r.attributes, "k8s.pod.name");
    if pod.is_some() || hints.pod != resource.pod {
        hints.pod = pod.map(Cow::into_owned).or_else(|| resource.pod.clone());
    }
}

/// Writes what the record carries into `out` (cleared first) and returns the format to
/// read it as; `None` when it carries nothing (no body). `fallback_ns` dates an Event
/// whose record has no time (the time the message was written).
pub fn route(
    r: &LogRecord,
    resource: &[KeyValue],
    fallback_ns: Option<Nanos>,
    out: &mut Vec<u8>,
) -> Option<Format> {
    out.clear();
    let body = attrs::inner(r.body.as_ref());
    if attrs::find(&r.attributes, "k8s.event.reason").is_some() {
        write_event(r, resource, fallback_ns, out);
        return Some(Format::K8s);
    }
    match body? {
        v @ Value::KvlistValue(_) => {
            attrs::write_json(Some(v), out);
            Some(match detect_record_strict(out) {
                Some(f @ (Format::K8s | Format::Kmsg | Format::Envelope)) => f,
                _ => Format::ContainerLog,
            })
        }
        v => {
            let text = attrs::text(v)?;
            if text.trim().is_empty() {
                return None;
            }
            out.extend_from_slice(text.as_bytes());
            if from_a_container(r, resource) {
                return Some(Format::ContainerLog);
            }
            Some(match detect_record_strict(out) {
                Some(f @ (Format::K8s | Format::Kmsg | Format::Envelope | Format::Slurm)) => f,
                // A line that happens to look like a Prometheus sample is still a log line.
                _ => Format::ContainerLog,
            })
        }
    }
}

/// An Event as the Kubernetes API writes it (the fields the k8s decoder reads).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Event<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: Meta<'a>,
    involved_object: ObjectRef<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<Cow<'a, str>>,
    #[serde(rename = "type")]
    type_: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_timestamp: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    action: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reporting_component: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reporting_instance: Option<Cow<'a, str>>,
    source: Source<'a>,
}

#[derive(Serialize)]
struct Meta<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ObjectRef<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    api_version: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    namespace: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    uid: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    field_path: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct Source<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    component: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    host: Option<Cow<'a, str>>,
}

/// `k8s.event.start_time`: the Event's creation time as Go prints a `time.Time`
/// (`2024-01-02 15:04:05.123 +0000 UTC`), or RFC 3339.
fn go_time(s: &str) -> Option<Nanos> {
    if let Ok(ns) = time::parse_rfc3339(s) {
        return Some(ns);
    }
    let (stamp, _zone) = s.rsplit_once(' ')?;
    chrono::DateTime::parse_from_str(stamp, "%Y-%m-%d %H:%M:%S%.f %z")
        .ok()?
        .timestamp_nanos_opt()
}

/// The `k8sevents` receiver's record as the Event it came from: the involved object from
/// the resource's `k8s.object.*`, the Event's own fields from `k8s.event.*`, its type
/// from the severity text, its last time from the record's time.
fn write_event(
    r: &LogRecord,
    resource: &[KeyValue],
    fallback_ns: Option<Nanos>,
    out: &mut Vec<u8>,
) {
    let ev = |k: &str| text_of(&r.attributes, k);
    let obj = |k: &str| text_of(resource, k);
    let namespace = ev("k8s.namespace.name").or_else(|| obj("k8s.namespace.name"));
    let event = Event {
        api_version: "v1",
        kind: "Event",
        metadata: Meta {
            name: ev("k8s.event.name"),
            namespace: namespace.clone(),
            uid: ev("k8s.event.uid"),
        },
        involved_object: ObjectRef {
            api_version: obj("k8s.object.api_version"),
            kind: obj("k8s.object.kind"),
            name: obj("k8s.object.name"),
            namespace,
            uid: obj("k8s.object.uid"),
            field_path: obj("k8s.object.fieldpath"),
        },
        reason: ev("k8s.event.reason"),
        message: attrs::inner(r.body.as_ref()).and_then(attrs::text),
        type_: match r.severity_text.as_str() {
            "" => "Normal",
            t => t,
        },
        count: ev("k8s.event.count").and_then(|c| c.parse().ok()),
        first_timestamp: ev("k8s.event.start_time")
            .and_then(|t| go_time(&t))
            .map(time::format_rfc3339),
        last_timestamp: record_time(r).or(fallback_ns).map(time::format_rfc3339),
        action: ev("k8s.event.action"),
        reporting_component: ev("k8s.event.reporting_controller"),
        reporting_instance: ev("k8s.event.reporting_instance"),
        source: Source {
            component: ev("k8s.event.reporting_controller"),
            host: obj("k8s.node.name"),
        },
    };
    // Serializing plain strings and integers into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, &event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::AnyValue;

    fn kv(key: &str, v: &str) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue {
                value: Some(Value::StringValue(v.into())),
            }),
            ..Default::default()
        }
    }

    fn record(body: &str, attributes: Vec<KeyValue>) -> LogRecord {
        LogRecord {
            time_unix_nano: 1_700_000_000_000_000_000,
            body: Some(AnyValue {
                value: Some(Value::StringValue(body.into())),
            }),
            attributes,
            ..Default::default()
        }
    }

    #[test]
    fn text_bodies_go_by_content() {
        let mut buf = Vec::new();
        let xid = record(
            "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
            vec![],
        );
        assert_eq!(route(&xid, &[], None, &mut buf), Some(Format::Kmsg));
        assert_eq!(buf, xid_text());
        let log = record("step 10 loss 2.5", vec![]);
        assert_eq!(route(&log, &[], None, &mut buf), Some(Format::ContainerLog));
        let sample_like = record("gpu_util 97", vec![]);
        assert_eq!(
            route(&sample_like, &[], None, &mut buf),
            Some(Format::ContainerLog)
        );
        assert_eq!(route(&record("  ", vec![]), &[], None, &mut buf), None);
        // A Python logging line reads like a dmesg one; from a container it is output.
        let py = "2023-11-14 22:13:20,123 - INFO - step: 20 loss: 2.5";
        let from_pod = record(py, vec![kv("log.iostream", "stdout")]);
        assert_eq!(
            route(&from_pod, &[], None, &mut buf),
            Some(Format::ContainerLog)
        );
    }

    fn xid_text() -> Vec<u8> {
        b"NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.".to_vec()
    }

    #[test]
    fn a_k8sevents_record_becomes_its_event() {
        let mut buf = Vec::new();
        let r = LogRecord {
            severity_text: "Warning".into(),
            ..record(
                "0/4 nodes are available",
                vec![
                    kv("k8s.event.reason", "FailedScheduling"),
                    kv("k8s.event.name", "trainer-0.17a"),
                    kv("k8s.event.start_time", "2023-11-14 22:13:20.5 +0000 UTC"),
                    kv("k8s.namespace.name", "ml"),
                ],
            )
        };
        let resource = [
            kv("k8s.object.kind", "Pod"),
            kv("k8s.object.name", "trainer-0"),
        ];
        assert_eq!(route(&r, &resource, None, &mut buf), Some(Format::K8s));
        let v: serde_json::Value = serde_json::from_slice(&buf).unwrap();
        assert_eq!(v["kind"], "Event");
        assert_eq!(v["reason"], "FailedScheduling");
        assert_eq!(v["type"], "Warning");
        assert_eq!(v["involvedObject"]["name"], "trainer-0");
        assert_eq!(v["involvedObject"]["namespace"], "ml");
        assert_eq!(v["firstTimestamp"], "2023-11-14T22:13:20.500Z");
        assert_eq!(v["lastTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(v["message"], "0/4 nodes are available");
    }

    #[test]
    fn hints_follow_resource_then_record() {
        let base = Hints {
            node: Some("fallback".into()),
            ..Default::default()
        };
        let res = resource_hints(
            &[kv("host.name", "gpu-7"), kv("k8s.pod.name", "trainer-0")],
            &base,
        );
        assert_eq!(res.node.as_deref(), Some("gpu-7"));
        let mut h = res.clone();
        record_hints(
            &record(
                "x",
                vec![kv("k8s.pod.name", "other"), kv("log.file.path", "/p")],
            ),
            &res,
            &mut h,
        );
        assert_eq!(
            (h.pod.as_deref(), h.path.as_deref()),
            (Some("other"), Some("/p"))
        );
        assert_eq!(h.record_time_ns, Some(1_700_000_000_000_000_000));
        record_hints(&record("y", vec![]), &res, &mut h);
        assert_eq!(
            (h.pod.as_deref(), h.path.as_deref()),
            (Some("trainer-0"), None)
        );
    }
}
