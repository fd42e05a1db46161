//! `container-log`: container stdout/stderr as clusters ship it — CRI log files, Fluent
//! Bit / Vector enriched JSON records, plain `kubectl logs [--timestamps]` output — read
//! by the training-framework rules of `framework_lines` and the serving-engine rules of
//! `engine_lines` (vLLM's stats line) and `request_lines` (TGI's and TEI's per-request
//! line) into events and metrics.
//!
//! Time: a line is dated by its framing (CRI, `--timestamps`, the JSON record's time),
//! else by a timestamp the framework wrote into it (`[2025-10-18 00:08:51,982]`,
//! `I1129 10:15:02.123456`, `[W429 …]`: these have no zone and are read as UTC), else by
//! the nearest dated line before it in the same input (`time_from=preceding_line`), else
//! by `--time` / the Kafka message time (`time_from=default`); a line that says something
//! but can be dated by none of these is skipped and counted.

mod config_lines;
mod engine_lines;
mod framework_lines;
mod pod_names;
mod request_lines;
mod rust_args;
mod traceback;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Deserialize;
use whyslow_schemas::Layer;
use whyslow_schemas::builders::{EventRow, MetricRow, Scope};

use crate::decode::{Decoder, Format, Hints, MAX_RECORD_BYTES, Origin, Output};
use whyslow_schemas::time::{self, Nanos};

pub use framework_lines::{EventFinding, Finding, MetricFinding, classify, source};
pub use pod_names::{generated_pod_from_file_name, pod_from_file_name, scope_from_path};
use traceback::{Feed, Traceback};
use whyslow_schemas::kubernetes::owner_from_pod_name;

/// How a row's time was found (`attrs`/`labels` key `time_from`, absent when the line
/// carried its own).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeFrom {
    Own,
    /// The time its shipper stamped on the record (an OTLP log record's).
    Shipper,
    PrecedingLine,
    Default,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LineTime {
    ns: Nanos,
    from: TimeFrom,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonInt<'a> {
    Int(i64),
    #[serde(borrow)]
    Text(Cow<'a, str>),
}

impl JsonInt<'_> {
    fn get(&self) -> Option<i32> {
        match self {
            JsonInt::Int(v) => i32::try_from(*v).ok(),
            JsonInt::Text(s) => s.trim().parse().ok(),
        }
    }
}

/// Fluent Bit's `kubernetes` filter and Vector's `kubernetes_logs` source metadata.
#[derive(Deserialize, Default)]
struct KubernetesMeta<'a> {
    #[serde(borrow, alias = "pod_namespace")]
    namespace_name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    pod_name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "pod_node_name")]
    host: Option<Cow<'a, str>>,
    #[serde(borrow)]
    container_name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "pod_labels")]
    labels: Option<HashMap<Cow<'a, str>, Cow<'a, str>>>,
}

/// One JSON line: a Fluent Bit / Vector / docker json-file record around a log line,
/// or an application's own JSON log (Hugging Face / accelerate `{"name","message",
/// "timestamp","level"}`).
#[derive(Deserialize, Default)]
struct JsonRecord<'a> {
    #[serde(borrow)]
    log: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(borrow)]
    msg: Option<Cow<'a, str>>,
    #[serde(borrow)]
    time: Option<time::JsonTime<'a>>,
    #[serde(borrow)]
    timestamp: Option<time::JsonTime<'a>>,
    #[serde(borrow, rename = "@timestamp")]
    at_timestamp: Option<time::JsonTime<'a>>,
    #[serde(borrow)]
    date: Option<time::JsonTime<'a>>,
    #[serde(borrow)]
    asctime: Option<time::JsonTime<'a>>,
    #[serde(borrow)]
    stream: Option<Cow<'a, str>>,
    #[serde(borrow)]
    kubernetes: Option<KubernetesMeta<'a>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "RANK")]
    rank: Option<JsonInt<'a>>,
}

impl JsonRecord<'_> {
    fn line(&self) -> Option<&str> {
        self.log
            .as_deref()
            .or(self.message.as_deref())
            .or(self.msg.as_deref())
    }

    fn time(&self) -> Option<Nanos> {
        [
            &self.time,
            &self.timestamp,
            &self.at_timestamp,
            &self.date,
            &self.asctime,
        ]
        .into_iter()
        .flatten()
        .find_map(time::JsonTime::nanos)
    }

    /// The framework a JSON logger's `name` names (`transformers.trainer`, `torch…`).
    fn source(&self) -> Option<&'static str> {
        let name = self.name.as_deref()?;
        let root = name.split('.').next().unwrap_or(name);
        Some(match root {
            "transformers" | "accelerate" | "trl" | "peft" | "datasets" => source::HUGGINGFACE,
            "torch" => source::PYTORCH,
            "deepspeed" | "DeepSpeed" => source::DEEPSPEED,
            "jax" | "absl" => source::JAX,
            "MaxText" | "maxtext" => source::MAXTEXT,
            "torchtitan" => source::TORCHTITAN,
            _ => return None,
        })
    }
}

/// Whether a line is meant as a JSON object (and so must parse as one).
fn looks_like_json(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("{\"") || t.starts_with("{ \"")
}

/// What a path names: the kubelet's scope, and a pod from the file name.
/// What a log file's path names: namespace, pod and container (the kubelet's paths), the
/// pod its file is named after, the Slurm job whose output it is.
type PathNames = (pod_names::PathScope, Option<String>, Option<String>);

/// `--namespace`, pod, container and node of one line, with the workload and index.
#[derive(Default)]
struct Who<'a> {
    namespace: Option<Cow<'a, str>>,
    pod: Option<Cow<'a, str>>,
    container: Option<Cow<'a, str>>,
    node: Option<Cow<'a, str>>,
    workload: Option<Cow<'a, str>>,
    pod_index: Option<i32>,
    stream: Option<Cow<'a, str>>,
}

impl Who<'_> {
    fn to_owned_static(&self) -> Who<'static> {
        let own = |c: &Option<Cow<'_, str>>| c.as_deref().map(|s| Cow::Owned(s.to_string()));
        Who {
            namespace: own(&self.namespace),
            pod: own(&self.pod),
            container: own(&self.container),
            node: own(&self.node),
            workload: own(&self.workload),
            pod_index: self.pod_index,
            stream: own(&self.stream),
        }
    }
}

/// A traceback being read, with who wrote it.
struct OpenTraceback {
    traceback: Traceback<Option<LineTime>>,
    who: Who<'static>,
    rank: Option<i32>,
    /// The cluster its lines came with (emitted later, maybe without a line's hints).
    cluster: Option<String>,
    /// The Kafka offset of the message its first line came in.
    first_offset: Option<i64>,
}

/// State kept per stream (input, pod, container, stdout/stderr, rank prefix).
#[derive(Default)]
struct StreamState {
    traceback: Option<OpenTraceback>,
    /// When the stream's last profile capture began (a dated `Profiler session
    /// started.` or `Collecting data...`), until the line that says where it was saved.
    capture_began: Option<Nanos>,
    /// Reading the file list `nsys profile` prints after `Generated:`.
    nsys_listing: bool,
    /// Reading the `name=value,` lines of a Hugging Face `TrainingArguments` dump.
    training_args: bool,
    /// Reading the `name: value,` lines of a Rust server's `Args {` dump.
    server_args: Option<rust_args::OpenArgs>,
}

/// Per-container entries a stream's decoder remembers at most (see
/// `ContainerLogDecoder::bound_stream_memory`).
const MAX_REMEMBERED: usize = 65_536;

/// The `container-log` decoder. Holds per-stream state (partial CRI lines, open
/// tracebacks, the last time seen) until `finish`; a stream worker takes the tracebacks
/// that reached their exception line at each flush (`release_complete`).
#[derive(Default)]
pub struct ContainerLogDecoder {
    streams: HashMap<String, StreamState>,
    /// CRI `P` (partial) pieces waiting for their `F` line, with the first piece's time
    /// and the Kafka offset of the message it came in.
    partials: HashMap<String, (Nanos, String, Option<i64>)>,
    /// The Kafka offset of the message being decoded (`None` for a file).
    offset: Option<i64>,
    /// The last dated line's time, per input and pod.
    last_time: HashMap<String, Nanos>,
    /// Collective timeouts already reported (pod, rank, sequence number, op): PyTorch
    /// repeats the watchdog text in the exception it throws afterwards.
    timeouts_seen: HashSet<(String, Option<i32>, String, String)>,
    findings: Vec<Finding>,
    /// What the current input's path names (kept: every line of a file shares it).
    path_scope: Option<(String, Arc<PathNames>)>,
}

/// Splits a leading `[rankN]:` off a line.
fn strip_rank_prefix(l: &str) -> (Option<i32>, &str) {
    if let Some(rest) = l.strip_prefix("[rank")
        && let Some(close) = rest.find("]:")
        && let Ok(rank) = rest[..close].parse::<i32>()
    {
        return (Some(rank), &rest[close + 2..]);
    }
    (None, l)
}

/// Splits a leading `[node-N]: ` (Kubeflow Trainer's per-node log prefix) off a line.
fn strip_node_prefix(l: &str) -> (Option<&str>, &str) {
    if let Some(rest) = l.strip_prefix("[node-")
        && let Some(close) = rest.find("]: ").or_else(|| rest.find("]:"))
        && rest[..close].bytes().all(|c| c.is_ascii_digit())
    {
        let tail = &rest[close + 2..];
        return (
            Some(&l[1..close + 6]),
            tail.strip_prefix(' ').unwrap_or(tail),
        );
    }
    (None, l)
}

/// Splits `kubectl logs --prefix`'s `[pod/<pod>/<container>] ` off a line.
fn strip_kubectl_prefix(l: &str) -> (Option<(&str, &str)>, &str) {
    if let Some(rest) = l.strip_prefix("[pod/")
        && let Some(close) = rest.find("] ")
        && let Some((pod, container)) = rest[..close].split_once('/')
    {
        return (Some((pod, container)), &rest[close + 2..]);
    }
    (None, l)
}

/// Removes ANSI colour escapes (`\x1b[31m`) that torchtitan and others write.
fn strip_ansi(l: &str) -> Cow<'_, str> {
    if !l.contains('\x1b') {
        return Cow::Borrowed(l);
    }
    let mut out = String::with_capacity(l.len());
    let mut chars = l.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A timestamp the framework wrote at the start of its line: `2025-… ,982`,
/// `[2025-10-18 00:08:51,982]`, `[titan] 2025-…`, glog `I1129 10:15:02.123456`, absl's
/// `I0000 00:00:1770735834.933187` (epoch seconds, before `absl::InitializeLog()`),
/// c10 `[W429 01:22:58.895439547 …]`, vLLM's `INFO 08-20 02:39:37 …` (after V1's
/// `(APIServer pid=N) ` tag).
fn inner_time(l: &str, year_ref: Option<Nanos>) -> Option<Nanos> {
    // (Megatron-LM indents its iteration lines: ` [2026-11-14 08:12:01] iteration …`.)
    let l = l.trim_start();
    let candidates = [
        Some(l),
        l.strip_prefix('['),
        l.strip_prefix('[')
            .and_then(|r| r.split_once("] "))
            .map(|(_, r)| r),
    ];
    for c in candidates.into_iter().flatten() {
        if let Some(st) = time::parse_stamp_prefix(c).or_else(|| time::parse_absl_epoch_prefix(c)) {
            return Some(st.ns);
        }
        if let Some(y) = year_ref
            && let Some(st) =
                time::parse_glog_prefix(c, y).or_else(|| time::parse_python_level_prefix(c, y))
        {
            return Some(st.ns);
        }
    }
    None
}

fn event_id(parts: &[&[u8]]) -> String {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    for p in parts {
        h.update(&(p.len() as u64).to_le_bytes());
        h.update(p);
    }
    format!("{:032x}", h.digest128())
}

impl ContainerLogDecoder {
    /// A decoder with no state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Why a line cannot be read at all, if so: a JSON record that does not parse, or a
    /// line over the size limit.
    fn unreadable(line: &str) -> Option<String> {
        if line.len() > MAX_RECORD_BYTES {
            return Some(format!(
                "line of {} bytes is over the {MAX_RECORD_BYTES} byte limit",
                line.len()
            ));
        }
        if looks_like_json(line)
            && let Err(e) = serde_json::from_str::<JsonRecord<'_>>(line.trim_end())
        {
            return Some(format!("invalid JSON log record: {e}"));
        }
        None
    }

    /// Reads one line of an input; returns whether it became rows.
    fn line(&mut self, raw: &str, hints: &Hints, out: &mut Output) -> bool {
        let path = hints.path.as_deref().unwrap_or("");
        let mut who = Who::default();
        if self.path_scope.as_ref().is_none_or(|(p, _)| p != path) {
            let slurm_job = pod_names::slurm_job_from_file_name(path);
            // A Slurm job's output file is named after the job, not a pod.
            let file_pod = match slurm_job {
                Some(_) => None,
                None => pod_from_file_name(path),
            };
            let scope = (scope_from_path(path), file_pod, slurm_job);
            self.path_scope = Some((path.to_string(), Arc::new(scope)));
        }
        let cached = self
            .path_scope
            .as_ref()
            .map(|(_, c)| Arc::clone(c))
            .unwrap_or_default();
        let (from_path, file_pod, slurm_job) = (&cached.0, &cached.1, &cached.2);
        who.workload = slurm_job.as_deref().map(Cow::Borrowed);
        who.namespace = from_path
            .namespace
            .as_deref()
            .or(hints.namespace.as_deref())
            .map(Cow::Borrowed);
        who.pod = from_path
            .pod
            .as_deref()
            .or(hints.pod.as_deref())
            .or(file_pod.as_deref())
            .map(Cow::Borrowed);
        who.container = from_path.container.as_deref().map(Cow::Borrowed);
        who.node = hints.node.as_deref().map(Cow::Borrowed);

        let mut own_time: Option<Nanos> = None;
        let mut json_rank = None;
        let mut json_source = None;
        let mut labels: Option<HashMap<Cow<'_, str>, Cow<'_, str>>> = None;
        let mut line: Cow<'_, str> = Cow::Borrowed(raw);

        // Outer framing.
        let record;
        if looks_like_json(raw) {
            record = serde_json::from_str::<JsonRecord<'_>>(raw.trim_end()).unwrap_or_default();
            own_time = record.time();
            json_rank = record.rank.as_ref().and_then(JsonInt::get);
            json_source = record.source();
            if let Some(k) = &record.kubernetes {
                who.namespace = k.namespace_name.clone().or(who.namespace);
                who.pod = k.pod_name.clone().or(who.pod);
                who.container = k.container_name.clone().or(who.container);
                who.node = k.host.clone().or(who.node);
                labels = k.labels.clone();
            }
            who.stream = record.stream.clone();
            line = match record.line() {
                Some(l) => Cow::Owned(l.trim_end_matches(['\n', '\r']).to_string()),
                None => return false,
            };
        } else if let Some(st) = time::parse_stamp_prefix(raw)
            && st.has_offset
            && raw.as_bytes().get(st.len) == Some(&b' ')
        {
            let rest = &raw[st.len + 1..];
            let (stream, tag_rest) = rest.split_once(' ').unwrap_or((rest, ""));
            if matches!(stream, "stdout" | "stderr")
                && let Some((tag, content)) = tag_rest.split_once(' ').or(Some((tag_rest, "")))
                && (tag == "F" || tag == "P" || tag.starts_with("F:") || tag.starts_with("P:"))
            {
                let key = format!("{path}\0{}\0{stream}", who.pod.as_deref().unwrap_or(""));
                if tag.starts_with('P') {
                    let piece = self
                        .partials
                        .entry(key)
                        .or_insert_with(|| (st.ns, String::new(), self.offset));
                    if piece.1.len() + content.len() <= MAX_RECORD_BYTES {
                        piece.1.push_str(content);
                    }
                    return false;
                }
                own_time = Some(st.ns);
                who.stream = Some(Cow::Borrowed(stream));
                line = match self.partials.remove(&key) {
                    Some((first, mut joined, _)) => {
                        own_time = Some(first);
                        joined.push_str(content);
                        Cow::Owned(joined)
                    }
                    None => Cow::Borrowed(content),
                };
            } else {
                own_time = Some(st.ns);
                line = Cow::Borrowed(rest);
            }
        }

        // `kubectl logs --prefix`, then Kubeflow's `[node-N]: ` and PyTorch's `[rankN]:`.
        let (kubectl, rest) = strip_kubectl_prefix(&line);
        if let Some((pod, container)) = kubectl {
            who.pod = Some(Cow::Owned(pod.to_string()));
            who.container = Some(Cow::Owned(container.to_string()));
        }
        let (node_prefix, rest) = strip_node_prefix(rest);
        let (prefix_rank, rest) = strip_rank_prefix(rest);
        let cleaned = strip_ansi(rest);
        // tqdm redraws with `\r`: the last drawing is the line.
        let mut text: &str = cleaned
            .rsplit('\r')
            .find(|s| !s.trim().is_empty())
            .unwrap_or("");

        // An application JSON log inside the framing (Hugging Face, accelerate).
        let inner_record;
        if looks_like_json(text)
            && let Ok(r) = serde_json::from_str::<JsonRecord<'_>>(text.trim_end())
            && let Some(msg) = r.line()
        {
            own_time = own_time.or_else(|| r.time());
            json_rank = json_rank.or_else(|| r.rank.as_ref().and_then(JsonInt::get));
            json_source = json_source.or_else(|| r.source());
            inner_record = msg.to_string();
            text = &inner_record;
        }

        // Workload and index: labels first, then the pod's name (a Slurm job's output file
        // named its job above).
        if let Some(labels) = &labels {
            who.workload = pod_names::WORKLOAD_LABELS
                .iter()
                .find_map(|k| labels.get(*k).cloned())
                .or(who.workload);
            // A ReplicaSet's pod (`<deployment>-<template hash>-<five>`) with its
            // `pod-template-hash` label names its Deployment exactly: more surely than
            // an application label (`app.kubernetes.io/name` names the application, such
            // as `text-generation-inference`, not its Deployment).
            if let (Some(pod), Some(hash)) = (who.pod.as_deref(), labels.get("pod-template-hash"))
                && let Some(deployment) = pod_names::deployment_of(pod, hash)
            {
                who.workload = Some(Cow::Owned(deployment.to_string()));
            }
            who.pod_index = pod_names::INDEX_LABELS
                .iter()
                .find_map(|k| labels.get(*k)?.parse().ok());
        }
        if let Some(pod) = who.pod.as_deref()
            && let Some(owner) = owner_from_pod_name(pod)
        {
            if who.workload.is_none() {
                who.workload = Some(Cow::Owned(owner.workload.to_string()));
            }
            who.pod_index = who.pod_index.or(owner.index);
        }

        let source_key = format!(
            "{path}\0{}\0{}",
            who.pod.as_deref().unwrap_or(""),
            who.container.as_deref().unwrap_or("")
        );
        let year_ref = self
            .last_time
            .get(&source_key)
            .copied()
            .or(hints.default_time_ns);
        let when = match own_time.or_else(|| inner_time(text, year_ref)) {
            Some(ns) => {
                self.last_time.insert(source_key.clone(), ns);
                Some(LineTime {
                    ns,
                    from: TimeFrom::Own,
                })
            }
            None => match (hints.record_time_ns, self.last_time.get(&source_key)) {
                (Some(ns), _) => Some(LineTime {
                    ns,
                    from: TimeFrom::Shipper,
                }),
                (None, Some(&ns)) => Some(LineTime {
                    ns,
                    from: TimeFrom::PrecedingLine,
                }),
                (None, None) => hints.default_time_ns.map(|ns| LineTime {
                    ns,
                    from: TimeFrom::Default,
                }),
            },
        };

        let line_rank = prefix_rank.or(json_rank);
        let stream_key = format!(
            "{source_key}\0{}\0{}\0{}",
            who.stream.as_deref().unwrap_or(""),
            node_prefix.unwrap_or(""),
            line_rank.map_or(String::new(), |r| r.to_string())
        );
        let mut wrote = false;

        // An open traceback takes the line first.
        let state = self.streams.entry(stream_key.clone()).or_default();
        if let Some(open) = state.traceback.as_mut() {
            match open.traceback.feed(text, when) {
                Feed::Consumed => return false,
                Feed::Ended(ev) => {
                    let open = state.traceback.take();
                    if let (Some(ev), Some(open)) = (ev, open)
                        && let Some(t) = open.traceback.exception_time().flatten()
                    {
                        let msg = open.traceback.exception_text().unwrap_or_default();
                        wrote |= self.emit_event(&ev, &msg, t, open.rank, &open.who, hints, out);
                    }
                }
            }
        }
        // Profile captures: their start, and nsys' list of the files it generated.
        let dated = when.filter(|t| matches!(t.from, TimeFrom::Own | TimeFrom::Shipper));
        let state = self.streams.entry(stream_key.clone()).or_default();
        if framework_lines::capture_began(text) {
            state.capture_began = dated.map(|t| t.ns);
            return wrote;
        }
        if text.trim() == framework_lines::NSYS_GENERATED {
            state.nsys_listing = true;
            return wrote;
        }
        if state.nsys_listing {
            if let Some(path) = framework_lines::nsys_listed_file(text) {
                if let (Some(mut e), Some(t)) = (framework_lines::nsys_report(path), when) {
                    let began = state.capture_began.take();
                    push_capture_seconds(&mut e, began, dated);
                    wrote |= self.emit_event(&e, text.trim(), t, line_rank, &who, hints, out);
                }
                return wrote;
            }
            state.nsys_listing = false;
        }
        if state.training_args {
            if config_lines::hf_args_closed(text) {
                state.training_args = false;
                return wrote;
            }
            match (config_lines::hf_arg(text), when) {
                (Some(Finding::Event(e)), Some(t)) => {
                    let message = config_lines::message(&e);
                    wrote |= self.emit_event(&e, &message, t, line_rank, &who, hints, out);
                    return wrote;
                }
                (Some(_), None) => return wrote,
                // Not a parameter: the dump is over (cut short), the line is read as any.
                _ => state.training_args = false,
            }
        }
        if let Some(open) = state.server_args.as_mut() {
            match open.feed(text) {
                rust_args::Step::Param(Finding::Event(e)) => {
                    if let Some(t) = when {
                        let message = config_lines::message(&e);
                        wrote |= self.emit_event(&e, &message, t, line_rank, &who, hints, out);
                    }
                    return wrote;
                }
                rust_args::Step::Param(_) | rust_args::Step::Inside => return wrote,
                rust_args::Step::Closed => {
                    state.server_args = None;
                    return wrote;
                }
                // Cut short: the line is read as any.
                rust_args::Step::Outside => state.server_args = None,
            }
        }
        if config_lines::hf_args_opened(text) {
            state.training_args = true;
            return wrote;
        }
        if let Some(open) = rust_args::OpenArgs::opened(text) {
            state.server_args = Some(open);
            return wrote;
        }
        if text.trim_end() == traceback::HEADER {
            let open = OpenTraceback {
                traceback: Traceback::new(),
                who: who.to_owned_static(),
                rank: line_rank,
                cluster: hints.cluster.clone(),
                first_offset: self.offset,
            };
            self.streams.entry(stream_key).or_default().traceback = Some(open);
            return wrote;
        }

        let mut findings = std::mem::take(&mut self.findings);
        findings.clear();
        if framework_lines::classify(text, &mut findings)
            && let Some(t) = when
        {
            for f in &findings {
                match f {
                    Finding::Event(e) => {
                        let mut e = e.clone();
                        if e.kind == "profile_captured" {
                            let began = self
                                .streams
                                .get_mut(&stream_key)
                                .and_then(|s| s.capture_began.take());
                            push_capture_seconds(&mut e, began, dated);
                        }
                        if let Some(s) = json_source
                            && e.source == source::APP
                        {
                            e.source = s;
                        }
                        // One line may dump many parameters: each is its own event.
                        let param = (e.kind == config_lines::CONFIG_PARAM)
                            .then(|| config_lines::message(&e));
                        let message = param.as_deref().unwrap_or(text);
                        wrote |= self.emit_event(&e, message, t, line_rank, &who, hints, out);
                    }
                    Finding::Metric(m) => {
                        let src = if m.source == source::APP {
                            json_source.unwrap_or(m.source)
                        } else {
                            m.source
                        };
                        emit_metric(m, src, t, line_rank.or(who.pod_index), &who, hints, out);
                        wrote = true;
                    }
                }
            }
        }
        self.findings = findings;
        wrote
    }

    #[allow(clippy::too_many_arguments)]
    fn emit_event(
        &mut self,
        e: &EventFinding,
        message: &str,
        t: LineTime,
        line_rank: Option<i32>,
        who: &Who<'_>,
        hints: &Hints,
        out: &mut Output,
    ) -> bool {
        let rank = line_rank.or(e.rank).or(who.pod_index);
        if e.kind == "collective_timeout"
            && let Some(seq) = e.attrs.iter().find(|(k, _)| *k == "seq_num")
        {
            let op = e
                .attrs
                .iter()
                .find(|(k, _)| *k == "op_type")
                .map_or("", |(_, v)| v.as_str());
            let key = (
                who.pod.as_deref().unwrap_or("").to_string(),
                rank,
                seq.1.clone(),
                op.to_string(),
            );
            if !self.timeouts_seen.insert(key) {
                return false;
            }
        }
        let rank_text = rank.map(|r| r.to_string());
        let id = event_id(&[
            b"container-log",
            who.namespace.as_deref().unwrap_or("").as_bytes(),
            who.pod.as_deref().unwrap_or("").as_bytes(),
            who.container.as_deref().unwrap_or("").as_bytes(),
            rank_text.as_deref().unwrap_or("").as_bytes(),
            &t.ns.to_le_bytes(),
            e.kind.as_bytes(),
            message.as_bytes(),
        ]);
        let mut attrs: Vec<(&str, Cow<'_, str>)> = e
            .attrs
            .iter()
            .map(|(k, v)| (*k, Cow::Borrowed(v.as_str())))
            .collect();
        if let Some(r) = &rank_text {
            attrs.push(("rank", Cow::Borrowed(r)));
        }
        if let Some(s) = e.step
            && !attrs.iter().any(|(k, _)| *k == "step")
        {
            attrs.push(("step", Cow::Owned(s.to_string())));
        }
        push_context(&mut attrs, who, t);
        let row = EventRow {
            time_ns: t.ns,
            event_id: &id,
            layer: Layer::Framework,
            source: e.source,
            kind: e.kind,
            severity: e.severity,
            scope: scope(who, hints),
            reason: e.reason.as_deref(),
            message: Some(message),
        };
        out.events.append(&row, attrs);
        true
    }

    /// Emits the events of `open` tracebacks (those that reached an exception line), in
    /// the order the exceptions were written; returns how many.
    fn emit_held(&mut self, mut open: Vec<OpenTraceback>, out: &mut Output) -> u64 {
        let mut emitted = 0;
        open.sort_by_key(|o| o.traceback.exception_time().flatten().map(|t| t.ns));
        for mut open in open {
            let (Some(ev), Some(t)) = (
                open.traceback.take_event(),
                open.traceback.exception_time().flatten(),
            ) else {
                continue;
            };
            let msg = open.traceback.exception_text().unwrap_or_default();
            let hints = Hints {
                cluster: open.cluster.take(),
                ..Hints::default()
            };
            if self.emit_event(&ev, &msg, t, open.rank, &open.who, &hints, out) {
                emitted += 1;
            }
        }
        emitted
    }

    /// Emits the tracebacks that reached their exception line, and forgets the streams
    /// that hold nothing open. A traceback is only known to be over when the next line of
    /// its stream comes, which a crashed container never writes; a stream worker calls
    /// this at each flush so that the exception is committed with the message that
    /// carried it. Only a chained traceback whose `During handling of …` line comes after
    /// the flush reads differently from a file: as two events (the first exception, then
    /// the last) instead of one (the last).
    fn release_complete_tracebacks(&mut self, out: &mut Output) -> u64 {
        let mut complete = Vec::new();
        self.streams.retain(|_, s| {
            if s.traceback
                .as_ref()
                .is_some_and(|o| o.traceback.is_complete())
            {
                complete.extend(s.traceback.take());
            }
            s.traceback.is_some() || s.capture_began.is_some() || s.training_args
        });
        self.emit_held(complete, out)
    }

    /// Keeps a long-running stream's per-container memory bounded: past
    /// [`MAX_REMEMBERED`] entries, a map is cleared. What that costs is small and safe: a
    /// line without its own time is dated by the message's time instead of its
    /// predecessor's, a repeated watchdog report may be decoded twice (the same event id,
    /// so the store keeps one), and CRI partial pieces of that moment are dropped.
    fn bound_stream_memory(&mut self) {
        if self.last_time.len() > MAX_REMEMBERED {
            self.last_time.clear();
        }
        if self.timeouts_seen.len() > MAX_REMEMBERED {
            self.timeouts_seen.clear();
        }
        if self.partials.len() > MAX_REMEMBERED {
            self.partials.clear();
        }
    }

    /// Emits what open tracebacks hold, then forgets every stream.
    fn flush(&mut self, out: &mut Output) -> u64 {
        let streams = std::mem::take(&mut self.streams);
        let open: Vec<OpenTraceback> = streams.into_values().filter_map(|s| s.traceback).collect();
        let emitted = self.emit_held(open, out);
        self.partials.clear();
        self.last_time.clear();
        self.timeouts_seen.clear();
        self.path_scope = None;
        emitted
    }
}

/// Adds how long a profile capture ran (`duration_seconds`) when the line that saved it
/// and the one that began it are both dated and in order.
fn push_capture_seconds(e: &mut EventFinding, began: Option<Nanos>, saved: Option<LineTime>) {
    if let (Some(b), Some(t)) = (began, saved)
        && b <= t.ns
    {
        let millis = (t.ns - b) / 1_000_000;
        e.attrs
            .push(("duration_seconds", format!("{}", millis as f64 / 1000.0)));
    }
}

fn push_context<'a>(attrs: &mut Vec<(&'a str, Cow<'a, str>)>, who: &'a Who<'a>, t: LineTime) {
    if let Some(c) = who.container.as_deref() {
        attrs.push(("container", Cow::Borrowed(c)));
    }
    if let Some(s) = who.stream.as_deref() {
        attrs.push(("stream", Cow::Borrowed(s)));
    }
    match t.from {
        TimeFrom::Own => {}
        TimeFrom::PrecedingLine => attrs.push(("time_from", Cow::Borrowed("preceding_line"))),
        TimeFrom::Shipper => attrs.push(("time_from", Cow::Borrowed("shipper"))),
        TimeFrom::Default => attrs.push(("time_from", Cow::Borrowed("default"))),
    }
}

fn scope<'a>(who: &'a Who<'a>, hints: &'a Hints) -> Scope<'a> {
    Scope {
        cluster: hints.cluster.as_deref(),
        node: who.node.as_deref(),
        device: None,
        namespace: who.namespace.as_deref(),
        workload: who.workload.as_deref(),
        pod: who.pod.as_deref(),
        run_id: None,
    }
}

fn emit_metric(
    m: &MetricFinding,
    source: &'static str,
    t: LineTime,
    rank: Option<i32>,
    who: &Who<'_>,
    hints: &Hints,
    out: &mut Output,
) {
    let mut labels: Vec<(&str, Cow<'_, str>)> = m
        .labels
        .iter()
        .map(|(k, v)| (*k, Cow::Borrowed(v.as_str())))
        .collect();
    push_context(&mut labels, who, t);
    let row = MetricRow {
        time_ns: t.ns,
        layer: Layer::Framework,
        source,
        metric: &m.metric,
        value: m.value,
        scope: scope(who, hints),
        rank,
        step: m.step,
    };
    out.metrics.append(&row, labels);
}

impl Decoder for ContainerLogDecoder {
    fn format(&self) -> Format {
        Format::ContainerLog
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        out.begin_record();
        if bytes.len() > MAX_RECORD_BYTES {
            let reason = format!(
                "record of {} bytes is over the {MAX_RECORD_BYTES} byte limit",
                bytes.len()
            );
            out.reject(origin, Format::ContainerLog, &reason, bytes);
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        let body = text.strip_suffix('\n').unwrap_or(&text);
        // A Kafka message may hold many lines: it is one record, rejected whole if any of
        // its lines cannot be read.
        let lines = body.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l));
        if let Some(reason) = lines.clone().find_map(Self::unreadable) {
            out.reject(
                origin,
                Format::ContainerLog,
                &format!("{origin}: {reason}"),
                bytes,
            );
            return;
        }
        self.offset = match origin {
            Origin::Kafka { offset, .. } => Some(*offset),
            _ => None,
        };
        let mut wrote = false;
        for l in lines {
            wrote |= self.line(l, hints, out);
        }
        if wrote { out.produced() } else { out.skip() }
    }

    fn finish(&mut self, _hints: &Hints, out: &mut Output) {
        let n = self.flush(out);
        out.counts.events += n;
    }

    fn release_complete(&mut self, out: &mut Output) {
        let n = self.release_complete_tracebacks(out);
        out.counts.events += n;
        self.bound_stream_memory();
    }

    fn held_from(&self) -> Option<i64> {
        let tracebacks = self
            .streams
            .values()
            .filter_map(|s| s.traceback.as_ref()?.first_offset);
        let partials = self.partials.values().filter_map(|p| p.2);
        tracebacks.chain(partials).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_decoder_forgets_containers_past_its_bound() {
        let mut d = ContainerLogDecoder::default();
        for i in 0..=MAX_REMEMBERED {
            d.last_time.insert(format!("pod-{i}"), 1);
            d.timeouts_seen
                .insert((format!("pod-{i}"), None, "1".into(), "ALLREDUCE".into()));
        }
        d.partials.insert("p".into(), (1, "piece".into(), None));
        let mut out = Output::new(0);
        d.release_complete(&mut out);
        assert!(d.last_time.is_empty() && d.timeouts_seen.is_empty());
        assert_eq!(d.partials.len(), 1, "under its bound: kept");
    }

    #[test]
    fn prefixes() {
        assert_eq!(
            strip_rank_prefix("[rank3]:[E321 x] y"),
            (Some(3), "[E321 x] y")
        );
        assert_eq!(strip_rank_prefix("[rankx]: y"), (None, "[rankx]: y"));
        assert_eq!(
            strip_node_prefix("[node-0]: W0429 x"),
            (Some("node-0"), "W0429 x")
        );
        assert_eq!(
            strip_kubectl_prefix("[pod/a-0-xyzbc/trainer] hi"),
            (Some(("a-0-xyzbc", "trainer")), "hi")
        );
        assert_eq!(strip_ansi("\x1b[32mstep: 1\x1b[39m"), "step: 1");
        let y = time::parse_rfc3339("2025-06-01T00:00:00Z").ok();
        assert!(inner_time("[2025-10-18 00:08:51,982] [INFO] x", None).is_some());
        assert!(
            inner_time(
                "[titan] 2025-10-18 00:08:51,982 - root - INFO - step: 1",
                None
            )
            .is_some()
        );
        assert!(
            inner_time(
                "W0429 01:22:31.907000 1 site-packages/torch/distributed/run.py:793]",
                y
            )
            .is_some()
        );
        assert!(inner_time("[W429 01:22:58.895439547 reducer.cpp:1400] Warning", y).is_some());
        assert!(inner_time("W0429 01:22:31.907000 1 run.py", None).is_none());
        // Megatron-LM's indented iteration line dates the undated lines after it (its
        // `saving checkpoint at iteration` lines), not the file's modification time.
        assert_eq!(
            inner_time(
                " [2026-11-14 08:12:01] iteration      100/   24000 | consumed samples: 25600",
                None
            ),
            time::parse_rfc3339("2026-11-14T08:12:01Z").ok()
        );
    }
}

#[cfg(test)]
mod stream_tests {
    use arrow::array::AsArray;

    use super::*;

    const TIME: &str = "2026-11-29T10:00:00.000000000Z stderr F ";

    /// Feeds `lines` of `pod` one per Kafka message, as a topic carrying many pods does.
    fn feed(d: &mut ContainerLogDecoder, out: &mut Output, pod: &str, lines: &[&str]) {
        let hints = Hints {
            path: Some(format!("pods/ml_{pod}_1234/trainer/0.log")),
            cluster: Some("c1".to_string()),
            ..Hints::default()
        };
        for (i, l) in lines.iter().enumerate() {
            let origin = Origin::Kafka {
                topic: "logs",
                partition: 0,
                offset: i as i64,
            };
            d.decode(format!("{TIME}{l}").as_bytes(), &origin, &hints, out);
        }
    }

    /// `(pod, kind, message, cluster)` of the events written so far.
    fn events(out: &mut Output) -> Vec<(String, String, String, String)> {
        let b = out.events.finish();
        let col = |c: &str| b.column_by_name(c).unwrap().as_string::<i32>().clone();
        let (pod, kind, msg, cluster) = (col("pod"), col("kind"), col("message"), col("cluster"));
        (0..b.num_rows())
            .map(|i| {
                let v = |a: &arrow::array::StringArray| a.value(i).to_string();
                (v(&pod), v(&kind), v(&msg), v(&cluster))
            })
            .collect()
    }

    const HEAD: &str = "Traceback (most recent call last):";
    const FRAME: &str = "  File \"train.py\", line 10, in <module>";
    const OOM: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
    const KEY: &str = "KeyError: 'x'";

    #[test]
    fn a_flush_releases_the_tracebacks_that_reached_their_exception_only() {
        let (mut d, mut out) = (ContainerLogDecoder::new(), Output::new(0));
        feed(&mut d, &mut out, "a-0-abcde", &[HEAD, FRAME, OOM]);
        feed(&mut d, &mut out, "b-0-abcde", &[HEAD, FRAME]);
        d.release_complete(&mut out);
        let first = events(&mut out);
        assert_eq!(
            first,
            [(
                "a-0-abcde".to_string(),
                "cuda_oom".to_string(),
                OOM.to_string(),
                "c1".to_string()
            )]
        );
        // b's traceback is still open: its exception line comes in the next batch.
        feed(&mut d, &mut out, "b-0-abcde", &[KEY]);
        d.release_complete(&mut out);
        let second = events(&mut out);
        assert_eq!(second.len(), 1, "{second:?}");
        assert_eq!(
            (second[0].0.as_str(), second[0].2.as_str()),
            ("b-0-abcde", KEY)
        );
        // Nothing is held any more: the end of the stream adds nothing.
        d.finish(&Hints::default(), &mut out);
        assert!(events(&mut out).is_empty());
        assert!(out.counts.balances(), "{:?}", out.counts);
        assert_eq!(out.counts.events, 2);
    }

    #[test]
    fn a_flush_keeps_a_traceback_being_chained_and_streams_read_as_files() {
        let chained = [
            HEAD,
            FRAME,
            KEY,
            "",
            "During handling of the above exception, another exception occurred:",
            "",
            HEAD,
            FRAME,
            OOM,
        ];
        // One pod's chained traceback, flushed in the middle of its second part.
        let (mut d, mut out) = (ContainerLogDecoder::new(), Output::new(0));
        feed(&mut d, &mut out, "a-0-abcde", &chained[..7]);
        d.release_complete(&mut out);
        assert!(events(&mut out).is_empty(), "released while chained");
        feed(&mut d, &mut out, "a-0-abcde", &chained[7..]);
        d.release_complete(&mut out);
        let streamed = events(&mut out);

        let (mut file, mut file_out) = (ContainerLogDecoder::new(), Output::new(0));
        feed(&mut file, &mut file_out, "a-0-abcde", &chained);
        file.finish(&Hints::default(), &mut file_out);
        assert_eq!(streamed, events(&mut file_out));
        assert_eq!(streamed.len(), 1);
        assert_eq!(streamed[0].2, OOM);
    }
}
