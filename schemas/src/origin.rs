//! Where a record came from — a file line or a Kafka message — as decoders name it in
//! messages and as `dead_letters` stores it, in fields (`source_path`, `source_line`,
//! `kafka_topic`, `kafka_partition`, `kafka_offset`, `part`) beside its text (`source_ref`).

use std::fmt;

/// A record's place in its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// One part of a record that holds many (a line of a multi-line Kafka message, a data
/// point of an OTLP request), rejected on its own while the rest became rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The 1-based line of the record.
    Line(u64),
    /// The 1-based data point of the record.
    Point(u64),
}

impl Part {
    /// Its number.
    pub fn number(self) -> u64 {
        match self {
            Part::Line(n) | Part::Point(n) => n,
        }
    }
}

impl fmt::Display for Part {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Part::Line(n) => write!(f, "line {n}"),
            Part::Point(n) => write!(f, "point {n}"),
        }
    }
}

/// A rejected record (or part of one), as `dead_letters` keeps it.
#[derive(Debug, Clone, Copy)]
pub struct DeadLetter<'a> {
    /// Where the record came from.
    pub origin: Origin<'a>,
    /// The part of the record this letter is, when only a part was rejected.
    pub part: Option<Part>,
    /// The format whose decoder rejected it.
    pub format: &'a str,
    /// Why, in one sentence.
    pub error: &'a str,
    /// The record's bytes, verbatim (cut at the hard cap when longer).
    pub payload: &'a [u8],
    /// The record's whole length: more than `payload.len()` when the payload was cut.
    pub record_bytes: u64,
}

impl<'a> DeadLetter<'a> {
    /// A whole record, kept whole.
    pub fn whole(origin: Origin<'a>, format: &'a str, error: &'a str, payload: &'a [u8]) -> Self {
        DeadLetter {
            origin,
            part: None,
            format,
            error,
            payload,
            record_bytes: payload.len() as u64,
        }
    }

    /// The `source_ref` text: `path:line` or `topic/partition/offset`, followed by the
    /// part (` line N`, ` point N`) when the letter is one.
    pub fn source_ref(&self) -> String {
        match self.part {
            None => self.origin.to_string(),
            Some(p) => format!("{} {p}", self.origin),
        }
    }

    /// Whether the payload is the record cut short.
    pub fn is_cut(&self) -> bool {
        self.record_bytes > self.payload.len() as u64
    }
}
