//! `slurm`: slurmctld log lines (nodes not responding / down / drained / rebooted, jobs
//! allocated, requeued, preempted, completed, timed out, killed) and `sacct --parsable2`
//! output (a `JobID|JobName|…|State|Start|End|NodeList|…` header, then one row per job
//! or step). Hostlists expand into one row per node where the event is about each node.
//!
//! slurmctld stamps (`[2026-11-29T10:15:02.123]`, `LogTimeFormat=iso8601_ms`) and sacct
//! times carry no zone: they are read as UTC. Stamps with an offset (`rfc5424_ms`) keep it.

mod hostlist;

use std::collections::HashMap;

use whyslow_schemas::builders::{EventRow, Scope};
use whyslow_schemas::{Layer, Severity};

use crate::decode::{Decoder, Format, Hints, MAX_RECORD_BYTES, Origin, Output};
use whyslow_schemas::time::{self, Nanos};

pub use hostlist::{HostlistError, expand as expand_hostlist};

/// The event source of every row.
pub const SOURCE: &str = "slurm";

/// One event before it is written: what, to whom, where.
#[derive(Debug, Clone)]
struct Draft {
    kind: &'static str,
    layer: Layer,
    severity: Severity,
    job: Option<String>,
    /// Nodes the event is about, one row each; empty: one row with no node.
    nodes: Vec<String>,
    reason: Option<String>,
    attrs: Vec<(String, String)>,
}

impl Draft {
    fn new(kind: &'static str, layer: Layer, severity: Severity) -> Self {
        Draft {
            kind,
            layer,
            severity,
            job: None,
            nodes: Vec::new(),
            reason: None,
            attrs: Vec::new(),
        }
    }

    fn attr(mut self, k: &str, v: impl Into<String>) -> Self {
        self.attrs.push((k.to_string(), v.into()));
        self
    }
}

/// A line or row that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlurmError {
    #[error(transparent)]
    Hostlist(#[from] HostlistError),
    #[error("sacct row has {got} fields but its header has {want}")]
    FieldCount { got: usize, want: usize },
    #[error("sacct row with no header line before it")]
    NoHeader,
    #[error("unreadable sacct time '{0}'")]
    Time(String),
    #[error(
        "record would write {rows} rows of {bytes} bytes or more (each line's text once per node), over the {MAX_RECORD_OUTPUT_BYTES} byte limit"
    )]
    Output { rows: usize, bytes: usize },
}

/// The most bytes one record (a line of a file, a whole Kafka message) may write: each row
/// carries its line's text, so a long line naming a large hostlist is copied (and hashed)
/// once per node. A real allocation of 65,536 nodes with a 200-byte line writes about 14 MB.
#[cfg(not(fuzzing))]
pub const MAX_RECORD_OUTPUT_BYTES: usize = 64 * 1024 * 1024;
/// Under the fuzzer, in step with its smaller hostlist caps (see `hostlist::MAX_NODES`).
#[cfg(fuzzing)]
pub const MAX_RECORD_OUTPUT_BYTES: usize = 1024 * 1024;

/// The bytes the rows of `drafts` would write with `message` as their text, counted
/// before anything is written.
fn output_bytes(drafts: &[&Draft], message: &str) -> (usize, usize) {
    let (mut rows, mut bytes) = (0usize, 0usize);
    for d in drafts {
        let attrs: usize = d.attrs.iter().map(|(k, v)| k.len() + v.len()).sum();
        let fixed = message.len() + attrs + d.job.as_ref().map_or(0, String::len) + 64;
        let node_bytes: usize = d.nodes.iter().map(String::len).sum();
        let n = d.nodes.len().max(1);
        rows = rows.saturating_add(n);
        bytes = bytes
            .saturating_add(n.saturating_mul(fixed))
            .saturating_add(node_bytes);
    }
    (rows, bytes)
}

/// Takes what `drafts` would write out of the record's `budget` (bytes left of
/// [`MAX_RECORD_OUTPUT_BYTES`]), or refuses the record.
fn check_output(drafts: &[&Draft], message: &str, budget: &mut usize) -> Result<(), SlurmError> {
    let (rows, bytes) = output_bytes(drafts, message);
    *budget = budget
        .checked_sub(bytes)
        .ok_or(SlurmError::Output { rows, bytes })?;
    Ok(())
}

/// The `slurm` decoder. Remembers the sacct header and drain reasons until `finish`.
#[derive(Default)]
pub struct SlurmDecoder {
    header: Option<Vec<String>>,
    /// `update_node: node X reason set to: …`, waiting for the state change it explains.
    node_reasons: HashMap<String, String>,
}

/// The text after the first `pat`.
fn after<'a>(s: &'a str, pat: &str) -> Option<&'a str> {
    s.find(pat).map(|i| &s[i + pat.len()..])
}

fn word(s: &str) -> &str {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    s[..end].trim_end_matches([',', '.', ':', ';'])
}

/// `JobId=123_4(125)` → `123_4`.
fn job_after(s: &str, pat: &str) -> Option<String> {
    let w = word(after(s, pat)?);
    let id = w.split('(').next().unwrap_or(w);
    (!id.is_empty()).then(|| id.to_string())
}

/// The time and message of a slurmctld line: `[2026-11-29T10:15:02.123] msg`, or a
/// journal line `2026-11-29T10:15:02.123+00:00 host slurmctld[42]: msg`.
fn split_stamp(line: &str) -> Option<(Nanos, &str)> {
    if let Some(rest) = line.strip_prefix('[')
        && let Some(st) = time::parse_stamp_prefix(rest)
        && rest.as_bytes().get(st.len) == Some(&b']')
    {
        return Some((st.ns, rest[st.len + 1..].trim_start()));
    }
    let st = time::parse_stamp_prefix(line)?;
    let rest = line[st.len..].trim_start();
    let msg =
        after(rest, "]: ").filter(|_| rest.contains("slurmctld[") || rest.contains("slurmd["))?;
    Some((st.ns, msg))
}

impl SlurmDecoder {
    /// A decoder with no header seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads one slurmctld message into drafts.
    fn controller_message(&mut self, msg: &str) -> Result<Vec<Draft>, SlurmError> {
        let m = msg.strip_prefix("error: ").unwrap_or(msg);
        let mut out = Vec::new();
        let infra = Layer::Infrastructure;
        let orch = Layer::Orchestrator;
        if let Some(rest) = after(m, "Nodes ")
            .or_else(|| after(m, "Node "))
            .filter(|r| r.contains(" not responding"))
        {
            let list = word(rest);
            let down = rest.contains("setting DOWN");
            let mut d = Draft::new(
                "node_not_ready",
                infra,
                if down {
                    Severity::Error
                } else {
                    Severity::Warning
                },
            )
            .attr("state", if down { "DOWN" } else { "NOT_RESPONDING" });
            d.reason = Some("NotResponding".to_string());
            d.nodes = hostlist::expand(list)?;
            out.push(d);
        } else if let Some(rest) = after(m, "Node ").filter(|r| r.contains(" now responding")) {
            let mut d = Draft::new("node_ready", infra, Severity::Info);
            d.nodes = hostlist::expand(word(rest))?;
            out.push(d);
        } else if let Some(rest) = after(m, "Node ").filter(|r| r.contains("unexpectedly rebooted"))
        {
            let mut d = Draft::new("node_rebooted", infra, Severity::Warning);
            d.nodes = hostlist::expand(word(rest))?;
            out.push(d);
        } else if let Some(rest) = after(m, "node ").filter(|r| r.contains(" reason set to: ")) {
            let reason = after(rest, " reason set to: ")
                .unwrap_or("")
                .trim()
                .to_string();
            for n in hostlist::expand(word(rest))? {
                self.node_reasons.insert(n, reason.clone());
            }
        } else if let Some(rest) = after(m, "node ").filter(|r| r.contains(" state set to ")) {
            let state = word(after(rest, " state set to ").unwrap_or(""));
            let (kind, severity) = match state.trim_end_matches('*') {
                s if s.starts_with("DRAIN") || s == "FAIL" || s == "FAILING" => {
                    ("node_drained", Severity::Warning)
                }
                "DOWN" => ("node_not_ready", Severity::Error),
                "IDLE" | "RESUME" | "ALLOCATED" | "MIXED" => ("node_ready", Severity::Info),
                _ => ("node_state", Severity::Info),
            };
            for n in hostlist::expand(word(rest))? {
                let mut d = Draft::new(kind, infra, severity).attr("state", state);
                d.reason = self.node_reasons.remove(&n);
                d.nodes = vec![n];
                out.push(d);
            }
        } else if m.contains("preempted JobId=") {
            let mut d = Draft::new("preempted", orch, Severity::Warning);
            d.job = job_after(m, "preempted JobId=");
            d.reason = Some("Preempted".to_string());
            for action in [
                "requeued",
                "cancelled",
                "killed",
                "suspended",
                "checkpointed",
            ] {
                if m.contains(&format!("has been {action}")) {
                    d.attrs.push(("action".to_string(), action.to_string()));
                }
            }
            if let Some(by) = job_after(m, "resources for JobId=") {
                d.attrs.push(("preemptor_job_id".to_string(), by));
            }
            out.push(d);
        } else if let Some(job) = job_after(m, "requeue JobId=")
            .or_else(|| job_after(m, "requeue job JobId="))
            .or_else(|| job_after(m, "Requeuing JobId="))
            .or_else(|| job_after(m, "_job_requeue: JobId="))
        {
            let mut d = Draft::new("requeued", orch, Severity::Warning);
            d.job = Some(job);
            if let Some(node) = after(m, "failure of node ").map(word) {
                d.nodes = hostlist::expand(node)?;
                d.reason = Some("NodeFailure".to_string());
            }
            out.push(d);
        } else if let Some(rest) = after(m, "_job_complete: JobId=") {
            let job = job_after(m, "_job_complete: JobId=");
            if let Some(code) = after(rest, "WEXITSTATUS ").map(word) {
                if code != "0" {
                    let mut d =
                        Draft::new("job_failed", orch, Severity::Error).attr("exit_code", code);
                    d.job = job;
                    out.push(d);
                }
            } else if let Some(sig) = after(rest, "WTERMSIG ").map(word) {
                let mut d = Draft::new("job_failed", orch, Severity::Error).attr("signal", sig);
                d.job = job;
                out.push(d);
            } else if word(rest.split_once(' ').map_or("", |p| p.1)) == "done" {
                let mut d = Draft::new("job_finished", orch, Severity::Info);
                d.job = job;
                out.push(d);
            }
        } else if let Some(job) = job_after(m, "sched: Allocate JobId=") {
            let mut d = Draft::new("job_started", orch, Severity::Info);
            d.job = Some(job);
            if let Some(list) = after(m, "NodeList=").map(word) {
                d.nodes = hostlist::expand(list)?;
            }
            if let Some(p) = after(m, "Partition=").map(word) {
                d.attrs.push(("partition".to_string(), p.to_string()));
            }
            out.push(d);
        } else if let Some(job) = job_after(m, "Started JobId=") {
            let mut d = Draft::new("job_started", orch, Severity::Info);
            d.job = Some(job);
            if let Some(list) = after(m, " on ").map(word) {
                d.nodes = hostlist::expand(list)?;
            }
            out.push(d);
        } else if let Some(job) = job_after(m, "Time limit exhausted for JobId=") {
            let mut d = Draft::new("job_timeout", orch, Severity::Warning);
            d.job = Some(job);
            out.push(d);
        } else if let Some(job) =
            job_after(m, "Killing JobId=").filter(|_| m.contains("failed node"))
        {
            let mut d = Draft::new("node_failure", infra, Severity::Error);
            d.job = Some(job);
            if let Some(node) = after(m, "failed node ").map(word) {
                d.nodes = hostlist::expand(node)?;
            }
            out.push(d);
        } else if let Some(job) = job_after(m, "REQUEST_KILL_JOB JobId=") {
            let mut d = Draft::new("job_cancelled", orch, Severity::Info);
            d.job = Some(job);
            if let Some(uid) = after(m, " uid ").map(word) {
                d.attrs.push(("uid".to_string(), uid.to_string()));
            }
            out.push(d);
        }
        Ok(out)
    }

    /// Reads one sacct data row into timed drafts.
    fn sacct_row(&self, header: &[String], line: &str) -> Result<Vec<(Nanos, Draft)>, SlurmError> {
        let mut fields: Vec<&str> = line.split('|').collect();
        // `--parsable` (not `--parsable2`) ends every line with a `|`.
        if fields.len() == header.len() + 1 && fields.last() == Some(&"") {
            fields.pop();
        }
        if fields.len() != header.len() {
            return Err(SlurmError::FieldCount {
                got: fields.len(),
                want: header.len(),
            });
        }
        let get = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .map(|i| fields[i].trim())
        };
        let Some(job_id) = get("JobID").or_else(|| get("JobIDRaw")) else {
            return Ok(Vec::new());
        };
        let state_text = get("State").unwrap_or("");
        let state = state_text
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('+');
        let (job, step) = match job_id.split_once('.') {
            Some((j, s)) => (j, Some(s)),
            None => (job_id, None),
        };
        let when = |name: &str| -> Result<Option<Nanos>, SlurmError> {
            match get(name) {
                None | Some("" | "Unknown" | "None") => Ok(None),
                Some(t) => time::parse_stamp_prefix(t)
                    .map(|st| Some(st.ns))
                    .ok_or_else(|| SlurmError::Time(t.to_string())),
            }
        };
        let (start, end) = (when("Start")?, when("End")?);
        let nodes = match get("NodeList") {
            None | Some("" | "None assigned" | "(null)") => Vec::new(),
            Some(list) => hostlist::expand(list)?,
        };
        let mut attrs: Vec<(String, String)> = header
            .iter()
            .zip(&fields)
            .filter(|(h, v)| !v.is_empty() && !matches!(h.as_str(), "JobID" | "Start" | "End"))
            .map(|(h, v)| (snake_case(h), v.to_string()))
            .collect();
        attrs.push(("job_id".to_string(), job_id.to_string()));
        let end_kind: Option<(&'static str, Layer, Severity)> = match state {
            "COMPLETED" => Some(("job_finished", Layer::Orchestrator, Severity::Info)),
            "FAILED" => Some(("job_failed", Layer::Orchestrator, Severity::Error)),
            "TIMEOUT" | "DEADLINE" => Some(("job_timeout", Layer::Orchestrator, Severity::Warning)),
            "PREEMPTED" => Some(("preempted", Layer::Orchestrator, Severity::Warning)),
            "REQUEUED" => Some(("requeued", Layer::Orchestrator, Severity::Warning)),
            "NODE_FAIL" => Some(("node_failure", Layer::Infrastructure, Severity::Error)),
            "BOOT_FAIL" => Some(("boot_failed", Layer::Infrastructure, Severity::Error)),
            "CANCELLED" => Some(("job_cancelled", Layer::Orchestrator, Severity::Info)),
            "OUT_OF_MEMORY" | "OUT_OF_ME" => {
                Some(("oom_killed", Layer::Orchestrator, Severity::Error))
            }
            "SUSPENDED" => Some(("suspended", Layer::Orchestrator, Severity::Warning)),
            _ => None,
        };
        let mut out = Vec::new();
        // A step's row repeats its job's life; only a step that failed for a reason of
        // its own (memory, node) says more.
        if let Some(step) = step {
            if let (Some((kind @ ("oom_killed" | "node_failure"), layer, sev)), Some(t)) =
                (end_kind, end.or(start))
            {
                let mut d = Draft::new(kind, layer, sev);
                d.job = Some(job.to_string());
                d.reason = Some(state.to_string());
                d.attrs = attrs;
                d.attrs.push(("step".to_string(), step.to_string()));
                d.nodes = one_or_none(&nodes, &mut d.attrs);
                out.push((t, d));
            }
            return Ok(out);
        }
        if let Some(t) = start {
            let mut d = Draft::new("job_started", Layer::Orchestrator, Severity::Info);
            d.job = Some(job.to_string());
            d.attrs = attrs.clone();
            d.nodes = nodes.clone();
            out.push((t, d));
        }
        if let (Some((kind, layer, sev)), Some(t)) = (
            end_kind,
            end.or(if state == "SUSPENDED" { start } else { None }),
        ) {
            let mut d = Draft::new(kind, layer, sev);
            d.job = Some(job.to_string());
            d.reason = Some(state.to_string());
            d.attrs = attrs;
            d.nodes = one_or_none(&nodes, &mut d.attrs);
            out.push((t, d));
        }
        Ok(out)
    }

    fn write(&self, t: Nanos, d: &Draft, message: &str, hints: &Hints, out: &mut Output) {
        let one = [None];
        let nodes: Vec<Option<&str>> = if d.nodes.is_empty() {
            one.to_vec()
        } else {
            d.nodes.iter().map(|n| Some(n.as_str())).collect()
        };
        for node in nodes {
            let node = node.or(hints.node.as_deref());
            let mut h = xxhash_rust::xxh3::Xxh3::new();
            for p in [
                SOURCE,
                d.kind,
                node.unwrap_or(""),
                d.job.as_deref().unwrap_or(""),
                message,
            ] {
                h.update(&(p.len() as u64).to_le_bytes());
                h.update(p.as_bytes());
            }
            h.update(&t.to_le_bytes());
            let id = format!("{:032x}", h.digest128());
            let mut attrs: Vec<(&str, &str)> = d
                .attrs
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            if let Some(j) = &d.job
                && !attrs.iter().any(|(k, _)| *k == "job_id")
            {
                attrs.push(("job_id", j));
            }
            let row = EventRow {
                time_ns: t,
                event_id: &id,
                layer: d.layer,
                source: SOURCE,
                kind: d.kind,
                severity: d.severity,
                scope: Scope {
                    cluster: hints.cluster.as_deref(),
                    node,
                    workload: d.job.as_deref(),
                    ..Scope::default()
                },
                reason: d.reason.as_deref(),
                message: Some(message),
            };
            out.events.append(&row, attrs);
        }
    }

    /// Reads one line; `Ok(true)` if it became rows, `Ok(false)` if it says nothing. What
    /// it writes comes out of its record's `budget`.
    fn line(
        &mut self,
        line: &str,
        hints: &Hints,
        out: &mut Output,
        budget: &mut usize,
    ) -> Result<bool, SlurmError> {
        let trimmed = line.trim();
        if trimmed.is_empty() {
            return Ok(false);
        }
        if let Some((t, msg)) = split_stamp(trimmed) {
            let drafts = self.controller_message(msg)?;
            check_output(&drafts.iter().collect::<Vec<_>>(), msg, budget)?;
            for d in &drafts {
                self.write(t, d, msg, hints, out);
            }
            return Ok(!drafts.is_empty());
        }
        if is_sacct_header(trimmed) {
            self.header = Some(
                trimmed
                    .trim_end_matches('|')
                    .split('|')
                    .map(str::to_string)
                    .collect(),
            );
            return Ok(false);
        }
        if trimmed.contains('|') {
            let header = self.header.as_ref().ok_or(SlurmError::NoHeader)?;
            let rows = self.sacct_row(header, trimmed)?;
            check_output(
                &rows.iter().map(|(_, d)| d).collect::<Vec<_>>(),
                trimmed,
                budget,
            )?;
            for (t, d) in &rows {
                self.write(*t, d, trimmed, hints, out);
            }
            return Ok(!rows.is_empty());
        }
        Ok(false)
    }
}

/// Whether a line is sacct's `--parsable(2)` header.
pub fn is_sacct_header(line: &str) -> bool {
    let mut fields = line.split('|');
    matches!(fields.next(), Some("JobID" | "JobIDRaw")) && line.split('|').any(|f| f == "State")
}

/// Whether a line looks like a slurmctld log line (`[2026-11-29T10:15:02.123] …`).
pub fn is_controller_line(line: &str) -> bool {
    line.strip_prefix('[')
        .and_then(|r| {
            time::parse_stamp_prefix(r)
                .filter(|st| r.as_bytes().get(st.len) == Some(&b']'))
                .map(|_| r)
        })
        .is_some_and(|r| r.as_bytes().get(10) == Some(&b'T'))
}

/// One row per node only for a single-node job: a multi-node job's end is not each
/// node's event, so it gets no node and its `node_list` stays in attrs.
fn one_or_none(nodes: &[String], attrs: &mut Vec<(String, String)>) -> Vec<String> {
    if nodes.len() == 1 {
        return nodes.to_vec();
    }
    if !nodes.is_empty() && !attrs.iter().any(|(k, _)| k == "node_list") {
        attrs.push(("node_list".to_string(), nodes.join(",")));
    }
    Vec::new()
}

/// `NodeList` → `node_list`, `AllocTRES` → `alloc_tres`, `JobIDRaw` → `job_id_raw`.
fn snake_case(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    let chars: Vec<char> = s.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev_lower =
                i > 0 && (chars[i - 1].is_ascii_lowercase() || chars[i - 1].is_ascii_digit());
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            let prev_upper = i > 0 && chars[i - 1].is_ascii_uppercase();
            if i > 0 && (prev_lower || (prev_upper && next_lower)) {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

impl Decoder for SlurmDecoder {
    fn format(&self) -> Format {
        Format::Slurm
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        out.begin_record();
        if bytes.len() > MAX_RECORD_BYTES {
            let reason = format!(
                "{origin}: record of {} bytes is over the {MAX_RECORD_BYTES} byte limit",
                bytes.len()
            );
            out.reject(origin, Format::Slurm, &reason, bytes);
            return;
        }
        let text = String::from_utf8_lossy(bytes);
        // A Kafka message may hold many lines: one record, rejected whole if any line is
        // unreadable. Lines are checked first so that nothing is half-written.
        let lines: Vec<&str> = text.lines().collect();
        if lines.len() > 1 {
            let saved = (self.header.clone(), self.node_reasons.clone());
            let mut probe = Output::new(0);
            let mut budget = MAX_RECORD_OUTPUT_BYTES;
            let failed = lines
                .iter()
                .find_map(|l| self.line(l, hints, &mut probe, &mut budget).err());
            (self.header, self.node_reasons) = saved;
            if let Some(e) = failed {
                out.reject(origin, Format::Slurm, &format!("{origin}: {e}"), bytes);
                return;
            }
        }
        let mut budget = MAX_RECORD_OUTPUT_BYTES;
        let mut wrote = false;
        for l in &lines {
            match self.line(l, hints, out, &mut budget) {
                Ok(w) => wrote |= w,
                Err(e) => {
                    out.reject(origin, Format::Slurm, &format!("{origin}: {e}"), bytes);
                    return;
                }
            }
        }
        if wrote { out.produced() } else { out.skip() }
    }

    fn finish(&mut self, _hints: &Hints, _out: &mut Output) {
        self.header = None;
        self.node_reasons.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(snake_case("NodeList"), "node_list");
        assert_eq!(snake_case("AllocTRES"), "alloc_tres");
        assert_eq!(snake_case("JobIDRaw"), "job_id_raw");
        assert_eq!(snake_case("ExitCode"), "exit_code");
        assert!(is_sacct_header(
            "JobID|JobName|Partition|State|Start|End|NodeList"
        ));
        assert!(is_controller_line(
            "[2026-11-29T10:15:02.123] error: Nodes gpu-01 not responding"
        ));
        assert!(!is_controller_line("[2025-10-18 00:08:51,982] [INFO] x"));
    }
}
