//! Throughput of the k8s decoder on a generated `kubectl get events -A -o json` List and
//! the same events as a watch stream (JSON lines). Run in release:
//! `cargo run --release -p whyslow-ingest --example k8s_throughput -- [events]`.

use std::time::Instant;

use whyslow_ingest::decode::k8s::K8sDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

const REASONS: [(&str, &str, &str); 6] = [
    (
        "Scheduled",
        "Normal",
        "Successfully assigned llm/ft-{i}-0-bcdfg to gke-gpu-{n}",
    ),
    (
        "Pulled",
        "Normal",
        r#"Container image \"us-docker.pkg.dev/x/trainer:v2\" already present on machine"#,
    ),
    (
        "BackOff",
        "Warning",
        "Back-off restarting failed container trainer in pod ft-{i}-0-bcdfg",
    ),
    (
        "FailedScheduling",
        "Warning",
        "0/64 nodes are available: 8 node(s) had untolerated taint {nvidia.com/gpu: present}, 56 Insufficient nvidia.com/gpu. preemption: 0/64 nodes are available: 64 No preemption victims found for incoming pod.",
    ),
    ("Killing", "Normal", "Stopping container trainer"),
    (
        "Preempted",
        "Normal",
        "Preempted to accommodate a workload (UID: 5c023c28-{i}, JobUID: 4548c8bd-{i}) due to prioritization in the ClusterQueue",
    ),
];

/// One Event object, shaped like the API server writes it (managedFields included).
fn event(i: usize) -> String {
    let (reason, ty, msg) = REASONS[i % REASONS.len()];
    let msg = msg
        .replace("{i}", &i.to_string())
        .replace("{n}", &(i % 64).to_string());
    let (kind, name) = if reason == "Preempted" {
        ("Workload", format!("job-ft-{i}-3c1a2"))
    } else {
        ("Pod", format!("ft-{i}-0-bcdfg"))
    };
    let s = i % 60;
    format!(
        r#"{{"kind":"Event","apiVersion":"v1","metadata":{{"name":"{name}.17c9a{i:08x}","namespace":"llm","uid":"8b1f2c3d-0000-4000-8000-{i:012x}","resourceVersion":"{i}","creationTimestamp":"2026-11-29T10:{s:02}:00Z","managedFields":[{{"manager":"kubelet","operation":"Update","apiVersion":"v1","time":"2026-11-29T10:{s:02}:00Z","fieldsType":"FieldsV1","fieldsV1":{{"f:count":{{}},"f:firstTimestamp":{{}},"f:involvedObject":{{}},"f:lastTimestamp":{{}},"f:message":{{}},"f:reason":{{}},"f:source":{{"f:component":{{}},"f:host":{{}}}},"f:type":{{}}}}}}]}},"involvedObject":{{"kind":"{kind}","namespace":"llm","name":"{name}","uid":"1a2b3c4d-0000-4000-8000-{i:012x}","apiVersion":"v1","resourceVersion":"{i}","fieldPath":"spec.containers{{trainer}}"}},"reason":"{reason}","message":"{msg}","source":{{"component":"kubelet","host":"gke-gpu-{n}"}},"firstTimestamp":"2026-11-29T10:{s:02}:00Z","lastTimestamp":"2026-11-29T10:{s:02}:30Z","count":{c},"type":"{ty}","eventTime":null,"reportingComponent":"kubelet","reportingInstance":"gke-gpu-{n}"}}"#,
        n = i % 64,
        c = 1 + i % 3,
    )
}

fn run(label: &str, input: &[u8]) {
    let mut best = f64::MAX;
    let mut rows = 0;
    let mut records = 0;
    for _ in 0..3 {
        let mut d = K8sDecoder::new();
        let mut out = Output::new(0);
        let t = Instant::now();
        d.decode(
            input,
            &Origin::File {
                path: label,
                line: 1,
            },
            &Hints::default(),
            &mut out,
        );
        let batch = out.events.finish();
        let secs = t.elapsed().as_secs_f64();
        if out.counts.rejected > 0 {
            let dead = out.dead.finish();
            panic!("{label}: rejected {:?}", dead.column_by_name("error"));
        }
        assert!(out.counts.balances());
        rows = batch.num_rows();
        records = out.counts.records;
        best = best.min(secs);
    }
    let mb = input.len() as f64 / 1e6;
    println!(
        "{label}: {records} objects, {rows} event rows, {mb:.1} MB in {best:.3} s: {:.0} objects/s, {:.0} rows/s, {:.1} MB/s",
        records as f64 / best,
        rows as f64 / best,
        mb / best
    );
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200_000);
    let events: Vec<String> = (0..n).map(event).collect();
    let list = format!(
        r#"{{"apiVersion":"v1","kind":"List","items":[{}],"metadata":{{"resourceVersion":""}}}}"#,
        events.join(",")
    );
    run("List (kubectl get events -o json)", list.as_bytes());
    let lines: String = events
        .iter()
        .map(|e| format!("{{\"type\":\"ADDED\",\"object\":{e}}}\n"))
        .collect();
    run("watch stream (JSON lines)", lines.as_bytes());
    let yaml_n = n / 10;
    let yaml: String = events[..yaml_n]
        .iter()
        .map(|e| {
            let v: serde_json::Value = serde_json::from_str(e).unwrap();
            format!("---\n{}", serde_norway::to_string(&v).unwrap())
        })
        .collect();
    run("YAML documents", yaml.as_bytes());
}
