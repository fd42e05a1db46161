//! The k8s decoder on every input shape (List, JSON lines, concatenated objects, YAML
//! documents, watch streams, Kafka messages) and object kind (Events of both APIs,
//! Kueue Workloads, Pods, Nodes, Jobs, Deployments), with the edge cases: repeated
//! events, watch re-sends, missing uids, bad lines, odd timestamps, unknown kinds.

mod k8s_common;

use std::collections::BTreeSet;

use k8s_common::*;
use serde_json::json;
use whyslow_ingest::decode::k8s::K8sDecoder;

fn event(
    uid: &str,
    reason: &str,
    msg: &str,
    first: &str,
    last: &str,
    count: i64,
) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("x.{uid}"), "namespace": "llm", "uid": uid},
        "involvedObject": {"kind": "Pod", "name": "finetune-gemma-l4-0-vcxpz", "namespace": "llm"},
        "reason": reason, "message": msg, "type": "Normal",
        "firstTimestamp": first, "lastTimestamp": last, "count": count,
        "source": {"component": "kubelet", "host": "gke-gpu-7"},
    })
}

#[test]
fn list_json_lines_and_pretty_concatenation_agree() {
    let evs = [
        event(
            "a",
            "Pulling",
            "Pulling image \"x\"",
            "2026-11-29T10:00:00Z",
            "2026-11-29T10:00:00Z",
            1,
        ),
        event(
            "b",
            "Pulled",
            "Successfully pulled image \"x\"",
            "2026-11-29T10:00:40Z",
            "2026-11-29T10:00:40Z",
            1,
        ),
    ];
    let list = json!({"apiVersion": "v1", "kind": "List", "items": evs}).to_string();
    let lines: String = evs.iter().map(|e| format!("{e}\n")).collect();
    let pretty: String = evs
        .iter()
        .map(|e| format!("{}\n", serde_json::to_string_pretty(e).unwrap()))
        .collect();
    let array = serde_json::to_string(&evs).unwrap();
    let yaml: String = evs
        .iter()
        .map(|e| format!("---\n{}", serde_norway::to_string(e).unwrap()))
        .collect();
    let mut results = Vec::new();
    for (name, input) in [
        ("list", list),
        ("lines", lines),
        ("pretty", pretty),
        ("array", array),
        ("yaml", yaml),
    ] {
        let d = decode_bytes(name, input.as_bytes());
        assert_eq!(
            (d.counts.records, d.counts.produced, d.counts.rejected),
            (2, 2, 0),
            "{name}"
        );
        assert_eq!(d.kinds(), ["image_pulling", "image_pulled"], "{name}");
        results.push(d.rows);
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn event_list_items_without_kind_take_it_from_the_list() {
    // The API's EventList omits kind/apiVersion on items.
    let mut e = event(
        "a",
        "Killing",
        "Stopping container main",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    );
    e.as_object_mut().unwrap().remove("kind");
    let doc = json!({"kind": "EventList", "apiVersion": "v1", "items": [e]}).to_string();
    let d = decode_bytes("eventlist.json", doc.as_bytes());
    assert_eq!(d.kinds(), ["killing"]);
}

#[test]
fn repeated_events_and_watch_resends_give_stable_ids() {
    // A watch stream sends the same Event as it is bumped: count 1, then 3, then the same
    // object again. Rows: #1 (each time), #3 (twice): the distinct ids are #1 and #3.
    let e1 = event(
        "u",
        "BackOff",
        "Back-off restarting failed container",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    );
    let e3 = event(
        "u",
        "BackOff",
        "Back-off restarting failed container",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:04:00Z",
        3,
    );
    let stream = [
        json!({"type": "ADDED", "object": e1}),
        json!({"type": "MODIFIED", "object": e3}),
        json!({"type": "MODIFIED", "object": e3}),
    ]
    .iter()
    .map(|w| format!("{w}\n"))
    .collect::<String>();
    let d = decode_bytes("watch.jsonl", stream.as_bytes());
    assert_eq!((d.counts.records, d.counts.produced), (3, 3));
    let ids: BTreeSet<(&str, i64)> = d
        .rows
        .iter()
        .map(|r| (r.event_id.as_str(), r.time_ns))
        .collect();
    assert_eq!(
        ids.into_iter().collect::<Vec<_>>(),
        [
            ("k8s:u#1", ns("2026-11-29T10:00:00Z")),
            ("k8s:u#3", ns("2026-11-29T10:04:00Z"))
        ]
    );
    assert!(
        d.rows
            .iter()
            .all(|r| r.kind == "back_off" && r.severity == "warning")
    );
    // A watch ERROR (a Status) and a BOOKMARK are nothing to store.
    let d = decode_bytes(
        "w2.jsonl",
        b"{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}\n{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Event\",\"metadata\":{\"resourceVersion\":\"9\"}}}\n",
    );
    assert_eq!((d.counts.records, d.counts.skipped), (2, 2));
}

#[test]
fn events_k8s_io_series_uses_last_observed_time() {
    let e = json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "n1.x", "uid": "s1", "namespace": ""},
        "regarding": {"kind": "Node", "name": "gke-gpu-7"},
        "reason": "NodeNotReady", "note": "Node gke-gpu-7 status is now: NodeNotReady", "type": "Normal",
        "eventTime": "2026-11-29T10:00:00.123456Z", "reportingController": "node-controller",
        "series": {"count": 4, "lastObservedTime": "2026-11-29T10:03:00.5Z"},
    });
    let d = decode_bytes("ev.json", e.to_string().as_bytes());
    assert_eq!(d.kinds(), ["node_not_ready", "node_not_ready"]);
    assert_eq!(d.rows[0].time_ns, ns("2026-11-29T10:00:00.123456Z"));
    assert_eq!(d.rows[1].event_id, "k8s:s1#4");
    assert_eq!(d.rows[1].time_ns, ns("2026-11-29T10:03:00.5Z"));
    let r = &d.rows[0];
    assert_eq!(
        (r.layer.as_str(), r.severity.as_str()),
        ("infrastructure", "error")
    );
    assert_eq!(r.node.as_deref(), Some("gke-gpu-7"));
    assert_eq!(r.namespace, None, "an empty namespace is none");
}

#[test]
fn event_without_uid_is_hashed_and_stable() {
    let mut e = event(
        "x",
        "Scheduled",
        "Successfully assigned llm/finetune-gemma-l4-0-vcxpz to gke-gpu-8",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    );
    e["metadata"].as_object_mut().unwrap().remove("uid");
    e["source"] = json!({"component": "default-scheduler"});
    let a = decode_bytes("a.json", e.to_string().as_bytes());
    e["message"] = json!("Successfully assigned llm/finetune-gemma-l4-0-vcxpz to gke-gpu-8");
    let b = decode_bytes("b.json", e.to_string().as_bytes());
    assert_eq!(a.rows[0].event_id, b.rows[0].event_id);
    assert!(a.rows[0].event_id.starts_with("k8s:h") && a.rows[0].event_id.ends_with("#1"));
    let r = &a.rows[0];
    assert_eq!(r.kind, "scheduled");
    assert_eq!(
        r.node.as_deref(),
        Some("gke-gpu-8"),
        "from the Scheduled message"
    );
    assert_eq!(r.pod.as_deref(), Some("finetune-gemma-l4-0-vcxpz"));
    assert_eq!(
        r.workload.as_deref(),
        Some("finetune-gemma-l4"),
        "indexed Job pod naming"
    );
}

#[test]
fn kueue_preemption_event_keeps_the_preemptor() {
    let e = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "job-finetune-gemma-l4-6e2c1.1", "namespace": "llm", "uid": "k1"},
        "involvedObject": {"kind": "Workload", "name": "job-finetune-gemma-l4-6e2c1", "namespace": "llm", "apiVersion": "kueue.x-k8s.io/v1beta1"},
        "reason": "Preempted", "type": "Normal", "reportingComponent": "kueue-admission",
        "message": "Preempted to accommodate a workload (UID: 5c02, JobUID: 4548) due to prioritization in the ClusterQueue",
        "firstTimestamp": "2026-11-29T10:15:00Z", "lastTimestamp": "2026-11-29T10:15:00Z", "count": 1,
    });
    let d = decode_bytes("p.json", e.to_string().as_bytes());
    let r = &d.rows[0];
    assert_eq!(
        (r.kind.as_str(), r.source.as_str(), r.severity.as_str()),
        ("preempted", "kueue", "warning")
    );
    assert_eq!(r.workload.as_deref(), Some("finetune-gemma-l4"));
    assert_eq!(r.attr("preemptor_uid"), Some("5c02"));
    assert_eq!(r.attr("preemptor_job_uid"), Some("4548"));
    assert_eq!(r.attr("preemption_reason"), Some("InClusterQueue"));
    assert_eq!(
        r.attr("kueue_workload"),
        Some("job-finetune-gemma-l4-6e2c1")
    );
}

#[test]
fn scaling_replica_set_event() {
    let e = json!({
        "kind": "Event", "apiVersion": "v1",
        "metadata": {"name": "tgi.1", "namespace": "llm", "uid": "sc1"},
        "involvedObject": {"kind": "Deployment", "name": "tgi-gemma", "namespace": "llm"},
        "reason": "ScalingReplicaSet", "type": "Normal", "source": {"component": "deployment-controller"},
        "message": "Scaled up replica set tgi-gemma-7d9f8c6b5 from 1 to 3",
        "firstTimestamp": "2026-11-29T10:14:00Z", "lastTimestamp": "2026-11-29T10:14:00Z", "count": 1,
    });
    let d = decode_bytes("s.json", e.to_string().as_bytes());
    let r = &d.rows[0];
    assert_eq!(r.kind, "scaled");
    assert_eq!(r.workload.as_deref(), Some("tgi-gemma"));
    assert_eq!(
        (
            r.attr("from_replicas"),
            r.attr("to_replicas"),
            r.attr("direction")
        ),
        (Some("1"), Some("3"), Some("up"))
    );
}

#[test]
fn workload_transitions_seen_in_several_updates_are_one_row_each() {
    let wl = |conds: serde_json::Value| {
        json!({
            "apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
            "metadata": {"name": "job-finetune-gemma-l4-6e2c1", "namespace": "llm", "uid": "w1",
                "creationTimestamp": "2026-11-29T09:59:58Z",
                "labels": {"kueue.x-k8s.io/job-uid": "j1"},
                "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "finetune-gemma-l4", "uid": "j1", "controller": true}]},
            "spec": {"queueName": "lq-llm", "priority": 10, "priorityClassName": "low-priority", "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                "podSets": [{"name": "main", "count": 2, "template": {"spec": {"containers": [
                    {"name": "trainer", "resources": {"requests": {"nvidia.com/gpu": "2", "memory": "16Gi"}}}]}}}]},
            "status": {"admission": {"clusterQueue": "cq-gpu", "podSetAssignments": [{"name": "main", "flavors": {"nvidia.com/gpu": "l4"}, "count": 2}]},
                "requeueState": {"count": 1},
                "conditions": conds}
        })
    };
    let admitted = json!([
        {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "Quota reserved in ClusterQueue cq-gpu", "lastTransitionTime": "2026-11-29T10:00:00Z"},
        {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "The workload is admitted", "lastTransitionTime": "2026-11-29T10:00:00Z"}
    ]);
    let evicted = json!([
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor l4, 4 more needed", "lastTransitionTime": "2026-11-29T10:15:01Z"},
        {"type": "Admitted", "status": "False", "reason": "NoReservation", "message": "The workload has no reservation", "lastTransitionTime": "2026-11-29T10:15:01Z"},
        {"type": "Evicted", "status": "True", "reason": "Preempted", "message": "Preempted to accommodate a workload (UID: w2, JobUID: j2) due to prioritization in the ClusterQueue", "lastTransitionTime": "2026-11-29T10:15:00Z"},
        {"type": "Preempted", "status": "True", "reason": "InClusterQueue", "message": "Preempted to accommodate a workload (UID: w2, JobUID: j2) due to prioritization in the ClusterQueue", "lastTransitionTime": "2026-11-29T10:15:00Z"},
        {"type": "Requeued", "status": "True", "reason": "Preempted", "lastTransitionTime": "2026-11-29T10:15:01Z"}
    ]);
    let stream = [
        json!({"type": "ADDED", "object": wl(admitted.clone())}),
        json!({"type": "MODIFIED", "object": wl(admitted)}),
        json!({"type": "MODIFIED", "object": wl(evicted.clone())}),
        json!({"type": "MODIFIED", "object": wl(evicted)}),
    ]
    .iter()
    .map(|w| format!("{w}\n"))
    .collect::<String>();
    let d = decode_bytes("wl-watch.jsonl", stream.as_bytes());
    assert_eq!(d.counts.rejected, 0);
    let distinct: BTreeSet<&str> = d.rows.iter().map(|r| r.event_id.as_str()).collect();
    assert_eq!(
        distinct.len(),
        1 + 2 + 5,
        "created, 2 admission transitions, 5 eviction transitions"
    );
    let ev = d.of_kind("evicted")[0];
    assert_eq!(
        ev.event_id,
        "kueue:w1:Evicted:True:Preempted:2026-11-29T10:15:00Z"
    );
    assert_eq!(ev.workload.as_deref(), Some("finetune-gemma-l4"));
    assert_eq!(ev.namespace.as_deref(), Some("llm"));
    for (k, v) in [
        ("priority", "10"),
        ("priority_class", "low-priority"),
        ("queue_name", "lq-llm"),
        ("cluster_queue", "cq-gpu"),
        ("owner_kind", "Job"),
        ("owner_name", "finetune-gemma-l4"),
        ("job_uid", "j1"),
        ("requests.nvidia.com/gpu", "4"),
        ("requests.memory", "34359738368"),
        ("pods", "2"),
        ("flavor.nvidia.com/gpu", "l4"),
        ("requeue_count", "1"),
        ("eviction_reason", "Preempted"),
        ("preemptor_uid", "w2"),
        ("preemptor_job_uid", "j2"),
        ("preemption_reason", "InClusterQueue"),
    ] {
        assert_eq!(ev.attr(k), Some(v), "{k}");
    }
    let pending = d.of_kind("pending")[0];
    assert_eq!(
        (pending.attr("needed"), pending.attr("flavor")),
        (Some("4"), Some("l4"))
    );
    assert_eq!(d.of_kind("requeued").len(), 2);
    assert_eq!(d.of_kind("not_admitted").len(), 2);
}

#[test]
fn pods_nodes_and_controllers_as_inventory() {
    let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "tgi-gemma-serving", "namespace": "llm", "uid": "rs1",
            "ownerReferences": [{"kind": "Deployment", "name": "tgi-gemma", "controller": true}]}});
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "tgi-gemma-serving-x1", "namespace": "llm", "uid": "p1", "creationTimestamp": "2026-11-29T10:13:50Z",
            "ownerReferences": [{"kind": "ReplicaSet", "name": "tgi-gemma-serving", "controller": true}]},
        "spec": {"nodeName": "gke-gpu-9", "priority": 1000, "priorityClassName": "high",
            "containers": [{"name": "tgi", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]},
        "status": {"phase": "Running", "startTime": "2026-11-29T10:14:02Z",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-29T10:14:01Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-29T10:21:30Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-29T10:21:30Z"}],
            "containerStatuses": [{"name": "tgi", "restartCount": 1,
                "state": {"running": {"startedAt": "2026-11-29T10:20:00Z"}},
                "lastState": {"terminated": {"reason": "OOMKilled", "exitCode": 137, "startedAt": "2026-11-29T10:14:05Z", "finishedAt": "2026-11-29T10:19:58Z"}}}]}});
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "gke-gpu-9", "uid": "n9", "creationTimestamp": "2026-11-01T00:00:00Z",
            "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4", "node.kubernetes.io/instance-type": "g2-standard-24"}},
        "spec": {"unschedulable": true, "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-29T11:00:00Z"}]},
        "status": {"capacity": {"nvidia.com/gpu": "2"},
            "conditions": [
                {"type": "KernelDeadlock", "status": "True", "reason": "DockerHung", "message": "task docker:7 blocked for more than 120 seconds.", "lastTransitionTime": "2026-11-29T10:50:00Z"},
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "lastTransitionTime": "2026-11-01T00:00:10Z"},
                {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown", "message": "Kubelet stopped posting node status.", "lastTransitionTime": "2026-11-29T10:55:00Z"}]}});
    let deploy = |replicas: i64, generation: i64, t: &str| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "tgi-gemma", "namespace": "llm", "uid": "d1", "generation": generation, "creationTimestamp": "2026-11-29T09:00:00Z",
            "managedFields": [{"manager": "kubectl", "operation": "Update", "time": t},
                              {"manager": "kube-controller-manager", "operation": "Update", "subresource": "status", "time": "2026-11-29T12:00:00Z"}]},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "tgi", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}}},
        "status": {"conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "lastTransitionTime": "2026-11-29T09:01:00Z"}]}})
    };
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "finetune-gemma-l4", "namespace": "llm", "uid": "j1", "generation": 3, "creationTimestamp": "2026-11-29T09:30:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "lq-llm"}},
        "spec": {"parallelism": 2, "completions": 2, "suspend": true, "completionMode": "Indexed"},
        "status": {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended", "lastTransitionTime": "2026-11-29T10:15:02Z"}]}});
    let docs = [
        rs,
        pod,
        node,
        deploy(1, 1, "2026-11-29T09:00:00Z"),
        deploy(3, 2, "2026-11-29T10:14:00Z"),
        job,
    ]
    .iter()
    .map(|o| format!("---\n{}", serde_norway::to_string(o).unwrap()))
    .collect::<String>();
    let d = decode_bytes("inventory.yaml", docs.as_bytes());
    assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
    assert_eq!(
        (d.counts.records, d.counts.skipped),
        (6, 1),
        "the ReplicaSet only teaches ownership"
    );

    let placed = d.of_kind("pod_placed")[0];
    assert_eq!(
        placed.time_ns,
        ns("2026-11-29T10:14:01Z"),
        "PodScheduled transition"
    );
    assert_eq!(placed.node.as_deref(), Some("gke-gpu-9"));
    assert_eq!(
        placed.workload.as_deref(),
        Some("tgi-gemma"),
        "pod → ReplicaSet → Deployment by owner references"
    );
    assert_eq!(placed.attr("workload_kind"), Some("Deployment"));
    assert_eq!(placed.attr("requests.nvidia.com/gpu"), Some("2"));
    let ready = d.of_kind("pod_ready");
    assert_eq!(ready.len(), 1, "Ready, not ContainersReady");
    assert_eq!(ready[0].time_ns, ns("2026-11-29T10:21:30Z"));
    assert_eq!(ready[0].pod.as_deref(), Some("tgi-gemma-serving-x1"));
    let oom = d.of_kind("oom_killed")[0];
    assert_eq!(oom.time_ns, ns("2026-11-29T10:19:58Z"));
    assert_eq!(
        (
            oom.attr("container"),
            oom.attr("exit_code"),
            oom.reason.as_deref()
        ),
        (Some("tgi"), Some("137"), Some("OOMKilled"))
    );

    let nd = d.of_kind("kernel_deadlock")[0];
    assert_eq!(
        (nd.source.as_str(), nd.layer.as_str(), nd.severity.as_str()),
        ("node-problem-detector", "infrastructure", "warning")
    );
    assert_eq!(nd.node.as_deref(), Some("gke-gpu-9"));
    assert_eq!(nd.attr("accelerator"), Some("nvidia-l4"));
    let nr = d.of_kind("node_not_ready")[0];
    assert_eq!(
        (nr.time_ns, nr.severity.as_str()),
        (ns("2026-11-29T10:55:00Z"), "error")
    );
    assert_eq!(d.of_kind("memory_pressure_cleared").len(), 1);
    assert_eq!(
        d.of_kind("node_cordoned")[0].time_ns,
        ns("2026-11-29T11:00:00Z")
    );

    let configs = d.of_kind("config");
    assert_eq!(configs.len(), 3);
    let scaled = d.of_kind("scaled");
    assert_eq!(scaled.len(), 1);
    assert_eq!(
        scaled[0].time_ns,
        ns("2026-11-29T10:14:00Z"),
        "last spec write, not the status write"
    );
    assert_eq!(
        (
            scaled[0].attr("from_replicas"),
            scaled[0].attr("to_replicas")
        ),
        (Some("1"), Some("3"))
    );
    assert_eq!(scaled[0].attr("requests.nvidia.com/gpu"), Some("6"));
    let susp = d.of_kind("suspended")[0];
    assert_eq!(
        (susp.workload.as_deref(), susp.time_ns),
        (Some("finetune-gemma-l4"), ns("2026-11-29T10:15:02Z"))
    );
    let jc = configs
        .iter()
        .find(|c| c.workload.as_deref() == Some("finetune-gemma-l4"))
        .unwrap();
    assert_eq!(
        (
            jc.attr("parallelism"),
            jc.attr("suspend"),
            jc.attr("queue_name")
        ),
        (Some("2"), Some("true"), Some("lq-llm"))
    );
    assert_eq!(jc.event_id, "k8s-job:j1:config:3");
}

#[test]
fn learned_ownership_carries_across_files() {
    let mut dec = K8sDecoder::new();
    let pod = json!({"kind": "Pod", "apiVersion": "v1",
        "metadata": {"name": "worker", "namespace": "ml", "uid": "p",
            "ownerReferences": [{"kind": "Job", "name": "train-llama", "controller": true}]},
        "spec": {}, "status": {}});
    let d = decode_with(&mut dec, "pods.json", pod.to_string().as_bytes());
    assert_eq!(
        d.counts.skipped, 1,
        "a pod with no node and no times has nothing datable"
    );
    let mut e = event(
        "k",
        "Killing",
        "Stopping container main",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    );
    e["involvedObject"] = json!({"kind": "Pod", "name": "worker", "namespace": "ml"});
    let d = decode_with(&mut dec, "events.json", e.to_string().as_bytes());
    assert_eq!(
        d.rows[0].workload.as_deref(),
        Some("train-llama"),
        "no naming rule could tell this"
    );
}

#[test]
fn bad_records_are_rejected_whole_and_the_rest_is_kept() {
    let good = event(
        "g",
        "Pulled",
        "ok",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    )
    .to_string();
    let odd_time = event(
        "o",
        "Pulled",
        "ok",
        "2026-13-45T99:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    )
    .to_string();
    let no_time =
        json!({"kind": "Event", "metadata": {"name": "n"}, "reason": "Pulled"}).to_string();
    let wrong_type =
        json!({"kind": "Event", "metadata": {"name": "n"}, "count": "many"}).to_string();
    let no_kind = json!({"metadata": {"name": "n"}}).to_string();
    let unknown =
        json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "n"}}).to_string();
    let input = format!(
        "{good}\n{{\"kind\":\"Event\",\"metadata\":\n{odd_time}\n{no_time}\n{wrong_type}\n{no_kind}\n7\n{unknown}\n{good}\n"
    );
    let d = decode_bytes("mixed.jsonl", input.as_bytes());
    assert_eq!(d.counts.records, 9);
    assert_eq!(
        (d.counts.produced, d.counts.skipped, d.counts.rejected),
        (2, 1, 6)
    );
    let errs: Vec<(&str, &str)> = d
        .dead
        .iter()
        .map(|x| (x.source_ref.as_str(), x.error.as_str()))
        .collect();
    assert_eq!(errs[0].0, "mixed.jsonl:2");
    assert!(errs[0].1.starts_with("invalid JSON"), "{}", errs[0].1);
    assert_eq!(d.dead[0].payload, b"{\"kind\":\"Event\",\"metadata\":");
    assert_eq!(errs[1].0, "mixed.jsonl:3");
    assert!(
        errs[1]
            .1
            .contains("unreadable firstTimestamp '2026-13-45T99:00:00Z'"),
        "{}",
        errs[1].1
    );
    assert!(errs[2].1.contains("has no time"), "{}", errs[2].1);
    assert!(
        errs[3].1.contains("does not match its schema")
            && errs[3].1.contains("'many' is not an integer"),
        "{}",
        errs[3].1
    );
    assert!(errs[4].1.contains("no `kind`"), "{}", errs[4].1);
    assert!(
        errs[5].1.contains("not a Kubernetes object"),
        "{}",
        errs[5].1
    );
    assert_eq!(errs[5].0, "mixed.jsonl:7");
    assert_eq!(
        d.dead[1].payload,
        odd_time.as_bytes(),
        "the record verbatim"
    );
}

#[test]
fn kafka_message_is_one_record_all_or_nothing() {
    let good = event(
        "g",
        "Pulled",
        "ok",
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    )
    .to_string();
    let d = decode_kafka(good.as_bytes());
    assert_eq!(
        (d.counts.records, d.counts.produced, d.rows.len()),
        (1, 1, 1)
    );
    let two = format!("{good}\n{}\n", event("h", "Pulled", "ok", "bad", "bad", 1));
    let d = decode_kafka(two.as_bytes());
    assert_eq!(
        (d.counts.records, d.counts.rejected, d.rows.len()),
        (1, 1, 0)
    );
    assert_eq!(d.dead[0].source_ref, "k8s-events/0/42");
    assert_eq!(d.dead[0].payload, two.as_bytes());
    let d = decode_kafka(b"");
    assert_eq!((d.counts.records, d.counts.skipped), (1, 1));
}

#[test]
fn oversized_documents_are_rejected_and_large_lists_are_fine() {
    let big = event(
        "big",
        "Pulled",
        &"x".repeat(9 * 1024 * 1024),
        "2026-11-29T10:00:00Z",
        "2026-11-29T10:00:00Z",
        1,
    );
    let d = decode_bytes("big.json", big.to_string().as_bytes());
    assert_eq!(d.counts.rejected, 1);
    assert!(d.dead[0].error.contains("over the"), "{}", d.dead[0].error);
    let items: Vec<_> = (0..20_000)
        .map(|i| {
            event(
                &format!("u{i}"),
                "Pulled",
                "ok",
                "2026-11-29T10:00:00Z",
                "2026-11-29T10:00:00Z",
                1,
            )
        })
        .collect();
    let list = json!({"kind": "List", "apiVersion": "v1", "items": items}).to_string();
    let d = decode_bytes("list.json", list.as_bytes());
    assert_eq!(
        (d.counts.records, d.counts.produced, d.rows.len()),
        (20_000, 20_000, 20_000)
    );
}

#[test]
fn yaml_list_with_one_bad_item() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- kind: Event\n  metadata: {name: a, uid: a}\n  reason: Pulled\n  firstTimestamp: 2026-11-29T10:00:00Z\n- kind: Event\n  metadata: {name: b, uid: b}\n  reason: Pulled\n  firstTimestamp: not-a-time\n";
    let d = decode_bytes("list.yaml", yaml.as_bytes());
    assert_eq!(
        (d.counts.records, d.counts.produced, d.counts.rejected),
        (2, 1, 1)
    );
    assert!(d.dead[0].error.contains("not-a-time"));
    assert!(
        String::from_utf8_lossy(&d.dead[0].payload).contains("not-a-time"),
        "the item as JSON"
    );
    let broken = decode_bytes("broken.yaml", b"kind: Event\nmetadata: [unclosed\n");
    assert_eq!(broken.counts.rejected, 1);
    assert!(
        broken.dead[0].error.starts_with("invalid YAML"),
        "{}",
        broken.dead[0].error
    );
}

/// A JobSet (jobset.x-k8s.io/v1alpha2) watched as it is scaled from 4 slices to 3: its
/// config at each generation, `scaled` 4 → 3 at the spec write, and its conditions.
#[test]
fn a_jobset_scaled_down_is_a_scale_change() {
    let jobset = |generation: i64, replicas: i64, written: &str, completed: bool| {
        json!({"type": "MODIFIED", "object": {
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "llama-pt", "namespace": "foundation", "uid": "js-1",
                "generation": generation, "creationTimestamp": "2026-11-30T06:12:40Z",
                "managedFields": [{"manager": "kubectl", "operation": "Update",
                    "time": written, "fieldsType": "FieldsV1"}]},
            "spec": {"replicatedJobs": [
                {"name": "slice", "replicas": replicas, "template": {"spec": {"parallelism": 2}}},
                {"name": "driver", "template": {"spec": {"parallelism": 1}}}]},
            "status": {"conditions": if completed {
                json!([{"type": "Completed", "status": "True", "reason": "AllJobsCompleted",
                        "lastTransitionTime": "2026-11-30T13:00:00Z"}])
            } else { json!([]) }}}})
    };
    let lines = [
        jobset(1, 4, "2026-11-30T06:12:40Z", false),
        jobset(2, 3, "2026-11-30T10:50:03Z", false),
        jobset(2, 3, "2026-11-30T10:50:03Z", true),
    ]
    .iter()
    .map(|j| format!("{j}\n"))
    .collect::<String>();
    let d = decode_bytes("jobsets.jsonl", lines.as_bytes());
    let scaled = d.of_kind("scaled");
    assert_eq!(scaled.len(), 1, "{:?}", d.kinds());
    assert_eq!(scaled[0].time_ns, ns("2026-11-30T10:50:03Z"));
    assert_eq!(scaled[0].workload.as_deref(), Some("llama-pt"));
    assert_eq!(
        (
            scaled[0].attr("workload_kind"),
            scaled[0].attr("from_replicas"),
            scaled[0].attr("to_replicas"),
            scaled[0].attr("direction")
        ),
        (Some("JobSet"), Some("5"), Some("4"), Some("down")),
        "4 slices and a driver, then 3 and the driver"
    );
    let done = d.of_kind("job_completed");
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].time_ns, ns("2026-11-30T13:00:00Z"));
}

/// A JobSet's child Job deleted before it finished (the JobSet controller removing a
/// slice, its own spec write undated: no managedFields): the JobSet's `deleted` of a Job
/// at the Job's deletionTimestamp. A finished Job deleted (a TTL's cleanup) is not one.
#[test]
fn a_jobset_child_job_deleted_before_it_finished() {
    let job = |name: &str, complete: bool| {
        json!({"type": "DELETED", "object": {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "foundation", "uid": format!("uid-{name}"),
                "creationTimestamp": "2026-11-30T06:12:41Z",
                "deletionTimestamp": "2026-11-30T10:50:03Z",
                "ownerReferences": [{"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                    "name": "llama-pt", "uid": "js-1", "controller": true}]},
            "spec": {"parallelism": 2},
            "status": {"conditions": if complete {
                json!([{"type": "Complete", "status": "True",
                        "lastTransitionTime": "2026-11-30T10:40:00Z"}])
            } else { json!([]) }}}})
    };
    let lines = format!(
        "{}\n{}\n",
        job("llama-pt-slice-3", false),
        job("llama-pt-eval-0", true)
    );
    let d = decode_bytes("watch.jsonl", lines.as_bytes());
    let deleted = d.of_kind("deleted");
    assert_eq!(deleted.len(), 1, "{:?}", d.kinds());
    assert_eq!(deleted[0].time_ns, ns("2026-11-30T10:50:03Z"));
    assert_eq!(deleted[0].workload.as_deref(), Some("llama-pt"));
    assert_eq!(
        (deleted[0].attr("child_kind"), deleted[0].attr("child_name")),
        (Some("Job"), Some("llama-pt-slice-3"))
    );
}
