//! Attribution: scores each candidate cause of a symptom, finds which candidates are
//! consequences of others (a causal chain across layers), gives the verdict to the
//! earliest supported cause, builds its chain, and splits the lost time so that the
//! causes' explained seconds never exceed it. `unknown` when nothing is supported.

pub mod score;

use std::collections::HashMap;

use whyslow_schemas::{Cause, Layer};

use crate::causes::Candidate;
use crate::symptoms::{Symptom, SymptomKind};

/// The lowest score a candidate needs to be supported.
pub const SUPPORTED: f64 = 0.35;
/// How much later than its upstream cause a consequence may be seen (clock skew).
pub const CHAIN_SKEW_NS: i64 = 60_000_000_000;
/// The longest chain kept in a report.
pub const MAX_CHAIN: usize = 12;

/// An event as the chain shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct EventInfo {
    pub event_id: String,
    pub time_ns: i64,
    pub layer: String,
    pub kind: String,
    /// One line: who, and the source's message or reason.
    pub summary: String,
}

/// One link of a causal chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub time_ns: i64,
    pub layer: String,
    pub kind: String,
    pub summary: String,
}

/// A ranked cause of one symptom.
#[derive(Debug, Clone, PartialEq)]
pub struct Attributed {
    pub cause: Cause,
    pub layer: Option<Layer>,
    pub confidence: f64,
    pub explained_seconds: f64,
    pub node: Option<String>,
    pub device: Option<String>,
    pub summary: String,
    pub evidence: Vec<String>,
    pub chain: Vec<Link>,
    /// Whether a supported earlier cause explains this one (it is a link of the verdict's
    /// chain, not a competing verdict).
    pub consequence: bool,
}

/// Ranks the candidates of one symptom. `events` gives the chain's view of every event
/// id the candidates cite; `aftermath` are the symptom's own framework events (restores)
/// that end the chain. `rules_run` names what was checked, for `unknown`.
pub fn attribute(
    symptom: &Symptom,
    candidates: &[&Candidate],
    events: &HashMap<String, EventInfo>,
    aftermath: &[EventInfo],
    rules_run: usize,
) -> Vec<Attributed> {
    let onset = symptom.start_ns;
    // Keep the best-scoring candidate per (cause, node, device).
    let mut best: Vec<(&Candidate, f64)> = Vec::new();
    for c in candidates {
        let s = score::score(c, symptom.kind, onset, symptom.end_ns).total();
        match best
            .iter_mut()
            .find(|(b, _)| b.cause == c.cause && b.node == c.node && b.device == c.device)
        {
            Some(slot) if s > slot.1 => *slot = (c, s),
            Some(_) => {}
            None => best.push((c, s)),
        }
    }
    let mut supported: Vec<(&Candidate, f64)> = best
        .iter()
        .filter(|(_, s)| *s >= SUPPORTED)
        .copied()
        .collect();
    // A conclusion by elimination holds only while nothing else is supported.
    if supported.iter().any(|(c, _)| !by_elimination(c)) {
        supported.retain(|(c, _)| !by_elimination(c));
    }
    if supported.is_empty() {
        return vec![unknown(symptom, &best, rules_run)];
    }
    // A candidate is a consequence when a supported cause that leads to it came first
    // (within clock skew) at a compatible place.
    let upstream_of = |c: &Candidate| -> Option<usize> {
        supported
            .iter()
            .enumerate()
            .filter(|(_, (u, _))| {
                score::leads_to(u.cause, c.cause)
                    && u.time_ns <= c.time_ns + CHAIN_SKEW_NS
                    && (u.node.is_none()
                        || c.node.is_none()
                        || u.node == c.node
                        || score::follows_the_pod(c.cause))
            })
            .min_by_key(|(_, (u, _))| (u.time_ns, u.cause))
            .map(|(i, _)| i)
    };
    let mut roots: Vec<usize> = (0..supported.len())
        .filter(|&i| upstream_of(supported[i].0).is_none())
        .collect();
    // Roots by score, then earlier, then id: deterministic.
    roots.sort_by(|&a, &b| {
        let (ca, sa) = supported[a];
        let (cb, sb) = supported[b];
        sb.total_cmp(&sa)
            .then(ca.time_ns.cmp(&cb.time_ns))
            .then(ca.cause.cmp(&cb.cause))
    });
    // A cycle (each a consequence of another) leaves no root: take the earliest.
    let verdict = roots.first().copied().unwrap_or_else(|| {
        (0..supported.len())
            .min_by_key(|&i| (supported[i].0.time_ns, supported[i].0.cause))
            .unwrap_or(0)
    });
    let verdict_score = supported[verdict].1;

    // Everything downstream of the verdict, transitively.
    let mut in_chain = vec![false; supported.len()];
    in_chain[verdict] = true;
    loop {
        let mut grew = false;
        for i in 0..supported.len() {
            if in_chain[i] {
                continue;
            }
            let c = supported[i].0;
            let fed = (0..supported.len()).any(|u| {
                in_chain[u] && {
                    let up = supported[u].0;
                    score::leads_to(up.cause, c.cause) && up.time_ns <= c.time_ns + CHAIN_SKEW_NS
                }
            });
            if fed {
                in_chain[i] = true;
                grew = true;
            }
        }
        if !grew {
            break;
        }
    }

    let mut out: Vec<Attributed> = Vec::new();
    for (i, &(c, s)) in supported.iter().enumerate() {
        let consequence = i != verdict && (in_chain[i] || upstream_of(c).is_some());
        let confidence = if i == verdict {
            s
        } else if consequence {
            (s * 0.5).min(verdict_score - 0.01)
        } else {
            (s * 0.8).min(verdict_score - 0.01)
        };
        let chain = if i == verdict {
            let mut ids: Vec<&str> = Vec::new();
            for (j, &(cj, _)) in supported.iter().enumerate() {
                if in_chain[j] {
                    ids.extend(cj.evidence.iter().map(String::as_str));
                }
            }
            chain_of(&ids, events, aftermath)
        } else {
            chain_of(
                &c.evidence.iter().map(String::as_str).collect::<Vec<_>>(),
                events,
                &[],
            )
        };
        out.push(Attributed {
            cause: c.cause,
            layer: c.cause.layer(),
            confidence: round3(confidence.max(0.01)),
            explained_seconds: if i == verdict {
                symptom.lost_seconds
            } else {
                0.0
            },
            node: c.node.clone(),
            device: c.device.clone(),
            summary: c.summary.clone(),
            evidence: sorted_evidence(&c.evidence, events),
            chain,
            consequence,
        });
    }
    out.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then(a.consequence.cmp(&b.consequence))
            .then(a.cause.cmp(&b.cause))
            .then(a.node.cmp(&b.node))
            .then(a.device.cmp(&b.device))
    });
    out
}

/// A candidate concluded by elimination: the input pipeline named because the devices
/// idled together and no event says anything (causes.md: "duty cycle down with no infra
/// signal").
fn by_elimination(c: &Candidate) -> bool {
    c.cause == Cause::DataloaderStall && c.evidence.is_empty()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Evidence ids in time order (unknown ids last, by id).
fn sorted_evidence(ids: &[String], events: &HashMap<String, EventInfo>) -> Vec<String> {
    let mut v: Vec<(i64, &String)> = ids
        .iter()
        .map(|id| (events.get(id).map_or(i64::MAX, |e| e.time_ns), id))
        .collect();
    v.sort();
    v.dedup();
    v.into_iter().map(|(_, id)| id.clone()).collect()
}

/// The chain: the cited events and the aftermath, oldest first, without repeats of the
/// same kind and summary, at most [`MAX_CHAIN`] links (the first and the last kept).
fn chain_of(
    ids: &[&str],
    events: &HashMap<String, EventInfo>,
    aftermath: &[EventInfo],
) -> Vec<Link> {
    let mut evs: Vec<&EventInfo> = ids.iter().filter_map(|id| events.get(*id)).collect();
    evs.extend(aftermath.iter());
    evs.sort_by(|a, b| (a.time_ns, &a.event_id).cmp(&(b.time_ns, &b.event_id)));
    // One link per thing that happened: the same transition reported by several sources
    // (a Kueue Event and the Workload's condition; Evicted and Preempted) in the same second
    // for the same subject is one link, told by its canonical kind where one is present.
    fn canonical(k: &str) -> &str {
        match k {
            "preempted" | "evicted" => "evicted",
            "quota_reserved" | "admitted" => "admitted",
            other => other,
        }
    }
    let who = |s: &str| {
        s.split_once(": ")
            .map_or(String::new(), |(w, _)| w.to_string())
    };
    let mut links: Vec<Link> = Vec::new();
    for e in evs {
        let key = (
            e.time_ns / 1_000_000_000,
            who(&e.summary),
            canonical(&e.kind),
        );
        let same = links.iter().position(|l| {
            (
                l.time_ns / 1_000_000_000,
                who(&l.summary),
                canonical(&l.kind),
            ) == key
                || (l.kind == e.kind && l.summary == e.summary)
        });
        match same {
            Some(i) => {
                if links[i].kind != key.2 && e.kind == key.2 {
                    links[i] = Link {
                        time_ns: e.time_ns,
                        layer: e.layer.clone(),
                        kind: e.kind.clone(),
                        summary: e.summary.clone(),
                    };
                }
            }
            None => links.push(Link {
                time_ns: e.time_ns,
                layer: e.layer.clone(),
                kind: e.kind.clone(),
                summary: e.summary.clone(),
            }),
        }
    }
    if links.len() > MAX_CHAIN {
        let last = links.pop();
        links.truncate(MAX_CHAIN - 1);
        links.extend(last);
    }
    links
}

/// The `unknown` verdict, saying what was ruled out.
fn unknown(symptom: &Symptom, weak: &[(&Candidate, f64)], rules_run: usize) -> Attributed {
    let mut weak: Vec<String> = weak
        .iter()
        .map(|(c, s)| format!("{} ({:.2})", c.cause.id(), s))
        .collect();
    weak.sort();
    weak.dedup();
    let ruled = if weak.is_empty() {
        String::from("no rule found evidence in its scope")
    } else {
        format!("evidence too weak or too far: {}", weak.join(", "))
    };
    let what = match symptom.kind {
        SymptomKind::Pending | SymptomKind::CapacityShortfall => "the wait",
        _ => "the slowdown",
    };
    Attributed {
        cause: Cause::Unknown,
        layer: None,
        confidence: 0.5,
        explained_seconds: symptom.lost_seconds,
        node: None,
        device: None,
        summary: format!(
            "Nothing in the log explains {what}: {rules_run} cause rules checked the workload, its nodes and GPUs and the cluster from 15 minutes before the onset; {ruled}"
        ),
        evidence: Vec::new(),
        chain: Vec::new(),
        consequence: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::causes::Reach;
    use crate::symptoms::WorkloadKey;

    const S: i64 = 1_000_000_000;

    fn symptom(kind: SymptomKind) -> Symptom {
        Symptom {
            baseline: Some(2.0),
            ..Symptom::bare(WorkloadKey::default(), kind, 1000 * S, 2000 * S, 1000.0)
        }
    }

    /// The ranked causes of a symptom of `kind` with these candidates, no events.
    fn ranked(kind: SymptomKind, cands: &[&Candidate]) -> Vec<Attributed> {
        attribute(&symptom(kind), cands, &HashMap::new(), &[], 26)
    }

    fn cand(cause: Cause, t: i64, reach: Reach, node: Option<&str>, ev: &str) -> Candidate {
        Candidate {
            slowdown_id: "s".into(),
            cause,
            layer: cause.layer().unwrap(),
            reach,
            node: node.map(str::to_string),
            device: None,
            time_ns: t * S,
            evidence: vec![ev.to_string()],
            summary: cause.id().to_string(),
            strength: 1.0,
            rule: "test",
        }
    }

    fn info(id: &str, t: i64, layer: &str, kind: &str) -> (String, EventInfo) {
        (
            id.to_string(),
            EventInfo {
                event_id: id.into(),
                time_ns: t * S,
                layer: layer.into(),
                kind: kind.into(),
                summary: id.into(),
            },
        )
    }

    #[test]
    fn a_level_signal_that_did_not_change_yields_to_a_new_one() {
        // A power-cap bit as usual under load, and a thermal throttle that is new.
        let mut usual = cand(Cause::PowerThrottle, 995, Reach::Gpu, Some("n1"), "p");
        usual.strength = 0.05;
        let new = cand(Cause::DataloaderStall, 990, Reach::Workload, None, "d");
        let sym = symptom(SymptomKind::Regression);
        let ranked = attribute(&sym, &[&usual, &new], &HashMap::new(), &[], 20);
        assert_eq!(ranked[0].cause, Cause::DataloaderStall, "{ranked:?}");
        // Alone, the unchanged level explains nothing.
        let ranked = attribute(&sym, &[&usual], &HashMap::new(), &[], 20);
        assert_eq!(ranked[0].cause, Cause::Unknown, "{ranked:?}");
    }

    #[test]
    fn gpu_failure_is_the_verdict_not_the_restore() {
        let cs = [
            cand(
                Cause::CheckpointRestore,
                1500,
                Reach::Workload,
                None,
                "restore",
            ),
            cand(Cause::NodeFailure, 990, Reach::Node, Some("n1"), "notready"),
            cand(Cause::GpuFailure, 985, Reach::Gpu, Some("n1"), "xid79"),
            cand(Cause::CrashLoop, 1010, Reach::Workload, None, "backoff"),
        ];
        let refs: Vec<&Candidate> = cs.iter().collect();
        let events: HashMap<_, _> = [
            info("xid79", 985, "infrastructure", "xid"),
            info("notready", 990, "infrastructure", "node_not_ready"),
            info("backoff", 1010, "orchestrator", "back_off"),
            info("restore", 1500, "framework", "checkpoint_restored"),
        ]
        .into_iter()
        .collect();
        let out = attribute(&symptom(SymptomKind::Stall), &refs, &events, &[], 26);
        assert_eq!(out[0].cause, Cause::GpuFailure);
        assert_eq!(out[0].explained_seconds, 1000.0);
        let kinds: Vec<&str> = out[0].chain.iter().map(|l| l.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["xid", "node_not_ready", "back_off", "checkpoint_restored"]
        );
        assert!(
            out[1..]
                .iter()
                .all(|a| a.consequence && a.confidence < out[0].confidence)
        );
        let explained: f64 = out.iter().map(|a| a.explained_seconds).sum();
        assert!(explained <= 1000.0);
    }

    #[test]
    fn the_replacement_pods_image_pull_follows_the_failure_that_moved_it() {
        // A node fails; the pod it held is replaced on another node, which pulls the
        // image for minutes: the pull is a link of the failure's chain.
        let cs = [
            cand(
                Cause::NodeFailure,
                1000,
                Reach::Node,
                Some("n1"),
                "notready",
            ),
            cand(
                Cause::ImagePull,
                1400,
                Reach::Workload,
                Some("n2"),
                "pulled",
            ),
        ];
        let refs: Vec<&Candidate> = cs.iter().collect();
        let out = ranked(SymptomKind::Stall, &refs);
        assert_eq!(out[0].cause, Cause::NodeFailure, "{out:?}");
        assert!(out[1].consequence);
        // A slow pull with no failure before it is the verdict.
        let alone = [cand(
            Cause::ImagePull,
            1010,
            Reach::Workload,
            Some("n2"),
            "pulled",
        )];
        let refs: Vec<&Candidate> = alone.iter().collect();
        assert_eq!(ranked(SymptomKind::Stall, &refs)[0].cause, Cause::ImagePull);
    }

    #[test]
    fn preemption_beats_the_quota_wait_it_caused() {
        let cs = [
            cand(Cause::QuotaWait, 1010, Reach::Workload, None, "pending"),
            cand(Cause::Preemption, 995, Reach::Workload, None, "evicted"),
        ];
        let refs: Vec<&Candidate> = cs.iter().collect();
        let out = ranked(SymptomKind::Stall, &refs);
        assert_eq!(out[0].cause, Cause::Preemption);
        assert!(out[0].confidence > 0.9);
        assert!(out[1].consequence);
    }

    #[test]
    fn nothing_supported_is_unknown_with_what_was_ruled_out() {
        let cs = [cand(
            Cause::NoisyNeighbor,
            100,
            Reach::Cluster,
            Some("n9"),
            "far",
        )];
        let refs: Vec<&Candidate> = cs.iter().collect();
        let out = ranked(SymptomKind::Stall, &refs);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].cause, Cause::Unknown);
        assert!(out[0].summary.contains("orchestrator.noisy_neighbor"));
        assert_eq!(out[0].explained_seconds, 1000.0);
    }

    #[test]
    fn straggler_rank_yields_to_a_throttle_on_its_gpu() {
        let cs = [
            cand(
                Cause::StragglerRank,
                1000,
                Reach::Workload,
                Some("n2"),
                "r3",
            ),
            cand(Cause::ThermalThrottle, 980, Reach::Gpu, Some("n2"), "thr"),
        ];
        let refs: Vec<&Candidate> = cs.iter().collect();
        let out = ranked(SymptomKind::Straggler, &refs);
        assert_eq!(out[0].cause, Cause::ThermalThrottle);
        let alone = [cand(
            Cause::StragglerRank,
            1000,
            Reach::Workload,
            Some("n2"),
            "r3",
        )];
        let refs: Vec<&Candidate> = alone.iter().collect();
        let out = ranked(SymptomKind::Straggler, &refs);
        assert_eq!(out[0].cause, Cause::StragglerRank);
    }

    #[test]
    fn idle_devices_name_the_dataloader_only_when_nothing_else_is_supported() {
        let mut idle = cand(Cause::DataloaderStall, 1000, Reach::Workload, None, "");
        idle.evidence.clear();
        idle.strength = 0.5;
        let refs = [&idle];
        let out = ranked(SymptomKind::Regression, &refs);
        assert_eq!(out[0].cause, Cause::DataloaderStall);
        let mut nic = cand(
            Cause::NetworkDegraded,
            990,
            Reach::WorkloadNodes,
            Some("n1"),
            "flap",
        );
        nic.strength = 0.6;
        let refs = [&idle, &nic];
        let out = ranked(SymptomKind::Regression, &refs);
        assert_eq!(out[0].cause, Cause::NetworkDegraded);
        assert!(
            out.iter().all(|a| a.cause != Cause::DataloaderStall),
            "{out:?}"
        );
    }
}
