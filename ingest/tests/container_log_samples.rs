//! The container-log decoder on the real training logs in `fixtures/samples/training-logs/`:
//! every line is accounted for, nothing is rejected, and the events and metrics each log
//! holds come out with their values. The `.md` samples are docs that quote log lines:
//! the test reads the lines of their unlabelled / `none` code blocks.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int32Type, Int64Type};
use whyslow_ingest::decode::container_log::ContainerLogDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::{format_rfc3339, parse_rfc3339};

fn sample(name: &str) -> String {
    let path = format!(
        "{}/../fixtures/samples/training-logs/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The log lines quoted in a markdown file's plain code blocks, unindented.
fn quoted_log_lines(md: &str) -> String {
    let mut out = String::new();
    let mut inside = false;
    let mut keep = false;
    for line in md.lines() {
        let t = line.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            if inside {
                inside = false;
            } else {
                inside = true;
                keep = lang.is_empty() || lang == "none";
            }
            continue;
        }
        if inside && keep {
            out.push_str(t);
            out.push('\n');
        }
    }
    out
}

struct Decoded {
    events: Vec<Event>,
    metrics: Vec<Metric>,
    counts: whyslow_ingest::Counts,
    dead: usize,
}

#[derive(Debug)]
struct Event {
    time: String,
    kind: String,
    source: String,
    attrs: BTreeMap<String, String>,
    message: String,
}

#[derive(Debug)]
struct Metric {
    time: String,
    metric: String,
    value: f64,
    step: Option<i64>,
    rank: Option<i32>,
    labels: BTreeMap<String, String>,
}

fn map_at(b: &RecordBatch, col: &str, i: usize) -> BTreeMap<String, String> {
    let m = b.column_by_name(col).unwrap().as_map();
    let entries = m.value(i);
    let keys = entries.column(0).as_string::<i32>();
    let values = entries.column(1).as_string::<i32>();
    (0..entries.len())
        .map(|j| (keys.value(j).to_string(), values.value(j).to_string()))
        .collect()
}

fn run(text: &str, path: &str, hints: &Hints) -> Decoded {
    let mut d = ContainerLogDecoder::new();
    let mut out = Output::new(0);
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    for (i, l) in lines.iter().enumerate() {
        let origin = Origin::File {
            path,
            line: i as u64 + 1,
        };
        d.decode(l.as_bytes(), &origin, hints, &mut out);
    }
    d.finish(hints, &mut out);
    assert!(out.counts.balances(), "{:?}", out.counts);
    assert_eq!(out.counts.records, lines.len() as u64);
    let (eb, mb) = (out.events.finish(), out.metrics.finish());
    assert_eq!(out.counts.events, eb.num_rows() as u64);
    assert_eq!(out.counts.metrics, mb.num_rows() as u64);
    let t = |b: &RecordBatch, i| {
        format_rfc3339(stored_to_ns(
            b.column_by_name("time")
                .unwrap()
                .as_primitive::<StoredTime>()
                .value(i),
        ))
    };
    let s = |b: &RecordBatch, c: &str, i| {
        b.column_by_name(c)
            .unwrap()
            .as_string::<i32>()
            .value(i)
            .to_string()
    };
    let events = (0..eb.num_rows())
        .map(|i| Event {
            time: t(&eb, i),
            kind: s(&eb, "kind", i),
            source: s(&eb, "source", i),
            attrs: map_at(&eb, "attrs", i),
            message: s(&eb, "message", i),
        })
        .collect();
    let metrics = (0..mb.num_rows())
        .map(|i| {
            let step = mb
                .column_by_name("step")
                .unwrap()
                .as_primitive::<Int64Type>();
            let rank = mb
                .column_by_name("rank")
                .unwrap()
                .as_primitive::<Int32Type>();
            Metric {
                time: t(&mb, i),
                metric: s(&mb, "metric", i),
                value: mb
                    .column_by_name("value")
                    .unwrap()
                    .as_primitive::<Float64Type>()
                    .value(i),
                step: step.is_valid(i).then(|| step.value(i)),
                rank: rank.is_valid(i).then(|| rank.value(i)),
                labels: map_at(&mb, "labels", i),
            }
        })
        .collect();
    Decoded {
        events,
        metrics,
        counts: out.counts,
        dead: out.dead.len(),
    }
}

fn named<'a>(d: &'a Decoded, metric: &str) -> Vec<&'a Metric> {
    d.metrics.iter().filter(|m| m.metric == metric).collect()
}

fn hints_with_time(t: &str) -> Hints {
    Hints {
        default_time_ns: Some(parse_rfc3339(t).unwrap()),
        ..Hints::default()
    }
}

#[test]
fn hf_trainer_torchrun_log() {
    let text = sample("kubeflow-trainer-torchrun-hf-trainer-distilbert-2ranks.log");
    // `--time` supplies the year the glog-style stamps (`W0429 01:22:31.907000`) lack.
    let d = run(&text, "hf.log", &hints_with_time("2025-04-29T00:00:00Z"));
    assert_eq!((d.dead, d.counts.rejected), (0, 0));
    let eval_loss = named(&d, "eval_loss");
    assert_eq!(eval_loss.len(), 1);
    assert!((eval_loss[0].value - 5.543211936950684).abs() < 1e-12);
    assert_eq!(
        eval_loss[0].labels.get("epoch").map(String::as_str),
        Some("1.0")
    );
    assert_eq!(named(&d, "eval_runtime")[0].value, 7.9713);
    assert_eq!(named(&d, "train_runtime")[0].value, 165.12);
    assert_eq!(named(&d, "train_samples_per_second")[0].value, 0.484);
    assert_eq!(named(&d, "train_loss_average")[0].value, 5.764264678955078);
    // The eval dict's epoch; the summary's is on its `run_finished` (not progress).
    assert_eq!(named(&d, "epoch").len(), 1);
    let finished: Vec<&Event> = d
        .events
        .iter()
        .filter(|e| e.kind == "run_finished")
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(
        finished[0].attrs.get("train_runtime").map(String::as_str),
        Some("165.12")
    );
    assert_eq!(
        finished[0].attrs.get("epoch").map(String::as_str),
        Some("1.0")
    );
    assert!(
        finished[0].time.starts_with("2025-04-29T01:22:"),
        "{}",
        finished[0].time
    );
    assert_eq!(d.events.len(), 1, "{:?}", d.events);
    // tqdm: three training-bar drawings at 40/40 and nine evaluation-bar drawings.
    let bars = named(&d, "progress_seconds_per_iteration");
    assert_eq!(bars.len(), 12);
    let train: Vec<&&Metric> = bars
        .iter()
        .filter(|m| m.labels.get("total").map(String::as_str) == Some("40"))
        .collect();
    assert_eq!(train.len(), 3);
    assert_eq!((train[0].step, train[0].value), (Some(40), 4.10));
    // The lines after the glog stamps are dated by them (2025-04-29 01:22:…), not by --time.
    assert!(
        eval_loss[0].time.starts_with("2025-04-29T01:22:"),
        "{}",
        eval_loss[0].time
    );
    assert_eq!(
        eval_loss[0].labels.get("time_from").map(String::as_str),
        Some("preceding_line")
    );
    // The two dicts (5 + 4: the summary's epoch is its event's) and the 12 bars.
    assert_eq!(d.counts.metrics, 9 + 12);
}

#[test]
fn hf_log_without_a_time_hint_keeps_what_it_can_date() {
    let text = sample("kubeflow-trainer-torchrun-hf-trainer-distilbert-2ranks.log");
    let d = run(&text, "hf.log", &Hints::default());
    // With no year for the glog stamps and no --time, nothing can be dated: every line
    // is skipped and counted, none rejected.
    assert_eq!(d.counts.rejected, 0);
    assert_eq!(d.counts.skipped, d.counts.records);
    assert!(d.metrics.is_empty() && d.events.is_empty());
}

#[test]
fn deepspeed_mpi_log() {
    let text = sample("kubeflow-trainer-deepspeed-mpi-t5-8ranks.log");
    let d = run(&text, "ds.log", &Hints::default());
    assert_eq!(d.counts.rejected, 0);
    let losses = named(&d, "train_loss");
    assert_eq!(losses.len(), 14);
    assert_eq!(losses[0].value, 10.25);
    assert_eq!(losses[0].labels.get("epoch").map(String::as_str), Some("1"));
    assert_eq!(
        losses[0].labels.get("samples_total").map(String::as_str),
        Some("2000")
    );
    assert_eq!(losses[13].value, 0.523438);
    assert_eq!(
        losses[13].labels.get("samples").map(String::as_str),
        Some("240")
    );
    // The loop's lines carry no time: they take the last DeepSpeed stamp before them.
    assert_eq!(losses[0].time, "2025-10-18T00:09:38.709Z");
    assert_eq!(
        losses[0].labels.get("time_from").map(String::as_str),
        Some("preceding_line")
    );
    assert_eq!(d.metrics.len(), 14);
    // Its engine configuration, one event per parameter (rank 0 prints it once).
    assert!(
        d.events.iter().all(|e| e.kind == "config_param"),
        "{:?}",
        d.events
    );
    assert!(d.events.len() >= 60, "{}", d.events.len());
    let amp = d
        .events
        .iter()
        .find(|e| e.attrs.get("param").map(String::as_str) == Some("amp_enabled"))
        .expect("amp_enabled");
    assert_eq!(amp.attrs.get("value").map(String::as_str), Some("False"));
    assert_eq!(amp.source, "deepspeed");
    assert_eq!(amp.time, "2025-10-18T00:09:38.707Z");
}

#[test]
fn maxtext_walkthrough_steps() {
    let text = quoted_log_lines(&sample(
        "maxtext-jax-tpu-training-log-walkthrough-excerpt.md",
    ));
    let d = run(
        &text,
        "maxtext.log",
        &hints_with_time("2025-09-01T00:00:00Z"),
    );
    assert_eq!(d.counts.rejected, 0);
    let steps = named(&d, "step_time_seconds");
    // Steps 0-9, step 9 quoted again, and steps 8-9 of the c4 example.
    assert_eq!(steps.len(), 13);
    assert_eq!((steps[0].step, steps[0].value), (Some(0), 44.923));
    assert_eq!((steps[9].step, steps[9].value), (Some(9), 5.667));
    let tokens = named(&d, "tokens_per_second");
    assert_eq!(tokens.len(), 13);
    assert_eq!(tokens[1].value, 154316.608);
    assert_eq!(
        tokens[1].labels.get("per").map(String::as_str),
        Some("device")
    );
    assert_eq!(named(&d, "tflops_per_second")[2].value, 135.158);
    assert_eq!(named(&d, "train_loss")[12].value, 9.580);
    assert_eq!(named(&d, "total_weights")[12].value, 155934.0);
    assert_eq!(d.metrics.len(), 13 * 5);
    // No line of the walkthrough carries a time: all are dated by --time, and say so.
    let by_default = |m: &&Metric| {
        m.time == "2025-09-01T00:00:00Z"
            && m.labels.get("time_from").map(String::as_str) == Some("default")
    };
    assert!(steps.iter().all(by_default));
}

#[test]
fn maxtext_elastic_recovery() {
    let text = quoted_log_lines(&sample(
        "maxtext-elastic-training-slice-failure-recovery-excerpt.md",
    ));
    let d = run(
        &text,
        "elastic.log",
        &hints_with_time("2025-09-01T00:00:00Z"),
    );
    assert_eq!(d.counts.rejected, 0);
    let kinds: Vec<&str> = d.events.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["slice_down", "worker_group_restart", "checkpoint_restored"]
    );
    let restart = &d.events[1];
    assert_eq!(restart.attrs.get("attempt").map(String::as_str), Some("2"));
    assert_eq!(
        restart.attrs.get("max_attempts").map(String::as_str),
        Some("10")
    );
    let restored = &d.events[2];
    assert_eq!(restored.source, "maxtext");
    assert_eq!(restored.attrs.get("step").map(String::as_str), Some("100"));
    assert_eq!(
        restored.attrs.get("path").map(String::as_str),
        Some("gs://.../checkpoints/100")
    );
    assert_eq!(
        restored.message,
        "Restoring checkpoint from gs://.../checkpoints/100."
    );
    // `completed step: 8, seconds: 0.159, TFLOP/s/device: 43.430, loss: 220.774` and 9.
    assert_eq!(named(&d, "step_time_seconds").len(), 2);
    assert_eq!(named(&d, "train_loss")[0].value, 220.774);
    assert_eq!(d.metrics.len(), 6);
}

#[test]
fn torchtitan_step_line() {
    let text = quoted_log_lines(&sample("torchtitan-step-metrics-line-excerpt.txt"));
    let d = run(&text, "titan.log", &hints_with_time("2025-09-01T00:00:00Z"));
    let by_name: BTreeMap<&str, (f64, Option<i64>)> = d
        .metrics
        .iter()
        .map(|m| (m.metric.as_str(), (m.value, m.step)))
        .collect();
    assert_eq!(by_name.get("tokens_per_second"), Some(&(4376.0, Some(20))));
    assert_eq!(by_name.get("train_loss"), Some(&(11.83506, Some(20))));
    assert_eq!(by_name.get("grad_norm"), Some(&(9.6669, Some(20))));
    assert_eq!(by_name.get("memory_gib"), Some(&(48.87, Some(20))));
    assert_eq!(by_name.get("tflops_per_second"), Some(&(253.41, Some(20))));
    assert_eq!(by_name.get("mfu_percent"), Some(&(25.62, Some(20))));
    assert_eq!(d.metrics.len(), 6);
    assert!(d.metrics.iter().all(|m| m.rank.is_none()));
}

/// A serving sample (`fixtures/samples/serving/`) as a pod's CRI log: each line framed
/// with the time its own `MM-DD HH:MM:SS` stamp gives in `year` (the framing is DERIVED,
/// the lines are the sample's).
fn serving_sample_as_cri(name: &str, year: &str) -> String {
    let path = format!(
        "{}/../fixtures/samples/serving/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.lines()
        .map(|l| {
            let at = l.find("INFO ").expect("a stamped line") + 5;
            let (md, hms) = (&l[at..at + 5], &l[at + 6..at + 14]);
            format!("{year}-{md}T{hms}.000000000Z stdout F {l}\n")
        })
        .collect()
}

/// `kubectl logs` of a vLLM pod, saved plainly: each line is dated by vLLM's own stamp
/// (month and day; the year from `--time`), not all at one time.
#[test]
fn plain_vllm_logs_are_dated_by_their_own_stamps() {
    for (name, reference, first, last) in [
        (
            "vllm-0.5-engine-stats-log-vllm-issue-7540-excerpt.log",
            "2024-09-01T00:00:00Z",
            "2024-08-20T02:39:37Z",
            "2024-08-20T02:40:34Z",
        ),
        (
            "vllm-v1-engine-stats-log-vllm-issue-43295-excerpt.log",
            "2025-06-01T00:00:00Z",
            "2025-05-19T10:13:11Z",
            "2025-05-19T10:13:51Z",
        ),
    ] {
        let path = format!(
            "{}/../fixtures/samples/serving/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let hints = Hints {
            namespace: Some("serving".into()),
            pod: Some("vllm-llama3-8b-7d9f5c6b8d-x2k4p".into()),
            default_time_ns: parse_rfc3339(reference).ok(),
            ..Hints::default()
        };
        let d = run(&text, "vllm.log", &hints);
        assert_eq!((d.dead, d.counts.rejected), (0, 0), "{name}");
        let times: Vec<&str> = named(&d, "kv_cache_usage")
            .iter()
            .map(|x| x.time.as_str())
            .collect();
        assert_eq!(times.len(), 5, "{name}");
        assert_eq!((times[0], times[4]), (first, last), "{name}");
        assert!(times.windows(2).all(|w| w[0] < w[1]), "{name}: {times:?}");
    }
}

/// `kubectl logs` of a TGI and a TEI router, saved plainly: each `Success` line is one
/// request's latencies, dated by the router's own RFC 3339 stamp, with its route's span
/// name as the `endpoint` label; the pod's namespace and name come from the hints.
#[test]
fn hf_router_success_lines_are_one_request_each() {
    let hints = Hints {
        namespace: Some("serving".into()),
        pod: Some("tgi-llama-7d9f5c6b8d-x2k4p".into()),
        ..Hints::default()
    };
    let serving = |name: &str| {
        let path = format!(
            "{}/../fixtures/samples/serving/{name}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let tgi = run(
        &serving("tgi-router-request-log-chat-ui-issue-411-excerpt.log"),
        "tgi.log",
        &hints,
    );
    assert_eq!((tgi.dead, tgi.counts.rejected), (0, 0));
    let request = named(&tgi, "request_seconds");
    assert_eq!(request.len(), 1);
    assert!((request[0].value - 5.639886919).abs() < 1e-12);
    assert!(
        request[0].time.starts_with("2023-08-22T08:29:52"),
        "{}",
        request[0].time
    );
    assert_eq!(
        request[0].labels.get("endpoint").map(String::as_str),
        Some("generate_stream")
    );
    let tpot = named(&tgi, "time_per_output_token_seconds");
    assert_eq!(tpot.len(), 1);
    assert!((tpot[0].value - 0.056395486).abs() < 1e-12);
    assert!((named(&tgi, "queue_seconds")[0].value - 0.000184627).abs() < 1e-12);

    let tei = run(
        &serving("tei-router-request-log-tei-issue-305-excerpt.log"),
        "tei.log",
        &hints,
    );
    assert_eq!((tei.dead, tei.counts.rejected), (0, 0));
    let totals: Vec<f64> = named(&tei, "request_seconds")
        .iter()
        .map(|m| m.value)
        .collect();
    let want = [
        1.207716998,
        0.685148571,
        0.684028847,
        0.756365714,
        1.112665816,
    ];
    assert_eq!(totals.len(), want.len());
    for (got, want) in totals.iter().zip(want) {
        assert!((got - want).abs() < 1e-12, "{got} vs {want}");
    }
    let times: Vec<&str> = named(&tei, "request_seconds")
        .iter()
        .map(|m| m.time.as_str())
        .collect();
    assert!(times[0].starts_with("2025-08-09T19:36:02"), "{times:?}");
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    assert!(named(&tei, "time_per_output_token_seconds").is_empty());
}

#[test]
fn vllm_engine_stats_lines_are_serving_metrics() {
    for (name, year, running, waiting, kv) in [
        (
            "vllm-0.5-engine-stats-log-vllm-issue-7540-excerpt.log",
            "2024",
            [1.0, 2.0, 2.0, 2.0, 2.0],
            [0.0; 5],
            [0.002, 0.004, 0.005, 0.004, 0.004],
        ),
        (
            "vllm-v1-engine-stats-log-vllm-issue-43295-excerpt.log",
            "2025",
            [18.0, 18.0, 18.0, 21.0, 20.0],
            [43.0, 42.0, 33.0, 23.0, 23.0],
            [0.959, 0.955, 0.877, 0.959, 0.984],
        ),
    ] {
        let text = serving_sample_as_cri(name, year);
        let d = run(
            &text,
            "/var/log/pods/serving_vllm-llama3-8b-7d9f-x2k4p_uid/vllm/0.log",
            &Hints::default(),
        );
        assert_eq!((d.dead, d.counts.rejected), (0, 0), "{name}");
        let values = |m: &str| -> Vec<f64> { named(&d, m).iter().map(|x| x.value).collect() };
        assert_eq!(values("requests_running"), running, "{name}");
        assert_eq!(values("requests_waiting"), waiting, "{name}");
        let got = values("kv_cache_usage");
        assert_eq!(got.len(), 5, "{name}");
        for (g, want) in got.iter().zip(kv) {
            assert!((g - want).abs() < 1e-12, "{name}: {g} vs {want}");
        }
        assert_eq!(named(&d, "prompt_tokens_per_second").len(), 5, "{name}");
        assert_eq!(named(&d, "generation_tokens_per_second").len(), 5, "{name}");
        let first = named(&d, "kv_cache_usage")[0];
        assert!(
            first.time.starts_with(year),
            "{name}: CRI time {}",
            first.time
        );
    }
}
