//! A micro-batch: messages decoded into Arrow builders, with the offsets they came from,
//! until it is flushed to the store.
//!
//! Offsets: a flush records, per partition, the offset after its last message, unless a
//! decoder of that partition still holds part of a record (an open traceback, a CRI
//! partial line): then the offset of the message that record began in
//! ([`Decoder::held_from`]), so a crash redelivers the record's lines instead of losing
//! them (the rows of the messages decoded twice are duplicates the store drops). Decoders
//! are kept per partition, so a rebalance hands a partition's records over with it. A
//! record held more than [`MAX_HELD_BEHIND`] messages back is emitted as it is.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use arrow::array::RecordBatch;
use whyslow_schemas::Table;

use crate::decode::{FLUSH_BYTES, Factory, Feed, Format, Hints, Origin, Record};

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
    /// Decoders per topic, partition and format: a partition's multi-line records are its
    /// own.
    feed: Feed<(String, i32, Format)>,
    topic_formats: HashMap<String, Format>,
    /// Next offset to read per (topic, partition) for the messages in this batch.
    pending: BTreeMap<(String, i32), i64>,
    /// Partitions whose last recorded offset stayed at a held record, with the offset
    /// past their last message: recorded once the record is emitted, new messages or not.
    held_back: BTreeMap<(String, i32), i64>,
    bytes: usize,
    started: Option<Instant>,
    /// Kafka timestamps (ms) of the oldest and newest message since the last flush.
    arrivals: Option<(i64, i64)>,
}

/// How many messages a partition's recorded offset may stay behind its last message for
/// a record a decoder still holds; past that the record is emitted as it is (as at the
/// end of a file), so an unfinished traceback cannot hold a partition back for ever.
pub const MAX_HELD_BEHIND: i64 = 10_000;

/// The flushed contents of a micro-batch.
pub struct Flushed {
    pub batches: Vec<(Table, RecordBatch)>,
    /// The next offset to record per partition: past every message the batch holds,
    /// or at the first message of a record a decoder still holds.
    pub offsets: BTreeMap<(String, i32), i64>,
    pub rejected: u64,
    pub records: u64,
    /// Kafka timestamps (ms since the epoch) of the oldest and newest message in the
    /// batch: when the evidence it carries arrived, at the latest and at the earliest.
    pub arrivals: Option<(i64, i64)>,
}

impl MicroBatch {
    /// An empty batch; `topic_formats` names each topic's format, `factory` makes the
    /// decoder of a format (the registry's: [`crate::decode::decoder_for`]).
    pub fn new(
        topic_formats: HashMap<String, Format>,
        factory: Factory,
        ingest_time_ns: fn() -> i64,
    ) -> Self {
        MicroBatch {
            feed: Feed::with_factory(ingest_time_ns(), factory),
            ingest_time_ns,
            topic_formats,
            pending: BTreeMap::new(),
            held_back: BTreeMap::new(),
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
            record_time_ns: None,
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
        if m.payload.is_none() {
            // A tombstone carries nothing to decode.
            self.feed.skip_record();
        } else {
            let key = (m.topic.to_string(), m.partition, format);
            let record = Record::whole(payload);
            self.feed.record(key, format, record, &origin, &hints);
        }
        self.pending
            .insert((m.topic.to_string(), m.partition), m.offset + 1);
        Accepted::Decoded
    }

    /// Whether the rows waiting carry so much text that they must be flushed now,
    /// whatever the batch limits say ([`FLUSH_BYTES`]).
    pub fn is_full(&self) -> bool {
        self.feed.pending_bytes() >= FLUSH_BYTES
    }

    /// Rows waiting in the builders.
    pub fn rows(&self) -> usize {
        self.feed.pending_rows()
    }

    /// Records rejected to dead letters since the last flush.
    pub fn rejected(&self) -> u64 {
        self.feed.counts().rejected
    }

    /// Payload bytes decoded since the last flush.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether no message arrived since the last flush and no partition's offset waits
    /// for a held record.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.held_back.is_empty()
    }

    /// How long the oldest message has waited.
    pub fn age(&self) -> std::time::Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }

    /// Forgets a partition of a revoked assignment once it is flushed, with what its
    /// decoders hold: its next owner starts at the recorded offset, which is at or before
    /// the first message of any record held here, and reads those records whole.
    pub fn forget_partition(&mut self, topic: &str, partition: i32) {
        self.pending.remove(&(topic.to_string(), partition));
        self.held_back.remove(&(topic.to_string(), partition));
        self.feed.forget(|(t, p, _)| t == topic && *p == partition);
    }

    /// The stream ends (the worker stops): every decoder emits what it holds back, as at
    /// the end of a file; the rows go with the next `take`.
    pub fn finish_decoders(&mut self) {
        self.feed
            .end_all(|(topic, partition, _)| stream_end(topic, *partition));
    }

    /// Takes the batch's rows and offsets; the batch starts empty again. Decoders first
    /// emit the multi-line records they hold that are already whole
    /// ([`Decoder::release_complete`]): a crashed container's last traceback has no next
    /// line to end it.
    pub fn take(&mut self) -> Flushed {
        let mut offsets = std::mem::take(&mut self.pending);
        for (key, next) in std::mem::take(&mut self.held_back) {
            offsets.entry(key).or_insert(next);
        }
        let past_last = offsets.clone();
        for key in self.feed.keys() {
            let (topic, partition, _) = &key;
            let origin = stream_end(topic, *partition);
            let held = self.feed.release_complete(&key, &origin);
            let (Some(next), Some(held)) = (offsets.get_mut(&(topic.clone(), *partition)), held)
            else {
                continue;
            };
            if *next - held > MAX_HELD_BEHIND {
                // Emitted as it is, as at the end of a file; the partition's next record
                // gets a fresh decoder.
                self.feed.end(&key, &origin, &Hints::default());
            } else {
                *next = (*next).min(held);
            }
        }
        for (key, next) in &offsets {
            if let Some(&past) = past_last.get(key).filter(|&&past| past > *next) {
                self.held_back.insert(key.clone(), past);
            }
        }
        let batches = self.feed.take();
        let counts = self.feed.counts();
        self.feed.restart((self.ingest_time_ns)());
        self.bytes = 0;
        self.started = None;
        Flushed {
            batches,
            offsets,
            rejected: counts.rejected,
            records: counts.records,
            arrivals: self.arrivals.take(),
        }
    }
}

/// Where a decoder's held records are named when it fails to emit them: its topic and
/// partition (the offset is not known once records are held across messages).
fn stream_end(topic: &str, partition: i32) -> Origin<'_> {
    Origin::Kafka {
        topic,
        partition,
        offset: -1,
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;

    use super::*;
    use crate::decode::{Decoder, Output};

    fn batch(format: Format) -> MicroBatch {
        let topics = HashMap::from([("logs".to_string(), format)]);
        MicroBatch::new(topics, |f| Some(crate::decode::decoder_for(f)), || 0)
    }

    /// Adds one CRI line of `pod` as the next message of `logs`/0.
    fn add(b: &mut MicroBatch, offset: i64, pod: &str, line: &str) {
        add_to(b, 0, offset, pod, line, None);
    }

    /// Adds one CRI line of `pod` as message `offset` of `logs`/`partition`, the store
    /// holding the partition up to `stored`.
    fn add_to(
        b: &mut MicroBatch,
        partition: i32,
        offset: i64,
        pod: &str,
        line: &str,
        stored: Option<i64>,
    ) -> Accepted {
        let payload = format!("2026-11-29T10:00:00.000000000Z stderr F {line}");
        let path = format!("pods/ml_{pod}_1234/trainer/0.log");
        let headers = [("path", path.as_str())];
        let m = Message {
            topic: "logs",
            partition,
            offset,
            payload: Some(payload.as_bytes()),
            key: None,
            timestamp_ms: Some(1_764_410_400_000),
            headers: &headers,
        };
        b.add(&m, stored)
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
            // b's traceback, still open, began in message 1: no offset past it.
            assert_eq!(first.offsets[&("logs".to_string(), 0)], 1, "{format}");
            add(&mut b, 5, "b-0-abcde", "KeyError: 'x'");
            let second = b.take();
            assert_eq!(messages(&second), ["KeyError: 'x'"], "{format}");
            assert_eq!(second.offsets[&("logs".to_string(), 0)], 6, "{format}");
        }
    }

    /// A worker killed while a traceback is open: the store's offset is the message the
    /// traceback began in, so the restarted worker reads it whole.
    #[test]
    fn a_record_open_at_a_crash_is_read_whole_after_the_restart() {
        for format in [Format::ContainerLog, Format::Auto] {
            let mut b = batch(format);
            for (i, line) in [HEAD, FRAME].into_iter().enumerate() {
                add(&mut b, 10 + i as i64, "a-0-abcde", line);
            }
            let before_crash = b.take();
            assert!(messages(&before_crash).is_empty());
            let stored = before_crash.offsets[&("logs".to_string(), 0)];
            assert_eq!(stored, 10, "{format}");
            // The restart: a fresh batch, Kafka redelivering from the stored offset.
            let mut b = batch(format);
            for (i, line) in [HEAD, FRAME, OOM].into_iter().enumerate() {
                let accepted = add_to(&mut b, 0, 10 + i as i64, "a-0-abcde", line, Some(stored));
                assert_eq!(accepted, Accepted::Decoded);
            }
            let after = b.take();
            assert_eq!(messages(&after), [OOM], "{format}");
            assert_eq!(after.offsets[&("logs".to_string(), 0)], 13, "{format}");
        }
    }

    /// A record emitted at the stream's end moves its partition's offset past the last
    /// message, though no message came since the flush that held it back.
    #[test]
    fn the_end_of_the_stream_records_the_offset_a_held_record_kept_back() {
        let mut b = batch(Format::ContainerLog);
        add(&mut b, 0, "a-0-abcde", HEAD);
        add(&mut b, 1, "a-0-abcde", FRAME);
        add(&mut b, 2, "a-0-abcde", OOM);
        add(&mut b, 3, "b-0-abcde", HEAD);
        let f = b.take();
        assert_eq!(messages(&f), [OOM]);
        assert_eq!(f.offsets[&("logs".to_string(), 0)], 3);
        assert!(!b.is_empty(), "an offset waits for the open traceback");
        b.finish_decoders();
        assert_eq!(b.take().offsets[&("logs".to_string(), 0)], 4);
        assert!(b.is_empty());
    }

    /// Each partition's decoders hold its own records: an open traceback on one holds
    /// back no other partition, and a revoked partition's records leave with it.
    #[test]
    fn partitions_hold_their_own_records() {
        let mut b = batch(Format::ContainerLog);
        add_to(&mut b, 0, 40, "a-0-abcde", HEAD, None);
        add_to(&mut b, 1, 7, "b-0-abcde", "step 1 done", None);
        let f = b.take();
        assert_eq!(f.offsets[&("logs".to_string(), 0)], 40);
        assert_eq!(f.offsets[&("logs".to_string(), 1)], 8);
        b.forget_partition("logs", 0);
        add_to(&mut b, 0, 41, "a-0-abcde", FRAME, None);
        add_to(&mut b, 0, 42, "a-0-abcde", OOM, None);
        // The traceback's head left with the revoked partition (its next owner reads it
        // whole from 40): nothing is held here for it any more.
        assert_eq!(b.take().offsets[&("logs".to_string(), 0)], 43);
    }

    /// An unfinished record cannot hold its partition back without bound.
    #[test]
    fn a_record_held_too_far_back_is_emitted_as_it_is() {
        let mut b = batch(Format::ContainerLog);
        add(&mut b, 0, "a-0-abcde", HEAD);
        add(&mut b, 1, "a-0-abcde", FRAME);
        assert_eq!(b.take().offsets[&("logs".to_string(), 0)], 0);
        for i in 2..MAX_HELD_BEHIND {
            add(&mut b, i, "b-0-abcde", "step done");
        }
        // MAX_HELD_BEHIND messages behind: still held.
        assert_eq!(b.take().offsets[&("logs".to_string(), 0)], 0);
        add(&mut b, MAX_HELD_BEHIND, "b-0-abcde", "step done");
        let f = b.take();
        assert_eq!(f.offsets[&("logs".to_string(), 0)], MAX_HELD_BEHIND + 1);
        add(&mut b, MAX_HELD_BEHIND + 1, "b-0-abcde", "step done");
        assert_eq!(
            b.take().offsets[&("logs".to_string(), 0)],
            MAX_HELD_BEHIND + 2,
            "nothing is held any more"
        );
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
                f => Some(crate::decode::decoder_for(f)),
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
        // The second traceback has not reached its exception: held, and the offset
        // stays at the message the chain began in.
        let held = b.take();
        assert!(messages(&held).is_empty());
        assert_eq!(held.offsets[&("logs".to_string(), 0)], 0);
        assert!(!b.is_empty(), "the offset waits for the held traceback");
        // The worker stops: as at the end of a file, the first exception is what is known.
        b.finish_decoders();
        assert_eq!(b.rows(), 1);
        let last = b.take();
        assert_eq!(messages(&last), ["KeyError: 'x'"]);
        assert_eq!(last.offsets[&("logs".to_string(), 0)], 6);
    }
}
