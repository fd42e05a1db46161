//! Fuzz target of the envelope decoder: any bytes, fed line by line as a file (with an
//! input end after them) and whole as a Kafka message, must decode without panicking
//! and with every record accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use whyslow_ingest::Format;
use whyslow_ingest::decode::{Hints, Origin, Output};

fuzz_target!(|data: &[u8]| {
    let hints = Hints {
        node: Some("gke-gpu-7".to_string()),
        default_time_ns: Some(1_795_000_000_000_000_000),
        ..Hints::default()
    };
    let new = || whyslow_ingest::run::decoder_for(Format::Envelope).expect("envelope decoder");
    let mut d = new();
    let mut out = Output::new(0);
    let mut fed = 0u64;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        d.decode(line, &Origin::File { path: "fuzz", line: i as u64 + 1 }, &hints, &mut out);
        fed += 1;
    }
    d.finish(&hints, &mut out);
    assert!(out.counts.balances());
    assert_eq!(out.counts.records, fed);
    let mut d = new();
    let mut out = Output::new(0);
    d.decode(data, &Origin::Kafka { topic: "fuzz", partition: 0, offset: 0 }, &hints, &mut out);
    d.finish(&hints, &mut out);
    assert!(out.counts.balances());
    assert_eq!(out.counts.records, 1);
});
