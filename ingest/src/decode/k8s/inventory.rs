//! `Pod`, `Node`, `Job`, `Deployment`, `StatefulSet` and `ReplicaSet` objects: which pod
//! runs on which node for which workload, node conditions and taints, container
//! terminations, and the controllers' configuration and scale.

use std::borrow::Cow;

use whyslow_schemas::{Layer, Severity};

use super::naming::Owners;
use super::objects::{
    Condition, ContainerStatus, Controller, Int, Meta, Node, Pod, Resources, Text, text,
};
use super::reasons::{KUBERNETES, NPD, snake_case};
use super::row::{Attrs, K8sError, Row, opt_time, read_time};
use whyslow_schemas::time::Nanos;

fn id_base(prefix: &str, meta: &Meta<'_>) -> String {
    match text(&meta.uid) {
        Some(uid) => format!("{prefix}:{uid}"),
        None => format!(
            "{prefix}:{}/{}",
            text(&meta.namespace).unwrap_or(""),
            text(&meta.name).unwrap_or("")
        ),
    }
}

/// Adds `requests.<resource>` summed over containers, times `factor`.
fn add_requests<'x>(
    resources: impl Iterator<Item = &'x Resources<'x>>,
    factor: i64,
    attrs: &mut Attrs,
) {
    let mut sums: Vec<(String, f64)> = Vec::new();
    for r in resources {
        for (k, v) in r.requests.iter().flat_map(|p| p.0.iter()) {
            let Some(q) = super::kueue::parse_quantity(v.as_str()) else {
                continue;
            };
            match sums.iter_mut().find(|(n, _)| n == k.as_str()) {
                Some((_, s)) => *s += q * factor as f64,
                None => sums.push((k.as_str().to_string(), q * factor as f64)),
            }
        }
    }
    for (k, v) in sums {
        attrs.push(
            format!("requests.{k}"),
            super::messages::fmt_seconds((v * 1000.0).round() / 1000.0),
        );
    }
}

/// A condition's time, or `None` when it has none; unreadable is an error.
fn condition_time(
    what: &'static str,
    name: &str,
    c: &Condition<'_>,
) -> Result<Option<Nanos>, K8sError> {
    let ctype = text(&c.type_).unwrap_or("");
    let field = format!("status.conditions[{ctype}].lastTransitionTime");
    opt_time(what, name, &field, &c.last_transition_time)
}

fn condition_id(base: &str, c: &Condition<'_>) -> String {
    format!(
        "{base}:{}:{}:{}:{}",
        text(&c.type_).unwrap_or(""),
        text(&c.status).unwrap_or(""),
        text(&c.reason).unwrap_or(""),
        text(&c.last_transition_time).unwrap_or("")
    )
}

/// Appends the rows of one Pod and remembers its owner.
pub fn pod_rows(p: &Pod<'_>, owners: &mut Owners, rows: &mut Vec<Row>) -> Result<(), K8sError> {
    let meta = &p.metadata;
    let name = text(&meta.name).unwrap_or("");
    let ns = text(&meta.namespace);
    let base = id_base("k8s-pod", meta);
    let what = "Pod";
    let mut attrs = Attrs::default();
    if let Some(o) = meta.owner()
        && let (Some(k), Some(n)) = (text(&o.kind), text(&o.name))
    {
        attrs.push("owner_kind", k);
        attrs.push("owner_name", n);
        if !name.is_empty() {
            owners.learn_pod(ns, name, k, n);
        }
    }
    let workload = if name.is_empty() {
        None
    } else {
        owners.pod_workload(ns, name)
    };
    if let Some(w) = &workload {
        attrs.push("workload_kind", w.kind.as_ref());
    }
    let workload = workload.map(|w| w.name.into_owned());
    let node = text(&p.spec.node_name);
    attrs.opt("phase", text(&p.status.phase));
    if let Some(pr) = p.spec.priority {
        attrs.push("priority", pr.0.to_string());
    }
    attrs.opt("priority_class", text(&p.spec.priority_class_name));
    add_requests(
        p.spec
            .containers
            .iter()
            .flatten()
            .filter_map(|c| c.resources.as_ref()),
        1,
        &mut attrs,
    );
    let restarts: i64 = p
        .status
        .container_statuses
        .iter()
        .flatten()
        .filter_map(|c| c.restart_count)
        .map(|c| c.0)
        .sum();
    if restarts > 0 {
        attrs.push("restart_count", restarts.to_string());
    }

    let new_row = |t: Nanos, id: String, kind: Cow<'static, str>, sev: Severity| {
        let mut r = Row::new(t, id, Layer::Orchestrator, KUBERNETES, kind, sev);
        r.namespace = ns.map(str::to_string);
        r.pod = (!name.is_empty()).then(|| name.to_string());
        r.workload = workload.clone();
        r.node = node.map(str::to_string);
        r.attrs = attrs.clone();
        r
    };

    let conditions = p.status.conditions.as_deref().unwrap_or(&[]);
    let mut latest_condition: Option<Nanos> = None;
    let mut scheduled_at = None;
    for c in conditions {
        let Some(t) = condition_time(what, name, c)? else {
            continue;
        };
        latest_condition = latest_condition.max(Some(t));
        let ctype = text(&c.type_).unwrap_or("");
        let status = text(&c.status).unwrap_or("");
        let reason = text(&c.reason);
        let (kind, severity) = match (ctype, status) {
            ("PodScheduled", "True") => {
                scheduled_at = Some(t);
                continue;
            }
            ("PodScheduled", "False") => ("pod_unschedulable", Severity::Warning),
            // Ready since then: a serving replica's readiness, exactly (a Deployment's
            // replica that runs but loads its model is not ready yet).
            ("Ready", "True") => ("pod_ready", Severity::Info),
            ("DisruptionTarget", "True") => {
                if reason.is_some_and(|r| r.starts_with("Preemption")) {
                    ("preempted", Severity::Warning)
                } else {
                    ("evicted", Severity::Warning)
                }
            }
            _ => continue,
        };
        let mut r = new_row(t, condition_id(&base, c), Cow::Borrowed(kind), severity);
        r.reason = reason.map(str::to_string);
        r.message = text(&c.message).map(str::to_string);
        if ctype == "DisruptionTarget" {
            r.attrs.opt("disruption_reason", reason);
        }
        rows.push(r);
    }

    if let Some(nd) = node {
        let t = match scheduled_at {
            Some(t) => Some(t),
            None => match opt_time(what, name, "status.startTime", &p.status.start_time)? {
                Some(t) => Some(t),
                None => opt_time(
                    what,
                    name,
                    "metadata.creationTimestamp",
                    &meta.creation_timestamp,
                )?,
            },
        };
        if let Some(t) = t {
            rows.push(new_row(
                t,
                format!("{base}:placed:{nd}"),
                Cow::Borrowed("pod_placed"),
                Severity::Info,
            ));
        }
    }

    let mut latest_finish = None;
    let statuses = p
        .status
        .container_statuses
        .iter()
        .flatten()
        .chain(p.status.init_container_statuses.iter().flatten());
    for cs in statuses {
        container_rows(cs, name, &base, &new_row, &mut latest_finish, rows)?;
    }

    if let Some(reason) = text(&p.status.reason)
        && text(&p.status.phase) == Some("Failed")
        && let Some(t) = latest_finish.max(latest_condition)
    {
        let kind: Cow<'static, str> = if reason == "Evicted" {
            Cow::Borrowed("evicted")
        } else {
            Cow::Owned(snake_case(reason))
        };
        let msg = text(&p.status.message);
        let mut r = new_row(
            t,
            format!("{base}:status:{reason}"),
            kind,
            Severity::Warning,
        );
        if let Some(m) = msg
            && let Some(i) = m.find("low on resource: ")
        {
            let res = m[i + 17..]
                .split(|c: char| c == '.' || c.is_whitespace())
                .next()
                .unwrap_or("");
            r.attrs.push("low_resource", res);
        }
        r.reason = Some(reason.to_string());
        r.message = msg.map(str::to_string);
        rows.push(r);
    }

    if let Some(t) = opt_time(
        what,
        name,
        "metadata.deletionTimestamp",
        &meta.deletion_timestamp,
    )? {
        let grace = meta
            .deletion_grace_period_seconds
            .map_or(0, |g| g.0.clamp(0, 1 << 31));
        let mut r = new_row(
            t - grace * 1_000_000_000,
            format!("{base}:terminating"),
            Cow::Borrowed("pod_terminating"),
            Severity::Info,
        );
        r.attrs.push("grace_seconds", grace.to_string());
        rows.push(r);
    }
    Ok(())
}

fn container_rows(
    cs: &ContainerStatus<'_>,
    pod: &str,
    base: &str,
    new_row: &dyn Fn(Nanos, String, Cow<'static, str>, Severity) -> Row,
    latest_finish: &mut Option<Nanos>,
    rows: &mut Vec<Row>,
) -> Result<(), K8sError> {
    let cname = text(&cs.name).unwrap_or("");
    let mut seen: Option<&Text<'_>> = None;
    for state in [&cs.state, &cs.last_state].into_iter().flatten() {
        let Some(term) = &state.terminated else {
            continue;
        };
        let Some(fin) = &term.finished_at else {
            continue;
        };
        if fin.as_str().trim().is_empty() || seen == Some(fin) {
            continue;
        }
        seen = Some(fin);
        let field = format!("containerStatuses[{cname}].finishedAt");
        let t = read_time("Pod", pod, &field, fin)?;
        *latest_finish = (*latest_finish).max(Some(t));
        let reason = text(&term.reason);
        let exit = term.exit_code.map(|e| e.0);
        let (kind, sev) = match (reason, exit) {
            (Some("OOMKilled"), _) => ("oom_killed", Severity::Warning),
            (_, Some(0)) => ("container_terminated", Severity::Info),
            _ => ("container_terminated", Severity::Warning),
        };
        let mut r = new_row(
            t,
            format!("{base}:{cname}:terminated:{}", fin.as_str().trim()),
            Cow::Borrowed(kind),
            sev,
        );
        r.reason = reason.map(str::to_string);
        r.message = text(&term.message).map(str::to_string);
        r.attrs.push("container", cname);
        if let Some(e) = exit {
            r.attrs.push("exit_code", e.to_string());
        }
        r.attrs.opt("started_at", text(&term.started_at));
        if let Some(rc) = cs.restart_count {
            r.attrs.push("container_restart_count", rc.0.to_string());
        }
        rows.push(r);
    }
    Ok(())
}

/// The kind of a Node condition; `None` for states that are not worth a row (Unknown
/// for anything but Ready).
fn node_condition_kind(
    ctype: &str,
    status: &str,
) -> Option<(Cow<'static, str>, Severity, &'static str)> {
    let k = |s: &'static str| Cow::Borrowed(s);
    Some(match (ctype, status) {
        ("Ready", "True") => (k("node_ready"), Severity::Info, KUBERNETES),
        ("Ready", _) => (k("node_not_ready"), Severity::Error, KUBERNETES),
        ("MemoryPressure", "True") => (k("memory_pressure"), Severity::Warning, KUBERNETES),
        ("MemoryPressure", "False") => (k("memory_pressure_cleared"), Severity::Info, KUBERNETES),
        ("DiskPressure", "True") => (k("disk_pressure"), Severity::Warning, KUBERNETES),
        ("DiskPressure", "False") => (k("disk_pressure_cleared"), Severity::Info, KUBERNETES),
        ("PIDPressure", "True") => (k("pid_pressure"), Severity::Warning, KUBERNETES),
        ("PIDPressure", "False") => (k("pid_pressure_cleared"), Severity::Info, KUBERNETES),
        ("NetworkUnavailable", "True") => (k("network_unavailable"), Severity::Warning, KUBERNETES),
        ("NetworkUnavailable", "False") => {
            (k("network_unavailable_cleared"), Severity::Info, KUBERNETES)
        }
        // Conditions set by node-problem-detector (KernelDeadlock, ReadonlyFilesystem,
        // FrequentKubeletRestart, …) and other node health agents.
        (other, "True") => (Cow::Owned(snake_case(other)), Severity::Warning, NPD),
        (other, "False") => (
            Cow::Owned(format!("{}_cleared", snake_case(other))),
            Severity::Info,
            NPD,
        ),
        _ => return None,
    })
}

/// Appends the rows of one Node.
pub fn node_rows(n: &Node<'_>, rows: &mut Vec<Row>) -> Result<(), K8sError> {
    let meta = &n.metadata;
    let name = text(&meta.name).unwrap_or("");
    let base = id_base("k8s-node", meta);
    let what = "Node";
    let mut attrs = Attrs::default();
    for (attr, label) in [
        ("instance_type", "node.kubernetes.io/instance-type"),
        ("zone", "topology.kubernetes.io/zone"),
        ("accelerator", "cloud.google.com/gke-accelerator"),
        ("gpu_product", "nvidia.com/gpu.product"),
        ("tpu_accelerator", "cloud.google.com/gke-tpu-accelerator"),
        ("nodepool", "cloud.google.com/gke-nodepool"),
    ] {
        attrs.opt(attr, meta.label(label));
    }
    for res in ["nvidia.com/gpu", "google.com/tpu", "amd.com/gpu"] {
        if let Some(v) = n.status.capacity.as_ref().and_then(|c| c.get(res)) {
            attrs.push(format!("capacity.{res}"), v);
        }
        if let Some(v) = n.status.allocatable.as_ref().and_then(|c| c.get(res)) {
            attrs.push(format!("allocatable.{res}"), v);
        }
    }
    if n.spec.unschedulable == Some(true) {
        attrs.push("unschedulable", "true");
    }
    let new_row =
        |t: Nanos, id: String, kind: Cow<'static, str>, sev: Severity, source: &'static str| {
            let mut r = Row::new(t, id, Layer::Infrastructure, source, kind, sev);
            r.node = (!name.is_empty()).then(|| name.to_string());
            r.attrs = attrs.clone();
            r
        };
    if let Some(t) = opt_time(
        what,
        name,
        "metadata.creationTimestamp",
        &meta.creation_timestamp,
    )? {
        rows.push(new_row(
            t,
            format!("{base}:registered"),
            Cow::Borrowed("node_registered"),
            Severity::Info,
            KUBERNETES,
        ));
    }
    for c in n.status.conditions.iter().flatten() {
        let Some(t) = condition_time(what, name, c)? else {
            continue;
        };
        let (ctype, status) = (text(&c.type_).unwrap_or(""), text(&c.status).unwrap_or(""));
        let Some((kind, sev, source)) = node_condition_kind(ctype, status) else {
            continue;
        };
        let mut r = new_row(t, condition_id(&base, c), kind, sev, source);
        r.reason = text(&c.reason).map(str::to_string);
        r.message = text(&c.message).map(str::to_string);
        r.attrs.push("condition_type", ctype);
        r.attrs.push("condition_status", status);
        rows.push(r);
    }
    for taint in n.spec.taints.iter().flatten() {
        let Some(added) = &taint.time_added else {
            continue;
        };
        let key = text(&taint.key).unwrap_or("");
        let t = read_time(what, name, &format!("spec.taints[{key}].timeAdded"), added)?;
        let (kind, sev) = if key == "node.kubernetes.io/unschedulable" {
            ("node_cordoned", Severity::Info)
        } else if key.contains("maintenance") || key.contains("impending-node-termination") {
            ("maintenance", Severity::Warning)
        } else {
            ("node_tainted", Severity::Info)
        };
        let effect = text(&taint.effect).unwrap_or("");
        let id = format!("{base}:taint:{key}:{effect}:{}", added.as_str().trim());
        let mut r = new_row(t, id, Cow::Borrowed(kind), sev, KUBERNETES);
        r.attrs.push("taint_key", key);
        r.attrs.opt("taint_value", text(&taint.value));
        r.attrs.push("taint_effect", effect);
        rows.push(r);
    }
    Ok(())
}

/// The time a controller's spec was last written: the latest `managedFields` entry that is
/// not a status write, else its creation.
fn spec_time(what: &'static str, name: &str, meta: &Meta<'_>) -> Result<Option<Nanos>, K8sError> {
    let mut latest = None;
    for mf in meta.managed_fields.iter().flatten() {
        if text(&mf.subresource).is_some() {
            continue;
        }
        latest = latest.max(opt_time(
            what,
            name,
            "metadata.managedFields[].time",
            &mf.time,
        )?);
    }
    match latest {
        Some(t) => Ok(Some(t)),
        None => opt_time(
            what,
            name,
            "metadata.creationTimestamp",
            &meta.creation_timestamp,
        ),
    }
}

/// Appends the rows of a Job, Deployment, StatefulSet or JobSet (`kind`), and of a
/// ReplicaSet (which only teaches the owners map). A JobSet's scale is its number of
/// Jobs (the replicas of its replicated Jobs): a slice removed is a scale-down.
pub fn controller_rows(
    kind: &'static str,
    c: &Controller<'_>,
    owners: &mut Owners,
    rows: &mut Vec<Row>,
) -> Result<(), K8sError> {
    let meta = &c.metadata;
    let name = text(&meta.name).unwrap_or("");
    let ns = text(&meta.namespace);
    if kind == "ReplicaSet" {
        if let Some(o) = meta.owner()
            && text(&o.kind) == Some("Deployment")
            && let Some(d) = text(&o.name)
            && !name.is_empty()
        {
            owners.learn_replica_set(ns, name, d);
        }
        return Ok(());
    }
    let prefix = match kind {
        "Job" => "k8s-job",
        "Deployment" => "k8s-deployment",
        "JobSet" => "k8s-jobset",
        _ => "k8s-statefulset",
    };
    let base = id_base(prefix, meta);
    let mut attrs = Attrs::default();
    attrs.push("workload_kind", kind);
    if let Some(o) = meta.owner() {
        attrs.opt("owner_kind", text(&o.kind));
        attrs.opt("owner_name", text(&o.name));
    }
    attrs.opt("queue_name", meta.label("kueue.x-k8s.io/queue-name"));
    attrs.opt(
        "priority_class",
        meta.label("kueue.x-k8s.io/priority-class"),
    );
    let s = &c.spec;
    let scale = match kind {
        "Job" => s.parallelism,
        // (A replicated Job without `replicas` runs one.)
        "JobSet" => s.replicated_jobs.as_ref().map(|jobs| {
            Int(jobs
                .iter()
                .map(|j| j.replicas.as_ref().map_or(1, |r| r.0.max(0)))
                .sum())
        }),
        _ => s.replicas,
    };
    if kind == "JobSet"
        && let Some(n) = &scale
    {
        attrs.push("replicas", n.0.to_string());
    }
    for (k, v) in [
        ("replicas", s.replicas),
        ("parallelism", s.parallelism),
        ("completions", s.completions),
        ("backoff_limit", s.backoff_limit),
    ] {
        if let Some(v) = v {
            attrs.push(k, v.0.to_string());
        }
    }
    if let Some(b) = s.suspend {
        attrs.push("suspend", b.to_string());
    }
    if let Some(b) = s.paused {
        attrs.push("paused", b.to_string());
    }
    attrs.opt("completion_mode", text(&s.completion_mode));
    let pod_spec = s.template.as_ref().and_then(|t| t.spec.as_ref());
    if let Some(ps) = pod_spec {
        attrs.opt("priority_class_name", text(&ps.priority_class_name));
        let factor = scale.map_or(1, |v| v.0.max(0));
        add_requests(
            ps.containers
                .iter()
                .flatten()
                .filter_map(|c| c.resources.as_ref()),
            factor,
            &mut attrs,
        );
    }
    let new_row = |t: Nanos, id: String, k: Cow<'static, str>, sev: Severity| {
        let mut r = Row::new(t, id, Layer::Orchestrator, KUBERNETES, k, sev);
        r.namespace = ns.map(str::to_string);
        r.workload = (!name.is_empty()).then(|| name.to_string());
        r.attrs = attrs.clone();
        r
    };
    let generation = meta.generation.map_or(0, |g| g.0);
    if let Some(t) = spec_time(kind, name, meta)? {
        rows.push(new_row(
            t,
            format!("{base}:config:{generation}"),
            Cow::Borrowed("config"),
            Severity::Info,
        ));
        if let Some(now) = scale
            && let Some(before) = owners.observe_scale(ns, kind, name, now.0)
            && before != now.0
        {
            let mut r = new_row(
                t,
                format!("{base}:scaled:{generation}:{before}:{}", now.0),
                Cow::Borrowed("scaled"),
                Severity::Info,
            );
            r.attrs.push("from_replicas", before.to_string());
            r.attrs.push("to_replicas", now.0.to_string());
            r.attrs
                .push("direction", if now.0 > before { "up" } else { "down" });
            rows.push(r);
        }
    }
    if let Some(t) = opt_time(kind, name, "status.startTime", &c.status.start_time)? {
        rows.push(new_row(
            t,
            format!("{base}:started:{t}"),
            Cow::Borrowed("job_started"),
            Severity::Info,
        ));
    }
    for cond in c.status.conditions.iter().flatten() {
        let ctype = text(&cond.type_).unwrap_or("");
        let status = text(&cond.status).unwrap_or("");
        let reason = text(&cond.reason).unwrap_or("");
        let (k, sev) = match (kind, ctype, status) {
            ("Job" | "JobSet", "Suspended", "True") => ("suspended", Severity::Info),
            ("Job" | "JobSet", "Suspended", "False") => ("resumed", Severity::Info),
            ("Job", "Complete", "True") | ("JobSet", "Completed", "True") => {
                ("job_completed", Severity::Info)
            }
            ("Job" | "JobSet", "Failed", "True") => ("job_failed", Severity::Warning),
            (_, "Available", "True") => ("available", Severity::Info),
            (_, "Available", "False") => ("unavailable", Severity::Warning),
            (_, "ReplicaFailure", "True") => ("replica_failure", Severity::Warning),
            (_, "Progressing", "False") if reason == "ProgressDeadlineExceeded" => {
                ("progress_deadline_exceeded", Severity::Warning)
            }
            _ => continue,
        };
        let Some(t) = condition_time(kind, name, cond)? else {
            continue;
        };
        let mut r = new_row(t, condition_id(&base, cond), Cow::Borrowed(k), sev);
        r.reason = (!reason.is_empty()).then(|| reason.to_string());
        r.message = text(&cond.message).map(str::to_string);
        r.attrs.push("condition_type", ctype);
        r.attrs.push("condition_status", status);
        rows.push(r);
    }
    // A JobSet's child Job being deleted before it finished: the JobSet controller removed
    // a slice (its replicas lowered) or recreates its Jobs. Told as the JobSet's `deleted`
    // of a Job, as the controllers' SuccessfulDelete events tell a pod's.
    if kind == "Job"
        && let Some(owner) = meta.owner().filter(|o| text(&o.kind) == Some("JobSet"))
        && let Some(jobset) = text(&owner.name)
        && let Some(t) = opt_time(
            kind,
            name,
            "metadata.deletionTimestamp",
            &meta.deletion_timestamp,
        )?
    {
        let ended = c.status.conditions.iter().flatten().any(|cond| {
            matches!(text(&cond.type_), Some("Complete" | "Failed"))
                && text(&cond.status) == Some("True")
        });
        if !ended {
            let mut r = new_row(
                t,
                format!("{base}:deleted"),
                Cow::Borrowed("deleted"),
                Severity::Info,
            );
            r.workload = Some(jobset.to_string());
            r.attrs = Default::default();
            r.message = Some(format!(
                "Job {name} of JobSet {jobset} deleted before it finished"
            ));
            r.attrs.push("child_kind", "Job");
            r.attrs.push("child_name", name);
            r.attrs.push("workload_kind", "JobSet");
            rows.push(r);
        }
    }
    Ok(())
}
