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

use crate::decode::{FLUSH_BYTES, Feed, Format, Framing, HARD_CAP_BYTES, Hints, Origin, Record};
use crate::source::{self, Input, LineReader, SourceError};
use whyslow_store::{CommitStats, StoreError, StoreWriter};

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
    /// The store could not be opened, written or committed.
    #[error(transparent)]
    Store(#[from] StoreError),
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
        feed: Feed::new(whyslow_schemas::time::now_ns()),
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
    /// One input at a time: its decoder is made at its first record and dropped at its end.
    feed: Feed<()>,
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
        let format = self.opts.format;
        let mut hints = self.opts.hints.clone();
        hints.path = matches!(input, Input::File(_)).then(|| name.clone());
        if hints.default_time_ns.is_none() {
            hints.default_time_ns = input.modified_ns();
        }
        self.progress.set_message(name.clone());
        // Every format has a decoder in the registry.
        let framing = self.feed.framing((), format).unwrap_or(Framing::Lines);
        let read = match source::open(input, self.bytes.clone()) {
            Ok(reader) => match framing {
                Framing::Lines => self.lines(reader, &name, format, &hints),
                Framing::Document => self.document(reader, &name, format, &hints),
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
        self.feed.end(&(), &end, &hints);
        self.last_line = 0;
        self.flush(format)?;
        self.commit(format)?;
        let counts = self.feed.take_counts();
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
        format: Format,
        hints: &Hints,
    ) -> Result<(), Stop> {
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
            let record = Record {
                bytes: line.bytes,
                full_len: line.full_len,
            };
            self.feed.record((), format, record, &origin, hints);
            self.last_line = line.number;
            if line.number.is_multiple_of(PROGRESS_EVERY) {
                self.progress
                    .set_position(self.bytes.load(Ordering::Relaxed));
            }
            if self.feed.pending_rows() >= self.opts.batch_rows
                || self.feed.pending_bytes() >= self.opts.batch_bytes.min(FLUSH_BYTES)
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
        format: Format,
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
        let record = Record {
            bytes: &doc,
            full_len,
        };
        self.feed.record((), format, record, &origin, hints);
        self.last_line = 1;
        Ok(())
    }

    /// Hands the rows in the builders to the sink.
    fn flush(&mut self, format: Format) -> Result<(), StoreError> {
        let f = self.summary.formats.entry(format).or_default();
        let batches = self.feed.take();
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
