//! The Prometheus decoder on the real dcgm-exporter and node-problem-detector scrapes of
//! `fixtures/samples/`, and on edge cases: scrape-time comments, OpenMetrics, escapes,
//! special values, Kafka messages holding whole scrapes, prometheus-kafka-adapter records,
//! and the state-gauge events (Xid, clock throttling).

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use whyslow_ingest::decode::prometheus::PrometheusDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::parse_rfc3339;

fn sample(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples")
        .join(rel)
}

/// Feeds text a line at a time, as the runner does for files, then ends the input.
fn feed_lines(text: &str, path: &str, hints: &Hints) -> Output {
    let mut d = PrometheusDecoder::new();
    let mut out = Output::new(0);
    for (i, line) in text.split_terminator('\n').enumerate() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        d.decode(
            line.as_bytes(),
            &Origin::File {
                path,
                line: i as u64 + 1,
            },
            hints,
            &mut out,
        );
    }
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    out
}

fn feed_file(rel: &str, hints: &Hints) -> Output {
    let text = std::fs::read_to_string(sample(rel)).unwrap();
    feed_lines(&text, rel, hints)
}

fn at(s: &str) -> Hints {
    Hints {
        default_time_ns: Some(parse_rfc3339(s).unwrap()),
        ..Hints::default()
    }
}

/// One metrics row, readable.
#[derive(Debug, Clone)]
struct Row {
    time: i64,
    layer: String,
    source: String,
    metric: String,
    value: f64,
    node: Option<String>,
    device: Option<String>,
    namespace: Option<String>,
    pod: Option<String>,
    workload: Option<String>,
    labels: HashMap<String, String>,
}

fn strings(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

fn maps(b: &RecordBatch, col: &str) -> Vec<HashMap<String, String>> {
    let m = b.column_by_name(col).unwrap().as_map();
    (0..m.len())
        .map(|i| {
            let e = m.value(i);
            let k = e.column(0).as_string::<i32>();
            let v = e.column(1).as_string::<i32>();
            (0..k.len())
                .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                .collect()
        })
        .collect()
}

fn rows(out: &mut Output) -> Vec<Row> {
    let b = out.metrics.finish();
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let value = b
        .column_by_name("value")
        .unwrap()
        .as_primitive::<Float64Type>();
    let (layer, source, metric) = (
        strings(&b, "layer"),
        strings(&b, "source"),
        strings(&b, "metric"),
    );
    let (node, device, ns, pod) = (
        strings(&b, "node"),
        strings(&b, "device"),
        strings(&b, "namespace"),
        strings(&b, "pod"),
    );
    let workload = strings(&b, "workload");
    let labels = maps(&b, "labels");
    (0..b.num_rows())
        .map(|i| Row {
            time: stored_to_ns(time.value(i)),
            layer: layer[i].clone().unwrap(),
            source: source[i].clone().unwrap(),
            metric: metric[i].clone().unwrap(),
            value: value.value(i),
            node: node[i].clone(),
            device: device[i].clone(),
            namespace: ns[i].clone(),
            pod: pod[i].clone(),
            workload: workload[i].clone(),
            labels: labels[i].clone(),
        })
        .collect()
}

/// Events as (kind, reason, severity, attrs).
fn events(out: &mut Output) -> Vec<(String, String, String, HashMap<String, String>)> {
    let b = out.events.finish();
    let (k, r, s) = (
        strings(&b, "kind"),
        strings(&b, "reason"),
        strings(&b, "severity"),
    );
    let a = maps(&b, "attrs");
    (0..b.num_rows())
        .map(|i| {
            (
                k[i].clone().unwrap(),
                r[i].clone().unwrap(),
                s[i].clone().unwrap(),
                a[i].clone(),
            )
        })
        .collect()
}

fn dead_reasons(out: &mut Output) -> Vec<String> {
    strings(&out.dead.finish(), "error")
        .into_iter()
        .flatten()
        .collect()
}

#[test]
fn dcgm_l4_scrape_with_help_and_type() {
    let mut out = feed_file(
        "dcgm-exporter/dcgm-exporter-L4-kops-aws.prom",
        &at("2026-11-29T10:15:00Z"),
    );
    let text =
        std::fs::read_to_string(sample("dcgm-exporter/dcgm-exporter-L4-kops-aws.prom")).unwrap();
    let samples = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count();
    let counts = out.counts;
    assert_eq!(counts.rejected, 0, "{:?}", dead_reasons(&mut out));
    assert_eq!(out.counts.metrics as usize, samples);
    assert_eq!(out.counts.skipped as usize, text.lines().count() - samples);
    let rows = rows(&mut out);
    let by: HashMap<&str, &Row> = rows.iter().map(|r| (r.metric.as_str(), r)).collect();
    let temp = by["gpu_temp_celsius"];
    assert_eq!(
        (temp.value, temp.layer.as_str(), temp.source.as_str()),
        (31.0, "infrastructure", "dcgm")
    );
    assert_eq!(temp.node.as_deref(), Some("i-030791dc5a37cd257"));
    assert_eq!(temp.device.as_deref(), Some("0"));
    assert_eq!(temp.time, parse_rfc3339("2026-11-29T10:15:00Z").unwrap());
    assert_eq!(temp.labels["__name__"], "DCGM_FI_DEV_GPU_TEMP");
    assert_eq!(
        temp.labels["UUID"],
        "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c"
    );
    assert_eq!(temp.labels["pci_bus_id"], "00000000:31:00.0");
    assert_eq!(temp.labels["device"], "nvidia0");
    assert!(!temp.labels.contains_key("Hostname") && !temp.labels.contains_key("gpu"));
    assert_eq!(by["power_watts"].value, 16.365);
    for m in [
        "sm_clock_mhz",
        "gpu_util",
        "fb_free_mib",
        "gr_engine_active",
        "tensor_active",
        "dram_active",
        "pcie_tx_bytes",
    ] {
        assert!(by.contains_key(m), "{m} missing");
    }
    // Unknown dcgm fields keep their own names.
    assert!(
        rows.iter()
            .all(|r| r.metric.starts_with(char::is_lowercase) || r.metric.starts_with("DCGM_"))
    );
    // Nothing there is a state change: XID_ERRORS is 0, there is no throttle gauge.
    assert!(events(&mut out).is_empty());
}

#[test]
fn dcgm_t4_scrape_without_help_and_node_override() {
    let mut hints = at("2026-11-29T10:15:00Z");
    hints.node = Some("gke-gpu-7".into());
    let mut out = feed_file(
        "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
        &hints,
    );
    assert_eq!(
        (out.counts.records, out.counts.metrics, out.counts.rejected),
        (20, 20, 0)
    );
    let rows = rows(&mut out);
    let by: HashMap<&str, &Row> = rows.iter().map(|r| (r.metric.as_str(), r)).collect();
    assert_eq!(
        (
            by["gpu_util"].value,
            by["gpu_temp_celsius"].value,
            by["power_watts"].value
        ),
        (91.0, 74.0, 68.244)
    );
    // --node wins over the exporter's Hostname, which then stays a label.
    assert_eq!(by["gpu_util"].node.as_deref(), Some("gke-gpu-7"));
    assert_eq!(by["gpu_util"].labels["Hostname"], "cp-bm14r7");
    assert_eq!(by["DCGM_FI_DEV_VGPU_LICENSE_STATUS"].value, 0.0);
}

#[test]
fn samples_without_a_time_are_rejected_unless_something_dates_them() {
    let mut out = feed_file(
        "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
        &Hints::default(),
    );
    assert_eq!((out.counts.rejected, out.counts.metrics), (20, 0));
    let reasons = dead_reasons(&mut out);
    assert!(
        reasons[0].starts_with(
            "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom:1: sample has no timestamp"
        ),
        "{}",
        reasons[0]
    );
    assert!(reasons[0].contains("--time"));

    // The same scrape after a scrape-time comment: dated by it.
    let text = std::fs::read_to_string(sample(
        "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
    ))
    .unwrap();
    let two = format!(
        "# whyslow-scrape-time: 2026-11-29T10:15:00Z\n{text}# whyslow-scrape-time: 2026-11-29T10:15:30+00:00\n{text}"
    );
    let mut out = feed_lines(&two, "two.prom", &at("2000-01-01T00:00:00Z"));
    assert_eq!((out.counts.rejected, out.counts.metrics), (0, 40));
    let times: Vec<i64> = rows(&mut out).iter().map(|r| r.time).collect();
    assert!(
        times[..20]
            .iter()
            .all(|&t| t == parse_rfc3339("2026-11-29T10:15:00Z").unwrap())
    );
    assert!(
        times[20..]
            .iter()
            .all(|&t| t == parse_rfc3339("2026-11-29T10:15:30Z").unwrap())
    );

    let mut out = feed_lines(
        "# whyslow-scrape-time: yesterday\nup 1\n",
        "x.prom",
        &Hints::default(),
    );
    assert_eq!(out.counts.rejected, 2);
    assert!(
        dead_reasons(&mut out)[0].contains("unreadable '# whyslow-scrape-time:' value 'yesterday'")
    );
}

#[test]
fn node_problem_detector_metrics() {
    let mut out = feed_file(
        "node-problem-detector/npd-prometheus-metrics-sample-problem_counter-problem_gauge.txt",
        &at("2026-11-29T10:15:00Z"),
    );
    assert_eq!((out.counts.rejected, out.counts.metrics), (0, 31));
    let rows = rows(&mut out);
    let problem = rows
        .iter()
        .find(|r| r.metric == "problem_gauge" && r.labels["reason"] == "DockerHung")
        .unwrap();
    assert_eq!(
        (problem.source.as_str(), problem.layer.as_str()),
        ("node-problem-detector", "infrastructure")
    );
    assert_eq!(problem.labels["type"], "KernelDeadlock");
    let disk = rows.iter().find(|r| r.metric == "disk_io_time").unwrap();
    assert_eq!(
        (disk.source.as_str(), disk.device.as_deref()),
        ("prometheus", None)
    );
    assert_eq!(disk.labels["device"], "sda");
    assert!(
        rows.iter()
            .filter(|r| r.metric.starts_with("problem_"))
            .all(|r| r.source == "node-problem-detector")
    );
}

#[test]
fn dcgm_counter_lists_are_not_scrapes() {
    for f in [
        "dcgm-exporter/dcgm-exporter-default-counters.csv",
        "dcgm-exporter/dcgm-exporter-dcp-metrics-included.csv",
    ] {
        let text = std::fs::read_to_string(sample(f)).unwrap();
        let fields = text.lines().filter(|l| l.starts_with("DCGM_")).count();
        let mut out = feed_file(f, &at("2026-11-29T10:15:00Z"));
        assert_eq!(out.counts.metrics, 0, "{f}");
        assert_eq!(out.counts.rejected as usize, fields, "{f}");
        assert!(
            dead_reasons(&mut out)
                .iter()
                .all(|r| r.contains("dcgm-exporter counter list")),
            "{f}"
        );
    }
}

#[test]
fn openmetrics_escapes_special_values_and_families() {
    let text = r#"# TYPE foo histogram
# UNIT foo seconds
foo_bucket{le="0.01"} 0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67
foo_bucket{le="+Inf"} 17 1520879607.789 # {trace_id="oHg5SJYRHA0"} 9.8 1520879607.789
foo_count 17 1520879607.789
DCGM_FI_DEV_GPU_TEMP{gpu="1",kubernetes_node="gke-a",Hostname="dcgm-exporter-x7",namespace="llm",pod="ft-0",container="trainer",path="C:\\DIR\\F",err="a \"b\"\nc"} NaN
DCGM_FI_DEV_POWER_USAGE{gpu="1",node="gke-a",exported_namespace="llm",namespace="gpu-operator",exported_pod="ft-0",pod="dcgm-exporter-x7"} +Inf 1764411302000
vllm:num_requests_running{model_name="llama"} 3
kube_pod_status_phase{namespace="llm",pod="ft-0",phase="Running"} 1
kueue_admission_wait_time_seconds_count{cluster_queue="cq"} 4
duty_cycle{accelerator_id="4804690994094478883-0",make="cloud-tpu",model="tpu-v5-lite-podslice"} 87
kube_job_status_active{namespace="llm",job_name="finetune-gemma-l4"} 1
kube_pod_owner{namespace="llm",pod="finetune-gemma-l4-0-vcxpz",owner_kind="Job",owner_name="finetune-gemma-l4"} 1
kube_pod_owner{namespace="llm",pod="tgi-7d9f-x2",owner_kind="ReplicaSet",owner_name="tgi-7d9f"} 1
# EOF
"#;
    let mut out = feed_lines(text, "om.txt", &at("2026-11-29T10:15:00Z"));
    assert_eq!((out.counts.rejected, out.counts.metrics), (0, 12));
    let rows = rows(&mut out);
    assert_eq!(rows[0].time, 1_520_879_607_789_000_000);
    assert_eq!(rows[1].labels["le"], "+Inf");
    let temp = &rows[3];
    assert!(temp.value.is_nan());
    assert_eq!(
        (temp.node.as_deref(), temp.device.as_deref()),
        (Some("gke-a"), Some("1"))
    );
    assert_eq!(
        (temp.namespace.as_deref(), temp.pod.as_deref()),
        (Some("llm"), Some("ft-0"))
    );
    assert_eq!(
        (
            temp.labels["container"].as_str(),
            temp.labels["Hostname"].as_str()
        ),
        ("trainer", "dcgm-exporter-x7")
    );
    assert_eq!(temp.labels["path"], r"C:\DIR\F");
    assert_eq!(temp.labels["err"], "a \"b\"\nc");
    let power = &rows[4];
    assert_eq!(
        (power.value, power.time),
        (f64::INFINITY, 1_764_411_302_000_000_000)
    );
    assert_eq!(
        (power.namespace.as_deref(), power.pod.as_deref()),
        (Some("llm"), Some("ft-0"))
    );
    assert_eq!(power.labels["pod"], "dcgm-exporter-x7");
    let workloads: Vec<Option<&str>> = rows[9..].iter().map(|r| r.workload.as_deref()).collect();
    assert_eq!(
        workloads,
        [Some("finetune-gemma-l4"), Some("finetune-gemma-l4"), None]
    );
    assert_eq!(rows[10].labels["owner_kind"], "Job");
    assert!(!rows[9].labels.contains_key("job_name"));
    let fam: Vec<(&str, &str)> = rows[5..9]
        .iter()
        .map(|r| (r.layer.as_str(), r.source.as_str()))
        .collect();
    assert_eq!(
        fam,
        [
            ("framework", "vllm"),
            ("orchestrator", "kube-state-metrics"),
            ("orchestrator", "kueue"),
            ("infrastructure", "device-plugin")
        ]
    );
    assert_eq!(
        (rows[6].namespace.as_deref(), rows[6].pod.as_deref()),
        (Some("llm"), Some("ft-0"))
    );
    assert_eq!(
        (rows[8].metric.as_str(), rows[8].device.as_deref()),
        ("duty_cycle", Some("4804690994094478883-0"))
    );
}

const T4_LABELS: &str = r#"{gpu="0",UUID="GPU-6d5c0ac5-74d7-3130-46f1-e93ed57f469a",pci_bus_id="00000000:37:00.0",device="nvidia0",modelName="Tesla T4",Hostname="cp-bm14r7",DCGM_FI_DRIVER_VERSION="590.48.01"}"#;

#[test]
fn xid_gauge_changes_become_events() {
    let mut text = String::new();
    for (i, v) in [0, 79, 79, 0, 48, 48].iter().enumerate() {
        text.push_str(&format!(
            "# whyslow-scrape-time: 2026-11-29T10:15:{:02}Z\n",
            i * 10
        ));
        text.push_str(&format!("DCGM_FI_DEV_XID_ERRORS{T4_LABELS} {v}\n"));
        text.push_str(&format!(
            "DCGM_FI_DEV_XID_ERRORS{} {v}\n",
            T4_LABELS.replace(r#"gpu="0""#, r#"gpu="1""#)
        ));
    }
    let mut out = feed_lines(&text, "xid.prom", &Hints::default());
    assert_eq!((out.counts.rejected, out.counts.metrics), (0, 12));
    let ev = events(&mut out);
    let got: Vec<(&str, &str, &str)> = ev
        .iter()
        .map(|(k, r, s, _)| (k.as_str(), r.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("xid", "79", "critical"),
            ("xid", "79", "critical"),
            ("xid", "48", "critical"),
            ("xid", "48", "critical")
        ]
    );
    let attrs = &ev[0].3;
    assert_eq!(
        (attrs["xid"].as_str(), attrs["meaning"].as_str()),
        ("79", "GPU has fallen off the bus")
    );
    assert_eq!(
        (attrs["category"].as_str(), attrs["previous"].as_str()),
        ("gpu_failure", "0")
    );
    assert_eq!(attrs["pci_bus_id"], "00000000:37:00.0");
    assert_eq!(ev[2].3["category"], "gpu_memory_error");
    let b = out.events.finish();
    assert_eq!(b.num_rows(), 0);
}

#[test]
fn throttle_reason_changes_become_events_with_decoded_bits() {
    let mut text = String::new();
    // idle, idle+HW thermal, HW thermal, SW power cap, idle again; the newer field name.
    for (i, v) in [0x1, 0x41, 0x40, 0x4, 0x1].iter().enumerate() {
        let name = if i < 3 {
            "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
        } else {
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
        };
        text.push_str(&format!(
            "{name}{T4_LABELS} {v} {}\n",
            1_764_411_300_000i64 + i as i64 * 10_000
        ));
    }
    let mut out = feed_lines(&text, "thr.prom", &Hints::default());
    assert_eq!(out.counts.rejected, 0);
    assert!(
        rows(&mut out)
            .iter()
            .all(|r| r.metric == "clock_throttle_reasons")
    );
    let ev = events(&mut out);
    let got: Vec<(&str, &str, &str)> = ev
        .iter()
        .map(|(k, r, s, _)| (k.as_str(), r.as_str(), s.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("clock_throttle", "thermal", "error"),
            ("clock_throttle", "power", "warning"),
            ("clock_throttle_cleared", "none", "info")
        ]
    );
    assert_eq!(ev[0].3["reasons"], "gpu_idle,hw_thermal_slowdown");
    assert_eq!(
        (ev[0].3["mask"].as_str(), ev[0].3["previous_mask"].as_str()),
        ("0x41", "0x0")
    );
    assert_eq!(ev[1].3["reasons"], "sw_power_cap");
    // The bits the cause rules read, decoded here once.
    let flags = |i: usize| (ev[i].3["power"].as_str(), ev[i].3["thermal"].as_str());
    assert_eq!(flags(0), ("false", "true"));
    assert_eq!(flags(1), ("true", "false"));
}

/// A mask with power and thermal bits at once is evidence for both causes; sync boost
/// alone is a setting, not a throttle.
#[test]
fn mixed_and_setting_masks_decode_to_both_causes_and_to_none() {
    let mut text = String::new();
    for (i, v) in [0x0, 0x44, 0x10].iter().enumerate() {
        text.push_str(&format!(
            "DCGM_FI_DEV_CLOCKS_EVENT_REASONS{T4_LABELS} {v} {}\n",
            1_764_411_300_000i64 + i as i64 * 10_000
        ));
    }
    let mut out = feed_lines(&text, "mixed.prom", &Hints::default());
    let ev = events(&mut out);
    assert_eq!(ev.len(), 2, "{ev:?}");
    assert_eq!(
        (ev[0].0.as_str(), ev[0].1.as_str()),
        ("clock_throttle", "thermal")
    );
    assert_eq!(
        (ev[0].3["power"].as_str(), ev[0].3["thermal"].as_str()),
        ("true", "true")
    );
    assert_eq!(
        ev[1].0, "clock_throttle_cleared",
        "0x10 (sync boost) cuts nothing"
    );
}

#[test]
fn kafka_messages_hold_whole_scrapes() {
    let text =
        std::fs::read_to_string(sample("dcgm-exporter/dcgm-exporter-L4-kops-aws.prom")).unwrap();
    let origin = Origin::Kafka {
        topic: "dcgm",
        partition: 3,
        offset: 42,
    };
    let hints = at("2026-11-29T10:15:00Z");
    let mut d = PrometheusDecoder::new();
    let mut out = Output::new(0);
    d.decode(text.as_bytes(), &origin, &hints, &mut out);
    assert_eq!(
        (out.counts.records, out.counts.produced, out.counts.rejected),
        (1, 1, 0)
    );
    let samples = text.lines().filter(|l| !l.starts_with('#')).count() as u64;
    assert_eq!((out.counts.metrics, samples), (23, 23));

    // One broken line in a scrape: the rest are kept, the line goes to dead_letters alone.
    let broken = text.replacen("} 210\n", "} two-hundred-ten\n", 1);
    let mut out = Output::new(0);
    d.decode(broken.as_bytes(), &origin, &hints, &mut out);
    assert_eq!((out.counts.produced, out.counts.metrics), (1, 22));
    let dead = out.dead.finish();
    assert_eq!(
        strings(&dead, "source_ref"),
        [Some("dcgm/3/42 line 3".to_string())]
    );
    assert!(
        strings(&dead, "error")[0]
            .as_deref()
            .unwrap()
            .contains("unreadable sample value")
    );

    // Nothing readable: the message is rejected whole.
    let mut out = Output::new(0);
    d.decode(b"garbage here\nmore garbage\n", &origin, &hints, &mut out);
    assert_eq!((out.counts.rejected, out.dead.len()), (1, 1));
}

#[test]
fn prometheus_kafka_adapter_records() {
    let text = r#"{"timestamp":"2026-11-29T10:15:02Z","value":"9876543","name":"up","labels":{"__name__":"up","instance":"localhost:9090","job":"prometheus"}}
{"timestamp":"2026-11-29T10:15:02.5Z","value":"NaN","name":"DCGM_FI_DEV_XID_ERRORS","labels":{"__name__":"DCGM_FI_DEV_XID_ERRORS","gpu":"2","kubernetes_node":"gke-b"}}
{"timestamp":"2026-11-29T10:15:03Z","value":"79","name":"DCGM_FI_DEV_XID_ERRORS","labels":{"__name__":"DCGM_FI_DEV_XID_ERRORS","gpu":"2","kubernetes_node":"gke-b"}}
{"timestamp":"2026-11-29T10:15:03Z","value":"1"
"#;
    let mut out = feed_lines(text, "adapter.jsonl", &Hints::default());
    assert_eq!(
        (out.counts.metrics, out.counts.rejected, out.counts.events),
        (3, 1, 1)
    );
    let rows = rows(&mut out);
    assert_eq!(
        (rows[0].metric.as_str(), rows[0].value),
        ("up", 9_876_543.0)
    );
    assert_eq!(rows[0].labels["job"], "prometheus");
    assert!(!rows[0].labels.contains_key("__name__"));
    assert_eq!(
        (
            rows[2].metric.as_str(),
            rows[2].node.as_deref(),
            rows[2].device.as_deref()
        ),
        ("xid_errors", Some("gke-b"), Some("2"))
    );
    assert_eq!(rows[2].time, parse_rfc3339("2026-11-29T10:15:03Z").unwrap());
    assert_eq!(events(&mut out)[0].1, "79");
}

#[test]
fn auto_detection_does_not_take_counter_lists_for_scrapes() {
    use whyslow_ingest::decode::Format;
    use whyslow_ingest::decode::auto::{AutoDecoder, detect};
    use whyslow_ingest::decode::decoder_for;

    for f in [
        "dcgm-exporter/dcgm-exporter-L4-kops-aws.prom",
        "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
    ] {
        assert_eq!(
            detect(&std::fs::read(sample(f)).unwrap()),
            Some(Format::Prometheus),
            "{f}"
        );
    }
    for f in [
        "dcgm-exporter/dcgm-exporter-default-counters.csv",
        "dcgm-exporter/dcgm-exporter-dcp-metrics-included.csv",
    ] {
        let bytes = std::fs::read(sample(f)).unwrap();
        assert_ne!(detect(&bytes), Some(Format::Prometheus), "{f}");
        // Read by auto, a counter list yields no metric rows and loses nothing.
        let mut d = AutoDecoder::new(|f| Some(decoder_for(f)));
        let mut out = Output::new(0);
        let hints = at("2026-11-29T10:15:00Z");
        for (i, line) in String::from_utf8(bytes).unwrap().lines().enumerate() {
            d.decode(
                line.as_bytes(),
                &Origin::File {
                    path: f,
                    line: i as u64 + 1,
                },
                &hints,
                &mut out,
            );
        }
        d.finish(&hints, &mut out);
        assert!(out.counts.balances());
        assert_eq!(out.counts.metrics, 0, "{f}");
    }
}
