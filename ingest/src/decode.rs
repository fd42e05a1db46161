//! The decoder framework: one `Decoder` per real upstream format turns records into rows
//! of the `events` / `metrics` builders, or rejects them whole to `dead_letters`. Every
//! driver — files, Kafka, dead-letter retries — feeds records through one [`Feed`], which
//! takes each format's decoder from the registry ([`decoder_for`]).
//!
//! Accounting rule: for every record it is fed, a decoder calls exactly one of
//! [`Output::produced`], [`Output::skip`] or [`Output::reject`], so that
//! `records = produced + skipped + rejected` always holds.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::str::FromStr;

use arrow::array::RecordBatch;
use whyslow_schemas::{DeadLetter, DeadLetterBuilder, EventsBuilder, MetricsBuilder, Table};

pub mod auto;
pub mod container_log;
pub mod envelope;
mod feed;
pub mod k8s;
pub mod kmsg;
pub mod lines;
pub mod otlp;
pub mod prometheus;
mod registry;
pub mod slurm;

pub use feed::{Factory, Fed, Feed, Record};
pub use registry::decoder_for;

/// The longest record (line or document) a decoder accepts; longer ones are rejected.
pub const MAX_RECORD_BYTES: usize = 8 * 1024 * 1024;

/// The most bytes of one record a source reads: a longer one is kept in `dead_letters`
/// cut to this many bytes (with its whole length), so memory stays bounded whatever the
/// input.
pub const HARD_CAP_BYTES: usize = 64 * 1024 * 1024;

/// Text and payload bytes the builders gather before their rows must be handed on
/// ([`Output::pending_bytes`]): far below Arrow's 2 GiB per column, so that one more
/// record (a dead letter keeps up to 64 MiB of payload) can never overflow an offset.
pub const FLUSH_BYTES: usize = 256 * 1024 * 1024;

/// The input formats of `contracts/envelope.md`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Detect per file (and per record in mixed streams).
    Auto,
    /// whyslow's canonical JSON lines.
    Envelope,
    /// Kubernetes objects, including Kueue.
    K8s,
    /// Prometheus text / OpenMetrics, prometheus-kafka-adapter JSON.
    Prometheus,
    /// Kernel and system logs.
    Kmsg,
    /// Container stdout/stderr (CRI, Fluent Bit / Vector, kubectl logs).
    ContainerLog,
    /// slurmctld logs and `sacct --parsable2`.
    Slurm,
    /// OpenTelemetry OTLP logs and metrics requests, JSON or protobuf.
    Otlp,
}

impl Format {
    /// Every format name the CLI accepts.
    pub const ALL: [Format; 8] = [
        Format::Auto,
        Format::Envelope,
        Format::K8s,
        Format::Prometheus,
        Format::Kmsg,
        Format::ContainerLog,
        Format::Slurm,
        Format::Otlp,
    ];

    /// The name used on the command line and in `dead_letters.format`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Auto => "auto",
            Format::Envelope => "envelope",
            Format::K8s => "k8s",
            Format::Prometheus => "prometheus",
            Format::Kmsg => "kmsg",
            Format::ContainerLog => "container-log",
            Format::Slurm => "slurm",
            Format::Otlp => "otlp",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A format name that is not one of [`Format::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown format '{0}' (expected one of auto, envelope, k8s, prometheus, kmsg, container-log, slurm, otlp)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFormat(s.to_string()))
    }
}

/// How a file of a format is cut into records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One record per line (`\n`, an optional `\r` before it is dropped).
    Lines,
    /// The whole file is one record (a JSON/YAML document, a `List`).
    Document,
}

/// Where a record came from: named in dead letters (in fields and as text) and error
/// messages.
pub use whyslow_schemas::Origin;

/// What the caller knows about a record beyond its bytes.
#[derive(Debug, Clone, Default)]
pub struct Hints {
    /// The input's path (file sources), for formats that read meaning from it (CRI logs).
    pub path: Option<String>,
    /// `--node`, or a Kafka header: the node when the record does not name one.
    pub node: Option<String>,
    /// `--namespace` / `--pod` for plain `kubectl logs` output.
    pub namespace: Option<String>,
    pub pod: Option<String>,
    /// The cluster name to stamp on rows that do not carry one.
    pub cluster: Option<String>,
    /// A default time (ns since epoch) for records with none: `--time`, a scrape time,
    /// the file's mtime, or the Kafka message timestamp.
    pub default_time_ns: Option<i64>,
    /// Boot time (ns since epoch) for kernel records stamped relative to boot.
    pub boot_time_ns: Option<i64>,
    /// The time its shipper stamped on this one record (an OTLP log record's time): dates
    /// a line that carries none of its own, before the time of a preceding line.
    pub record_time_ns: Option<i64>,
}

/// Per-input tallies. `records = produced + skipped + rejected`;
/// `events + metrics` are the rows the produced records became.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub records: u64,
    pub produced: u64,
    pub skipped: u64,
    pub rejected: u64,
    pub events: u64,
    pub metrics: u64,
}

impl Counts {
    /// Adds another tally to this one.
    pub fn add(&mut self, o: &Counts) {
        self.records += o.records;
        self.produced += o.produced;
        self.skipped += o.skipped;
        self.rejected += o.rejected;
        self.events += o.events;
        self.metrics += o.metrics;
    }

    /// Whether every record is accounted for.
    pub fn balances(&self) -> bool {
        self.records == self.produced + self.skipped + self.rejected
    }
}

/// The builders a decoder writes into, and its tallies.
pub struct Output {
    pub events: EventsBuilder,
    pub metrics: MetricsBuilder,
    pub dead: DeadLetterBuilder,
    pub counts: Counts,
    events_at_record_start: usize,
    metrics_at_record_start: usize,
    /// Rows already finished out of the builders (kept by a [`Output::rollback`]),
    /// handed on first by [`Output::take_batches`].
    ready: Vec<(Table, RecordBatch)>,
}

/// Rows of each table an [`Output`] holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowCounts {
    pub events: usize,
    pub metrics: usize,
    pub dead: usize,
}

/// The state of an [`Output`] before a record, to undo what a failed decode appended.
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    counts: Counts,
    events: usize,
    metrics: usize,
    dead: usize,
}

impl Output {
    /// Empty builders stamping `ingest_time_ns` on every row.
    pub fn new(ingest_time_ns: i64) -> Self {
        Output {
            events: EventsBuilder::new(ingest_time_ns),
            metrics: MetricsBuilder::new(ingest_time_ns),
            dead: DeadLetterBuilder::new(ingest_time_ns),
            counts: Counts::default(),
            events_at_record_start: 0,
            metrics_at_record_start: 0,
            ready: Vec::new(),
        }
    }

    /// Where the output stands: [`Output::rollback`] returns to it.
    pub fn mark(&self) -> Mark {
        Mark {
            counts: self.counts,
            events: self.events.len(),
            metrics: self.metrics.len(),
            dead: self.dead.len(),
        }
    }

    /// Drops the rows appended since `mark` and restores the tallies: the rows before it
    /// are finished into batches kept for [`Output::take_batches`].
    pub fn rollback(&mut self, mark: &Mark) {
        if self.events.len() > mark.events {
            let b = self.events.finish();
            if mark.events > 0 {
                self.ready.push((Table::Events, b.slice(0, mark.events)));
            }
        }
        if self.metrics.len() > mark.metrics {
            let b = self.metrics.finish();
            if mark.metrics > 0 {
                self.ready.push((Table::Metrics, b.slice(0, mark.metrics)));
            }
        }
        if self.dead.len() > mark.dead {
            let b = self.dead.finish();
            if mark.dead > 0 {
                self.ready.push((Table::DeadLetters, b.slice(0, mark.dead)));
            }
        }
        self.counts = mark.counts;
        self.events_at_record_start = self.events.len();
        self.metrics_at_record_start = self.metrics.len();
    }

    /// Every row so far as batches (events, metrics, dead letters; no empty batch); the
    /// builders start empty again. The tallies are kept.
    pub fn take_batches(&mut self) -> Vec<(Table, RecordBatch)> {
        let mut batches = std::mem::take(&mut self.ready);
        if !self.events.is_empty() {
            batches.push((Table::Events, self.events.finish()));
        }
        if !self.metrics.is_empty() {
            batches.push((Table::Metrics, self.metrics.finish()));
        }
        if !self.dead.is_empty() {
            batches.push((Table::DeadLetters, self.dead.finish()));
        }
        self.events_at_record_start = 0;
        self.metrics_at_record_start = 0;
        batches
    }

    /// Call before decoding each record: counts it and remembers the row counts so that
    /// `produced` can tell how many rows it became.
    pub fn begin_record(&mut self) {
        self.counts.records += 1;
        self.events_at_record_start = self.events.len();
        self.metrics_at_record_start = self.metrics.len();
    }

    /// The record became the rows appended since `begin_record`.
    pub fn produced(&mut self) {
        self.counts.produced += 1;
        self.counts.events += (self.events.len() - self.events_at_record_start) as u64;
        self.counts.metrics += (self.metrics.len() - self.metrics_at_record_start) as u64;
    }

    /// The record carries nothing any rule reads (skipped by design, counted).
    pub fn skip(&mut self) {
        self.counts.skipped += 1;
    }

    /// The record cannot be read: kept whole in `dead_letters` with the reason.
    pub fn reject(&mut self, origin: &Origin<'_>, format: Format, error: &str, payload: &[u8]) {
        self.reject_letter(&DeadLetter::whole(*origin, format.name(), error, payload));
    }

    /// The record cannot be read: kept in `dead_letters` as `letter` says (a payload cut
    /// at the hard cap says how long the record was).
    pub fn reject_letter(&mut self, letter: &DeadLetter<'_>) {
        self.counts.rejected += 1;
        self.dead.append(letter);
    }

    /// Rows appended so far per table, those already finished into batches included
    /// (and those a rollback dropped excluded): a record's rows run from the counts
    /// before it to the counts after, in the batches [`Output::take_batches`] returns.
    pub fn row_counts(&self) -> RowCounts {
        let mut c = RowCounts {
            events: self.events.len(),
            metrics: self.metrics.len(),
            dead: self.dead.len(),
        };
        for (t, b) in &self.ready {
            match t {
                Table::Events => c.events += b.num_rows(),
                Table::Metrics => c.metrics += b.num_rows(),
                _ => c.dead += b.num_rows(),
            }
        }
        c
    }

    /// Rows waiting in the builders.
    pub fn pending_rows(&self) -> usize {
        let ready: usize = self.ready.iter().map(|(_, b)| b.num_rows()).sum();
        ready + self.events.len() + self.metrics.len() + self.dead.len()
    }

    /// Decodes the parts of one record (the log records of an OTLP request) with `f`,
    /// whose decoders account for each part as if it were a record; returns the parts'
    /// tallies and leaves the record's own tally (begun with [`Output::begin_record`]) as
    /// it was, for the caller to close with one of `produced`, `skip` or `reject`.
    pub fn parts<R>(&mut self, f: impl FnOnce(&mut Output) -> R) -> (Counts, R) {
        let before = self.counts;
        let starts = (self.events_at_record_start, self.metrics_at_record_start);
        let r = f(self);
        let after = self.counts;
        self.counts = before;
        (self.events_at_record_start, self.metrics_at_record_start) = starts;
        let parts = Counts {
            records: after.records.saturating_sub(before.records),
            produced: after.produced.saturating_sub(before.produced),
            skipped: after.skipped.saturating_sub(before.skipped),
            rejected: after.rejected.saturating_sub(before.rejected),
            events: after.events.saturating_sub(before.events),
            metrics: after.metrics.saturating_sub(before.metrics),
        };
        (parts, r)
    }

    /// Text and payload bytes waiting in the builders; a driver hands the rows on once
    /// this reaches [`FLUSH_BYTES`].
    pub fn pending_bytes(&self) -> usize {
        self.events.bytes() + self.metrics.bytes() + self.dead.bytes()
    }
}

/// What a panic carried, as text.
fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic".to_string()
    }
}

/// Decodes one record with `decoder`, containing a failure: should the decoder panic
/// (a bug; decoders must not), what it appended for the record is dropped and the
/// record goes whole to `dead_letters` with the reason, so the record is accounted for
/// and the run or stream goes on. Returns whether the decoder failed.
pub fn decode_contained(
    decoder: &mut dyn Decoder,
    bytes: &[u8],
    origin: &Origin<'_>,
    hints: &Hints,
    out: &mut Output,
) -> bool {
    let format = decoder.format();
    let failed = contained(out, |out| decoder.decode(bytes, origin, hints, out));
    failed.is_some_and(|panic| {
        let why = format!(
            "{origin}: the {format} decoder failed on this record ({panic}); kept here whole"
        );
        dead_letter_failure(out, origin, format, &why, bytes);
        true
    })
}

/// Ends an input with `decoder` ([`Decoder::finish`], or [`Decoder::release_complete`]
/// with `release`), containing a failure: the rows it appended are dropped and one dead
/// letter (with no payload: the records it held are gone with its state), at `origin`
/// (the input's last record, or the stream), says what was lost. Returns whether the
/// decoder failed.
pub fn finish_contained(
    decoder: &mut dyn Decoder,
    release: bool,
    origin: &Origin<'_>,
    hints: &Hints,
    out: &mut Output,
) -> bool {
    let format = decoder.format();
    let failed = contained(out, |out| {
        if release {
            decoder.release_complete(out);
        } else {
            decoder.finish(hints, out);
        }
    });
    failed.is_some_and(|panic| {
        let why = format!(
            "{origin}: the {format} decoder failed emitting the records it held ({panic}); they are lost"
        );
        dead_letter_failure(out, origin, format, &why, b"");
        true
    })
}

/// Runs `f` on `out`; should it panic, rolls `out` back to where it was and returns the
/// panic's text.
fn contained(out: &mut Output, f: impl FnOnce(&mut Output)) -> Option<String> {
    let mark = out.mark();
    let r = catch_unwind(AssertUnwindSafe(|| f(out)));
    let p = r.err()?;
    out.rollback(&mark);
    Some(panic_text(p.as_ref()))
}

/// Logs a contained decoder failure and dead-letters `payload` with it.
fn dead_letter_failure(
    out: &mut Output,
    origin: &Origin<'_>,
    format: Format,
    why: &str,
    payload: &[u8],
) {
    tracing::error!("{why}.");
    out.begin_record();
    out.reject(origin, format, why, payload);
}

/// One real upstream format.
pub trait Decoder: Send {
    /// The format this decoder reads.
    fn format(&self) -> Format;

    /// How files of this format are cut into records.
    fn framing(&self) -> Framing {
        Framing::Lines
    }

    /// Decodes one record. Must call `out.begin_record()` first, then exactly one of
    /// `produced`, `skip` or `reject`; must never panic on any input. A Kafka message is
    /// always fed whole: a line format splits it on newlines itself and accounts for it
    /// as one record.
    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output);

    /// End of one input (file or stream): emit anything held back (a multi-line
    /// traceback, a value-change baseline). Default: nothing held.
    fn finish(&mut self, _hints: &Hints, _out: &mut Output) {}

    /// A stream worker is about to commit (file ingest never calls this): emit the
    /// multi-line records held back that are already whole (a traceback past its
    /// exception line), so they do not wait for a next line that may never come; keep
    /// everything else. Default: nothing held.
    fn release_complete(&mut self, _out: &mut Output) {}

    /// The Kafka offset of the earliest message whose content this decoder still holds
    /// without having emitted it (an open traceback, a CRI partial line): a stream worker
    /// records no offset past it, so a crash makes the message come again instead of
    /// losing what it began. `None`: nothing held, or nothing that came from Kafka.
    fn held_from(&self) -> Option<i64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use whyslow_schemas::builders::{EventRow, Scope};
    use whyslow_schemas::{Layer, Severity};

    /// Appends one event per record; panics on a record that says `boom`, after
    /// appending its event (a bug in the middle of a decode).
    struct Fragile;

    impl Decoder for Fragile {
        fn format(&self) -> Format {
            Format::ContainerLog
        }

        fn decode(&mut self, bytes: &[u8], _: &Origin<'_>, _: &Hints, out: &mut Output) {
            out.begin_record();
            let row = EventRow {
                time_ns: 1,
                event_id: "id",
                layer: Layer::Framework,
                source: "test",
                kind: "k",
                severity: Severity::Info,
                scope: Scope::default(),
                reason: None,
                message: std::str::from_utf8(bytes).ok(),
            };
            out.events.append(&row, [("a", "b")]);
            if bytes == b"boom" {
                panic!("a decoder bug");
            }
            out.produced();
        }

        fn finish(&mut self, _: &Hints, out: &mut Output) {
            out.events.append(
                &EventRow {
                    time_ns: 1,
                    event_id: "held",
                    layer: Layer::Framework,
                    source: "test",
                    kind: "k",
                    severity: Severity::Info,
                    scope: Scope::default(),
                    reason: None,
                    message: None,
                },
                [("a", "b")],
            );
            panic!("a bug at the end");
        }
    }

    fn messages(batches: &[(Table, RecordBatch)]) -> Vec<String> {
        use arrow::array::AsArray;
        batches
            .iter()
            .filter(|(t, _)| *t == Table::Events)
            .flat_map(|(_, b)| {
                let m = b.column_by_name("message").unwrap().as_string::<i32>();
                (0..b.num_rows())
                    .map(|i| m.value(i).to_string())
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    #[test]
    fn a_panicking_decode_is_one_dead_letter_and_its_rows_are_dropped() {
        let mut d = Fragile;
        let mut out = Output::new(0);
        let hints = Hints::default();
        for (i, rec) in ["a", "boom", "c"].into_iter().enumerate() {
            let origin = Origin::File {
                path: "f.log",
                line: i as u64 + 1,
            };
            let failed = decode_contained(&mut d, rec.as_bytes(), &origin, &hints, &mut out);
            assert_eq!(failed, rec == "boom");
        }
        assert_eq!(out.counts.records, 3);
        assert_eq!((out.counts.produced, out.counts.rejected), (2, 1));
        assert!(out.counts.balances());
        assert_eq!(out.counts.events, 2);
        assert_eq!(out.pending_rows(), 3);
        let batches = out.take_batches();
        assert_eq!(messages(&batches), ["a", "c"]);
        let dead: Vec<_> = batches
            .iter()
            .filter(|(t, _)| *t == Table::DeadLetters)
            .collect();
        assert_eq!(dead.len(), 1);
        use arrow::array::AsArray;
        let b = &dead[0].1;
        let error = b.column_by_name("error").unwrap().as_string::<i32>();
        assert!(
            error
                .value(0)
                .starts_with("f.log:2: the container-log decoder failed")
        );
        assert!(error.value(0).contains("a decoder bug"));
        let payload = b.column_by_name("payload").unwrap().as_binary::<i32>();
        assert_eq!(payload.value(0), b"boom");
        // A failing finish loses what it held, and says so in one dead letter.
        let end = Origin::File {
            path: "f.log",
            line: 3,
        };
        assert!(finish_contained(&mut d, false, &end, &hints, &mut out));
        let batches = out.take_batches();
        assert!(messages(&batches).is_empty());
        assert_eq!(out.counts.rejected, 2);
    }

    #[test]
    fn builders_count_their_bytes() {
        let mut out = Output::new(0);
        let origin = Origin::File { path: "f", line: 1 };
        out.dead
            .append(&DeadLetter::whole(origin, "envelope", "bad", &[0u8; 1000]));
        // source_ref `f:1`, source_path `f`, the format, the reason and the payload.
        assert_eq!(out.pending_bytes(), 3 + 1 + 8 + 3 + 1000);
        out.take_batches();
        assert_eq!(out.pending_bytes(), 0);
    }
}
