//! Rules that read a serving router's per-request log line into that request's latencies:
//! Hugging Face text-generation-inference (TGI) and text-embeddings-inference (TEI) log
//! one `Success` line per request, its span fields Rust `Duration`s
//! (`generate_stream{parameters=… total_time="5.639886919s" validation_time="153.888µs"
//! queue_time="184.627µs" inference_time="5.639548636s" time_per_token="56.395486ms"
//! seed="None"}: text_generation_router::server: router/src/server.rs:452: Success`).
//! A cluster that does not scrape the router still logs this; `serving_samples` turns the
//! requests into per-minute quantiles as a scrape's histograms would give.

use super::framework_lines::{Finding, MetricFinding, source};

/// (span field, whyslow metric of one request's value), in the order they are emitted.
/// The names are the scrape's bases (`tgi_request_duration` → `request_seconds`, …), so
/// one request's row and a scrape's quantile of many share a name up to the suffix.
const FIELDS: &[(&str, &str)] = &[
    ("total_time", "request_seconds"),
    ("queue_time", "queue_seconds"),
    ("inference_time", "inference_seconds"),
    // TGI's mean time per output token of the request (TPOT), as its histogram's.
    ("time_per_token", "time_per_output_token_seconds"),
];

/// The quoted value of span field `name` (`name="…"`), where `name` starts a field (after
/// `{`, a space or a `,`), not where it ends another's name (`validation_time` is not
/// `time`).
fn field<'a>(l: &'a str, name: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(i) = l.get(from..)?.find(name) {
        let at = from + i;
        let starts_field = l[..at]
            .chars()
            .next_back()
            .is_some_and(|c| matches!(c, '{' | ' ' | ','));
        let rest = &l[at + name.len()..];
        if starts_field && let Some(value) = rest.strip_prefix("=\"") {
            return value.split_once('"').map(|(v, _)| v);
        }
        from = at + name.len();
    }
    None
}

/// Seconds in a Rust `Duration`'s debug text (`5.639886919s`, `56.395486ms`, `153.888µs`,
/// `12ns`).
pub fn duration_seconds(text: &str) -> Option<f64> {
    let (number, scale) = [
        ("ns", 1e-9),
        ("µs", 1e-6),
        ("us", 1e-6),
        ("ms", 1e-3),
        ("s", 1.0),
    ]
    .iter()
    .find_map(|(unit, scale)| text.strip_suffix(unit).map(|n| (n, *scale)))?;
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return None;
    }
    let value: f64 = number.parse().ok()?;
    Some(value * scale).filter(|v| v.is_finite())
}

/// A TGI or TEI router's `Success` line: one row per latency the request's span gives
/// (the request, its queue wait, its inference, TGI's time per output token), labelled
/// with the route's span name (`generate`, `generate_stream`, `chat_completions`,
/// `openai_embed`, …) as `endpoint`. The span's name before its fields is required.
pub fn hf_router_success(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some(head) = l.trim_end().strip_suffix(": Success") else {
        return false;
    };
    let Some(total) = field(head, "total_time").and_then(duration_seconds) else {
        return false;
    };
    let engine = if head.contains("text_embeddings_router") {
        source::TEI
    } else {
        source::TGI
    };
    // The fields belong to a span: a line that names none is text quoting them.
    let Some(endpoint) = head
        .find("total_time=")
        .and_then(|at| endpoint_of(&head[..at]))
    else {
        return false;
    };
    let labels = vec![("endpoint", endpoint.to_string())];
    for (name, metric) in FIELDS {
        let value = if *name == "total_time" {
            Some(total)
        } else {
            field(head, name).and_then(duration_seconds)
        };
        if let Some(value) = value {
            out.push(Finding::Metric(MetricFinding {
                metric: (*metric).to_string(),
                value,
                source: engine,
                step: None,
                labels: labels.clone(),
            }));
        }
    }
    true
}

/// The name of the innermost span open before the request's fields: the word before the
/// last `{` that is not inside the `GenerateParameters { … }` debug text, i.e. the last
/// `name{` whose name is a plain identifier.
fn endpoint_of(before_fields: &str) -> Option<&str> {
    before_fields.match_indices('{').rev().find_map(|(at, _)| {
        let name = before_fields[..at]
            .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .next()?;
        let is_span = !name.is_empty() && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_');
        is_span.then_some(name)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A row's metric, value, source and labels.
    type Read = (String, f64, &'static str, Vec<(&'static str, String)>);

    fn read(l: &str) -> Vec<Read> {
        let mut v = Vec::new();
        assert!(hf_router_success(l, &mut v), "{l}");
        v.into_iter()
            .map(|f| match f {
                Finding::Metric(m) => (m.metric, m.value, m.source, m.labels),
                Finding::Event(e) => panic!("an event: {e:?}"),
            })
            .collect()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn durations_in_every_unit_rust_prints() {
        assert!(close(
            duration_seconds("5.639886919s").unwrap(),
            5.639886919
        ));
        assert!(close(duration_seconds("56.395486ms").unwrap(), 0.056395486));
        assert!(close(duration_seconds("153.888µs").unwrap(), 0.000153888));
        assert!(close(duration_seconds("12ns").unwrap(), 12e-9));
        for bad in ["", "s", "ms", "1.2.3s", "-1s", "1e3s", "5 s", "1h", "∞s"] {
            assert_eq!(duration_seconds(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_tgi_stream_request_behind_the_http_span() {
        // The line of fixtures/samples/serving/tgi-router-request-log-chat-ui-issue-411-excerpt.log.
        let l = include_str!(
            "../../../../fixtures/samples/serving/tgi-router-request-log-chat-ui-issue-411-excerpt.log"
        );
        let got = read(l.lines().next().unwrap());
        let names: Vec<&str> = got.iter().map(|(m, ..)| m.as_str()).collect();
        assert_eq!(
            names,
            [
                "request_seconds",
                "queue_seconds",
                "inference_seconds",
                "time_per_output_token_seconds"
            ]
        );
        let want = [5.639886919, 0.000184627, 5.639548636, 0.056395486];
        for ((_, value, engine, labels), want) in got.iter().zip(want) {
            assert!(close(*value, want), "{value} vs {want}");
            assert_eq!(*engine, source::TGI);
            assert_eq!(labels, &vec![("endpoint", "generate_stream".to_string())]);
        }
    }

    #[test]
    fn a_tei_embedding_request_has_no_time_per_token() {
        let l = "2025-08-09T19:36:03.579418Z  INFO openai_embed{total_time=\"685.148571ms\" tokenization_time=\"8.812018ms\" queue_time=\"724.303µs\" inference_time=\"675.535478ms\"}: text_embeddings_router::http::server: router/src/http/server.rs:1290: Success";
        let got = read(l);
        let names: Vec<&str> = got.iter().map(|(m, ..)| m.as_str()).collect();
        assert_eq!(
            names,
            ["request_seconds", "queue_seconds", "inference_seconds"]
        );
        assert!(close(got[0].1, 0.685148571));
        assert!(got.iter().all(|(_, _, e, l)| *e == source::TEI
            && l == &vec![("endpoint", "openai_embed".to_string())]));
    }

    #[test]
    fn other_lines_and_damaged_ones_are_not_requests() {
        let mut v = Vec::new();
        for l in [
            "2025-05-01T01:31:02.842858Z  INFO text_generation_router::server: router/src/server.rs:2266: Connected",
            // Fields but no Success: a failed request's span, or a user's text quoting one.
            "INFO generate{total_time=\"1s\"}: text_generation_router::server: Input validation error",
            // Success without a parsable total time.
            "INFO generate{total_time=\"soon\"}: text_generation_router::server: x.rs:1: Success",
            "INFO generate{validation_total_time=\"1s\"}: x.rs:1: Success",
            "Ω total_time=\"1s\" é: Success",
        ] {
            assert!(!hf_router_success(l, &mut v), "{l}");
        }
        assert!(v.is_empty(), "{v:?}");
        // Multibyte text around the fields reads as text.
        assert!(hf_router_success(
            "é{Ω} gen{total_time=\"2ms\" queue_time=\"∞s\"}: Success",
            &mut v
        ));
        assert_eq!(v.len(), 1, "only the total parses: {v:?}");
    }
}
