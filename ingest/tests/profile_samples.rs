//! The container-log decoder on the real profiler lines of `fixtures/samples/profiles/`:
//! where the XLA/TSL profiler (JAX, TensorFlow) and Nsight Systems say they saved a
//! trace becomes a `profile_captured` event with its path as `url`, and how long the
//! capture ran (`duration_seconds`) when the line that began it is dated. Every line is
//! accounted for, nothing is rejected.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use whyslow_ingest::decode::container_log::ContainerLogDecoder;
use whyslow_ingest::decode::{Decoder, Hints, Origin, Output};
use whyslow_schemas::tables::{StoredTime, stored_to_ns};
use whyslow_schemas::time::{format_rfc3339, parse_rfc3339};

fn sample(name: &str) -> String {
    let path = format!(
        "{}/../fixtures/samples/profiles/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[derive(Debug)]
struct Event {
    time: String,
    kind: String,
    source: String,
    pod: Option<String>,
    attrs: BTreeMap<String, String>,
}

fn decode(text: &str, path: &str, hints: &Hints) -> Vec<Event> {
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
    assert_eq!((out.counts.rejected, out.dead.len()), (0, 0));
    let b: RecordBatch = out.events.finish();
    let s = |c: &str, i: usize| {
        let a = b.column_by_name(c).unwrap().as_string::<i32>();
        (!a.is_null(i)).then(|| a.value(i).to_string())
    };
    (0..b.num_rows())
        .map(|i| {
            let m = b.column_by_name("attrs").unwrap().as_map().value(i);
            let (k, v) = (
                m.column(0).as_string::<i32>(),
                m.column(1).as_string::<i32>(),
            );
            Event {
                time: format_rfc3339(stored_to_ns(
                    b.column_by_name("time")
                        .unwrap()
                        .as_primitive::<StoredTime>()
                        .value(i),
                )),
                kind: s("kind", i).unwrap(),
                source: s("source", i).unwrap(),
                pod: s("pod", i),
                attrs: (0..m.len())
                    .map(|j| (k.value(j).to_string(), v.value(j).to_string()))
                    .collect(),
            }
        })
        .collect()
}

fn hints_with_time(t: &str) -> Hints {
    Hints {
        default_time_ns: Some(parse_rfc3339(t).unwrap()),
        ..Hints::default()
    }
}

/// The TSL profiler's `Collecting XSpace to repository:` line, dated by absl's epoch
/// seconds, with the capture's length from `Profiler session started.` 31.67 s before.
#[test]
fn xla_profiler_session_log() {
    let text = sample("lux-reactant-xla-profiler-session.log");
    let events = decode(&text, "lux.log", &hints_with_time("2026-02-10T00:00:00Z"));
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(
        (e.kind.as_str(), e.source.as_str(), e.time.as_str()),
        ("profile_captured", "xla", "2026-02-10T15:03:54.933187Z")
    );
    let attr = |k: &str| e.attrs.get(k).map(String::as_str);
    assert_eq!(
        attr("url"),
        Some("/tmp/lux_training_trace/plugins/profile/2026_02_10_15_03_54/runnervmwffz4.xplane.pb")
    );
    assert_eq!(attr("logdir"), Some("/tmp/lux_training_trace"));
    assert_eq!(attr("tool"), Some("xprof"));
    // 1770735834.933187 - 1770735803.260207, to the millisecond.
    assert_eq!(attr("duration_seconds"), Some("31.672"));
    assert_eq!(attr("time_from"), None, "the line's own absl time");
}

/// `nsys profile`'s `Generated:` list: the `.nsys-rep` path on the indented line after
/// it. The console copy has no times: the capture is dated by `--time` and its length is
/// unknown (no `duration_seconds` from undated lines).
#[test]
fn nsight_systems_generated_report() {
    let text = sample("nsight-systems-nsys-profile-console-nsys-easy-issue-1.txt");
    let events = decode(&text, "nsys.txt", &hints_with_time("2025-08-19T12:00:00Z"));
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(
        (e.kind.as_str(), e.source.as_str()),
        ("profile_captured", "nsight")
    );
    let attr = |k: &str| e.attrs.get(k).map(String::as_str);
    assert_eq!(attr("url"), Some("/home/satnam/example/nsys_easy.nsys-rep"));
    assert_eq!(attr("tool"), Some("nsight_systems"));
    assert_eq!(attr("duration_seconds"), None);
    assert_eq!(attr("time_from"), Some("default"));
}

/// DERIVED from the nsys sample (not a sample): its lines framed as a CRI log of a pod,
/// as the kubelet writes a container's stdout, with times added. The capture runs from
/// `Collecting data...` to the `Generated:` list, and belongs to the pod's workload.
#[test]
fn nsight_systems_in_a_cri_log_is_timed_and_scoped() {
    let times = [
        "2026-11-29T10:00:00.000000000Z",
        "2026-11-29T10:00:01.000000000Z",
        "2026-11-29T10:04:00.000000000Z",
        "2026-11-29T10:05:00.000000000Z",
        "2026-11-29T10:05:30.000000000Z",
        "2026-11-29T10:05:31.000000000Z",
        "2026-11-29T10:05:31.000000000Z",
    ];
    let text: String = sample("nsight-systems-nsys-profile-console-nsys-easy-issue-1.txt")
        .lines()
        .zip(times)
        .map(|(l, t)| format!("{t} stdout F {l}\n"))
        .collect();
    let path = "/var/log/pods/llm_finetune-gemma-l4-0-vcxpz_0f3c/trainer/0.log";
    let hints = Hints {
        path: Some(path.to_string()),
        ..Hints::default()
    };
    let events = decode(&text, path, &hints);
    assert_eq!(events.len(), 1, "{events:#?}");
    let e = &events[0];
    assert_eq!(e.time, "2026-11-29T10:05:31Z");
    assert_eq!(e.pod.as_deref(), Some("finetune-gemma-l4-0-vcxpz"));
    // From `Collecting data...` (10:00:01) to the report's line.
    assert_eq!(
        e.attrs.get("duration_seconds").map(String::as_str),
        Some("330")
    );
    // Lines after the list are read as usual again; an indented path elsewhere is not
    // a report.
    let more = format!(
        "{text}2026-11-29T10:06:00Z stdout F done\n\
         2026-11-29T10:06:01Z stdout F     /home/satnam/example/other.nsys-rep\n"
    );
    assert_eq!(decode(&more, path, &hints).len(), 1);
}
