//! SQL over the event log: the DataFusion session, views and named queries.
//!
//! [`open_session`] gives a DataFusion session whose tables (`events`, `metrics`,
//! `dead_letters`, `slowdowns`, `causes`) read exactly the committed Parquet segments of a
//! store, with the views of `queries/sql/views/` and `queries/sql/state/` registered.
//! [`run_read_only`] runs user SQL on it with parameters bound and anything but queries
//! refused; [`run_sql`] is the `whyslow sql` command. SQL text is parsed with
//! [`dialect::WhyslowDialect`] (the generic dialect, minus trailing commas in select lists,
//! so `SELECT node, cluster` parses): use [`session::parse`] or [`register_sql`] rather
//! than `SessionContext::sql` for SQL that names `cluster` after a comma.

mod bounded_functions;
pub mod dialect;
pub mod dictionary_scan;
pub mod embedded;
pub mod error;
pub mod gpu_functions;
pub mod output;
pub mod params;
pub mod pod_functions;
pub mod segment_table;
pub mod segments;
pub mod session;
pub mod sql_command;
pub mod store_source;
pub mod time_functions;
pub mod time_range;

pub use embedded::{incident_query, sql_dir, sql_file};
pub use error::QueryError;
/// The crate's one error type (also named [`QueryError`]).
pub use error::QueryError as Error;
pub use output::{OutputFormat, write_output};
pub use params::Params;
pub use segments::{Segment, SegmentList, SegmentSource};
pub use session::{
    QueryOutput, read_only, register_sql, register_sql_files, register_views, run_read_only,
    session_config, session_over, session_over_limited, session_over_runtime,
};
pub use sql_command::{DEFAULT_MEMORY_LIMIT, SqlCommand, parse_size, run_sql};
pub use store_source::{open_session, open_session_limited};
