//! The report as Markdown, for people: workloads with their goodput and badput, then
//! every slowdown with its verdict, causal chain and the other candidates. Text from
//! the data (names, summaries) is printed with its control characters escaped: a
//! report read in a terminal shows an escape sequence, it does not run it.

use std::fmt::Write;

use whyslow_queries::output::{Escape, escape_controls};

use super::model::{Report, Slowdown};

/// A duration in seconds as `1h 02m 03s` (or `12.5s` under a minute).
pub fn human_seconds(s: f64) -> String {
    if s < 60.0 {
        return format!("{s:.1}s");
    }
    let total = s.round() as i64;
    let (h, m, sec) = (total / 3600, (total % 3600) / 60, total % 60);
    if h > 0 {
        format!("{h}h {m:02}m {sec:02}s")
    } else {
        format!("{m}m {sec:02}s")
    }
}

fn who(ns: &Option<String>, w: &Option<String>) -> String {
    format!(
        "{}/{}",
        ns.as_deref().unwrap_or("-"),
        w.as_deref().unwrap_or("-")
    )
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// Renders the report.
pub fn render(r: &Report) -> String {
    // The renderer's own line breaks stay; every other control character came from the
    // data and is escaped.
    escape_controls(&render_raw(r), Escape::KeepLineBreaks)
        .replace('\r', "\\r")
        .replace('\t', "\\t")
}

fn render_raw(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "# whyslow report\n");
    let _ = writeln!(
        o,
        "Store `{}` · window {} → {} · generated {}\n",
        r.store, r.window.from, r.window.to, r.generated_at
    );
    let total_lost: f64 = r.slowdowns.iter().map(|s| s.lost_seconds).sum();
    let _ = writeln!(
        o,
        "{} slowdown(s), {} lost in total.\n",
        r.slowdowns.len(),
        human_seconds(total_lost)
    );
    let _ = writeln!(o, "## Workloads\n");
    let _ = writeln!(
        o,
        "| workload | run | observed | productive | badput by cause |"
    );
    let _ = writeln!(o, "|---|---|---:|---:|---|");
    for w in &r.workloads {
        let badput = if w.badput.is_empty() {
            "—".to_string()
        } else {
            w.badput
                .iter()
                .map(|(c, s)| format!("`{c}` {}", human_seconds(*s)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            cell(&who(&w.namespace, &w.workload)),
            cell(w.run_id.as_deref().unwrap_or("—")),
            human_seconds(w.observed_seconds),
            human_seconds(w.productive_seconds),
            badput
        );
    }
    let _ = writeln!(o, "\n## Slowdowns\n");
    if r.slowdowns.is_empty() {
        let _ = writeln!(o, "No slowdown found.");
    }
    for (i, s) in r.slowdowns.iter().enumerate() {
        slowdown(&mut o, i + 1, s);
    }
    o
}

fn slowdown(o: &mut String, n: usize, s: &Slowdown) {
    let _ = writeln!(
        o,
        "### {n}. {} of {} — {} lost{}\n",
        s.kind,
        who(&s.namespace, &s.workload),
        human_seconds(s.lost_seconds),
        if s.ongoing { " (ongoing)" } else { "" }
    );
    let _ = writeln!(
        o,
        "- id `{}`{}",
        s.slowdown_id,
        s.run_id
            .as_ref()
            .map(|r| format!(", run `{r}`"))
            .unwrap_or_default()
    );
    let _ = writeln!(o, "- from {} to {}", s.start, s.end);
    if let Some(m) = &s.metric {
        let fmt = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v}"));
        let _ = writeln!(
            o,
            "- `{m}`: baseline {}, observed {}",
            fmt(s.baseline),
            fmt(s.observed)
        );
    }
    if !s.nodes.is_empty() {
        let _ = writeln!(o, "- nodes: {}", s.nodes.join(", "));
    }
    if !s.pods.is_empty() {
        let _ = writeln!(o, "- pods: {}", s.pods.join(", "));
    }
    let _ = writeln!(o);
    causes(o, s);
    profiles(o, s);
}

/// Whether a url is a web link a reader can click (`http`/`https`, no spaces or angle
/// brackets): the HTML report links only these.
pub fn is_web_link(url: &str) -> bool {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://"))
        && !url.contains(|c: char| c.is_whitespace() || c == '<' || c == '>')
}

/// The profiles captured during the slowdown, when there are some: web links as
/// autolinks, other places (`gs://…`, a path) as code.
fn profiles(o: &mut String, s: &Slowdown) {
    if s.profiles.is_empty() {
        return;
    }
    let _ = writeln!(o, "Profiles to open:\n");
    for p in &s.profiles {
        let place = if is_web_link(&p.url) {
            format!("<{}>", p.url)
        } else if p.url.contains('`') {
            format!("`` {} ``", p.url)
        } else {
            format!("`{}`", p.url)
        };
        let _ = writeln!(o, "- {} · {place}", p.time);
    }
    let _ = writeln!(o);
}

fn causes(o: &mut String, s: &Slowdown) {
    let Some(v) = s.causes.first() else { return };
    let _ = writeln!(
        o,
        "**Verdict: `{}`** (confidence {:.2}, explains {}): {}\n",
        v.cause,
        v.confidence,
        human_seconds(v.explained_seconds),
        v.summary
    );
    if !v.chain.is_empty() {
        let _ = writeln!(o, "Causal chain:\n");
        for (i, l) in v.chain.iter().enumerate() {
            let _ = writeln!(
                o,
                "{}. {} · {} · `{}` — {}",
                i + 1,
                l.time,
                l.layer,
                l.kind,
                l.summary
            );
        }
        let _ = writeln!(o);
    }
    if !v.evidence.is_empty() {
        let _ = writeln!(
            o,
            "Evidence: {}\n",
            v.evidence
                .iter()
                .map(|e| format!("`{e}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if s.causes.len() > 1 {
        let _ = writeln!(o, "Other candidates:\n");
        let _ = writeln!(o, "| cause | confidence | explained | where | summary |");
        let _ = writeln!(o, "|---|---:|---:|---|---|");
        for c in &s.causes[1..] {
            let place = match (&c.node, &c.device) {
                (Some(n), Some(d)) => format!("{n} GPU {d}"),
                (Some(n), None) => n.clone(),
                _ => "—".to_string(),
            };
            let _ = writeln!(
                o,
                "| `{}` | {:.2} | {} | {} | {} |",
                c.cause,
                c.confidence,
                human_seconds(c.explained_seconds),
                cell(&place),
                cell(&c.summary)
            );
        }
        let _ = writeln!(o);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workload name carrying a terminal escape sequence (from a pod label, a log
    /// line) is printed escaped, in table cells and elsewhere.
    #[test]
    fn escape_sequences_from_the_data_are_escaped() {
        use super::super::model::{Window, WorkloadSummary};
        let r = Report {
            generated_at: "2026-11-29T10:00:00Z".into(),
            store: "st\u{1b}]0;title\u{7}ore".into(),
            window: Window {
                from: "a".into(),
                to: "b".into(),
            },
            workloads: vec![WorkloadSummary {
                namespace: Some("ml".into()),
                workload: Some("\u{1b}[2J\u{1b}[31mtrain\r\tx".into()),
                run_id: None,
                observed_seconds: 10.0,
                productive_seconds: 10.0,
                badput: Default::default(),
            }],
            slowdowns: Vec::new(),
        };
        let text = render(&r);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{text:?}"
        );
        assert!(text.contains("ml/\\u{1b}[2J\\u{1b}[31mtrain"), "{text}");
        assert!(text.contains("st\\u{1b}]0;title\\u{7}ore"), "{text}");
    }

    /// Profiles show on their slowdown only when there are some; web urls are links (in
    /// HTML an anchor), anything else is code, escaped as the rest of the output.
    #[test]
    fn profiles_to_open() {
        use super::super::model::{ProfileEntry, Window};
        let slowdown = |profiles: Vec<ProfileEntry>| Slowdown {
            slowdown_id: "x".into(),
            namespace: Some("llm".into()),
            workload: Some("train".into()),
            run_id: None,
            kind: "stall".into(),
            ongoing: false,
            nodes: vec![],
            pods: vec![],
            start: "2026-11-29T10:00:00Z".into(),
            end: "2026-11-29T10:10:00Z".into(),
            lost_seconds: 600.0,
            baseline: None,
            observed: None,
            metric: None,
            causes: vec![],
            profiles,
        };
        let report = |s: Slowdown| Report {
            generated_at: "2026-11-29T12:00:00Z".into(),
            store: "s".into(),
            window: Window {
                from: "a".into(),
                to: "b".into(),
            },
            workloads: vec![],
            slowdowns: vec![s],
        };
        let none = report(slowdown(vec![]));
        assert!(!render(&none).contains("Profiles to open"));
        let analysis = crate::analyze::Analysis {
            from_ns: 0,
            to_ns: 0,
            workloads: vec![],
            findings: vec![],
            timings: vec![],
        };
        assert!(!super::super::html::render(&none, &analysis).contains("Profiles to open"));
        let p = |time: &str, url: &str| ProfileEntry {
            time: time.into(),
            url: url.into(),
        };
        let some = report(slowdown(vec![
            p(
                "2026-11-29T10:01:00Z",
                "https://xprof.example/?run=a&host=b",
            ),
            p(
                "2026-11-29T10:02:00Z",
                "gs://b/run/plugins/profile/x/h.xplane.pb",
            ),
            p("2026-11-29T10:03:00Z", "javascript:alert(1)\u{1b}[2J<b>"),
        ]));
        let md = render(&some);
        assert!(md.contains("Profiles to open:\n\n- 2026-11-29T10:01:00Z · <https://xprof.example/?run=a&host=b>\n- 2026-11-29T10:02:00Z · `gs://b/run/plugins/profile/x/h.xplane.pb`\n"), "{md}");
        assert!(md.contains("`javascript:alert(1)\\u{1b}[2J<b>`"), "{md}");
        let html = super::super::html::render(&some, &analysis);
        assert!(html.contains("<li>2026-11-29T10:01:00Z · <a href=\"https://xprof.example/?run=a&amp;host=b\">https://xprof.example/?run=a&amp;host=b</a></li>"), "{html}");
        assert!(html.contains("<code>gs://b/run/plugins/profile/x/h.xplane.pb</code>"));
        assert!(
            html.contains("<code>javascript:alert(1)\u{1b}[2J&lt;b&gt;</code>"),
            "{html}"
        );
        assert!(!html.contains("href=\"javascript"));
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(human_seconds(12.34), "12.3s");
        assert_eq!(human_seconds(1316.0), "21m 56s");
        assert_eq!(human_seconds(10800.0), "3h 00m 00s");
    }
}
