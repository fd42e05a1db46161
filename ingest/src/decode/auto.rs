//! `auto`: which format an input is in, from its content (never its name) — per file
//! from its first lines ([`detect`]), and per record in mixed streams ([`detect_record`],
//! [`AutoDecoder`]), e.g. a Kafka topic carrying envelope JSON and k8s watch events.
//!
//! The signs, in order: JSON objects by their keys (envelope `time` + `kind`|`metric`;
//! k8s `apiVersion`/`kind` or a watch event's `type` + `object`; prometheus-kafka-adapter
//! `name` + `labels` + `value`; Fluent Bit / Vector `kubernetes`, docker `log`, a JSON
//! logger's `message`/`msg`; journald `__REALTIME_TIMESTAMP`), YAML `apiVersion:`,
//! Prometheus `# HELP`/`# TYPE`/`name{…} value`, kernel log prefixes, CRI's `<RFC 3339>
//! stdout|stderr F|P `, slurmctld's `[YYYY-MM-DDTHH:MM:SS.mmm] ` and sacct's header.
//! Any other text is container output (`kubectl logs`).

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::decode::{Decoder, Format, Hints, Origin, Output};
use crate::decode::{otlp, slurm};
use whyslow_schemas::time;

/// How many lines of a file's head [`detect`] reads at most.
const HEAD_LINES: usize = 40;

/// The top-level keys that tell JSON formats apart.
#[derive(Deserialize, Default)]
struct Keys {
    time: Option<IgnoredAny>,
    kind: Option<IgnoredAny>,
    metric: Option<IgnoredAny>,
    #[serde(rename = "apiVersion")]
    api_version: Option<IgnoredAny>,
    #[serde(rename = "type")]
    type_: Option<IgnoredAny>,
    object: Option<IgnoredAny>,
    name: Option<IgnoredAny>,
    labels: Option<IgnoredAny>,
    value: Option<IgnoredAny>,
    kubernetes: Option<IgnoredAny>,
    log: Option<IgnoredAny>,
    message: Option<IgnoredAny>,
    msg: Option<IgnoredAny>,
    #[serde(rename = "__REALTIME_TIMESTAMP")]
    realtime: Option<IgnoredAny>,
    #[serde(rename = "MESSAGE")]
    journal_message: Option<IgnoredAny>,
    #[serde(rename = "_TRANSPORT")]
    journal_transport: Option<IgnoredAny>,
    /// Fluent Bit's kmsg input: `priority`, `sequence`, `sec`, `usec`, `msg`.
    sequence: Option<IgnoredAny>,
    sec: Option<IgnoredAny>,
    /// An Event without `kind` (kubernetes-event-exporter, Fluent Bit
    /// `kubernetes_events`): its subject and reason.
    #[serde(rename = "involvedObject")]
    involved_object: Option<IgnoredAny>,
    regarding: Option<IgnoredAny>,
    reason: Option<IgnoredAny>,
    /// An OTLP/JSON export request.
    #[serde(rename = "resourceLogs")]
    resource_logs: Option<IgnoredAny>,
    #[serde(rename = "resourceMetrics")]
    resource_metrics: Option<IgnoredAny>,
    #[serde(rename = "resourceSpans")]
    resource_spans: Option<IgnoredAny>,
}

fn json_format(k: &Keys) -> Option<Format> {
    if k.resource_logs.is_some() || k.resource_metrics.is_some() || k.resource_spans.is_some() {
        return Some(Format::Otlp);
    }
    if k.realtime.is_some() || k.journal_message.is_some() || k.journal_transport.is_some() {
        return Some(Format::Kmsg);
    }
    if k.msg.is_some() && k.sequence.is_some() && k.sec.is_some() {
        return Some(Format::Kmsg);
    }
    if (k.involved_object.is_some() || k.regarding.is_some()) && k.reason.is_some() {
        return Some(Format::K8s);
    }
    if k.kubernetes.is_some() {
        return Some(Format::ContainerLog);
    }
    if k.api_version.is_some() || (k.type_.is_some() && k.object.is_some()) {
        return Some(Format::K8s);
    }
    if k.time.is_some() && (k.kind.is_some() || k.metric.is_some()) {
        return Some(Format::Envelope);
    }
    if k.name.is_some() && k.labels.is_some() && k.value.is_some() {
        return Some(Format::Prometheus);
    }
    if k.log.is_some() || k.message.is_some() || k.msg.is_some() {
        return Some(Format::ContainerLog);
    }
    None
}

/// The format of a JSON text whose head is all we have (a pretty-printed document cut
/// short): by the keys it mentions.
fn json_head_format(head: &str) -> Option<Format> {
    if head.contains("\"resourceLogs\"")
        || head.contains("\"resourceMetrics\"")
        || head.contains("\"resourceSpans\"")
    {
        Some(Format::Otlp)
    } else if head.contains("\"__REALTIME_TIMESTAMP\"") || head.contains("\"_TRANSPORT\"") {
        Some(Format::Kmsg)
    } else if head.contains("\"kubernetes\"") {
        Some(Format::ContainerLog)
    } else if head.contains("\"apiVersion\"")
        || head.contains("\"object\"")
        || head.contains("\"involvedObject\"")
    {
        Some(Format::K8s)
    } else if head.contains("\"metric\"")
        || (head.contains("\"kind\"") && head.contains("\"time\""))
    {
        Some(Format::Envelope)
    } else if head.contains("\"labels\"") && head.contains("\"value\"") {
        Some(Format::Prometheus)
    } else {
        None
    }
}

fn is_metric_name(s: &str) -> bool {
    let mut b = s.bytes();
    b.next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_' || c == b':')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

/// `name{labels} value [timestamp]`.
fn is_prometheus_sample(l: &str) -> bool {
    let (name, rest) = match l.find(['{', ' ']) {
        Some(i) => (&l[..i], &l[i..]),
        None => return false,
    };
    // Without labels a line is no sign (`Epoch 1`, `train_loss 0.5` in a training log):
    // scrapes say what they are with `# HELP`/`# TYPE` or label sets.
    if !is_metric_name(name) || !rest.starts_with('{') {
        return false;
    }
    let Some(close) = rest.rfind('}') else {
        return false;
    };
    let rest = &rest[close + 1..];
    let mut parts = rest.split_whitespace();
    let value_ok = parts
        .next()
        .is_some_and(|v| v.parse::<f64>().is_ok() || matches!(v, "NaN" | "+Inf" | "-Inf" | "Inf"));
    value_ok && parts.next().is_none_or(|t| t.parse::<f64>().is_ok()) && parts.next().is_none()
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const WEEKDAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];

/// `Mon Nov 29 10:15:02 2026` (`dmesg -T`'s stamp), by shape.
fn is_ctime(s: &str) -> bool {
    s.len() >= 24
        && WEEKDAYS.iter().any(|d| s.starts_with(d))
        && s.get(4..7).is_some_and(|m| MONTHS.contains(&m))
        && s.as_bytes().get(13) == Some(&b':')
}

/// `kubectl get events` / `kubectl describe` text: the k8s decoder names it for what it
/// is (a table without datable times) rather than letting it pass as container output.
fn is_kubectl_text(l: &str) -> bool {
    let t = l.trim();
    if t == "Events:" || t.starts_with("LAST SEEN ") {
        return true;
    }
    let words: Vec<&str> = t.split_whitespace().take(5).collect();
    if words == ["Type", "Reason", "Age", "From", "Message"] {
        return true;
    }
    // An event row: `Normal    QuotaReserved      job-…   Quota reserved …`.
    let Some((kind, rest)) = t.split_once("  ") else {
        return false;
    };
    let reason = rest.trim_start().split("  ").next().unwrap_or("");
    matches!(kind, "Normal" | "Warning")
        && reason.len() > 2
        && reason.starts_with(|c: char| c.is_ascii_uppercase())
        && reason.bytes().all(|c| c.is_ascii_alphanumeric())
}

/// `Feb 25 2025 13:59:45`, by shape.
fn is_fabric_manager_stamp(s: &str) -> bool {
    let b = s.as_bytes();
    s.len() == 20
        && MONTHS.iter().any(|m| s.starts_with(m))
        && b[6] == b' '
        && b[7..11].iter().all(u8::is_ascii_digit)
        && b[14] == b':'
        && b[17] == b':'
}

/// Kernel messages by their wording, for logs of bare message text (node-problem-
/// detector's generator, `dmesg --notime`).
const KERNEL_WORDING: [&str; 12] = [
    "NVRM: Xid",
    "Out of memory: Kill",
    "out of memory: Kill process",
    "Killed process ",
    "blocked for more than ",
    "BUG: unable to handle kernel",
    "divide error: ",
    "kernel BUG at ",
    "Kernel panic - not syncing",
    "unregister_netdevice: waiting for",
    "Remounting filesystem read-only",
    "dirperm1 breaks the protection",
];

/// Kernel and system log line shapes.
fn is_kernel_line(l: &str) -> bool {
    if KERNEL_WORDING.iter().any(|w| l.contains(w)) {
        return true;
    }
    let b = l.as_bytes();
    // `dmesg --decode`: `kern  :warn  : …`.
    if let Some((fac, rest)) = l.split_once(':')
        && matches!(
            fac.trim_end(),
            "kern" | "user" | "daemon" | "syslog" | "auth" | "mail" | "local0" | "local7"
        )
        && rest.split_once(':').is_some_and(|(lvl, _)| {
            matches!(
                lvl.trim(),
                "emerg" | "alert" | "crit" | "err" | "warn" | "notice" | "info" | "debug"
            )
        })
    {
        return true;
    }
    // `/dev/kmsg`: `6,1234,5678901,-;msg`.
    if let Some((head, _)) = l.split_once(';')
        && head.split(',').count() >= 4
        && head
            .split(',')
            .take(3)
            .all(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
    {
        return true;
    }
    // plain `dmesg`: `[  123.456789] msg`; `dmesg -T`: `[Mon Nov 29 10:15:02 2026] msg`.
    if let Some(rest) = l.strip_prefix('[')
        && let Some(close) = rest.find(']')
    {
        let inside = rest[..close].trim();
        if !inside.is_empty()
            && inside.bytes().all(|c| c.is_ascii_digit() || c == b'.')
            && inside.contains('.')
        {
            return true;
        }
        // `dmesg -T` (`Mon Nov 29 10:15:02 2026`) and NVIDIA Fabric Manager
        // (`Feb 25 2025 13:59:45`).
        if is_ctime(inside) || is_fabric_manager_stamp(inside) {
            return true;
        }
    }
    // RFC 5424: `<13>1 2026-…`.
    if b.first() == Some(&b'<')
        && let Some(close) = l.find('>')
        && close <= 4
        && l[1..close].bytes().all(|c| c.is_ascii_digit())
        && l[close + 1..].starts_with("1 ")
    {
        return true;
    }
    // syslog `Nov 29 10:15:02 host ident[pid]: msg`.
    if b.len() > 16
        && MONTHS.iter().any(|m| l.starts_with(m))
        && b.get(3) == Some(&b' ')
        // Byte 16 may fall inside a character of a line that only looks like syslog.
        && l.get(16..)
            .unwrap_or("")
            .split_whitespace()
            .nth(1)
            .is_some_and(|ident| ident.ends_with(':'))
    {
        return !l.contains("slurmctld[");
    }
    false
}

/// A line after an RFC 3339 stamp: CRI, journalctl short-iso, dmesg iso or `kubectl logs
/// --timestamps`.
fn stamped_line_format(l: &str, st: time::Stamp) -> Option<Format> {
    let stamp = &l[..st.len];
    let rest = l[st.len..].strip_prefix(' ')?;
    let mut words = rest.split(' ');
    let (w1, w2) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if matches!(w1, "stdout" | "stderr")
        && (w2 == "F" || w2 == "P" || w2.starts_with("F:") || w2.starts_with("P:"))
    {
        return Some(Format::ContainerLog);
    }
    if w2.contains("slurmctld[") || w2.contains("slurmd[") {
        return Some(Format::Slurm);
    }
    // journalctl -o short-iso: `<stamp> HOST ident[pid]: msg` / `HOST kernel: msg`.
    if !w1.is_empty() && w2.ends_with(':') && (w2.contains('[') || w2 == "kernel:") {
        return Some(Format::Kmsg);
    }
    // dmesg --time-format iso writes a comma before the microseconds.
    if stamp.contains(',') {
        return Some(Format::Kmsg);
    }
    if st.has_offset {
        return Some(Format::ContainerLog);
    }
    None
}

/// The format of one line of a line-per-record input, `None` when the line alone does
/// not tell (blank, a comment, ambiguous text).
pub fn detect_line(line: &str) -> Option<Format> {
    let l = line.trim_start_matches('\u{feff}').trim_end();
    if l.is_empty() {
        return None;
    }
    if l.starts_with('{') {
        return match serde_json::from_str::<Keys>(l) {
            Ok(k) => json_format(&k).or(Some(Format::ContainerLog)),
            Err(_) => json_head_format(l),
        };
    }
    if l.starts_with("# HELP ")
        || l.starts_with("# TYPE ")
        || l.starts_with("# UNIT ")
        || l == "# EOF"
    {
        return Some(Format::Prometheus);
    }
    if l.starts_with("# whyslow-scrape-time:") {
        return Some(Format::Prometheus);
    }
    if l.starts_with("apiVersion:") || l.starts_with("kind:") {
        return Some(Format::K8s);
    }
    if is_kubectl_text(l) {
        return Some(Format::K8s);
    }
    if slurm::is_sacct_header(l) || slurm::is_controller_line(l) {
        return Some(Format::Slurm);
    }
    if let Some(st) = time::parse_stamp_prefix(l)
        && let Some(f) = stamped_line_format(l, st)
    {
        return Some(f);
    }
    if is_kernel_line(l) {
        return Some(Format::Kmsg);
    }
    if is_prometheus_sample(l) {
        return Some(Format::Prometheus);
    }
    None
}

/// `[` opening a JSON array (`[{`, `[` then a line break), not a `[tag]` log prefix.
fn is_json_array(s: &str) -> bool {
    s.strip_prefix('[')
        .is_some_and(|r| matches!(r.trim_start().chars().next(), Some('{' | ']') | None))
}

/// The format of an input from its first bytes: a JSON or YAML document by the keys in
/// its head, a line format by a vote over its first lines (the first line that tells
/// wins; Prometheus comments and blank lines tell nothing). Text that matches no other
/// format is container output; `None` for empty or binary input.
pub fn detect(head: &[u8]) -> Option<Format> {
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // The head may end inside a multi-byte character.
        Err(e) if e.error_len().is_none() => {
            std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or("")
        }
        Err(_) => return None,
    };
    let text = text.trim_start_matches('\u{feff}');
    let body = text.trim_start();
    if body.is_empty() {
        return None;
    }
    if body.as_bytes().iter().take(512).any(|&c| c == 0) {
        return None;
    }
    // A JSON document spread over lines (`kubectl get -o json`), or a JSON array.
    if (body.starts_with('{') || is_json_array(body))
        && body
            .lines()
            .next()
            .is_some_and(|first| detect_line(first).is_none())
    {
        return json_head_format(body);
    }
    // `kubectl describe` output.
    if body.starts_with("Name:") && body.contains("\nNamespace:") {
        return Some(Format::K8s);
    }
    // YAML documents.
    if body.starts_with("---") || body.starts_with("apiVersion:") || body.starts_with("kind:") {
        let yaml_head = body
            .lines()
            .take(HEAD_LINES)
            .any(|l| l.starts_with("apiVersion:") || l.starts_with("kind:"));
        if yaml_head {
            return Some(Format::K8s);
        }
    }
    Some(
        body.lines()
            .take(HEAD_LINES)
            .find_map(detect_line)
            .unwrap_or(Format::ContainerLog),
    )
}

/// Detects per record. A Kafka message is detected on its own. In a file, the first line
/// that tells a format fixes it for the lines that follow (so that a log line that
/// happens to look like a Prometheus sample stays a log line), except JSON objects, which
/// go by their keys line by line (a stream mixing envelope records and k8s watch events);
/// lines that tell nothing before that go to container-log. A file that starts a
/// multi-line JSON or YAML document is held until its end and read as one document, as
/// the runner would feed it to that format's decoder.
pub struct AutoDecoder {
    factory: fn(Format) -> Option<Box<dyn Decoder>>,
    decoders: HashMap<Format, Box<dyn Decoder>>,
    locked: Option<Format>,
    /// The format of the last JSON line of the file that told one: where a malformed
    /// JSON line goes (its decoder rejects it with its own reason).
    last_json: Option<Format>,
    doc: Option<HeldDocument>,
}

/// A multi-line document being collected line by line.
struct HeldDocument {
    path: String,
    line: u64,
    bytes: Vec<u8>,
    lines: u64,
    /// The document's whole length, lines and newlines (more than `bytes` holds once it
    /// overflows).
    full_len: u64,
    overflow: bool,
    /// It opened with `{`: a JSON document, or a malformed first JSON line.
    json: bool,
}

/// A line that is one whole JSON object starting at its first byte (a JSON line; a
/// pretty-printed document's inner lines are indented or not whole).
fn is_json_object_line(bytes: &[u8]) -> bool {
    bytes.first() == Some(&b'{') && serde_json::from_slice::<IgnoredAny>(bytes).is_ok()
}

/// Whether a file's first line opens a document spread over lines.
fn opens_document(bytes: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return false;
    };
    let t = text.trim_start_matches('\u{feff}').trim();
    if t.contains('\n') || t.is_empty() {
        return false;
    }
    if t.starts_with("---") || t.starts_with("apiVersion:") || t.starts_with("kind:") {
        return true;
    }
    (t.starts_with('{') || is_json_array(t)) && serde_json::from_str::<IgnoredAny>(t).is_err()
}

impl AutoDecoder {
    /// `factory` makes the decoder of a format (the runner's `decoder_for`); records of a
    /// format it has no decoder for are rejected with that reason.
    pub fn new(factory: fn(Format) -> Option<Box<dyn Decoder>>) -> Self {
        AutoDecoder {
            factory,
            decoders: HashMap::new(),
            locked: None,
            last_json: None,
            doc: None,
        }
    }

    fn route(
        &mut self,
        format: Format,
        bytes: &[u8],
        origin: &Origin<'_>,
        hints: &Hints,
        out: &mut Output,
    ) {
        if !self.decoders.contains_key(&format) {
            match (self.factory)(format) {
                Some(d) => {
                    self.decoders.insert(format, d);
                }
                None => {
                    out.begin_record();
                    let reason =
                        format!("{origin}: no decoder for format {format}, detected from content");
                    out.reject(origin, Format::Auto, &reason, bytes);
                    return;
                }
            }
        }
        if let Some(d) = self.decoders.get_mut(&format) {
            d.decode(bytes, origin, hints, out);
        }
    }

    /// Reads the held lines one by one, as the lines they are, taking back the counts
    /// they were given while held.
    fn release_held(&mut self, origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        let Some(doc) = self.doc.take() else {
            return;
        };
        out.counts.records -= doc.lines;
        out.counts.skipped -= doc.lines;
        let path = match origin {
            Origin::File { path, .. } => *path,
            Origin::Kafka { .. } => doc.path.as_str(),
        };
        let held = doc.bytes.strip_suffix(b"\n").unwrap_or(&doc.bytes);
        for (i, line) in held.split(|&b| b == b'\n').enumerate() {
            let origin = Origin::File {
                path,
                line: doc.line + i as u64,
            };
            let format = self.choose(line, &origin);
            self.route(format, line, &origin, hints, out);
        }
    }

    fn choose(&mut self, bytes: &[u8], origin: &Origin<'_>) -> Format {
        if let Origin::Kafka { .. } = origin {
            return detect_record(bytes).unwrap_or(Format::ContainerLog);
        }
        // A line that is not UTF-8 is told by what its readable part looks like (a
        // kernel line with a broken byte goes to kmsg, which rejects it, rather than
        // passing as container output).
        let told = match std::str::from_utf8(bytes) {
            Ok(_) => detect_record_strict(bytes),
            Err(_) => detect_record_strict(String::from_utf8_lossy(bytes).as_bytes()),
        };
        let json = bytes.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{');
        // Malformed JSON amid JSON lines (its keys tell nothing): to the format of the
        // lines around it, whose decoder rejects it with its reason.
        if json
            && let Some(around) = self.last_json
            && matches!(told, None | Some(Format::ContainerLog))
            && serde_json::from_slice::<IgnoredAny>(bytes).is_err()
        {
            return around;
        }
        match (told, self.locked) {
            (Some(f), _) if json => {
                self.last_json = Some(f);
                f
            }
            (Some(f), None) => {
                self.locked = Some(f);
                f
            }
            (_, Some(locked)) => locked,
            (None, None) => Format::ContainerLog,
        }
    }
}

impl Decoder for AutoDecoder {
    fn format(&self) -> Format {
        Format::Auto
    }

    fn decode(&mut self, bytes: &[u8], origin: &Origin<'_>, hints: &Hints, out: &mut Output) {
        if self.doc.as_ref().is_some_and(|d| d.json && !d.overflow) && is_json_object_line(bytes) {
            // A complete object at the start of a line does not continue a document cut
            // over lines: the held lines were JSON lines (the first malformed). Each is
            // read as its own record, by the format this line tells, then this one.
            self.last_json = detect_record_strict(bytes);
            self.release_held(origin, hints, out);
        }
        if let Some(doc) = self.doc.as_mut() {
            // Counted for now; `finish` takes these lines back and counts the document.
            out.begin_record();
            out.skip();
            doc.lines += 1;
            doc.full_len += bytes.len() as u64 + 1;
            if doc.bytes.len() + bytes.len() < crate::decode::MAX_RECORD_BYTES {
                doc.bytes.extend_from_slice(bytes);
                doc.bytes.push(b'\n');
            } else {
                doc.overflow = true;
            }
            return;
        }
        if let Origin::File { path, line } = origin
            && self.locked.is_none()
            && self.decoders.is_empty()
            && opens_document(bytes)
        {
            out.begin_record();
            out.skip();
            let mut held = bytes.to_vec();
            held.push(b'\n');
            let json = bytes.iter().find(|c| !c.is_ascii_whitespace()) == Some(&b'{');
            self.doc = Some(HeldDocument {
                path: path.to_string(),
                line: *line,
                full_len: held.len() as u64,
                bytes: held,
                lines: 1,
                overflow: false,
                json,
            });
            return;
        }
        let format = self.choose(bytes, origin);
        self.route(format, bytes, origin, hints, out);
    }

    fn finish(&mut self, hints: &Hints, out: &mut Output) {
        if let Some(doc) = self.doc.take() {
            out.counts.records -= doc.lines;
            out.counts.skipped -= doc.lines;
            let origin = Origin::File {
                path: &doc.path,
                line: doc.line,
            };
            if doc.overflow {
                out.begin_record();
                let reason = format!(
                    "{origin}: document over the {} byte limit",
                    crate::decode::MAX_RECORD_BYTES
                );
                // Kept as far as it was held, with its whole length: a cut record.
                out.reject_letter(&whyslow_schemas::DeadLetter {
                    record_bytes: doc.full_len,
                    ..whyslow_schemas::DeadLetter::whole(
                        origin,
                        Format::Auto.name(),
                        &reason,
                        &doc.bytes,
                    )
                });
            } else {
                let format = detect(&doc.bytes).unwrap_or(Format::K8s);
                self.route(format, &doc.bytes, &origin, hints, out);
            }
        }
        for d in self.decoders.values_mut() {
            d.finish(hints, out);
        }
        self.decoders.clear();
        self.locked = None;
        self.last_json = None;
    }

    fn release_complete(&mut self, out: &mut Output) {
        for d in self.decoders.values_mut() {
            d.release_complete(out);
        }
    }

    fn held_from(&self) -> Option<i64> {
        self.decoders.values().filter_map(|d| d.held_from()).min()
    }
}

/// The format of one record when its content alone says so (no fallback to
/// container-log for plain text).
pub fn detect_record_strict(bytes: &[u8]) -> Option<Format> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body = text.trim_start();
    if body.starts_with('{')
        || is_json_array(body)
        || body.starts_with("---")
        || body.starts_with("apiVersion:")
    {
        return match detect(bytes) {
            Some(Format::ContainerLog) if !body.starts_with('{') => None,
            f => f,
        };
    }
    body.lines().take(HEAD_LINES).find_map(detect_line)
}

/// The format of one record in a mixed stream, plain text counting as container output.
pub fn detect_record(bytes: &[u8]) -> Option<Format> {
    if otlp::request::looks_like_protobuf(bytes) {
        return Some(Format::Otlp);
    }
    detect_record_strict(bytes).or_else(|| detect(bytes))
}
