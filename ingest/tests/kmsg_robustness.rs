//! The kernel-log decoder never panics and always accounts for its input: every
//! truncation and many byte substitutions of the real samples' lines, and random bytes.
//! Runs in every test run; the cargo-fuzz targets in `ingest/fuzz` search further.

mod robustness_common;

use robustness_common::Feeder;
use whyslow_ingest::decode::Hints;
use whyslow_ingest::decode::kmsg::KmsgDecoder;

const SAMPLES: [&str; 9] = [
    "xid-kernel-logs/gpud-dmesg-iso-xid-13-43-and-oom.log",
    "xid-kernel-logs/gpud-dmesg-ctime-xid-119-gsp-timeout-h100.log",
    "xid-kernel-logs/gpud-dmesg-time-format-iso-peermem-and-xid.log",
    "xid-kernel-logs/gpud-dev-kmsg-raw-nvswitch.log",
    "xid-kernel-logs/gpud-docs-xid79-with-nvswitch-sxid-20034-excerpt.md",
    "xid-kernel-logs/gpud-nvidia-fabricmanager.log",
    "xid-kernel-logs/gpud-dmesg-iso-libnccl-segfault.log",
    "node-problem-detector/kernel-log-generator-problems/oom_kill.log",
    "dcgm-exporter/dcgm-exporter-T4-under-load-ericsson.prom",
];

const SPECIAL: [u8; 18] = [
    0, 0xff, 0xc3, b'"', b'\\', b'[', b']', b',', b'=', b' ', b'\n', b':', b'.', b'(', b'9', b'-',
    b'<', b'{',
];

#[test]
fn truncations_and_byte_substitutions_of_real_lines() {
    let hints = Hints {
        default_time_ns: Some(1_764_411_302_000_000_000),
        boot_time_ns: Some(1),
        ..Hints::default()
    };
    let mut d = KmsgDecoder::new();
    let mut f = Feeder::new();
    f.mutate_samples(&mut d, &SAMPLES, &SPECIAL, &hints);
    let fed = f.fed;
    assert!(fed > 100_000, "{fed}");
    eprintln!("{fed} mutated records decoded");
}

#[test]
fn random_bytes_and_whole_mutated_scrapes() {
    let mut d = KmsgDecoder::new();
    let mut f = Feeder::new();
    let alphabet = b"NVRM: Xid (PCI:0000:8a:00): 79, pid=[] <4>1 - kern  :warn  : 2026-11-29T10:15:02,1+00:00 oom-kill:task= Link down SXid {\"MESSAGE\":[1]}\n";
    f.random_and_flipped(&mut d, alphabet, SAMPLES[0]);
    eprintln!("{} random and mutated records decoded", f.fed);
}
