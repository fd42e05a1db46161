//! `--format auto`: detection from content on every real sample (`fixtures/samples/`, and
//! the shared collection when it sits beside the repository) and on lines of every
//! format written here, and the per-record routing of [`AutoDecoder`].
//!
//! Files that are no ingestible format — docs excerpts (`.md`), CSV traces, column
//! headers, SOURCES.md — are plain text, which `auto` reads as container output (where
//! no rule matches their lines); node-problem-detector's JSON configs are JSON with none
//! of the keys of any format: `None`. Each expectation below is that judgement, written
//! down per file.

use std::path::{Path, PathBuf};

use whyslow_ingest::Format::{self, *};
use whyslow_ingest::decode::auto::{AutoDecoder, detect, detect_line, detect_record};
use whyslow_ingest::decode::decoder_for;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

/// Expected detection per sample path (relative to the samples folder).
const EXPECTED: &[(&str, Option<Format>)] = &[
    ("SOURCES.md", Some(ContainerLog)),
    ("cluster-traces/SOURCES.md", Some(ContainerLog)),
    (
        "cluster-traces/acmetrace-README-job-trace-schema-excerpt.md",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/acmetrace-cluster-summary-seren-kalos-philly-helios-pai.csv",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_group_tag_table.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_instance_table.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_job_table.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_machine_metric.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_machine_spec.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_sensor_table.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-gpu-v2020-headers/pai_task_table.header",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-v2020-minibatch-time-README.md",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-v2020-minibatch-time-job1-straggler.csv",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/alibaba-pai-v2020-minibatch-time-job2.csv",
        Some(ContainerLog),
    ),
    (
        "cluster-traces/philly-traces-README-schema-and-examples.md",
        Some(ContainerLog),
    ),
    ("dcgm-exporter/SOURCES.md", Some(ContainerLog)),
    (
        "dcgm-exporter/dcgm-exporter-L4-kops-aws.prom",
        Some(Prometheus),
    ),
    (
        "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
        Some(Prometheus),
    ),
    (
        "dcgm-exporter/dcgm-exporter-dcp-metrics-included.csv",
        Some(ContainerLog),
    ),
    (
        "dcgm-exporter/dcgm-exporter-default-counters.csv",
        Some(ContainerLog),
    ),
    ("k8s-events/SOURCES.md", Some(ContainerLog)),
    (
        "k8s-events/k8s-api-roundtrip-fixture-core.v1.Event.json",
        Some(K8s),
    ),
    (
        "k8s-events/k8s-api-roundtrip-fixture-core.v1.Event.yaml",
        Some(K8s),
    ),
    (
        "k8s-events/k8s-api-roundtrip-fixture-core.v1.WatchEvent.json",
        Some(K8s),
    ),
    (
        "k8s-events/k8s-api-roundtrip-fixture-events.k8s.io.v1.Event.json",
        Some(K8s),
    ),
    (
        "k8s-events/k8s-api-roundtrip-fixture-events.k8s.io.v1.Event.yaml",
        Some(K8s),
    ),
    // kubectl text output goes to the k8s decoder, which says why it cannot be read.
    (
        "k8s-events/kubectl-describe-pod-events-FailedScheduling-gpu-palette.txt",
        Some(K8s),
    ),
    ("kueue/SOURCES.md", Some(ContainerLog)),
    ("kueue/kueue-describe-clusterqueue-vks.txt", Some(K8s)),
    (
        "kueue/kueue-docs-run-jobs-describe-workload-excerpt.md",
        Some(ContainerLog),
    ),
    // Docs whose code blocks are Workload YAML (`apiVersion:` at a line start).
    (
        "kueue/kueue-docs-troubleshooting-jobs-workload-status-excerpt.md",
        Some(K8s),
    ),
    ("kueue/kueue-events-gang-scheduling-vks.txt", Some(K8s)),
    ("node-problem-detector/SOURCES.md", Some(ContainerLog)),
    (
        "node-problem-detector/kernel-log-generator-problems/au_opts_verify.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/aufs_umount_hung.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/divide_zero.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/docker_hung.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/null_pointer.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/oom_kill.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/readonly_filesystem.log",
        Some(Kmsg),
    ),
    (
        "node-problem-detector/kernel-log-generator-problems/unregister_netdevice.log",
        Some(Kmsg),
    ),
    ("node-problem-detector/npd-custom-plugin-monitor.json", None),
    ("node-problem-detector/npd-docker-monitor.json", None),
    (
        "node-problem-detector/npd-health-checker-kubelet.json",
        None,
    ),
    (
        "node-problem-detector/npd-kernel-monitor-counter.json",
        None,
    ),
    ("node-problem-detector/npd-kernel-monitor.json", None),
    (
        "node-problem-detector/npd-prometheus-metrics-sample-problem_counter-problem_gauge.txt",
        Some(Prometheus),
    ),
    ("node-problem-detector/npd-systemd-monitor.json", None),
    ("profiles/SOURCES.md", Some(ContainerLog)),
    (
        "profiles/lux-reactant-xla-profiler-session.log",
        Some(ContainerLog),
    ),
    (
        "profiles/nsight-systems-nsys-profile-console-nsys-easy-issue-1.txt",
        Some(ContainerLog),
    ),
    ("serving/SOURCES.md", Some(ContainerLog)),
    (
        "serving/tei-router-request-log-tei-issue-305-excerpt.log",
        Some(ContainerLog),
    ),
    (
        "serving/tgi-2.x-datadog-integrations-core-excerpt.prom",
        Some(Prometheus),
    ),
    (
        "serving/tgi-router-request-log-chat-ui-issue-411-excerpt.log",
        Some(ContainerLog),
    ),
    (
        "serving/vllm-0.5-engine-stats-log-vllm-issue-7540-excerpt.log",
        Some(ContainerLog),
    ),
    (
        "serving/vllm-0.5-opt-125m-datadog-integrations-core.prom",
        Some(Prometheus),
    ),
    (
        "serving/vllm-v1-engine-stats-log-vllm-issue-43295-excerpt.log",
        Some(ContainerLog),
    ),
    ("training-logs/SOURCES.md", Some(ContainerLog)),
    (
        "training-logs/kubeflow-trainer-deepspeed-mpi-t5-8ranks.log",
        Some(ContainerLog),
    ),
    (
        "training-logs/kubeflow-trainer-torchrun-hf-trainer-distilbert-2ranks.log",
        Some(ContainerLog),
    ),
    (
        "training-logs/maxtext-elastic-training-slice-failure-recovery-excerpt.md",
        Some(ContainerLog),
    ),
    (
        "training-logs/maxtext-jax-tpu-training-log-walkthrough-excerpt.md",
        Some(ContainerLog),
    ),
    (
        "training-logs/torchtitan-step-metrics-line-excerpt.txt",
        Some(ContainerLog),
    ),
    ("xid-kernel-logs/SOURCES.md", Some(ContainerLog)),
    (
        "xid-kernel-logs/gpud-dev-kmsg-raw-nvidia-peermem.log",
        Some(Kmsg),
    ),
    ("xid-kernel-logs/gpud-dev-kmsg-raw-nvswitch.log", Some(Kmsg)),
    (
        "xid-kernel-logs/gpud-dmesg-ctime-xid-119-gsp-timeout-h100.log",
        Some(Kmsg),
    ),
    (
        "xid-kernel-logs/gpud-dmesg-decode-iso-xid13-storm-122KB.log",
        Some(Kmsg),
    ),
    (
        "xid-kernel-logs/gpud-dmesg-iso-libnccl-segfault.log",
        Some(Kmsg),
    ),
    (
        "xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log",
        Some(Kmsg),
    ),
    (
        "xid-kernel-logs/gpud-dmesg-time-format-iso-peermem-and-xid.log",
        Some(Kmsg),
    ),
    // Docs quoting kernel lines (`> [Sun Feb 23 …] NVRM: Xid …`).
    (
        "xid-kernel-logs/gpud-docs-dmesg-ctime-xid-13-109-excerpt.md",
        Some(Kmsg),
    ),
    (
        "xid-kernel-logs/gpud-docs-xid79-with-nvswitch-sxid-20034-excerpt.md",
        Some(Kmsg),
    ),
    ("xid-kernel-logs/gpud-nvidia-fabricmanager.log", Some(Kmsg)), // Collectors' shapes (`collectors/`, only in fixtures). Events as collectors ship them
    // are k8s; Fluent Bit's `[time, {record}]` test renderings, Go test lines, CUE and
    // YAML goldens of other tools are text; OTLP/JSON requests go to the otlp decoder.
    ("collectors/SOURCES.md", Some(ContainerLog)),
    (
        "collectors/bkmonitorbeat-kubeevent-test-exporter-line-FailedScheduling-series.txt",
        Some(ContainerLog),
    ),
    (
        "collectors/bkmonitorbeat-kubeevent-test-exporter-line-SystemOOM.txt",
        Some(ContainerLog),
    ),
    (
        "collectors/fluent-bit-kmsg-stdout-records-docs.txt",
        Some(ContainerLog),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-input-eventlist_v1_with_creationTimestamp.json",
        Some(K8s),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-input-eventlist_v1_with_lastTimestamp.json",
        Some(K8s),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-input-watch_v1_with_lastTimestamp.json",
        Some(K8s),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-output-eventlist_v1_with_creationTimestamp.out",
        Some(ContainerLog),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-output-eventlist_v1_with_lastTimestamp.out",
        Some(ContainerLog),
    ),
    (
        "collectors/fluent-bit-kubernetes_events-output-watch_v1_with_lastTimestamp.out",
        Some(ContainerLog),
    ),
    (
        "collectors/fluent-bit-systemd-input-record-with-kubernetes-filter-kairosdb.out",
        Some(ContainerLog),
    ),
    (
        "collectors/kubectl-get-events-o-yaml-List-gke-LeaderElection-no-involvedObject-name.yaml",
        Some(K8s),
    ),
    (
        "collectors/kubectl-get-events-o-yaml-List-gke-perfkitbenchmarker.yaml",
        Some(K8s),
    ),
    // Metricbeat's snake_case remapping under `kubernetes.event`: read as a log record.
    (
        "collectors/metricbeat-kubernetes-event-metricset-data.json",
        Some(ContainerLog),
    ),
    (
        "collectors/otel-k8seventsreceiver-e2e-expected-watch_events.yaml",
        Some(ContainerLog),
    ),
    (
        "collectors/otel-k8sobjectsreceiver-e2e-expected-watch_events_core.yaml",
        Some(ContainerLog),
    ),
    (
        "collectors/otel-stanza-journald_input-output-entry-sample.txt",
        Some(ContainerLog),
    ),
    // Its body is an Event without `kind`.
    (
        "collectors/otel-stanza-k8s_event_input-output-entry.json",
        Some(K8s),
    ),
    ("collectors/otlp-json-examples-events.json", Some(Otlp)),
    ("collectors/otlp-json-examples-logs.json", Some(Otlp)),
    ("collectors/otlp-json-examples-metrics.json", Some(Otlp)),
    (
        "collectors/vector-journald-source-sample-output.cue",
        Some(ContainerLog),
    ),
    (
        "collectors/vector-kubernetes_logs-source-sample-output.cue",
        Some(ContainerLog),
    ),
    (
        "collectors/vector-kubernetes_logs-vector-namespace-event-and-metadata-rfc.md",
        Some(ContainerLog),
    ),
];

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(&p, out)
        } else {
            out.push(p)
        }
    }
}

/// Checks every file under `root`; returns how many were checked.
fn check_samples(root: &Path) -> usize {
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    for f in &files {
        let rel = f
            .strip_prefix(root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let want = EXPECTED
            .iter()
            .find(|(p, _)| *p == rel)
            .unwrap_or_else(|| {
                panic!("{rel}: a sample with no expected format: add it to EXPECTED")
            })
            .1;
        let bytes = std::fs::read(f).unwrap();
        assert_eq!(detect(&bytes), want, "{rel}");
        // The runner reads a head, not the whole file: a 4 KiB head says the same.
        assert_eq!(
            detect(&bytes[..bytes.len().min(4096)]),
            want,
            "{rel} (4 KiB head)"
        );
    }
    files.len()
}

#[test]
fn every_committed_sample() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/samples");
    assert!(check_samples(&root) >= 20);
}

#[test]
fn every_shared_sample_when_present() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/samples");
    if root.is_dir() {
        // Per-folder SOURCES.md files and the collectors', serving engines' and profilers'
        // samples exist only in fixtures.
        let only_in_fixtures = EXPECTED
            .iter()
            .filter(|(p, _)| {
                p.ends_with("/SOURCES.md")
                    || p.starts_with("collectors/")
                    || p.starts_with("serving/")
                    || p.starts_with("profiles/")
            })
            .count();
        assert_eq!(check_samples(&root), EXPECTED.len() - only_in_fixtures);
    }
}

#[test]
fn generated_lines_of_every_format() {
    let cases: &[(&str, Option<Format>)] = &[
        (
            r#"{"time":"2026-11-29T10:15:02.123Z","layer":"framework","source":"sdk","kind":"checkpoint_saved"}"#,
            Some(Envelope),
        ),
        (
            r#"{"time":1764411302.5,"metric":"step_time_seconds","value":1.93,"rank":3}"#,
            Some(Envelope),
        ),
        (
            r#"{"type":"ADDED","object":{"kind":"Event","apiVersion":"v1","reason":"Preempted"}}"#,
            Some(K8s),
        ),
        (
            r#"{"kind":"Event","apiVersion":"v1","metadata":{"name":"x"},"reason":"Scheduled"}"#,
            Some(K8s),
        ),
        ("apiVersion: kueue.x-k8s.io/v1beta1", Some(K8s)),
        (
            "LAST SEEN   TYPE      REASON      OBJECT            MESSAGE",
            Some(K8s),
        ),
        (
            r#"{"timestamp":"2026-11-29T10:15:02Z","value":"71","name":"DCGM_FI_DEV_GPU_TEMP","labels":{"gpu":"0"}}"#,
            Some(Prometheus),
        ),
        (
            "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).",
            Some(Prometheus),
        ),
        ("# TYPE DCGM_FI_DEV_GPU_TEMP gauge", Some(Prometheus)),
        (
            r#"DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-1",Hostname="n1"} 71"#,
            Some(Prometheus),
        ),
        (
            "vllm:num_requests_running{model_name=\"gemma\"} 4 1764411302000",
            Some(Prometheus),
        ),
        ("# EOF", Some(Prometheus)),
        (
            r#"{"__REALTIME_TIMESTAMP":"1764411302123456","MESSAGE":"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.","_HOSTNAME":"n1"}"#,
            Some(Kmsg),
        ),
        (
            "2026-11-29T10:15:02.123456+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234",
            Some(Kmsg),
        ),
        (
            "2026-11-29T10:15:02+0000 gpu-node-7 systemd[1]: Started kubelet.",
            Some(Kmsg),
        ),
        (
            "2026-11-29T10:15:02,123456+00:00 NVRM: Xid (PCI:0000:3b:00): 79",
            Some(Kmsg),
        ),
        (
            "kern  :warn  : 2026-11-29T10:15:02,123456+00:00 NVRM: Xid",
            Some(Kmsg),
        ),
        (
            "6,1234,5678901234,-;NVRM: Xid (PCI:0000:3b:00): 79",
            Some(Kmsg),
        ),
        (
            "[Sun Nov 29 10:15:02 2026] mlx5_core 0000:5e:00.0 ens1f0: Link down",
            Some(Kmsg),
        ),
        (
            "[ 1234.567890] mlx5_core 0000:5e:00.0 ens1f0: Link down",
            Some(Kmsg),
        ),
        (
            "<4>1 2026-11-29T10:15:02.123Z gpu-node-7 kernel - - - NVRM: Xid",
            Some(Kmsg),
        ),
        (
            "Nov 29 10:15:02 gpu-node-7 kernel: NVRM: Xid (PCI:0000:3b:00): 79",
            Some(Kmsg),
        ),
        (
            "2026-11-29T10:15:02.123456789Z stdout F completed step: 9, seconds: 5.667",
            Some(ContainerLog),
        ),
        (
            "2026-11-29T10:15:02.123456789Z stderr P partial",
            Some(ContainerLog),
        ),
        (
            "2026-11-29T10:15:02.123456789Z Saving model checkpoint to /x/checkpoint-5",
            Some(ContainerLog),
        ),
        (
            r#"{"log":"step 5\n","stream":"stdout","time":"2026-11-29T10:15:02Z","kubernetes":{"pod_name":"p"}}"#,
            Some(ContainerLog),
        ),
        (
            r#"{"log":"step 5\n","stream":"stdout","time":"2026-11-29T10:15:02.1Z"}"#,
            Some(ContainerLog),
        ),
        (
            r#"{"name":"transformers.trainer","message":"Saving model checkpoint to /x","timestamp":"2026-11-29T10:15:02Z","level":"INFO"}"#,
            Some(ContainerLog),
        ),
        (
            "[2026-11-29T10:15:02.123] error: Nodes gpu-[01-03] not responding",
            Some(Slurm),
        ),
        (
            "JobID|JobName|Partition|State|Start|End|NodeList",
            Some(Slurm),
        ),
        (
            "2026-11-29T10:15:02.123+00:00 ctl slurmctld[812]: error: Nodes gpu-01 not responding",
            Some(Slurm),
        ),
        // Lines that tell nothing alone (a sample without labels could be any log line).
        ("process_cpu_seconds_total 12.5", None),
        ("Epoch 1", None),
        (
            "[2025-10-18 00:08:51,982] [INFO] [comm.py:891:mpi_discovery] Discovered MPI settings",
            None,
        ),
        ("{'loss': 1.23, 'epoch': 0.5}", None),
        ("", None),
        ("# a comment", None),
    ];
    for (line, want) in cases {
        assert_eq!(detect_line(line), *want, "{line}");
    }
}

#[test]
fn documents_and_odd_heads() {
    let list = "{\n  \"apiVersion\": \"v1\",\n  \"kind\": \"List\",\n  \"items\": []\n}\n";
    assert_eq!(detect(list.as_bytes()), Some(K8s));
    assert_eq!(
        detect(b"[\n  {\"apiVersion\": \"v1\", \"kind\": \"Event\"}\n]"),
        Some(K8s)
    );
    assert_eq!(detect(b"---\napiVersion: v1\nkind: Event\n"), Some(K8s));
    assert_eq!(detect(b""), None);
    assert_eq!(detect(b"\n\n  \n"), None);
    assert_eq!(detect(b"\x00\x01\x02binary"), None);
    assert_eq!(detect(&[0xff, 0xfe, 0x41]), None);
    // A head cut inside a multi-byte character still reads.
    let text = "2026-11-29T10:15:02.1Z stdout F █".as_bytes();
    assert_eq!(detect(&text[..text.len() - 1]), Some(ContainerLog));
    // The first line that tells wins over plain text before it.
    assert_eq!(
        detect(b"-- Journal begins --\nNov 29 10:15:02 n1 kernel: x\n"),
        Some(Kmsg)
    );
    assert_eq!(detect(b"hello\nworld\n"), Some(ContainerLog));
    assert_eq!(detect_record(b"hello"), Some(ContainerLog));
}

fn factory(f: Format) -> Option<Box<dyn Decoder>> {
    Some(decoder_for(f))
}

#[test]
fn a_kafka_topic_mixing_envelope_and_watch_events() {
    let mut d = AutoDecoder::new(factory);
    let mut out = Output::new(0);
    let hints = Hints::default();
    let messages = [
        r#"{"time":"2026-11-29T10:15:02.123Z","layer":"framework","source":"sdk","kind":"checkpoint_saved","workload":"ft"}"#,
        r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"Event","metadata":{"name":"ft.1","namespace":"llm","uid":"u1"},"involvedObject":{"kind":"Pod","name":"ft-0-x7k2p","namespace":"llm"},"reason":"Scheduled","message":"Successfully assigned llm/ft-0-x7k2p to gke-gpu-7","type":"Normal","firstTimestamp":"2026-11-29T10:15:00Z","lastTimestamp":"2026-11-29T10:15:00Z","count":1}}"#,
        "2026-11-29T10:15:03.000000000Z stdout F Saving model checkpoint to /data/checkpoint-20",
        r#"{"time":1764411302.5,"layer":"framework","source":"sdk","metric":"step_time_seconds","value":1.93,"workload":"ft"}"#,
    ];
    for (i, m) in messages.iter().enumerate() {
        let origin = Origin::Kafka {
            topic: "mixed",
            partition: 0,
            offset: i as i64,
        };
        d.decode(m.as_bytes(), &origin, &hints, &mut out);
    }
    d.finish(&hints, &mut out);
    assert!(out.counts.balances());
    assert_eq!(
        (out.counts.records, out.counts.rejected),
        (4, 0),
        "{:?}",
        out.counts
    );
    assert_eq!(out.counts.produced, 4);
    let events = out.events.finish();
    let kinds = events.column_by_name("kind").unwrap();
    let kinds = arrow::array::AsArray::as_string::<i32>(kinds.as_ref());
    let kinds: Vec<&str> = (0..events.num_rows()).map(|i| kinds.value(i)).collect();
    assert!(
        kinds.contains(&"checkpoint_saved") && kinds.contains(&"scheduled"),
        "{kinds:?}"
    );
    assert_eq!(out.metrics.finish().num_rows(), 1);
}

fn feed_file(lines: &[&str]) -> Output {
    let mut d = AutoDecoder::new(factory);
    let mut out = Output::new(0);
    let hints = Hints {
        default_time_ns: Some(1_795_000_000_000_000_000),
        ..Hints::default()
    };
    for (i, l) in lines.iter().enumerate() {
        d.decode(
            l.as_bytes(),
            &Origin::File {
                path: "in.log",
                line: i as u64 + 1,
            },
            &hints,
            &mut out,
        );
    }
    d.finish(&hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    out
}

#[test]
fn a_file_is_one_format_from_its_first_telling_line() {
    // A training log whose later lines look like Prometheus samples stays a log.
    let out = feed_file(&[
        "Epoch 1 starting",
        "train_loss 0.5",
        "completed step: 3, seconds: 5.1, loss: 2.0",
    ]);
    assert_eq!((out.counts.records, out.counts.rejected), (3, 0));
    assert_eq!(out.metrics.len(), 2);
    // A pretty-printed JSON document fed line by line is held and read whole.
    let doc = r#"{
  "apiVersion": "v1",
  "kind": "Event",
  "metadata": {"name": "ft.1", "namespace": "llm", "uid": "u2"},
  "involvedObject": {"kind": "Pod", "name": "ft-0-x7k2p", "namespace": "llm"},
  "reason": "Scheduled",
  "message": "Successfully assigned llm/ft-0-x7k2p to gke-gpu-7",
  "type": "Normal",
  "firstTimestamp": "2026-11-29T10:15:00Z",
  "lastTimestamp": "2026-11-29T10:15:00Z",
  "count": 1
}"#;
    let out = feed_file(&doc.lines().collect::<Vec<_>>());
    assert_eq!(
        (out.counts.records, out.counts.produced, out.counts.rejected),
        (1, 1, 0),
        "{:?}",
        out.counts
    );
    assert_eq!(out.events.len(), 1);
}
