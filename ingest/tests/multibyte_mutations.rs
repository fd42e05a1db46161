//! Multibyte and invalid UTF-8 mutations of one line of every shape each decoder (and
//! `auto`) recognises: a multi-byte character inserted or substituted at every byte
//! position must never panic a decoder, fed as a file line or as a Kafka message, and
//! every record stays accounted for. Complements the single-byte substitutions of the
//! `*_robustness` tests, which rarely produce valid text with a character straddling
//! the byte offsets decoders slice at.

use std::panic::{AssertUnwindSafe, catch_unwind};

use whyslow_ingest::Format;
use whyslow_ingest::decode::decoder_for;
use whyslow_ingest::decode::{Hints, Origin, Output};

/// One line of each shape the detectors and decoders slice by position.
const LINES: [&str; 36] = [
    // syslog, journalctl short-iso, dmesg iso/ctime/decode, /dev/kmsg, RFC 5424; the
    // shapes alone (no kernel wording that tells the format before them).
    "Nov 29 10:15:02 gpu-node-7 systemd[1]: Started session 42 of user root.",
    "[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message",
    "Nov 29 10:15:02 gpu-node-7 kernel: NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, GPU has fallen off the bus.",
    "2026-11-29T10:15:02.123456+00:00 gpu-node-7 kernel: NVRM: Xid (PCI:0000:8a:00): 13, pid=42, Graphics Exception",
    "2026-11-29T10:15:02,123456+00:00 NVRM: Xid (PCI:0000:8a:00): 43, pid=42, Ch 00000008",
    "[Mon Nov 29 10:15:02 2026] NVRM: Xid (PCI:0000:8a:00): 119, pid=1, Timeout after 6s",
    "[  123.456789] mlx5_core 0000:0c:00.0: mlx5e_port_link_down: Link down",
    "kern  :warn  : [Mon Nov 29 10:15:02 2026] Out of memory: Killed process 4242 (python) total-vm:1kB, UID:0",
    "6,1234,5678901,-;NVRM: Xid (PCI:0000:8a:00): 79, pid=1234, GPU has fallen off the bus.",
    "<13>1 2026-11-29T10:15:02.123Z gpu-node-7 kernel - - - NVRM: Xid (PCI:0000:8a:00): 48, pid=1, DBE",
    "[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message",
    "INFO: task python:4242 blocked for more than 120 seconds.",
    // CRI, kubectl logs --timestamps, Fluent Bit, JSON loggers.
    "2026-11-29T10:15:02.123456789Z stderr F [rank3]:[E1129 10:15:02.123 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.",
    "2026-11-29T10:15:02.123456789Z stdout P Saving model checkpoint to /ckpt/checkpoint-1200",
    "2026-11-29T10:15:02.123456789+00:00 {'loss': 0.5, 'step': 12}",
    "{\"log\":\"Saving model checkpoint to /ckpt/checkpoint-1200\\n\",\"stream\":\"stdout\",\"time\":\"2026-11-29T10:15:02.1Z\",\"kubernetes\":{\"namespace_name\":\"ml\",\"pod_name\":\"t-0-abcde\"}}",
    "{\"name\":\"accelerate\",\"message\":\"Saving current state to /ckpt/step_1200\",\"timestamp\":\"2026-11-29T10:15:02Z\",\"level\":\"INFO\"}",
    "[rank3]: Traceback (most recent call last):",
    "[node-0]: W0429 01:22:31.907000 1 site-packages/torch/distributed/run.py:793] restarting",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "100%|██████████| 500/500 [01:23<00:00,  6.00it/s]",
    " 40%|████      | 200/500 [00:33<00:50,  5.99it/s, loss=0.1]",
    "Checkpoint restored from /ckpt/checkpoint-1200 in 12.5s",
    // slurmctld, sacct.
    "[2026-11-29T10:15:02.123] error: Nodes gpu-[001-004,7] not responding, setting DOWN",
    "[2026-11-29T10:15:02.123] _job_complete: JobId=4242 WEXITSTATUS 1",
    "[2026-11-29T10:15:02.123] requeue job JobId=4242 due to failure of node gpu-017",
    "2026-11-29T10:15:02.123456+00:00 ctl slurmctld[123]: drain_nodes: node gpu-3 state set to DRAIN",
    "JobID|JobName|Partition|State|Start|End|NodeList|ExitCode",
    "4242|train|gpu|FAILED|2026-11-29T10:00:00|2026-11-29T11:00:00|gpu-[01-02]|1:0",
    // Prometheus, k8s, envelope.
    "DCGM_FI_DEV_XID_ERRORS{gpu=\"0\",Hostname=\"gpu-7\",UUID=\"GPU-x\"} 79 1764411302000",
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
    "{\"timestamp\":\"2026-11-29T10:15:02Z\",\"value\":\"1.5\",\"name\":\"gpu_util\",\"labels\":{\"__name__\":\"gpu_util\",\"gpu\":\"0\"}}",
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Event\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"e\",\"namespace\":\"ml\",\"uid\":\"u\"},\"involvedObject\":{\"kind\":\"Pod\",\"name\":\"p-0-abcde\"},\"reason\":\"Preempted\",\"message\":\"Preempted to accommodate a higher priority Workload\",\"type\":\"Normal\",\"firstTimestamp\":\"2026-11-29T10:15:02Z\",\"count\":2,\"lastTimestamp\":\"2026-11-29T10:16:02Z\"}}",
    "Normal   QuotaReserved  42s  kueue-admission  Quota reserved in ClusterQueue cq",
    "{\"time\":\"2026-11-29T10:15:02.123Z\",\"layer\":\"framework\",\"kind\":\"checkpoint_saved\",\"message\":\"saved\",\"attrs\":{\"seconds\":\"41.2\"}}",
    "{\"time\":1764411302.5,\"metric\":\"step_time_seconds\",\"value\":1.93,\"rank\":3,\"step\":1201}",
];

/// Characters of 2, 3 and 4 bytes.
const WIDE: [&str; 3] = ["é", "€", "😀"];

/// Every line with each wide character inserted at, substituted for the byte at, and
/// substituted for as many bytes as it has at, every byte position (most positions cut
/// the line's UTF-8; the others are valid text with a character where an ASCII byte was
/// expected; the last keeps the line's length, which shape checks test first).
fn mutations() -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for line in LINES {
        let b = line.as_bytes();
        for i in 0..=b.len() {
            for w in WIDE {
                let mut m = b[..i].to_vec();
                m.extend_from_slice(w.as_bytes());
                m.extend_from_slice(&b[i..]);
                v.push(m);
                for n in [1, w.len()] {
                    if i + n <= b.len() {
                        let mut m = b[..i].to_vec();
                        m.extend_from_slice(w.as_bytes());
                        m.extend_from_slice(&b[i + n..]);
                        v.push(m);
                    }
                }
            }
        }
    }
    v
}

fn hints() -> Hints {
    Hints {
        path: Some("/var/log/pods/ml_t-0-abcde_uid/trainer/0.log".to_string()),
        default_time_ns: Some(1_764_411_302_000_000_000),
        boot_time_ns: Some(1_764_000_000_000_000_000),
        ..Hints::default()
    }
}

/// Feeds every mutation to a fresh decoder of `format` (file lines, then Kafka
/// messages) and returns the inputs that panicked it.
fn panics_of(format: Format) -> Vec<String> {
    let hints = hints();
    let mut failed = Vec::new();
    for m in mutations() {
        let r = catch_unwind(AssertUnwindSafe(|| {
            let mut d = decoder_for(format);
            let mut out = Output::new(0);
            let file = Origin::File {
                path: "mutated.log",
                line: 1,
            };
            d.decode(&m, &file, &hints, &mut out);
            d.finish(&hints, &mut out);
            let kafka = Origin::Kafka {
                topic: "t",
                partition: 0,
                offset: 7,
            };
            d.decode(&m, &kafka, &hints, &mut out);
            d.finish(&hints, &mut out);
            assert!(out.counts.balances(), "{:?}", out.counts);
            // A document format may cut one input into several records.
            assert!(out.counts.records >= 2, "{:?}", out.counts);
            let _ = whyslow_ingest::decode::auto::detect(&m);
        }));
        if let Err(p) = r {
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failed.push(format!("{:?}: {why}", String::from_utf8_lossy(&m)));
        }
    }
    failed
}

#[test]
fn no_decoder_panics_on_wide_characters_anywhere() {
    // The panics are collected and reported together; their messages are noise here.
    std::panic::set_hook(Box::new(|_| {}));
    let mut report = Vec::new();
    for format in Format::ALL {
        let failed = panics_of(format);
        for f in failed.iter().take(5) {
            report.push(format!("{format}: {f}"));
        }
        if failed.len() > 5 {
            report.push(format!("{format}: … {} more", failed.len() - 5));
        }
    }
    let _ = std::panic::take_hook();
    assert!(
        report.is_empty(),
        "decoders panicked on:\n{}",
        report.join("\n")
    );
}
