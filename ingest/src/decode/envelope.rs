//! The `envelope` decoder: whyslow's canonical JSON lines (`contracts/envelope.md`) read
//! straight into the `events` / `metrics` builders, with no per-record `serde_json::Value`.
//!
//! One line is one object. Known keys are read into borrowed fields by a map visitor;
//! every other key (and the `attrs`/`labels` objects) is copied into a reusable arena of
//! key/value text pairs that becomes the row's `attrs` or `labels` map. A line that
//! breaks a rule is rejected whole, with a reason naming the problem.

use std::borrow::Cow;
use std::fmt::{self, Write as _};

use serde::de::{self, DeserializeSeed, Deserializer as _, MapAccess, Visitor};
use serde_json::value::RawValue;
use whyslow_schemas::builders::{EventRow, MetricRow, Scope};
use whyslow_schemas::{Layer, Severity};

use crate::decode::{Decoder, Format, Hints, MAX_RECORD_BYTES, Origin, Output};
use whyslow_schemas::time::{self, Nanos};

/// The `source` of a record that names none: the envelope is the SDK's format.
pub const DEFAULT_SOURCE: &str = "sdk";

/// Prefix of an `event_id` taken from the record's own `id`.
pub const ID_PREFIX: &str = "id:";

/// Prefix of an `event_id` made from the content hash (xxh3-128) of the trimmed line.
pub const HASH_PREFIX: &str = "xxh3:";

/// Decodes envelope JSON lines.
#[derive(Default)]
pub struct EnvelopeDecoder {
    pairs: Pairs,
    event_id: String,
}

impl EnvelopeDecoder {
    /// A decoder with empty scratch buffers.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one trimmed, non-empty line into `out`, or says why it cannot.
    fn decode_line(&mut self, line: &[u8], hints: &Hints, out: &mut Output) -> Result<(), String> {
        let text = utf8(line)?;
        let record = parse(text, &mut self.pairs)?;
        self.append(&record, line, hints, out);
        Ok(())
    }

    fn append(&mut self, r: &Record<'_>, line: &[u8], hints: &Hints, out: &mut Output) {
        let [cluster, node, device, namespace, workload, pod, run_id] = &r.scope;
        let scope = Scope {
            cluster: cluster.as_deref().or(hints.cluster.as_deref()),
            node: node.as_deref().or(hints.node.as_deref()),
            device: device.as_deref(),
            namespace: namespace.as_deref(),
            workload: workload.as_deref(),
            pod: pod.as_deref(),
            run_id: run_id.as_deref(),
        };
        match &r.body {
            Body::Metric {
                metric,
                value,
                rank,
                step,
            } => {
                let row = MetricRow {
                    time_ns: r.time_ns,
                    layer: r.layer,
                    source: &r.source,
                    metric,
                    value: *value,
                    scope,
                    rank: *rank,
                    step: *step,
                };
                out.metrics.append(&row, self.pairs.iter());
            }
            Body::Event {
                kind,
                severity,
                reason,
                message,
                id,
            } => {
                self.event_id.clear();
                match id {
                    Some(id) => {
                        self.event_id.push_str(ID_PREFIX);
                        self.event_id.push_str(id);
                    }
                    None => {
                        let h = xxhash_rust::xxh3::xxh3_128(line);
                        // Writing to a String cannot fail.
                        let _ = write!(self.event_id, "{HASH_PREFIX}{h:032x}");
                    }
                }
                if kind.as_ref() == "clock_throttle" {
                    self.pairs.decode_throttle_mask();
                }
                let row = EventRow {
                    time_ns: r.time_ns,
                    event_id: &self.event_id,
                    layer: r.layer,
                    source: &r.source,
                    kind,
                    severity: *severity,
                    scope,
                    reason: reason.as_deref(),
                    message: message.as_deref(),
                };
                out.events.append(&row, self.pairs.iter());
            }
        }
    }
}

impl Decoder for EnvelopeDecoder {
    fn format(&self) -> Format {
        Format::Envelope
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        out.begin_record();
        if bytes.len() > MAX_RECORD_BYTES {
            let reason = format!(
                "record of {} bytes is over the limit of {MAX_RECORD_BYTES} bytes",
                bytes.len()
            );
            out.reject(origin, Format::Envelope, &reason, bytes);
            return;
        }
        let trimmed = trim(bytes);
        if trimmed.is_empty() {
            out.skip();
            return;
        }
        if memchr::memchr(b'\n', trimmed).is_none() {
            match self.decode_line(trimmed, hints, out) {
                Ok(()) => out.produced(),
                Err(reason) => out.reject(origin, Format::Envelope, &reason, bytes),
            }
            return;
        }
        // A Kafka message holding several lines is one record: it is written only if every
        // line is good, so the lines are checked before any is appended.
        let lines = || {
            trimmed
                .split(|&b| b == b'\n')
                .map(trim)
                .enumerate()
                .filter(|(_, l)| !l.is_empty())
        };
        for (i, line) in lines() {
            if let Err(reason) = utf8(line).and_then(|t| parse(t, &mut self.pairs).map(|_| ())) {
                let reason = format!("line {} of the message: {reason}", i + 1);
                out.reject(origin, Format::Envelope, &reason, bytes);
                return;
            }
        }
        for (_, line) in lines() {
            // Checked above: every line parses.
            if let Err(reason) = self.decode_line(line, hints, out) {
                tracing::error!("envelope line parsed once but not twice: {reason}");
            }
        }
        out.produced();
    }
}

/// ASCII whitespace (and a leading UTF-8 byte-order mark) trimmed from both ends.
fn trim(b: &[u8]) -> &[u8] {
    let b = b.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(b);
    b.trim_ascii()
}

fn utf8(line: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(line).map_err(|e| format!("invalid UTF-8 at byte {}", e.valid_up_to()))
}

/// A decoded line, borrowing from it.
struct Record<'a> {
    time_ns: Nanos,
    layer: Layer,
    source: Cow<'a, str>,
    /// cluster, node, device, namespace, workload, pod, run_id.
    scope: [Option<Cow<'a, str>>; 7],
    body: Body<'a>,
}

enum Body<'a> {
    Metric {
        metric: Cow<'a, str>,
        value: f64,
        rank: Option<i32>,
        step: Option<i64>,
    },
    Event {
        kind: Cow<'a, str>,
        severity: Severity,
        reason: Option<Cow<'a, str>>,
        message: Option<Cow<'a, str>>,
        id: Option<Cow<'a, str>>,
    },
}

/// Parses and checks one line; its `attrs`/`labels` (and unknown keys) land in `pairs`.
fn parse<'a>(text: &'a str, pairs: &mut Pairs) -> Result<Record<'a>, String> {
    pairs.clear();
    let mut de = serde_json::Deserializer::from_str(text);
    let f = de
        .deserialize_map(FieldsVisitor { pairs: &mut *pairs })
        .map_err(json_error)?;
    de.end().map_err(json_error)?;

    let time_ns = match f.time.map(time_of).transpose()?.flatten() {
        None => return Err("missing required field 'time'".into()),
        Some(ns) => ns,
    };
    let value = match (&f.metric, f.value) {
        (Some(_), Some(raw)) => number(raw, "value")?,
        _ => None,
    };
    let (body, implied) = match (f.metric, value) {
        (Some(metric), Some(value)) => {
            let rank = match f.rank {
                Some(raw) => integer(raw, "rank")?
                    .map(i32::try_from)
                    .transpose()
                    .map_err(|_| format!("field 'rank' is out of range: {}", raw.get()))?,
                None => None,
            };
            let step = f
                .step
                .map(|raw| integer(raw, "step"))
                .transpose()?
                .flatten();
            // Event fields have no column in `metrics`: they are kept as labels.
            for (k, v) in [
                ("kind", &f.kind),
                ("severity", &f.severity),
                ("reason", &f.reason),
            ] {
                if let Some(v) = v {
                    pairs.push_str(k, v);
                }
            }
            for (k, v) in [("message", &f.message), ("id", &f.id)] {
                if let Some(v) = v {
                    pairs.push_str(k, v);
                }
            }
            let implied = implied_layer_of_metric(&metric);
            (
                Body::Metric {
                    metric,
                    value,
                    rank,
                    step,
                },
                implied,
            )
        }
        (metric, _) => {
            let Some(kind) = f.kind else {
                return Err(match metric {
                    Some(m) => format!(
                        "metric '{m}' has no numeric 'value' (and no 'kind' to be an event)"
                    ),
                    None => {
                        "an event needs 'kind' (or 'metric' and a numeric 'value' for a metric)"
                            .into()
                    }
                });
            };
            if kind.is_empty() {
                return Err("field 'kind' is empty".into());
            }
            // Checked even though `events` has no column for them: a wrong type is an error.
            if let Some(raw) = f.rank {
                integer(raw, "rank")?;
                pairs.push_json("rank", raw.get());
            }
            if let Some(raw) = f.step {
                integer(raw, "step")?;
                pairs.push_json("step", raw.get());
            }
            if let Some(m) = metric {
                pairs.push_str("metric", &m);
            }
            if let Some(raw) = f.value {
                pairs.push_json("value", raw.get());
            }
            let severity = match f.severity {
                None => Severity::Info,
                Some(s) => Severity::ALL
                    .into_iter()
                    .find(|v| v.as_str().eq_ignore_ascii_case(&s))
                    .ok_or_else(|| {
                        format!(
                            "unknown severity '{s}' (expected info, warning, error or critical)"
                        )
                    })?,
            };
            let implied = implied_layer_of_kind(&kind);
            let body = Body::Event {
                kind,
                severity,
                reason: f.reason,
                message: f.message,
                id: f.id,
            };
            (body, implied)
        }
    };
    let layer = match f.layer {
        Some(l) => Layer::ALL
            .into_iter()
            .find(|v| v.as_str().eq_ignore_ascii_case(&l))
            .ok_or_else(|| {
                format!("unknown layer '{l}' (expected infrastructure, orchestrator or framework)")
            })?,
        None => implied.ok_or_else(|| match &body {
            Body::Metric { metric, .. } => {
                format!("no 'layer', and metric '{metric}' does not imply one")
            }
            Body::Event { kind, .. } => format!("no 'layer', and kind '{kind}' does not imply one"),
        })?,
    };
    if matches!(&body, Body::Metric { metric, .. } if metric.is_empty()) {
        return Err("field 'metric' is empty".into());
    }
    pairs.finish();
    Ok(Record {
        time_ns,
        layer,
        source: f.source.unwrap_or(Cow::Borrowed(DEFAULT_SOURCE)),
        scope: [
            f.cluster,
            f.node,
            f.device,
            f.namespace,
            f.workload,
            f.pod,
            f.run_id,
        ],
        body,
    })
}

/// The reason for a serde_json error: syntax errors are called malformed JSON.
fn json_error(e: serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
            format!("malformed JSON: {e}")
        }
        _ => e.to_string(),
    }
}

/// A JSON number field as a finite f64; `null` is absent.
fn number(raw: &RawValue, field: &str) -> Result<Option<f64>, String> {
    let t = raw.get();
    if t == "null" {
        return Ok(None);
    }
    if !t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(format!(
            "field '{field}' must be a number, got {}",
            json_type(t)
        ));
    }
    // The JSON number grammar is a subset of Rust's float syntax.
    let v: f64 = t
        .parse()
        .map_err(|_| format!("field '{field}' is not a number: {t}"))?;
    if !v.is_finite() {
        return Err(format!(
            "field '{field}' is out of range for a float64: {t}"
        ));
    }
    Ok(Some(v))
}

/// A JSON integer field; `null` is absent; fractions and exponents are wrong types.
fn integer(raw: &RawValue, field: &str) -> Result<Option<i64>, String> {
    let t = raw.get();
    if t == "null" {
        return Ok(None);
    }
    if !t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return Err(format!(
            "field '{field}' must be an integer, got {}",
            json_type(t)
        ));
    }
    if t.contains(['.', 'e', 'E']) {
        return Err(format!("field '{field}' must be an integer, got {t}"));
    }
    t.parse()
        .map(Some)
        .map_err(|_| format!("field '{field}' is out of range: {t}"))
}

/// Names the JSON type of a raw value for error messages.
fn json_type(raw: &str) -> String {
    match raw.as_bytes().first() {
        Some(b'"') => format!("a string {}", shorten(raw)),
        Some(b'{') => "an object".into(),
        Some(b'[') => "an array".into(),
        Some(b't' | b'f') => format!("a boolean {raw}"),
        _ => raw.to_string(),
    }
}

fn shorten(s: &str) -> Cow<'_, str> {
    const MAX: usize = 40;
    if s.len() <= MAX {
        return Cow::Borrowed(s);
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}…", &s[..end]))
}

/// The layer a well-known event kind belongs to, for records without `layer`.
pub fn implied_layer_of_kind(kind: &str) -> Option<Layer> {
    Some(match kind {
        "run_started"
        | "run_finished"
        | "checkpoint_saved"
        | "checkpoint_restored"
        | "recompile"
        | "dataloader_wait"
        | "collective_timeout"
        | "eval_started"
        | "eval_finished"
        | "profile_captured"
        | "config"
        | "training_restart"
        | "cuda_oom"
        | "nccl_error" => Layer::Framework,
        "xid" | "ecc_error" | "clock_throttle" | "nic_link_down" | "nic_link_up"
        | "node_not_ready" | "node_ready" | "maintenance" | "nvlink_error" | "pcie_error"
        | "machine_check" | "hung_task" | "kernel_oops" | "thermal_throttle" => {
            Layer::Infrastructure
        }
        "scheduled" | "preempted" | "evicted" | "quota_reserved" | "admitted" | "requeued"
        | "suspended" | "resumed" | "oom_killed" | "back_off" | "failed_scheduling" | "killing"
        | "pending" | "pods_ready" | "workload_finished" | "pulled" | "created" | "started"
        | "scaled" => Layer::Orchestrator,
        _ => return None,
    })
}

/// The layer a well-known metric belongs to, for records without `layer`.
pub fn implied_layer_of_metric(metric: &str) -> Option<Layer> {
    match metric {
        "step_time_seconds"
        | "compute_seconds"
        | "tokens_per_second"
        | "samples_per_second"
        | "loss"
        | "request_latency_seconds"
        | "time_to_first_token_seconds"
        | "data_wait_seconds" => Some(Layer::Framework),
        "duty_cycle"
        | "power_watts"
        | "sm_clock_mhz"
        | "mem_clock_mhz"
        | "clock_throttle_reasons"
        | "xid_errors"
        | "hbm_used_bytes"
        | "tensorcore_utilization" => Some(Layer::Infrastructure),
        m if m.starts_with("gpu_")
            || m.starts_with("tpu_")
            || m.starts_with("DCGM_")
            || m.starts_with("nic_") =>
        {
            Some(Layer::Infrastructure)
        }
        _ => None,
    }
}

/// The `time` field: an RFC 3339 string, or an epoch number read from its decimal text
/// exactly (a float would round nanoseconds away); `null` is absent.
fn time_of(raw: &RawValue) -> Result<Option<Nanos>, String> {
    let t = raw.get();
    let bad = |what: &dyn fmt::Display| {
        format!("unreadable time {what}: expected RFC 3339 with an offset or epoch seconds")
    };
    match t.as_bytes().first() {
        Some(b'"') => {
            let s: Cow<'_, str> = if t.contains('\\') {
                Cow::Owned(serde_json::from_str(t).map_err(|_| bad(&t))?)
            } else {
                Cow::Borrowed(&t[1..t.len() - 1])
            };
            let ns =
                time::parse_rfc3339(&s).map_err(|_| bad(&format_args!("'{}'", shorten(&s))))?;
            Ok(Some(ns))
        }
        Some(b'-' | b'0'..=b'9') => time::parse_epoch_decimal(t).map(Some).map_err(|_| bad(&t)),
        _ if t == "null" => Ok(None),
        _ => Err(format!(
            "field 'time' must be an RFC 3339 string or epoch seconds, got {}",
            json_type(t)
        )),
    }
}

/// The known keys of one line, borrowed from it where they hold no escapes.
#[derive(Default)]
struct Fields<'a> {
    time: Option<&'a RawValue>,
    layer: Option<Cow<'a, str>>,
    source: Option<Cow<'a, str>>,
    kind: Option<Cow<'a, str>>,
    metric: Option<Cow<'a, str>>,
    value: Option<&'a RawValue>,
    cluster: Option<Cow<'a, str>>,
    node: Option<Cow<'a, str>>,
    device: Option<Cow<'a, str>>,
    namespace: Option<Cow<'a, str>>,
    workload: Option<Cow<'a, str>>,
    pod: Option<Cow<'a, str>>,
    run_id: Option<Cow<'a, str>>,
    rank: Option<&'a RawValue>,
    step: Option<&'a RawValue>,
    severity: Option<Cow<'a, str>>,
    reason: Option<Cow<'a, str>>,
    message: Option<Cow<'a, str>>,
    id: Option<Cow<'a, str>>,
}

struct FieldsVisitor<'p> {
    pairs: &'p mut Pairs,
}

impl<'de> Visitor<'de> for FieldsVisitor<'_> {
    type Value = Fields<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an envelope JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields<'de>, A::Error> {
        let mut f = Fields::default();
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            fn set<T, E: de::Error>(
                slot: &mut Option<T>,
                key: &str,
                v: Option<T>,
            ) -> Result<(), E> {
                if slot.is_some() {
                    return Err(E::custom(format_args!("duplicate field '{key}'")));
                }
                *slot = v;
                Ok(())
            }
            let text = |field: &'static str| TextSeed {
                field,
                integers: false,
            };
            match key.as_ref() {
                "time" => set(&mut f.time, &key, Some(map.next_value::<&RawValue>()?))?,
                "layer" => set(&mut f.layer, &key, map.next_value_seed(text("layer"))?)?,
                "source" => set(&mut f.source, &key, map.next_value_seed(text("source"))?)?,
                "kind" => set(&mut f.kind, &key, map.next_value_seed(text("kind"))?)?,
                "metric" => set(&mut f.metric, &key, map.next_value_seed(text("metric"))?)?,
                "value" => set(&mut f.value, &key, Some(map.next_value::<&RawValue>()?))?,
                "cluster" => set(&mut f.cluster, &key, map.next_value_seed(text("cluster"))?)?,
                "node" => set(&mut f.node, &key, map.next_value_seed(text("node"))?)?,
                "device" => {
                    let v = map.next_value_seed(TextSeed {
                        field: "device",
                        integers: true,
                    })?;
                    set(&mut f.device, &key, v)?
                }
                "namespace" => set(
                    &mut f.namespace,
                    &key,
                    map.next_value_seed(text("namespace"))?,
                )?,
                "workload" => set(
                    &mut f.workload,
                    &key,
                    map.next_value_seed(text("workload"))?,
                )?,
                "pod" => set(&mut f.pod, &key, map.next_value_seed(text("pod"))?)?,
                "run_id" => set(&mut f.run_id, &key, map.next_value_seed(text("run_id"))?)?,
                "rank" => set(&mut f.rank, &key, Some(map.next_value::<&RawValue>()?))?,
                "step" => set(&mut f.step, &key, Some(map.next_value::<&RawValue>()?))?,
                "severity" => set(
                    &mut f.severity,
                    &key,
                    map.next_value_seed(text("severity"))?,
                )?,
                "reason" => set(&mut f.reason, &key, map.next_value_seed(text("reason"))?)?,
                "message" => set(&mut f.message, &key, map.next_value_seed(text("message"))?)?,
                "id" => {
                    let v = map.next_value_seed(TextSeed {
                        field: "id",
                        integers: true,
                    })?;
                    set(&mut f.id, &key, v)?
                }
                "attrs" | "labels" => map.next_value_seed(ObjectSeed {
                    field: key.as_ref(),
                    pairs: self.pairs,
                })?,
                _ => {
                    let raw: &RawValue = map.next_value()?;
                    self.pairs.push_json(&key, raw.get());
                }
            }
        }
        Ok(f)
    }
}

/// A map key, borrowed from the line unless it holds escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string field (or null); with `integers`, a JSON integer is read as its text.
struct TextSeed {
    field: &'static str,
    integers: bool,
}

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Option<Cow<'de, str>>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextSeed {
    type Value = Option<Cow<'de, str>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.integers {
            write!(f, "a string or an integer for field '{}'", self.field)
        } else {
            write!(f, "a string for field '{}'", self.field)
        }
    }
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(v.to_owned())))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        if self.integers {
            Ok(Some(Cow::Owned(v.to_string())))
        } else {
            Err(E::invalid_type(de::Unexpected::Unsigned(v), &self))
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        if self.integers {
            Ok(Some(Cow::Owned(v.to_string())))
        } else {
            Err(E::invalid_type(de::Unexpected::Signed(v), &self))
        }
    }
}

/// The `attrs` / `labels` object (or null): every entry into the pairs, values as text.
struct ObjectSeed<'k, 'p> {
    field: &'k str,
    pairs: &'p mut Pairs,
}

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ObjectSeed<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object for field '{}'", self.field)
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let raw: &RawValue = map.next_value()?;
            self.pairs.push_json(&key, raw.get());
        }
        Ok(())
    }
}

/// A reusable arena of key/value text pairs: one string, spans into it.
#[derive(Default)]
struct Pairs {
    text: String,
    /// (key start, key end = value start, value end).
    spans: Vec<(usize, usize, usize)>,
}

impl Pairs {
    fn clear(&mut self) {
        self.text.clear();
        self.spans.clear();
    }

    fn push_str(&mut self, key: &str, value: &str) {
        let start = self.text.len();
        self.text.push_str(key);
        let mid = self.text.len();
        self.text.push_str(value);
        self.spans.push((start, mid, self.text.len()));
    }

    /// A raw JSON value: a string's unescaped text, any other value's compact JSON.
    fn push_json(&mut self, key: &str, raw: &str) {
        let start = self.text.len();
        self.text.push_str(key);
        let mid = self.text.len();
        if raw.starts_with('"') {
            if raw.contains('\\') {
                // A RawValue is valid JSON, so it reads back as a string.
                let s: Cow<'_, str> = serde_json::from_str(raw).unwrap_or(Cow::Borrowed(raw));
                self.text.push_str(&s);
            } else {
                self.text.push_str(&raw[1..raw.len() - 1]);
            }
        } else {
            push_compact(&mut self.text, raw);
        }
        self.spans.push((start, mid, self.text.len()));
    }

    /// Keeps one entry per key (the last written), in key order.
    fn finish(&mut self) {
        if self.spans.len() < 2 {
            return;
        }
        let text = &self.text;
        self.spans
            .sort_by(|a, b| text[a.0..a.1].cmp(&text[b.0..b.1]));
        let mut kept = 0;
        for i in 0..self.spans.len() {
            let s = self.spans[i];
            if kept > 0 && text[self.spans[kept - 1].0..self.spans[kept - 1].1] == text[s.0..s.1] {
                self.spans[kept - 1] = s;
            } else {
                self.spans[kept] = s;
                kept += 1;
            }
        }
        self.spans.truncate(kept);
    }

    /// The value of `key`.
    fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// A throttle event's `mask` (or `value`) decoded into the attributes the cause
    /// rules read (`throttle`, `reasons`, `power`, `thermal`), as the Prometheus decoder
    /// writes them; attributes the record gives itself are kept.
    fn decode_throttle_mask(&mut self) {
        let Some(mask) = self
            .get("mask")
            .or_else(|| self.get("value"))
            .and_then(whyslow_schemas::nvidia::ThrottleReasons::parse)
        else {
            return;
        };
        let mut added = false;
        for (key, value) in mask.attrs() {
            if self.get(key).is_none() {
                self.push_str(key, &value);
                added = true;
            }
        }
        if added {
            self.finish();
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.spans
            .iter()
            .map(|&(a, b, c)| (&self.text[a..b], &self.text[b..c]))
    }
}

/// Appends JSON text with the whitespace outside strings removed.
fn push_compact(out: &mut String, json: &str) {
    if !json.bytes().any(|b| b.is_ascii_whitespace()) {
        out.push_str(json);
        return;
    }
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
        } else if c == '"' {
            in_string = true;
        } else if c.is_ascii_whitespace() {
            continue;
        }
        out.push(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(line: &str) -> (Vec<(String, String)>, Record<'_>) {
        let mut p = Pairs::default();
        let r = parse(line, &mut p).unwrap_or_else(|e| panic!("{line}: {e}"));
        (
            p.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            r,
        )
    }

    fn parse_err(line: &str) -> String {
        let mut p = Pairs::default();
        match parse(line, &mut p) {
            Ok(_) => panic!("accepted: {line}"),
            Err(e) => e,
        }
    }

    #[test]
    fn unknown_fields_and_attrs_become_text() {
        let (pairs, r) = parse_ok(
            r#"{"time":"2026-11-29T10:15:02Z","kind":"checkpoint_saved","attrs":{"path":"gs://b","seconds":41.2,"nested":{ "a" : [1, 2] }},"zone":"us-c1","retries":3,"esc":"a\"b\u00e9"}"#,
        );
        let want: Vec<(String, String)> = [
            ("esc", "a\"bé"),
            ("nested", r#"{"a":[1,2]}"#),
            ("path", "gs://b"),
            ("retries", "3"),
            ("seconds", "41.2"),
            ("zone", "us-c1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(pairs, want);
        assert_eq!(r.layer, Layer::Framework);
        assert!(matches!(
            r.body,
            Body::Event {
                severity: Severity::Info,
                ..
            }
        ));
    }

    #[test]
    fn a_throttle_mask_is_decoded_into_the_fields_the_rules_read() {
        let mut pairs = Pairs::default();
        parse(
            r#"{"time":1,"kind":"clock_throttle","attrs":{"mask":"0x44","power":"maybe"}}"#,
            &mut pairs,
        )
        .unwrap();
        pairs.decode_throttle_mask();
        let got: Vec<_> = pairs.iter().collect();
        assert_eq!(
            got,
            [
                ("mask", "0x44"),
                ("power", "maybe"),
                ("reasons", "sw_power_cap,hw_thermal_slowdown"),
                ("thermal", "true"),
                ("throttle", "thermal"),
            ],
            "decoded once, the record's own attributes kept"
        );
        let mut pairs = Pairs::default();
        parse(
            r#"{"time":1,"kind":"clock_throttle","value":4}"#,
            &mut pairs,
        )
        .unwrap();
        pairs.decode_throttle_mask();
        assert_eq!(pairs.get("power"), Some("true"));
        assert_eq!(pairs.get("thermal"), Some("false"));
    }

    /// A `profile_captured` record (envelope.md) keeps its `url` and `duration_seconds`
    /// and is a framework event without a `layer`.
    #[test]
    fn profile_captured_keeps_its_attrs_and_implies_the_framework() {
        let (attrs, r) = parse_ok(
            r#"{"time":"2026-11-29T10:15:02Z","kind":"profile_captured","namespace":"llm","workload":"ft","attrs":{"url":"https://xprof.example/?run=ft-1","duration_seconds":30}}"#,
        );
        assert_eq!(r.layer, Layer::Framework);
        assert!(matches!(&r.body, Body::Event { kind, .. } if kind == "profile_captured"));
        assert_eq!(
            attrs,
            vec![
                ("duration_seconds".to_string(), "30".to_string()),
                (
                    "url".to_string(),
                    "https://xprof.example/?run=ft-1".to_string()
                ),
            ]
        );
    }

    #[test]
    fn duplicate_keys_keep_the_last() {
        let (pairs, _) = parse_ok(r#"{"time":1,"kind":"xid","attrs":{"a":"1"},"a":"2"}"#);
        assert_eq!(pairs, vec![("a".to_string(), "2".to_string())]);
        assert!(
            parse_err(r#"{"time":1,"time":2,"kind":"xid"}"#).contains("duplicate field 'time'")
        );
    }

    #[test]
    fn metric_vs_event() {
        let (labels, r) = parse_ok(
            r#"{"time":1764411302.5,"metric":"step_time_seconds","value":2,"rank":3,"step":9,"kind":"k"}"#,
        );
        match r.body {
            Body::Metric {
                value, rank, step, ..
            } => assert_eq!((value, rank, step), (2.0, Some(3), Some(9))),
            Body::Event { .. } => panic!("not a metric"),
        }
        assert_eq!(labels, vec![("kind".to_string(), "k".to_string())]);
        // A metric name without a value is an event when it has a kind.
        let (attrs, r) = parse_ok(r#"{"time":1,"metric":"m","kind":"recompile","rank":1}"#);
        assert!(matches!(r.body, Body::Event { .. }));
        assert_eq!(attrs.len(), 2);
    }

    #[test]
    fn rejections_name_the_problem() {
        let cases = [
            (
                r#"{"time":1,"metric":"gpu_util","value":"NaN"}"#,
                "must be a number, got a string",
            ),
            (
                r#"{"time":1,"metric":"gpu_util","value":1e999}"#,
                "'value' is out of range for a float64",
            ),
            (
                r#"{"time":1,"metric":"gpu_util","value":1,"rank":1.5}"#,
                "'rank' must be an integer",
            ),
            (
                r#"{"time":1,"metric":"gpu_util","value":1,"rank":4294967296}"#,
                "'rank' is out of range",
            ),
            (
                r#"{"metric":"gpu_util","value":1}"#,
                "missing required field 'time'",
            ),
            (
                r#"{"time":"yesterday","kind":"xid"}"#,
                "unreadable time 'yesterday'",
            ),
            (r#"{"time":-5,"kind":"xid"}"#, "unreadable time -5"),
            (
                r#"{"time":true,"kind":"xid"}"#,
                "'time' must be an RFC 3339 string or epoch seconds, got a boolean",
            ),
            (r#"{"time":1}"#, "an event needs 'kind'"),
            (r#"{"time":1,"metric":"m"}"#, "has no numeric 'value'"),
            (
                r#"{"time":1,"kind":"custom"}"#,
                "kind 'custom' does not imply one",
            ),
            (
                r#"{"time":1,"kind":"xid","layer":"kernel"}"#,
                "unknown layer 'kernel'",
            ),
            (
                r#"{"time":1,"kind":"xid","severity":"fatal"}"#,
                "unknown severity 'fatal'",
            ),
            (
                r#"{"time":1,"kind":"xid","node":7}"#,
                "expected a string for field 'node'",
            ),
            (
                r#"{"time":1,"kind":"xid","attrs":[1]}"#,
                "expected an object for field 'attrs'",
            ),
            (r#"{"time":1,"kind":"xid""#, "malformed JSON"),
            (r#"{"time":1,"kind":"xid"} x"#, "malformed JSON"),
            (r#"[1,2]"#, "expected an envelope JSON object"),
        ];
        for (line, want) in cases {
            let e = parse_err(line);
            assert!(e.contains(want), "{line}: got '{e}', want '{want}'");
        }
    }

    #[test]
    fn layers_are_implied() {
        assert_eq!(
            parse_ok(r#"{"time":1,"kind":"preempted"}"#).1.layer,
            Layer::Orchestrator
        );
        assert_eq!(
            parse_ok(r#"{"time":1,"metric":"gpu_temp_celsius","value":1}"#)
                .1
                .layer,
            Layer::Infrastructure
        );
        assert_eq!(
            parse_ok(r#"{"time":1,"metric":"tokens_per_second","value":1}"#)
                .1
                .layer,
            Layer::Framework
        );
        assert_eq!(
            parse_ok(r#"{"time":1,"kind":"preempted","layer":"Framework"}"#)
                .1
                .layer,
            Layer::Framework
        );
    }
}
