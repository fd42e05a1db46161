//! The vocabulary: an Event's `reason` (and who reported it) to the normalized `kind`,
//! `layer` and `source` of the events table.

use std::borrow::Cow;

use whyslow_schemas::Layer;

/// `source` values this decoder writes.
pub const KUBERNETES: &str = "kubernetes";
/// Kueue's controllers.
pub const KUEUE: &str = "kueue";
/// node-problem-detector's monitors.
pub const NPD: &str = "node-problem-detector";

/// Reasons of node-problem-detector's stock monitors (kernel, systemd, docker, health
/// checker; `config/*.json` upstream): node problems, so the infrastructure layer.
const NPD_REASONS: &[&str] = &[
    "OOMKilling",
    "TaskHung",
    "KernelOops",
    "UnregisterNetDevice",
    "KernelDeadlock",
    "AUFSUmountHung",
    "DockerHung",
    "FilesystemIsReadOnly",
    "ReadonlyFilesystem",
    "Ext4Error",
    "Ext4Warning",
    "IOError",
    "MemoryReadError",
    "XfsShutdown",
    "CperHardwareErrorFatal",
    "CorruptDockerImage",
    "CorruptDockerOverlay2",
    "FrequentKubeletRestart",
    "FrequentDockerRestart",
    "FrequentContainerdRestart",
    "KubeletUnhealthy",
    "ContainerRuntimeUnhealthy",
    "NTPIsDown",
];

/// Components that are node-problem-detector monitors (their `source` setting).
fn is_npd_component(c: &str) -> bool {
    c.contains("node-problem-detector")
        || matches!(
            c,
            "kernel-monitor"
                | "systemd-monitor"
                | "docker-monitor"
                | "abrt-adaptor"
                | "health-checker"
                | "custom-plugin-monitor"
                | "readonly-monitor"
                | "ntp-custom-plugin-monitor"
        )
}

/// Which system produced an Event: from its reporting component and what it is about.
pub fn event_source(
    component: Option<&str>,
    involved_kind: Option<&str>,
    reason: &str,
) -> &'static str {
    let c = component.unwrap_or("");
    if c.contains("kueue") || involved_kind == Some("Workload") {
        KUEUE
    } else if is_npd_component(c) || (c.is_empty() && NPD_REASONS.contains(&reason)) {
        NPD
    } else {
        KUBERNETES
    }
}

/// `FailedScheduling` → `failed_scheduling`, `OOMKilling` → `oom_killing`,
/// `NodeHasSufficientPID` → `node_has_sufficient_pid`; non-alphanumerics become `_`.
pub fn snake_case(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = if i > 0 { chars[i - 1] } else { ' ' };
            let next = chars.get(i + 1).copied().unwrap_or(' ');
            let boundary = prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next.is_ascii_lowercase());
            if boundary && !out.is_empty() && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    while out.ends_with('_') {
        out.pop();
    }
    out
}

/// The kind and layer of an Event, from its reason, its message (some reasons are shared:
/// the kubelet's `BackOff` covers crash loops and image pulls) and its source.
pub fn event_kind(reason: &str, message: &str, source: &str) -> (Cow<'static, str>, Layer) {
    use Layer::{Infrastructure as I, Orchestrator as O};
    let k: (&'static str, Layer) = match reason {
        "Scheduled" => ("scheduled", O),
        "FailedScheduling" => ("failed_scheduling", O),
        "Preempted" | "EvictedDueToPreempted" => ("preempted", O),
        "Preempting" => ("preempting", O),
        "Evicted" | "Evicting" => ("evicted", O),
        "Killing" => ("killing", O),
        "BackOff" if message.contains("pulling image") => ("image_pull_back_off", O),
        "BackOff" | "CrashLoopBackOff" => ("back_off", O),
        "Pulling" => ("image_pulling", O),
        "Pulled" => ("image_pulled", O),
        "ErrImagePull" | "ImagePullBackOff" | "ErrImageNeverPull" | "InspectFailed" => {
            ("image_pull_failed", O)
        }
        "Failed" if message.contains("ImagePull") || message.contains("pull image") => {
            ("image_pull_failed", O)
        }
        "OOMKilling" | "OOMKilled" | "SystemOOM" => ("oom_killed", O),
        "NodeNotReady" => ("node_not_ready", I),
        "NodeReady" => ("node_ready", I),
        "Rebooted" => ("rebooted", I),
        "NodeShutdown" | "Shutdown" => ("node_shutdown", I),
        "NodeHasDiskPressure" => ("disk_pressure", I),
        "NodeHasNoDiskPressure" => ("disk_pressure_cleared", I),
        "NodeHasInsufficientMemory" | "NodeHasMemoryPressure" => ("memory_pressure", I),
        "NodeHasSufficientMemory" | "NodeHasNoMemoryPressure" => ("memory_pressure_cleared", I),
        "NodeHasInsufficientPID" => ("pid_pressure", I),
        "NodeHasSufficientPID" => ("pid_pressure_cleared", I),
        "NodeNotSchedulable" => ("node_cordoned", I),
        "NodeSchedulable" => ("node_uncordoned", I),
        "ScalingReplicaSet" => ("scaled", O),
        "SuccessfulCreate" => ("created", O),
        "SuccessfulDelete" => ("deleted", O),
        "Suspended" => ("suspended", O),
        "Resumed" => ("resumed", O),
        "BackoffLimitExceeded" => ("backoff_limit_exceeded", O),
        "DeadlineExceeded" => ("deadline_exceeded", O),
        "Completed" => ("completed", O),
        // Kueue (workload and job reconcilers).
        "QuotaReserved" => ("quota_reserved", O),
        "Admitted" => ("admitted", O),
        "Pending" => ("pending", O),
        "Inadmissible" => ("inadmissible", O),
        "Requeued" => ("requeued", O),
        "Finished" | "FinishedWorkload" => ("finished", O),
        "CreatedWorkload" => ("workload_created", O),
        "Started" if source == KUEUE => ("started", O),
        // The kubelet's container lifecycle (not the controllers' SuccessfulCreate).
        "Created" if message.starts_with("Created container") => ("container_created", O),
        "Started" if message.starts_with("Started container") => ("container_started", O),
        "EvictionThresholdMet" => ("eviction_threshold_met", I),
        "TaintManagerEviction" => ("taint_manager_eviction", O),
        "Descheduled" => ("descheduled", O),
        "Stopped" if source == KUEUE => ("stopped", O),
        "PodsReadyTimeout" | "ExceededPodsReadyTimeout" => ("evicted", O),
        _ => return fallback_kind(reason, source),
    };
    (Cow::Borrowed(k.0), k.1)
}

/// Reasons outside the table: node-problem-detector and GKE node events are about the
/// node (infrastructure); everything else keeps its reason in snake_case, orchestrator.
fn fallback_kind(reason: &str, source: &str) -> (Cow<'static, str>, Layer) {
    let lower = reason.to_ascii_lowercase();
    if lower.contains("maintenance") || lower.contains("autorepair") || lower.contains("repair") {
        return (Cow::Borrowed("maintenance"), Layer::Infrastructure);
    }
    if lower.contains("termination") || lower.contains("hosterror") {
        return (Cow::Borrowed("node_termination"), Layer::Infrastructure);
    }
    let kind = if reason.is_empty() {
        "unknown".to_string()
    } else {
        snake_case(reason)
    };
    let layer = if source == NPD {
        Layer::Infrastructure
    } else {
        Layer::Orchestrator
    };
    (Cow::Owned(kind), layer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snake_case_handles_acronyms() {
        assert_eq!(snake_case("FailedScheduling"), "failed_scheduling");
        assert_eq!(snake_case("OOMKilling"), "oom_killing");
        assert_eq!(
            snake_case("NodeHasSufficientPID"),
            "node_has_sufficient_pid"
        );
        assert_eq!(snake_case("BackOff"), "back_off");
        assert_eq!(snake_case("reasonValue"), "reason_value");
        assert_eq!(snake_case("Ext4Error"), "ext4_error");
        assert_eq!(snake_case("some reason!"), "some_reason");
        assert_eq!(snake_case(""), "");
    }

    #[test]
    fn shared_reasons_split_by_message() {
        let (k, _) = event_kind(
            "BackOff",
            "Back-off restarting failed container",
            KUBERNETES,
        );
        assert_eq!(k, "back_off");
        let (k, _) = event_kind("BackOff", "Back-off pulling image \"x\"", KUBERNETES);
        assert_eq!(k, "image_pull_back_off");
        let (k, _) = event_kind("Failed", "Error: ErrImagePull", KUBERNETES);
        assert_eq!(k, "image_pull_failed");
        let (k, l) = event_kind("KernelOops", "", NPD);
        assert_eq!((k.as_ref(), l), ("kernel_oops", Layer::Infrastructure));
        let (k, _) = event_kind("Created", "Created container trainer", KUBERNETES);
        assert_eq!(k, "container_created");
        let (k, _) = event_kind("SuccessfulCreate", "Created pod: ft-0-bcdfg", KUBERNETES);
        assert_eq!(k, "created");
        let (k, l) = event_kind("OOMKilling", "", NPD);
        assert_eq!((k.as_ref(), l), ("oom_killed", Layer::Orchestrator));
    }

    #[test]
    fn sources() {
        assert_eq!(
            event_source(Some("kueue-admission"), Some("Workload"), "Admitted"),
            KUEUE
        );
        assert_eq!(event_source(None, Some("Workload"), "Pending"), KUEUE);
        assert_eq!(
            event_source(Some("kernel-monitor"), Some("Node"), "TaskHung"),
            NPD
        );
        assert_eq!(
            event_source(Some("kubelet"), Some("Pod"), "BackOff"),
            KUBERNETES
        );
    }
}
