//! The analysis' inputs, read with the symptom queries: workload extents, framework
//! series, announced pauses, lifecycle marks, utilization and GPU activity, placements,
//! and the events cited as evidence.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use datafusion::prelude::SessionContext;

use super::metric_scan::{PodWorkloads, ScanBasis, ScanFold, Scanned};
use super::segment_folds::{SegmentFolds, read_into};
use super::{ACTIVITY_BUCKET_NS, Placement, WorkloadExtent};
use crate::attribution::EventInfo;
use crate::columns::Columns;
use crate::sql::{self, AFTERMATH, EVIDENCE, symptoms as q};
use crate::symptoms::pending::Lifecycle;
use crate::symptoms::run::{Marks, RunSeries};
use crate::symptoms::save_cadence::Save;
use crate::symptoms::{Point, WorkloadKey, WorkloadName};
use crate::{AnalyzeError, Result};
use whyslow_queries::dictionary_scan;
use whyslow_schemas::Table;
use whyslow_schemas::tables::stored_to_ns;

pub type Params = [(&'static str, datafusion::scalar::ScalarValue); 2];

pub async fn read_extents(ctx: &SessionContext, params: &Params) -> Result<Vec<WorkloadExtent>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, q::EXTENT, params).await? {
        let c = Columns::new(&b, q::EXTENT.path);
        let (ns, w, t0, t1) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.times("first_time")?,
            c.times("last_time")?,
        );
        let (alive, warned) = (c.times("last_alive_time")?, c.times("last_warning_time")?);
        for i in 0..b.num_rows() {
            if let (Some(first_ns), Some(last_ns)) = (t0[i], t1[i]) {
                let key = WorkloadKey {
                    namespace: ns[i].clone(),
                    workload: w[i].clone(),
                    run_id: None,
                };
                out.push(WorkloadExtent {
                    key,
                    run_ids: Vec::new(),
                    first_ns,
                    last_ns,
                    alive_ns: alive[i],
                    warned_ns: warned[i],
                });
            }
        }
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    Ok(out)
}

/// The framework series in the window (`symptoms/framework_series.sql`): per run,
/// each metric's points per rank in time order, and where each rank ran. With `kept`
/// (the live analyzer's, between analyses), the rows of the segments read before are
/// reused (`analyze/segment_rows.rs`): the same series, read from the new segments only.
pub async fn read_framework_series(
    ctx: &SessionContext,
    params: &Params,
    kept: Option<&mut SegmentFolds>,
) -> Result<BTreeMap<WorkloadKey, RunSeries>> {
    let window = param_ns(params, "from").zip(param_ns(params, "to"));
    let reused = match (kept, window) {
        (Some(kept), Some(window)) => kept.framework_rows(ctx, window, params).await?,
        _ => None,
    };
    let batches = match reused {
        Some(batches) => batches,
        None => sql::collect(ctx, q::FRAMEWORK_SERIES, params).await?,
    };
    series_of(&batches)
}

/// Where a rank ran, as a run's series tell it: the node and device of its first sample
/// that names a node (by time, then step), of the first metric by name that has one.
type Placed = BTreeMap<(Option<i32>, String), ((i64, Option<i64>), Option<String>, Option<String>)>;

/// The series in rows of `symptoms/framework_series.sql`, in any order (the query's
/// order spares work: each run of rows of one series is looked up once).
fn series_of(batches: &[RecordBatch]) -> Result<BTreeMap<WorkloadKey, RunSeries>> {
    let mut out: BTreeMap<WorkloadKey, RunSeries> = BTreeMap::new();
    let mut placed: BTreeMap<WorkloadKey, Placed> = BTreeMap::new();
    let file = q::FRAMEWORK_SERIES.path;
    for b in batches {
        let c = Columns::new(b, file);
        let (ns, w, run, metric) = (
            c.texts("namespace")?,
            c.texts("workload")?,
            c.texts("run_id")?,
            c.texts("metric")?,
        );
        let (rank, time, step, value) = (
            c.ints("rank")?,
            c.times("time")?,
            c.ints("step")?,
            c.floats("value")?,
        );
        let (node, device) = (c.texts("node")?, c.texts("device")?);
        let same_series = |i: usize, j: usize| {
            rank[i] == rank[j]
                && metric.get(i) == metric.get(j)
                && run.get(i) == run.get(j)
                && w.get(i) == w.get(j)
                && ns.get(i) == ns.get(j)
        };
        for rows in runs_of(b.num_rows(), same_series) {
            let Some(m) = metric.get(rows.start) else {
                continue;
            };
            let key = WorkloadKey {
                namespace: ns.get(rows.start).map(str::to_string),
                workload: w.get(rows.start).map(str::to_string),
                run_id: run.get(rows.start).map(str::to_string),
            };
            let r = rank[rows.start].map(|r| r as i32);
            let usable = |i: &usize| time[*i].is_some() && value[*i].is_some();
            // By time and step alone (`usable` rows have a time): comparing the node and
            // device texts per row cost ~30 ms on an hour of a 1000-node fleet.
            let first_placed = rows
                .clone()
                .filter(usable)
                .filter(|&i| node.get(i).is_some())
                .min_by_key(|&i| (time[i].unwrap_or(i64::MAX), step[i]));
            if let Some(i) = first_placed {
                let at = (time[i].unwrap_or(i64::MAX), step[i]);
                let place = (
                    at,
                    node.get(i).map(str::to_string),
                    device.get(i).map(str::to_string),
                );
                let e = placed
                    .entry(key.clone())
                    .or_default()
                    .entry((r, m.to_string()))
                    .or_insert_with(|| place.clone());
                if place < *e {
                    *e = place;
                }
            }
            let points = out
                .entry(key)
                .or_default()
                .metrics
                .entry(m.to_string())
                .or_default()
                .entry(r)
                .or_default();
            points.extend(rows.filter_map(|i| {
                let (Some(t), Some(v)) = (time[i], value[i]) else {
                    return None;
                };
                // A trainer's fractional epoch is progress where nothing reports steps.
                let step = match (m, step[i]) {
                    ("epoch", None) => Some((v * 1e4).round() as i64),
                    (_, s) => s,
                };
                Some(Point {
                    time_ns: t,
                    step,
                    value: v,
                })
            }));
        }
    }
    for (key, run) in out.iter_mut() {
        // Each rank's place from the first metric by name that has one.
        for ((r, _), (_, node, device)) in placed.remove(key).unwrap_or_default() {
            run.placement.entry(r).or_insert((node, device));
        }
        for ranks in run.metrics.values_mut() {
            for pts in ranks.values_mut() {
                pts.sort_by(|a, b| {
                    (a.time_ns, a.step)
                        .cmp(&(b.time_ns, b.step))
                        .then(a.value.total_cmp(&b.value))
                });
            }
        }
    }
    Ok(out)
}

pub async fn read_pauses(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, Marks>> {
    let mut raw: BTreeMap<WorkloadName, Vec<(i64, String, Option<f64>)>> = BTreeMap::new();
    for b in sql::collect(ctx, q::PAUSES, params).await? {
        let c = Columns::new(&b, q::PAUSES.path);
        let (ns, w, kind, time, secs) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("kind")?,
            c.times("time")?,
            c.floats("seconds")?,
        );
        for i in 0..b.num_rows() {
            let (Some(k), Some(t)) = (&kind[i], time[i]) else {
                continue;
            };
            raw.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .push((t, k.clone(), secs[i]));
        }
    }
    let mut out = BTreeMap::new();
    for (wk, evs) in raw {
        out.insert(wk, Marks::from_announcements(evs));
    }
    Ok(out)
}

pub async fn read_lifecycle(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, Vec<Lifecycle>>> {
    let mut out: BTreeMap<WorkloadName, Vec<Lifecycle>> = BTreeMap::new();
    for b in sql::collect(ctx, q::LIFECYCLE, params).await? {
        let c = Columns::new(&b, q::LIFECYCLE.path);
        let (ns, w, kind, time, pod) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("kind")?,
            c.times("time")?,
            c.strings("pod")?,
        );
        for i in 0..b.num_rows() {
            let (Some(k), Some(t)) = (&kind[i], time[i]) else {
                continue;
            };
            out.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .push(Lifecycle {
                    time_ns: t,
                    kind: k.clone(),
                    pod: pod[i].clone(),
                });
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (a.time_ns, &a.kind).cmp(&(b.time_ns, &b.kind)));
    }
    Ok(out)
}

/// Which workloads each pod belongs to (`pod_workloads`).
pub async fn read_pod_workloads(ctx: &SessionContext) -> Result<PodWorkloads> {
    let mut out = PodWorkloads::default();
    for b in sql::collect(ctx, q::POD_NAMES, &[]).await? {
        let c = Columns::new(&b, q::POD_NAMES.path);
        let (ns, pod, w) = (c.texts("namespace")?, c.texts("pod")?, c.texts("workload")?);
        for i in 0..b.num_rows() {
            if let (Some(pod), Some(w)) = (pod.get(i), w.get(i)) {
                out.insert(
                    ns.get(i).map(str::to_string),
                    pod.to_string(),
                    w.to_string(),
                );
            }
        }
    }
    Ok(out)
}

/// One scan of the window's samples (`symptoms/metric_scan.sql`), folded by
/// `analyze/metric_scan.rs`: the series' extents, the utilization and the GPU activity
/// of the `candidates`.
pub async fn scan_metrics(
    ctx: &SessionContext,
    params: &Params,
    candidates: &BTreeSet<WorkloadName>,
) -> Result<Scanned> {
    scan_metrics_keeping(ctx, params, candidates, None).await
}

/// [`scan_metrics`], reusing and keeping the folds of a store's segments in `kept` where
/// given (the live analyzer's, between analyses): the same result, from only the
/// segments not folded before.
pub async fn scan_metrics_keeping(
    ctx: &SessionContext,
    params: &Params,
    candidates: &BTreeSet<WorkloadName>,
    kept: Option<&mut SegmentFolds>,
) -> Result<Scanned> {
    let pods = read_pod_workloads(ctx).await?;
    let basis = ScanBasis {
        pods: &pods,
        candidates,
        activity_bucket_ns: ACTIVITY_BUCKET_NS,
    };
    // A store's segments are read straight from Parquet with the key columns as
    // dictionaries (the same rows as the query's, `whyslow_queries::dictionary_scan`);
    // other tables (in memory, in tests) with the query.
    let segments = match (param_ns(params, "from"), param_ns(params, "to")) {
        (Some(from), Some(to)) => {
            dictionary_scan::segments_overlapping(ctx, Table::Metrics, from, to)
                .await
                .map_err(|source| AnalyzeError::Segments { source })?
                .map(|s| (s, (from, to)))
        }
        _ => None,
    };
    let mut fold = ScanFold::default();
    match (segments, kept) {
        (Some((segments, window)), Some(kept)) => {
            fold = kept
                .fold(ctx, &basis, segments, window, &SCANNED_COLUMNS)
                .await?;
        }
        (Some((segments, window)), None) => {
            fold = read_into(fold, ctx, &basis, segments, window, &SCANNED_COLUMNS).await?;
        }
        (None, _) => {
            sql::for_each_batch(ctx, q::METRIC_SCAN, params, |b| {
                fold.fold(&basis, b, q::METRIC_SCAN.path)
            })
            .await?
        }
    }
    fold.finish()
}

/// The columns `symptoms/metric_scan.sql` selects.
const SCANNED_COLUMNS: [&str; 8] = [
    "namespace",
    "workload",
    "pod",
    "node",
    "device",
    "metric",
    "time",
    "value",
];

/// A timestamp parameter's value in ns since the epoch.
fn param_ns(params: &Params, name: &str) -> Option<i64> {
    use datafusion::scalar::ScalarValue;
    params
        .iter()
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| match v {
            ScalarValue::TimestampMicrosecond(Some(us), _) => Some(stored_to_ns(*us)),
            ScalarValue::TimestampNanosecond(Some(ns), _) => Some(*ns),
            _ => None,
        })
}

/// The workloads that are members of another: (namespace, member) -> the whole.
pub async fn read_members(ctx: &SessionContext) -> Result<super::second_copies::Members> {
    let mut out = super::second_copies::Members::new();
    for b in sql::collect(ctx, q::MEMBERS, &[]).await? {
        let c = Columns::new(&b, q::MEMBERS.path);
        let (ns, member, whole) = (
            c.strings("namespace")?,
            c.strings("member")?,
            c.strings("workload")?,
        );
        for i in 0..b.num_rows() {
            if let (Some(m), Some(w)) = (&member[i], &whole[i]) {
                out.insert((ns[i].clone(), m.clone()), w.clone());
            }
        }
    }
    Ok(out)
}

pub async fn read_placements(ctx: &SessionContext, params: &Params) -> Result<Vec<Placement>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, q::PLACEMENTS, params).await? {
        let c = Columns::new(&b, q::PLACEMENTS.path);
        let (ns, w, pod, node, device) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("pod")?,
            c.strings("node")?,
            c.strings("device")?,
        );
        let (since, until) = (c.times("since")?, c.times("until")?);
        for i in 0..b.num_rows() {
            let (Some(n), Some(s)) = (&node[i], since[i]) else {
                continue;
            };
            out.push(Placement {
                namespace: ns[i].clone(),
                workload: w[i].clone(),
                pod: pod[i].clone(),
                node: n.clone(),
                device: device[i].clone(),
                since: s,
                until: until[i].unwrap_or(i64::MAX),
            });
        }
    }
    Ok(out)
}

/// A pod the events of its workload name, from the first to the last time they do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventPod {
    pub namespace: Option<String>,
    pub workload: String,
    pub pod: String,
    pub first_ns: i64,
    pub last_ns: i64,
}

pub async fn read_event_pods(ctx: &SessionContext, params: &Params) -> Result<Vec<EventPod>> {
    let mut out = Vec::new();
    for b in sql::collect(ctx, q::EVENT_PODS, params).await? {
        let c = Columns::new(&b, q::EVENT_PODS.path);
        let (ns, w, pod) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("pod")?,
        );
        let (first, last) = (c.times("first")?, c.times("last")?);
        for i in 0..b.num_rows() {
            if let (Some(w), Some(pod), Some(f), Some(l)) = (&w[i], &pod[i], first[i], last[i]) {
                out.push(EventPod {
                    namespace: ns[i].clone(),
                    workload: w.clone(),
                    pod: pod.clone(),
                    first_ns: f,
                    last_ns: l,
                });
            }
        }
    }
    Ok(out)
}

fn event_info(c: &Columns<'_>, n: usize) -> Result<Vec<(Option<String>, EventInfo)>> {
    let ids = c.strings("event_id")?;
    let time = c.times("time")?;
    let (layer, kind) = (c.strings("layer")?, c.strings("kind")?);
    let (ns, w, pod, node, device) = (
        c.strings("namespace")?,
        c.strings("workload")?,
        c.strings("pod")?,
        c.strings("node")?,
        c.strings("device")?,
    );
    let (reason, message, step, seconds) = (
        c.strings("reason")?,
        c.strings("message")?,
        c.strings("step")?,
        c.strings("seconds")?,
    );
    let sid = if c.has("slowdown_id") {
        c.strings("slowdown_id")?
    } else {
        vec![None; n]
    };
    let mut out = Vec::new();
    for i in 0..n {
        let (Some(id), Some(t), Some(k)) = (&ids[i], time[i], &kind[i]) else {
            continue;
        };
        let who = match (&w[i], &pod[i], &node[i]) {
            (Some(w), _, _) => format!("{}/{}", ns[i].as_deref().unwrap_or("-"), w),
            (None, Some(p), _) => p.clone(),
            (None, None, Some(n)) => match &device[i] {
                Some(d) => format!("{n} GPU {d}"),
                None => n.clone(),
            },
            _ => String::from("cluster"),
        };
        let what = if k == "checkpoint_restored" {
            let mut s = String::from("restored from checkpoint");
            if let Some(st) = &step[i] {
                s.push_str(&format!(" at step {st}"));
            }
            if let Some(sec) = &seconds[i] {
                s.push_str(&format!(" in {sec} s"));
            }
            s
        } else {
            let text = message[i]
                .clone()
                .or_else(|| reason[i].clone())
                .unwrap_or_else(|| k.replace('_', " "));
            let mut text: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.chars().count() > 160 {
                text = text.chars().take(157).collect::<String>() + "…";
            }
            match &reason[i] {
                Some(r) if message[i].is_some() && !text.contains(r.as_str()) => {
                    format!("{r}: {text}")
                }
                _ => text,
            }
        };
        out.push((
            sid[i].clone(),
            EventInfo {
                event_id: id.clone(),
                time_ns: t,
                layer: layer[i].clone().unwrap_or_default(),
                kind: k.clone(),
                summary: format!("{who}: {what}"),
            },
        ));
    }
    Ok(out)
}

pub async fn read_evidence(
    ctx: &SessionContext,
    cited: &BTreeSet<&str>,
) -> Result<HashMap<String, EventInfo>> {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "event_id",
        DataType::Utf8,
        false,
    )]));
    let ids = StringArray::from(cited.iter().copied().collect::<Vec<&str>>());
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids)]).map_err(|source| {
        crate::AnalyzeError::Arrow {
            what: "cited",
            source,
        }
    })?;
    sql::replace_table(ctx, "cited", schema, vec![batch])?;
    let mut out = HashMap::new();
    for b in sql::collect(ctx, EVIDENCE, &[]).await? {
        let c = Columns::new(&b, EVIDENCE.path);
        for (_, e) in event_info(&c, b.num_rows())? {
            out.insert(e.event_id.clone(), e);
        }
    }
    Ok(out)
}

pub async fn read_aftermath(ctx: &SessionContext) -> Result<HashMap<String, Vec<EventInfo>>> {
    let mut out: HashMap<String, Vec<EventInfo>> = HashMap::new();
    for b in sql::collect(ctx, AFTERMATH, &[]).await? {
        let c = Columns::new(&b, AFTERMATH.path);
        for (sid, e) in event_info(&c, b.num_rows())? {
            if let Some(sid) = sid {
                out.entry(sid).or_default().push(e);
            }
        }
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| (a.time_ns, &a.event_id).cmp(&(b.time_ns, &b.event_id)));
    }
    Ok(out)
}

/// Each workload's checkpoint saves (told once) with the save interval its run configured.
pub async fn read_saves(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeMap<WorkloadName, Vec<Save>>> {
    let mut out: BTreeMap<WorkloadName, Vec<Save>> = BTreeMap::new();
    for b in sql::collect(ctx, q::SAVE_CADENCE, params).await? {
        let c = Columns::new(&b, q::SAVE_CADENCE.path);
        let (ns, w) = (c.strings("namespace")?, c.strings("workload")?);
        let (began, step, seconds, every) = (
            c.ints("began_ns")?,
            c.ints("step")?,
            c.floats("seconds")?,
            c.ints("save_steps")?,
        );
        for i in 0..b.num_rows() {
            let Some(began_ns) = began[i] else {
                continue;
            };
            out.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .push(Save {
                    began_ns,
                    step: step[i],
                    seconds: seconds[i],
                    save_steps: every[i],
                });
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|s| (s.began_ns, s.step));
    }
    Ok(out)
}

/// The runs of equal neighbours among `n` sorted rows, as index ranges in order:
/// `same(i, j)` says whether rows `i` and `j` belong to one run.
fn runs_of(
    n: usize,
    same: impl Fn(usize, usize) -> bool,
) -> impl Iterator<Item = std::ops::Range<usize>> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= n {
            return None;
        }
        let mut end = start + 1;
        while end < n && same(start, end) {
            end += 1;
        }
        let run = start..end;
        start = end;
        Some(run)
    })
}

#[cfg(test)]
mod tests {
    use super::runs_of;

    #[test]
    fn runs_of_equal_neighbours_cover_every_row_once() {
        let keys = ["a", "a", "b", "a", "a", "a"];
        let runs: Vec<_> = runs_of(keys.len(), |i, j| keys[i] == keys[j]).collect();
        assert_eq!(runs, vec![0..2, 2..3, 3..6]);
        assert_eq!(runs_of(0, |_, _| true).count(), 0);
    }
}
