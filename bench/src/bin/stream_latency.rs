//! `stream_latency`: how fast `whyslow stream` turns evidence into a published verdict.
//!
//! For each scenario, on a real broker: a worker with the live analyzers runs in-process
//! (the same `stream::run` + `LiveAnalyzer` as `whyslow stream --incidents-topic`), the
//! scenario's messages (`whyslow_fixtures::messages`, in content-time order) are produced
//! as fast as the broker takes them, and the incidents topic is read back. Per incident,
//! the latency is `published_at − evidence_arrived_at` of the first revision that carries
//! its final verdict; `evidence_arrived_at` is the Kafka timestamp of the OLDEST message
//! committed since the analysis before, so each figure is an upper bound on the time from
//! the arrival of the deciding evidence to the publication.
//!
//! `cargo run --release -p whyslow-bench --bin stream_latency -- --brokers 127.0.0.1:9092`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use rdkafka::ClientConfig;
use rdkafka::Message as _;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::Value;
use whyslow_analyzers::live::publisher::IncidentPublisher;
use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions};
use whyslow_fixtures::messages::{FORMATS, ScenarioMessage, scenario_messages};
use whyslow_ingest::stream::{self, StreamOptions, TopicSpec};
use whyslow_store::Store;

#[derive(Debug, Parser)]
#[command(name = "stream_latency")]
struct Args {
    /// Kafka bootstrap servers.
    #[arg(long)]
    brokers: String,
    /// Scenario directories (default: every committed scenario).
    scenarios: Vec<PathBuf>,
    /// The worker's flush interval.
    #[arg(long, default_value = "100ms")]
    flush_interval: String,
    /// Where the stores go (default: a temporary directory).
    #[arg(long)]
    work: Option<PathBuf>,
    /// Produce at most this many messages per second (default: as fast as the broker
    /// takes them; faster than the worker consumes, the backlog's wait counts as latency).
    #[arg(long)]
    rate: Option<f64>,
    /// Print every incident's latencies.
    #[arg(long)]
    verbose: bool,
}

/// What one scenario gave.
struct Run {
    name: String,
    messages: usize,
    produce_secs: f64,
    stored_secs: f64,
    /// (incident, latency of its opening, latency of its final verdict), ms.
    incidents: Vec<(String, f64, f64)>,
}

fn main() -> Result<()> {
    let args = Args::parse();
    let mut dirs = args.scenarios.clone();
    if dirs.is_empty() {
        for e in std::fs::read_dir(whyslow_fixtures::committed_scenarios_dir())? {
            let p = e?.path();
            if p.join("truth.json").exists() {
                dirs.push(p);
            }
        }
        dirs.sort();
    }
    let tmp = tempfile::tempdir()?;
    let work = args
        .work
        .clone()
        .unwrap_or_else(|| tmp.path().to_path_buf());
    let flush = stream::parse_duration(&args.flush_interval)?;
    let tag = format!("lat{}", std::process::id());
    let mut runs = Vec::new();
    for (i, dir) in dirs.iter().enumerate() {
        let run = run_scenario(
            &args.brokers,
            dir,
            &work.join(format!("{i}")),
            &format!("{tag}-{i}"),
            flush,
            args.rate,
        )?;
        if args.verbose {
            for (id, opened, decided) in &run.incidents {
                eprintln!(
                    "    incident {id}: opened after {opened:.0} ms, final verdict after {decided:.0} ms"
                );
            }
        }
        eprintln!(
            "{:<28} {:>6} msgs  produced {:>7.0} msg/s  all stored after {:>5.2} s  incidents {}",
            run.name,
            run.messages,
            run.messages as f64 / run.produce_secs,
            run.stored_secs,
            run.incidents.len()
        );
        runs.push(run);
    }
    print_summary(&runs);
    Ok(())
}

fn run_scenario(
    brokers: &str,
    dir: &Path,
    store: &Path,
    prefix: &str,
    flush: Duration,
    rate: Option<f64>,
) -> Result<Run> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let messages =
        scenario_messages(dir).with_context(|| format!("messages of {}", dir.display()))?;
    let topic = |format: &str| format!("{prefix}.{format}");
    let incidents_topic = format!("{prefix}.incidents");
    let mut topics: Vec<String> = FORMATS.iter().map(|f| topic(f)).collect();
    topics.push(incidents_topic.clone());
    create_topics(brokers, &topics)?;

    let mut opts = StreamOptions::new(
        store.to_path_buf(),
        brokers,
        &format!("{prefix}.group"),
        FORMATS
            .iter()
            .map(|f| TopicSpec::parse(&format!("{}={f}", topic(f))))
            .collect::<Result<_, _>>()?,
    );
    opts.flush_interval = flush;
    opts.metrics_addr = None;
    let mut live = LiveOptions::new(store.to_path_buf());
    live.publisher = Some(IncidentPublisher::new(brokers, &incidents_topic, &[])?);
    let analyzer = LiveAnalyzer::start(live)?;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let worker = runtime.spawn(stream::run(
        opts,
        |f| Some(whyslow_ingest::decode::decoder_for(f)),
        Some(Box::new(analyzer)),
        async move {
            let _ = stop_rx.await;
        },
    ));

    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "2")
        .set("enable.idempotence", "false")
        .create()?;
    // Warm up: the worker has joined its group once a first message is stored.
    let warm = br#"{"time":"2026-11-29T00:00:00Z","layer":"infrastructure","source":"bench","kind":"bench_warmup"}"#;
    producer
        .send(BaseRecord::<(), [u8]>::to(&topic("envelope")).payload(&warm[..]))
        .map_err(|(e, _)| e)?;
    producer.flush(Duration::from_secs(30))?;
    wait_stored(store, 1, Duration::from_secs(120))?;

    let started = Instant::now();
    for (i, m) in messages.iter().enumerate() {
        if let Some(rate) = rate {
            let due = started + Duration::from_secs_f64(i as f64 / rate);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        send(&producer, &topic(m.format), m);
    }
    producer.flush(Duration::from_secs(120))?;
    let produce_secs = started.elapsed().as_secs_f64();
    wait_stored(store, messages.len() as i64 + 1, Duration::from_secs(600))?;
    let stored_secs = started.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    runtime.block_on(worker)??;

    let incidents = read_incidents(brokers, &incidents_topic)?;
    Ok(Run {
        name,
        messages: messages.len(),
        produce_secs,
        stored_secs,
        incidents,
    })
}

fn create_topics(brokers: &str, names: &[String]) -> Result<()> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let new: Vec<NewTopic> = names
        .iter()
        .map(|n| NewTopic::new(n, 1, TopicReplication::Fixed(1)))
        .collect();
    for r in rt.block_on(admin.create_topics(
        &new,
        &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
    ))? {
        if let Err((t, e)) = r {
            bail!("cannot create topic {t}: {e}");
        }
    }
    Ok(())
}

fn send(p: &ThreadedProducer<DefaultProducerContext>, topic: &str, m: &ScenarioMessage) {
    let mut headers = OwnedHeaders::new();
    for (k, v) in &m.headers {
        headers = headers.insert(Header {
            key: k,
            value: Some(v.as_bytes()),
        });
    }
    let mut record = BaseRecord::to(topic).payload(&m.payload).headers(headers);
    if let Some(k) = &m.key {
        record = record.key(k);
    }
    loop {
        match p.send(record) {
            Ok(()) => return,
            Err((_, r)) => {
                // The local queue is full: let the background thread deliver.
                record = r;
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

fn wait_stored(store: &Path, n: i64, within: Duration) -> Result<()> {
    let deadline = Instant::now() + within;
    loop {
        let stored: i64 = Store::open(store)
            .map(|s| s.kafka_offsets().values().sum())
            .unwrap_or(0);
        if stored >= n {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("only {stored} of {n} messages stored after {within:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn millis(v: &Value) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(v.as_str()?).ok()?;
    Some(t.timestamp_millis() as f64)
}

/// Per standing incident: the latency of its opening and of its final verdict, in ms.
fn read_incidents(brokers: &str, topic: &str) -> Result<Vec<(String, f64, f64)>> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("group.id", format!("{topic}.reader"))
        .set("auto.offset.reset", "earliest")
        .create()?;
    consumer.subscribe(&[topic])?;
    let mut revisions: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut quiet = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline && quiet.elapsed() < Duration::from_secs(3) {
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            let m = m?;
            quiet = Instant::now();
            let v: Value = serde_json::from_slice(m.payload().unwrap_or_default())?;
            let id = v["incident_id"].as_str().unwrap_or_default().to_string();
            revisions.entry(id).or_default().push(v);
        }
    }
    let mut out = Vec::new();
    for (id, mut revs) in revisions {
        revs.sort_by_key(|v| v["revision"].as_i64());
        let Some(last) = revs.last() else { continue };
        if last["status"] == "retracted" {
            continue;
        }
        let verdict = &last["causes"][0]["cause"];
        let latency =
            |v: &Value| Some(millis(&v["published_at"])? - millis(&v["evidence_arrived_at"])?);
        let opened = revs.first().and_then(latency);
        let decided = revs
            .iter()
            .find(|v| &v["causes"][0]["cause"] == verdict)
            .and_then(latency);
        if let (Some(o), Some(d)) = (opened, decided) {
            out.push((id, o, d));
        }
    }
    Ok(out)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn print_summary(runs: &[Run]) {
    let mut opened: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.incidents.iter().map(|i| i.1))
        .collect();
    let mut decided: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.incidents.iter().map(|i| i.2))
        .collect();
    opened.sort_by(f64::total_cmp);
    decided.sort_by(f64::total_cmp);
    let messages: usize = runs.iter().map(|r| r.messages).sum();
    let produce: f64 = runs.iter().map(|r| r.produce_secs).sum();
    let stored: f64 = runs.iter().map(|r| r.stored_secs).sum();
    println!(
        "scenarios {}  messages {}  produced at {:.0} msg/s  stored at {:.0} msg/s",
        runs.len(),
        messages,
        messages as f64 / produce,
        messages as f64 / stored
    );
    for (what, v) in [("opened", &opened), ("final verdict", &decided)] {
        println!(
            "{what:<14} incidents {:>4}  p50 {:>7.0} ms  p99 {:>7.0} ms  max {:>7.0} ms",
            v.len(),
            percentile(v, 50.0),
            percentile(v, 99.0),
            v.last().copied().unwrap_or(f64::NAN)
        );
    }
}
