//! Fuzz target of the otlp decoder: any bytes (OTLP/JSON or protobuf, or neither), fed
//! line by line as a file and whole as a Kafka message, must decode without panicking
//! and with every record accounted for, whichever decoders its log records reach.
#![no_main]

use whyslow_ingest::Format;
use whyslow_ingest_fuzz::{Records, lines_and_message};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    lines_and_message(Format::Otlp, Records::PerLine, data);
});
