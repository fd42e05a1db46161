//! Retrying `dead_letters` with today's decoders (the first half of `whyslow replay`): a
//! letter whose payload now decodes with no rejection leaves `dead_letters` and its rows
//! join `events`/`metrics`, in one store commit.
//!
//! Rules, per letter (a letter is always kept or moved whole, never split):
//! - decoded into rows with no rejection: **moved** (rows appended, letter removed);
//! - decoded into nothing with no rejection (today's decoder skips it by design, as
//!   `whyslow ingest` would today): **removed** and counted as skipped — only when retried
//!   with the format it recorded; a guessed format that reads nothing proves nothing;
//! - rejected again: **kept**; with its recorded format, its `error` becomes today's reason
//!   when that differs (the stale reason would send a reader after a fixed bug); with
//!   another format (`retry_format`) it is kept exactly as it was;
//! - rows *and* rejections: **kept as is** (moving it would lose the rejected part); so
//!   are the letters without rows of their own in the same input (rows a decoder holds
//!   back, like a traceback, come out with a later record);
//! - not retried, kept as is: a payload that was cut at the size cap (it is not the whole
//!   record), one over the record limit, or a format name no decoder has.
//!
//! Letters are decoded as their input was: the letters of one file from one ingest run
//! (same path, format and `ingest_time`) go through one decoder in line order, so context
//! a decoder carries between lines (a GPU's identity line, the year of undated lines, the
//! format `auto` settled on) applies as it would in `whyslow ingest`; likewise the letters
//! of one Kafka topic partition and format, in offset order, as the worker reads them.
//! Each letter's rows are told apart in the shared builders. Context from the lines that were accepted at the time is not in the
//! letters, so a line that needed it reads as it would alone.
//!
//! Exactly once: the recovered rows are appended and the letters removed by one
//! [`StoreWriter::commit_replacing`], computed under the writer lock from the state that
//! lock guards: a Delta commit per table, the rows' tables first and `dead_letters` last,
//! so a crash never loses a letter; a crash between the commits leaves the rows and the
//! letters both, until the next run, which finds the rows already stored (the store drops
//! appended rows it holds: `events` by `event_id`, `metrics` by series and time, so rows
//! someone re-ingested meanwhile are not duplicated either) and removes the letters. A run
//! after that finds the moved letters gone and writes nothing.
//!
//! What a letter does not record is not known here: `--node`, `--cluster`, `--boot-time`
//! and the like given at ingest time come from [`RedecodeOptions::hints`]; the file path
//! (for formats that read meaning from it) comes from the letter's `source_path`; the
//! default time of records with none is the file's mtime if it still exists, else the
//! letter's `ingest_time` (for Kafka letters, close to the message timestamp used then).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Int32Array, Int64Array, RecordBatch,
    StringArray, StringBuilder, TimestampMicrosecondArray,
};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::error::ArrowError;
use whyslow_schemas::Table;
use whyslow_schemas::tables::stored_to_ns;

use crate::decode::{Fed, Feed, Format, Hints, Origin, Record, RowCounts};
use crate::source::Input;
use whyslow_store::{StoreError, StoreWriter, segment};

/// What `whyslow replay` asks of the dead letters.
#[derive(Debug, Clone, Default)]
pub struct RedecodeOptions {
    /// Decode every letter with this format instead of the one it recorded (a user who
    /// ingested with the wrong `--format`); `None`: each with its own.
    pub retry_format: Option<Format>,
    /// What the command line says about records that do not say it themselves, as for
    /// `whyslow ingest` (`path` is ignored: it comes from each letter's `source_path`).
    pub hints: Hints,
    /// Retry only the letters whose `source_ref` starts with this (a file, a directory, a
    /// topic: where the hints apply); the others are left as they are, uncounted.
    pub source_prefix: Option<String>,
}

/// What a retry of the dead letters did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedecodeSummary {
    /// Dead letters retried (all, or those `source_prefix` selects).
    pub letters: u64,
    /// Letters that now decode into rows: moved to `events`/`metrics`.
    pub moved: u64,
    /// Letters today's decoder skips by design (no rows, no rejection): removed.
    pub skipped: u64,
    /// Letters rejected again: kept.
    pub still_failing: u64,
    /// Of those, letters whose `error` now says today's reason.
    pub reasons_updated: u64,
    /// Letters that decode into rows and rejections, and letters without rows of their
    /// own decoded in the same input as one (rows a decoder held back may be theirs):
    /// kept whole, as they were.
    pub partial: u64,
    /// Letters not retried (payload cut at the cap, over the record limit, unknown
    /// format): kept as they were.
    pub not_retried: u64,
    /// With `retry_format`: letters that format reads nothing in (no rows, no rejection):
    /// kept as they were.
    pub unread: u64,
    /// `events` rows written from moved letters.
    pub events: u64,
    /// `metrics` rows written from moved letters.
    pub metrics: u64,
    /// Rows of moved letters the store already held (not written again).
    pub duplicates: u64,
    /// The log version of the commit (`None`: nothing changed, nothing written).
    pub version: Option<u64>,
}

impl RedecodeSummary {
    /// Letters that left `dead_letters`.
    pub fn removed(&self) -> u64 {
        self.moved + self.skipped
    }

    /// Letters still in `dead_letters`.
    pub fn kept(&self) -> u64 {
        self.still_failing + self.partial + self.not_retried + self.unread
    }
}

/// Why the dead letters could not be retried.
#[derive(Debug, thiserror::Error)]
pub enum RedecodeError {
    /// The store could not be opened, read or committed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A `dead_letters` segment lacks a column of the table's schema.
    #[error("dead_letters segment {path}: column {column} is missing or not of type {expected}")]
    Column {
        /// The segment file.
        path: PathBuf,
        /// The column.
        column: &'static str,
        /// Its type in the schema.
        expected: &'static str,
    },
    /// Arrow failed while rebuilding the kept letters of a segment.
    #[error("dead_letters segment {path}: rebuilding the kept letters failed: {source}")]
    Arrow {
        /// The segment file.
        path: PathBuf,
        /// The arrow crate's error.
        #[source]
        source: arrow::error::ArrowError,
    },
}

/// One dead letter as stored.
#[derive(Debug, Clone, Copy)]
pub struct Letter<'a> {
    /// When it was stored (ns since the epoch).
    pub ingest_time_ns: i64,
    /// `file:line` or `topic/partition/offset` (with ` line N` for a part): for people
    /// and `--source-prefix`; the fields below are what is read.
    pub source_ref: &'a str,
    /// Where the record came from (`None`: a letter stored before letters recorded it).
    pub origin: Option<Origin<'a>>,
    /// The line or data point of its record it is, when it is one part of it.
    pub part: Option<u64>,
    /// The format name it was rejected by.
    pub format: &'a str,
    /// Why it was rejected.
    pub error: &'a str,
    /// The record, verbatim (cut at the hard cap when longer).
    pub payload: &'a [u8],
    /// The record's whole length, when recorded.
    pub record_bytes: Option<u64>,
}

impl Letter<'_> {
    /// Whether the payload is its record cut short: by its recorded length, or (a letter
    /// stored before lengths were) by the words its reason then said so with.
    fn is_cut(&self) -> bool {
        match self.record_bytes {
            Some(n) => n > self.payload.len() as u64,
            None => self.error.contains("(payload cut to its first"),
        }
    }
}

/// What today's decoder makes of one dead letter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// Rows and no rejection: the letter moves (its rows are in [`Retried`]).
    Moved,
    /// No rows and no rejection: skipped by design.
    Skipped,
    /// Rejected whole again, for this reason (the first one given).
    Rejected { reason: String },
    /// Rows and rejections (or no rows, in an input where another letter has both): kept
    /// whole.
    Partial,
    /// Not retried, for this reason.
    NotRetried(&'static str),
}

/// What retrying the letters of one input gave.
#[derive(Debug)]
pub struct Retried {
    /// One per letter, in the order given.
    pub attempts: Vec<Attempt>,
    /// The `events` rows of the letters that moved.
    pub events: RecordBatch,
    /// The `metrics` rows of the letters that moved.
    pub metrics: RecordBatch,
}

/// Decodes one letter alone with a fresh decoder of `format` (`None`: the one it
/// recorded), as one record of its origin; `base` are the caller's hints, `now_ns` the
/// `ingest_time` of the rows it becomes.
pub fn retry_letter(
    letter: &Letter<'_>,
    format: Option<Format>,
    base: &Hints,
    now_ns: i64,
) -> Retried {
    retry_input(std::slice::from_ref(letter), format, base, now_ns)
}

/// What happened to one letter of an input, and where its output starts.
#[derive(Clone, Copy)]
enum Fate {
    /// Fed to the decoder: its rows start at these counts.
    Fed(RowCounts),
    /// Fed and refused (its decoder failed, or it is over the size limit): the output
    /// from these counts to the next letter's is no letter's.
    Refused(RowCounts, &'static str),
    /// Not fed, for this reason.
    NotFed(&'static str),
}

/// Decodes the letters of one input (in record order) with one decoder of `format`
/// (`None`: the one the first recorded; the letters of one input share it), through the
/// same [`Feed`] as `whyslow ingest` and `whyslow stream`, so that what a decoder carries
/// from record to record — the year of undated kernel lines, a GPU's identity line, the
/// format `auto` settled on — works as there. Rows the decoder emits at the end of the
/// input belong to the last letter decoded.
pub fn retry_input(
    letters: &[Letter<'_>],
    format: Option<Format>,
    base: &Hints,
    now_ns: i64,
) -> Retried {
    let format = format.or_else(|| letters.first().and_then(|l| l.format.parse().ok()));
    let Some(format) = format else {
        return Retried {
            attempts: letters
                .iter()
                .map(|_| Attempt::NotRetried("no decoder has its format"))
                .collect(),
            events: RecordBatch::new_empty(Table::Events.schema()),
            metrics: RecordBatch::new_empty(Table::Metrics.schema()),
        };
    };
    let hints = match letters.first() {
        Some(l) => letter_hints(l, base),
        None => base.clone(),
    };
    let mut feed: Feed<()> = Feed::new(now_ns);
    let mut fates = Vec::with_capacity(letters.len());
    let mut last_origin = None;
    for letter in letters {
        let Some(origin) = letter.origin else {
            fates.push(Fate::NotFed(
                "it was stored before letters recorded their origin",
            ));
            continue;
        };
        if letter.is_cut() {
            fates.push(Fate::NotFed("its payload was cut at the size cap"));
            continue;
        }
        if letter.payload.is_empty() {
            // What a decoder that failed at an input's end says it lost: nothing to read.
            fates.push(Fate::NotFed(
                "it holds no record (a decoder's failure report)",
            ));
            continue;
        }
        let start = feed.output().row_counts();
        last_origin = Some(origin);
        fates.push(
            match feed.record((), format, Record::whole(letter.payload), &origin, &hints) {
                Fed::Decoded => Fate::Fed(start),
                Fed::Failed => Fate::Refused(start, "the decoder failed on it"),
                Fed::TooLarge => Fate::Refused(start, "it is over the record size limit"),
                Fed::NoDecoder => Fate::Refused(start, "no decoder has its format"),
            },
        );
    }
    let before_end = feed.output().row_counts();
    if let Some(origin) = last_origin {
        // A failed end drops what it appended and adds a dead letter: the last fed
        // letter's output then holds a rejection, and it stays.
        feed.end(&(), &origin, &hints);
    }
    let end = feed.output().row_counts();
    let (events, metrics, dead) = table_rows(feed.take());
    let errors = dead.column_by_name("error").map(|c| c.as_string::<i32>());
    let mut keep_events = vec![false; events.num_rows()];
    let mut keep_metrics = vec![false; metrics.num_rows()];
    let mut attempts = Vec::with_capacity(letters.len());
    let mut next = before_end;
    // What the decoder emitted at the input's end (held records) belongs to the last
    // letter fed and read, whatever was refused after it.
    let mut tail = Some((before_end, end));
    // Backwards, so that each letter's range ends where the next fed one starts.
    for fate in fates.iter().rev() {
        let start = match *fate {
            Fate::Fed(start) => start,
            Fate::Refused(start, why) => {
                attempts.push(Attempt::NotRetried(why));
                next = start;
                continue;
            }
            Fate::NotFed(why) => {
                attempts.push(Attempt::NotRetried(why));
                continue;
            }
        };
        let ranges = [Some((start, next)), tail.take()];
        let ranges = ranges.iter().flatten();
        let rows: usize = ranges
            .clone()
            .map(|(a, b)| (b.events - a.events) + (b.metrics - a.metrics))
            .sum();
        let first_rejection = ranges.clone().find(|(a, b)| b.dead > a.dead);
        attempts.push(match (rows > 0, first_rejection) {
            (true, Some(_)) => Attempt::Partial,
            (true, None) => {
                for (a, b) in ranges {
                    keep_events[a.events..b.events].fill(true);
                    keep_metrics[a.metrics..b.metrics].fill(true);
                }
                Attempt::Moved
            }
            (false, None) => Attempt::Skipped,
            (false, Some((a, _))) => Attempt::Rejected {
                reason: errors
                    .map(|e| e.value(a.dead).to_string())
                    .unwrap_or_default(),
            },
        });
        next = start;
    }
    attempts.reverse();
    // Rows a decoder holds back (a traceback) come out with a later letter; when one is
    // kept whole, or refused (what the decoder held may be gone with its failure),
    // letters without rows of their own may be what led to them: kept too.
    let refused = fates.iter().any(|f| matches!(f, Fate::Refused(..)));
    if refused || attempts.contains(&Attempt::Partial) {
        for a in &mut attempts {
            if *a == Attempt::Skipped {
                *a = Attempt::Partial;
            }
        }
    }
    match (
        keep_rows(&events, keep_events),
        keep_rows(&metrics, keep_metrics),
    ) {
        (Ok(events), Ok(metrics)) => Retried {
            attempts,
            events,
            metrics,
        },
        // The masks are as long as the batches, so filtering cannot fail; were it to,
        // no letter moves (none is lost).
        _ => Retried {
            attempts: attempts
                .into_iter()
                .map(|a| match a {
                    Attempt::Moved => Attempt::NotRetried("its rows could not be separated"),
                    a => a,
                })
                .collect(),
            events: events.slice(0, 0),
            metrics: metrics.slice(0, 0),
        },
    }
}

/// A feed's batches as one batch per table (events, metrics, dead letters), rows in the
/// order they were appended: the indices of [`RowCounts`].
fn table_rows(batches: Vec<(Table, RecordBatch)>) -> (RecordBatch, RecordBatch, RecordBatch) {
    let one = |table: Table| {
        let schema = table.schema();
        let parts: Vec<&RecordBatch> = batches
            .iter()
            .filter(|(t, _)| *t == table)
            .map(|(_, b)| b)
            .collect();
        // Every batch of a table has the table's schema (the builders make them so).
        concat_batches(&schema, parts).unwrap_or_else(|_| RecordBatch::new_empty(schema))
    };
    (
        one(Table::Events),
        one(Table::Metrics),
        one(Table::DeadLetters),
    )
}

/// The rows of `batch` marked in `keep`.
fn keep_rows(batch: &RecordBatch, keep: Vec<bool>) -> Result<RecordBatch, ArrowError> {
    if keep.iter().all(|k| *k) {
        return Ok(batch.clone());
    }
    filter_record_batch(batch, &BooleanArray::from(keep))
}

/// The hints of one letter: the caller's, plus the file path and a default time.
fn letter_hints(letter: &Letter<'_>, base: &Hints) -> Hints {
    let mut hints = base.clone();
    hints.path = None;
    let mut default_time = None;
    if let Some(Origin::File { path, .. }) = letter.origin
        && path != "-"
    {
        hints.path = Some(path.to_string());
        default_time = Input::File(PathBuf::from(path)).modified_ns();
    }
    if hints.default_time_ns.is_none() {
        hints.default_time_ns = Some(default_time.unwrap_or(letter.ingest_time_ns));
    }
    hints
}

/// The columns of one `dead_letters` batch.
struct LetterColumns<'a> {
    ingest_time: &'a TimestampMicrosecondArray,
    source_ref: &'a StringArray,
    format: &'a StringArray,
    error: &'a StringArray,
    payload: &'a BinaryArray,
    source_path: &'a StringArray,
    source_line: &'a Int64Array,
    topic: &'a StringArray,
    partition: &'a Int32Array,
    offset: &'a Int64Array,
    part: &'a Int64Array,
    record_bytes: &'a Int64Array,
}

impl<'a> LetterColumns<'a> {
    fn of(batch: &'a RecordBatch, path: &Path) -> Result<Self, RedecodeError> {
        fn get<'b, T: 'static>(
            b: &'b RecordBatch,
            path: &Path,
            column: &'static str,
            expected: &'static str,
        ) -> Result<&'b T, RedecodeError> {
            b.column_by_name(column)
                .and_then(|c| c.as_any().downcast_ref::<T>())
                .ok_or_else(|| RedecodeError::Column {
                    path: path.to_path_buf(),
                    column,
                    expected,
                })
        }
        Ok(LetterColumns {
            ingest_time: get(batch, path, "ingest_time", "timestamp")?,
            source_ref: get(batch, path, "source_ref", "string")?,
            format: get(batch, path, "format", "string")?,
            error: get(batch, path, "error", "string")?,
            payload: get(batch, path, "payload", "binary")?,
            source_path: get(batch, path, "source_path", "string")?,
            source_line: get(batch, path, "source_line", "int64")?,
            topic: get(batch, path, "kafka_topic", "string")?,
            partition: get(batch, path, "kafka_partition", "int32")?,
            offset: get(batch, path, "kafka_offset", "int64")?,
            part: get(batch, path, "part", "int64")?,
            record_bytes: get(batch, path, "record_bytes", "int64")?,
        })
    }

    fn len(&self) -> usize {
        self.source_ref.len()
    }

    fn letter(&self, i: usize) -> Letter<'a> {
        let int = |c: &Int64Array| (!c.is_null(i)).then(|| c.value(i));
        let file = (!self.source_path.is_null(i)).then(|| Origin::File {
            path: self.source_path.value(i),
            line: int(self.source_line).map_or(0, |l| u64::try_from(l).unwrap_or(0)),
        });
        let kafka = || {
            Some(Origin::Kafka {
                topic: (!self.topic.is_null(i)).then(|| self.topic.value(i))?,
                partition: (!self.partition.is_null(i)).then(|| self.partition.value(i))?,
                offset: int(self.offset)?,
            })
        };
        let source_ref = self.source_ref.value(i);
        let (origin, part) = match file.or_else(kafka) {
            Some(o) => (Some(o), int(self.part).and_then(|p| u64::try_from(p).ok())),
            None => legacy_origin(source_ref),
        };
        Letter {
            ingest_time_ns: stored_to_ns(self.ingest_time.value(i)),
            source_ref,
            origin,
            part,
            format: self.format.value(i),
            error: self.error.value(i),
            payload: self.payload.value(i),
            record_bytes: int(self.record_bytes).and_then(|n| u64::try_from(n).ok()),
        }
    }
}

/// The origin of a letter stored before letters recorded it in fields, read from its
/// `source_ref` as whyslow wrote it then: `path:line`, `topic/partition/offset`, or that
/// followed by ` line N` for one line of a message. Anything else: unknown.
fn legacy_origin(source_ref: &str) -> (Option<Origin<'_>>, Option<u64>) {
    let (message, part) = match source_ref.rsplit_once(" line ") {
        Some((m, n)) if n.parse::<u64>().is_ok() => (m, n.parse().ok()),
        _ => (source_ref, None),
    };
    if part.is_none()
        && let Some((path, line)) = message.rsplit_once(':')
        && !path.is_empty()
        && let Ok(line) = line.parse::<u64>()
    {
        // Kafka topics allow only [a-zA-Z0-9._-]: a ref ending in `:N` is a file.
        return (Some(Origin::File { path, line }), None);
    }
    let mut parts = message.rsplitn(3, '/');
    if let (Some(offset), Some(partition), Some(topic)) = (parts.next(), parts.next(), parts.next())
        && !topic.is_empty()
        && let (Ok(partition), Ok(offset)) = (partition.parse(), offset.parse())
    {
        let origin = Origin::Kafka {
            topic,
            partition,
            offset,
        };
        return (Some(origin), part);
    }
    (None, None)
}

/// How long a replay waits for the writer lock while a stream worker commits.
pub const LOCK_PATIENCE: Duration = Duration::from_secs(120);

/// Retries every dead letter of the store at `root` and commits what changed. The store
/// is opened for writing, waiting up to [`LOCK_PATIENCE`] while another writer (a stream
/// worker's commit) holds it, and held from reading the letters to the commit, so no
/// letter is added or removed in between.
pub fn redecode_store(
    root: &Path,
    opts: &RedecodeOptions,
) -> Result<RedecodeSummary, RedecodeError> {
    let mut writer = StoreWriter::open_waiting(root, LOCK_PATIENCE)?;
    redecode(&mut writer, opts)
}

/// Retries every dead letter `writer`'s store holds, the letters of one input together
/// ([`retry_input`]); when any letter moves, leaves or gets a new reason, appends the
/// recovered rows and rewrites `dead_letters` without the letters that left, in one log
/// entry. Writes nothing when nothing changed.
pub fn redecode(
    writer: &mut StoreWriter,
    opts: &RedecodeOptions,
) -> Result<RedecodeSummary, RedecodeError> {
    let now_ns = whyslow_schemas::time::now_ns();
    let mut batches: Vec<(PathBuf, RecordBatch)> = Vec::new();
    for seg in writer.store().segments(Table::DeadLetters) {
        for batch in segment::read_parquet(Table::DeadLetters, &seg.path)? {
            batches.push((seg.path.clone(), batch));
        }
    }
    let mut columns = Vec::with_capacity(batches.len());
    for (path, batch) in &batches {
        columns.push(LetterColumns::of(batch, path)?);
    }
    // Letters by input: a file's letters of one ingest run (same path, format and
    // ingest time) in line order; a Kafka partition's letters of one format in offset
    // order (and line order within a message).
    let mut order: Vec<(InputKey<'_>, (u64, u64), usize, usize)> = Vec::new();
    for (b, cols) in columns.iter().enumerate() {
        for i in 0..cols.len() {
            let l = cols.letter(i);
            if let Some(prefix) = &opts.source_prefix
                && !l.source_ref.starts_with(prefix.as_str())
            {
                continue;
            }
            let (key, at) = match l.origin {
                Some(Origin::File { path, line }) => {
                    (InputKey::File(path, l.format, l.ingest_time_ns), (line, 0))
                }
                Some(Origin::Kafka {
                    topic,
                    partition,
                    offset,
                }) => (
                    InputKey::Kafka(topic, partition, l.format),
                    (u64::try_from(offset).unwrap_or(0), l.part.unwrap_or(0)),
                ),
                None => (InputKey::Alone(b, i), (0, 0)),
            };
            order.push((key, at, b, i));
        }
    }
    order.sort_unstable();
    let mut attempts: Vec<Vec<Option<Attempt>>> = columns
        .iter()
        .map(|c| (0..c.len()).map(|_| None).collect())
        .collect();
    let mut recovered: Vec<(Table, RecordBatch)> = Vec::new();
    for group in order.chunk_by(|x, y| x.0 == y.0) {
        let letters: Vec<Letter<'_>> = group
            .iter()
            .map(|&(_, _, b, i)| columns[b].letter(i))
            .collect();
        let r = retry_input(&letters, opts.retry_format, &opts.hints, now_ns);
        for (&(_, _, b, i), a) in group.iter().zip(r.attempts) {
            attempts[b][i] = Some(a);
        }
        recovered.push((Table::Events, r.events));
        recovered.push((Table::Metrics, r.metrics));
    }

    let mut summary = RedecodeSummary::default();
    let mut kept: Vec<RecordBatch> = Vec::new();
    let mut changed = false;
    for ((path, batch), (cols, tried)) in batches.iter().zip(columns.iter().zip(attempts)) {
        let mut keep = Vec::with_capacity(batch.num_rows());
        let mut errors = StringBuilder::new();
        for (i, attempt) in tried.into_iter().enumerate() {
            let letter = cols.letter(i);
            let mut error = letter.error.to_string();
            let Some(attempt) = attempt else {
                // Not selected: left as it is.
                keep.push(true);
                errors.append_value(&error);
                continue;
            };
            summary.letters += 1;
            let stays = match attempt {
                Attempt::Moved => {
                    summary.moved += 1;
                    false
                }
                Attempt::Skipped if opts.retry_format.is_none() => {
                    summary.skipped += 1;
                    false
                }
                Attempt::Skipped => {
                    summary.unread += 1;
                    true
                }
                Attempt::Rejected { reason } => {
                    summary.still_failing += 1;
                    // A line of a message, retried alone, cannot say which line it was:
                    // its recorded reason, which does, stays.
                    let part = letter.part.is_some();
                    if opts.retry_format.is_none() && !part && !reason.is_empty() && reason != error
                    {
                        summary.reasons_updated += 1;
                        error = reason;
                        changed = true;
                    }
                    true
                }
                Attempt::Partial => {
                    summary.partial += 1;
                    true
                }
                Attempt::NotRetried(why) => {
                    tracing::debug!(
                        source_ref = letter.source_ref,
                        why,
                        "dead letter not retried"
                    );
                    summary.not_retried += 1;
                    true
                }
            };
            changed |= !stays;
            keep.push(stays);
            errors.append_value(&error);
        }
        let rest = rebuild(batch, errors.finish(), keep, path)?;
        if rest.num_rows() > 0 {
            kept.push(rest);
        }
    }
    if !changed {
        return Ok(summary);
    }
    for (table, rows) in recovered {
        writer.append(table, rows)?;
    }
    let stats = writer.commit_replacing(vec![(Table::DeadLetters, kept)])?;
    for (table, t) in &stats.tables {
        match table {
            Table::Events => summary.events += t.written,
            Table::Metrics => summary.metrics += t.written,
            _ => continue,
        }
        summary.duplicates += t.duplicates;
    }
    summary.version = stats.version;
    Ok(summary)
}

/// Which letters are decoded together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum InputKey<'a> {
    /// One ingest run of a file: path, format, ingest time.
    File(&'a str, &'a str, i64),
    /// One Kafka partition read as one format (in offset order, as the worker reads it).
    Kafka(&'a str, i32, &'a str),
    /// A letter stored without its origin: batch and row.
    Alone(usize, usize),
}

/// The kept rows of `batch`, with `errors` as their `error` column.
fn rebuild(
    batch: &RecordBatch,
    errors: StringArray,
    keep: Vec<bool>,
    path: &Path,
) -> Result<RecordBatch, RedecodeError> {
    let arrow = |source| RedecodeError::Arrow {
        path: path.to_path_buf(),
        source,
    };
    let schema = batch.schema();
    let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
    let idx = schema.index_of("error").map_err(arrow)?;
    columns[idx] = Arc::new(errors);
    let with_reasons = RecordBatch::try_new(schema, columns).map_err(arrow)?;
    filter_record_batch(&with_reasons, &BooleanArray::from(keep)).map_err(arrow)
}

#[cfg(test)]
mod tests {
    use whyslow_schemas::{DeadLetter, DeadLetterBuilder};

    use crate::decode::Output;

    use super::*;
    use whyslow_store::Store;

    const XID: &str = "2024-11-15T12:02:03,470068+00:00 NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1.";
    const RAW_XID: &str = "4,3974,227986678,-;NVRM: Xid (PCI:0000:19:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x12bac1c3e0 partition 2, subpartition 1.";
    const STEP: &str = "2026-11-29T10:06:00.200000000Z stdout F step: 20  loss: 11.83506  grad_norm:  9.6669  memory: 48.87GiB(51.44%)  tps: 4,376  tflops: 253.41  mfu: 25.62%";
    const TB_HEAD: &str =
        "2026-11-29T10:06:00.200000000Z stderr F Traceback (most recent call last):";
    const TB_FRAME: &str =
        "2026-11-29T10:06:00.300000000Z stderr F   File \"train.py\", line 10, in <module>";
    const TB_ERR: &str = "2026-11-29T10:06:00.400000000Z stderr F KeyError: 'x'";
    const POD_LOG: &str =
        "/var/log/pods/llm_finetune-0-abcde_5d5626d4-f0d1-46c7-be99-adea03bbfbee/trainer/0.log";

    fn file(path: &str, line: u64) -> Origin<'_> {
        Origin::File { path, line }
    }

    fn kafka(topic: &str, partition: i32, offset: i64) -> Origin<'_> {
        Origin::Kafka {
            topic,
            partition,
            offset,
        }
    }

    fn letter<'a>(origin: Origin<'a>, format: &'a str, payload: &'a [u8]) -> Letter<'a> {
        Letter {
            ingest_time_ns: 1_795_910_400_000_000_000,
            source_ref: "",
            origin: Some(origin),
            part: None,
            format,
            error: "an older decoder's reason",
            payload,
            record_bytes: Some(payload.len() as u64),
        }
    }

    #[test]
    fn a_kernel_line_today_decodes_into_an_xid_event() {
        let l = letter(file("/var/log/node-7.log", 12), "kmsg", XID.as_bytes());
        let r = retry_letter(&l, None, &Hints::default(), 5_000);
        assert_eq!(r.attempts, [Attempt::Moved]);
        let (events, metrics) = (r.events, r.metrics);
        assert_eq!(metrics.num_rows(), 0);
        assert_eq!(events.num_rows(), 1);
        let kind = events.column_by_name("kind").unwrap().as_string::<i32>();
        assert_eq!(kind.value(0), "xid");
        // The node comes from the file name in source_ref, as `whyslow ingest` names it.
        let node = events.column_by_name("node").unwrap().as_string::<i32>();
        assert_eq!(node.value(0), "node-7");
        let ingest = events.column_by_name("ingest_time").unwrap();
        let ingest = ingest.as_primitive::<whyslow_schemas::tables::StoredTime>();
        assert_eq!(stored_to_ns(ingest.value(0)), 5_000);
    }

    #[test]
    fn a_boot_relative_line_needs_the_boot_time_hint() {
        let l = letter(file("node-7.kmsg", 1), "kmsg", RAW_XID.as_bytes());
        let r = retry_letter(&l, None, &Hints::default(), 5);
        let [Attempt::Rejected { reason }] = &r.attempts[..] else {
            panic!("a boot-relative Xid without a boot time must be rejected");
        };
        assert!(reason.contains("boot"), "{reason}");
        let hints = Hints {
            boot_time_ns: Some(1_795_910_400_000_000_000),
            ..Hints::default()
        };
        let r = retry_letter(&l, None, &hints, 5);
        assert_eq!(r.attempts, [Attempt::Moved], "moved with --boot-time");
        let t = r.events.column_by_name("time").unwrap();
        let t = t.as_primitive::<whyslow_schemas::tables::StoredTime>();
        assert_eq!(
            stored_to_ns(t.value(0)),
            1_795_910_400_000_000_000 + 227_986_678_000
        );
    }

    #[test]
    fn the_pod_of_a_container_log_comes_from_the_path_in_source_ref() {
        let l = letter(file(POD_LOG, 4), "container-log", STEP.as_bytes());
        let r = retry_letter(&l, None, &Hints::default(), 5);
        assert_eq!(r.attempts, [Attempt::Moved]);
        let metrics = r.metrics;
        assert!(metrics.num_rows() > 0);
        let pod = metrics.column_by_name("pod").unwrap().as_string::<i32>();
        let ns = metrics
            .column_by_name("namespace")
            .unwrap()
            .as_string::<i32>();
        for i in 0..metrics.num_rows() {
            assert_eq!(pod.value(i), "finetune-0-abcde");
            assert_eq!(ns.value(i), "llm");
        }
    }

    #[test]
    fn cut_unknown_and_wrong_format_letters() {
        let attempt = |l: &Letter<'_>, f: Option<Format>| {
            let r = retry_letter(l, f, &Hints::default(), 5);
            assert_eq!(r.attempts.len(), 1);
            r.attempts[0].clone()
        };
        let mut l = letter(file("a.log", 1), "kmsg", XID.as_bytes());
        l.record_bytes = Some(70_000_000);
        assert!(matches!(attempt(&l, None), Attempt::NotRetried(_)));
        let l = letter(file("a.log", 1), "syslog-ng", XID.as_bytes());
        assert!(matches!(attempt(&l, None), Attempt::NotRetried(_)));
        // Ingested with the wrong --format: envelope rejects a kernel line, auto reads it.
        let l = letter(file("node-3.log", 1), "envelope", XID.as_bytes());
        assert!(matches!(attempt(&l, None), Attempt::Rejected { .. }));
        assert_eq!(attempt(&l, Some(Format::Auto)), Attempt::Moved);
    }

    /// A letter without a known origin is not guessed at; one stored before letters
    /// recorded their origin in fields is read from its `source_ref` as written then.
    #[test]
    fn letters_without_origin_fields() {
        let mut l = letter(file("n.log", 1), "kmsg", XID.as_bytes());
        l.origin = None;
        let r = retry_letter(&l, None, &Hints::default(), 5);
        assert!(matches!(r.attempts[..], [Attempt::NotRetried(_)]), "{r:?}");
        assert_eq!(r.events.num_rows(), 0);
        assert_eq!(
            legacy_origin("/a/b:c/n.log:17"),
            (Some(file("/a/b:c/n.log", 17)), None)
        );
        assert_eq!(
            legacy_origin("dcgm/0/7 line 3"),
            (Some(kafka("dcgm", 0, 7)), Some(3))
        );
        assert_eq!(
            legacy_origin("logs/3/5:9"),
            (Some(file("logs/3/5", 9)), None)
        );
        for other in ["", ":4", "/1/2", "topic/x/3", "a line 3", "t/0/x line 2"] {
            assert_eq!(legacy_origin(other), (None, None), "{other}");
        }
    }

    /// What the decoder emits at the end of an input is the last read letter's, even when
    /// a letter after it is refused (here, over the size limit).
    #[test]
    fn rows_emitted_at_the_end_belong_to_the_last_letter_read() {
        let big = vec![b'x'; crate::decode::MAX_RECORD_BYTES + 1];
        let letters = [
            letter(file(POD_LOG, 1), "container-log", TB_HEAD.as_bytes()),
            letter(file(POD_LOG, 2), "container-log", TB_FRAME.as_bytes()),
            letter(file(POD_LOG, 3), "container-log", TB_ERR.as_bytes()),
            letter(file(POD_LOG, 4), "container-log", &big),
        ];
        let r = retry_input(&letters, None, &Hints::default(), 5);
        assert_eq!(r.attempts[2], Attempt::Moved, "{r:?}");
        assert_eq!(r.events.num_rows(), 1, "the traceback's event");
        assert!(matches!(r.attempts[3], Attempt::NotRetried(_)), "{r:?}");
        // The letters that led to it are not removed as rowless: kept.
        assert_eq!(
            r.attempts[..2],
            [Attempt::Partial, Attempt::Partial],
            "{r:?}"
        );
    }

    /// Letters of one input share a decoder; each one's rows are told apart.
    #[test]
    fn an_input_s_letters_are_told_apart() {
        let garbage = b"\xff\xfe not a kernel line";
        let unrecognized = b"2024-11-15T12:02:04,000000+00:00 systemd[1]: Started a unit.";
        let xid79 = XID.replace("48,", "79,");
        let letters = [
            letter(file("n.log", 1), "kmsg", XID.as_bytes()),
            letter(file("n.log", 2), "kmsg", garbage),
            letter(file("n.log", 3), "kmsg", unrecognized),
            letter(file("n.log", 4), "kmsg", xid79.as_bytes()),
        ];
        let r = retry_input(&letters, None, &Hints::default(), 5);
        assert!(matches!(r.attempts[1], Attempt::Rejected { .. }));
        assert_eq!(
            [&r.attempts[0], &r.attempts[2], &r.attempts[3]],
            [&Attempt::Moved, &Attempt::Skipped, &Attempt::Moved]
        );
        let reason = r
            .events
            .column_by_name("reason")
            .unwrap()
            .as_string::<i32>();
        let reasons: Vec<&str> = (0..r.events.num_rows()).map(|i| reason.value(i)).collect();
        assert_eq!(reasons, ["48", "79"]);
    }

    fn dead_letters(rows: &[(Origin<'_>, &str, &[u8])]) -> RecordBatch {
        let mut b = DeadLetterBuilder::new(1_795_910_400_000_000_000);
        for (o, f, p) in rows {
            b.append(&DeadLetter::whole(*o, f, "an older decoder's reason", p));
        }
        b.finish()
    }

    #[test]
    fn moved_letters_leave_once_and_the_rest_stay() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = b"\xff\xfe not a kernel line";
        {
            let mut w = StoreWriter::open(dir.path()).unwrap();
            w.append(
                Table::DeadLetters,
                dead_letters(&[
                    (file("node-7.log", 12), "kmsg", XID.as_bytes()),
                    (file("node-7.kmsg", 1), "kmsg", RAW_XID.as_bytes()),
                    (file("node-7.log", 13), "kmsg", garbage),
                ]),
            )
            .unwrap();
            w.commit(&[]).unwrap();
        }
        let s = redecode_store(dir.path(), &RedecodeOptions::default()).unwrap();
        assert_eq!(s.letters, 3);
        assert_eq!(
            (s.moved, s.still_failing, s.events, s.metrics),
            (1, 2, 1, 0)
        );
        // Both stale reasons are replaced by today's.
        assert_eq!(s.reasons_updated, 2);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.rows(Table::Events), 1);
        assert_eq!(store.rows(Table::DeadLetters), 2);
        let version = store.version();

        let again = redecode_store(dir.path(), &RedecodeOptions::default()).unwrap();
        assert_eq!(
            (again.letters, again.moved, again.reasons_updated),
            (2, 0, 0)
        );
        assert_eq!(again.version, None);
        assert_eq!(Store::open(dir.path()).unwrap().version(), version);

        // With the boot time the raw line moves too; the garbage stays.
        let opts = RedecodeOptions {
            hints: Hints {
                boot_time_ns: Some(1_795_910_400_000_000_000),
                ..Hints::default()
            },
            ..RedecodeOptions::default()
        };
        let s = redecode_store(dir.path(), &opts).unwrap();
        assert_eq!((s.moved, s.still_failing, s.events), (1, 1, 1));
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.rows(Table::Events), 2);
        assert_eq!(store.rows(Table::DeadLetters), 1);
    }

    /// A bad line of a multi-line Kafka message, as the decoder itself rejects it.
    #[test]
    fn a_line_of_a_kafka_message_keeps_its_reason() {
        let scrape = "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",Hostname=\"n1\"} 31 1732000000000\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\" 31\n";
        let mut out = Output::new(1_795_910_400_000_000_000);
        let mut d = crate::decode::decoder_for(Format::Prometheus);
        let origin = Origin::Kafka {
            topic: "dcgm",
            partition: 0,
            offset: 7,
        };
        d.decode(scrape.as_bytes(), &origin, &Hints::default(), &mut out);
        assert_eq!(out.dead.len(), 1);
        let dir = tempfile::tempdir().unwrap();
        let mut w = StoreWriter::open(dir.path()).unwrap();
        let dead = out.dead.finish();
        let r = dead
            .column_by_name("source_ref")
            .unwrap()
            .as_string::<i32>();
        assert_eq!(r.value(0), "dcgm/0/7 line 2");
        w.append(Table::DeadLetters, dead).unwrap();
        w.commit(&[]).unwrap();
        drop(w);
        let version = Store::open(dir.path()).unwrap().version();
        let s = redecode_store(dir.path(), &RedecodeOptions::default()).unwrap();
        assert_eq!(
            (s.still_failing, s.reasons_updated, s.version),
            (1, 0, None),
            "{s:?}"
        );
        assert_eq!(Store::open(dir.path()).unwrap().version(), version);
    }

    #[test]
    fn a_letter_with_rows_and_rejections_keeps_its_input_s_rowless_letters() {
        let comment = b"# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n";
        let mixed = b"DCGM_FI_DEV_GPU_TEMP{gpu=\"0\"} 31 1732000000000\nDCGM_FI_DEV_GPU_TEMP{gpu=\"1\" 31\n";
        let alone = retry_letter(
            &letter(kafka("dcgm", 0, 1), "prometheus", comment),
            None,
            &Hints::default(),
            5,
        );
        assert_eq!(alone.attempts, [Attempt::Skipped]);
        let letters = [
            letter(kafka("dcgm", 0, 1), "prometheus", comment),
            letter(kafka("dcgm", 0, 2), "prometheus", mixed),
        ];
        let r = retry_input(&letters, None, &Hints::default(), 5);
        assert_eq!(r.attempts, [Attempt::Partial, Attempt::Partial]);
        assert_eq!(r.events.num_rows() + r.metrics.num_rows(), 0);
    }

    #[test]
    fn only_the_selected_letters_are_retried() {
        let dir = tempfile::tempdir().unwrap();
        {
            let mut w = StoreWriter::open(dir.path()).unwrap();
            w.append(
                Table::DeadLetters,
                dead_letters(&[
                    (file("/logs/node-7.kmsg", 1), "kmsg", RAW_XID.as_bytes()),
                    (file("/logs/node-8.kmsg", 1), "kmsg", RAW_XID.as_bytes()),
                ]),
            )
            .unwrap();
            w.commit(&[]).unwrap();
        }
        // The boot time is node-7's: only its letters get it.
        let opts = RedecodeOptions {
            hints: Hints {
                boot_time_ns: Some(1_795_910_400_000_000_000),
                ..Hints::default()
            },
            source_prefix: Some("/logs/node-7.".into()),
            ..RedecodeOptions::default()
        };
        let s = redecode_store(dir.path(), &opts).unwrap();
        assert_eq!((s.letters, s.moved, s.events), (1, 1, 1), "{s:?}");
        let store = Store::open(dir.path()).unwrap();
        let left = read_dead_refs(&store);
        assert_eq!(left, ["/logs/node-8.kmsg:1"]);
    }

    fn read_dead_refs(store: &Store) -> Vec<String> {
        let mut out = Vec::new();
        for seg in store.segments(Table::DeadLetters) {
            for b in segment::read_parquet(Table::DeadLetters, &seg.path).unwrap() {
                let r = b.column_by_name("source_ref").unwrap().as_string::<i32>();
                out.extend((0..b.num_rows()).map(|i| r.value(i).to_string()));
            }
        }
        out
    }

    #[test]
    fn rows_the_store_already_holds_are_not_written_twice() {
        let dir = tempfile::tempdir().unwrap();
        let l = letter(file("node-7.log", 12), "kmsg", XID.as_bytes());
        let events = retry_letter(&l, None, &Hints::default(), 5).events;
        assert_eq!(events.num_rows(), 1);
        {
            // As if the fixed file had been ingested again before the replay.
            let mut w = StoreWriter::open(dir.path()).unwrap();
            w.append(Table::Events, events).unwrap();
            w.append(
                Table::DeadLetters,
                dead_letters(&[(file("node-7.log", 12), "kmsg", XID.as_bytes())]),
            )
            .unwrap();
            w.commit(&[]).unwrap();
        }
        let s = redecode_store(dir.path(), &RedecodeOptions::default()).unwrap();
        assert_eq!((s.moved, s.events, s.duplicates), (1, 0, 1));
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.rows(Table::Events), 1);
        assert_eq!(store.rows(Table::DeadLetters), 0);
    }
}
