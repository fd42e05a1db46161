//! Store benchmark: commit throughput and on-disk bytes per metric sample for a
//! metrics-heavy, dcgm-exporter-like input (plus a re-ingest that is all duplicates and a
//! compaction), then the latency of stream-worker-like turns: open the writer, commit a
//! small batch with Kafka offsets, close, as `whyslow stream` does per micro-batch.
//!
//! `cargo run --release -p whyslow-ingest --example store_bench [-- SAMPLES [COMMIT_ROWS [TURNS [TURN_ROWS]]]]`
//!
//! The store is a scratch directory, or the location in `WHYSLOW_BENCH_STORE` (e.g. an
//! empty `s3://bucket/prefix`, reached with the usual `AWS_*` variables).

use std::time::Instant;

use arrow::array::RecordBatch;
use whyslow_schemas::builders::{MetricRow, Scope};
use whyslow_schemas::{Layer, MetricsBuilder, Table};
use whyslow_store::{StoreWriter, WriterOptions};

const NODES: usize = 32;
const GPUS: usize = 8;
/// (metric, typical value, noise amplitude, decimals)
const METRICS: [(&str, f64, f64, i32); 10] = [
    ("gpu_util", 85.0, 15.0, 0),
    ("duty_cycle", 80.0, 20.0, 0),
    ("gpu_temp_celsius", 66.0, 6.0, 0),
    ("memory_temp_celsius", 70.0, 5.0, 0),
    ("power_watts", 550.0, 120.0, 3),
    ("sm_clock_mhz", 1980.0, 60.0, 0),
    ("mem_clock_mhz", 2619.0, 0.0, 0),
    ("fb_used_mib", 61_000.0, 2_000.0, 0),
    ("clock_throttle_reasons", 0.0, 0.0, 0),
    ("xid_errors", 0.0, 0.0, 0),
];
const SCRAPE_NS: i64 = 15_000_000_000;
const BASE_NS: i64 = 1_795_910_400_000_000_000;

struct Rng(u64);

impl Rng {
    fn unit(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Samples `[from, to)` of the scrape sequence (series-major within each scrape).
fn batch(from: usize, to: usize, rng: &mut Rng) -> RecordBatch {
    let series = NODES * GPUS * METRICS.len();
    let mut b = MetricsBuilder::new(BASE_NS + 10 * 86_400_000_000_000);
    let nodes: Vec<String> = (0..NODES).map(|n| format!("gke-a3-pool-{n:03}")).collect();
    let devices: Vec<String> = (0..GPUS).map(|g| g.to_string()).collect();
    for i in from..to {
        let s = i % series;
        let (node, rest) = (s / (GPUS * METRICS.len()), s % (GPUS * METRICS.len()));
        let (gpu, m) = (rest / METRICS.len(), rest % METRICS.len());
        let (metric, typical, noise, decimals) = METRICS[m];
        let scale = 10f64.powi(decimals);
        let value = ((typical + noise * (rng.unit() - 0.5)) * scale).round() / scale;
        let uuid = format!(
            "GPU-{:08x}-{:04x}-4c2a-9e1b-{:012x}",
            node * 131 + gpu,
            gpu,
            node
        );
        let pci = format!("00000000:{:02X}:00.0", 0x10 + gpu);
        let row = MetricRow {
            time_ns: BASE_NS + (i / series) as i64 * SCRAPE_NS,
            layer: Layer::Infrastructure,
            source: "dcgm",
            metric,
            value,
            scope: Scope {
                cluster: Some("prod-us-central1"),
                node: Some(&nodes[node]),
                device: Some(&devices[gpu]),
                ..Scope::default()
            },
            rank: None,
            step: None,
        };
        b.append(
            &row,
            [
                ("UUID", uuid.as_str()),
                ("pci_bus_id", pci.as_str()),
                ("modelName", "NVIDIA H100 80GB HBM3"),
                ("DCGM_FI_DRIVER_VERSION", "550.90.07"),
            ],
        );
    }
    b.finish()
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let samples: usize = args.next().map_or(Ok(4_000_000), |a| a.parse())?;
    let commit_rows: usize = args.next().map_or(Ok(200_000), |a| a.parse())?;
    let turns: usize = args.next().map_or(Ok(500), |a| a.parse())?;
    let turn_rows: usize = args.next().map_or(Ok(2_560), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let root = match std::env::var("WHYSLOW_BENCH_STORE") {
        Ok(location) => std::path::PathBuf::from(location),
        Err(_) => dir.path().join("store"),
    };
    let opts = WriterOptions {
        auto_compact_segments: 0,
        ..WriterOptions::default()
    };
    let mut w = StoreWriter::open_with(&root, opts)?;

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let batches: Vec<RecordBatch> = (0..samples)
        .step_by(commit_rows)
        .map(|from| batch(from, (from + commit_rows).min(samples), &mut rng))
        .collect();

    let t = Instant::now();
    let (mut written, mut bytes, mut key_bytes) = (0, 0, 0);
    for b in &batches {
        w.append(Table::Metrics, b.clone())?;
        let s = w.commit(&[])?;
        let m = &s.tables[&Table::Metrics];
        (written, bytes, key_bytes) = (
            written + m.written,
            bytes + m.bytes,
            key_bytes + m.key_bytes,
        );
    }
    let secs = t.elapsed().as_secs_f64();
    println!("metrics samples        {samples} in commits of {commit_rows}");
    println!(
        "first ingest           {:.2} s  {:.0} rows/s",
        secs,
        written as f64 / secs
    );
    println!(
        "parquet                {:.1} MB  {:.2} bytes/sample",
        mb(bytes),
        bytes as f64 / written as f64
    );
    println!(
        "key files (dedupe)     {:.1} MB  {:.2} bytes/sample",
        mb(key_bytes),
        key_bytes as f64 / written as f64
    );

    let t = Instant::now();
    let mut dups = 0;
    for b in &batches {
        w.append(Table::Metrics, b.clone())?;
        dups += w.commit(&[])?.duplicates();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "re-ingest (all dups)   {:.2} s  {:.0} rows/s  duplicates {dups}",
        secs,
        dups as f64 / secs
    );

    let before = w.store().segments(Table::Metrics).len();
    let t = Instant::now();
    let c = w.compact()?;
    let secs = t.elapsed().as_secs_f64();
    let segs = w.store().segments(Table::Metrics);
    let after_bytes: u64 = segs.iter().map(|s| s.bytes).sum();
    let after_keys: u64 = segs.iter().map(|s| s.keys_bytes).sum();
    println!(
        "compaction             {:.2} s  {} -> {} segments ({} rewritten rows)",
        secs,
        before,
        segs.len(),
        c.rows
    );
    println!(
        "after compaction       parquet {:.2} bytes/sample, key files {:.2} bytes/sample",
        after_bytes as f64 / written as f64,
        after_keys as f64 / written as f64
    );
    let log_bytes = dir_bytes(&root.join("metrics/_delta_log"));
    // (A bucket store's log is not a directory here: 0.)
    println!(
        "delta log              {:.2} MB  {:.3} bytes/sample",
        mb(log_bytes),
        log_bytes as f64 / written as f64
    );
    drop(w);
    turn_latency(&root, samples, turns, turn_rows, &mut rng)
}

/// Stream-worker-like turns on the store at `root`: each opens the writer (its lock and
/// the tables' Delta logs), commits `turn_rows` new samples with the next Kafka offset
/// (auto-compaction on, as in `whyslow stream`) and closes it. Prints p50/p99/max of
/// the whole turn and of the commit alone.
fn turn_latency(
    root: &std::path::Path,
    first: usize,
    turns: usize,
    turn_rows: usize,
    rng: &mut Rng,
) -> Result<(), Box<dyn std::error::Error>> {
    if turns == 0 {
        return Ok(());
    }
    let (mut whole, mut commit) = (Vec::with_capacity(turns), Vec::with_capacity(turns));
    for k in 0..turns {
        let from = first + k * turn_rows;
        let b = batch(from, from + turn_rows, rng);
        let t = Instant::now();
        let mut w = StoreWriter::open(root)?;
        w.append(Table::Metrics, b)?;
        let c = Instant::now();
        w.commit(&[whyslow_store::KafkaOffset {
            topic: "dcgm".into(),
            partition: 0,
            next_offset: k as i64 + 1,
        }])?;
        commit.push(c.elapsed().as_secs_f64() * 1e3);
        drop(w);
        whole.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // What opening costs, apart from committing: a reader (the tables' Delta logs) and a
    // writer (the logs with their removed files, the lock, the orphan scan).
    let (mut reader, mut writer) = (Vec::with_capacity(50), Vec::with_capacity(50));
    for _ in 0..50 {
        let t = Instant::now();
        drop(whyslow_store::Store::open(root)?);
        reader.push(t.elapsed().as_secs_f64() * 1e3);
        let t = Instant::now();
        drop(StoreWriter::open(root)?);
        writer.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(f64::total_cmp);
        v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1]
    };
    println!(
        "stream-like turns      {turns} of {turn_rows} samples + offsets (open, commit, close)"
    );
    for (name, v) in [
        ("  whole turn", &mut whole),
        ("  commit alone", &mut commit),
        ("  open as reader", &mut reader),
        ("  open as writer", &mut writer),
    ] {
        println!(
            "{name:<22} p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms",
            pct(v, 0.5),
            pct(v, 0.99),
            pct(v, 1.0)
        );
    }
    Ok(())
}

/// Bytes of the files under `dir` (not recursive).
fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
