//! Time parsing shared by decoders and query parameters: RFC 3339, log prefixes and epoch
//! numbers into UTC nanoseconds.

use chrono::{DateTime, NaiveDateTime};

/// Nanoseconds since the Unix epoch.
pub type Nanos = i64;

/// A time that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unreadable time '{0}'")]
pub struct BadTime(pub String);

/// Parses RFC 3339 (`2026-11-29T10:15:02.123Z`, `+00:00` or `+0000` offsets, a space
/// instead of `T`) into UTC nanoseconds.
pub fn parse_rfc3339(s: &str) -> Result<Nanos, BadTime> {
    if let Some(ns) = parse_rfc3339_canonical(s) {
        return Ok(ns);
    }
    let t = s.trim();
    let parsed = DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f %z"));
    match parsed {
        Ok(dt) => dt
            .timestamp_nanos_opt()
            .ok_or_else(|| BadTime(s.to_string())),
        Err(_) => Err(BadTime(s.to_string())),
    }
}

/// RFC 3339 read by [`parse_stamp_prefix`] without chrono's general parser (it is on the
/// hot path of every JSON decoder): only a stamp that is the whole text and has an offset.
fn parse_rfc3339_canonical(s: &str) -> Option<Nanos> {
    parse_stamp_prefix(s)
        .filter(|st| st.len == s.len() && st.has_offset)
        .map(|st| st.ns)
}

/// A time given on the command line (`--time`, `--from`, `--to`, `--boot-time`): RFC 3339,
/// `now`, or relative to `now_ns` as a minus sign and one or more amounts with units
/// (`-2h`, `-30m`, `-1h30m`, `-45s`, `-7d`, `-1w`).
pub fn parse_cli_time(s: &str, now_ns: Nanos) -> Result<Nanos, BadTime> {
    let t = s.trim();
    if t == "now" {
        return Ok(now_ns);
    }
    match t.strip_prefix('-') {
        Some(rel) if rel.starts_with(|c: char| c.is_ascii_digit()) => {
            let back = parse_duration_ns(rel).ok_or_else(|| BadTime(s.to_string()))?;
            now_ns
                .checked_sub(back)
                .ok_or_else(|| BadTime(s.to_string()))
        }
        _ => parse_rfc3339(t),
    }
}

/// A duration as amounts with units (`90s`, `1h30m`, `90min`, `2d`, `1w`, `500ms`), in
/// nanoseconds: the one duration syntax of the command line (humantime's), shared by
/// relative times (`--from -90min`) and durations (`--analysis-window 90min`).
pub fn parse_duration_ns(s: &str) -> Option<i64> {
    let d = humantime::parse_duration(s.trim()).ok()?;
    i64::try_from(d.as_nanos()).ok()
}

/// A Go `time.Duration` as Go prints it (`6s`, `1m5s`, `1h2m3.5s`, `150ms`, `2µs`, `-3s`) in
/// seconds: fractions and sub-millisecond units, which [`parse_duration_ns`] does not take.
pub fn parse_go_duration_secs(s: &str) -> Option<f64> {
    let s = s.trim();
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(0.0);
    }
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let mut total = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if num_end == 0 {
            return None;
        }
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" | "μs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += n * mult;
        rest = &rest[unit_end..];
    }
    Some(if neg { -total } else { total })
}

/// Now, in nanoseconds since the Unix epoch.
pub fn now_ns() -> Nanos {
    chrono::Utc::now().timestamp_nanos_opt().unwrap_or(i64::MAX)
}

/// Parses a naive local timestamp that is known to be UTC (`2026-11-29T10:15:02.5`).
pub fn parse_naive_utc(s: &str, fmt: &str) -> Result<Nanos, BadTime> {
    NaiveDateTime::parse_from_str(s.trim(), fmt)
        .ok()
        .and_then(|n| n.and_utc().timestamp_nanos_opt())
        .ok_or_else(|| BadTime(s.to_string()))
}

/// Epoch numbers: seconds (fractions allowed). Whole numbers too large to be seconds
/// are read by magnitude: from 1e11 milliseconds, from 1e14 microseconds, from 1e17
/// nanoseconds (`contracts/envelope.md` names the millisecond and nanosecond cases; a
/// current epoch in milliseconds is about 1.8e12, so that is where they begin).
pub fn from_epoch_number(v: f64) -> Result<Nanos, BadTime> {
    if !v.is_finite() || v < 0.0 {
        return Err(BadTime(v.to_string()));
    }
    if v.fract() == 0.0 && v < 9.2e18 {
        return from_epoch_integer(v as i64);
    }
    if v * 1e9 >= 9.2e18 {
        return Err(BadTime(v.to_string()));
    }
    // Whole seconds and the fraction apart: `v * 1e9` would lose the fraction's last
    // digits to the 53-bit mantissa (1463421823.25 s is 1463421823249999872 ns that way).
    let secs = v.trunc();
    Ok(secs as i64 * 1_000_000_000 + ((v - secs) * 1e9).round() as i64)
}

/// Epoch integers, exactly: seconds below 1e11, milliseconds below 1e14, microseconds
/// below 1e17, nanoseconds above.
pub fn from_epoch_integer(v: i64) -> Result<Nanos, BadTime> {
    let bad = || BadTime(v.to_string());
    match v {
        ..0 => Err(bad()),
        0..100_000_000_000 => v.checked_mul(1_000_000_000).ok_or_else(bad),
        // Milliseconds past 9.2e12 and microseconds past 9.2e15 overflow i64 nanoseconds.
        100_000_000_000..100_000_000_000_000 => v.checked_mul(1_000_000).ok_or_else(bad),
        100_000_000_000_000..100_000_000_000_000_000 => v.checked_mul(1_000).ok_or_else(bad),
        _ => Ok(v),
    }
}

/// Formats nanoseconds as RFC 3339 UTC with the shortest exact fraction.
pub fn format_rfc3339(ns: Nanos) -> String {
    DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// A date-time written at the start of a line: the instant and how many bytes it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// Nanoseconds since the Unix epoch, UTC.
    pub ns: Nanos,
    /// Bytes of the input the stamp occupied.
    pub len: usize,
    /// Whether the text carried its own UTC offset (`Z`, `+00:00`, `+0000`); stamps
    /// without one are read as UTC.
    pub has_offset: bool,
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let s = b.get(at..at + n)?;
    let mut v = 0u32;
    for &c in s {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u32::from(c - b'0');
    }
    Some(v)
}

/// Reads `.123`/`,123456789` after the seconds: the nanoseconds and the bytes taken.
fn fraction(b: &[u8], at: usize) -> (u32, usize) {
    if !matches!(b.get(at), Some(b'.' | b',')) {
        return (0, 0);
    }
    let mut ns = 0u32;
    let mut n = 0usize;
    while let Some(&c) = b.get(at + 1 + n) {
        if !c.is_ascii_digit() {
            break;
        }
        if n < 9 {
            ns = ns * 10 + u32::from(c - b'0');
        }
        n += 1;
    }
    if n == 0 {
        return (0, 0);
    }
    for _ in n..9 {
        ns *= 10;
    }
    (ns, n + 1)
}

fn civil_to_ns(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, frac_ns: u32) -> Option<Nanos> {
    let date = chrono::NaiveDate::from_ymd_opt(y, mo, d)?;
    let t = date.and_hms_nano_opt(h, mi, s.min(59), frac_ns)?;
    let ns = t.and_utc().timestamp_nanos_opt()?;
    // A leap second (`:60`) is read as the last instant of the minute plus one second.
    ns.checked_add(if s == 60 { 1_000_000_000 } else { 0 })
}

/// Reads a date-time at the start of `s`: `YYYY-MM-DD`, then `T` or one space,
/// `HH:MM:SS`, an optional `.`/`,` fraction, and an optional `Z`, `±HH:MM` or `±HHMM`
/// offset. Covers RFC 3339 (CRI, `kubectl logs --timestamps`), Python logging's
/// `asctime` (`2025-10-18 00:08:51,982`), slurm's `2026-11-29T10:15:02.123`.
/// Stamps without an offset are read as UTC (`has_offset` says which it was).
pub fn parse_stamp_prefix(s: &str) -> Option<Stamp> {
    let b = s.as_bytes();
    let y = digits(b, 0, 4)?;
    if b.get(4) != Some(&b'-')
        || b.get(7) != Some(&b'-')
        || !matches!(b.get(10), Some(b'T' | b't' | b' '))
    {
        return None;
    }
    let (mo, d) = (digits(b, 5, 2)?, digits(b, 8, 2)?);
    if b.get(13) != Some(&b':') || b.get(16) != Some(&b':') {
        return None;
    }
    let (h, mi, sec) = (digits(b, 11, 2)?, digits(b, 14, 2)?, digits(b, 17, 2)?);
    let (frac_ns, flen) = fraction(b, 19);
    let mut at = 19 + flen;
    let mut offset_secs: i64 = 0;
    let mut has_offset = false;
    match b.get(at) {
        Some(b'Z' | b'z') => {
            has_offset = true;
            at += 1;
        }
        Some(&sign @ (b'+' | b'-')) => {
            let oh = digits(b, at + 1, 2);
            let (om, olen) = if b.get(at + 3) == Some(&b':') {
                (digits(b, at + 4, 2), 6)
            } else {
                (digits(b, at + 3, 2), 5)
            };
            if let (Some(oh), Some(om)) = (oh, om) {
                offset_secs = i64::from(oh * 3600 + om * 60);
                if sign == b'-' {
                    offset_secs = -offset_secs;
                }
                has_offset = true;
                at += olen;
            }
        }
        _ => {}
    }
    let local = civil_to_ns(y as i32, mo, d, h, mi, sec, frac_ns)?;
    let ns = local.checked_sub(offset_secs * 1_000_000_000)?;
    Some(Stamp {
        ns,
        len: at,
        has_offset,
    })
}

/// Reads a glog / c10 stamp at the start of `s`: a level letter (`IWEF`), month and day
/// (`1129`, or c10's unpadded `429`), a space and `HH:MM:SS.ffffff`: `I1129 10:15:02.123456`,
/// `W429 01:22:58.895439547`. The format has no year: `year_ref` (a time already known
/// in the same stream, or `--time`) supplies it; a line in January–February read against
/// a reference in November–December (or the reverse) is taken to be across a New Year.
pub fn parse_glog_prefix(s: &str, year_ref: Nanos) -> Option<Stamp> {
    let b = s.as_bytes();
    if !matches!(b.first(), Some(b'I' | b'W' | b'E' | b'F')) {
        return None;
    }
    let sp = b.iter().take(6).position(|&c| c == b' ')?;
    let md_len = sp.checked_sub(1)?;
    if !(3..=4).contains(&md_len) {
        return None;
    }
    let md = digits(b, 1, md_len)?;
    let (mo, d) = (md / 100, md % 100);
    let t = sp + 1;
    if b.get(t + 2) != Some(&b':') || b.get(t + 5) != Some(&b':') {
        return None;
    }
    let (h, mi, sec) = (digits(b, t, 2)?, digits(b, t + 3, 2)?, digits(b, t + 6, 2)?);
    let (frac_ns, flen) = fraction(b, t + 8);
    let ns = civil_to_ns(year_of(mo, year_ref), mo, d, h, mi, sec, frac_ns)?;
    Some(Stamp {
        ns,
        len: t + 8 + flen,
        has_offset: false,
    })
}

/// The year of a month read without one, from a reference time: only a reference at one
/// end of the year and a line at the other cross it (a reference may be a little before
/// the line, or the file's mtime after it).
fn year_of(month: u32, year_ref: Nanos) -> i32 {
    let reference = DateTime::from_timestamp_nanos(year_ref);
    let (ref_year, ref_month) = (
        chrono::Datelike::year(&reference),
        chrono::Datelike::month(&reference),
    );
    match (ref_month as i32) - (month as i32) {
        d if d > 9 => ref_year + 1,
        d if d < -9 => ref_year - 1,
        _ => ref_year,
    }
}

/// The level names Python's `logging` prints, each with the space after it.
const PY_LEVELS: [&[u8]; 5] = [b"DEBUG ", b"INFO ", b"WARNING ", b"ERROR ", b"CRITICAL "];

/// Reads the stamp vLLM's logger writes (`%(levelname)s %(asctime)s` with the date format
/// `%m-%d %H:%M:%S`) at the start of `s`, after the process tag vLLM V1 puts before it:
/// `INFO 08-20 02:39:37 metrics.py:411] …`, `(APIServer pid=3646) INFO 05-19 10:13:11
/// [loggers.py:271] …`. No year: as for glog, `year_ref` supplies it.
pub fn parse_python_level_prefix(s: &str, year_ref: Nanos) -> Option<Stamp> {
    let b = s.as_bytes();
    let mut at = 0;
    if b.first() == Some(&b'(') {
        // `(APIServer pid=3646) `, `(EngineCore_DP0 pid=12) `, `(VllmWorker rank=0 pid=7) `
        let close = b.iter().take(64).position(|&c| c == b')')?;
        if b.get(close + 1) != Some(&b' ') {
            return None;
        }
        at = close + 2;
    }
    let level = PY_LEVELS
        .iter()
        .find(|l| b.get(at..at + l.len()) == Some(**l))?;
    at += level.len();
    let (mo, d) = (digits(b, at, 2)?, digits(b, at + 3, 2)?);
    if b.get(at + 2) != Some(&b'-') || b.get(at + 5) != Some(&b' ') {
        return None;
    }
    let t = at + 6;
    if b.get(t + 2) != Some(&b':') || b.get(t + 5) != Some(&b':') {
        return None;
    }
    let (h, mi, sec) = (digits(b, t, 2)?, digits(b, t + 3, 2)?, digits(b, t + 6, 2)?);
    if b.get(t + 8).is_some_and(|c| *c != b' ') {
        return None;
    }
    let ns = civil_to_ns(year_of(mo, year_ref), mo, d, h, mi, sec, 0)?;
    Some(Stamp {
        ns,
        len: t + 8,
        has_offset: false,
    })
}

/// The prefix absl's logging writes before `absl::InitializeLog()` (XLA, jaxlib,
/// TensorFlow): the glog layout with a zero date and the epoch seconds in the seconds
/// field, `I0000 00:00:1770735834.933187`.
pub fn parse_absl_epoch_prefix(s: &str) -> Option<Stamp> {
    let b = s.as_bytes();
    if !matches!(b.first(), Some(b'I' | b'W' | b'E' | b'F')) || !s[1..].starts_with("0000 00:00:") {
        return None;
    }
    let start = 12;
    let int_len = b[start..].iter().take_while(|c| c.is_ascii_digit()).count();
    if !(9..=11).contains(&int_len) {
        return None;
    }
    let secs: i64 = s[start..start + int_len].parse().ok()?;
    let (frac_ns, flen) = fraction(b, start + int_len);
    Some(Stamp {
        ns: secs
            .checked_mul(1_000_000_000)?
            .checked_add(i64::from(frac_ns))?,
        len: start + int_len + flen,
        has_offset: false,
    })
}

/// An epoch timestamp written as a decimal string, read exactly (no float rounding):
/// whole numbers by magnitude as [`from_epoch_integer`] (Prometheus 0.0.4 writes
/// milliseconds), numbers with a fraction as seconds (OpenMetrics: `1520879607.789`).
/// Exponent forms (`1.5e9`) go through [`from_epoch_number`].
pub fn parse_epoch_decimal(s: &str) -> Result<Nanos, BadTime> {
    let bad = || BadTime(s.to_string());
    let t = s.trim();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let all_digits = |x: &str| x.bytes().all(|c| c.is_ascii_digit());
    if int.is_empty() || !all_digits(int) || !all_digits(frac) || int.len() > 19 {
        return t
            .parse::<f64>()
            .map_err(|_| bad())
            .and_then(from_epoch_number);
    }
    let whole: i64 = int.parse().map_err(|_| bad())?;
    if frac.is_empty() {
        return from_epoch_integer(whole);
    }
    let mut ns = 0i64;
    for (i, c) in frac.bytes().take(9).enumerate() {
        ns += i64::from(c - b'0') * 10i64.pow(8 - i as u32);
    }
    whole
        .checked_mul(1_000_000_000)
        .and_then(|w| w.checked_add(ns))
        .ok_or_else(bad)
}

/// The month of a three-letter English abbreviation (`Jan` → 1).
pub fn month_from_abbrev(m: &str) -> Option<u32> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    MONTHS
        .iter()
        .position(|x| x.eq_ignore_ascii_case(m))
        .map(|i| i as u32 + 1)
}

/// The year a date of `month` written without one most likely has, near `year_ref`:
/// a month more than six away from the reference's is across a New Year.
fn year_near(year_ref: Nanos, month: u32) -> i32 {
    let reference = DateTime::from_timestamp_nanos(year_ref);
    let (ref_year, ref_month) = (
        chrono::Datelike::year(&reference),
        chrono::Datelike::month(&reference),
    );
    match ref_month as i32 - month as i32 {
        d if d > 6 => ref_year + 1,
        d if d < -6 => ref_year - 1,
        _ => ref_year,
    }
}

/// `HH:MM:SS[.frac]` at `at`: (hour, minute, second, fraction ns, bytes taken).
fn clock_at(b: &[u8], at: usize) -> Option<(u32, u32, u32, u32, usize)> {
    if b.get(at + 2) != Some(&b':') || b.get(at + 5) != Some(&b':') {
        return None;
    }
    let (h, mi, s) = (
        digits(b, at, 2)?,
        digits(b, at + 3, 2)?,
        digits(b, at + 6, 2)?,
    );
    let (frac_ns, flen) = fraction(b, at + 8);
    Some((h, mi, s, frac_ns, 8 + flen))
}

/// Reads a ctime date (`dmesg -T` / `--ctime`, inside its brackets): `Tue Jan  9 14:24:05 2024`
/// (the weekday may be missing). The kernel prints local time; it is read as UTC.
pub fn parse_ctime(s: &str) -> Option<Nanos> {
    let mut parts = s.split_ascii_whitespace();
    let mut first = parts.next()?;
    if month_from_abbrev(first).is_none() {
        first = parts.next()?; // a weekday
    }
    let mo = month_from_abbrev(first)?;
    let d: u32 = parts.next()?.parse().ok()?;
    let clock = parts.next()?;
    let y: i32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let (h, mi, sec, frac_ns, n) = clock_at(clock.as_bytes(), 0)?;
    if n != clock.len() {
        return None;
    }
    civil_to_ns(y, mo, d, h, mi, sec, frac_ns)
}

/// Reads an RFC 3164 syslog date at the start of `s`: `Nov 29 10:15:02` or `Nov  9 10:15:02`
/// (an optional fraction is allowed). It has no year: the one nearest `year_ref` is used
/// (see [`parse_glog_prefix`]). No offset either: read as UTC.
pub fn parse_syslog_prefix(s: &str, year_ref: Nanos) -> Option<Stamp> {
    let b = s.as_bytes();
    let mo = month_from_abbrev(s.get(0..3)?)?;
    if b.get(3) != Some(&b' ') {
        return None;
    }
    let (d, at) = match (b.get(4), b.get(5)) {
        (Some(b' '), Some(c)) if c.is_ascii_digit() => (u32::from(c - b'0'), 6),
        _ => (digits(b, 4, 2)?, 6),
    };
    if b.get(at) != Some(&b' ') {
        return None;
    }
    let (h, mi, sec, frac_ns, n) = clock_at(b, at + 1)?;
    let ns = civil_to_ns(year_near(year_ref, mo), mo, d, h, mi, sec, frac_ns)?;
    Some(Stamp {
        ns,
        len: at + 1 + n,
        has_offset: false,
    })
}

/// A time in a JSON record: RFC 3339 / asctime text, or epoch seconds (Fluent Bit `date`,
/// `@timestamp`), read by the decoders of JSON records (container logs, journal records).
#[derive(serde::Deserialize)]
#[serde(untagged)]
pub enum JsonTime<'a> {
    Number(f64),
    #[serde(borrow)]
    Text(std::borrow::Cow<'a, str>),
}

impl JsonTime<'_> {
    /// The time, `None` when it reads as none.
    pub fn nanos(&self) -> Option<Nanos> {
        match self {
            JsonTime::Number(v) => from_epoch_number(*v).ok(),
            JsonTime::Text(s) => parse_stamp_prefix(s.trim()).map(|st| st.ns).or_else(|| {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .and_then(|v| from_epoch_number(v).ok())
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_forms() {
        let want = 1_764_411_302_123_000_000;
        assert_eq!(parse_rfc3339("2025-11-29T10:15:02.123Z").unwrap(), want);
        assert_eq!(
            parse_rfc3339("2025-11-29T10:15:02.123+00:00").unwrap(),
            want
        );
        assert_eq!(parse_rfc3339("2025-11-29T11:15:02.123+0100").unwrap(), want);
        assert_eq!(parse_rfc3339("2025-11-29 10:15:02.123Z").unwrap(), want);
        assert!(parse_rfc3339("yesterday").is_err());
        assert_eq!(format_rfc3339(want), "2025-11-29T10:15:02.123Z");
    }

    #[test]
    fn canonical_fast_path_agrees_with_chrono() {
        let cases = [
            "2025-11-29T10:15:02Z",
            "2025-11-29T10:15:02.1Z",
            "2025-11-29T10:15:02.123456789Z",
            "2024-02-29T23:59:59.999+05:30",
            "1970-01-01T00:00:00Z",
            "2000-03-01T00:00:00-08:00",
            "2100-12-31T12:00:00.5+00:00",
            "1999-12-31T23:59:59.000001-00:30",
        ];
        for c in cases {
            let want = DateTime::parse_from_rfc3339(c)
                .unwrap()
                .timestamp_nanos_opt()
                .unwrap();
            assert_eq!(parse_rfc3339_canonical(c), Some(want), "{c}");
            assert_eq!(parse_rfc3339(c).unwrap(), want, "{c}");
        }
        for bad in [
            "2025-02-29T10:15:02Z",
            "2025-13-01T10:15:02Z",
            "2025-11-29T24:00:00Z",
            "2025-11-29T10:15:02.Z",
            "2025-11-29T10:15:02",
            "2025-11-29T10:15:02+0100x",
        ] {
            assert_eq!(parse_rfc3339_canonical(bad), None, "{bad}");
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
        // Leap seconds and lower-case separators fall through to chrono.
        assert!(parse_rfc3339("2016-12-31T23:59:60Z").is_ok());
        assert!(parse_rfc3339("2025-11-29t10:15:02z").is_ok());
    }

    #[test]
    fn cli_times() {
        let now = 1_764_411_302_000_000_000;
        assert_eq!(parse_cli_time("now", now).unwrap(), now);
        assert_eq!(parse_cli_time("-2h", now).unwrap(), now - 7_200_000_000_000);
        assert_eq!(
            parse_cli_time("-30m", now).unwrap(),
            now - 1_800_000_000_000
        );
        assert_eq!(
            parse_cli_time("-1h30m", now).unwrap(),
            now - 5_400_000_000_000
        );
        assert_eq!(parse_cli_time("-500ms", now).unwrap(), now - 500_000_000);
        // The syntax of --analysis-window and --flush-interval too.
        assert_eq!(
            parse_cli_time("-90min", now).unwrap(),
            now - 5_400_000_000_000
        );
        assert_eq!(
            parse_cli_time("-1h 30m", now).unwrap(),
            now - 5_400_000_000_000
        );
        assert_eq!(parse_cli_time("2025-11-29T10:15:02Z", now).unwrap(), now);
        for bad in [
            "-2",
            "-h",
            "-2x",
            "yesterday",
            "-",
            "-1h-2m",
            "-99999999999999999999d",
        ] {
            assert!(parse_cli_time(bad, now).is_err(), "{bad}");
        }
    }

    #[test]
    fn epoch_numbers() {
        assert_eq!(
            from_epoch_integer(1_764_411_302).unwrap(),
            1_764_411_302_000_000_000
        );
        assert_eq!(
            from_epoch_integer(1_764_411_302_123).unwrap(),
            1_764_411_302_123_000_000
        );
        assert_eq!(
            from_epoch_integer(1_764_411_302_123_456_789).unwrap(),
            1_764_411_302_123_456_789
        );
        assert_eq!(
            from_epoch_integer(1_764_411_302_123_456).unwrap(),
            1_764_411_302_123_456_000
        );
        assert_eq!(
            from_epoch_number(1_764_411_302.5).unwrap(),
            1_764_411_302_500_000_000
        );
        assert_eq!(
            from_epoch_number(1_764_411_302_123.0).unwrap(),
            1_764_411_302_123_000_000
        );
        assert!(from_epoch_number(f64::NAN).is_err());
        assert!(from_epoch_integer(-1).is_err());
    }

    #[test]
    fn stamp_prefixes() {
        let want = 1_764_411_302_123_000_000;
        let st = parse_stamp_prefix("2025-11-29T10:15:02.123Z stdout F x").unwrap();
        assert_eq!((st.ns, st.len, st.has_offset), (want, 24, true));
        let st = parse_stamp_prefix("2025-11-29T10:15:02.123456789Z").unwrap();
        assert_eq!(st.ns, want + 456_789);
        assert_eq!(
            parse_stamp_prefix("2025-11-29T11:15:02.123+01:00 x")
                .unwrap()
                .ns,
            want
        );
        assert_eq!(
            parse_stamp_prefix("2025-11-29T09:15:02.123-0100")
                .unwrap()
                .ns,
            want
        );
        let st = parse_stamp_prefix("2025-11-29 10:15:02,123 - INFO").unwrap();
        assert_eq!((st.ns, st.len, st.has_offset), (want, 23, false));
        assert_eq!(parse_stamp_prefix("2025-11-29T10:15:02 x").unwrap().len, 19);
        assert!(parse_stamp_prefix("2025-13-29T10:15:02Z").is_none());
        assert!(parse_stamp_prefix("2025-11-29").is_none());
        assert!(parse_stamp_prefix("").is_none());
    }

    #[test]
    fn glog_prefixes() {
        let reference = parse_rfc3339("2025-11-01T00:00:00Z").unwrap();
        let st = parse_glog_prefix("I1129 10:15:02.123456 1 run.py:793] x", reference).unwrap();
        assert_eq!(st.ns, 1_764_411_302_123_456_000);
        assert_eq!(st.len, 21);
        let st = parse_glog_prefix("W429 01:22:58.895439547 reducer.cpp:1400]", reference).unwrap();
        assert_eq!(format_rfc3339(st.ns), "2025-04-29T01:22:58.895439547Z");
        // January lines read against a December reference belong to the next year.
        let december = parse_rfc3339("2025-12-31T23:00:00Z").unwrap();
        let st = parse_glog_prefix("E0101 00:00:01.000000", december).unwrap();
        assert_eq!(format_rfc3339(st.ns), "2026-01-01T00:00:01Z");
        assert!(parse_glog_prefix("Info 10:15", reference).is_none());
        assert!(parse_glog_prefix("I1399 10:15:02.1", reference).is_none());
    }

    #[test]
    fn python_level_prefixes_of_vllm() {
        let reference = parse_rfc3339("2025-11-01T00:00:00Z").unwrap();
        let st =
            parse_python_level_prefix("INFO 08-20 02:39:37 metrics.py:411] x", reference).unwrap();
        assert_eq!(format_rfc3339(st.ns), "2025-08-20T02:39:37Z");
        assert_eq!(st.len, 19);
        let line = "(APIServer pid=3646) WARNING 05-19 10:13:11 [loggers.py:271] Engine 000";
        let st = parse_python_level_prefix(line, reference).unwrap();
        assert_eq!(format_rfc3339(st.ns), "2025-05-19T10:13:11Z");
        assert_eq!(&line[st.len..st.len + 2], " [");
        // January lines read against a December reference belong to the next year.
        let december = parse_rfc3339("2025-12-31T23:00:00Z").unwrap();
        let st = parse_python_level_prefix("ERROR 01-01 00:00:01 x", december).unwrap();
        assert_eq!(format_rfc3339(st.ns), "2026-01-01T00:00:01Z");
        for bad in [
            "INFO 13-01 00:00:01 x",
            "INFO 08-20 02:39 x",
            "NOTICE 08-20 02:39:37 x",
            "(no close INFO 08-20 02:39:37 x",
            "(tag)INFO 08-20 02:39:37 x",
            "INFO 08-20 02:39:37x",
            "INFO 08\u{e9}20 02:39:37 x",
            "(é) INFO 08-2é 02:39:37 x",
        ] {
            assert!(parse_python_level_prefix(bad, reference).is_none(), "{bad}");
        }
    }
}

#[cfg(test)]
mod kernel_and_epoch_tests {
    use super::*;

    #[test]
    fn epoch_decimals_are_exact() {
        assert_eq!(
            parse_epoch_decimal("1395066363000").unwrap(),
            1_395_066_363_000_000_000
        );
        assert_eq!(
            parse_epoch_decimal("1520879607.789").unwrap(),
            1_520_879_607_789_000_000
        );
        assert_eq!(
            parse_epoch_decimal("1764411302.123456789").unwrap(),
            1_764_411_302_123_456_789
        );
        assert_eq!(
            parse_epoch_decimal("1764411302").unwrap(),
            1_764_411_302_000_000_000
        );
        assert_eq!(
            parse_epoch_decimal("1.5e9").unwrap(),
            1_500_000_000_000_000_000
        );
        for bad in [
            "",
            "-1",
            "x",
            "1.2.3",
            "NaN",
            "99999999999999999999999",
            "99999999999999",
            "99999999999999999",
        ] {
            assert!(parse_epoch_decimal(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ctime_and_syslog_dates() {
        assert_eq!(
            format_rfc3339(parse_ctime("Tue Jan  9 14:24:05 2024").unwrap()),
            "2024-01-09T14:24:05Z"
        );
        assert_eq!(
            format_rfc3339(parse_ctime("Sun Feb 23 16:24:18 2025").unwrap()),
            "2025-02-23T16:24:18Z"
        );
        assert!(parse_ctime("Feb 30 16:24:18 2025").is_none());
        assert!(parse_ctime("Tue Jan  9 14:24:05").is_none());
        let reference = parse_rfc3339("2026-11-30T00:00:00Z").unwrap();
        let st = parse_syslog_prefix("Nov 29 10:15:02 host kernel: x", reference).unwrap();
        assert_eq!(
            (format_rfc3339(st.ns).as_str(), st.len),
            ("2026-11-29T10:15:02Z", 15)
        );
        let st = parse_syslog_prefix(
            "Dec  9 10:15:02.5 host",
            parse_rfc3339("2027-01-02T00:00:00Z").unwrap(),
        );
        assert_eq!(format_rfc3339(st.unwrap().ns), "2026-12-09T10:15:02.500Z");
        assert!(parse_syslog_prefix("Nov 29 10:15 host", reference).is_none());
        assert!(parse_syslog_prefix("Now 29 10:15:02 host", reference).is_none());
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration_secs("6s"), Some(6.0));
        assert_eq!(parse_go_duration_secs("1m5s"), Some(65.0));
        assert_eq!(parse_go_duration_secs("1h2m3.5s"), Some(3723.5));
        assert_eq!(parse_go_duration_secs("150ms"), Some(0.15));
        assert_eq!(parse_go_duration_secs("-3s"), Some(-3.0));
        assert_eq!(parse_go_duration_secs("s"), None);
        assert_eq!(parse_go_duration_secs("5x"), None);
    }
}
