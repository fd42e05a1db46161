//! Fuzz target of the envelope decoder: any bytes, fed line by line as a file and whole as a
//! Kafka message, must decode without panicking and with every record accounted for.
#![no_main]

use whyslow_ingest::Format;
use whyslow_ingest_fuzz::{Records, lines_and_message};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lines_and_message(Format::Envelope, Records::PerLine, data);
});
