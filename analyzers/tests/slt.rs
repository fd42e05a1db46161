//! Runs `queries/slt/analyzers/analyzers_*.slt` (the state views) against a session over the SQL
//! test fixture store of `queries/tests/fixture`, with the state views registered.
//!
//! `cargo test -p whyslow-analyzers --test slt`; `UPDATE_SLT=1` rewrites the expected
//! results in place.

#[path = "../../queries/tests/fixture/mod.rs"]
mod fixture;

use std::path::{Path, PathBuf};

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use sqllogictest::{DBOutput, DefaultColumnType, Runner};

struct Db {
    rt: std::sync::Arc<tokio::runtime::Runtime>,
    ctx: SessionContext,
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

fn rows_of(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>, DataFusionError> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let fs = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<Result<Vec<_>, _>>()?;
        for i in 0..b.num_rows() {
            rows.push(
                fs.iter()
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

impl sqllogictest::DB for Db {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DataFusionError> {
        let ctx = self.ctx.clone();
        let sql = sql.to_string();
        let (schema, batches) = self.rt.block_on(async move {
            let df = ctx.sql(&sql).await?;
            let schema = df.schema().as_arrow().clone();
            let batches = df.collect().await?;
            Ok::<_, DataFusionError>((schema, batches))
        })?;
        if schema.fields().is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        let types = schema
            .fields()
            .iter()
            .map(|f| column_type(f.data_type()))
            .collect();
        Ok(DBOutput::Rows {
            types,
            rows: rows_of(&batches)?,
        })
    }
}

fn slt_files() -> Vec<PathBuf> {
    // In a subdirectory of queries/slt: the queries runner reads queries/slt/*.slt over
    // a session without the state views.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../queries/slt/analyzers");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("queries/slt exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with("analyzers_") && name.ends_with(".slt")
        })
        .collect();
    files.sort();
    files
}

#[test]
fn state_views_slt() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    fixture::write_store(tmp.path());
    let rt = std::sync::Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    );
    let ctx = rt.block_on(async {
        // The state views are registered with the session.
        whyslow_queries::open_session(tmp.path())
            .await
            .expect("a session over the fixture and its views")
    });
    let update = std::env::var_os("UPDATE_SLT").is_some();
    let files = slt_files();
    assert!(!files.is_empty(), "no analyzers_*.slt files");
    for file in files {
        let (rt2, ctx2) = (rt.clone(), ctx.clone());
        let mut runner = Runner::new(move || {
            let (rt, ctx) = (rt2.clone(), ctx2.clone());
            async move { Ok(Db { rt, ctx }) }
        });
        let res = if update {
            futures::executor::block_on(runner.update_test_file(
                &file,
                " ",
                sqllogictest::default_validator,
                sqllogictest::default_normalizer,
                sqllogictest::strict_column_validator,
            ))
            .map_err(|e| e.to_string())
        } else {
            runner
                .run_file(&file)
                .map_err(|e| e.display(true).to_string())
        };
        if let Err(e) = res {
            panic!("{}: {e}", file.display());
        }
    }
}
