//! Kafka ingest throughput and commit latency of `whyslow stream`'s worker.
//!
//! 1. Drain: MESSAGES envelope messages pre-produced on a 4-partition topic, read by a
//!    bare rdkafka consumer that does nothing else, then drained by the whyslow worker
//!    into a store (both timed from subscribing).
//! 2. Paced: the worker runs while a producer sends MESSAGES more at RATE msg/s; every
//!    micro-batch commit is observed: how long the store commit took (open, dedupe,
//!    segments, Delta commits) and how long its oldest message waited from its Kafka
//!    timestamp to being durable. Prints p50/p99/max of both.
//!
//! `cargo run --release -p whyslow-ingest --example stream_bench -- BROKERS [MESSAGES] [RATE]`
//! (start a broker first, e.g. tansu on 127.0.0.1:19092). The store is a temporary
//! directory, or `$WHYSLOW_BENCH_STORE/<topic>-…` when that is set (e.g. `s3://bench/run1`
//! with the `AWS_*` variables of an S3 endpoint).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientConfig;
use rdkafka::consumer::{Consumer, StreamConsumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use whyslow_ingest::stream::{self, CommitObserver, Committed, StreamOptions, TopicSpec};
use whyslow_schemas::Table;
use whyslow_store::Store;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let brokers = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "127.0.0.1:19092".into());
    let n: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200_000);
    let rate: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    let topic = format!("bench-{}", std::process::id());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let location = StoreLocation::new(&topic);
    println!("store: {}", location.describe());

    rt.block_on(create_topic(&brokers, &topic, 4));
    produce(&brokers, &topic, 0, n, None);
    let bare = rt.block_on(bare_consumer(&brokers, &topic, n));
    let drain_store = location.path("drain");
    let drain = rt.block_on(whyslow_worker(&brokers, &topic, &drain_store, n, || {}));
    println!("messages: {n} (envelope metrics, 4 partitions)");
    println!(
        "bare rdkafka consumer: {:.0} msg/s ({:.2} s)",
        n as f64 / bare,
        bare
    );
    println!(
        "whyslow stream worker: {:.0} msg/s ({:.2} s) into the store, {:.1} bytes/row on disk",
        n as f64 / drain.seconds,
        drain.seconds,
        drain.bytes_per_row
    );
    println!(
        "ratio: {:.0}% of the bare consumer's rate",
        100.0 * bare / drain.seconds
    );

    let paced_topic = format!("{topic}-paced");
    rt.block_on(create_topic(&brokers, &paced_topic, 4));
    let paced_store = location.path("paced");
    let (b, t) = (brokers.clone(), paced_topic.clone());
    let paced = rt.block_on(whyslow_worker(
        &brokers,
        &paced_topic,
        &paced_store,
        n,
        move || {
            std::thread::spawn(move || produce(&b, &t, n, n, Some(rate)));
        },
    ));
    println!(
        "paced: {n} messages at {rate} msg/s, {} commits (flush interval 1 s)",
        paced.took.len()
    );
    print_quantiles(
        "store commit (open, dedupe, write, Delta commits)",
        &paced.took,
    );
    print_quantiles("oldest message's Kafka timestamp to durable", &paced.waited);
}

/// Where the benchmark's stores go: a temporary directory (removed at the end) or
/// `$WHYSLOW_BENCH_STORE` (left as it is: the operator's bucket).
struct StoreLocation {
    base: String,
    dir: Option<tempfile::TempDir>,
}

impl StoreLocation {
    fn new(topic: &str) -> StoreLocation {
        match std::env::var("WHYSLOW_BENCH_STORE") {
            Ok(url) if !url.is_empty() => StoreLocation {
                base: format!("{}/{topic}", url.trim_end_matches('/')),
                dir: None,
            },
            _ => {
                let dir = tempfile::tempdir().expect("temp store");
                StoreLocation {
                    base: dir.path().display().to_string(),
                    dir: Some(dir),
                }
            }
        }
    }

    fn describe(&self) -> String {
        match self.dir {
            Some(_) => format!("a local directory ({})", self.base),
            None => self.base.clone(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("{}-{name}", self.base))
    }
}

fn print_quantiles(what: &str, samples: &[Duration]) {
    let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
    ms.sort_by(f64::total_cmp);
    let q = |p: f64| {
        let i = ((ms.len() as f64 * p).ceil() as usize).clamp(1, ms.len().max(1)) - 1;
        ms.get(i).copied().unwrap_or(f64::NAN)
    };
    println!(
        "  {what}: p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms",
        q(0.5),
        q(0.99),
        ms.last().copied().unwrap_or(f64::NAN)
    );
}

/// Collects every commit's duration and wait.
struct Timings(Arc<Mutex<(Vec<Duration>, Vec<Duration>)>>);

impl CommitObserver for Timings {
    fn committed(&mut self, _store: &Store, commit: &Committed) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        t.0.push(commit.took);
        if let Some((oldest, _)) = commit.arrivals {
            let now = chrono::Utc::now().timestamp_millis();
            t.1.push(Duration::from_millis((now - oldest).max(0) as u64));
        }
    }
}

struct WorkerRun {
    seconds: f64,
    bytes_per_row: f64,
    took: Vec<Duration>,
    waited: Vec<Duration>,
}

async fn create_topic(brokers: &str, topic: &str, partitions: i32) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let res = admin
        .create_topics(
            &[NewTopic::new(topic, partitions, TopicReplication::Fixed(1))],
            &AdminOptions::new(),
        )
        .await
        .expect("create topic");
    for r in res {
        r.expect("topic created");
    }
}

/// Sends messages `first..first + n` of the step-time series to `topic`, at `rate` msg/s
/// when given, else as fast as the broker takes them.
fn produce(brokers: &str, topic: &str, first: u64, n: u64, rate: Option<u64>) {
    let p: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", if rate.is_some() { "5" } else { "50" })
        .set("batch.num.messages", "10000")
        .create()
        .expect("producer");
    let started = Instant::now();
    for i in first..first + n {
        if let Some(rate) = rate {
            let due = Duration::from_secs_f64((i - first) as f64 / rate as f64);
            if let Some(wait) = due.checked_sub(started.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        let payload = format!(
            r#"{{"time":{},"layer":"framework","source":"sdk","metric":"step_time_seconds","value":{:.3},"workload":"bench","run_id":"r1","rank":{},"step":{},"node":"node-{}"}}"#,
            1_764_411_302 + i / 8,
            1.9 + (i % 7) as f64 * 0.01,
            i % 8,
            i / 8,
            i % 8
        );
        let mut record = BaseRecord::<(), str>::to(topic)
            .partition((i % 4) as i32)
            .payload(&payload);
        while let Err((_, r)) = p.send(record) {
            record = r;
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    p.flush(Duration::from_secs(300)).expect("delivered");
    eprintln!(
        "produced {n} messages in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

async fn bare_consumer(brokers: &str, topic: &str, n: u64) -> f64 {
    let c: StreamConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{topic}-bare"))
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    // Both sides are timed from subscribing: each pays one group join.
    let started = Instant::now();
    c.subscribe(&[topic]).expect("subscribe");
    let mut seen = 0u64;
    while seen < n {
        let m = c.recv().await.expect("message");
        // Touch the payload as a consumer that does nothing else would.
        std::hint::black_box(rdkafka::Message::payload(&m));
        seen += 1;
    }
    started.elapsed().as_secs_f64()
}

/// Runs the worker on `topic` into `store` (after `start`) until the store holds `n`
/// metric rows.
async fn whyslow_worker(
    brokers: &str,
    topic: &str,
    store: &std::path::Path,
    n: u64,
    start: impl FnOnce(),
) -> WorkerRun {
    let mut opts = StreamOptions::new(
        store.to_path_buf(),
        brokers,
        &format!("{topic}-whyslow"),
        vec![TopicSpec::parse(&format!("{topic}=envelope")).expect("topic")],
    );
    opts.flush_interval = Duration::from_secs(1);
    let root = store.to_path_buf();
    let timings = Arc::new(Mutex::new((Vec::new(), Vec::new())));
    let started = Instant::now();
    start();
    let shutdown = async move {
        while Store::open(&root)
            .map(|s| s.rows(Table::Metrics))
            .unwrap_or(0)
            < n
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    let summary = stream::run(
        opts,
        |f| Some(whyslow_ingest::decode::decoder_for(f)),
        Some(Box::new(Timings(timings.clone()))),
        shutdown,
    )
    .await
    .expect("worker");
    let seconds = started.elapsed().as_secs_f64();
    let store = Store::open(store).expect("store");
    let bytes: u64 = store.segments(Table::Metrics).iter().map(|s| s.bytes).sum();
    assert_eq!(summary.rows_written, n);
    let (took, waited) = std::mem::take(&mut *timings.lock().unwrap_or_else(|e| e.into_inner()));
    WorkerRun {
        seconds,
        bytes_per_row: bytes as f64 / n as f64,
        took,
        waited,
    }
}
