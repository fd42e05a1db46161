//! The Prometheus decoder never panics and always accounts for its input: every
//! truncation and many byte substitutions of the real samples' lines, and random bytes.
//! (A stand-in for a cargo-fuzz target, which this toolchain lacks `cargo fuzz` for.)

use std::path::PathBuf;

use whyslow_ingest::decode::prometheus::PrometheusDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

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

fn check(d: &mut PrometheusDecoder, out: &mut Output, fed: &mut u64, bytes: &[u8], hints: &Hints) {
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
        ..Hints::default()
    };
    let mut d = PrometheusDecoder::new();
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
    let mut d = PrometheusDecoder::new();
    let mut out = Output::new(0);
    let mut fed = 0;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let alphabet = b"DCGM_{}=\",# \n\\.e+-9NaInf{\"x\"}:{\"timestamp\":\"value\"}";
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
