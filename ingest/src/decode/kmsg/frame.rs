//! The framing of one kernel / system log line: where its time, host and message are in
//! each of the formats `contracts/envelope.md` lists (syslog and `journalctl -o short-iso`,
//! RFC 5424, RFC 3164, `dmesg --time-format iso` with or without `--decode`'s prefix,
//! `dmesg -T`, plain `dmesg`, raw `/dev/kmsg` records). `journalctl -o json` is in
//! [`super::journal`].

use whyslow_schemas::time::{self, Nanos};

/// When a line says it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// An absolute time (UTC nanoseconds).
    At(Nanos),
    /// Nanoseconds since boot (plain `dmesg`, `/dev/kmsg`): needs the boot time.
    SinceBoot(Nanos),
    /// The line carries no time (`dmesg -t`, a continuation line, a bare message).
    Unknown,
}

/// Which framing a line had.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `prio,seq,usec,flags;message` from `/dev/kmsg`.
    DevKmsg,
    /// A `/dev/kmsg` continuation (dictionary) line: starts with a space.
    Continuation,
    /// `dmesg --time-format iso` (a comma before the microseconds).
    DmesgIso,
    /// `dmesg -T` / `--ctime`.
    DmesgCtime,
    /// Plain `dmesg`: seconds since boot in brackets.
    DmesgRelative,
    /// ISO-dated syslog / `journalctl -o short-iso[-precise]`: `TIME HOST IDENT: MSG`.
    SyslogIso,
    /// RFC 3164: `Mmm dd hh:mm:ss HOST IDENT: MSG`.
    Rfc3164,
    /// RFC 5424: `<PRI>1 TIME HOST APP PROCID MSGID SD MSG`.
    Rfc5424,
    /// NVIDIA Fabric Manager's own log (`[Feb 25 2025 13:59:45] [INFO] …`): not kernel log.
    FabricManager,
    /// No recognizable framing: the whole line is the message.
    Bare,
}

/// One line, taken apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed<'a> {
    pub shape: Shape,
    pub when: When,
    /// The host the line names (syslog formats).
    pub host: Option<&'a str>,
    /// The program that logged it (`kernel`), where the format says.
    pub ident: Option<&'a str>,
    /// The level (`warn`, `err`, or a syslog severity number), where the format says.
    pub level: Option<&'a str>,
    /// The message itself.
    pub message: &'a str,
}

impl<'a> Framed<'a> {
    fn bare(message: &'a str) -> Self {
        Framed {
            shape: Shape::Bare,
            when: When::Unknown,
            host: None,
            ident: None,
            level: None,
            message,
        }
    }
}

/// Syslog severity names by number (the low three bits of a priority).
const LEVELS: [&str; 8] = [
    "emerg", "alert", "crit", "err", "warn", "notice", "info", "debug",
];

/// Takes a line apart. `year_ref` dates formats that have no year (RFC 3164).
pub fn frame(line: &str, year_ref: Nanos) -> Framed<'_> {
    if line.starts_with(' ') || line.starts_with('\t') {
        // /dev/kmsg dictionary lines (` SUBSYSTEM=pci`), call-trace lines, continuations.
        return Framed {
            shape: Shape::Continuation,
            ..Framed::bare(line.trim_start())
        };
    }
    let (level, rest) = match decode_prefix(line) {
        Some((lvl, rest)) => (Some(lvl), rest),
        None => (None, line),
    };
    let mut f = frame_body(rest, year_ref);
    if f.level.is_none() {
        f.level = level;
    }
    f
}

fn frame_body(line: &str, year_ref: Nanos) -> Framed<'_> {
    let b = line.as_bytes();
    match b.first() {
        Some(b'<') => {
            if let Some(f) = syslog_pri(line, year_ref) {
                return f;
            }
        }
        Some(b'[') => {
            if let Some(f) = bracketed(line) {
                return f;
            }
        }
        Some(c) if c.is_ascii_digit() => {
            if let Some(f) = dev_kmsg(line) {
                return f;
            }
            if let Some(f) = iso(line) {
                return f;
            }
        }
        Some(c) if c.is_ascii_alphabetic() => {
            if let Some(st) = time::parse_syslog_prefix(line, year_ref) {
                let rest = line[st.len..].trim_start();
                return with_host_ident(Shape::Rfc3164, When::At(st.ns), rest);
            }
        }
        _ => {}
    }
    Framed::bare(line)
}

/// `dmesg --decode`'s `kern  :warn  : ` prefix: the level and the rest.
fn decode_prefix(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    let word = |from: usize| {
        b[from..]
            .iter()
            .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            .count()
    };
    let f = word(0);
    if f == 0 {
        return None;
    }
    let mut i = f;
    while b.get(i) == Some(&b' ') {
        i += 1;
    }
    if b.get(i) != Some(&b':') {
        return None;
    }
    let l0 = i + 1;
    let l = word(l0);
    if l == 0 {
        return None;
    }
    let mut j = l0 + l;
    while b.get(j) == Some(&b' ') {
        j += 1;
    }
    if b.get(j) != Some(&b':') || b.get(j + 1) != Some(&b' ') {
        return None;
    }
    Some((&line[l0..l0 + l], &line[j + 2..]))
}

/// `prio,seq,usec,flags[,…];message`.
fn dev_kmsg(line: &str) -> Option<Framed<'_>> {
    let semi = memchr::memchr(b';', line.as_bytes())?;
    let mut fields = line[..semi].split(',');
    let prio: u32 = fields.next()?.parse().ok()?;
    let _seq: u64 = fields.next()?.parse().ok()?;
    let usec: i64 = fields.next()?.parse().ok()?;
    fields.next()?; // flags: `-`, `c`, `+`
    Some(Framed {
        shape: Shape::DevKmsg,
        when: When::SinceBoot(usec.checked_mul(1000)?),
        host: None,
        ident: Some("kernel"),
        level: Some(LEVELS[(prio & 7) as usize]),
        message: &line[semi + 1..],
    })
}

/// An ISO date first: `dmesg --time-format iso` (comma before the fraction, no host) or
/// ISO-dated syslog / `journalctl -o short-iso` (`TIME HOST IDENT: MSG`).
fn iso(line: &str) -> Option<Framed<'_>> {
    let st = time::parse_stamp_prefix(line)?;
    let rest = line[st.len..].strip_prefix(' ').unwrap_or(&line[st.len..]);
    if line.as_bytes().get(19) == Some(&b',') {
        return Some(Framed {
            shape: Shape::DmesgIso,
            when: When::At(st.ns),
            host: None,
            ident: Some("kernel"),
            level: None,
            message: rest,
        });
    }
    Some(with_host_ident(Shape::SyslogIso, When::At(st.ns), rest))
}

/// `HOST IDENT[PID]: MSG` after a syslog date; without an `IDENT:` the rest is the message.
fn with_host_ident(shape: Shape, when: When, rest: &str) -> Framed<'_> {
    let mut f = Framed {
        shape,
        when,
        ..Framed::bare(rest)
    };
    let Some(sp) = rest.find(' ') else { return f };
    let (host, after) = (&rest[..sp], &rest[sp + 1..]);
    let Some(colon) = after.find(": ") else {
        return f;
    };
    let tag = &after[..colon];
    if tag.is_empty() || tag.contains(' ') || host.ends_with(':') {
        return f;
    }
    let ident = tag.find('[').map_or(tag, |i| &tag[..i]);
    f.host = Some(host);
    f.ident = Some(ident);
    f.message = strip_kernel_stamp(&after[colon + 2..]).1;
    if let (When::Unknown, Some(rel)) = (f.when, strip_kernel_stamp(&after[colon + 2..]).0) {
        f.when = When::SinceBoot(rel);
    }
    f
}

/// A `[ 1234.567890] ` printk stamp at the start of a kernel message, as syslog lines of
/// kernels with `printk.time=1` carry: the time since boot and the rest.
fn strip_kernel_stamp(msg: &str) -> (Option<Nanos>, &str) {
    if let Some(inner_end) = msg.strip_prefix('[').and_then(|m| m.find(']'))
        && let Some(ns) = since_boot(&msg[1..=inner_end])
    {
        let rest = &msg[inner_end + 2..];
        return (Some(ns), rest.strip_prefix(' ').unwrap_or(rest));
    }
    (None, msg)
}

/// `  12345.678901` (seconds since boot, space-padded) in nanoseconds.
fn since_boot(inner: &str) -> Option<Nanos> {
    let t = inner.trim_start();
    let (s, frac) = t.split_once('.')?;
    if s.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    if !s.bytes().all(|c| c.is_ascii_digit()) || !frac.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let secs: i64 = s.parse().ok()?;
    let f: i64 = frac.parse().ok()?;
    secs.checked_mul(1_000_000_000)?
        .checked_add(f * 10i64.pow(9 - frac.len() as u32))
}

/// `[…] message`: plain dmesg (seconds since boot), `dmesg -T` (a ctime date), or Fabric
/// Manager's `[Feb 25 2025 13:59:45]`.
fn bracketed(line: &str) -> Option<Framed<'_>> {
    let end = line.find(']')?;
    let inner = &line[1..end];
    let rest = &line[end + 1..];
    let message = rest.strip_prefix(' ').unwrap_or(rest);
    let (shape, when) = if let Some(ns) = since_boot(inner) {
        (Shape::DmesgRelative, When::SinceBoot(ns))
    } else if let Some(ns) = time::parse_ctime(inner) {
        (Shape::DmesgCtime, When::At(ns))
    } else if is_fabric_manager_date(inner) {
        (Shape::FabricManager, When::Unknown)
    } else {
        return None;
    };
    let ident = (shape != Shape::FabricManager).then_some("kernel");
    Some(Framed {
        shape,
        when,
        host: None,
        ident,
        level: None,
        message,
    })
}

/// `Feb 25 2025 13:59:45`.
fn is_fabric_manager_date(s: &str) -> bool {
    let mut p = s.split(' ');
    matches!(
        (p.next().and_then(time::month_from_abbrev), p.next(), p.next(), p.next(), p.next()),
        (Some(_), Some(d), Some(y), Some(t), None)
            if d.len() <= 2 && y.len() == 4 && t.len() == 8 && t.as_bytes()[2] == b':'
    )
}

/// `<PRI>…`: RFC 5424 (`<PRI>1 …`), or RFC 3164 / `dmesg -r` after a priority.
fn syslog_pri(line: &str, year_ref: Nanos) -> Option<Framed<'_>> {
    let close = line.find('>')?;
    let pri: u32 = line[1..close].parse().ok()?;
    let level = Some(LEVELS[(pri & 7) as usize]);
    let rest = &line[close + 1..];
    if let Some(r) = rest.strip_prefix("1 ") {
        return rfc5424(r, level);
    }
    let mut f = frame_body(rest, year_ref);
    if f.shape == Shape::Bare {
        return None;
    }
    f.level = level;
    Some(f)
}

/// `TIME HOST APP PROCID MSGID SD MSG` (after `<PRI>1 `); `-` is nil.
fn rfc5424<'a>(r: &'a str, level: Option<&'a str>) -> Option<Framed<'a>> {
    let mut parts = r.splitn(5, ' ');
    let ts = parts.next()?;
    let host = parts.next()?;
    let app = parts.next()?;
    let _procid = parts.next()?;
    let after_procid = parts.next()?;
    let (_msgid, after_msgid) = after_procid.split_once(' ').unwrap_or((after_procid, ""));
    let msg = skip_structured_data(after_msgid)?;
    let msg = msg.strip_prefix('\u{feff}').unwrap_or(msg);
    let when = if ts == "-" {
        When::Unknown
    } else {
        When::At(time::parse_rfc3339(ts).ok()?)
    };
    let nil = |s: &'a str| (s != "-").then_some(s);
    let (rel, msg) = strip_kernel_stamp(msg);
    let when = match (when, rel) {
        (When::Unknown, Some(r)) => When::SinceBoot(r),
        (w, _) => w,
    };
    Some(Framed {
        shape: Shape::Rfc5424,
        when,
        host: nil(host),
        ident: nil(app),
        level,
        message: msg,
    })
}

/// Skips `-` or `[id k="v" …][…]` (quoted values may hold escaped `]`); returns the message.
fn skip_structured_data(s: &str) -> Option<&str> {
    if let Some(rest) = s.strip_prefix('-') {
        return Some(rest.strip_prefix(' ').unwrap_or(rest));
    }
    let b = s.as_bytes();
    let mut i = 0;
    while b.get(i) == Some(&b'[') {
        let mut in_quotes = false;
        i += 1;
        loop {
            match b.get(i)? {
                b'\\' if in_quotes => i += 1,
                b'"' => in_quotes = !in_quotes,
                b']' if !in_quotes => break,
                _ => {}
            }
            i += 1;
        }
        i += 1;
    }
    if i == 0 {
        return Some(s); // no structured data at all: lenient
    }
    let rest = &s[i..];
    Some(rest.strip_prefix(' ').unwrap_or(rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use whyslow_schemas::time::format_rfc3339;

    fn at(f: &Framed<'_>) -> String {
        match f.when {
            When::At(ns) => format_rfc3339(ns),
            other => format!("{other:?}"),
        }
    }

    const REF: Nanos = 1_764_411_302_000_000_000; // 2025-11-29T10:15:02Z

    #[test]
    fn dmesg_shapes() {
        let f = frame(
            "kern  :warn  : 2025-01-21T04:41:44,283302+00:00 NVRM: Xid (PCI:0000:38:00): 13, x",
            REF,
        );
        assert_eq!(
            (f.shape, f.level, f.host),
            (Shape::DmesgIso, Some("warn"), None)
        );
        assert_eq!(at(&f), "2025-01-21T04:41:44.283302Z");
        assert!(f.message.starts_with("NVRM: Xid"));
        let f = frame(
            "2024-11-15T12:02:03,470068+00:00 NVRM: Xid (PCI:0000:19:00): 48, x",
            REF,
        );
        assert_eq!(
            (f.shape, f.message),
            (Shape::DmesgIso, "NVRM: Xid (PCI:0000:19:00): 48, x")
        );
        let f = frame(
            "[Sun Feb 23 16:24:18 2025] NVRM: GPU Board Serial Number: 1",
            REF,
        );
        assert_eq!(
            (f.shape, at(&f).as_str()),
            (Shape::DmesgCtime, "2025-02-23T16:24:18Z")
        );
        let f = frame("[6781741.548779] NVRM: Xid (PCI:0000:91:00): 79, x", REF);
        assert_eq!(
            (f.shape, f.when),
            (Shape::DmesgRelative, When::SinceBoot(6_781_741_548_779_000))
        );
        let f = frame("[    0.000000] Linux version 6.8.0", REF);
        assert_eq!(
            (f.when, f.message),
            (When::SinceBoot(0), "Linux version 6.8.0")
        );
        let f = frame(
            "6,3973,227996636,-;nvidia-peermem nv_get_p2p_free_callback:127 ERROR",
            REF,
        );
        assert_eq!(
            (f.shape, f.when, f.level),
            (
                Shape::DevKmsg,
                When::SinceBoot(227_996_636_000),
                Some("info")
            )
        );
        assert_eq!(frame(" SUBSYSTEM=pci", REF).shape, Shape::Continuation);
        let f = frame(
            "[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message",
            REF,
        );
        assert_eq!(f.shape, Shape::FabricManager);
    }

    #[test]
    fn syslog_shapes() {
        let f = frame(
            "2026-11-29T10:15:02.123456+00:00 gke-gpu-7 kernel: NVRM: Xid (PCI:0000:8a:00): 79, x",
            REF,
        );
        assert_eq!(
            (f.shape, f.host, f.ident),
            (Shape::SyslogIso, Some("gke-gpu-7"), Some("kernel"))
        );
        assert_eq!(
            (at(&f).as_str(), f.message),
            (
                "2026-11-29T10:15:02.123456Z",
                "NVRM: Xid (PCI:0000:8a:00): 79, x"
            )
        );
        let f = frame(
            "2026-11-29T10:15:02+0000 node-1 kernel: [ 1234.5] mlx5_core 0000:8a:00.0 ib0: Link down",
            REF,
        );
        assert_eq!(
            (f.host, f.message),
            (Some("node-1"), "mlx5_core 0000:8a:00.0 ib0: Link down")
        );
        assert_eq!(at(&f), "2026-11-29T10:15:02Z");
        let f = frame(
            "Nov 29 10:15:02 node-2 kernel: Out of memory: Killed process 1 (x)",
            REF,
        );
        assert_eq!(
            (f.shape, f.host, at(&f).as_str()),
            (Shape::Rfc3164, Some("node-2"), "2025-11-29T10:15:02Z")
        );
        let f = frame("<4>Nov 29 10:15:02 node-2 kernel: hello", REF);
        assert_eq!(
            (f.shape, f.level, f.message),
            (Shape::Rfc3164, Some("warn"), "hello")
        );
        let f = frame(
            r#"<4>1 2026-11-29T10:15:02.5Z node-3 kernel - - [meta x="a]b"] NVRM: Xid (PCI:0000:8a:00): 79, x"#,
            REF,
        );
        assert_eq!(
            (f.shape, f.host, f.ident),
            (Shape::Rfc5424, Some("node-3"), Some("kernel"))
        );
        assert_eq!(
            (at(&f).as_str(), f.message),
            (
                "2026-11-29T10:15:02.500Z",
                "NVRM: Xid (PCI:0000:8a:00): 79, x"
            )
        );
        let f = frame("<6>1 - - - - - - bare", REF);
        assert_eq!((f.when, f.host, f.message), (When::Unknown, None, "bare"));
    }

    #[test]
    fn bare_and_odd_lines() {
        for l in [
            "INFO: task docker:20744 blocked for more than 120 seconds.",
            "",
            "[",
            "[]",
            "<>",
            "<4",
            "1,2;x",
            "2026-13-01T00:00:00Z x",
        ] {
            let f = frame(l, REF);
            assert_eq!(f.when, When::Unknown, "{l}");
        }
    }
}
