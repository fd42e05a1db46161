//! The container-log, slurm and auto decoders never panic and always account for what
//! they are fed: every truncation and many byte substitutions of the real samples'
//! lines (and of written lines in every framing), whole samples as one Kafka message,
//! huge lines, and pseudo-random bytes. A stand-in for cargo-fuzz targets, which this
//! toolchain has no `cargo fuzz` for.

use std::path::PathBuf;

use whyslow_ingest::decode::auto::{AutoDecoder, detect};
use whyslow_ingest::decode::container_log::ContainerLogDecoder;
use whyslow_ingest::decode::decoder_for;
use whyslow_ingest::decode::slurm::SlurmDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

const SAMPLES: [&str; 5] = [
    "training-logs/kubeflow-trainer-torchrun-hf-trainer-distilbert-2ranks.log",
    "training-logs/kubeflow-trainer-deepspeed-mpi-t5-8ranks.log",
    "training-logs/maxtext-jax-tpu-training-log-walkthrough-excerpt.md",
    "training-logs/maxtext-elastic-training-slice-failure-recovery-excerpt.md",
    "training-logs/torchtitan-step-metrics-line-excerpt.txt",
];

/// Lines in every framing the decoders read, to cut and corrupt.
const WRITTEN: [&str; 14] = [
    "2026-11-29T10:15:02.123456789Z stdout F completed step: 9, seconds: 5.667, TFLOP/s/device: 134.924, Tokens/s/device: 8672.758, loss: 10.374",
    "2026-11-29T10:15:02.123456789Z stderr P {\"name\": \"transformers.trainer\", \"message\": \"Saving model checkpoint to /d/checkpoint-10\"}",
    r#"{"date":1764411302.5,"log":"Restoring checkpoint from gs://b/checkpoints/100.\n","kubernetes":{"pod_name":"mx-0-x7k2p","namespace_name":"tpu","labels":{"app":"mx"},"host":"n1"}}"#,
    "[rank1]:[E1129 10:40:12.345678901 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.",
    "[rank3]:Traceback (most recent call last):",
    "[rank3]:  File \"/app/train.py\", line 212, in <module>",
    "[rank3]:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.",
    "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will restart worker group",
    "step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%",
    "{'train_runtime': 165.12, 'train_samples_per_second': 0.484, 'train_loss': 5.76, 'epoch': 1.0}",
    "[2026-11-29T10:15:02.123] error: Nodes gpu-[01-03,07] not responding, setting DOWN",
    "[2026-11-29T10:22:30.000] preempted JobId=4243 has been requeued to reclaim resources for JobId=4250",
    "JobID|JobName|Partition|State|Start|End|NodeList|ExitCode",
    "4242|llama|gpu|NODE_FAIL|2026-11-29T09:00:00|2026-11-29T10:16:42|gpu-[05-07]|0:0",
];

const SPECIAL: [u8; 20] = [
    0, 0xff, 0xc3, b'"', b'\\', b'[', b']', b',', b'=', b' ', b'\n', b':', b'.', b'(', b'9', b'-',
    b'{', b'|', b'\r', 0x1b,
];

fn sample_lines() -> Vec<Vec<u8>> {
    let mut lines: Vec<Vec<u8>> = WRITTEN.iter().map(|l| l.as_bytes().to_vec()).collect();
    for rel in SAMPLES {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/samples")
            .join(rel);
        let bytes = std::fs::read(p).unwrap();
        lines.extend(
            bytes
                .split(|&b| b == b'\n')
                .filter(|l| !l.is_empty())
                .map(<[u8]>::to_vec),
        );
    }
    lines
}

fn factory(f: whyslow_ingest::Format) -> Option<Box<dyn Decoder>> {
    Some(decoder_for(f))
}

/// The decoders under test, each with its own output and count of records fed.
struct Harness {
    decoders: Vec<(Box<dyn Decoder>, Output, u64)>,
    hints: Hints,
}

impl Harness {
    fn new() -> Self {
        let decoders: Vec<Box<dyn Decoder>> = vec![
            Box::new(ContainerLogDecoder::new()),
            Box::new(SlurmDecoder::new()),
            Box::new(AutoDecoder::new(factory)),
        ];
        let hints = Hints {
            path: Some("/var/log/pods/ns_pod-0-x7k2p_uid/c/0.log".to_string()),
            default_time_ns: Some(1_795_000_000_000_000_000),
            ..Hints::default()
        };
        Harness {
            decoders: decoders
                .into_iter()
                .map(|d| (d, Output::new(0), 0))
                .collect(),
            hints,
        }
    }

    fn feed(&mut self, bytes: &[u8], kafka: bool) {
        for (d, out, fed) in &mut self.decoders {
            let origin = if kafka {
                Origin::Kafka {
                    topic: "fuzz",
                    partition: 0,
                    offset: *fed as i64,
                }
            } else {
                Origin::File {
                    path: "fuzz",
                    line: *fed + 1,
                }
            };
            d.decode(bytes, &origin, &self.hints, out);
            *fed += 1;
            assert!(
                out.counts.balances(),
                "{:?}: {:?} after {:?}",
                d.format(),
                out.counts,
                String::from_utf8_lossy(bytes)
            );
            if out.pending_rows() > 50_000 {
                let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
            }
        }
        let _ = detect(bytes);
    }

    fn finish(&mut self) {
        for (d, out, fed) in &mut self.decoders {
            d.finish(&self.hints, out);
            assert!(out.counts.balances());
            assert_eq!(out.counts.records, *fed, "{:?}", d.format());
            let _ = (out.events.finish(), out.metrics.finish(), out.dead.finish());
        }
    }
}

#[test]
fn every_truncation_of_every_line() {
    let mut h = Harness::new();
    for line in sample_lines() {
        for cut in 0..=line.len() {
            h.feed(&line[..cut], false);
        }
    }
    h.finish();
}

#[test]
fn byte_substitutions() {
    let mut h = Harness::new();
    for line in sample_lines() {
        let step = (line.len() / 16).max(1);
        for at in (0..line.len()).step_by(step) {
            for &b in &SPECIAL {
                let mut m = line.clone();
                m[at] = b;
                h.feed(&m, false);
            }
        }
    }
    h.finish();
}

#[test]
fn whole_samples_as_kafka_messages_and_their_truncations() {
    let mut h = Harness::new();
    for rel in SAMPLES {
        let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/samples")
            .join(rel);
        let bytes = std::fs::read(p).unwrap();
        h.feed(&bytes, true);
        for cut in (0..bytes.len()).step_by(97) {
            h.feed(&bytes[..cut], true);
        }
    }
    h.finish();
}

#[test]
fn pseudo_random_bytes_and_huge_lines() {
    let mut h = Harness::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for n in 0..6_000usize {
        let len = n % 300;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Mostly printable, sometimes the bytes the parsers split on.
                if x.is_multiple_of(5) {
                    SPECIAL[(x >> 8) as usize % SPECIAL.len()]
                } else {
                    b' ' + (x % 95) as u8
                }
            })
            .collect();
        h.feed(&bytes, n % 2 == 0);
    }
    let huge = format!(
        "2026-11-29T10:15:02Z stdout F {}",
        "x".repeat(9 * 1024 * 1024)
    );
    h.feed(huge.as_bytes(), false);
    let deep = format!(
        "[2026-11-29T10:15:02.123] error: Nodes gpu-[0-{}] not responding",
        u64::MAX
    );
    h.feed(deep.as_bytes(), false);
    let wide = "[2026-11-29T10:15:02.123] error: Nodes a[0-9999]b[0-9999] not responding";
    h.feed(wide.as_bytes(), false);
    h.finish();
}
