//! One OTLP export request, read from OTLP/JSON or OTLP/protobuf (the OpenTelemetry
//! Collector's Kafka exporter writes one per message, as `otlp_json` or `otlp_proto`; its
//! file exporter one JSON request per line), and the wire-format check that tells a
//! protobuf request from other binary payloads without decoding it.

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::logs::v1::ResourceLogs;
use opentelemetry_proto::tonic::metrics::v1::ResourceMetrics;
use prost::Message;
use serde::Deserialize;
use serde::de::IgnoredAny;

/// What a request carries.
#[derive(Debug)]
pub enum Request {
    Logs(Vec<ResourceLogs>),
    Metrics(Vec<ResourceMetrics>),
    /// Traces or profiles: nothing whyslow reads.
    Other(&'static str),
}

/// The top-level keys of every OTLP/JSON request.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct JsonRequest {
    resource_logs: Option<Vec<ResourceLogs>>,
    resource_metrics: Option<Vec<ResourceMetrics>>,
    resource_spans: Option<IgnoredAny>,
    resource_profiles: Option<IgnoredAny>,
}

/// Writes `"values": []` into every `kvlistValue` and `arrayValue` object that has none:
/// the Collector writes an empty map as `{}` (proto3 JSON omits empty lists), which the
/// message types' JSON mapping requires.
fn fill_empty_lists(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, item) in m.iter_mut() {
                if let ("kvlistValue" | "arrayValue", serde_json::Value::Object(list)) =
                    (k.as_str(), &mut *item)
                    && !list.contains_key("values")
                {
                    list.insert("values".into(), serde_json::Value::Array(Vec::new()));
                }
                fill_empty_lists(item);
            }
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(fill_empty_lists),
        _ => {}
    }
}

/// Reads an OTLP/JSON request (logs, metrics, traces or profiles).
pub fn from_json(text: &str) -> Result<Request, String> {
    let bad = |e: serde_json::Error| format!("not an OTLP/JSON request: {e}");
    let r: JsonRequest = match serde_json::from_str(text) {
        Ok(r) => r,
        // Rare (an empty map in a log body): read again through a tree with the lists.
        Err(e) if e.to_string().starts_with("missing field `values`") => {
            let mut v: serde_json::Value = serde_json::from_str(text).map_err(bad)?;
            fill_empty_lists(&mut v);
            serde_json::from_value(v).map_err(bad)?
        }
        Err(e) => return Err(bad(e)),
    };
    let (logs, metrics) = (r.resource_logs, r.resource_metrics);
    let (logs_set, metrics_set) = (logs.is_some(), metrics.is_some());
    Ok(if let Some(l) = logs.filter(|l| !l.is_empty()) {
        Request::Logs(l)
    } else if let Some(m) = metrics.filter(|m| !m.is_empty()) {
        Request::Metrics(m)
    } else if r.resource_spans.is_some() {
        Request::Other("traces")
    } else if r.resource_profiles.is_some() {
        Request::Other("profiles")
    } else if logs_set || metrics_set || text.trim() == "{}" {
        // An empty request.
        Request::Logs(Vec::new())
    } else {
        return Err(
            "not an OTLP/JSON request: no resourceLogs, resourceMetrics, \
                    resourceSpans or resourceProfiles"
                .into(),
        );
    })
}

/// Reads an OTLP/protobuf logs or metrics request. The two share their outer layout; a
/// metric's first field is its name (a string) where a log record's is its time (a
/// fixed64), so a request decodes as at most one of them with named metrics.
pub fn from_protobuf(bytes: &[u8]) -> Result<Request, String> {
    if bytes.is_empty() {
        return Ok(Request::Logs(Vec::new()));
    }
    // Protobuf readers skip fields they do not know: text would read as an empty request.
    if !looks_like_protobuf(bytes) {
        return Err(
            "neither OTLP/JSON nor an OTLP/protobuf logs or metrics request (its wire layout \
             is not an export request's)"
                .into(),
        );
    }
    let metrics = ExportMetricsServiceRequest::decode(bytes);
    if let Ok(m) = &metrics
        && m.resource_metrics
            .iter()
            .flat_map(|r| &r.scope_metrics)
            .flat_map(|s| &s.metrics)
            .any(|m| !m.name.is_empty())
    {
        return metrics
            .map(|m| Request::Metrics(m.resource_metrics))
            .map_err(|e| e.to_string());
    }
    match ExportLogsServiceRequest::decode(bytes) {
        Ok(l) => Ok(Request::Logs(l.resource_logs)),
        Err(e) => Err(format!(
            "not an OTLP/protobuf logs or metrics request: {e}{}",
            metrics
                .err()
                .map(|m| format!(" (as metrics: {m})"))
                .unwrap_or_default()
        )),
    }
}

/// Reads a base-128 varint at `*at`.
fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// The length-delimited fields of a protobuf message, as (field number, bytes); `None`
/// when it is not a well-formed message whose fields are all length-delimited.
fn length_delimited(b: &[u8]) -> impl Iterator<Item = Option<(u64, &[u8])>> {
    let mut at = 0;
    std::iter::from_fn(move || {
        if at >= b.len() {
            return None;
        }
        let field = (|| {
            let key = varint(b, &mut at)?;
            if key & 7 != 2 {
                return None;
            }
            let len = usize::try_from(varint(b, &mut at)?).ok()?;
            let end = at.checked_add(len).filter(|&e| e <= b.len())?;
            let body = &b[at..end];
            at = end;
            Some((key >> 3, body))
        })();
        if field.is_none() {
            at = b.len();
        }
        Some(field)
    })
}

/// Whether bytes are laid out as an OTLP export request: only field 1 (`resource_logs`,
/// `resource_metrics`, …) at the top, each holding a resource (1), scope lists (2) and a
/// schema URL (3), and at least one scope list. Checks the wire format only.
pub fn looks_like_protobuf(b: &[u8]) -> bool {
    if b.first() != Some(&0x0a) {
        return false;
    }
    let mut scopes = false;
    for field in length_delimited(b) {
        let Some((1, resource)) = field else {
            return false;
        };
        for inner in length_delimited(resource) {
            match inner {
                Some((2, _)) => scopes = true,
                Some((1 | 3, _)) => {}
                _ => return false,
            }
        }
    }
    scopes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_requests_say_what_they_carry() {
        let logs = r#"{"resourceLogs":[{"resource":{"attributes":[]},"scopeLogs":[{"logRecords":[{"timeUnixNano":"1","body":{"stringValue":"x"}}]}]}]}"#;
        let Request::Logs(l) = from_json(logs).unwrap() else {
            panic!("logs")
        };
        assert_eq!(l[0].scope_logs[0].log_records[0].time_unix_nano, 1);
        let metrics = r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"up","gauge":{"dataPoints":[{"asInt":"1","timeUnixNano":1}]}}]}]}]}"#;
        assert!(matches!(from_json(metrics).unwrap(), Request::Metrics(_)));
        assert!(matches!(
            from_json(r#"{"resourceSpans":[]}"#).unwrap(),
            Request::Other("traces")
        ));
        assert!(from_json(r#"{"resourceLogs":{}}"#).is_err());
        // The Collector writes an empty map as `{}`.
        let empty = r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"kvlistValue":{"values":[{"key":"source","value":{"kvlistValue":{}}},{"key":"a","value":{"arrayValue":{}}}]}}}]}]}]}"#;
        let Request::Logs(l) = from_json(empty).unwrap() else {
            panic!("logs")
        };
        assert!(l[0].scope_logs[0].log_records[0].body.is_some());
    }

    #[test]
    fn protobuf_requests_are_told_apart() {
        let Request::Metrics(m) = from_json(
            r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"up","gauge":{"dataPoints":[{"asDouble":1,"timeUnixNano":"5"}]}}]}]}]}"#,
        )
        .unwrap() else {
            panic!("metrics")
        };
        let bytes = ExportMetricsServiceRequest {
            resource_metrics: m,
        }
        .encode_to_vec();
        assert!(looks_like_protobuf(&bytes));
        assert!(matches!(
            from_protobuf(&bytes).unwrap(),
            Request::Metrics(_)
        ));

        let Request::Logs(l) = from_json(
            r#"{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"timeUnixNano":"7","observedTimeUnixNano":"8","severityNumber":9,"body":{"stringValue":"NVRM: Xid"}}]}]}]}"#,
        )
        .unwrap() else {
            panic!("logs")
        };
        let bytes = ExportLogsServiceRequest { resource_logs: l }.encode_to_vec();
        assert!(looks_like_protobuf(&bytes));
        let Request::Logs(back) = from_protobuf(&bytes).unwrap() else {
            panic!("read back as logs")
        };
        assert_eq!(back[0].scope_logs[0].log_records[0].time_unix_nano, 7);

        for not in [
            &b"\n"[..],
            b"\nhello world",
            b"{\"a\":1}",
            b"\x0a\x05abc",
            b"",
        ] {
            assert!(!looks_like_protobuf(not), "{not:?}");
        }
        assert!(from_protobuf(b"\x0a\x05abc").is_err());
        assert!(from_protobuf(b"hi").is_err());
        assert!(from_json(r#"{"hello":1}"#).is_err());
        assert!(matches!(from_json("{}"), Ok(Request::Logs(l)) if l.is_empty()));
    }
}
