//! Pending detection: the workload should run but does not — from its creation (its first
//! pending/queued sign) or an eviction until its pods run again. Lost time is that wait
//! beyond the workload's normal start time (its shortest other wait, else zero). With no
//! other start to compare it with, a start is taken as normal up to
//! `DetectorConfig::pending_unknown_normal_seconds` (pulling a large image, a queue's
//! turn): a Job that runs two minutes after its creation has not slowed down.

use super::{DetectorConfig, Symptom, SymptomKind, WorkloadKey, secs};

/// One lifecycle event of a workload (orchestrator kinds of `contracts/tables.md`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lifecycle {
    pub time_ns: i64,
    pub kind: String,
    /// The pod the mark is about, where it names one.
    pub pod: Option<String>,
}

fn waits(kind: &str) -> bool {
    matches!(
        kind,
        "pending"
            | "failed_scheduling"
            | "evicted"
            | "preempted"
            | "suspended"
            | "requeued"
            | "created"
    )
}

/// Marks that one of a workload's pods was lost (the taint manager evicting it from a
/// node gone NotReady; a node that comes back within the toleration keeps its pods): a
/// serving workload waits for its replacement from then. (A job's lost pod stops its
/// run: a stall or restart tells that.)
pub fn lost(kind: &str) -> bool {
    kind == "taint_manager_eviction"
}

/// Marks only a serving workload's replicas are read by: losses, a pod's node gone
/// NotReady, readiness probes failing (`not_ready`) and a pod's Ready condition.
pub fn serving_only(kind: &str) -> bool {
    lost(kind) || matches!(kind, "node_not_ready" | "not_ready" | "pod_ready")
}

/// Marks that a workload runs: its containers started (where the kubelet's events are
/// there; image pulls live between Scheduled and them), else its pods placed.
fn runs(kind: &str, containers: bool) -> bool {
    if containers {
        matches!(
            kind,
            "container_started" | "run_started" | "pod_running" | "running"
        )
    } else {
        matches!(
            kind,
            "scheduled" | "pod_placed" | "started" | "run_started" | "pod_running" | "running"
        )
    }
}

fn ends(kind: &str) -> bool {
    matches!(
        kind,
        "finished"
            | "completed"
            | "run_finished"
            | "deleted"
            | "saw_completed_job"
            | "job_completed"
            | "job_cancelled"
    )
}

/// The wait of one workload's start, and the image pulls it counts.
#[derive(Default)]
struct Pulls {
    /// Pulls begun and not yet done (pulled or failed).
    open: u32,
}

impl Pulls {
    fn see(&mut self, kind: &str) {
        match kind {
            "image_pulling" => self.open += 1,
            "image_pulled" | "image_pull_failed" => self.open = self.open.saturating_sub(1),
            _ => {}
        }
    }
}

/// How soon after a start the kubelet backing off a failed container says the start did
/// not hold (a container that crashes as it starts: a bad image, a bad config key).
const START_HOLD_NS: i64 = 10 * 60 * 1_000_000_000;

/// The waits of one workload: `(start, end, ongoing)` intervals in time order. A wait
/// ends when every pod of the start runs: container starts that follow each other
/// closely, or that follow while an image pull begun for the start is still under way;
/// a start that did not hold (its container failed and is backed off soon after) ends
/// nothing: the wait goes on until a start holds.
pub fn waits_of(events: &[Lifecycle], horizon_ns: i64) -> Vec<(i64, i64, bool)> {
    let containers = events.iter().any(|e| e.kind == "container_started");
    let mut out: Vec<(i64, i64, bool)> = Vec::new();
    let mut since: Option<i64> = None;
    let mut pulls = Pulls::default();
    // Pods of the last closed start still pulling their image when it closed.
    let mut owed = 0u32;
    for e in events {
        let k = e.kind.as_str();
        pulls.see(k);
        if waits(k) || lost(k) {
            // An eviction or a loss while running, or a first sign of waiting, opens a wait.
            if since.is_none() {
                since = Some(e.time_ns);
                pulls = Pulls::default();
            }
        } else if k == "back_off" {
            if since.is_none()
                && let Some(&(start, end, false)) = out.last()
                && e.time_ns - end <= START_HOLD_NS
            {
                out.pop();
                since = Some(start);
                pulls = Pulls::default();
                owed = 0;
            }
        } else if runs(k, containers) {
            if let Some(s) = since.take() {
                out.push((s, e.time_ns, false));
                owed = pulls.open;
            } else if let Some(last) = out.last_mut()
                && (owed > 0 || e.time_ns - last.1 <= 60_000_000_000)
            {
                // Later pods of the same start: the wait ends when all of them run.
                last.1 = last.1.max(e.time_ns);
                owed = owed.saturating_sub(1);
            }
        } else if ends(k) {
            since = None;
            pulls = Pulls::default();
            owed = 0;
        }
    }
    if let Some(s) = since {
        out.push((s, horizon_ns.max(s), true));
    }
    merge(out, pod_waits(events, horizon_ns))
}

/// Kinds that say a pod waits to be placed or admitted, from its own marks.
fn pod_waits_kind(kind: &str) -> bool {
    waits(kind) || matches!(kind, "pod_unschedulable" | "workload_created")
}

/// Each new pod's own wait: from its first wait mark (created, gated, pending, queued)
/// to its first run, where nothing ran in it before (a pod evicted after running is
/// replaced by another pod; it never runs again). A replica of a Deployment that stays
/// gated while its siblings run waits, though the workload as a whole runs.
fn pod_waits(events: &[Lifecycle], horizon_ns: i64) -> Vec<(i64, i64, bool)> {
    let mut pods: std::collections::BTreeMap<&str, Vec<&Lifecycle>> = Default::default();
    for e in events {
        if let Some(p) = e.pod.as_deref() {
            pods.entry(p).or_default().push(e);
        }
    }
    // The workload's own ends (a Job completed): a pod never seen running before one ran
    // unseen, at a time the data does not tell.
    let ended: Vec<i64> = events
        .iter()
        .filter(|e| e.pod.is_none() && ends(&e.kind))
        .map(|e| e.time_ns)
        .collect();
    let mut out = Vec::new();
    for marks in pods.values() {
        let containers = marks.iter().any(|e| e.kind == "container_started");
        let Some(first) = marks
            .iter()
            .position(|e| pod_waits_kind(&e.kind) || runs(&e.kind, containers))
        else {
            continue;
        };
        if !pod_waits_kind(&marks[first].kind) {
            continue;
        }
        let start = marks[first].time_ns;
        let until = marks[first..]
            .iter()
            .find(|e| runs(&e.kind, containers) || ends(&e.kind));
        match until {
            Some(e) if ends(&e.kind) => {}
            Some(e) => out.push((start, e.time_ns, false)),
            None if ended.iter().any(|&t| t > start) => {}
            None => out.push((start, horizon_ns.max(start), true)),
        }
    }
    out
}

/// The union of two lists of waits: overlapping ones become one, ongoing if either is.
fn merge(mut a: Vec<(i64, i64, bool)>, b: Vec<(i64, i64, bool)>) -> Vec<(i64, i64, bool)> {
    a.extend(b);
    a.sort_by_key(|w| (w.0, w.1));
    let mut out: Vec<(i64, i64, bool)> = Vec::with_capacity(a.len());
    for w in a {
        match out.last_mut() {
            Some(last) if w.0 <= last.1 => {
                last.1 = last.1.max(w.1);
                last.2 |= w.2;
            }
            _ => out.push(w),
        }
    }
    out
}

/// Pending symptoms of one workload.
pub fn detect(
    key: &WorkloadKey,
    events: &[Lifecycle],
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    let ws: Vec<Wait> = waits_of(events, horizon_ns)
        .into_iter()
        .map(|(start_ns, end_ns, ongoing)| Wait {
            start_ns,
            end_ns,
            ongoing,
            own_start: None,
            to_ready: false,
        })
        .collect();
    symptoms_of(key, &ws, SymptomKind::Pending, cfg)
}

/// Marks that a running replica is gone from then: its node NotReady, the pod evicted or
/// preempted (Kueue's pod integration, the kubelet, the scheduler).
fn replica_gone(kind: &str) -> bool {
    matches!(kind, "node_not_ready" | "evicted" | "preempted")
}

/// How far before a replacement's creation the loss of the replica it replaces is looked
/// for (the taint manager's default toleration is 5 minutes).
const LOSS_LOOKBACK_NS: i64 = 10 * 60 * 1_000_000_000;
/// How long after its container started a replica's readiness probe failures are read.
const READINESS_MAX_NS: i64 = 30 * 60 * 1_000_000_000;

/// Capacity shortfalls of one serving workload: its waits for a replica, each from the
/// request (a scale-up's new pod) or the loss of the replica it replaces (that pod's node
/// gone NotReady, the pod evicted or preempted), until the new replicas are ready (their
/// Ready condition, else their readiness probes stop failing), beyond the workload's
/// normal replica start: its shortest other such wait, else the replica's own time from
/// its container's start (its placement, where only an inventory tells it) to ready
/// (loading the model).
pub fn detect_shortfalls(
    key: &WorkloadKey,
    events: &[Lifecycle],
    cfg: &DetectorConfig,
    horizon_ns: i64,
) -> Vec<Symptom> {
    let ws: Vec<Wait> = waits_of(events, horizon_ns)
        .into_iter()
        .map(|(start_ns, end_ns, ongoing)| {
            // Pods that started inside the wait, and when each stopped failing readiness.
            let mut end = end_ns;
            let mut own_start = None;
            let mut to_ready = false;
            let in_wait =
                |e: &&Lifecycle| e.pod.is_some() && e.time_ns >= start_ns && e.time_ns <= end_ns;
            let mut started: Vec<&Lifecycle> = events
                .iter()
                .filter(in_wait)
                .filter(|e| e.kind == "container_started")
                .collect();
            if started.is_empty() {
                // Where the kubelet's events are not there (an inventory alone), a pod
                // starts where it is placed, and is ready when its Ready condition says:
                // each wait is measured to its replicas' readiness, so they compare.
                started = events
                    .iter()
                    .filter(in_wait)
                    .filter(|e| matches!(e.kind.as_str(), "pod_placed" | "scheduled"))
                    .collect();
            }
            for st in started {
                let after_start = |e: &&Lifecycle| {
                    e.pod == st.pod
                        && e.time_ns >= st.time_ns
                        && e.time_ns <= st.time_ns + READINESS_MAX_NS
                };
                // Its Ready condition where an inventory tells it, else its last failed
                // readiness probe.
                let ready = events
                    .iter()
                    .filter(after_start)
                    .find(|e| e.kind == "pod_ready")
                    .or_else(|| {
                        events
                            .iter()
                            .filter(after_start)
                            .filter(|e| e.kind == "not_ready")
                            .max_by_key(|e| e.time_ns)
                    });
                // (With nothing telling its readiness, its own start time is unknown.)
                if let Some(r) = ready {
                    to_ready = true;
                    own_start = Some(secs(r.time_ns - st.time_ns));
                }
                end = end.max(ready.map_or(st.time_ns, |e| e.time_ns));
            }
            let loss = events
                .iter()
                .filter(|e| {
                    replica_gone(&e.kind)
                        && e.pod.is_some()
                        && e.time_ns <= start_ns
                        && start_ns - e.time_ns <= LOSS_LOOKBACK_NS
                })
                .map(|e| e.time_ns)
                .max();
            Wait {
                start_ns: loss.unwrap_or(start_ns),
                end_ns: if ongoing { end_ns } else { end },
                ongoing,
                own_start,
                to_ready,
            }
        })
        .collect();
    symptoms_of(key, &ws, SymptomKind::CapacityShortfall, cfg)
}

/// One wait, and the start time of the replica it ended with where known.
struct Wait {
    start_ns: i64,
    end_ns: i64,
    ongoing: bool,
    own_start: Option<f64>,
    /// Whether it was measured to its replica's readiness (its Ready condition, its last
    /// failed readiness probe), not to its container's start: waits compare like with
    /// like.
    to_ready: bool,
}

/// The symptoms of a workload's waits: each beyond the normal start (the shortest other
/// complete wait measured the same way, else the wait's own replica start, else nothing).
fn symptoms_of(
    key: &WorkloadKey,
    ws: &[Wait],
    kind: SymptomKind,
    cfg: &DetectorConfig,
) -> Vec<Symptom> {
    let mut out = Vec::new();
    for (i, w) in ws.iter().enumerate() {
        let normal = ws
            .iter()
            .enumerate()
            .filter(|(j, o)| *j != i && !o.ongoing && o.to_ready == w.to_ready)
            .map(|(_, o)| secs(o.end_ns - o.start_ns))
            .fold(f64::INFINITY, f64::min);
        let (normal, known) = match (normal.is_finite(), w.own_start) {
            (true, _) => (normal, true),
            (false, Some(own)) => (own, true),
            (false, None) => (0.0, false),
        };
        let lost = secs(w.end_ns - w.start_ns) - normal;
        if lost < cfg.pending_min_seconds || (!known && lost < cfg.pending_unknown_normal_seconds) {
            continue;
        }
        out.push(Symptom {
            key: key.clone(),
            kind,
            start_ns: w.start_ns,
            end_ns: w.end_ns,
            ongoing: w.ongoing,
            lost_seconds: lost,
            baseline: Some(normal),
            observed: Some(secs(w.end_ns - w.start_ns)),
            metric: None,
            rank: None,
            plot: Vec::new(),
            restored: false,
            gpu: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn ev(t: i64, k: &str) -> Lifecycle {
        Lifecycle {
            time_ns: t * S,
            kind: k.to_string(),
            pod: None,
        }
    }

    fn pod_ev(t: i64, k: &str, pod: &str) -> Lifecycle {
        Lifecycle {
            pod: Some(pod.to_string()),
            ..ev(t, k)
        }
    }

    #[test]
    fn a_replica_gated_while_its_siblings_run_waits() {
        // A Deployment scales 1 -> 3: two new replicas start in seconds, the third stays
        // gated for quota; the old replica runs throughout.
        let events = vec![
            pod_ev(0, "scheduled", "old"),
            ev(5000, "created"),
            pod_ev(5000, "workload_created", "a"),
            pod_ev(5000, "workload_created", "b"),
            pod_ev(5000, "workload_created", "c"),
            pod_ev(5000, "pod_unschedulable", "c"),
            pod_ev(5005, "started", "a"),
            pod_ev(5006, "started", "b"),
            pod_ev(5007, "pending", "c"),
            pod_ev(5010, "container_started", "a"),
            pod_ev(5011, "container_started", "b"),
        ];
        let ws = waits_of(&events, 9000 * S);
        assert_eq!(ws, vec![(5000 * S, 9000 * S, true)]);
        let found = detect(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            9000 * S,
        );
        assert_eq!(found.len(), 1);
        assert!((found[0].lost_seconds - 4000.0).abs() < 1e-9);
        // Once it runs, the wait ends.
        let mut placed = events.clone();
        placed.push(pod_ev(6000, "container_started", "c"));
        assert_eq!(
            waits_of(&placed, 9000 * S),
            vec![(5000 * S, 6000 * S, false)]
        );
        // Scaled back down before it ran: the gated replica was deleted, nobody waits.
        let mut deleted = events.clone();
        deleted.push(pod_ev(6000, "deleted", "c"));
        assert_eq!(
            waits_of(&deleted, 9000 * S),
            vec![(5000 * S, 5011 * S, false)]
        );
    }

    #[test]
    fn eviction_until_pods_run_again_is_pending() {
        let events = vec![
            ev(0, "pending"),
            ev(5, "admitted"),
            ev(6, "scheduled"),
            ev(7, "scheduled"),
            ev(100, "evicted"),
            ev(101, "killing"),
            ev(600, "admitted"),
            ev(610, "scheduled"),
            ev(640, "scheduled"),
        ];
        let ws = waits_of(&events, 1000 * S);
        assert_eq!(ws, vec![(0, 7 * S, false), (100 * S, 640 * S, false)]);
        let found = detect(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            1000 * S,
        );
        assert_eq!(found.len(), 1);
        assert!((found[0].lost_seconds - (540.0 - 7.0)).abs() < 1e-9);
    }

    #[test]
    fn the_wait_ends_when_containers_run_not_at_scheduled() {
        // Admitted and scheduled at once, then an 11-minute image pull.
        let events = vec![
            ev(0, "created"),
            ev(2, "admitted"),
            ev(3, "scheduled"),
            ev(4, "image_pulling"),
            ev(679, "image_pulled"),
            ev(680, "container_started"),
        ];
        assert_eq!(waits_of(&events, 900 * S), vec![(0, 680 * S, false)]);
        // One pod pulls slowly while its sibling starts at once: all of them must run.
        let events = vec![
            ev(0, "created"),
            ev(3, "scheduled"),
            ev(3, "scheduled"),
            ev(4, "image_pulling"),
            ev(4, "image_pulling"),
            ev(9, "image_pulled"),
            ev(10, "container_started"),
            ev(399, "image_pulled"),
            ev(400, "container_started"),
            // A restart much later is not part of the start.
            ev(800, "container_started"),
        ];
        assert_eq!(waits_of(&events, 900 * S), vec![(0, 400 * S, false)]);
    }

    #[test]
    fn a_first_start_is_normal_up_to_minutes_unless_another_start_says_otherwise() {
        let start = |pulled: i64| {
            vec![
                ev(0, "created"),
                ev(1, "scheduled"),
                ev(2, "image_pulling"),
                ev(pulled, "image_pulled"),
                ev(pulled + 1, "container_started"),
            ]
        };
        let cfg = DetectorConfig::default();
        let found = |events: &[Lifecycle]| detect(&WorkloadKey::default(), events, &cfg, 3600 * S);
        // Pulling a large image for two minutes: nothing to compare with, a normal start.
        assert!(found(&start(120)).is_empty());
        // Twenty minutes is not: all of it is lost (no normal start is known).
        let slow = found(&start(1200));
        assert_eq!(slow.len(), 1);
        assert!((slow[0].lost_seconds - 1201.0).abs() < 1e-9);
        // The same two minutes after a start of seconds: beyond it.
        let mut again: Vec<Lifecycle> = start(3);
        again.extend(start(120).into_iter().map(|mut e| {
            e.time_ns += 1800 * S;
            e
        }));
        let twice = found(&again);
        assert_eq!(twice.len(), 1);
        assert!((twice[0].lost_seconds - (121.0 - 4.0)).abs() < 1e-9);
    }

    #[test]
    fn a_start_that_crashes_and_backs_off_is_no_start() {
        // A Job's container fails at once, three times, then a start holds.
        let events = vec![
            ev(0, "created"),
            ev(1, "scheduled"),
            ev(80, "container_started"),
            ev(100, "back_off"),
            ev(110, "container_started"),
            ev(130, "back_off"),
            ev(700, "container_started"),
        ];
        assert_eq!(waits_of(&events, 3600 * S), vec![(0, 700 * S, false)]);
        // A back-off long after the start (a crash hours into the run) reopens nothing:
        // the run's stall tells it.
        let events = vec![
            ev(0, "created"),
            ev(80, "container_started"),
            ev(5000, "back_off"),
            ev(5020, "container_started"),
        ];
        assert_eq!(waits_of(&events, 9000 * S), vec![(0, 80 * S, false)]);
    }

    #[test]
    fn never_admitted_is_ongoing_and_a_quick_start_is_nothing() {
        let events = vec![ev(0, "pending"), ev(30, "pending")];
        let found = detect(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            900 * S,
        );
        assert_eq!(found.len(), 1);
        assert!(found[0].ongoing);
        let quick = vec![ev(0, "pending"), ev(3, "admitted"), ev(4, "scheduled")];
        assert!(
            detect(
                &WorkloadKey::default(),
                &quick,
                &DetectorConfig::default(),
                900 * S
            )
            .is_empty()
        );
    }

    #[test]
    fn a_lost_replica_is_waited_for_from_its_loss() {
        // Replica b's node went NotReady; the taint manager evicts b at 1000 s, the
        // ReplicaSet creates c, which runs at 1500 s. An earlier replica started in 30 s.
        let events = vec![
            pod_ev(0, "created", "a"),
            pod_ev(30, "container_started", "a"),
            pod_ev(1000, "taint_manager_eviction", "b"),
            pod_ev(1001, "created", "c"),
            pod_ev(1010, "scheduled", "c"),
            pod_ev(1500, "container_started", "c"),
        ];
        assert!(lost("taint_manager_eviction") && !lost("killing"));
        assert_eq!(
            waits_of(&events, 2000 * S),
            vec![(0, 30 * S, false), (1000 * S, 1500 * S, false)]
        );
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            2000 * S,
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].kind, SymptomKind::CapacityShortfall);
        assert!((found[0].lost_seconds - 470.0).abs() < 1e-9);
    }

    #[test]
    fn a_preempted_replica_is_short_from_its_preemption() {
        // Kueue preempts b's pod Workload at 600 s; b is gone at 630 s and its replacement
        // c, created at 631 s, waits for quota until 1500 s and loads until 1580 s: short
        // from the preemption, less c's own 80 s.
        let events = vec![
            pod_ev(600, "preempted", "b"),
            pod_ev(600, "evicted", "b"),
            pod_ev(630, "finished", "b"),
            pod_ev(631, "workload_created", "c"),
            pod_ev(632, "pending", "c"),
            pod_ev(1495, "admitted", "c"),
            pod_ev(1500, "container_started", "c"),
            pod_ev(1580, "not_ready", "c"),
        ];
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            2000 * S,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (600 * S, 1580 * S));
        assert!((found[0].lost_seconds - 900.0).abs() < 1e-9);
    }

    #[test]
    fn a_replica_is_short_from_its_node_failing_until_it_serves() {
        // The replicas started before the data. b's node goes NotReady at 700 s, the taint
        // manager evicts b at 1000 s, c starts at 1010 s and its readiness probe fails
        // until 1100 s (the model loads): short from 700 s to 1100 s, less c's own 90 s.
        let events = vec![
            pod_ev(700, "node_not_ready", "b"),
            pod_ev(1000, "taint_manager_eviction", "b"),
            pod_ev(1001, "created", "c"),
            pod_ev(1005, "scheduled", "c"),
            pod_ev(1010, "container_started", "c"),
            pod_ev(1030, "not_ready", "c"),
            pod_ev(1100, "not_ready", "c"),
        ];
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            2000 * S,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        let f = &found[0];
        assert_eq!((f.start_ns, f.end_ns), (700 * S, 1100 * S));
        assert_eq!(f.baseline, Some(90.0));
        assert!((f.lost_seconds - 310.0).abs() < 1e-9);
        // An inventory's Ready condition tells it exactly: ready at 1115 s (the probe's
        // next success after its last failure), whatever the probes said.
        let mut told = events.clone();
        told.push(pod_ev(1115, "pod_ready", "c"));
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &told,
            &DetectorConfig::default(),
            2000 * S,
        );
        assert_eq!((found[0].start_ns, found[0].end_ns), (700 * S, 1115 * S));
        assert_eq!(found[0].baseline, Some(105.0));
        // A node that comes back keeps its pod: no replacement, no shortfall.
        let back = vec![
            pod_ev(700, "node_not_ready", "b"),
            pod_ev(760, "node_ready", "b"),
        ];
        assert!(
            detect_shortfalls(
                &WorkloadKey::default(),
                &back,
                &DetectorConfig::default(),
                2000 * S
            )
            .is_empty()
        );
    }

    #[test]
    fn replicas_known_from_an_inventory_are_waited_for_until_ready() {
        // A replica told by an inventory alone (its Kueue Workload, placed, then Ready a
        // minute later), then a scale-up whose replica waits for quota and loads for
        // three minutes: its wait (212 s) compares with the first's to readiness (63 s),
        // not to placement (2 s).
        let events = vec![
            pod_ev(0, "workload_created", "a"),
            pod_ev(2, "pod_placed", "a"),
            pod_ev(63, "pod_ready", "a"),
            pod_ev(1000, "workload_created", "c"),
            pod_ev(1002, "pending", "c"),
            pod_ev(1034, "admitted", "c"),
            pod_ev(1035, "scheduled", "c"),
            pod_ev(1037, "container_started", "c"),
            pod_ev(1212, "not_ready", "c"),
        ];
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            2000 * S,
        );
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].start_ns, found[0].end_ns), (1000 * S, 1212 * S));
        assert_eq!(found[0].baseline, Some(63.0));
        assert!((found[0].lost_seconds - 149.0).abs() < 1e-9);
    }

    #[test]
    fn a_wait_known_only_to_its_containers_start_is_no_normal_for_one_to_readiness() {
        // Three scale-ups whose replicas were Ready 69 s after their request, and a
        // drained replica's replacement whose readiness nothing told (3 s to its
        // container's start): the 69 s starts are each other's normal, not the 3 s.
        let mut events = Vec::new();
        for (t, p) in [(0, "a"), (1000, "b"), (2000, "c")] {
            events.push(pod_ev(t, "created", p));
            events.push(pod_ev(t, "scheduled", p));
            events.push(pod_ev(t + 3, "container_started", p));
            events.push(pod_ev(t + 69, "pod_ready", p));
        }
        events.push(pod_ev(3000, "created", "d"));
        events.push(pod_ev(3001, "scheduled", "d"));
        events.push(pod_ev(3003, "container_started", "d"));
        events.sort_by_key(|e| e.time_ns);
        let found = detect_shortfalls(
            &WorkloadKey::default(),
            &events,
            &DetectorConfig::default(),
            4000 * S,
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_pod_never_seen_running_of_a_job_that_completed_did_not_wait_to_the_end() {
        // The job controller created the pod and later said the Job completed; nothing
        // told when the pod ran.
        let events = vec![pod_ev(0, "created", "p"), ev(9000, "completed")];
        assert!(waits_of(&events, 12_000 * S).is_empty());
        // Without the completion it waits still.
        assert_eq!(
            waits_of(&events[..1], 12_000 * S),
            vec![(0, 12_000 * S, true)]
        );
    }
}
