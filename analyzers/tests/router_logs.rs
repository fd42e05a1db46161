//! A serving workload seen only through its router's request log, end to end: a TGI
//! replica's CRI log holds one `Success` line per request (the wording of
//! `fixtures/samples/serving/`) for three hours of traffic that rises and falls, its
//! latency following the load, and for 30 minutes twice what that load explains.
//! Ingested into a real store and analyzed, the workload (named by its pod, no scrape, no
//! event) has exactly one latency regression, over those 30 minutes, 2.2 times the p95
//! its load explains, cause unknown (nothing else is in the log); the busy hours are not
//! one.

use std::fmt::Write as _;

use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};

/// A Rust `Duration`'s debug text, as the router prints it.
fn duration(seconds: f64) -> String {
    if seconds >= 1.0 {
        format!("{seconds:.9}s")
    } else if seconds >= 1e-3 {
        format!("{:.6}ms", seconds * 1e3)
    } else {
        format!("{:.3}µs", seconds * 1e6)
    }
}

/// Deterministic noise in `-1..1` (a 64-bit LCG).
struct Noise(u64);

impl Noise {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
    }
}

const START: i64 = 1_795_939_200; // 2026-11-29T08:00:00Z
const REGRESSION: (i64, i64) = (START + 3 * 3600 / 2, START + 3 * 3600 / 2 + 1800);

/// Three hours of requests: the rate swings between 1 and 3 per second over the hours,
/// each request's time grows with the rate's square root, ±10% noise; from 09:30 to 10:00
/// every request takes 2.2 times as long at the same rate.
fn cri_log() -> String {
    let mut out = String::new();
    let mut noise = Noise(7);
    let mut t = START as f64;
    while t < (START + 3 * 3600) as f64 {
        let hours = (t - START as f64) / 3600.0;
        let rate = 2.0 + (hours * std::f64::consts::PI / 1.5).sin();
        let mut total = 0.6 * rate.sqrt() * (1.0 + 0.1 * noise.next());
        let secs = t as i64;
        if secs >= REGRESSION.0 && secs < REGRESSION.1 {
            total *= 2.2;
        }
        let tokens = 40.0;
        let when = chrono::DateTime::from_timestamp(secs, (t.fract() * 1e9) as u32).unwrap();
        // The kubelet stamps nanoseconds, the router microseconds.
        let cri = when.format("%Y-%m-%dT%H:%M:%S%.9fZ");
        let own = when.format("%Y-%m-%dT%H:%M:%S%.6fZ");
        writeln!(
            out,
            "{cri} stdout F {own}  INFO chat_completions{{total_time=\"{}\" validation_time=\"955.594µs\" queue_time=\"{}\" inference_time=\"{}\" time_per_token=\"{}\" seed=\"None\"}}: text_generation_router::server: router/src/server.rs:622: Success",
            duration(total),
            duration(0.0001),
            duration(total - 0.001),
            duration(total / tokens),
        )
        .unwrap();
        t += 1.0 / rate;
    }
    out
}

#[test]
fn a_regression_seen_only_in_router_request_lines() {
    let input = tempfile::tempdir().unwrap();
    let store = tempfile::tempdir().unwrap();
    let pod_log = input
        .path()
        .join("var/log/pods/serving_tgi-llama-7d9f5c6b8d-x2k4p_0f3c/tgi");
    std::fs::create_dir_all(&pod_log).unwrap();
    std::fs::write(pod_log.join("0.log"), cri_log()).unwrap();
    ingest_dir(input.path(), store.path()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let (r, _) = rt
        .block_on(analyze_store(store.path(), &Selection::default()))
        .unwrap();
    let regressions: Vec<_> = r
        .slowdowns
        .iter()
        .filter(|s| s.kind == "latency_regression")
        .collect();
    assert_eq!(
        regressions
            .iter()
            .map(|s| s.workload.as_deref())
            .collect::<Vec<_>>(),
        [Some("tgi-llama")],
        "{:#?}",
        r.slowdowns
    );
    let s = regressions[0];
    let at = |text: &str| {
        chrono::DateTime::parse_from_rfc3339(text)
            .unwrap()
            .timestamp()
    };
    // Per-minute series: the edges within a minute.
    assert!(
        (at(&s.start) - REGRESSION.0).abs() <= 60 && (at(&s.end) - REGRESSION.1).abs() <= 60,
        "{s:#?}"
    );
    // The p95 observed against the p95 the load explains: the 2.2 times of the lines.
    let ratio = s.observed.unwrap() / s.baseline.unwrap();
    assert!((1.9..=2.5).contains(&ratio), "{s:#?}");
    // No placement event names the replica: the series that showed the regression do.
    assert_eq!(s.pods, ["tgi-llama-7d9f5c6b8d-x2k4p"], "{s:#?}");
    // Nothing else in the log: the verdict says so rather than guessing.
    assert_eq!(s.causes[0].cause, "unknown", "{s:#?}");
}
