//! Round trip of every envelope form through `whyslow ingest` into real Parquet segments:
//! RFC 3339 (Z, offset, fractions), epoch seconds (integer, float), milliseconds,
//! microseconds, nanoseconds; metric vs event; implied layers; attrs/labels from unknown
//! fields; source ids vs content hashes; gzip; directories.

mod ingest_common;

use std::io::Write;
use std::path::Path;

use ingest_common::*;
use whyslow_ingest::Format;
use whyslow_schemas::Table;

const SEC: i64 = 1_000_000_000;
/// 2026-11-29T10:15:00Z.
const T0: i64 = 1_795_947_300 * SEC;

const XID: &str = r#"{"time":"2026-11-29T11:15:03+01:00","kind":"xid","node":"gke-gpu-7","device":3,"severity":"error","reason":"79","attrs":{"code":79,"pci":"0000:3b:00.0"},"region":"us-central1"}"#;

fn input() -> String {
    let lines = [
        r#"{"time":"2026-11-29T10:15:02.123Z","layer":"framework","source":"sdk","kind":"checkpoint_saved","cluster":"prod-a","node":"gke-gpu-7","device":"0","namespace":"llm","workload":"finetune-gemma-l4","pod":"finetune-gemma-l4-0-vcxpz","run_id":"finetune-experiment","rank":0,"step":1200,"severity":"info","message":"saved checkpoint-1200","attrs":{"path":"gs://b/ckpt-1200","seconds":"41.2"},"id":"optional-stable-id"}"#,
        XID,
        r#"{"time":"2026-11-29T10:15:04.123456789Z","metric":"gpu_util","value":97.5,"node":"gke-gpu-7","device":"0"}"#,
        r#"{"time":1795947305,"layer":"framework","source":"sdk","metric":"step_time_seconds","value":1.93,"workload":"finetune-gemma-l4","run_id":"finetune-experiment","rank":3,"step":1201,"node":"gke-gpu-8","zone":"us-c1"}"#,
        r#"{"time":1795947306.25,"metric":"tokens_per_second","value":1200,"rank":0}"#,
        r#"{"time":1795947307123,"metric":"compute_seconds","value":1.5,"rank":1}"#,
        r#"{"time":1795947308123456,"metric":"compute_seconds","value":1.6,"rank":2}"#,
        r#"{"time":1795947309123456789,"metric":"compute_seconds","value":1.7,"rank":4}"#,
        "",
        "{\"time\":\"2026-11-29T10:15:10Z\",\"kind\":\"preempted\",\"namespace\":\"llm\",\"workload\":\"finetune\",\"message\":\"Preempted by \\\"tgi\\\" \\u00e9\"}\r",
        XID,
        r#"{"time":"2026-11-29T10:15:11Z","metric":"step_time_seconds","value":2.0,"kind":"note","severity":"warning"}"#,
    ];
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

fn check_rows(store: &Path) {
    let ev = read(store, Table::Events);
    assert_eq!(ev.num_rows(), 3, "the repeated xid line is one row");
    let t = times(&ev, "time");

    let ck = row_where(&ev, "kind", "checkpoint_saved");
    assert_eq!(t[ck], T0 + 2 * SEC + 123_000_000);
    assert_eq!(
        str_at(&ev, "event_id", ck).unwrap(),
        "id:optional-stable-id"
    );
    assert_eq!(str_at(&ev, "layer", ck).unwrap(), "framework");
    assert_eq!(str_at(&ev, "severity", ck).unwrap(), "info");
    for (col, want) in [
        ("cluster", "prod-a"),
        ("node", "gke-gpu-7"),
        ("device", "0"),
        ("namespace", "llm"),
        ("workload", "finetune-gemma-l4"),
        ("pod", "finetune-gemma-l4-0-vcxpz"),
        ("run_id", "finetune-experiment"),
        ("message", "saved checkpoint-1200"),
    ] {
        assert_eq!(str_at(&ev, col, ck).as_deref(), Some(want), "{col}");
    }
    assert_eq!(
        maps(&ev, "attrs")[ck],
        pairs(&[
            ("path", "gs://b/ckpt-1200"),
            ("seconds", "41.2"),
            ("rank", "0"),
            ("step", "1200")
        ])
    );

    let xid = row_where(&ev, "kind", "xid");
    assert_eq!(t[xid], T0 + 3 * SEC, "+01:00 offset read as UTC");
    assert_eq!(
        str_at(&ev, "layer", xid).unwrap(),
        "infrastructure",
        "implied by kind"
    );
    assert_eq!(
        str_at(&ev, "source", xid).unwrap(),
        "sdk",
        "the default source"
    );
    assert_eq!(
        str_at(&ev, "device", xid).unwrap(),
        "3",
        "an integer device index"
    );
    assert_eq!(str_at(&ev, "severity", xid).unwrap(), "error");
    assert_eq!(str_at(&ev, "reason", xid).unwrap(), "79");
    let hash = xxhash_rust::xxh3::xxh3_128(XID.as_bytes());
    assert_eq!(
        str_at(&ev, "event_id", xid).unwrap(),
        format!("xxh3:{hash:032x}")
    );
    assert_eq!(
        maps(&ev, "attrs")[xid],
        pairs(&[
            ("code", "79"),
            ("pci", "0000:3b:00.0"),
            ("region", "us-central1")
        ])
    );

    let pre = row_where(&ev, "kind", "preempted");
    assert_eq!(str_at(&ev, "layer", pre).unwrap(), "orchestrator");
    assert_eq!(
        str_at(&ev, "message", pre).unwrap(),
        "Preempted by \"tgi\" é",
        "escapes read, \\r dropped"
    );

    let m = read(store, Table::Metrics);
    assert_eq!(m.num_rows(), 7);
    let (names, t, v) = (strs(&m, "metric"), times(&m, "time"), f64s(&m, "value"));
    let (ranks, steps, labels) = (i32s(&m, "rank"), i64s(&m, "step"), maps(&m, "labels"));
    let layers = strs(&m, "layer");
    let find = |name: &str, time: i64| {
        (0..m.num_rows())
            .find(|&i| names[i].as_deref() == Some(name) && t[i] == time)
            .unwrap_or_else(|| panic!("no {name} at {time}: {names:?} {t:?}"))
    };
    // Stored in µs (tables.md): the envelope's nanoseconds are cut to microseconds.
    let g = find("gpu_util", T0 + 4 * SEC + 123_456_000);
    assert_eq!((v[g], layers[g].as_deref()), (97.5, Some("infrastructure")));
    let s = find("step_time_seconds", T0 + 5 * SEC);
    assert_eq!((v[s], ranks[s], steps[s]), (1.93, Some(3), Some(1201)));
    assert_eq!(labels[s], pairs(&[("zone", "us-c1")]));
    let k = find("tokens_per_second", T0 + 6 * SEC + 250_000_000);
    assert_eq!((v[k], layers[k].as_deref()), (1200.0, Some("framework")));
    assert_eq!(
        v[find("compute_seconds", T0 + 7 * SEC + 123_000_000)],
        1.5,
        "epoch milliseconds"
    );
    assert_eq!(
        v[find("compute_seconds", T0 + 8 * SEC + 123_456_000)],
        1.6,
        "epoch microseconds"
    );
    assert_eq!(
        v[find("compute_seconds", T0 + 9 * SEC + 123_456_000)],
        1.7,
        "epoch nanoseconds, stored in µs"
    );
    let w = find("step_time_seconds", T0 + 11 * SEC);
    assert_eq!(
        labels[w],
        pairs(&[("kind", "note"), ("severity", "warning")]),
        "event fields kept as labels"
    );

    assert_eq!(read(store, Table::DeadLetters).num_rows(), 0);
}

fn check_summary(s: &whyslow_ingest::run::IngestSummary) {
    let t = s.total();
    assert_eq!(
        (
            t.counts.records,
            t.counts.produced,
            t.counts.skipped,
            t.counts.rejected
        ),
        (12, 11, 1, 0)
    );
    assert_eq!((t.written.events, t.duplicates.events), (3, 1));
    assert_eq!((t.written.metrics, t.duplicates.metrics), (7, 0));
    assert!(s.failures.is_empty(), "{:?}", s.failures);
}

#[test]
fn every_form_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sdk.jsonl");
    std::fs::write(&file, input()).unwrap();
    let store = dir.path().join("store");
    let s = run(&store, &[&file], Format::Envelope);
    check_summary(&s);
    check_rows(&store);
}

#[test]
fn gzip_by_content_not_name() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sdk.jsonl");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&file).unwrap(),
        flate2::Compression::default(),
    );
    enc.write_all(input().as_bytes()).unwrap();
    enc.finish().unwrap();
    let store = dir.path().join("store");
    let s = run(&store, &[&file], Format::Envelope);
    check_summary(&s);
    check_rows(&store);
}

#[test]
fn directories_are_read_recursively() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = dir.path().join("in");
    std::fs::create_dir_all(inputs.join("a/b")).unwrap();
    let text = input();
    let (first, second) = text.split_at(text.find(XID).unwrap());
    std::fs::write(inputs.join("a/1.jsonl"), first).unwrap();
    std::fs::write(inputs.join("a/b/2.jsonl"), second).unwrap();
    std::fs::write(inputs.join(".hidden.jsonl"), "not json\n").unwrap();
    let store = dir.path().join("store");
    let s = run(&store, &[&inputs], Format::Envelope);
    check_summary(&s);
    assert_eq!(s.total().inputs, 2);
    check_rows(&store);
}

#[test]
fn unknown_fields_are_never_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.jsonl");
    std::fs::write(
        &file,
        concat!(
            r#"{"time":1795947300,"kind":"recompile","nested":{"a": [1, {"b": null}]},"flag":true,"n":-1.5e3,"s":"x\ty"}"#,
            "\n",
            r#"{"time":1795947300,"metric":"loss","value":0.5,"labels":{"optimizer":"adamw"},"lr":0.001,"id":"m-1","message":"m"}"#,
            "\n",
        ),
    )
    .unwrap();
    let store = dir.path().join("store");
    run(&store, &[&file], Format::Envelope);
    let ev = read(&store, Table::Events);
    assert_eq!(
        maps(&ev, "attrs")[0],
        pairs(&[
            ("nested", r#"{"a":[1,{"b":null}]}"#),
            ("flag", "true"),
            ("n", "-1.5e3"),
            ("s", "x\ty")
        ])
    );
    let m = read(&store, Table::Metrics);
    assert_eq!(
        maps(&m, "labels")[0],
        pairs(&[
            ("optimizer", "adamw"),
            ("lr", "0.001"),
            ("id", "m-1"),
            ("message", "m")
        ])
    );
}

#[test]
fn the_single_threaded_runner_writes_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("sdk.jsonl");
    std::fs::write(&file, input()).unwrap();
    let store = dir.path().join("store");
    let mut opts = whyslow_ingest::run::IngestOptions::new(
        &store,
        vec![file.display().to_string()],
        Format::Envelope,
    );
    opts.pipeline = false;
    let s = whyslow_ingest::run::ingest(&opts).unwrap();
    s.check().unwrap();
    check_summary(&s);
    check_rows(&store);
}
