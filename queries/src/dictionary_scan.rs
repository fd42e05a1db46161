//! Reading a few columns of a stored table's rows in a time range straight from its
//! Parquet segments, with strings as dictionaries (`Dictionary(Int32, Utf8)`): for a scan
//! that reads every row of its window and only groups the rows by their key columns (the
//! analysis' one scan of the metric samples, `symptoms/metric_scan.sql`). The Parquet
//! reader hands a dictionary-encoded column chunk over as its dictionary and integer keys,
//! so the strings of 100M rows are neither decoded nor compared; DataFusion's reader (the
//! session's tables) materializes every one of them.
//!
//! What it returns is what `SELECT <columns> FROM <table> WHERE <time> >= $from AND
//! <time> <= $to` returns, in another string layout and in no particular order; a column
//! a segment lacks reads as NULL, as the session's tables read it.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, new_null_array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit};
use arrow::error::ArrowError;
use datafusion::datasource::physical_plan::ParquetFileReaderFactory;
use datafusion::datasource::physical_plan::parquet::DefaultParquetFileReaderFactory;
use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;
use datafusion::prelude::SessionContext;
use futures::TryStreamExt;
use parquet::arrow::ParquetRecordBatchStreamBuilder;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, RowFilter,
};
use parquet::arrow::async_reader::AsyncFileReader;
use tokio::sync::mpsc;
use whyslow_schemas::Table;

use crate::error::QueryError;
use crate::segment_table::{SegmentTable, locate, partitioned_file};
use crate::segments::Segment;

/// Rows per batch handed over: large, since the reader of a scan folds runs of rows.
const BATCH_ROWS: usize = 64 * 1024;

/// The batches of one scan, as the segments' readers produce them.
pub struct DictionaryBatches {
    /// Each batch with the index of its segment in the list the scan was given.
    rx: mpsc::Receiver<Result<(usize, RecordBatch), QueryError>>,
}

impl DictionaryBatches {
    /// The next batch; `None` once every segment has been read (or after an error).
    pub async fn next(&mut self) -> Option<Result<RecordBatch, QueryError>> {
        Some(self.rx.recv().await?.map(|(_, b)| b))
    }

    /// The next batch with the index of its segment in the list given to
    /// [`scan_segments`] (the batches of one segment come in order, those of different
    /// segments interleaved).
    pub async fn next_of_segment(&mut self) -> Option<Result<(usize, RecordBatch), QueryError>> {
        self.rx.recv().await
    }
}

/// Starts reading `columns` of the rows of `table` whose time column lies in
/// [`from_ns`, `to_ns`], from the segments of the session's table `table`, on as many tasks
/// as the session has target partitions. `None` where that table does not read a store's
/// segments (an in-memory table, as in tests) or has no time column: the caller then runs
/// its SQL instead.
pub async fn scan(
    ctx: &SessionContext,
    table: Table,
    columns: &[&str],
    from_ns: i64,
    to_ns: i64,
) -> Result<Option<DictionaryBatches>, QueryError> {
    let Some(segments) = segments_overlapping(ctx, table, from_ns, to_ns).await? else {
        return Ok(None);
    };
    Ok(scan_segments(ctx, table, columns, from_ns, to_ns, segments))
}

/// The segments of the session's table `table` that may hold rows in [`from_ns`,
/// `to_ns`], as [`scan`] reads them; `None` where that table does not read a store's
/// segments or has no time column.
pub async fn segments_overlapping(
    ctx: &SessionContext,
    table: Table,
    from_ns: i64,
    to_ns: i64,
) -> Result<Option<Vec<Segment>>, QueryError> {
    let provider = ctx
        .table_provider(table.name())
        .await
        .map_err(QueryError::Plan)?;
    if table.time_column().is_none() {
        return Ok(None);
    }
    Ok(provider.as_ref().downcast_ref::<SegmentTable>().map(|t| {
        t.segments_overlapping(from_ns, to_ns)
            .into_iter()
            .cloned()
            .collect()
    }))
}

/// Starts reading, as [`scan`] does, the rows in [`from_ns`, `to_ns`] of the given
/// `segments` of `table` (some of those [`segments_overlapping`] lists: a reader that
/// kept what it folded of the others reads only the rest); `None` where `table` has no
/// time column.
pub fn scan_segments(
    ctx: &SessionContext,
    table: Table,
    columns: &[&str],
    from_ns: i64,
    to_ns: i64,
    segments: Vec<Segment>,
) -> Option<DictionaryBatches> {
    let time = table.time_column()?;
    let mut segments: Vec<(usize, Segment)> = segments.into_iter().enumerate().collect();
    // Largest first, so that the tasks finish together.
    segments.sort_by_key(|(_, s)| std::cmp::Reverse(s.bytes));
    let workers = ctx
        .copied_config()
        .target_partitions()
        .clamp(1, segments.len().max(1));
    let job = Arc::new(Job {
        queue: Mutex::new(segments.into()),
        output: output_schema(&table.schema(), columns),
        time,
        from_ns,
        to_ns,
        runtime: ctx.runtime_env(),
    });
    let (tx, rx) = mpsc::channel(2 * workers);
    for _ in 0..workers {
        let (job, tx) = (job.clone(), tx.clone());
        tokio::spawn(async move {
            while let Some((index, segment)) = job.next_segment() {
                match job.read(index, &segment, &tx).await {
                    Ok(true) => {}
                    // The reader is gone: nothing more to do.
                    Ok(false) => return,
                    Err(e) => {
                        let _ = tx.send(Err(e)).await;
                        return;
                    }
                }
            }
        });
    }
    Some(DictionaryBatches { rx })
}

/// What every task of one scan shares.
struct Job {
    /// The segments not yet taken by a task, with their index in the scan's list.
    queue: Mutex<VecDeque<(usize, Segment)>>,
    /// The columns handed over, in the order asked for.
    output: SchemaRef,
    time: &'static str,
    from_ns: i64,
    to_ns: i64,
    runtime: Arc<RuntimeEnv>,
}

impl Job {
    fn next_segment(&self) -> Option<(usize, Segment)> {
        // A task that panicked while holding the lock poisoned it: the others stop too.
        self.queue.lock().ok()?.pop_front()
    }

    /// Sends the segment's rows in the window as batches of [`Job::output`]; `false`
    /// where the receiver has gone.
    async fn read(
        &self,
        index: usize,
        segment: &Segment,
        tx: &mpsc::Sender<Result<(usize, RecordBatch), QueryError>>,
    ) -> Result<bool, QueryError> {
        let path = segment.path.display().to_string();
        let parquet = |source| QueryError::Segment {
            path: path.clone(),
            source,
        };
        let (url, _) = locate(&segment.path).map_err(QueryError::Execution)?;
        let store = self
            .runtime
            .object_store(&url)
            .map_err(QueryError::Execution)?;
        let file = partitioned_file(segment).map_err(QueryError::Execution)?;
        // (As DataFusion's own reader holds it: the reader traits are implemented for
        // this box.)
        let mut reader: Box<dyn AsyncFileReader> = DefaultParquetFileReaderFactory::new(store)
            .create_reader(0, file, None, &ExecutionPlanMetricsSet::new())
            .map_err(QueryError::Execution)?;
        let footer = reader.get_metadata(None).await.map_err(parquet)?;
        let stored =
            ArrowReaderMetadata::try_new(footer, ArrowReaderOptions::new()).map_err(parquet)?;
        let hint = Arc::new(Schema::new_with_metadata(
            stored
                .schema()
                .fields()
                .iter()
                .map(|f| as_dictionary(f))
                .collect::<Vec<_>>(),
            stored.schema().metadata().clone(),
        ));
        let metadata = ArrowReaderMetadata::try_new(
            stored.metadata().clone(),
            ArrowReaderOptions::new().with_schema(hint),
        )
        .map_err(parquet)?;
        let file_schema = metadata.schema().clone();
        let mut builder = ParquetRecordBatchStreamBuilder::new_with_metadata(reader, metadata)
            .with_batch_size(BATCH_ROWS);
        let roots = self
            .output
            .fields()
            .iter()
            .filter_map(|f| file_schema.index_of(f.name()).ok());
        let projection = ProjectionMask::roots(builder.parquet_schema(), roots);
        let inside = segment.min_time_ns.is_some_and(|t| t >= self.from_ns)
            && segment.max_time_ns.is_some_and(|t| t <= self.to_ns);
        if !inside {
            // Rows outside the window are dropped on the time column alone, before the
            // others are decoded.
            let Ok(t) = file_schema.index_of(self.time) else {
                // No time column: no row is in any window.
                return Ok(true);
            };
            let mask = ProjectionMask::roots(builder.parquet_schema(), [t]);
            let (from, to) = (self.from_ns, self.to_ns);
            let keep =
                ArrowPredicateFn::new(mask, move |b: RecordBatch| within(b.column(0), from, to));
            builder = builder.with_row_filter(RowFilter::new(vec![Box::new(keep)]));
        }
        let mut stream = builder
            .with_projection(projection)
            .build()
            .map_err(parquet)?;
        while let Some(batch) = stream.try_next().await.map_err(parquet)? {
            let batch = conform(&batch, &self.output).map_err(|source| QueryError::Segment {
                path: path.clone(),
                source: source.into(),
            })?;
            if tx.send(Ok((index, batch))).await.is_err() {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

/// A string field as a dictionary of strings; any other as it is.
fn as_dictionary(f: &Field) -> Field {
    match f.data_type() {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => f.clone().with_data_type(
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
        ),
        _ => f.clone(),
    }
}

/// The schema of what a scan hands over: `columns` of the table, strings as dictionaries
/// (a name the table lacks reads as NULL text).
fn output_schema(table: &Schema, columns: &[&str]) -> SchemaRef {
    let fields: Vec<Field> = columns
        .iter()
        .map(|c| match table.field_with_name(c) {
            Ok(f) => as_dictionary(f),
            Err(_) => as_dictionary(&Field::new(*c, DataType::Utf8, true)),
        })
        .collect();
    Arc::new(Schema::new(fields))
}

/// `batch`'s columns in the order and types of `output`: a column the segment lacks is
/// NULL, one stored in another type is cast.
fn conform(batch: &RecordBatch, output: &SchemaRef) -> Result<RecordBatch, ArrowError> {
    let columns = output
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) if c.data_type() == f.data_type() => Ok(c.clone()),
            Some(c) => cast(c, f.data_type()),
            None => Ok(new_null_array(f.data_type(), batch.num_rows())),
        })
        .collect::<Result<Vec<ArrayRef>, ArrowError>>()?;
    RecordBatch::try_new_with_options(
        output.clone(),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows())),
    )
}

/// Which times of a timestamp column lie in [`from_ns`, `to_ns`] (NULL: none).
fn within(times: &ArrayRef, from_ns: i64, to_ns: i64) -> Result<BooleanArray, ArrowError> {
    let per_unit: i64 = match times.data_type() {
        DataType::Timestamp(TimeUnit::Second, _) => 1_000_000_000,
        DataType::Timestamp(TimeUnit::Millisecond, _) => 1_000_000,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 1_000,
        DataType::Timestamp(TimeUnit::Nanosecond, _) => 1,
        other => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "the time column is {other}, not a timestamp"
            )));
        }
    };
    // A timestamp cast to Int64 is its stored count of units.
    let raw = cast(times, &DataType::Int64)?;
    Ok(raw
        .as_primitive::<Int64Type>()
        .iter()
        .map(|t| {
            Some(t.is_some_and(|t| {
                let ns = t.saturating_mul(per_unit);
                ns >= from_ns && ns <= to_ns
            }))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::TimestampMicrosecondArray;

    #[test]
    fn times_in_the_window_are_kept_bounds_included_and_null_dropped() {
        let a: ArrayRef = Arc::new(
            TimestampMicrosecondArray::from(vec![Some(1), Some(2), None, Some(3), Some(4)])
                .with_timezone("UTC"),
        );
        let kept = within(&a, 2_000, 3_000).unwrap();
        assert_eq!(
            kept.iter().collect::<Vec<_>>(),
            [false, true, false, true, false].map(Some)
        );
        let text: ArrayRef = Arc::new(arrow::array::StringArray::from(vec!["x"]));
        assert!(within(&text, 0, 1).is_err());
    }

    #[test]
    fn output_columns_come_in_the_order_asked_with_strings_as_dictionaries() {
        let s = output_schema(&Table::Metrics.schema(), &["value", "node", "nonesuch"]);
        let names: Vec<&str> = s.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["value", "node", "nonesuch"]);
        assert_eq!(s.field(0).data_type(), &DataType::Float64);
        assert!(matches!(s.field(1).data_type(), DataType::Dictionary(_, _)));
        assert!(matches!(s.field(2).data_type(), DataType::Dictionary(_, _)));
    }
}
