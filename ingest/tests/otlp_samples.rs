//! OTLP logs and metrics as the OpenTelemetry Collector ships them, read by `auto` with no
//! per-topic tuning: the OTLP/JSON examples of opentelemetry-proto, the `k8sevents` and
//! `k8sobjects` receivers' expected output (pdata YAML, OTLP/JSON's field names), the same
//! requests as OTLP/protobuf (the Kafka exporter's default `otlp_proto`), and a real
//! dcgm-exporter scrape as the `prometheus` receiver forwards it.

mod ingest_common;
mod k8s_common;

use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{
    Gauge, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, metric, number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use whyslow_ingest::Format;
use whyslow_ingest::decode::auto::{AutoDecoder, detect, detect_record};
use whyslow_ingest::decode::decoder_for;
use whyslow_ingest::decode::otlp::request::{self, Request};
use whyslow_ingest::decode::prometheus::PrometheusDecoder;
use whyslow_ingest::decode::prometheus::text::{Line, Sample, parse_line};
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::Table;
use whyslow_schemas::tables::{StoredTime, stored_to_ns};

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples/collectors")
        .join(name)
}

fn read(name: &str) -> String {
    std::fs::read_to_string(sample(name)).unwrap()
}

/// A pdata golden YAML as the OTLP/JSON request it spells.
fn yaml_as_json(name: &str) -> String {
    let v: serde_json::Value = serde_norway::from_str(&read(name)).unwrap();
    serde_json::to_string(&v).unwrap()
}

/// One metrics row: (metric, value, time, node, device, pod).
type MetricRow = (
    String,
    f64,
    i64,
    Option<String>,
    Option<String>,
    Option<String>,
);

struct Decoded {
    events: k8s_common::Decoded,
    metrics: Vec<MetricRow>,
}

fn metric_rows(b: &RecordBatch) -> Vec<MetricRow> {
    let s = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
    let (metric, node, device, pod) = (s("metric"), s("node"), s("device"), s("pod"));
    let value = b
        .column_by_name("value")
        .unwrap()
        .as_primitive::<Float64Type>();
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let opt =
        |a: &arrow::array::StringArray, i: usize| a.is_valid(i).then(|| a.value(i).to_string());
    (0..b.num_rows())
        .map(|i| {
            (
                metric.value(i).to_string(),
                value.value(i),
                stored_to_ns(time.value(i)),
                opt(&node, i),
                opt(&device, i),
                opt(&pod, i),
            )
        })
        .collect()
}

/// Decodes one Kafka message with `auto`, as a topic the Collector's Kafka exporter
/// writes to would be read.
fn auto_message(bytes: &[u8], hints: &Hints) -> Decoded {
    assert_eq!(detect_record(bytes), Some(Format::Otlp));
    let mut d = AutoDecoder::new(|f| Some(decoder_for(f)));
    let mut out = Output::new(1);
    let origin = Origin::Kafka {
        topic: "otlp_logs",
        partition: 0,
        offset: 3,
    };
    d.decode(bytes, &origin, hints, &mut out);
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    assert_eq!(out.counts.records, 1);
    let metrics = metric_rows(&out.metrics.finish());
    Decoded {
        events: k8s_common::collect(out),
        metrics,
    }
}

fn errors(d: &Decoded) -> Vec<&str> {
    d.events.dead.iter().map(|x| x.error.as_str()).collect()
}

/// The request as OTLP/protobuf (read with the decoder's own JSON reading, which
/// takes the Collector's empty maps).
fn logs_proto(json: &str) -> Vec<u8> {
    let Request::Logs(resource_logs) = request::from_json(json).unwrap() else {
        panic!("not logs")
    };
    ExportLogsServiceRequest { resource_logs }.encode_to_vec()
}

fn metrics_proto(json: &str) -> Vec<u8> {
    let r: ExportMetricsServiceRequest = serde_json::from_str(json).unwrap();
    r.encode_to_vec()
}

const T: i64 = 1_544_712_660_300_000_000;

/// opentelemetry-proto's `examples/metrics.json`: a sum, a gauge, a histogram and an
/// exponential histogram become the samples Prometheus would expose for them.
#[test]
fn metrics_example_json_and_protobuf() {
    let json = read("otlp-json-examples-metrics.json");
    assert_eq!(detect(json.as_bytes()), Some(Format::Otlp));
    let compact: serde_json::Value = serde_json::from_str(&json).unwrap();
    let line = serde_json::to_string(&compact).unwrap();
    let d = auto_message(line.as_bytes(), &Hints::default());
    assert_eq!(d.events.counts.rejected, 0, "{:?}", errors(&d));
    let got: Vec<(&str, f64)> = d.metrics.iter().map(|m| (m.0.as_str(), m.1)).collect();
    assert_eq!(
        got,
        [
            ("my.counter", 5.0),
            ("my.gauge", 10.0),
            ("my.histogram_bucket", 1.0),
            ("my.histogram_bucket", 2.0),
            ("my.histogram_sum", 2.0),
            ("my.histogram_count", 2.0),
            ("my.exponential.histogram_sum", 10.0),
            ("my.exponential.histogram_count", 3.0),
        ]
    );
    assert!(d.metrics.iter().all(|m| m.2 == T));
    // The same request as protobuf gives the same rows.
    let p = auto_message(&metrics_proto(&line), &Hints::default());
    assert_eq!(p.metrics, d.metrics);

    // A pretty-printed file, as `whyslow ingest` reads it.
    let store = tempfile::tempdir().unwrap();
    let path = sample("otlp-json-examples-metrics.json");
    let summary = ingest_common::run(store.path(), &[&path], Format::Auto);
    let t = summary.total();
    assert_eq!(
        (t.counts.records, t.counts.rejected, t.counts.metrics),
        (1, 0, 8),
        "{}",
        summary.render()
    );
    let stored = ingest_common::read(store.path(), Table::Metrics);
    assert_eq!(stored.num_rows(), 8);
}

/// opentelemetry-proto's `examples/logs.json`; its body replaced by kernel lines from real
/// dmesg output: the Xid line becomes an `xid` event on the resource's host, dated by its
/// own stamp, or by the record's time when it has none.
#[test]
fn logs_example_carries_kernel_lines() {
    let json = read("otlp-json-examples-logs.json");
    assert_eq!(detect(json.as_bytes()), Some(Format::Otlp));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let line = serde_json::to_string(&v).unwrap();
    let d = auto_message(line.as_bytes(), &Hints::default());
    assert_eq!(d.events.counts.rejected, 0, "{:?}", errors(&d));

    let dmesg = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/samples/xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log"),
    )
    .unwrap();
    let stamped = dmesg.lines().find(|l| l.contains("NVRM: Xid")).unwrap();
    let bare = &stamped[stamped.find("NVRM:").unwrap()..];
    let with_host = line.replacen(
        r#""attributes":[{"key":"service.name""#,
        r#""attributes":[{"key":"host.name","value":{"stringValue":"gpu-node-7"}},{"key":"service.name""#,
        1,
    );
    assert_ne!(with_host, line);
    for (body, time) in [
        (stamped, k8s_common::ns("2025-01-21T04:41:44.283302Z")),
        (bare, T),
    ] {
        let request = with_host.replace(
            r#""stringValue":"Example log record""#,
            &format!("\"stringValue\":{}", serde_json::to_string(body).unwrap()),
        );
        for bytes in [request.as_bytes().to_vec(), logs_proto(&request)] {
            let d = auto_message(&bytes, &Hints::default());
            let xids = d.events.of_kind("xid");
            assert_eq!(xids.len(), 1, "{body}: {:?}", errors(&d));
            assert_eq!(xids[0].reason.as_deref(), Some("13"));
            assert_eq!(xids[0].node.as_deref(), Some("gpu-node-7"));
            assert_eq!(xids[0].time_ns, time, "{body}");
        }
    }
}

/// The `k8sevents` receiver: the Event's fields in attributes, its message the body.
#[test]
fn k8sevents_receiver_records_are_events() {
    let json = yaml_as_json("otel-k8seventsreceiver-e2e-expected-watch_events.yaml");
    let hints = Hints {
        default_time_ns: Some(T),
        ..Hints::default()
    };
    for bytes in [json.as_bytes().to_vec(), logs_proto(&json)] {
        let d = auto_message(&bytes, &hints);
        assert_eq!(d.events.counts.rejected, 0, "{:?}", errors(&d));
        let ev: Vec<_> = d
            .events
            .rows
            .iter()
            .filter(|e| e.reason.as_deref() == Some("TestEvent"))
            .collect();
        assert_eq!(ev.len(), 1, "{:?}", d.events.rows);
        assert_eq!(ev[0].pod.as_deref(), Some("test-pod"));
        assert_eq!(ev[0].namespace.as_deref(), Some("test-k8sevents-e2e"));
        assert_eq!(
            ev[0].message.as_deref(),
            Some("Test event for k8seventsreceiver e2e testing")
        );
    }
}

/// The `k8sobjects` receiver in watch mode: the body is the whole watch event.
#[test]
fn k8sobjects_receiver_watch_events_are_events() {
    let json = yaml_as_json("otel-k8sobjectsreceiver-e2e-expected-watch_events_core.yaml");
    for bytes in [json.as_bytes().to_vec(), logs_proto(&json)] {
        let d = auto_message(&bytes, &Hints::default());
        assert_eq!(d.events.counts.rejected, 0, "{:?}", errors(&d));
        assert!(
            d.events
                .rows
                .iter()
                .any(|e| e.message.as_deref() == Some("test event of type warning")),
            "{:?}",
            d.events.rows
        );
    }
}

/// A real dcgm-exporter scrape forwarded by the Collector's `prometheus` receiver (one
/// gauge per series, the labels as attributes, the node from the `k8sattributes`
/// processor) gives the rows the scrape itself gives.
#[test]
fn dcgm_scrape_through_the_collector_reads_as_the_scrape() {
    let prom = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/samples/dcgm-exporter/dcgm-exporter-L4-kops-aws.prom"),
    )
    .unwrap();
    let text = |v: &str| AnyValue {
        value: Some(any_value::Value::StringValue(v.into())),
    };
    let kv = |k: &str, v: &str| KeyValue {
        key: k.into(),
        value: Some(text(v)),
        ..Default::default()
    };
    let mut s = Sample::default();
    let mut metrics = Vec::new();
    for line in prom.lines() {
        if !matches!(parse_line(line, &mut s), Ok(Line::Sample)) {
            continue;
        }
        metrics.push(Metric {
            name: s.name().into(),
            data: Some(metric::Data::Gauge(Gauge {
                data_points: vec![NumberDataPoint {
                    attributes: s.labels().map(|(k, v)| kv(k, v)).collect(),
                    time_unix_nano: T as u64,
                    value: Some(number_data_point::Value::AsDouble(s.value)),
                    ..Default::default()
                }],
            })),
            ..Default::default()
        });
    }
    assert_eq!(metrics.len(), 23);
    let request = ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: vec![
                    kv("service.name", "dcgm-exporter"),
                    kv("k8s.node.name", "gpu-node-1"),
                ],
                ..Default::default()
            }),
            scope_metrics: vec![ScopeMetrics {
                metrics,
                ..Default::default()
            }],
            ..Default::default()
        }],
    };
    let via_collector = auto_message(&request.encode_to_vec(), &Hints::default());
    assert_eq!(via_collector.events.counts.rejected, 0);

    let mut direct = PrometheusDecoder::new();
    let mut out = Output::new(1);
    let hints = Hints {
        node: Some("gpu-node-1".into()),
        default_time_ns: Some(T),
        ..Hints::default()
    };
    let origin = Origin::File {
        path: "scrape.prom",
        line: 1,
    };
    direct.decode(prom.as_bytes(), &origin, &hints, &mut out);
    let scraped = metric_rows(&out.metrics.finish());
    assert_eq!(via_collector.metrics, scraped);
    assert!(scraped.iter().any(|m| m.0 == "gpu_temp_celsius"
        && m.3.as_deref() == Some("gpu-node-1")
        && m.4.as_deref() == Some("0")));
}

/// (error, payload) of every dead letter.
fn dead_letters(batches: Vec<(Table, RecordBatch)>) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    for (t, b) in batches.iter().filter(|(t, _)| *t == Table::DeadLetters) {
        let _ = t;
        let e = b.column_by_name("error").unwrap().as_string::<i32>();
        let p = b.column_by_name("payload").unwrap().as_binary::<i32>();
        v.extend((0..b.num_rows()).map(|i| (e.value(i).to_string(), p.value(i).to_vec())));
    }
    v
}

/// Bytes that are no OTLP request are rejected whole, with the reason.
#[test]
fn broken_requests_are_dead_letters() {
    let mut d = decoder_for(Format::Otlp);
    let mut out = Output::new(1);
    let origin = Origin::Kafka {
        topic: "otlp_metrics",
        partition: 2,
        offset: 9,
    };
    for bad in [
        &b"{\"resourceLogs\":{}}"[..],
        b"\x0a\x03\x12\x01",
        b"{\"resourceMetrics\":",
    ] {
        d.decode(bad, &origin, &Hints::default(), &mut out);
    }
    // A metrics point with no time and nothing to date it: the request is kept whole.
    let undated = r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"up","gauge":{"dataPoints":[{"asDouble":1}]}}]}]}]}"#;
    d.decode(undated.as_bytes(), &origin, &Hints::default(), &mut out);
    // A traces request carries nothing whyslow reads.
    d.decode(
        br#"{"resourceSpans":[]}"#,
        &origin,
        &Hints::default(),
        &mut out,
    );
    assert!(out.counts.balances());
    assert_eq!((out.counts.rejected, out.counts.skipped), (4, 1));
    let dead = dead_letters(out.take_batches());
    assert_eq!(dead.len(), 4);
    assert!(
        dead[0]
            .0
            .starts_with("otlp_metrics/2/9: not an OTLP/JSON request"),
        "{}",
        dead[0].0
    );
    assert!(dead[1].0.contains("OTLP/protobuf"), "{}", dead[1].0);
    assert!(
        dead[3]
            .0
            .contains("no OTLP data points became a row; 1 of 1"),
        "{}",
        dead[3].0
    );
    assert_eq!(dead[3].1, undated.as_bytes());
}

/// The `journald` receiver: the body is the journal entry's fields (the stanza docs'
/// entry), here with a kernel Xid line as its MESSAGE.
#[test]
fn journald_receiver_entries_carry_kernel_lines() {
    let doc = read("otel-stanza-journald_input-output-entry-sample.txt");
    let entry: serde_json::Value =
        serde_json::from_str(&format!("{{{doc}}}")).expect("the entry, once braced");
    let fields = entry["entry"]["body"].as_object().unwrap();
    let kvlist = |xid: bool| {
        let values: Vec<serde_json::Value> = fields
            .iter()
            .map(|(k, v)| {
                let v = match (k.as_str(), xid) {
                    ("MESSAGE", true) => {
                        "NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, name=python, GPU has fallen off the bus."
                    }
                    ("_TRANSPORT", true) => "kernel",
                    _ => v.as_str().unwrap(),
                };
                serde_json::json!({"key": k, "value": {"stringValue": v}})
            })
            .collect();
        serde_json::json!({"resourceLogs": [{"scopeLogs": [{"logRecords": [{
            "observedTimeUnixNano": "1587049549600000000",
            "body": {"kvlistValue": {"values": values}}
        }]}]}]})
        .to_string()
    };
    let d = auto_message(kvlist(false).as_bytes(), &Hints::default());
    assert_eq!(
        (d.events.counts.rejected, d.events.rows.len()),
        (0, 0),
        "{:?}",
        errors(&d)
    );
    for bytes in [kvlist(true).into_bytes(), logs_proto(&kvlist(true))] {
        let d = auto_message(&bytes, &Hints::default());
        let xids = d.events.of_kind("xid");
        assert_eq!(xids.len(), 1, "{:?}", errors(&d));
        assert_eq!(xids[0].node.as_deref(), Some("testhost"));
        // `_SOURCE_REALTIME_TIMESTAMP`, the journal's own time.
        assert_eq!(xids[0].time_ns, 1_587_049_549_515_868_000);
    }
}

/// `whyslow ingest --format otlp` on a pretty-printed document: its lines are held until
/// the document is whole, then read as one request.
#[test]
fn format_otlp_reads_a_pretty_printed_document() {
    let store = tempfile::tempdir().unwrap();
    let path = sample("otlp-json-examples-metrics.json");
    let lines = read("otlp-json-examples-metrics.json").lines().count() as u64;
    let summary = ingest_common::run(store.path(), &[&path], Format::Otlp);
    let t = summary.total();
    assert_eq!(
        (t.counts.records, t.counts.rejected, t.counts.metrics),
        (lines, 0, 8),
        "{}",
        summary.render()
    );
}

/// Requests some of whose parts cannot be read: the parts that can become rows and each
/// other part is a dead letter of its own; values the JSON reader cannot take (NaN as a
/// string) and absurd bucket counts are dead letters or rows, never a panic or a loss.
#[test]
fn parts_that_cannot_be_read_are_kept() {
    let xid = r#"{"timeUnixNano":"1764410400000000000","body":{"stringValue":"NVRM: Xid (PCI:0000:8a:00): 79, pid=1, name=python, GPU has fallen off the bus."}}"#;
    let bad_journal = r#"{"body":{"kvlistValue":{"values":[{"key":"MESSAGE","value":{"stringValue":"NVRM: Xid 79"}},{"key":"__REALTIME_TIMESTAMP","value":{"stringValue":"yesterday"}}]}}}"#;
    let request =
        format!(r#"{{"resourceLogs":[{{"scopeLogs":[{{"logRecords":[{xid},{bad_journal}]}}]}}]}}"#);
    let d = auto_message(request.as_bytes(), &Hints::default());
    assert_eq!(d.events.counts.produced, 1);
    assert_eq!(d.events.of_kind("xid").len(), 1);
    assert_eq!(d.events.dead.len(), 1, "{:?}", errors(&d));
    assert!(
        errors(&d)[0].contains("__REALTIME_TIMESTAMP"),
        "{:?}",
        errors(&d)
    );

    let nan = r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"DCGM_FI_DEV_GPU_TEMP","gauge":{"dataPoints":[{"asDouble":"NaN","timeUnixNano":"1764410400000000000"}]}}]}]}]}"#;
    let d = auto_message(nan.as_bytes(), &Hints::default());
    assert_eq!(d.events.counts.rejected, 1);
    assert!(errors(&d)[0].contains("NaN"), "{:?}", errors(&d));

    let huge = r#"{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"h","histogram":{"dataPoints":[{"timeUnixNano":"1764410400000000000","count":"5","bucketCounts":["18446744073709551615","5"],"explicitBounds":[1]}]}}]}]}]}"#;
    let d = auto_message(huge.as_bytes(), &Hints::default());
    assert_eq!(d.events.counts.rejected, 0, "{:?}", errors(&d));
    assert_eq!(d.metrics.len(), 3);
    // Bounds without their counts: no buckets, the count alone.
    let unmatched = huge.replace(r#""bucketCounts":["18446744073709551615","5"],"#, "");
    let d = auto_message(unmatched.as_bytes(), &Hints::default());
    let names: Vec<&str> = d.metrics.iter().map(|m| m.0.as_str()).collect();
    assert_eq!(names, ["h_count"]);

    // JSON that is no OTLP request, and text given to the otlp decoder.
    let mut dec = decoder_for(Format::Otlp);
    let mut out = Output::new(1);
    let origin = Origin::Kafka {
        topic: "otlp",
        partition: 0,
        offset: 1,
    };
    for bad in [&br#"{"hello":1}"#[..], b"hi", b"xx"] {
        dec.decode(bad, &origin, &Hints::default(), &mut out);
    }
    assert_eq!(out.counts.rejected, 3);
}
