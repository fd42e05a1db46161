//! The analyzers' error types: [`AnalyzeError`] for analyzing and reporting, and
//! [`Error`], the crate's one error type, that every module's error converts into with
//! `?`, keeping its source chain.

use crate::live::alertmanager::AlertError;
use crate::replay::ReplayError;

/// Any error of whyslow-analyzers. Each variant is a module's own error, shown as it is.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Analyzing a store or writing its report failed.
    #[error(transparent)]
    Analyze(#[from] AnalyzeError),
    /// A replay failed.
    #[error(transparent)]
    Replay(#[from] ReplayError),
    /// Alertmanager's URL is unusable or it did not take a request.
    #[error(transparent)]
    Alertmanager(#[from] AlertError),
    /// The incident publisher's Kafka producer could not be created.
    #[error("cannot create the incident publisher: {0}")]
    Publisher(#[from] rdkafka::error::KafkaError),
}

impl Error {
    /// Whether the caller asked for something impossible (exit code 2 in the CLI) rather
    /// than something failing while it ran.
    pub fn is_usage(&self) -> bool {
        match self {
            Error::Analyze(e) | Error::Replay(ReplayError::Analyze(e)) => e.is_usage(),
            Error::Alertmanager(AlertError::Url(_)) => true,
            Error::Replay(_) | Error::Alertmanager(_) | Error::Publisher(_) => false,
        }
    }
}

/// What can go wrong while analyzing a store or writing a report.
#[derive(Debug, thiserror::Error)]
pub enum AnalyzeError {
    /// A query or view failed; names the SQL file.
    #[error("SQL {file} failed: {source}")]
    Sql {
        file: &'static str,
        #[source]
        source: datafusion::error::DataFusionError,
    },
    /// Reading a table's rows straight from the store's segments failed; names the
    /// segment.
    #[error("reading the store's segments failed: {source}")]
    Segments {
        #[source]
        source: whyslow_queries::QueryError,
    },
    /// A query returned columns of an unexpected shape; names the SQL file.
    #[error("SQL {file} returned an unexpected column '{column}': {detail}")]
    Shape {
        file: &'static str,
        column: String,
        detail: String,
    },
    /// Arrow failed while building a table the rules read.
    #[error("building the {what} table failed: {source}")]
    Arrow {
        what: &'static str,
        #[source]
        source: arrow::error::ArrowError,
    },
    /// There is no store at `path`.
    #[error("store {path}: no store here (run whyslow ingest first)")]
    NoStore { path: String },
    /// Opening, reading or writing the store failed (the failure is the source).
    #[error("store {path}: {source}")]
    StoreFailed {
        path: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The store cannot be written (read-only filesystem, no permission): what was read
    /// from it stands, only saving into it failed.
    #[error("store {path} is read-only: {source}")]
    ReadOnlyStore {
        path: String,
        #[source]
        source: whyslow_store::StoreError,
    },
    /// The live analyzer's thread could not be started.
    #[error("cannot start the live analyzer: {0}")]
    Thread(#[source] std::io::Error),
    /// Writing the report failed.
    #[error("writing the report failed: {0}")]
    Io(#[from] std::io::Error),
    /// Serializing the report failed.
    #[error("serializing the report failed: {0}")]
    Json(#[from] serde_json::Error),
    /// A bad request (an unknown format, a bad time).
    #[error("{0}")]
    Usage(String),
}

impl AnalyzeError {
    /// The store at `path` could not be opened, read or written: `source` says why.
    pub fn store(
        path: &std::path::Path,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        AnalyzeError::StoreFailed {
            path: path.display().to_string(),
            source: source.into(),
        }
    }

    /// Whether the request was impossible (a usage error) rather than failing while it ran.
    pub fn is_usage(&self) -> bool {
        matches!(self, AnalyzeError::Usage(_))
    }
}

/// The analyzers' result type.
pub type Result<T, E = AnalyzeError> = std::result::Result<T, E>;
