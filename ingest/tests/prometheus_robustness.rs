//! The Prometheus decoder never panics and always accounts for its input: every
//! truncation and many byte substitutions of the real samples' lines, and random bytes.
//! Runs in every test run; the cargo-fuzz targets in `ingest/fuzz` search further.

mod robustness_common;

use robustness_common::Feeder;
use whyslow_ingest::decode::Hints;
use whyslow_ingest::decode::prometheus::PrometheusDecoder;

const SAMPLES: [&str; 5] = [
    "dcgm-exporter/dcgm-exporter-L4-kops-aws.prom",
    "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
    "dcgm-exporter/dcgm-exporter-default-counters.csv",
    "node-problem-detector/npd-prometheus-metrics-sample-problem_counter-problem_gauge.txt",
    "xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log",
];

const SPECIAL: [u8; 18] = [
    0, 0xff, 0xc3, b'"', b'\\', b'{', b'}', b',', b'=', b' ', b'\n', b'#', b'.', b'e', b'9', b'-',
    b'+', b'N',
];

#[test]
fn truncations_and_byte_substitutions_of_real_lines() {
    let hints = Hints {
        default_time_ns: Some(1_764_411_302_000_000_000),
        ..Hints::default()
    };
    let mut d = PrometheusDecoder::new();
    let mut f = Feeder::new();
    f.mutate_samples(&mut d, &SAMPLES, &SPECIAL, &hints);
    let fed = f.fed;
    assert!(fed > 100_000, "{fed}");
    eprintln!("{fed} mutated records decoded");
}

#[test]
fn random_bytes_and_whole_mutated_scrapes() {
    let mut d = PrometheusDecoder::new();
    let mut f = Feeder::new();
    let alphabet = b"DCGM_{}=\",# \n\\.e+-9NaInf{\"x\"}:{\"timestamp\":\"value\"}";
    f.random_and_flipped(&mut d, alphabet, SAMPLES[0]);
    eprintln!("{} random and mutated records decoded", f.fed);
}
