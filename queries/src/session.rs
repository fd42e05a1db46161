//! The DataFusion session over a store: its tables, its views, and read-only execution of
//! user SQL with bound parameters.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::execution::context::{SQLOptions, SessionConfig, SessionContext};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use whyslow_schemas::Table;

use crate::dialect::WhyslowDialect;
use crate::embedded::sql_dir;
use crate::error::QueryError;
use crate::params::Params;
use crate::segment_table::SegmentTable;
use crate::segments::SegmentSource;

/// The session settings: `information_schema` on (for `SHOW TABLES`, `DESCRIBE`),
/// Parquet filters evaluated while decoding (late materialization) so selective queries
/// read little, and DataFusion 55's leaf-expression pushdown off (it fails, "ambiguous
/// reference __datafusion_extracted_N", on queries that read a view's map lookups twice,
/// as the cause rules do).
pub fn session_config() -> SessionConfig {
    SessionConfig::new()
        .with_information_schema(true)
        .set_bool("datafusion.execution.parquet.pushdown_filters", true)
        .set_bool("datafusion.execution.parquet.reorder_filters", true)
        .set_bool(
            "datafusion.optimizer.enable_leaf_expression_pushdown",
            false,
        )
}

/// Registers whyslow's SQL functions (the throttle-mask functions of
/// [`crate::gpu_functions`], `epoch_ns` and its kin of [`crate::time_functions`], `pod_owner` of
/// [`crate::pod_functions`]) and every view of [`VIEW_DIRS`] on `ctx` (a session with the
/// stored tables).
pub async fn register_views(ctx: &SessionContext) -> Result<(), QueryError> {
    crate::gpu_functions::register(ctx);
    crate::time_functions::register(ctx);
    crate::pod_functions::register(ctx);
    register_sql_files(ctx, VIEW_DIRS.iter().flat_map(|d| sql_dir(d))).await
}

/// What user SQL may do: queries only. No DDL (CREATE/DROP, CREATE EXTERNAL TABLE), no
/// DML (INSERT, COPY), no statements (SET, PREPARE, transactions).
pub fn read_only() -> SQLOptions {
    SQLOptions::new()
        .with_allow_ddl(false)
        .with_allow_dml(false)
        .with_allow_statements(false)
}

/// The directories of `queries/sql/` whose files define views that every session has:
/// the views for SQL users and the analyzers' state views.
pub const VIEW_DIRS: [&str; 2] = ["views", "state"];

/// A session whose tables read the committed segments of `source`, with every view of
/// [`VIEW_DIRS`] registered. Tables with no segments exist and are empty.
pub async fn session_over(source: &dyn SegmentSource) -> Result<SessionContext, QueryError> {
    session_over_limited(source, None).await
}

/// [`session_over`] whose queries may hold at most `memory_limit` bytes in their memory
/// pool (sorts, aggregations and joins spill to disk or fail past it, with
/// [`QueryError::MemoryLimit`]); `None`: no limit.
pub async fn session_over_limited(
    source: &dyn SegmentSource,
    memory_limit: Option<usize>,
) -> Result<SessionContext, QueryError> {
    let ctx = match memory_limit {
        None => SessionContext::new_with_config(session_config()),
        Some(limit) => {
            let runtime = RuntimeEnvBuilder::new()
                .with_memory_limit(limit, 1.0)
                .build_arc()?;
            let ctx = SessionContext::new_with_config_rt(session_config(), runtime);
            crate::bounded_functions::register(&ctx, limit);
            ctx
        }
    };
    register_tables(ctx, source).await
}

/// [`session_over`] on the caller's runtime: sessions opened one after another on one
/// runtime share its caches, the Parquet footers and page indexes of the segments already
/// read among them (a segment never changes once committed), as the live analyzer's
/// analyses of a growing store do.
pub async fn session_over_runtime(
    source: &dyn SegmentSource,
    runtime: Arc<RuntimeEnv>,
) -> Result<SessionContext, QueryError> {
    let ctx = SessionContext::new_with_config_rt(session_config(), runtime);
    register_tables(ctx, source).await
}

/// Registers `source`'s tables and the views of [`VIEW_DIRS`] on `ctx`.
async fn register_tables(
    ctx: SessionContext,
    source: &dyn SegmentSource,
) -> Result<SessionContext, QueryError> {
    if let Some((url, store)) = source.object_store() {
        ctx.register_object_store(url.as_ref(), store);
    }
    for table in Table::ALL {
        let provider = SegmentTable::new(table, source.segments(table));
        ctx.register_table(table.name(), Arc::new(provider))?;
    }
    register_views(&ctx).await?;
    Ok(ctx)
}

/// Runs trusted SQL files (`CREATE VIEW name AS ...`, several statements allowed) given as
/// (name, text). Files may use each other's views in any order: each pass registers what
/// it can until all are in or a pass makes no progress (then the first error is returned,
/// naming its file). Analyzers use this for their own `state`/`symptoms`/`causes` views.
pub async fn register_sql_files<'a>(
    ctx: &SessionContext,
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<(), QueryError> {
    let mut pending: Vec<(&str, &str)> = files.into_iter().collect();
    while !pending.is_empty() {
        let mut failed = Vec::new();
        let mut first_error = None;
        for (name, sql) in pending.iter().copied() {
            if let Err(e) = register_sql(ctx, sql).await {
                first_error.get_or_insert((name, e));
                failed.push((name, sql));
            }
        }
        if failed.len() == pending.len()
            && let Some((name, e)) = first_error
        {
            return Err(QueryError::SqlFile {
                file: name.to_string(),
                source: Box::new(e),
            });
        }
        pending = failed;
    }
    Ok(())
}

/// Runs every statement of trusted `sql` (views, DDL allowed).
pub async fn register_sql(ctx: &SessionContext, sql: &str) -> Result<(), QueryError> {
    for statement in parse(sql)? {
        let plan = ctx.state().statement_to_plan(statement).await?;
        ctx.execute_logical_plan(plan).await?.collect().await?;
    }
    Ok(())
}

/// The result of one statement.
#[derive(Debug, Clone)]
pub struct QueryOutput {
    /// The columns, also when there are no rows.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
}

impl QueryOutput {
    /// Number of rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Parses `sql` into statements with [`WhyslowDialect`].
pub fn parse(sql: &str) -> Result<Vec<Statement>, QueryError> {
    let statements = DFParserBuilder::new(sql)
        .with_dialect(&WhyslowDialect)
        .build()?
        .parse_statements()?;
    Ok(statements.into_iter().collect())
}

/// Parses user `sql` (one or more statements separated by `;`) and plans each, refusing
/// anything but read-only queries. Every parameter must be used by some statement.
pub async fn plan_read_only(
    ctx: &SessionContext,
    sql: &str,
    params: &Params,
) -> Result<Vec<LogicalPlan>, QueryError> {
    let statements = parse(sql)?;
    if statements.is_empty() {
        return Err(QueryError::Usage("no SQL statement given".into()));
    }
    let state = ctx.state();
    let mut plans = Vec::with_capacity(statements.len());
    for statement in statements {
        let plan = state.statement_to_plan(statement).await?;
        read_only()
            .verify_plan(&plan)
            .map_err(|e| QueryError::Refused(refused_what(&e.to_string())))?;
        plans.push(plan);
    }
    params.check_all_used(&plans)?;
    Ok(plans)
}

/// "Error during planning: DDL not supported: CreateExternalTable" → "CreateExternalTable".
fn refused_what(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message);
    first
        .rsplit(": ")
        .next()
        .unwrap_or(first)
        .trim()
        .to_string()
}

/// Binds `params` into `plan` and runs it.
pub async fn execute_plan(
    ctx: &SessionContext,
    plan: LogicalPlan,
    params: &Params,
) -> Result<QueryOutput, QueryError> {
    let values = params.values_for(&plan)?;
    let plan = plan.with_param_values(values)?;
    let df = ctx.execute_logical_plan(plan).await?;
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let batches = df.collect().await?;
    Ok(QueryOutput { schema, batches })
}

/// Runs user `sql` read-only with `params` bound: one output per statement.
pub async fn run_read_only(
    ctx: &SessionContext,
    sql: &str,
    params: &Params,
) -> Result<Vec<QueryOutput>, QueryError> {
    let plans = plan_read_only(ctx, sql, params).await?;
    let mut out = Vec::with_capacity(plans.len());
    for plan in plans {
        out.push(execute_plan(ctx, plan, params).await?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_the_statement() {
        assert_eq!(
            refused_what("Error during planning: DDL not supported: CreateExternalTable"),
            "CreateExternalTable"
        );
        assert_eq!(
            refused_what("Error during planning: DML not supported: COPY"),
            "COPY"
        );
    }
}
