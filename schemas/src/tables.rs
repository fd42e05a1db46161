//! The Arrow schemas of `contracts/tables.md`: stored tables and derived ones.

use std::str::FromStr;
use std::sync::{Arc, LazyLock};

use arrow::array::{
    ListBuilder, MapBuilder, MapFieldNames, StringBuilder, TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};

use crate::UnknownId;

/// The time zone every timestamp column carries.
pub const UTC: &str = "UTC";

/// The unit of every stored time column: every source whyslow reads is µs or coarser,
/// and the engines that read Delta tables (Spark, Trino, BigQuery) read µs, not ns.
pub const TIME_UNIT: TimeUnit = TimeUnit::Microsecond;

/// The Arrow type of a stored timestamp's values, for `as_primitive::<StoredTime>()`.
pub type StoredTime = arrow::datatypes::TimestampMicrosecondType;

/// `Timestamp(Microsecond, "UTC")`, the type of every time column.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TIME_UNIT, Some(UTC.into()))
}

/// A builder of one time column; append values converted with [`ns_to_stored`].
pub fn timestamp_builder() -> TimestampMicrosecondBuilder {
    TimestampMicrosecondBuilder::new().with_timezone(UTC)
}

/// Nanoseconds since the epoch (how decoders and analyzers count time) as a stored value:
/// whole microseconds, rounded down, so that a time never moves past the next one.
pub fn ns_to_stored(ns: i64) -> i64 {
    ns.div_euclid(1_000)
}

/// A stored time value as nanoseconds since the epoch.
pub fn stored_to_ns(stored: i64) -> i64 {
    stored.saturating_mul(1_000)
}

/// The Parquet spec's names for a map's parts (`key_value{key, value}`), which Spark,
/// Trino and BigQuery expect; arrow's own defaults (`entries{keys, values}`) differ.
fn map_field_names() -> MapFieldNames {
    MapFieldNames {
        entry: "key_value".to_string(),
        key: "key".to_string(),
        value: "value".to_string(),
    }
}

/// `map<string,string>` with the Parquet spec's names.
pub fn string_map_type() -> DataType {
    let names = map_field_names();
    let entries = Fields::from(vec![
        Field::new(names.key, DataType::Utf8, false),
        Field::new(names.value, DataType::Utf8, true),
    ]);
    DataType::Map(
        Arc::new(Field::new(names.entry, DataType::Struct(entries), false)),
        false,
    )
}

/// A builder whose arrays have [`string_map_type`].
pub fn string_map_builder() -> MapBuilder<StringBuilder, StringBuilder> {
    MapBuilder::new(
        Some(map_field_names()),
        StringBuilder::new(),
        StringBuilder::new(),
    )
}

/// The element of a `list<string>`, named as the Parquet spec names it.
fn list_element() -> Arc<Field> {
    Arc::new(Field::new("element", DataType::Utf8, true))
}

/// `list<string>` with the Parquet spec's element name.
pub fn string_list_type() -> DataType {
    DataType::List(list_element())
}

/// A builder whose arrays have [`string_list_type`].
pub fn string_list_builder() -> ListBuilder<StringBuilder> {
    ListBuilder::new(StringBuilder::new()).with_field(list_element())
}

fn ts(name: &str, nullable: bool) -> Field {
    Field::new(name, timestamp_type(), nullable)
}

fn s(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// The columns that say where and to whom, in contract order.
pub const SCOPE_COLUMNS: [&str; 7] = [
    "cluster",
    "node",
    "device",
    "namespace",
    "workload",
    "pod",
    "run_id",
];

static EVENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    let mut f = vec![
        ts("time", false),
        ts("ingest_time", false),
        s("event_id", false),
        s("layer", false),
        s("source", false),
        s("kind", false),
        s("severity", false),
    ];
    f.extend(SCOPE_COLUMNS.iter().map(|c| s(c, true)));
    f.push(s("reason", true));
    f.push(s("message", true));
    f.push(Field::new("attrs", string_map_type(), true));
    Arc::new(Schema::new(f))
});

static METRICS: LazyLock<SchemaRef> = LazyLock::new(|| {
    let mut f = vec![
        ts("time", false),
        ts("ingest_time", false),
        s("layer", false),
        s("source", false),
        s("metric", false),
        Field::new("value", DataType::Float64, false),
    ];
    f.extend(SCOPE_COLUMNS.iter().map(|c| s(c, true)));
    f.push(Field::new("rank", DataType::Int32, true));
    f.push(Field::new("step", DataType::Int64, true));
    f.push(Field::new("labels", string_map_type(), true));
    Arc::new(Schema::new(f))
});

static DEAD_LETTERS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        ts("ingest_time", false),
        s("source_ref", false),
        s("format", false),
        s("error", false),
        Field::new("payload", DataType::Binary, false),
        // Where the record came from, in fields (a file line, or a Kafka message), so that
        // no reader parses `source_ref` back; null in letters stored before they existed.
        s("source_path", true),
        Field::new("source_line", DataType::Int64, true),
        s("kafka_topic", true),
        Field::new("kafka_partition", DataType::Int32, true),
        Field::new("kafka_offset", DataType::Int64, true),
        // The line or data point of a record that holds many, rejected on its own.
        Field::new("part", DataType::Int64, true),
        // The record's whole length: more than the payload's when the payload was cut.
        Field::new("record_bytes", DataType::Int64, true),
    ]))
});

static SLOWDOWNS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("slowdown_id", false),
        s("workload", true),
        s("namespace", true),
        s("run_id", true),
        s("kind", false),
        ts("start", false),
        ts("end", false),
        Field::new("lost_seconds", DataType::Float64, false),
        Field::new("baseline", DataType::Float64, true),
        Field::new("observed", DataType::Float64, true),
        ts("detected_at", false),
    ]))
});

static CAUSES: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        s("slowdown_id", false),
        Field::new("rank", DataType::Int32, false),
        s("cause", false),
        s("layer", true),
        Field::new("confidence", DataType::Float64, false),
        Field::new("explained_seconds", DataType::Float64, false),
        s("node", true),
        s("device", true),
        s("summary", false),
        Field::new("evidence", string_list_type(), false),
    ]))
});

static INCIDENTS: LazyLock<SchemaRef> = LazyLock::new(|| {
    Arc::new(Schema::new(vec![
        ts("published_at", false),
        s("incident_id", false),
        Field::new("revision", DataType::Int64, false),
        s("status", false),
        s("slowdown_id", false),
        s("namespace", true),
        s("workload", true),
        s("run_id", true),
        s("kind", false),
        s("cause", true),
        Field::new("confidence", DataType::Float64, true),
        Field::new("lost_seconds", DataType::Float64, false),
        ts("start", false),
        ts("end", false),
        Field::new("ongoing", DataType::Boolean, false),
        ts("evidence_arrived_at", true),
        s("json", false),
    ]))
});

/// A table of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Table {
    /// Discrete things that happened.
    Events,
    /// Numeric samples.
    Metrics,
    /// What could not be decoded, kept whole.
    DeadLetters,
    /// Detected symptoms (derived).
    Slowdowns,
    /// Candidate causes per slowdown (derived).
    Causes,
    /// Every revision of every incident the live analyzers published (history: kept, not
    /// rebuilt by replay).
    Incidents,
}

impl Table {
    /// Every table, raw ones first.
    pub const ALL: [Table; 6] = [
        Table::Events,
        Table::Metrics,
        Table::DeadLetters,
        Table::Slowdowns,
        Table::Causes,
        Table::Incidents,
    ];

    /// The SQL name of the table.
    pub fn name(self) -> &'static str {
        match self {
            Table::Events => "events",
            Table::Metrics => "metrics",
            Table::DeadLetters => "dead_letters",
            Table::Slowdowns => "slowdowns",
            Table::Causes => "causes",
            Table::Incidents => "incidents",
        }
    }

    /// The table's Arrow schema.
    pub fn schema(self) -> SchemaRef {
        match self {
            Table::Events => EVENTS.clone(),
            Table::Metrics => METRICS.clone(),
            Table::DeadLetters => DEAD_LETTERS.clone(),
            Table::Slowdowns => SLOWDOWNS.clone(),
            Table::Causes => CAUSES.clone(),
            Table::Incidents => INCIDENTS.clone(),
        }
    }

    /// The column that places a row in time (used to partition and prune), if any.
    pub fn time_column(self) -> Option<&'static str> {
        match self {
            Table::Events | Table::Metrics => Some("time"),
            Table::DeadLetters => Some("ingest_time"),
            Table::Slowdowns => Some("start"),
            Table::Causes => None,
            Table::Incidents => Some("published_at"),
        }
    }

    /// Whether the table is rebuilt from the raw log by analyzers.
    pub fn is_derived(self) -> bool {
        matches!(self, Table::Slowdowns | Table::Causes)
    }
}

impl std::fmt::Display for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Table {
    type Err = UnknownId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Table::ALL
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| UnknownId {
                what: "table",
                value: s.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_the_contract_core_columns() {
        let names = |t: Table| -> Vec<String> {
            t.schema()
                .fields()
                .iter()
                .map(|f| f.name().clone())
                .collect()
        };
        assert_eq!(
            names(Table::Events),
            [
                "time",
                "ingest_time",
                "event_id",
                "layer",
                "source",
                "kind",
                "severity",
                "cluster",
                "node",
                "device",
                "namespace",
                "workload",
                "pod",
                "run_id",
                "reason",
                "message",
                "attrs"
            ]
        );
        assert_eq!(
            names(Table::Metrics),
            [
                "time",
                "ingest_time",
                "layer",
                "source",
                "metric",
                "value",
                "cluster",
                "node",
                "device",
                "namespace",
                "workload",
                "pod",
                "run_id",
                "rank",
                "step",
                "labels"
            ]
        );
        assert_eq!(
            names(Table::DeadLetters),
            [
                "ingest_time",
                "source_ref",
                "format",
                "error",
                "payload",
                "source_path",
                "source_line",
                "kafka_topic",
                "kafka_partition",
                "kafka_offset",
                "part",
                "record_bytes"
            ]
        );
        for t in Table::ALL {
            assert_eq!(t.name().parse::<Table>().unwrap(), t);
            let schema = t.schema();
            for f in schema.fields() {
                if let DataType::Timestamp(unit, tz) = f.data_type() {
                    assert_eq!(*unit, TimeUnit::Microsecond);
                    assert_eq!(tz.as_deref(), Some(UTC));
                }
            }
        }
    }
}
