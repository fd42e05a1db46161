//! Kernel and journal lines shipped as JSON records: `journalctl -o json` (and Fluent
//! Bit's `systemd` input, which keeps journald's field names), Vector's `journald` source
//! (`message`, `host`, `timestamp` beside journald's own fields) and Fluent Bit's `kmsg`
//! input (`priority`, `sequence`, `sec`/`usec` since boot, `msg`); the time a shipper adds
//! (`@timestamp`, `timestamp`, `date`: epoch seconds or RFC 3339) dates a record that
//! carries no journald time.
//!
//! journald writes `MESSAGE` as a string, as an array of byte values when it is not valid
//! UTF-8, or as an array of strings when a field was seen more than once.

use std::borrow::Cow;

use serde::Deserialize;

use whyslow_schemas::time::{JsonTime, Nanos};

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "__REALTIME_TIMESTAMP", borrow)]
    realtime: Option<Cow<'a, str>>,
    #[serde(rename = "_SOURCE_REALTIME_TIMESTAMP", borrow)]
    source_realtime: Option<Cow<'a, str>>,
    #[serde(rename = "_HOSTNAME", borrow)]
    hostname: Option<Cow<'a, str>>,
    /// Vector's journald source moves `_HOSTNAME` here.
    #[serde(borrow)]
    host: Option<Cow<'a, str>>,
    #[serde(rename = "SYSLOG_IDENTIFIER", borrow)]
    ident: Option<Cow<'a, str>>,
    #[serde(rename = "PRIORITY")]
    priority: Option<Priority<'a>>,
    /// Fluent Bit kmsg: the syslog priority with its facility (`level = priority & 7`).
    #[serde(rename = "priority")]
    kmsg_priority: Option<Priority<'a>>,
    #[serde(rename = "MESSAGE", borrow)]
    message: Option<Message<'a>>,
    /// Vector's journald source moves `MESSAGE` here.
    #[serde(rename = "message", borrow)]
    vector_message: Option<Message<'a>>,
    /// Fluent Bit kmsg's message.
    #[serde(borrow)]
    msg: Option<Message<'a>>,
    /// Fluent Bit kmsg: seconds and microseconds since boot.
    sec: Option<i64>,
    usec: Option<i64>,
    /// The shipper's time: Vector `timestamp`, Fluent Bit `@timestamp` / `date`.
    #[serde(borrow)]
    timestamp: Option<JsonTime<'a>>,
    #[serde(rename = "@timestamp", borrow)]
    at_timestamp: Option<JsonTime<'a>>,
    #[serde(borrow)]
    date: Option<JsonTime<'a>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Message<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Bytes(Vec<u8>),
    /// A field journald saw more than once: its values.
    Many(#[serde(borrow)] Vec<Cow<'a, str>>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Priority<'a> {
    Number(u64),
    Text(#[serde(borrow)] Cow<'a, str>),
}

impl Priority<'_> {
    fn value(&self) -> Option<u64> {
        match self {
            Priority::Number(n) => Some(*n),
            Priority::Text(t) => t.trim().parse().ok(),
        }
    }
}

/// One journal entry or kernel record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The record's own wall-clock time, else its shipper's.
    pub time_ns: Option<Nanos>,
    /// Time since boot (Fluent Bit kmsg's `sec`/`usec`), where no wall-clock time is known.
    pub since_boot_ns: Option<Nanos>,
    pub host: Option<Cow<'a, str>>,
    pub ident: Option<Cow<'a, str>>,
    pub level: Option<&'static str>,
    pub message: Cow<'a, str>,
}

/// Whether a line is a JSON object (a journal record) rather than log text.
pub fn looks_like_json(line: &str) -> bool {
    line.starts_with('{') && line.trim_end().ends_with('}')
}

fn text(m: Message<'_>) -> Option<Cow<'_, str>> {
    match m {
        Message::Text(t) => Some(t),
        Message::Bytes(b) => Some(Cow::Owned(String::from_utf8_lossy(&b).into_owned())),
        Message::Many(mut v) if !v.is_empty() => Some(v.swap_remove(0)),
        Message::Many(_) => None,
    }
}

/// journald's microseconds since the epoch, as a string.
fn journal_micros(field: &str, t: &str) -> Result<Nanos, String> {
    let us: i64 = t
        .trim()
        .parse()
        .map_err(|_| format!("unreadable {field} '{t}'"))?;
    us.checked_mul(1000)
        .ok_or_else(|| format!("{field} '{t}' out of range"))
}

/// Reads one record.
pub fn parse(line: &str) -> Result<Entry<'_>, String> {
    let r: Record<'_> = serde_json::from_str(line).map_err(|e| {
        format!("not a journalctl -o json record (nor a collector's kernel record): {e}")
    })?;
    let message = [r.message, r.vector_message, r.msg]
        .into_iter()
        .flatten()
        .find_map(text)
        .ok_or("journal record without a MESSAGE (or message, msg)")?;
    let time_ns = if let Some(t) = &r.realtime {
        Some(journal_micros("__REALTIME_TIMESTAMP", t)?)
    } else if let Some(t) = &r.source_realtime {
        Some(journal_micros("_SOURCE_REALTIME_TIMESTAMP", t)?)
    } else if let Some(t) = &r.timestamp {
        Some(t.nanos().ok_or("unreadable timestamp")?)
    } else if let Some(t) = &r.at_timestamp {
        Some(t.nanos().ok_or("unreadable @timestamp")?)
    } else if let Some(t) = &r.date {
        Some(t.nanos().ok_or("unreadable date")?)
    } else {
        None
    };
    let since_boot_ns = match (r.sec, r.usec) {
        (Some(s), u) if s >= 0 => s
            .checked_mul(1_000_000_000)
            .and_then(|ns| ns.checked_add(u.unwrap_or(0).clamp(0, 999_999) * 1000)),
        _ => None,
    };
    const LEVELS: [&str; 8] = [
        "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
    ];
    let level = match (&r.priority, &r.kmsg_priority) {
        (Some(p), _) => p.value().and_then(|p| LEVELS.get(p as usize).copied()),
        (None, Some(p)) => p.value().map(|p| LEVELS[(p & 7) as usize]),
        (None, None) => None,
    };
    Ok(Entry {
        time_ns,
        since_boot_ns,
        host: r.hostname.or(r.host),
        ident: r.ident,
        level,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_and_byte_messages() {
        let e = parse(r#"{"__CURSOR":"s=1","__REALTIME_TIMESTAMP":"1764411302123456","_HOSTNAME":"gke-gpu-7","SYSLOG_IDENTIFIER":"kernel","PRIORITY":"4","_TRANSPORT":"kernel","MESSAGE":"NVRM: Xid (PCI:0000:8a:00): 79, x"}"#).unwrap();
        assert_eq!(e.time_ns, Some(1_764_411_302_123_456_000));
        assert_eq!(
            (e.host.as_deref(), e.ident.as_deref(), e.level),
            (Some("gke-gpu-7"), Some("kernel"), Some("warn"))
        );
        assert_eq!(e.message, "NVRM: Xid (PCI:0000:8a:00): 79, x");
        let e = parse(r#"{"__REALTIME_TIMESTAMP":"1","MESSAGE":[104,105,255]}"#).unwrap();
        assert_eq!(e.message, "hi\u{fffd}");
        assert_eq!(e.since_boot_ns, None);
        assert!(parse(r#"{"__REALTIME_TIMESTAMP":"1"}"#).is_err());
        assert!(parse(r#"{"__REALTIME_TIMESTAMP":"soon","MESSAGE":"x"}"#).is_err());
        assert!(parse(r#"{"MESSAGE":"x""#).is_err());
    }

    /// Vector's journald source: `message` and `host` instead of journald's names.
    #[test]
    fn vector_journald_record() {
        let e = parse(r#"{"timestamp":"2026-11-29T10:15:02.123456Z","source_type":"journald","message":"NVRM: Xid (PCI:0000:8a:00): 79, pid=1, GPU has fallen off the bus.","host":"gke-gpu-7","__REALTIME_TIMESTAMP":"1764411302123456","_TRANSPORT":"kernel","SYSLOG_IDENTIFIER":"kernel","PRIORITY":"3"}"#).unwrap();
        assert_eq!(e.time_ns, Some(1_764_411_302_123_456_000));
        assert_eq!(
            (e.host.as_deref(), e.level),
            (Some("gke-gpu-7"), Some("err"))
        );
        assert!(e.message.starts_with("NVRM: Xid"));
        // Without journald's time, the shipper's RFC 3339 `timestamp`.
        let e = parse(r#"{"timestamp":"2026-11-29T10:15:02Z","message":"m","host":"h"}"#).unwrap();
        assert_eq!(e.time_ns, Some(1_795_947_302_000_000_000));
    }

    /// Fluent Bit's kmsg input: time since boot, priority with its facility; the
    /// `@timestamp` its Kafka output adds dates the record.
    #[test]
    fn fluent_bit_kmsg_record() {
        let e = parse(r#"{"priority":3,"sequence":1814,"sec":11706,"usec":732233,"msg":"ERROR @wl_cfg80211_get_station : Wrong Mac address"}"#).unwrap();
        assert_eq!(e.time_ns, None);
        assert_eq!(e.since_boot_ns, Some(11_706_732_233_000));
        assert_eq!(e.level, Some("err"));
        let e = parse(
            r#"{"@timestamp":1463421823.5,"priority":12,"sequence":1,"sec":1,"usec":0,"msg":"x"}"#,
        )
        .unwrap();
        assert_eq!(e.time_ns, Some(1_463_421_823_500_000_000));
        assert_eq!(e.level, Some("warn"));
        assert!(parse(r#"{"@timestamp":"yesterday","msg":"x"}"#).is_err());
    }
}
