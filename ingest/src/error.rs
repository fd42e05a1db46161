//! The ingest crate's one error type: every module's error converts into it with `?`,
//! keeping its source chain, and it tells a usage error (the caller asked for something
//! impossible) from a failure.

use crate::decode::UnknownFormat;
use crate::redecode::RedecodeError;
use crate::run::IngestError;
use crate::source::SourceError;
use crate::stream::{OptionError, StreamError};
use whyslow_schemas::time::BadTime;
use whyslow_store::StoreError;

/// Any error of whyslow-ingest. Each variant is a module's own error, shown as it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store could not be opened, read or written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// An input could not be listed, opened or read.
    #[error(transparent)]
    Source(#[from] SourceError),
    /// A batch ingest could not go on.
    #[error(transparent)]
    Ingest(#[from] IngestError),
    /// Dead letters could not be retried.
    #[error(transparent)]
    Redecode(#[from] RedecodeError),
    /// A stream worker stopped with an error.
    #[error(transparent)]
    Stream(#[from] StreamError),
    /// A stream worker setting could not be read.
    #[error(transparent)]
    Option(#[from] OptionError),
    /// A time given by the caller could not be read.
    #[error(transparent)]
    Time(#[from] BadTime),
    /// A format name is none of whyslow's.
    #[error(transparent)]
    Format(#[from] UnknownFormat),
}

impl Error {
    /// Whether the caller asked for something impossible (a bad setting, time or format:
    /// exit code 2 in the CLI) rather than something failing while it ran.
    pub fn is_usage(&self) -> bool {
        matches!(self, Error::Option(_) | Error::Time(_) | Error::Format(_))
    }
}
