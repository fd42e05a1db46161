//! Sources, decoders and the append-only Parquet event log.

pub mod decode;
pub mod error;
pub mod redecode;
pub mod run;
pub mod source;
pub mod store;
pub mod stream;
pub mod time;

pub use decode::{Counts, Decoder, Format, Framing, Origin, Output};
pub use error::Error;
