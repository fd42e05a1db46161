//! The decoder framework: one `Decoder` per real upstream format turns records into rows
//! of the `events` / `metrics` builders, or rejects them whole to `dead_letters`.
//!
//! Accounting rule: for every record it is fed, a decoder calls exactly one of
//! [`Output::produced`], [`Output::skip`] or [`Output::reject`], so that
//! `records = produced + skipped + rejected` always holds.

use std::fmt;
use std::str::FromStr;

use whyslow_schemas::{DeadLetterBuilder, EventsBuilder, MetricsBuilder};

pub mod auto;
pub mod container_log;
pub mod envelope;
pub mod k8s;
pub mod kmsg;
pub mod prometheus;
pub mod slurm;

/// The longest record (line or document) a decoder accepts; longer ones are rejected.
pub const MAX_RECORD_BYTES: usize = 8 * 1024 * 1024;

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
}

impl Format {
    /// Every format name the CLI accepts.
    pub const ALL: [Format; 7] = [
        Format::Auto,
        Format::Envelope,
        Format::K8s,
        Format::Prometheus,
        Format::Kmsg,
        Format::ContainerLog,
        Format::Slurm,
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
    "unknown format '{0}' (expected one of auto, envelope, k8s, prometheus, kmsg, container-log, slurm)"
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

/// Where a record came from: named in dead letters and error messages.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A file (or `-` for stdin) and the 1-based line the record starts on.
    File { path: &'a str, line: u64 },
    /// A Kafka message.
    Kafka {
        topic: &'a str,
        partition: i32,
        offset: i64,
    },
}

impl fmt::Display for Origin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line } => write!(f, "{path}:{line}"),
            Origin::Kafka {
                topic,
                partition,
                offset,
            } => write!(f, "{topic}/{partition}/{offset}"),
        }
    }
}

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
        }
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
        self.counts.rejected += 1;
        self.dead
            .append(&origin.to_string(), format.name(), error, payload);
    }

    /// Rows waiting in the builders.
    pub fn pending_rows(&self) -> usize {
        self.events.len() + self.metrics.len() + self.dead.len()
    }
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
}
