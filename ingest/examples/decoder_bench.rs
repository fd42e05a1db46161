//! Throughput of each decoder on a generated large input, in release mode:
//! `cargo run --release -p whyslow-ingest --example decoder_bench [format…]` (format:
//! prometheus, kmsg, container-log, slurm, otlp).
//! One section per format (decoder helpers add theirs); each prints records, rows,
//! MB/s and rows/s. Rows are flushed from the builders every 64k, as the runner does.

use std::fmt::Write as _;
use std::time::Instant;

use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

/// Prints one decoder's figures: input size, tallies, rows and rates.
fn print_figures(name: &str, bytes: usize, secs: f64, out: &Output, rows: u64) {
    let c = out.counts;
    let mb = bytes as f64 / 1e6;
    println!(
        "{name:<12} {mb:8.1} MB {:>10} records {:>10} rows ({} events, {} metrics, {} skipped, {} rejected) \
         {secs:6.2} s {:8.1} MB/s {:>12.0} rows/s",
        c.records,
        rows,
        c.events,
        c.metrics,
        c.skipped,
        c.rejected,
        mb / secs,
        rows as f64 / secs
    );
}

/// Feeds `input` a line at a time and prints the figures.
fn run_lines(name: &str, decoder: &mut dyn Decoder, input: &str, hints: &Hints) {
    let mut out = Output::new(0);
    let start = Instant::now();
    let mut rows = 0u64;
    for (i, line) in input.split_terminator('\n').enumerate() {
        decoder.decode(
            line.as_bytes(),
            &Origin::File {
                path: name,
                line: i as u64 + 1,
            },
            hints,
            &mut out,
        );
        if out.pending_rows() >= 64 * 1024 {
            rows += (out.events.len() + out.metrics.len()) as u64;
            let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
        }
    }
    decoder.finish(hints, &mut out);
    rows += (out.events.len() + out.metrics.len()) as u64;
    let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
    print_figures(name, input.len(), start.elapsed().as_secs_f64(), &out, rows);
}

/// dcgm-exporter scrapes of 1000 nodes × 8 GPUs × 20 fields, 3 scrapes, with
/// HELP/TYPE lines, scrape-time comments and occasional Xid / throttle changes.
fn bench_prometheus() {
    const FIELDS: [&str; 20] = [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    ];
    let mut s = String::new();
    for scrape in 0..3 {
        for node in 0..1000 {
            let _ = writeln!(
                s,
                "# whyslow-scrape-time: 2026-11-29T10:{:02}:{:02}Z",
                15 + scrape,
                node % 60
            );
            for (f, field) in FIELDS.iter().enumerate() {
                let _ = writeln!(s, "# HELP {field} help text.\n# TYPE {field} gauge");
                for gpu in 0..8 {
                    let value = match *field {
                        "DCGM_FI_DEV_XID_ERRORS" if scrape == 2 && node % 97 == 0 => 79.0,
                        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" if scrape >= 1 && node % 13 == 0 => {
                            64.0
                        }
                        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS" | "DCGM_FI_DEV_XID_ERRORS" => 0.0,
                        _ => (node * 31 + gpu * 7 + f) as f64 * 0.37,
                    };
                    let _ = writeln!(
                        s,
                        "{field}{{gpu=\"{gpu}\",UUID=\"GPU-{node:08x}-7953-256e-8f33-{gpu:012x}\",pci_bus_id=\"00000000:{:02X}:00.0\",device=\"nvidia{gpu}\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"gke-gpu-{node}\",DCGM_FI_DRIVER_VERSION=\"580.105.08\",container=\"trainer\",namespace=\"llm\",pod=\"finetune-{node}-0\"}} {value}",
                        0x18 + gpu * 16
                    );
                }
            }
        }
    }
    let mut d = whyslow_ingest::decode::prometheus::PrometheusDecoder::new();
    run_lines("prometheus", &mut d, &s, &Hints::default());
}

/// Kernel logs of 1000 nodes in `dmesg --decode --time-format iso` and syslog form:
/// mostly noise, with Xid, link flap, OOM and hung-task lines among it.
fn bench_kmsg() {
    let mut s = String::new();
    for i in 0..600_000u64 {
        let (sec, us) = (i / 1000, (i % 1000) * 997);
        let stamp = format!(
            "2026-11-29T{:02}:{:02}:{:02},{us:06}+00:00",
            10 + sec / 3600,
            (sec / 60) % 60,
            sec % 60
        );
        let node = i % 1000;
        let msg = match i % 50 {
            0 => format!("NVRM: Xid (PCI:0000:{:02x}:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 8, TPC 5, SM 0): Out Of Range Address", node % 256),
            1 => format!("mlx5_core 0000:{:02x}:00.0 ens8f0np0: Link down", node % 256),
            2 => format!("Out of memory: Killed process {} (python) total-vm:1234kB, anon-rss:512kB, file-rss:0kB", 1000 + i),
            3 => format!("INFO: task python3:{} blocked for more than 120 seconds.", 1000 + i),
            k if k % 2 == 0 => format!("IPv6: ADDRCONF(NETDEV_CHANGE): cali{:011x}: link becomes ready", i),
            _ => "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context, skipping further processing".to_string(),
        };
        if i % 3 == 0 {
            let _ = writeln!(
                s,
                "{} gke-gpu-{node} kernel: {msg}",
                stamp.replace(',', ".")
            );
        } else {
            let _ = writeln!(s, "kern  :warn  : {stamp} {msg}");
        }
    }
    let mut d = whyslow_ingest::decode::kmsg::KmsgDecoder::new();
    run_lines(
        "kmsg",
        &mut d,
        &s,
        &Hints {
            node: Some("bench".into()),
            ..Hints::default()
        },
    );
}

/// CRI log files of a 64-rank training job: MaxText-style step lines, Hugging Face JSON
/// logs with checkpoint saves, tqdm bars and plain noise, with an NCCL watchdog timeout
/// and a traceback now and then.
fn bench_container_log() {
    let mut s = String::new();
    for i in 0..600_000u64 {
        let (sec, ns) = (i / 100, (i % 100) * 10_000_000 + 123);
        let stamp = format!(
            "2026-11-29T{:02}:{:02}:{:02}.{ns:09}Z",
            10 + sec / 3600,
            (sec / 60) % 60,
            sec % 60
        );
        let rank = i % 64;
        let line = match i % 20 {
            0 => format!(
                "completed step: {}, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, total_weights: 196608, loss: 10.374",
                i / 20
            ),
            1 => format!(
                r#"{{"name": "transformers.trainer", "message": "Saving model checkpoint to /data/ft/checkpoint-{}", "timestamp": "{stamp}", "level": "INFO"}}"#,
                i / 20
            ),
            2 => format!(
                "{{'loss': 1.{:04}, 'grad_norm': 0.91, 'learning_rate': 1.9e-05, 'epoch': 0.25}}",
                i % 10_000
            ),
            3 => " 40%|████      | 4/10 [00:02<00:03,  1.55it/s]".to_string(),
            4 if i % 1000 == 4 => format!(
                "[rank{rank}]:[E1129 10:40:12.345678901 ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={i}, OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000) ran for 600060 milliseconds before timing out."
            ),
            _ => format!(
                "[rank{rank}]:[W1129 10:15:02.895439547 reducer.cpp:1400] Warning: find_unused_parameters=True was specified in DDP constructor"
            ),
        };
        let _ = writeln!(s, "{stamp} stdout F {line}");
    }
    let hints = Hints {
        path: Some("/var/log/pods/llm_finetune-gemma-l4-0-vcxpz_0f1e2d3c/trainer/0.log".into()),
        ..Hints::default()
    };
    let mut d = whyslow_ingest::decode::container_log::ContainerLogDecoder::new();
    run_lines("container-log", &mut d, &s, &hints);
    let mut auto = whyslow_ingest::decode::auto::AutoDecoder::new(|f| {
        Some(whyslow_ingest::decode::decoder_for(f))
    });
    run_lines("auto(cri)", &mut auto, &s, &hints);
}

/// slurmctld logs of a 2000-node cluster (node flaps, drains, allocations, preemptions,
/// completions among scheduler noise), then a 200k-row `sacct --parsable2` dump.
fn bench_slurm() {
    let mut s = String::new();
    for i in 0..400_000u64 {
        let (sec, ms) = (i / 10, (i % 10) * 100);
        let stamp = format!(
            "[2026-11-29T{:02}:{:02}:{:02}.{ms:03}]",
            10 + sec / 3600,
            (sec / 60) % 60,
            sec % 60
        );
        let n = i % 2000;
        let msg = match i % 10 {
            0 => format!("error: Nodes gpu-[{n:04}-{:04}] not responding", n + 3),
            1 => format!(
                "sched: Allocate JobId={i} NodeList=gpu-[{n:04}-{:04}] #CPUs=256 Partition=gpu",
                n + 7
            ),
            2 => format!(
                "preempted JobId={i} has been requeued to reclaim resources for JobId={}",
                i + 1
            ),
            3 => format!("update_node: node gpu-{n:04} state set to DRAINED"),
            4 => format!("_job_complete: JobId={i} done"),
            _ => "debug:  sched: Running job scheduler for full queue.".to_string(),
        };
        let _ = writeln!(s, "{stamp} {msg}");
    }
    let mut d = whyslow_ingest::decode::slurm::SlurmDecoder::new();
    run_lines("slurmctld", &mut d, &s, &Hints::default());
    let mut s = String::from("JobID|JobName|Partition|State|Start|End|NodeList|ExitCode\n");
    for i in 0..200_000u64 {
        let state = ["COMPLETED", "PREEMPTED", "FAILED", "NODE_FAIL", "TIMEOUT"][(i % 5) as usize];
        let n = i % 2000;
        let _ = writeln!(
            s,
            "{i}|job-{i}|gpu|{state}|2026-11-29T10:{:02}:00|2026-11-29T11:{:02}:00|gpu-[{n:04}-{:04}]|0:0",
            i % 60,
            i % 60,
            n + 3
        );
    }
    let mut d = whyslow_ingest::decode::slurm::SlurmDecoder::new();
    run_lines("sacct", &mut d, &s, &Hints::default());
}

/// Feeds each message whole, as a stream worker does, and prints the figures.
fn run_messages(name: &str, decoder: &mut dyn Decoder, messages: &[Vec<u8>]) {
    let mut out = Output::new(0);
    let hints = Hints::default();
    let start = Instant::now();
    let mut rows = 0u64;
    for (i, m) in messages.iter().enumerate() {
        let origin = Origin::Kafka {
            topic: name,
            partition: 0,
            offset: i as i64,
        };
        decoder.decode(m, &origin, &hints, &mut out);
        if out.pending_rows() >= 64 * 1024 {
            rows += (out.events.len() + out.metrics.len()) as u64;
            let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
        }
    }
    decoder.finish(&hints, &mut out);
    rows += (out.events.len() + out.metrics.len()) as u64;
    let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
    let bytes = messages.iter().map(Vec::len).sum();
    print_figures(name, bytes, start.elapsed().as_secs_f64(), &out, rows);
}

/// The scrapes of `bench_prometheus` as the OpenTelemetry Collector's prometheus
/// receiver forwards them to Kafka: one OTLP request per node and scrape (160 gauge
/// points), as protobuf (`otlp_proto`) and as JSON (`otlp_json`).
fn bench_otlp() {
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
    use opentelemetry_proto::tonic::metrics::v1::{
        Gauge, Metric, NumberDataPoint, ResourceMetrics, ScopeMetrics, metric, number_data_point,
    };
    use opentelemetry_proto::tonic::resource::v1::Resource;
    use prost::Message;
    let kv = |k: &str, v: String| KeyValue {
        key: k.into(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(v)),
        }),
        ..Default::default()
    };
    let mut proto = Vec::new();
    let mut json = Vec::new();
    for scrape in 0..3u64 {
        for node in 0..1000u64 {
            let t = 1_795_000_000_000_000_000 + scrape * 15_000_000_000;
            let metrics = (0..20)
                .map(|f| Metric {
                    name: format!("DCGM_FI_DEV_FIELD_{f}"),
                    data: Some(metric::Data::Gauge(Gauge {
                        data_points: (0..8u64)
                            .map(|gpu| NumberDataPoint {
                                attributes: vec![
                                    kv("gpu", gpu.to_string()),
                                    kv("UUID", format!("GPU-{node:08x}-7953-256e-8f33-{gpu:012x}")),
                                    kv("modelName", "NVIDIA H100 80GB HBM3".into()),
                                    kv("Hostname", format!("gke-gpu-{node}")),
                                    kv("namespace", "llm".into()),
                                    kv("pod", format!("finetune-{node}-0")),
                                ],
                                time_unix_nano: t,
                                value: Some(number_data_point::Value::AsDouble(
                                    (node * 31 + gpu * 7 + f) as f64 * 0.37,
                                )),
                                ..Default::default()
                            })
                            .collect(),
                    })),
                    ..Default::default()
                })
                .collect();
            let request = ExportMetricsServiceRequest {
                resource_metrics: vec![ResourceMetrics {
                    resource: Some(Resource {
                        attributes: vec![
                            kv("service.name", "dcgm-exporter".into()),
                            kv("k8s.node.name", format!("gke-gpu-{node}")),
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
            proto.push(request.encode_to_vec());
            json.push(serde_json::to_vec(&request).expect("a request serializes"));
        }
    }
    let mut d = whyslow_ingest::decode::decoder_for(whyslow_ingest::Format::Otlp);
    run_messages("otlp-proto", d.as_mut(), &proto);
    let mut d = whyslow_ingest::decode::decoder_for(whyslow_ingest::Format::Otlp);
    run_messages("otlp-json", d.as_mut(), &json);
}

fn main() {
    let wanted: Vec<String> = std::env::args().skip(1).collect();
    let on = |f: &str| wanted.is_empty() || wanted.iter().any(|w| w == f);
    if on("otlp") {
        bench_otlp();
    }
    if on("prometheus") {
        bench_prometheus();
    }
    if on("kmsg") {
        bench_kmsg();
    }
    if on("container-log") {
        bench_container_log();
    }
    if on("slurm") {
        bench_slurm();
    }
}
