//! Column builders that decoders append rows to, one per stored table: rows go straight
//! into Arrow arrays, with no intermediate per-row objects.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryBuilder, Float64Builder, Int32Builder, Int64Builder, MapBuilder, RecordBatch,
    StringBuilder, TimestampMicrosecondBuilder,
};

use crate::origin::{DeadLetter, Origin};
use crate::tables::{Table, ns_to_stored, string_map_builder, timestamp_builder};
use crate::{Layer, Severity};

/// A count as an `int64` column holds it (no real count reaches `i64::MAX`).
fn clamp(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Where and to whom a row applies; every field is optional.
#[derive(Debug, Clone, Copy, Default)]
pub struct Scope<'a> {
    pub cluster: Option<&'a str>,
    pub node: Option<&'a str>,
    pub device: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub workload: Option<&'a str>,
    pub pod: Option<&'a str>,
    pub run_id: Option<&'a str>,
}

struct ScopeBuilders([StringBuilder; 7]);

impl ScopeBuilders {
    fn new() -> Self {
        ScopeBuilders(std::array::from_fn(|_| StringBuilder::new()))
    }

    /// Appends one row's scope; returns the text bytes appended.
    fn append(&mut self, s: &Scope<'_>) -> usize {
        let values = [
            s.cluster,
            s.node,
            s.device,
            s.namespace,
            s.workload,
            s.pod,
            s.run_id,
        ];
        let mut bytes = 0;
        for (b, v) in self.0.iter_mut().zip(values) {
            bytes += v.map_or(0, str::len);
            b.append_option(v);
        }
        bytes
    }

    fn finish(&mut self, out: &mut Vec<ArrayRef>) {
        for b in &mut self.0 {
            out.push(Arc::new(b.finish()));
        }
    }
}

/// Appends one map; returns the text bytes appended.
fn append_map<K: AsRef<str>, V: AsRef<str>>(
    b: &mut MapBuilder<StringBuilder, StringBuilder>,
    entries: impl IntoIterator<Item = (K, V)>,
) -> usize {
    let mut bytes = 0;
    for (k, v) in entries {
        bytes += k.as_ref().len() + v.as_ref().len();
        b.keys().append_value(k.as_ref());
        b.values().append_value(v.as_ref());
    }
    // Appending a valid (non-null) map entry cannot fail: only mismatched key/value
    // counts error, and both sides are appended together above.
    b.append(true).expect("keys and values appended in pairs");
    bytes
}

fn timestamps() -> TimestampMicrosecondBuilder {
    timestamp_builder()
}

fn batch(table: Table, columns: Vec<ArrayRef>) -> RecordBatch {
    // The builders produce exactly the declared column types in the declared order; the
    // test `builders_match_the_schemas` proves it for every table.
    RecordBatch::try_new(table.schema(), columns).expect("builder columns match the table schema")
}

/// One event, borrowed from the decoder's input.
#[derive(Debug, Clone, Copy)]
pub struct EventRow<'a> {
    /// Nanoseconds since the Unix epoch, UTC.
    pub time_ns: i64,
    pub event_id: &'a str,
    pub layer: Layer,
    pub source: &'a str,
    pub kind: &'a str,
    pub severity: Severity,
    pub scope: Scope<'a>,
    pub reason: Option<&'a str>,
    pub message: Option<&'a str>,
}

/// Builds `events` batches.
pub struct EventsBuilder {
    /// The `ingest_time` of every row, in the stored unit (converted once).
    ingest_time_stored: i64,
    time: TimestampMicrosecondBuilder,
    ingest_time: TimestampMicrosecondBuilder,
    event_id: StringBuilder,
    layer: StringBuilder,
    source: StringBuilder,
    kind: StringBuilder,
    severity: StringBuilder,
    scope: ScopeBuilders,
    reason: StringBuilder,
    message: StringBuilder,
    attrs: MapBuilder<StringBuilder, StringBuilder>,
    len: usize,
    bytes: usize,
}

impl EventsBuilder {
    /// A builder whose rows all carry `ingest_time_ns` as their `ingest_time`.
    pub fn new(ingest_time_ns: i64) -> Self {
        EventsBuilder {
            ingest_time_stored: ns_to_stored(ingest_time_ns),
            time: timestamps(),
            ingest_time: timestamps(),
            event_id: StringBuilder::new(),
            layer: StringBuilder::new(),
            source: StringBuilder::new(),
            kind: StringBuilder::new(),
            severity: StringBuilder::new(),
            scope: ScopeBuilders::new(),
            reason: StringBuilder::new(),
            message: StringBuilder::new(),
            attrs: string_map_builder(),
            len: 0,
            bytes: 0,
        }
    }

    /// Appends one event with its attributes.
    pub fn append<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        row: &EventRow<'_>,
        attrs: impl IntoIterator<Item = (K, V)>,
    ) {
        self.time.append_value(ns_to_stored(row.time_ns));
        self.ingest_time.append_value(self.ingest_time_stored);
        self.event_id.append_value(row.event_id);
        self.layer.append_value(row.layer.as_str());
        self.source.append_value(row.source);
        self.kind.append_value(row.kind);
        self.severity.append_value(row.severity.as_str());
        let scope = self.scope.append(&row.scope);
        self.reason.append_option(row.reason);
        self.message.append_option(row.message);
        let attrs = append_map(&mut self.attrs, attrs);
        self.len += 1;
        self.bytes += scope
            + attrs
            + row.event_id.len()
            + row.source.len()
            + row.kind.len()
            + row.reason.map_or(0, str::len)
            + row.message.map_or(0, str::len);
    }

    /// Rows appended since the last `finish`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Text and binary bytes appended since the last `finish`, all columns together:
    /// a bound on every column's value buffer, whose offsets are i32 (a batch must be
    /// finished well before any column reaches 2 GiB).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether no row was appended since the last `finish`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows so far as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let mut c: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            Arc::new(self.ingest_time.finish()),
            Arc::new(self.event_id.finish()),
            Arc::new(self.layer.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.kind.finish()),
            Arc::new(self.severity.finish()),
        ];
        self.scope.finish(&mut c);
        c.push(Arc::new(self.reason.finish()));
        c.push(Arc::new(self.message.finish()));
        c.push(Arc::new(self.attrs.finish()));
        self.len = 0;
        self.bytes = 0;
        batch(Table::Events, c)
    }
}

/// One numeric sample, borrowed from the decoder's input.
#[derive(Debug, Clone, Copy)]
pub struct MetricRow<'a> {
    /// Nanoseconds since the Unix epoch, UTC.
    pub time_ns: i64,
    pub layer: Layer,
    pub source: &'a str,
    pub metric: &'a str,
    pub value: f64,
    pub scope: Scope<'a>,
    pub rank: Option<i32>,
    pub step: Option<i64>,
}

/// Builds `metrics` batches.
pub struct MetricsBuilder {
    /// The `ingest_time` of every row, in the stored unit (converted once).
    ingest_time_stored: i64,
    time: TimestampMicrosecondBuilder,
    ingest_time: TimestampMicrosecondBuilder,
    layer: StringBuilder,
    source: StringBuilder,
    metric: StringBuilder,
    value: Float64Builder,
    scope: ScopeBuilders,
    rank: Int32Builder,
    step: Int64Builder,
    labels: MapBuilder<StringBuilder, StringBuilder>,
    len: usize,
    bytes: usize,
}

impl MetricsBuilder {
    /// A builder whose rows all carry `ingest_time_ns` as their `ingest_time`.
    pub fn new(ingest_time_ns: i64) -> Self {
        MetricsBuilder {
            ingest_time_stored: ns_to_stored(ingest_time_ns),
            time: timestamps(),
            ingest_time: timestamps(),
            layer: StringBuilder::new(),
            source: StringBuilder::new(),
            metric: StringBuilder::new(),
            value: Float64Builder::new(),
            scope: ScopeBuilders::new(),
            rank: Int32Builder::new(),
            step: Int64Builder::new(),
            labels: string_map_builder(),
            len: 0,
            bytes: 0,
        }
    }

    /// Appends one sample with its remaining labels.
    pub fn append<K: AsRef<str>, V: AsRef<str>>(
        &mut self,
        row: &MetricRow<'_>,
        labels: impl IntoIterator<Item = (K, V)>,
    ) {
        self.time.append_value(ns_to_stored(row.time_ns));
        self.ingest_time.append_value(self.ingest_time_stored);
        self.layer.append_value(row.layer.as_str());
        self.source.append_value(row.source);
        self.metric.append_value(row.metric);
        self.value.append_value(row.value);
        let scope = self.scope.append(&row.scope);
        self.rank.append_option(row.rank);
        self.step.append_option(row.step);
        let labels = append_map(&mut self.labels, labels);
        self.len += 1;
        self.bytes += scope + labels + row.source.len() + row.metric.len();
    }

    /// Rows appended since the last `finish`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Text and binary bytes appended since the last `finish`, all columns together:
    /// a bound on every column's value buffer, whose offsets are i32 (a batch must be
    /// finished well before any column reaches 2 GiB).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether no row was appended since the last `finish`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows so far as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let mut c: Vec<ArrayRef> = vec![
            Arc::new(self.time.finish()),
            Arc::new(self.ingest_time.finish()),
            Arc::new(self.layer.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.metric.finish()),
            Arc::new(self.value.finish()),
        ];
        self.scope.finish(&mut c);
        c.push(Arc::new(self.rank.finish()));
        c.push(Arc::new(self.step.finish()));
        c.push(Arc::new(self.labels.finish()));
        self.len = 0;
        self.bytes = 0;
        batch(Table::Metrics, c)
    }
}

/// Builds `dead_letters` batches.
pub struct DeadLetterBuilder {
    /// The `ingest_time` of every row, in the stored unit (converted once).
    ingest_time_stored: i64,
    ingest_time: TimestampMicrosecondBuilder,
    source_ref: StringBuilder,
    format: StringBuilder,
    error: StringBuilder,
    payload: BinaryBuilder,
    source_path: StringBuilder,
    source_line: Int64Builder,
    topic: StringBuilder,
    partition: Int32Builder,
    offset: Int64Builder,
    part: Int64Builder,
    record_bytes: Int64Builder,
    len: usize,
    bytes: usize,
}

impl DeadLetterBuilder {
    /// A builder whose rows all carry `ingest_time_ns` as their `ingest_time`.
    pub fn new(ingest_time_ns: i64) -> Self {
        DeadLetterBuilder {
            ingest_time_stored: ns_to_stored(ingest_time_ns),
            ingest_time: timestamps(),
            source_ref: StringBuilder::new(),
            format: StringBuilder::new(),
            error: StringBuilder::new(),
            payload: BinaryBuilder::new(),
            source_path: StringBuilder::new(),
            source_line: Int64Builder::new(),
            topic: StringBuilder::new(),
            partition: Int32Builder::new(),
            offset: Int64Builder::new(),
            part: Int64Builder::new(),
            record_bytes: Int64Builder::new(),
            len: 0,
            bytes: 0,
        }
    }

    /// Appends one rejected record: where it came from (as text and in fields), the
    /// format tried, why, and its bytes verbatim.
    pub fn append(&mut self, letter: &DeadLetter<'_>) {
        let source_ref = letter.source_ref();
        self.ingest_time.append_value(self.ingest_time_stored);
        self.source_ref.append_value(&source_ref);
        self.format.append_value(letter.format);
        self.error.append_value(letter.error);
        self.payload.append_value(letter.payload);
        let path_bytes = match letter.origin {
            Origin::File { path, line } => {
                self.source_path.append_value(path);
                self.source_line.append_value(clamp(line));
                self.topic.append_null();
                self.partition.append_null();
                self.offset.append_null();
                path.len()
            }
            Origin::Kafka {
                topic,
                partition,
                offset,
            } => {
                self.source_path.append_null();
                self.source_line.append_null();
                self.topic.append_value(topic);
                self.partition.append_value(partition);
                self.offset.append_value(offset);
                topic.len()
            }
        };
        self.part
            .append_option(letter.part.map(|p| clamp(p.number())));
        self.record_bytes.append_value(clamp(letter.record_bytes));
        self.len += 1;
        self.bytes += source_ref.len()
            + path_bytes
            + letter.format.len()
            + letter.error.len()
            + letter.payload.len();
    }

    /// Rows appended since the last `finish`.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Text and binary bytes appended since the last `finish`, all columns together:
    /// a bound on every column's value buffer, whose offsets are i32 (a batch must be
    /// finished well before any column reaches 2 GiB).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The reason given for the last row appended since the last `finish`.
    pub fn last_error(&self) -> Option<&str> {
        let offsets = self.error.offsets_slice();
        let end = usize::try_from(*offsets.last()?).ok()?;
        let start = usize::try_from(*offsets.get(offsets.len().checked_sub(2)?)?).ok()?;
        std::str::from_utf8(self.error.values_slice().get(start..end)?).ok()
    }

    /// Whether no row was appended since the last `finish`.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The rows so far as a batch; the builder starts empty again.
    pub fn finish(&mut self) -> RecordBatch {
        let c: Vec<ArrayRef> = vec![
            Arc::new(self.ingest_time.finish()),
            Arc::new(self.source_ref.finish()),
            Arc::new(self.format.finish()),
            Arc::new(self.error.finish()),
            Arc::new(self.payload.finish()),
            Arc::new(self.source_path.finish()),
            Arc::new(self.source_line.finish()),
            Arc::new(self.topic.finish()),
            Arc::new(self.partition.finish()),
            Arc::new(self.offset.finish()),
            Arc::new(self.part.finish()),
            Arc::new(self.record_bytes.finish()),
        ];
        self.len = 0;
        self.bytes = 0;
        batch(Table::DeadLetters, c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, MapArray, StringArray};

    #[test]
    fn builders_match_the_schemas() {
        let mut e = EventsBuilder::new(7);
        let row = EventRow {
            time_ns: 1,
            event_id: "id-1",
            layer: Layer::Orchestrator,
            source: "kueue",
            kind: "evicted",
            severity: Severity::Warning,
            scope: Scope {
                namespace: Some("llm"),
                workload: Some("ft"),
                ..Scope::default()
            },
            reason: Some("Preempted"),
            message: None,
        };
        e.append(&row, [("preemptor", "tgi")]);
        e.append(&row, std::iter::empty::<(&str, &str)>());
        let b = e.finish();
        assert_eq!(b.num_rows(), 2);
        assert!(e.is_empty());
        let attrs = b
            .column_by_name("attrs")
            .unwrap()
            .as_any()
            .downcast_ref::<MapArray>()
            .unwrap();
        assert_eq!(attrs.value(0).len(), 1);
        assert_eq!(attrs.value(1).len(), 0);
        let ns = b
            .column_by_name("namespace")
            .unwrap()
            .as_any()
            .downcast_ref::<StringArray>()
            .unwrap();
        assert_eq!(ns.value(0), "llm");
        assert!(b.column_by_name("node").unwrap().is_null(0));

        let mut m = MetricsBuilder::new(7);
        m.append(
            &MetricRow {
                time_ns: 2,
                layer: Layer::Framework,
                source: "sdk",
                metric: "step_time_seconds",
                value: 1.9,
                scope: Scope::default(),
                rank: Some(3),
                step: None,
            },
            [("k", "v")],
        );
        assert_eq!(m.finish().num_rows(), 1);

        let mut d = DeadLetterBuilder::new(7);
        let origin = Origin::File {
            path: "a.jsonl",
            line: 3,
        };
        d.append(&DeadLetter::whole(
            origin,
            "envelope",
            "missing time",
            b"{}",
        ));
        let kafka = Origin::Kafka {
            topic: "dcgm",
            partition: 2,
            offset: 9,
        };
        d.append(&DeadLetter {
            part: Some(crate::Part::Line(4)),
            record_bytes: 100,
            ..DeadLetter::whole(kafka, "prometheus", "bad line", b"x{")
        });
        let b = d.finish();
        assert_eq!(b.num_rows(), 2);
        let refs = b.column_by_name("source_ref").unwrap();
        let refs = refs.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(
            (refs.value(0), refs.value(1)),
            ("a.jsonl:3", "dcgm/2/9 line 4")
        );
        let int = |name: &str, i: usize| {
            let c = b.column_by_name(name).unwrap();
            let c = c
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .unwrap();
            (!c.is_null(i)).then(|| c.value(i))
        };
        assert_eq!(
            (int("source_line", 0), int("kafka_offset", 0)),
            (Some(3), None)
        );
        assert_eq!((int("kafka_offset", 1), int("part", 1)), (Some(9), Some(4)));
        assert_eq!(
            (int("record_bytes", 0), int("record_bytes", 1)),
            (Some(2), Some(100))
        );
    }
}
