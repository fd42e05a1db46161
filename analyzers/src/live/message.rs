//! An incident revision as it leaves whyslow: the report contract's slowdown object plus
//! the incident's id, revision and status, as JSON (Kafka, `--on-incident`) and as a row
//! of the `incidents` table.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
};
use serde::Serialize;
use whyslow_schemas::Table;
use whyslow_schemas::tables::{ns_to_stored, timestamp_builder};

use super::tracker::Revision;
use crate::report::Slowdown;
use crate::report::build::rfc3339_millis;
use crate::{AnalyzeError, Result};

/// The JSON of one revision: the contract's slowdown fields, extended.
#[derive(Debug, Serialize)]
struct IncidentJson<'a> {
    incident_id: &'a str,
    revision: i64,
    status: &'static str,
    published_at: String,
    /// The earliest arrival (Kafka timestamp) of the messages analyzed since the previous
    /// analysis: the evidence that made this revision possible arrived no earlier.
    evidence_arrived_at: Option<String>,
    #[serde(flatten)]
    slowdown: &'a Slowdown,
}

/// A revision ready to go out.
#[derive(Debug, Clone)]
pub struct Outgoing {
    pub revision: Revision,
    pub published_ns: i64,
    pub arrived_ns: Option<i64>,
    pub json: String,
}

impl Outgoing {
    /// Serializes `revision` as published at `published_ns`.
    pub fn new(revision: Revision, published_ns: i64, arrived_ns: Option<i64>) -> Result<Self> {
        let json = serde_json::to_string(&IncidentJson {
            incident_id: &revision.incident_id,
            revision: revision.revision,
            status: revision.status.as_str(),
            published_at: rfc3339_millis(published_ns),
            evidence_arrived_at: arrived_ns.map(rfc3339_millis),
            slowdown: &revision.slowdown,
        })?;
        Ok(Outgoing {
            revision,
            published_ns,
            arrived_ns,
            json,
        })
    }
}

/// The `incidents` rows of some revisions.
pub fn incidents_batch(out: &[Outgoing]) -> Result<RecordBatch> {
    let (mut published, mut start, mut end, mut arrived) = (
        timestamp_builder(),
        timestamp_builder(),
        timestamp_builder(),
        timestamp_builder(),
    );
    let mut id = StringBuilder::new();
    let mut revision = Int64Builder::new();
    let mut status = StringBuilder::new();
    let mut slowdown_id = StringBuilder::new();
    let mut namespace = StringBuilder::new();
    let mut workload = StringBuilder::new();
    let mut run = StringBuilder::new();
    let mut kind = StringBuilder::new();
    let mut cause = StringBuilder::new();
    let mut confidence = Float64Builder::new();
    let mut lost = Float64Builder::new();
    let mut ongoing = BooleanBuilder::new();
    let mut json = StringBuilder::new();
    for o in out {
        let r = &o.revision;
        let s = &r.slowdown;
        published.append_value(ns_to_stored(o.published_ns));
        id.append_value(&r.incident_id);
        revision.append_value(r.revision);
        status.append_value(r.status.as_str());
        slowdown_id.append_value(&s.slowdown_id);
        namespace.append_option(s.namespace.as_deref());
        workload.append_option(s.workload.as_deref());
        run.append_option(s.run_id.as_deref());
        kind.append_value(&s.kind);
        cause.append_option(s.causes.first().map(|c| c.cause.as_str()));
        confidence.append_option(s.causes.first().map(|c| c.confidence));
        lost.append_value(s.lost_seconds);
        start.append_value(ns_to_stored(r.start_ns));
        end.append_value(ns_to_stored(r.end_ns));
        ongoing.append_value(s.ongoing);
        arrived.append_option(o.arrived_ns.map(ns_to_stored));
        json.append_value(&o.json);
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(published.finish()),
        Arc::new(id.finish()),
        Arc::new(revision.finish()),
        Arc::new(status.finish()),
        Arc::new(slowdown_id.finish()),
        Arc::new(namespace.finish()),
        Arc::new(workload.finish()),
        Arc::new(run.finish()),
        Arc::new(kind.finish()),
        Arc::new(cause.finish()),
        Arc::new(confidence.finish()),
        Arc::new(lost.finish()),
        Arc::new(start.finish()),
        Arc::new(end.finish()),
        Arc::new(ongoing.finish()),
        Arc::new(arrived.finish()),
        Arc::new(json.finish()),
    ];
    RecordBatch::try_new(Table::Incidents.schema(), cols).map_err(|source| AnalyzeError::Arrow {
        what: "incidents",
        source,
    })
}
