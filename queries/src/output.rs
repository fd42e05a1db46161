//! Printing query results: an aligned table, CSV with a header, or JSON lines.

use std::io::Write;
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use arrow::util::pretty::pretty_format_batches_with_schema;

use crate::error::QueryError;
use crate::session::QueryOutput;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputFormat {
    /// An aligned text table followed by the row count.
    #[default]
    Table,
    /// CSV with a header line; nested values (maps, lists) as their display text.
    Csv,
    /// JSON lines: one object per row, every column present (null when empty); maps as
    /// objects, timestamps as RFC 3339 strings.
    Json,
}

impl FromStr for OutputFormat {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" => Ok(OutputFormat::Table),
            "csv" => Ok(OutputFormat::Csv),
            "json" => Ok(OutputFormat::Json),
            _ => Err(QueryError::Usage(format!(
                "unknown --format '{s}': use table, csv or json"
            ))),
        }
    }
}

fn arrow_err(e: arrow::error::ArrowError) -> QueryError {
    QueryError::Execution(e.into())
}

fn write_err(e: std::io::Error) -> QueryError {
    QueryError::io("writing the result", e)
}

/// Writes one statement's result to `out`.
pub fn write_output(
    out: &mut dyn Write,
    result: &QueryOutput,
    format: OutputFormat,
) -> Result<(), QueryError> {
    match format {
        OutputFormat::Table => {
            let table = pretty_format_batches_with_schema(result.schema.clone(), &result.batches)
                .map_err(arrow_err)?;
            let n = result.num_rows();
            writeln!(out, "{table}").map_err(write_err)?;
            writeln!(out, "({n} row{})", if n == 1 { "" } else { "s" }).map_err(write_err)?;
        }
        OutputFormat::Csv => {
            let schema = flat_schema(&result.schema);
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .build(&mut *out);
            if result.batches.is_empty() {
                w.write(&RecordBatch::new_empty(schema.clone()))
                    .map_err(arrow_err)?;
            }
            for b in &result.batches {
                w.write(&flatten(b, &schema)?).map_err(arrow_err)?;
            }
        }
        OutputFormat::Json => {
            let mut w = arrow::json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, arrow::json::writer::LineDelimited>(&mut *out);
            for b in &result.batches {
                w.write(b).map_err(arrow_err)?;
            }
            w.finish().map_err(arrow_err)?;
        }
    }
    out.flush().map_err(write_err)
}

fn is_nested(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Map(..)
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::Struct(_)
            | DataType::Union(..)
    )
}

/// The schema with nested columns as strings (CSV has no nested values).
fn flat_schema(schema: &SchemaRef) -> SchemaRef {
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            if is_nested(f.data_type()) {
                Field::new(f.name(), DataType::Utf8, true)
            } else {
                f.as_ref().clone()
            }
        })
        .collect();
    Arc::new(Schema::new(fields))
}

fn flatten(batch: &RecordBatch, schema: &SchemaRef) -> Result<RecordBatch, QueryError> {
    let options = FormatOptions::default();
    let columns = batch
        .columns()
        .iter()
        .map(|c| {
            if !is_nested(c.data_type()) {
                return Ok(c.clone());
            }
            let fmt = ArrayFormatter::try_new(c.as_ref(), &options).map_err(arrow_err)?;
            let mut b = StringBuilder::new();
            for i in 0..c.len() {
                if c.is_null(i) {
                    b.append_null();
                } else {
                    b.append_value(fmt.value(i).to_string());
                }
            }
            Ok(Arc::new(b.finish()) as ArrayRef)
        })
        .collect::<Result<Vec<_>, QueryError>>()?;
    RecordBatch::try_new(schema.clone(), columns).map_err(arrow_err)
}
