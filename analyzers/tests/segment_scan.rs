//! The one scan of the metric samples reads a store's segments straight from Parquet, key
//! columns as dictionaries (`whyslow_queries::dictionary_scan`): over the same rows it
//! must find what the query `symptoms/metric_scan.sql` finds, for a whole store and for a
//! window that cuts segments. The live analyzer's scan, which reuses the folds of the
//! segments earlier scans read (`SegmentFolds`), must find what a scan of every segment
//! finds, as the store grows; and so must its read of the framework series, which reuses
//! the rows of those segments.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::RecordBatch;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use whyslow_analyzers::analyze::{
    Scanned, SegmentFolds, read_framework_series, scan_metrics, scan_metrics_keeping,
};
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

/// Ingests one input file into the store at `store`.
fn ingest_one(store: &std::path::Path, file: &std::path::Path) {
    use whyslow_ingest::run::{IngestOptions, ingest};
    let opts = IngestOptions::new(
        store,
        vec![file.display().to_string()],
        whyslow_ingest::Format::Auto,
    );
    ingest(&opts).unwrap();
}

/// `$from` and `$to` of the middle third of the metrics' times: a window that cuts
/// segments.
async fn middle_third(
    ctx: &SessionContext,
) -> [(&'static str, datafusion::scalar::ScalarValue); 2] {
    let bounds = rows(ctx, "SELECT min(time) AS lo, max(time) AS hi FROM metrics").await;
    let c = Columns::new(&bounds[0], "bounds");
    let (lo, hi) = (
        c.times("lo").unwrap()[0].unwrap(),
        c.times("hi").unwrap()[0].unwrap(),
    );
    let third = (hi - lo) / 3;
    [
        ("from", ts_param(lo + third + 1)),
        ("to", ts_param(hi - third - 1)),
    ]
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
    // GPU means are sums of millionths: the same bits whatever order the rows came in.
    let (a, b) = (
        direct.activity_batch().unwrap(),
        query.activity_batch().unwrap(),
    );
    assert_eq!(a, b, "{what}: GPU activity");
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

/// Every input file of a scenario, sorted (its answer key and README left out).
fn input_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if !matches!(
                path.file_name().and_then(|n| n.to_str()),
                Some("truth.json" | "README.md")
            ) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn kept_segment_folds_give_what_a_scan_of_every_segment_gives_as_the_store_grows() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = whyslow_fixtures::committed_scenarios_dir().join("combo-preemption-thermal");
    let store = tempfile::tempdir().unwrap();
    let mut folds = SegmentFolds::default();
    let (mut reused, mut compared) = (0, 0);
    // The scenario's files ingested one at a time: each adds segments, and the pods'
    // workloads change as the Kubernetes records come in.
    for file in input_files(&dir) {
        ingest_one(store.path(), &file);
        rt.block_on(async {
            let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
            let workloads = rows(
                &ctx,
                "SELECT DISTINCT namespace, workload FROM metrics WHERE workload IS NOT NULL",
            )
            .await;
            let mut candidates = BTreeSet::new();
            for w in &workloads {
                let c = Columns::new(w, "workloads");
                let (ns, wl) = (
                    c.strings("namespace").unwrap(),
                    c.strings("workload").unwrap(),
                );
                candidates.extend(ns.into_iter().zip(wl));
            }
            let params = [("from", ts_param(0)), ("to", ts_param(i64::MAX / 2))];
            let kept = scan_metrics_keeping(&ctx, &params, &candidates, Some(&mut folds))
                .await
                .unwrap();
            let every = scan_metrics(&ctx, &params, &candidates).await.unwrap();
            if every.extents.num_rows() == 0 {
                return;
            }
            let what = format!("after {}", file.display());
            assert_same(&kept, &every, &what);
            compared += 1;
            reused += folds.last_scan().reused;
            // Fewer candidates: the folds that kept a dropped one's activity are read again.
            let fewer: BTreeSet<_> = candidates.iter().skip(1).cloned().collect();
            let kept = scan_metrics_keeping(&ctx, &params, &fewer, Some(&mut folds))
                .await
                .unwrap();
            let every = scan_metrics(&ctx, &params, &fewer).await.unwrap();
            assert_same(&kept, &every, &format!("{what}, fewer candidates"));
        });
    }
    assert!(compared >= 3, "only {compared} scans compared");
    assert!(reused > 0, "no fold was reused");
    // A window that cuts segments: those are read, not kept, and give the same.
    rt.block_on(async {
        let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
        let params = middle_third(&ctx).await;
        let none = BTreeSet::new();
        for _ in 0..2 {
            let kept = scan_metrics_keeping(&ctx, &params, &none, Some(&mut folds))
                .await
                .unwrap();
            let every = scan_metrics(&ctx, &params, &none).await.unwrap();
            assert_same(&kept, &every, "middle third");
        }
        // No budget: nothing kept, every scan reads every segment.
        let whole = [("from", ts_param(0)), ("to", ts_param(i64::MAX / 2))];
        let mut unkept = SegmentFolds::with_budget(0);
        for _ in 0..2 {
            let kept = scan_metrics_keeping(&ctx, &whole, &none, Some(&mut unkept))
                .await
                .unwrap();
            let every = scan_metrics(&ctx, &whole, &none).await.unwrap();
            assert_same(&kept, &every, "no budget");
            let scan = unkept.last_scan();
            assert_eq!((scan.reused, scan.kept_bytes), (0, 0));
            assert!(scan.read > 0);
        }
        // A budget of one fold's size or so keeps the newest segments' only.
        let mut some = SegmentFolds::default();
        scan_metrics_keeping(&ctx, &whole, &none, Some(&mut some))
            .await
            .unwrap();
        let all = some.last_scan();
        assert!(all.kept_bytes > 0 && all.read > 1, "{all:?}");
        let mut part = SegmentFolds::with_budget(all.kept_bytes / 2);
        for _ in 0..2 {
            scan_metrics_keeping(&ctx, &whole, &none, Some(&mut part))
                .await
                .unwrap();
        }
        let scan = part.last_scan();
        assert!(scan.kept_bytes <= all.kept_bytes / 2, "{scan:?}");
        assert!(scan.read > 0, "{scan:?}");
    });
}

#[test]
fn kept_framework_rows_give_the_series_a_read_of_every_segment_gives_as_the_store_grows() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // A fine-tuning job's steps per rank, preempted and restored: its series span many
    // segments, and a run's rank changes place.
    let dir = whyslow_fixtures::committed_scenarios_dir().join("combo-preemption-thermal");
    let store = tempfile::tempdir().unwrap();
    let mut kept = SegmentFolds::default();
    let (mut reused, mut compared) = (0, 0);
    let whole = [("from", ts_param(0)), ("to", ts_param(i64::MAX / 2))];
    for file in input_files(&dir) {
        ingest_one(store.path(), &file);
        rt.block_on(async {
            let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
            let from_kept = read_framework_series(&ctx, &whole, Some(&mut kept))
                .await
                .unwrap();
            let every = read_framework_series(&ctx, &whole, None).await.unwrap();
            assert_eq!(from_kept, every, "after {}", file.display());
            if !every.is_empty() {
                compared += 1;
                reused += kept.last_series_read().reused;
            }
        });
    }
    assert!(compared >= 2, "only {compared} reads compared");
    assert!(reused > 0, "no segment's rows were reused");
    rt.block_on(async {
        let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
        let every = read_framework_series(&ctx, &whole, None).await.unwrap();
        let points: usize = every
            .values()
            .flat_map(|run| run.metrics.values())
            .flat_map(|ranks| ranks.values())
            .map(Vec::len)
            .sum();
        assert!(points > 100, "{points} points");
        assert!(every.values().any(|run| !run.placement.is_empty()));
        // A window that cuts segments: those are read again, not kept, alike.
        let middle = middle_third(&ctx).await;
        for _ in 0..2 {
            let from_kept = read_framework_series(&ctx, &middle, Some(&mut kept))
                .await
                .unwrap();
            let every = read_framework_series(&ctx, &middle, None).await.unwrap();
            assert_eq!(from_kept, every, "middle third");
        }
        // No budget: the query runs over the session, nothing is kept.
        let mut unkept = SegmentFolds::with_budget(0);
        let from_kept = read_framework_series(&ctx, &whole, Some(&mut unkept))
            .await
            .unwrap();
        assert_eq!(from_kept, every, "no budget");
        assert_eq!(unkept.last_series_read().kept_bytes, 0);
    });
}

#[test]
fn an_analysis_that_keeps_segments_finds_what_one_that_reads_every_segment_finds() {
    use whyslow_analyzers::analyze::analyze_keeping;
    use whyslow_analyzers::{DetectorConfig, Selection, analyze};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // A restore timed by the job's first progress after it (`checkpoint_ops` over the
    // kept progress times), with no serving sample (the serving samples taken as none
    // from the kept counts); a serving workload's surge (its samples read); and the
    // preemption scenario the design must explain.
    for scenario in [
        "checkpoint-restore",
        "serving-request-surge",
        "combo-preemption-thermal",
    ] {
        let dir = whyslow_fixtures::committed_scenarios_dir().join(scenario);
        let store = tempfile::tempdir().unwrap();
        let mut kept = SegmentFolds::default();
        let (mut found, mut reused) = (0, 0);
        for file in input_files(&dir) {
            ingest_one(store.path(), &file);
            rt.block_on(async {
                let (sel, cfg) = (Selection::default(), DetectorConfig::default());
                let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
                let keeping = analyze_keeping(&ctx, &sel, &cfg, Some(&mut kept))
                    .await
                    .unwrap();
                let ctx = whyslow_queries::open_session(store.path()).await.unwrap();
                let every = analyze(&ctx, &sel, &cfg).await.unwrap();
                let what = format!("{scenario}, after {}", file.display());
                assert_eq!(keeping.findings, every.findings, "{what}");
                assert_eq!(keeping.workloads, every.workloads, "{what}");
                found += every.findings.len();
                reused += kept.last_progress_read().reused;
            });
        }
        assert!(found > 0, "{scenario}: nothing found");
        assert!(reused > 0, "{scenario}: no progress rows reused");
    }
}
