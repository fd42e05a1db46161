//! The kernel-log decoder never panics and always accounts for its input: every
//! truncation and many byte substitutions of the real samples' lines, and random bytes.
//! (A stand-in for a cargo-fuzz target, which this toolchain lacks `cargo fuzz` for.)

use std::path::PathBuf;

use whyslow_ingest::decode::kmsg::KmsgDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

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

fn lines(rel: &str) -> Vec<Vec<u8>> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples")
        .join(rel);
    std::fs::read(p)
        .unwrap()
        .split(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn check(d: &mut KmsgDecoder, out: &mut Output, fed: &mut u64, bytes: &[u8], hints: &Hints) {
    d.decode(
        bytes,
        &Origin::File {
            path: "fuzz",
            line: 1,
        },
        hints,
        out,
    );
    *fed += 1;
    assert_eq!(out.counts.records, *fed);
    assert!(
        out.counts.balances(),
        "{:?} after {:?}",
        out.counts,
        String::from_utf8_lossy(bytes)
    );
    if out.pending_rows() > 50_000 {
        out.events.finish();
        out.metrics.finish();
        out.dead.finish();
    }
}

#[test]
fn truncations_and_byte_substitutions_of_real_lines() {
    let hints = Hints {
        default_time_ns: Some(1_764_411_302_000_000_000),
        boot_time_ns: Some(1),
        ..Hints::default()
    };
    let mut d = KmsgDecoder::new();
    let mut out = Output::new(0);
    let mut fed = 0;
    for rel in SAMPLES {
        for line in lines(rel).iter().take(40) {
            for n in 0..=line.len() {
                check(&mut d, &mut out, &mut fed, &line[..n], &hints);
            }
            for i in 0..line.len() {
                for s in SPECIAL {
                    let mut m = line.clone();
                    m[i] = s;
                    check(&mut d, &mut out, &mut fed, &m, &hints);
                }
            }
        }
        d.finish(&hints, &mut out);
    }
    assert!(fed > 100_000, "{fed}");
    eprintln!("{fed} mutated records decoded");
}

#[test]
fn random_bytes_and_whole_mutated_scrapes() {
    let mut d = KmsgDecoder::new();
    let mut out = Output::new(0);
    let mut fed = 0;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = b"NVRM: Xid (PCI:0000:8a:00): 79, pid=[] <4>1 - kern  :warn  : 2026-11-29T10:15:02,1+00:00 oom-kill:task= Link down SXid {\"MESSAGE\":[1]}\n";
    for _ in 0..20_000 {
        let len = (next() % 200) as usize;
        let bytes: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if r % 4 == 0 {
                    (r >> 8) as u8
                } else {
                    alphabet[(r >> 8) as usize % alphabet.len()]
                }
            })
            .collect();
        check(&mut d, &mut out, &mut fed, &bytes, &Hints::default());
    }
    // Whole scrapes fed as one (Kafka) record, with bytes flipped.
    let scrape = lines(SAMPLES[0]).join(&b'\n');
    for i in (0..scrape.len()).step_by(7) {
        let mut m = scrape.clone();
        m[i] ^= (next() as u8) | 1;
        d.decode(
            &m,
            &Origin::Kafka {
                topic: "t",
                partition: 0,
                offset: i as i64,
            },
            &Hints::default(),
            &mut out,
        );
        fed += 1;
        assert!(out.counts.balances());
    }
    assert_eq!(out.counts.records, fed);
    eprintln!("{fed} random and mutated records decoded");
}
