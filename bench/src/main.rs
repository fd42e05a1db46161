//! `whyslow-bench`: the in-process half of the benchmark harness (`bench/run` drives it).
//!
//! - `segments --store DIR` prints the store's committed Parquet segments per table as
//!   JSON, so peer engines read exactly the files whyslow reads.
//! - `query --store DIR FILE.sql...` opens one session over the store (as `whyslow sql`
//!   does) and times each query file: planning, execution and collecting the result into
//!   Arrow batches, without printing. Process start and session opening are left out of
//!   the query times (the session opening is reported on its own line).

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use serde_json::json;
use whyslow_queries::{Params, open_session, run_read_only};
use whyslow_schemas::Table;
use whyslow_store::Store;

/// In-process timing helpers for the whyslow benchmark harness.
#[derive(Debug, Parser)]
#[command(name = "whyslow-bench")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the committed segments of every table as JSON.
    Segments {
        /// The store directory.
        #[arg(long)]
        store: PathBuf,
    },
    /// Time query files over the store; one JSON line per file.
    Query {
        /// The store directory.
        #[arg(long)]
        store: PathBuf,
        /// Untimed runs of each query before the timed ones.
        #[arg(long, default_value_t = 1)]
        warmup: usize,
        /// Timed runs of each query.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// SQL files, each run as one unit (all its statements).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Segments { store } => segments(&store),
        Command::Query {
            store,
            warmup,
            repeat,
            files,
        } => query(&store, warmup, repeat, &files),
    }
}

fn segments(root: &std::path::Path) -> Result<()> {
    let store = Store::open(root).with_context(|| format!("opening store {}", root.display()))?;
    let mut out = serde_json::Map::new();
    for table in Table::ALL {
        let segs: Vec<_> = store
            .segments(table)
            .into_iter()
            .map(|s| json!({"path": s.path, "rows": s.rows, "bytes": s.bytes}))
            .collect();
        out.insert(table.name().to_string(), segs.into());
    }
    println!("{}", serde_json::Value::Object(out));
    Ok(())
}

fn query(root: &std::path::Path, warmup: usize, repeat: usize, files: &[PathBuf]) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let started = Instant::now();
        let ctx = open_session(root)
            .await
            .with_context(|| format!("opening a session over {}", root.display()))?;
        println!("{}", json!({"open_s": started.elapsed().as_secs_f64()}));
        let params = Params::new();
        for file in files {
            let sql = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            let name = file.file_stem().map_or_else(
                || file.display().to_string(),
                |s| s.to_string_lossy().into_owned(),
            );
            let mut times = Vec::with_capacity(repeat);
            let mut rows = 0;
            for i in 0..warmup + repeat {
                let t = Instant::now();
                let outputs = run_read_only(&ctx, &sql, &params)
                    .await
                    .with_context(|| format!("running {}", file.display()))?;
                let secs = t.elapsed().as_secs_f64();
                rows = outputs.iter().map(|o| o.num_rows()).sum::<usize>();
                if i >= warmup {
                    times.push(secs);
                }
            }
            println!("{}", json!({"query": name, "times_s": times, "rows": rows}));
        }
        Ok(())
    })
}
