//! The per-rank straggler detector (`symptoms/straggler.rs`) on synthetic jobs of growing
//! size: every rank's `compute_seconds` at every step (noise around one second, one rank
//! 40% slower over a third of the steps), timed for each count of ranks. It shows how the
//! detector's cost grows with the ranks of a job (large training jobs have thousands).
//!
//! `cargo run --profile measure -p whyslow-analyzers --example straggler_bench -- [STEPS] [RANKS...]`
//! (default 500 steps; 8, 64, 256 and 1024 ranks).

use std::time::Instant;

use whyslow_analyzers::DetectorConfig;
use whyslow_analyzers::symptoms::straggler::{RankSeries, detect};
use whyslow_analyzers::symptoms::{Point, WorkloadKey};
use whyslow_fixtures::rng::Rng;

const S: i64 = 1_000_000_000;

/// `ranks` ranks over `steps` steps, one sample each per step; rank 1 is 40% slower from
/// the first third of the steps to the second.
fn job(ranks: i32, steps: i64) -> Vec<RankSeries> {
    let mut rng = Rng::new(42);
    (0..ranks)
        .map(|rank| RankSeries {
            rank,
            points: (0..steps)
                .map(|step| {
                    let slow = rank == 1 && (steps / 3..2 * steps / 3).contains(&step);
                    let base = if slow { 1.4 } else { 1.0 };
                    Point {
                        time_ns: step * 2 * S,
                        step: Some(step),
                        value: base * rng.range(0.97, 1.03),
                    }
                })
                .collect(),
        })
        .collect()
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let steps = args.first().copied().unwrap_or(500) as i64;
    let ranks: Vec<i32> = match args.get(1..) {
        Some(r) if !r.is_empty() => r.iter().map(|&r| r as i32).collect(),
        _ => vec![8, 64, 256, 1024],
    };
    let cfg = DetectorConfig::default();
    let key = WorkloadKey::default();
    println!("ranks  steps  seconds  stragglers  (rank, lost s)");
    for n in ranks {
        let series = job(n, steps);
        let started = Instant::now();
        let found = detect(&key, &series, &cfg, steps * 2 * S);
        let took = started.elapsed().as_secs_f64();
        let named: Vec<(Option<i32>, i64)> = found
            .iter()
            .map(|s| (s.rank, s.lost_seconds.round() as i64))
            .collect();
        println!(
            "{n:>5}  {steps:>5}  {took:>7.3}  {:>10}  {named:?}",
            found.len()
        );
    }
}
