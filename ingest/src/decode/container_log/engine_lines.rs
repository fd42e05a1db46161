//! Rules that read a serving engine's own periodic log line into the serving metrics the
//! engine's `/metrics` scrape gives (`contracts/tables.md` names): a cluster that does not
//! scrape its engines still logs them. vLLM's engine stats line, in the V0 form
//! (`metrics.py: Avg prompt throughput: … Running: 1 reqs, Swapped: 0 reqs, Pending: 0
//! reqs, GPU KV cache usage: 0.2%, CPU KV cache usage: 0.0%.`) and the V1 form
//! (`loggers.py: Engine 000: Avg prompt throughput: … Running: 18 reqs, Waiting: 43 reqs,
//! GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%`).

use super::framework_lines::{Finding, MetricFinding, source};

/// The number right after the first `pat` in `s` (digits and one `.`).
fn number_after(s: &str, pat: &str) -> Option<f64> {
    let rest = s.split_once(pat)?.1;
    let digits: String = rest
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    digits.parse().ok()
}

fn push(
    out: &mut Vec<Finding>,
    metric: &str,
    value: Option<f64>,
    labels: &[(&'static str, String)],
) {
    if let Some(value) = value.filter(|v| v.is_finite()) {
        out.push(Finding::Metric(MetricFinding {
            metric: metric.to_string(),
            value,
            source: source::VLLM,
            step: None,
            labels: labels.to_vec(),
        }));
    }
}

/// vLLM's engine stats line: prompt and generation token rates, requests running and
/// waiting (V0 `Pending`, V1 `Waiting`), and the GPU KV cache's use as a fraction (the
/// line prints a percentage; `vllm:kv_cache_usage_perc` is the fraction). V1 names its
/// engine (`Engine 000`): label `engine`, as the scrape's.
pub fn vllm_stats(l: &str, out: &mut Vec<Finding>) -> bool {
    let Some((head, stats)) = l.split_once("Avg prompt throughput: ") else {
        return false;
    };
    let Some(kv_percent) = number_after(stats, "GPU KV cache usage: ") else {
        return false;
    };
    let engine = head
        .rsplit_once("Engine ")
        .map(|(_, e)| e.trim_end().trim_end_matches(':'))
        .filter(|e| !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|e| e.parse::<u32>().ok());
    let labels: Vec<(&'static str, String)> = engine
        .map(|e| ("engine", e.to_string()))
        .into_iter()
        .collect();
    push(
        out,
        "prompt_tokens_per_second",
        number_after(l, "Avg prompt throughput: "),
        &labels,
    );
    push(
        out,
        "generation_tokens_per_second",
        number_after(stats, "Avg generation throughput: "),
        &labels,
    );
    push(
        out,
        "requests_running",
        number_after(stats, "Running: "),
        &labels,
    );
    push(
        out,
        "requests_waiting",
        number_after(stats, "Waiting: ").or_else(|| number_after(stats, "Pending: ")),
        &labels,
    );
    push(out, "kv_cache_usage", Some(kv_percent / 100.0), &labels);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A metric's name, value and labels.
    type Read = (String, f64, Vec<(&'static str, String)>);

    fn metrics(l: &str) -> Vec<Read> {
        let mut v = Vec::new();
        assert!(vllm_stats(l, &mut v), "{l}");
        v.into_iter()
            .map(|f| match f {
                Finding::Metric(m) => (m.metric, m.value, m.labels),
                Finding::Event(e) => panic!("an event: {e:?}"),
            })
            .collect()
    }

    #[test]
    fn both_generations_of_the_stats_line() {
        let v0 = metrics(
            "INFO 08-20 02:39:42 metrics.py:411] Avg prompt throughput: 883.5 tokens/s, Avg generation throughput: 85.3 tokens/s, Running: 2 reqs, Swapped: 0 reqs, Pending: 1 reqs, GPU KV cache usage: 0.4%, CPU KV cache usage: 0.0%.",
        );
        let names: Vec<(&str, f64)> = v0.iter().map(|(m, v, _)| (m.as_str(), *v)).collect();
        assert_eq!(
            names,
            vec![
                ("prompt_tokens_per_second", 883.5),
                ("generation_tokens_per_second", 85.3),
                ("requests_running", 2.0),
                ("requests_waiting", 1.0),
                ("kv_cache_usage", 0.004),
            ]
        );
        assert!(v0.iter().all(|(_, _, l)| l.is_empty()));
        let v1 = metrics(
            "(APIServer pid=3646) INFO 05-19 10:13:11 [loggers.py:271] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 1055.3 tokens/s, Running: 18 reqs, Waiting: 43 reqs, GPU KV cache usage: 95.9%, Prefix cache hit rate: 0.0%",
        );
        let kv = v1
            .iter()
            .find(|(m, _, _)| m == "kv_cache_usage")
            .expect("kv");
        assert!((kv.1 - 0.959).abs() < 1e-12);
        assert_eq!(kv.2, vec![("engine", "0".to_string())]);
        let waiting = v1
            .iter()
            .find(|(m, _, _)| m == "requests_waiting")
            .expect("waiting");
        assert_eq!(waiting.1, 43.0);
    }

    #[test]
    fn other_lines_and_damaged_ones_are_not_stats() {
        let mut v = Vec::new();
        assert!(!vllm_stats(
            "INFO 08-20 02:39:42 api_server.py:123] Started server process",
            &mut v
        ));
        // No KV figure: not the stats line (a user's message quoting it in part).
        assert!(!vllm_stats("Avg prompt throughput: 1.0 tokens/s", &mut v));
        // Multibyte text around the markers reads as text.
        assert!(vllm_stats(
            "Ω Avg prompt throughput: é tokens/s, Running: ∞ reqs, GPU KV cache usage: 5.0%",
            &mut v
        ));
        assert_eq!(v.len(), 1, "only the KV figure parses: {v:?}");
    }
}
