//! The Prometheus decoder on the serving engines' real scrapes (`fixtures/samples/serving/`:
//! vLLM 0.5 and TGI 2.x, see its SOURCES.md): whyslow names, sources, labels and scope;
//! and the rows derived per scrape interval (quantiles, means, rates) on two or more
//! scrapes. Only single real scrapes were found: every later scrape here is DERIVED in
//! the test from the real one by changing counter and bucket values, and says so.

use std::collections::HashMap;
use std::path::PathBuf;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Float64Type;
use whyslow_ingest::decode::prometheus::PrometheusDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::parse_rfc3339;

const VLLM: &str = "serving/vllm-0.5-opt-125m-datadog-integrations-core.prom";
const TGI: &str = "serving/tgi-2.x-datadog-integrations-core-excerpt.prom";

fn sample_text(rel: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/samples")
        .join(rel);
    std::fs::read_to_string(path).unwrap()
}

/// Feeds text a line at a time, as the runner does for files, then ends the input.
fn feed_lines(text: &str, path: &str, hints: &Hints) -> Output {
    let mut d = PrometheusDecoder::new();
    let mut out = Output::new(0);
    for (i, line) in text.split_terminator('\n').enumerate() {
        d.decode(
            line.as_bytes(),
            &Origin::File {
                path,
                line: i as u64 + 1,
            },
            hints,
            &mut out,
        );
    }
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    out
}

fn at(s: &str) -> Hints {
    Hints {
        default_time_ns: Some(parse_rfc3339(s).unwrap()),
        ..Hints::default()
    }
}

fn ns(s: &str) -> i64 {
    parse_rfc3339(s).unwrap()
}

/// One metrics row, readable.
#[derive(Debug, Clone)]
struct Row {
    time: i64,
    layer: String,
    source: String,
    metric: String,
    value: f64,
    node: Option<String>,
    namespace: Option<String>,
    pod: Option<String>,
    labels: HashMap<String, String>,
}

fn strings(b: &RecordBatch, col: &str) -> Vec<Option<String>> {
    let a = b.column_by_name(col).unwrap().as_string::<i32>();
    (0..a.len())
        .map(|i| a.is_valid(i).then(|| a.value(i).to_string()))
        .collect()
}

fn read_rows(out: &mut Output) -> Vec<Row> {
    let b = out.metrics.finish();
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<StoredTime>();
    let value = b
        .column_by_name("value")
        .unwrap()
        .as_primitive::<Float64Type>();
    let (layer, source, metric) = (
        strings(&b, "layer"),
        strings(&b, "source"),
        strings(&b, "metric"),
    );
    let (node, ns, pod) = (
        strings(&b, "node"),
        strings(&b, "namespace"),
        strings(&b, "pod"),
    );
    let m = b.column_by_name("labels").unwrap().as_map();
    (0..b.num_rows())
        .map(|i| {
            let e = m.value(i);
            let k = e.column(0).as_string::<i32>();
            let v = e.column(1).as_string::<i32>();
            Row {
                time: stored_to_ns(time.value(i)),
                layer: layer[i].clone().unwrap(),
                source: source[i].clone().unwrap(),
                metric: metric[i].clone().unwrap(),
                value: value.value(i),
                node: node[i].clone(),
                namespace: ns[i].clone(),
                pod: pod[i].clone(),
                labels: (0..k.len())
                    .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                    .collect(),
            }
        })
        .collect()
}

fn sample_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .count()
}

/// Rows of one metric.
fn named<'a>(rows: &'a [Row], metric: &str) -> Vec<&'a Row> {
    rows.iter().filter(|r| r.metric == metric).collect()
}

/// The single row of a metric at a time.
fn one<'a>(rows: &'a [Row], metric: &str, time: i64) -> &'a Row {
    let found: Vec<&Row> = rows
        .iter()
        .filter(|r| r.metric == metric && r.time == time)
        .collect();
    assert_eq!(found.len(), 1, "{metric} at {time}: {found:?}");
    found[0]
}

fn close_to(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

/// DERIVED scrape: the text with the value of each sample line replaced where `f`
/// returns one (given the series, i.e. the line without its value).
fn rescrape(text: &str, f: impl Fn(&str, f64) -> Option<f64>) -> String {
    let mut s = String::new();
    for line in text.lines() {
        match line.rsplit_once(' ') {
            Some((series, v)) if !line.starts_with('#') => {
                let old: f64 = v.parse().unwrap();
                match f(series, old) {
                    Some(new) => s.push_str(&format!("{series} {new}")),
                    None => s.push_str(line),
                }
            }
            _ => s.push_str(line),
        }
        s.push('\n');
    }
    s
}

/// The `le` of a bucket line's series, as a number.
fn le(series: &str) -> Option<f64> {
    let v = series.split("le=\"").nth(1)?.split('"').next()?;
    v.parse().ok()
}

fn at_time(t: &str, text: &str) -> String {
    format!("# whyslow-scrape-time: {t}\n{text}")
}

#[test]
fn vllm_scrape_names_sources_and_labels() {
    let text = sample_text(VLLM);
    let mut out = feed_lines(&text, VLLM, &at("2026-11-29T14:05:00Z"));
    assert_eq!(out.counts.rejected, 0);
    // One scrape: every sample is a row, nothing is derived yet.
    assert_eq!(out.counts.metrics as usize, sample_lines(&text));
    let rows = read_rows(&mut out);
    let by: HashMap<&str, &Row> = rows.iter().map(|r| (r.metric.as_str(), r)).collect();
    let running = by["requests_running"];
    assert_eq!(
        (
            running.layer.as_str(),
            running.source.as_str(),
            running.value
        ),
        ("framework", "vllm", 0.0)
    );
    assert_eq!(running.labels["model_name"], "facebook/opt-125m");
    assert_eq!(running.labels["__name__"], "vllm:num_requests_running");
    assert_eq!(
        by["requests_waiting"].labels["__name__"],
        "vllm:num_requests_waiting"
    );
    assert_eq!(
        by["kv_cache_usage"].labels["__name__"],
        "vllm:gpu_cache_usage_perc"
    );
    assert_eq!(by["prompt_tokens_total"].value, 5.0);
    assert_eq!(by["generation_tokens_total"].value, 7.0);
    assert_eq!(by["preemptions_total"].value, 0.0);
    let ok = by["requests_succeeded_total"];
    assert_eq!(
        (ok.value, ok.labels["finished_reason"].as_str()),
        (1.0, "length")
    );
    // Histogram parts keep their suffix and `le`.
    let ttft = named(&rows, "ttft_seconds_bucket");
    assert_eq!(ttft.len(), 17);
    assert_eq!(ttft[9].labels["le"], "0.5");
    assert_eq!(ttft[9].value, 1.0);
    assert_eq!(
        ttft[0].labels["__name__"],
        "vllm:time_to_first_token_seconds_bucket"
    );
    assert_eq!(by["ttft_seconds_sum"].value, 0.31326723098754883);
    assert_eq!(by["inter_token_seconds_count"].value, 6.0);
    assert_eq!(
        by["inter_token_seconds_count"].labels["__name__"],
        "vllm:time_per_output_token_seconds_count"
    );
    assert_eq!(by["request_seconds_sum"].value, 0.5034303665161133);
    // Metrics whyslow has no name for keep theirs; the process metrics are not vLLM's.
    assert!(by.contains_key("vllm:cache_config_info"));
    assert!(by.contains_key("vllm:request_prompt_tokens_bucket"));
    assert_eq!(by["process_cpu_seconds_total"].source, "prometheus");
    assert!(rows.iter().all(|r| !r.metric.ends_with("_p95")));
}

#[test]
fn tgi_scrape_names_sources_and_labels() {
    let text = sample_text(TGI);
    let mut out = feed_lines(&text, TGI, &at("2026-11-29T14:05:00Z"));
    assert_eq!(out.counts.rejected, 0);
    assert_eq!(out.counts.metrics as usize, sample_lines(&text));
    let rows = read_rows(&mut out);
    let by: HashMap<&str, &Row> = rows.iter().map(|r| (r.metric.as_str(), r)).collect();
    let waiting = by["requests_waiting"];
    assert_eq!(
        (
            waiting.layer.as_str(),
            waiting.source.as_str(),
            waiting.value
        ),
        ("framework", "tgi", 0.0)
    );
    assert_eq!(waiting.labels["__name__"], "tgi_queue_size");
    assert_eq!(
        by["requests_running"].labels["__name__"],
        "tgi_batch_current_size"
    );
    assert_eq!(by["requests_total"].value, 111.0);
    assert_eq!(by["requests_succeeded_total"].value, 109.0);
    let failed = by["requests_failed_total"];
    assert_eq!(
        (failed.value, failed.labels["err"].as_str()),
        (2.0, "validation")
    );
    assert_eq!(named(&rows, "request_seconds_bucket").len(), 36);
    assert_eq!(by["request_seconds_sum"].value, 541.2140316159999);
    assert_eq!(by["queue_seconds_count"].value, 109.0);
    assert_eq!(by["inference_seconds_sum"].value, 245.91743839099996);
    assert_eq!(by["time_per_output_token_seconds_sum"].value, 8.643160945);
    assert_eq!(by["generated_tokens_per_request_sum"].value, 3423.0);
    let le: Vec<&str> = named(&rows, "request_seconds_bucket")
        .iter()
        .map(|r| r.labels["le"].as_str())
        .collect();
    assert_eq!((le[0], le[35]), ("0.00015000000000000001", "+Inf"));
    // Known to TGI, not (yet) to whyslow: kept as they are, with their labels.
    let success = named(&rows, "tgi_batch_inference_success");
    let prefill: Vec<f64> = success
        .iter()
        .filter(|r| r.labels["method"] == "prefill")
        .map(|r| r.value)
        .collect();
    assert_eq!(prefill, [16.0]);
    assert_eq!(named(&rows, "tgi_request_skipped_tokens").len(), 7);
    assert!(rows.iter().all(|r| r.source == "tgi"));
    assert!(rows.iter().all(|r| r.layer == "framework"));
}

/// DERIVED: the real TGI scrape with the labels a Prometheus scrape of a pod adds.
fn with_pod_labels(text: &str) -> String {
    let add = r#"namespace="llm",pod="tgi-gemma-7d9f-x2",node="gke-gpu-7""#;
    let mut s = String::new();
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            s.push_str(line);
        } else if let Some((name, rest)) = line.split_once('{') {
            s.push_str(&format!("{name}{{{add},{rest}"));
        } else if let Some((name, v)) = line.split_once(' ') {
            s.push_str(&format!("{name}{{{add}}} {v}"));
        }
        s.push('\n');
    }
    s
}

#[test]
fn scope_comes_from_the_pod_labels_and_model_name_stays() {
    let text = with_pod_labels(&sample_text(TGI));
    let mut out = feed_lines(&text, "tgi-pod.prom", &at("2026-11-29T14:05:00Z"));
    assert_eq!(out.counts.rejected, 0);
    let rows = read_rows(&mut out);
    let w = one(&rows, "requests_waiting", ns("2026-11-29T14:05:00Z"));
    assert_eq!(
        (w.namespace.as_deref(), w.pod.as_deref(), w.node.as_deref()),
        (Some("llm"), Some("tgi-gemma-7d9f-x2"), Some("gke-gpu-7"))
    );
    assert!(!w.labels.contains_key("pod") && !w.labels.contains_key("namespace"));

    let vllm = sample_text(VLLM).replace(
        "model_name=\"facebook/opt-125m\"",
        "model_name=\"facebook/opt-125m\",namespace=\"llm\",pod=\"vllm-0\"",
    );
    let mut out = feed_lines(&vllm, "vllm-pod.prom", &at("2026-11-29T14:05:00Z"));
    let vrows = read_rows(&mut out);
    let r = one(&vrows, "kv_cache_usage", ns("2026-11-29T14:05:00Z"));
    assert_eq!(
        (r.namespace.as_deref(), r.pod.as_deref()),
        (Some("llm"), Some("vllm-0"))
    );
    assert_eq!(r.labels["model_name"], "facebook/opt-125m");
}

/// The real vLLM scrape as the engine gives it (no label names its pod), saved to a file
/// named after its pod, as `whyslow ingest` reads files: its rows name that pod; a file
/// not named after a generated pod name, none; `--pod` wins; a DCGM scrape in a file so
/// named stays the node's.
#[test]
fn an_unlabelled_engine_scrape_names_the_pod_its_file_is_named_after() {
    let text = sample_text(VLLM);
    let pod_of = |path: &str, pod: Option<&str>| {
        let hints = Hints {
            path: Some(path.to_string()),
            pod: pod.map(str::to_string),
            ..at("2026-11-29T14:05:00Z")
        };
        let mut out = feed_lines(&text, path, &hints);
        let rows = read_rows(&mut out);
        // (The engine's own metrics: the Python process' are not the engine's.)
        let pods: std::collections::BTreeSet<Option<String>> = rows
            .iter()
            .filter(|r| r.source == "vllm")
            .map(|r| r.pod.clone())
            .collect();
        assert_eq!(pods.len(), 1, "{path}: {pods:?}");
        pods.into_iter().next().flatten()
    };
    let pod = "vllm-opt-125m-5f7c9d8b46-k2v7x";
    assert_eq!(
        pod_of(&format!("/data/serving/{pod}.prom"), None).as_deref(),
        Some(pod)
    );
    assert_eq!(pod_of("/data/serving/scrape-0001.prom", None), None);
    assert_eq!(pod_of(VLLM, None), None);
    assert_eq!(
        pod_of(
            &format!("/data/serving/{pod}.prom"),
            Some("vllm-opt-125m-0")
        )
        .as_deref(),
        Some("vllm-opt-125m-0")
    );
    let dcgm = "# whyslow-scrape-time: 2026-11-29T14:05:00Z\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\",Hostname=\"gke-gpu-7\"} 97\n";
    let hints = Hints {
        path: Some(format!("/data/dcgm/{pod}.prom")),
        ..Hints::default()
    };
    let mut out = feed_lines(dcgm, "dcgm.prom", &hints);
    let rows = read_rows(&mut out);
    assert_eq!(rows.len(), 1);
    assert_eq!(
        (rows[0].pod.as_deref(), rows[0].node.as_deref()),
        (None, Some("gke-gpu-7"))
    );
}

/// DERIVED second vLLM scrape, 10 s after the real one: 10 more requests, 6 with a TTFT
/// in (0.1, 0.25] and 4 in (0.25, 0.5] (sum +2.0 s); counters up.
fn vllm_second_scrape(real: &str) -> String {
    rescrape(real, |series, old| {
        let ttft = "vllm:time_to_first_token_seconds";
        if series.starts_with(&format!("{ttft}_bucket")) {
            let le = le(series)?;
            return Some(if le <= 0.1 {
                old
            } else if le <= 0.25 {
                old + 6.0
            } else {
                old + 10.0
            });
        }
        if series.starts_with(&format!("{ttft}_count")) {
            return Some(old + 10.0);
        }
        if series.starts_with(&format!("{ttft}_sum")) {
            return Some(old + 2.0);
        }
        let add = match series.split('{').next()? {
            "vllm:generation_tokens_total" => 300.0,
            "vllm:prompt_tokens_total" => 100.0,
            "vllm:num_preemptions_total" => 3.0,
            "vllm:request_success_total" => 10.0,
            _ => return None,
        };
        Some(old + add)
    })
}

#[test]
fn vllm_two_scrapes_give_quantiles_and_rates() {
    let real = sample_text(VLLM);
    let two = format!(
        "{}\n{}",
        at_time("2026-11-29T14:05:00Z", &real),
        at_time("2026-11-29T14:05:10Z", &vllm_second_scrape(&real))
    );
    let mut out = feed_lines(&two, "vllm-two.prom", &Hints::default());
    assert_eq!(out.counts.rejected, 0);
    let rows = read_rows(&mut out);
    let t1 = ns("2026-11-29T14:05:10Z");
    // Raw samples of both scrapes are all kept.
    assert_eq!(named(&rows, "ttft_seconds_bucket").len(), 34);
    // Hand-computed: p50 rank 5 of 10 falls 5/6 into (0.1, 0.25]; p95 rank 9.5 falls
    // 3.5/4 into (0.25, 0.5]; p99 rank 9.9 falls 3.9/4 into it; mean 2.0 / 10.
    let p50 = one(&rows, "ttft_seconds_p50", t1);
    assert!(close_to(p50.value, 0.1 + 0.15 * 5.0 / 6.0), "{}", p50.value);
    assert!(close_to(one(&rows, "ttft_seconds_p95", t1).value, 0.46875));
    assert!(close_to(one(&rows, "ttft_seconds_p99", t1).value, 0.49375));
    assert!(close_to(one(&rows, "ttft_seconds_mean", t1).value, 0.2));
    assert_eq!(one(&rows, "ttft_seconds_observations", t1).value, 10.0);
    assert_eq!(
        (p50.source.as_str(), p50.layer.as_str()),
        ("vllm", "framework")
    );
    assert_eq!(p50.labels["model_name"], "facebook/opt-125m");
    assert_eq!(p50.labels["__name__"], "vllm:time_to_first_token_seconds");
    assert!(!p50.labels.contains_key("le"));
    // Rates over the 10 s.
    assert!(close_to(
        one(&rows, "generation_tokens_per_second", t1).value,
        30.0
    ));
    assert!(close_to(
        one(&rows, "prompt_tokens_per_second", t1).value,
        10.0
    ));
    assert!(close_to(
        one(&rows, "preemptions_per_second", t1).value,
        0.3
    ));
    let ok = one(&rows, "requests_succeeded_per_second", t1);
    assert!(close_to(ok.value, 1.0));
    assert_eq!(ok.labels["finished_reason"], "length");
    // The inter-token and e2e histograms had no new observations: a count, no quantile.
    assert_eq!(
        one(&rows, "inter_token_seconds_observations", t1).value,
        0.0
    );
    assert!(named(&rows, "inter_token_seconds_p95").is_empty());
    assert_eq!(one(&rows, "request_seconds_observations", t1).value, 0.0);
    assert!(named(&rows, "request_seconds_mean").is_empty());
    // Nothing is derived at the first scrape.
    assert!(
        rows.iter()
            .filter(|r| r.time < t1)
            .all(|r| !r.metric.ends_with("_per_second") && !r.metric.ends_with("_p50"))
    );
}

/// DERIVED second TGI scrape, 15 s after the real one: 10 more requests with durations
/// 4 in (1.683, 2.525], 4 in (2.525, 3.788], 2 in (3.788, 5.682] (sum +25 s), 15 more
/// received (of which 10 succeeded), 2550 more generated tokens (10 × 255, in the
/// `le="256"` bucket). Other histograms unchanged.
fn tgi_second_scrape(real: &str) -> String {
    rescrape(real, |series, old| {
        if series.starts_with("tgi_request_duration_bucket") {
            let le = le(series)?;
            return Some(if le <= 1.7 {
                old
            } else if le <= 2.6 {
                old + 4.0
            } else if le <= 3.8 {
                old + 8.0
            } else {
                old + 10.0
            });
        }
        if series.starts_with("tgi_request_generated_tokens_bucket") {
            return Some(if le(series)? >= 256.0 {
                old + 10.0
            } else {
                old
            });
        }
        let add = match series {
            "tgi_request_duration_sum" => 25.0,
            "tgi_request_duration_count" | "tgi_request_generated_tokens_count" => 10.0,
            "tgi_request_generated_tokens_sum" => 2550.0,
            "tgi_request_count" => 15.0,
            "tgi_request_success" => 10.0,
            _ => return None,
        };
        Some(old + add)
    })
}

#[test]
fn tgi_two_scrapes_give_quantiles_rates_and_token_rates() {
    let real = sample_text(TGI);
    let second = tgi_second_scrape(&real);
    let two = format!(
        "{}{}",
        at_time("2026-11-29T14:05:00Z", &real),
        at_time("2026-11-29T14:05:15Z", &second)
    );
    let mut out = feed_lines(&two, "tgi-two.prom", &Hints::default());
    assert_eq!(out.counts.rejected, 0);
    let rows = read_rows(&mut out);
    let t1 = ns("2026-11-29T14:05:15Z");
    // TGI's duration bounds (0.0001 × 1.5^k), as the scrape prints them.
    let (b24, b25, b26, b27) = (
        1.683411219602823,
        2.5251168294042348,
        3.787675244106352,
        5.681512866159528,
    );
    // Interval buckets: 4 ≤ b25, 8 ≤ b26, 10 ≤ b27. p50: rank 5 is 1/4 into (b25, b26];
    // p95: rank 9.5 is 1.5/2 into (b26, b27]; p99: rank 9.9 is 1.9/2 into it.
    let _ = b24;
    let p50 = one(&rows, "request_seconds_p50", t1);
    assert!(
        close_to(p50.value, b25 + (b26 - b25) * 0.25),
        "{}",
        p50.value
    );
    assert!(close_to(p50.value, 2.840756433079764));
    let p95 = one(&rows, "request_seconds_p95", t1).value;
    assert!(close_to(p95, b26 + (b27 - b26) * 0.75), "{p95}");
    assert!(close_to(p95, 5.208053460646234));
    let p99 = one(&rows, "request_seconds_p99", t1).value;
    assert!(close_to(p99, b26 + (b27 - b26) * 0.95), "{p99}");
    let mean = one(&rows, "request_seconds_mean", t1).value;
    assert!((mean - 2.5).abs() < 1e-9, "{mean}");
    assert_eq!(one(&rows, "request_seconds_observations", t1).value, 10.0);
    assert_eq!(
        (p50.source.as_str(), p50.layer.as_str()),
        ("tgi", "framework")
    );
    assert_eq!(p50.labels["__name__"], "tgi_request_duration");
    // Counters: 15 received, 10 succeeded, 0 failed in 15 s.
    assert!(close_to(one(&rows, "requests_per_second", t1).value, 1.0));
    assert!(close_to(
        one(&rows, "requests_succeeded_per_second", t1).value,
        10.0 / 15.0
    ));
    let failed = one(&rows, "requests_failed_per_second", t1);
    assert_eq!(
        (failed.value, failed.labels["err"].as_str()),
        (0.0, "validation")
    );
    // TGI has no token counter: the generated-tokens histogram's sum gives the rate.
    assert!(close_to(
        one(&rows, "generation_tokens_per_second", t1).value,
        170.0
    ));
    assert!(named(&rows, "generated_tokens_per_request_p50").is_empty());
    // Unchanged histograms (queue, TPOT): no observations, no quantile.
    assert_eq!(one(&rows, "queue_seconds_observations", t1).value, 0.0);
    assert!(named(&rows, "queue_seconds_p95").is_empty());
    assert!(named(&rows, "time_per_output_token_seconds_p50").is_empty());
    // The summary and the metrics whyslow does not name derive nothing.
    assert!(
        rows.iter()
            .all(|r| !r.metric.starts_with("tgi_request_skipped")
                || r.labels.contains_key("quantile")
                || r.metric.ends_with("_sum")
                || r.metric.ends_with("_count"))
    );
    // Every raw sample of both scrapes is kept.
    assert_eq!(named(&rows, "request_seconds_bucket").len(), 72);
}

#[test]
fn counter_and_histogram_resets_start_over_without_negative_rows() {
    let real = sample_text(TGI);
    // DERIVED: the engine restarted before the second scrape: counters and the request
    // histogram start again from zero; then a third scrape has 2 requests in
    // (0.748, 1.122] and 4 received.
    let restarted = rescrape(&real, |series, _| match series {
        "tgi_request_count" => Some(0.0),
        "tgi_request_success" => Some(0.0),
        _ if series.starts_with("tgi_request_duration") => Some(0.0),
        _ => None,
    });
    let third = rescrape(&restarted, |series, old| {
        if series.starts_with("tgi_request_duration_bucket") {
            return Some(if le(series)? >= 1.1 { 2.0 } else { old });
        }
        match series {
            "tgi_request_duration_count" => Some(2.0),
            "tgi_request_duration_sum" => Some(2.0),
            "tgi_request_count" => Some(4.0),
            _ => None,
        }
    });
    let text = format!(
        "{}{}{}",
        at_time("2026-11-29T14:05:00Z", &real),
        at_time("2026-11-29T14:05:15Z", &restarted),
        at_time("2026-11-29T14:05:30Z", &third)
    );
    let mut out = feed_lines(&text, "tgi-restart.prom", &Hints::default());
    assert_eq!(out.counts.rejected, 0);
    let rows = read_rows(&mut out);
    let (t1, t2) = (ns("2026-11-29T14:05:15Z"), ns("2026-11-29T14:05:30Z"));
    assert!(
        rows.iter()
            .filter(|r| r.metric.ends_with("_per_second") || r.metric.contains("_p"))
            .all(|r| r.value >= 0.0),
        "a negative derived row"
    );
    // No rate and no quantile across the reset.
    assert!(rows.iter().all(|r| !(r.time == t1
        && (r.metric == "requests_per_second"
            || r.metric.starts_with("request_seconds_")
                && !r.metric.ends_with("_bucket")
                && !r.metric.ends_with("_sum")
                && !r.metric.ends_with("_count")))));
    // After it, the series started over from the restart's values.
    assert!(close_to(
        one(&rows, "requests_per_second", t2).value,
        4.0 / 15.0
    ));
    assert_eq!(one(&rows, "request_seconds_observations", t2).value, 2.0);
    let p50 = one(&rows, "request_seconds_p50", t2).value;
    // Both requests in (0.748, 1.122]: rank 1 of 2 is half-way.
    let (lo, hi) = (0.7481827642679213, 1.122274146401882);
    assert!(close_to(p50, lo + (hi - lo) * 0.5), "{p50}");
    assert!(close_to(one(&rows, "request_seconds_mean", t2).value, 1.0));
}

#[test]
fn an_interval_without_requests_gives_no_quantile_and_zero_rates() {
    let real = sample_text(VLLM);
    // DERIVED: the same values scraped again 15 s later.
    let text = format!(
        "{}\n{}",
        at_time("2026-11-29T14:05:00Z", &real),
        at_time("2026-11-29T14:05:15Z", &real)
    );
    let mut out = feed_lines(&text, "vllm-idle.prom", &Hints::default());
    assert_eq!(out.counts.rejected, 0);
    let rows = read_rows(&mut out);
    let t1 = ns("2026-11-29T14:05:15Z");
    for base in ["ttft_seconds", "inter_token_seconds", "request_seconds"] {
        assert_eq!(
            one(&rows, &format!("{base}_observations"), t1).value,
            0.0,
            "{base}"
        );
        for s in ["_p50", "_p95", "_p99", "_mean"] {
            assert!(named(&rows, &format!("{base}{s}")).is_empty(), "{base}{s}");
        }
    }
    assert_eq!(one(&rows, "generation_tokens_per_second", t1).value, 0.0);
}

#[test]
fn a_scrape_read_twice_at_one_time_derives_nothing() {
    // Without scrape-time comments every line takes --time: two copies of one scrape are
    // one instant, not an interval.
    let real = sample_text(TGI);
    let text = format!("{real}{real}");
    let out = feed_lines(&text, "tgi-twice.prom", &at("2026-11-29T14:05:00Z"));
    assert_eq!(out.counts.rejected, 0);
    assert_eq!(out.counts.metrics as usize, 2 * sample_lines(&real));
}

#[test]
fn a_new_input_forgets_the_previous_scrape() {
    let real = sample_text(TGI);
    let mut d = PrometheusDecoder::new();
    let mut out = Output::new(0);
    let hints = Hints::default();
    for (path, t, text) in [
        ("a.prom", "2026-11-29T14:05:00Z", real.clone()),
        ("b.prom", "2026-11-29T14:05:15Z", tgi_second_scrape(&real)),
    ] {
        for (i, line) in at_time(t, &text).split_terminator('\n').enumerate() {
            d.decode(
                line.as_bytes(),
                &Origin::File {
                    path,
                    line: i as u64 + 1,
                },
                &hints,
                &mut out,
            );
        }
        d.finish(&hints, &mut out);
    }
    let rows = read_rows(&mut out);
    assert!(named(&rows, "requests_per_second").is_empty());
    assert!(named(&rows, "request_seconds_p50").is_empty());
}
