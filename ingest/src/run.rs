//! The batch ingest runner behind `whyslow ingest`: reads every input with its format's
//! decoder, hands the rows to the store in batches, commits after each input (and every
//! `commit_rows` rows within one), and accounts for every record in a summary.
//!
//! Crash safety: rows become visible only at a store commit, and the store drops rows it
//! already holds, so re-running the same ingest after a crash completes it without
//! duplicates; committing within large inputs keeps the progress made before the crash.
//!
//! The store's writer lock is held for each commit only ([`TurnTakingSink`]), so other
//! writers of the same store take turns with a long ingest.
//!
//! An input that cannot be opened or read is reported in the summary's `failures` (one
//! sentence naming it) and the run goes on with the others; rows decoded from it before
//! the error are kept. A store failure ends the run.

mod pipeline;
mod summary;
mod turns;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use arrow::array::RecordBatch;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use whyslow_schemas::Table;

use crate::decode::auto::AutoDecoder;
use crate::decode::container_log::ContainerLogDecoder;
use crate::decode::envelope::EnvelopeDecoder;
use crate::decode::k8s::K8sDecoder;
use crate::decode::kmsg::KmsgDecoder;
use crate::decode::otlp::OtlpDecoder;
use crate::decode::prometheus::PrometheusDecoder;
use crate::decode::slurm::SlurmDecoder;
use crate::decode::{
    Decoder, FLUSH_BYTES, Format, Framing, Hints, MAX_RECORD_BYTES, Origin, Output,
    decode_contained, finish_contained,
};
use crate::source::{self, HARD_CAP_BYTES, Input, LineReader, SourceError};
use crate::store::{CommitStats, StoreError, StoreWriter};

pub use pipeline::PipelinedSink;
pub use summary::{FormatSummary, IngestSummary, TableRows};
pub use turns::TurnTakingSink;

/// What `whyslow ingest` was asked to do.
#[derive(Debug, Clone)]
pub struct IngestOptions {
    /// The store directory (created on first write).
    pub store: PathBuf,
    /// Files, directories (read recursively) or `-` for stdin.
    pub paths: Vec<String>,
    /// The format of every input (`auto`: detected per input).
    pub format: Format,
    /// What the command line says about records that do not say it themselves
    /// (`--node`, `--cluster`, `--namespace`, `--pod`, `--time`, `--boot-time`).
    pub hints: Hints,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Rows gathered in the builders before they are handed to the store as batches.
    pub batch_rows: usize,
    /// Text and payload bytes gathered before the rows are handed on, whatever their
    /// number (at most [`crate::decode::FLUSH_BYTES`], which keeps Arrow's offsets safe).
    pub batch_bytes: usize,
    /// Rows handed to the store before a commit within one input (inputs always end
    /// with one).
    pub commit_rows: usize,
    /// Run the store (sorting, dedupe, Parquet encoding, commits) on a thread of its own
    /// while decoding goes on; `false` does everything on the calling thread.
    pub pipeline: bool,
}

impl IngestOptions {
    /// Options with the default batch and commit sizes, no hints and no progress bar.
    pub fn new(store: impl Into<PathBuf>, paths: Vec<String>, format: Format) -> Self {
        IngestOptions {
            store: store.into(),
            paths,
            format,
            hints: Hints::default(),
            progress: false,
            batch_rows: 64 * 1024,
            batch_bytes: crate::decode::FLUSH_BYTES,
            commit_rows: 1024 * 1024,
            pipeline: true,
        }
    }
}

/// Why an ingest run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// No decoder for this format exists yet.
    #[error("format {0} is not supported yet by whyslow ingest")]
    Unsupported(Format),
    /// The store could not be opened, written or committed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The decoder for `format`. Each decoder module adds its arm here.
pub fn decoder_for(format: Format) -> Result<Box<dyn Decoder>, IngestError> {
    Ok(match format {
        // Detected from content, per file and per record; the formats it finds are read
        // by the decoders below.
        Format::Auto => Box::new(AutoDecoder::new(|f| match f {
            Format::Auto => None,
            f => decoder_for(f).ok(),
        })),
        Format::Envelope => Box::new(EnvelopeDecoder::new()),
        Format::K8s => Box::new(K8sDecoder::new()),
        Format::Prometheus => Box::new(PrometheusDecoder::new()),
        Format::Kmsg => Box::new(KmsgDecoder::new()),
        Format::ContainerLog => Box::new(ContainerLogDecoder::new()),
        Format::Slurm => Box::new(SlurmDecoder::new()),
        // The formats its log records carry are read by the decoders above.
        Format::Otlp => Box::new(OtlpDecoder::new(|f| match f {
            Format::Auto | Format::Otlp => None,
            f => decoder_for(f).ok(),
        })),
    })
}

/// Where the runner puts rows: the store, or anything that behaves like it in tests.
pub trait RowSink {
    /// Buffers a batch of `table` rows until the next commit.
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError>;
    /// Commits everything appended so far (or asks for it to be committed), on behalf of
    /// `tag`; returns the commits completed since the last call, each with its tag.
    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError>;
    /// Waits for every commit asked for and returns those not yet returned.
    fn finish(&mut self) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        Ok(Vec::new())
    }
}

impl RowSink for StoreWriter {
    fn append(&mut self, table: Table, batch: RecordBatch) -> Result<(), StoreError> {
        StoreWriter::append(self, table, batch)
    }

    fn commit(&mut self, tag: Format) -> Result<Vec<(Format, CommitStats)>, StoreError> {
        Ok(vec![(tag, StoreWriter::commit(self, &[])?)])
    }
}

/// Ingests `opts.paths` into the store at `opts.store`.
pub fn ingest(opts: &IngestOptions) -> Result<IngestSummary, IngestError> {
    decoder_for(opts.format)?;
    // Stream workers, their live analyzers, `replay` and other ingests may share the
    // store: the lock is taken for each commit only.
    let sink = TurnTakingSink::open(&opts.store)?;
    if opts.pipeline {
        ingest_into(opts, &mut PipelinedSink::spawn(sink))
    } else {
        let mut sink = sink;
        ingest_into(opts, &mut sink)
    }
}

/// Ingests `opts.paths` into `sink` (`opts.store` is not used).
pub fn ingest_into(
    opts: &IngestOptions,
    sink: &mut dyn RowSink,
) -> Result<IngestSummary, IngestError> {
    decoder_for(opts.format)?;
    let started = Instant::now();
    let (inputs, errors) = source::expand(&opts.paths);
    let mut summary = IngestSummary::default();
    summary
        .failures
        .extend(errors.iter().map(ToString::to_string));
    let total_bytes = inputs.iter().map(Input::size).sum::<Option<u64>>();
    let mut run = Runner {
        opts,
        sink,
        out: Output::new(crate::time::now_ns()),
        bytes: Arc::new(AtomicU64::new(0)),
        progress: progress_bar(opts.progress, total_bytes),
        handed_since_commit: 0,
        last_line: 0,
        summary,
    };
    for input in &inputs {
        run.input(input)?;
    }
    let done = run.sink.finish()?;
    run.credit(done);
    run.progress.finish_and_clear();
    let mut summary = run.summary;
    summary.bytes_read = run.bytes.load(Ordering::Relaxed);
    summary.elapsed = started.elapsed();
    debug_assert!(summary.check().is_ok(), "{}", summary.check().unwrap_err());
    Ok(summary)
}

fn progress_bar(enabled: bool, total: Option<u64>) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let (bar, template) = match total {
        Some(n) => (
            ProgressBar::new(n),
            "{elapsed_precise} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} {msg}",
        ),
        None => (
            ProgressBar::no_length(),
            "{spinner} {elapsed_precise} {bytes} {bytes_per_sec} {msg}",
        ),
    };
    // The templates above are fixed and valid.
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_draw_target(ProgressDrawTarget::stderr_with_hz(4));
    bar
}

/// How an input's reading ended early.
enum Stop {
    Input(SourceError),
    Store(StoreError),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Store(e)
    }
}

struct Runner<'a> {
    opts: &'a IngestOptions,
    sink: &'a mut dyn RowSink,
    out: Output,
    bytes: Arc<AtomicU64>,
    progress: ProgressBar,
    handed_since_commit: usize,
    /// The last line number read of the current input (its end, for a failed finish).
    last_line: u64,
    summary: IngestSummary,
}

/// Records between progress-bar updates.
const PROGRESS_EVERY: u64 = 16 * 1024;

impl Runner<'_> {
    fn input(&mut self, input: &Input) -> Result<(), IngestError> {
        let name = input.name();
        let mut decoder = decoder_for(self.opts.format)?;
        let format = decoder.format();
        let mut hints = self.opts.hints.clone();
        hints.path = matches!(input, Input::File(_)).then(|| name.clone());
        if hints.default_time_ns.is_none() {
            hints.default_time_ns = input.modified_ns();
        }
        self.progress.set_message(name.clone());
        let read = match source::open(input, self.bytes.clone()) {
            Ok(reader) => match decoder.framing() {
                Framing::Lines => self.lines(reader, &name, decoder.as_mut(), &hints),
                Framing::Document => self.document(reader, &name, decoder.as_mut(), &hints),
            },
            Err(e) => Err(Stop::Input(e)),
        };
        if let Err(Stop::Store(e)) = read {
            return Err(e.into());
        }
        let end = Origin::File {
            path: &name,
            line: self.last_line,
        };
        finish_contained(decoder.as_mut(), false, &end, &hints, &mut self.out);
        self.last_line = 0;
        self.flush(format)?;
        self.commit(format)?;
        let counts = std::mem::take(&mut self.out.counts);
        let f = self.summary.formats.entry(format).or_default();
        f.inputs += 1;
        f.counts.add(&counts);
        if let Err(Stop::Input(e)) = read {
            self.summary.failures.push(e.to_string());
        }
        Ok(())
    }

    fn lines(
        &mut self,
        reader: impl std::io::Read,
        name: &str,
        decoder: &mut dyn Decoder,
        hints: &Hints,
    ) -> Result<(), Stop> {
        let format = decoder.format();
        let mut lines = LineReader::new(reader, HARD_CAP_BYTES);
        loop {
            let line = match lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => return Ok(()),
                Err(e) => {
                    let after = lines.line_number();
                    let what = format!("{name} (after line {after})");
                    return Err(Stop::Input(SourceError::new(what, e)));
                }
            };
            let origin = Origin::File {
                path: name,
                line: line.number,
            };
            if line.full_len > MAX_RECORD_BYTES as u64 {
                self.out.begin_record();
                let reason = too_long(line.full_len, line.truncated());
                self.out.reject(&origin, format, &reason, line.bytes);
            } else {
                decode_contained(decoder, line.bytes, &origin, hints, &mut self.out);
            }
            self.last_line = line.number;
            if line.number.is_multiple_of(PROGRESS_EVERY) {
                self.progress
                    .set_position(self.bytes.load(Ordering::Relaxed));
            }
            if self.out.pending_rows() >= self.opts.batch_rows
                || self.out.pending_bytes() >= self.opts.batch_bytes.min(FLUSH_BYTES)
            {
                self.flush(format)?;
                if self.handed_since_commit >= self.opts.commit_rows {
                    self.commit(format)?;
                }
            }
        }
    }

    fn document(
        &mut self,
        reader: impl std::io::Read,
        name: &str,
        decoder: &mut dyn Decoder,
        hints: &Hints,
    ) -> Result<(), Stop> {
        let (doc, full_len) = source::read_document(reader, HARD_CAP_BYTES)
            .map_err(|e| Stop::Input(SourceError::new(name, e)))?;
        if doc.trim_ascii().is_empty() && full_len == doc.len() as u64 {
            return Ok(());
        }
        let origin = Origin::File {
            path: name,
            line: 1,
        };
        // A document (a List, a YAML stream) may be large: its decoder applies the record
        // limit to each object in it. Only a document past the hard cap is rejected.
        if full_len > doc.len() as u64 {
            self.out.begin_record();
            let reason = format!(
                "document of {full_len} bytes is over the limit of {HARD_CAP_BYTES} bytes (payload cut to its first {HARD_CAP_BYTES} bytes)"
            );
            self.out.reject(&origin, decoder.format(), &reason, &doc);
        } else {
            decode_contained(decoder, &doc, &origin, hints, &mut self.out);
        }
        self.last_line = 1;
        Ok(())
    }

    /// Hands the rows in the builders to the sink.
    fn flush(&mut self, format: Format) -> Result<(), StoreError> {
        let f = self.summary.formats.entry(format).or_default();
        let batches = self.out.take_batches();
        for (table, batch) in &batches {
            f.handed.add(*table, batch.num_rows() as u64);
        }
        for (table, batch) in batches {
            self.handed_since_commit += batch.num_rows();
            self.sink.append(table, batch)?;
        }
        self.progress
            .set_position(self.bytes.load(Ordering::Relaxed));
        Ok(())
    }

    /// Commits what was handed since the last commit, crediting it to `format`.
    fn commit(&mut self, format: Format) -> Result<(), StoreError> {
        if self.handed_since_commit == 0 {
            return Ok(());
        }
        let done = self.sink.commit(format)?;
        self.handed_since_commit = 0;
        self.credit(done);
        Ok(())
    }

    /// Adds finished commits to the summary of the format each was made for.
    fn credit(&mut self, done: Vec<(Format, CommitStats)>) {
        for (format, stats) in done {
            let f = self.summary.formats.entry(format).or_default();
            for (table, t) in &stats.tables {
                f.written.add(*table, t.written);
                f.duplicates.add(*table, t.duplicates);
            }
        }
    }
}

fn too_long(full_len: u64, truncated: bool) -> String {
    let mut s = format!("record of {full_len} bytes is over the limit of {MAX_RECORD_BYTES} bytes");
    if truncated {
        s.push_str(&format!(
            " (payload cut to its first {HARD_CAP_BYTES} bytes)"
        ));
    }
    s
}
