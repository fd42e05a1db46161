//! Streaming and batch agree: every committed fixture scenario, produced to a real broker
//! (tansu) as its cluster's shippers would send it (`whyslow_fixtures::messages`) and
//! consumed by the stream worker into a fresh store, gives the same `events`/`metrics`
//! rows (compared whole, but for `ingest_time`), no dead letters, and the same slowdowns
//! and verdicts as `whyslow ingest` of its files; and the live analyzers running in the
//! worker leave, as the latest revision of each incident that stands, exactly the
//! slowdowns of the batch report over the streamed store. The same comparison without a broker
//! (messages decoded through the worker's `MicroBatch` in process) isolates the decoders;
//! the small purpose-made tests at the end pin per-message/per-file differences found
//! here and fixed (a trailing traceback, per-node kernel-log state, the retry budget).
//!
//! `WHYSLOW_SCENARIOS=a,b` limits the run to some scenarios; `WHYSLOW_SCENARIO_THREADS`
//! (default 3) sets how many are streamed at once. Figures go to stderr
//! (`--nocapture` to see them).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use arrow::util::display::{ArrayFormatter, FormatOptions};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use support::broker::Broker;
use support::scenario::produce_scenario;
use whyslow_analyzers::Selection;
use whyslow_analyzers::command::{analyze_store, ingest_dir};
use whyslow_analyzers::live::{LiveAnalyzer, LiveOptions};
use whyslow_analyzers::report::Report;
use whyslow_fixtures::messages::{ScenarioMessage, scenario_messages};
use whyslow_ingest::stream::{self, StreamOptions, StreamSummary, TopicSpec};
use whyslow_schemas::Table;
use whyslow_store::Store;

/// How long one scenario may take to be consumed before the test gives up on it.
const CONSUME_BUDGET: Duration = Duration::from_secs(300);

/// The committed scenarios (directories with a `truth.json`), by name.
fn committed_scenarios() -> Vec<(String, PathBuf)> {
    let root = whyslow_fixtures::committed_scenarios_dir();
    let only: Option<BTreeSet<String>> = std::env::var("WHYSLOW_SCENARIOS")
        .ok()
        .map(|s| s.split(',').map(|x| x.trim().to_string()).collect());
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(&root)
        .expect("fixtures/scenarios")
        .map(|e| e.expect("scenario entry").path())
        .filter(|p| p.join("truth.json").is_file())
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .filter(|(n, _)| only.as_ref().is_none_or(|o| o.contains(n)))
        .collect();
    out.sort();
    out
}

/// A scenario streamed into a store.
pub struct Streamed {
    /// The store the worker wrote.
    pub store: tempfile::TempDir,
    /// Messages produced, per topic.
    pub produced: BTreeMap<String, i64>,
    /// Messages produced, per format.
    pub per_format: BTreeMap<&'static str, usize>,
    pub produce_time: Duration,
    pub consume_time: Duration,
    pub summary: StreamSummary,
    /// Whether the store held every produced message when the worker stopped.
    pub complete: bool,
}

impl Streamed {
    fn messages(&self) -> i64 {
        self.produced.values().sum()
    }
}

/// Whether the store at `path` holds every produced message (its recorded next offsets
/// equal the produced counts).
fn holds_all(path: &Path, produced: &BTreeMap<String, i64>) -> bool {
    let Ok(store) = Store::open(path) else {
        return false;
    };
    let offsets = store.kafka_offsets();
    produced
        .iter()
        .all(|(t, n)| offsets.get(&(t.clone(), 0)).copied().unwrap_or(0) >= *n)
}

/// Streams the scenario in `dir` through `broker` (topics `{prefix}.{format}`, consumer
/// group `{prefix}`) into a fresh store with the library worker, until the store holds
/// every message produced; then stops the worker. With `live`, the worker runs the live
/// analyzers (as `whyslow stream` does), which append incidents to the store.
pub fn stream_scenario(broker: &Broker, dir: &Path, prefix: &str, live: bool) -> Streamed {
    let messages = scenario_messages(dir).expect("scenario messages");
    let mut per_format = BTreeMap::new();
    for m in &messages {
        *per_format.entry(m.format).or_default() += 1;
    }
    let started = Instant::now();
    let produced = produce_scenario(broker, prefix, &messages);
    let produce_time = started.elapsed();
    drop(messages);

    let store = tempfile::tempdir().expect("store dir");
    let observer: Option<Box<dyn stream::CommitObserver>> = live.then(|| {
        let analyzer = LiveAnalyzer::start(LiveOptions::new(store.path().to_path_buf()))
            .expect("live analyzer");
        Box::new(analyzer) as Box<dyn stream::CommitObserver>
    });
    let topics = produced
        .keys()
        .map(|t| {
            let format = t.rsplit_once('.').expect("prefix.format").1;
            TopicSpec::parse(&format!("{t}={format}")).expect("topic spec")
        })
        .collect();
    let mut opts = StreamOptions::new(store.path().to_path_buf(), &broker.addr(), prefix, topics);
    opts.flush_interval = Duration::from_millis(200);
    // The test's own deadline ends a stalled run, not the worker's broker budget.
    opts.retry_budget = CONSUME_BUDGET + Duration::from_secs(120);
    // tansu and the worker share two loaded cores with builds: heartbeats can be late.
    opts.kafka_config
        .push(("session.timeout.ms".into(), "45000".into()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let store_path = store.path().to_path_buf();
    let want = produced.clone();
    let started = Instant::now();
    let summary = rt
        .block_on(async move {
            let shutdown = async move {
                let deadline = Instant::now() + CONSUME_BUDGET;
                while !holds_all(&store_path, &want) && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            };
            stream::run(
                opts,
                |f| Some(whyslow_ingest::decode::decoder_for(f)),
                observer,
                shutdown,
            )
            .await
        })
        .unwrap_or_else(|e| panic!("{prefix}: the stream worker failed: {e}"));
    let consume_time = started.elapsed();
    let complete = holds_all(store.path(), &produced);
    Streamed {
        complete,
        store,
        produced,
        per_format,
        produce_time,
        consume_time,
        summary,
    }
}

/// A scenario's file ingest, and how the streamed store compares with it.
pub struct Comparison {
    pub file_store: tempfile::TempDir,
    pub file_report: Report,
    pub stream_report: Report,
    /// Rows (events, metrics, dead letters) of the file and of the streamed store.
    pub file_rows: [u64; 3],
    pub stream_rows: [u64; 3],
    /// Every difference found, one sentence each (empty: they agree).
    pub mismatches: Vec<String>,
}

const TABLES: [Table; 3] = [Table::Events, Table::Metrics, Table::DeadLetters];

fn rows(store: &Path) -> [u64; 3] {
    let s = Store::open(store).expect("store opens");
    TABLES.map(|t| s.rows(t))
}

/// What a report concludes, slowdown by slowdown: id, kind, start, end, lost seconds,
/// and the cause ids (the first is the verdict).
fn verdicts(r: &Report) -> Vec<String> {
    r.slowdowns
        .iter()
        .map(|s| {
            let causes: Vec<&str> = s.causes.iter().map(|c| c.cause.as_str()).collect();
            format!(
                "{} {} {}..{} lost {:.6} s verdict {} causes [{}]",
                s.slowdown_id,
                s.kind,
                s.start,
                s.end,
                s.lost_seconds,
                causes.first().unwrap_or(&"-"),
                causes.join(",")
            )
        })
        .collect()
}

/// Ingests the files of `dir` into a fresh store and compares it, and its report, with
/// the streamed store.
pub fn compare_with_file_ingest(dir: &Path, streamed: &Path) -> Comparison {
    let file_store = tempfile::tempdir().expect("store dir");
    ingest_dir(dir, file_store.path()).expect("file ingest");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let report = |p: &Path| {
        rt.block_on(analyze_store(p, &Selection::default()))
            .unwrap_or_else(|e| panic!("analyzing {}: {e}", p.display()))
            .0
    };
    let file_report = report(file_store.path());
    let stream_report = report(streamed);
    let file_rows = rows(file_store.path());
    let stream_rows = rows(streamed);
    let mut mismatches = Vec::new();
    for (i, table) in TABLES.iter().enumerate() {
        if file_rows[i] != stream_rows[i] {
            mismatches.push(format!(
                "{table}: {} rows from the files, {} streamed",
                file_rows[i], stream_rows[i]
            ));
        }
    }
    if file_rows[2] != 0 {
        mismatches.push(format!("{} dead letters from the files", file_rows[2]));
    }
    for table in [Table::Events, Table::Metrics] {
        mismatches.extend(row_differences(file_store.path(), streamed, table));
    }
    let (fv, sv) = (verdicts(&file_report), verdicts(&stream_report));
    if fv != sv {
        mismatches.push(format!(
            "reports differ:\n  files:    {}\n  streamed: {}",
            fv.join("\n            "),
            sv.join("\n            ")
        ));
    }
    Comparison {
        file_store,
        file_report,
        stream_report,
        file_rows,
        stream_rows,
        mismatches,
    }
}

/// Every row of a table but its `ingest_time`, as text, counted; grouped by
/// `source/kind` (events) or `source/metric` (metrics).
fn row_texts(store: &Path, table: Table) -> BTreeMap<String, BTreeMap<String, usize>> {
    let group_col = match table {
        Table::Metrics => "metric",
        _ => "kind",
    };
    let options = FormatOptions::default().with_null("null");
    let mut out: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for seg in Store::open(store).expect("store").segments(table) {
        let file = std::fs::File::open(&seg.path).expect("segment");
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .expect("parquet")
            .build()
            .expect("reader");
        for batch in reader {
            let batch = batch.expect("batch");
            let schema = batch.schema();
            let columns: Vec<(&str, ArrayFormatter<'_>)> = schema
                .fields()
                .iter()
                .zip(batch.columns())
                .filter(|(f, _)| f.name() != "ingest_time")
                .map(|(f, c)| {
                    let fmt = ArrayFormatter::try_new(c.as_ref(), &options).expect("formatter");
                    (f.name().as_str(), fmt)
                })
                .collect();
            let text = |name: &str, i: usize| {
                columns
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, f)| f.value(i).to_string())
                    .unwrap_or_default()
            };
            for i in 0..batch.num_rows() {
                let group = format!("{}/{}", text("source", i), text(group_col, i));
                let node = text("node", i);
                let row = columns
                    .iter()
                    .map(|(n, f)| match *n {
                        "labels" | "attrs" => {
                            format!("{n}={}", without_hostname(&f.value(i).to_string(), &node))
                        }
                        _ => format!("{n}={}", f.value(i)),
                    })
                    .collect::<Vec<_>>()
                    .join(" ");
                *out.entry(group).or_default().entry(row).or_default() += 1;
            }
        }
    }
    out
}

/// A formatted `labels`/`attrs` map without dcgm-exporter's `Hostname` label when it names
/// the row's node. The prometheus decoder keeps `Hostname` (in metrics' `labels` and in
/// the `attrs` of the events it derives) unless it became the
/// `node` column: a file has no node hint, so its node comes from `Hostname` (dropped
/// from labels), while a Kafka message keyed by node takes the key (and keeps
/// `Hostname`, which on some deployments is the exporter pod's name). Same node, same
/// rows otherwise.
fn without_hostname(labels: &str, node: &str) -> String {
    let entry = format!("Hostname: {node}");
    labels
        .replace(&format!("{entry}, "), "")
        .replace(&format!(", {entry}}}"), "}")
        .replace(&format!("{{{entry}}}"), "{}")
}

/// The rows of `table` one store holds and the other does not (compared whole, but for
/// `ingest_time`), summarized per group with an example of each side.
fn row_differences(files: &Path, streamed: &Path, table: Table) -> Vec<String> {
    let (f, s) = (row_texts(files, table), row_texts(streamed, table));
    let groups: BTreeSet<&String> = f.keys().chain(s.keys()).collect();
    let empty = BTreeMap::new();
    let mut out = Vec::new();
    for g in groups {
        let (a, b) = (f.get(g).unwrap_or(&empty), s.get(g).unwrap_or(&empty));
        let only = |x: &BTreeMap<String, usize>, y: &BTreeMap<String, usize>| {
            let mut n = 0;
            let mut example = None;
            for (row, count) in x {
                let extra = count.saturating_sub(y.get(row).copied().unwrap_or(0));
                if extra > 0 {
                    n += extra;
                    example.get_or_insert_with(|| row.chars().take(3000).collect::<String>());
                }
            }
            (n, example)
        };
        let (only_files, ex_f) = only(a, b);
        let (only_stream, ex_s) = only(b, a);
        if only_files + only_stream > 0 {
            out.push(format!(
                "{table} {g}: {only_files} rows only from the files (e.g. {}), {only_stream} only streamed (e.g. {})",
                ex_f.as_deref().unwrap_or("-"),
                ex_s.as_deref().unwrap_or("-")
            ));
        }
    }
    out
}

/// What streaming one scenario and comparing it with its file ingest found.
pub struct Outcome {
    pub name: String,
    pub streamed: Streamed,
    pub comparison: Comparison,
    /// One line of figures.
    pub figures: String,
    /// Every difference or fault, one sentence each (empty: streaming and files agree).
    pub problems: Vec<String>,
}

/// Streams the scenario `name` in `dir` through `broker` (topics `sc-{name}.{format}`,
/// with the live analyzers when `live`) and compares the result with the file ingest of
/// `dir`; with `live`, also the incidents that stand at the end with the streamed store's
/// batch report.
pub fn stream_and_compare(broker: &Broker, name: &str, dir: &Path, live: bool) -> Outcome {
    let t = Instant::now();
    let streamed = stream_scenario(broker, dir, &format!("sc-{name}"), live);
    let mut problems = Vec::new();
    if !streamed.complete {
        let held: i64 = Store::open(streamed.store.path())
            .map(|s| s.kafka_offsets().values().sum())
            .unwrap_or(0);
        problems.push(format!(
            "the store holds {held} of {} messages after {CONSUME_BUDGET:?}",
            streamed.messages()
        ));
    }
    if streamed.summary.rejected != 0 {
        problems.push(format!(
            "the worker rejected {} records",
            streamed.summary.rejected
        ));
    }
    let comparison = compare_with_file_ingest(dir, streamed.store.path());
    problems.extend(comparison.mismatches.iter().cloned());
    if live {
        let standing = standing_incidents(streamed.store.path());
        let mut batch = comparison.stream_report.slowdowns.clone();
        batch.sort_by(|a, b| (&a.start, &a.slowdown_id).cmp(&(&b.start, &b.slowdown_id)));
        if standing != batch {
            problems.push(format!(
                "the live incidents that stand at the end {:?} differ from the report's slowdowns {:?}",
                standing.iter().map(|s| (&s.kind, &s.start, s.lost_seconds)).collect::<Vec<_>>(),
                batch.iter().map(|s| (&s.kind, &s.start, s.lost_seconds)).collect::<Vec<_>>()
            ));
        }
    }
    let (s, f) = (comparison.stream_rows, comparison.file_rows);
    let figures = format!(
        "{name}: {} messages {:?}; produced in {:.1} s, consumed in {:.1} s; events {} metrics {} \
         dead {} (files {} / {} / {}); {} slowdowns; {:.1} s in all",
        streamed.messages(),
        streamed.per_format,
        streamed.produce_time.as_secs_f64(),
        streamed.consume_time.as_secs_f64(),
        s[0],
        s[1],
        s[2],
        f[0],
        f[1],
        f[2],
        comparison.stream_report.slowdowns.len(),
        t.elapsed().as_secs_f64()
    );
    Outcome {
        name: name.to_string(),
        streamed,
        comparison,
        figures,
        problems,
    }
}

#[test]
fn every_committed_scenario_streams_to_the_same_rows_and_verdicts_as_file_ingest() {
    let started = Instant::now();
    let scenarios = committed_scenarios();
    assert!(!scenarios.is_empty(), "no committed scenarios found");
    let threads: usize = std::env::var("WHYSLOW_SCENARIO_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
        .max(1);
    let queue = Mutex::new(scenarios.iter());
    // (scenario, messages, problems): the stores are dropped as each scenario ends.
    let results: Mutex<Vec<(String, i64, Vec<String>)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let next = queue.lock().unwrap().next();
                    let Some((name, dir)) = next else { break };
                    // A broker of its own per scenario: tansu's SQLite store slows down as
                    // it grows, and one broker holding all 36 scenarios, three at a time,
                    // stopped answering (metadata and topic creation timed out, whole
                    // topics went unread for the 300 s budget).
                    let broker = Broker::start();
                    let o = stream_and_compare(&broker, name, dir, true);
                    drop(broker);
                    eprintln!("{}", o.figures);
                    for p in &o.problems {
                        eprintln!("  MISMATCH {name}: {p}");
                    }
                    let n = o.streamed.messages();
                    results.lock().unwrap().push((o.name, n, o.problems));
                }
            });
        }
    });
    let results = results.into_inner().unwrap();
    assert_eq!(results.len(), scenarios.len(), "a scenario's thread failed");
    let total_messages: i64 = results.iter().map(|r| r.1).sum();
    eprintln!(
        "{} scenarios, {total_messages} messages, {} threads: {:.1} s",
        results.len(),
        threads,
        started.elapsed().as_secs_f64()
    );
    let failed: Vec<String> = results
        .iter()
        .filter(|r| !r.2.is_empty())
        .map(|(name, _, problems)| format!("{name}:\n  {}", problems.join("\n  ")))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} scenarios differ between streaming and file ingest:\n{}",
        failed.len(),
        results.len(),
        failed.join("\n")
    );
}

/// The incidents that stand at the end (`incidents_latest`, retractions left out).
fn standing_incidents(store: &Path) -> Vec<whyslow_analyzers::report::Slowdown> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(whyslow_analyzers::live::standing_incidents(store))
        .expect("standing incidents")
}

/// Decodes `messages` as the stream worker does (one `MicroBatch`: the same decoders per
/// topic and format, the same hints from headers, keys and timestamps), without a broker,
/// into the store at `store`: one commit per `per_commit` messages, with their offsets.
pub fn decode_in_process(messages: &[ScenarioMessage], store: &Path, per_commit: usize) -> u64 {
    use whyslow_ingest::Format;
    use whyslow_ingest::stream::{Message, MicroBatch};
    use whyslow_store::{KafkaOffset, StoreWriter};
    let topic_formats = messages
        .iter()
        .map(|m| {
            let f: Format = m.format.parse().expect("a format name");
            (m.format.to_string(), f)
        })
        .collect();
    let mut batch = MicroBatch::new(
        topic_formats,
        |f| Some(whyslow_ingest::decode::decoder_for(f)),
        || 0,
    );
    let mut writer = StoreWriter::open(store).expect("store");
    let mut next: BTreeMap<&str, i64> = BTreeMap::new();
    let mut rejected = 0;
    for (i, m) in messages.iter().enumerate() {
        let offset = next.entry(m.format).or_default();
        let headers: Vec<(&str, &str)> = m
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        batch.add(
            &Message {
                topic: m.format,
                partition: 0,
                offset: *offset,
                payload: Some(&m.payload),
                key: m.key.as_deref().map(str::as_bytes),
                timestamp_ms: Some(m.time_ns.div_euclid(1_000_000)),
                headers: &headers,
            },
            None,
        );
        *offset += 1;
        if (i + 1) % per_commit == 0 || i + 1 == messages.len() {
            let flushed = batch.take();
            rejected += flushed.rejected;
            for (table, b) in flushed.batches {
                writer.append(table, b).expect("append");
            }
            let offsets: Vec<KafkaOffset> = flushed
                .offsets
                .into_iter()
                .map(|((topic, partition), next_offset)| KafkaOffset {
                    topic,
                    partition,
                    next_offset,
                })
                .collect();
            writer.commit(&offsets).expect("commit");
        }
    }
    rejected
}

/// Writes `files` (relative path, text) under a fresh directory.
fn scenario_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("dir");
    for (rel, text) in files {
        let p = dir.path().join(rel);
        std::fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
    }
    dir
}

/// The `events` rows of a file ingest of `dir` and of its messages decoded in process,
/// whole but for `ingest_time`, as sorted texts.
fn events_both_ways(dir: &Path) -> (Vec<String>, Vec<String>) {
    let (files, streamed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    ingest_dir(dir, files.path()).expect("file ingest");
    let messages = scenario_messages(dir).expect("messages");
    assert_eq!(decode_in_process(&messages, streamed.path(), 1000), 0);
    let flat = |p: &Path| -> Vec<String> {
        let mut v: Vec<String> = row_texts(p, Table::Events)
            .into_values()
            .flat_map(|m| m.into_iter().flat_map(|(r, n)| std::iter::repeat_n(r, n)))
            .collect();
        v.sort();
        v
    };
    (flat(files.path()), flat(streamed.path()))
}

// Finding: `ContainerLogDecoder` ends a traceback only at the line after its exception
// line (or at `Decoder::finish`, which file ingest calls at the end of each file). The
// stream worker never calls `finish`, so a crash's final traceback (a CUDA OOM here) stays
// held forever: a restarted container writes to a new file, so no later line closes it.
#[test]
fn a_traceback_that_ends_a_container_log_is_an_event_streamed_too() {
    let log = "2026-11-29T10:00:00.000000000Z stderr F Traceback (most recent call last):\n\
               2026-11-29T10:00:00.000000000Z stderr F   File \"train.py\", line 10, in <module>\n\
               2026-11-29T10:00:00.000000000Z stderr F torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n";
    let dir = scenario_dir(&[("pods/ml_trainer-0-abcde_1234/trainer/0.log", log)]);
    let (files, streamed) = events_both_ways(dir.path());
    assert_eq!(files.len(), 1, "file ingest: {files:?}");
    assert_eq!(streamed, files);
}

// Finding: `KmsgDecoder` folds OOM kills of one pid within 60 s (`last_oom`) whatever the
// node; file ingest resets it per file (per node), a stream topic has one decoder for all
// nodes, so node-b's kill is dropped.
#[test]
fn oom_kills_of_one_pid_on_two_nodes_are_two_events_streamed_too() {
    let line = |t: &str, node: &str| {
        format!(
            "2026-11-29T10:00:{t}.000000+00:00 {node} kernel: Out of memory: Killed process 4242 (python) total-vm:1234kB, anon-rss:512kB, file-rss:0kB\n"
        )
    };
    let (a, b) = (line("00", "node-a"), line("30", "node-b"));
    let dir = scenario_dir(&[("kernel/node-a.log", &a), ("kernel/node-b.log", &b)]);
    let (files, streamed) = events_both_ways(dir.path());
    assert_eq!(files.len(), 2, "file ingest: {files:?}");
    assert_eq!(streamed, files);
}

// Finding: `KmsgDecoder` remembers `NVRM: GPU at PCI:…: GPU-<uuid>` lines by PCI address
// only; nodes of one type share PCI layouts, so in a stream an Xid of node-b gets the
// uuid of node-a's GPU at the same address (file ingest resets it per file).
#[test]
fn an_xid_names_the_uuid_of_its_own_nodes_gpu_streamed_too() {
    let a = "2026-11-29T10:00:00.000000+00:00 node-a kernel: NVRM: GPU at PCI:0000:91:00: GPU-aaaaaaaa-0000-0000-0000-000000000000\n";
    let b = "2026-11-29T10:00:05.000000+00:00 node-b kernel: NVRM: Xid (PCI:0000:91:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n";
    let dir = scenario_dir(&[("kernel/node-a.log", a), ("kernel/node-b.log", b)]);
    let (files, streamed) = events_both_ways(dir.path());
    assert_eq!(files.len(), 1, "file ingest: {files:?}");
    assert_eq!(streamed, files);
}

/// Without a broker: every committed scenario's messages, decoded as the worker decodes
/// them, give the rows of its file ingest (the decoders behave the same per message as
/// per file on every scenario).
#[test]
fn every_committed_scenario_decodes_per_message_as_per_file() {
    let mut problems = Vec::new();
    for (name, dir) in committed_scenarios() {
        let (files, streamed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        ingest_dir(&dir, files.path()).expect("file ingest");
        let messages = scenario_messages(&dir).expect("messages");
        let rejected = decode_in_process(&messages, streamed.path(), 5000);
        if rejected != 0 {
            problems.push(format!("{name}: {rejected} messages rejected"));
        }
        let (f, s) = (rows(files.path()), rows(streamed.path()));
        if f != s || f[2] != 0 {
            problems.push(format!("{name}: rows {f:?} from the files, {s:?} decoded"));
        }
        for table in [Table::Events, Table::Metrics] {
            for d in row_differences(files.path(), streamed.path(), table) {
                problems.push(format!("{name}: {d}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// Found here: worker.rs once locked `health` twice (the `if let` scrutinee's guard lives
// through the block), so the worker deadlocked instead of exiting 1 when the broker stayed
// unreachable past `--retry-budget`.
#[test]
fn an_unreachable_broker_ends_the_worker_after_its_retry_budget() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let store = tempfile::tempdir().unwrap();
    let mut opts = StreamOptions::new(
        store.path().to_path_buf(),
        &format!("127.0.0.1:{port}"),
        "nobody",
        vec![TopicSpec::parse("t=envelope").unwrap()],
    );
    opts.retry_budget = Duration::from_secs(2);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let r = rt.block_on(stream::run(
            opts,
            |f| Some(whyslow_ingest::decode::decoder_for(f)),
            None,
            std::future::pending(),
        ));
        let _ = tx.send(r.map(|_| ()).map_err(|e| e.to_string()));
    });
    let ended = rx.recv_timeout(Duration::from_secs(30));
    let err = ended
        .expect("the worker did not stop within 30 s of a 2 s retry budget")
        .expect_err("an unreachable broker is an error");
    assert!(err.contains(&port.to_string()), "{err}");
}
