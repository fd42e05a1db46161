//! The harness every fuzz target shares: any bytes, fed to a fresh decoder of one format
//! line by line as a file (with an input end after them) and whole as a Kafka message,
//! uncontained (a panic is the fuzzer's finding), must leave every record accounted for.

use whyslow_ingest::Format;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

/// Hints as real inputs bring them: a pod log path, a node, a message time, a boot time.
pub fn hints() -> Hints {
    Hints {
        path: Some("/var/log/pods/ns_pod-0-x7k2p_uid/c/0.log".to_string()),
        node: Some("gke-gpu-7".to_string()),
        default_time_ns: Some(1_795_000_000_000_000_000),
        boot_time_ns: Some(1_794_000_000_000_000_000),
        ..Hints::default()
    }
}

fn decoder(format: Format) -> Box<dyn Decoder> {
    // Every format the targets name has a decoder.
    whyslow_ingest::decode::decoder_for(format)
}

/// How many records a file of `lines` lines is: one per line, or (`auto`, which may hold
/// a document over lines, and whose line may be a k8s JSON list of several objects) at
/// least one.
#[derive(Clone, Copy)]
pub enum Records {
    PerLine,
    Documents,
}

/// Feeds `data` as a file and as a Kafka message; panics on a broken accounting.
pub fn lines_and_message(format: Format, records: Records, data: &[u8]) {
    let hints = hints();
    let mut d = decoder(format);
    let mut out = Output::new(0);
    let mut fed = 0u64;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let origin = Origin::File {
            path: "fuzz",
            line: i as u64 + 1,
        };
        d.decode(line, &origin, &hints, &mut out);
        fed += 1;
    }
    d.finish(&hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    match records {
        Records::PerLine => assert_eq!(out.counts.records, fed),
        Records::Documents => assert!(out.counts.records > 0, "{:?}", out.counts),
    }
    let mut d = decoder(format);
    let mut out = Output::new(0);
    let origin = Origin::Kafka {
        topic: "fuzz",
        partition: 0,
        offset: 0,
    };
    d.decode(data, &origin, &hints, &mut out);
    d.release_complete(&mut out);
    let _ = d.held_from();
    d.finish(&hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    assert_eq!(out.counts.records, 1);
    let _ = whyslow_ingest::decode::auto::detect(data);
}
