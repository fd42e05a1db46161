//! The session over real Parquet segments: only committed segments are read, time filters
//! skip segments by their manifest range, older files with fewer columns still read.

mod fixture;

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::Schema;
use parquet::arrow::ArrowWriter;
use whyslow_queries::{
    Params, QueryOutput, Segment, SegmentList, open_session, run_read_only, session_over,
    session_over_runtime,
};
use whyslow_schemas::Table;
use whyslow_store::Store;

fn one(out: Vec<QueryOutput>) -> QueryOutput {
    assert_eq!(out.len(), 1);
    out.into_iter().next().unwrap()
}

fn text(out: &QueryOutput) -> String {
    arrow::util::pretty::pretty_format_batches(&out.batches)
        .unwrap()
        .to_string()
}

async fn count(ctx: &datafusion::prelude::SessionContext, sql: &str) -> i64 {
    let out = one(run_read_only(ctx, sql, &Params::new()).await.unwrap());
    let col = out.batches[0].column(0);
    col.as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .unwrap()
        .value(0)
}

/// The files the physical plan of `sql` reads.
async fn files_read(ctx: &datafusion::prelude::SessionContext, sql: &str) -> usize {
    let out = one(
        run_read_only(ctx, &format!("EXPLAIN {sql}"), &Params::new())
            .await
            .unwrap(),
    );
    let plan = text(&out);
    let physical: String = plan
        .lines()
        .skip_while(|l| !l.contains("physical_plan"))
        .collect();
    physical.matches(".parquet").count()
}

#[tokio::test]
async fn time_filters_skip_segments_outside_the_range() {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_store(dir.path());
    let store = Store::open(dir.path()).unwrap();
    assert_eq!(
        store.segments(Table::Events).len(),
        2,
        "the fixture commits events twice"
    );
    let ctx = open_session(dir.path()).await.unwrap();
    assert_eq!(files_read(&ctx, "SELECT event_id FROM events").await, 2);
    assert_eq!(
        files_read(
            &ctx,
            "SELECT event_id FROM events WHERE time >= '2026-11-29T10:10:00Z'"
        )
        .await,
        1
    );
    assert_eq!(
        files_read(
            &ctx,
            "SELECT event_id FROM events WHERE time < '2026-11-29T10:09:00Z'"
        )
        .await,
        1
    );
    assert_eq!(
        files_read(
            &ctx,
            "SELECT event_id FROM events WHERE time > '2026-11-30T00:00:00Z'"
        )
        .await,
        0
    );
    // Through a view too.
    assert_eq!(
        files_read(
            &ctx,
            "SELECT * FROM timeline WHERE time >= '2026-11-29T10:10:00Z'"
        )
        .await,
        1
    );
    // And the answers are right either way.
    assert_eq!(
        count(
            &ctx,
            "SELECT count(*) FROM events WHERE time >= '2026-11-29T10:10:00Z'"
        )
        .await,
        7
    );
    assert_eq!(
        count(
            &ctx,
            "SELECT count(*) FROM events WHERE time > '2026-11-30T00:00:00Z'"
        )
        .await,
        0
    );
}

#[tokio::test]
async fn files_the_manifest_does_not_list_are_never_read() {
    let dir = tempfile::tempdir().unwrap();
    fixture::write_store(dir.path());
    let store = Store::open(dir.path()).unwrap();
    let seg = &store.segments(Table::Events)[0];
    // An orphan (a crashed writer's leftover) beside the committed segment.
    std::fs::copy(&seg.path, seg.path.with_file_name("orphan-copy.parquet")).unwrap();
    let ctx = open_session(dir.path()).await.unwrap();
    assert_eq!(count(&ctx, "SELECT count(*) FROM events").await, 12);
    assert_eq!(
        count(
            &ctx,
            "SELECT count(DISTINCT event_id) FROM events WHERE kind <> ''"
        )
        .await,
        12
    );
}

/// A table kept in memory answers every query as its segments do, through views too, and
/// reads no file after; a table over the row limit stays on its segments.
#[tokio::test]
async fn a_table_kept_in_memory_answers_as_its_segments_do() {
    use whyslow_queries::segment_table::keep_in_memory;
    let dir = tempfile::tempdir().unwrap();
    fixture::write_store(dir.path());
    let queries = [
        "SELECT event_id, kind, node, attrs['reason'] AS r FROM events ORDER BY event_id",
        "SELECT event_id FROM events WHERE time >= '2026-11-29T10:10:00Z' ORDER BY event_id",
        "SELECT * FROM timeline ORDER BY time, event_id",
        "SELECT count(*) AS n, min(time) AS t FROM events WHERE kind <> ''",
    ];
    let on_segments = open_session(dir.path()).await.unwrap();
    let mut expected = Vec::new();
    for q in queries {
        expected.push(text(&one(run_read_only(&on_segments, q, &Params::new())
            .await
            .unwrap())));
    }

    // Over the limit (12 rows): nothing changes.
    assert!(
        !keep_in_memory(&on_segments, Table::Events, 11)
            .await
            .unwrap()
    );
    assert_eq!(
        files_read(&on_segments, "SELECT event_id FROM events").await,
        2
    );

    let in_memory = open_session(dir.path()).await.unwrap();
    assert!(keep_in_memory(&in_memory, Table::Events, 12).await.unwrap());
    // Kept once: asking again keeps what is there.
    assert!(keep_in_memory(&in_memory, Table::Events, 0).await.unwrap());
    assert_eq!(
        files_read(&in_memory, "SELECT event_id FROM events").await,
        0
    );
    assert_eq!(files_read(&in_memory, "SELECT * FROM timeline").await, 0);
    for (q, want) in queries.iter().zip(&expected) {
        let got = text(&one(run_read_only(&in_memory, q, &Params::new())
            .await
            .unwrap()));
        assert_eq!(&got, want, "{q}");
    }
    // A table that reads no store's segments is left as it is.
    let ctx = datafusion::prelude::SessionContext::new();
    ctx.register_batch("events", RecordBatch::new_empty(Table::Events.schema()))
        .unwrap();
    assert!(!keep_in_memory(&ctx, Table::Events, 100).await.unwrap());
}

fn write_parquet(path: &Path, batch: &RecordBatch) {
    let mut w = ArrowWriter::try_new(File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(batch).unwrap();
    w.close().unwrap();
}

#[tokio::test]
async fn a_segment_list_of_plain_parquet_files_reads_and_older_files_lack_columns() {
    let dir = tempfile::tempdir().unwrap();
    let commits = fixture::commits();
    let (table, events) = &commits[1][0];
    assert_eq!(*table, Table::Events);
    let full = dir.path().join("full.parquet");
    write_parquet(&full, events);
    // A file written before `attrs` existed: the column reads as NULL.
    let keep: Vec<usize> = (0..events.num_columns() - 1).collect();
    let older = events.project(&keep).unwrap();
    assert_eq!(older.schema().fields().len(), 16);
    let old = dir.path().join("old.parquet");
    write_parquet(
        &old,
        &RecordBatch::try_new(
            Arc::new(Schema::new(older.schema().fields().clone())),
            older.columns().to_vec(),
        )
        .unwrap(),
    );
    let mut list = SegmentList::default();
    for (path, rows) in [(&full, events.num_rows()), (&old, older.num_rows())] {
        list.push(
            Table::Events,
            Segment {
                path: path.clone(),
                rows: rows as u64,
                bytes: std::fs::metadata(path).unwrap().len(),
                min_time_ns: None,
                max_time_ns: None,
            },
        );
    }
    let ctx = session_over(&list).await.unwrap();
    assert_eq!(count(&ctx, "SELECT count(*) FROM events").await, 14);
    assert_eq!(
        count(&ctx, "SELECT count(*) FROM events WHERE attrs IS NULL").await,
        7
    );
    assert_eq!(
        count(
            &ctx,
            "SELECT count(*) FROM events WHERE attrs['preemptor'] = 'llm/tgi'"
        )
        .await,
        1
    );
    assert_eq!(count(&ctx, "SELECT count(*) FROM metrics").await, 0);
}

#[tokio::test]
async fn sessions_on_one_runtime_share_the_footers_read_and_see_later_commits() {
    use datafusion::execution::runtime_env::RuntimeEnv;
    use whyslow_store::StoreWriter;
    let dir = tempfile::tempdir().unwrap();
    let mut writer = StoreWriter::open(dir.path()).unwrap();
    let mut commits = fixture::commits().into_iter();
    for (table, batch) in commits.next().unwrap() {
        writer.append(table, batch).unwrap();
    }
    writer.commit(&[]).unwrap();
    let runtime = Arc::new(RuntimeEnv::default());
    let footers = || runtime.cache_manager.get_file_metadata_cache().len();
    let first = Store::open(dir.path()).unwrap();
    let ctx = session_over_runtime(&first, runtime.clone()).await.unwrap();
    // (Distinct ids: a bare count is answered from the segments' row counts, no file read.)
    let before = count(&ctx, "SELECT count(DISTINCT event_id) FROM events").await;
    assert_eq!(footers(), 1, "the one events segment's footer is kept");
    drop(ctx);

    for (table, batch) in commits.next().unwrap() {
        writer.append(table, batch).unwrap();
    }
    writer.commit(&[]).unwrap();
    let second = Store::open(dir.path()).unwrap();
    let ctx = session_over_runtime(&second, runtime.clone())
        .await
        .unwrap();
    let after = count(&ctx, "SELECT count(DISTINCT event_id) FROM events").await;
    assert!(before < after, "the second commit adds events");
    // Every event of both commits, once each.
    assert_eq!(after, 12);
    assert_eq!(count(&ctx, "SELECT count(*) FROM events").await, after);
    assert_eq!(
        footers(),
        2,
        "the first segment's footer is reused, the new one kept"
    );
    // The same answer as a session of its own.
    let own = session_over(&second).await.unwrap();
    assert_eq!(
        count(&own, "SELECT count(DISTINCT event_id) FROM events").await,
        after
    );
}
