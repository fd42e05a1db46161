//! `journalctl -o json` records: `__REALTIME_TIMESTAMP` (µs since the epoch, a string),
//! `_HOSTNAME`, `SYSLOG_IDENTIFIER`, `PRIORITY` and `MESSAGE`, which journald writes as a
//! string, or as an array of byte values when the message is not valid UTF-8.

use std::borrow::Cow;

use serde::Deserialize;

use crate::time::Nanos;

#[derive(Deserialize)]
struct Record<'a> {
    #[serde(rename = "__REALTIME_TIMESTAMP", borrow)]
    realtime: Option<Cow<'a, str>>,
    #[serde(rename = "_HOSTNAME", borrow)]
    hostname: Option<Cow<'a, str>>,
    #[serde(rename = "SYSLOG_IDENTIFIER", borrow)]
    ident: Option<Cow<'a, str>>,
    #[serde(rename = "PRIORITY", borrow)]
    priority: Option<Cow<'a, str>>,
    #[serde(rename = "MESSAGE", borrow)]
    message: Option<Message<'a>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Message<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Bytes(Vec<u8>),
    /// A field journald saw more than once: its values.
    Many(#[serde(borrow)] Vec<Cow<'a, str>>),
}

/// One journal entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<'a> {
    pub time_ns: Option<Nanos>,
    pub host: Option<Cow<'a, str>>,
    pub ident: Option<Cow<'a, str>>,
    pub level: Option<&'static str>,
    pub message: Cow<'a, str>,
}

/// Whether a line is a JSON object (a journal record) rather than log text.
pub fn looks_like_json(line: &str) -> bool {
    line.starts_with('{') && line.trim_end().ends_with('}')
}

/// Reads one `journalctl -o json` line.
pub fn parse(line: &str) -> Result<Entry<'_>, String> {
    let r: Record<'_> =
        serde_json::from_str(line).map_err(|e| format!("not a journalctl -o json record: {e}"))?;
    let message = match r.message {
        Some(Message::Text(t)) => t,
        Some(Message::Bytes(b)) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        Some(Message::Many(mut v)) if !v.is_empty() => v.swap_remove(0),
        _ => return Err("journal record without a MESSAGE".into()),
    };
    let time_ns = match r.realtime {
        Some(t) => {
            let us: i64 = t
                .trim()
                .parse()
                .map_err(|_| format!("unreadable __REALTIME_TIMESTAMP '{t}'"))?;
            Some(
                us.checked_mul(1000)
                    .ok_or_else(|| format!("__REALTIME_TIMESTAMP '{t}' out of range"))?,
            )
        }
        None => None,
    };
    const LEVELS: [&str; 8] = [
        "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
    ];
    let level = r
        .priority
        .and_then(|p| p.trim().parse::<usize>().ok())
        .and_then(|p| LEVELS.get(p).copied());
    Ok(Entry {
        time_ns,
        host: r.hostname,
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
        assert!(parse(r#"{"__REALTIME_TIMESTAMP":"1"}"#).is_err());
        assert!(parse(r#"{"__REALTIME_TIMESTAMP":"soon","MESSAGE":"x"}"#).is_err());
        assert!(parse(r#"{"MESSAGE":"x""#).is_err());
    }
}
