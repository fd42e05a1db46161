//! core/v1 and events.k8s.io/v1 `Event` objects: one row per datable occurrence.
//!
//! An Event seen with count n (`count`, `deprecatedCount` or `series.count`, whichever is
//! larger) gives occurrence #1 at its first time (`firstTimestamp` /
//! `deprecatedFirstTimestamp`, else `eventTime`, else `metadata.creationTimestamp`) and,
//! when n > 1, occurrence #n at the last time it came with (`series.lastObservedTime` when
//! the series holds the count, else `lastTimestamp` / `deprecatedLastTimestamp`). The
//! occurrences between were never dated by the source and are not invented.
//! `event_id` is `k8s:<uid>#<n>`; with no uid, `k8s:h<hash of namespace, name, reason,
//! first time>#<n>`. Seeing the same object again (a watch update, a later dump) yields
//! the same ids, which the store keeps once.

use whyslow_schemas::Severity;

use super::messages;
use super::naming::Owners;
use super::objects::{Event, ObjectRef, text};
use super::reasons::{self, KUEUE};
use super::row::{Attrs, K8sError, Row, content_hash, opt_time};

/// The least severity a kind deserves whatever the Event's `type` says (the node
/// controller reports NodeNotReady as `Normal`, Kueue its preemptions too).
fn floor_severity(kind: &str) -> Severity {
    match kind {
        "node_not_ready" | "kernel_oops" | "kernel_deadlock" => Severity::Error,
        "rebooted"
        | "node_shutdown"
        | "node_termination"
        | "task_hung"
        | "oom_killed"
        | "preempted"
        | "evicted"
        | "failed_scheduling"
        | "back_off"
        | "image_pull_failed"
        | "image_pull_back_off"
        | "backoff_limit_exceeded"
        | "deadline_exceeded"
        | "pending"
        | "inadmissible"
        | "memory_pressure"
        | "disk_pressure"
        | "pid_pressure"
        | "maintenance" => Severity::Warning,
        _ => Severity::Info,
    }
}

fn type_severity(t: Option<&str>) -> Severity {
    match t {
        Some("Warning") => Severity::Warning,
        Some("Error") => Severity::Error,
        Some("Critical") => Severity::Critical,
        _ => Severity::Info,
    }
}

/// `spec.containers{main}` → `main`.
fn container_of_field_path(fp: &str) -> Option<&str> {
    let (_, rest) = fp.split_once('{')?;
    rest.strip_suffix('}')
}

/// Appends the rows of one Event.
pub fn event_rows(ev: &Event<'_>, owners: &Owners, rows: &mut Vec<Row>) -> Result<(), K8sError> {
    let empty = ObjectRef::default();
    let involved = ev
        .involved_object
        .as_ref()
        .or(ev.regarding.as_ref())
        .unwrap_or(&empty);
    let reason = text(&ev.reason).unwrap_or("");
    let message = text(&ev.message).or_else(|| text(&ev.note));
    let msg = message.unwrap_or("");
    let inv_kind = text(&involved.kind);
    let inv_name = text(&involved.name);
    let namespace = text(&involved.namespace).or_else(|| text(&ev.metadata.namespace));
    let src = ev.source.as_ref().or(ev.deprecated_source.as_ref());
    let component = text(&ev.reporting_component)
        .or_else(|| text(&ev.reporting_controller))
        .or_else(|| src.and_then(|s| text(&s.component)));
    let host = src.and_then(|s| text(&s.host));
    let name = text(&ev.metadata.name).or(inv_name).unwrap_or("");

    // Times and the occurrence count.
    let what = "Event";
    let first = match opt_time(what, name, "firstTimestamp", &ev.first_timestamp)? {
        Some(t) => Some(t),
        None => match opt_time(
            what,
            name,
            "deprecatedFirstTimestamp",
            &ev.deprecated_first_timestamp,
        )? {
            Some(t) => Some(t),
            None => match opt_time(what, name, "eventTime", &ev.event_time)? {
                Some(t) => Some(t),
                None => opt_time(
                    what,
                    name,
                    "metadata.creationTimestamp",
                    &ev.metadata.creation_timestamp,
                )?,
            },
        },
    };
    let legacy_count = ev.count.or(ev.deprecated_count).map_or(0, |c| c.0);
    let series = ev.series.as_ref();
    let series_count = series.and_then(|s| s.count).map_or(0, |c| c.0);
    let n = legacy_count.max(series_count).max(1);
    let legacy_last = match opt_time(what, name, "lastTimestamp", &ev.last_timestamp)? {
        Some(t) => Some(t),
        None => opt_time(
            what,
            name,
            "deprecatedLastTimestamp",
            &ev.deprecated_last_timestamp,
        )?,
    };
    let series_last = match series {
        Some(s) => opt_time(what, name, "series.lastObservedTime", &s.last_observed_time)?,
        None => None,
    };
    let last = if series_count >= legacy_count {
        series_last.or(legacy_last)
    } else {
        legacy_last.or(series_last)
    };
    if first.is_none() && last.is_none() {
        return Err(K8sError::NoTime {
            what,
            name: name.to_string(),
            fields: "firstTimestamp, eventTime, lastTimestamp, series.lastObservedTime, metadata.creationTimestamp",
        });
    }

    let source = reasons::event_source(component, inv_kind, reason);
    let (kind, layer) = reasons::event_kind(reason, msg, source);
    let severity = type_severity(text(&ev.type_)).max(floor_severity(&kind));

    let id_base = match text(&ev.metadata.uid) {
        Some(uid) => format!("k8s:{uid}"),
        None => {
            let first_s = first.map(|t| t.to_string()).unwrap_or_default();
            format!(
                "k8s:h{}",
                content_hash(&[namespace.unwrap_or(""), name, reason, &first_s])
            )
        }
    };

    // Scope.
    let mut node = host.map(str::to_string);
    let mut pod = None;
    let mut workload = None;
    let mut attrs = Attrs::default();
    attrs.opt("involved_kind", inv_kind);
    attrs.opt("involved_name", inv_name);
    attrs.opt("involved_uid", text(&involved.uid));
    if let Some(fp) = text(&involved.field_path) {
        attrs.push("field_path", fp);
        attrs.opt("container", container_of_field_path(fp));
    }
    attrs.opt("component", component);
    attrs.opt("reporting_instance", text(&ev.reporting_instance));
    attrs.opt("action", text(&ev.action));
    if let Some(rel) = &ev.related {
        attrs.opt("related_kind", text(&rel.kind));
        attrs.opt("related_name", text(&rel.name));
    }
    attrs.push("count", n.to_string());
    if let (Some(k), Some(nm)) = (inv_kind, inv_name) {
        match k {
            "Node" => node = Some(nm.to_string()),
            "Pod" => pod = Some(nm.to_string()),
            "Workload" => attrs.push("kueue_workload", nm),
            _ => {}
        }
        if let Some(w) = owners.workload_of(namespace, k, nm) {
            attrs.push("workload_kind", w.kind.as_ref());
            workload = Some(w.name.into_owned());
        }
    }

    // What the message says, by kind.
    match kind.as_ref() {
        "scheduled" => {
            if let Some((_, p, nd)) = messages::scheduled(msg) {
                node = Some(nd.to_string());
                if pod.is_none() {
                    pod = Some(p.to_string());
                }
            }
        }
        "scaled" => {
            messages::scaling(msg, &mut attrs);
        }
        "created" | "deleted" => {
            if let Some((ck, cn)) = messages::created_or_deleted(msg) {
                attrs.push("child_kind", ck);
                attrs.push("child_name", cn);
            }
        }
        "quota_reserved" | "admitted" | "started" if source == KUEUE => {
            messages::kueue_queue_and_wait(msg, &mut attrs)
        }
        "pending" | "inadmissible" => messages::kueue_pending(msg, &mut attrs),
        "image_pulled" => messages::image_pulled(msg, &mut attrs),
        "failed_scheduling" => failed_scheduling_attrs(msg, &mut attrs),
        "evicted" | "preempted" | "stopped" => {
            if msg.contains("to accommodate") {
                messages::kueue_preemption(msg, &mut attrs);
            }
            if let Some(r) = word_after(msg, "low on resource: ") {
                attrs.push("low_resource", r.trim_end_matches('.'));
            }
            if let Some(nd) = word_after(msg, " on node ") {
                node.get_or_insert_with(|| nd.trim_end_matches('.').to_string());
            }
        }
        _ => {}
    }

    let mut push = |occurrence: i64, t: i64| {
        let mut r = Row::new(
            t,
            format!("{id_base}#{occurrence}"),
            layer,
            source,
            kind.clone(),
            severity,
        );
        r.node = node.clone();
        r.namespace = namespace.map(str::to_string);
        r.workload = workload.clone();
        r.pod = pod.clone();
        r.reason = (!reason.is_empty()).then(|| reason.to_string());
        r.message = message.map(str::to_string);
        r.attrs = attrs.clone();
        r.attrs.push("occurrence", occurrence.to_string());
        rows.push(r);
    };
    if let Some(t) = first {
        push(1, t);
    }
    if n > 1
        && let Some(t) = last
    {
        push(n, t);
    } else if first.is_none()
        && let Some(t) = last
    {
        push(n, t);
    }
    Ok(())
}

fn word_after<'m>(msg: &'m str, marker: &str) -> Option<&'m str> {
    let i = msg.find(marker)? + marker.len();
    msg[i..]
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .next()
        .filter(|w| !w.is_empty())
}

/// `0/3 nodes are available: 1 node(s) had untolerated taint {…}, 2 Insufficient
/// nvidia.com/gpu. preemption: …`: nodes_available, nodes_total, insufficient (the
/// resources named, comma-separated).
fn failed_scheduling_attrs(msg: &str, attrs: &mut Attrs) {
    if let Some(i) = msg.find(" nodes are available") {
        let head = &msg[..i];
        let frac = head.rsplit(' ').next().unwrap_or("");
        if let Some((a, t)) = frac.split_once('/') {
            attrs.push("nodes_available", a);
            attrs.push("nodes_total", t);
        }
    }
    let mut found: Vec<&str> = Vec::new();
    let mut rest = msg;
    while let Some(i) = rest.find("Insufficient ") {
        rest = &rest[i + "Insufficient ".len()..];
        let r = rest
            .split(|c: char| c == ',' || c.is_whitespace())
            .next()
            .unwrap_or("")
            .trim_end_matches('.');
        if !r.is_empty() && !found.contains(&r) {
            found.push(r);
        }
    }
    if !found.is_empty() {
        attrs.push("insufficient", found.join(","));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows_of(json: &str) -> Vec<Row> {
        let ev: Event = serde_json::from_str(json).unwrap();
        let mut rows = Vec::new();
        event_rows(&ev, &Owners::default(), &mut rows).unwrap();
        rows
    }

    #[test]
    fn repeated_event_is_first_and_last_occurrence() {
        let rows = rows_of(
            r#"{"metadata":{"name":"p.1","namespace":"llm","uid":"u1"},
            "involvedObject":{"kind":"Pod","name":"ft-0-bcdfg","namespace":"llm","fieldPath":"spec.containers{main}"},
            "reason":"BackOff","message":"Back-off restarting failed container","type":"Warning",
            "firstTimestamp":"2026-11-29T10:00:00Z","lastTimestamp":"2026-11-29T10:05:00Z","count":4,
            "source":{"component":"kubelet","host":"gke-gpu-7"}}"#,
        );
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].event_id, "k8s:u1#1");
        assert_eq!(rows[1].event_id, "k8s:u1#4");
        assert_eq!(rows[1].time_ns - rows[0].time_ns, 300_000_000_000);
        assert_eq!(rows[0].kind, "back_off");
        assert_eq!(rows[0].severity, Severity::Warning);
        assert_eq!(rows[0].node.as_deref(), Some("gke-gpu-7"));
        assert_eq!(rows[0].pod.as_deref(), Some("ft-0-bcdfg"));
        assert_eq!(rows[0].workload.as_deref(), Some("ft"));
        assert_eq!(rows[0].attrs.get("container"), Some("main"));
    }

    #[test]
    fn no_uid_hashes_and_no_time_is_an_error() {
        let a = rows_of(
            r#"{"metadata":{"name":"e","namespace":"n"},"reason":"Pulled","firstTimestamp":"2026-11-29T10:00:00Z"}"#,
        );
        let b = rows_of(
            r#"{"metadata":{"name":"e","namespace":"n"},"reason":"Pulled","firstTimestamp":"2026-11-29T10:00:00Z","message":"other"}"#,
        );
        assert_eq!(a[0].event_id, b[0].event_id);
        assert!(a[0].event_id.starts_with("k8s:h"));
        let ev: Event =
            serde_json::from_str(r#"{"metadata":{"name":"e"},"reason":"Pulled"}"#).unwrap();
        let err = event_rows(&ev, &Owners::default(), &mut Vec::new()).unwrap_err();
        assert!(err.to_string().contains("no time"), "{err}");
        let ev: Event =
            serde_json::from_str(r#"{"metadata":{"name":"e"},"firstTimestamp":"yesterday"}"#)
                .unwrap();
        let err = event_rows(&ev, &Owners::default(), &mut Vec::new()).unwrap_err();
        assert!(
            err.to_string().contains("firstTimestamp 'yesterday'"),
            "{err}"
        );
    }

    #[test]
    fn failed_scheduling_numbers() {
        let mut a = Attrs::default();
        failed_scheduling_attrs(
            "0/3 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available",
            &mut a,
        );
        assert_eq!(a.get("nodes_available"), Some("0"));
        assert_eq!(a.get("nodes_total"), Some("3"));
        assert_eq!(a.get("insufficient"), Some("nvidia.com/gpu"));
    }
}
