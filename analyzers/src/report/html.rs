//! The report as one self-contained HTML page: the Markdown's content plus, per slowdown,
//! an inline SVG timeline — the symptom metric over time, the slowdown window, the
//! evidence events marked by layer and the verdict's chain numbered on it.

use std::collections::HashMap;
use std::fmt::Write;

use super::build::rfc3339;
use super::markdown::{human_seconds, is_web_link};
use super::model::{Report, Slowdown};
use crate::analyze::{Analysis, Finding};

/// Escapes text for HTML and SVG.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            _ => o.push(c),
        }
    }
    o
}

fn layer_color(layer: &str) -> &'static str {
    match layer {
        "infrastructure" => "#d9480f",
        "orchestrator" => "#1c7ed6",
        "framework" => "#2b8a3e",
        _ => "#868e96",
    }
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1000px;color:#212529;padding:0 1rem}\
h1{font-size:1.6rem}h2{border-bottom:1px solid #dee2e6;padding-bottom:.3rem;margin-top:2rem}\
table{border-collapse:collapse;margin:.5rem 0;width:100%}td,th{border:1px solid #dee2e6;padding:.3rem .5rem;text-align:left;vertical-align:top;font-size:.9rem}\
th{background:#f1f3f5}.num{text-align:right}.slowdown{border:1px solid #ced4da;border-radius:6px;padding:1rem;margin:1.5rem 0}\
.verdict{background:#fff4e6;border-left:4px solid #f08c00;padding:.5rem .8rem;margin:.5rem 0}code{background:#f1f3f5;padding:0 .2rem;border-radius:3px}\
.meta{color:#495057;font-size:.9rem}.layer{display:inline-block;width:.8rem;height:.8rem;border-radius:2px;margin:0 .3rem 0 .8rem;vertical-align:middle}\
svg{width:100%;height:auto;background:#fff;border:1px solid #e9ecef}ol.chain li{margin:.2rem 0}";

/// Renders the report, with the analysis it came from for the timelines.
pub fn render(r: &Report, analysis: &Analysis) -> String {
    let findings: HashMap<&str, &Finding> = analysis
        .findings
        .iter()
        .map(|f| (f.slowdown_id.as_str(), f))
        .collect();
    let mut o = String::new();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>whyslow report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
    );
    let _ = writeln!(o, "<h1>whyslow report</h1>");
    let _ = writeln!(
        o,
        "<p class=\"meta\">Store <code>{}</code> · window {} → {} · generated {}</p>",
        esc(&r.store),
        esc(&r.window.from),
        esc(&r.window.to),
        esc(&r.generated_at)
    );
    let _ = writeln!(
        o,
        "<h2>Workloads</h2>\n<table><tr><th>workload</th><th>run</th><th>observed</th><th>productive</th><th>badput by cause</th></tr>"
    );
    for w in &r.workloads {
        let badput = w
            .badput
            .iter()
            .map(|(c, s)| format!("<code>{}</code> {}", esc(c), human_seconds(*s)))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = writeln!(
            o,
            "<tr><td>{}/{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            esc(w.namespace.as_deref().unwrap_or("-")),
            esc(w.workload.as_deref().unwrap_or("-")),
            esc(w.run_id.as_deref().unwrap_or("—")),
            human_seconds(w.observed_seconds),
            human_seconds(w.productive_seconds),
            if badput.is_empty() {
                "—".to_string()
            } else {
                badput
            }
        );
    }
    let _ = writeln!(o, "</table>\n<h2>Slowdowns</h2>");
    let _ = writeln!(
        o,
        "<p class=\"meta\">Layers:<span class=\"layer\" style=\"background:{}\"></span>infrastructure<span class=\"layer\" style=\"background:{}\"></span>orchestrator<span class=\"layer\" style=\"background:{}\"></span>framework</p>",
        layer_color("infrastructure"),
        layer_color("orchestrator"),
        layer_color("framework")
    );
    if r.slowdowns.is_empty() {
        let _ = writeln!(o, "<p>No slowdown found.</p>");
    }
    for (i, s) in r.slowdowns.iter().enumerate() {
        slowdown(
            &mut o,
            i + 1,
            s,
            findings.get(s.slowdown_id.as_str()).copied(),
        );
    }
    let _ = writeln!(o, "</body>\n</html>");
    o
}

fn slowdown(o: &mut String, n: usize, s: &Slowdown, f: Option<&Finding>) {
    let _ = writeln!(
        o,
        "<section class=\"slowdown\" id=\"s-{}\">",
        esc(&s.slowdown_id)
    );
    let _ = writeln!(
        o,
        "<h3>{n}. {} of {}/{} — {} lost{}</h3>",
        esc(&s.kind),
        esc(s.namespace.as_deref().unwrap_or("-")),
        esc(s.workload.as_deref().unwrap_or("-")),
        human_seconds(s.lost_seconds),
        if s.ongoing { " (ongoing)" } else { "" }
    );
    let _ = writeln!(
        o,
        "<p class=\"meta\">{} → {} · id <code>{}</code>{}</p>",
        esc(&s.start),
        esc(&s.end),
        esc(&s.slowdown_id),
        s.metric
            .as_ref()
            .map(|m| format!(
                " · <code>{}</code> baseline {} observed {}",
                esc(m),
                s.baseline.map_or("—".into(), |v| v.to_string()),
                s.observed.map_or("—".into(), |v| v.to_string())
            ))
            .unwrap_or_default()
    );
    if let Some(f) = f {
        o.push_str(&timeline(s, f));
    }
    if let Some(v) = s.causes.first() {
        let _ = writeln!(
            o,
            "<div class=\"verdict\"><strong>Verdict: <code>{}</code></strong> (confidence {:.2}, explains {})<br>{}</div>",
            esc(&v.cause),
            v.confidence,
            human_seconds(v.explained_seconds),
            esc(&v.summary)
        );
        if !v.chain.is_empty() {
            let _ = writeln!(o, "<p>Causal chain:</p><ol class=\"chain\">");
            for l in &v.chain {
                let _ = writeln!(
                    o,
                    "<li><span class=\"layer\" style=\"background:{}\"></span>{} · <code>{}</code> — {}</li>",
                    layer_color(&l.layer),
                    esc(&l.time),
                    esc(&l.kind),
                    esc(&l.summary)
                );
            }
            let _ = writeln!(o, "</ol>");
        }
        if s.causes.len() > 1 {
            let _ = writeln!(
                o,
                "<table><tr><th>other candidate</th><th>confidence</th><th>explained</th><th>summary</th></tr>"
            );
            for c in &s.causes[1..] {
                let _ = writeln!(
                    o,
                    "<tr><td><code>{}</code></td><td class=\"num\">{:.2}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                    esc(&c.cause),
                    c.confidence,
                    human_seconds(c.explained_seconds),
                    esc(&c.summary)
                );
            }
            let _ = writeln!(o, "</table>");
        }
    }
    if !s.profiles.is_empty() {
        let _ = writeln!(o, "<p>Profiles to open:</p><ul class=\"profiles\">");
        for p in &s.profiles {
            let url = esc(&p.url);
            let place = if is_web_link(&p.url) {
                format!("<a href=\"{url}\">{url}</a>")
            } else {
                format!("<code>{url}</code>")
            };
            let _ = writeln!(o, "<li>{} · {place}</li>", esc(&p.time));
        }
        let _ = writeln!(o, "</ul>");
    }
    let _ = writeln!(o, "</section>");
}

/// The SVG timeline of one slowdown.
pub fn timeline(s: &Slowdown, f: &Finding) -> String {
    const W: f64 = 960.0;
    const H: f64 = 240.0;
    const L: f64 = 60.0;
    const R: f64 = 20.0;
    const T: f64 = 30.0;
    const B: f64 = 40.0;
    let sym = &f.symptom;
    let chain: &[crate::report::ChainLink] = s.causes.first().map_or(&[], |c| c.chain.as_slice());
    let chain_ns: Vec<i64> = f
        .causes
        .first()
        .map(|c| c.chain.iter().map(|l| l.time_ns).collect())
        .unwrap_or_default();
    let mut t0 = sym.start_ns;
    let mut t1 = sym.end_ns.max(sym.start_ns + 1);
    for &t in f.marks.iter().map(|m| &m.time_ns).chain(chain_ns.iter()) {
        t0 = t0.min(t);
        t1 = t1.max(t);
    }
    let pad = ((t1 - t0) / 10).max(30_000_000_000);
    let (t0, t1) = (t0 - pad, t1 + pad);
    let plot: Vec<(i64, f64)> = sym
        .plot
        .iter()
        .copied()
        .filter(|(t, _)| *t >= t0 && *t <= t1)
        .collect();
    let vmax = plot
        .iter()
        .map(|p| p.1)
        .chain(sym.baseline)
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.15;
    let x = |t: i64| L + (t - t0) as f64 / (t1 - t0) as f64 * (W - L - R);
    let y = |v: f64| T + (1.0 - v / vmax) * (H - T - B);
    let mut o = String::new();
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {W} {H}\" role=\"img\" aria-label=\"timeline of {} {}\">",
        esc(&s.kind),
        esc(s.workload.as_deref().unwrap_or("-"))
    );
    // The slowdown window.
    let _ = writeln!(
        o,
        "<rect class=\"window\" x=\"{:.1}\" y=\"{T}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#ffe3e3\"><title>{} {} → {}</title></rect>",
        x(sym.start_ns),
        (x(sym.end_ns) - x(sym.start_ns)).max(1.0),
        H - T - B,
        esc(&s.kind),
        esc(&s.start),
        esc(&s.end)
    );
    // Axes.
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#adb5bd\"/>",
        H - B,
        W - R,
        H - B
    );
    let _ = writeln!(
        o,
        "<line x1=\"{L}\" y1=\"{T}\" x2=\"{L}\" y2=\"{:.1}\" stroke=\"#adb5bd\"/>",
        H - B
    );
    let _ = writeln!(
        o,
        "<text x=\"{L}\" y=\"{:.1}\" font-size=\"11\" fill=\"#495057\">{}</text>",
        H - 22.0,
        esc(&rfc3339(t0))
    );
    let _ = writeln!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" fill=\"#495057\" text-anchor=\"end\">{}</text>",
        W - R,
        H - 22.0,
        esc(&rfc3339(t1))
    );
    let _ = writeln!(
        o,
        "<text x=\"4\" y=\"{:.1}\" font-size=\"11\" fill=\"#495057\">{:.3}</text>",
        T + 4.0,
        vmax
    );
    let _ = writeln!(
        o,
        "<text x=\"4\" y=\"{:.1}\" font-size=\"11\" fill=\"#495057\">0</text>",
        H - B
    );
    let _ = writeln!(
        o,
        "<text x=\"{L}\" y=\"18\" font-size=\"12\" fill=\"#212529\">{}</text>",
        esc(s.metric.as_deref().unwrap_or(&s.kind))
    );
    if let (Some(b), false) = (sym.baseline, plot.is_empty()) {
        let _ = writeln!(
            o,
            "<line class=\"baseline\" x1=\"{L}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#868e96\" stroke-dasharray=\"4 3\"><title>baseline {b}</title></line>",
            y(b),
            W - R,
            y(b)
        );
    }
    // The metric: separate polylines where data stops (a gap longer than the window/20).
    let gap = ((t1 - t0) / 20).max(1);
    let mut line: Vec<String> = Vec::new();
    let mut last_t: Option<i64> = None;
    let flush = |o: &mut String, line: &mut Vec<String>| {
        if line.len() > 1 {
            let _ = writeln!(
                o,
                "<polyline class=\"metric\" fill=\"none\" stroke=\"#343a40\" stroke-width=\"1.2\" points=\"{}\"/>",
                line.join(" ")
            );
        } else if let Some(p) = line.first() {
            let (px, py) = p.split_once(',').unwrap_or(("0", "0"));
            let _ = writeln!(
                o,
                "<circle class=\"metric\" cx=\"{px}\" cy=\"{py}\" r=\"1.5\" fill=\"#343a40\"/>"
            );
        }
        line.clear();
    };
    for &(t, v) in &plot {
        if last_t.is_some_and(|lt| t - lt > gap) {
            flush(&mut o, &mut line);
        }
        line.push(format!("{:.1},{:.1}", x(t), y(v)));
        last_t = Some(t);
    }
    flush(&mut o, &mut line);
    // Evidence events by layer.
    for m in &f.marks {
        let c = layer_color(&m.layer);
        let mx = x(m.time_ns);
        let _ = writeln!(
            o,
            "<g class=\"mark\" data-layer=\"{}\"><line x1=\"{mx:.1}\" y1=\"{T}\" x2=\"{mx:.1}\" y2=\"{:.1}\" stroke=\"{c}\" stroke-width=\"1.5\" opacity=\"0.8\"/><circle cx=\"{mx:.1}\" cy=\"{T}\" r=\"4\" fill=\"{c}\"/><title>{} {} {}: {}</title></g>",
            esc(&m.layer),
            H - B,
            esc(&rfc3339(m.time_ns)),
            esc(&m.layer),
            esc(&m.kind),
            esc(&m.summary)
        );
    }
    // The verdict's chain, numbered.
    for (i, (l, &t)) in chain.iter().zip(chain_ns.iter()).enumerate() {
        let _ = writeln!(
            o,
            "<text class=\"chain\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" font-weight=\"bold\" fill=\"{}\" text-anchor=\"middle\">{}<title>{}</title></text>",
            x(t),
            T - 8.0 - (i % 2) as f64 * 10.0,
            layer_color(&l.layer),
            i + 1,
            esc(&l.summary)
        );
    }
    let _ = writeln!(o, "</svg>");
    o
}
