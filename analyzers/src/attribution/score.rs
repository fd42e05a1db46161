//! Scoring one candidate cause against one symptom: temporal precedence and proximity,
//! topological match, the cause's specificity, how well it fits the kind of symptom, and
//! the strength of the evidence's change against its own level before the onset.

use whyslow_schemas::Cause;

use crate::causes::{Candidate, Reach};
use crate::symptoms::SymptomKind;

/// Events this long after the onset still count as "at the onset" (a Kueue eviction is
/// often logged seconds after the last step it stopped).
pub const GRACE_AFTER_ONSET_S: f64 = 120.0;
/// The scale of the decay of evidence before the onset.
pub const BEFORE_TAU_S: f64 = 900.0;

/// The parts of a score, each in 0..=1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Score {
    pub temporal: f64,
    pub topology: f64,
    pub specificity: f64,
    pub fit: f64,
    /// How abnormal the evidence is against its level before the onset (1 for discrete
    /// evidence): a level signal that did not change explains nothing.
    pub strength: f64,
}

impl Score {
    /// The combined confidence in 0..1.
    pub fn total(&self) -> f64 {
        (self.fit
            * self.strength
            * (0.35 * self.temporal + 0.30 * self.topology + 0.35 * self.specificity))
            .clamp(0.0, 0.99)
    }
}

/// Temporal precedence and proximity: evidence shortly before (or at) the onset scores
/// highest, older evidence decays, evidence well after the onset counts half at most.
pub fn temporal(evidence_ns: i64, onset_ns: i64, end_ns: i64) -> f64 {
    temporal_with_grace(evidence_ns, onset_ns, end_ns, GRACE_AFTER_ONSET_S)
}

/// [`temporal`] with the grace after the onset given: a pace regression found in
/// buckets knows its onset only to a bucket (then [`PACE_GRACE_S`]).
pub fn temporal_with_grace(evidence_ns: i64, onset_ns: i64, end_ns: i64, grace_s: f64) -> f64 {
    let dt = (evidence_ns - onset_ns) as f64 / 1e9;
    if dt <= grace_s {
        (-(-dt).max(0.0) / BEFORE_TAU_S).exp()
    } else {
        let duration = (end_ns - onset_ns) as f64 / 1e9;
        let tau = (0.25 * duration).max(300.0);
        0.5 * (-(dt - grace_s) / tau).exp()
    }
}

/// The grace after the onset of pace symptoms (regressions, throughput drops).
pub const PACE_GRACE_S: f64 = 600.0;

/// Topological match: the workload itself or its GPU, its node, its other nodes, the
/// cluster.
pub fn topology(reach: Reach) -> f64 {
    match reach {
        Reach::Workload | Reach::Gpu => 1.0,
        Reach::Node => 0.85,
        Reach::WorkloadNodes => 0.6,
        Reach::Cluster => 0.3,
    }
}

/// How specific the cause's evidence is: an Xid 79 or a named preemptor says more than a
/// co-located pod.
pub fn specificity(cause: Cause) -> f64 {
    use Cause::*;
    match cause {
        GpuFailure | Preemption => 1.0,
        GpuMemoryError | HostMaintenance | OomKilled => 0.95,
        NvlinkError | ThermalThrottle | NodeFailure => 0.9,
        PowerThrottle | Eviction | ImagePull | SchedulingFailure => 0.85,
        NetworkDegraded | StorageSlow | HostResourcePressure | Recompilation | DataloaderStall => {
            0.8
        }
        QuotaWait | CollectiveTimeout | NoisyNeighbor | KvCachePressure => 0.75,
        RequestSurge => 0.7,
        CrashLoop | ScaleChange | CheckpointSave | CheckpointRestore | ConfigChange => 0.7,
        StragglerRank => 0.6,
        Unknown => 0.0,
    }
}

/// How plausibly the cause produces this kind of symptom: 1, 0.8 or 0.4.
pub fn fit(cause: Cause, kind: SymptomKind) -> f64 {
    use Cause::*;
    use SymptomKind::*;
    let strong: &[Cause] = match kind {
        Stall | Restart => &[
            GpuFailure,
            GpuMemoryError,
            NodeFailure,
            HostMaintenance,
            StorageSlow,
            HostResourcePressure,
            Preemption,
            QuotaWait,
            SchedulingFailure,
            Eviction,
            OomKilled,
            CrashLoop,
            ImagePull,
            CheckpointRestore,
            CollectiveTimeout,
            NvlinkError,
            NetworkDegraded,
        ],
        Regression | ThroughputDrop => &[
            ThermalThrottle,
            PowerThrottle,
            NetworkDegraded,
            NvlinkError,
            NoisyNeighbor,
            CheckpointSave,
            Recompilation,
            DataloaderStall,
            StragglerRank,
            ConfigChange,
            ScaleChange,
            StorageSlow,
            HostResourcePressure,
        ],
        Straggler => &[ThermalThrottle, PowerThrottle, NoisyNeighbor, StragglerRank],
        // Waiting to run: admission, placement, the image, an eviction, or containers that
        // fail as they start.
        Pending => &[
            QuotaWait,
            Preemption,
            SchedulingFailure,
            ImagePull,
            Eviction,
            CrashLoop,
            OomKilled,
        ],
        // A serving workload's latency: its load, its engine's memory, its GPUs' clocks,
        // what shares its nodes, fewer replicas for the same traffic.
        LatencyRegression => &[
            RequestSurge,
            KvCachePressure,
            ThermalThrottle,
            PowerThrottle,
            NoisyNeighbor,
            ScaleChange,
            ConfigChange,
            HostResourcePressure,
        ],
        // The missing replica's: its admission, placement, start, or the loss of the
        // node or GPU it ran on.
        CapacityShortfall => &[
            QuotaWait,
            Preemption,
            SchedulingFailure,
            ImagePull,
            Eviction,
            NodeFailure,
            GpuFailure,
            HostMaintenance,
            CrashLoop,
            OomKilled,
        ],
    };
    let medium: &[Cause] = match kind {
        // (A run restarted with another configuration or scale loses the time between.)
        Stall | Restart => &[
            CheckpointSave,
            DataloaderStall,
            Recompilation,
            ScaleChange,
            ConfigChange,
        ],
        Regression | ThroughputDrop => &[GpuMemoryError],
        Straggler => &[
            GpuMemoryError,
            NvlinkError,
            NetworkDegraded,
            HostResourcePressure,
            DataloaderStall,
        ],
        Pending => &[NodeFailure, HostMaintenance, HostResourcePressure],
        // Fewer replicas than the traffic needs: whatever keeps a replica away (its
        // node or GPU lost, it preempted or evicted, a scale-up's replica not admitted,
        // placed, pulled or started) leaves its load on the others.
        LatencyRegression => &[
            GpuMemoryError,
            NvlinkError,
            NetworkDegraded,
            NodeFailure,
            GpuFailure,
            HostMaintenance,
            Preemption,
            Eviction,
            QuotaWait,
            SchedulingFailure,
            ImagePull,
            CrashLoop,
            OomKilled,
        ],
        CapacityShortfall => &[GpuMemoryError, HostResourcePressure],
    };
    // Medium and weak fits temper a score without deciding a verdict on their own: the
    // evidence's timing, place and strength do.
    if strong.contains(&cause) {
        1.0
    } else if medium.contains(&cause) {
        0.8
    } else {
        0.4
    }
}

/// The score of a candidate for a symptom with this onset, end and kind.
pub fn score(c: &Candidate, kind: SymptomKind, onset_ns: i64, end_ns: i64) -> Score {
    Score {
        temporal: match kind {
            SymptomKind::Regression
            | SymptomKind::ThroughputDrop
            | SymptomKind::LatencyRegression => {
                temporal_with_grace(c.time_ns, onset_ns, end_ns, PACE_GRACE_S)
            }
            _ => temporal(c.time_ns, onset_ns, end_ns),
        },
        topology: topology(c.reach),
        specificity: specificity(c.cause),
        fit: fit(c.cause, kind),
        strength: c.strength,
    }
}

/// Whether `upstream` can cause `downstream` (a link of a causal chain across layers:
/// Xid 79 → node NotReady → pods killed → restore). A failure that takes a pod away
/// leads to its replacement's image pull, on whichever node it lands
/// ([`follows_the_pod`]).
pub fn leads_to(upstream: Cause, downstream: Cause) -> bool {
    use Cause::*;
    let next: &[Cause] = match upstream {
        GpuFailure | GpuMemoryError => &[
            NodeFailure,
            Eviction,
            ImagePull,
            CrashLoop,
            CheckpointRestore,
            CollectiveTimeout,
            StragglerRank,
            SchedulingFailure,
            QuotaWait,
        ],
        NvlinkError => &[
            CollectiveTimeout,
            StragglerRank,
            CrashLoop,
            CheckpointRestore,
        ],
        ThermalThrottle | PowerThrottle => &[StragglerRank, CollectiveTimeout],
        NetworkDegraded => &[
            CollectiveTimeout,
            StragglerRank,
            CrashLoop,
            CheckpointRestore,
            StorageSlow,
        ],
        NodeFailure => &[
            Eviction,
            ImagePull,
            CrashLoop,
            CheckpointRestore,
            SchedulingFailure,
            QuotaWait,
            CollectiveTimeout,
            StragglerRank,
        ],
        HostMaintenance => &[
            NodeFailure,
            Eviction,
            ImagePull,
            CrashLoop,
            CheckpointRestore,
            SchedulingFailure,
            QuotaWait,
            CollectiveTimeout,
        ],
        StorageSlow => &[CheckpointSave, CheckpointRestore, DataloaderStall],
        // (Its evictions reschedule the pods, off a node tainted for the pressure.)
        HostResourcePressure => &[
            Eviction,
            ImagePull,
            SchedulingFailure,
            QuotaWait,
            OomKilled,
            CrashLoop,
            CheckpointRestore,
            StragglerRank,
            DataloaderStall,
        ],
        Preemption => &[
            QuotaWait,
            ImagePull,
            CheckpointRestore,
            SchedulingFailure,
            CrashLoop,
            Eviction,
        ],
        Eviction => &[
            QuotaWait,
            ImagePull,
            CheckpointRestore,
            SchedulingFailure,
            CrashLoop,
        ],
        OomKilled => &[CrashLoop, CheckpointRestore],
        CrashLoop | CollectiveTimeout => &[CrashLoop, CheckpointRestore],
        ImagePull => &[CrashLoop],
        ScaleChange => &[
            QuotaWait,
            SchedulingFailure,
            StragglerRank,
            Recompilation,
            CheckpointRestore,
        ],
        NoisyNeighbor => &[StragglerRank],
        ConfigChange => &[
            Recompilation,
            CheckpointSave,
            DataloaderStall,
            StragglerRank,
        ],
        StragglerRank => &[CollectiveTimeout],
        // More requests fill the engine's cache.
        RequestSurge => &[KvCachePressure],
        QuotaWait | SchedulingFailure | CheckpointSave | CheckpointRestore | Recompilation
        | DataloaderStall | KvCachePressure | Unknown => &[],
    };
    upstream != downstream && next.contains(&downstream)
}

/// Whether a consequence `downstream` happens wherever the workload's pod goes next, not
/// on the node of its upstream cause: a replacement pod pulls its image on the node it is
/// placed on.
pub fn follows_the_pod(downstream: Cause) -> bool {
    downstream == Cause::ImagePull
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    #[test]
    fn evidence_just_before_the_onset_scores_highest() {
        let onset = 1000 * S;
        let end = 2000 * S;
        let just_before = temporal(990 * S, onset, end);
        let long_before = temporal(100 * S, onset, end);
        let just_after = temporal(1030 * S, onset, end);
        let long_after = temporal(1900 * S, onset, end);
        assert!(just_before > 0.98 && just_after == 1.0);
        assert!(long_before < just_before && long_before > 0.3);
        assert!(long_after < 0.5);
    }

    #[test]
    fn the_gpu_failure_chain_points_upstream() {
        assert!(leads_to(Cause::GpuFailure, Cause::NodeFailure));
        assert!(leads_to(Cause::NodeFailure, Cause::CheckpointRestore));
        assert!(!leads_to(Cause::CheckpointRestore, Cause::GpuFailure));
        assert!(leads_to(Cause::Preemption, Cause::QuotaWait));
        assert!(!leads_to(Cause::QuotaWait, Cause::Preemption));
        assert!(!leads_to(Cause::Preemption, Cause::Preemption));
    }

    #[test]
    fn fit_prefers_plausible_mechanisms() {
        assert_eq!(fit(Cause::Preemption, SymptomKind::Stall), 1.0);
        assert_eq!(fit(Cause::ThermalThrottle, SymptomKind::Straggler), 1.0);
        assert!(fit(Cause::ThermalThrottle, SymptomKind::Stall) < 0.5);
        for &c in Cause::ALL {
            assert!(specificity(c) <= 1.0);
        }
    }
}
