//! Arrow schemas of whyslow's tables, the row builders decoders write into, the
//! layer / severity / root-cause taxonomies of `contracts/`, and the vocabulary every
//! layer reads alike: time formats, NVIDIA's codes, Kubernetes' pod naming.

pub mod builders;
pub mod cause;
pub mod kubernetes;
pub mod layer;
pub mod nvidia;
pub mod origin;
pub mod tables;
pub mod time;

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
