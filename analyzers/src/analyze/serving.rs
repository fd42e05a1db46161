//! The serving side of the analysis: which workloads serve, their engines' series per
//! replica and minute (`symptoms/serving_series.sql`) combined into the workload's (the
//! latencies pooled over the replicas' requests), and their latency regressions.

use std::collections::{BTreeMap, BTreeSet};

use datafusion::prelude::SessionContext;

use super::read::Params;
use crate::Result;
use crate::columns::Columns;
use crate::sql::{self, symptoms as q};
use crate::symptoms::replica_latency::{self, ReplicaRun};
use crate::symptoms::serving::{Combine, ReplicaSample, combine};
use crate::symptoms::{
    DetectorConfig, Point, Symptom, SymptomKind, WorkloadKey, WorkloadName, latency, mixture,
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

/// What the serving engines reported inside the window.
#[derive(Debug, Default)]
pub struct ServingSeries {
    /// Each serving workload's series (whyslow names), its replicas combined.
    pub combined: BTreeMap<WorkloadName, BTreeMap<String, Vec<Point>>>,
    /// Each workload's latency p95 series (engine names) per replica (pod).
    pub by_replica: BTreeMap<WorkloadName, BTreeMap<String, BTreeMap<String, Vec<Point>>>>,
    pub replicas: Replicas,
}

/// Each serving workload's series, combined and per replica; and the replicas.
pub async fn read_serving_series(ctx: &SessionContext, params: &Params) -> Result<ServingSeries> {
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
    let by_replica = rows
        .iter()
        .map(|(wk, metrics)| (wk.clone(), latency_by_replica(metrics)))
        .filter(|(_, m)| !m.is_empty())
        .collect();
    let combined = rows
        .into_iter()
        .map(|(wk, metrics)| (wk, combine_replicas(&metrics)))
        .collect();
    Ok(ServingSeries {
        combined,
        by_replica,
        replicas,
    })
}

/// Each latency p95 the engines report (`latency::LATENCIES`), per replica.
fn latency_by_replica(
    metrics: &BTreeMap<String, Vec<ReplicaSample>>,
) -> BTreeMap<String, BTreeMap<String, Vec<Point>>> {
    let mut out: BTreeMap<String, BTreeMap<String, Vec<Point>>> = BTreeMap::new();
    for (engine, _) in latency::LATENCIES {
        for r in metrics.get(engine).into_iter().flatten() {
            let Some(pod) = &r.pod else { continue };
            out.entry(engine.to_string())
                .or_default()
                .entry(pod.clone())
                .or_default()
                .push(Point {
                    time_ns: r.time_ns,
                    step: None,
                    value: r.value,
                });
        }
    }
    out
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
/// requests (`mixture::pool`), the rest combined as `Combine::of` says, with how many
/// replicas each load counted (`replicas_of`). The p50, p99 and request counts that shaped
/// a p95 are not kept.
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
            if latency::LOADS.contains(&m.as_str()) {
                out.insert(
                    replicas_of(m),
                    combine(samples, Combine::Count, SERVING_BUCKET_NS),
                );
            }
        }
    }
    out
}

/// The latency regressions of every serving workload: those of its pooled latency
/// (`latency.rs`, its load read per replica) and those of one replica against its peers
/// (`replica_latency.rs`), one slowdown where they overlap. Each comes with the replica it
/// concerns where one alone stood out: a pooled regression that one replica's began
/// earlier starts then. `short` holds each workload's capacity shortfalls (start, end).
pub fn detect_latency(
    serving: &ServingSeries,
    short: &BTreeMap<WorkloadName, Vec<(i64, i64)>>,
    cfg: &DetectorConfig,
    horizon: i64,
) -> Vec<(Symptom, Option<String>)> {
    let none = Vec::new();
    let mut out = Vec::new();
    for (wk, s) in &serving.combined {
        let key = WorkloadKey {
            namespace: wk.0.clone(),
            workload: wk.1.clone(),
            run_id: None,
        };
        let mut series = s.clone();
        for load in latency::LOADS {
            if let (Some(sum), Some(count)) = (s.get(load), s.get(&replicas_of(load))) {
                let share = share(sum, count, short.get(wk).unwrap_or(&none));
                series.insert(latency::per_replica(load), share);
            }
        }
        let pooled = latency::detect(&key, &series, SERVING_BUCKET_NS, cfg, horizon);
        let by_replica = serving.by_replica.get(wk);
        let episodes = by_replica.map(|m| episodes(m, cfg)).unwrap_or_default();
        for e in &episodes {
            tracing::trace!(
                pod = e.run.pod,
                metric = e.metric,
                start_ns = e.run.start_ns,
                end_ns = e.run.end_ns,
                minutes = e.run.above.len(),
                ratio = e.run.observed / e.run.baseline,
                "replica above its peers"
            );
        }
        out.extend(merge(&key, pooled, episodes, by_replica, cfg, horizon));
    }
    out
}

/// The name of the series of how many replicas a load counted (`Combine::Count`).
fn replicas_of(load: &str) -> String {
    format!("{load}_replicas")
}

/// Each bucket's load per replica: the sum over the replicas counting. While the workload
/// runs short of replicas (`short`), a replica it lost still counts: as many as counted
/// just before the shortfall began, where more than count now. The engines left carry
/// the lost one's share, and that is the slowdown (a scale-up waiting for its replica
/// counts the replicas it had: its load was theirs before).
fn share(sum: &[Point], count: &[Point], short: &[(i64, i64)]) -> Vec<Point> {
    let counted: BTreeMap<i64, f64> = count.iter().map(|p| (p.time_ns, p.value)).collect();
    sum.iter()
        .filter_map(|p| {
            let mut n = *counted.get(&p.time_ns)?;
            for (start, end) in short {
                if (*start..=*end).contains(&p.time_ns)
                    && let Some((_, before)) = counted.range(..*start).next_back()
                {
                    n = n.max(*before);
                }
            }
            (n > 0.0).then(|| Point {
                time_ns: p.time_ns,
                step: None,
                value: p.value / n,
            })
        })
        .collect()
}

/// How soon after a pooled regression's onset a replica's may begin and still have led it
/// (the two are smoothed differently).
const LEAD_NS: i64 = 2 * SERVING_BUCKET_NS;

/// The time one replica stood above its peers, over every latency that showed it.
#[derive(Debug, Clone, PartialEq)]
struct Episode {
    /// The latency that rose most (whyslow name), and the engine series it was read from.
    metric: &'static str,
    engine: &'static str,
    run: ReplicaRun,
}

/// Each replica's runs above its peers, those of different latencies that overlap
/// merged into one, named by the latency that rose most.
fn episodes(
    by_replica: &BTreeMap<String, BTreeMap<String, Vec<Point>>>,
    cfg: &DetectorConfig,
) -> Vec<Episode> {
    let mut all: Vec<Episode> = Vec::new();
    let mut named: Vec<&str> = Vec::new();
    for (engine, name) in latency::LATENCIES {
        let Some(pods) = by_replica.get(engine) else {
            continue;
        };
        if named.contains(&name) {
            continue;
        }
        named.push(name);
        all.extend(
            replica_latency::detect(pods, SERVING_BUCKET_NS, cfg)
                .into_iter()
                .map(|run| Episode {
                    metric: name,
                    engine,
                    run,
                }),
        );
    }
    all.sort_by(|a, b| {
        (&a.run.pod, a.run.start_ns, a.metric).cmp(&(&b.run.pod, b.run.start_ns, b.metric))
    });
    let mut merged: Vec<Episode> = Vec::new();
    for e in all {
        match merged.last_mut() {
            Some(m) if m.run.pod == e.run.pod && e.run.start_ns <= m.run.end_ns => {
                let mut above = std::mem::take(&mut m.run.above);
                above.extend(e.run.above.iter().copied());
                above.sort_unstable();
                above.dedup();
                let end_ns = m.run.end_ns.max(e.run.end_ns);
                if e.run.observed / e.run.baseline > m.run.observed / m.run.baseline {
                    m.metric = e.metric;
                    m.engine = e.engine;
                    m.run.baseline = e.run.baseline;
                    m.run.observed = e.run.observed;
                }
                m.run.above = above;
                m.run.end_ns = end_ns;
            }
            _ => merged.push(e),
        }
    }
    merged.sort_by(|a, b| (a.run.start_ns, &a.run.pod).cmp(&(b.run.start_ns, &b.run.pod)));
    merged
}

/// The pooled regressions with the replica episodes that overlap them (an earlier start,
/// the replica concerned where one alone), then the episodes no pooled regression saw,
/// those that overlap one slowdown, where they last twice the sustained time.
fn merge(
    key: &WorkloadKey,
    pooled: Vec<Symptom>,
    episodes: Vec<Episode>,
    by_replica: Option<&BTreeMap<String, BTreeMap<String, Vec<Point>>>>,
    cfg: &DetectorConfig,
    horizon: i64,
) -> Vec<(Symptom, Option<String>)> {
    let overlaps =
        |e: &Episode, start: i64, end: i64| e.run.start_ns <= end && start <= e.run.end_ns;
    let mut used = vec![false; episodes.len()];
    let mut out = Vec::new();
    // Pooled regressions led by the same replica's slow time, and the episodes that led
    // them: one slowdown, the pooled latency having dipped under its threshold between
    // them while the replica stayed slow.
    let mut led_group: Option<(Symptom, Vec<Symptom>, BTreeSet<usize>)> = None;
    for s in pooled {
        let mine: BTreeSet<usize> = (0..episodes.len())
            .filter(|&i| overlaps(&episodes[i], s.start_ns, s.end_ns))
            .collect();
        for &i in &mine {
            used[i] = true;
        }
        // The replica is where the slowdown is when its own rise led the workload's
        // (began by the pooled onset) while its peers kept their latency. One that rose
        // most when every replica rose (a surge, a full cache), or only after the
        // workload had slowed, is not: the whole workload is.
        let led = mine
            .iter()
            .map(|&i| &episodes[i])
            .min_by_key(|e| e.run.start_ns)
            .is_some_and(|e| e.run.start_ns <= s.start_ns + LEAD_NS && alone(e, cfg));
        match &mut led_group {
            Some((_, later, led_by)) if led && !led_by.is_disjoint(&mine) => {
                later.push(s);
                led_by.extend(mine);
                continue;
            }
            _ => {}
        }
        if let Some((first, later, led_by)) = led_group.take() {
            out.push(joined(first, later, &led_by, &episodes));
        }
        if led {
            led_group = Some((s, Vec::new(), mine));
        } else {
            out.push((s, None));
        }
    }
    if let Some((first, later, led_by)) = led_group.take() {
        out.push(joined(first, later, &led_by, &episodes));
    }
    // Episodes alone: one slowdown per time, however many replicas it concerns.
    let mut groups: Vec<Vec<&Episode>> = Vec::new();
    for (e, _) in episodes.iter().zip(&used).filter(|(_, u)| !**u) {
        match groups.last_mut() {
            Some(g) if g.iter().any(|o| e.run.start_ns <= o.run.end_ns) => g.push(e),
            _ => groups.push(vec![e]),
        }
    }
    for g in groups {
        // One replica's minutes, unconfirmed by the pooled latency, are a weaker sign: a
        // slowdown of their own needs one replica above its peers for twice the sustained
        // time, counted in its minutes above (a run bridges short dips: its span counts
        // minutes that were not slow).
        let mut minutes: BTreeMap<&str, BTreeSet<i64>> = BTreeMap::new();
        for e in &g {
            minutes
                .entry(e.run.pod.as_str())
                .or_default()
                .extend(e.run.above.iter().copied());
        }
        let longest = minutes.values().map(BTreeSet::len).max().unwrap_or(0);
        if (longest as f64 * SERVING_BUCKET_NS as f64) < 2.0 * cfg.latency_min_seconds * 1e9 {
            continue;
        }
        let Some(lead) = g.iter().copied().max_by(|a, b| {
            (a.run.observed / a.run.baseline)
                .total_cmp(&(b.run.observed / b.run.baseline))
                .then(b.run.pod.cmp(&a.run.pod))
        }) else {
            continue;
        };
        let start_ns = g
            .iter()
            .map(|e| e.run.start_ns)
            .min()
            .unwrap_or(lead.run.start_ns);
        let end_ns = g
            .iter()
            .map(|e| e.run.end_ns)
            .max()
            .unwrap_or(lead.run.end_ns);
        let above: BTreeSet<i64> = g.iter().flat_map(|e| e.run.above.iter().copied()).collect();
        let plot = by_replica
            .and_then(|m| m.get(lead.engine))
            .and_then(|pods| pods.get(&lead.run.pod))
            .map(|pts| latency::plot_around(pts, start_ns, end_ns))
            .unwrap_or_default();
        let symptom = Symptom {
            key: key.clone(),
            kind: SymptomKind::LatencyRegression,
            start_ns,
            end_ns: end_ns.min(horizon.max(start_ns)),
            ongoing: end_ns + 2 * SERVING_BUCKET_NS >= horizon,
            lost_seconds: above.len() as f64 * SERVING_BUCKET_NS as f64 / 1e9,
            baseline: Some(lead.run.baseline),
            observed: Some(lead.run.observed),
            metric: Some(lead.metric.to_string()),
            rank: None,
            plot,
            restored: false,
            gpu: None,
        };
        out.push((symptom, sole_pod(g.into_iter())));
    }
    out
}

/// One slowdown of the pooled regressions (`first`, then the `later` ones in time order)
/// that the episodes `led_by` led: from the earlier of the first regression's and the
/// first episode's onset to the last regression's end, named as the regression that rose
/// most; its lost time is the regressions' and the minutes the replica was slow before
/// and between them.
fn joined(
    first: Symptom,
    later: Vec<Symptom>,
    led_by: &BTreeSet<usize>,
    episodes: &[Episode],
) -> (Symptom, Option<String>) {
    let spans: Vec<(i64, i64)> = std::iter::once(&first)
        .chain(&later)
        .map(|s| (s.start_ns, s.end_ns))
        .collect();
    let led = || led_by.iter().map(|&i| &episodes[i]);
    let pod = sole_pod(led());
    let onset = first.start_ns;
    let end = spans.iter().map(|s| s.1).max().unwrap_or(first.end_ns);
    let unseen: BTreeSet<i64> = led()
        .flat_map(|e| e.run.above.iter().copied())
        .filter(|t| *t < end && !spans.iter().any(|(a, b)| a <= t && t < b))
        .collect();
    let lost: f64 = first.lost_seconds
        + later.iter().map(|s| s.lost_seconds).sum::<f64>()
        + unseen.len() as f64 * SERVING_BUCKET_NS as f64 / 1e9;
    let ongoing = later.last().unwrap_or(&first).ongoing;
    let rise = |s: &Symptom| s.observed.zip(s.baseline).map_or(0.0, |(o, b)| o / b);
    let mut lead = first;
    for s in later {
        if rise(&s) > rise(&lead) {
            lead = s;
        }
    }
    lead.start_ns = led().map(|e| e.run.start_ns).fold(onset, i64::min);
    lead.end_ns = end;
    lead.ongoing = ongoing;
    lead.lost_seconds = lost;
    (lead, pod)
}

/// Whether the replica slowed while its peers did not, or less than it stood above them
/// (the peers' rise within the relative floor of a regression, or below the replica's
/// excess over them).
fn alone(e: &Episode, cfg: &DetectorConfig) -> bool {
    let excess = e.run.observed / e.run.baseline;
    e.run
        .peers_rise
        .is_none_or(|r| r <= (1.0 + cfg.latency_min_rel).max(excess))
}

/// The replica the episodes concern, where they concern one.
fn sole_pod<'a>(mut episodes: impl Iterator<Item = &'a Episode>) -> Option<String> {
    let first = episodes.next()?.run.pod.clone();
    episodes.all(|e| e.run.pod == first).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = SERVING_BUCKET_NS;

    fn key() -> WorkloadKey {
        WorkloadKey {
            namespace: Some("serve".into()),
            workload: Some("chat".into()),
            run_id: None,
        }
    }

    fn pooled(start: i64, end: i64) -> Symptom {
        let lost = (end - start) as f64 * 60.0;
        Symptom {
            baseline: Some(0.2),
            observed: Some(0.3),
            metric: Some("ttft_seconds".into()),
            ..Symptom::bare(
                key(),
                SymptomKind::LatencyRegression,
                start * M,
                end * M,
                lost,
            )
        }
    }

    /// The merge of `pooled` and `episodes` of one workload, default thresholds, 200
    /// minutes of data.
    fn merged(pooled: Vec<Symptom>, episodes: Vec<Episode>) -> Vec<(Symptom, Option<String>)> {
        merge(
            &key(),
            pooled,
            episodes,
            None,
            &DetectorConfig::default(),
            200 * M,
        )
    }

    fn episode(pod: &str, start: i64, end: i64) -> Episode {
        Episode {
            metric: "ttft_seconds",
            engine: "ttft_seconds_p95",
            run: ReplicaRun {
                pod: pod.into(),
                start_ns: start * M,
                end_ns: end * M,
                above: (start..end).map(|i| i * M).collect(),
                baseline: 0.2,
                observed: 0.36,
                peers_rise: Some(1.02),
            },
        }
    }

    #[test]
    fn a_replica_slow_before_the_pooled_latency_showed_it_moves_the_onset() {
        let out = merged(vec![pooled(80, 100)], vec![episode("chat-2", 64, 100)]);
        assert_eq!(out.len(), 1, "{out:?}");
        let (s, pod) = &out[0];
        assert_eq!((s.start_ns, s.end_ns), (64 * M, 100 * M));
        // The pooled 20 minutes and the replica's 16 before them.
        assert_eq!(s.lost_seconds, 36.0 * 60.0);
        assert_eq!(pod.as_deref(), Some("chat-2"));
    }

    #[test]
    fn a_replica_lost_in_a_shortfall_keeps_its_share() {
        let pts = |v: &[f64]| -> Vec<Point> {
            v.iter()
                .enumerate()
                .map(|(i, v)| Point {
                    time_ns: i as i64 * M,
                    step: None,
                    value: *v,
                })
                .collect()
        };
        let values = |p: Vec<Point>| p.iter().map(|p| p.value).collect::<Vec<f64>>();
        let sum = pts(&[12.0; 7]);
        let count = pts(&[3.0, 3.0, 3.0, 2.0, 2.0, 2.0, 3.0]);
        // A replica lost from minute 3 to 5: the two left carry its share.
        assert_eq!(
            values(share(&sum, &count, &[])),
            [4., 4., 4., 6., 6., 6., 4.]
        );
        assert_eq!(values(share(&sum, &count, &[(3 * M, 5 * M)])), [4.0; 7]);
        // A scale-up from two that waits (minutes 1 to 3) counts the two it had.
        let count = pts(&[2.0, 2.0, 2.0, 2.0, 3.0, 3.0, 3.0]);
        assert_eq!(
            values(share(&sum, &count, &[(M, 3 * M)])),
            [6., 6., 6., 6., 4., 4., 4.]
        );
    }

    #[test]
    fn one_replica_slow_through_two_pooled_regressions_is_one_slowdown() {
        let mut second = pooled(95, 110);
        second.observed = Some(0.4);
        second.metric = Some("inter_token_seconds".into());
        let out = merged(
            vec![pooled(80, 90), second],
            vec![episode("chat-2", 64, 110)],
        );
        assert_eq!(out.len(), 1, "{out:?}");
        let (s, pod) = &out[0];
        assert_eq!((s.start_ns, s.end_ns), (64 * M, 110 * M));
        // The pooled 10 + 15 minutes, the replica's 16 before and 5 between them.
        assert_eq!(s.lost_seconds, 46.0 * 60.0);
        assert_eq!(s.metric.as_deref(), Some("inter_token_seconds"));
        assert_eq!(pod.as_deref(), Some("chat-2"));
        // Led by no replica, two pooled regressions stay two.
        let out = merged(vec![pooled(80, 90), pooled(95, 110)], Vec::new());
        assert_eq!(out.len(), 2, "{out:?}");
    }

    #[test]
    fn replicas_alone_are_one_slowdown_per_time_named_by_the_one_that_rose_most() {
        let mut worse = episode("chat-1", 30, 50);
        worse.run.observed = 0.5;
        let out = merged(
            Vec::new(),
            vec![
                episode("chat-0", 20, 40),
                worse,
                episode("chat-0", 120, 140),
                // Unconfirmed by the pooled latency and shorter than twice the sustained
                // time (5 min): not a slowdown.
                episode("chat-1", 160, 166),
            ],
        );
        assert_eq!(out.len(), 2, "{out:?}");
        let (s, pod) = &out[0];
        assert_eq!((s.start_ns, s.end_ns), (20 * M, 50 * M));
        assert_eq!(s.lost_seconds, 30.0 * 60.0);
        assert_eq!((s.baseline, s.observed), (Some(0.2), Some(0.5)));
        assert_eq!(*pod, None, "two replicas: no one focus");
        let (s, pod) = &out[1];
        assert_eq!((s.start_ns, s.end_ns), (120 * M, 140 * M));
        assert_eq!(pod.as_deref(), Some("chat-0"));
        assert!(!s.ongoing);
    }

    #[test]
    fn a_replica_alone_needs_twice_the_sustained_time_in_minutes_above() {
        // Ten minutes from first to last, six of them above its peers: bridged dips are
        // not slow minutes. Two replicas' six minutes each are not one's twelve.
        let mut patchy = episode("chat-1", 40, 50);
        patchy.run.above = [40, 41, 43, 45, 47, 49].iter().map(|i| i * M).collect();
        let mut other = episode("chat-2", 44, 56);
        other.run.above = [44, 46, 48, 50, 52, 55].iter().map(|i| i * M).collect();
        assert!(merged(Vec::new(), vec![patchy.clone(), other]).is_empty());
        // Ten minutes above, with the same dips: a slowdown.
        patchy.run.end_ns = 58 * M;
        patchy
            .run
            .above
            .extend([51, 53, 55, 57].iter().map(|i| i * M));
        let out = merged(Vec::new(), vec![patchy]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!(out[0].0.lost_seconds, 600.0);
    }

    #[test]
    fn a_replica_that_rose_most_in_a_surge_of_all_names_none() {
        let mut most = episode("chat-2", 64, 100);
        most.run.peers_rise = Some(2.5); // above the replica's 1.8 over its peers
        let out = merged(vec![pooled(80, 100)], vec![most]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].0.start_ns, out[0].1.clone()), (80 * M, None));
    }

    #[test]
    fn a_replica_that_slowed_after_the_workload_did_names_none() {
        let out = merged(vec![pooled(80, 100)], vec![episode("chat-2", 90, 100)]);
        assert_eq!(out.len(), 1, "{out:?}");
        assert_eq!((out[0].0.start_ns, out[0].1.clone()), (80 * M, None));
    }

    #[test]
    fn a_pooled_regression_of_every_replica_names_none() {
        let out = merged(
            vec![pooled(80, 100)],
            vec![episode("chat-0", 82, 100), episode("chat-1", 85, 95)],
        );
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].0.start_ns, out[0].1.clone()), (80 * M, None));
        assert_eq!(out[0].0.lost_seconds, 20.0 * 60.0);
    }
}
