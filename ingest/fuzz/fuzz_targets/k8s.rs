//! Fuzz target of the k8s decoder: any bytes, as a file and as a Kafka message, must
//! decode without panicking and with every record accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use whyslow_ingest::decode::k8s::K8sDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};

fuzz_target!(|data: &[u8]| {
    for origin in [
        Origin::File {
            path: "fuzz",
            line: 1,
        },
        Origin::Kafka {
            topic: "fuzz",
            partition: 0,
            offset: 0,
        },
    ] {
        let mut d = K8sDecoder::new();
        let mut out = Output::new(0);
        d.decode(data, &origin, &Hints::default(), &mut out);
        assert!(out.counts.balances());
        assert_eq!(out.counts.rejected as usize, out.dead.len());
    }
});
