//! A DataFusion table over exactly the committed Parquet segments of one store table.
//!
//! Segments whose manifest min/max time lies outside the range the query's filters allow
//! on the table's time column are skipped before any file is opened; the rest are scanned
//! by DataFusion's Parquet reader, which keeps projection, row-group and page pruning and
//! predicate pushdown. A small table can instead be decoded once and served from memory
//! ([`SegmentTable::keep_in_memory`]): for a session that reads it many times over, as an
//! analysis reads `events` in most of its queries.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use chrono::{TimeZone, Utc};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{Statistics, project_schema};
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder, ParquetSource};
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::object_store::ObjectMeta;
use datafusion::object_store::path::Path as ObjectPath;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::{ExecutionPlan, collect};
use whyslow_schemas::Table;

use crate::segments::Segment;
use crate::time_range::TimeRange;

/// One store table as a DataFusion table: its schema and its committed segments.
#[derive(Debug)]
pub struct SegmentTable {
    table: Table,
    schema: SchemaRef,
    segments: Vec<Segment>,
    /// Every row of the segments, once [`SegmentTable::keep_in_memory`] decoded them.
    in_memory: OnceLock<MemTable>,
}

impl SegmentTable {
    /// A table over `segments` (a snapshot: segments committed later are not seen).
    pub fn new(table: Table, segments: Vec<Segment>) -> Self {
        SegmentTable {
            table,
            schema: read_schema(&table.schema()),
            segments,
            in_memory: OnceLock::new(),
        }
    }

    /// The rows of all its segments, as their manifests count them.
    fn rows(&self) -> u64 {
        self.segments.iter().map(|s| s.rows).sum()
    }

    /// Decodes every row of the table once, if it has at most `max_rows`, and serves every
    /// later scan from memory (sessions are snapshots: the rows cannot change). A scan from
    /// memory skips no segment, row group or page, so this pays where the table is small
    /// and read many times over. Returns whether the rows are in memory.
    pub async fn keep_in_memory(&self, state: &dyn Session, max_rows: u64) -> Result<bool> {
        if self.in_memory.get().is_some() {
            return Ok(true);
        }
        if self.rows() > max_rows {
            return Ok(false);
        }
        let all: Vec<&Segment> = self.segments.iter().collect();
        let batches = match self.parquet_plan(state, &all, None, None).await? {
            Some(plan) => collect(plan, state.task_ctx()).await?,
            None => Vec::new(),
        };
        // As many partitions as the session runs at once, so that scans stay parallel.
        let n = state.config().target_partitions().max(1);
        let mut partitions: Vec<Vec<_>> = vec![Vec::new(); n];
        for (i, b) in batches.into_iter().enumerate() {
            partitions[i % n].push(b);
        }
        let table = MemTable::try_new(self.schema.clone(), partitions)?;
        // Another caller may have loaded it meanwhile: either copy holds the same rows.
        let _ = self.in_memory.set(table);
        Ok(true)
    }

    /// The segments a scan with `filters` must read.
    pub fn segments_for(&self, filters: &[Expr]) -> Vec<&Segment> {
        match self.table.time_column() {
            Some(c) => self.segments_in(TimeRange::from_filters(c, filters)),
            None => self.segments_in(TimeRange::default()),
        }
    }

    /// The segments that may hold rows with a time in [`from_ns`, `to_ns`].
    pub fn segments_overlapping(&self, from_ns: i64, to_ns: i64) -> Vec<&Segment> {
        self.segments_in(TimeRange {
            lo: Some(from_ns),
            hi: Some(to_ns),
        })
    }

    /// DataFusion's Parquet scan of `chosen`; `None` when there is no segment to read.
    async fn parquet_plan(
        &self,
        state: &dyn Session,
        chosen: &[&Segment],
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(first) = chosen.first() else {
            return Ok(None);
        };
        let rows: u64 = chosen.iter().map(|s| s.rows).sum();
        let bytes: u64 = chosen.iter().map(|s| s.bytes).sum();
        let files = chosen
            .iter()
            .map(|s| Ok((s.bytes, partitioned_file(s)?)))
            .collect::<Result<Vec<_>>>()?;
        let groups = balanced_groups(files, state.config().target_partitions());
        let statistics = Statistics::new_unknown(&self.schema)
            .with_num_rows(Precision::Exact(
                usize::try_from(rows).unwrap_or(usize::MAX),
            ))
            .with_total_byte_size(Precision::Inexact(
                usize::try_from(bytes).unwrap_or(usize::MAX),
            ));
        // Every segment of a store is under its root: one object store for them all.
        let (store_url, _) = locate(&first.path)?;
        let source = Arc::new(ParquetSource::new(self.schema.clone()));
        let config = FileScanConfigBuilder::new(store_url, source)
            .with_file_groups(groups)
            .with_statistics(statistics)
            .with_projection_indices(projection.cloned())?
            .with_limit(limit)
            .build();
        let format = ParquetFormat::new().with_options(state.table_options().parquet.clone());
        format.create_physical_plan(state, config).await.map(Some)
    }

    fn segments_in(&self, range: TimeRange) -> Vec<&Segment> {
        self.segments
            .iter()
            .filter(|s| range.overlaps(s.min_time_ns, s.max_time_ns))
            .collect()
    }
}

/// Keeps the session's table `table` in memory ([`SegmentTable::keep_in_memory`]) when it
/// reads a store's segments and holds at most `max_rows`; returns whether its rows are in
/// memory. Every view of the session that reads the table reads them there too (views
/// hold the table itself, not its name).
pub async fn keep_in_memory(
    ctx: &datafusion::prelude::SessionContext,
    table: Table,
    max_rows: u64,
) -> std::result::Result<bool, crate::QueryError> {
    let provider = ctx
        .table_provider(table.name())
        .await
        .map_err(crate::QueryError::Plan)?;
    let Some(segments) = provider.as_ref().downcast_ref::<SegmentTable>() else {
        return Ok(false);
    };
    segments
        .keep_in_memory(&ctx.state(), max_rows)
        .await
        .map_err(crate::QueryError::Plan)
}

/// The schema a table is read with: its own, with strings as `Utf8View` (the Parquet
/// reader then points into the pages it decoded instead of copying every string, and
/// DataFusion groups, joins and sorts on views; a day of a 1000-node fleet groups 1.3-1.6x
/// faster). Strings inside maps and lists stay `Utf8`.
fn read_schema(schema: &SchemaRef) -> SchemaRef {
    use arrow::datatypes::{DataType, Field, Schema};
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| match f.data_type() {
            DataType::Utf8 => f.as_ref().clone().with_data_type(DataType::Utf8View),
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Where a segment is for DataFusion: the object store it is in (the local filesystem,
/// or the bucket of an `s3://` or `gs://` URL) and its path there.
pub(crate) fn locate(path: &std::path::Path) -> Result<(ObjectStoreUrl, ObjectPath)> {
    let unusable = |e: &dyn std::fmt::Display| {
        DataFusionError::Execution(format!(
            "segment path {} is not usable: {e}",
            path.display()
        ))
    };
    let bucket = path.to_str().and_then(|text| {
        let (scheme, rest) = text.split_once("://")?;
        matches!(scheme, "s3" | "s3a" | "gs").then_some((scheme, rest))
    });
    match bucket {
        Some((scheme, rest)) => {
            let (bucket, key) = rest.split_once('/').unwrap_or((rest, ""));
            let url = ObjectStoreUrl::parse(format!("{scheme}://{bucket}"))?;
            let key = ObjectPath::parse(key).map_err(|e| unusable(&e))?;
            Ok((url, key))
        }
        None => Ok((
            ObjectStoreUrl::local_filesystem(),
            ObjectPath::from_absolute_path(path).map_err(|e| unusable(&e))?,
        )),
    }
}

pub(crate) fn partitioned_file(s: &Segment) -> Result<PartitionedFile> {
    let (_, location) = locate(&s.path)?;
    Ok(PartitionedFile::new_from_meta(ObjectMeta {
        location,
        // Segments are immutable once committed, so a fixed time is a valid cache key.
        last_modified: Utc.timestamp_nanos(0),
        size: s.bytes,
        e_tag: None,
        version: None,
    }))
}

/// Spreads files over at most `n` groups of about equal bytes (largest first, each to
/// the lightest group).
fn balanced_groups(mut files: Vec<(u64, PartitionedFile)>, n: usize) -> Vec<FileGroup> {
    let n = n.clamp(1, files.len().max(1));
    files.sort_by_key(|f| std::cmp::Reverse(f.0));
    let mut groups: Vec<(u64, Vec<PartitionedFile>)> = (0..n).map(|_| (0, Vec::new())).collect();
    for (bytes, f) in files {
        if let Some(g) = groups.iter_mut().min_by_key(|g| g.0) {
            g.0 += bytes;
            g.1.push(f);
        }
    }
    groups
        .into_iter()
        .filter(|g| !g.1.is_empty())
        .map(|g| FileGroup::new(g.1))
        .collect()
}

#[async_trait]
impl TableProvider for SegmentTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        // Inexact: the filters prune segments and row groups here, and DataFusion still
        // applies them to the rows.
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(rows) = self.in_memory.get() {
            // The filters stay above the scan (pushdown is inexact).
            return rows.scan(state, projection, filters, limit).await;
        }
        let chosen = self.segments_for(filters);
        match self.parquet_plan(state, &chosen, projection, limit).await? {
            Some(plan) => Ok(plan),
            None => {
                let schema = project_schema(&self.schema, projection)?;
                Ok(Arc::new(EmptyExec::new(schema)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};
    use datafusion::scalar::ScalarValue;

    fn seg(name: &str, bytes: u64, min: Option<i64>, max: Option<i64>) -> Segment {
        Segment {
            path: format!("/s/{name}.parquet").into(),
            rows: 1,
            bytes,
            min_time_ns: min,
            max_time_ns: max,
        }
    }

    #[test]
    fn strings_are_read_as_views_and_other_columns_as_stored() {
        use arrow::datatypes::DataType;
        for table in Table::ALL {
            let stored = table.schema();
            let read = SegmentTable::new(table, Vec::new()).schema();
            assert_eq!(read.fields().len(), stored.fields().len());
            for (r, s) in read.fields().iter().zip(stored.fields()) {
                assert_eq!((r.name(), r.is_nullable()), (s.name(), s.is_nullable()));
                let want = match s.data_type() {
                    DataType::Utf8 => &DataType::Utf8View,
                    other => other,
                };
                assert_eq!(r.data_type(), want, "{}.{}", table.name(), s.name());
            }
        }
    }

    #[test]
    fn time_filters_skip_segments_outside_the_range() {
        let t = SegmentTable::new(
            Table::Events,
            vec![
                seg("a", 1, Some(0), Some(9)),
                seg("b", 1, Some(10), Some(19)),
                seg("c", 1, None, None),
            ],
        );
        let at = |v| {
            lit(ScalarValue::TimestampNanosecond(
                Some(v),
                Some("UTC".into()),
            ))
        };
        let names = |f: &[Expr]| -> Vec<String> {
            t.segments_for(f)
                .iter()
                .map(|s| s.path.display().to_string())
                .collect()
        };
        assert_eq!(
            names(&[col("time").gt_eq(at(12))]),
            ["/s/b.parquet", "/s/c.parquet"]
        );
        assert_eq!(names(&[]).len(), 3);
        // dead_letters prune on ingest_time, not time.
        let d = SegmentTable::new(Table::DeadLetters, vec![seg("a", 1, Some(0), Some(9))]);
        assert_eq!(d.segments_for(&[col("time").gt_eq(at(12))]).len(), 1);
        assert_eq!(d.segments_for(&[col("ingest_time").gt_eq(at(12))]).len(), 0);
    }

    #[test]
    fn groups_balance_bytes() {
        let files = [5u64, 4, 3, 3, 1]
            .iter()
            .map(|b| {
                (
                    *b,
                    partitioned_file(&seg(&b.to_string(), *b, None, None)).unwrap(),
                )
            })
            .collect();
        let groups = balanced_groups(files, 2);
        assert_eq!(groups.len(), 2);
        let sizes: Vec<u64> = groups
            .iter()
            .map(|g| g.iter().map(|f| f.object_meta.size).sum())
            .collect();
        assert_eq!(sizes, [8, 8]);
        assert_eq!(balanced_groups(Vec::new(), 4).len(), 0);
    }
}
