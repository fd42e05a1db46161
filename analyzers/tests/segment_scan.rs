//! The one scan of the metric samples reads a store's segments straight from Parquet, key
//! columns as dictionaries (`whyslow_queries::dictionary_scan`): over the same rows it
//! must find what the query `symptoms/metric_scan.sql` finds, for a whole store and for a
//! window that cuts segments.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use whyslow_analyzers::analyze::{Scanned, scan_metrics};
use whyslow_analyzers::columns::Columns;
use whyslow_analyzers::command::ingest_dir;
use whyslow_analyzers::sql::ts_param;
use whyslow_queries::dictionary_scan;
use whyslow_schemas::Table;

/// The session's tables as in-memory tables of the same rows: the scan then runs the
/// query.
async fn in_memory_copy(store: &SessionContext) -> SessionContext {
    let ctx = SessionContext::new_with_config(whyslow_queries::session_config());
    for t in Table::ALL {
        let df = store.table(t.name()).await.unwrap();
        let schema = Arc::new(df.schema().as_arrow().clone());
        let rows = df.collect().await.unwrap();
        let table = MemTable::try_new(schema, vec![rows]).unwrap();
        ctx.register_table(t.name(), Arc::new(table)).unwrap();
    }
    whyslow_queries::register_views(&ctx).await.unwrap();
    ctx
}

async fn scanned(
    ctx: &SessionContext,
    from: i64,
    to: i64,
    candidates: &BTreeSet<(Option<String>, Option<String>)>,
) -> Scanned {
    let params = [("from", ts_param(from)), ("to", ts_param(to))];
    scan_metrics(ctx, &params, candidates).await.unwrap()
}

/// The rows of one query.
async fn rows(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql).await.unwrap().collect().await.unwrap()
}

/// Asserts the two scans equal; returns how many GPU-minute means they found.
fn assert_same(direct: &Scanned, query: &Scanned, what: &str) -> usize {
    assert!(direct.extents.num_rows() > 0, "{what}: no series");
    assert_eq!(direct.extents, query.extents, "{what}: series extents");
    assert_eq!(
        direct.utilization_batch().unwrap(),
        query.utilization_batch().unwrap(),
        "{what}: utilization"
    );
    // GPU means are float sums, added in the order the rows came: equal to rounding.
    let (a, b) = (
        direct.activity_batch().unwrap(),
        query.activity_batch().unwrap(),
    );
    assert_eq!(a.num_rows(), b.num_rows(), "{what}: GPU activity rows");
    let mean = |r: &RecordBatch| {
        r.column(r.num_columns() - 1)
            .as_primitive::<Float64Type>()
            .clone()
    };
    let (ma, mb) = (mean(&a), mean(&b));
    for i in 0..a.num_rows() {
        assert!((ma.value(i) - mb.value(i)).abs() <= 1e-9 * mb.value(i).abs().max(1.0));
    }
    let keys = |r: &RecordBatch| {
        r.project(&(0..r.num_columns() - 1).collect::<Vec<_>>())
            .unwrap()
    };
    assert_eq!(keys(&a), keys(&b), "{what}: GPU activity keys");
    a.num_rows()
}

#[test]
fn segments_read_as_dictionaries_give_what_the_query_gives() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut gpu_minutes = 0;
    for scenario in ["straggler-rank", "combo-preemption-thermal"] {
        let dir = whyslow_fixtures::committed_scenarios_dir().join(scenario);
        let store = tempfile::tempdir().unwrap();
        ingest_dir(&dir, store.path()).unwrap();
        rt.block_on(async {
            let on_store = whyslow_queries::open_session(store.path()).await.unwrap();
            let in_memory = in_memory_copy(&on_store).await;
            // The store's table is read from its segments, the in-memory one by the query.
            let direct = |ctx: &SessionContext| {
                let ctx = ctx.clone();
                async move {
                    let scan = dictionary_scan::scan(&ctx, Table::Metrics, &["node"], 0, i64::MAX)
                        .await
                        .unwrap();
                    scan.is_some()
                }
            };
            assert!(direct(&on_store).await);
            assert!(!direct(&in_memory).await);
            let bounds = rows(
                &on_store,
                "SELECT min(time) AS lo, max(time) AS hi FROM metrics",
            )
            .await;
            let c = Columns::new(&bounds[0], "bounds");
            let (lo, hi) = (
                c.times("lo").unwrap()[0].unwrap(),
                c.times("hi").unwrap()[0].unwrap(),
            );
            let mut candidates = BTreeSet::new();
            let sql = "SELECT DISTINCT namespace, workload FROM metrics WHERE workload IS NOT NULL";
            for w in &rows(&on_store, sql).await {
                let c = Columns::new(w, "workloads");
                let (ns, wl) = (
                    c.strings("namespace").unwrap(),
                    c.strings("workload").unwrap(),
                );
                candidates.extend(ns.into_iter().zip(wl));
            }
            // The whole store, then a window that starts and ends inside segments (its
            // bounds not on a whole microsecond, as an analysis' window may be).
            let third = (hi - lo) / 3;
            for (from, to, what) in [
                (lo, hi, "whole store"),
                (lo + third + 1, hi - third - 1, "middle third"),
            ] {
                let what = format!("{scenario}, {what}");
                let direct = scanned(&on_store, from, to, &candidates).await;
                let query = scanned(&in_memory, from, to, &candidates).await;
                gpu_minutes += assert_same(&direct, &query, &what);
            }
        });
    }
    assert!(gpu_minutes > 0, "no GPU activity compared");
}
