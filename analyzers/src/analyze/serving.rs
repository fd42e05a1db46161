//! The serving side of the analysis: which workloads serve, their engines' series per
//! replica and minute (`symptoms/serving_series.sql`) combined into the workload's (the
//! latencies pooled over the replicas' requests), and their latency regressions.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::prelude::SessionContext;

use super::read::Params;
use crate::Result;
use crate::columns::Columns;
use crate::sql::{self, symptoms as q};
use crate::symptoms::serving::{Combine, ReplicaSample, combine};
use crate::symptoms::{
    DetectorConfig, Point, Symptom, WorkloadKey, WorkloadName, latency, mixture,
};

/// The buckets of `symptoms/serving_series.sql`.
pub const SERVING_BUCKET_NS: i64 = 60 * 1_000_000_000;

/// Workloads whose replicas serve (`symptoms/serving_workloads.sql`).
pub async fn read_serving_workloads(
    ctx: &SessionContext,
    params: &Params,
) -> Result<BTreeSet<WorkloadName>> {
    let mut out = BTreeSet::new();
    for b in sql::collect(ctx, q::SERVING_WORKLOADS, params).await? {
        let c = Columns::new(&b, q::SERVING_WORKLOADS.path);
        let (ns, w) = (c.strings("namespace")?, c.strings("workload")?);
        for i in 0..b.num_rows() {
            out.insert((ns[i].clone(), w[i].clone()));
        }
    }
    Ok(out)
}

/// The replicas (pods) of each serving workload that reported series, each with the
/// first and last bucket it reported in.
pub type Replicas = BTreeMap<WorkloadName, BTreeMap<String, (i64, i64)>>;

/// Each serving workload's series (whyslow names), its replicas combined; and the replicas.
pub async fn read_serving_series(
    ctx: &SessionContext,
    params: &Params,
) -> Result<(
    BTreeMap<WorkloadName, BTreeMap<String, Vec<Point>>>,
    Replicas,
)> {
    let mut rows: BTreeMap<WorkloadName, BTreeMap<String, Vec<ReplicaSample>>> = BTreeMap::new();
    let mut replicas = Replicas::new();
    let file = q::SERVING_SERIES.path;
    for b in sql::collect(ctx, q::SERVING_SERIES, params).await? {
        let c = Columns::new(&b, file);
        let (ns, w, pod, metric) = (
            c.strings("namespace")?,
            c.strings("workload")?,
            c.strings("pod")?,
            c.strings("metric")?,
        );
        let (time, value) = (c.times("time")?, c.floats("value")?);
        for i in 0..b.num_rows() {
            let (Some(m), Some(t), Some(v)) = (&metric[i], time[i], value[i]) else {
                continue;
            };
            if let Some(p) = &pod[i] {
                let seen = replicas
                    .entry((ns[i].clone(), w[i].clone()))
                    .or_default()
                    .entry(p.clone())
                    .or_insert((t, t));
                *seen = (seen.0.min(t), seen.1.max(t));
            }
            rows.entry((ns[i].clone(), w[i].clone()))
                .or_default()
                .entry(m.clone())
                .or_default()
                .push(ReplicaSample {
                    pod: pod[i].clone(),
                    time_ns: t,
                    value: v,
                });
        }
    }
    let series = rows
        .into_iter()
        .map(|(wk, metrics)| (wk, combine_replicas(&metrics)))
        .collect();
    Ok((series, replicas))
}

/// The replicas of `workload` that reported in `[start_ns, end_ns]` (a bucket starting up
/// to one bucket before `start_ns` counts): the pods a serving slowdown names when no
/// placement event says where the workload ran (router logs or scrapes alone).
pub fn replicas_during(
    replicas: &Replicas,
    workload: &WorkloadName,
    start_ns: i64,
    end_ns: i64,
) -> Vec<String> {
    replicas
        .get(workload)
        .into_iter()
        .flatten()
        .filter(|(_, (first, last))| *first <= end_ns && *last + SERVING_BUCKET_NS > start_ns)
        .map(|(pod, _)| pod.clone())
        .collect()
}

/// One workload's series from its replicas': each latency's p95 pooled over the replicas'
/// requests (`mixture::pool`), the rest combined as `Combine::of` says. The p50, p99 and
/// request counts that shaped a p95 are not kept.
fn combine_replicas(
    metrics: &BTreeMap<String, Vec<ReplicaSample>>,
) -> BTreeMap<String, Vec<Point>> {
    let none: Vec<ReplicaSample> = Vec::new();
    let part = |base: &str, suffix: &str| metrics.get(&format!("{base}{suffix}")).unwrap_or(&none);
    let mut out = BTreeMap::new();
    for (m, samples) in metrics {
        if let Some(base) = m.strip_suffix("_p95") {
            let pts = mixture::pool(
                part(base, "_p50"),
                samples,
                part(base, "_p99"),
                part(base, "_observations"),
                SERVING_BUCKET_NS,
            );
            out.insert(m.clone(), pts);
        } else if !["_p50", "_p99", "_observations"]
            .iter()
            .any(|s| m.ends_with(s))
        {
            out.insert(
                m.clone(),
                combine(samples, Combine::of(m), SERVING_BUCKET_NS),
            );
        }
    }
    out
}

/// The latency regressions of every serving workload.
pub fn detect_latency(
    series: &BTreeMap<WorkloadName, BTreeMap<String, Vec<Point>>>,
    cfg: &DetectorConfig,
    horizon: i64,
) -> Vec<Symptom> {
    let mut out = Vec::new();
    for (wk, s) in series {
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        out.extend(latency::detect(&key, s, SERVING_BUCKET_NS, cfg, horizon));
    }
    out
}
