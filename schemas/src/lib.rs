//! Arrow schemas of whyslow's tables, the row builders decoders write into, and the
//! layer / severity / root-cause taxonomies of `contracts/`.

pub mod builders;
pub mod cause;
pub mod layer;
pub mod origin;
pub mod tables;

pub use builders::{DeadLetterBuilder, EventsBuilder, MetricsBuilder};
pub use cause::Cause;
pub use layer::{Layer, Severity};
pub use origin::{DeadLetter, Origin, Part};
pub use tables::Table;

/// A string was not one of the ids a taxonomy enum knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} '{value}'")]
pub struct UnknownId {
    /// Which taxonomy was asked (`layer`, `severity`, `cause`, `table`).
    pub what: &'static str,
    /// The string that did not match.
    pub value: String,
}
