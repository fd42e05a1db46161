//! The metric scan's folds of earlier analyses, one per segment: what the live analyzer
//! keeps between commits, so that an analysis decodes only the segments committed since
//! the last one (and those its window cuts), not its whole window again.
//!
//! A segment's fold is reused while the segment lies whole inside the window and what
//! the fold read besides the samples (which workloads its pods belong to) still reads
//! the same (`ScanFold::holds_under`). A kept fold holds every workload's GPU activity:
//! which workloads are straggler candidates changes as their framework series arrive
//! (on a 1000-node fleet, a fold that kept the candidates' only was stale for one
//! segment in four), so the candidates' is taken as the folds merge. Folds merge
//! exactly (`analyze/metric_scan.rs`), so an analysis that reuses them finds what one
//! that reads every segment finds. A segment that leaves the window, or that compaction
//! replaced, is dropped at the next scan.
//!
//! Beside the folds, the same segments' rows of the framework series, the workloads'
//! progress times and how many serving samples each holds are kept
//! (`analyze/segment_rows.rs`), under the same budget.
//!
//! Memory is bounded by a budget ([`SegmentFolds::with_budget`]): a fold holds about as
//! much as its segment's GPU-minutes and series, so the folds of a long window of a large
//! fleet can outgrow what the analysis itself needs. The newest segments' folds are kept
//! first; older segments beyond the budget are read from the store at each analysis.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::prelude::SessionContext;
use whyslow_queries::{Segment, dictionary_scan};
use whyslow_schemas::Table;

use super::metric_scan::{ScanBasis, ScanFold};
use super::segment_rows::{LastRead, SegmentRows};
use crate::sql::{state, symptoms as q};
use crate::{AnalyzeError, Result};

/// A segment as its fold is kept under: its file, rows and bytes. A committed segment is
/// never rewritten in place (compaction writes new files), so its path names its content;
/// the rows and bytes make sure.
pub(super) type SegmentId = (PathBuf, u64, u64);

/// The default budget of the kept folds, in bytes (estimated, [`ScanFold::approx_bytes`]).
pub const DEFAULT_BUDGET_BYTES: usize = 256 << 20;

/// Folds of the segments of earlier scans.
pub struct SegmentFolds {
    /// Each kept fold with its estimated bytes.
    folds: HashMap<SegmentId, (ScanFold, usize)>,
    /// The framework series' rows of each segment (`analyze/segment_rows.rs`) and the
    /// workloads' progress times, kept under the same budget: first, since they are read
    /// first and are the fewer.
    series: SegmentRows,
    progress: SegmentRows,
    /// How many serving samples each segment holds.
    serving: SegmentRows,
    budget_bytes: usize,
    last: LastScan,
}

impl Default for SegmentFolds {
    fn default() -> Self {
        SegmentFolds::with_budget(DEFAULT_BUDGET_BYTES)
    }
}

/// What the last scan did with its segments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LastScan {
    /// Segments whose kept fold was used.
    pub reused: usize,
    /// Segments read (new ones, ones the window cuts, ones whose fold no longer held,
    /// ones beyond the budget).
    pub read: usize,
    /// Of those read, the segments whose kept fold no longer held (what it read of the
    /// pods' workloads changed).
    pub stale: usize,
    /// The estimated bytes of the folds kept for the next scan.
    pub kept_bytes: usize,
}

impl SegmentFolds {
    /// Folds kept up to about `budget_bytes` (0: none kept, every scan reads every
    /// segment).
    pub fn with_budget(budget_bytes: usize) -> Self {
        SegmentFolds {
            folds: HashMap::new(),
            series: SegmentRows::default(),
            progress: SegmentRows::default(),
            serving: SegmentRows::default(),
            budget_bytes,
            last: LastScan::default(),
        }
    }

    /// What the budget leaves for one kind of kept rows (`own`: what that kind keeps now;
    /// 0 for the folds, kept last): the budget less what the kinds of rows keep besides.
    fn budget_beside(&self, own: usize) -> usize {
        let rows =
            self.series.kept_bytes() + self.progress.kept_bytes() + self.serving.kept_bytes();
        self.budget_bytes.saturating_sub(rows - own.min(rows))
    }

    /// What the last scan reused and read.
    pub fn last_scan(&self) -> LastScan {
        self.last
    }

    /// The estimated bytes each kind of what is kept holds now, by name: the folds, the
    /// framework series' rows, the progress times and the serving counts.
    pub fn kept_bytes(&self) -> [(&'static str, usize); 4] {
        [
            ("folds", self.last.kept_bytes),
            ("framework series", self.series.kept_bytes()),
            ("progress times", self.progress.kept_bytes()),
            ("serving counts", self.serving.kept_bytes()),
        ]
    }

    /// What the last read of the framework series reused and read.
    pub fn last_series_read(&self) -> LastRead {
        self.series.last_read()
    }

    /// How many serving samples (`symptoms/serving_presence.sql`) the segments that may
    /// hold rows in `window` hold, from the counts kept of the segments counted before;
    /// `None` where `metrics` does not read a store's segments or nothing is kept.
    pub(super) async fn serving_samples_in(
        &mut self,
        ctx: &SessionContext,
        window: (i64, i64),
    ) -> Result<Option<i64>> {
        let budget = self.budget_beside(self.serving.kept_bytes());
        let Some(counts) = self
            .serving
            .collect(ctx, (q::SERVING_PRESENCE, &[]), window, &[], budget)
            .await?
        else {
            return Ok(None);
        };
        let mut total = 0;
        for b in &counts {
            let c = crate::columns::Columns::new(b, q::SERVING_PRESENCE.path);
            total += c.ints("samples")?.into_iter().flatten().sum::<i64>();
        }
        Ok(Some(total))
    }

    /// What the last read of the progress times reused and read.
    pub fn last_progress_read(&self) -> LastRead {
        self.progress.last_read()
    }

    /// The rows of `symptoms/framework_series.sql` in the window (`params` its `$from`
    /// and `$to`), from the kept rows of the segments read before and the query over the
    /// others (`SegmentRows::collect`; `None`: run the query over the session).
    pub(super) async fn framework_rows(
        &mut self,
        ctx: &SessionContext,
        window: (i64, i64),
        params: &[(&str, datafusion::scalar::ScalarValue)],
    ) -> Result<Option<Vec<RecordBatch>>> {
        let budget = self.budget_beside(self.series.kept_bytes());
        self.series
            .collect(ctx, (q::FRAMEWORK_SERIES, &[]), window, params, budget)
            .await
    }

    /// The rows of the view `workload_progress` over every segment of the store (as the
    /// view `checkpoint_ops` reads it, whatever the window), with their schema: from the
    /// kept rows of the segments read before and the query over the others
    /// (`SegmentRows::collect`; `None`: read the view over the session).
    pub(super) async fn progress_rows(
        &mut self,
        ctx: &SessionContext,
    ) -> Result<Option<(SchemaRef, Vec<RecordBatch>)>> {
        let budget = self.budget_beside(self.progress.kept_bytes());
        let rows = self
            .progress
            .collect(
                ctx,
                (q::PROGRESS_TIMES, &[state::WORKLOAD_PROGRESS]),
                (i64::MIN, i64::MAX),
                &[],
                budget,
            )
            .await?;
        Ok(rows.and_then(|rows| Some((self.progress.schema()?, rows))))
    }

    /// The fold of the rows of `segments` in [`from_ns`, `to_ns`] under `basis`: the
    /// kept folds where they hold, the others read (`columns` of the metric table) and
    /// kept where the segment lies whole in the window. (A scan that fails forgets
    /// every fold: the next one reads every segment.)
    pub(super) async fn fold(
        &mut self,
        ctx: &SessionContext,
        basis: &ScanBasis<'_>,
        segments: Vec<Segment>,
        (from_ns, to_ns): (i64, i64),
        columns: &[&str],
    ) -> Result<ScanFold> {
        let inside = |s: &Segment| lies_inside(s, (from_ns, to_ns));
        let max_times: HashMap<SegmentId, Option<i64>> =
            segments.iter().map(|s| (id_of(s), s.max_time_ns)).collect();
        let mut earlier = std::mem::take(&mut self.folds);
        if self.budget_bytes == 0 {
            // Nothing to keep: one fold of every segment, as without kept folds.
            self.last = LastScan {
                read: segments.len(),
                ..LastScan::default()
            };
            return read_into(
                ScanFold::default(),
                ctx,
                basis,
                segments,
                (from_ns, to_ns),
                columns,
            )
            .await;
        }
        let mut total = ScanFold::default();
        let mut kept = HashMap::new();
        let mut to_read = Vec::new();
        let mut stale = 0;
        for s in segments {
            let id = id_of(&s);
            match earlier.remove(&id) {
                Some((f, bytes)) if inside(&s) && f.holds_under(basis) => {
                    total.merge(&f, basis.candidates);
                    kept.insert(id, (f, bytes));
                }
                Some((f, _)) => {
                    stale += usize::from(inside(&s) && !f.holds_under(basis));
                    to_read.push(s);
                }
                None => to_read.push(s),
            }
        }
        let (reused, read) = (kept.len(), to_read.len());
        let mut parts: Vec<ScanFold> = to_read.iter().map(|_| ScanFold::recording(basis)).collect();
        let scan = dictionary_scan::scan_segments(
            ctx,
            Table::Metrics,
            columns,
            from_ns,
            to_ns,
            to_read.clone(),
        );
        if let Some(mut batches) = scan {
            while let Some(b) = batches.next_of_segment().await {
                let (i, b) = b.map_err(|source| AnalyzeError::Segments { source })?;
                // (The scan tags each batch with its segment's index in `to_read`.)
                if let Some(part) = parts.get_mut(i) {
                    part.fold(basis, &b, q::METRIC_SCAN.path)?;
                }
            }
        }
        for (s, part) in to_read.iter().zip(parts) {
            total.merge(&part, basis.candidates);
            if inside(s) {
                let bytes = part.approx_bytes();
                kept.insert(id_of(s), (part, bytes));
            }
        }
        // Whatever was not in this window (gone out of it, or compacted away) is dropped;
        // of the rest, the newest segments' folds up to the budget are kept.
        let newest = kept
            .into_iter()
            .map(|(id, f)| (max_times.get(&id).copied().flatten(), id, f))
            .collect();
        // (What the framework rows keep counts against the same budget.)
        let kept_bytes;
        (self.folds, kept_bytes) = keep_newest(newest, self.budget_beside(0));
        self.last = LastScan {
            reused,
            read,
            stale,
            kept_bytes,
        };
        Ok(total)
    }
}

/// `fold` with the rows of `segments` in the window folded in.
pub(super) async fn read_into(
    mut fold: ScanFold,
    ctx: &SessionContext,
    basis: &ScanBasis<'_>,
    segments: Vec<Segment>,
    (from_ns, to_ns): (i64, i64),
    columns: &[&str],
) -> Result<ScanFold> {
    let scan =
        dictionary_scan::scan_segments(ctx, Table::Metrics, columns, from_ns, to_ns, segments);
    if let Some(mut batches) = scan {
        while let Some(b) = batches.next().await {
            let b = b.map_err(|source| AnalyzeError::Segments { source })?;
            fold.fold(basis, &b, q::METRIC_SCAN.path)?;
        }
    }
    Ok(fold)
}

/// Of `segments` (each with its newest time, its id, and what is kept of it with its
/// bytes), the newest kept up to `budget_bytes`; and the bytes kept.
pub(super) fn keep_newest<T>(
    mut segments: Vec<(Option<i64>, SegmentId, (T, usize))>,
    budget_bytes: usize,
) -> (HashMap<SegmentId, (T, usize)>, usize) {
    segments.sort_by(|a, b| (b.0, &b.1).cmp(&(a.0, &a.1)));
    let mut kept_bytes = 0;
    let kept = segments
        .into_iter()
        .filter_map(|(_, id, (t, bytes))| {
            (kept_bytes + bytes <= budget_bytes).then(|| {
                kept_bytes += bytes;
                (id, (t, bytes))
            })
        })
        .collect();
    (kept, kept_bytes)
}

/// Whether all of `s`'s rows lie in the window (so what was read of it holds whole).
pub(super) fn lies_inside(s: &Segment, (from_ns, to_ns): (i64, i64)) -> bool {
    s.min_time_ns.is_some_and(|t| t >= from_ns) && s.max_time_ns.is_some_and(|t| t <= to_ns)
}

pub(super) fn id_of(s: &Segment) -> SegmentId {
    (s.path.clone(), s.rows, s.bytes)
}
