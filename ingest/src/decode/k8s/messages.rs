//! Readers of the numbers and names inside Event and condition messages (the scheduler's
//! "Successfully assigned …", the deployment controller's "Scaled up replica set …",
//! Kueue's quota, admission, pending and preemption messages).

use super::row::Attrs;

/// `Successfully assigned NS/POD to NODE` (or the older `… assigned POD to NODE`):
/// (namespace, pod, node).
pub fn scheduled(msg: &str) -> Option<(Option<&str>, &str, &str)> {
    let rest = msg.trim().strip_prefix("Successfully assigned ")?;
    let (target, node) = rest.rsplit_once(" to ")?;
    let node = node.trim();
    let (ns, pod) = match target.split_once('/') {
        Some((ns, pod)) => (Some(ns), pod),
        None => (None, target),
    };
    (!pod.is_empty() && !node.is_empty() && !node.contains(' ')).then_some((ns, pod, node))
}

/// `Scaled up replica set X to N`, `Scaled down replica set X to B from A` (the
/// deployment controller since Kubernetes 1.26), `Scaled down replica set X from A to B`.
pub fn scaling(msg: &str, attrs: &mut Attrs) -> bool {
    let msg = msg.trim();
    let (direction, rest) = if let Some(r) = msg.strip_prefix("Scaled up replica set ") {
        ("up", r)
    } else if let Some(r) = msg.strip_prefix("Scaled down replica set ") {
        ("down", r)
    } else {
        return false;
    };
    // A ReplicaSet's name has no spaces: the first word is the name.
    let Some((rs, tail)) = rest.split_once(' ') else {
        return false;
    };
    let (to, from) = if let Some(t) = tail.strip_prefix("to ") {
        match t.split_once(" from ") {
            Some((to, from)) => (count(to), count(from)),
            None => (count(t), None),
        }
    } else if let Some(t) = tail.strip_prefix("from ") {
        match t.split_once(" to ") {
            Some((from, to)) => (count(to), count(from)),
            None => (None, None),
        }
    } else {
        (None, None)
    };
    let Some(to) = to else {
        return false;
    };
    attrs.push("direction", direction);
    attrs.push("replica_set", rs);
    if let Some(f) = from {
        attrs.push("from_replicas", f);
    }
    attrs.push("to_replicas", to);
    true
}

/// A replica count as written (`3`, `3.` at a sentence's end).
fn count(s: &str) -> Option<&str> {
    let s = s.trim().trim_end_matches('.');
    s.parse::<i64>().is_ok().then_some(s)
}

/// `Created pod: NAME` / `Deleted pod: NAME` / `Created job NAME`: (child kind, child name).
pub fn created_or_deleted(msg: &str) -> Option<(&str, &str)> {
    let rest = msg
        .trim()
        .strip_prefix("Created ")
        .or_else(|| msg.trim().strip_prefix("Deleted "))?;
    let (kind, name) = rest.split_once(' ')?;
    let kind = kind.trim_end_matches(':');
    let name = name.trim().trim_matches('"');
    (!kind.is_empty() && !name.is_empty() && !name.contains(' ')).then_some((kind, name))
}

/// Formats seconds without a trailing `.0` for whole numbers.
pub fn fmt_seconds(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

fn word_after<'m>(msg: &'m str, marker: &str) -> Option<&'m str> {
    let i = msg.find(marker)? + marker.len();
    let w = msg[i..]
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .next()?;
    (!w.is_empty()).then_some(w)
}

/// The kubelet's `Successfully pulled image "IMG" in 11m15.2s (11m15.2s including
/// waiting). Image size: N bytes.`: pull_seconds (the pull's own time: the event is
/// logged when it ends, the pull began that long before).
pub fn image_pulled(msg: &str, attrs: &mut Attrs) {
    let Some(rest) = msg.strip_prefix("Successfully pulled image ") else {
        return;
    };
    if let Some(w) = word_after(rest, " in ")
        && let Some(secs) = whyslow_schemas::time::parse_go_duration_secs(w)
    {
        attrs.push(
            "pull_seconds",
            fmt_seconds((secs * 1000.0).round() / 1000.0),
        );
    }
}

/// Kueue's `Quota reserved in ClusterQueue CQ, wait time since queued was 6s` and
/// `Admitted by ClusterQueue CQ, wait time since reservation was 0s`: cluster_queue,
/// wait_seconds.
pub fn kueue_queue_and_wait(msg: &str, attrs: &mut Attrs) {
    let cq = word_after(msg, "in ClusterQueue ")
        .or_else(|| word_after(msg, "by ClusterQueue "))
        .or_else(|| word_after(msg, "by clusterQueue "));
    if let Some(cq) = cq {
        attrs.push("cluster_queue", cq);
    }
    for marker in [
        "wait time since queued was ",
        "wait time since reservation was ",
    ] {
        if let Some(w) = word_after(msg, marker)
            && let Some(secs) = whyslow_schemas::time::parse_go_duration_secs(w)
        {
            attrs.push("wait_seconds", fmt_seconds(secs));
        }
    }
}

/// Kueue's `couldn't assign flavors to pod set main: insufficient unused quota for
/// nvidia.com/gpu in flavor default-flavor, 2 more needed`: pod_set, resource, flavor,
/// needed (and pending_preemptions from `Pending the preemption of N workload(s)`).
pub fn kueue_pending(msg: &str, attrs: &mut Attrs) {
    if let Some(ps) = word_after(msg, "to pod set ") {
        attrs.push("pod_set", ps.trim_end_matches(':'));
    }
    let res = word_after(msg, "insufficient unused quota for ")
        .or_else(|| word_after(msg, "insufficient quota for "));
    if let Some(r) = res {
        attrs.push("resource", r);
    }
    if let Some(f) = word_after(msg, " in flavor ") {
        attrs.push("flavor", f);
    }
    if let Some(i) = msg.find(" more needed") {
        let head = &msg[..i];
        let n = head.rsplit([' ', ',']).next().unwrap_or("");
        if !n.is_empty() {
            attrs.push("needed", n);
        }
    }
    if let Some(n) = word_after(msg, "Pending the preemption of ") {
        attrs.push("pending_preemptions", n);
    }
}

/// Kueue's `Preempted to accommodate a workload (UID: U, JobUID: J) due to prioritization
/// in the ClusterQueue; preemptor path: /a/b; preemptee path: /a/c`: preemptor_uid,
/// preemptor_job_uid, preemption_reason (from the wording), preemptor_path, preemptee_path.
pub fn kueue_preemption(msg: &str, attrs: &mut Attrs) {
    if let Some(u) = word_after(msg, "(UID: ") {
        attrs.push("preemptor_uid", u.trim_end_matches(')'));
    }
    if let Some(u) = word_after(msg, "JobUID: ") {
        attrs.push("preemptor_job_uid", u.trim_end_matches(')'));
    }
    if attrs.get("preemption_reason").is_none()
        && let Some(r) = preemption_reason_from_message(msg)
    {
        attrs.push("preemption_reason", r);
    }
    if let Some(p) = word_after(msg, "preemptor path: ") {
        attrs.push("preemptor_path", p);
    }
    if let Some(p) = word_after(msg, "preemptee path: ") {
        attrs.push("preemptee_path", p);
    }
}

/// The Preempted condition reason Kueue's message wording stands for.
pub fn preemption_reason_from_message(msg: &str) -> Option<&'static str> {
    if msg.contains("while borrowing") {
        Some("InCohortReclaimWhileBorrowing")
    } else if msg.contains("reclamation within the cohort") {
        Some("InCohortReclamation")
    } else if msg.contains("Fair Sharing within the cohort")
        || msg.contains("fair sharing within the cohort")
    {
        Some("InCohortFairSharing")
    } else if msg.contains("prioritization in the ClusterQueue") {
        Some("InClusterQueue")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get<'x>(a: &'x Attrs, k: &str) -> Option<&'x str> {
        a.get(k)
    }

    #[test]
    fn image_pulled_messages() {
        let mut a = Attrs::default();
        image_pulled(
            "Successfully pulled image \"nvcr.io/nvidia/pytorch:24.10-py3\" in 11m15.2s (11m15.2s including waiting). Image size: 9876543210 bytes.",
            &mut a,
        );
        assert_eq!(get(&a, "pull_seconds"), Some("675.2"));
        let mut a = Attrs::default();
        image_pulled(
            "Container image \"busybox\" already present on machine",
            &mut a,
        );
        assert_eq!(get(&a, "pull_seconds"), None);
    }

    #[test]
    fn scheduled_messages() {
        assert_eq!(
            scheduled("Successfully assigned llm/finetune-0-abcde to gke-gpu-7"),
            Some((Some("llm"), "finetune-0-abcde", "gke-gpu-7"))
        );
        assert_eq!(
            scheduled("Successfully assigned p to n1"),
            Some((None, "p", "n1"))
        );
        assert_eq!(scheduled("Successfully assigned"), None);
    }

    #[test]
    fn scaling_messages() {
        let mut a = Attrs::default();
        assert!(scaling("Scaled up replica set tgi-7d9f8c6b5 to 3", &mut a));
        assert_eq!(get(&a, "to_replicas"), Some("3"));
        assert_eq!(get(&a, "from_replicas"), None);
        let mut a = Attrs::default();
        assert!(scaling(
            "Scaled down replica set tgi-7d9f8c6b5 from 3 to 1",
            &mut a
        ));
        assert_eq!(
            (
                get(&a, "direction"),
                get(&a, "from_replicas"),
                get(&a, "to_replicas")
            ),
            (Some("down"), Some("3"), Some("1"))
        );
        assert_eq!(get(&a, "replica_set"), Some("tgi-7d9f8c6b5"));
        // The deployment controller's wording since Kubernetes 1.26: the new count first.
        let mut a = Attrs::default();
        assert!(scaling(
            "Scaled up replica set vllm-llama31-70b-qmftqr2l2d to 2 from 1",
            &mut a
        ));
        assert_eq!(
            (
                get(&a, "replica_set"),
                get(&a, "from_replicas"),
                get(&a, "to_replicas")
            ),
            (Some("vllm-llama31-70b-qmftqr2l2d"), Some("1"), Some("2"))
        );
        assert!(!scaling(
            "Scaled up replica set x to many",
            &mut Attrs::default()
        ));
    }

    #[test]
    fn kueue_messages() {
        let mut a = Attrs::default();
        kueue_queue_and_wait(
            "Quota reserved in ClusterQueue cluster-queue, wait time since queued was 35s",
            &mut a,
        );
        assert_eq!(
            (get(&a, "cluster_queue"), get(&a, "wait_seconds")),
            (Some("cluster-queue"), Some("35"))
        );
        let mut a = Attrs::default();
        kueue_pending(
            "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor default-flavor, 2 more needed",
            &mut a,
        );
        assert_eq!(get(&a, "pod_set"), Some("main"));
        assert_eq!(get(&a, "resource"), Some("nvidia.com/gpu"));
        assert_eq!(get(&a, "flavor"), Some("default-flavor"));
        assert_eq!(get(&a, "needed"), Some("2"));
        let mut a = Attrs::default();
        kueue_preemption(
            "Preempted to accommodate a workload (UID: wl-in, JobUID: job-in) due to reclamation within the cohort; preemptor path: /r/c/q; preemptee path: /r/q_borrowing",
            &mut a,
        );
        assert_eq!(get(&a, "preemptor_uid"), Some("wl-in"));
        assert_eq!(get(&a, "preemptor_job_uid"), Some("job-in"));
        assert_eq!(get(&a, "preemption_reason"), Some("InCohortReclamation"));
        assert_eq!(get(&a, "preemptor_path"), Some("/r/c/q"));
        assert_eq!(get(&a, "preemptee_path"), Some("/r/q_borrowing"));
    }
}
