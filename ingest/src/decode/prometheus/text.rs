//! A hand parser for one line of the Prometheus text exposition format 0.0.4 and of
//! OpenMetrics: comments (`# HELP`, `# TYPE`, `# UNIT`, `# EOF`, whyslow's
//! `# whyslow-scrape-time:`) and samples `name{label="value",…} value [timestamp] [# exemplar]`.
//! Names and unescaped label values are copied into one reusable buffer, so parsing a
//! line allocates nothing once the buffers have grown.

use whyslow_schemas::time::{self, Nanos};

/// Why a line is not a sample or a comment, and the byte where reading stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct SyntaxError {
    pub what: &'static str,
    pub at: usize,
}

/// What a line turned out to be. A sample is left in the [`Sample`] buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line<'a> {
    /// Empty or whitespace only.
    Blank,
    /// `# HELP`, `# TYPE`, `# UNIT`, `# EOF` or any other comment.
    Comment,
    /// `# whyslow-scrape-time: <RFC 3339>`: the time of the samples that follow.
    ScrapeTime(&'a str),
    /// A sample, now in the buffer.
    Sample,
}

/// One sample: its name, labels (unescaped), value and optional timestamp.
#[derive(Debug, Default)]
pub struct Sample {
    buf: String,
    name: (usize, usize),
    /// (name start, value start, value end); the name ends where the value starts.
    labels: Vec<(usize, usize, usize)>,
    /// The sample value: any float, including `NaN` and `±Inf`.
    pub value: f64,
    /// The sample's own timestamp, if it has one.
    pub timestamp: Option<Nanos>,
}

impl Sample {
    /// Starts an empty sample, keeping the buffers' capacity.
    pub fn clear(&mut self) {
        self.buf.clear();
        self.labels.clear();
        self.name = (0, 0);
        self.value = 0.0;
        self.timestamp = None;
    }

    /// The metric name.
    pub fn name(&self) -> &str {
        &self.buf[self.name.0..self.name.1]
    }

    /// Sets the metric name (the JSON records of prometheus-kafka-adapter fill samples too).
    pub fn set_name(&mut self, name: &str) {
        let start = self.buf.len();
        self.buf.push_str(name);
        self.name = (start, self.buf.len());
    }

    /// Appends one label.
    pub fn push_label(&mut self, name: &str, value: &str) {
        let start = self.buf.len();
        self.buf.push_str(name);
        let mid = self.buf.len();
        self.buf.push_str(value);
        self.labels.push((start, mid, self.buf.len()));
    }

    /// The number of labels.
    pub fn label_count(&self) -> usize {
        self.labels.len()
    }

    /// The `i`-th label as (name, value).
    pub fn label(&self, i: usize) -> (&str, &str) {
        let (s, m, e) = self.labels[i];
        (&self.buf[s..m], &self.buf[m..e])
    }

    /// Every label as (name, value), in input order.
    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> + Clone {
        self.labels
            .iter()
            .map(|&(s, m, e)| (&self.buf[s..m], &self.buf[m..e]))
    }
}

/// Reads one line (without its newline). A sample is written into `sample`.
pub fn parse_line<'a>(line: &'a str, sample: &mut Sample) -> Result<Line<'a>, SyntaxError> {
    let t = line.trim_matches(|c| c == ' ' || c == '\t' || c == '\r');
    if t.is_empty() {
        return Ok(Line::Blank);
    }
    if let Some(comment) = t.strip_prefix('#') {
        let c = comment.trim_start();
        if let Some(v) = c.strip_prefix("whyslow-scrape-time:") {
            return Ok(Line::ScrapeTime(v.trim()));
        }
        return Ok(Line::Comment);
    }
    parse_sample(t, sample)?;
    Ok(Line::Sample)
}

fn is_name_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b':'
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

fn err(what: &'static str, at: usize) -> SyntaxError {
    SyntaxError { what, at }
}

/// Reads a double-quoted string starting at `b[i] == '"'`, unescaping `\\`, `\"` and
/// `\n` into `buf`; returns the index after the closing quote.
fn read_quoted(line: &str, i: usize, buf: &mut String) -> Result<usize, SyntaxError> {
    let b = line.as_bytes();
    let mut j = i + 1;
    let mut run = j;
    loop {
        match memchr::memchr2(b'"', b'\\', &b[j..]) {
            None => return Err(err("unterminated quoted string", i)),
            Some(k) => {
                let at = j + k;
                if b[at] == b'"' {
                    buf.push_str(&line[run..at]);
                    return Ok(at + 1);
                }
                // A backslash: everything before it is literal.
                buf.push_str(&line[run..at]);
                match b.get(at + 1) {
                    Some(b'n') => buf.push('\n'),
                    Some(b'\\') => buf.push('\\'),
                    Some(b'"') => buf.push('"'),
                    // Unknown escapes are kept as written (the format defines only three).
                    Some(_) => buf.push('\\'),
                    None => return Err(err("unterminated quoted string", i)),
                }
                j = if matches!(b.get(at + 1), Some(b'n' | b'\\' | b'"')) {
                    at + 2
                } else {
                    at + 1
                };
                run = j;
            }
        }
    }
}

fn parse_sample(line: &str, s: &mut Sample) -> Result<(), SyntaxError> {
    s.clear();
    let b = line.as_bytes();
    let mut i = 0;
    let mut named = false;
    if b[0] != b'{' {
        while i < b.len() && is_name_char(b[i]) {
            i += 1;
        }
        if i == 0 || b[0].is_ascii_digit() {
            return Err(err("expected a metric name", 0));
        }
        s.name = (0, i);
        s.buf.push_str(&line[..i]);
        named = true;
    }
    if b.get(i) == Some(&b'{') {
        i = parse_labels(line, i + 1, s, &mut named)?;
    }
    if !named {
        return Err(err("expected a metric name", 0));
    }
    let v0 = skip_ws(b, i);
    if v0 == i || v0 >= b.len() {
        return Err(err("expected a value after the name and labels", i));
    }
    let mut j = v0;
    while j < b.len() && b[j] != b' ' && b[j] != b'\t' {
        j += 1;
    }
    s.value = parse_value(&line[v0..j]).ok_or_else(|| err("unreadable sample value", v0))?;
    let t0 = skip_ws(b, j);
    if t0 >= b.len() || b[t0] == b'#' {
        return Ok(()); // no timestamp; an OpenMetrics exemplar (`# {…} v`) is ignored
    }
    let mut k = t0;
    while k < b.len() && b[k] != b' ' && b[k] != b'\t' {
        k += 1;
    }
    let ts =
        time::parse_epoch_decimal(&line[t0..k]).map_err(|_| err("unreadable timestamp", t0))?;
    s.timestamp = Some(ts);
    let rest = skip_ws(b, k);
    if rest < b.len() && b[rest] != b'#' {
        return Err(err("unexpected text after the timestamp", rest));
    }
    Ok(())
}

/// Reads `label="value",…}` from `i` (just after `{`); returns the index after `}`.
/// A quoted item with no `=` is the metric name (the UTF-8 names of Prometheus 3).
fn parse_labels(
    line: &str,
    mut i: usize,
    s: &mut Sample,
    named: &mut bool,
) -> Result<usize, SyntaxError> {
    let b = line.as_bytes();
    loop {
        i = skip_ws(b, i);
        match b.get(i) {
            None => return Err(err("unterminated label set", i)),
            Some(b'}') => return Ok(i + 1),
            _ => {}
        }
        let start = s.buf.len();
        if b[i] == b'"' {
            i = read_quoted(line, i, &mut s.buf)?;
        } else {
            let n0 = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if i == n0 {
                return Err(err("expected a label name", i));
            }
            s.buf.push_str(&line[n0..i]);
        }
        let mid = s.buf.len();
        i = skip_ws(b, i);
        if b.get(i) != Some(&b'=') {
            // `{"metric.name", …}`: a bare quoted string names the metric.
            if !*named && matches!(b.get(i), Some(b',' | b'}')) && b[i - 1] == b'"' {
                s.name = (start, mid);
                *named = true;
                if b[i] == b',' {
                    i += 1;
                }
                continue;
            }
            return Err(err("expected '=' after a label name", i));
        }
        i = skip_ws(b, i + 1);
        if b.get(i) != Some(&b'"') {
            return Err(err("expected a quoted label value", i));
        }
        i = read_quoted(line, i, &mut s.buf)?;
        s.labels.push((start, mid, s.buf.len()));
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b',') => i += 1,
            Some(b'}') => return Ok(i + 1),
            _ => return Err(err("expected ',' or '}' after a label", i)),
        }
    }
}

/// A sample value: a float, `NaN`, `+Inf`, `-Inf` (any case, as the format's Go parser
/// accepts).
pub fn parse_value(v: &str) -> Option<f64> {
    v.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(line: &str) -> Sample {
        let mut s = Sample::default();
        assert_eq!(parse_line(line, &mut s), Ok(Line::Sample), "{line}");
        s
    }

    #[test]
    fn reads_plain_and_labelled_samples() {
        let s = sample("up 1");
        assert_eq!(
            (s.name(), s.value, s.label_count(), s.timestamp),
            ("up", 1.0, 0, None)
        );
        let s = sample(r#"http_requests_total{method="post",code="200"} 1027 1395066363000"#);
        assert_eq!(s.name(), "http_requests_total");
        assert_eq!(
            s.labels().collect::<Vec<_>>(),
            vec![("method", "post"), ("code", "200")]
        );
        assert_eq!(s.timestamp, Some(1_395_066_363_000_000_000));
        let s = sample("x{a=\"1\",} 2\t");
        assert_eq!(s.label(0), ("a", "1"));
    }

    #[test]
    fn unescapes_label_values() {
        let s = sample(
            r#"msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9"#,
        );
        assert_eq!(s.label(0), ("path", r"C:\DIR\FILE.TXT"));
        assert_eq!(s.label(1), ("error", "Cannot find file:\n\"FILE.TXT\""));
        assert_eq!(s.value, 1.458255915e9);
    }

    #[test]
    fn special_values_and_openmetrics_timestamps_and_exemplars() {
        assert!(sample("x NaN").value.is_nan());
        assert_eq!(sample("x +Inf").value, f64::INFINITY);
        assert_eq!(sample("x -Inf").value, f64::NEG_INFINITY);
        let s = sample(r#"foo_bucket{le="0.01"} 0 1520879607.789 # {trace_id="KOO5S4vxi0o"} 0.67"#);
        assert_eq!(s.timestamp, Some(1_520_879_607_789_000_000));
        let s = sample(r#"foo_bucket{le="+Inf"} 17 # {trace_id="oHg5SJYRHA0"} 9.8 1520879607.789"#);
        assert_eq!((s.value, s.timestamp), (17.0, None));
        let s = sample(r#"{"my.metric", "my.label"="x"} 3"#);
        assert_eq!((s.name(), s.label(0)), ("my.metric", ("my.label", "x")));
    }

    #[test]
    fn comments_and_scrape_times() {
        let mut s = Sample::default();
        assert_eq!(parse_line("# HELP up 1 if up", &mut s), Ok(Line::Comment));
        assert_eq!(parse_line("# EOF", &mut s), Ok(Line::Comment));
        assert_eq!(parse_line("   ", &mut s), Ok(Line::Blank));
        assert_eq!(
            parse_line("# whyslow-scrape-time: 2026-11-29T10:15:00Z", &mut s),
            Ok(Line::ScrapeTime("2026-11-29T10:15:00Z"))
        );
    }

    #[test]
    fn rejects_broken_lines() {
        let mut s = Sample::default();
        for bad in [
            "up",
            "up{",
            r#"up{a="1"#,
            r#"up{a=1} 2"#,
            r#"up{a="1" b="2"} 2"#,
            "up one",
            "up 1 yesterday",
            "up 1 2 3",
            "9up 1",
            "{} 1",
            r#"up{a="\"} 1"#,
        ] {
            assert!(parse_line(bad, &mut s).is_err(), "{bad}");
        }
    }
}
