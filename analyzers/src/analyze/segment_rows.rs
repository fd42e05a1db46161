//! The rows of a query over `metrics` alone, kept per segment between analyses: what
//! the live analyzer keeps of the framework series (`symptoms/framework_series.sql`), of
//! the workloads' progress times (`symptoms/progress_times.sql`) and of how many serving
//! samples each segment holds (`symptoms/serving_presence.sql`), so that an analysis runs
//! the query over the segments committed since the last one (and those its window cuts),
//! not over its whole window, or its whole store, again.
//!
//! This holds for a query whose every row comes from one row of `metrics` (a filter and
//! a projection, in any order): its rows over a set of segments are its rows over each
//! segment, together. (Or for a count: its counts over each segment add up to its count
//! over all.) A segment's rows are reused while it lies whole inside the window
//! (the window's bounds then keep all of its rows, as they did when it was read); a
//! segment the window cuts is read again and not kept. A segment that leaves the window,
//! or that compaction replaced, is dropped at the next read. The newest segments' rows
//! are kept first, up to a budget of bytes. (A read that fails forgets every kept
//! segment: the next one reads them all.)
//!
//! The query may read views of `metrics` (`views`): they are defined again over each
//! segment, since a view is bound to the tables it read when it was defined.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;
use whyslow_queries::Segment;
use whyslow_queries::dictionary_scan;
use whyslow_queries::segment_table::SegmentTable;
use whyslow_schemas::Table;

use super::segment_folds::{SegmentId, id_of, keep_newest, lies_inside};
use crate::sql::{self, SqlFile};
use crate::{AnalyzeError, Result};

/// A segment's rows with their bytes.
type Rows = (Vec<RecordBatch>, usize);

/// What the last read did with its segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastRead {
    /// Segments whose kept rows were used.
    pub reused: usize,
    /// Segments the query ran over.
    pub read: usize,
    /// The bytes of the rows kept for the next read.
    pub kept_bytes: usize,
}

/// One query's rows, per segment of earlier reads.
#[derive(Default)]
pub struct SegmentRows {
    kept: HashMap<SegmentId, Rows>,
    /// The schema of the query's rows, once it has run.
    schema: Option<SchemaRef>,
    last: LastRead,
}

impl SegmentRows {
    /// What the last read reused and read.
    pub fn last_read(&self) -> LastRead {
        self.last
    }

    /// The bytes of the rows kept.
    pub fn kept_bytes(&self) -> usize {
        self.last.kept_bytes
    }

    /// The schema of the query's rows (`None` before it has run once).
    pub fn schema(&self) -> Option<SchemaRef> {
        self.schema.clone()
    }

    /// The rows of `file` (a query over `metrics` and the `views` of it alone, as the
    /// module says; `params` its parameters) over the session's `metrics` segments that
    /// may hold rows in [`from_ns`, `to_ns`]: the kept rows of the segments that lie
    /// whole inside it, the query run over each other one. Keeps the newest segments'
    /// rows up to `budget_bytes`. `None` where `metrics` does not read a store's segments
    /// (an in-memory table) or nothing is to be kept: the caller then runs the query over
    /// the session as it is.
    pub(super) async fn collect(
        &mut self,
        ctx: &SessionContext,
        (file, views): (SqlFile, &[SqlFile]),
        (from_ns, to_ns): (i64, i64),
        params: &[(&str, datafusion::scalar::ScalarValue)],
        budget_bytes: usize,
    ) -> Result<Option<Vec<RecordBatch>>> {
        if budget_bytes == 0 {
            self.kept.clear();
            self.last = LastRead::default();
            return Ok(None);
        }
        let Some(mut segments) =
            dictionary_scan::segments_overlapping(ctx, Table::Metrics, from_ns, to_ns)
                .await
                .map_err(|source| AnalyzeError::Segments { source })?
        else {
            return Ok(None);
        };
        // In time order, so that the rows come as the whole query's would, near enough
        // (the readers sort what they need; the order only spares them work).
        segments.sort_by(|a, b| (a.min_time_ns, &a.path).cmp(&(b.min_time_ns, &b.path)));
        let mut earlier = std::mem::take(&mut self.kept);
        // One session for the parts, sharing the analysis' configuration and runtime (its
        // object stores, its memory pool), `metrics` in it one segment at a time.
        let part_ctx = SessionContext::new_with_config_rt(ctx.copied_config(), ctx.runtime_env());
        whyslow_queries::time_functions::register(&part_ctx);
        let mut all = Vec::new();
        let mut kept: Vec<(Option<i64>, SegmentId, Rows)> = Vec::new();
        let (mut reused, mut read) = (0, 0);
        for s in segments {
            let id = id_of(&s);
            let whole = lies_inside(&s, (from_ns, to_ns));
            let rows = match earlier.remove(&id) {
                Some(rows) if whole => {
                    reused += 1;
                    rows
                }
                _ => {
                    read += 1;
                    let (schema, batches) = rows_of(&part_ctx, (file, views), &s, params).await?;
                    self.schema = Some(schema);
                    let bytes = batches.iter().map(RecordBatch::get_array_memory_size).sum();
                    (batches, bytes)
                }
            };
            all.extend(rows.0.iter().cloned());
            if whole {
                kept.push((s.max_time_ns, id, rows));
            }
        }
        let kept_bytes;
        (self.kept, kept_bytes) = keep_newest(kept, budget_bytes);
        self.last = LastRead {
            reused,
            read,
            kept_bytes,
        };
        Ok(Some(all))
    }
}

/// The rows of `file` over the one segment `s`, with their schema, the `views` defined
/// over it first (a query that fails names its file).
async fn rows_of(
    part_ctx: &SessionContext,
    (file, views): (SqlFile, &[SqlFile]),
    s: &Segment,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    let table = Arc::new(SegmentTable::new(Table::Metrics, vec![s.clone()]));
    let err = |source| AnalyzeError::Sql {
        file: file.path,
        source,
    };
    part_ctx
        .deregister_table(Table::Metrics.name())
        .map_err(err)?;
    part_ctx
        .register_table(Table::Metrics.name(), table)
        .map_err(err)?;
    for view in views {
        whyslow_queries::session::register_sql(part_ctx, view.text()?)
            .await
            .map_err(|e| AnalyzeError::Sql {
                file: view.path,
                source: datafusion::error::DataFusionError::External(Box::new(e)),
            })?;
    }
    sql::collect_with_schema(part_ctx, file, params).await
}
