//! Runs every `queries/slt/*.slt` file against a session over a fresh store holding the
//! fixture of `tests/fixture`, through the same read-only path as `whyslow sql`: the
//! session has the tables and the views of `queries/sql/views` and `queries/sql/state`.
//!
//! `cargo test -p whyslow-queries --test slt [-- NAME...] [-- --complete]`: NAME filters
//! files by substring; `--complete` rewrites the expected results in place.
//!
//! Besides SQL, a record may hold one of these runner directives:
//! - `\param NAME=VALUE` binds `$NAME` for the following records of the file (as
//!   `--param` does); `\params clear` forgets them all.
//! - `\incident NAME` runs the named query `queries/sql/incidents/NAME.sql` with the
//!   parameters bound so far.
//!
//! Types in `query` lines: `I` integers, `R` floats, `T` everything else; NULL prints as
//! `NULL`, an empty string as `(empty)`.

mod fixture;

use std::path::{Path, PathBuf};

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use async_trait::async_trait;
use datafusion::execution::context::SessionContext;
use sqllogictest::{DBOutput, DefaultColumnType, Runner};
use whyslow_queries::{
    Params, QueryError, QueryOutput, incident_query, open_session, run_read_only,
};

/// One slt connection: a session over the fixture store and the bound parameters.
struct WhyslowDb {
    ctx: SessionContext,
    params: Params,
}

fn column_type(t: &DataType) -> DefaultColumnType {
    match t {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => DefaultColumnType::Integer,
        DataType::Float16 | DataType::Float32 | DataType::Float64 | DataType::Decimal128(..) => {
            DefaultColumnType::FloatingPoint
        }
        _ => DefaultColumnType::Text,
    }
}

fn rows_of(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, QueryError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let formatters = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| QueryError::Execution(e.into()))?;
        for i in 0..b.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .zip(b.columns())
                    .map(|(f, c)| {
                        let s = f.value(i).to_string();
                        if s.is_empty() && !c.is_null(i) {
                            "(empty)".to_string()
                        } else {
                            s
                        }
                    })
                    .collect(),
            );
        }
    }
    Ok(rows)
}

fn to_db_output(out: QueryOutput) -> Result<DBOutput<DefaultColumnType>, QueryError> {
    if out.schema.fields().is_empty() {
        return Ok(DBOutput::StatementComplete(0));
    }
    let types = out
        .schema
        .fields()
        .iter()
        .map(|f| column_type(f.data_type()))
        .collect();
    Ok(DBOutput::Rows {
        types,
        rows: rows_of(&out.batches)?,
    })
}

#[async_trait]
impl sqllogictest::AsyncDB for WhyslowDb {
    type Error = QueryError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, QueryError> {
        let text = sql.trim();
        if text == "\\params clear" {
            self.params = Params::new();
            return Ok(DBOutput::StatementComplete(0));
        }
        if let Some(arg) = text.strip_prefix("\\param ") {
            let (name, value) = arg
                .split_once('=')
                .ok_or_else(|| QueryError::Usage(format!("\\param '{arg}' is not NAME=VALUE")))?;
            self.params.set(name, value)?;
            return Ok(DBOutput::StatementComplete(0));
        }
        let sql = match text.strip_prefix("\\incident ") {
            Some(name) => incident_query(name.trim())
                .ok_or_else(|| QueryError::Usage(format!("no named query {name}")))?,
            None => sql,
        };
        // The file's parameters apply to the statements that use them: a record that uses
        // none of them must not fail the "every parameter is used" check.
        let mut results = run_read_only(&self.ctx, sql, &self.used_params(sql)).await?;
        match results.len() {
            1 => to_db_output(results.remove(0)),
            n => Err(QueryError::Usage(format!(
                "one statement per record, got {n}"
            ))),
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        "whyslow"
    }
}

impl WhyslowDb {
    /// The bound parameters whose `$NAME` appears in `sql`.
    fn used_params(&self, sql: &str) -> Params {
        let mut p = Params::new();
        for name in self.params.names() {
            let needle = format!("${name}");
            let used = sql.match_indices(&needle).any(|(i, _)| {
                let next = sql[i + needle.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if used {
                let value = self.params.value(name).unwrap_or_default().to_string();
                // The name was accepted by `set` already.
                p.set(name, &value).expect("a name that was set before");
            }
        }
        p
    }
}

fn slt_files(filters: &[String]) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("queries/slt exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str()))
        })
        .collect();
    files.sort();
    files
}

async fn run_file(store: &Path, file: &Path, complete: bool) -> Result<(), String> {
    let store = store.to_path_buf();
    let mut runner = Runner::new(move || {
        let store = store.clone();
        async move {
            Ok(WhyslowDb {
                ctx: open_session(&store).await?,
                params: Params::new(),
            })
        }
    });
    runner.with_column_validator(sqllogictest::strict_column_validator);
    if complete {
        runner
            .update_test_file(
                file,
                " ",
                sqllogictest::default_validator,
                sqllogictest::default_normalizer,
                sqllogictest::strict_column_validator,
            )
            .await
            .map_err(|e| e.to_string())
    } else {
        runner
            .run_file_async(file)
            .await
            .map_err(|e| e.display(true).to_string())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let complete = args.iter().any(|a| a == "--complete");
    // Other `--flags` come from `cargo test` (e.g. --nocapture) and mean nothing here.
    let filters: Vec<String> = args.into_iter().filter(|a| !a.starts_with('-')).collect();
    let tmp = tempfile::tempdir().expect("a temporary directory");
    fixture::write_store(tmp.path());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut failed = 0;
    let files = slt_files(&filters);
    for file in &files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        match runtime.block_on(run_file(tmp.path(), file, complete)) {
            Ok(()) => println!("slt {name} ... ok"),
            Err(e) => {
                failed += 1;
                println!("slt {name} ... FAILED\n{e}");
            }
        }
    }
    println!("slt: {} files, {failed} failed", files.len());
    if failed > 0 {
        std::process::exit(1);
    }
}
