//! The layered cause rules: registers the symptoms (and the nodes, GPUs and pods in their
//! scope) as tables, runs one SQL rule per cause id over them, and reads back the
//! candidate causes each rule proposes.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int32Builder, RecordBatch, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::prelude::SessionContext;
use datafusion::scalar::ScalarValue;
use whyslow_schemas::tables::{ns_to_stored, timestamp_builder, timestamp_type};
use whyslow_schemas::{Cause, Layer};

use crate::columns::Columns;
use crate::sql::{self, CAUSE_RULES, SYMPTOM_VIEWS};
use crate::{AnalyzeError, Result};

/// How close a cause's evidence is to the symptom, most specific first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reach {
    /// The workload's own events.
    Workload,
    /// The same GPU the symptom concerns.
    Gpu,
    /// The same node.
    Node,
    /// Another node of the workload.
    WorkloadNodes,
    /// Elsewhere in the cluster.
    Cluster,
}

impl Reach {
    fn parse(s: &str) -> Reach {
        match s {
            "workload" => Reach::Workload,
            "gpu" => Reach::Gpu,
            "node" => Reach::Node,
            "workload_nodes" => Reach::WorkloadNodes,
            _ => Reach::Cluster,
        }
    }

    /// The id the rules use.
    pub fn as_str(self) -> &'static str {
        match self {
            Reach::Workload => "workload",
            Reach::Gpu => "gpu",
            Reach::Node => "node",
            Reach::WorkloadNodes => "workload_nodes",
            Reach::Cluster => "cluster",
        }
    }
}

/// A symptom as the rules see it (the `symptoms` table).
#[derive(Debug, Clone, PartialEq)]
pub struct SymptomRow {
    pub slowdown_id: String,
    pub namespace: Option<String>,
    pub workload: Option<String>,
    pub run_id: Option<String>,
    pub kind: &'static str,
    pub metric: Option<String>,
    pub rank: Option<i32>,
    pub start_ns: i64,
    pub end_ns: i64,
    /// Where the rules start looking for causes: before the onset.
    pub onset_from_ns: i64,
    pub baseline: Option<f64>,
    pub observed: Option<f64>,
    /// Nothing says where the workload ran at the onset (its pods placed before the data
    /// begins, scrapes without pod labels): the rules of failures that kill a job then
    /// also weigh the cluster's, at the onset (`symptom_events.s_unplaced`).
    pub unplaced: bool,
}

/// A node (and GPU, pod) in a symptom's scope (the `symptom_scope` table).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ScopeRow {
    pub slowdown_id: String,
    pub node: String,
    pub device: Option<String>,
    pub pod: Option<String>,
    /// `focus`: where the symptom is (all the workload's nodes for a job-wide symptom, the
    /// rank's node for a straggler); `workload`: the workload's other nodes.
    pub level: &'static str,
}

/// A cause a rule proposes for a symptom.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub slowdown_id: String,
    pub cause: Cause,
    pub layer: Layer,
    pub reach: Reach,
    pub node: Option<String>,
    pub device: Option<String>,
    /// The earliest evidence.
    pub time_ns: i64,
    pub evidence: Vec<String>,
    pub summary: String,
    /// How abnormal the evidence is against its own level before the onset, in 0..=1:
    /// rules that judge a level (throttle share, dataloader waits) say so in a
    /// `strength` column; discrete evidence (an Xid, a preemption) stands at 1.
    pub strength: f64,
    /// The rule's path under `queries/sql/`.
    pub rule: &'static str,
}

fn arrow_err(what: &'static str) -> impl Fn(arrow::error::ArrowError) -> AnalyzeError {
    move |source| AnalyzeError::Arrow { what, source }
}

/// The columns of the `symptoms` table the rules read (also what a test registers).
pub fn symptoms_schema() -> SchemaRef {
    let s = |n: &str| Field::new(n, DataType::Utf8, true);
    let t = |n: &str| Field::new(n, timestamp_type(), false);
    Arc::new(Schema::new(vec![
        s("slowdown_id"),
        s("namespace"),
        s("workload"),
        s("run_id"),
        s("kind"),
        s("metric"),
        Field::new("rank", DataType::Int32, true),
        t("start"),
        t("end"),
        t("onset_from"),
        Field::new("baseline", DataType::Float64, true),
        Field::new("observed", DataType::Float64, true),
        Field::new("unplaced", DataType::Boolean, true),
    ]))
}

/// Registers (or replaces) the `symptoms` and `symptom_scope` tables and the tables and
/// views the rules read (`symptom_events`, `symptom_throttle_shares`,
/// `symptom_level_rates`, `symptom_serving_samples`, `symptom_rollouts`), and each pace
/// symptom's GPU samples (`symptom_gpu_samples`), each computed once; `done` is told each table as it is
/// computed (`cause views` for the views together).
pub async fn register(
    ctx: &SessionContext,
    symptoms: &[SymptomRow],
    scope: &[ScopeRow],
    mut done: impl FnMut(&'static str),
) -> Result<()> {
    let schema = symptoms_schema();
    let mut text: Vec<StringBuilder> = (0..6).map(|_| StringBuilder::new()).collect();
    let mut rank = Int32Builder::new();
    let mut times: Vec<TimestampMicrosecondBuilder> = (0..3).map(|_| timestamp_builder()).collect();
    let mut floats: Vec<Float64Builder> = (0..2).map(|_| Float64Builder::new()).collect();
    let mut unplaced = BooleanBuilder::new();
    for r in symptoms {
        let vals = [
            Some(r.slowdown_id.as_str()),
            r.namespace.as_deref(),
            r.workload.as_deref(),
            r.run_id.as_deref(),
            Some(r.kind),
            r.metric.as_deref(),
        ];
        for (b, v) in text.iter_mut().zip(vals) {
            b.append_option(v);
        }
        rank.append_option(r.rank);
        for (b, v) in times
            .iter_mut()
            .zip([r.start_ns, r.end_ns, r.onset_from_ns])
        {
            b.append_value(ns_to_stored(v));
        }
        floats[0].append_option(r.baseline);
        floats[1].append_option(r.observed);
        unplaced.append_value(r.unplaced);
    }
    let mut cols: Vec<ArrayRef> = text
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    cols.push(Arc::new(rank.finish()));
    cols.extend(times.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.extend(floats.iter_mut().map(|b| Arc::new(b.finish()) as ArrayRef));
    cols.push(Arc::new(unplaced.finish()));
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err("symptoms"))?;
    sql::replace_table(ctx, "symptoms", schema, vec![batch])?;

    let s = |n: &str| Field::new(n, DataType::Utf8, true);
    let schema = Arc::new(Schema::new(vec![
        s("slowdown_id"),
        s("node"),
        s("device"),
        s("pod"),
        s("level"),
    ]));
    let mut b: Vec<StringBuilder> = (0..5).map(|_| StringBuilder::new()).collect();
    for r in scope {
        let vals = [
            Some(r.slowdown_id.as_str()),
            Some(r.node.as_str()),
            r.device.as_deref(),
            r.pod.as_deref(),
            Some(r.level),
        ];
        for (b, v) in b.iter_mut().zip(vals) {
            b.append_option(v);
        }
    }
    let cols: Vec<ArrayRef> = b
        .iter_mut()
        .map(|b| Arc::new(b.finish()) as ArrayRef)
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(arrow_err("symptom_scope"))?;
    sql::replace_table(ctx, "symptom_scope", schema, vec![batch])?;
    for &view in SYMPTOM_VIEWS {
        sql::execute(ctx, view).await?;
    }
    // Computed once for the rules that read them, instead of once by each rule.
    for view in MATERIALIZED_SYMPTOM_VIEWS {
        sql::materialize(ctx, view).await?;
    }
    done("cause views");
    // Computed once too, with the symptoms' bounds as constants (see `rule_params`).
    let params = rule_params(symptoms);
    for (name, file) in [
        ("symptom_events", sql::SYMPTOM_EVENTS),
        ("symptom_throttle_shares", sql::SYMPTOM_THROTTLE_SHARES),
        ("symptom_gpu_samples", sql::SYMPTOM_GPU_SAMPLES),
        ("symptom_rollouts", sql::SYMPTOM_ROLLOUTS),
    ] {
        sql::register(ctx, name, file, &params).await?;
        done(name);
    }
    Ok(())
}

/// The views of `SYMPTOM_VIEWS` that more than one rule reads, in dependency order.
const MATERIALIZED_SYMPTOM_VIEWS: [&str; 2] = ["symptom_level_rates", "symptom_serving_samples"];

/// The parameters any cause rule may read: `$first_start`, `$first_onset` and `$last_end`,
/// the earliest start, the earliest `onset_from` and the latest end of the `symptoms` (all
/// the epoch when there are none). A query that joins a stored table to the symptoms by
/// time repeats its bounds with them as constants: DataFusion prunes segments and pages by
/// constants, not by a join's condition.
pub fn rule_params(symptoms: &[SymptomRow]) -> [(&'static str, ScalarValue); 3] {
    let first = symptoms.iter().map(|s| s.start_ns).min().unwrap_or(0);
    let onset = symptoms.iter().map(|s| s.onset_from_ns).min().unwrap_or(0);
    let last = symptoms.iter().map(|s| s.end_ns).max().unwrap_or(0);
    [
        ("first_start", sql::ts_param(first)),
        ("first_onset", sql::ts_param(onset)),
        ("last_end", sql::ts_param(last)),
    ]
}

/// Runs every cause rule over `symptoms` (registered by [`register`]) and returns their
/// candidates, sorted by slowdown, time, cause; `done` is told each rule's file as it
/// finishes.
pub async fn run_rules(
    ctx: &SessionContext,
    symptoms: &[SymptomRow],
    mut done: impl FnMut(&'static str),
) -> Result<Vec<Candidate>> {
    let params = rule_params(symptoms);
    let mut out = Vec::new();
    for &(layer, file) in CAUSE_RULES {
        for batch in sql::collect(ctx, file, &params).await? {
            read_candidates(&batch, layer, file.path, &mut out)?;
        }
        done(file.path);
    }
    // A total order (rules return rows in no particular order): ties broken down to the
    // summary and evidence, so the same store always ranks the same way.
    out.sort_by(|a, b| {
        (
            &a.slowdown_id,
            a.time_ns,
            a.cause,
            &a.node,
            &a.device,
            &a.summary,
            &a.evidence,
        )
            .cmp(&(
                &b.slowdown_id,
                b.time_ns,
                b.cause,
                &b.node,
                &b.device,
                &b.summary,
                &b.evidence,
            ))
    });
    Ok(out)
}

fn read_candidates(
    batch: &RecordBatch,
    layer: Layer,
    file: &'static str,
    out: &mut Vec<Candidate>,
) -> Result<()> {
    let c = Columns::new(batch, file);
    let ids = c.strings("slowdown_id")?;
    let causes = c.strings("cause")?;
    let scope = c.strings("scope")?;
    let node = c.strings("node")?;
    let device = c.strings("device")?;
    let time = c.times("time")?;
    let evidence = c.string_lists("evidence")?;
    let summary = c.strings("summary")?;
    let strength = if c.has("strength") {
        c.floats("strength")?
    } else {
        vec![None; batch.num_rows()]
    };
    for i in 0..batch.num_rows() {
        let (Some(id), Some(cause_id), Some(time_ns)) = (&ids[i], &causes[i], time[i]) else {
            continue;
        };
        let cause: Cause =
            cause_id
                .parse()
                .map_err(|e: whyslow_schemas::UnknownId| AnalyzeError::Shape {
                    file,
                    column: "cause".to_string(),
                    detail: e.to_string(),
                })?;
        let mut ev = evidence[i].clone();
        ev.sort();
        ev.dedup();
        out.push(Candidate {
            slowdown_id: id.clone(),
            cause,
            layer,
            reach: Reach::parse(scope[i].as_deref().unwrap_or("cluster")),
            node: node[i].clone(),
            device: device[i].clone(),
            time_ns,
            evidence: ev,
            summary: summary[i].clone().unwrap_or_else(|| cause.id().to_string()),
            strength: strength[i].map_or(1.0, |v| v.clamp(0.0, 1.0)),
            rule: file,
        });
    }
    Ok(())
}
