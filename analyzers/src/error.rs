//! The analyzers' error type.

use thiserror::Error;

/// What can go wrong while analyzing a store or writing a report.
#[derive(Debug, Error)]
pub enum AnalyzeError {
    /// A query or view failed; names the SQL file.
    #[error("SQL {file} failed: {source}")]
    Sql {
        file: &'static str,
        #[source]
        source: datafusion::error::DataFusionError,
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
    /// The store could not be read or written.
    #[error("store {path}: {detail}")]
    Store { path: String, detail: String },
    /// The store cannot be written (read-only filesystem, no permission): what was read
    /// from it stands, only saving into it failed.
    #[error("store {path} is read-only: {detail}")]
    ReadOnlyStore { path: String, detail: String },
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
    /// The store at `path` could not be read or written, for the reason `detail`.
    pub fn store(path: &std::path::Path, detail: impl std::fmt::Display) -> Self {
        AnalyzeError::Store {
            path: path.display().to_string(),
            detail: detail.to_string(),
        }
    }
}

/// The analyzers' result type.
pub type Result<T, E = AnalyzeError> = std::result::Result<T, E>;
