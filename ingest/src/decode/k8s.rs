//! The `k8s` decoder: Kubernetes objects (core/v1 and events.k8s.io/v1 Events, Pods,
//! Nodes, Jobs, Deployments, StatefulSets, ReplicaSets) and Kueue Workloads, as JSON or
//! YAML: a single object, a `List`, JSON lines, concatenated objects, YAML documents, or
//! watch events (`{"type":"ADDED","object":{…}}`, told apart from an Event by `object`).
//!
//! Records: the decoder is fed a whole file (`Framing::Document`) and accounts for each
//! document in it (each line of JSON lines, each YAML document, each item of a `List`) as
//! one record, dated by its line; a Kafka message is always one record, all or nothing.
//! Unknown kinds are skipped and counted; unreadable documents go to `dead_letters` whole.
//!
//! # Kinds written to `events.kind`
//! Layer `orchestrator` unless marked (I) for `infrastructure`. Sources: `kubernetes`,
//! `kueue` (Kueue's controllers, Workload objects), `node-problem-detector`.
//!
//! From Events (reason → kind; reasons not listed keep their own name in snake_case):
//! | reason | kind | attrs beyond the common ones |
//! |---|---|---|
//! | Scheduled | `scheduled` | (node and pod scope from "Successfully assigned NS/POD to NODE") |
//! | FailedScheduling | `failed_scheduling` | nodes_available, nodes_total, insufficient |
//! | Preempted, EvictedDueToPreempted / Preempting | `preempted` / `preempting` | preemptor_uid, preemptor_job_uid, preemption_reason, preemptor_path, preemptee_path |
//! | Evicted | `evicted` | low_resource; the preemption attrs when Kueue preempted |
//! | Killing | `killing` | |
//! | BackOff (crash loop) | `back_off` | |
//! | BackOff "pulling image" / Pulling / Pulled / Failed, ErrImagePull, ImagePullBackOff | `image_pull_back_off` / `image_pulling` / `image_pulled` / `image_pull_failed` | |
//! | OOMKilling, OOMKilled, SystemOOM | `oom_killed` | |
//! | NodeNotReady / NodeReady (I) | `node_not_ready` / `node_ready` | |
//! | Rebooted, NodeShutdown (I) | `rebooted`, `node_shutdown` | |
//! | NodeHas{Disk,Memory,PID}Pressure, NodeHasInsufficient{Memory,PID} (I) | `disk_pressure`, `memory_pressure`, `pid_pressure` (`…_cleared` for the NoPressure/Sufficient reasons) | |
//! | NodeNotSchedulable / NodeSchedulable (I) | `node_cordoned` / `node_uncordoned` | |
//! | reasons naming maintenance or repair / termination, HostError (I) | `maintenance` / `node_termination` | |
//! | node-problem-detector reasons: KernelOops, TaskHung, … (I) | `kernel_oops`, `task_hung`, … | |
//! | ScalingReplicaSet | `scaled` | direction, replica_set, from_replicas, to_replicas |
//! | SuccessfulCreate / SuccessfulDelete | `created` / `deleted` | child_kind, child_name |
//! | Suspended / Resumed / Completed | `suspended` / `resumed` / `completed` | |
//! | BackoffLimitExceeded / DeadlineExceeded | `backoff_limit_exceeded` / `deadline_exceeded` | |
//! | Kueue QuotaReserved / Admitted / Started | `quota_reserved` / `admitted` / `started` | cluster_queue, wait_seconds |
//! | Kueue Pending / Inadmissible | `pending` / `inadmissible` | pod_set, resource, flavor, needed, pending_preemptions |
//! | Kueue Requeued / Finished, FinishedWorkload / CreatedWorkload / Stopped | `requeued` / `finished` / `workload_created` / `stopped` | |
//! | kubelet Created / Started ("… container …") | `container_created` / `container_started` | |
//! | EvictionThresholdMet (I) / TaintManagerEviction / Descheduled | `eviction_threshold_met` / `taint_manager_eviction` / `descheduled` | |
//!
//! Common Event attrs: involved_kind, involved_name, involved_uid, field_path, container,
//! component, reporting_instance, action, related_kind, related_name, count, occurrence,
//! workload_kind, kueue_workload.
//!
//! From Kueue Workload objects: `workload_created` and one kind per condition transition
//! (`quota_reserved`, `pending`, `inadmissible`, `quota_released`, `admitted`,
//! `not_admitted`, `pods_ready`, `pods_not_ready`, `evicted`, `eviction_cleared`,
//! `preempted`, `preemption_cleared`, `requeued`, `requeue_pending`, `finished`; see
//! [`kueue`]), attrs kueue_workload, workload_uid, queue_name, cluster_queue, priority,
//! priority_class, priority_class_source, job_uid, active, pods, `requests.<resource>`
//! (summed over pod sets × count; cpu in cores, memory in bytes), `flavor.<resource>`,
//! requeue_count, owner_kind, owner_name, owner_uid, workload_kind, condition_type,
//! condition_status, eviction_reason, preemption_reason, preemptor_uid, preemptor_job_uid,
//! preemptor_path, preemptee_path, and the Pending numbers.
//!
//! From Pods: `pod_placed` (at PodScheduled, else startTime), `pod_ready` (at the Ready
//! condition's transition to True), `pod_unschedulable`,
//! `preempted` / `evicted` (DisruptionTarget; attr disruption_reason), `oom_killed` and
//! `container_terminated` (at finishedAt; attrs container, exit_code, started_at,
//! container_restart_count), `evicted` or the snake_case status reason of a Failed pod
//! (attr low_resource), `pod_terminating` (deletion requested; attr grace_seconds). Common
//! attrs: owner_kind, owner_name, workload_kind, phase, priority, priority_class,
//! `requests.<resource>`, restart_count.
//!
//! From Nodes (I): `node_registered`, `node_ready` / `node_not_ready`, `memory_pressure`,
//! `disk_pressure`, `pid_pressure`, `network_unavailable` (and `…_cleared`), any other
//! condition T (node-problem-detector's) as snake(T) / snake(T)`_cleared`, and from taints
//! with timeAdded `node_cordoned`, `maintenance`, `node_tainted` (attrs taint_key,
//! taint_value, taint_effect). Common attrs: instance_type, zone, accelerator,
//! gpu_product, tpu_accelerator, nodepool, `capacity.<gpu/tpu>`, `allocatable.<gpu/tpu>`,
//! unschedulable, condition_type, condition_status.
//!
//! From Jobs, Deployments, StatefulSets: `config` (per generation, at the last spec write;
//! attrs replicas, parallelism, completions, backoff_limit, suspend, paused,
//! completion_mode, queue_name, priority_class, priority_class_name, `requests.<resource>`
//! for the whole scale, owner_kind, owner_name, workload_kind), `scaled` when the replica
//! count or parallelism differs from the previous object seen (from_replicas, to_replicas,
//! direction), `job_started`, `suspended` / `resumed` (Job Suspended condition),
//! `job_completed`, `job_failed`, `available`, `unavailable`, `replica_failure`,
//! `progress_deadline_exceeded`.

mod events;
mod inventory;
mod kueue;
mod messages;
mod naming;
mod objects;
mod reasons;
mod row;
mod split;

pub use row::K8sError;

use crate::decode::{Decoder, Format, Framing, Hints, MAX_RECORD_BYTES, Origin, Output};
use naming::Owners;
use objects::{Controller, Event, Head, Node, Pod, Workload, text};
use row::Row;
use split::Piece;

/// Nesting allowed for watch events and lists inside one another.
const MAX_DEPTH: usize = 4;

/// Decodes Kubernetes and Kueue objects into events.
#[derive(Debug, Default)]
pub struct K8sDecoder {
    owners: Owners,
    rows: Vec<Row>,
}

impl K8sDecoder {
    /// A decoder with no ownership learned yet.
    pub fn new() -> Self {
        Self::default()
    }
}

/// What one record came to.
enum Outcome {
    Rows,
    Skipped,
}

impl K8sDecoder {
    /// Reads one object (or watch event / list), appending its rows to `self.rows`.
    /// On error nothing is left appended.
    fn object(
        &mut self,
        bytes: &[u8],
        implied_kind: Option<&str>,
        depth: usize,
    ) -> Result<Outcome, K8sError> {
        let mark = self.rows.len();
        let r = self.object_inner(bytes, implied_kind, depth);
        match r {
            Ok(_) if self.rows.len() == mark => Ok(Outcome::Skipped),
            Ok(_) => Ok(Outcome::Rows),
            Err(e) => {
                self.rows.truncate(mark);
                Err(e)
            }
        }
    }

    fn object_inner(
        &mut self,
        bytes: &[u8],
        implied_kind: Option<&str>,
        depth: usize,
    ) -> Result<(), K8sError> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(K8sError::TooLarge(bytes.len(), MAX_RECORD_BYTES));
        }
        if depth > MAX_DEPTH {
            return Err(K8sError::NotObject(format!(
                "watch events or lists nested more than {MAX_DEPTH} deep"
            )));
        }
        let head: Head = match serde_json::from_slice(bytes) {
            Ok(h) => h,
            Err(e) if e.is_data() => {
                return Err(K8sError::NotObject(format!(
                    "expected a JSON object with a `kind` ({e})"
                )));
            }
            Err(e) => return Err(K8sError::Json(e.to_string())),
        };
        if let Some(obj) = head.object {
            // A watch event. ERROR carries a Status, BOOKMARK only a resourceVersion.
            let wtype = head
                .type_
                .and_then(|t| serde_json::from_str::<objects::Text>(t.get()).ok());
            if matches!(
                wtype.as_ref().map(|t| t.as_str()),
                Some("ERROR" | "BOOKMARK")
            ) {
                return Ok(());
            }
            return self.object_inner(obj.get().as_bytes(), None, depth + 1);
        }
        let kind = text(&head.kind)
            .or(implied_kind)
            .or_else(|| head.event_shaped().then_some("Event"));
        if let Some(items) = head.items {
            // A List nested in a watch event: its items are read as part of this record.
            let item_kind = kind
                .and_then(|k| k.strip_suffix("List"))
                .filter(|k| !k.is_empty());
            for item in items {
                self.object_inner(item.get().as_bytes(), item_kind, depth + 1)?;
            }
            return Ok(());
        }
        let Some(kind) = kind else {
            return Err(K8sError::NotObject("the document has no `kind`".into()));
        };
        let schema = |e: serde_json::Error| K8sError::Schema {
            kind: kind.to_string(),
            detail: e.to_string(),
        };
        match kind {
            "Event" => {
                let ev: Event = serde_json::from_slice(bytes).map_err(schema)?;
                events::event_rows(&ev, &self.owners, &mut self.rows)
            }
            "Workload"
                if text(&head.api_version).is_none_or(|v| v.starts_with("kueue.x-k8s.io/")) =>
            {
                let wl: Workload = serde_json::from_slice(bytes).map_err(schema)?;
                kueue::workload_rows(&wl, &mut self.owners, &mut self.rows)
            }
            "Pod" => {
                let p: Pod = serde_json::from_slice(bytes).map_err(schema)?;
                inventory::pod_rows(&p, &mut self.owners, &mut self.rows)
            }
            "Node" => {
                let n: Node = serde_json::from_slice(bytes).map_err(schema)?;
                inventory::node_rows(&n, &mut self.rows)
            }
            "Job" | "Deployment" | "StatefulSet" | "ReplicaSet" | "JobSet" => {
                let k: &'static str = match kind {
                    "Job" => "Job",
                    "Deployment" => "Deployment",
                    "StatefulSet" => "StatefulSet",
                    "JobSet" => "JobSet",
                    _ => "ReplicaSet",
                };
                let c: Controller = serde_json::from_slice(bytes).map_err(schema)?;
                inventory::controller_rows(k, &c, &mut self.owners, &mut self.rows)
            }
            _ => Ok(()),
        }
    }

    /// Splits one JSON document into records: a List's items, else the document itself.
    /// Each record is `(bytes, offset, implied kind)`; a document that cannot even be
    /// read as a JSON value with members is one record that fails.
    fn records<'b>(bytes: &'b [u8], offset: usize, out: &mut Vec<Rec<'b>>) {
        #[derive(serde::Deserialize)]
        struct ListHead<'a> {
            #[serde(borrow)]
            kind: Option<objects::Text<'a>>,
            #[serde(borrow)]
            items: Option<Vec<&'a serde_json::value::RawValue>>,
        }
        if bytes.first() == Some(&b'[') {
            // A bare JSON array (`jq '.items'`): each element is a record.
            match serde_json::from_slice::<Vec<&serde_json::value::RawValue>>(bytes) {
                Ok(items) if !items.is_empty() => {
                    for it in items {
                        let b = it.get().as_bytes();
                        out.push(Rec {
                            bytes: b,
                            offset: offset + sub_offset(bytes, b),
                            implied: None,
                            error: None,
                        });
                    }
                }
                Ok(_) => out.push(Rec {
                    bytes,
                    offset,
                    implied: None,
                    error: None,
                }),
                Err(e) => out.push(Rec {
                    bytes,
                    offset,
                    implied: None,
                    error: Some(K8sError::Json(e.to_string())),
                }),
            }
            return;
        }
        if memchr::memmem::find(bytes, b"\"items\"").is_none() {
            out.push(Rec {
                bytes,
                offset,
                implied: None,
                error: None,
            });
            return;
        }
        match serde_json::from_slice::<ListHead>(bytes) {
            Ok(ListHead {
                kind,
                items: Some(items),
            }) if !items.is_empty() => {
                let implied = kind.and_then(|k| {
                    k.as_str()
                        .strip_suffix("List")
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                });
                for it in items {
                    let b = it.get().as_bytes();
                    out.push(Rec {
                        bytes: b,
                        offset: offset + sub_offset(bytes, b),
                        implied: implied.clone(),
                        error: None,
                    });
                }
            }
            _ => out.push(Rec {
                bytes,
                offset,
                implied: None,
                error: None,
            }),
        }
    }
}

/// One record of an input.
struct Rec<'b> {
    bytes: &'b [u8],
    offset: usize,
    implied: Option<String>,
    error: Option<K8sError>,
}

fn sub_offset(outer: &[u8], inner: &[u8]) -> usize {
    (inner.as_ptr() as usize).saturating_sub(outer.as_ptr() as usize)
}

/// Counts lines up to an offset, moving forward only.
struct LineCounter<'b> {
    input: &'b [u8],
    pos: usize,
    line: u64,
}

impl LineCounter<'_> {
    fn line_at(&mut self, offset: usize) -> u64 {
        let offset = offset.min(self.input.len());
        if offset < self.pos {
            self.pos = 0;
            self.line = 0;
        }
        self.line += memchr::memchr_iter(b'\n', &self.input[self.pos..offset]).count() as u64;
        self.pos = offset;
        self.line
    }
}

impl Decoder for K8sDecoder {
    fn format(&self) -> Format {
        Format::K8s
    }

    fn framing(&self) -> Framing {
        Framing::Document
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        self.rows.clear();
        let cluster = hints.cluster.as_deref();
        match origin {
            Origin::Kafka { .. } => {
                out.begin_record();
                match self.whole(bytes) {
                    Ok(()) if self.rows.is_empty() => out.skip(),
                    Ok(()) => {
                        for r in &self.rows {
                            r.append_to(&mut out.events, cluster);
                        }
                        out.produced();
                    }
                    Err(e) => out.reject(origin, Format::K8s, &e.to_string(), bytes),
                }
            }
            Origin::File { path, line } => {
                let pieces = split::pieces(bytes);
                if pieces.is_empty() {
                    out.begin_record();
                    out.skip();
                    return;
                }
                let mut lines = LineCounter {
                    input: bytes,
                    pos: 0,
                    line: 0,
                };
                for piece in pieces {
                    match piece {
                        Piece::Bad {
                            bytes: b,
                            offset,
                            error,
                        } => {
                            out.begin_record();
                            let o = Origin::File {
                                path,
                                line: line + lines.line_at(offset),
                            };
                            out.reject(&o, Format::K8s, &error.to_string(), b);
                        }
                        Piece::Json { bytes: b, offset } => {
                            let mut recs = Vec::new();
                            Self::records(b, offset, &mut recs);
                            for rec in recs {
                                let o = Origin::File {
                                    path,
                                    line: line + lines.line_at(rec.offset),
                                };
                                self.one_record(rec, &o, cluster, out);
                            }
                        }
                        Piece::Yaml { text: t, offset } => {
                            let o = Origin::File {
                                path,
                                line: line + lines.line_at(offset),
                            };
                            match split::yaml_to_json(t) {
                                Ok(json) => {
                                    let mut recs = Vec::new();
                                    Self::records(&json, 0, &mut recs);
                                    let single = recs.len() == 1;
                                    for rec in recs {
                                        // Items of a YAML List are kept as their JSON form;
                                        // a lone document keeps its YAML text.
                                        let raw: &[u8] =
                                            if single { t.as_bytes() } else { rec.bytes };
                                        let rec = Rec {
                                            bytes: rec.bytes,
                                            offset: 0,
                                            implied: rec.implied,
                                            error: rec.error,
                                        };
                                        self.one_record_with_payload(rec, raw, &o, cluster, out);
                                    }
                                }
                                Err(e) => {
                                    out.begin_record();
                                    out.reject(&o, Format::K8s, &e.to_string(), t.as_bytes());
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

impl K8sDecoder {
    fn one_record(
        &mut self,
        rec: Rec<'_>,
        origin: &Origin<'_>,
        cluster: Option<&str>,
        out: &mut Output,
    ) {
        let raw = rec.bytes;
        self.one_record_with_payload(rec, raw, origin, cluster, out);
    }

    fn one_record_with_payload(
        &mut self,
        rec: Rec<'_>,
        payload: &[u8],
        origin: &Origin<'_>,
        cluster: Option<&str>,
        out: &mut Output,
    ) {
        out.begin_record();
        let result = match rec.error {
            Some(e) => Err(e),
            None => self.object(rec.bytes, rec.implied.as_deref(), 0),
        };
        match result {
            Ok(Outcome::Skipped) => out.skip(),
            Ok(Outcome::Rows) => {
                for r in &self.rows {
                    r.append_to(&mut out.events, cluster);
                }
                self.rows.clear();
                out.produced();
            }
            Err(e) => out.reject(origin, Format::K8s, &e.to_string(), payload),
        }
    }

    /// A Kafka message: every document in it, all or nothing.
    fn whole(&mut self, bytes: &[u8]) -> Result<(), K8sError> {
        for piece in split::pieces(bytes) {
            match piece {
                Piece::Bad { error, .. } => return Err(error),
                Piece::Json { bytes: b, offset } => {
                    let mut recs = Vec::new();
                    Self::records(b, offset, &mut recs);
                    for rec in recs {
                        if let Some(e) = rec.error {
                            return Err(e);
                        }
                        self.object(rec.bytes, rec.implied.as_deref(), 0)?;
                    }
                }
                Piece::Yaml { text: t, .. } => {
                    let json = split::yaml_to_json(t)?;
                    let mut recs = Vec::new();
                    Self::records(&json, 0, &mut recs);
                    for rec in recs {
                        if let Some(e) = rec.error {
                            return Err(e);
                        }
                        self.object(rec.bytes, rec.implied.as_deref(), 0)?;
                    }
                }
            }
        }
        Ok(())
    }
}
