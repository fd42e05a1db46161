//! The k8s decoder on the real samples in `fixtures/samples/k8s-events` and
//! `fixtures/samples/kueue` (copied verbatim from the shared collection; see SOURCES.md
//! there). Objects decode with zero rejections; the text samples (kubectl tables and
//! describe output, docs markdown) are rejected whole with the reason, and the tests then
//! decode what they quote, turned into objects as each test explains.

mod k8s_common;

use k8s_common::*;

fn read(rel: &str) -> String {
    std::fs::read_to_string(samples().join(rel)).unwrap()
}

/// Every sample file is covered by a test below.
#[test]
fn every_sample_is_tested() {
    let mut names = Vec::new();
    for dir in ["k8s-events", "kueue"] {
        for e in std::fs::read_dir(samples().join(dir)).unwrap() {
            names.push(e.unwrap().file_name().to_string_lossy().into_owned());
        }
    }
    names.sort();
    let this = include_str!("k8s_samples.rs");
    for n in names.iter().filter(|n| *n != "SOURCES.md") {
        assert!(this.contains(n.as_str()), "sample {n} has no test");
    }
    assert_eq!(names.len(), 12);
}

fn ids_times(d: &Decoded) -> Vec<(String, i64, String)> {
    d.rows
        .iter()
        .map(|r| (r.event_id.clone(), r.time_ns, r.kind.clone()))
        .collect()
}

#[test]
fn api_fixture_core_v1_event_json_and_yaml() {
    let json = decode_sample("k8s-events/k8s-api-roundtrip-fixture-core.v1.Event.json");
    let yaml = decode_sample("k8s-events/k8s-api-roundtrip-fixture-core.v1.Event.yaml");
    for d in [&json, &yaml] {
        assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
        assert_eq!((d.counts.records, d.counts.produced), (1, 1));
        // count 8 beats series.count 1: occurrence #1 at firstTimestamp, #8 at lastTimestamp.
        assert_eq!(
            ids_times(d),
            vec![
                (
                    "k8s:uidValue#1".to_string(),
                    ns("2006-01-01T01:01:01Z"),
                    "reason_value".to_string()
                ),
                (
                    "k8s:uidValue#8".to_string(),
                    ns("2007-01-01T01:01:01Z"),
                    "reason_value".to_string()
                ),
            ]
        );
        let r = &d.rows[0];
        assert_eq!(r.source, "kubernetes");
        assert_eq!(r.layer, "orchestrator");
        assert_eq!(
            r.severity, "info",
            "type 'typeValue' is neither Warning nor Error"
        );
        assert_eq!(r.node.as_deref(), Some("hostValue"));
        assert_eq!(r.namespace.as_deref(), Some("namespaceValue"));
        assert_eq!(r.reason.as_deref(), Some("reasonValue"));
        assert_eq!(r.message.as_deref(), Some("messageValue"));
        assert_eq!(r.cluster.as_deref(), Some("test-cluster"));
        assert_eq!(r.attr("involved_kind"), Some("kindValue"));
        assert_eq!(r.attr("involved_name"), Some("nameValue"));
        assert_eq!(r.attr("component"), Some("reportingComponentValue"));
        assert_eq!(r.attr("field_path"), Some("fieldPathValue"));
        assert_eq!(r.attr("count"), Some("8"));
    }
    assert_eq!(
        json.rows, yaml.rows,
        "the JSON and YAML forms of one object decode alike"
    );
}

#[test]
fn api_fixture_events_k8s_io_v1_event_json_and_yaml() {
    let json = decode_sample("k8s-events/k8s-api-roundtrip-fixture-events.k8s.io.v1.Event.json");
    let yaml = decode_sample("k8s-events/k8s-api-roundtrip-fixture-events.k8s.io.v1.Event.yaml");
    for d in [&json, &yaml] {
        assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
        // deprecatedCount 15 beats series.count 1; deprecatedFirstTimestamp before eventTime.
        assert_eq!(
            ids_times(d),
            vec![
                (
                    "k8s:uidValue#1".to_string(),
                    ns("2013-01-01T01:01:01Z"),
                    "reason_value".to_string()
                ),
                (
                    "k8s:uidValue#15".to_string(),
                    ns("2014-01-01T01:01:01Z"),
                    "reason_value".to_string()
                ),
            ]
        );
        let r = &d.rows[0];
        assert_eq!(
            r.message.as_deref(),
            Some("noteValue"),
            "note is the message"
        );
        assert_eq!(r.attr("component"), Some("reportingControllerValue"));
        assert_eq!(
            r.node.as_deref(),
            Some("hostValue"),
            "deprecatedSource.host"
        );
        assert_eq!(r.attr("related_kind"), Some("kindValue"));
        assert_eq!(r.attr("action"), Some("actionValue"));
    }
    assert_eq!(json.rows, yaml.rows);
}

#[test]
fn api_fixture_watch_event_of_unknown_kind_is_skipped() {
    // A watch event (recognized by `object`) wrapping a CustomType: not a kind whyslow reads.
    let d = decode_sample("k8s-events/k8s-api-roundtrip-fixture-core.v1.WatchEvent.json");
    assert_eq!(
        (d.counts.records, d.counts.skipped, d.counts.rejected),
        (1, 1, 0)
    );
    assert!(d.rows.is_empty());
}

/// Splits a kubectl table line on runs of two or more spaces.
fn columns(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A core/v1 Event from `[uid, involved kind, involved name, namespace, type, reason,
/// message, time, component]`.
fn core_event(fields: [&str; 9]) -> String {
    let [uid, kind, name, ns_, ty, reason, msg, t, component] = fields;
    serde_json::json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.{uid}"), "namespace": ns_, "uid": uid},
        "involvedObject": {"kind": kind, "name": name, "namespace": ns_},
        "reason": reason, "message": msg, "type": ty,
        "firstTimestamp": t, "lastTimestamp": t, "count": 1,
        "source": {"component": component},
    })
    .to_string()
}

#[test]
fn kubectl_describe_failed_scheduling_table() {
    // `kubectl describe pod` prints Events as a table of relative ages ("111s (x2 over
    // 6m58s)"): there is no time to date them, so the file is rejected whole, with why.
    let rel = "k8s-events/kubectl-describe-pod-events-FailedScheduling-gpu-palette.txt";
    let d = decode_sample(rel);
    assert_eq!((d.counts.records, d.counts.rejected), (1, 1));
    assert!(
        d.dead[0].error.contains("kubectl table or describe output"),
        "{}",
        d.dead[0].error
    );
    assert!(d.dead[0].error.contains("no timestamps"));
    assert_eq!(
        d.dead[0].payload,
        std::fs::read(samples().join(rel)).unwrap(),
        "kept whole"
    );
    assert_eq!(d.dead[0].source_ref, format!("{rel}:1"));

    // The row itself, as the object the API holds (the describe output's own columns, a
    // time chosen by the test, count 2 from "x2"), decodes with the real scheduler message.
    let text = read(rel);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("Warning"))
        .unwrap();
    let c = columns(line);
    assert_eq!(
        &c[..4],
        [
            "Warning",
            "FailedScheduling",
            "111s (x2 over 6m58s)",
            "default-scheduler"
        ]
    );
    let mut obj: serde_json::Value = serde_json::from_str(&core_event([
        "fs-1",
        "Pod",
        "ai-conformance-gpu-pod2",
        "k8s-ai-conformance",
        &c[0],
        &c[1],
        &c[4],
        "2026-11-29T10:00:00Z",
        &c[3],
    ]))
    .unwrap();
    obj["count"] = 2.into();
    obj["lastTimestamp"] = "2026-11-29T10:05:07Z".into();
    let d = decode_bytes("describe-row.json", obj.to_string().as_bytes());
    assert_eq!(d.counts.rejected, 0);
    assert_eq!(d.kinds(), ["failed_scheduling", "failed_scheduling"]);
    let r = &d.rows[1];
    assert_eq!(r.event_id, "k8s:fs-1#2");
    assert_eq!(r.severity, "warning");
    assert_eq!(r.pod.as_deref(), Some("ai-conformance-gpu-pod2"));
    assert_eq!(r.attr("insufficient"), Some("nvidia.com/gpu"));
    assert_eq!(
        (r.attr("nodes_available"), r.attr("nodes_total")),
        (Some("0"), Some("3"))
    );
}

#[test]
fn kueue_get_events_table() {
    // `kubectl get events` lines with the LAST SEEN column cut: no time at all.
    let rel = "kueue/kueue-events-gang-scheduling-vks.txt";
    let d = decode_sample(rel);
    assert_eq!((d.counts.records, d.counts.rejected), (1, 1));
    assert!(
        d.dead[0].error.contains("cannot be dated"),
        "{}",
        d.dead[0].error
    );

    // Each line as the Event object it was printed from: involvedObject is the Workload
    // (names `job-…-<hash>`) or the Job; times are one second apart in file order.
    let text = read(rel);
    let mut docs = String::new();
    for (i, line) in text.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        let c = columns(line);
        assert_eq!(c.len(), 4, "{line}");
        let kind = if c[2].starts_with("job-") {
            "Workload"
        } else {
            "Job"
        };
        let t = format!("2026-11-29T10:00:{i:02}Z");
        docs.push_str(&core_event([
            &format!("u{i}"),
            kind,
            &c[2],
            "team-a",
            &c[0],
            &c[1],
            &c[3],
            &t,
            "",
        ]));
        docs.push('\n');
    }
    let d = decode_bytes("kueue-events.jsonl", docs.as_bytes());
    assert_eq!(
        (d.counts.records, d.counts.produced, d.counts.rejected),
        (20, 20, 0)
    );
    let reserved = d.of_kind("quota_reserved");
    let waits: Vec<&str> = reserved
        .iter()
        .map(|r| r.attr("wait_seconds").unwrap())
        .collect();
    assert_eq!(waits, ["1", "35", "67"]);
    for r in &reserved {
        assert_eq!(r.source, "kueue");
        assert_eq!(r.attr("cluster_queue"), Some("cluster-queue"));
    }
    assert_eq!(
        reserved[1].workload.as_deref(),
        Some("sample-job-team-a-sqtjs"),
        "job-<job>-<hash> → Job"
    );
    assert_eq!(reserved[1].attr("workload_kind"), Some("Job"));
    assert_eq!(
        reserved[1].attr("kueue_workload"),
        Some("job-sample-job-team-a-sqtjs-4fbeb")
    );
    let admitted = d.of_kind("admitted");
    assert_eq!(admitted.len(), 3);
    assert!(admitted.iter().all(|r| r.attr("wait_seconds") == Some("0")));
    let pending = d.of_kind("pending");
    assert_eq!(pending.len(), 2);
    for p in &pending {
        assert_eq!(p.severity, "warning");
        assert_eq!(p.attr("resource"), Some("nvidia.com/gpu"));
        assert_eq!(p.attr("flavor"), Some("default-flavor"));
        assert_eq!(p.attr("needed"), Some("1"));
        assert_eq!(p.attr("pod_set"), Some("main"));
    }
    assert_eq!(d.of_kind("resumed").len(), 3);
    assert_eq!(d.of_kind("completed").len(), 3);
    assert_eq!(d.of_kind("finished").len(), 3);
    // The Job's "Started" has no Kueue component on record and is not about a Workload:
    // it keeps its reason as the kind.
    assert_eq!(d.of_kind("started").len(), 3);
}

#[test]
fn kueue_describe_cluster_queue() {
    // `kubectl describe ClusterQueue`: describe output (and a ClusterQueue holds no events).
    let d = decode_sample("kueue/kueue-describe-clusterqueue-vks.txt");
    assert_eq!((d.counts.records, d.counts.rejected), (1, 1));
    assert!(
        d.dead[0].error.contains("describe output"),
        "{}",
        d.dead[0].error
    );
}

/// The fenced blocks of a markdown file with their info string.
fn fenced(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut cur: Option<(String, String)> = None;
    for line in md.lines() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            match cur.take() {
                Some(block) => out.push(block),
                None => cur = Some((info.trim().to_string(), String::new())),
            }
        } else if let Some((_, body)) = cur.as_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    out
}

#[test]
fn kueue_docs_troubleshooting_workload_status() {
    let rel = "kueue/kueue-docs-troubleshooting-jobs-workload-status-excerpt.md";
    let d = decode_sample(rel);
    assert_eq!((d.counts.records, d.counts.rejected), (1, 1));
    assert!(d.dead[0].error.contains("markdown"), "{}", d.dead[0].error);

    // The YAML blocks quoted by the docs. The docs elide with `...` lines (in YAML a
    // document end marker), which are dropped; status-only blocks get the header of the
    // object the docs fetched (`kubectl get workload -n my-namespace my-workload -o yaml`).
    let blocks: Vec<String> = fenced(&read(rel))
        .into_iter()
        .filter(|(info, _)| info == "yaml")
        .map(|(_, b)| b)
        .collect();
    assert_eq!(blocks.len(), 6);
    let header_kind = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\n";
    let header_meta = "metadata:\n  name: my-workload\n  namespace: my-namespace\n  uid: wl-uid\n";
    let docs: Vec<String> = blocks
        .iter()
        .map(|b| {
            let body: String = b
                .lines()
                .filter(|l| l.trim() != "...")
                .map(|l| format!("{l}\n"))
                .collect();
            let mut doc = String::new();
            if !body.contains("kind:") {
                doc.push_str(header_kind);
            }
            if !body.contains("metadata:") {
                doc.push_str(header_meta);
            }
            doc + &body
        })
        .collect();
    let all = docs.join("---\n");
    let d = decode_bytes("docs-workloads.yaml", all.as_bytes());
    assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
    // Five Workloads and one ClusterQueue (not a kind whyslow reads: skipped).
    assert_eq!(
        (d.counts.records, d.counts.produced, d.counts.skipped),
        (6, 5, 1)
    );
    let by_time = |k: &str, t: &str| {
        d.rows
            .iter()
            .find(|r| r.kind == k && r.time_ns == ns(t))
            .unwrap_or_else(|| panic!("no {k} at {t}: {:?}", d.kinds()))
    };
    let qr = by_time("quota_reserved", "2024-03-19T20:49:17Z");
    assert_eq!(
        qr.attr("cluster_queue"),
        Some("cluster-queue"),
        "read from the message"
    );
    assert_eq!(
        qr.event_id,
        "kueue:wl-uid:QuotaReserved:True:QuotaReserved:2024-03-19T20:49:17Z"
    );
    by_time("admitted", "2024-03-19T20:49:17Z");
    let pend = by_time("pending", "2024-03-21T13:43:00Z");
    assert_eq!(
        (pend.attr("resource"), pend.attr("flavor")),
        (Some("cpu"), Some("default-flavor"))
    );
    let dws = by_time("quota_reserved", "2024-05-03T20:01:59Z");
    assert_eq!(
        dws.attr("cluster_queue"),
        Some("dws-cluster-queue"),
        "status.admission.clusterQueue"
    );
    by_time("inadmissible", "2024-03-21T13:55:21Z");
    let ev = by_time("evicted", "2024-03-21T15:49:55Z");
    assert_eq!(
        (ev.reason.as_deref(), ev.attr("eviction_reason")),
        (Some("Preempted"), Some("Preempted"))
    );
    assert_eq!(ev.severity, "warning");
    let again = by_time("pending", "2024-03-21T15:49:56Z");
    assert_eq!(
        (again.attr("needed"), again.attr("resource")),
        (Some("9"), Some("cpu"))
    );
    let na = by_time("not_admitted", "2024-03-21T15:49:56Z");
    assert_eq!(na.reason.as_deref(), Some("NoReservation"));
    assert!(
        d.rows
            .iter()
            .all(|r| r.namespace.as_deref() == Some("my-namespace") && r.source == "kueue")
    );
}

/// `kubectl describe` conditions (`Last Transition Time:  …` / `Type:  Admitted`) as
/// YAML conditions.
fn describe_conditions_to_yaml(block: &str) -> String {
    let mut conds: Vec<Vec<(String, String)>> = Vec::new();
    let mut in_conditions = false;
    for line in block.lines() {
        let t = line.trim();
        if t == "Conditions:" {
            in_conditions = true;
            continue;
        }
        if !in_conditions || t == "..." {
            continue;
        }
        let Some((k, v)) = t.split_once(':') else {
            break;
        };
        let key = match k {
            "Last Probe Time" => "lastProbeTime",
            "Last Transition Time" => "lastTransitionTime",
            "Message" => "message",
            "Reason" => "reason",
            "Status" => "status",
            "Type" => "type",
            _ => break,
        };
        if conds
            .last()
            .is_none_or(|c| c.iter().any(|(k2, _)| k2 == key))
        {
            conds.push(Vec::new());
        }
        conds
            .last_mut()
            .unwrap()
            .push((key.to_string(), v.trim().to_string()));
    }
    let mut y = String::from("status:\n  conditions:\n");
    for c in conds {
        for (i, (k, v)) in c.iter().enumerate() {
            y.push_str(if i == 0 { "  - " } else { "    " });
            y.push_str(&format!("{k}: {}\n", serde_json::to_string(v).unwrap()));
        }
    }
    y
}

#[test]
fn kueue_docs_run_jobs_describe_workload() {
    let rel = "kueue/kueue-docs-run-jobs-describe-workload-excerpt.md";
    let d = decode_sample(rel);
    assert_eq!((d.counts.records, d.counts.rejected), (1, 1));
    assert!(d.dead[0].error.contains("markdown"));

    // Its shell blocks are `kubectl describe` and table output: each one alone is still
    // rejected as such (or as not an object), never half-read.
    let blocks = fenced(&read(rel));
    let outputs: Vec<&String> = blocks
        .iter()
        .filter(|(_, b)| !b.trim_start().starts_with("kubectl "))
        .map(|(_, b)| b)
        .collect();
    assert_eq!(outputs.len(), 5);
    for b in &outputs {
        let d = decode_bytes("block.txt", b.as_bytes());
        assert_eq!(d.counts.produced, 0, "{b}");
        assert!(d.counts.rejected >= 1, "{b}");
    }

    // The describe output's Conditions, rewritten as the YAML they print (keys
    // camelCased), on the Workload the docs describe.
    let header = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: sample-job-sl4bm\n  namespace: default\n  uid: sl4bm\n";
    let pending_doc = format!("{header}{}", describe_conditions_to_yaml(outputs[0]));
    let finished_doc = format!("{header}{}", describe_conditions_to_yaml(outputs[3]));
    let d = decode_bytes(
        "describe.yaml",
        format!("{pending_doc}---\n{finished_doc}").as_bytes(),
    );
    assert_eq!(d.counts.rejected, 0, "{:?}", d.dead);
    assert_eq!(d.kinds(), ["not_admitted", "finished"]);
    assert_eq!(d.rows[0].time_ns, ns("2022-03-28T19:43:03Z"));
    assert_eq!(d.rows[0].reason.as_deref(), Some("Pending"));
    assert_eq!(d.rows[0].message.as_deref(), Some("workload didn't fit"));
    assert_eq!(d.rows[1].time_ns, ns("2022-03-28T19:43:37Z"));
    assert_eq!(d.rows[1].reason.as_deref(), Some("JobFinished"));
    // Not a Kueue-generated name: no owner can be told.
    assert_eq!(d.rows[1].workload, None);
}
