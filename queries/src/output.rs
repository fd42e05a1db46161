//! Printing query results: an aligned table, CSV or TSV with a header, a JSON array or
//! JSON lines (`ndjson`, as datafusion-cli and DuckDB name them), a Markdown table. Text
//! from the data never reaches a terminal raw: control characters (escape sequences
//! included) are printed escaped (`\u{1b}`); JSON escapes them itself.

use std::borrow::Cow;
use std::fmt::Write as _;
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
    /// One JSON array of objects, one per row, every column present (null when empty);
    /// maps as objects, timestamps as RFC 3339 strings.
    Json,
    /// JSON lines: the same objects, one per line.
    Ndjson,
    /// Tab-separated with a header line; tabs and line breaks inside values escaped.
    Tsv,
    /// A Markdown (GitHub) table: `|` inside values escaped, line breaks as `<br>`.
    Markdown,
}

impl OutputFormat {
    /// Every name `--format` takes (`md` is `markdown`).
    pub const NAMES: [&str; 7] = ["table", "csv", "tsv", "json", "ndjson", "markdown", "md"];
}

impl FromStr for OutputFormat {
    type Err = QueryError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "table" => Ok(OutputFormat::Table),
            "csv" => Ok(OutputFormat::Csv),
            "json" => Ok(OutputFormat::Json),
            "ndjson" => Ok(OutputFormat::Ndjson),
            "tsv" => Ok(OutputFormat::Tsv),
            "markdown" | "md" => Ok(OutputFormat::Markdown),
            _ => Err(QueryError::Usage(format!(
                "unknown --format '{s}': use table, csv, tsv, json, ndjson or markdown"
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
            // Nested values as their display text, so that their strings are escaped too.
            let schema = flat_schema(&result.schema);
            let batches = result
                .batches
                .iter()
                .map(|b| escaped(&flatten(b, &schema)?, &schema, Escape::All))
                .collect::<Result<Vec<_>, QueryError>>()?;
            let table = pretty_format_batches_with_schema(schema, &batches).map_err(arrow_err)?;
            let n = result.num_rows();
            writeln!(out, "{table}").map_err(write_err)?;
            writeln!(out, "({n} row{})", if n == 1 { "" } else { "s" }).map_err(write_err)?;
        }
        OutputFormat::Csv | OutputFormat::Tsv => {
            let (delimiter, keep) = match format {
                OutputFormat::Tsv => (b'\t', Escape::All),
                _ => (b',', Escape::KeepLineBreaks),
            };
            let schema = flat_schema(&result.schema);
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .with_delimiter(delimiter)
                .build(&mut *out);
            if result.batches.is_empty() {
                w.write(&RecordBatch::new_empty(schema.clone()))
                    .map_err(arrow_err)?;
            }
            for b in &result.batches {
                let b = escaped(&flatten(b, &schema)?, &schema, keep)?;
                w.write(&b).map_err(arrow_err)?;
            }
        }
        OutputFormat::Markdown => write_markdown(out, result)?,
        OutputFormat::Json => {
            write_json::<arrow::json::writer::JsonArray>(out, result)?;
            // The array writer leaves its line open.
            writeln!(out).map_err(write_err)?;
        }
        OutputFormat::Ndjson => write_json::<arrow::json::writer::LineDelimited>(out, result)?,
    }
    out.flush().map_err(write_err)
}

/// A GitHub Markdown table: a header, its rule, one line a row.
fn write_markdown(out: &mut dyn Write, result: &QueryOutput) -> Result<(), QueryError> {
    let schema = flat_schema(&result.schema);
    let cell = |s: &str| -> String {
        escape_controls(s, Escape::KeepLineBreaks)
            .replace('\\', "\\\\")
            .replace('|', "\\|")
            .replace("\r\n", "<br>")
            .replace(['\n', '\r'], "<br>")
            .replace('\t', " ")
    };
    let names: Vec<String> = schema.fields().iter().map(|f| cell(f.name())).collect();
    writeln!(out, "| {} |", names.join(" | ")).map_err(write_err)?;
    writeln!(out, "|{}", "---|".repeat(names.len().max(1))).map_err(write_err)?;
    let options = FormatOptions::default().with_null("");
    for b in &result.batches {
        let b = flatten(b, &schema)?;
        let formatters = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).map_err(arrow_err))
            .collect::<Result<Vec<_>, QueryError>>()?;
        for row in 0..b.num_rows() {
            let cells: Vec<String> = formatters
                .iter()
                .map(|f| cell(&f.value(row).to_string()))
                .collect();
            writeln!(out, "| {} |", cells.join(" | ")).map_err(write_err)?;
        }
    }
    Ok(())
}

/// The rows as JSON objects in the layout `F` (array or lines), nulls written out.
fn write_json<F: arrow::json::writer::JsonFormat>(
    out: &mut dyn Write,
    result: &QueryOutput,
) -> Result<(), QueryError> {
    let mut w = arrow::json::WriterBuilder::new()
        .with_explicit_nulls(true)
        .build::<_, F>(&mut *out);
    for b in &result.batches {
        w.write(b).map_err(arrow_err)?;
    }
    w.finish().map_err(arrow_err)
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

/// Which control characters [`escape_controls`] leaves as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// None: a table cell shows `\n` rather than breaking its row.
    All,
    /// Line breaks and tabs (CSV quotes fields that hold them).
    KeepLineBreaks,
}

/// `s` with its control characters (C0, DEL, C1: terminal escape sequences start with
/// one) written as escapes: `\n`, `\r`, `\t`, else `\u{1b}`; borrowed when it has none.
pub fn escape_controls(s: &str, keep: Escape) -> Cow<'_, str> {
    let kept = |c: char| keep == Escape::KeepLineBreaks && matches!(c, '\n' | '\r' | '\t');
    if !s.chars().any(|c| c.is_control() && !kept(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            c if !c.is_control() || kept(c) => out.push(c),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// The batch with the control characters of its string columns escaped.
fn escaped(
    batch: &RecordBatch,
    schema: &SchemaRef,
    keep: Escape,
) -> Result<RecordBatch, QueryError> {
    use arrow::array::{Array, AsArray};
    let columns = batch
        .columns()
        .iter()
        .map(|c| {
            let strings: Option<Box<dyn Iterator<Item = Option<&str>>>> = match c.data_type() {
                DataType::Utf8 => Some(Box::new(c.as_string::<i32>().iter())),
                DataType::LargeUtf8 => Some(Box::new(c.as_string::<i64>().iter())),
                DataType::Utf8View => Some(Box::new(c.as_string_view().iter())),
                _ => None,
            };
            let Some(strings) = strings else {
                return c.clone();
            };
            let mut b = StringBuilder::with_capacity(c.len(), 0);
            for v in strings {
                b.append_option(v.map(|v| escape_controls(v, keep)));
            }
            let out: ArrayRef = Arc::new(b.finish());
            // Keep the column's type: a cast from Utf8 to Utf8 (or a view) cannot fail.
            arrow::compute::cast(&out, c.data_type()).unwrap_or(out)
        })
        .collect::<Vec<_>>();
    RecordBatch::try_new(schema.clone(), columns).map_err(arrow_err)
}

#[cfg(test)]
mod escape_tests {
    use super::*;
    use arrow::array::StringArray;
    use arrow::datatypes::Field;

    fn result(values: &[&str]) -> QueryOutput {
        let schema: SchemaRef = Arc::new(Schema::new(vec![Field::new(
            "message",
            DataType::Utf8,
            true,
        )]));
        let col: ArrayRef = Arc::new(StringArray::from(values.to_vec()));
        QueryOutput {
            schema: schema.clone(),
            batches: vec![RecordBatch::try_new(schema, vec![col]).unwrap()],
        }
    }

    #[test]
    fn control_characters_from_the_data_are_escaped() {
        assert_eq!(escape_controls("plain ü", Escape::All), "plain ü");
        assert_eq!(
            escape_controls("\u{1b}[2Jx\ty\n\u{9b}\u{7f}", Escape::All),
            "\\u{1b}[2Jx\\ty\\n\\u{9b}\\u{7f}"
        );
        assert_eq!(
            escape_controls("a\nb\u{7}", Escape::KeepLineBreaks),
            "a\nb\\u{7}"
        );
        let r = result(&["\u{1b}]0;pwned\u{7}\u{1b}[31mred", "ok"]);
        for format in [
            OutputFormat::Table,
            OutputFormat::Csv,
            OutputFormat::Json,
            OutputFormat::Ndjson,
            OutputFormat::Tsv,
            OutputFormat::Markdown,
        ] {
            let mut out = Vec::new();
            write_output(&mut out, &r, format).unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}'),
                "{format:?}: {text}"
            );
            assert!(
                text.contains("red") && text.contains("ok"),
                "{format:?}: {text}"
            );
        }
    }

    fn printed(r: &QueryOutput, format: &str) -> String {
        let mut out = Vec::new();
        write_output(&mut out, r, format.parse().unwrap()).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn tsv_and_markdown() {
        let r = result(&["a|b", "two\nlines\tand a tab", "ok"]);
        assert_eq!(
            printed(&r, "tsv"),
            "message\na|b\ntwo\\nlines\\tand a tab\nok\n"
        );
        assert_eq!(
            printed(&r, "markdown"),
            "| message |\n|---|\n| a\\|b |\n| two<br>lines and a tab |\n| ok |\n"
        );
        assert_eq!(printed(&r, "md"), printed(&r, "markdown"));
        assert!("xml".parse::<OutputFormat>().is_err());
    }
}
