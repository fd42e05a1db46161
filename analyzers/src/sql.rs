//! The SQL the analyzers run, named by its path under `queries/sql/` and read from the
//! files `whyslow-queries` embeds (one source of SQL): state views, the symptom queries
//! and the per-layer cause rules.

use whyslow_schemas::Layer;

/// One SQL file: its path under `queries/sql/`, or SQL written in the code.
#[derive(Debug, Clone, Copy)]
pub struct SqlFile {
    pub path: &'static str,
    inline: Option<&'static str>,
}

impl SqlFile {
    /// The embedded file at `path` under `queries/sql/`.
    pub const fn embedded(path: &'static str) -> Self {
        SqlFile { path, inline: None }
    }

    /// SQL written in the code, named `path` in errors.
    pub const fn inline(path: &'static str, text: &'static str) -> Self {
        SqlFile {
            path,
            inline: Some(text),
        }
    }

    /// The SQL text; an error naming the file when no such file is embedded (the test
    /// `every_listed_file_is_embedded` checks each one listed here).
    pub fn text(&self) -> crate::Result<&'static str> {
        match self.inline {
            Some(t) => Ok(t),
            None => whyslow_queries::sql_file(self.path).ok_or(crate::AnalyzeError::Sql {
                file: self.path,
                source: datafusion::error::DataFusionError::Plan(
                    "no such file is embedded under queries/sql/".into(),
                ),
            }),
        }
    }
}

macro_rules! sql {
    ($path:literal) => {
        SqlFile::embedded($path)
    };
}

/// Symptom inputs; each takes `$from` and `$to`.
pub mod symptoms {
    use super::SqlFile;
    pub const FRAMEWORK_SERIES: SqlFile = sql!("symptoms/framework_series.sql");
    /// The one scan of the samples (`analyze/metric_scan.rs`) and the pods it names from.
    pub const METRIC_SCAN: SqlFile = sql!("symptoms/metric_scan.sql");
    pub const POD_NAMES: SqlFile = sql!("symptoms/pod_names.sql");
    pub const PAUSES: SqlFile = sql!("symptoms/pauses.sql");
    pub const LIFECYCLE: SqlFile = sql!("symptoms/lifecycle.sql");
    /// What `EXTENT` and `PLACEMENTS` read: the metric scan folds the same table (the
    /// SQL is its definition, checked against the fold in `symptom_extent.slt`).
    pub const SERIES_EXTENTS: SqlFile = sql!("symptoms/series_extents.sql");
    pub const EXTENT: SqlFile = sql!("symptoms/extent.sql");
    pub const PLACEMENTS: SqlFile = sql!("symptoms/placements.sql");
    /// The workloads that are members of another (a JobSet's child Jobs).
    pub const MEMBERS: SqlFile = sql!("symptoms/members.sql");
    /// The pods each workload's events name (for the symptoms' `unplaced`).
    pub const EVENT_PODS: SqlFile = sql!("symptoms/event_pods.sql");
    pub const SAVE_CADENCE: SqlFile = sql!("symptoms/save_cadence.sql");
    /// Captured profiles, for the slowdowns' `profiles` (`analyze/profiles.rs`).
    pub const PROFILES: SqlFile = sql!("symptoms/profiles.sql");
    pub const SERVING_SERIES: SqlFile = sql!("symptoms/serving_series.sql");
    pub const SERVING_WORKLOADS: SqlFile = sql!("symptoms/serving_workloads.sql");
    /// `serving_samples` over the analysis' window and the hour either side, computed once.
    pub const SERVING_WINDOW: SqlFile = sql!("symptoms/serving_window.sql");
    /// The rows of the view `workload_progress`, one segment at a time (the live
    /// analyzer's, `analyze/segment_rows.rs`).
    pub const PROGRESS_TIMES: SqlFile = sql!("symptoms/progress_times.sql");
    /// How many serving samples a segment holds (the live analyzer's, kept per segment).
    pub const SERVING_PRESENCE: SqlFile = sql!("symptoms/serving_presence.sql");
}

/// State views the analyzer defines again in a session of its own making.
pub mod state {
    use super::SqlFile;
    /// Each workload's progress times (what `PROGRESS_TIMES` reads).
    pub const WORKLOAD_PROGRESS: SqlFile = sql!("state/workload_progress.sql");
    /// Checkpoint operations (over `workload_progress`).
    pub const CHECKPOINT_OPS: SqlFile = sql!("state/checkpoint_ops.sql");
}

/// The views the cause rules read, in dependency order: the level signals' rates of each
/// symptom's workload (the recompiles among logged compilations first), and a latency
/// regression's serving samples.
pub const SYMPTOM_VIEWS: &[SqlFile] = &[
    sql!("causes/repeat_compiles.sql"),
    sql!("causes/level_rates.sql"),
    sql!("causes/serving_around.sql"),
];

/// The events in each symptom's scope, registered as `symptom_events` (takes the rules'
/// `$first_onset` and `$last_end`).
pub const SYMPTOM_EVENTS: SqlFile = sql!("causes/symptom_events.sql");

/// The throttle shares of each symptom's GPUs, registered as `symptom_throttle_shares`
/// (takes the rules' `$first_start` and `$last_end`).
pub const SYMPTOM_THROTTLE_SHARES: SqlFile = sql!("causes/throttle_shares.sql");

/// The steps of the rollouts in each symptom's scope, registered as `symptom_rollouts`
/// (reads `symptom_events`).
pub const SYMPTOM_ROLLOUTS: SqlFile = sql!("causes/rollouts.sql");

/// Each pace symptom's GPU activity samples, registered as `symptom_gpu_samples` (takes
/// the rules' `$first_start` and `$last_end`).
pub const SYMPTOM_GPU_SAMPLES: SqlFile = sql!("causes/gpu_around.sql");

/// The events cited as evidence (reads the registered `cited` table).
pub const EVIDENCE: SqlFile = sql!("causes/evidence.sql");

/// Each symptom's own framework aftermath (restores), the end of its chain.
pub const AFTERMATH: SqlFile = sql!("causes/aftermath.sql");

/// One rule per cause id, grouped by layer.
pub const CAUSE_RULES: &[(Layer, SqlFile)] = &[
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/gpu_failure.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/gpu_memory_error.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/nvlink_error.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/thermal_throttle.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/power_throttle.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/network_degraded.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/node_failure.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/host_maintenance.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/storage_slow.sql"),
    ),
    (
        Layer::Infrastructure,
        sql!("causes/infrastructure/host_resource_pressure.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/preemption.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/quota_wait.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/scheduling_failure.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/eviction.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/oom_killed.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/crash_loop.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/image_pull.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/scale_change.sql"),
    ),
    (
        Layer::Orchestrator,
        sql!("causes/orchestrator/noisy_neighbor.sql"),
    ),
    (
        Layer::Framework,
        sql!("causes/framework/checkpoint_save.sql"),
    ),
    (
        Layer::Framework,
        sql!("causes/framework/checkpoint_restore.sql"),
    ),
    (
        Layer::Framework,
        sql!("causes/framework/collective_timeout.sql"),
    ),
    (Layer::Framework, sql!("causes/framework/recompilation.sql")),
    (
        Layer::Framework,
        sql!("causes/framework/dataloader_stall.sql"),
    ),
    (
        Layer::Framework,
        sql!("causes/framework/straggler_rank.sql"),
    ),
    (Layer::Framework, sql!("causes/framework/config_change.sql")),
    (Layer::Framework, sql!("causes/framework/request_surge.sql")),
    (
        Layer::Framework,
        sql!("causes/framework/kv_cache_pressure.sql"),
    ),
];

/// Runs one SQL file with named parameters (`$from`, `$to`, ...) and collects the rows.
pub async fn collect(
    ctx: &datafusion::prelude::SessionContext,
    file: SqlFile,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> crate::Result<Vec<arrow::array::RecordBatch>> {
    let df = frame(ctx, file, params).await?;
    run(df, file.path).await
}

/// [`collect`], with the rows' schema: the first batch's, or the plan's where there are
/// none (see [`register_rows`]).
pub async fn collect_with_schema(
    ctx: &datafusion::prelude::SessionContext,
    file: SqlFile,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> crate::Result<(arrow::datatypes::SchemaRef, Vec<arrow::array::RecordBatch>)> {
    let df = frame(ctx, file, params).await?;
    let planned = std::sync::Arc::new(df.schema().as_arrow().clone());
    let batches = run(df, file.path).await?;
    let schema = batches.first().map_or(planned, |b| b.schema());
    Ok((schema, batches))
}

/// The log target of the analysis' query profiles: with it at `trace`
/// (`WHYSLOW_LOG=whyslow::sql_profile=trace`), every query the analysis collects logs its
/// physical plan with each operator's metrics (rows, time, files and pages pruned) — where
/// a slow stage spends its time, at no cost otherwise.
pub const PROFILE_TARGET: &str = "whyslow::sql_profile";

/// Runs `df` to the end; errors name `file`. With [`PROFILE_TARGET`] enabled, logs the
/// plan it ran with its metrics.
async fn run(
    df: datafusion::dataframe::DataFrame,
    file: &'static str,
) -> crate::Result<Vec<arrow::array::RecordBatch>> {
    let err = |source| crate::AnalyzeError::Sql { file, source };
    if !tracing::enabled!(target: PROFILE_TARGET, tracing::Level::TRACE) {
        return df.collect().await.map_err(err);
    }
    let task = std::sync::Arc::new(df.task_ctx());
    let plan = df.create_physical_plan().await.map_err(err)?;
    let started = std::time::Instant::now();
    let batches = datafusion::physical_plan::collect(plan.clone(), task)
        .await
        .map_err(err)?;
    let shown =
        datafusion::physical_plan::display::DisplayableExecutionPlan::with_metrics(plan.as_ref())
            .indent(true);
    tracing::trace!(
        target: PROFILE_TARGET,
        "{file}: {:.3} s\n{shown}",
        started.elapsed().as_secs_f64()
    );
    Ok(batches)
}

/// Runs one SQL file with named parameters and hands its rows to `each` batch by batch,
/// as they are produced: a reader that folds them into aggregates never holds the
/// query's whole output.
pub async fn for_each_batch(
    ctx: &datafusion::prelude::SessionContext,
    file: SqlFile,
    params: &[(&str, datafusion::scalar::ScalarValue)],
    mut each: impl FnMut(&arrow::array::RecordBatch) -> crate::Result<()>,
) -> crate::Result<()> {
    use futures::TryStreamExt;
    let err = |source| crate::AnalyzeError::Sql {
        file: file.path,
        source,
    };
    let mut stream = frame(ctx, file, params)
        .await?
        .execute_stream()
        .await
        .map_err(err)?;
    while let Some(batch) = stream.try_next().await.map_err(err)? {
        each(&batch)?;
    }
    Ok(())
}

/// Runs one SQL file with its parameters and registers its rows as the in-memory table
/// `name` (replacing any table of that name), for the queries after it to read.
pub async fn register(
    ctx: &datafusion::prelude::SessionContext,
    name: &str,
    file: SqlFile,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> crate::Result<()> {
    let df = frame(ctx, file, params).await?;
    register_rows(ctx, name, df, file.path).await
}

/// Replaces the view `name` in the session with a table of its rows, computed now: for a
/// view that several queries read, so that it is computed once. The analysis' session is
/// its own (`whyslow sql` keeps the views).
pub async fn materialize(
    ctx: &datafusion::prelude::SessionContext,
    name: &'static str,
) -> crate::Result<()> {
    let df = ctx
        .table(name)
        .await
        .map_err(|source| crate::AnalyzeError::Sql { file: name, source })?;
    register_rows(ctx, name, df, name).await
}

/// Runs `df` and registers its rows as the in-memory table `name`; errors name `file`.
/// The table has the rows' schema, or `df`'s where there are none (so that an empty result
/// still has its columns): the plan's may differ from the rows' in a column's nullability
/// (a window function's, e.g.), which the table would refuse.
async fn register_rows(
    ctx: &datafusion::prelude::SessionContext,
    name: &str,
    df: datafusion::dataframe::DataFrame,
    file: &'static str,
) -> crate::Result<()> {
    let planned = std::sync::Arc::new(df.schema().as_arrow().clone());
    let batches = run(df, file).await?;
    let schema = batches.first().map_or(planned, |b| b.schema());
    replace_table(ctx, name, schema, batches)
}

/// Registers `batches` as the in-memory table `name`, replacing any table of that name.
pub(crate) fn replace_table(
    ctx: &datafusion::prelude::SessionContext,
    name: &str,
    schema: arrow::datatypes::SchemaRef,
    batches: Vec<arrow::array::RecordBatch>,
) -> crate::Result<()> {
    let err = |source| crate::AnalyzeError::Sql {
        file: "(in-memory table)",
        source,
    };
    let table = datafusion::datasource::MemTable::try_new(schema, vec![batches]).map_err(err)?;
    ctx.deregister_table(name).map_err(err)?;
    ctx.register_table(name, std::sync::Arc::new(table))
        .map_err(err)?;
    Ok(())
}

/// The plan of one SQL file with its parameters bound.
async fn frame(
    ctx: &datafusion::prelude::SessionContext,
    file: SqlFile,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> crate::Result<datafusion::dataframe::DataFrame> {
    use datafusion::common::ParamValues;
    let err = |source| crate::AnalyzeError::Sql {
        file: file.path,
        source,
    };
    let mut df = ctx.sql(file.text()?).await.map_err(err)?;
    if !params.is_empty() {
        let map = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone().into()))
            .collect();
        df = df.with_param_values(ParamValues::Map(map)).map_err(err)?;
    }
    Ok(df)
}

/// Runs a statement (a `CREATE VIEW`) for its effect.
pub async fn execute(
    ctx: &datafusion::prelude::SessionContext,
    file: SqlFile,
) -> crate::Result<()> {
    let err = |source| crate::AnalyzeError::Sql {
        file: file.path,
        source,
    };
    ctx.sql(file.text()?)
        .await
        .map_err(err)?
        .collect()
        .await
        .map_err(err)?;
    Ok(())
}

/// A timestamp parameter value, given in nanoseconds since the epoch, in the stored unit.
pub fn ts_param(ns: i64) -> datafusion::scalar::ScalarValue {
    datafusion::scalar::ScalarValue::TimestampMicrosecond(
        Some(whyslow_schemas::tables::ns_to_stored(ns)),
        Some("UTC".into()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use whyslow_schemas::Cause;

    /// The analysis keeps the serving samples as far around its window as the serving
    /// rules look around a slowdown.
    #[test]
    fn serving_samples_are_kept_as_far_around_as_the_rules_read() {
        let text = whyslow_queries::sql_file("causes/serving_around.sql").unwrap();
        assert!(
            text.contains("m.time >= s.start - INTERVAL '1 hour'"),
            "{text}"
        );
        assert!(
            text.contains("m.time <= s.\"end\" + INTERVAL '1 hour'"),
            "{text}"
        );
        assert_eq!(crate::analyze::SERVING_AROUND_NS, 3_600_000_000_000);
    }

    /// Every typed cause has exactly one rule, filed under its layer and named after it.
    #[test]
    fn one_rule_per_cause() {
        for &c in Cause::ALL {
            let Some(layer) = c.layer() else { continue };
            let name = c.id().split('.').nth(1).unwrap();
            let path = format!("causes/{layer}/{name}.sql");
            let rules: Vec<_> = CAUSE_RULES.iter().filter(|(_, f)| f.path == path).collect();
            assert_eq!(rules.len(), 1, "{path}");
            assert_eq!(rules[0].0, layer);
            assert!(
                rules[0]
                    .1
                    .text()
                    .unwrap()
                    .contains(&format!("'{}' AS cause", c.id())),
                "{path}"
            );
        }
    }

    /// The quoted names of `metric IN (...)` and `metric = '...'` conditions in `sql`.
    fn metric_names(sql: &str) -> std::collections::BTreeSet<String> {
        let mut names = std::collections::BTreeSet::new();
        for part in sql.split("metric IN (").skip(1) {
            let list = part.split(')').next().unwrap_or_default();
            names.extend(list.split('\'').skip(1).step_by(2).map(str::to_string));
        }
        for part in sql.split("metric = '").skip(1) {
            names.extend(part.split('\'').next().map(str::to_string));
        }
        names
    }

    #[test]
    fn the_serving_presence_counts_every_metric_the_serving_samples_read() {
        let view = whyslow_queries::sql_file("state/serving_samples.sql").unwrap();
        let counted = symptoms::SERVING_PRESENCE.text().unwrap();
        let (read, counted) = (metric_names(view), metric_names(counted));
        assert!(read.len() >= 20, "{read:?}");
        let missing: Vec<_> = read.difference(&counted).collect();
        assert!(missing.is_empty(), "not counted: {missing:?}");
    }

    #[test]
    fn every_listed_file_is_embedded() {
        use symptoms::*;
        let singles = [
            FRAMEWORK_SERIES,
            METRIC_SCAN,
            POD_NAMES,
            SERIES_EXTENTS,
            PAUSES,
            LIFECYCLE,
            EXTENT,
            PLACEMENTS,
            MEMBERS,
            EVENT_PODS,
            SAVE_CADENCE,
            PROFILES,
            PROGRESS_TIMES,
            SERVING_PRESENCE,
            state::WORKLOAD_PROGRESS,
            state::CHECKPOINT_OPS,
            EVIDENCE,
            AFTERMATH,
        ];
        let rules = CAUSE_RULES.iter().map(|(_, f)| *f);
        for f in SYMPTOM_VIEWS.iter().copied().chain(singles).chain(rules) {
            assert!(f.text().is_ok_and(|t| !t.trim().is_empty()), "{}", f.path);
        }
    }
}
