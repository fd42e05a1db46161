//! Sources and decoders: records from files and Kafka into the event log.
//!
//! A record's path: a source — a file ([`source`], read by the batch runner [`run`]), a
//! Kafka message ([`stream`]) or a dead letter retried ([`redecode`]) — hands it to one
//! [`decode::Feed`], which gives it to its format's decoder from the registry
//! ([`decode::decoder_for`]) and collects the rows (or the record whole, in
//! `dead_letters`) as Arrow batches for the store ([`whyslow_store`]), which commits them as
//! Parquet segments.

pub mod decode;
pub mod error;
pub mod redecode;
pub mod run;
pub mod source;
pub mod stream;

pub use decode::{Counts, Decoder, Format, Framing, Origin, Output};
pub use error::Error;
