//! Time parsing shared by decoders: RFC 3339 and epoch numbers into UTC nanoseconds.

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
    let t = s.trim();
    let parsed = DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f%z"))
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%d %H:%M:%S%.f %z"));
    match parsed {
        Ok(dt) => dt.timestamp_nanos_opt().ok_or_else(|| BadTime(s.to_string())),
        Err(_) => Err(BadTime(s.to_string())),
    }
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
    let ns = v * 1e9;
    if ns >= 9.2e18 {
        return Err(BadTime(v.to_string()));
    }
    Ok(ns.round() as i64)
}

/// Epoch integers, exactly: seconds below 1e11, milliseconds below 1e14, microseconds
/// below 1e17, nanoseconds above.
pub fn from_epoch_integer(v: i64) -> Result<Nanos, BadTime> {
    let bad = || BadTime(v.to_string());
    match v {
        ..0 => Err(bad()),
        0..100_000_000_000 => v.checked_mul(1_000_000_000).ok_or_else(bad),
        100_000_000_000..100_000_000_000_000 => Ok(v * 1_000_000),
        100_000_000_000_000..100_000_000_000_000_000 => Ok(v * 1_000),
        _ => Ok(v),
    }
}

/// Formats nanoseconds as RFC 3339 UTC with the shortest exact fraction.
pub fn format_rfc3339(ns: Nanos) -> String {
    DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_forms() {
        let want = 1_764_411_302_123_000_000;
        assert_eq!(parse_rfc3339("2025-11-29T10:15:02.123Z").unwrap(), want);
        assert_eq!(parse_rfc3339("2025-11-29T10:15:02.123+00:00").unwrap(), want);
        assert_eq!(parse_rfc3339("2025-11-29T11:15:02.123+0100").unwrap(), want);
        assert_eq!(parse_rfc3339("2025-11-29 10:15:02.123Z").unwrap(), want);
        assert!(parse_rfc3339("yesterday").is_err());
        assert_eq!(format_rfc3339(want), "2025-11-29T10:15:02.123Z");
    }

    #[test]
    fn epoch_numbers() {
        assert_eq!(from_epoch_integer(1_764_411_302).unwrap(), 1_764_411_302_000_000_000);
        assert_eq!(from_epoch_integer(1_764_411_302_123).unwrap(), 1_764_411_302_123_000_000);
        assert_eq!(from_epoch_integer(1_764_411_302_123_456_789).unwrap(), 1_764_411_302_123_456_789);
        assert_eq!(from_epoch_integer(1_764_411_302_123_456).unwrap(), 1_764_411_302_123_456_000);
        assert_eq!(from_epoch_number(1_764_411_302.5).unwrap(), 1_764_411_302_500_000_000);
        assert_eq!(from_epoch_number(1_764_411_302_123.0).unwrap(), 1_764_411_302_123_000_000);
        assert!(from_epoch_number(f64::NAN).is_err());
        assert!(from_epoch_integer(-1).is_err());
    }
}
