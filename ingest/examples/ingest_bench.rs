//! Envelope ingest benchmark: generates a metrics-heavy envelope JSONL (default 2M
//! records, about 2% events), then ingests it (1) into a sink that drops the batches, to
//! measure decoding alone, and (2) into a real store. Prints records/s (wall and per CPU
//! second), MB/s, and the on-disk bytes per metric row.
//!
//! `CARGO_TARGET_DIR=/work/target cargo run --release -p whyslow-ingest --example ingest_bench -- [RECORDS]`
//! `... --example ingest_bench -- --generate FILE [RECORDS]` only writes the input.

use std::fmt::Write as _;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use arrow::array::RecordBatch;
use whyslow_ingest::Format;
use whyslow_ingest::run::{IngestOptions, IngestSummary, RowSink, ingest, ingest_into};
use whyslow_schemas::Table;
use whyslow_store::{CommitStats, StoreError, TableCommit};

/// 2026-11-29T10:00:00Z.
const START_S: i64 = 1_795_939_200;
const GPU_METRICS: [&str; 6] = [
    "gpu_util",
    "gpu_temp_celsius",
    "power_watts",
    "sm_clock_mhz",
    "gpu_mem_used_bytes",
    "duty_cycle",
];

/// Writes `records` envelope lines like a cluster's: every second, every GPU of every
/// node reports six DCGM metrics, every rank an SDK step time; now and then an event.
pub fn generate(path: &Path, records: u64) -> std::io::Result<u64> {
    let mut w = BufWriter::with_capacity(1 << 20, std::fs::File::create(path)?);
    let (nodes, gpus) = (32u64, 8u64);
    let mut line = String::with_capacity(512);
    let mut n = 0u64;
    let mut bytes = 0u64;
    let mut second = 0i64;
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    'outer: loop {
        let ms = (next() % 1000) as i64;
        for node in 0..nodes {
            for gpu in 0..gpus {
                for (m, metric) in GPU_METRICS.iter().enumerate() {
                    if n == records {
                        break 'outer;
                    }
                    let r = next();
                    let value = match m {
                        0 | 5 => format!("{}", 85 + r % 16),
                        1 => format!("{}", 60 + r % 20),
                        2 => format!("{}.{}", 250 + r % 100, r % 10),
                        3 => format!("{}", 1980 - (r % 4) * 15),
                        _ => format!("{}", 60_000_000_000u64 + (r % 1000) * 1_000_000),
                    };
                    line.clear();
                    let _ = write!(
                        line,
                        r#"{{"time":"{}","layer":"infrastructure","source":"dcgm","metric":"{metric}","value":{value},"cluster":"prod-a","node":"gke-a3-{node:03}","device":"{gpu}","namespace":"llm","workload":"pretrain-70b","pod":"pretrain-70b-worker-{}-x7k2p","modelName":"NVIDIA H100 80GB HBM3"}}"#,
                        rfc3339(START_S + second, ms),
                        node * gpus + gpu,
                    );
                    line.push('\n');
                    w.write_all(line.as_bytes())?;
                    bytes += line.len() as u64;
                    n += 1;
                }
                if n == records {
                    break 'outer;
                }
                let rank = node * gpus + gpu;
                line.clear();
                let _ = write!(
                    line,
                    r#"{{"time":{}.{:03},"source":"sdk","metric":"step_time_seconds","value":{}.{:03},"workload":"pretrain-70b","run_id":"pretrain-70b-r1","rank":{rank},"step":{},"node":"gke-a3-{node:03}"}}"#,
                    START_S + second,
                    ms,
                    1 + next() % 2,
                    next() % 1000,
                    10_000 + second,
                );
                line.push('\n');
                w.write_all(line.as_bytes())?;
                bytes += line.len() as u64;
                n += 1;
                if next() % 25 == 0 && n < records {
                    line.clear();
                    let _ = write!(
                        line,
                        r#"{{"time":"{}","layer":"framework","source":"sdk","kind":"dataloader_wait","severity":"warning","node":"gke-a3-{node:03}","workload":"pretrain-70b","run_id":"pretrain-70b-r1","rank":{rank},"step":{},"message":"waited for data","attrs":{{"seconds":"{}.{}"}}}}"#,
                        rfc3339(START_S + second, ms),
                        10_000 + second,
                        next() % 5,
                        next() % 10
                    );
                    line.push('\n');
                    w.write_all(line.as_bytes())?;
                    bytes += line.len() as u64;
                    n += 1;
                }
            }
        }
        second += 1;
    }
    w.flush()?;
    Ok(bytes)
}

fn rfc3339(s: i64, ms: i64) -> String {
    let dt = chrono::DateTime::from_timestamp(s, (ms * 1_000_000) as u32).unwrap_or_default();
    dt.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// CPU seconds used by this process so far (all threads), from /proc/self/stat.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = after.split(' ').collect();
    let (utime, stime): (f64, f64) = (f.get(11)?.parse().ok()?, f.get(12)?.parse().ok()?);
    // The kernel reports clock ticks (USER_HZ, 100 on Linux).
    Some((utime + stime) / 100.0)
}

/// Drops every batch: measures reading and decoding alone.
#[derive(Default)]
struct NullSink {
    pending: Vec<(Table, u64)>,
}

impl RowSink for NullSink {
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        self.pending.push((table, batch.num_rows() as u64));
        Ok(())
    }

    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        let mut stats = CommitStats::default();
        for (table, rows) in self.pending.drain(..) {
            stats
                .tables
                .entry(table)
                .or_insert_with(TableCommit::default)
                .written += rows;
        }
        Ok(vec![(tag, stats)])
    }
}

fn report(label: &str, s: &IngestSummary, wall: f64, cpu: Option<f64>, input_bytes: u64) {
    let t = s.total();
    let recs = t.counts.records as f64;
    let cpu_text = cpu.map_or("n/a".to_string(), |c| {
        format!(
            "{c:.2} CPU s, {:.0} records per CPU second",
            recs / c.max(1e-9)
        )
    });
    println!(
        "{label}: {} records in {wall:.2} s wall = {:.0} records/s, {:.1} MB/s; {cpu_text}",
        t.counts.records,
        recs / wall,
        input_bytes as f64 / 1e6 / wall,
    );
}

fn dir_bytes(dir: &Path, suffix: &str) -> u64 {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    rd.flatten()
        .map(|e| {
            let p = e.path();
            if p.is_dir() {
                dir_bytes(&p, suffix)
            } else if p.to_string_lossy().ends_with(suffix) {
                e.metadata().map(|m| m.len()).unwrap_or(0)
            } else {
                0
            }
        })
        .sum()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--generate") {
        let path = args.get(1).ok_or("--generate FILE [RECORDS]")?;
        let records = args.get(2).map_or(Ok(2_000_000), |s| s.parse())?;
        let bytes = generate(Path::new(path), records)?;
        println!("wrote {records} records, {bytes} bytes to {path}");
        return Ok(());
    }
    let records: u64 = args.first().map_or(Ok(2_000_000), |s| s.parse())?;
    let dir = tempfile::tempdir()?;
    let input = dir.path().join("bench.jsonl");
    let t = Instant::now();
    let input_bytes = generate(&input, records)?;
    println!(
        "generated {records} envelope records ({:.1} MB, {:.0} bytes/record) in {:.1} s",
        input_bytes as f64 / 1e6,
        input_bytes as f64 / records as f64,
        t.elapsed().as_secs_f64()
    );
    let paths = vec![input.display().to_string()];

    let opts = IngestOptions::new(dir.path().join("unused"), paths.clone(), Format::Envelope);
    let (cpu0, t) = (cpu_seconds(), Instant::now());
    let s = ingest_into(&opts, &mut NullSink::default())?;
    let cpu = cpu_seconds().zip(cpu0).map(|(a, b)| a - b);
    report(
        "decode only (rows dropped)",
        &s,
        t.elapsed().as_secs_f64(),
        cpu,
        input_bytes,
    );

    let mut last = None;
    for (label, pipeline) in [
        ("ingest into the store, one thread", false),
        ("ingest into the store, store on a second thread", true),
    ] {
        let store = dir
            .path()
            .join(if pipeline { "store-pipelined" } else { "store" });
        let mut opts = IngestOptions::new(&store, paths.clone(), Format::Envelope);
        opts.pipeline = pipeline;
        let (cpu0, t) = (cpu_seconds(), Instant::now());
        let s = ingest(&opts)?;
        let cpu = cpu_seconds().zip(cpu0).map(|(a, b)| a - b);
        report(label, &s, t.elapsed().as_secs_f64(), cpu, input_bytes);
        last = Some((store, s));
    }
    let Some((store, s)) = last else {
        return Ok(());
    };
    print!("{}", s.render());

    let w = s.total().written;
    let per = |table: &str, rows: u64| {
        let (pq, keys) = (
            dir_bytes(&store.join(table), ".parquet"),
            dir_bytes(&store.join(table), ".keys"),
        );
        println!(
            "{table}: {rows} rows, {pq} Parquet bytes = {:.1} bytes/row; with the dedupe key files {:.1} bytes/row",
            pq as f64 / rows.max(1) as f64,
            (pq + keys) as f64 / rows.max(1) as f64,
        );
    };
    per("metrics", w.metrics);
    per("events", w.events);
    Ok(())
}
