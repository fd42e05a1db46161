//! The error type of the queries crate (`whyslow_queries::Error`: every module's errors
//! are its variants, with their sources kept), and the line between bad usage and
//! runtime failure.

use datafusion::error::DataFusionError;
use whyslow_store::StoreError;

/// Why a query or a session could not be run. A DataFusion error is kept as the source;
/// the message says it in one line (the root cause's first line, without DataFusion's
/// prefixes).
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The SQL text does not parse.
    #[error("SQL syntax error: {}", syntax_message(.0))]
    Syntax(#[source] DataFusionError),
    /// A statement that could write, change the session or read outside the store.
    #[error(
        "whyslow sql is read-only: {0} is refused; only queries (SELECT, WITH, EXPLAIN, \
         DESCRIBE, SHOW) run over the store"
    )]
    Refused(String),
    /// The SQL parses but names something that does not exist, mixes types badly or
    /// needs what DataFusion does not support.
    #[error("SQL error: {}", plan_message(.0))]
    Plan(#[source] DataFusionError),
    /// A bad argument: parameter, output format, query file.
    #[error("{0}")]
    Usage(String),
    /// A file the command reads or writes failed.
    #[error("{context}: {source}")]
    Io {
        /// What was being done, naming the file.
        context: String,
        /// The underlying failure.
        #[source]
        source: std::io::Error,
    },
    /// An embedded or registered SQL file does not run.
    #[error("the SQL file {file} does not run: {source}")]
    SqlFile {
        /// The file's name.
        file: String,
        /// Why.
        #[source]
        source: Box<QueryError>,
    },
    /// The store could not be opened.
    #[error("cannot open the store at {path}: {source}")]
    Store {
        /// The store root.
        path: String,
        /// What went wrong.
        #[source]
        source: StoreError,
    },
    /// The query needed more memory than the session's pool allows.
    #[error(
        "the query needs more memory than its limit allows ({}); raise --memory-limit or \
         narrow the query (a shorter time range, fewer columns, a LIMIT)",
        root_line(.0)
    )]
    MemoryLimit(#[source] DataFusionError),
    /// A stored segment could not be read straight from Parquet.
    #[error("cannot read the segment {path}: {source}")]
    Segment {
        /// The segment's path or URL.
        path: String,
        /// Why.
        #[source]
        source: parquet::errors::ParquetError,
    },
    /// A failure while executing the query (reading Parquet, computing).
    #[error("query failed: {0}")]
    Execution(#[source] DataFusionError),
}

impl QueryError {
    /// Whether the error is the user's input (exit code 2 in the CLI) rather than a runtime
    /// failure (exit code 1).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            QueryError::Syntax(_)
                | QueryError::Refused(_)
                | QueryError::Plan(_)
                | QueryError::Usage(_)
        )
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        QueryError::Io {
            context: context.into(),
            source,
        }
    }
}

impl From<DataFusionError> for QueryError {
    /// Parse errors become [`QueryError::Syntax`], planning and schema errors
    /// [`QueryError::Plan`], the rest [`QueryError::Execution`].
    fn from(e: DataFusionError) -> Self {
        match e.find_root() {
            DataFusionError::SQL(..) => QueryError::Syntax(e),
            DataFusionError::Plan(_)
            | DataFusionError::SchemaError(..)
            | DataFusionError::NotImplemented(_) => QueryError::Plan(e),
            DataFusionError::ResourcesExhausted(_) => QueryError::MemoryLimit(e),
            _ => QueryError::Execution(e),
        }
    }
}

/// The first line of the root cause's own text (without DataFusion's "Error during
/// planning: " and the like).
fn root_line(e: &DataFusionError) -> String {
    let text = match e.find_root() {
        DataFusionError::SQL(p, _) => p.to_string(),
        DataFusionError::Plan(m)
        | DataFusionError::NotImplemented(m)
        | DataFusionError::ResourcesExhausted(m) => m.clone(),
        DataFusionError::SchemaError(s, _) => s.to_string(),
        root => root.to_string(),
    };
    text.lines().next().unwrap_or_default().trim().to_string()
}

fn syntax_message(e: &DataFusionError) -> String {
    let s = root_line(e);
    s.strip_prefix("sql parser error: ")
        .map(str::to_string)
        .unwrap_or(s)
}

fn plan_message(e: &DataFusionError) -> String {
    match e.find_root() {
        DataFusionError::NotImplemented(_) => format!("not supported: {}", root_line(e)),
        _ => root_line(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_are_told_apart_from_runtime_ones() {
        let plan: QueryError = DataFusionError::Plan("table 'x' not found".into()).into();
        assert!(matches!(plan, QueryError::Plan(_)));
        assert!(plan.is_usage());
        let ctx = DataFusionError::Context(
            "while planning".into(),
            Box::new(DataFusionError::Plan("bad".into())),
        );
        assert!(QueryError::from(ctx).is_usage());
        let exec: QueryError = DataFusionError::Execution("disk".into()).into();
        assert!(!exec.is_usage());
        assert!(!QueryError::io("reading x.sql", std::io::Error::other("gone")).is_usage());
    }

    #[test]
    fn messages_say_the_root_cause_in_one_line_and_keep_it_as_the_source() {
        use std::error::Error;
        let ctx = DataFusionError::Context(
            "while planning".into(),
            Box::new(DataFusionError::Plan("table 'x' not found\nmore".into())),
        );
        let e = QueryError::from(ctx);
        assert_eq!(e.to_string(), "SQL error: table 'x' not found");
        assert!(e.source().is_some_and(|s| s.is::<DataFusionError>()));
        let e = QueryError::from(DataFusionError::NotImplemented("LATERAL".into()));
        assert_eq!(e.to_string(), "SQL error: not supported: LATERAL");
    }
}
