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
//! Besides latency, each run reports what it cost: records (samples, log lines, events)
//! per second produced and stored, the backlog (messages produced but not yet stored,
//! sampled every 500 ms), the live analyzer's analyses (count, wall time, from its own
//! `whyslow_live_analysis_seconds`) and its thread's CPU time against the process's, and
//! whether the final verdicts are the scenario's `truth.json`. `--verbose` prints each
//! incident's latencies with the largest backlog sampled while its final verdict was
//! awaited: a verdict that waited on ingest shows one, a verdict the analyzer was slow to
//! reach does not. For a fleet, pass a
//! generated large scenario (`whyslow-fixtures generate --size large --nodes 1000 --hours 2
//! --scenario S`): its incidents are injected into the fleet's background by the generator,
//! and `--record-rate` paces it in records per second (a scrape message carries a node's
//! whole scrape).
//!
//! `cargo run --release -p whyslow-bench --bin stream_latency -- --brokers 127.0.0.1:9092`

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use rdkafka::ClientConfig;
use rdkafka::Message as _;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::{Header, OwnedHeaders};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use serde_json::Value;
use whyslow_analyzers::live::metrics::LiveMetrics;
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
    #[arg(long, conflicts_with = "record_rate")]
    rate: Option<f64>,
    /// Produce at most this many records per second (a record: a sample of a scrape, a
    /// log line, an event), for fleets whose scrape messages carry many samples each.
    #[arg(long)]
    record_rate: Option<f64>,
    /// Print every incident's latencies.
    #[arg(long)]
    verbose: bool,
    /// The most of the wall time the live analyzer spends analyzing (`whyslow stream
    /// --analysis-share`; 1: back to back).
    #[arg(long, default_value_t = whyslow_analyzers::live::runner::DEFAULT_BUSY_SHARE)]
    analysis_share: f64,
    /// The most memory, in MiB, the live analyzer keeps per segment between analyses
    /// (its metric scans' folds and the rows it keeps besides; 0: none, every analysis
    /// reads its whole window).
    #[arg(long, default_value_t = whyslow_analyzers::analyze::DEFAULT_FOLD_BUDGET_BYTES >> 20)]
    fold_budget_mib: usize,
    /// Threads the live analyses run on (`LiveOptions::threads`; 1: the analyzer's own).
    #[arg(long, default_value_t = 1)]
    analyzer_threads: usize,
}

/// What one scenario gave.
struct Run {
    name: String,
    messages: usize,
    records: usize,
    produce_secs: f64,
    stored_secs: f64,
    /// Until the worker and its analyzer stopped (after the last analysis).
    finished_secs: f64,
    /// Incidents published and standing at the end.
    incidents: Vec<Published>,
    /// Every sample of the backlog: (Unix time, ms; messages produced and not yet stored).
    backlog: Vec<(f64, usize)>,
    /// Analyses run and the wall time they took, s.
    analyses: u64,
    analysis_secs: f64,
    /// CPU time of the live analyzer's thread and of the whole process, s.
    analyzer_cpu: f64,
    process_cpu: f64,
    /// Truth's incidents (cause, workload) and those a standing incident gave as verdict.
    truth: Vec<(String, String)>,
    found: usize,
}

/// One standing incident as read back from the incidents topic.
struct Published {
    id: String,
    workload: String,
    verdict: String,
    /// Latency of its opening, ms.
    opened_ms: f64,
    /// When the evidence of its final verdict arrived and when that verdict was published
    /// (Unix time, ms).
    decided_span: (f64, f64),
}

impl Run {
    /// The most messages produced and not yet stored at one sample.
    fn max_backlog(&self) -> usize {
        self.backlog.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }
}

impl Published {
    /// Latency of its final verdict, ms.
    fn decided_ms(&self) -> f64 {
        self.decided_span.1 - self.decided_span.0
    }

    /// The largest backlog sampled while its final verdict was awaited: messages that
    /// were waiting to be stored (a latency spent in ingest, not in the analyzer, where
    /// the evidence was among them).
    fn backlog_awaited(&self, backlog: &[(f64, usize)]) -> Option<usize> {
        let (from, to) = self.decided_span;
        backlog
            .iter()
            .filter(|(t, _)| *t >= from && *t <= to)
            .map(|(_, n)| *n)
            .max()
    }
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
            Pace::of(&args),
            AnalyzerSettings {
                share: args.analysis_share,
                fold_budget_bytes: args.fold_budget_mib << 20,
                threads: args.analyzer_threads,
            },
        )?;
        if args.verbose {
            for i in &run.incidents {
                let backlog = i
                    .backlog_awaited(&run.backlog)
                    .map_or_else(|| "not sampled".to_string(), |n| format!("{n} msgs"));
                eprintln!(
                    "    incident {} ({} {}): opened after {:.0} ms, final verdict after {:.0} ms \
                     (largest backlog meanwhile: {backlog})",
                    i.id,
                    i.workload,
                    i.verdict,
                    i.opened_ms,
                    i.decided_ms()
                );
            }
        }
        eprintln!(
            "{:<28} {:>7} msgs {:>9} records  produced {:>7.0} rec/s  all stored after {:>6.2} s  \
             max backlog {} msgs  analyses {} ({:.1} s)  CPU analyzer {:.1} s of {:.1} s  \
             incidents {}  truth found {}/{}",
            run.name,
            run.messages,
            run.records,
            run.records as f64 / run.produce_secs,
            run.stored_secs,
            run.max_backlog(),
            run.analyses,
            run.analysis_secs,
            run.analyzer_cpu,
            run.process_cpu,
            run.incidents.len(),
            run.found,
            run.truth.len()
        );
        runs.push(run);
    }
    print_summary(&runs);
    Ok(())
}

/// How fast messages are produced.
#[derive(Clone, Copy)]
enum Pace {
    Unpaced,
    Messages(f64),
    Records(f64),
}

impl Pace {
    fn of(args: &Args) -> Pace {
        match (args.rate, args.record_rate) {
            (Some(r), _) => Pace::Messages(r),
            (None, Some(r)) => Pace::Records(r),
            (None, None) => Pace::Unpaced,
        }
    }

    /// When the message at `index`, after `records_before` records, is due.
    fn due(self, started: Instant, index: usize, records_before: usize) -> Option<Instant> {
        let secs = match self {
            Pace::Unpaced => return None,
            Pace::Messages(r) => index as f64 / r,
            Pace::Records(r) => records_before as f64 / r,
        };
        Some(started + Duration::from_secs_f64(secs))
    }
}

/// The records a message carries: its lines that are neither empty nor a `#` comment
/// (a scrape's samples, a log line, an envelope record, a watch event).
fn records_in(payload: &[u8]) -> usize {
    payload
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty() && l[0] != b'#')
        .count()
}

/// How the live analyzer of a run is set.
struct AnalyzerSettings {
    /// `LiveOptions::busy_share`.
    share: f64,
    /// `LiveOptions::fold_budget_bytes`.
    fold_budget_bytes: usize,
    /// `LiveOptions::threads`.
    threads: usize,
}

fn run_scenario(
    brokers: &str,
    dir: &Path,
    store: &Path,
    prefix: &str,
    flush: Duration,
    pace: Pace,
    analyzer: AnalyzerSettings,
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
    let metrics = LiveMetrics::default();
    let mut live = LiveOptions::new(store.to_path_buf());
    live.metrics = metrics.clone();
    live.busy_share = analyzer.share;
    live.fold_budget_bytes = analyzer.fold_budget_bytes;
    live.threads = analyzer.threads;
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

    // No delivery timeout: where the broker takes messages slower than they are sent, the
    // producer's queue fills and `send` waits, instead of dropping what timed out. A
    // fleet's inventory (the API server's node and pod list) is one message of megabytes.
    let producer: ThreadedProducer<DefaultProducerContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("linger.ms", "2")
        .set("enable.idempotence", "false")
        .set("message.timeout.ms", "0")
        .set("message.max.bytes", "67108864")
        .create()?;
    // Warm up: the worker has joined its group once a first message is stored.
    let warm = br#"{"time":"2026-11-29T00:00:00Z","layer":"infrastructure","source":"bench","kind":"bench_warmup"}"#;
    producer
        .send(BaseRecord::<(), [u8]>::to(&topic("envelope")).payload(&warm[..]))
        .map_err(|(e, _)| e)?;
    producer.flush(Duration::from_secs(30))?;
    wait_stored(store, 1, Duration::from_secs(120))?;

    let cpu_before = thread_cpu();
    let sent = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let monitor = std::thread::spawn({
        let (sent, done, store) = (sent.clone(), done.clone(), store.to_path_buf());
        move || monitor(&store, &sent, &done)
    });
    let started = Instant::now();
    let mut records = 0usize;
    for (i, m) in messages.iter().enumerate() {
        if let Some(due) = pace.due(started, i, records)
            && let Some(wait) = due.checked_duration_since(Instant::now())
        {
            std::thread::sleep(wait);
        }
        records += records_in(&m.payload);
        send(&producer, &topic(m.format), m)?;
        sent.fetch_add(1, Ordering::Relaxed);
    }
    // Until the broker has taken everything: the produce rate is what it accepted.
    producer.flush(Duration::from_secs(1800))?;
    let produce_secs = started.elapsed().as_secs_f64();
    wait_stored(store, messages.len() as i64 + 1, Duration::from_secs(1800))?;
    let stored_secs = started.elapsed().as_secs_f64();
    let _ = stop_tx.send(());
    runtime.block_on(worker)??;
    // The worker stops after its analyzer's last analysis.
    let finished_secs = started.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    let (backlog, analyzer_cpu) = monitor
        .join()
        .map_err(|_| anyhow::anyhow!("the monitor thread panicked"))?;
    let process_cpu = thread_cpu().total - cpu_before.total;
    let (analyses, analysis_secs) = analyses_of(&metrics);
    let scanned = scanned_of(&metrics);
    eprintln!(
        "    metric segments over {analyses} analyses: {} read ({} of them stale), {} reused",
        scanned[0], scanned[2], scanned[1]
    );
    let stages = stages_of(&metrics);
    let staged: f64 = stages.iter().map(|(_, secs)| secs).sum();
    eprintln!(
        "    stages over {analyses} analyses ({staged:.1} s staged of {analysis_secs:.1} s), the costliest:"
    );
    for (stage, secs) in stages.iter().take(STAGES_SHOWN) {
        let per = secs / analyses.max(1) as f64 * 1e3;
        eprintln!("      {per:8.1} ms/analysis  {stage}");
    }

    let incidents = read_incidents(brokers, &incidents_topic)?;
    let truth = truth_of(dir)?;
    let found = truth
        .iter()
        .filter(|(cause, workload)| {
            incidents
                .iter()
                .any(|i| &i.verdict == cause && &i.workload == workload)
        })
        .count();
    Ok(Run {
        name,
        messages: messages.len(),
        records,
        produce_secs,
        stored_secs,
        finished_secs,
        incidents,
        backlog,
        analyses,
        analysis_secs,
        analyzer_cpu,
        process_cpu,
        truth,
        found,
    })
}

/// CPU seconds of the process's threads: the live analyzer's and all together (threads
/// that ended count in the total, from `/proc/self/stat`).
struct Cpu {
    analyzer: f64,
    total: f64,
}

/// Clock ticks per second of `/proc`'s CPU times.
fn ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

/// utime + stime of a `/proc/.../stat` line, and its command name.
fn stat_cpu(line: &str) -> Option<(&str, f64)> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = &line[open + 1..close];
    // Fields after the name: state is field 3, utime 14 and stime 15 (1-based).
    let rest: Vec<&str> = line[close + 1..].split_whitespace().collect();
    let utime: f64 = rest.get(11)?.parse().ok()?;
    let stime: f64 = rest.get(12)?.parse().ok()?;
    Some((comm, (utime + stime) / ticks_per_second()))
}

fn thread_cpu() -> Cpu {
    let total = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|l| stat_cpu(&l).map(|c| c.1))
        .unwrap_or(0.0);
    let mut analyzer = 0.0;
    if let Ok(tasks) = std::fs::read_dir("/proc/self/task") {
        for task in tasks.flatten() {
            if let Ok(line) = std::fs::read_to_string(task.path().join("stat"))
                && let Some(("live-analyzer", cpu)) = stat_cpu(&line)
            {
                analyzer += cpu;
            }
        }
    }
    Cpu { analyzer, total }
}

/// Samples every 500 ms, until `done`: the backlog (messages sent and not yet stored)
/// and the analyzer thread's CPU time (its last sample before the thread ended). Returns
/// the backlog's samples (Unix time, ms; messages) and that CPU time.
fn monitor(store: &Path, sent: &AtomicUsize, done: &AtomicBool) -> (Vec<(f64, usize)>, f64) {
    let (mut backlog, mut analyzer) = (Vec::new(), 0.0f64);
    while !done.load(Ordering::Relaxed) {
        let produced = sent.load(Ordering::Relaxed);
        // The warm-up message is stored before the first message is sent. A store that
        // cannot be read at this instant gives no sample (not a backlog of everything).
        if let Ok(s) = Store::open(store) {
            let stored = (s.kafka_offsets().values().sum::<i64>() - 1).max(0);
            let stored = usize::try_from(stored).unwrap_or(usize::MAX);
            let now = chrono::Utc::now().timestamp_millis() as f64;
            backlog.push((now, produced.saturating_sub(stored)));
        }
        analyzer = analyzer.max(thread_cpu().analyzer);
        std::thread::sleep(Duration::from_millis(500));
    }
    (backlog, analyzer)
}

/// The analyzer's metrics as Prometheus renders them on `/metrics` (empty if they cannot
/// be rendered): what the functions below read.
fn exposition(metrics: &LiveMetrics) -> String {
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let mut text = String::new();
    if prometheus_client::encoding::text::encode(&mut text, &registry).is_err() {
        text.clear();
    }
    text
}

/// The value of the series `series` (its name and labels, as rendered) in `text`.
fn series_value(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| {
        l.strip_prefix(series)?
            .strip_prefix(' ')?
            .trim()
            .parse()
            .ok()
    })
}

/// How many analyses ran and the seconds they took, from the analyzer's histogram.
fn analyses_of(metrics: &LiveMetrics) -> (u64, f64) {
    let text = exposition(metrics);
    (
        series_value(&text, "whyslow_live_analysis_seconds_count").unwrap_or(0.0) as u64,
        series_value(&text, "whyslow_live_analysis_seconds_sum").unwrap_or(0.0),
    )
}

/// The metric segments the analyses' scans read, reused and found stale, from the
/// analyzer's counter.
fn scanned_of(metrics: &LiveMetrics) -> [u64; 3] {
    let text = exposition(metrics);
    ["read", "reused", "stale"].map(|how| {
        let series = format!("whyslow_live_scanned_segments_total{{how=\"{how}\"}}");
        series_value(&text, &series).unwrap_or(0.0) as u64
    })
}

/// How many of the costliest stages a run prints.
const STAGES_SHOWN: usize = 16;

/// Seconds the analyses spent in each stage, costliest first, from the analyzer's
/// counter.
fn stages_of(metrics: &LiveMetrics) -> Vec<(String, f64)> {
    let mut stages: Vec<(String, f64)> = exposition(metrics)
        .lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("whyslow_live_stage_seconds_total{stage=\"")?;
            let (stage, value) = rest.rsplit_once("\"} ")?;
            Some((stage.to_string(), value.trim().parse().ok()?))
        })
        .collect();
    stages.sort_by(|a, b| b.1.total_cmp(&a.1));
    stages
}

/// The incidents of a scenario's `truth.json`: (cause, workload).
fn truth_of(dir: &Path) -> Result<Vec<(String, String)>> {
    let path = dir.join("truth.json");
    let truth: Value = serde_json::from_slice(
        &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    Ok(truth["incidents"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    let s = |k: &str| i[k].as_str().unwrap_or_default().to_string();
                    (s("cause"), s("workload"))
                })
                .collect()
        })
        .unwrap_or_default())
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

fn send(
    p: &ThreadedProducer<DefaultProducerContext>,
    topic: &str,
    m: &ScenarioMessage,
) -> Result<()> {
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
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                // The local queue is full: let the background thread deliver.
                record = r;
                std::thread::sleep(Duration::from_millis(1));
            }
            Err((e, _)) => bail!("cannot produce to {topic} ({}): {e}", m.origin),
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
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn millis(v: &Value) -> Option<f64> {
    let t = chrono::DateTime::parse_from_rfc3339(v.as_str()?).ok()?;
    Some(t.timestamp_millis() as f64)
}

/// The standing incidents, each with the latency of its opening and of its final verdict.
fn read_incidents(brokers: &str, topic: &str) -> Result<Vec<Published>> {
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
        let span = |v: &Value| {
            Some((
                millis(&v["evidence_arrived_at"])?,
                millis(&v["published_at"])?,
            ))
        };
        let latency = |v: &Value| span(v).map(|(from, to)| to - from);
        let opened = revs.first().and_then(latency);
        let decided = revs.iter().find(|v| &v["causes"][0]["cause"] == verdict);
        if let (Some(o), Some(decided_span)) = (opened, decided.and_then(span)) {
            out.push(Published {
                id,
                workload: last["workload"].as_str().unwrap_or_default().to_string(),
                verdict: verdict.as_str().unwrap_or_default().to_string(),
                opened_ms: o,
                decided_span,
            });
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
        .flat_map(|r| r.incidents.iter().map(|i| i.opened_ms))
        .collect();
    let mut decided: Vec<f64> = runs
        .iter()
        .flat_map(|r| r.incidents.iter().map(Published::decided_ms))
        .collect();
    opened.sort_by(f64::total_cmp);
    decided.sort_by(f64::total_cmp);
    let messages: usize = runs.iter().map(|r| r.messages).sum();
    let produce: f64 = runs.iter().map(|r| r.produce_secs).sum();
    let stored: f64 = runs.iter().map(|r| r.stored_secs).sum();
    let records: usize = runs.iter().map(|r| r.records).sum();
    println!(
        "scenarios {}  messages {}  records {}  produced at {:.0} msg/s ({:.0} rec/s)  \
         stored at {:.0} msg/s ({:.0} rec/s)",
        runs.len(),
        messages,
        records,
        messages as f64 / produce,
        records as f64 / produce,
        messages as f64 / stored,
        records as f64 / stored
    );
    let finished: f64 = runs.iter().map(|r| r.finished_secs).sum();
    let analyses: u64 = runs.iter().map(|r| r.analyses).sum();
    let analysis: f64 = runs.iter().map(|r| r.analysis_secs).sum();
    let analyzer_cpu: f64 = runs.iter().map(|r| r.analyzer_cpu).sum();
    let process_cpu: f64 = runs.iter().map(|r| r.process_cpu).sum();
    println!(
        "analyses {analyses} ({:.2} s each on average, busy {:.0}% of the wall time)  \
         CPU: analyzer thread {analyzer_cpu:.1} s = {:.0}% of the process's {process_cpu:.1} s  \
         max backlog {} msgs",
        analysis / analyses.max(1) as f64,
        100.0 * analysis / finished,
        100.0 * analyzer_cpu / process_cpu.max(1e-9),
        runs.iter().map(Run::max_backlog).max().unwrap_or(0)
    );
    let truth: usize = runs.iter().map(|r| r.truth.len()).sum();
    let found: usize = runs.iter().map(|r| r.found).sum();
    println!("truth incidents found as a standing verdict: {found}/{truth}");
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
