//! The one way records reach decoders, whatever brings them — file lines and documents
//! (`whyslow ingest`), Kafka messages (`whyslow stream`), dead letters retried
//! (`whyslow replay`): a decoder per key (an input, a topic partition and format) made by
//! the registry, the record size limit, a decoder's failure contained to its record, every
//! record accounted for in [`Output`], and the rows handed on as Arrow batches.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

use arrow::array::RecordBatch;
use whyslow_schemas::{DeadLetter, Table};

use crate::decode::{
    Counts, Decoder, Format, Framing, HARD_CAP_BYTES, Hints, MAX_RECORD_BYTES, Origin, Output,
    decode_contained, decoder_for, finish_contained,
};

/// Makes the decoder of a format (`None`: no decoder reads it).
pub type Factory = fn(Format) -> Option<Box<dyn Decoder>>;

/// One record as its source read it.
#[derive(Debug, Clone, Copy)]
pub struct Record<'a> {
    /// Its bytes (at most [`HARD_CAP_BYTES`]).
    pub bytes: &'a [u8],
    /// Its whole length: more than `bytes.len()` when the source cut it at the hard cap.
    pub full_len: u64,
}

impl<'a> Record<'a> {
    /// A record read whole.
    pub fn whole(bytes: &'a [u8]) -> Self {
        Record {
            bytes,
            full_len: bytes.len() as u64,
        }
    }

    /// Whether the source cut it at the hard cap.
    pub fn is_cut(&self) -> bool {
        self.full_len > self.bytes.len() as u64
    }
}

/// What became of a record fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fed {
    /// Its decoder read it (into rows, a skip, or a rejection of its own).
    Decoded,
    /// Its decoder failed on it: dead-lettered whole with the failure.
    Failed,
    /// Over the size limit (or cut at the hard cap): dead-lettered, not decoded.
    TooLarge,
    /// No decoder reads its format: dead-lettered whole.
    NoDecoder,
}

/// Decoders by key, writing into one [`Output`].
pub struct Feed<K> {
    out: Output,
    decoders: HashMap<K, Box<dyn Decoder>>,
    factory: Factory,
}

/// The registry's decoders, for [`Feed::new`].
fn registry(format: Format) -> Option<Box<dyn Decoder>> {
    Some(decoder_for(format))
}

impl<K: Eq + Hash + Clone> Feed<K> {
    /// A feed whose decoders come from the registry ([`decoder_for`]), stamping
    /// `ingest_time_ns` on every row.
    pub fn new(ingest_time_ns: i64) -> Self {
        Self::with_factory(ingest_time_ns, registry)
    }

    /// A feed whose decoders `factory` makes.
    pub fn with_factory(ingest_time_ns: i64, factory: Factory) -> Self {
        Feed {
            out: Output::new(ingest_time_ns),
            decoders: HashMap::new(),
            factory,
        }
    }

    /// Feeds one record to the decoder of `key` (made for `format` on first use): rows,
    /// a skip or a dead letter, and exactly one record counted. A record over
    /// [`MAX_RECORD_BYTES`] is refused before decoding (a file document, whose decoder
    /// applies the limit to each object in it, only when cut at [`HARD_CAP_BYTES`]).
    pub fn record(
        &mut self,
        key: K,
        format: Format,
        record: Record<'_>,
        origin: &Origin<'_>,
        hints: &Hints,
    ) -> Fed {
        let decoder = match self.decoders.entry(key) {
            Entry::Occupied(e) => Some(e.into_mut()),
            Entry::Vacant(v) => (self.factory)(format).map(|d| v.insert(d)),
        };
        let Some(decoder) = decoder else {
            self.out.begin_record();
            let why = format!("{origin}: no decoder for format {format}");
            self.out.reject(origin, format, &why, record.bytes);
            return Fed::NoDecoder;
        };
        if let Some(why) = over_limit(&record, origin, decoder.framing()) {
            self.out.begin_record();
            self.out.reject_letter(&DeadLetter {
                record_bytes: record.full_len.max(record.bytes.len() as u64),
                ..DeadLetter::whole(*origin, decoder.format().name(), &why, record.bytes)
            });
            return Fed::TooLarge;
        }
        if decode_contained(decoder.as_mut(), record.bytes, origin, hints, &mut self.out) {
            Fed::Failed
        } else {
            Fed::Decoded
        }
    }

    /// How the decoder of `key` (made for `format` if it has none yet) cuts a file into
    /// records; `None`: no decoder reads `format`.
    pub fn framing(&mut self, key: K, format: Format) -> Option<Framing> {
        let d = match self.decoders.entry(key) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => v.insert((self.factory)(format)?),
        };
        Some(d.framing())
    }

    /// A record that carries nothing to decode (a Kafka tombstone): counted as skipped.
    pub fn skip_record(&mut self) {
        self.out.begin_record();
        self.out.skip();
    }

    /// The end of `key`'s input: its decoder emits what it holds back (a failure is one
    /// dead letter at `origin`) and is dropped; the next record of `key` gets a fresh one.
    /// Returns whether it failed.
    pub fn end(&mut self, key: &K, origin: &Origin<'_>, hints: &Hints) -> bool {
        match self.decoders.remove(key) {
            Some(mut d) => finish_contained(d.as_mut(), false, origin, hints, &mut self.out),
            None => false,
        }
    }

    /// The end of every input (a stream stops): each decoder emits what it holds back,
    /// its failure named at the origin `origin_of` gives its key.
    pub fn end_all(&mut self, origin_of: impl Fn(&K) -> Origin<'_>) {
        for (key, mut d) in std::mem::take(&mut self.decoders) {
            // No decoder reads an input's hints at its end: held records keep their own.
            finish_contained(
                d.as_mut(),
                false,
                &origin_of(&key),
                &Hints::default(),
                &mut self.out,
            );
        }
    }

    /// Asks `key`'s decoder to emit the multi-line records it holds that are already
    /// whole ([`Decoder::release_complete`]); returns the Kafka offset of the earliest
    /// message whose content it still holds ([`Decoder::held_from`]).
    pub fn release_complete(&mut self, key: &K, origin: &Origin<'_>) -> Option<i64> {
        let d = self.decoders.get_mut(key)?;
        finish_contained(d.as_mut(), true, origin, &Hints::default(), &mut self.out);
        d.held_from()
    }

    /// The keys of the decoders alive.
    pub fn keys(&self) -> Vec<K> {
        self.decoders.keys().cloned().collect()
    }

    /// Drops the decoders of the keys `drop` selects, with what they hold.
    pub fn forget(&mut self, drop: impl Fn(&K) -> bool) {
        self.decoders.retain(|k, _| !drop(k));
    }

    /// The output so far (its builders, tallies and row counts).
    pub fn output(&self) -> &Output {
        &self.out
    }

    /// The tallies so far.
    pub fn counts(&self) -> Counts {
        self.out.counts
    }

    /// Forgets the tallies (the caller summed them), keeping rows and decoders.
    pub fn take_counts(&mut self) -> Counts {
        std::mem::take(&mut self.out.counts)
    }

    /// Rows waiting in the builders.
    pub fn pending_rows(&self) -> usize {
        self.out.pending_rows()
    }

    /// Text and payload bytes waiting in the builders.
    pub fn pending_bytes(&self) -> usize {
        self.out.pending_bytes()
    }

    /// Every row so far as batches (events, metrics, dead letters), in the order
    /// appended; the builders start empty again, the tallies and decoders are kept.
    pub fn take(&mut self) -> Vec<(Table, RecordBatch)> {
        self.out.take_batches()
    }

    /// Starts over with empty builders and tallies stamping `ingest_time_ns`, keeping the
    /// decoders (and what they hold).
    pub fn restart(&mut self, ingest_time_ns: i64) {
        self.out = Output::new(ingest_time_ns);
    }
}

/// Why `record` is refused before decoding, if it is: cut at the hard cap, or over
/// [`MAX_RECORD_BYTES`] (a file document only past the hard cap).
fn over_limit(record: &Record<'_>, origin: &Origin<'_>, framing: Framing) -> Option<String> {
    let document = framing == Framing::Document && matches!(origin, Origin::File { .. });
    let len = record.full_len.max(record.bytes.len() as u64);
    let limit = if document {
        HARD_CAP_BYTES
    } else {
        MAX_RECORD_BYTES
    };
    if !record.is_cut() && len <= limit as u64 {
        return None;
    }
    let mut why = format!("{origin}: record of {len} bytes is over the limit of {limit} bytes");
    if record.is_cut() {
        why.push_str(&format!(
            " (payload cut to its first {} bytes)",
            record.bytes.len()
        ));
    }
    Some(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(line: u64) -> Origin<'static> {
        Origin::File { path: "f", line }
    }

    #[test]
    fn records_over_the_limit_are_refused_whole_and_counted() {
        let mut feed: Feed<()> = Feed::new(0);
        let big = vec![b'x'; MAX_RECORD_BYTES + 1];
        let hints = Hints::default();
        let fed = feed.record((), Format::Envelope, Record::whole(&big), &file(1), &hints);
        assert_eq!(fed, Fed::TooLarge);
        let cut = Record {
            bytes: b"{\"time\":1",
            full_len: 70_000_000,
        };
        assert_eq!(
            feed.record((), Format::Envelope, cut, &file(2), &hints),
            Fed::TooLarge
        );
        let ok = br#"{"time":1,"kind":"xid","node":"n"}"#;
        let fed = feed.record((), Format::Envelope, Record::whole(ok), &file(3), &hints);
        assert_eq!(fed, Fed::Decoded);
        let c = feed.counts();
        assert_eq!((c.records, c.rejected, c.produced), (3, 2, 1));
        assert!(c.balances());
        let dead = feed
            .take()
            .into_iter()
            .find(|(t, _)| *t == Table::DeadLetters)
            .map(|(_, b)| b)
            .unwrap();
        use arrow::array::AsArray;
        let bytes = dead.column_by_name("record_bytes").unwrap();
        let bytes = bytes.as_primitive::<arrow::datatypes::Int64Type>();
        assert_eq!(
            (bytes.value(0), bytes.value(1)),
            (big.len() as i64, 70_000_000)
        );
        let error = dead.column_by_name("error").unwrap().as_string::<i32>();
        assert!(error.value(1).starts_with("f:2: record of 70000000 bytes"));
        assert!(
            error
                .value(1)
                .ends_with("(payload cut to its first 9 bytes)")
        );
    }

    #[test]
    fn a_file_document_is_limited_by_the_hard_cap_only() {
        let mut feed: Feed<()> = Feed::new(0);
        let hints = Hints::default();
        let mut doc = b"{\"kind\":\"List\",\"items\":[]}".to_vec();
        doc.resize(MAX_RECORD_BYTES + 10, b' ');
        let fed = feed.record((), Format::K8s, Record::whole(&doc), &file(1), &hints);
        assert_eq!(fed, Fed::Decoded);
        let kafka = Origin::Kafka {
            topic: "k8s",
            partition: 0,
            offset: 4,
        };
        let fed = feed.record((), Format::K8s, Record::whole(&doc), &kafka, &hints);
        assert_eq!(
            fed,
            Fed::TooLarge,
            "a message is one record, limited as one"
        );
    }

    #[test]
    fn a_format_without_a_decoder_is_a_dead_letter() {
        let mut feed: Feed<()> = Feed::with_factory(0, |_| None);
        let fed = feed.record(
            (),
            Format::Kmsg,
            Record::whole(b"x"),
            &file(1),
            &Hints::default(),
        );
        assert_eq!(fed, Fed::NoDecoder);
        assert_eq!(feed.counts().rejected, 1);
    }
}
