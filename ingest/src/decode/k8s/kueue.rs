//! Kueue `Workload` objects (kueue.x-k8s.io v1beta1 / v1beta2): one row per
//! `status.conditions` entry at its `lastTransitionTime`, plus `workload_created` at
//! `metadata.creationTimestamp`.
//!
//! | condition | status | kind |
//! |---|---|---|
//! | QuotaReserved | True | `quota_reserved` |
//! | QuotaReserved | False, reason Pending | `pending` |
//! | QuotaReserved | False, reason Inadmissible | `inadmissible` |
//! | QuotaReserved | False, other reason | `quota_released` |
//! | Admitted | True / False | `admitted` / `not_admitted` |
//! | PodsReady | True / False | `pods_ready` / `pods_not_ready` |
//! | Evicted | True / False | `evicted` / `eviction_cleared` |
//! | Preempted | True / False | `preempted` / `preemption_cleared` |
//! | Requeued | True / False | `requeued` / `requeue_pending` |
//! | Finished | True | `finished` |
//! | any other type T | True / False | snake(T) / snake(T)`_cleared` |
//!
//! The Job's own suspension shows as `suspended`/`resumed` from the Job (its events and
//! its Suspended condition), not from these conditions. `event_id` is
//! `kueue:<uid>:<type>:<status>:<reason>:<lastTransitionTime>`, so the same transition seen
//! in many watch updates or dumps is one row.

use std::borrow::Cow;

use whyslow_schemas::{Layer, Severity};

use super::messages;
use super::naming::Owners;
use super::objects::{Condition, Workload, text};
use super::reasons::{KUEUE, snake_case};
use super::row::{Attrs, K8sError, Row, opt_time, read_time};

/// The kind a Workload condition stands for.
pub fn condition_kind(ctype: &str, status: &str, reason: &str) -> Cow<'static, str> {
    let t = status.eq_ignore_ascii_case("true");
    let k = match (ctype, t) {
        ("QuotaReserved", true) => "quota_reserved",
        ("QuotaReserved", false) if reason == "Pending" => "pending",
        ("QuotaReserved", false) if reason == "Inadmissible" => "inadmissible",
        ("QuotaReserved", false) => "quota_released",
        ("Admitted", true) => "admitted",
        ("Admitted", false) => "not_admitted",
        ("PodsReady", true) => "pods_ready",
        ("PodsReady", false) => "pods_not_ready",
        ("Evicted", true) => "evicted",
        ("Evicted", false) => "eviction_cleared",
        ("Preempted", true) => "preempted",
        ("Preempted", false) => "preemption_cleared",
        ("Requeued", true) => "requeued",
        ("Requeued", false) => "requeue_pending",
        ("Finished", true) => "finished",
        (other, true) => return Cow::Owned(snake_case(other)),
        (other, false) => return Cow::Owned(format!("{}_cleared", snake_case(other))),
    };
    Cow::Borrowed(k)
}

fn severity(kind: &str, reason: &str) -> Severity {
    match kind {
        "evicted" | "preempted" | "pending" | "inadmissible" | "pods_not_ready" => {
            Severity::Warning
        }
        "finished" if reason.eq_ignore_ascii_case("failed") => Severity::Warning,
        _ => Severity::Info,
    }
}

/// A Kubernetes quantity (`4`, `500m`, `2Gi`, `1e3`) as a number of base units.
pub fn parse_quantity(q: &str) -> Option<f64> {
    let q = q.trim();
    let split = q
        .find(|c: char| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
        .unwrap_or(q.len());
    let (num, suffix) = q.split_at(split);
    let (num, suffix) = if suffix.is_empty() && (num.ends_with('E') || num.ends_with('e')) {
        // `2E` is exa, not an exponent.
        (&num[..num.len() - 1], &num[num.len() - 1..])
    } else {
        (num, suffix)
    };
    let v: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" | "e" => 1e18,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        _ => return None,
    };
    let r = v * mult;
    r.is_finite().then_some(r)
}

fn fmt_quantity(v: f64) -> String {
    let rounded = (v * 1000.0).round() / 1000.0;
    messages::fmt_seconds(rounded)
}

/// Sums `requests` over the pod sets (container requests × count): `requests.<resource>`.
fn request_attrs(wl: &Workload<'_>, attrs: &mut Attrs) {
    let mut sums: Vec<(String, f64)> = Vec::new();
    let mut pods = 0i64;
    for ps in wl.spec.pod_sets.iter().flatten() {
        let count = ps.count.map_or(1, |c| c.0.max(0));
        pods += count;
        let containers = ps
            .template
            .as_ref()
            .and_then(|t| t.spec.as_ref())
            .and_then(|s| s.containers.as_ref());
        for c in containers.into_iter().flatten() {
            let reqs = c.resources.as_ref().and_then(|r| r.requests.as_ref());
            for (k, v) in reqs.into_iter().flat_map(|r| r.0.iter()) {
                let Some(q) = parse_quantity(v.as_str()) else {
                    continue;
                };
                match sums.iter_mut().find(|(name, _)| name == k.as_str()) {
                    Some((_, s)) => *s += q * count as f64,
                    None => sums.push((k.as_str().to_string(), q * count as f64)),
                }
            }
        }
    }
    if pods > 0 {
        attrs.push("pods", pods.to_string());
    }
    for (k, v) in sums {
        attrs.push(format!("requests.{k}"), fmt_quantity(v));
    }
}

/// Appends the rows of one Workload and remembers its owner.
pub fn workload_rows(
    wl: &Workload<'_>,
    owners: &mut Owners,
    rows: &mut Vec<Row>,
) -> Result<(), K8sError> {
    let meta = &wl.metadata;
    let name = text(&meta.name).unwrap_or("");
    let ns = text(&meta.namespace);
    let what = "Workload";
    let id_base = match text(&meta.uid) {
        Some(uid) => format!("kueue:{uid}"),
        None => format!("kueue:{}/{}", ns.unwrap_or(""), name),
    };

    let mut attrs = Attrs::default();
    attrs.push("kueue_workload", name);
    attrs.opt("workload_uid", text(&meta.uid));
    let queue = text(&wl.spec.queue_name).or_else(|| meta.label("kueue.x-k8s.io/queue-name"));
    attrs.opt("queue_name", queue);
    let cq = wl
        .status
        .admission
        .as_ref()
        .and_then(|a| text(&a.cluster_queue));
    attrs.opt("cluster_queue", cq);
    if let Some(p) = wl.spec.priority {
        attrs.push("priority", p.0.to_string());
    }
    let pclass = text(&wl.spec.priority_class_name)
        .or_else(|| {
            wl.spec
                .priority_class_ref
                .as_ref()
                .and_then(|r| text(&r.name))
        })
        .or_else(|| meta.label("kueue.x-k8s.io/priority-class"));
    attrs.opt("priority_class", pclass);
    attrs.opt(
        "priority_class_source",
        text(&wl.spec.priority_class_source),
    );
    attrs.opt("job_uid", meta.label("kueue.x-k8s.io/job-uid"));
    if wl.spec.active == Some(false) {
        attrs.push("active", "false");
    }
    request_attrs(wl, &mut attrs);
    if let Some(a) = &wl.status.admission {
        for psa in a.pod_set_assignments.iter().flatten() {
            for (res, flavor) in psa.flavors.iter().flat_map(|f| f.0.iter()) {
                let key = format!("flavor.{}", res.as_str());
                if attrs.get(&key).is_none() {
                    attrs.push(key, flavor.as_str());
                }
            }
        }
    }
    if let Some(rq) = &wl.status.requeue_state
        && let Some(c) = rq.count
    {
        attrs.push("requeue_count", c.0.to_string());
    }

    // Whose workload it is.
    let mut pod = None;
    let workload = match meta.owner() {
        Some(o) if text(&o.kind).is_some() && text(&o.name).is_some() => {
            let (ok, on) = (text(&o.kind).unwrap_or(""), text(&o.name).unwrap_or(""));
            attrs.push("owner_kind", ok);
            attrs.push("owner_name", on);
            attrs.opt("owner_uid", text(&o.uid));
            if ok == "Pod" {
                pod = Some(on.to_string());
            }
            owners.learn_workload(ns, name, ok, on);
            let w = owners.resolve(ns, ok, on);
            attrs.push("workload_kind", w.kind.as_ref());
            Some(w.name.into_owned())
        }
        _ => owners.workload_of(ns, "Workload", name).map(|w| {
            attrs.push("workload_kind", w.kind.as_ref());
            w.name.into_owned()
        }),
    };

    let new_row = |t: i64, id: String, kind: Cow<'static, str>, sev: Severity| {
        let mut r = Row::new(t, id, Layer::Orchestrator, KUEUE, kind, sev);
        r.namespace = ns.map(str::to_string);
        r.workload = workload.clone();
        r.pod = pod.clone();
        r
    };

    if let Some(t) = opt_time(
        what,
        name,
        "metadata.creationTimestamp",
        &meta.creation_timestamp,
    )? {
        let mut r = new_row(
            t,
            format!("{id_base}:created"),
            Cow::Borrowed("workload_created"),
            Severity::Info,
        );
        r.attrs = attrs.clone();
        rows.push(r);
    }
    for c in wl.status.conditions.iter().flatten() {
        if let Some(r) = condition_row(c, name, &id_base, &attrs, &new_row)? {
            rows.push(r);
        }
    }
    Ok(())
}

fn condition_row(
    c: &Condition<'_>,
    name: &str,
    id_base: &str,
    common: &Attrs,
    new_row: &dyn Fn(i64, String, Cow<'static, str>, Severity) -> Row,
) -> Result<Option<Row>, K8sError> {
    let ctype = text(&c.type_).unwrap_or("");
    let status = text(&c.status).unwrap_or("");
    let reason = text(&c.reason).unwrap_or("");
    let msg = text(&c.message).unwrap_or("");
    let Some(ltt) = &c.last_transition_time else {
        return Ok(None);
    };
    if ctype.is_empty() || ltt.as_str().trim().is_empty() {
        return Ok(None);
    }
    let field = format!("status.conditions[{ctype}].lastTransitionTime");
    let t = read_time("Workload", name, &field, ltt)?;
    let kind = condition_kind(ctype, status, reason);
    let id = format!(
        "{id_base}:{ctype}:{status}:{reason}:{}",
        ltt.as_str().trim()
    );
    let mut r = new_row(t, id, kind.clone(), severity(&kind, reason));
    r.reason = (!reason.is_empty()).then(|| reason.to_string());
    r.message = (!msg.is_empty()).then(|| msg.to_string());
    let mut attrs = common.clone();
    attrs.push("condition_type", ctype);
    attrs.push("condition_status", status);
    match kind.as_ref() {
        "evicted" => {
            attrs.push("eviction_reason", reason);
            if msg.contains("to accommodate") {
                messages::kueue_preemption(msg, &mut attrs);
            }
        }
        "preempted" => {
            attrs.push("preemption_reason", reason);
            messages::kueue_preemption(msg, &mut attrs);
        }
        "pending" | "inadmissible" => messages::kueue_pending(msg, &mut attrs),
        "quota_reserved" | "admitted" if attrs.get("cluster_queue").is_none() => {
            messages::kueue_queue_and_wait(msg, &mut attrs);
        }
        _ => {}
    }
    r.attrs = attrs;
    Ok(Some(r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities() {
        assert_eq!(parse_quantity("4"), Some(4.0));
        assert_eq!(parse_quantity("500m"), Some(0.5));
        assert_eq!(parse_quantity("2Gi"), Some(2147483648.0));
        assert_eq!(parse_quantity("1e3"), Some(1000.0));
        assert_eq!(parse_quantity("2E"), Some(2e18));
        assert_eq!(parse_quantity("abc"), None);
        assert_eq!(fmt_quantity(0.1 + 0.2), "0.3");
    }

    #[test]
    fn condition_kinds() {
        assert_eq!(condition_kind("Evicted", "True", "Preempted"), "evicted");
        assert_eq!(
            condition_kind("QuotaReserved", "False", "Pending"),
            "pending"
        );
        assert_eq!(
            condition_kind("Admitted", "False", "NoReservation"),
            "not_admitted"
        );
        assert_eq!(
            condition_kind("DeactivationTarget", "True", "x"),
            "deactivation_target"
        );
        assert_eq!(
            condition_kind("DeactivationTarget", "False", "x"),
            "deactivation_target_cleared"
        );
    }

    #[test]
    fn workload_transitions_and_attrs() {
        let wl: Workload = serde_json::from_str(
            r#"{"metadata":{"name":"job-finetune-gemma-l4-3c1a2","namespace":"llm","uid":"w1",
              "creationTimestamp":"2026-11-29T10:00:00Z",
              "ownerReferences":[{"kind":"Job","name":"finetune-gemma-l4","uid":"j1","controller":true}]},
             "spec":{"queueName":"lq","priority":100,"priorityClassName":"low",
              "podSets":[{"name":"main","count":2,"template":{"spec":{"containers":[
                {"name":"t","resources":{"requests":{"nvidia.com/gpu":"2","cpu":"500m"}}}]}}}]},
             "status":{"admission":{"clusterQueue":"cq"},"conditions":[
              {"type":"Evicted","status":"True","reason":"Preempted","lastTransitionTime":"2026-11-29T10:05:00Z",
               "message":"Preempted to accommodate a workload (UID: w2, JobUID: j2) due to prioritization in the ClusterQueue"},
              {"type":"Preempted","status":"True","reason":"InClusterQueue","lastTransitionTime":"2026-11-29T10:05:00Z",
               "message":"Preempted to accommodate a workload (UID: w2, JobUID: j2) due to prioritization in the ClusterQueue"}]}}"#,
        )
        .unwrap();
        let mut rows = Vec::new();
        let mut owners = Owners::default();
        workload_rows(&wl, &mut owners, &mut rows).unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].kind, "workload_created");
        let ev = &rows[1];
        assert_eq!(ev.kind, "evicted");
        assert_eq!(
            ev.event_id,
            "kueue:w1:Evicted:True:Preempted:2026-11-29T10:05:00Z"
        );
        assert_eq!(ev.workload.as_deref(), Some("finetune-gemma-l4"));
        assert_eq!(ev.attrs.get("requests.nvidia.com/gpu"), Some("4"));
        assert_eq!(ev.attrs.get("requests.cpu"), Some("1"));
        assert_eq!(ev.attrs.get("cluster_queue"), Some("cq"));
        assert_eq!(ev.attrs.get("priority"), Some("100"));
        assert_eq!(ev.attrs.get("preemptor_uid"), Some("w2"));
        assert_eq!(ev.attrs.get("preemption_reason"), Some("InClusterQueue"));
        assert_eq!(
            rows[2].attrs.get("preemption_reason"),
            Some("InClusterQueue")
        );
        assert_eq!(
            rows[2]
                .attrs
                .0
                .iter()
                .filter(|(k, _)| k == "preemption_reason")
                .count(),
            1
        );
    }
}
