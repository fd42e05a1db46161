//! The error type of the queries crate, and the line between bad usage and runtime failure.

use datafusion::error::DataFusionError;

/// Why a query or a session could not be run.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// The SQL text does not parse.
    #[error("SQL syntax error: {0}")]
    Syntax(String),
    /// A statement that could write, change the session or read outside the store.
    #[error(
        "whyslow sql is read-only: {0} is refused; only queries (SELECT, WITH, EXPLAIN, \
         DESCRIBE, SHOW) run over the store"
    )]
    Refused(String),
    /// The SQL parses but names something that does not exist or mixes types badly.
    #[error("SQL error: {0}")]
    Plan(String),
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
    #[error("the SQL file {file} does not run: {message}")]
    SqlFile {
        /// The file's name.
        file: String,
        /// Why.
        message: String,
    },
    /// The store could not be opened.
    #[error("cannot open the store at {path}: {message}")]
    Store {
        /// The store root.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The query needed more memory than the session's pool allows.
    #[error(
        "the query needs more memory than its limit allows ({0}); raise --memory-limit or \
         narrow the query (a shorter time range, fewer columns, a LIMIT)"
    )]
    MemoryLimit(String),
    /// A failure while executing the query (reading Parquet, computing).
    #[error("query failed: {0}")]
    Execution(DataFusionError),
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
            DataFusionError::SQL(p, _) => QueryError::Syntax(strip_prefix(&p.to_string())),
            DataFusionError::Plan(m) => QueryError::Plan(first_line(m)),
            DataFusionError::SchemaError(s, _) => QueryError::Plan(first_line(&s.to_string())),
            DataFusionError::NotImplemented(m) => {
                QueryError::Plan(format!("not supported: {}", first_line(m)))
            }
            DataFusionError::ResourcesExhausted(m) => QueryError::MemoryLimit(first_line(m)),
            _ => QueryError::Execution(e),
        }
    }
}

fn first_line(s: &str) -> String {
    s.lines().next().unwrap_or_default().trim().to_string()
}

fn strip_prefix(s: &str) -> String {
    let s = first_line(s);
    s.strip_prefix("sql parser error: ")
        .map(str::to_string)
        .unwrap_or(s)
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
}
