//! The consumer-group member: Kafka → micro-batches → store, with offsets committed to
//! Kafka only after the store segment holding them is committed.
//!
//! Delivery: the store records the next offset of every partition it holds in the same
//! Delta commit as the batch's `events` rows, after the batch's other tables are
//! committed (a crash between them leaves rows that the re-read batch drops as
//! duplicates). On assignment the consumer starts each partition
//! at the store's offset, and any message below it is skipped as redelivered, so a crash
//! at any moment (before or after either commit) loses nothing and duplicates nothing.
//! A record a decoder still holds across messages (an open traceback) keeps the recorded
//! offset at the message it began in (`MicroBatch::take`): after a crash its lines come
//! again, and the rows decoded twice meanwhile are duplicates the store drops.
//! A commit that fails with an error that may pass (a bucket that does not answer) keeps
//! its batch and is tried again, reading nothing new meanwhile, until the retry budget
//! runs out; only then does the worker stop, its offsets still unrecorded.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, StreamConsumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Headers, Message as _};
use rdkafka::topic_partition_list::{Offset, TopicPartitionList};
use rdkafka::types::RDKafkaRespErr;
use tracing::{error, info, warn};

use super::StreamError;
use super::batch::{Accepted, Flushed, Message, MicroBatch};
use super::incidents::{CommitObserver, Committed};
use super::options::StreamOptions;
use super::telemetry::{PartitionLabels, Telemetry, TopicLabels};
use crate::decode::{Decoder, Format};
use whyslow_store::{CommitStats, KafkaOffset, StoreError, StoreWriter};

/// What a worker did before it stopped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamSummary {
    pub messages: u64,
    pub redelivered: u64,
    pub rows_written: u64,
    pub duplicate_rows: u64,
    pub rejected: u64,
    pub commits: u64,
}

/// The state shared by the poll loop and the rebalance callback.
struct Pipeline {
    /// The store root. In a directory the writer is opened for each commit only, so
    /// that several workers (one process each) can share one store, their commits taking
    /// turns on its lock.
    root: PathBuf,
    /// In a bucket (no lock), the writer kept between commits and refreshed before each,
    /// which reads only the Delta commits made since instead of the whole store.
    kept: Option<StoreWriter>,
    batch: MicroBatch,
    /// A flushed batch whose commit failed with an error that may pass (the bucket did not
    /// answer): committed again before anything else, while the poll loop reads nothing
    /// new, so a store outage holds the consumer back instead of growing memory.
    pending: Option<Flushed>,
    /// Since when the store has failed, the last error and when to try again.
    store_down: Option<StoreOutage>,
    stored: BTreeMap<(String, i32), i64>,
    summary: StreamSummary,
    telemetry: Arc<Telemetry>,
    observer: Option<Box<dyn CommitObserver>>,
}

impl Pipeline {
    /// Writes the batch to the store (segments and offsets in one commit), then tells
    /// Kafka. Returns the offsets to commit to Kafka. A batch whose commit failed stays
    /// [`Pipeline::pending`] and is what the next flush commits.
    fn flush(&mut self) -> Result<Option<TopicPartitionList>, StreamError> {
        let started = Instant::now();
        let flushed = match self.pending.take() {
            Some(pending) => pending,
            None => {
                // Rows without messages: what the decoders held back, emitted at the end.
                if self.batch.is_empty() && self.batch.rows() == 0 {
                    self.telemetry.note_committed();
                    return Ok(None);
                }
                self.batch.take()
            }
        };
        let moved = flushed
            .offsets
            .iter()
            .any(|(key, next)| self.stored.get(key) != Some(next));
        if flushed.batches.is_empty() && !moved {
            // Only a partition waiting for a record a decoder still holds: nothing new.
            self.telemetry.note_committed();
            return Ok(None);
        }
        match self.commit(&flushed) {
            Ok((writer, stats)) => Ok(self.committed(writer, stats, flushed, started)),
            Err(e) => {
                self.pending = Some(flushed);
                Err(e.into())
            }
        }
    }

    /// Writes a flushed batch's rows and offsets in one store commit. A writer whose
    /// commit failed is not kept: the next flush opens a fresh one.
    fn commit(&mut self, flushed: &Flushed) -> Result<(StoreWriter, CommitStats), StoreError> {
        let mut writer = match self.kept.take() {
            Some(mut kept) => {
                kept.refresh()?;
                kept
            }
            None => open_writer_taking_turns(&self.root)?,
        };
        for (table, batch) in &flushed.batches {
            // A RecordBatch clone shares its buffers; the batch stays for a retry.
            writer.append(*table, batch.clone())?;
        }
        // Offsets never move back: after a rebalance another worker may already have
        // stored further messages of a partition (their rows are duplicates, skipped).
        let held = writer.store().kafka_offsets();
        let offsets: Vec<KafkaOffset> = flushed
            .offsets
            .iter()
            .filter(|(key, next)| held.get(*key).is_none_or(|h| h < *next))
            .map(|((topic, partition), next)| KafkaOffset {
                topic: topic.clone(),
                partition: *partition,
                next_offset: *next,
            })
            .collect();
        let stats = writer.commit(&offsets)?;
        Ok((writer, stats))
    }

    /// Accounts for a committed batch, lets the observer see it and keeps a bucket's
    /// writer. Returns the offsets to commit to Kafka.
    fn committed(
        &mut self,
        writer: StoreWriter,
        stats: CommitStats,
        flushed: Flushed,
        started: Instant,
    ) -> Option<TopicPartitionList> {
        if self.store_down.take().is_some() {
            eprintln!("whyslow stream: the store is writable again; resuming.");
        }
        let (written, duplicates) = (stats.written(), stats.duplicates());
        self.summary.rows_written += written;
        self.summary.duplicate_rows += duplicates;
        self.summary.rejected += flushed.rejected;
        self.summary.commits += 1;
        self.telemetry.written.inc_by(written);
        self.telemetry.duplicates.inc_by(duplicates);
        let mut tpl = TopicPartitionList::new();
        for ((topic, partition), next) in flushed.offsets {
            self.stored.insert((topic.clone(), partition), next);
            // Adding a partition with an explicit offset to a fresh list cannot fail.
            let _ = tpl.add_partition_offset(&topic, partition, Offset::Offset(next));
        }
        self.telemetry.observe_batch(started.elapsed());
        self.telemetry.note_committed();
        if let Some(observer) = self.observer.as_mut() {
            let commit = Committed {
                rows_written: written,
                arrivals: flushed.arrivals,
                took: started.elapsed(),
            };
            observer.committed(writer.store(), &commit);
        }
        if writer.store().object_store().is_some() {
            self.kept = Some(writer);
        }
        (tpl.count() > 0).then_some(tpl)
    }

    /// Notes a store failure that may pass: the first of an outage is said on stderr,
    /// and the next try waits a little longer each time (up to 10 s).
    fn note_store_failure(&mut self, error: StoreError) {
        let outage = self.store_down.get_or_insert_with(|| {
            eprintln!("whyslow stream: cannot write the store, retrying: {error}.");
            StoreOutage {
                since: Instant::now(),
                backoff: Duration::from_millis(250),
                retry_at: Instant::now(),
                last: None,
            }
        });
        outage.backoff = (outage.backoff * 2).min(Duration::from_secs(10));
        outage.retry_at = Instant::now() + outage.backoff;
        warn!(
            "Store commit failed, retrying in {:?}: {error}.",
            outage.backoff
        );
        outage.last = Some(error);
    }

    /// Whether the poll loop should try the pending commit now.
    fn retry_due(&self) -> bool {
        self.pending.is_some()
            && self
                .store_down
                .as_ref()
                .is_none_or(|o| Instant::now() >= o.retry_at)
    }
}

/// A store that has failed to take commits since `since`.
struct StoreOutage {
    since: Instant,
    backoff: Duration,
    retry_at: Instant,
    last: Option<StoreError>,
}

struct WorkerContext {
    pipeline: Arc<Mutex<Pipeline>>,
    health: Arc<Mutex<Health>>,
    /// A flush that failed inside a rebalance callback, reported by the poll loop.
    failure: Arc<Mutex<Option<StreamError>>>,
}

#[derive(Debug, Default)]
struct Health {
    down_since: Option<Instant>,
    last_error: Option<String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means another thread panicked while holding it; the data is
    // still the last consistent state we wrote, so keep going with it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl ClientContext for WorkerContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        match level {
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                warn!(facility = fac, "Kafka: {log_message}.")
            }
            _ => tracing::debug!(facility = fac, "Kafka: {log_message}."),
        }
    }

    fn error(&self, error: KafkaError, reason: &str) {
        let mut h = lock(&self.health);
        if h.down_since.is_none() {
            eprintln!("whyslow stream: broker problem, retrying: {reason} ({error}).");
            h.down_since = Some(Instant::now());
        }
        h.last_error = Some(format!("{reason} ({error})"));
    }
}

impl ConsumerContext for WorkerContext {
    fn rebalance(
        &self,
        consumer: &BaseConsumer<Self>,
        err: RDKafkaRespErr,
        tpl: &mut TopicPartitionList,
    ) {
        match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let mut p = lock(&self.pipeline);
                // Another worker may have committed these partitions since we last looked.
                let stored = match whyslow_store::Store::open(&p.root) {
                    Ok(fresh) => fresh.kafka_offsets(),
                    Err(e) => {
                        error!("Could not re-read the store before an assignment: {e}.");
                        p.stored.clone()
                    }
                };
                for elem in tpl.elements() {
                    let key = (elem.topic().to_string(), elem.partition());
                    if let Some(next) = stored.get(&key) {
                        p.stored.insert(key.clone(), *next);
                    }
                }
                for ((topic, partition), next) in &stored {
                    if tpl.find_partition(topic, *partition).is_some() {
                        let _ = tpl.set_partition_offset(topic, *partition, Offset::Offset(*next));
                    }
                }
                info!(
                    partitions = tpl.count(),
                    "Assigned partitions; starting at the store's offsets."
                );
                p.telemetry.note_assigned(tpl.count() as i64);
                if let Err(e) = consumer.assign(tpl) {
                    error!("Could not take the assignment: {e}.");
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                let mut p = lock(&self.pipeline);
                match p.flush() {
                    Ok(Some(offsets)) => {
                        if let Err(e) = consumer.commit(&offsets, CommitMode::Sync) {
                            warn!(
                                "Could not commit offsets to Kafka on revoke (the store holds them): {e}."
                            );
                        }
                    }
                    Ok(None) => {}
                    // The batch stays pending and is committed later: offsets never
                    // move back and rows the next owner also stores are duplicates.
                    Err(StreamError::Store(e)) if e.may_pass() => p.note_store_failure(e),
                    Err(e) => *lock(&self.failure) = Some(e),
                }
                for elem in tpl.elements() {
                    p.batch.forget_partition(elem.topic(), elem.partition());
                    p.stored
                        .remove(&(elem.topic().to_string(), elem.partition()));
                }
                info!(
                    partitions = tpl.count(),
                    "Partitions revoked after a flush."
                );
                p.telemetry.note_assigned(0);
                if let Err(e) = consumer.unassign() {
                    error!("Could not release the assignment: {e}.");
                }
            }
            other => {
                error!("Rebalance error: {other:?}.");
                let _ = consumer.unassign();
            }
        }
    }
}

/// Runs a worker until `shutdown` resolves (SIGINT/SIGTERM in the binary), then flushes,
/// commits, lets the observer finish and returns what it did.
pub async fn run(
    opts: StreamOptions,
    make_decoder: fn(Format) -> Option<Box<dyn Decoder>>,
    observer: Option<Box<dyn CommitObserver>>,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<StreamSummary, StreamError> {
    let telemetry = Telemetry::with(|registry| {
        if let Some(o) = &observer {
            o.register_metrics(registry);
        }
    });
    // Data held this long without a commit means the worker is stuck (slow store, a
    // writer lock held): ten flush intervals, at least a minute.
    telemetry.set_stale_after((opts.flush_interval * 10).max(Duration::from_secs(60)));
    let metrics_server = match &opts.metrics_addr {
        Some(addr) => Some(
            super::http::serve(addr, telemetry.clone())
                .await
                .map_err(|e| StreamError::MetricsEndpoint {
                    addr: addr.clone(),
                    source: e,
                })?,
        ),
        None => None,
    };
    // Creates the store if needed and clears what a crashed writer left behind.
    let stored = open_writer_taking_turns(&opts.store)?
        .store()
        .kafka_offsets();
    let topic_formats: HashMap<String, Format> = opts
        .topics
        .iter()
        .map(|t| (t.name.clone(), t.format))
        .collect();
    let pipeline = Arc::new(Mutex::new(Pipeline {
        root: opts.store.clone(),
        kept: None,
        batch: MicroBatch::new(topic_formats, make_decoder, now_ns),
        pending: None,
        store_down: None,
        stored,
        summary: StreamSummary::default(),
        telemetry: telemetry.clone(),
        observer,
    }));
    let health = Arc::new(Mutex::new(Health::default()));
    let failure = Arc::new(Mutex::new(None));
    let context = WorkerContext {
        pipeline: pipeline.clone(),
        health: health.clone(),
        failure: failure.clone(),
    };

    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", &opts.brokers)
        .set("group.id", &opts.group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "false")
        .set("session.timeout.ms", "10000")
        .set("heartbeat.interval.ms", "1000")
        .set("max.poll.interval.ms", "300000")
        .set("reconnect.backoff.ms", "100")
        .set("reconnect.backoff.max.ms", "5000")
        // A subscribed topic missing from the metadata at join time (created later, or
        // its metadata timed out under load) is assigned at the next refresh: librdkafka's
        // default of 5 minutes left whole topics unread that long.
        .set("topic.metadata.refresh.interval.ms", "10000");
    for (k, v) in &opts.kafka_config {
        config.set(k, v);
    }
    let consumer: Arc<StreamConsumer<WorkerContext>> = Arc::new(
        config
            .create_with_context(context)
            .map_err(StreamError::Kafka)?,
    );
    let topics: Vec<&str> = opts.topics.iter().map(|t| t.name.as_str()).collect();
    consumer.subscribe(&topics).map_err(StreamError::Kafka)?;
    info!(brokers = %opts.brokers, group = %opts.group, ?topics, "Consuming.");

    let lag_task = tokio::spawn(watch_lag(
        consumer.clone(),
        pipeline.clone(),
        health.clone(),
        telemetry.clone(),
    ));
    let mut ticker = tokio::time::interval(opts.flush_interval.min(Duration::from_millis(250)));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);

    let result = loop {
        if let Some(e) = lock(&failure).take() {
            break Err(e);
        }
        // One guard for both reads: a second `lock` while the `if let` scrutinee's guard
        // lives would deadlock.
        let outage = {
            let h = lock(&health);
            h.down_since
                .filter(|since| since.elapsed() > opts.retry_budget)
                .map(|_| h.last_error.clone().unwrap_or_default())
        };
        if let Some(last) = outage {
            break Err(StreamError::BrokerUnreachable {
                brokers: opts.brokers.clone(),
                budget: opts.retry_budget,
                last,
            });
        }
        let (store_down, store_gave_up) = {
            let mut p = lock(&pipeline);
            let over = p
                .store_down
                .as_ref()
                .is_some_and(|o| o.since.elapsed() > opts.retry_budget);
            let last = if over {
                p.store_down.take().and_then(|o| o.last)
            } else {
                None
            };
            (p.pending.is_some(), last)
        };
        if let Some(last) = store_gave_up {
            break Err(StreamError::StoreUnreachable {
                budget: opts.retry_budget,
                last,
            });
        }
        tokio::select! {
            _ = &mut shutdown => {
                info!("Shutting down: flushing and committing.");
                break Ok(());
            }
            _ = ticker.tick() => {
                let due = {
                    let p = lock(&pipeline);
                    p.retry_due()
                        || (!p.batch.is_empty() && p.batch.age() >= opts.flush_interval)
                };
                if due && let Err(e) = flush_off_runtime(&pipeline, &consumer).await {
                    break Err(e);
                }
            }
            // While a commit is pending nothing new is read: librdkafka's queue fills and
            // stops fetching, so an outage of the store costs no memory.
            received = consumer.recv(), if !store_down => match received {
                Ok(msg) => {
                    lock(&health).down_since = None;
                    let headers: Vec<(&str, &str)> = msg
                        .headers()
                        .map(|h| {
                            h.iter()
                                .filter_map(|hd| Some((hd.key, std::str::from_utf8(hd.value?).ok()?)))
                                .collect()
                        })
                        .unwrap_or_default();
                    let m = Message {
                        topic: msg.topic(),
                        partition: msg.partition(),
                        offset: msg.offset(),
                        payload: msg.payload(),
                        key: msg.key(),
                        timestamp_ms: msg.timestamp().to_millis(),
                        headers: &headers,
                    };
                    let flush_now = {
                        let mut p = lock(&pipeline);
                        let stored = p.stored.get(&(m.topic.to_string(), m.partition)).copied();
                        let labels = TopicLabels { topic: m.topic.to_string() };
                        p.telemetry.consumed.get_or_create(&labels).inc();
                        p.summary.messages += 1;
                        let rejected_before = p.batch_rejected();
                        match p.batch.add(&m, stored) {
                            Accepted::Redelivered => {
                                p.summary.redelivered += 1;
                                p.telemetry.redelivered.get_or_create(&labels).inc();
                            }
                            Accepted::Decoded => {
                                let newly = p.batch_rejected() - rejected_before;
                                if newly > 0 {
                                    p.telemetry.rejected.get_or_create(&labels).inc_by(newly);
                                }
                            }
                        }
                        if !p.batch.is_empty() {
                            p.telemetry.note_pending();
                        }
                        p.batch.rows() >= opts.max_batch_rows
                            || p.batch.bytes() >= opts.max_batch_bytes
                            || p.batch.is_full()
                    };
                    if flush_now && let Err(e) = flush_off_runtime(&pipeline, &consumer).await {
                        break Err(e);
                    }
                }
                Err(e) => {
                    note_broker_error(&health, &e.to_string());
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    };
    lag_task.abort();
    // Whatever happened, what is buffered goes to the store before we leave, with what
    // the decoders still hold.
    lock(&pipeline).batch.finish_decoders();
    let mut final_flush = flush_off_runtime(&pipeline, &consumer).await;
    // A pending batch went first: what the decoders held back is a second commit.
    let held_back = {
        let p = lock(&pipeline);
        p.pending.is_none() && !(p.batch.is_empty() && p.batch.rows() == 0)
    };
    if final_flush.is_ok() && held_back {
        final_flush = flush_off_runtime(&pipeline, &consumer).await;
    }
    consumer.unsubscribe();
    if let Some(s) = metrics_server {
        s.abort();
    }
    // The observer finishes even when the worker failed: what was committed is analyzed.
    let observer = lock(&pipeline).observer.take();
    if let Some(mut o) = observer {
        o.finish();
    }
    result?;
    final_flush?;
    // A commit the store did not take even at the end: its messages are read again at
    // the next start (their offsets were never recorded), but this run did not finish.
    let unwritten = {
        let mut p = lock(&pipeline);
        match p.pending {
            // A pending batch always has its outage's last error.
            Some(_) => p.store_down.take().and_then(|o| o.last),
            None => None,
        }
    };
    if let Some(e) = unwritten {
        return Err(StreamError::Store(e));
    }
    let summary = lock(&pipeline).summary;
    Ok(summary)
}

/// Opens the store's writer, waiting while another writer (a worker, the live analyzers,
/// `ingest`, `replay`) holds it for a commit. A worker never gives up on a held lock:
/// the lock is released when its holder commits or dies, and every other writer holds it
/// for one commit only, so a long wait means a slow commit, said on stderr every minute.
fn open_writer_taking_turns(root: &Path) -> Result<StoreWriter, StoreError> {
    let started = Instant::now();
    loop {
        match StoreWriter::open_waiting(root, Duration::from_secs(60)) {
            Err(StoreError::Locked { path }) => eprintln!(
                "whyslow stream: the store {} has been locked by another writer for {} s; \
                 still waiting for it.",
                path.display(),
                started.elapsed().as_secs()
            ),
            other => return other,
        }
    }
}

/// Records that the broker failed; the first failure of an outage is said on stderr.
fn note_broker_error(health: &Mutex<Health>, error: &str) {
    let mut h = lock(health);
    if h.down_since.is_none() {
        eprintln!("whyslow stream: Kafka error, retrying: {error}.");
        h.down_since = Some(Instant::now());
    }
    h.last_error = Some(error.to_string());
}

impl Pipeline {
    fn batch_rejected(&self) -> u64 {
        self.batch.rejected()
    }
}

/// Flushes and commits on tokio's blocking pool: Parquet encoding, fsync, a wait for the
/// store's lock and the live analyzers' work never hold up the runtime's threads (the lag
/// reporter, the metrics endpoint). A rebalance callback's flush still runs inline: it
/// must end before librdkafka hands the partitions over.
async fn flush_off_runtime(
    pipeline: &Arc<Mutex<Pipeline>>,
    consumer: &Arc<StreamConsumer<WorkerContext>>,
) -> Result<(), StreamError> {
    let (p, c) = (pipeline.clone(), consumer.clone());
    match tokio::task::spawn_blocking(move || flush_and_commit(&p, &c)).await {
        Ok(result) => result,
        // A panic inside the flush is the worker's own bug: it goes on unwinding here,
        // as it did when the flush ran inline.
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        // The runtime is shutting down under us: what was not committed comes again.
        Err(_) => Ok(()),
    }
}

fn flush_and_commit(
    pipeline: &Arc<Mutex<Pipeline>>,
    consumer: &StreamConsumer<WorkerContext>,
) -> Result<(), StreamError> {
    let offsets = {
        let mut p = lock(pipeline);
        match p.flush() {
            Ok(offsets) => offsets,
            // Kept pending and tried again by the poll loop, within the retry budget.
            Err(StreamError::Store(e)) if e.may_pass() => {
                p.note_store_failure(e);
                return Ok(());
            }
            Err(e) => return Err(e),
        }
    };
    if let Some(offsets) = offsets
        && let Err(e) = consumer.commit(&offsets, CommitMode::Async)
    {
        // The store holds the offsets; Kafka's copy only speeds up other consumers.
        warn!("Could not commit offsets to Kafka (the store holds them): {e}.");
    }
    Ok(())
}

/// Every few seconds: consumer lag per assigned partition (high watermark minus the
/// store's offset), and whether the broker answers.
async fn watch_lag(
    consumer: Arc<StreamConsumer<WorkerContext>>,
    pipeline: Arc<Mutex<Pipeline>>,
    health: Arc<Mutex<Health>>,
    telemetry: Arc<Telemetry>,
) {
    let mut stored: BTreeMap<(String, i32), i64> = BTreeMap::new();
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let c = consumer.clone();
        // A flush holds the pipeline for seconds at times: then the last offsets seen
        // serve, rather than blocking this task's thread.
        match pipeline.try_lock() {
            Ok(p) => stored = p.stored.clone(),
            Err(std::sync::TryLockError::Poisoned(p)) => stored = p.into_inner().stored.clone(),
            Err(std::sync::TryLockError::WouldBlock) => {}
        }
        let snapshot = stored.clone();
        let probe = tokio::task::spawn_blocking(move || {
            let assignment = c.assignment()?;
            let mut lags = Vec::new();
            for elem in assignment.elements() {
                let (_low, high) =
                    c.fetch_watermarks(elem.topic(), elem.partition(), Duration::from_secs(2))?;
                let committed = snapshot
                    .get(&(elem.topic().to_string(), elem.partition()))
                    .copied()
                    .unwrap_or(0);
                lags.push((
                    elem.topic().to_string(),
                    elem.partition(),
                    (high - committed).max(0),
                ));
            }
            if lags.is_empty() {
                c.fetch_metadata(None, Duration::from_secs(2))?;
            }
            Ok::<_, KafkaError>(lags)
        })
        .await;
        match probe {
            Ok(Ok(lags)) => {
                let was_down = lock(&health).down_since.take();
                if was_down.is_some() {
                    eprintln!("whyslow stream: broker reachable again; resuming.");
                }
                telemetry.broker_up.set(1);
                for (topic, partition, lag) in lags {
                    telemetry
                        .lag
                        .get_or_create(&PartitionLabels { topic, partition })
                        .set(lag);
                }
            }
            Ok(Err(e)) => {
                telemetry.broker_up.set(0);
                let mut h = lock(&health);
                if h.down_since.is_none() {
                    eprintln!("whyslow stream: broker not answering, retrying: {e}.");
                    h.down_since = Some(Instant::now());
                }
                h.last_error = Some(e.to_string());
            }
            Err(_) => return,
        }
    }
}

fn now_ns() -> i64 {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
}
