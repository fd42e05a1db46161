//! The rows an object becomes, held until the whole object has been read (so that an
//! object that turns out unreadable half-way leaves nothing behind), the errors that
//! reject a record, and time reading.

use std::borrow::Cow;

use whyslow_schemas::builders::{EventRow, Scope};
use whyslow_schemas::{EventsBuilder, Layer, Severity};

use super::objects::Text;
use whyslow_schemas::time::{self, Nanos};

/// Why a record cannot be read: one sentence, stored in `dead_letters.error`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum K8sError {
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("invalid YAML: {0}")]
    Yaml(String),
    #[error("not a Kubernetes object: {0}")]
    NotObject(String),
    #[error("{what} '{name}' has an unreadable {field} '{value}'")]
    BadTime {
        what: &'static str,
        name: String,
        field: String,
        value: String,
    },
    #[error("{what} '{name}' has no time to date it ({fields})")]
    NoTime {
        what: &'static str,
        name: String,
        fields: &'static str,
    },
    #[error("{kind} object does not match its schema: {detail}")]
    Schema { kind: String, detail: String },
    #[error("record of {0} bytes is over the {1}-byte limit")]
    TooLarge(usize, usize),
    #[error("{0}")]
    Text(&'static str),
}

/// Attributes of one row, in the order they were found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Attrs(pub Vec<(Cow<'static, str>, String)>);

impl Attrs {
    /// Adds `key=value` (empty values are left out).
    pub fn push(&mut self, key: impl Into<Cow<'static, str>>, value: impl AsRef<str>) {
        let v = value.as_ref();
        if !v.is_empty() {
            self.0.push((key.into(), v.to_string()));
        }
    }

    /// Adds `key=value` when there is a value.
    pub fn opt(&mut self, key: &'static str, value: Option<&str>) {
        if let Some(v) = value {
            self.push(key, v);
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One event row, owned.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub time_ns: Nanos,
    pub event_id: String,
    pub layer: Layer,
    pub source: &'static str,
    pub kind: Cow<'static, str>,
    pub severity: Severity,
    pub node: Option<String>,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub pod: Option<String>,
    pub reason: Option<String>,
    pub message: Option<String>,
    pub attrs: Attrs,
}

impl Row {
    /// A row with no scope, reason, message or attributes yet.
    pub fn new(
        time_ns: Nanos,
        event_id: String,
        layer: Layer,
        source: &'static str,
        kind: impl Into<Cow<'static, str>>,
        severity: Severity,
    ) -> Row {
        Row {
            time_ns,
            event_id,
            layer,
            source,
            kind: kind.into(),
            severity,
            node: None,
            namespace: None,
            workload: None,
            pod: None,
            reason: None,
            message: None,
            attrs: Attrs::default(),
        }
    }

    /// Appends the row to the events builder, stamping `cluster`.
    pub fn append_to(&self, events: &mut EventsBuilder, cluster: Option<&str>) {
        let row = EventRow {
            time_ns: self.time_ns,
            event_id: &self.event_id,
            layer: self.layer,
            source: self.source,
            kind: &self.kind,
            severity: self.severity,
            scope: Scope {
                cluster,
                node: self.node.as_deref(),
                device: None,
                namespace: self.namespace.as_deref(),
                workload: self.workload.as_deref(),
                pod: self.pod.as_deref(),
                run_id: None,
            },
            reason: self.reason.as_deref(),
            message: self.message.as_deref(),
        };
        events.append(
            &row,
            self.attrs.0.iter().map(|(k, v)| (k.as_ref(), v.as_str())),
        );
    }
}

/// Reads a Kubernetes time (RFC 3339, `metav1.Time` or `MicroTime`), naming the field on error.
pub fn read_time(
    what: &'static str,
    name: &str,
    field: &str,
    t: &Text<'_>,
) -> Result<Nanos, K8sError> {
    time::parse_rfc3339(t.as_str()).map_err(|_| K8sError::BadTime {
        what,
        name: name.to_string(),
        field: field.to_string(),
        value: t.as_str().chars().take(80).collect(),
    })
}

/// Reads an optional time: absent or empty is `None`, unreadable is an error.
pub fn opt_time(
    what: &'static str,
    name: &str,
    field: &str,
    t: &Option<Text<'_>>,
) -> Result<Option<Nanos>, K8sError> {
    match t {
        Some(t) if !t.as_str().trim().is_empty() => read_time(what, name, field, t).map(Some),
        _ => Ok(None),
    }
}

/// A short stable hash of parts, for ids of objects that have no uid.
pub fn content_hash(parts: &[&str]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update(&[0x1f]);
    }
    format!("{:016x}", h.digest())
}
