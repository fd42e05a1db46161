//! Runs every `queries/slt/analyzers/*.slt` file — the state views (`analyzers_*.slt`), each
//! cause rule and the views they share (`cause_*.slt`), each symptom query
//! (`symptom_*.slt`) — against a session of its own over the SQL test fixture store of
//! `queries/tests/fixture`, with the views of `queries/sql/views` and `queries/sql/state`
//! registered.
//!
//! `cargo test --workspace --test slt`; `UPDATE_SLT=1` rewrites the expected results in
//! place; `SLT_FILTER=a,b` runs only the files whose name contains `a` or `b`.
//!
//! Besides SQL (DDL allowed: `CREATE TABLE cited AS ...`), a record may hold one of these
//! runner directives (each a `statement ok`):
//! - `\empty` — every stored table (`events`, `metrics`, ...) becomes empty: the fixture's
//!   rows are gone, so the file's own rows are all the rules see.
//! - `\events QUERY`, `\metrics QUERY` — the rows of QUERY (any query, typically
//!   `SELECT * FROM (VALUES ...) AS t(event_id, time, kind, ...)`) replace the table. Its
//!   columns are matched to the table's by name (an unknown name is an error) and cast to
//!   their types: times may be strings (`'2027-03-01T10:00:00Z'`), `attrs`/`labels` are
//!   JSON objects as strings (`'{"xid": "79"}'`) or NULL. Columns left out are NULL,
//!   except `ingest_time` (= `time`), `layer` and `source` (`test`) and `severity`
//!   (`info`).
//! - `\symptoms QUERY` — the rows of QUERY are the symptoms the cause rules explain, with
//!   the columns of the analyzers' `symptoms` table (`slowdown_id`, `namespace`,
//!   `workload`, `run_id`, `kind`, `metric`, `rank`, `start`, `end`, `onset_from`,
//!   `baseline`, `observed`, `unplaced`; `onset_from` defaults to 15 minutes before
//!   `start`, as the analyzer sets it, and `unplaced` to false). `\scope QUERY` gives their `symptom_scope` (`slowdown_id`, `node`,
//!   `device`, `pod`, `level` = `focus` or `workload`). Both are registered as the
//!   analyzer registers them (`causes::register`), which also creates the views the rules
//!   read (`repeat_compiles`, `symptom_events`, `symptom_throttle_shares`,
//!   `symptom_level_rates`) from their embedded files.
//! - `\param NAME=VALUE` binds `$NAME` for the `\table` records that follow (a UTC time
//!   such as `2027-03-01T10:00:00Z` binds a timestamp, as the analyzer binds `$from` and
//!   `$to`; an integer an integer; anything else a string); `\params clear` forgets them.
//! - `\table NAME FILE` runs the embedded SQL file `FILE` (its path under `queries/sql/`,
//!   e.g. `causes/infrastructure/gpu_failure.sql` or `symptoms/extent.sql`, read
//!   through `whyslow_queries::sql_file`) with the bound parameters, and registers its
//!   rows as the table NAME for the queries that follow to read.
//!
//! - `\scan` runs the analysis' one scan of the samples (`analyze/metric_scan.rs`) over
//!   `$from` and `$to` and registers what it folds: `series_extents` (as the analysis
//!   does), `scanned_utilization` (namespace, workload, metric, interval_ns, bucket,
//!   value_millionths, samples) and `scanned_activity` (namespace, workload, metric,
//!   node, device, minute, mean) of the workloads of the table `straggler_candidates`.
//!
//! The data directives (`\empty`, `\events`, `\metrics`, `\symptoms`, `\scope`) rebuild
//! the session over the data given so far (all views re-created over it): tables made
//! before one of them (`\table`, `CREATE TABLE`) are gone after it.
//!
//! Types in `query` lines: `I` integers, `R` floats, `T` everything else; NULL prints as
//! `NULL`, an empty string as `(empty)`.

#[path = "../../queries/tests/fixture/mod.rs"]
mod fixture;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, new_null_array};
use arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use arrow::compute::{cast, concat_batches};
use arrow::datatypes::{DataType, Field, Float64Type, Int32Type, Schema, SchemaRef};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::common::ParamValues;
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use sqllogictest::{DBOutput, DefaultColumnType, Runner};
use whyslow_analyzers::analyze::{LOOKBACK_NS, scan_metrics};
use whyslow_analyzers::causes::{self, ScopeRow, SymptomRow};
use whyslow_analyzers::sql::ts_param;
use whyslow_analyzers::symptoms::SymptomKind;
use whyslow_schemas::Table;
use whyslow_schemas::tables::string_map_type;
use whyslow_schemas::tables::{StoredTime, ns_to_stored, stored_to_ns};

type Result<T> = std::result::Result<T, DataFusionError>;

fn usage(msg: String) -> DataFusionError {
    DataFusionError::Plan(msg)
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// One slt connection: a session over the fixture store, or over the data the file's
/// directives gave, and the parameters bound so far.
struct Db {
    rt: Arc<tokio::runtime::Runtime>,
    /// The session over the fixture store: where the stored tables come from by default.
    base: SessionContext,
    /// The session the records run in.
    ctx: SessionContext,
    /// Stored tables replaced by directives (`\empty`, `\events`, `\metrics`).
    tables: BTreeMap<&'static str, RecordBatch>,
    /// The symptoms and their scope, once `\symptoms` or `\scope` gave them.
    symptoms: Option<(Vec<SymptomRow>, Vec<ScopeRow>)>,
    params: Vec<(String, ScalarValue)>,
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

fn rows_of(batches: &[RecordBatch]) -> Result<Vec<Vec<String>>> {
    let options = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for b in batches {
        let fs = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
            .collect::<std::result::Result<Vec<_>, _>>()?;
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

/// A `map<string,string>` column from JSON objects given as strings (NULL stays NULL).
fn map_from_json(col: &ArrayRef, name: &str) -> Result<ArrayRef> {
    let strings = cast(col, &DataType::Utf8)?;
    let strings = strings.as_string::<i32>();
    let mut b = whyslow_schemas::tables::string_map_builder();
    for i in 0..strings.len() {
        if strings.is_null(i) {
            b.append(false)?;
            continue;
        }
        let obj: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(strings.value(i)).map_err(|e| {
                usage(format!(
                    "{name} {:?} is not a JSON object: {e}",
                    strings.value(i)
                ))
            })?;
        for (k, v) in obj {
            b.keys().append_value(k);
            match v {
                serde_json::Value::Null => b.values().append_null(),
                serde_json::Value::String(s) => b.values().append_value(s),
                other => b.values().append_value(other.to_string()),
            }
        }
        b.append(true)?;
    }
    let map: ArrayRef = Arc::new(b.finish());
    // The builder's type is the contract's but for nullability flags: cast settles them.
    Ok(cast(&map, &string_map_type())?)
}

/// The rows of `batches` (schema `have`) as a batch of schema `want`: columns by name,
/// cast to their types; a missing column is NULL or `default(name, columns so far)`.
fn conform(
    have: &SchemaRef,
    batches: &[RecordBatch],
    want: &SchemaRef,
    default: impl Fn(&str, &[ArrayRef], usize) -> Result<Option<ArrayRef>>,
) -> Result<RecordBatch> {
    let batch = concat_batches(have, batches)?;
    for f in have.fields() {
        if want.field_with_name(f.name()).is_err() {
            let names: Vec<&str> = want.fields().iter().map(|f| f.name().as_str()).collect();
            return Err(usage(format!(
                "no column {} here; the columns are {}",
                f.name(),
                names.join(", ")
            )));
        }
    }
    let n = batch.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::new();
    for f in want.fields() {
        let col = match batch.column_by_name(f.name()) {
            Some(c) if matches!(f.data_type(), DataType::Map(..)) => map_from_json(c, f.name())?,
            Some(c) => cast(c, f.data_type())?,
            None => match default(f.name(), &cols, n)? {
                Some(c) => c,
                None if f.is_nullable() => new_null_array(f.data_type(), n),
                None => return Err(usage(format!("column {} is required", f.name()))),
            },
        };
        cols.push(col);
    }
    Ok(RecordBatch::try_new(want.clone(), cols)?)
}

fn text(value: &str, n: usize) -> ArrayRef {
    Arc::new(StringArray::from(vec![value; n]))
}

/// The defaults of the stored tables' required columns.
fn stored_default(name: &str, cols: &[ArrayRef], n: usize) -> Result<Option<ArrayRef>> {
    Ok(match name {
        // `time` is the first column of events and metrics.
        "ingest_time" => cols.first().cloned(),
        "layer" | "source" => Some(text("test", n)),
        "severity" => Some(text("info", n)),
        _ => None,
    })
}

/// The input columns of `\symptoms`: the analyzers' `symptoms` table.
fn symptoms_schema() -> SchemaRef {
    whyslow_analyzers::causes::symptoms_schema()
}

fn scope_schema() -> SchemaRef {
    let s = |n: &str, null| Field::new(n, DataType::Utf8, null);
    Arc::new(Schema::new(vec![
        s("slowdown_id", false),
        s("node", false),
        s("device", true),
        s("pod", true),
        s("level", false),
    ]))
}

fn opt_str(col: &ArrayRef, i: usize) -> Option<String> {
    let s = col.as_string::<i32>();
    (!s.is_null(i)).then(|| s.value(i).to_string())
}

fn symptom_rows(b: &RecordBatch) -> Result<Vec<SymptomRow>> {
    let c = |i: usize| b.column(i);
    let ts = |i: usize, r: usize| stored_to_ns(c(i).as_primitive::<StoredTime>().value(r));
    let float = |i: usize, r: usize| {
        let a = c(i).as_primitive::<Float64Type>();
        (!a.is_null(r)).then(|| a.value(r))
    };
    let rank = c(6).as_primitive::<Int32Type>();
    let mut out = Vec::new();
    for r in 0..b.num_rows() {
        // Required columns of the schema: not null.
        let kind = opt_str(c(4), r).unwrap_or_default();
        let kind = SymptomKind::ALL
            .iter()
            .find(|k| k.as_str() == kind)
            .ok_or_else(|| usage(format!("no symptom kind {kind}")))?
            .as_str();
        out.push(SymptomRow {
            slowdown_id: opt_str(c(0), r).unwrap_or_default(),
            namespace: opt_str(c(1), r),
            workload: opt_str(c(2), r),
            run_id: opt_str(c(3), r),
            kind,
            metric: opt_str(c(5), r),
            rank: (!rank.is_null(r)).then(|| rank.value(r)),
            start_ns: ts(7, r),
            end_ns: ts(8, r),
            onset_from_ns: ts(9, r),
            baseline: float(10, r),
            observed: float(11, r),
            // Not given: the workload's placement is known.
            unplaced: c(12).as_boolean().value(r) && c(12).is_valid(r),
        });
    }
    Ok(out)
}

fn scope_rows(b: &RecordBatch) -> Result<Vec<ScopeRow>> {
    let mut out = Vec::new();
    for r in 0..b.num_rows() {
        let level = match opt_str(b.column(4), r).as_deref() {
            Some("focus") => "focus",
            Some("workload") => "workload",
            other => return Err(usage(format!("scope level {other:?}: focus or workload"))),
        };
        out.push(ScopeRow {
            // Required columns of the schema: not null.
            slowdown_id: opt_str(b.column(0), r).unwrap_or_default(),
            node: opt_str(b.column(1), r).unwrap_or_default(),
            device: opt_str(b.column(2), r),
            pod: opt_str(b.column(3), r),
            level,
        });
    }
    Ok(out)
}

fn param_value(v: &str) -> ScalarValue {
    if let Ok(ns) = string_to_timestamp_nanos(v) {
        ts_param(ns)
    } else if let Ok(i) = v.parse::<i64>() {
        ScalarValue::Int64(Some(i))
    } else {
        ScalarValue::Utf8(Some(v.to_string()))
    }
}

impl Db {
    fn new(rt: Arc<tokio::runtime::Runtime>, store: &Path) -> Result<Db> {
        let base = rt
            .block_on(whyslow_queries::open_session(store))
            .map_err(external)?;
        Ok(Db {
            rt,
            ctx: base.clone(),
            base,
            tables: BTreeMap::new(),
            symptoms: None,
            params: Vec::new(),
        })
    }

    /// Runs `sql` in the current session: its schema and rows.
    fn query(&self, sql: &str) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let ctx = self.ctx.clone();
        let sql = sql.to_string();
        let params = self.params.clone();
        self.rt.block_on(async move {
            let mut df = ctx.sql(&sql).await?;
            if !params.is_empty() {
                let map = params.into_iter().map(|(k, v)| (k, v.into())).collect();
                df = df.with_param_values(ParamValues::Map(map))?;
            }
            let schema = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await?;
            Ok((schema, batches))
        })
    }

    /// A new session over the fixture's tables, or those the directives replaced, with
    /// the views and the symptoms registered again.
    fn rebuild(&mut self) -> Result<()> {
        let ctx = SessionContext::new_with_config(whyslow_queries::session::session_config());
        for table in Table::ALL {
            let name = table.name();
            let provider = match self.tables.get(name) {
                Some(b) => Arc::new(MemTable::try_new(b.schema(), vec![vec![b.clone()]])?) as _,
                None => self.rt.block_on(self.base.table_provider(name))?,
            };
            ctx.register_table(name, provider)?;
        }
        self.rt
            .block_on(whyslow_queries::session::register_views(&ctx))
            .map_err(external)?;
        if let Some((symptoms, scope)) = &self.symptoms {
            self.rt
                .block_on(causes::register(&ctx, symptoms, scope, |_| {}))
                .map_err(external)?;
            // The rules' own parameters, as the analysis binds them.
            for (name, value) in causes::rule_params(symptoms) {
                self.params.retain(|(n, _)| n != name);
                self.params.push((name.to_string(), value));
            }
        }
        self.ctx = ctx;
        Ok(())
    }

    /// Runs one directive (a record starting with `\`).
    fn directive(&mut self, text: &str) -> Result<()> {
        let (name, arg) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
        let arg = arg.trim();
        match name {
            "\\empty" => {
                for table in Table::ALL {
                    self.tables
                        .insert(table.name(), RecordBatch::new_empty(table.schema()));
                }
                self.rebuild()
            }
            "\\events" | "\\metrics" => {
                let table = if name == "\\events" {
                    Table::Events
                } else {
                    Table::Metrics
                };
                let (schema, batches) = self.query(arg)?;
                let batch = conform(&schema, &batches, &table.schema(), stored_default)?;
                self.tables.insert(table.name(), batch);
                self.rebuild()
            }
            "\\symptoms" => {
                let (schema, batches) = self.query(arg)?;
                let batch = conform(&schema, &batches, &symptoms_schema(), |name, cols, _| {
                    // `start` is the 8th column.
                    Ok(match (name, cols.get(7)) {
                        ("onset_from", Some(start)) => {
                            let start = start.as_primitive::<StoredTime>();
                            let from = start
                                .unary::<_, StoredTime>(|t| t - ns_to_stored(LOOKBACK_NS))
                                .with_timezone("UTC");
                            Some(Arc::new(from) as ArrayRef)
                        }
                        _ => None,
                    })
                })?;
                let rows = symptom_rows(&batch)?;
                let scope = self.symptoms.take().map(|(_, s)| s).unwrap_or_default();
                self.symptoms = Some((rows, scope));
                self.rebuild()
            }
            "\\scope" => {
                let (schema, batches) = self.query(arg)?;
                let batch = conform(&schema, &batches, &scope_schema(), |_, _, _| Ok(None))?;
                let scope = scope_rows(&batch)?;
                let rows = self.symptoms.take().map(|(r, _)| r).unwrap_or_default();
                self.symptoms = Some((rows, scope));
                self.rebuild()
            }
            "\\params" if arg == "clear" => {
                self.params.clear();
                Ok(())
            }
            "\\param" => {
                let (k, v) = arg
                    .split_once('=')
                    .ok_or_else(|| usage(format!("\\param {arg} is not NAME=VALUE")))?;
                self.params.retain(|(n, _)| n != k);
                self.params.push((k.to_string(), param_value(v)));
                Ok(())
            }
            "\\table" => {
                let (table, file) = arg
                    .split_once(char::is_whitespace)
                    .ok_or_else(|| usage(format!("\\table {arg} is not NAME FILE")))?;
                let file = file.trim();
                let sql = whyslow_queries::sql_file(file)
                    .ok_or_else(|| usage(format!("no embedded file {file} under queries/sql/")))?;
                let (schema, batches) = self.query(sql)?;
                let mem = MemTable::try_new(schema, vec![batches])?;
                self.ctx.deregister_table(table)?;
                self.ctx.register_table(table, Arc::new(mem))?;
                Ok(())
            }
            "\\scan" => {
                // The analysis' one scan of the samples over [$from, $to], the candidates
                // being the table `straggler_candidates` where one was made.
                let param = |n: &str| {
                    self.params
                        .iter()
                        .find(|(k, _)| k == n)
                        .map(|(_, v)| v.clone())
                        .ok_or_else(|| usage(format!("\\scan needs ${n}")))
                };
                let params = [("from", param("from")?), ("to", param("to")?)];
                let mut candidates = std::collections::BTreeSet::new();
                if self.ctx.table_exist("straggler_candidates")? {
                    let (_, batches) =
                        self.query("SELECT namespace, workload FROM straggler_candidates")?;
                    for b in &batches {
                        for i in 0..b.num_rows() {
                            candidates.insert((opt_str(b.column(0), i), opt_str(b.column(1), i)));
                        }
                    }
                }
                let scanned = self
                    .rt
                    .block_on(scan_metrics(&self.ctx, &params, &candidates))
                    .map_err(external)?;
                let tables = [
                    (
                        "scanned_utilization",
                        scanned.utilization_batch().map_err(external)?,
                    ),
                    (
                        "scanned_activity",
                        scanned.activity_batch().map_err(external)?,
                    ),
                    ("series_extents", scanned.extents),
                ];
                for (table, batch) in tables {
                    let mem = MemTable::try_new(batch.schema(), vec![vec![batch]])?;
                    self.ctx.deregister_table(table)?;
                    self.ctx.register_table(table, Arc::new(mem))?;
                }
                Ok(())
            }
            _ => Err(usage(format!("no directive {name}"))),
        }
    }
}

impl sqllogictest::DB for Db {
    type Error = DataFusionError;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>> {
        let text = sql.trim();
        if text.starts_with('\\') {
            self.directive(text)?;
            return Ok(DBOutput::StatementComplete(0));
        }
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
    // a session without the analyzers' tables and directives.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../queries/slt/analyzers");
    let filters: Vec<String> = std::env::var("SLT_FILTER")
        .map(|f| f.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("queries/slt/analyzers exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".slt")
                && (filters.is_empty() || filters.iter().any(|f| name.contains(f.as_str())))
        })
        .collect();
    files.sort();
    files
}

#[test]
fn analyzers_slt() {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    fixture::write_store(tmp.path());
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    );
    let update = std::env::var_os("UPDATE_SLT").is_some();
    let files = slt_files();
    assert!(!files.is_empty(), "no .slt files in queries/slt/analyzers");
    let mut failed = Vec::new();
    for file in &files {
        let (rt2, store) = (rt.clone(), tmp.path().to_path_buf());
        let mut runner = Runner::new(move || {
            let db = Db::new(rt2.clone(), &store);
            async move { db }
        });
        runner.with_column_validator(sqllogictest::strict_column_validator);
        let res = if update {
            futures::executor::block_on(runner.update_test_file(
                file,
                " ",
                sqllogictest::default_validator,
                sqllogictest::default_normalizer,
                sqllogictest::strict_column_validator,
            ))
            .map_err(|e| e.to_string())
        } else {
            runner
                .run_file(file)
                .map_err(|e| e.display(true).to_string())
        };
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        match res {
            Ok(()) => println!("slt {name} ... ok"),
            Err(e) => {
                println!("slt {name} ... FAILED\n{e}");
                failed.push(name.into_owned());
            }
        }
    }
    println!("slt: {} files, {} failed", files.len(), failed.len());
    assert!(failed.is_empty(), "failed: {}", failed.join(", "));
}
