//! How much time-range pruning saves: builds a store of dcgm-like metric samples spread
//! over two days (committed hourly, compacted as the store does by default), then times
//! the same aggregate over the whole table and over one hour of it.
//!
//! `cargo run --release -p whyslow-queries --example prune_bench [-- SAMPLES [STORE_DIR]]`

use std::time::Instant;

use whyslow_queries::{Params, open_session, run_read_only};
use whyslow_schemas::builders::{MetricRow, Scope};
use whyslow_schemas::{Layer, MetricsBuilder, Table};
use whyslow_store::{Store, StoreWriter};

const BASE_NS: i64 = 1_795_910_400_000_000_000; // 2026-11-29T00:00:00Z
const HOURS: i64 = 48;
const HOUR_NS: i64 = 3_600_000_000_000;
const NODES: usize = 32;
const GPUS: usize = 8;

fn write(root: &std::path::Path, samples: usize) {
    let mut w = StoreWriter::open(root).expect("open the store");
    let per_hour = samples / HOURS as usize;
    let devices = NODES * GPUS;
    let nodes: Vec<String> = (0..NODES).map(|n| format!("node-{n:03}")).collect();
    let gpus: Vec<String> = (0..GPUS).map(|g| g.to_string()).collect();
    for h in 0..HOURS {
        let mut b = MetricsBuilder::new(BASE_NS + HOURS * HOUR_NS);
        let step_ns = HOUR_NS / (per_hour / devices).max(1) as i64;
        for i in 0..per_hour {
            let d = i % devices;
            let t = BASE_NS + h * HOUR_NS + (i / devices) as i64 * step_ns;
            let row = MetricRow {
                time_ns: t,
                layer: Layer::Infrastructure,
                source: "dcgm",
                metric: "gpu_util",
                value: ((i * 7919) % 100) as f64,
                scope: Scope {
                    node: Some(&nodes[d / GPUS]),
                    device: Some(&gpus[d % GPUS]),
                    ..Scope::default()
                },
                rank: None,
                step: None,
            };
            b.append(&row, std::iter::empty::<(&str, &str)>());
        }
        w.append(Table::Metrics, b.finish()).expect("append");
        w.commit(&[]).expect("commit");
    }
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let samples: usize = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4_000_000);
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let root = args
        .next()
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| tmp.path().to_path_buf());
    if Store::open(&root)
        .map(|s| s.rows(Table::Metrics))
        .unwrap_or(0)
        == 0
    {
        let t = Instant::now();
        write(&root, samples);
        println!(
            "wrote {samples} samples in {:.1} s",
            t.elapsed().as_secs_f64()
        );
    }
    let store = Store::open(&root).expect("open");
    let segs = store.segments(Table::Metrics);
    let bytes: u64 = segs.iter().map(|s| s.bytes).sum();
    println!(
        "{} rows in {} segments, {:.1} MB",
        store.rows(Table::Metrics),
        segs.len(),
        bytes as f64 / 1e6
    );
    let ctx = open_session(&root).await.expect("session");
    let queries = [
        (
            "whole table",
            "SELECT count(*), avg(value) FROM metrics WHERE metric = 'gpu_util'",
        ),
        (
            "one hour",
            "SELECT count(*), avg(value) FROM metrics WHERE metric = 'gpu_util' \
             AND time >= '2026-11-30T12:00:00Z' AND time < '2026-11-30T13:00:00Z'",
        ),
        (
            "one hour, one node",
            "SELECT count(*), avg(value) FROM metrics WHERE node = 'node-007' \
             AND time >= '2026-11-30T12:00:00Z' AND time < '2026-11-30T13:00:00Z'",
        ),
    ];
    for (name, sql) in queries {
        // Once to warm the file cache and the metadata cache, then timed.
        run_read_only(&ctx, sql, &Params::new())
            .await
            .expect("query");
        let t = Instant::now();
        let runs = 5;
        let mut rows = String::new();
        for _ in 0..runs {
            let out = run_read_only(&ctx, sql, &Params::new())
                .await
                .expect("query");
            rows = arrow::util::pretty::pretty_format_batches(&out[0].batches)
                .expect("format")
                .to_string();
        }
        let ms = t.elapsed().as_secs_f64() * 1000.0 / runs as f64;
        let line = rows.lines().nth(3).unwrap_or_default().to_string();
        println!("{name:>20}: {ms:8.1} ms  {line}");
    }
}
