//! A micro-batch: messages decoded into Arrow builders, with the offsets they came from,
//! until it is flushed to the store.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use arrow::array::RecordBatch;
use whyslow_schemas::Table;

use crate::decode::{
    Decoder, FLUSH_BYTES, Format, Hints, MAX_RECORD_BYTES, Origin, Output, decode_contained,
    finish_contained,
};

/// One Kafka message, borrowed from the consumer.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    pub topic: &'a str,
    pub partition: i32,
    pub offset: i64,
    pub payload: Option<&'a [u8]>,
    pub key: Option<&'a [u8]>,
    /// Kafka timestamp, milliseconds since the epoch, when the message has one.
    pub timestamp_ms: Option<i64>,
    /// Headers whose value is UTF-8 (`node`, `format`, `cluster`, …).
    pub headers: &'a [(&'a str, &'a str)],
}

/// What happened to one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// Decoded into the batch (as rows, a skip or a rejection).
    Decoded,
    /// Already in the store: its offset is below the partition's stored offset.
    Redelivered,
}

/// Rows waiting for the next flush, and the offsets they cover.
pub struct MicroBatch {
    ingest_time_ns: fn() -> i64,
    out: Output,
    decoders: HashMap<(String, Format), Box<dyn Decoder>>,
    topic_formats: HashMap<String, Format>,
    make_decoder: fn(Format) -> Option<Box<dyn Decoder>>,
    /// Next offset to read per (topic, partition) for the messages in this batch.
    pending: BTreeMap<(String, i32), i64>,
    bytes: usize,
    started: Option<Instant>,
    /// Kafka timestamps (ms) of the oldest and newest message since the last flush.
    arrivals: Option<(i64, i64)>,
}

/// The flushed contents of a micro-batch.
pub struct Flushed {
    pub batches: Vec<(Table, RecordBatch)>,
    pub offsets: BTreeMap<(String, i32), i64>,
    pub rejected: u64,
    pub records: u64,
    /// Kafka timestamps (ms since the epoch) of the oldest and newest message in the
    /// batch: when the evidence it carries arrived, at the latest and at the earliest.
    pub arrivals: Option<(i64, i64)>,
}

impl MicroBatch {
    /// An empty batch; `topic_formats` names each topic's format, `make_decoder` builds
    /// a decoder for a format (`None` when none exists).
    pub fn new(
        topic_formats: HashMap<String, Format>,
        make_decoder: fn(Format) -> Option<Box<dyn Decoder>>,
        ingest_time_ns: fn() -> i64,
    ) -> Self {
        MicroBatch {
            out: Output::new(ingest_time_ns()),
            ingest_time_ns,
            decoders: HashMap::new(),
            topic_formats,
            make_decoder,
            pending: BTreeMap::new(),
            bytes: 0,
            started: None,
            arrivals: None,
        }
    }

    /// Decodes one message unless `stored_next` (the store's next offset for its
    /// partition) shows the store already holds it.
    pub fn add(&mut self, m: &Message<'_>, stored_next: Option<i64>) -> Accepted {
        if stored_next.is_some_and(|next| m.offset < next) {
            return Accepted::Redelivered;
        }
        self.started.get_or_insert_with(Instant::now);
        let header = |name: &str| {
            m.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(name))
                .map(|(_, v)| *v)
        };
        let topic_format = self
            .topic_formats
            .get(m.topic)
            .copied()
            .unwrap_or(Format::Auto);
        let format = header("format")
            .and_then(|f| f.parse().ok())
            .unwrap_or(topic_format);
        let key = m
            .key
            .and_then(|k| std::str::from_utf8(k).ok())
            .filter(|k| !k.is_empty());
        let hints = Hints {
            node: header("node").map(str::to_string).or_else(|| {
                // Scrape and kernel-log pipelines key their messages by host.
                matches!(format, Format::Prometheus | Format::Kmsg)
                    .then(|| key.map(str::to_string))
                    .flatten()
            }),
            cluster: header("cluster").map(str::to_string),
            namespace: header("namespace").map(str::to_string),
            pod: header("pod").map(str::to_string),
            path: header("path").map(str::to_string),
            default_time_ns: m.timestamp_ms.and_then(|ms| ms.checked_mul(1_000_000)),
            boot_time_ns: None,
        };
        let origin = Origin::Kafka {
            topic: m.topic,
            partition: m.partition,
            offset: m.offset,
        };
        let payload = m.payload.unwrap_or_default();
        self.bytes += payload.len();
        if let Some(t) = m.timestamp_ms {
            let (lo, hi) = self.arrivals.get_or_insert((t, t));
            (*lo, *hi) = ((*lo).min(t), (*hi).max(t));
        }
        // The offset is recorded only once the message is decoded or dead-lettered: a
        // flush (even one while a failure unwinds) never commits a message it lacks.
        self.decode(m, &origin, format, &hints, payload);
        self.pending
            .insert((m.topic.to_string(), m.partition), m.offset + 1);
        Accepted::Decoded
    }

    /// Decodes one message's payload into the batch: rows, a skip or a dead letter.
    fn decode(
        &mut self,
        m: &Message<'_>,
        origin: &Origin<'_>,
        format: Format,
        hints: &Hints,
        payload: &[u8],
    ) {
        if m.payload.is_none() {
            // A tombstone carries nothing to decode.
            self.out.begin_record();
            self.out.skip();
            return;
        }
        if payload.len() > MAX_RECORD_BYTES {
            self.out.begin_record();
            let why = format!(
                "message of {} bytes exceeds the {} byte limit",
                payload.len(),
                MAX_RECORD_BYTES
            );
            self.out.reject(origin, format, &why, payload);
            return;
        }
        let decoder = match self.decoders.entry((m.topic.to_string(), format)) {
            std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(v) => {
                (self.make_decoder)(format).map(|d| v.insert(d))
            }
        };
        match decoder {
            Some(d) => {
                decode_contained(d.as_mut(), payload, origin, hints, &mut self.out);
            }
            None => {
                self.out.begin_record();
                let why = format!("no decoder for format {format}");
                self.out.reject(origin, format, &why, payload);
            }
        }
    }

    /// Whether the rows waiting carry so much text that they must be flushed now,
    /// whatever the batch limits say ([`FLUSH_BYTES`]).
    pub fn is_full(&self) -> bool {
        self.out.pending_bytes() >= FLUSH_BYTES
    }

    /// Rows waiting in the builders.
    pub fn rows(&self) -> usize {
        self.out.pending_rows()
    }

    /// Records rejected to dead letters since the last flush.
    pub fn rejected(&self) -> u64 {
        self.out.counts.rejected
    }

    /// Payload bytes decoded since the last flush.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether any message arrived since the last flush.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// How long the oldest message has waited.
    pub fn age(&self) -> std::time::Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }

    /// Forgets the partitions of a revoked assignment once they are flushed.
    pub fn forget_partition(&mut self, topic: &str, partition: i32) {
        self.pending.remove(&(topic.to_string(), partition));
    }

    /// The stream ends (the worker stops): every decoder emits what it holds back, as at
    /// the end of a file; the rows go with the next `take`.
    pub fn finish_decoders(&mut self) {
        for ((topic, _), d) in &mut self.decoders {
            // No decoder reads a stream's hints at its end: held records keep their own.
            let origin = stream_end(topic);
            finish_contained(d.as_mut(), false, &origin, &Hints::default(), &mut self.out);
        }
    }

    /// Takes the batch's rows and offsets; the batch starts empty again. Decoders first
    /// emit the multi-line records they hold that are already whole
    /// ([`Decoder::release_complete`]): a crashed container's last traceback has no next
    /// line to end it.
    pub fn take(&mut self) -> Flushed {
        for ((topic, _), d) in &mut self.decoders {
            let origin = stream_end(topic);
            finish_contained(d.as_mut(), true, &origin, &Hints::default(), &mut self.out);
        }
        let batches = self.out.take_batches();
        let counts = self.out.counts;
        self.out = Output::new((self.ingest_time_ns)());
        self.bytes = 0;
        self.started = None;
        Flushed {
            batches,
            offsets: std::mem::take(&mut self.pending),
            rejected: counts.rejected,
            records: counts.records,
            arrivals: self.arrivals.take(),
        }
    }
}

/// Where a decoder's held records are named when it fails to emit them: its topic
/// (the partition and offset are not known once records are held across messages).
fn stream_end(topic: &str) -> Origin<'_> {
    Origin::Kafka {
        topic,
        partition: -1,
        offset: -1,
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;

    use super::*;

    fn batch(format: Format) -> MicroBatch {
        let topics = HashMap::from([("logs".to_string(), format)]);
        MicroBatch::new(topics, |f| crate::run::decoder_for(f).ok(), || 0)
    }

    /// Adds one CRI line of `pod` as the next message of `logs`/0.
    fn add(b: &mut MicroBatch, offset: i64, pod: &str, line: &str) {
        let payload = format!("2026-11-29T10:00:00.000000000Z stderr F {line}");
        let path = format!("pods/ml_{pod}_1234/trainer/0.log");
        let headers = [("path", path.as_str())];
        let m = Message {
            topic: "logs",
            partition: 0,
            offset,
            payload: Some(payload.as_bytes()),
            key: None,
            timestamp_ms: Some(1_764_410_400_000),
            headers: &headers,
        };
        assert_eq!(b.add(&m, None), Accepted::Decoded);
    }

    /// The `message` of every event row of a flush.
    fn messages(f: &Flushed) -> Vec<String> {
        f.batches
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

    const HEAD: &str = "Traceback (most recent call last):";
    const FRAME: &str = "  File \"train.py\", line 10, in <module>";
    const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";

    #[test]
    fn a_flush_carries_the_tracebacks_its_messages_completed() {
        for format in [Format::ContainerLog, Format::Auto] {
            let mut b = batch(format);
            for (i, (pod, line)) in [
                ("a", HEAD),
                ("b", HEAD),
                ("a", FRAME),
                ("b", FRAME),
                ("a", OOM),
            ]
            .into_iter()
            .enumerate()
            {
                add(&mut b, i as i64, &format!("{pod}-0-abcde"), line);
            }
            let first = b.take();
            assert_eq!(messages(&first), [OOM], "{format}");
            assert_eq!(first.offsets[&("logs".to_string(), 0)], 5);
            add(&mut b, 5, "b-0-abcde", "KeyError: 'x'");
            assert_eq!(messages(&b.take()), ["KeyError: 'x'"], "{format}");
        }
    }

    /// Panics on every record (a decoder bug a producer can trigger at will).
    struct Broken;

    impl Decoder for Broken {
        fn format(&self) -> Format {
            Format::Kmsg
        }

        fn decode(&mut self, _: &[u8], _: &Origin<'_>, _: &Hints, out: &mut Output) {
            out.begin_record();
            panic!("slice index is not a char boundary");
        }
    }

    /// A message whose decoding fails is dead-lettered whole in its batch and its offset
    /// recorded with it: the stream goes on, and nothing is skipped on a restart.
    #[test]
    fn a_message_that_panics_its_decoder_is_dead_lettered_with_its_offset() {
        let topics = HashMap::from([("logs".to_string(), Format::Kmsg)]);
        let mut b = MicroBatch::new(
            topics,
            |f| match f {
                Format::Kmsg => Some(Box::new(Broken)),
                f => crate::run::decoder_for(f).ok(),
            },
            || 0,
        );
        for offset in [7, 8] {
            let m = Message {
                topic: "logs",
                partition: 3,
                offset,
                payload: Some("Nov 29 10:15:0é host kernel: x".as_bytes()),
                key: None,
                timestamp_ms: None,
                headers: &[],
            };
            assert_eq!(b.add(&m, None), Accepted::Decoded);
        }
        let f = b.take();
        assert_eq!(f.offsets[&("logs".to_string(), 3)], 9);
        assert_eq!((f.records, f.rejected), (2, 2));
        let (_, dead) = f
            .batches
            .iter()
            .find(|(t, _)| *t == Table::DeadLetters)
            .unwrap();
        let refs = dead
            .column_by_name("source_ref")
            .unwrap()
            .as_string::<i32>();
        assert_eq!(refs.value(0), "logs/3/7");
        let error = dead.column_by_name("error").unwrap().as_string::<i32>();
        assert!(
            error.value(1).contains("kmsg decoder failed"),
            "{}",
            error.value(1)
        );
        let payload = dead.column_by_name("payload").unwrap().as_binary::<i32>();
        assert_eq!(
            payload.value(1),
            "Nov 29 10:15:0é host kernel: x".as_bytes()
        );
    }

    #[test]
    fn the_end_of_the_stream_emits_what_decoders_still_hold() {
        let mut b = batch(Format::ContainerLog);
        let chained = [
            HEAD,
            FRAME,
            "KeyError: 'x'",
            "During handling of the above exception, another exception occurred:",
            HEAD,
            FRAME,
        ];
        for (i, line) in chained.into_iter().enumerate() {
            add(&mut b, i as i64, "a-0-abcde", line);
        }
        // The second traceback has not reached its exception: held.
        assert!(messages(&b.take()).is_empty());
        assert!(b.is_empty());
        // The worker stops: as at the end of a file, the first exception is what is known.
        b.finish_decoders();
        assert_eq!(b.rows(), 1);
        let last = b.take();
        assert_eq!(messages(&last), ["KeyError: 'x'"]);
        assert!(last.offsets.is_empty());
    }
}
